//! Stream decoding verdicts on the shared conformance traces: every case that must decode does,
//! every case that must be rejected is, with an error that names the file — and nothing panics,
//! hangs or takes more than a bounded amount of memory (the decode loop must make progress).
//!
//! Oracles: the CTF 1.8 test suite's own pass/fail folders, babeltrace's succeed/fail folders,
//! and the event counts Trace Compass and babeltrace 1 report for traces babeltrace2 aborts on.

use std::path::{Path, PathBuf};

use tracelens_ctf::{Cursor, EventView, Item, Trace};

mod common;
use common::fixtures;

/// Totals read from every stream of a trace.
#[derive(Debug, Default)]
struct Totals {
    events: u64,
    discarded: u64,
    lost_packets: u64,
    anomalies: u64,
}

fn read_all(dir: &Path) -> Result<Totals, String> {
    let trace = Trace::open(dir).map_err(|e| e.to_string())?;
    let mut t = Totals::default();
    for i in 0..trace.streams.len() {
        let mut c = trace.cursor(i);
        loop {
            match c.advance() {
                Ok(Some(Item::Event)) => t.events += 1,
                Ok(Some(Item::DiscardedEvents { count, .. })) => t.discarded += count,
                Ok(Some(Item::DiscardedPackets { count, .. })) => t.lost_packets += count,
                Ok(None) => break,
                Err(e) => return Err(e.to_string()),
            }
        }
        t.anomalies += c.anomalies;
    }
    Ok(t)
}

/// Every directory under `root` that holds a `metadata` file.
fn traces_under(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        if d.join("metadata").is_file() {
            out.push(d);
            continue;
        }
        if let Ok(rd) = std::fs::read_dir(&d) {
            for e in rd.flatten() {
                if e.path().is_dir() {
                    stack.push(e.path());
                }
            }
        }
    }
    out.sort();
    out
}

fn check_verdicts(root: &Path, must_pass: bool, wrong: &mut Vec<String>) -> usize {
    let cases = traces_under(root);
    for case in &cases {
        let r = read_all(case);
        match (&r, must_pass) {
            (Ok(_), true) | (Err(_), false) => {}
            (Ok(t), false) => wrong.push(format!("{}: accepted ({} events) but must be rejected", case.display(), t.events)),
            (Err(e), true) => wrong.push(format!("{}: rejected but must decode: {e}", case.display())),
        }
        if let Err(e) = &r {
            // A rejection is one line naming where.
            if e.contains('\n') || e.is_empty() {
                wrong.push(format!("{}: error message is not one line: {e:?}", case.display()));
            }
        }
    }
    cases.len()
}

#[test]
fn ctf_testsuite_stream_verdicts() {
    let Some(f) = fixtures() else { return };
    let base = f.join("ctf-testsuite/regression/stream");
    let mut wrong = Vec::new();
    let pass = check_verdicts(&base.join("pass"), true, &mut wrong);
    let fail = check_verdicts(&base.join("fail"), false, &mut wrong);
    assert_eq!((pass, fail), (19, 31), "the suite has 19 pass and 31 fail stream cases");
    assert!(wrong.is_empty(), "{} wrong verdicts:\n{}", wrong.len(), wrong.join("\n"));
}

#[test]
fn babeltrace_succeed_traces_decode() {
    let Some(f) = fixtures() else { return };
    let mut wrong = Vec::new();
    let n = check_verdicts(&f.join("babeltrace-conformance/succeed"), true, &mut wrong);
    assert!(n >= 30, "found only {n} succeed traces");
    assert!(wrong.is_empty(), "{} wrong verdicts:\n{}", wrong.len(), wrong.join("\n"));
}

#[test]
fn babeltrace_fail_traces_are_rejected() {
    let Some(f) = fixtures() else { return };
    let mut wrong = Vec::new();
    let n = check_verdicts(&f.join("babeltrace-conformance/fail"), false, &mut wrong);
    assert!(n >= 10, "found only {n} fail traces");
    assert!(wrong.is_empty(), "{} wrong verdicts:\n{}", wrong.len(), wrong.join("\n"));
}

/// Traces babeltrace2 2.0.4 aborts on (timestamps going backwards, clock conversion) but that
/// babeltrace 1 and Trace Compass read: every event must come out. Counts are those of the
/// traces README (babeltrace 1.5.11 and Trace Compass's CtfTestTrace).
#[test]
fn traces_babeltrace2_aborts_on_read_completely() {
    let Some(f) = fixtures() else { return };
    let cases: &[(&str, u64, u64)] = &[
        ("tracecompass/synctraces/scp_dest", 85_729, 0),
        ("tracecompass/synctraces/scp_src", 110_771, 0),
        ("tracecompass/hello-lost", 32_300, 967_700),
        ("tracecompass/funky_trace", 100_002, 0),
        ("tracecompass/ctfwriter_JF8nq3", 100_003, 1_000),
        ("ctf-testsuite/regression/stream/pass/lttng-modules-trace", 39_537, 0),
    ];
    let mut wrong = Vec::new();
    for (rel, events, discarded) in cases {
        match read_all(&f.join(rel)) {
            Ok(t) if t.events == *events && t.discarded == *discarded => {}
            Ok(t) => wrong.push(format!("{rel}: {} events, {} discarded; expected {events} and {discarded}", t.events, t.discarded)),
            Err(e) => wrong.push(format!("{rel}: {e}")),
        }
    }
    for t in traces_under(&f.join("tracecompass/exp-subset")) {
        match read_all(&t) {
            Ok(x) if x.events == 16_034 => {}
            Ok(x) => wrong.push(format!("{}: {} events, expected 16034", t.display(), x.events)),
            Err(e) => wrong.push(format!("{}: {e}", t.display())),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Lost packets from `packet_seq_num` gaps: babeltrace2's counts (traces README).
#[test]
fn packet_sequence_gaps_are_reported() {
    let Some(f) = fixtures() else { return };
    let base = f.join("babeltrace-conformance/extra/packet-seq-num");
    let cases: &[(&str, u64, u64)] = &[
        ("2-lost-before-last", 3, 2),
        ("2-streams-lost-in-1", 8, 2),
        ("2-streams-lost-in-2", 8, 6),
        ("7-lost-between-2-with-index", 2, 7),
        ("no-lost", 3, 0),
        ("no-lost-not-starting-at-0", 3, 0),
    ];
    let mut wrong = Vec::new();
    for (rel, events, lost) in cases {
        match read_all(&base.join(rel)) {
            Ok(t) if t.events == *events && t.lost_packets == *lost => {}
            Ok(t) => wrong.push(format!("{rel}: {} events, {} lost packets; expected {events}, {lost}", t.events, t.lost_packets)),
            Err(e) => wrong.push(format!("{rel}: {e}")),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Times going backwards inside a stream are reported exactly where babeltrace2 2.0.4's muxer
/// aborts ("timestamp is less than ... last returned timestamp", traces README), and nowhere in
/// traces it reads.
#[test]
fn backward_times_reported_where_babeltrace2_aborts() {
    let Some(f) = fixtures() else { return };
    let aborts = [
        "tracecompass/synctraces/scp_dest",
        "tracecompass/synctraces/scp_src",
        "tracecompass/hello-lost",
        "tracecompass/exp-subset/testTrace-20480-20140324-160658",
        "tracecompass/exp-subset/testTrace-20744-20140324-160658",
        "ctf-testsuite/regression/stream/pass/lttng-modules-trace",
    ];
    let reads = [
        "tracecompass/many-threads",
        "tracecompass/bug446190",
        "tracecompass/exp-subset/testTrace-17889-20140324-160652",
        "tracecompass/exp-subset/testTrace-18057-20140324-160652",
        "babeltrace-conformance/succeed/lttng-tracefile-rotation/kernel",
        "babeltrace-conformance/succeed/multi-domains/kernel",
        "tracecompass/memory",
        "tracecompass/ros2",
    ];
    let mut wrong = Vec::new();
    for rel in aborts {
        match read_all(&f.join(rel)) {
            Ok(t) if t.anomalies > 0 => {}
            other => wrong.push(format!("{rel}: expected backward times, got {other:?}")),
        }
    }
    for rel in reads {
        match read_all(&f.join(rel)) {
            Ok(t) if t.anomalies == 0 => {}
            other => wrong.push(format!("{rel}: expected no backward times, got {other:?}")),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The compiled fast paths (straight-line programs, LTTng header shortcuts) decode exactly what
/// the field-by-field decoder does, on every fixture trace.
#[test]
fn fast_paths_decode_like_the_generic_decoder() {
    let mut checked = 0u64;
    let mut wrong = Vec::new();
    let found = with_stream_pairs(|dir, i, mut fast, mut slow| {
        loop {
            let (a, b) = (fast.advance(), slow.advance());
            match (a, b) {
                (Ok(None), Ok(None)) => break,
                (Ok(Some(x)), Ok(Some(y))) if x == y => {
                    if x == Item::Event {
                        let (e, g) = (fast.event().unwrap(), slow.event().unwrap());
                        if !same_event(&e, &g) {
                            wrong.push(format!("{}: stream {i}, event {checked}", dir.display()));
                            break;
                        }
                        checked += 1;
                    }
                }
                (Err(_), Err(_)) => break,
                (a, b) => {
                    wrong.push(format!("{}: stream {i}: fast {a:?} vs generic {b:?}", dir.display()));
                    break;
                }
            }
        }
    });
    if !found {
        return;
    }
    assert!(checked > 1_000_000, "only {checked} events compared");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Skipping events without decoding their fields ([`Cursor::skip_event_before`], how parallel
/// `print` passes what other workers format) leaves a cursor where reading them leaves it:
/// every skipped event is the generic decoder's next one (same time), a skip refused at the
/// next event's own time changes nothing, the events read after skips are the generic
/// decoder's, and so are the backward times counted.
#[test]
fn skipping_events_leaves_the_cursor_where_reading_them_does() {
    let (mut skipped, mut checked) = (0u64, 0u64);
    let mut wrong = Vec::new();
    let found = with_stream_pairs(|dir, i, mut fast, mut slow| {
        let mut round = 0u64;
        let bad = 'read: loop {
            round += 1;
            // Up to 7 skips, then one item read.
            for _ in 0..round % 8 {
                let Some(t) = fast.skip_event_before(i64::MAX) else { break };
                match slow.advance() {
                    Ok(Some(Item::Event)) if slow.event().and_then(|g| g.ns) == Some(t) => skipped += 1,
                    other => break 'read Some(format!("skipped an event at {t} ns, generic {other:?}")),
                }
            }
            let b = slow.advance();
            if let (Ok(Some(Item::Event)), Some(ns)) = (&b, slow.event().and_then(|g| g.ns)) {
                if fast.skip_event_before(ns).is_some() {
                    break Some(format!("skipped the event at {ns} ns, not before it"));
                }
            }
            match (fast.advance(), b) {
                (Ok(None), Ok(None)) | (Err(_), Err(_)) => break None,
                (Ok(Some(x)), Ok(Some(y))) if x == y => {
                    if x == Item::Event {
                        let (e, g) = (fast.event().unwrap(), slow.event().unwrap());
                        if !same_event(&e, &g) || fast.packet_index() != slow.packet_index() {
                            break Some("event differs after skips".to_string());
                        }
                        checked += 1;
                    }
                }
                (a, b) => break Some(format!("after skips {a:?} vs generic {b:?}")),
            }
        };
        let bad = bad.or_else(|| (fast.anomalies != slow.anomalies).then(|| format!("{} backward times vs generic {}", fast.anomalies, slow.anomalies)));
        if let Some(b) = bad {
            wrong.push(format!("{}: stream {i}: {b}", dir.display()));
        }
    });
    if !found {
        return;
    }
    assert!(skipped > 500_000 && checked > 500_000, "only {skipped} events skipped and {checked} read compared");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Skipping a run of events at once (`skip_events_before`, which reads what it checks of the
/// packet once) leaves the cursor where skipping them one by one does, with the same last
/// time, for skips up to times 0 to 8 items ahead (the times of a third cursor running
/// ahead), on every fixture stream.
#[test]
fn skipping_a_run_of_events_is_skipping_them_one_by_one() {
    let Some(f) = fixtures() else { return };
    let (mut runs, mut skipped) = (0u64, 0u64);
    let mut wrong = Vec::new();
    for dir in traces_under(&f) {
        let Ok(trace) = Trace::open(&dir) else { continue };
        for i in 0..trace.streams.len() {
            let (mut run, mut one, mut ahead) = (trace.cursor(i), trace.cursor(i), trace.cursor(i));
            // Items `one` has consumed (skipped or read), and `ahead` has read.
            let (mut at, mut ahead_at) = (0u64, 0u64);
            let mut ns = i64::MIN;
            let mut round = 0u64;
            let bad = 'read: loop {
                round += 1;
                while ahead_at < at + round % 9 {
                    ahead_at += 1;
                    match ahead.advance() {
                        Ok(Some(Item::Event)) => ns = ahead.event().and_then(|e| e.ns).unwrap_or(ns),
                        Ok(Some(_)) => {}
                        _ => ns = i64::MAX,
                    }
                }
                let last = run.skip_events_before(ns);
                let mut last_one = None;
                while let Some(t) = one.skip_event_before(ns) {
                    last_one = Some(t);
                    at += 1;
                    skipped += 1;
                }
                runs += 1;
                if last != last_one {
                    break Some(format!("skipping before {ns} ns: last {last:?}, one by one {last_one:?}"));
                }
                at += 1;
                match (run.advance(), one.advance()) {
                    (Ok(None), Ok(None)) | (Err(_), Err(_)) => break None,
                    (Ok(Some(x)), Ok(Some(y))) if x == y => {
                        if x == Item::Event {
                            let (Some(e), Some(g)) = (run.event(), one.event()) else { break 'read Some("no event".into()) };
                            if !same_event(&e, &g) || run.packet_index() != one.packet_index() {
                                break Some(format!("event differs after skipping before {ns} ns"));
                            }
                        }
                    }
                    (a, b) => break Some(format!("after skipping before {ns} ns: {a:?} vs one by one {b:?}")),
                }
            }
            .or_else(|| (run.anomalies != one.anomalies).then(|| format!("{} backward times vs {}", run.anomalies, one.anomalies)));
            if let Some(b) = bad {
                wrong.push(format!("{}: stream {i}: {b}", dir.display()));
            }
        }
    }
    assert!(runs > 100_000 && skipped > 100_000, "only {runs} runs, {skipped} events skipped");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Calls `check` with every stream of every fixture trace: the trace's folder, the stream's
/// index, a cursor with the compiled fast paths and one restricted to the generic decoder.
/// `false` (nothing called) when the fixtures are absent.
fn with_stream_pairs(mut check: impl FnMut(&Path, usize, Cursor<'_>, Cursor<'_>)) -> bool {
    let Some(f) = fixtures() else { return false };
    for dir in traces_under(&f) {
        let Ok(trace) = Trace::open(&dir) else { continue };
        for i in 0..trace.streams.len() {
            let mut slow = trace.cursor(i);
            slow.set_generic_only(true);
            check(&dir, i, trace.cursor(i), slow);
        }
    }
    true
}

/// Whether two views show the same event: time, class, every field of every event scope.
fn same_event(e: &EventView<'_, '_>, g: &EventView<'_, '_>) -> bool {
    e.cycles == g.cycles
        && e.ns == g.ns
        && e.name() == g.name()
        && [(e.header, g.header), (e.common_context, g.common_context), (e.context, g.context), (e.payload, g.payload)]
            .iter()
            .all(|(p, q)| p.list.len() == q.list.len() && p.list.iter().zip(q.list).all(|(u, v)| std::ptr::eq(u.node, v.node) && u.value == v.value))
}

/// `Cursor::burst` (events of the common kinds in a tight loop) alternated with `advance`
/// reads every fixture stream exactly as the generic decoder does with `advance` alone: same
/// items, same events, same packet for each.
#[test]
fn bursts_read_what_the_generic_decoder_reads() {
    let (mut in_bursts, mut checked) = (0u64, 0u64);
    let mut wrong = Vec::new();
    let found = with_stream_pairs(|dir, i, mut fast, mut slow| {
        let mut bad: Option<String> = None;
        loop {
            fast.burst(|e, packet| {
                if bad.is_some() {
                    return;
                }
                match slow.advance() {
                    Ok(Some(Item::Event)) => match slow.event() {
                        Some(g) if same_event(e, &g) && packet == slow.packet_index() => in_bursts += 1,
                        _ => bad = Some(format!("event {} differs in a burst", checked + in_bursts)),
                    },
                    other => bad = Some(format!("burst gave an event, generic {other:?}")),
                }
            });
            if let Some(b) = bad.take() {
                wrong.push(format!("{}: stream {i}: {b}", dir.display()));
                break;
            }
            match (fast.advance(), slow.advance()) {
                (Ok(None), Ok(None)) | (Err(_), Err(_)) => break,
                (Ok(Some(x)), Ok(Some(y))) if x == y => {
                    if x == Item::Event {
                        let (e, g) = (fast.event().unwrap(), slow.event().unwrap());
                        if !same_event(&e, &g) || fast.packet_index() != slow.packet_index() {
                            wrong.push(format!("{}: stream {i}: event differs after a burst", dir.display()));
                            break;
                        }
                        checked += 1;
                    }
                }
                (a, b) => {
                    wrong.push(format!("{}: stream {i}: after a burst {a:?} vs generic {b:?}", dir.display()));
                    break;
                }
            }
        }
    });
    if !found {
        return;
    }
    assert!(in_bursts > 1_000_000 && checked > 1_000, "only {in_bursts} events in bursts and {checked} outside compared");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
