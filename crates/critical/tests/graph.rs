//! The execution graph and critical paths on fixture and synthetic traces:
//!
//! * the graph is the same for any number of threads and any chunk size, down to one packet
//!   per chunk, as reading each stream whole on one thread (property test over synthetic
//!   traces; fixed cuts on the fixtures);
//! * for every thread, its critical path over its lifetime tiles the lifetime exactly (no gap,
//!   no overlap, `by_state` sums to the length), and every segment is of a known thread or
//!   `unknown`.
//!
//! Fixtures come from `../shared/traces` beside the repository (or `$TRACELENS_TRACES`); the
//! tests skip them with a message when they are absent, except under CI.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use tracelens_analysis::{Engine, Options};
use tracelens_critical::graph::Wake;
use tracelens_critical::{critical_path, CriticalPath, ExecutionGraph, GraphAnalysis, PathState};
use tracelens_trace::TraceSet;

fn traces_root() -> PathBuf {
    std::env::var_os("TRACELENS_TRACES").map(PathBuf::from).unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces"))
}

fn fixture(rel: &str) -> Option<TraceSet> {
    let p = traces_root().join(rel);
    if !p.exists() {
        assert!(std::env::var_os("CI").is_none(), "CI must have the fixtures: {} is missing", p.display());
        eprintln!("skipped {rel}: {} not found", p.display());
        return None;
    }
    Some(TraceSet::open(&[p]).expect("open fixture"))
}

/// A temporary directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("tracelens-critical-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn graph(set: &TraceSet, threads: usize, chunk_size: u64) -> ExecutionGraph {
    Engine::new(set, &Options { threads, chunk_size }).run(&GraphAnalysis::new(set)).expect("graph")
}

/// The segments tile `[begin_ns, end_ns]` and the totals add up.
fn check_path(g: &ExecutionGraph, p: &CriticalPath) {
    let mut at = p.begin_ns;
    for s in &p.segments {
        assert_eq!(s.begin_ns, at, "thread {}: gap or overlap at {at}", p.tid);
        assert!(s.end_ns > s.begin_ns, "thread {}: empty segment at {at}", p.tid);
        assert!(s.state == PathState::Unknown || g.threads.contains_key(&s.tid), "thread {}: segment of unknown thread {}", p.tid, s.tid);
        at = s.end_ns;
    }
    assert_eq!(at, p.end_ns, "thread {}: the segments stop early", p.tid);
    assert_eq!(p.by_state.total(), p.end_ns - p.begin_ns, "thread {}", p.tid);
    assert_eq!(p.by_thread.iter().map(|t| t.ns).sum::<i64>(), p.end_ns - p.begin_ns, "thread {}", p.tid);
    assert!((0.0..=1.0).contains(&p.unknown_fraction));
}

/// Every thread's path over its lifetime; returns how many threads and segments.
fn check_every_thread(g: &ExecutionGraph) -> (usize, usize) {
    let mut segments = 0;
    for (&tid, t) in &g.threads {
        let ns: Vec<i64> = t.steps.iter().map(|s| s.ns).collect();
        assert!(ns.windows(2).all(|w| w[0] < w[1]), "thread {tid}: steps out of order");
        assert_eq!(ns.len(), t.steps.len());
        let p = critical_path(g, tid, None, None).unwrap_or_else(|e| panic!("thread {tid}: {e}"));
        assert_eq!((p.begin_ns, p.end_ns), (t.begin_ns, t.end_ns));
        check_path(g, &p);
        segments += p.segments.len();
    }
    (g.threads.len(), segments)
}

fn serial_equals_parallel(set: &TraceSet) -> ExecutionGraph {
    let serial = graph(set, 1, u64::MAX);
    for (threads, chunk) in [(2, 1), (3, 4096), (8, 100_000), (1, 1), (2, 4 << 20)] {
        let g = graph(set, threads, chunk);
        assert!(g == serial, "-j {threads} with {chunk}-byte chunks gives another graph");
    }
    serial
}

#[test]
fn many_threads() {
    let Some(set) = fixture("tracecompass/many-threads") else { return };
    let g = serial_equals_parallel(&set);
    let (threads, segments) = check_every_thread(&g);
    assert!(threads > 100, "{threads} threads");
    assert!(segments > threads, "{segments} segments");
    // Waits resolved to a waker or a reason, not all unknown.
    let woken = g.threads.values().flat_map(|t| t.steps.iter()).filter(|s| matches!(g.wake_of(s.state), Some(Wake::Task(_)))).count();
    assert!(woken > 1000, "{woken} waits woken by a thread");
}

#[test]
fn bug446190_older_lttng() {
    let Some(set) = fixture("tracecompass/bug446190") else { return };
    let g = serial_equals_parallel(&set);
    let (threads, _) = check_every_thread(&g);
    assert!(threads > 10, "{threads} threads");
}

#[test]
fn perf_ctf_conversion() {
    let Some(set) = fixture("tracecompass/perf-taskset2") else { return };
    let g = serial_equals_parallel(&set);
    check_every_thread(&g);
}

#[test]
fn synth_paths_follow_wakers() {
    let dir = TempDir::new("synth");
    tracelens_synth::generate(&dir.0, &tracelens_synth::Options { cpus: 4, threads: 12, events: 60_000, seed: 7, packet_size: 4096 }).unwrap();
    let set = TraceSet::open(&[&dir.0]).unwrap();
    let g = serial_equals_parallel(&set);
    check_every_thread(&g);
    // The synthetic scheduler's wake-ups happen on whichever thread runs on the waker's CPU:
    // some waits lead to other threads.
    let followed = g.threads.keys().filter(|&&tid| critical_path(&g, tid, None, None).unwrap().by_thread.len() > 1).count();
    assert!(followed > 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Any cut, any number of threads: the same graph.
    #[test]
    fn any_cut_gives_the_same_graph(seed in 1u64..1000, cpus in 1u32..5, threads in 1u32..10, chunk in prop_oneof![Just(1u64), 1u64..20_000, Just(u64::MAX)], jobs in 1usize..5) {
        let dir = TempDir::new("prop");
        tracelens_synth::generate(&dir.0, &tracelens_synth::Options { cpus, threads, events: 6_000, seed, packet_size: 4096 }).unwrap();
        let set = TraceSet::open(&[&dir.0]).unwrap();
        let serial = graph(&set, 1, u64::MAX);
        let parallel = graph(&set, jobs, chunk);
        prop_assert!(serial == parallel);
        check_every_thread(&serial);
    }
}
