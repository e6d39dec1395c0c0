//! Traces damaged as a careless or hostile user would damage them (issue 16, items 5, 6 and
//! the readers' part of 8), through the real binary, against babeltrace2 where it is
//! installed. `S` is `tracelens synth --events 20000 --cpus 2 --packet-size 4096`: 20,030
//! events in two stream files of about 56 packets each, with an LTTng index.
//!
//! * an index entry that disagrees with its packet (content size zeroed): every event is read,
//!   as babeltrace2 reads them, with a warning naming the stream;
//! * a stream file replaced by a directory, an empty file, a link loop, a link to `/dev/zero`,
//!   a FIFO, or cut on a packet boundary: the other events are read, and a warning names the
//!   file (babeltrace2 reads as many events, silently);
//! * metadata that is a FIFO, a directory or a link loop, and an unreadable directory, are
//!   errors naming them and saying what is wrong, not "no CTF trace found".

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

mod common;
use common::{exe, Synth};

const EVENTS: u64 = 20_030;

/// A way to damage a file: its name, what puts it in place, what the warning or error says.
type Damage<'a> = (&'a str, &'a dyn Fn(&Path), &'a str);

fn synth(tag: &str) -> Synth {
    Synth::new(tag, &["--events", "20000", "--cpus", "2", "--packet-size", "4096"])
}

/// Runs `tracelens ARGS TRACE`, killed after a minute (a reader that hangs fails the test).
fn run(args: &[&str], trace: &Path) -> Output {
    let child = Command::new(exe()).args(args).arg(trace).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(o) => o.unwrap(),
        Err(_) => {
            // SAFETY: kill has no memory preconditions; pid is our child, not reaped yet.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("tracelens {args:?} {} did not end within a minute", trace.display());
        }
    }
}

fn lines(b: &[u8]) -> u64 {
    b.iter().filter(|&&c| c == b'\n').count() as u64
}

/// babeltrace2's event count for `trace`, when it is installed and reads it.
fn babeltrace2(trace: &Path) -> Option<u64> {
    let o = Command::new("babeltrace2").arg(trace).stderr(Stdio::null()).output().ok()?;
    o.status.success().then(|| lines(&o.stdout))
}

/// `print` and `stats --json` read `events` events with exit 0 and a warning containing each
/// of `needles`; babeltrace2 reads as many.
fn reads_with_warning(trace: &Path, events: u64, needles: &[&str]) {
    let o = run(&["print"], trace);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "print failed: {err}");
    assert_eq!(lines(&o.stdout), events, "print: {err}");
    for n in needles {
        assert!(err.lines().any(|l| l.starts_with("tracelens: warning: ") && l.contains(n)), "print: no warning with `{n}`: {err}");
    }
    let o = run(&["stats", "--json", "-j", "2"], trace);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "stats failed: {err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["events"].as_u64(), Some(events), "stats: {err}");
    for n in needles {
        assert!(err.contains(n), "stats: no warning with `{n}`: {err}");
    }
    if let Some(b) = babeltrace2(trace) {
        assert_eq!(b, events, "babeltrace2 reads {b} events");
    }
}

#[test]
fn an_index_entry_that_disagrees_with_its_packet_is_read_as_the_packet_says() {
    let s = synth("index-entry");
    // Entry 1's content size (8 bytes at offset 104 of the index) zeroed.
    let idx = s.0.join("index/channel0_1.idx");
    let mut b = std::fs::read(&idx).unwrap();
    b[104..112].fill(0);
    std::fs::write(&idx, b).unwrap();
    reads_with_warning(&s.0, EVENTS, &["channel0_1: 1 packet disagrees with the index", "packet 1, byte 4096", "0 content bits"]);
    // The analyses read through chunks of packets in parallel: same warning, no error.
    let o = run(&["cpu", "-j", "2", "--chunk-size", "4096"], &s.0);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.contains("channel0_1: 1 packet disagrees with the index"), "{err}");
}

#[test]
fn stream_files_that_are_not_read_are_named() {
    let s = synth("special-streams");
    let events_1 = {
        // Events of channel0_1 alone: the trace without it.
        let dir = scratch("without-1");
        copy(&s.0, &dir);
        std::fs::remove_file(dir.join("channel0_1")).unwrap();
        std::fs::remove_file(dir.join("index/channel0_1.idx")).unwrap();
        let o = run(&["print"], &dir);
        assert!(o.status.success() && o.stderr.is_empty(), "{}", String::from_utf8_lossy(&o.stderr));
        let _ = std::fs::remove_dir_all(&dir);
        EVENTS - lines(&o.stdout)
    };
    let kinds: [Damage; 5] = [
        ("dir", &|p| std::fs::create_dir(p).unwrap(), "not a regular file (a directory)"),
        ("empty", &|p| std::fs::write(p, b"").unwrap(), "the file has 0 bytes (0 packets) but its index lists"),
        ("loop", &|p| std::os::unix::fs::symlink("channel0_1", p).unwrap(), "cannot be examined"),
        ("zero", &|p| std::os::unix::fs::symlink("/dev/zero", p).unwrap(), "not a regular file (a character device)"),
        ("fifo", &|p| mkfifo(p), "not a regular file (a FIFO)"),
    ];
    for (tag, make, why) in kinds {
        let dir = scratch(tag);
        copy(&s.0, &dir);
        let stream = dir.join("channel0_1");
        std::fs::remove_file(&stream).unwrap();
        make(&stream);
        reads_with_warning(&dir, EVENTS - events_1, &[&stream.display().to_string(), why]);
        let _ = std::fs::remove_dir_all(&dir);
    }
    // Cut on a packet boundary: the 50 packets left are read, the missing ones are said.
    let dir = scratch("cut");
    copy(&s.0, &dir);
    let stream = dir.join("channel0_1");
    let b = std::fs::read(&stream).unwrap();
    let packets = b.len() / 4096;
    assert!(packets > 50 && b.len().is_multiple_of(4096), "synth wrote {} bytes", b.len());
    std::fs::write(&stream, &b[..50 * 4096]).unwrap();
    let o = run(&["print"], &dir);
    let kept = lines(&o.stdout);
    assert!(kept < EVENTS && kept > EVENTS - events_1, "{kept}");
    let missing = format!("{} packets are missing", packets - 50);
    reads_with_warning(&dir, kept, &[&format!("{}: the file has 204800 bytes (50 packets) but its index lists {} bytes ({packets} packets)", stream.display(), b.len()), &missing]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn metadata_that_is_not_a_file_and_unreadable_directories_are_named() {
    let s = synth("bad-metadata");
    let cases: [Damage; 3] = [
        ("fifo", &|p| mkfifo(p), "metadata: not a regular file (a FIFO)"),
        ("dir", &|p| std::fs::create_dir(p).unwrap(), "metadata: not a regular file (a directory)"),
        ("loop", &|p| std::os::unix::fs::symlink("metadata", p).unwrap(), "metadata: Too many levels of symbolic links"),
    ];
    for (tag, make, want) in cases {
        let dir = scratch(&format!("meta-{tag}"));
        copy(&s.0, &dir);
        let meta = dir.join("metadata");
        std::fs::remove_file(&meta).unwrap();
        make(&meta);
        for cmd in ["print", "stats", "cpu"] {
            let o = run(&[cmd], &dir);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{cmd} {tag}: {err}");
            assert!(err.contains(want) && err.contains(&dir.display().to_string()) && !err.contains("no CTF trace found"), "{cmd} {tag}: {err}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    // A folder of traces with one folder that cannot be read.
    let dir = scratch("unreadable");
    copy(&s.0, &dir.join("a"));
    let sub = dir.join("b");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::set_permissions(&sub, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    // Root reads any folder: run as nobody where we are root.
    // SAFETY: geteuid has no preconditions.
    let o = if unsafe { libc::geteuid() } == 0 {
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        Command::new("setpriv").args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(exe()).arg("print").arg(&dir).output().ok()
    } else {
        Some(Command::new(exe()).arg("print").arg(&dir).output().unwrap())
    };
    match o {
        Some(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{err}");
            assert!(err.contains(&format!("{}: cannot read it: Permission denied", sub.display())), "{err}");
        }
        None => eprintln!("metadata_that_is_not_a_file_and_unreadable_directories_are_named: unreadable folder skipped: no setpriv"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracelens-cli-hostile-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn copy(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap().flatten() {
        if e.path().is_dir() {
            copy(&e.path(), &dst.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
        }
    }
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.display().to_string()).unwrap();
    // SAFETY: c is a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}
