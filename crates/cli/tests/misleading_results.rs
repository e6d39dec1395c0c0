//! Command-line results that must not mislead (issue 16, item 8):
//!
//! * `--begin` after `--end` is an error (babeltrace2 refuses it too), not an empty success,
//!   for `print` and the analyses, whatever the forms of the two times;
//! * a closed standard output (`>&-`) is an error for every command that writes its result
//!   there; a pipe closed by its reader (`| head`) and `>/dev/null` stay successes, and a full
//!   disk (`>/dev/full`) is an error;
//! * a path that is not a directory is named as such.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};

mod common;
use common::{exe, Synth};

fn run(args: &[&str]) -> Output {
    Command::new(exe()).args(args).output().unwrap()
}

fn one_line_error(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.starts_with("tracelens: error: ") && err.lines().count() == 1, "{err}");
    err
}

#[test]
fn a_range_that_ends_before_it_begins_is_an_error() {
    let s = Synth::new("inverted-range", &["--events", "2000"]);
    let t = s.0.to_str().unwrap();
    // The first event's time, in seconds since the origin, and its time of day (UTC).
    let first = run(&["print", t, "--clock-seconds", "--no-delta"]);
    let secs: f64 = String::from_utf8_lossy(&first.stdout).lines().next().unwrap()[1..21].trim_end_matches(']').parse().unwrap();
    let first = run(&["print", t, "--clock-gmt", "--no-delta"]);
    let tod = String::from_utf8_lossy(&first.stdout).lines().next().unwrap()[1..9].to_string();
    let later_tod = format!("{}:59", &tod[..5]);
    let (before, after) = (format!("{}", secs as i64 - 60), format!("{}", secs as i64 + 60));
    for (b, e) in [("10", "5"), ("12:00", "11:00"), (after.as_str(), before.as_str()), (after.as_str(), tod.as_str()), (later_tod.as_str(), before.as_str())] {
        for cmd in ["print", "cpu", "syscalls"] {
            let o = run(&[cmd, t, "--clock-gmt", "--begin", b, "--end", e]);
            let err = one_line_error(&o);
            assert!(err.contains(&format!("--begin {b} is after --end {e}")), "{cmd} {b}..{e}: {err}");
            assert!(o.stdout.is_empty());
        }
    }
    // The same bounds the right way round are fine.
    for cmd in ["print", "cpu"] {
        let o = run(&[cmd, t, "--clock-gmt", "--begin", &before, "--end", &after]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(!o.stdout.is_empty());
    }
}

/// Runs `tracelens ARGS` with its standard output closed.
fn with_stdout_closed(args: &[&str]) -> Output {
    let mut c = Command::new(exe());
    c.args(args).stdout(Stdio::inherit()).stderr(Stdio::piped());
    // SAFETY: close is async-signal-safe; descriptor 1 is the child's own.
    unsafe {
        c.pre_exec(|| {
            libc::close(1);
            Ok(())
        });
    }
    c.output().unwrap()
}

#[test]
fn a_closed_standard_output_is_an_error_and_a_closed_pipe_is_not() {
    let s = Synth::new("closed-stdout", &["--events", "20000"]);
    let t = s.0.to_str().unwrap();
    for args in [&["print", t][..], &["print", t, "--format", "json"], &["stats", t], &["cpu", t], &["irq", t, "--json"]] {
        let err = one_line_error(&with_stdout_closed(args));
        assert!(err.contains("standard output is closed"), "{args:?}: {err}");
    }
    // Record and synth write nothing there: a closed standard output does not matter.
    let dir = std::env::temp_dir().join(format!("tracelens-cli-closed-stdout-synth-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = with_stdout_closed(&["synth", "-o", dir.to_str().unwrap(), "--events", "100"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let _ = std::fs::remove_dir_all(&dir);
    // `| head -1`: the reader goes away after one line; quiet success.
    let mut child = Command::new(exe()).args(["print", t]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(!first.is_empty());
    assert!(o.status.success() && o.stderr.is_empty(), "{:?} {}", o.status, String::from_utf8_lossy(&o.stderr));
    // `>/dev/null` is a success; `>/dev/full` is not.
    let o = Command::new(exe()).args(["print", t]).stdout(std::fs::File::create("/dev/null").unwrap()).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // So is `/dev/null` opened read-write, as Python's `subprocess.DEVNULL` does.
    for args in [&["print", t][..], &["stats", t]] {
        let null = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null").unwrap();
        let o = Command::new(exe()).args(args).stdout(null).output().unwrap();
        assert!(o.status.success() && o.stderr.is_empty(), "{args:?}: {:?} {}", o.status, String::from_utf8_lossy(&o.stderr));
    }
    if let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") {
        let err = one_line_error(&Command::new(exe()).args(["print", t]).stdout(full).output().unwrap());
        assert!(err.contains("cannot write the output"), "{err}");
    }
}

#[test]
fn a_path_that_is_not_a_directory_is_named() {
    let s = Synth::new("not-a-dir", &["--events", "100"]);
    let meta = s.0.join("metadata");
    let err = one_line_error(&run(&["print", meta.to_str().unwrap()]));
    assert!(err.contains("metadata: not a directory") && err.contains("give the directory that holds this one"), "{err}");
}
