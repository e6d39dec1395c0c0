//! Recording real kernel events. Needs root and tracefs: without them each test prints why it
//! is skipped and passes.
//!
//! * a program making exactly N `write()` calls shows exactly N `syscall_entry_write` (and N
//!   `syscall_exit_write`) for its thread, with LTTng's fields and context;
//! * babeltrace2 reads the recording with no error and the same event count;
//! * a recorder killed with SIGKILL leaves its instance behind; the next recording removes it;
//! * after every test, no instance of ours remains and the top-level event list is untouched
//!   (instances are removed whole, with their enabled events).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tracelens_ctf::{Item, Trace};
use tracelens_record::tracefs::INSTANCE_PREFIX;
use tracelens_record::{record, RecordOptions, Target};

mod common;
use common::{assert_clean, compile_c, scratch, top_level_events, tracefs_or_skip};

/// Recordings run one at a time (each checks that none is left when it ends).
static SERIAL: Mutex<()> = Mutex::new(());

const CHILD_ENV: &str = "TRACELENS_RECORD_TEST_CHILD";

/// Compiles a C program making exactly `argv[1]` write() calls of one byte to /dev/null.
fn write_helper(dir: &Path) -> Option<PathBuf> {
    compile_c(
        dir,
        "writes",
        "#include <fcntl.h>\n#include <stdlib.h>\n#include <unistd.h>\n\
         int main(int argc, char **argv) {\n\
           int n = argc > 1 ? atoi(argv[1]) : 0;\n\
           int fd = open(\"/dev/null\", O_WRONLY);\n\
           for (int i = 0; i < n; i++) if (write(fd, \"x\", 1) != 1) return 1;\n\
           return 0;\n\
         }\n",
        &["-O1"],
    )
}

struct Counts {
    total: u64,
    entry_writes: u64,
    exit_writes: u64,
    by_name: std::collections::BTreeMap<String, u64>,
    /// (fd, count) of the helper's first syscall_entry_write, and its procname.
    first_write: Option<(i64, i64, String)>,
}

fn read_back(dir: &Path, tid: i64) -> Counts {
    let trace = Trace::open(dir).expect("the recording opens");
    let mut c = Counts { total: 0, entry_writes: 0, exit_writes: 0, by_name: Default::default(), first_write: None };
    for i in 0..trace.streams.len() {
        let mut cur = trace.cursor(i);
        let mut last = None;
        while let Some(item) = cur.advance().expect("the recording decodes") {
            if item != Item::Event {
                continue;
            }
            let ev = cur.event().unwrap();
            c.total += 1;
            assert!(last <= ev.ns, "time goes backwards in stream {i}");
            last = ev.ns;
            *c.by_name.entry(ev.name().to_string()).or_default() += 1;
            let t = ev.common_context.get("tid").and_then(|f| f.as_i64());
            assert!(t.is_some(), "{} has no tid in its context", ev.name());
            assert!(ev.common_context.get("pid").is_some() && ev.common_context.get("procname").is_some());
            if t != Some(tid) {
                continue;
            }
            match ev.name() {
                "syscall_entry_write" => {
                    c.entry_writes += 1;
                    if c.first_write.is_none() {
                        let fd = ev.payload.get("fd").and_then(|f| f.as_i64()).unwrap();
                        let count = ev.payload.get("count").and_then(|f| f.as_i64()).unwrap();
                        let name = ev.common_context.get("procname").and_then(|f| f.as_str()).unwrap().to_string();
                        c.first_write = Some((fd, count, name));
                    }
                }
                "syscall_exit_write" => {
                    c.exit_writes += 1;
                    assert_eq!(ev.payload.get("ret").and_then(|f| f.as_i64()), Some(1));
                }
                _ => {}
            }
        }
    }
    c
}

#[test]
fn exact_write_count_and_babeltrace2_agrees() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(tfs) = tracefs_or_skip("exact_write_count_and_babeltrace2_agrees") else { return };
    let dir = scratch("writes");
    let Some(helper) = write_helper(&dir.join("bin")) else {
        eprintln!("exact_write_count_and_babeltrace2_agrees: skipped: no C compiler (cc)");
        return;
    };
    const N: u64 = 5000;
    let before = top_level_events(&tfs);
    let out = dir.join("rec");
    let mut opts = RecordOptions::new(&out, Target::Command(vec![helper.clone().into(), N.to_string().into()]));
    opts.events = vec!["sched".into(), "syscalls".into(), "irq".into()];
    let summary = record(&opts, &mut |_| {}).expect("recording works");
    assert_clean(&tfs, &before, &[]);
    assert!(summary.exit.is_some_and(|s| s.success()), "helper failed: {:?}", summary.exit);
    assert!(summary.convert.first_problem.is_none(), "{:?}", summary.convert.first_problem);
    let tid = summary.child_pid.unwrap() as i64;
    let c = read_back(&summary.trace_dir, tid);
    assert_eq!(c.total, summary.convert.events, "tracelens reads back what was written");
    assert_eq!(c.entry_writes, N, "syscall_entry_write of the helper");
    assert_eq!(c.exit_writes, N, "syscall_exit_write of the helper");
    let (fd, count, procname) = c.first_write.unwrap();
    assert!(fd >= 3, "fd {fd}");
    assert_eq!(count, 1);
    assert_eq!(procname, "writes");
    for must in ["sched_switch", "sched_process_exec", "sched_process_exit", "lttng_statedump_start", "lttng_statedump_process_state", "lttng_statedump_end"] {
        assert!(c.by_name.get(must).is_some_and(|&n| n > 0), "no {must} in {:?}", c.by_name.keys().collect::<Vec<_>>());
    }
    match Command::new("babeltrace2").arg(&summary.trace_dir).output() {
        Ok(o) => {
            assert!(o.status.success(), "babeltrace2 failed: {}", String::from_utf8_lossy(&o.stderr));
            let lines = o.stdout.iter().filter(|&&b| b == b'\n').count() as u64;
            assert_eq!(lines, c.total, "babeltrace2 counts {lines} events, tracelens {}", c.total);
            if summary.convert.discarded == 0 {
                let err = String::from_utf8_lossy(&o.stderr);
                assert!(!err.contains("discarded"), "no event was lost, yet babeltrace2 says: {err}");
            }
        }
        Err(_) => eprintln!("babeltrace2 not installed: skipped the babeltrace2 check"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// In a child process (see `killed_recorder_is_cleaned_up_by_the_next_run`): records the
/// whole system until killed.
#[test]
fn recorder_child() {
    let Some(out) = std::env::var_os(CHILD_ENV) else { return };
    let opts = RecordOptions::new(PathBuf::from(out), Target::System);
    let _ = record(&opts, &mut |_| {});
}

#[test]
fn killed_recorder_is_cleaned_up_by_the_next_run() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(tfs) = tracefs_or_skip("killed_recorder_is_cleaned_up_by_the_next_run") else { return };
    let dir = scratch("killed");
    let before = top_level_events(&tfs);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "recorder_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, dir.join("first"))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let name = format!("{INSTANCE_PREFIX}{}", child.id());
    let deadline = Instant::now() + Duration::from_secs(20);
    while !tfs.instances().unwrap().contains(&name) {
        assert!(Instant::now() < deadline, "the child recorder never created {name}");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Let it record a little, then kill it: nothing can clean up after SIGKILL.
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(tfs.instances().unwrap().contains(&name), "the killed recorder's instance is still there");

    let opts = RecordOptions::new(dir.join("second"), Target::Command(vec!["true".into()]));
    let summary = record(&opts, &mut |_| {}).expect("the next recording works");
    assert!(summary.removed_stale.contains(&name), "removed {:?}, expected {name}", summary.removed_stale);
    assert_clean(&tfs, &before, &[child.id() as i32]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn stop_flag_ends_a_system_wide_recording() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(tfs) = tracefs_or_skip("stop_flag_ends_a_system_wide_recording") else { return };
    let dir = scratch("stop");
    let before = top_level_events(&tfs);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut opts = RecordOptions::new(&dir, Target::System);
    opts.events = vec!["sched".into(), "irq".into(), "hrtimer".into()];
    opts.stop = Some(stop.clone());
    let s2 = stop.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        s2.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    let mut reports = 0;
    let summary = record(&opts, &mut |_| reports += 1).expect("recording works");
    t.join().unwrap();
    assert!(summary.stopped);
    assert!(reports >= 1);
    assert_clean(&tfs, &before, &[]);
    let trace = Trace::open(&summary.trace_dir).unwrap();
    assert_eq!(trace.streams.len() as u32, summary.cpus);
    let _ = std::fs::remove_dir_all(&dir);
}
