//! Helpers shared by the `syscalls`, `io` and `irq` tests: fixtures, synthetic traces, runs
//! with every thread count and chunk size, and the lttng-analyses reference files.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use tracelens_analysis::{Analysis, Engine, Options};
use tracelens_trace::TraceSet;

/// Thread counts and chunk sizes the serial == parallel checks use.
pub const THREADS: [usize; 3] = [1, 2, 8];
pub const CHUNK_SIZES: [u64; 4] = [1, 4096, 1 << 20, u64::MAX];

/// The real kernel traces the issue names.
pub const FIXTURES: [&str; 5] = [
    "tracecompass/many-threads",
    "tracecompass/bug446190",
    "babeltrace-conformance/succeed/lttng-tracefile-rotation/kernel",
    "babeltrace-conformance/succeed/multi-domains/kernel",
    "tracecompass/uneven-streams",
];

pub fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared")
}

pub fn traces_root() -> PathBuf {
    std::env::var_os("TRACELENS_TRACES").map(PathBuf::from).unwrap_or_else(|| shared().join("traces"))
}

/// A fixture path, or `None` (with a message) when the fixtures are absent (never under CI).
pub fn fixture(rel: &str) -> Option<PathBuf> {
    let p = traces_root().join(rel);
    if p.exists() {
        return Some(p);
    }
    assert!(std::env::var_os("CI").is_none(), "CI must have the fixtures: {} is missing", p.display());
    eprintln!("skipped {rel}: {} not found", p.display());
    None
}

/// A file of the lttng-analyses reference outputs for many-threads, or `None` when absent.
pub fn reference(file: &str) -> Option<String> {
    let p = shared().join("reference/lttng-analyses/many-threads").join(file);
    match std::fs::read_to_string(&p) {
        Ok(s) => Some(s),
        Err(_) => {
            assert!(std::env::var_os("CI").is_none(), "CI must have the reference outputs: {} is missing", p.display());
            eprintln!("skipped: {} not found", p.display());
            None
        }
    }
}

/// A temporary directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("tracelens-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A synthetic trace with small packets (so that chunks of one packet cut calls and handlers).
pub fn synth(tag: &str, cpus: u32, threads: u32, events: u64, seed: u64) -> TempDir {
    let dir = TempDir::new(tag);
    let opts = tracelens_synth::Options { cpus, threads, events, seed, packet_size: 4096 };
    tracelens_synth::generate(&dir.0, &opts).expect("synth trace");
    dir
}

pub fn open(p: &Path) -> TraceSet {
    TraceSet::open(&[p]).expect("open trace")
}

pub fn run<A: Analysis>(set: &TraceSet, a: &A, threads: usize, chunk_size: u64) -> A::Output {
    Engine::new(set, &Options { threads, chunk_size }).run(a).expect("analysis runs")
}

/// Checks that every thread count and chunk size gives the serial output (one thread, one
/// chunk per stream).
pub fn check_serial_parallel<A: Analysis>(set: &TraceSet, a: &A, what: &str)
where
    A::Output: PartialEq + std::fmt::Debug,
{
    let serial = run(set, a, 1, u64::MAX);
    for &j in &THREADS {
        for &c in &CHUNK_SIZES {
            let out = run(set, a, j, c);
            if out != serial {
                let (a, b) = (format!("{serial:#?}"), format!("{out:#?}"));
                let at = a.bytes().zip(b.bytes()).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
                let from = a[..at].rfind('\n').unwrap_or(0);
                let show = |s: &str| s.get(from..(at + 300).min(s.len())).unwrap_or("").to_string();
                panic!("{what}: -j {j} --chunk-size {c} differs from the serial output\nserial:   ...{}\nparallel: ...{}", show(&a), show(&b));
            }
        }
    }
}
