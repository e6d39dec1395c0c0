//! User stacks (`--stacks`): real recordings of a small C program. Needs root, tracefs,
//! `perf_event_open` and a C compiler: without them each test prints why it is skipped and
//! passes.
//!
//! * a program blocking in `nanosleep` inside `block_here()` and in `read` on a pipe inside
//!   `wait_on_pipe()` has off-CPU stacks naming those functions (and their callers, down to
//!   `main`), once unwound and symbolized offline; its CPU-burning `burn()` shows in on-CPU
//!   samples;
//! * the maps of the program are recorded with its build id; samples are on the kernel
//!   trace's clock (inside the kernel recording's time span);
//! * babeltrace2 reads the stack trace, with the same event count;
//! * attaching to a running process samples its existing threads, with its maps recorded
//!   at the start;
//! * no tracefs instance of ours is left behind.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tracelens_ctf::{Item, Trace};
use tracelens_record::stacks::{check, StackOptions};
use tracelens_record::tracefs::{instance_pid, Instance, Tracefs};
use tracelens_record::{record, RecordOptions, Target};
use tracelens_symbolize::Symbolizer;

mod common;
use common::compile_c;

static SERIAL: Mutex<()> = Mutex::new(());

const PROGRAM: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) void block_here(void) {
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

__attribute__((noinline)) void wait_on_pipe(int fd) {
    char c;
    if (read(fd, &c, 1) != 1) exit(2);
}

__attribute__((noinline)) unsigned long burn(unsigned long ms) {
    volatile unsigned long x = 0;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        for (int i = 0; i < 100000; i++) x += i;
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < (long)ms);
    return x;
}

int main(int argc, char **argv) {
    /* `loop`: block forever (to be attached to); else: block, wait, burn, exit. */
    if (argc > 1 && strcmp(argv[1], "loop") == 0) {
        for (;;) block_here();
    }
    int p[2];
    if (pipe(p)) return 1;
    if (fork() == 0) {
        usleep(250 * 1000);
        if (write(p[1], "x", 1) != 1) _exit(1);
        _exit(0);
    }
    for (int i = 0; i < 5; i++) block_here();
    wait_on_pipe(p[0]);
    burn(150);
    return 0;
}
"#;

fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("recording needs root".into());
    }
    let t = match Tracefs::open().and_then(|t| Instance::create(&t).and_then(Instance::remove).map(|()| t)) {
        Ok(t) => t,
        Err(e) => return Some(e.to_string()),
    };
    if let Err(e) = check(&StackOptions::default(), &t.path("events")) {
        return Some(e.to_string());
    }
    None
}

fn compile(dir: &Path) -> Option<PathBuf> {
    compile_c(dir, "stacks_prog", PROGRAM, &["-g", "-O0"])
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracelens-stacks-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn assert_no_instance_left() {
    let t = Tracefs::open().unwrap();
    let me = std::process::id() as i32;
    let ours: Vec<String> = t.instances().unwrap().into_iter().filter(|n| instance_pid(n) == Some(me)).collect();
    assert!(ours.is_empty(), "instances left behind: {ours:?}");
}

/// What a stack trace holds, read back and symbolized.
#[derive(Default, Debug)]
struct ReadBack {
    events: u64,
    by_name: BTreeMap<String, u64>,
    /// (kind, pid, frames as "function" names, innermost first).
    stacks: Vec<(String, i64, Vec<String>)>,
    /// (pid, filename, build id) of the mmap events.
    maps: Vec<(i64, String, String)>,
    first_ns: Option<i64>,
    last_ns: Option<i64>,
}

fn read_stacks(dir: &Path) -> ReadBack {
    let trace = Trace::open(dir).expect("the stack trace opens");
    // Time order across streams, as `print` does: collect, then sort (small traces).
    let mut all = Vec::new();
    for i in 0..trace.streams.len() {
        let mut cur = trace.cursor(i);
        let mut k = 0usize;
        while let Some(item) = cur.advance().expect("the stack trace decodes") {
            if item == Item::Event {
                all.push((cur.event().unwrap().ns.unwrap(), i, k));
            }
            k += 1;
        }
    }
    all.sort();
    let mut rb = ReadBack::default();
    let mut sym = Symbolizer::new();
    let mut cursors: Vec<_> = (0..trace.streams.len()).map(|i| (trace.cursor(i), 0usize)).collect();
    for (ns, i, k) in all {
        // Streams are read in order: advance stream i to its item k.
        let (cur, pos) = &mut cursors[i];
        let mut item = None;
        while *pos <= k {
            item = cur.advance().unwrap();
            *pos += 1;
        }
        assert_eq!(item, Some(Item::Event));
        let ev = cur.event().unwrap();
        rb.events += 1;
        rb.first_ns = Some(rb.first_ns.map_or(ns, |f: i64| f.min(ns)));
        rb.last_ns = Some(rb.last_ns.map_or(ns, |l: i64| l.max(ns)));
        *rb.by_name.entry(ev.name().to_string()).or_default() += 1;
        sym.observe(&ev);
        if ev.name() == "tracelens_mmap" {
            let pid = ev.common_context.get("pid").and_then(|f| f.as_i64()).unwrap();
            let f = ev.payload.get("filename").and_then(|f| f.as_str()).unwrap().into_owned();
            let b = ev.payload.get("build_id").and_then(|f| f.as_str()).unwrap().into_owned();
            rb.maps.push((pid, f, b));
        }
        if let Some(st) = sym.stack(&ev) {
            let names = st.frames.iter().map(|f| f.symbol.function.clone().unwrap_or_else(|| "??".into())).collect();
            rb.stacks.push((st.kind.clone(), st.pid, names));
        }
    }
    rb
}

fn has_stack(rb: &ReadBack, kind: &str, pid: i64, function: &str) -> bool {
    rb.stacks.iter().any(|(k, p, f)| k == kind && *p == pid && f.iter().any(|n| n == function) && f.iter().any(|n| n == "main"))
}

fn summary_of(rb: &ReadBack, pid: i64) -> String {
    let mut s = format!("{} events {:?}\n", rb.events, rb.by_name);
    for (k, p, f) in rb.stacks.iter().filter(|(_, p, _)| *p == pid).take(40) {
        s += &format!("  {k} {p}: {}\n", f.join(" <- "));
    }
    s
}

#[test]
fn off_cpu_stacks_name_the_blocking_functions() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(why) = skip_reason() {
        eprintln!("off_cpu_stacks_name_the_blocking_functions: skipped: {why}");
        return;
    }
    let dir = scratch("command");
    let Some(prog) = compile(&dir.join("bin")) else {
        eprintln!("off_cpu_stacks_name_the_blocking_functions: skipped: no C compiler (cc)");
        return;
    };
    let out = dir.join("rec");
    let mut opts = RecordOptions::new(&out, Target::Command(vec![prog.clone().into()]));
    opts.events = vec!["sched".into()];
    opts.stacks = Some(StackOptions::default());
    let summary = record(&opts, &mut |_| {}).expect("recording with stacks works");
    assert_no_instance_left();
    assert!(summary.exit.is_some_and(|s| s.success()), "the program failed: {:?}", summary.exit);
    let st = summary.stacks.clone().expect("a stacks summary");
    assert_eq!(st.trace_dir, out.join("stacks"));
    let pid = summary.child_pid.unwrap() as i64;
    let rb = read_stacks(&st.trace_dir);
    let report = summary_of(&rb, pid);
    assert_eq!(rb.by_name.get("tracelens_stack_sample").copied().unwrap_or(0), st.on_cpu + st.off_cpu + st.preempted, "{report}");
    assert!(st.off_cpu >= 6, "5 sleeps and a pipe read block at least 6 times: {st:?}\n{report}");
    // 150 ms of CPU at 1 ms: about 150 samples (fewer if the machine is busy).
    assert!(st.on_cpu >= 30, "{st:?}\n{report}");
    // Maps: the program with its build id, and libc.
    let prog_name = prog.to_string_lossy().into_owned();
    assert!(rb.maps.iter().any(|(p, f, b)| *p == pid && *f == prog_name && b.len() == 40), "maps: {:?}", rb.maps);
    assert!(rb.maps.iter().any(|(p, f, _)| *p == pid && f.contains("libc")), "maps: {:?}", rb.maps);
    // The acceptance: off-CPU stacks name the function that blocked.
    assert!(has_stack(&rb, "off_cpu", pid, "block_here"), "no off-CPU stack through block_here:\n{report}");
    assert!(has_stack(&rb, "off_cpu", pid, "wait_on_pipe"), "no off-CPU stack through wait_on_pipe:\n{report}");
    assert!(has_stack(&rb, "on_cpu", pid, "burn"), "no on-CPU stack through burn:\n{report}");
    // The forked child is followed (inherit): its usleep blocks.
    assert!(rb.stacks.iter().any(|(k, p, f)| k == "off_cpu" && *p != pid && f.iter().any(|n| n == "main")), "the child is not sampled:\n{report}");
    // The same clock as the kernel trace: samples fall inside the kernel recording.
    let kernel = Trace::open(&summary.trace_dir).unwrap();
    let (mut kmin, mut kmax) = (i64::MAX, i64::MIN);
    for i in 0..kernel.streams.len() {
        let mut cur = kernel.cursor(i);
        while let Some(item) = cur.advance().unwrap() {
            if item == Item::Event {
                let ns = cur.event().unwrap().ns.unwrap();
                kmin = kmin.min(ns);
                kmax = kmax.max(ns);
            }
        }
    }
    assert!(rb.first_ns.unwrap() >= kmin && rb.last_ns.unwrap() <= kmax, "stack samples [{:?}, {:?}] outside the kernel trace [{kmin}, {kmax}]", rb.first_ns, rb.last_ns);
    match Command::new("babeltrace2").arg(&st.trace_dir).output() {
        Ok(o) => {
            assert!(o.status.success(), "babeltrace2 failed: {}", String::from_utf8_lossy(&o.stderr));
            let lines = o.stdout.iter().filter(|&&b| b == b'\n').count() as u64;
            assert_eq!(lines, rb.events, "babeltrace2 counts {lines} events, tracelens {}", rb.events);
        }
        Err(_) => eprintln!("babeltrace2 not installed: skipped the babeltrace2 check"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn attach_samples_existing_threads() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(why) = skip_reason() {
        eprintln!("attach_samples_existing_threads: skipped: {why}");
        return;
    }
    let dir = scratch("attach");
    let Some(prog) = compile(&dir.join("bin")) else {
        eprintln!("attach_samples_existing_threads: skipped: no C compiler (cc)");
        return;
    };
    let mut child = Command::new(&prog).arg("loop").spawn().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let pid = child.id() as i32;
    let out = dir.join("rec");
    let mut opts = RecordOptions::new(&out, Target::Pid(pid));
    opts.events = vec!["sched".into()];
    opts.stacks = Some(StackOptions { off_cpu: true, ..StackOptions::default() });
    let stop = Arc::new(AtomicBool::new(false));
    opts.stop = Some(Arc::clone(&stop));
    let stopper = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(400));
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
        })
    };
    let result = record(&opts, &mut |_| {});
    stopper.join().unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let summary = result.expect("recording an attached process works");
    assert_no_instance_left();
    let st = summary.stacks.clone().unwrap();
    let rb = read_stacks(&st.trace_dir);
    let report = summary_of(&rb, pid as i64);
    // The maps come from /proc at the start.
    let prog_name = prog.to_string_lossy().into_owned();
    assert!(rb.maps.iter().any(|(p, f, b)| *p == pid as i64 && *f == prog_name && b.len() == 40), "maps: {:?}", rb.maps);
    assert!(st.off_cpu >= 5, "400 ms of 20 ms sleeps: {st:?}\n{report}");
    assert!(has_stack(&rb, "off_cpu", pid as i64, "block_here"), "no off-CPU stack through block_here:\n{report}");
    let _ = std::fs::remove_dir_all(&dir);
}
