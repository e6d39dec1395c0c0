//! `tracelens record --probes`: a C program with known probe counts (the probe crate's
//! `tests/c/probed.c`) is recorded with its kernel events; its probe events land in
//! `DIR/ust` with exact counts, on the kernel trace's clock, so that in the merged order every
//! `before_getpid` probe of the main thread comes right before that thread's
//! `syscall_entry_getpid`, and `after_getpid` right after its `syscall_exit_getpid`, in the
//! program's own order. babeltrace2 reads `DIR` with the same lines as `tracelens print DIR`.
//!
//! Needs root and tracefs (skipped, with a message, without them) and a C compiler.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::{exe, recording_lock, recording_skip_reason};

#[path = "../../probe/tests/common/mod.rs"]
mod probe;

/// Builds the probe crate's C program `name` and records it with `record -q -e sched,syscalls
/// --probes EXTRA...` into `TMP/rec`: (the recording, its output), or `None` (with a note)
/// when recording or compiling cannot be done here. Holds the recording lock meanwhile.
fn record_program(test: &str, name: &str, extra: &[&str]) -> Option<(probe::TempDir, PathBuf, Output)> {
    if let Some(why) = recording_skip_reason() {
        eprintln!("{test}: skipped: {why}");
        return None;
    }
    let _serial = recording_lock();
    let tmp = probe::TempDir::new(test);
    let prog = probe::build_c(name, &tmp.0)?;
    let out = tmp.0.join("rec");
    let run = Command::new(exe())
        .args(["record", "-q", "-e", "sched,syscalls", "--probes"])
        .args(extra)
        .arg("-o")
        .arg(&out)
        .arg("--")
        .arg("env")
        .arg(format!("LD_LIBRARY_PATH={}", probe::library_dir().display()))
        .arg(&prog)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    Some((tmp, out, run))
}

#[test]
fn probe_events_interleave_with_the_kernel_events_they_bracket() {
    let Some((_tmp, out, run)) = record_program("bracket", "probed", &[]) else { return };
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("wrote 20,206 probe events (0 lost) from 1 process(es)"), "{stderr}");
    assert!(out.join("kernel/metadata").is_file() && out.join("ust").is_dir());

    // Exact counts of the probe events, read from DIR as a whole.
    let all = probe::read(&out);
    let c = probe::counts(&all.events);
    for (name, n) in [("work", 20000), ("worker_done", 4), ("before_getpid", 100), ("after_getpid", 100), ("text", 1), ("main_done", 1)] {
        assert_eq!(c.get(name).copied(), Some(n), "{name}");
    }

    // The main thread's getpid rounds, in merged time order: probe, entry, exit, probe.
    let main = all.events.iter().find(|e| e.name == "main_done").unwrap().vtid;
    let mut seq = Vec::new();
    let set = tracelens_trace::TraceSet::open(&[&out]).unwrap();
    let mut m = set.merger();
    while let Some((_, item)) = m.next().unwrap() {
        if item != tracelens_ctf::Item::Event {
            continue;
        }
        let ev = m.event().unwrap();
        let tid = ev.field("vtid").or_else(|| ev.field("tid")).and_then(|f| f.as_i64());
        let name = ev.name();
        // From the first probe on (the probe library calls getpid() itself when it starts).
        if tid == Some(main) && name.ends_with("_getpid") && (!seq.is_empty() || name == "before_getpid") {
            seq.push(name.to_string());
        }
    }
    let expect: Vec<&str> = ["before_getpid", "syscall_entry_getpid", "syscall_exit_getpid", "after_getpid"].repeat(100);
    assert_eq!(seq, expect, "merged order of the main thread's getpid events");

    // babeltrace2 reads kernel and probe traces together, with the same lines.
    let ours = Command::new(exe()).arg("print").arg(&out).env("TZ", "UTC").output().unwrap();
    assert!(ours.status.success());
    if let Ok(bt) = Command::new("babeltrace2").arg(&out).env("TZ", "UTC").output() {
        assert!(bt.status.success(), "{}", String::from_utf8_lossy(&bt.stderr));
        let mut a: Vec<&[u8]> = bt.stdout.split(|&b| b == b'\n').collect();
        let mut b: Vec<&[u8]> = ours.stdout.split(|&b| b == b'\n').collect();
        a.sort();
        b.sort();
        assert_eq!(a.len(), b.len());
        assert!(a == b, "babeltrace2 and tracelens print differ");
    }
}

/// `threads` and `latency` on a recording of `requests.c`: the main thread's running time is
/// its own CPU clock, it slept at least the sleeps it asked for (waits a timer ended), and
/// each request's latency
/// (probe to probe, matched on the request number) is what the program measured around it.
#[test]
fn threads_and_latency_agree_with_the_programs_own_clocks() {
    // With the interrupt and timer events, the graph tells what ended each wait.
    let Some((_tmp, out, run)) = record_program("requests", "requests", &["-e", "hrtimer,irq"]) else { return };
    let stdout = String::from_utf8_lossy(&run.stdout);
    let num = |line: &str, key: &str| -> i64 { line.split_whitespace().find_map(|w| w.strip_prefix(key)).unwrap().parse().unwrap() };
    let first = stdout.lines().next().unwrap();
    let (cpu_ns, main_cpu_ns, slept_ns) = (num(first, "cpu_ns="), num(first, "main_cpu_ns="), num(first, "slept_ns="));
    let took: Vec<i64> = stdout.lines().skip(1).map(|l| num(l, "ns=")).collect();
    assert_eq!(took.len(), 20);

    let json = |args: &[&str]| -> serde_json::Value {
        let o = Command::new(exe()).args(args).arg(&out).arg("--json").output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let lat = json(&["latency", "--from", "req_begin", "--to", "req_end", "--match", "value", "--slowest", "20"]);
    assert_eq!(lat["count"], 20);
    assert_eq!(lat["unmatched"], 0);
    // The program's clock reads sit just outside its probes: each pair lies within what the
    // program measured, and nearly all within 0.1 ms of it (a loaded machine may preempt the
    // program between a clock read and a probe).
    let mut close = 0;
    for p in lat["slowest"].as_array().unwrap() {
        let r: usize = p["value"].as_str().unwrap().parse().unwrap();
        let d = p["duration_ns"].as_i64().unwrap();
        assert!(d <= took[r], "request {r}: {d} ns between the probes, {} ns measured around them", took[r]);
        close += usize::from(took[r] - d < 100_000);
    }
    assert!(close >= 18, "only {close} of 20 requests within 0.1 ms of the program's own measure: {took:?}");

    // Up to the last probe, right before the program read its CPU clock (its exit after that,
    // flushing the probes, is not in the clock's reading).
    let last = lat["slowest"].as_array().unwrap().iter().map(|p| p["to_ns"].as_i64().unwrap()).max().unwrap();
    let end = format!("{}.{:09}", last / 1_000_000_000, last % 1_000_000_000);
    let threads = json(&["threads", "--limit", "0", "--procname", "requests", "--end", &end]);
    // Where the kernel left switches out, the thread's own events stand for them, the same
    // way for any cut of the recording.
    assert_eq!(threads, json(&["threads", "--limit", "0", "--procname", "requests", "--end", &end, "-j", "3", "--chunk-size", "1"]), "threads: -j 3, one packet per chunk");
    let t = threads["threads"].as_array().unwrap().iter().find(|t| t["name"] == "requests").expect("the program's thread");
    let running = t["running_ns"].as_i64().unwrap();
    // At least the CPU time of the program's main: the thread's CPU clock also holds its time
    // before the exec of `requests` (the recorder's child, `env`), which is the thread's under
    // those names, and several milliseconds on a loaded machine. At most that clock and a
    // quarter: switch-to-switch time also holds the interrupts and the time the hypervisor
    // took the CPU, which the thread's CPU clock leaves out. Some kernels do not record every
    // switch (this VM's leaves out those from the idle task): the thread's own events (its
    // system calls) show it runs, and a thread woken on an idle CPU runs from then on.
    assert!(
        running >= main_cpu_ns - 1_000_000 && running <= cpu_ns + cpu_ns / 4 + 2_000_000,
        "running {running} ns; the thread's CPU clock {cpu_ns} ns, {main_cpu_ns} ns of it in main"
    );
    let sleeping: i64 = t["blocked"].as_array().unwrap().iter().filter(|b| b["state"] == "S").map(|b| b["ns"].as_i64().unwrap()).sum();
    assert!(sleeping >= slept_ns - 1_000_000, "blocked sleeping {sleeping} ns, asked {slept_ns} ns");
    // Its sleeps end in the high-resolution timer's interrupt: blocked by reason `timer`, all
    // but the waits whose wake-up came from a CPU the trace lost track of (`unknown`). The
    // reasons add up to the blocked time.
    let reasons = t["blocked_by_reason"].as_array().unwrap();
    let reason = |r: &str| reasons.iter().filter(|b| b["reason"] == r).map(|b| b["ns"].as_i64().unwrap()).sum::<i64>();
    assert_eq!(reasons.iter().map(|b| b["ns"].as_i64().unwrap()).sum::<i64>(), t["blocked_ns"].as_i64().unwrap(), "{reasons:?}");
    assert!(reason("timer") >= slept_ns / 2 && reason("timer") + reason("unknown") >= slept_ns - 1_000_000, "blocked by reason {reasons:?}, asked {slept_ns} ns of sleep");
}

#[path = "../../export/tests/common/mod.rs"]
mod export_check;

/// `export` of a recording with stacks and probes: the Chrome file follows the format's
/// rules with one probe instant per probe event and the stack samples' frames; the Pajé file
/// is read by `pj_dump`; the folded stacks count every on-CPU sample once, name the
/// program's `main`, and `inferno-flamegraph` renders them.
#[test]
fn exports_of_a_recording_with_stacks_and_probes() {
    let Some((tmp, out, _run)) = record_program("export", "requests", &["--stacks", "--period", "0.2"]) else { return };
    let export = |to: &str, file: &Path| {
        let o = Command::new(exe()).arg("export").arg(&out).args(["--to", to, "-o"]).arg(file).output().unwrap();
        assert!(o.status.success(), "export --to {to}: {}", String::from_utf8_lossy(&o.stderr));
    };
    // Stack samples by kind, from the trace itself.
    let print = Command::new(exe()).arg("print").arg(&out).args(["--event", "tracelens_stack_sample"]).output().unwrap();
    let printed = String::from_utf8_lossy(&print.stdout);
    let on_cpu = printed.lines().filter(|l| l.contains("kind = ( \"on_cpu\"")).count();
    let samples = printed.lines().count();
    assert!(on_cpu > 0, "no on-CPU sample recorded");

    let chrome = tmp.0.join("rec.json");
    export("chrome", &chrome);
    let c = export_check::check_chrome(&std::fs::read(&chrome).unwrap());
    assert_eq!(c.instants.get("probe").copied(), Some(41), "probe instants: start + 20 x (req_begin, req_end)");
    assert_eq!(c.with_stacks, samples, "stack samples with a stack");

    let paje = tmp.0.join("rec.paje");
    export("paje", &paje);
    if let Some(lines) = export_check::pj_dump(&paje) {
        assert!(lines.iter().any(|l| l.starts_with("State, requests (") && l.contains(", State, ")), "pj_dump lists no state of the program's thread");
    }

    let folded = tmp.0.join("rec.folded");
    export("folded", &folded);
    let text = std::fs::read_to_string(&folded).unwrap();
    let total: usize = text.lines().map(|l| l.rsplit_once(' ').unwrap().1.parse::<usize>().unwrap()).sum();
    assert_eq!(total, on_cpu, "folded counts vs on-CPU samples");
    assert!(text.lines().any(|l| l.starts_with("requests;") && l.contains(";main")), "no stack through the program's main:\n{text}");
    match Command::new("inferno-flamegraph").arg(&folded).output() {
        Ok(o) => {
            assert!(o.status.success(), "inferno-flamegraph: {}", String::from_utf8_lossy(&o.stderr));
            let svg = String::from_utf8_lossy(&o.stdout);
            assert!(svg.contains("<svg") && svg.contains("main"), "inferno-flamegraph drew no `main`");
        }
        Err(e) => eprintln!("skipped the flame graph: inferno-flamegraph not installed ({e}; `cargo install inferno`)"),
    }
}

/// `executions` delimited by the program's own probes, paired by their value across the
/// user-space and kernel traces: the 20 requests of `requests.c`, each lasting what the
/// program measured around its probes (within 0.1 ms for nearly all), its critical path at
/// least the 2 ms sleep it asked for as `timer` and about the 1 ms it computed as running, its
/// ECCT naming `nanosleep` over `[timer]`; `begin.value` is the request number.
#[test]
fn executions_between_probes_agree_with_the_programs_own_clocks() {
    let Some((tmp, out, run)) = record_program("executions", "requests", &["--stacks", "-e", "irq,hrtimer"]) else { return };
    let stdout = String::from_utf8_lossy(&run.stdout);
    let took: Vec<i64> = stdout.lines().skip(1).map(|l| l.split_whitespace().find_map(|w| w.strip_prefix("ns=")).unwrap().parse().unwrap()).collect();
    let db = tmp.0.join("runs.db");
    let o = Command::new(exe()).args(["executions", "--begin-event", "req_begin", "--end-event", "req_end", "--match", "value", "-o"]).arg(&db).arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let d = tracelens_compare::db::open(&db).unwrap();
    assert_eq!(d.len(), 20);
    let col = |n: &str| d.column(n).unwrap_or_else(|| panic!("no {n}"));
    let (dur, value, timer, running) = (col("duration_ns"), col("begin.value"), col("timer_ns"), col("running_ns"));
    let mut close = 0;
    for i in 0..20 {
        let r = d.columns[value].int(i).unwrap() as usize;
        let ns = d.columns[dur].int(i).unwrap();
        assert!(ns <= took[r], "request {r}: {ns} ns between the probes, {} ns measured around them", took[r]);
        close += usize::from(took[r] - ns < 100_000);
        assert!(d.columns[timer].int(i).unwrap() >= 1_900_000, "request {r}: timer {:?}", d.columns[timer].int(i));
        let run_ns = d.columns[running].int(i).unwrap();
        assert!((900_000..2_500_000).contains(&run_ns), "request {r}: running {run_ns} ns for 1 ms of computing");
    }
    assert!(close >= 18, "only {close} of 20 requests within 0.1 ms of the program's measure");
    let timer_node = (1..d.tree.len() as u32).find(|&n| d.tree.frame_name(n) == "[timer]").expect("a [timer] node");
    let path = d.tree.path(timer_node);
    assert!(path.iter().any(|f| f.contains("nanosleep")), "the sleep's stack: {path:?}");
}
