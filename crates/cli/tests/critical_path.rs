//! `tracelens critical-path`, on recordings with known answers and on synthetic traces.
//!
//! Known answers: `tests/data/critical_cases.c`, compiled here, is recorded with
//! `tracelens record` (all CPUs, default events) one case at a time, then the critical path of
//! the case's thread over the interval the program measured (its CLOCK_MONOTONIC times plus the
//! trace clock's offset) must show:
//!
//! * `sleep`: nanosleep(50 ms) → 50–53 ms `timer`;
//! * `pipes`: A waits for B, B for C; C computes 30 ms, B 20 ms → on A's path, C runs 29–34 ms,
//!   then B runs 19–24 ms;
//! * `futex`: a mutex held by a thread computing 40 ms → the holder runs 39–44 ms on the
//!   waiter's path;
//! * `preempt`: two threads pinned to CPU 0, one a busy loop → the other's `preempted` time is
//!   its wall time minus its CPU time (CLOCK_THREAD_CPUTIME_ID) within 2 ms + 2%;
//! * `fsync`: writes and fsync of 8 MiB on a real disk → `block_device` is at least half the
//!   time the path waits (is not running or runnable), and each `block_device` segment lies within the issue → completion interval
//!   of a block request of the trace (`block_rq_issue` → `block_rq_complete`, by device and
//!   sector);
//! * `tcp`: a request over loopback to a server process that computes 20 ms → the client's
//!   path runs through the server's running time (10–22 ms, and at least 19 ms with the time
//!   the woken server preempted the client before it blocked) and the network soft IRQ that
//!   woke it.
//!
//! In every case at most 5% of the interval is `unknown`, although this machine's kernel
//! misses some context switches. Needs root, tracefs and a C compiler (skipped, with a
//! message, without them).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use serde_json::Value;

mod common;
use common::{exe, Synth};

/// Recordings run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("recording kernel events needs root".into());
    }
    if !Path::new("/sys/kernel/tracing/instances").is_dir() {
        return Some("no tracefs at /sys/kernel/tracing".into());
    }
    None
}

/// Scratch space on the disk the build is on (the fsync case needs a real disk, not tmpfs).
fn scratch(name: &str) -> PathBuf {
    common::scratch("critical", name)
}

/// The test program, compiled once.
fn program() -> Option<PathBuf> {
    common::compile("critical_cases.c", &["-O1", "-pthread"])
}

/// A recorded case: the facts the program wrote, the trace, the trace clock's offset.
struct Case {
    name: &'static str,
    dir: PathBuf,
    facts: HashMap<String, i64>,
    offset_ns: i64,
}

impl Drop for Case {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Records `case`, or `None` (with the reason printed) when it cannot run here.
fn record(case: &'static str) -> Option<Case> {
    if let Some(why) = skip_reason() {
        eprintln!("critical path `{case}`: skipped: {why}");
        return None;
    }
    let Some(bin) = program() else {
        eprintln!("critical path `{case}`: skipped: no C compiler (cc)");
        return None;
    };
    let dir = scratch(case);
    let facts_file = dir.join("facts.txt");
    let out = Command::new(exe()).args(["record", "-q", "-o"]).arg(dir.join("rec")).arg("--").arg(&bin).arg(case).arg(&facts_file).output().unwrap();
    assert!(out.status.success(), "record {case}: {}", String::from_utf8_lossy(&out.stderr));
    let facts = std::fs::read_to_string(&facts_file)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_string(), v.parse().unwrap()))
        .collect();
    let trace = tracelens_ctf::Trace::open(dir.join("rec/kernel")).unwrap();
    let clock = &trace.class.clocks[0];
    assert_eq!(clock.freq, 1_000_000_000);
    let offset_ns = clock.offset_s * 1_000_000_000 + clock.offset;
    Some(Case { name: case, dir, facts, offset_ns })
}

impl Case {
    fn fact(&self, k: &str) -> i64 {
        *self.facts.get(k).unwrap_or_else(|| panic!("{}: no `{k}` in {:?}", self.name, self.facts))
    }

    /// The critical path of the thread `tid_key` over [begin, end] (`--json`), checked to
    /// tile the interval.
    fn path(&self, tid_key: &str) -> Report {
        let secs = |ns: i64| format!("{}.{:09}", ns.div_euclid(1_000_000_000), ns.rem_euclid(1_000_000_000));
        let (b, e) = (self.fact("begin") + self.offset_ns, self.fact("end") + self.offset_ns);
        let out = Command::new(exe())
            .args(["critical-path", "--json", "--tid", &self.fact(tid_key).to_string(), "--begin", &secs(b), "--end", &secs(e)])
            .arg(self.dir.join("rec"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}: {}", self.name, String::from_utf8_lossy(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let p = Report(v);
        assert_eq!((p.0["begin_ns"].as_i64(), p.0["end_ns"].as_i64()), (Some(b), Some(e)));
        p.check_tiling();
        eprintln!("{}: {}", self.name, p.summary());
        p
    }
}

/// A `--json` report.
struct Report(Value);

impl Report {
    fn segments(&self) -> &Vec<Value> {
        self.0["segments"].as_array().unwrap()
    }

    fn check_tiling(&self) {
        let mut at = self.0["begin_ns"].as_i64().unwrap();
        for s in self.segments() {
            assert_eq!(s["begin_ns"].as_i64().unwrap(), at, "gap or overlap");
            at = s["end_ns"].as_i64().unwrap();
        }
        assert_eq!(at, self.0["end_ns"].as_i64().unwrap());
        let total: i64 = self.0["by_state"].as_object().unwrap().values().map(|v| v.as_i64().unwrap()).sum();
        assert_eq!(total, self.span());
    }

    fn span(&self) -> i64 {
        self.0["end_ns"].as_i64().unwrap() - self.0["begin_ns"].as_i64().unwrap()
    }

    fn state(&self, s: &str) -> i64 {
        self.0["by_state"][s].as_i64().unwrap()
    }

    /// Time of `tid` in any of `states` on the path.
    fn of(&self, tid: i64, states: &[&str]) -> i64 {
        self.segments().iter().filter(|s| s["tid"].as_i64() == Some(tid) && states.contains(&s["state"].as_str().unwrap())).map(dur).sum()
    }

    fn unknown_fraction(&self) -> f64 {
        self.0["unknown_fraction"].as_f64().unwrap()
    }

    fn summary(&self) -> String {
        format!("{} ms: by state {} ; by thread {}", ms(self.span()), self.0["by_state"], self.0["by_thread"])
    }
}

fn dur(s: &Value) -> i64 {
    s["end_ns"].as_i64().unwrap() - s["begin_ns"].as_i64().unwrap()
}

fn ms(ns: i64) -> f64 {
    ns as f64 / 1e6
}

fn within(p: &Report, what: &str, ns: i64, lo_ms: f64, hi_ms: f64) {
    assert!((lo_ms..=hi_ms).contains(&ms(ns)), "{what}: {:.3} ms, expected {lo_ms}..{hi_ms} ms; path {}", ms(ns), p.summary());
}

const RUN: [&str; 2] = ["running", "interrupted"];

#[test]
fn sleep_is_timer() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(c) = record("sleep") else { return };
    let p = c.path("tid");
    within(&p, "timer", p.state("timer"), 50.0, 53.0);
    assert!(p.unknown_fraction() < 0.05, "unknown {:.1}%: {}", 100.0 * p.unknown_fraction(), p.summary());
}

#[test]
fn pipe_chain_runs_through_c_then_b() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(c) = record("pipes") else { return };
    let p = c.path("a");
    let (b, cc) = (c.fact("b"), c.fact("c"));
    within(&p, "C running", p.of(cc, &RUN), 29.0, 34.0);
    within(&p, "B running", p.of(b, &RUN), 19.0, 24.0);
    // C's part comes first: B's computing is after C's last segment.
    let c_end = p.segments().iter().filter(|s| s["tid"].as_i64() == Some(cc)).map(|s| s["end_ns"].as_i64().unwrap()).max().unwrap();
    let b_after: i64 = p.segments().iter().filter(|s| s["tid"].as_i64() == Some(b) && RUN.contains(&s["state"].as_str().unwrap()) && s["begin_ns"].as_i64().unwrap() >= c_end).map(dur).sum();
    within(&p, "B running after C", b_after, 19.0, 24.0);
    assert!(p.unknown_fraction() < 0.05, "unknown {:.1}%: {}", 100.0 * p.unknown_fraction(), p.summary());
}

#[test]
fn mutex_holder_runs_on_the_waiters_path() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(c) = record("futex") else { return };
    let p = c.path("w");
    within(&p, "holder running", p.of(c.fact("h"), &RUN), 39.0, 44.0);
    assert!(p.unknown_fraction() < 0.05, "unknown {:.1}%: {}", 100.0 * p.unknown_fraction(), p.summary());
}

#[test]
fn preempted_is_wall_time_minus_cpu_time() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(c) = record("preempt") else { return };
    let p = c.path("y");
    let (wall, cpu) = (p.span(), c.fact("cpu_ns"));
    let tol = 2_000_000 + wall / 50;
    let preempted = p.of(c.fact("y"), &["preempted"]);
    eprintln!("preempt: wall {:.3} ms, cpu {:.3} ms, preempted {:.3} ms", ms(wall), ms(cpu), ms(preempted));
    assert!((preempted - (wall - cpu)).abs() <= tol, "preempted {:.3} ms, wall - cpu {:.3} ms", ms(preempted), ms(wall - cpu));
    assert!((p.of(c.fact("y"), &RUN) - cpu).abs() <= tol);
    assert!(p.unknown_fraction() < 0.05, "unknown {:.1}%: {}", 100.0 * p.unknown_fraction(), p.summary());
}

#[test]
fn fsync_waits_for_the_block_device() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let fs = Command::new("findmnt").args(["-n", "-o", "FSTYPE", "--target", env!("CARGO_TARGET_TMPDIR")]).output();
    if let Ok(o) = &fs {
        let t = String::from_utf8_lossy(&o.stdout).trim().to_string();
        if t == "tmpfs" || t == "ramfs" {
            eprintln!("critical path `fsync`: skipped: {} is on {t}, not a disk", env!("CARGO_TARGET_TMPDIR"));
            return;
        }
    }
    let Some(c) = record("fsync") else { return };
    let p = c.path("tid");
    // The block requests of the trace: (device, sector) issue → completion.
    let out = Command::new(exe()).args(["print", "--format", "json", "--event", "block_rq_*"]).arg(c.dir.join("rec")).output().unwrap();
    assert!(out.status.success());
    let mut issued: HashMap<(u64, u64), i64> = HashMap::new();
    let mut served = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        let (Some(t), Some(dev), Some(sector)) = (e["timestamp_ns"].as_i64(), e["payload"]["dev"].as_u64(), e["payload"]["sector"].as_u64()) else { continue };
        match e["name"].as_str() {
            Some("block_rq_issue") => {
                issued.insert((dev, sector), t);
            }
            Some("block_rq_complete") => {
                if let Some(i) = issued.remove(&(dev, sector)) {
                    served.push((i, t));
                }
            }
            _ => {}
        }
    }
    let block: Vec<&Value> = p.segments().iter().filter(|s| s["state"] == "block_device").collect();
    assert!(!block.is_empty(), "no block_device on the path");
    for s in &block {
        let (a, b) = (s["begin_ns"].as_i64().unwrap(), s["end_ns"].as_i64().unwrap());
        // The wake-up comes right after the completion, in its soft IRQ or interrupt.
        assert!(served.iter().any(|&(i, done)| i <= a && b <= done + 1_000_000), "block_device {a}..{b} is in no request's issue..completion");
    }
    // Most of the waiting is for the device (the rest of the fsync is running, and waiting for
    // a CPU: on a loaded machine, a large part).
    let total = p.state("block_device");
    let waiting = p.span() - p.state("running") - p.state("preempted") - p.state("interrupted");
    assert!(waiting > 0 && total * 2 >= waiting, "block_device {:.3} ms of {:.3} ms waiting; path {}", ms(total), ms(waiting), p.summary());
    assert!(p.unknown_fraction() < 0.05, "unknown {:.1}%: {}", 100.0 * p.unknown_fraction(), p.summary());
}

#[test]
fn tcp_client_waits_for_the_server() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(c) = record("tcp") else { return };
    let p = c.path("client");
    let (client, server) = (c.fact("client"), c.fact("server"));
    let server_running = p.of(server, &RUN);
    // The server, woken by the request, may preempt the client before it blocks in recv().
    let preempted_by_server: i64 = p
        .segments()
        .iter()
        .filter(|s| s["tid"].as_i64() == Some(client) && s["state"] == "preempted" && s["cause"].as_str().unwrap().contains(&format!("({server})")))
        .map(dur)
        .sum();
    // At most its 20 ms of computing (and the little around it).
    within(&p, "server running", server_running, 10.0, 22.0);
    assert!(ms(server_running + preempted_by_server) >= 19.0, "server running {:.3} ms + preempting the client {:.3} ms", ms(server_running), ms(preempted_by_server));
    assert!(p.state("network") > 0, "no network segment");
    assert!(p.unknown_fraction() < 0.05, "unknown {:.1}%: {}", 100.0 * p.unknown_fraction(), p.summary());
}

// ---------------------------------------------------------------------------------------------
// Without recording.
// ---------------------------------------------------------------------------------------------

fn run(args: &[&str]) -> std::process::Output {
    Command::new(exe()).args(args).output().unwrap()
}

#[test]
fn synth_json_tiles_and_does_not_depend_on_jobs() {
    let t = Synth::new("critical-json", &["--cpus", "3", "--threads", "6", "--events", "30000", "--seed", "3"]);
    let dir = t.0.to_str().unwrap();
    let one = run(&["critical-path", dir, "--tid", "1000", "--json", "-j", "1"]);
    assert!(one.status.success(), "{}", String::from_utf8_lossy(&one.stderr));
    let two = run(&["critical-path", dir, "--tid", "1000", "--json", "-j", "2", "--chunk-size", "1"]);
    assert_eq!(one.stdout, two.stdout);
    let p = Report(serde_json::from_slice(&one.stdout).unwrap());
    p.check_tiling();
    assert!(p.segments().len() > 10);
    let text = run(&["critical-path", dir, "--tid", "1000"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.starts_with("Critical path of app0 (1000)"), "{text}");
    assert!(text.contains("By state:") && text.contains("By thread:"));
}

#[test]
fn threads_without_reasons_is_threads_less_the_reasons() {
    // The oracle: the full `threads` run, whose reasons need the execution graph.
    let t = Synth::new("threads-no-reasons", &["--cpus", "3", "--threads", "9", "--events", "40000", "--seed", "5"]);
    let dir = t.0.to_str().unwrap();
    let full = run(&["threads", dir, "--json", "--limit", "0"]);
    assert!(full.status.success(), "{}", String::from_utf8_lossy(&full.stderr));
    let mut want: Value = serde_json::from_slice(&full.stdout).unwrap();
    let threads = want["threads"].as_array_mut().unwrap();
    assert!(threads.len() >= 9);
    assert!(threads.iter().any(|t| !t["blocked_by_reason"].as_array().unwrap().is_empty()));
    for t in threads {
        t.as_object_mut().unwrap().remove("blocked_by_reason");
    }
    for jobs in ["1", "2"] {
        let lean = run(&["threads", dir, "--json", "--limit", "0", "--no-reasons", "-j", jobs, "--chunk-size", "64K"]);
        assert!(lean.status.success(), "{}", String::from_utf8_lossy(&lean.stderr));
        assert_eq!(serde_json::from_slice::<Value>(&lean.stdout).unwrap(), want, "-j {jobs}");
    }
    let text = run(&["threads", dir, "--no-reasons"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("blocked by state\n") && !text.contains("by reason"), "{text}");
    assert!(text.lines().any(|l| l.rsplit("    ").next().is_some_and(|f| f.starts_with("S "))), "{text}");
}

#[test]
fn bad_thread_or_range_is_a_one_line_error() {
    let t = Synth::new("critical-errors", &["--cpus", "2", "--threads", "4", "--events", "5000"]);
    let dir = t.0.to_str().unwrap();
    for (args, want) in [
        (vec!["--tid", "424242"], "thread 424242 is not in the trace"),
        (vec!["--tid", "1000", "--begin", "100000", "--end", "100001"], "outside the trace"),
        (vec!["--tid", "1000", "--begin", "0.002", "--end", "0.001"], "is after --end"),
    ] {
        let mut a = vec!["critical-path", dir];
        a.extend(args);
        let o = run(&a);
        assert_eq!(o.status.code(), Some(1));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{err}");
    }
}
