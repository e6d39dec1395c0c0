//! The bytes the symbolizer parses: files a recording names, memory-mapped, and owned copies
//! (decompressed sections, the vDSO). The one module of this crate with `unsafe` code.
//!
//! Files are opened only when they are regular files ([`map_regular`]): a recording is
//! untrusted input, and the path of a `tracelens_mmap` event may name a FIFO (opening it would
//! block), a device (reading it may never end, or have effects) or a directory.
//!
//! # Safety
//!
//! * **Mappings.** A file is mapped read-only and shared (by `tracelens_ctf::MappedFile`).
//!   A file truncated by another process while mapped makes reads past its new end raise
//!   SIGBUS, and a file rewritten in place changes the bytes under the parsers (which check every offset against the slices they
//!   hold: they see wrong data, never memory outside the map). Linkers and package managers
//!   replace program files (a new inode) rather than rewrite them, which leaves a mapping
//!   intact; every debugger and profiler accepts the same risk.
//! * **Lifetimes.** gimli, object and addr2line structures of a module borrow its bytes as
//!   `&'static [u8]`. The bytes are owned by the module's [`Arena`], which never gives them
//!   back before it is dropped (mapped and boxed memory does not move when the arena's list
//!   grows), and a module declares its arena last, so that it is dropped after every
//!   structure that borrows from it. The `'static` slices never leave the module.
//! * **The vDSO.** [`own_vdso`] copies this process's own `[vdso]` mapping, as
//!   `/proc/self/maps` lists it: mapped, readable and unchanging for the process's life.

use std::cell::RefCell;
use std::path::Path;

use tracelens_ctf::MappedFile;

use crate::error::{Error, Result};

/// Memory that `'static` slices of one module point into.
enum Owner {
    Map(#[allow(dead_code)] MappedFile),
    Bytes(#[allow(dead_code)] Box<[u8]>),
}

/// Owns the bytes of one module (see the module documentation's Safety section): a module
/// keeps it as its last field.
#[derive(Default)]
pub(crate) struct Arena {
    owners: RefCell<Vec<Owner>>,
}

impl Arena {
    /// Maps the file `path` if it is a regular file (see [`map_regular`]) and keeps the
    /// mapping. An empty file gives an empty slice.
    pub(crate) fn map_file(&self, path: &Path) -> Result<&'static [u8]> {
        let map = map_regular(path)?;
        let b = map.bytes();
        // SAFETY: the mapping is kept in the arena, which outlives every use of the slice
        // (the mapped memory does not move with the `MappedFile`).
        let bytes = unsafe { std::slice::from_raw_parts(b.as_ptr(), b.len()) };
        self.owners.borrow_mut().push(Owner::Map(map));
        Ok(bytes)
    }

    /// Keeps `bytes` (a decompressed section, a copy of the vDSO).
    pub(crate) fn keep(&self, bytes: Vec<u8>) -> &'static [u8] {
        let b = bytes.into_boxed_slice();
        // SAFETY: the box is kept in the arena and never moves or changes; the arena outlives
        // every use of the slice.
        let slice = unsafe { std::slice::from_raw_parts(b.as_ptr(), b.len()) };
        self.owners.borrow_mut().push(Owner::Bytes(b));
        slice
    }
}

/// Maps `path` read-only if it is a regular file (symbolic links followed), with
/// [`MappedFile::open`]: its type is checked before the open and again on the open file,
/// which is opened without blocking, so that a FIFO put in its place meanwhile cannot hang
/// the caller.
pub(crate) fn map_regular(path: &Path) -> Result<MappedFile> {
    MappedFile::open(path).map_err(|e| match e {
        tracelens_ctf::Error::NotRegular { path, kind } => Error::NotRegular { path, kind },
        tracelens_ctf::Error::Io { path, source } => Error::Io { path, source },
        other => Error::Io { path: path.to_path_buf(), source: std::io::Error::other(other.to_string()) },
    })
}

/// A copy of this process's vDSO image.
pub(crate) fn own_vdso() -> Option<Vec<u8>> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let line = maps.lines().find(|l| l.ends_with("[vdso]"))?;
    let (range, _) = line.split_once(' ')?;
    let (a, b) = range.split_once('-')?;
    let (a, b) = (u64::from_str_radix(a, 16).ok()?, u64::from_str_radix(b, 16).ok()?);
    if b <= a || b - a > 1 << 20 {
        return None;
    }
    // SAFETY: the range is this process's vDSO mapping, readable for its whole length (see
    // the module documentation).
    Some(unsafe { std::slice::from_raw_parts(a as *const u8, (b - a) as usize) }.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_open() {
        assert!(map_regular(Path::new("/proc/self/exe")).is_ok_and(|m| m.bytes().starts_with(b"\x7fELF")));
        for (p, kind) in [("/dev/null", "a character device"), ("/", "a directory")] {
            match map_regular(Path::new(p)) {
                Err(Error::NotRegular { kind: k, .. }) => assert_eq!(k, kind),
                other => panic!("{p}: {other:?}"),
            }
        }
        assert!(matches!(map_regular(Path::new("/nonexistent/x")), Err(Error::Io { .. })));
        let arena = Arena::default();
        let b = arena.keep(vec![1, 2, 3]);
        assert_eq!(b, &[1, 2, 3]);
        assert!(own_vdso().is_some_and(|v| v.starts_with(b"\x7fELF")));
    }
}
