//! tracefs: finding (or mounting) it, our own instance as a guard that restores the kernel's
//! tracing state when dropped, and the removal of instances left by recorders that were killed.
//!
//! An instance is a directory `instances/tracelens-<pid>` (`tracelens-<pid>-<n>` for the
//! second and later recordings of one process): a ring buffer, event switches and options of
//! its own, so the top-level buffer and other tracers' instances are never touched. Dropping
//! the [`Instance`] turns tracing off, disables every event and removes the directory (the
//! kernel frees the buffers). A recorder killed with SIGKILL cannot do that; the next run
//! finds the instance by its name, sees that its process is gone (or that the pid now belongs
//! to a process started after the instance was made) and removes it ([`Tracefs::remove_stale`]).

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime};

use crate::error::{io, Error, Result};

/// Where tracefs usually lives.
pub const DEFAULT_MOUNT: &str = "/sys/kernel/tracing";
/// The prefix of our instances' names.
pub const INSTANCE_PREFIX: &str = "tracelens-";

/// A tracefs mount.
#[derive(Clone, Debug)]
pub struct Tracefs {
    root: PathBuf,
}

impl Tracefs {
    /// The tracefs mount: the first `tracefs` in `/proc/mounts`, else debugfs's `tracing`
    /// directory, else tracefs mounted on [`DEFAULT_MOUNT`]. Fails with
    /// [`Error::NoTracefs`] or [`Error::NotPermitted`] when none can be had or used.
    pub fn open() -> Result<Tracefs> {
        if let Some(root) = find_mount() {
            return Tracefs::at(root);
        }
        let debug = Path::new("/sys/kernel/debug/tracing");
        if debug.join("instances").is_dir() {
            return Tracefs::at(debug);
        }
        mount_tracefs(Path::new(DEFAULT_MOUNT))?;
        Tracefs::at(DEFAULT_MOUNT)
    }

    /// tracefs at `root` (checked: it must have `instances/` and `events/`).
    pub fn at(root: impl Into<PathBuf>) -> Result<Tracefs> {
        let root = root.into();
        for sub in ["instances", "events"] {
            let p = root.join(sub);
            match fs::metadata(&p) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => return Err(Error::NoTracefs(format!("{} is not a directory", p.display()))),
                Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => return Err(Error::NotPermitted { path: p }),
                Err(e) => return Err(Error::NoTracefs(format!("{}: {e}", p.display()))),
            }
        }
        Ok(Tracefs { root })
    }

    /// The mount point.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Path of a top-level file.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Names of the instances that exist now.
    pub fn instances(&self) -> Result<Vec<String>> {
        let dir = self.root.join("instances");
        let mut out = Vec::new();
        for e in fs::read_dir(&dir).map_err(|e| io(&dir, e))? {
            let e = e.map_err(|e| io(&dir, e))?;
            out.push(e.file_name().to_string_lossy().into_owned());
        }
        out.sort();
        Ok(out)
    }

    /// Removes every `tracelens-<pid>[-<n>]` instance whose recorder is gone: no process
    /// `<pid>`, or one that started after the instance was created (the pid was reused).
    /// Returns the names removed. An instance whose recorder is alive is left alone, and so
    /// is one that cannot be removed (another process still has its files open): it does not
    /// stop a new recording.
    pub fn remove_stale(&self) -> Result<Vec<String>> {
        let mut removed = Vec::new();
        for name in self.instances()? {
            let Some(pid) = instance_pid(&name) else { continue };
            let dir = self.root.join("instances").join(&name);
            if !is_stale(pid, &dir) {
                continue;
            }
            teardown(&dir);
            if remove_dir_retrying(&dir).is_ok() {
                removed.push(name);
            }
        }
        Ok(removed)
    }
}

/// The pid in an instance name `tracelens-<pid>` or `tracelens-<pid>-<n>`.
pub fn instance_pid(name: &str) -> Option<i32> {
    owner_pid(name, INSTANCE_PREFIX, '-')
}

/// The recorder's pid in a name `PREFIX<pid>` or `PREFIX<pid><sep><n>` (tracefs instances,
/// uprobe groups).
pub(crate) fn owner_pid(name: &str, prefix: &str, sep: char) -> Option<i32> {
    let rest = name.strip_prefix(prefix)?;
    let (pid, seq) = match rest.split_once(sep) {
        Some((p, s)) => (p, Some(s)),
        None => (rest, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(pid) || seq.is_some_and(|s| !digits(s)) {
        return None;
    }
    pid.parse().ok()
}

/// Whether the recorder (pid `pid`) that made `dir` (an instance, a uprobe group's events) is
/// gone.
pub(crate) fn is_stale(pid: i32, dir: &Path) -> bool {
    let Some(started) = process_start(pid) else { return true };
    // A process started after the directory was made cannot have made it: the pid was reused.
    match fs::metadata(dir).and_then(|m| m.modified()) {
        Ok(created) => started > created + Duration::from_secs(2),
        Err(_) => false,
    }
}

/// When process `pid` started (wall clock), or None when there is no such process (a zombie
/// counts as gone).
pub(crate) fn process_start(pid: i32) -> Option<SystemTime> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields after the command: state is field 3 of stat(5), starttime field 22.
    if matches!(fields.first(), Some(&"Z") | Some(&"X")) {
        return None;
    }
    let ticks: u64 = fields.get(19)?.parse().ok()?;
    let btime: u64 = fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(btime) + Duration::from_millis(ticks * 1000 / hz))
}

/// The first tracefs mount point in /proc/mounts.
fn find_mount() -> Option<PathBuf> {
    let mounts = fs::read_to_string("/proc/mounts").ok()?;
    mounts.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        let _dev = it.next()?;
        let dir = it.next()?;
        let ty = it.next()?;
        // Octal escapes (\040 for a space) in mount points are rare enough for tracefs.
        (ty == "tracefs").then(|| PathBuf::from(dir))
    })
}

fn mount_tracefs(at: &Path) -> Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let target = CString::new(at.as_os_str().as_bytes()).map_err(|_| Error::NoTracefs("bad mount point".into()))?;
    let fstype = CString::new("tracefs").expect("no NUL");
    let src = CString::new("nodev").expect("no NUL");
    // SAFETY: all pointers are valid NUL-terminated strings; data may be NULL.
    let rc = unsafe { libc::mount(src.as_ptr(), target.as_ptr(), fstype.as_ptr(), 0, std::ptr::null()) };
    if rc == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => Err(Error::NotPermitted { path: at.to_path_buf() }),
        Some(libc::ENODEV) => Err(Error::NoTracefs("this kernel has no tracefs (CONFIG_TRACING is off)".into())),
        _ => Err(Error::NoTracefs(format!("no tracefs mounted, and mounting one on {} failed: {err}", at.display()))),
    }
}

/// Writes `value` to a tracefs control file (truncating, as `echo value > file` does).
pub(crate) fn write_file(path: &Path, value: &str) -> Result<()> {
    let mut f = OpenOptions::new().write(true).truncate(true).open(path).map_err(|e| io(path, e))?;
    f.write_all(value.as_bytes()).map_err(|e| io(path, e))
}

/// Reads a tracefs file to a string. Some tracefs files (`header_page`, `per_cpu/*/stats`)
/// are generated anew at each read and return nothing after a first partial read, so the
/// first read asks for 64 KiB at once.
pub fn read_file(path: &Path) -> Result<String> {
    let mut f = File::open(path).map_err(|e| io(path, e))?;
    let mut buf = vec![0u8; 64 << 10];
    let mut n = 0;
    loop {
        if n == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io(path, e)),
        }
    }
    buf.truncate(n);
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// Best effort: tracing off, every event disabled, the event list cleared.
fn teardown(dir: &Path) {
    let _ = write_file(&dir.join("tracing_on"), "0");
    let _ = write_file(&dir.join("events/enable"), "0");
    let _ = write_file(&dir.join("set_event"), "");
    let _ = write_file(&dir.join("set_event_pid"), "");
}

/// rmdir, retried for a moment on EBUSY (a reader closing its files).
fn remove_dir_retrying(dir: &Path) -> Result<()> {
    let mut tries = 0;
    loop {
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && tries < 50 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(io(dir, e)),
        }
    }
}

/// Overrun and drop counters of one CPU's buffer (`per_cpu/cpuN/stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuStats {
    /// Events overwritten before they were read (overwrite mode).
    pub overrun: u64,
    /// Events lost to nested writers.
    pub commit_overrun: u64,
    /// Events dropped because the buffer was full (discard mode).
    pub dropped: u64,
}

impl CpuStats {
    /// Every event lost, however.
    pub fn lost(&self) -> u64 {
        self.overrun + self.commit_overrun + self.dropped
    }

    /// Parses the text of a `stats` file.
    pub fn parse(text: &str) -> CpuStats {
        let mut s = CpuStats::default();
        for line in text.lines() {
            let Some((k, v)) = line.split_once(':') else { continue };
            let Ok(v) = v.trim().parse::<u64>() else { continue };
            match k.trim() {
                "overrun" => s.overrun = v,
                "commit overrun" => s.commit_overrun = v,
                "dropped events" => s.dropped = v,
                _ => {}
            }
        }
        s
    }
}

static INSTANCE_SEQ: AtomicU32 = AtomicU32::new(0);

/// Our tracefs instance. Dropping it restores the kernel's state: tracing off, events
/// disabled, the instance (and its buffers) removed.
#[derive(Debug)]
pub struct Instance {
    tracefs: Tracefs,
    name: String,
    dir: PathBuf,
    removed: bool,
}

impl Instance {
    /// Creates a new instance (`tracelens-<pid>`, or `tracelens-<pid>-<n>` after the first
    /// one of this process), with tracing off.
    pub fn create(tracefs: &Tracefs) -> Result<Instance> {
        let pid = std::process::id();
        loop {
            let seq = INSTANCE_SEQ.fetch_add(1, Ordering::Relaxed);
            let name = if seq == 0 { format!("{INSTANCE_PREFIX}{pid}") } else { format!("{INSTANCE_PREFIX}{pid}-{seq}") };
            let dir = tracefs.root.join("instances").join(&name);
            match fs::create_dir(&dir) {
                Ok(()) => {
                    let inst = Instance { tracefs: tracefs.clone(), name, dir, removed: false };
                    inst.write("tracing_on", "0")?;
                    return Ok(inst);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io(&dir, e)),
            }
        }
    }

    /// The instance's name (`tracelens-...`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The instance directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The tracefs it lives in.
    pub fn tracefs(&self) -> &Tracefs {
        &self.tracefs
    }

    /// Writes `value` to the instance's file `rel`.
    pub fn write(&self, rel: &str, value: &str) -> Result<()> {
        write_file(&self.dir.join(rel), value)
    }

    /// Reads the instance's file `rel`.
    pub fn read(&self, rel: &str) -> Result<String> {
        read_file(&self.dir.join(rel))
    }

    /// Sets `trace_clock` (e.g. `mono`).
    pub fn set_clock(&self, clock: &str) -> Result<()> {
        self.write("trace_clock", clock)
    }

    /// Sets the per-CPU buffer size.
    pub fn set_buffer_size_kb(&self, kb: u64) -> Result<()> {
        self.write("buffer_size_kb", &kb.to_string())
    }

    /// Sets an option of `options/` (e.g. `overwrite`).
    pub fn set_option(&self, option: &str, on: bool) -> Result<()> {
        self.write(&format!("options/{option}"), if on { "1" } else { "0" })
    }

    /// Enables one event (`system`, `event`) or a whole system (`event` = None).
    pub fn enable(&self, system: &str, event: Option<&str>) -> Result<()> {
        let rel = match event {
            Some(e) => format!("events/{system}/{e}/enable"),
            None => format!("events/{system}/enable"),
        };
        self.write(&rel, "1")
    }

    /// Turns recording into the buffer on or off.
    pub fn tracing_on(&self, on: bool) -> Result<()> {
        self.write("tracing_on", if on { "1" } else { "0" })
    }

    /// The CPUs that have a buffer (`per_cpu/cpuN`), ascending.
    pub fn cpus(&self) -> Result<Vec<u32>> {
        let dir = self.dir.join("per_cpu");
        let mut cpus = Vec::new();
        for e in fs::read_dir(&dir).map_err(|e| io(&dir, e))? {
            let e = e.map_err(|e| io(&dir, e))?;
            if let Some(n) = e.file_name().to_str().and_then(|s| s.strip_prefix("cpu")).and_then(|s| s.parse().ok()) {
                cpus.push(n);
            }
        }
        cpus.sort_unstable();
        Ok(cpus)
    }

    /// The path of CPU `cpu`'s file `rel` (`trace_pipe_raw`, `stats`).
    pub fn cpu_file(&self, cpu: u32, rel: &str) -> PathBuf {
        self.dir.join(format!("per_cpu/cpu{cpu}/{rel}"))
    }

    /// CPU `cpu`'s overrun and drop counters.
    pub fn stats(&self, cpu: u32) -> Result<CpuStats> {
        Ok(CpuStats::parse(&read_file(&self.cpu_file(cpu, "stats"))?))
    }

    /// Restores the kernel's state now (what dropping does), reporting a failure to remove
    /// the instance. Every file of the instance must be closed first.
    pub fn remove(mut self) -> Result<()> {
        self.removed = true;
        teardown(&self.dir);
        remove_dir_retrying(&self.dir)
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if !self.removed {
            teardown(&self.dir);
            let _ = remove_dir_retrying(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_names() {
        assert_eq!(instance_pid("tracelens-123"), Some(123));
        assert_eq!(instance_pid("tracelens-123-4"), Some(123));
        assert_eq!(instance_pid("tracelens-"), None);
        assert_eq!(instance_pid("tracelens-12a"), None);
        assert_eq!(instance_pid("tracelens-12-"), None);
        assert_eq!(instance_pid("other-12"), None);
    }

    #[test]
    fn stats_parse() {
        let s = CpuStats::parse("entries: 5\noverrun: 7\ncommit overrun: 1\nbytes: 9\noldest event ts:     0.000000\nnow ts:  3108.519638\ndropped events: 3\nread events: 0\n");
        assert_eq!(s, CpuStats { overrun: 7, commit_overrun: 1, dropped: 3 });
        assert_eq!(s.lost(), 11);
    }

    #[test]
    fn our_process_is_alive_and_started() {
        let t = process_start(std::process::id() as i32).expect("our own stat");
        assert!(t <= SystemTime::now() + Duration::from_secs(2));
        assert!(process_start(i32::MAX).is_none());
    }
}
