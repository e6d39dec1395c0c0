//! Robustness: fixture traces mutated (truncated files, flipped bits, random packet and content
//! sizes, garbage metadata) must each end in a clean error or clean output — never a panic.
//! Termination and bounded memory follow from the decoder's design (every event consumes bits,
//! every array is bounded by the bits left in its packet); running thousands of mutants here
//! exercises those guards.
//!
//! Traces with an LTTng index also get mutants that lose data a reader can know about (issue
//! 16): a stream file replaced by something that is not a regular file (empty file, directory,
//! FIFO, link loop, broken link, link to `/dev/zero`), a stream truncated exactly on a packet
//! boundary, index entries that contradict their packets. For those, *silent loss* — fewer
//! events than the intact trace and no warning — is a failure; index entries that contradict
//! their packets lose nothing (the packet headers are trusted, as babeltrace2 does), and
//! where babeltrace2 is installed it reads no more events than tracelens on the same mutant.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::Command;

use tracelens_ctf::{Item, Trace};

mod common;
use common::fixtures;

/// xorshift64*: deterministic, dependency-free randomness for reproducible mutants.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

/// What reading a trace gave: its events and warnings.
struct Read {
    events: u64,
    warnings: Vec<String>,
}

/// Reads every event; returns what was read or the error text.
fn read_all(dir: &Path) -> Result<Read, String> {
    let trace = Trace::open(dir).map_err(|e| e.to_string())?;
    let mut events = 0u64;
    for i in 0..trace.streams.len() {
        let mut c = trace.cursor(i);
        loop {
            match c.advance() {
                Ok(Some(Item::Event)) => {
                    // Touch the decoded event like a printer would.
                    let ev = c.event().expect("an event after Item::Event");
                    std::hint::black_box(ev.payload.list.len());
                    events += 1;
                }
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => return Err(e.to_string()),
            }
        }
    }
    Ok(Read { events, warnings: trace.warnings().iter().map(|w| w.to_string()).collect() })
}

struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn copy_trace(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap().flatten() {
        if e.path().is_file() {
            std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
        } else if e.file_name() == "index" {
            copy_trace(&e.path(), &dst.join("index"));
        }
    }
}

fn stream_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != "metadata"))
        .collect();
    v.sort();
    v
}

/// The index file of stream file `p`, when there is one.
fn index_of(p: &Path) -> Option<PathBuf> {
    let idx = p.parent()?.join("index").join(format!("{}.idx", p.file_name()?.to_str()?));
    idx.is_file().then_some(idx)
}

/// A mutant and what a reader must do with it.
struct Mutant {
    what: String,
    /// Losing events without a warning is a failure (the loss is knowable: an index lists the
    /// packets, or a file was not read). An empty stream file or one cut on a packet boundary
    /// without an index is a valid stream with fewer packets: no reader can know.
    loss_checked: bool,
    /// An index entry contradicts its packet: nothing may be lost (and babeltrace2 is asked).
    index_entry: bool,
}

/// Replaces stream file `p` by something that is not a stream file; says whether it is an
/// empty file (a legitimate stream without packets, unless an index lists some).
fn replace_stream(p: &Path, rng: &mut Rng) -> (String, bool) {
    std::fs::remove_file(p).unwrap();
    let kind = rng.below(6);
    match kind {
        0 => std::fs::write(p, b"").unwrap(),
        1 => std::fs::create_dir(p).unwrap(),
        2 => {
            let c = std::ffi::CString::new(p.display().to_string()).unwrap();
            // SAFETY: c is a valid path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        }
        3 => std::os::unix::fs::symlink(p.file_name().unwrap(), p).unwrap(),
        4 => std::os::unix::fs::symlink("/nonexistent/tracelens-stream", p).unwrap(),
        _ => std::os::unix::fs::symlink("/dev/zero", p).unwrap(),
    }
    let name = ["an empty file", "a directory", "a FIFO", "a link loop", "a broken link", "a link to /dev/zero"][kind as usize];
    (format!("{} replaced by {name}", p.display()), kind == 0)
}

/// Truncates stream file `p` on the boundary before one of its packets (0: all of them).
fn cut_on_packet_boundary(p: &Path, rng: &mut Rng) -> String {
    let trace = Trace::open(p.parent().unwrap()).unwrap();
    let offsets: Vec<u64> = trace
        .streams
        .iter()
        .flat_map(|s| s.packets.iter().filter(move |e| s.files[e.file as usize].path == p).map(|e| e.offset))
        .collect();
    drop(trace);
    let at = offsets.get(rng.below(offsets.len() as u64) as usize).copied().unwrap_or(0);
    let b = std::fs::read(p).unwrap();
    std::fs::write(p, &b[..at as usize]).unwrap();
    format!("{} cut at byte {at}, a packet boundary", p.display())
}

/// Changes one field of one entry of LTTng index `idx` (big-endian words after a 16-byte
/// header): the content size (zero, or smaller), the times, the discarded-event count, the
/// sequence number, the packet size or the offset.
fn contradict_index(idx: &Path, rng: &mut Rng) -> Option<String> {
    let mut b = std::fs::read(idx).unwrap();
    let entry_len = u32::from_be_bytes(b.get(12..16)?.try_into().unwrap()) as usize;
    let entries = (b.len() - 16) / entry_len;
    if entries == 0 {
        return None;
    }
    let e = rng.below(entries as u64) as usize;
    let at = 16 + e * entry_len;
    let word = |b: &[u8], k: usize| u64::from_be_bytes(b[at + 8 * k..at + 8 * k + 8].try_into().unwrap());
    // Fields: offset, packet size, content size, begin, end, discarded, stream id, instance
    // id, sequence number.
    let fields = if entry_len >= 72 { 9 } else { 6 };
    let k = [2, 2, 3, 4, 5, 8, 1, 0][rng.below(8) as usize].min(fields - 1);
    let old = word(&b, k);
    let new = match (k, rng.below(3)) {
        (2, 0) => 0,
        (2, _) => rng.below(old.max(1)),
        (1, _) => old.wrapping_add(8 * (1 + rng.below(64))),
        (0, _) => old ^ (1 << rng.below(12)),
        (_, 0) => 0,
        (_, 1) => old.wrapping_add(1 + rng.below(1000)),
        _ => rng.next(),
    };
    if new == old {
        return None;
    }
    b[at + 8 * k..at + 8 * k + 8].copy_from_slice(&new.to_be_bytes());
    std::fs::write(idx, &b).unwrap();
    let name = ["offset", "packet size", "content size", "begin time", "end time", "discarded events", "stream id", "instance id", "sequence number"][k];
    Some(format!("{} entry {e}: {name} {old} -> {new}", idx.display()))
}

/// The mutants that lose knowable data (see the module documentation).
fn mutate_knowably(dir: &Path, rng: &mut Rng) -> Mutant {
    let streams = stream_files(dir);
    let Some(p) = streams.get(rng.below(streams.len() as u64) as usize).cloned() else {
        return Mutant { what: "none".into(), loss_checked: false, index_entry: false };
    };
    let indexed = index_of(&p).is_some();
    match rng.below(3) {
        0 => {
            let (what, empty) = replace_stream(&p, rng);
            Mutant { what, loss_checked: indexed || !empty, index_entry: false }
        }
        1 => Mutant { what: cut_on_packet_boundary(&p, rng), loss_checked: indexed, index_entry: false },
        _ => match index_of(&p).and_then(|idx| contradict_index(&idx, rng)) {
            Some(what) => Mutant { what, loss_checked: true, index_entry: true },
            None => Mutant { what: "none".into(), loss_checked: false, index_entry: false },
        },
    }
}

/// The events babeltrace2 prints for the trace in `dir` (None when it fails or is not there).
fn babeltrace2_events(dir: &Path) -> Option<u64> {
    let o = Command::new("babeltrace2").arg(dir).stderr(std::process::Stdio::null()).output().ok()?;
    o.status.success().then(|| o.stdout.iter().filter(|&&b| b == b'\n').count() as u64)
}

fn mutate(dir: &Path, rng: &mut Rng) -> String {
    let streams = stream_files(dir);
    let kind = rng.below(6);
    let pick_stream = |rng: &mut Rng| streams.get(rng.below(streams.len() as u64) as usize).cloned();
    match kind {
        0 => {
            // Truncate a stream file.
            let Some(p) = pick_stream(rng) else { return "none".into() };
            let mut b = std::fs::read(&p).unwrap();
            let at = rng.below(b.len() as u64 + 1) as usize;
            b.truncate(at);
            std::fs::write(&p, &b).unwrap();
            format!("truncate {} at {at}", p.display())
        }
        1 => {
            // Flip bits in a stream file.
            let Some(p) = pick_stream(rng) else { return "none".into() };
            let mut b = std::fs::read(&p).unwrap();
            if b.is_empty() {
                return "empty".into();
            }
            let flips = 1 + rng.below(8);
            for _ in 0..flips {
                let at = rng.below(b.len() as u64) as usize;
                b[at] ^= 1 << rng.below(8);
            }
            std::fs::write(&p, &b).unwrap();
            format!("{flips} bit flips in {}", p.display())
        }
        2 => {
            // Random 32/64-bit words early in a packet: packet and content sizes, ids, lengths.
            let Some(p) = pick_stream(rng) else { return "none".into() };
            let mut b = std::fs::read(&p).unwrap();
            if b.len() < 8 {
                return "short".into();
            }
            let at = (rng.below(b.len().min(256) as u64 - 7) as usize) & !3;
            let v = match rng.below(4) {
                0 => 0,
                1 => rng.next(),
                2 => rng.below(1 << 20),
                _ => u64::MAX,
            };
            b[at..at + 8].copy_from_slice(&v.to_le_bytes());
            std::fs::write(&p, &b).unwrap();
            format!("word {v:#x} at {at} of {}", p.display())
        }
        3 => {
            // Garbage in the metadata.
            let p = dir.join("metadata");
            let mut b = std::fs::read(&p).unwrap();
            let n = 1 + rng.below(16);
            for _ in 0..n {
                if b.is_empty() {
                    break;
                }
                let at = rng.below(b.len() as u64) as usize;
                const GARBAGE: &[u8] = b"{};:=<>[]0123456789xyz_ \n\0\xff";
                b[at] = GARBAGE[rng.below(GARBAGE.len() as u64) as usize];
            }
            std::fs::write(&p, &b).unwrap();
            format!("{n} garbage bytes in metadata")
        }
        4 => {
            // Truncated metadata.
            let p = dir.join("metadata");
            let mut b = std::fs::read(&p).unwrap();
            let at = rng.below(b.len() as u64 + 1) as usize;
            b.truncate(at);
            std::fs::write(&p, &b).unwrap();
            format!("metadata truncated at {at}")
        }
        _ => {
            // Duplicate a slice of a stream file somewhere else in it.
            let Some(p) = pick_stream(rng) else { return "none".into() };
            let mut b = std::fs::read(&p).unwrap();
            if b.len() < 16 {
                return "short".into();
            }
            let len = 1 + rng.below(64.min(b.len() as u64 / 2)) as usize;
            let from = rng.below((b.len() - len) as u64) as usize;
            let to = rng.below((b.len() - len) as u64) as usize;
            let chunk = b[from..from + len].to_vec();
            b[to..to + len].copy_from_slice(&chunk);
            std::fs::write(&p, &b).unwrap();
            format!("copied {len} bytes {from}->{to} in {}", p.display())
        }
    }
}

/// The name of the generated CTF 2 trace among the mutants' bases.
const GENERATED_CTF2: &str = "(generated CTF 2 trace)";

/// Writes a CTF 2 trace of every field class only CTF 2 has (variable-length integers,
/// booleans, bit maps, BLOBs, optionals, UTF-16 strings, a variant on a plain integer) into
/// `dir`, in small packets.
fn write_ctf2_trace(dir: &Path) {
    use std::sync::Arc;
    use tracelens_ctf::ir::*;
    use tracelens_ctf::write::{EventValues, OwnedValue as V, StreamOptions, TraceWriter, Version};
    let bo = ByteOrder::Little;
    let nf = |name: &str, ty: FieldType| NamedField { name: name.into(), ty };
    let st = |fields: Vec<NamedField>| FieldType::Struct(StructType { fields, min_align: 1 });
    let u = |size: u32| FieldType::Int(IntType::new(size, false, bo));
    let role = |size: u32, r: Role, clock: bool| FieldType::Int(IntType { role: Some(r), mapped_clock: clock.then(|| "c".into()), ..IntType::new(size, false, bo) });
    let local = |n: &str| FieldPath::Local(vec![Some(n.into())]);
    let varint = |signed: bool| FieldType::Int(IntType { varlen: true, align: 8, ..IntType::new(64, signed, bo) });
    let payload = st(vec![
        nf("vu", varint(false)),
        nf("vs", varint(true)),
        nf("b", FieldType::Bool(IntType::new(8, false, bo))),
        nf("bm", FieldType::BitMap(EnumType { container: IntType::new(16, false, bo), mappings: vec![EnumMapping { label: "lo".into(), lower: 0, upper: 7 }] })),
        nf("n", varint(false)),
        nf("blob", FieldType::Blob(BlobType { length: BlobLength::Dynamic(local("n")), media_type: "application/octet-stream".into(), role: None })),
        nf("opt", FieldType::Optional(OptionalType { ty: Box::new(FieldType::String(Encoding::Utf16Le)), selector: local("b"), ranges: None })),
        nf("sel", u(8)),
        nf(
            "var",
            FieldType::Variant(VariantType {
                tag: local("sel"),
                options: vec![nf("a", u(32)), nf("b", varint(true))],
                ranges: Some(vec![vec![(0, 0)], vec![(1, 255)]]),
            }),
        ),
    ]);
    let class = TraceClass {
        major: 2,
        minor: 0,
        uuid: Some([7; 16]),
        byte_order: bo,
        packet_header: Some(Arc::new(st(vec![
            nf("magic", role(32, Role::Magic, false)),
            nf("uuid", FieldType::Blob(BlobType { length: BlobLength::Static(16), media_type: "application/octet-stream".into(), role: Some(Role::Uuid) })),
        ]))),
        env: Vec::new(),
        clocks: vec![ClockClass { name: "c".into(), ..ClockClass::default() }],
        streams: vec![StreamClass {
            id: 0,
            packet_context: Some(Arc::new(st(vec![
                nf("begin", role(64, Role::PacketBegin, true)),
                nf("end", role(64, Role::PacketEnd, true)),
                nf("content", role(16, Role::ContentSize, false)),
                nf("size", role(16, Role::PacketSize, false)),
            ]))),
            event_header: Some(Arc::new(st(vec![nf("id", role(8, Role::EventId, false)), nf("ts", role(32, Role::Timestamp, true))]))),
            event_context: None,
            events: vec![EventClass { id: 0, name: "all".into(), loglevel: None, model_emf_uri: None, context: None, payload: Some(Arc::new(payload)) }],
        }],
        callsites: Vec::new(),
    };
    let mut tw = TraceWriter::create_version(dir, &class, Version::Ctf2).expect("CTF 2 trace class");
    let mut s = tw.stream_with(0, "stream", &StreamOptions { packet_size: 256, ..StreamOptions::default() }).expect("stream");
    for k in 0..200u64 {
        let on = k % 3 == 0;
        let blob = vec![k as u8; (k % 5) as usize];
        let text: Vec<u8> = "héllo".encode_utf16().flat_map(u16::to_le_bytes).collect();
        let (sel, var) = if k % 2 == 0 { (0, V::variant(0, V::U(k))) } else { (7, V::variant(1, V::I(-(k as i64) * 1000))) };
        let p = V::structure([
            V::U(k * k * 1000),
            V::I(50 - k as i64 * 977),
            V::U(on as u64),
            V::U(k * 13 % 65536),
            V::U(blob.len() as u64),
            V::Bytes(blob),
            V::Array(if on { vec![V::Bytes(text)] } else { Vec::new() }),
            V::U(sel),
            var,
        ]);
        s.event(0, 1000 + k * 10, EventValues::payload(&p)).expect("event");
    }
    s.finish().expect("finish");
    let read = read_all(dir).expect("the generated CTF 2 trace reads back");
    assert_eq!(read.events, 200);
}

#[test]
fn mutated_traces_fail_cleanly() {
    let Some(f) = fixtures() else { return };
    let bases = [
        "babeltrace-conformance/succeed/smalltrace",
        "babeltrace-conformance/succeed/succeed1",
        "babeltrace-conformance/succeed/trace-with-index",
        "babeltrace-conformance/succeed/debug-info",
        "babeltrace-conformance/succeed/meta-variant-two-underscores",
        "babeltrace-conformance/succeed/ev-disc-no-ts-begin-end",
        "babeltrace-conformance/succeed/array-align-elem",
        "ctf-testsuite/regression/stream/pass/lttng-ust-heartbeat-event",
        "ctf-testsuite/regression/stream/pass/in-bound-variant-selected-element",
        "tracecompass/flipping-endianness",
        "tracecompass/ctf-sequence-empty",
        // CTF 2: JSON metadata, and the field classes only CTF 2 has (a generated trace).
        "tracecompass/CTF2-7.0-smalltrace",
        "tracecompass/CTF2-7.0-succeed1",
        "tracecompass/CTF2-7.0-trace-with-index",
        "tracecompass/CTF2-7.0-debug-info",
        "tracecompass/CTF2-7.0-meta-variant-no-underscore",
        "tracecompass/CTF2-vl-ints",
        GENERATED_CTF2,
    ];
    let per_base: u64 = std::env::var("TRACELENS_MUTANTS").ok().and_then(|v| v.parse().ok()).unwrap_or(150);
    let root = std::env::temp_dir().join(format!("tracelens-mutants-{}", std::process::id()));
    let _guard = Scratch(root.clone());
    let generated = root.join("generated-ctf2");
    write_ctf2_trace(&generated);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut ok, mut rejected) = (0u64, 0u64);
    let mut panics = Vec::new();
    for base in bases {
        let src = if base == GENERATED_CTF2 { generated.clone() } else { f.join(base) };
        if !src.is_dir() {
            panic!("fixture {} missing", src.display());
        }
        for m in 0..per_base {
            let dir = root.join(format!("{}-{m}", base.replace('/', "_")));
            copy_trace(&src, &dir);
            let what = mutate(&dir, &mut rng);
            match catch_unwind(AssertUnwindSafe(|| read_all(&dir))) {
                Ok(Ok(_)) => ok += 1,
                Ok(Err(e)) => {
                    rejected += 1;
                    assert!(!e.contains('\n'), "multi-line error for {base} ({what}): {e}");
                }
                Err(_) => panics.push(format!("{base}: {what}")),
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    eprintln!("mutants: {ok} read cleanly, {rejected} rejected cleanly, {} panicked", panics.len());
    assert!(panics.is_empty(), "panics on:\n{}", panics.join("\n"));
    assert!(rejected > 0, "no mutant was rejected: the mutations are not reaching the decoder");
}

#[test]
fn knowable_losses_are_never_silent() {
    let Some(f) = fixtures() else { return };
    // (trace, mutants): LTTng traces with an index (rotated tracefiles among them), and one
    // without.
    let bases = [
        ("babeltrace-conformance/succeed/trace-with-index", 60),
        ("babeltrace-conformance/succeed/2packets", 30),
        ("babeltrace-conformance/succeed/multi-domains/kernel", 40),
        ("babeltrace-conformance/succeed/lttng-tracefile-rotation/kernel", 40),
        ("tracecompass/debuginfo-test-app2", 40),
        ("tracecompass/ctf-sequence-empty", 30),
        ("generated/lttng-ust-2.13-libc-wrapper/ust/uid/0/64-bit", 12),
        ("babeltrace-conformance/succeed/succeed1", 20),
        ("tracecompass/CTF2-7.0-trace-with-index", 40),
    ];
    let scale: u64 = std::env::var("TRACELENS_MUTANTS").ok().and_then(|v| v.parse().ok()).map_or(1, |n: u64| n.div_ceil(150).max(1));
    let babeltrace2 = Command::new("babeltrace2").arg("--version").output().is_ok_and(|o| o.status.success());
    let root = std::env::temp_dir().join(format!("tracelens-knowable-{}", std::process::id()));
    let _guard = Scratch(root.clone());
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut failures = Vec::new();
    let (mut warned, mut intact, mut rejected, mut compared) = (0u64, 0u64, 0u64, 0u64);
    for (base, n) in bases {
        let src = f.join(base);
        let whole = read_all(&src).unwrap_or_else(|e| panic!("{base}: the intact trace does not read: {e}"));
        assert!(whole.warnings.is_empty(), "{base}: warnings on the intact trace: {:?}", whole.warnings);
        for m in 0..n * scale {
            let dir = root.join(format!("{}-{m}", base.replace('/', "_")));
            copy_trace(&src, &dir);
            let mutant = mutate_knowably(&dir, &mut rng);
            let what = format!("{base}: {}", mutant.what);
            match catch_unwind(AssertUnwindSafe(|| read_all(&dir))) {
                Err(_) => failures.push(format!("panic: {what}")),
                Ok(Err(e)) if mutant.index_entry => failures.push(format!("rejected although only the index is wrong: {what}: {e}")),
                Ok(Err(_)) => rejected += 1,
                Ok(Ok(r)) => {
                    if r.events < whole.events && r.warnings.is_empty() && mutant.loss_checked {
                        failures.push(format!("silent loss ({} of {} events): {what}", r.events, whole.events));
                    }
                    if mutant.index_entry {
                        if r.events != whole.events {
                            failures.push(format!("{} of {} events although only the index is wrong: {what}", r.events, whole.events));
                        }
                        if babeltrace2 {
                            compared += 1;
                            if let Some(b) = babeltrace2_events(&dir).filter(|&b| b > r.events) {
                                failures.push(format!("babeltrace2 reads {b} events, tracelens {}: {what}", r.events));
                            }
                        }
                    }
                    if r.warnings.is_empty() {
                        intact += 1;
                    } else {
                        warned += 1;
                    }
                }
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    eprintln!("knowable losses: {warned} mutants read with warnings, {intact} without (nothing lost), {rejected} rejected; {compared} compared with babeltrace2");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    assert!(warned > 0, "no mutant gave a warning: the mutations are not reaching the reader");
}
