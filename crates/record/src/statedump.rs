//! The state dump written at the start of a recording, read from /proc: every thread
//! (`lttng_statedump_process_state`) and every open file (`lttng_statedump_file_descriptor`),
//! as LTTng's statedump reports them.

use std::fs;
use std::path::Path;

/// One thread, as `lttng_statedump_process_state` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadState {
    /// Thread id.
    pub tid: i32,
    /// Thread-group (process) id.
    pub pid: i32,
    /// Parent process id.
    pub ppid: i32,
    /// Name (`comm`), at most 15 bytes.
    pub name: Vec<u8>,
    /// 0: user thread, 1: kernel thread.
    pub kind: i32,
    /// LTTng's status: 2 wait for CPU (runnable), 4 zombie, 5 wait (blocked), 7 dead,
    /// 0 other.
    pub status: i32,
    /// The CPU it last ran on.
    pub cpu: i32,
}

/// One open file, as `lttng_statedump_file_descriptor` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FdState {
    /// Process id.
    pub pid: i32,
    /// File descriptor.
    pub fd: i32,
    /// Open flags (`O_*`).
    pub flags: u32,
    /// FMODE_READ (1) and FMODE_WRITE (2).
    pub fmode: u32,
    /// What the descriptor names (`/dev/null`, `socket:[1234]`...).
    pub filename: Vec<u8>,
}

/// The state dump.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Statedump {
    /// Every thread.
    pub threads: Vec<ThreadState>,
    /// Every open file of every process.
    pub fds: Vec<FdState>,
}

const PF_KTHREAD: u64 = 0x0020_0000;

/// Parses `/proc/PID/task/TID/stat` text: (comm, state, ppid, flags, cpu).
pub fn parse_stat(text: &str) -> Option<(Vec<u8>, u8, i32, u64, i32)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.as_bytes().to_vec();
    let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
    // rest[0] is field 3 (state); field N is rest[N - 3].
    let state = *rest.first()?.as_bytes().first()?;
    let ppid = rest.get(1)?.parse().ok()?;
    let flags = rest.get(6)?.parse().ok()?;
    let cpu = rest.get(36).and_then(|c| c.parse().ok()).unwrap_or(0);
    Some((comm, state, ppid, flags, cpu))
}

fn status_of(state: u8) -> i32 {
    match state {
        b'R' => 2,
        b'S' | b'D' | b'I' => 5,
        b'Z' => 4,
        b'X' | b'x' => 7,
        _ => 0,
    }
}

fn numeric_entries(dir: &Path) -> Vec<i32> {
    let mut out: Vec<i32> = match fs::read_dir(dir) {
        Ok(rd) => rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect(),
        Err(_) => Vec::new(),
    };
    out.sort_unstable();
    out
}

/// Reads the state of every thread and open file from `proc` (normally `/proc`). Processes
/// and files that vanish while being read are skipped.
pub fn read(proc: &Path) -> Statedump {
    let mut d = Statedump::default();
    for pid in numeric_entries(proc) {
        let pdir = proc.join(pid.to_string());
        let mut user = false;
        for tid in numeric_entries(&pdir.join("task")) {
            let Ok(text) = fs::read_to_string(pdir.join(format!("task/{tid}/stat"))) else { continue };
            let Some((mut name, state, ppid, flags, cpu)) = parse_stat(&text) else { continue };
            name.truncate(15);
            let kernel = flags & PF_KTHREAD != 0;
            user |= !kernel;
            d.threads.push(ThreadState { tid, pid, ppid, name, kind: kernel as i32, status: status_of(state), cpu });
        }
        if !user {
            continue;
        }
        for fd in numeric_entries(&pdir.join("fd")) {
            let Ok(target) = fs::read_link(pdir.join(format!("fd/{fd}"))) else { continue };
            let flags = fs::read_to_string(pdir.join(format!("fdinfo/{fd}")))
                .ok()
                .and_then(|t| t.lines().find_map(|l| l.strip_prefix("flags:").map(|v| u32::from_str_radix(v.trim(), 8).unwrap_or(0))))
                .unwrap_or(0);
            let fmode = match flags & 3 {
                0 => 1,
                1 => 2,
                _ => 3,
            };
            use std::os::unix::ffi::OsStrExt;
            let mut filename = target.as_os_str().as_bytes().to_vec();
            filename.retain(|&c| c != 0);
            d.fds.push(FdState { pid, fd, flags, fmode, filename });
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines() {
        let t = "1234 (my (odd) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 3 0 5000 1000 100 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0";
        let (comm, state, ppid, flags, cpu) = parse_stat(t).unwrap();
        assert_eq!(comm, b"my (odd) name");
        assert_eq!((state, ppid, flags, cpu), (b'S', 1, 4194560, 1));
        assert!(parse_stat("garbage").is_none());
    }

    #[test]
    fn reads_this_process() {
        let d = read(Path::new("/proc"));
        let me = std::process::id() as i32;
        assert!(d.threads.iter().any(|t| t.tid == me && t.pid == me && t.kind == 0), "our own thread is in the dump");
        // Our stdin/stdout/stderr or at least one file is open.
        assert!(d.fds.iter().any(|f| f.pid == me));
    }
}
