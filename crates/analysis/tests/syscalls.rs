//! `syscalls`: the same report for every thread count and chunk size (down to one packet) on
//! real kernel traces and on synthetic traces full of migrations and calls that span chunks;
//! and the same pairs of entries and exits as a plain serial reading of the events in time
//! order with lttng-analyses' rules.

mod common;

use std::collections::{BTreeMap, HashMap};

use proptest::prelude::*;
use common::*;
use tracelens_analysis::{Filter, Syscalls, SyscallsReport};
use tracelens_ctf::Item;
use tracelens_trace::TraceSet;

/// Per (tid, call): count, min, max, sum of durations, errors.
type Table = BTreeMap<(i64, String), (u64, i64, i64, i128, u64)>;

fn table(r: &SyscallsReport) -> Table {
    let mut t = Table::new();
    for th in &r.threads {
        for (name, c) in &th.calls {
            let d = &c.durations;
            t.insert((th.tid, name.clone()), (d.count, d.min_ns, d.max_ns, d.sum_ns, c.errors));
        }
    }
    t
}

/// lttng-analyses' automaton, read serially in time order: the thread of a CPU is the last
/// `next_tid` switched in on it (none before the first switch, none for tid 0); an entry
/// replaces the thread's pending entry; an exit ends it. `pair(tid, call, entry_ns, exit_ns,
/// ret)` for each call.
fn serial_pairs(set: &TraceSet, mut pair: impl FnMut(i64, String, i64, i64, i64)) {
    let mut m = set.merger();
    let mut cur: HashMap<(usize, u64), i64> = HashMap::new();
    let mut pending: HashMap<i64, (String, i64)> = HashMap::new();
    while let Some((src, item)) = m.next().expect("trace reads") {
        if item != Item::Event {
            continue;
        }
        let ev = m.event().expect("event");
        let Some(ns) = ev.ns else { continue };
        let Some(cpu) = ev.field("cpu_id").and_then(|f| f.as_u64()) else { continue };
        let name = ev.name();
        let int = |n: &str| ev.payload.get(n).and_then(|f| f.as_i64());
        if name == "sched_switch" {
            let next = int("next_tid").expect("next_tid");
            if next == 0 {
                cur.remove(&(src.trace, cpu));
            } else {
                cur.insert((src.trace, cpu), next);
            }
            continue;
        }
        let entry = name.strip_prefix("syscall_entry_").or_else(|| name.strip_prefix("sys_"));
        let exit = name.starts_with("syscall_exit_") || name == "exit_syscall";
        let Some(&tid) = cur.get(&(src.trace, cpu)) else { continue };
        if let Some(call) = entry {
            pending.insert(tid, (call.to_string(), ns));
        } else if exit {
            if let Some((call, begin)) = pending.remove(&tid) {
                pair(tid, call, begin, ns, int("ret").unwrap_or(0));
            }
        }
    }
}

/// The kernel's `IS_ERR_VALUE`: only −4095..−1 are error codes.
fn is_err_value(ret: i64) -> bool {
    (-4095..=-1).contains(&ret)
}

/// [`serial_pairs`] as a [`Table`].
fn serial_model(set: &TraceSet) -> Table {
    let mut t = Table::new();
    serial_pairs(set, |tid, call, begin, end, ret| {
        let d = end - begin;
        let e = t.entry((tid, call)).or_insert((0, d, d, 0, 0));
        e.0 += 1;
        e.1 = e.1.min(d);
        e.2 = e.2.max(d);
        e.3 += i128::from(d);
        e.4 += u64::from(is_err_value(ret));
    });
    t
}

/// Calls whose exit is on another CPU (so in another stream and chunk) than their entry.
fn cross_cpu_calls(set: &TraceSet) -> u64 {
    let mut m = set.merger();
    let mut cur: HashMap<u64, i64> = HashMap::new();
    let mut pending: HashMap<i64, u64> = HashMap::new();
    let mut n = 0;
    while let Some((_, item)) = m.next().expect("trace reads") {
        if item != Item::Event {
            continue;
        }
        let ev = m.event().expect("event");
        let Some(cpu) = ev.field("cpu_id").and_then(|f| f.as_u64()) else { continue };
        let name = ev.name();
        if name == "sched_switch" {
            cur.insert(cpu, ev.payload.get("next_tid").and_then(|f| f.as_i64()).unwrap());
        } else if let Some(&tid) = cur.get(&cpu) {
            if name.starts_with("syscall_entry_") {
                pending.insert(tid, cpu);
            } else if name.starts_with("syscall_exit_") {
                n += u64::from(pending.remove(&tid).is_some_and(|c| c != cpu));
            }
        }
    }
    n
}

#[test]
fn fixtures_serial_equals_parallel() {
    for rel in KERNEL_FIXTURES {
        let Some(p) = fixture_path(rel) else { continue };
        let set = open(&p);
        let a = Syscalls::new(&set, Filter::default());
        check_serial_parallel(&set, &a, rel);
    }
}

#[test]
fn fixtures_match_a_serial_reading() {
    for rel in KERNEL_FIXTURES {
        let Some(p) = fixture_path(rel) else { continue };
        let set = open(&p);
        let r = run(&set, &Syscalls::new(&set, Filter::default()), 2, 4096);
        let want = serial_model(&set);
        assert_eq!(table(&r), want, "{rel}");
        assert_eq!(r.total, want.values().map(|v| v.0).sum::<u64>(), "{rel}");
    }
}

/// bug446190 is a 32-bit ARM trace: `exit_syscall`'s `ret` is a signed 32-bit integer, so the
/// addresses `mmap2` returns above 2 GiB read as negative numbers. They are successes; only
/// −4095..−1 are errors (issue 15).
#[test]
fn bug446190_negative_addresses_are_successes() {
    let Some(p) = fixture_path("tracecompass/bug446190") else { return };
    let set = open(&p);
    // What the events say, per call: calls, error codes, negative values that are not.
    let mut want: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
    serial_pairs(&set, |_, call, _, _, ret| {
        let e = want.entry(call).or_default();
        e.0 += 1;
        e.1 += u64::from(is_err_value(ret));
        e.2 += u64::from(ret < -4095);
    });
    let mmap2 = want["mmap2"];
    assert!(mmap2.0 > 0 && mmap2.2 > 0, "the trace has mmap2 calls returning addresses above 2 GiB: {mmap2:?}");
    assert!(want.values().any(|v| v.1 > 0), "and real errors");
    let r = run(&set, &Syscalls::new(&set, Filter::default()), 2, 4096);
    for (name, c) in &r.calls {
        let (calls, errors, negative_successes) = want[name];
        assert_eq!((c.durations.count, c.errors), (calls, errors), "{name}: {negative_successes} negative successes");
        assert_eq!(c.by_error.values().sum::<u64>(), c.errors, "{name}");
        assert!(c.by_error.keys().all(|&e| is_err_value(e)), "{name}: {:?}", c.by_error);
    }
    assert_eq!(r.calls.iter().find(|(n, _)| n == "mmap2").map(|(_, c)| c.errors), Some(mmap2.1));
}

/// Thread names and pids in `syscalls` come from everything the trace says, later events
/// included (docs/lttng-analyses-differences.md): the name is the latest the scheduler and
/// state dump events give, the pid the one the state dump or a fork gives. lttng-syscallstats
/// labels a thread with what it knew at the thread's first system call exit and never updates
/// it. On bug446190 that shows twice: tid 525 is forked as `sh` and makes calls before it
/// `exec`s `/bin/ls` (lttng: `sh`, tracelens: `ls`), and threads that return from calls
/// before the state dump names their process (lttng: pid `?`).
#[test]
fn bug446190_threads_named_from_the_whole_trace() {
    let Some(p) = fixture_path("tracecompass/bug446190") else { return };
    let set = open(&p);
    // Per thread, from the events in time order: its latest name, its pid and when it was
    // first known, its exec.
    let mut name: HashMap<i64, String> = HashMap::new();
    let mut pid: HashMap<i64, (i64, i64)> = HashMap::new();
    let mut exec: HashMap<i64, i64> = HashMap::new();
    let mut m = set.merger();
    while let Some((_, item)) = m.next().expect("trace reads") {
        if item != Item::Event {
            continue;
        }
        let ev = m.event().expect("event");
        let ns = ev.ns.expect("timed");
        let int = |n: &str| ev.payload.get(n).and_then(|f| f.as_i64());
        let text = |n: &str| ev.payload.get(n).and_then(|f| f.as_str()).map(|s| s.into_owned());
        let mut named = |tid: Option<i64>, comm: Option<String>| {
            if let (Some(t), Some(c)) = (tid, comm) {
                name.insert(t, c);
            }
        };
        match ev.name() {
            "sched_switch" => {
                named(int("prev_tid"), text("prev_comm"));
                named(int("next_tid"), text("next_comm"));
            }
            "sched_process_fork" => {
                named(int("child_tid"), text("child_comm"));
                pid.entry(int("child_tid").unwrap()).or_insert((int("child_pid").unwrap(), ns));
            }
            "lttng_statedump_process_state" => {
                named(int("tid"), text("name"));
                pid.entry(int("tid").unwrap()).or_insert((int("pid").unwrap(), ns));
            }
            "sched_process_exec" => {
                exec.insert(int("tid").unwrap(), ns);
            }
            _ => {}
        }
    }
    let mut first_exit: HashMap<i64, i64> = HashMap::new();
    serial_pairs(&set, |tid, _, _, end, _| {
        first_exit.entry(tid).or_insert(end);
    });

    let r = run(&set, &Syscalls::new(&set, Filter::default()), 2, 4096);
    for t in &r.threads {
        assert_eq!(Some(&t.comm), name.get(&t.tid), "tid {}: the latest name", t.tid);
        assert_eq!(t.pid, pid.get(&t.tid).map(|p| p.0), "tid {}: the pid", t.tid);
    }
    // tid 525: calls as `sh` before its exec, named `ls` after.
    let ls = r.threads.iter().find(|t| t.tid == 525).expect("tid 525 makes system calls");
    assert!(first_exit[&525] < exec[&525], "its first call returns before its exec");
    assert_eq!(ls.comm, "ls");
    // Threads whose pid is known only after their first call returned: lttng's `?`.
    let late: Vec<i64> = r.threads.iter().filter(|t| pid.get(&t.tid).is_some_and(|&(_, at)| at > first_exit[&t.tid])).map(|t| t.tid).collect();
    assert!(!late.is_empty(), "threads return from calls before the state dump");
    assert!(late.iter().all(|tid| r.threads.iter().any(|t| t.tid == *tid && t.pid.is_some())));
}

/// The calls lttng-iolatencystats counts per category are system calls `syscalls` counts: the
/// sums agree with its reference output on many-threads (`fcntl` there is never `F_DUPFD`).
#[test]
fn many_threads_agrees_with_lttng_iolatencystats_counts() {
    let (Some(p), Some(text)) = (fixture_path("tracecompass/many-threads"), reference("many-threads/iolatencystats.txt")) else { return };
    let set = open(&p);
    let r = run(&set, &Syscalls::new(&set, Filter::default()), 2, 1 << 20);
    let count = |names: &[&str]| -> u64 { r.calls.iter().filter(|(n, _)| names.contains(&n.as_str())).map(|(_, c)| c.durations.count).sum() };
    let categories: [(&str, &[&str]); 4] = [
        ("Open", &["open", "openat", "socket", "dup", "dup2", "dup3"]),
        ("Read", &["read", "recvmsg", "recvfrom", "readv", "pread64", "preadv"]),
        ("Write", &["write", "sendmsg", "sendto", "writev", "pwrite64", "pwritev"]),
        ("Sync", &["sync", "fsync", "fdatasync", "sync_file_range"]),
    ];
    for (cat, names) in categories {
        let line = text.lines().find(|l| l.starts_with(cat)).expect("category row");
        let want: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert_eq!(count(names), want, "{cat}");
    }
    assert_eq!(count(&["open"]), 8192, "every open of the trace is paired");
    assert!(r.threads.iter().any(|t| t.comm == "multithread"));
}

#[test]
fn synth_serial_equals_parallel_and_serial_reading() {
    for (cpus, threads, seed) in [(4, 32, 1), (2, 5, 7), (8, 64, 3)] {
        let dir = synth_small("sys", cpus, threads, 60_000, seed);
        let set = open(&dir.0);
        let a = Syscalls::new(&set, Filter::default());
        check_serial_parallel(&set, &a, "synth");
        let r = run(&set, &a, 8, 1);
        assert_eq!(table(&r), serial_model(&set), "synth {cpus} cpus {threads} threads seed {seed}");
        assert!(r.total > 1000);
        assert!(cross_cpu_calls(&set) > 50, "the trace has calls that migrate");
    }
}

#[test]
fn filters_select_by_exit() {
    let dir = synth_small("sysf", 4, 16, 30_000, 5);
    let set = open(&dir.0);
    let all = run(&set, &Syscalls::new(&set, Filter::default()), 2, 4096);
    let (b, e) = (all.begin_ns.unwrap(), all.end_ns.unwrap());
    let mid = b + (e - b) / 2;
    let f1 = Filter { end_ns: Some(mid), ..Filter::default() };
    let f2 = Filter { begin_ns: Some(mid + 1), ..Filter::default() };
    let r1 = run(&set, &Syscalls::new(&set, f1.clone()), 2, 4096);
    let r2 = run(&set, &Syscalls::new(&set, f2.clone()), 2, 4096);
    assert_eq!(r1.total + r2.total, all.total);
    check_serial_parallel(&set, &Syscalls::new(&set, f1), "synth --end");
    let cpu0 = Filter { cpus: vec![0], ..Filter::default() };
    let r0 = run(&set, &Syscalls::new(&set, cpu0), 2, 4096);
    assert!(r0.total > 0 && r0.total < all.total);
    let t = all.threads[0].tid;
    let rt = run(&set, &Syscalls::new(&set, Filter { tids: vec![t], ..Filter::default() }), 2, 4096);
    assert_eq!(rt.threads.len(), 1);
    assert_eq!(rt.threads[0], all.threads[0]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn synth_any_cut(seed in 1u64..10_000, cpus in 1u32..6, threads in 1u32..24, chunk in prop::sample::select(vec![1u64, 4096, 9000, 40_000, u64::MAX]), j in 1usize..6) {
        let dir = synth_small("sysp", cpus, threads, 8_000, seed);
        let set = open(&dir.0);
        let a = Syscalls::new(&set, Filter::default());
        let serial = run(&set, &a, 1, u64::MAX);
        prop_assert_eq!(&run(&set, &a, j, chunk), &serial);
        prop_assert_eq!(table(&serial), serial_model(&set));
    }
}
