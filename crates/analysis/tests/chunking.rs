//! The engine's invariant: an analysis gives the same output for any number of threads and any
//! chunk size, down to one packet per chunk, as reading each stream whole on one thread.
//!
//! Checked with `Stats` (whose report must be identical) and with a fingerprint analysis that
//! hashes every item of every stream in order — event times, names and every decoded field
//! value, discarded-items counts and time ranges — so that a chunk cursor that starts in the
//! wrong state, a lost or repeated packet, or a merge out of order shows up. The serial report
//! is also checked against a plain time-ordered read of the set (`Merger`, what `tracelens
//! print` uses).
//!
//! Fixtures come from `../shared/traces` beside the repository (or `$TRACELENS_TRACES`); the
//! tests skip them with a message when they are absent, except under CI.

mod common;

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::Arc;

use common::{fixture_path, synth_dir};
use proptest::prelude::*;
use tracelens_analysis::{chunks, Analysis, Background, Chunk, Context, DiscardedItems, Engine, Options, Stats, StatsReport, DEFAULT_CHUNK_SIZE};
use tracelens_ctf::{EventView, Fields, Item, Value};
use tracelens_trace::TraceSet;

const CHUNK_SIZES: [u64; 4] = [1, 4096, 100_000, DEFAULT_CHUNK_SIZE];
const THREADS: [usize; 2] = [2, 8];

/// The fixtures the issue names.
const FIXTURES: [&str; 7] = [
    "tracecompass/many-threads",
    "tracecompass/bug446190",
    "babeltrace-conformance/succeed/lttng-tracefile-rotation/kernel",
    "babeltrace-conformance/succeed/multi-domains",
    "tracecompass/uneven-streams",
    "tracecompass/hello-lost",
    "babeltrace-conformance/extra/packet-seq-num",
];

// ---------------------------------------------------------------------------------------------
// The fingerprint analysis.
// ---------------------------------------------------------------------------------------------

/// Hashes every item of each stream in stream order. A stream's fingerprint is a polynomial
/// hash `(h, len)`, which concatenates associatively: `(a, m) ++ (b, n) = (a * B^n + b, m + n)`.
struct Fingerprint;

const B: u64 = 0x9E37_79B9_7F4A_7C15 | 1;

fn pow_b(mut n: u64) -> u64 {
    let (mut r, mut b) = (1u64, B);
    while n > 0 {
        if n & 1 == 1 {
            r = r.wrapping_mul(b);
        }
        b = b.wrapping_mul(b);
        n >>= 1;
    }
    r
}

#[derive(Default, Debug)]
struct Fp {
    /// (trace, stream) -> (hash, items).
    streams: BTreeMap<(usize, usize), (u64, u64)>,
    /// First and last chunk index covered.
    first: usize,
    last: usize,
    chunks: usize,
    /// A merge that did not join consecutive runs of chunks.
    misordered: bool,
}

#[derive(Debug, PartialEq, Eq)]
struct FpOut {
    streams: BTreeMap<(usize, usize), (u64, u64)>,
}

fn hash_fields(h: &mut std::hash::DefaultHasher, f: Fields<'_, '_>) {
    for field in f.list {
        field.node.name().hash(h);
        match field.value {
            Value::Unsigned(u) => (0u8, u).hash(h),
            Value::Signed(s) => (1u8, s).hash(h),
            Value::Float(x) => (2u8, x.to_bits()).hash(h),
            Value::Str(b) => (3u8, b).hash(h),
            Value::BigInt(b) => (4u8, b).hash(h),
            Value::Compound { end, count } => (5u8, end, count).hash(h),
        }
    }
}

fn push(st: &mut Fp, key: (usize, usize), item: u64) {
    let e = st.streams.entry(key).or_insert((0, 0));
    e.0 = e.0.wrapping_mul(B).wrapping_add(item);
    e.1 += 1;
}

impl Analysis for Fingerprint {
    type State = Fp;
    type Output = (FpOut, usize, bool);

    fn new_state(&self, chunk: &Chunk) -> Fp {
        Fp { first: chunk.index, last: chunk.index, chunks: 1, ..Fp::default() }
    }

    fn on_event(&self, st: &mut Fp, ev: &EventView<'_, '_>, cx: &Context<'_, '_>) {
        let mut h = std::hash::DefaultHasher::new();
        (0u8, ev.name(), ev.cycles, ev.ns).hash(&mut h);
        for f in [ev.packet_header, ev.packet_context, ev.header, ev.common_context, ev.context, ev.payload] {
            hash_fields(&mut h, f);
        }
        push(st, (cx.chunk.trace, cx.chunk.stream), h.finish());
    }

    fn on_discarded(&self, st: &mut Fp, d: &DiscardedItems, cx: &Context<'_, '_>) {
        let mut h = std::hash::DefaultHasher::new();
        (1u8, format!("{:?}", d.kind), d.count, d.exact, d.begin_ns, d.end_ns).hash(&mut h);
        push(st, (cx.chunk.trace, cx.chunk.stream), h.finish());
    }

    fn merge(&self, mut a: Fp, b: Fp) -> Fp {
        let misordered = a.misordered || b.misordered || a.last + 1 != b.first;
        for (k, (hb, nb)) in b.streams {
            let e = a.streams.entry(k).or_insert((0, 0));
            e.0 = e.0.wrapping_mul(pow_b(nb)).wrapping_add(hb);
            e.1 += nb;
        }
        Fp { streams: a.streams, first: a.first, last: b.last, chunks: a.chunks + b.chunks, misordered }
    }

    fn finish(&self, st: Fp) -> (FpOut, usize, bool) {
        (FpOut { streams: st.streams }, st.chunks, st.misordered)
    }
}

// ---------------------------------------------------------------------------------------------
// Checks.
// ---------------------------------------------------------------------------------------------

fn stats(set: &TraceSet, threads: usize, chunk_size: u64) -> StatsReport {
    Engine::new(set, &Options { threads, chunk_size }).run(&Stats::new(set)).unwrap_or_else(|e| panic!("stats -j {threads} --chunk-size {chunk_size}: {e}"))
}

fn fingerprint(set: &TraceSet, threads: usize, chunk_size: u64) -> FpOut {
    let engine = Engine::new(set, &Options { threads, chunk_size });
    let (out, n, misordered) = engine.run(&Fingerprint).unwrap_or_else(|e| panic!("fingerprint -j {threads} --chunk-size {chunk_size}: {e}"));
    assert_eq!(n, engine.chunks().len(), "every chunk merged once");
    assert!(!misordered, "states merged out of time order (-j {threads} --chunk-size {chunk_size})");
    out
}

/// What a plain time-ordered read of the set says (no engine involved).
fn merger_report(set: &TraceSet) -> StatsReport {
    let mut r = StatsReport { traces: set.traces.len() as u64, ..StatsReport::default() };
    for t in &set.traces {
        for s in &t.streams {
            r.streams += 1;
            r.packets += s.packets.len() as u64;
            r.bytes += s.packets.iter().map(|p| p.size).sum::<u64>();
            r.by_stream.insert(s.path().display().to_string(), 0);
        }
    }
    let mut m = set.merger();
    while let Some((_, item)) = m.next().expect("serial read") {
        match item {
            Item::Event => {
                let ev = m.event().expect("event");
                r.events += 1;
                *r.by_name.entry(ev.name().to_string()).or_default() += 1;
                *r.by_stream.get_mut(&m.cursor().unwrap().stream().path().display().to_string()).unwrap() += 1;
                if let Some(ns) = ev.ns {
                    r.begin_ns = Some(r.begin_ns.map_or(ns, |b| b.min(ns)));
                    r.end_ns = Some(r.end_ns.map_or(ns, |e| e.max(ns)));
                }
            }
            Item::DiscardedEvents { count, .. } => r.discarded_events += count,
            Item::DiscardedPackets { count, .. } => r.lost_packets += count,
        }
    }
    r
}

/// Serial (one thread, one chunk per stream) against every thread count and chunk size.
fn check_invariance(set: &TraceSet, label: &str, threads: &[usize], sizes: &[u64]) -> StatsReport {
    let serial = stats(set, 1, u64::MAX);
    assert_eq!(serial, merger_report(set), "{label}: engine (serial) vs a plain time-ordered read");
    let serial_fp = fingerprint(set, 1, u64::MAX);
    for &j in threads {
        for &cs in sizes {
            let r = stats(set, j, cs);
            assert_eq!(r, serial, "{label}: stats -j {j} --chunk-size {cs} differs from the serial run");
            assert!(fingerprint(set, j, cs) == serial_fp, "{label}: items read with -j {j} --chunk-size {cs} differ from reading the streams whole");
        }
    }
    // One packet per chunk on one thread too (no pool involved).
    assert_eq!(stats(set, 1, 1), serial, "{label}: -j 1 --chunk-size 1");
    serial
}

#[test]
fn fixtures_give_the_same_stats_for_any_threads_and_chunk_size() {
    for rel in FIXTURES {
        let Some(root) = fixture_path(rel) else { continue };
        // A folder of several traces is checked as a whole (one set) and, for the
        // packet-seq-num cases, each trace alone.
        let sets: Vec<PathBuf> = if rel.ends_with("packet-seq-num") {
            let mut v: Vec<PathBuf> = std::fs::read_dir(&root).unwrap().flatten().map(|e| e.path()).filter(|p| p.join("metadata").is_file()).collect();
            v.sort();
            assert!(v.len() >= 6, "packet-seq-num cases: {v:?}");
            v
        } else {
            vec![root]
        };
        for path in sets {
            let set = TraceSet::open(&[&path]).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let r = check_invariance(&set, &path.display().to_string(), &THREADS, &CHUNK_SIZES);
            eprintln!("{}: {} events, {} discarded, {} lost packets, {} packets", path.display(), r.events, r.discarded_events, r.lost_packets, r.packets);
        }
    }
}

/// Counts documented in the fixtures' README (babeltrace2 / Trace Compass).
#[test]
fn fixture_counts_match_the_references() {
    let cases: [(&str, u64, u64, u64); 6] = [
        ("tracecompass/many-threads", 240_644, 0, 0),
        ("tracecompass/bug446190", 31_556, 0, 0),
        ("tracecompass/hello-lost", 32_300, 967_700, 0),
        ("babeltrace-conformance/succeed/multi-domains", 4_272, 728, 0),
        ("babeltrace-conformance/extra/packet-seq-num/2-streams-lost-in-2", 8, 0, 6),
        ("babeltrace-conformance/extra/packet-seq-num/7-lost-between-2-with-index", 2, 0, 7),
    ];
    for (rel, events, discarded, lost) in cases {
        let Some(path) = fixture_path(rel) else { continue };
        let set = TraceSet::open(&[&path]).unwrap();
        let r = stats(&set, 2, 1);
        assert_eq!((r.events, r.discarded_events, r.lost_packets), (events, discarded, lost), "{rel}");
        assert_eq!(r.by_name.values().sum::<u64>(), r.events);
        assert_eq!(r.by_stream.values().sum::<u64>(), r.events);
    }
    if let Some(path) = fixture_path("tracecompass/many-threads") {
        let set = TraceSet::open(&[&path]).unwrap();
        let r = stats(&set, 2, 4096);
        assert_eq!(r.by_name.len(), 181);
        assert_eq!(r.by_name["sched_switch"], 28_325);
        assert_eq!(r.by_name["sched_wakeup"], 6_743);
        assert_eq!(r.streams, 8);
    }
}

/// Every fixture tracelens reads whole: one packet per chunk on 2 threads gives the same
/// report and the same items (this covers the odd cases: no packet context, no timestamps,
/// discarded events without packet times, several stream classes...).
#[test]
fn every_readable_fixture_reads_the_same_in_one_packet_chunks() {
    let Some(root) = fixture_path("") else { return };
    let mut dirs = Vec::new();
    for top in ["babeltrace-conformance/succeed", "babeltrace-conformance/extra", "tracecompass", "generated", "ctf-testsuite/regression/stream/pass"] {
        let p = root.join(top);
        if p.exists() {
            dirs.extend(tracelens_trace::discover(&p).unwrap_or_default());
        }
    }
    let mut checked = 0;
    for d in dirs {
        let Ok(set) = TraceSet::open(&[&d]) else { continue };
        // Only traces that read without error serially: the others are covered by the error tests.
        if Engine::new(&set, &Options { threads: 1, chunk_size: u64::MAX }).run(&Stats::new(&set)).is_err() {
            continue;
        }
        check_invariance(&set, &d.display().to_string(), &[2], &[1, 4096]);
        checked += 1;
    }
    eprintln!("{checked} fixture traces checked");
    assert!(checked >= 30, "only {checked} fixtures read");
}

#[test]
fn synth_traces_give_the_same_stats_for_any_threads_and_chunk_size() {
    for (i, opts) in [
        tracelens_synth::Options { cpus: 4, threads: 16, events: 60_000, seed: 3, packet_size: 4096 },
        tracelens_synth::Options { cpus: 1, threads: 3, events: 20_000, seed: 9, packet_size: 4096 },
        tracelens_synth::Options { cpus: 7, threads: 40, events: 40_000, seed: 11, packet_size: 8192 },
    ]
    .into_iter()
    .enumerate()
    {
        let dir = synth_dir(&format!("inv{i}"), &opts);
        let set = TraceSet::open(&[&dir.0]).unwrap();
        let r = check_invariance(&set, &format!("synth {opts:?}"), &THREADS, &CHUNK_SIZES);
        assert!(r.events >= opts.events, "{r:?}");
        assert!(r.packets > 4 * opts.cpus as u64, "a test with many packets: {}", r.packets);
        assert_eq!(r.streams, opts.cpus as u64);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Random synth traces, thread counts and chunk sizes.
    #[test]
    fn random_synth_traces_and_cuts(
        seed in 1u64..1_000_000,
        cpus in 1u32..6,
        threads in 1u32..24,
        events in 1_000u64..15_000,
        packet_size in prop::sample::select(vec![4096u64, 8192, 12_288]),
        j in 1usize..9,
        chunk_size in prop_oneof![1u64..20_000, 20_000u64..2_000_000],
    ) {
        let opts = tracelens_synth::Options { cpus, threads, events, seed, packet_size };
        let dir = synth_dir("prop", &opts);
        let set = TraceSet::open(&[&dir.0]).unwrap();
        let serial = stats(&set, 1, u64::MAX);
        prop_assert_eq!(&stats(&set, j, chunk_size), &serial);
        prop_assert!(fingerprint(&set, j, chunk_size) == fingerprint(&set, 1, u64::MAX));
    }
}

// ---------------------------------------------------------------------------------------------
// Chunk listing.
// ---------------------------------------------------------------------------------------------

/// Chunks cover every packet once, keep each stream's order, follow the size target and are
/// sorted by start time.
#[test]
fn chunks_cover_every_packet_in_order() {
    let dir = synth_dir("chunks", &tracelens_synth::Options { cpus: 3, threads: 8, events: 30_000, seed: 5, packet_size: 4096 });
    let set = TraceSet::open(&[&dir.0]).unwrap();
    for target in [1, 4096, 10_000, 100_000, u64::MAX] {
        let cs = chunks(&set, target);
        for (i, c) in cs.iter().enumerate() {
            assert_eq!(c.index, i);
            assert!(!c.packets.is_empty());
            let stream = &set.traces[c.trace].streams[c.stream];
            let sizes: Vec<u64> = stream.packets[c.packets.clone()].iter().map(|p| p.size).collect();
            assert_eq!(c.bytes, sizes.iter().sum::<u64>());
            // Closed at the first boundary past the target, or at the stream's end.
            let before_last: u64 = sizes[..sizes.len() - 1].iter().sum();
            assert!(before_last < target, "chunk {i} is too long");
            assert!(c.bytes >= target || c.packets.end == stream.packets.len(), "chunk {i} closed early");
        }
        assert!(cs.windows(2).all(|w| w[0].begin_ns <= w[1].begin_ns), "sorted by start time");
        for (ti, t) in set.traces.iter().enumerate() {
            for (si, s) in t.streams.iter().enumerate() {
                let mine: Vec<_> = cs.iter().filter(|c| (c.trace, c.stream) == (ti, si)).map(|c| c.packets.clone()).collect();
                let mut next = 0;
                for r in mine {
                    assert_eq!(r.start, next, "packets of stream {si} in order, none skipped");
                    next = r.end;
                }
                assert_eq!(next, s.packets.len());
            }
        }
        if target == 1 {
            assert_eq!(cs.len() as u64, set.traces.iter().flat_map(|t| &t.streams).map(|s| s.packets.len() as u64).sum::<u64>());
        }
        if target == u64::MAX {
            assert_eq!(cs.len(), set.traces[0].streams.len());
        }
    }
}

/// A stream with 8-bit event timestamps (rebuilt from the previous event's time when they
/// wrap) and no `timestamp_begin` in its packets: cutting it between packets would make the
/// second packet's first event lose the high bits, so the engine does not cut it.
#[test]
fn a_timed_stream_without_packet_begin_times_is_not_cut() {
    let metadata = br#"/* CTF 1.8 */
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
trace { major = 1; minor = 8; byte_order = le; packet.header := struct { uint32_t magic; }; };
clock { name = c; freq = 1000000000; };
typealias integer { size = 8; align = 8; signed = false; map = clock.c.value; } := ts8_t;
stream { packet.context := struct { uint32_t packet_size; uint32_t content_size; }; event.header := struct { uint8_t id; ts8_t timestamp; }; };
event { name = e; id = 0; fields := struct { uint8_t x; }; };
"#;
    // Two 24-byte packets: a 12-byte header and context, then 3-byte events (id, time, x).
    let packet = |times: &[u8]| {
        let content = 12 + 3 * times.len() as u32;
        let mut p = Vec::new();
        p.extend_from_slice(&0xC1FC_1FC1u32.to_le_bytes());
        p.extend_from_slice(&(24u32 * 8).to_le_bytes());
        p.extend_from_slice(&(content * 8).to_le_bytes());
        for (i, t) in times.iter().enumerate() {
            p.extend_from_slice(&[0, *t, i as u8]);
        }
        p.resize(24, 0);
        p
    };
    let mut bytes = packet(&[10, 200, 250]);
    bytes.extend(packet(&[5, 100]));
    let trace = tracelens_ctf::Trace::from_memory(metadata, vec![(PathBuf::from("stream"), bytes)]).expect("hand-made trace");
    assert_eq!(trace.streams[0].packets.len(), 2);
    let set = TraceSet { traces: vec![trace] };
    assert_eq!(chunks(&set, 1).len(), 1, "no cut without a packet beginning time");
    let serial = check_invariance(&set, "8-bit timestamps", &THREADS, &CHUNK_SIZES);
    assert_eq!((serial.events, serial.begin_ns, serial.end_ns), (5, Some(10), Some(256 + 100)), "timestamps rebuilt across the wrap");
}

#[test]
fn an_empty_set_gives_an_empty_report() {
    let set = TraceSet { traces: Vec::new() };
    let r = Engine::new(&set, &Options::default()).run(&Stats::new(&set)).unwrap();
    assert_eq!(r, StatsReport::default());
    assert_eq!(r.span_ns(), None);
    assert!(serde_json::to_string(&r).unwrap().contains("\"begin_ns\":null"));
}

#[test]
fn progress_reaches_every_byte() {
    let dir = synth_dir("progress", &tracelens_synth::Options { cpus: 2, threads: 4, events: 10_000, seed: 2, packet_size: 4096 });
    let set = TraceSet::open(&[&dir.0]).unwrap();
    let seen = std::sync::Mutex::new(Vec::new());
    let engine = Engine::new(&set, &Options { threads: 2, chunk_size: 8192 }).on_progress(|p| seen.lock().unwrap().push(p));
    let total = engine.bytes();
    let n = engine.chunks().len();
    engine.run(&Stats::new(&set)).unwrap();
    drop(engine);
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), n);
    assert!(seen.iter().any(|p| p.bytes_done == total && p.chunks_done == n));
    assert!(seen.iter().all(|p| p.bytes == total && p.chunks == n && p.bytes_done <= total));
}

// ---------------------------------------------------------------------------------------------
// Errors.
// ---------------------------------------------------------------------------------------------

/// Two corrupted packets in two streams: the run fails (no panic) with the error of the
/// earliest failing chunk in time order, the same for any number of threads.
#[test]
fn the_earliest_failing_chunk_wins_for_any_threads() {
    let dir = synth_dir("err", &tracelens_synth::Options { cpus: 3, threads: 8, events: 40_000, seed: 4, packet_size: 4096 });
    // Without the index, packets are found by walking, which records where events start.
    std::fs::remove_dir_all(dir.0.join("index")).unwrap();
    let corrupt = |file: &str, packet: usize| -> (String, i64) {
        let set = TraceSet::open(&[&dir.0]).unwrap();
        let t = &set.traces[0];
        let si = t.streams.iter().position(|s| s.path().ends_with(file)).unwrap();
        let s = &t.streams[si];
        assert!(s.packets.len() > packet + 2);
        let p = s.packets[packet].clone();
        let begin = t.cursor(si).cycles_to_ns(p.begin.unwrap()).unwrap();
        let path = s.path().to_path_buf();
        drop(set);
        let mut bytes = std::fs::read(&path).unwrap();
        // Event headers of all ones: an extended header naming event class 0xFFFFFFFF.
        for b in &mut bytes[(p.offset + p.events_bits / 8) as usize..(p.offset + p.content_bits / 8) as usize] {
            *b = 0xFF;
        }
        std::fs::write(&path, bytes).unwrap();
        (format!("{}: packet {packet},", path.display()), begin)
    };
    let late = corrupt("channel0_0", 9);
    let early = corrupt("channel0_2", 2);
    assert!(early.1 < late.1, "the corrupted packets' times: {early:?} {late:?}");
    let set = TraceSet::open(&[&dir.0]).unwrap();
    for cs in [1, 4096, 20_000, u64::MAX] {
        let err = |j: usize| match Engine::new(&set, &Options { threads: j, chunk_size: cs }).run(&Stats::new(&set)) {
            Ok(r) => panic!("a corrupted trace read without error: {r:?}"),
            Err(e) => e.to_string(),
        };
        let serial = err(1);
        assert!(serial.contains("unknown event class id"), "{serial}");
        assert!(!serial.contains('\n'));
        for j in [2, 3, 8] {
            assert_eq!(err(j), serial, "--chunk-size {cs}: -j {j} and -j 1 report different errors");
        }
        if cs == 1 {
            assert!(serial.starts_with(&early.0), "one packet per chunk: the earliest corrupted packet ({}) is reported: {serial}", early.0);
        }
    }
}

/// Background work whose first unit panics, and which stays busy for ever after: what a
/// replay task that panicked on one worker leaves to the others.
#[derive(Default)]
struct PanicsOnce {
    ran: std::sync::atomic::AtomicBool,
}

impl Background for PanicsOnce {
    fn assist(&self) -> bool {
        if !self.ran.swap(true, std::sync::atomic::Ordering::SeqCst) {
            panic!("the background work panics");
        }
        false
    }

    fn busy(&self) -> bool {
        true
    }
}

/// An analysis that hands out [`PanicsOnce`].
struct Panicky(Arc<PanicsOnce>);

impl Analysis for Panicky {
    type State = ();
    type Output = ();

    fn on_event(&self, _: &mut (), _: &EventView<'_, '_>, _: &Context<'_, '_>) {}

    fn merge(&self, _: (), _: ()) {}

    fn finish(&self, _: ()) {}

    fn background(&self, _: &()) -> Option<Arc<dyn Background>> {
        Some(self.0.clone())
    }
}

/// A panic on one worker reaches the caller, for any number of threads, instead of leaving
/// the other workers waiting for the work it left unfinished (the run would never end).
#[test]
fn a_panic_on_a_worker_ends_the_run() {
    let dir = synth_dir("panic", &tracelens_synth::Options { cpus: 3, threads: 8, events: 20_000, seed: 6, packet_size: 4096 });
    for j in [1, 2, 4] {
        let (tx, rx) = std::sync::mpsc::channel();
        let path = dir.0.clone();
        std::thread::spawn(move || {
            let set = TraceSet::open(&[&path]).unwrap();
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Engine::new(&set, &Options { threads: j, chunk_size: 4096 }).run(&Panicky(Arc::default()))));
            let _ = tx.send(r.is_err());
        });
        // A liveness bound, not a timing: the run takes milliseconds; without the fix it never ends.
        let panicked = rx.recv_timeout(std::time::Duration::from_secs(300)).unwrap_or_else(|_| panic!("-j {j}: the run did not end after a worker panicked"));
        assert!(panicked, "-j {j}: the panic did not reach the caller");
    }
}
