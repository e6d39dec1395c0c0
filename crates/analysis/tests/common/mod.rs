//! Helpers shared by the kernel analyses' tests: fixtures, reference files, runs.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use tracelens_analysis::{Cpu, CpuReport, Engine, Filter, Options};
use tracelens_trace::TraceSet;

/// `shared/` beside the repository.
pub fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared")
}

/// The fixture trace set `rel` (under `shared/traces` or `$TRACELENS_TRACES`), or `None` with a
/// message when it is missing (a failure under CI).
pub fn fixture(rel: &str) -> Option<TraceSet> {
    let root = std::env::var_os("TRACELENS_TRACES").map(PathBuf::from).unwrap_or_else(|| shared().join("traces"));
    let p = root.join(rel);
    if !p.exists() {
        assert!(std::env::var_os("CI").is_none(), "CI must have the fixtures: {} is missing", p.display());
        eprintln!("skipped {rel}: {} not found", p.display());
        return None;
    }
    Some(TraceSet::open(&[p]).expect("open fixture"))
}

/// The text of reference file `rel` under `shared/reference/lttng-analyses`, or `None` with a
/// message when it is missing (a failure under CI).
pub fn reference(rel: &str) -> Option<String> {
    let p = shared().join("reference/lttng-analyses").join(rel);
    match std::fs::read_to_string(&p) {
        Ok(t) => Some(t),
        Err(_) => {
            assert!(std::env::var_os("CI").is_none(), "CI must have the reference files: {} is missing", p.display());
            eprintln!("skipped: {} not found", p.display());
            None
        }
    }
}

/// Runs `cpu` with `threads` workers and chunks of `chunk_size` bytes.
pub fn run_cpu(set: &TraceSet, filter: Filter, threads: usize, chunk_size: u64) -> CpuReport {
    Engine::new(set, &Options { threads, chunk_size }).run(&Cpu::new(set, filter)).expect("cpu")
}

/// A temporary directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("tracelens-kanalysis-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A synthetic kernel trace.
pub fn synth(tag: &str, opts: &tracelens_synth::Options) -> (TempDir, TraceSet) {
    let dir = TempDir::new(tag);
    tracelens_synth::generate(&dir.0, opts).expect("synth trace");
    let set = TraceSet::open(&[&dir.0]).expect("open synth");
    (dir, set)
}

/// The real fixtures of the serial == parallel property (kernel traces).
pub const KERNEL_FIXTURES: [&str; 5] = [
    "tracecompass/many-threads",
    "tracecompass/bug446190",
    "babeltrace-conformance/succeed/lttng-tracefile-rotation/kernel",
    "babeltrace-conformance/succeed/multi-domains/kernel",
    "tracecompass/uneven-streams",
];

/// Worker counts and chunk sizes of the property: every pair must give the serial output
/// (`-j 1`, one chunk per stream).
pub const THREADS: [usize; 3] = [1, 2, 8];
pub const CHUNK_SIZES: [u64; 4] = [1, 4096, 1 << 20, u64::MAX];

/// Synthetic traces with small packets, many CPUs and threads: wake-ups onto other CPUs
/// (migrations), system calls and waits spanning chunks.
pub fn synth_options() -> Vec<tracelens_synth::Options> {
    vec![
        tracelens_synth::Options { cpus: 4, threads: 16, events: 60_000, seed: 3, packet_size: 4096 },
        tracelens_synth::Options { cpus: 1, threads: 3, events: 20_000, seed: 9, packet_size: 4096 },
        tracelens_synth::Options { cpus: 8, threads: 64, events: 80_000, seed: 11, packet_size: 4096 },
        tracelens_synth::Options { cpus: 16, threads: 12, events: 50_000, seed: 21, packet_size: 4096 },
    ]
}

/// Runs `run(threads, chunk_size)` for every pair and checks each result equals the serial
/// one.
pub fn assert_cut_independent<T: PartialEq + std::fmt::Debug>(what: &str, run: impl Fn(usize, u64) -> T) -> T {
    let serial = run(1, u64::MAX);
    for &j in &THREADS {
        for &cs in &CHUNK_SIZES {
            if (j, cs) == (1, u64::MAX) {
                continue;
            }
            let got = run(j, cs);
            if got != serial {
                panic!("{what}: -j {j} --chunk-size {cs} differs from the serial run:\nserial:   {serial:?}\nparallel: {got:?}");
            }
        }
    }
    serial
}

/// Random synthetic traces for the property tests: (cpus, threads, events, seed, packet
/// size), and a random chunk size.
pub fn synth_strategy() -> impl proptest::strategy::Strategy<Value = (tracelens_synth::Options, u64, usize)> {
    use proptest::prelude::*;
    (1u32..12, 1u32..40, 2_000u64..20_000, any::<u64>(), prop::sample::select(vec![4096u64, 8192, 16384]), 1u64..200_000, 2usize..9).prop_map(
        |(cpus, threads, events, seed, packet_size, chunk, j)| (tracelens_synth::Options { cpus, threads, events, seed, packet_size }, chunk, j),
    )
}
