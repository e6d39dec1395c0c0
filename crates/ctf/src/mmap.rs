//! Memory-mapped input files, and the free space writers have: the one place with `unsafe`
//! in this crate.

use std::fs::File;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use crate::{Error, Result};

/// A read-only view of a whole file: memory-mapped when it is not empty.
#[derive(Debug)]
pub struct MappedFile {
    map: Option<memmap2::Mmap>,
    owned: Vec<u8>,
}

impl MappedFile {
    /// Maps `path` read-only.
    ///
    /// # Safety (of the mapping)
    ///
    /// The map is sound only while nobody truncates or rewrites the file; trace files are
    /// written once and then only read. A file truncated by another process while mapped makes
    /// reads past its new end raise SIGBUS, as with every mmap-based reader (ripgrep documents
    /// the same caveat).
    ///
    /// Only a regular file is opened (symbolic links followed): its type is checked before
    /// the open, and again on the open file, which is opened without blocking (`O_NONBLOCK`)
    /// so that a FIFO put in its place meanwhile cannot hang the reader. Anything else is an
    /// [`Error::NotRegular`] saying what it is. A trace, like a recording's list of files to
    /// symbolize, is untrusted input.
    pub fn open(path: &Path) -> Result<MappedFile> {
        let io = |source| Error::Io { path: path.to_path_buf(), source };
        let not_regular = |t: std::fs::FileType| Error::NotRegular { path: path.to_path_buf(), kind: file_kind(t) };
        let meta = std::fs::metadata(path).map_err(io)?;
        if !meta.is_file() {
            return Err(not_regular(meta.file_type()));
        }
        let file = File::options().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if !meta.is_file() {
            return Err(not_regular(meta.file_type()));
        }
        let len = meta.len();
        if len == 0 {
            return Ok(MappedFile { map: None, owned: Vec::new() });
        }
        // SAFETY: see the method's documentation: the file is read-only input that is not
        // modified while the trace is open.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        Ok(MappedFile { map: Some(map), owned: Vec::new() })
    }

    /// Bytes already in memory (tests, fuzzing, generated traces).
    pub fn from_vec(bytes: Vec<u8>) -> MappedFile {
        MappedFile { map: None, owned: bytes }
    }

    /// Tells the kernel that the bytes `start..end` are no longer needed: their pages leave this
    /// process's resident set (they stay in the page cache, and reading them again faults them
    /// back in from the file). The range is widened down to a page boundary and narrowed up to
    /// one: callers release what lies before their read position. This is what keeps a
    /// reader's memory flat whatever the trace size.
    ///
    /// With `TRACELENS_KEEP_PAGES=1` in the environment, nothing is handed back (for
    /// measuring what the hand-backs cost: each one flushes the TLB of every CPU the process
    /// runs on, and some hosts serialize them).
    pub fn release(&self, start: usize, end: usize) {
        let Some(map) = &self.map else { return };
        if keep_pages() {
            return;
        }
        let page = page_size();
        let from = (start / page) * page;
        let to = (end.min(map.len()) / page) * page;
        if to > from {
            // SAFETY: the map is a read-only, shared mapping of a file. MADV_DONTNEED on such a
            // mapping only drops page-table entries; later reads see the same file contents,
            // so no reference into the map observes a change (what makes this advice unsafe in
            // general is discarding private, modified pages, which a read-only map has none of).
            let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, from, to - from) };
        }
    }

    /// Hints that the file will be read sequentially (more read-ahead).
    pub fn sequential(&self) {
        if let Some(map) = &self.map {
            let _ = map.advise(memmap2::Advice::Sequential);
        }
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        match &self.map {
            Some(m) => m,
            None => &self.owned,
        }
    }
}

/// Whether `TRACELENS_KEEP_PAGES=1` asks [`MappedFile::release`] to keep every page mapped.
fn keep_pages() -> bool {
    static KEEP: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *KEEP.get_or_init(|| std::env::var_os("TRACELENS_KEEP_PAGES").is_some_and(|v| v == "1"))
}

/// Bytes an unprivileged writer may still use on the file system of `path` (`statvfs`'s
/// `f_bavail` blocks); None when it cannot be asked. Writers of large outputs (recordings,
/// synthetic traces) check it before and while they write.
pub fn free_space(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is plain data to fill; c is a valid NUL-terminated path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    #[allow(clippy::unnecessary_cast)] // the field types differ between targets
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// What kind of file `t` is, for messages: "a regular file", "a directory", "a FIFO", "a
/// character device"...
pub fn file_kind(t: std::fs::FileType) -> &'static str {
    if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a symbolic link"
    }
}

fn page_size() -> usize {
    // The page size is a power of two of at least 4 KiB; 64 KiB covers every Linux port
    // (releasing less than possible is harmless).
    65536
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_space_of_a_real_directory() {
        assert!(free_space(&std::env::temp_dir()).is_some_and(|f| f > 0));
        assert_eq!(free_space(Path::new("/nonexistent/tracelens")), None);
    }

    #[test]
    fn only_regular_files_are_mapped() {
        for (p, kind) in [("/dev/null", "a character device"), ("/", "a directory")] {
            match MappedFile::open(Path::new(p)) {
                Err(e @ Error::NotRegular { .. }) => assert_eq!(e.to_string(), format!("{p}: not a regular file ({kind})")),
                other => panic!("{p}: {other:?}"),
            }
        }
        assert!(MappedFile::open(Path::new("/proc/self/exe")).is_ok_and(|m| m.bytes().starts_with(b"\x7fELF")));
    }
}
