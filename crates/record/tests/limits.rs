//! What keeps a recording from running away (issue 16, items 1 and 9). Real recordings; needs
//! root and tracefs (and, for the disk tests, a tmpfs mount): without them each test prints
//! why it is skipped and passes.
//!
//! * a command that cannot start (missing, or a script whose interpreter is missing, which
//!   only fails once tracing is on) ends the recording with an error naming it, and nothing
//!   is left: no instance, no spool, no output directory;
//! * a spool that passes `max_spool`, and an output file system with less than `min_free`
//!   left, stop the recording early; the trace holds what was recorded, and the command runs
//!   on to its end;
//! * a disk that fills during the recording stops it without killing the command;
//! * an output directory that already holds `stacks` or `jit` (where the perf maps and
//!   jitdumps go at the end) is refused before anything runs;
//! * after every test, no instance of ours remains and the top-level event list is untouched.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tracelens_record::{record, CutShort, Error, RecordOptions, Summary, Target};

mod common;
use common::{assert_clean, scratch, top_level_events, tracefs_or_skip};

/// Recordings run one at a time (each checks that none is left when it ends).
static SERIAL: Mutex<()> = Mutex::new(());

/// Runs `record` on a thread of its own; a recording that does not end within a minute
/// fails the test (the bug this pins: it never ended).
fn record_or_hang(opts: RecordOptions) -> Result<Summary, Error> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(record(&opts, &mut |_| {}));
    });
    rx.recv_timeout(Duration::from_secs(60)).expect("record() did not return within a minute")
}

/// Waits for `path` to appear (the command ran to its end); false after a minute.
fn appears(path: &Path) -> bool {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if path.exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// A tmpfs of `mib` MiB mounted on a fresh directory, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(name: &str, mib: u32) -> Option<Tmpfs> {
        let dir = scratch(name);
        std::fs::create_dir_all(&dir).unwrap();
        let ok = Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={mib}M"), "tmpfs"]).arg(&dir).status().is_ok_and(|s| s.success());
        ok.then(|| Tmpfs(dir))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn sh(script: &str) -> Target {
    Target::Command(vec!["sh".into(), "-c".into(), script.into()])
}

#[test]
fn a_command_that_cannot_start_ends_the_recording_and_leaves_nothing() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(tfs) = tracefs_or_skip("a_command_that_cannot_start_ends_the_recording_and_leaves_nothing") else { return };
    let dir = scratch("nocmd");
    std::fs::create_dir_all(&dir).unwrap();
    let before = top_level_events(&tfs);
    // Missing: found before anything is set up.
    let out = dir.join("missing");
    let e = record_or_hang(RecordOptions::new(&out, Target::Command(vec!["/nonexistent/cmd".into()]))).unwrap_err();
    assert!(matches!(e, Error::Target(_)), "{e:?}");
    assert_eq!(e.to_string(), "cannot run `/nonexistent/cmd`: no such file or directory");
    assert!(!out.exists(), "the output directory was made");
    assert_clean(&tfs, &before, &[]);
    // A script whose interpreter is missing: exec fails once tracing is on.
    let script = dir.join("script");
    std::fs::write(&script, "#!/nonexistent/interpreter\n").unwrap();
    Command::new("chmod").arg("+x").arg(&script).status().unwrap();
    let out = dir.join("interp");
    let mut opts = RecordOptions::new(&out, Target::Command(vec![script.clone().into()]));
    opts.events = vec!["sched".into(), "syscalls".into()];
    let e = record_or_hang(opts).unwrap_err().to_string();
    assert!(e.contains(&script.display().to_string()) && e.contains("/nonexistent/interpreter") && e.contains("no such file"), "{e}");
    assert!(!out.exists(), "the output directory (or its spool) is left behind");
    assert_clean(&tfs, &before, &[]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_output_holding_stacks_or_jit_is_refused_before_the_command_runs() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(tfs) = tracefs_or_skip("an_output_holding_stacks_or_jit_is_refused_before_the_command_runs") else { return };
    let before = top_level_events(&tfs);
    for sub in ["stacks", "jit"] {
        // A previous recording's DIR/jit: the perf maps saved at the end could not go there.
        let out = scratch(&format!("taken-{sub}"));
        std::fs::create_dir_all(out.join(sub)).unwrap();
        let marker = out.join("ran");
        let mut opts = RecordOptions::new(&out, sh(&format!("touch {}", marker.display())));
        opts.stacks = Some(tracelens_record::stacks::StackOptions::default());
        let e = record_or_hang(opts).unwrap_err();
        assert!(matches!(e, Error::Target(_)), "{e:?}");
        assert_eq!(e.to_string(), format!("{} already exists: choose another output directory", out.join(sub).display()));
        assert!(!marker.exists(), "the command ran");
        assert!(!out.join("kernel").exists() && !out.join(".tracelens-spool").exists(), "a recording was started");
        assert_clean(&tfs, &before, &[]);
        let _ = std::fs::remove_dir_all(&out);
    }
}

/// The trace of a recording cut short opens and holds events; the command, left to run on,
/// ends by itself with success and wrote `marker`.
fn check_cut_short(mut s: Summary, marker: &Path) {
    assert!(!s.trace_dir.parent().unwrap().join(".tracelens-spool").exists(), "the spool is left behind");
    let trace = tracelens_ctf::Trace::open(&s.trace_dir).expect("the trace of a recording cut short opens");
    assert_eq!(trace.streams.len() as u32, s.cpus);
    assert!(s.convert.events > 0);
    let status = match s.running.take() {
        Some(mut c) => c.wait().unwrap(),
        None => s.exit.expect("the command's end"),
    };
    assert!(status.success(), "the command failed: {status}");
    assert!(marker.exists(), "the command did not run to its end");
}

#[test]
fn a_spool_past_its_limit_stops_the_recording_and_the_command_runs_on() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(tfs) = tracefs_or_skip("a_spool_past_its_limit_stops_the_recording_and_the_command_runs_on") else { return };
    let dir = scratch("spool-limit");
    std::fs::create_dir_all(&dir).unwrap();
    let before = top_level_events(&tfs);
    let marker = dir.join("done");
    // About 600,000 system calls; the converter reads nothing in its first second (it
    // samples 4 MiB of pages first) and idles: the spool passes 1 MiB.
    let mut opts = RecordOptions::new(dir.join("rec"), sh(&format!("dd if=/dev/zero of=/dev/null bs=1 count=300000 2>/dev/null; echo done > {}", marker.display())));
    opts.events = vec!["syscalls".into()];
    opts.max_spool = 1 << 20;
    opts.idle_backlog = u64::MAX;
    let s = record_or_hang(opts).expect("a recording cut short is a recording");
    match &s.cut_short {
        Some(CutShort::SpoolLimit { bytes, limit }) => assert!(*bytes > *limit && *limit == 1 << 20),
        other => panic!("not stopped by the spool limit: {other:?}"),
    }
    assert_clean(&tfs, &before, &[]);
    check_cut_short(s, &marker);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn low_disk_space_stops_the_recording_and_the_command_runs_on() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(tfs) = tracefs_or_skip("low_disk_space_stops_the_recording_and_the_command_runs_on") else { return };
    let Some(disk) = Tmpfs::mount("lowspace", 64) else {
        eprintln!("low_disk_space_stops_the_recording_and_the_command_runs_on: skipped: cannot mount a tmpfs");
        return;
    };
    let before = top_level_events(&tfs);
    // Less than the reserve: refused before anything is set up.
    let mut opts = RecordOptions::new(disk.0.join("refused"), sh("true"));
    opts.min_free = 80 << 20;
    let e = record_or_hang(opts).unwrap_err().to_string();
    assert!(e.contains("only 64 MiB free") && e.contains("--min-free"), "{e}");
    assert!(!disk.0.join("refused").exists());
    // The command fills 30 of the 64 MiB, with 40 to keep free: the recording stops, the
    // command goes on and writes its marker.
    let marker = disk.0.join("done");
    let script = format!("dd if=/dev/zero of={}/fill bs=1M count=30 2>/dev/null; sleep 0.5; echo done > {}", disk.0.display(), marker.display());
    let mut opts = RecordOptions::new(disk.0.join("rec"), sh(&script));
    opts.events = vec!["sched".into()];
    opts.min_free = 40 << 20;
    let s = record_or_hang(opts).expect("a recording cut short is a recording");
    match &s.cut_short {
        Some(CutShort::LowSpace { free, min_free, .. }) => assert!(*free < *min_free && *min_free == 40 << 20),
        other => panic!("not stopped for lack of space: {other:?}"),
    }
    assert_clean(&tfs, &before, &[]);
    check_cut_short(s, &marker);
}

#[test]
fn a_full_disk_stops_the_recording_without_killing_the_command() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(tfs) = tracefs_or_skip("a_full_disk_stops_the_recording_without_killing_the_command") else { return };
    let Some(disk) = Tmpfs::mount("fulldisk", 32) else {
        eprintln!("a_full_disk_stops_the_recording_without_killing_the_command: skipped: cannot mount a tmpfs");
        return;
    };
    let before = top_level_events(&tfs);
    // The command fills the disk, keeps it full for two seconds (the recorder's writes fail
    // meanwhile), frees it and writes its marker.
    let marker = disk.0.join("done");
    let fill = disk.0.join("fill");
    let script = format!("dd if=/dev/zero of={} bs=1M 2>/dev/null; sleep 2; rm {}; echo done > {}", fill.display(), fill.display(), marker.display());
    let mut opts = RecordOptions::new(disk.0.join("rec"), sh(&script));
    opts.events = vec!["sched".into(), "syscalls".into()];
    opts.min_free = 0;
    match record_or_hang(opts) {
        // The spool's writes failed first: the trace holds what the spool had.
        Ok(s) => {
            assert!(matches!(s.cut_short, Some(CutShort::DiskFull { .. })), "{:?}", s.cut_short);
            assert_clean(&tfs, &before, &[]);
            check_cut_short(s, &marker);
        }
        // The trace's writes failed first: nothing to keep.
        Err(e) => {
            assert!(matches!(e, Error::DiskFull(_)), "{e:?}");
            assert!(e.to_string().starts_with("the disk is full"), "{e}");
            assert_clean(&tfs, &before, &[]);
            assert!(appears(&marker), "the command was killed");
            assert!(!disk.0.join("rec").exists(), "the partial output is left behind");
        }
    }
}
