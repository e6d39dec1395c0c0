//! Helpers shared by the analysis crate's integration tests: fixture traces and lttng-analyses
//! reference files (skipped with a message when absent, a failure under CI), synthetic traces in
//! temporary directories, runs, and the serial == parallel check.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use tracelens_analysis::{Analysis, Cpu, CpuReport, Engine, Filter, Options};
use tracelens_trace::TraceSet;

/// `shared/` beside the repository.
pub fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared")
}

/// Where the fixture traces are: `shared/traces`, or `$TRACELENS_TRACES`.
pub fn traces_root() -> PathBuf {
    std::env::var_os("TRACELENS_TRACES").map(PathBuf::from).unwrap_or_else(|| shared().join("traces"))
}

/// The fixture folder `rel`, or `None` with a message when it is missing (a failure under CI).
pub fn fixture_path(rel: &str) -> Option<PathBuf> {
    let p = traces_root().join(rel);
    if p.exists() {
        return Some(p);
    }
    assert!(std::env::var_os("CI").is_none(), "CI must have the fixtures: {} is missing", p.display());
    eprintln!("skipped {rel}: {} not found", p.display());
    None
}

/// The fixture trace set `rel`, opened, or `None` as [`fixture_path`].
pub fn fixture(rel: &str) -> Option<TraceSet> {
    fixture_path(rel).map(|p| open(&p))
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

pub fn open(p: &Path) -> TraceSet {
    TraceSet::open(&[p]).expect("open trace")
}

/// A temporary directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("tracelens-analysis-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A synthetic kernel trace in a temporary directory.
pub fn synth_dir(tag: &str, opts: &tracelens_synth::Options) -> TempDir {
    let dir = TempDir::new(tag);
    tracelens_synth::generate(&dir.0, opts).expect("synth trace");
    dir
}

/// A synthetic kernel trace, opened.
pub fn synth(tag: &str, opts: &tracelens_synth::Options) -> (TempDir, TraceSet) {
    let dir = synth_dir(tag, opts);
    let set = open(&dir.0);
    (dir, set)
}

/// A synthetic trace with small packets (so that chunks of one packet cut calls and handlers).
pub fn synth_small(tag: &str, cpus: u32, threads: u32, events: u64, seed: u64) -> TempDir {
    synth_dir(tag, &tracelens_synth::Options { cpus, threads, events, seed, packet_size: 4096 })
}

/// Runs `a` with `threads` workers and chunks of `chunk_size` bytes.
pub fn run<A: Analysis>(set: &TraceSet, a: &A, threads: usize, chunk_size: u64) -> A::Output {
    Engine::new(set, &Options { threads, chunk_size }).run(a).expect("analysis runs")
}

/// Runs `cpu` with `threads` workers and chunks of `chunk_size` bytes.
pub fn run_cpu(set: &TraceSet, filter: Filter, threads: usize, chunk_size: u64) -> CpuReport {
    run(set, &Cpu::new(set, filter), threads, chunk_size)
}

/// The real kernel traces of the serial == parallel property.
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
/// one (showing where the debug forms first differ); returns the serial result.
pub fn assert_cut_independent<T: PartialEq + std::fmt::Debug>(what: &str, run: impl Fn(usize, u64) -> T) -> T {
    let serial = run(1, u64::MAX);
    for &j in &THREADS {
        for &cs in &CHUNK_SIZES {
            if (j, cs) == (1, u64::MAX) {
                continue;
            }
            let got = run(j, cs);
            if got != serial {
                let (a, b) = (format!("{serial:#?}"), format!("{got:#?}"));
                let at = a.bytes().zip(b.bytes()).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
                let from = a[..at].rfind('\n').unwrap_or(0);
                let show = |s: &str| s.get(from..(at + 300).min(s.len())).unwrap_or("").to_string();
                panic!("{what}: -j {j} --chunk-size {cs} differs from the serial run\nserial:   ...{}\nparallel: ...{}", show(&a), show(&b));
            }
        }
    }
    serial
}

/// [`assert_cut_independent`] for the analysis `a` on `set`.
pub fn check_serial_parallel<A: Analysis>(set: &TraceSet, a: &A, what: &str)
where
    A::Output: PartialEq + std::fmt::Debug,
{
    assert_cut_independent(what, |j, c| run(set, a, j, c));
}

/// Random synthetic traces for the property tests: (cpus, threads, events, seed, packet
/// size), and a random chunk size.
pub fn synth_strategy() -> impl proptest::strategy::Strategy<Value = (tracelens_synth::Options, u64, usize)> {
    use proptest::prelude::*;
    (1u32..12, 1u32..40, 2_000u64..20_000, any::<u64>(), prop::sample::select(vec![4096u64, 8192, 16384]), 1u64..200_000, 2usize..9).prop_map(
        |(cpus, threads, events, seed, packet_size, chunk, j)| (tracelens_synth::Options { cpus, threads, events, seed, packet_size }, chunk, j),
    )
}

/// An event of a hand-written kernel trace ([`write_kernel_trace`]).
#[derive(Clone, Copy, Debug)]
pub enum K<'a> {
    /// An event of class `def` at `ns` on `cpu`, in the context of thread `tid` (process =
    /// thread, named `comm`), with these field values in the class's order (integers, or text
    /// for text fields).
    Ev { cpu: u32, ns: u64, tid: i32, def: &'a tracelens_ctf::lttng::EventDef, values: &'a [V<'a>] },
    /// Ends `cpu`'s packet here.
    Packet { cpu: u32 },
}

/// A field value of [`K::Ev`].
#[derive(Clone, Copy, Debug)]
pub enum V<'a> {
    I(i64),
    S(&'a str),
}

/// Writes a kernel trace in LTTng's layout, with the `{tid, pid, procname}` context in every
/// event when `context` (as `tracelens record` writes; else the events' `tid` is not written),
/// one stream per CPU (`cpus` of them), the events in the order given (each CPU's in time
/// order).
pub fn write_kernel_trace(dir: &Path, cpus: u32, context: bool, events: &[K<'_>]) {
    use tracelens_ctf::lttng::{common_context_value, kernel_env, ClassDef, KernelTrace, CPU_ID};
    use tracelens_ctf::write::{EventValues, OwnedValue, StreamOptions, TraceWriter};
    let mut defs: Vec<&tracelens_ctf::lttng::EventDef> = Vec::new();
    for e in events {
        if let K::Ev { def, .. } = e {
            if !defs.iter().any(|d| d.name == def.name) {
                defs.push(def);
            }
        }
    }
    let classes = defs.iter().enumerate().map(|(i, d)| ClassDef::from(*d).class(i as u64)).collect();
    let class = KernelTrace { uuid: [7; 16], env: kernel_env("test", None, "tracelens tests"), clock_offset_ns: 0, common_context: context, events: classes }.class();
    let mut trace = TraceWriter::create(dir, &class).expect("trace");
    let mut streams: Vec<_> = (0..cpus)
        .map(|cpu| {
            let opts = StreamOptions { packet_size: 4096, instance_id: Some(cpu.into()), ..StreamOptions::default() };
            let mut s = trace.stream_with(0, &format!("channel0_{cpu}"), &opts).expect("stream");
            s.set_packet_context(CPU_ID, OwnedValue::U(cpu.into())).expect("cpu_id");
            s
        })
        .collect();
    for e in events {
        match *e {
            K::Ev { cpu, ns, tid, def, values } => {
                let id = defs.iter().position(|d| d.name == def.name).unwrap();
                let mut payload = ClassDef::from(def).blank_payload();
                if let OwnedValue::Struct(slots) = &mut payload {
                    assert_eq!(slots.len(), values.len(), "{}", def.name);
                    for ((slot, (_, ty)), v) in slots.iter_mut().zip(def.fields).zip(values) {
                        match v {
                            V::I(x) => *slot = ty.int_value(*x),
                            V::S(s) => ty.set_text(slot, s.as_bytes()),
                        }
                    }
                }
                let ctx = common_context_value(tid, tid, format!("t{tid}").as_bytes());
                let values = EventValues::payload(&payload);
                let values = if context { values.with_common_context(&ctx) } else { values };
                streams[cpu as usize].event(id as u64, ns, values).expect("event");
            }
            K::Packet { cpu } => streams[cpu as usize].flush_packet().expect("packet"),
        }
    }
    for s in streams {
        s.finish().expect("finish");
    }
}
