//! `threads` with blocked time by reason (`with_waits`): on the kernel fixtures, the same for
//! any number of workers and chunk size, and the same joined as the trace is read (`WaitJoin`); the reasons add up to each thread's blocked time;
//! and a wait's reason is what the critical path, walked over that wait alone, says it
//! waited for (two readings of the graph: the per-thread sums and the path walker).

use std::path::{Path, PathBuf};

use tracelens_analysis::{DecodedOnce, Engine, Filter, Options, Threads};
use std::sync::Arc;

use tracelens_critical::{blocked_by_reason, critical_path, with_waits, GraphAnalysis, PathState, ThreadsWaitsReport, WaitJoin, WaitReason};
use tracelens_trace::TraceSet;

fn fixture(rel: &str) -> Option<TraceSet> {
    let root = std::env::var_os("TRACELENS_TRACES").map(PathBuf::from).unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces"));
    let p = root.join(rel);
    if !p.exists() {
        assert!(std::env::var_os("CI").is_none(), "CI must have the fixtures: {} is missing", p.display());
        eprintln!("skipped {rel}: {} not found", p.display());
        return None;
    }
    Some(TraceSet::open(&[p]).expect("open fixture"))
}

fn report(set: &TraceSet, threads: usize, chunk_size: u64) -> ThreadsWaitsReport {
    let pair = (Threads::new(set, Filter::default()).keeping_waits(), GraphAnalysis::new(set));
    let (t, g) = Engine::new(set, &Options { threads, chunk_size }).run(&pair).expect("threads and graph");
    with_waits(t, &g)
}

/// The same, joined as the trace is read ([`WaitJoin`]: neither the graph nor the waits kept).
fn joined(set: &TraceSet, threads: usize, chunk_size: u64) -> ThreadsWaitsReport {
    joined_holding(set, threads, chunk_size).0
}

/// [`joined`], and how many intervals and marks the join held at the end of the run.
fn joined_holding(set: &TraceSet, threads: usize, chunk_size: u64) -> (ThreadsWaitsReport, usize) {
    let join = Arc::new(WaitJoin::new());
    // As `tracelens threads` runs them: each event decoded once for both (`report` decodes it
    // for each).
    let pair = DecodedOnce::new(Threads::new(set, Filter::default()).sending_waits(join.clone()), GraphAnalysis::new(set).joining(join.clone()));
    let (t, _) = Engine::new(set, &Options { threads, chunk_size }).run(&pair).expect("threads and reasons");
    let held = join.held();
    (join.report(t), held)
}

/// The path state a wait of this reason is, on the critical path over the wait, where the
/// path does not leave the thread (`None`: it follows another thread, or may).
fn path_state(r: WaitReason) -> Option<PathState> {
    match r {
        WaitReason::Timer => Some(PathState::Timer),
        WaitReason::Ipi => Some(PathState::Ipi),
        WaitReason::UserInput => Some(PathState::UserInput),
        WaitReason::Interrupt | WaitReason::NotWoken => Some(PathState::Blocked),
        WaitReason::Unknown => Some(PathState::Unknown),
        WaitReason::Thread | WaitReason::BlockDevice | WaitReason::Network => None,
    }
}

fn check(rel: &str, want: &[WaitReason]) {
    let Some(set) = fixture(rel) else { return };
    let serial = report(&set, 1, u64::MAX);
    let mut without_waits = serial.clone();
    without_waits.threads.iter_mut().for_each(|t| t.life.waits.clear());
    for (j, cs) in [(2, 1), (3, 4096), (8, 1 << 20)] {
        assert!(report(&set, j, cs) == serial, "{rel}: -j {j} --chunk-size {cs} differs");
    }
    for (j, cs) in [(1, u64::MAX), (2, 1), (3, 4096), (8, 1 << 20)] {
        assert!(joined(&set, j, cs) == without_waits, "{rel}: joined, -j {j} --chunk-size {cs}: not the reasons of the whole graph");
    }
    let g = Engine::new(&set, &Options::default()).run(&GraphAnalysis::new(&set)).expect("graph");
    // What the join holds at the end is a mark or two per thread, not the waits.
    let (_, held) = joined_holding(&set, 2, 1 << 16);
    let waits: usize = serial.threads.iter().map(|t| t.life.waits.len()).sum();
    assert!(held <= 3 * g.threads.len(), "{rel}: the join held {held} items ({waits} waits, {} threads)", g.threads.len());
    let mut seen = std::collections::BTreeSet::new();
    let mut checked = 0;
    for t in &serial.threads {
        let life = &t.life;
        assert_eq!(t.blocked_by_reason.iter().map(|r| r.ns).sum::<i64>(), life.blocked_ns, "{rel}: thread {}", life.tid);
        assert_eq!(life.waits.iter().map(|(a, b)| b - a).sum::<i64>(), life.blocked_ns, "{rel}: thread {}", life.tid);
        seen.extend(t.blocked_by_reason.iter().map(|r| r.reason));
        for &(a, b) in life.waits.iter().take(50) {
            let one = blocked_by_reason(&g, life.tid, &[(a, b)]);
            let Some(state) = path_state(one[0].reason) else { continue };
            let p = critical_path(&g, life.tid, Some(a), Some(b)).expect("path over a wait");
            assert_eq!(p.by_state.get(state), b - a, "{rel}: thread {} waiting {a}..{b} for {}: {:?}", life.tid, one[0].reason, p.by_state);
            checked += 1;
        }
    }
    assert!(checked > 0, "{rel}: no wait checked against the critical path");
    for r in want {
        assert!(seen.contains(r), "{rel}: no {r} wait (reasons: {seen:?})");
    }
}

#[test]
fn many_threads() {
    check("tracecompass/many-threads", &[WaitReason::Thread, WaitReason::Timer, WaitReason::BlockDevice, WaitReason::NotWoken]);
}

#[test]
fn bug446190_older_lttng() {
    check("tracecompass/bug446190", &[WaitReason::Thread, WaitReason::Timer]);
}

/// The joined reasons are those of the whole graph on the other kernel fixtures too.
#[test]
fn joined_on_other_fixtures() {
    for rel in ["tracecompass/flipping-endianness", "tracecompass/synctraces/scp_src", "tracecompass/synctraces/scp_dest"] {
        let Some(set) = fixture(rel) else { continue };
        let mut whole = report(&set, 1, u64::MAX);
        assert!(whole.threads.iter().any(|t| !t.blocked_by_reason.is_empty()), "{rel}: no blocked time");
        whole.threads.iter_mut().for_each(|t| t.life.waits.clear());
        for (j, cs) in [(1, u64::MAX), (2, 1), (3, 4096)] {
            assert!(joined(&set, j, cs) == whole, "{rel}: joined, -j {j} --chunk-size {cs}");
        }
    }
}
