//! The symbol files of just-in-time compiled code, saved with the recording: the perf map
//! (`/tmp/perf-PID.map`, written by `node --perf-basic-prof`, `python3.12 -X perf`, Java's
//! perf-map-agent...) and the jitdump (`jit-PID.dump`, written by `node --perf-prof`,
//! `python3.13 -X perf_jit`, which map it so that its path is in the memory-map records) of
//! every process sampled. They are copied when the process exits (before a later process
//! with the same id can overwrite them, or a cleaner remove them) and, for those still
//! running, when sampling stops; they end up in `OUTPUT/jit/`.
//!
//! These files are written by the traced programs, in a world-writable directory: only a
//! regular file (not a link) owned by the process's user or by root is copied.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// What saving the files found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JitSummary {
    /// The directory the files are in (`OUTPUT/jit`), when any was saved.
    pub dir: Option<PathBuf>,
    /// Perf maps and jitdumps saved.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Files not saved and why (not a regular file, owned by another user, unreadable).
    pub refused: Vec<String>,
}

/// The reader thread's record of the processes sampled and their jitdumps.
pub(crate) struct JitFiles {
    dir: PathBuf,
    /// Processes seen, with their user (when it could be read).
    seen: HashMap<i32, Option<u32>>,
    dumps: HashMap<i32, Vec<PathBuf>>,
    saved: HashSet<i32>,
    own_pid: i32,
    pub summary: JitSummary,
}

fn user_of(pid: i32) -> Option<u32> {
    std::fs::metadata(format!("/proc/{pid}")).ok().map(|m| m.uid())
}

impl JitFiles {
    /// Saves into `dir` (made when the first file is saved).
    pub(crate) fn new(dir: PathBuf) -> JitFiles {
        JitFiles { dir, seen: HashMap::new(), dumps: HashMap::new(), saved: HashSet::new(), own_pid: std::process::id() as i32, summary: JitSummary::default() }
    }

    /// A record of process `pid` was read.
    pub(crate) fn on_pid(&mut self, pid: i32) {
        if pid > 0 && pid != self.own_pid && !self.seen.contains_key(&pid) {
            self.seen.insert(pid, user_of(pid));
        }
    }

    /// A new executable mapping of `pid`: a jitdump when named `jit-PID.dump`.
    pub(crate) fn on_mmap(&mut self, pid: i32, filename: &[u8]) {
        self.on_pid(pid);
        let name = filename.rsplit(|&c| c == b'/').next().unwrap_or(filename);
        if name == format!("jit-{pid}.dump").as_bytes() && filename.first() == Some(&b'/') {
            use std::os::unix::ffi::OsStrExt;
            let p = PathBuf::from(std::ffi::OsStr::from_bytes(filename));
            let v = self.dumps.entry(pid).or_default();
            if !v.contains(&p) {
                v.push(p);
            }
        }
    }

    /// Process `pid` exited: its files are complete.
    pub(crate) fn on_exit(&mut self, pid: i32) {
        if self.seen.contains_key(&pid) && self.saved.insert(pid) {
            self.save(pid);
        }
    }

    /// Sampling stopped: the files of processes still running.
    pub(crate) fn save_all(&mut self) {
        let mut pids: Vec<i32> = self.seen.keys().copied().filter(|p| !self.saved.contains(p)).collect();
        pids.sort_unstable();
        for pid in pids {
            self.saved.insert(pid);
            self.save(pid);
        }
    }

    fn save(&mut self, pid: i32) {
        let user = self.seen.get(&pid).copied().flatten();
        let mut files = vec![PathBuf::from(format!("/tmp/perf-{pid}.map"))];
        files.extend(self.dumps.get(&pid).cloned().unwrap_or_default());
        for src in files {
            let Some(name) = src.file_name().map(|n| n.to_owned()) else { continue };
            match copy_checked(&src, &self.dir.join(name), user) {
                Ok(Some(n)) => {
                    self.summary.files += 1;
                    self.summary.bytes += n;
                    self.summary.dir = Some(self.dir.clone());
                }
                Ok(None) => {}
                Err(why) => self.summary.refused.push(format!("{}: {why}", src.display())),
            }
        }
    }
}

/// Copies `src` to `dst` when it is a regular file owned by `user` or root; None when there
/// is no such file.
fn copy_checked(src: &Path, dst: &Path, user: Option<u32>) -> Result<Option<u64>, String> {
    let mut f = match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(src) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err("a symbolic link: not copied".into()),
        Err(e) => return Err(e.to_string()),
    };
    let meta = f.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file: not copied".into());
    }
    if meta.uid() != 0 && Some(meta.uid()) != user {
        return Err(format!("owned by user {}, not by the process's user or root: not copied", meta.uid()));
    }
    if let Some(dir) = dst.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let mut out = File::create(dst).map_err(|e| format!("{}: {e}", dst.display()))?;
    io::copy(&mut f, &mut out).map(Some).map_err(|e| format!("{}: {e}", dst.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_of_the_user() {
        let dir = std::env::temp_dir().join(format!("tracelens-jit-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("perf-1.map");
        std::fs::write(&src, "1000 10 f\n").unwrap();
        let me = std::fs::metadata(&src).unwrap().uid();
        assert_eq!(copy_checked(&src, &dir.join("out/perf-1.map"), Some(me)), Ok(Some(10)));
        assert_eq!(std::fs::read_to_string(dir.join("out/perf-1.map")).unwrap(), "1000 10 f\n");
        if me != 0 {
            assert!(copy_checked(&src, &dir.join("out/x"), Some(me + 1)).is_err());
        }
        std::os::unix::fs::symlink(&src, dir.join("link.map")).unwrap();
        assert!(copy_checked(&dir.join("link.map"), &dir.join("out/y"), Some(me)).unwrap_err().contains("link"));
        assert!(copy_checked(&dir, &dir.join("out/z"), Some(me)).unwrap_err().contains("regular"));
        assert_eq!(copy_checked(&dir.join("absent.map"), &dir.join("out/w"), Some(me)), Ok(None));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
