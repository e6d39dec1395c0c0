//! `io`: the same report for every thread count and chunk size on real kernel traces and on
//! synthetic ones (calls spanning chunks and CPUs); bytes and call counts equal to a serial
//! reading of the events. (lttng-iousagetop, lttng-iolatencystats and lttng-iolatencytop's
//! tables on many-threads: `crates/cli/tests/lttng_analyses.rs`.)

mod common;

use std::collections::{BTreeMap, HashMap};

use proptest::prelude::*;
use common::*;
use tracelens_analysis::{Filter, Io, IoReport};
use tracelens_ctf::Item;
use tracelens_trace::TraceSet;

fn io(set: &TraceSet, top: usize) -> Io {
    Io::new(set, Filter::default(), top)
}

#[test]
fn fixtures_serial_equals_parallel() {
    for rel in KERNEL_FIXTURES {
        let Some(p) = fixture_path(rel) else { continue };
        let set = open(&p);
        check_serial_parallel(&set, &io(&set, 10), rel);
    }
}

/// Per thread: (bytes read, bytes written, open calls, read calls, write calls, sync calls),
/// from a serial reading with lttng-analyses' pairing (the thread of a CPU is its last
/// switched-in thread; an exit ends the thread's pending entry). Every successful read or
/// write counts its return value: a descriptor never seen opened becomes an unknown file.
fn serial_model(set: &TraceSet) -> BTreeMap<i64, [u64; 6]> {
    let mut m = set.merger();
    let mut cur: HashMap<(usize, u64), i64> = HashMap::new();
    let mut pending: HashMap<i64, (String, i64)> = HashMap::new();
    let mut out: BTreeMap<i64, [u64; 6]> = BTreeMap::new();
    while let Some((src, item)) = m.next().expect("trace reads") {
        if item != Item::Event {
            continue;
        }
        let ev = m.event().expect("event");
        let Some(cpu) = ev.field("cpu_id").and_then(|f| f.as_u64()) else { continue };
        let name = ev.name();
        let int = |n: &str| ev.payload.get(n).and_then(|f| f.as_i64());
        if name == "sched_switch" {
            match int("next_tid").expect("next_tid") {
                0 => cur.remove(&(src.trace, cpu)),
                t => cur.insert((src.trace, cpu), t),
            };
            continue;
        }
        let Some(&tid) = cur.get(&(src.trace, cpu)) else { continue };
        if let Some(call) = name.strip_prefix("syscall_entry_").or_else(|| name.strip_prefix("sys_")) {
            // `fcntl` opens a descriptor only with F_DUPFD.
            let call = if call == "fcntl" && int("cmd") != Some(0) { "fcntl-other" } else { call };
            pending.insert(tid, (call.to_string(), 0));
        } else if name.starts_with("syscall_exit_") || name == "exit_syscall" {
            let Some((call, _)) = pending.remove(&tid) else { continue };
            let ret = int("ret").unwrap_or(-1);
            let e = out.entry(tid).or_default();
            match call.as_str() {
                "open" | "openat" | "socket" | "dup" | "dup2" | "dup3" | "fcntl" => e[2] += 1,
                "read" | "recvmsg" | "recvfrom" | "readv" | "pread64" | "preadv" => {
                    e[3] += 1;
                    e[0] += ret.max(0) as u64;
                }
                "write" | "sendmsg" | "sendto" | "writev" | "pwrite64" | "pwritev" => {
                    e[4] += 1;
                    e[1] += ret.max(0) as u64;
                }
                "sync" | "fsync" | "fdatasync" | "sync_file_range" => e[5] += 1,
                _ => {}
            }
        }
    }
    out.retain(|_, v| v.iter().any(|&x| x > 0));
    out
}

/// Bytes per thread and call counts of a report, as `serial_model` gives them (counts per
/// category: the report's latency counts).
fn totals(r: &IoReport) -> (BTreeMap<i64, [u64; 2]>, [u64; 4]) {
    let bytes = r.processes.iter().map(|p| (p.tid, [p.total().read, p.total().write])).filter(|(_, v)| v[0] + v[1] > 0).collect();
    (bytes, [r.latency[0].count, r.latency[1].count, r.latency[2].count, r.latency[3].count])
}

fn model_totals(m: &BTreeMap<i64, [u64; 6]>) -> (BTreeMap<i64, [u64; 2]>, [u64; 4]) {
    let bytes = m.iter().map(|(t, v)| (*t, [v[0], v[1]])).filter(|(_, v)| v[0] + v[1] > 0).collect();
    let mut n = [0; 4];
    for v in m.values() {
        for i in 0..4 {
            n[i] += v[2 + i];
        }
    }
    (bytes, n)
}

#[test]
fn synth_serial_equals_parallel_and_serial_reading() {
    for (cpus, threads, seed) in [(4, 32, 1), (2, 5, 7), (8, 64, 3)] {
        let dir = synth_small("io", cpus, threads, 60_000, seed);
        let set = open(&dir.0);
        let a = io(&set, 10);
        check_serial_parallel(&set, &a, "synth");
        let r = run(&set, &a, 8, 1);
        assert_eq!(totals(&r), model_totals(&serial_model(&set)), "synth {cpus} cpus {threads} threads seed {seed}");
        assert!(r.latency[1].count > 100 && !r.files.is_empty());
        // Synthetic files: the state dump's terminals and the opened /etc/hosts.
        assert!(r.files.iter().any(|f| f.path == "/etc/hosts"), "{:?}", r.files);
    }
}

#[test]
fn filters() {
    let dir = synth_small("iof", 4, 16, 30_000, 11);
    let set = open(&dir.0);
    let all = run(&set, &io(&set, 10), 2, 4096);
    let t = all.processes[0].tid;
    let one = run(&set, &Io::new(&set, Filter { tids: vec![t], ..Filter::default() }, 10), 2, 4096);
    assert_eq!(one.processes.len(), 1);
    assert_eq!(one.processes[0], all.processes[0]);
    let (b, e) = (all.begin_ns.unwrap(), all.end_ns.unwrap());
    let f = Filter { begin_ns: Some(b + (e - b) / 2), ..Filter::default() };
    check_serial_parallel(&set, &Io::new(&set, f, 10), "synth --begin");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn synth_any_cut(seed in 1u64..10_000, cpus in 1u32..6, threads in 1u32..24, chunk in prop::sample::select(vec![1u64, 4096, 9000, 40_000, u64::MAX]), j in 1usize..6) {
        let dir = synth_small("iop", cpus, threads, 8_000, seed);
        let set = open(&dir.0);
        let a = io(&set, 5);
        let serial = run(&set, &a, 1, u64::MAX);
        prop_assert_eq!(&run(&set, &a, j, chunk), &serial);
        prop_assert_eq!(totals(&serial), model_totals(&serial_model(&set)));
    }
}
