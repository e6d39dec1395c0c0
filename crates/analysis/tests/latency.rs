//! `latency`: the same report for any number of workers and any chunk size (down to one
//! packet), and the same pairs as a plain serial pass over the merged events written here
//! (each `from` waits for the next `to` with the same match value), on kernel and user-space
//! fixtures: system calls, a CPU's consecutive context switches, `malloc` to the `free` of
//! the same pointer across per-process traces.

mod common;

use std::collections::HashMap;

use common::{assert_cut_independent, fixture};
use tracelens_analysis::{Engine, Latency, LatencyOptions, LatencyReport, Options};
use tracelens_trace::filter::glob_match;
use tracelens_trace::TraceSet;

fn run(set: &TraceSet, o: &LatencyOptions, threads: usize, chunk_size: u64) -> LatencyReport {
    Engine::new(set, &Options { threads, chunk_size }).run(&Latency::new(set, o.clone()).expect("classes")).expect("latency")
}

/// The serial pass: (sorted durations, unmatched count, (from_ns, to_ns) of the slowest 10).
fn serial(set: &TraceSet, o: &LatencyOptions) -> (Vec<i64>, u64, Vec<(i64, i64)>) {
    let mut waiting: HashMap<String, Vec<i64>> = HashMap::new();
    let mut pairs: Vec<(i64, i64)> = Vec::new();
    let mut m = set.merger();
    while m.next().expect("read").is_some() {
        let Some(ev) = m.event() else { continue };
        let Some(ns) = ev.ns else { continue };
        let (from, to) = (glob_match(o.from.as_bytes(), ev.name().as_bytes()), glob_match(o.to.as_bytes(), ev.name().as_bytes()));
        if !from && !to {
            continue;
        }
        let value = match &o.match_field {
            None => String::new(),
            Some(f) => match ev.field(f) {
                Some(v) => v.as_i64().map(|i| i.to_string()).or_else(|| v.as_u64().map(|u| u.to_string())).unwrap_or_else(|| format!("{:?}", v.as_bytes())),
                None => continue,
            },
        };
        if to {
            for f in waiting.remove(&value).unwrap_or_default() {
                pairs.push((f, ns));
            }
        }
        if from {
            waiting.entry(value).or_default().push(ns);
        }
    }
    let mut durations: Vec<i64> = pairs.iter().map(|(f, t)| t - f).collect();
    durations.sort();
    // Slowest first, earliest first among equals.
    pairs.sort_by(|a, b| (b.1 - b.0).cmp(&(a.1 - a.0)).then(a.0.cmp(&b.0)));
    pairs.truncate(10);
    (durations, waiting.values().map(|w| w.len() as u64).sum(), pairs)
}

fn check(set: &TraceSet, o: LatencyOptions, what: &str) {
    let report = assert_cut_independent(what, |j, cs| run(set, &o, j, cs));
    let (durations, unmatched, slowest) = serial(set, &o);
    assert!(!durations.is_empty(), "{what}: no pairs");
    assert_eq!(report.count, durations.len() as u64, "{what}: count");
    assert_eq!(report.unmatched, unmatched, "{what}: unmatched");
    assert_eq!((report.min_ns, report.max_ns), (durations[0], *durations.last().unwrap()), "{what}");
    let median = durations[durations.len().div_ceil(2) - 1];
    assert_eq!(report.percentiles[0].ns, median, "{what}: median");
    assert_eq!(report.histogram.iter().map(|b| b.count).sum::<u64>(), report.count, "{what}: histogram");
    let got: Vec<(i64, i64)> = report.slowest.iter().map(|p| (p.from_ns, p.to_ns)).collect();
    assert_eq!(got, slowest, "{what}: slowest pairs");
}

#[test]
fn system_calls_and_context_switches_on_a_kernel_trace() {
    let Some(set) = fixture("tracecompass/many-threads") else { return };
    check(&set, LatencyOptions::new("syscall_entry_*", "syscall_exit_*"), "syscalls, no match");
    let mut o = LatencyOptions::new("sched_switch", "sched_switch");
    o.match_field = Some("cpu_id".into());
    check(&set, o, "switch to switch, same CPU");
    let mut o = LatencyOptions::new("sched_wakeup", "sched_switch");
    o.match_field = Some("cpu_id".into());
    check(&set, o, "wakeup to switch, same CPU");
}

#[test]
fn malloc_to_free_of_the_same_pointer_across_traces() {
    let Some(a) = fixture("tracecompass/exp-subset/testTrace-17889-20140324-160652") else { return };
    drop(a);
    let root = std::env::var_os("TRACELENS_TRACES").map(std::path::PathBuf::from).unwrap_or_else(|| common::shared().join("traces"));
    let paths: Vec<_> = ["testTrace-17889-20140324-160652", "testTrace-17913-20140324-160652"].iter().map(|t| root.join("tracecompass/exp-subset").join(t)).collect();
    let set = TraceSet::open(&paths).expect("open");
    let mut o = LatencyOptions::new("ust_libc:malloc", "ust_libc:free");
    o.match_field = Some("ptr".into());
    check(&set, o, "malloc to free, same ptr");
}

#[test]
fn a_pattern_no_event_matches_is_an_error() {
    let Some(set) = fixture("tracecompass/many-threads") else { return };
    let e = Latency::new(&set, LatencyOptions::new("no_such_event", "sched_switch")).unwrap_err().to_string();
    assert!(e.contains("--from `no_such_event`"), "{e}");
}
