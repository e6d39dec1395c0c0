//! Writing a generated case with `TraceWriter`, reading it back with `Trace::open`, and the
//! round-trip property test over random cases.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use proptest::test_runner::{Config, TestCaseError, TestRunner};
use tracelens_ctf::ir::*;
use tracelens_ctf::write::{to_ctf2, to_tsdl, EventValues, OwnedValue, StreamOptions, TraceWriter, Version};
use tracelens_ctf::{parse_ctf2, parse_tsdl, Item, Trace};

use crate::*;

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Seen {
    Event { id: u64, ts: Option<u64>, common: Option<OwnedValue>, context: Option<OwnedValue>, payload: Option<OwnedValue>, cpu: Option<u64>, domain: Option<u64> },
    Discarded(u64),
}


/// Writes `case` into `dir`; returns what each stream file must read back as.
pub(crate) fn write_case(case: &Case, class: &TraceClass, dir: &Path, general_only: bool) -> Result<BTreeMap<String, Vec<Seen>>, String> {
    let version = if case.ctf2 { Version::Ctf2 } else { Version::Ctf1 };
    let mut tw = TraceWriter::create_version(dir, class, version).map_err(|e| e.to_string())?;
    let mut expected = BTreeMap::new();
    for (si, s) in case.spec.streams.iter().enumerate() {
        let has_ts = s.header != Header::None;
        let has_cpu = s.has(|p| *p == Pc::Cpu);
        for (k, ops) in case.ops[si].iter().enumerate() {
            let name = format!("s{}_{k}", s.id);
            let opts = StreamOptions { packet_size: case.packet_size, index: k == 0, instance_id: None, general_only, ..StreamOptions::default() };
            let mut w = tw.stream_with(s.id, &name, &opts).map_err(|e| e.to_string())?;
            if has_cpu {
                w.set_packet_context("cpu_id", OwnedValue::U(k as u64 + 7)).map_err(|e| e.to_string())?;
            }
            if case.spec.domain {
                w.set_packet_header("domain_id", OwnedValue::U(k as u64 + 100)).map_err(|e| e.to_string())?;
            }
            // Without `timestamp_begin` (or new packets to carry it), 32-bit header timestamps must
            // stay within 2^32 of each other, from 0.
            let narrow = s.header == Header::Simple32 && (!s.has(|p| *p == Pc::Begin) || s.single_packet());
            let mut ts = if narrow { case.start % (1 << 31) } else { case.start };
            let mut exp = Vec::new();
            for op in ops {
                match op {
                    Op::Event { class, delta, common, context, payload } => {
                        let e = &s.events[*class];
                        let mut delta = *delta;
                        if narrow {
                            delta %= 1 << 31;
                        }
                        ts += delta;
                        let mut common = common.as_ref().map(|v| root_value(s.common.as_ref().expect("common"), v));
                        if let (Some(OwnedValue::Struct(m)), true) = (&mut common, s.clen) {
                            // `clen`: the length of the payload's `ExtSeq`s (all the same).
                            let n = match (&e.payload, payload) {
                                (Some(G::Struct(gs, _)), Some(GV::Struct(vs))) => gs.iter().zip(vs).find_map(|(g, v)| match (g, v) {
                                    (G::ExtSeq(_), GV::Seq(items)) => Some(items.len() as u64),
                                    _ => None,
                                }),
                                _ => None,
                            };
                            m.push(OwnedValue::U(n.unwrap_or(0)));
                        }
                        let context = context.as_ref().map(|v| root_value(e.context.as_ref().expect("context"), v));
                        let payload = payload.as_ref().map(|v| root_value(e.payload.as_ref().expect("payload"), v));
                        let values = EventValues { header: None, common_context: common.as_ref(), context: context.as_ref(), payload: payload.as_ref() };
                        w.event(e.id, ts, values).map_err(|err| format!("{err}\n(header {:?}, packet context {:?}, start {}, ops {ops:?})", s.header, s.pc, case.start))?;
                        exp.push(Seen::Event { id: e.id, ts: has_ts.then_some(ts), common, context, payload, cpu: has_cpu.then_some(k as u64 + 7), domain: case.spec.domain.then_some(k as u64 + 100) });
                    }
                    Op::Discard(n) => {
                        w.discard(*n).map_err(|e| e.to_string())?;
                        match exp.last_mut() {
                            Some(Seen::Discarded(m)) => *m += n,
                            _ => exp.push(Seen::Discarded(*n)),
                        }
                    }
                }
            }
            let f = w.finish().map_err(|e| e.to_string())?;
            for (k, v) in [1, f.packets, f.events, f.discarded, f.bytes].into_iter().enumerate() {
                STATS[k].fetch_add(v, Ordering::Relaxed);
            }
            expected.insert(name, exp);
        }
    }
    Ok(expected)
}

/// Reads every stream of the trace in `dir` back.
pub(crate) fn read_back(dir: &Path, has_ts: &dyn Fn(u64) -> bool) -> Result<BTreeMap<String, Vec<Seen>>, String> {
    let trace = Trace::open(dir).map_err(|e| e.to_string())?;
    let mut out = BTreeMap::new();
    for i in 0..trace.streams.len() {
        let ds = &trace.streams[i];
        if ds.files.len() != 1 {
            return Err(format!("stream {i} groups {} files", ds.files.len()));
        }
        let name = ds.path().file_name().and_then(|n| n.to_str()).unwrap_or("").to_string();
        let plan = &trace.plans[ds.plan];
        let ts_ok = has_ts(ds.stream_class_id);
        let mut cur = trace.cursor(i);
        let mut got = Vec::new();
        while let Some(item) = cur.advance().map_err(|e| e.to_string())? {
            match item {
                Item::Event => {
                    let ev = cur.event().ok_or("no event")?;
                    got.push(Seen::Event {
                        id: ev.class.class.id,
                        ts: if ts_ok { ev.cycles } else { None },
                        common: OwnedValue::from_fields(ev.common_context, plan),
                        context: OwnedValue::from_fields(ev.context, plan),
                        payload: OwnedValue::from_fields(ev.payload, plan),
                        cpu: ev.packet_context.get("cpu_id").and_then(|f| f.as_u64()),
                        domain: ev.packet_header.get("domain_id").and_then(|f| f.as_u64()),
                    });
                }
                Item::DiscardedEvents { count, .. } => got.push(Seen::Discarded(count)),
                Item::DiscardedPackets { count, .. } => return Err(format!("{name}: {count} lost packets reported")),
            }
        }
        if out.insert(name.clone(), got).is_some() {
            return Err(format!("two streams named {name}"));
        }
    }
    Ok(out)
}

fn check_case(case: &Case) -> Result<(), TestCaseError> {
    let class = build_class(&case.spec);
    if case.ctf2 {
        // (a) The CTF 2 round trip: the class parsed from the JSON written (explicit roles,
        // absolute locations) is written and parsed back identical.
        let text = to_ctf2(&class).map_err(|e| TestCaseError::fail(format!("to_ctf2: {e}")))?;
        let parsed = parse_ctf2(&text).map_err(|e| TestCaseError::fail(format!("to_ctf2 output does not parse: {e}\n{text}")))?;
        let again = to_ctf2(&parsed).map_err(|e| TestCaseError::fail(format!("to_ctf2 of the parsed class: {e}")))?;
        let reparsed = parse_ctf2(&again).map_err(|e| TestCaseError::fail(format!("to_ctf2 output does not parse: {e}\n{again}")))?;
        if reparsed != parsed || again != text {
            return Err(TestCaseError::fail(format!("CTF 2 round trip changed the class\nfirst:\n{text}\nsecond:\n{again}")));
        }
    } else {
        // (a) The TSDL round trip.
        let text = to_tsdl(&class);
        let parsed = parse_tsdl(&text).map_err(|e| TestCaseError::fail(format!("to_tsdl output does not parse: {e}\n{text}")))?;
        if parsed != class {
            return Err(TestCaseError::fail(format!("TSDL round trip changed the class\nTSDL:\n{text}\nwritten: {class:#?}\nparsed: {parsed:#?}")));
        }
    }
    // (b), (c)
    let dir = temp_dir("roundtrip");
    let expected = write_case(case, &class, &dir, false).map_err(|e| TestCaseError::fail(format!("writing {}: {e}", dir.display())))?;
    // (d) The writer's fast paths write the same bytes as its general encoder.
    let general = temp_dir("roundtrip-general");
    write_case(case, &class, &general, true).map_err(|e| TestCaseError::fail(format!("writing {}: {e}", general.display())))?;
    if let Some(diff) = first_difference(&dir, &general) {
        return Err(TestCaseError::fail(format!("the fast paths and the general encoder differ: {diff}")));
    }
    let _ = std::fs::remove_dir_all(&general);
    let has_ts = |sid: u64| case.spec.streams.iter().any(|s| s.id == sid && s.header != Header::None);
    let got = read_back(&dir, &has_ts).map_err(|e| TestCaseError::fail(format!("reading {}: {e}", dir.display())))?;
    for (name, exp) in &expected {
        let g = got.get(name).map(Vec::as_slice).unwrap_or(&[]);
        if g != exp.as_slice() {
            let at = g.iter().zip(exp).position(|(a, b)| a != b).unwrap_or(g.len().min(exp.len()));
            return Err(TestCaseError::fail(format!(
                "{}/{name}: item {at} differs ({} read, {} written)\nread:    {:?}\nwritten: {:?}",
                dir.display(),
                g.len(),
                exp.len(),
                g.get(at),
                exp.get(at)
            )));
        }
    }
    if let Some(extra) = got.keys().find(|k| !expected.contains_key(*k)) {
        return Err(TestCaseError::fail(format!("unexpected stream {extra}")));
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// The first file (recursively, by relative path) whose bytes differ between two directories.
fn first_difference(a: &Path, b: &Path) -> Option<String> {
    fn files(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                files(root, &p, out);
            } else if let (Ok(rel), Ok(bytes)) = (p.strip_prefix(root), std::fs::read(&p)) {
                out.insert(rel.to_path_buf(), bytes);
            }
        }
    }
    let (mut fa, mut fb) = (BTreeMap::new(), BTreeMap::new());
    files(a, a, &mut fa);
    files(b, b, &mut fb);
    if fa.keys().ne(fb.keys()) {
        return Some(format!("files {:?} vs {:?}", fa.keys().collect::<Vec<_>>(), fb.keys().collect::<Vec<_>>()));
    }
    fa.iter().zip(&fb).find(|((_, x), (_, y))| x != y).map(|((name, x), (_, y))| {
        let at = x.iter().zip(y.iter()).position(|(p, q)| p != q).unwrap_or(x.len().min(y.len()));
        format!("{} at byte {at} ({} vs {} bytes)", name.display(), x.len(), y.len())
    })
}

/// The round trip of random CTF 2 traces: CTF 2's field classes (variable-length, bit-reversed
/// and boolean integers, bit maps, BLOBs, UTF-16/32 strings, optionals, variants with integer
/// selectors, relative locations) among CTF 1.8's, metadata written as JSON fragments.
#[test]
fn roundtrip_random_ctf2_traces() {
    let config = Config { failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new(config);
    if let Err(e) = runner.run(&case_strategy_ctf2(), |case| check_case(&case)) {
        panic!("{e}");
    }
}

/// What the property test wrote, over all cases.
static STATS: [AtomicU64; 5] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];

#[test]
fn roundtrip_random_traces() {
    // PROPTEST_CASES (default 256) sets the number of cases.
    let config = Config { failure_persistence: None, ..Config::default() };
    let cases = config.cases;
    let started = std::time::Instant::now();
    let mut runner = TestRunner::new(config);
    if let Err(e) = runner.run(&case_strategy(false), |case| check_case(&case)) {
        panic!("{e}");
    }
    let s: Vec<u64> = STATS.iter().map(|a| a.load(Ordering::Relaxed)).collect();
    eprintln!(
        "roundtrip_random_traces: {cases} cases in {:.2}s: {} streams, {} packets, {} events, {} discarded events, {} bytes",
        started.elapsed().as_secs_f64(),
        s[0],
        s[1],
        s[2],
        s[3],
        s[4]
    );
    assert!(s[2] > cases as u64 && s[1] > cases as u64, "the cases wrote too little to test anything");
}
