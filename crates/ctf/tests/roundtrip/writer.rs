//! Writer behaviour: header choice, packet cutting, discarded events, errors on mismatched
//! values.

use std::path::PathBuf;

use tracelens_ctf::ir::*;
use tracelens_ctf::write::{to_tsdl, EventValues, OwnedValue, StreamOptions, StreamWriter};
use tracelens_ctf::{parse_tsdl, Item, Trace};

use crate::*;

/// A stream class with an LTTng compact header and a one-byte payload.
fn compact_class(packet_context: &str) -> TraceClass {
    let text = format!(
        r#"/* CTF 1.8 */
trace {{ major = 1; minor = 8; byte_order = be; packet.header := struct {{ integer {{ size = 32; align = 8; signed = false; }} magic; integer {{ size = 32; align = 8; signed = false; }} stream_id; }}; }};
clock {{ name = monotonic; }};
stream {{
	id = 0;
	{packet_context}
	event.header := struct {{
		enum : integer {{ size = 5; align = 1; signed = false; }} {{ compact = 0 ... 30, extended = 31 }} id;
		variant <id> {{
			struct {{ integer {{ size = 27; align = 1; signed = false; map = clock.monotonic.value; }} timestamp; }} compact;
			struct {{ integer {{ size = 32; align = 8; signed = false; }} id; integer {{ size = 64; align = 8; signed = false; map = clock.monotonic.value; }} timestamp; }} extended;
		}} v;
	}} align(8);
}};
event {{ name = "a"; id = 3; stream_id = 0; fields := struct {{ integer {{ size = 8; align = 8; signed = false; }} x; }}; }};
event {{ name = "b"; id = 77; stream_id = 0; fields := struct {{ integer {{ size = 8; align = 8; signed = false; }} x; }}; }};
"#
    );
    parse_tsdl(&text).expect("parses")
}

const LTTNG_PC: &str = "packet.context := struct { integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } timestamp_begin; integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } timestamp_end; integer { size = 64; align = 8; signed = false; } content_size; integer { size = 64; align = 8; signed = false; } packet_size; integer { size = 64; align = 8; signed = false; } packet_seq_num; integer { size = 64; align = 8; signed = false; } events_discarded; };";

fn mem_writer(class: &TraceClass, packet_size: u64) -> StreamWriter<Vec<u8>> {
    StreamWriter::new(class, 0, "mem", Vec::new(), Some(Vec::new()), &StreamOptions { packet_size, ..StreamOptions::default() }).expect("writer")
}

pub(crate) fn byte(x: u64) -> OwnedValue {
    OwnedValue::structure([OwnedValue::U(x)])
}

/// Reads an in-memory stream back: (class id, cycles, payload) of each event.
fn read_mem(class: &TraceClass, bytes: Vec<u8>) -> Vec<(u64, Option<u64>, Option<OwnedValue>)> {
    let trace = Trace::from_memory(to_tsdl(class).as_bytes(), vec![(PathBuf::from("mem"), bytes)]).expect("open");
    let mut cur = trace.cursor(0);
    let mut out = Vec::new();
    while let Some(item) = cur.advance().expect("decode") {
        if item == Item::Event {
            let ev = cur.event().expect("event");
            out.push((ev.class.class.id, ev.cycles, OwnedValue::from_fields(ev.payload, &trace.plans[0])));
        }
    }
    out
}

#[test]
fn compact_header_when_it_fits() {
    let class = compact_class(LTTNG_PC);
    let mut w = mem_writer(&class, 4096);
    // Compact: 4-byte header + 1-byte payload; extended: 13-byte header (5 bits, aligned
    // 32-bit id, 64-bit timestamp) + 1.
    let events = [(3, 100), (3, 200), (77, 300), (3, (1 << 27) + 299), (3, (1 << 27) + 400), (3, (1 << 40) + 1)];
    for (k, &(id, ts)) in events.iter().enumerate() {
        w.event(id, ts, EventValues::payload(&byte(k as u64))).expect("event");
    }
    let f = w.finish().expect("finish");
    let trace = Trace::from_memory(to_tsdl(&class).as_bytes(), vec![(PathBuf::from("mem"), f.out.clone())]).expect("open");
    let p = &trace.streams[0].packets[0];
    // Event sizes: compact 5, compact 5, extended 14 (id 77), compact 5 (delta 2^27 - 1),
    // compact 5, extended 14 (delta beyond 27 bits).
    assert_eq!(p.content_bits - p.events_bits, 8 * (5 + 5 + 14 + 5 + 5 + 14));
    let got = read_mem(&class, f.out);
    let want: Vec<_> = events.iter().enumerate().map(|(k, &(id, ts))| (id, Some(ts), Some(byte(k as u64)))).collect();
    assert_eq!(got, want);
}

#[test]
fn packets_close_at_the_packet_size() {
    let class = compact_class(LTTNG_PC);
    let mut w = mem_writer(&class, 128);
    for k in 0..100u64 {
        w.event(3, 1000 + k * 10, EventValues::payload(&byte(k))).expect("event");
    }
    let f = w.finish().expect("finish");
    // 56 bytes of header and context, then 5-byte events: 14 per packet.
    assert_eq!(f.packets, 100u64.div_ceil(14));
    // Full packets are padded to 128 bytes; the last one (2 events) ends at its content.
    assert_eq!(f.out.len() as u64, (f.packets - 1) * 128 + 56 + 5 * (100 - 14 * (f.packets - 1)));
    let index = f.index.clone().expect("index");
    assert_eq!(index.len() as u64, 16 + 72 * f.packets);
    let got = read_mem(&class, f.out);
    assert_eq!(got.len(), 100);
    assert!(got.iter().enumerate().all(|(k, e)| e.1 == Some(1000 + k as u64 * 10)));
}

#[test]
fn packets_closed_early_are_not_padded() {
    let class = compact_class(LTTNG_PC);
    let mut w = mem_writer(&class, 4096);
    w.event(3, 1000, EventValues::payload(&byte(1))).expect("event");
    w.discard(5).expect("discard");
    w.event(3, 2000, EventValues::payload(&byte(2))).expect("event");
    w.flush_packet().expect("flush");
    w.event(3, 3000, EventValues::payload(&byte(3))).expect("event");
    let f = w.finish().expect("finish");
    assert_eq!(f.packets, 3);
    assert_eq!(f.out.len(), 3 * (56 + 5));
    let trace = Trace::from_memory(to_tsdl(&class).as_bytes(), vec![(PathBuf::from("mem"), f.out.clone())]).expect("open");
    let discarded: Vec<_> = trace.streams[0].packets.iter().map(|p| p.events_discarded).collect();
    assert_eq!(discarded, [Some(0), Some(5), Some(5)]);
    assert_eq!(read_mem(&class, f.out).len(), 3);
}

/// With `fixed_size`, packets closed early and the last one are padded to the packet size too
/// (as LTTng writes its sub-buffers), and read back the same.
#[test]
fn fixed_size_packets_are_all_padded() {
    let class = compact_class(LTTNG_PC);
    let opts = StreamOptions { packet_size: 512, fixed_size: true, ..StreamOptions::default() };
    let mut w = StreamWriter::new(&class, 0, "mem", Vec::new(), None, &opts).expect("writer");
    w.event(3, 1000, EventValues::payload(&byte(1))).expect("event");
    w.discard(5).expect("discard");
    w.event(3, 2000, EventValues::payload(&byte(2))).expect("event");
    let f = w.finish().expect("finish");
    assert_eq!(f.packets, 2);
    assert_eq!(f.out.len(), 2 * 512);
    let trace = Trace::from_memory(to_tsdl(&class).as_bytes(), vec![(PathBuf::from("mem"), f.out.clone())]).expect("open");
    let sizes: Vec<_> = trace.streams[0].packets.iter().map(|p| (p.size, p.content_bits, p.events_discarded)).collect();
    assert_eq!(sizes, [(512, (56 + 5) * 8, Some(0)), (512, (56 + 5) * 8, Some(5))]);
    assert_eq!(read_mem(&class, f.out).len(), 2);
}

#[test]
fn oversized_event_gets_its_own_packet() {
    let text = format!(
        "/* CTF 1.8 */\ntrace {{ major = 1; minor = 8; byte_order = le; }};\nclock {{ name = monotonic; }};\nstream {{ {LTTNG_PC} event.header := struct {{ integer {{ size = 64; align = 8; signed = false; map = clock.monotonic.value; }} timestamp; }}; }};\nevent {{ name = \"s\"; fields := struct {{ string text; }}; }};\n"
    );
    let class = parse_tsdl(&text).expect("parses");
    let mut w = mem_writer(&class, 100);
    let long = "x".repeat(500);
    for (k, t) in ["a", long.as_str(), "b"].iter().enumerate() {
        w.event(0, k as u64, EventValues::payload(&OwnedValue::structure([OwnedValue::from(*t)]))).expect("event");
    }
    let f = w.finish().expect("finish");
    assert_eq!(f.packets, 3);
    let got = read_mem(&class, f.out);
    assert_eq!(got.iter().map(|e| e.2.clone()).collect::<Vec<_>>(), ["a", long.as_str(), "b"].iter().map(|t| Some(OwnedValue::structure([OwnedValue::from(*t)]))).collect::<Vec<_>>());
}

#[test]
fn mismatched_values_are_errors_and_leave_the_stream_usable() {
    let class = small_class();
    let mut w = mem_writer(&class, 512);
    let ctx = OwnedValue::structure([OwnedValue::I(5)]);
    let values = |p: &'static OwnedValue| EventValues { common_context: Some(&ctx), payload: Some(p), ..EventValues::default() };
    let ok = Box::leak(Box::new(dynamic_payload(3)));
    w.event(40, 10, values(ok)).expect("good event");
    let cases: Vec<(u64, OwnedValue, &str)> = vec![
        // An integer that does not fit.
        (1, { let mut p = simple_payload(1); if let OwnedValue::Struct(m) = &mut p { m[1] = OwnedValue::U(70_000); } p }, "`_hexfield`: 70000 does not fit an unsigned 16-bit integer"),
        // A string where an integer goes.
        (1, { let mut p = simple_payload(1); if let OwnedValue::Struct(m) = &mut p { m[0] = OwnedValue::from("x"); } p }, "`_intfield`: expected a signed 32-bit integer, got the string \"x\""),
        // A sequence longer than its length field says.
        (40, { let mut p = dynamic_payload(2); if let OwnedValue::Struct(m) = &mut p { m[0] = OwnedValue::U(1); } p }, "the sequence has 2 elements, but its length field `_seqfield_length` is 1"),
        // A variant option its tag does not select.
        (40, { let mut p = dynamic_payload(2); if let OwnedValue::Struct(m) = &mut p { m[3] = OwnedValue::variant(1, OwnedValue::from("t")); } p }, "option `_text` given, but the variant's tag `_tag` is 0, which selects option `_num`"),
        // Too few members.
        (1, OwnedValue::structure([OwnedValue::I(1)]), "the structure has 7 members, but 1 values were given"),
        // A NUL in a string.
        (1, { let mut p = simple_payload(1); if let OwnedValue::Struct(m) = &mut p { m[2] = OwnedValue::from("a\0b"); } p }, "a string cannot hold a NUL byte"),
        // A text array longer than the array.
        (1, { let mut p = simple_payload(1); if let OwnedValue::Struct(m) = &mut p { m[6] = OwnedValue::from("1234567"); } p }, "the string has 7 bytes, more than the array's 6"),
        // An unknown event class.
        (2, simple_payload(1), "stream class 0 has no event class 2"),
    ];
    for (id, payload, want) in &cases {
        let e = w.event(*id, 20, EventValues { common_context: Some(&ctx), payload: Some(payload), ..EventValues::default() }).expect_err(want);
        let msg = e.to_string();
        assert!(matches!(e, tracelens_ctf::Error::Write { .. }), "{msg}");
        assert!(msg.contains(want), "error `{msg}` does not say `{want}`");
    }
    let e = w.event(1, 20, EventValues::payload(&simple_payload(1))).expect_err("missing context");
    assert!(e.to_string().contains("stream event context: no value given"), "{e}");
    w.event(1, 30, values(Box::leak(Box::new(simple_payload(4))))).expect("good event after errors");
    let f = w.finish().expect("finish");
    let got = read_mem(&class, f.out);
    assert_eq!(got, vec![(40, Some(10), Some(dynamic_payload(3))), (1, Some(30), Some(simple_payload(4)))]);
}

#[test]
fn discards_at_the_start_and_the_end() {
    let class = compact_class(LTTNG_PC);
    let mut w = mem_writer(&class, 4096);
    w.discard(2).expect("discard");
    w.event(3, 5, EventValues::payload(&byte(1))).expect("event");
    w.discard(4).expect("discard");
    w.discard(1).expect("discard");
    w.event(3, 6, EventValues::payload(&byte(2))).expect("event");
    w.discard(9).expect("discard");
    let f = w.finish().expect("finish");
    assert_eq!((f.events, f.packets, f.discarded), (2, 3, 16));
    let trace = Trace::from_memory(to_tsdl(&class).as_bytes(), vec![(PathBuf::from("mem"), f.out)]).expect("open");
    let mut cur = trace.cursor(0);
    let mut items = Vec::new();
    while let Some(item) = cur.advance().expect("decode") {
        items.push(match item {
            Item::DiscardedEvents { count, .. } => format!("d{count}"),
            other => format!("{other:?}"),
        });
    }
    assert_eq!(items, ["d2", "Event", "d5", "Event", "d9"]);
    // Without `events_discarded`, recording discarded events is an error.
    let plain = compact_class("");
    let mut w = mem_writer(&plain, 4096);
    assert!(w.discard(1).is_err());
}

#[test]
fn single_packet_stream_without_packet_context() {
    let class = compact_class("");
    let mut w = mem_writer(&class, 64);
    for k in 0..50 {
        w.event(if k % 3 == 0 { 77 } else { 3 }, 7 * k, EventValues::payload(&byte(k))).expect("event");
    }
    let f = w.finish().expect("finish");
    assert_eq!(f.packets, 1);
    let got = read_mem(&class, f.out);
    assert_eq!(got.len(), 50);
    assert!(got.iter().enumerate().all(|(k, e)| e.1 == Some(7 * k as u64) && e.2 == Some(byte(k as u64))));
}

#[test]
fn timestamp_begin_restarts_narrow_timestamps() {
    // A 32-bit header timestamp cannot jump 2^32 ahead; a new packet (whose
    // `timestamp_begin` resets the clock) can.
    let text = format!(
        "/* CTF 1.8 */\ntrace {{ major = 1; minor = 8; byte_order = le; }};\nclock {{ name = monotonic; }};\nstream {{ {LTTNG_PC} event.header := struct {{ integer {{ size = 32; align = 8; signed = false; map = clock.monotonic.value; }} timestamp; }}; }};\nevent {{ name = \"e\"; fields := struct {{ integer {{ size = 8; align = 8; signed = false; }} x; }}; }};\n"
    );
    let class = parse_tsdl(&text).expect("parses");
    let mut w = mem_writer(&class, 4096);
    let times = [5u64, 6, 1 << 33, (1 << 33) + 1, 1 << 40];
    for (k, &t) in times.iter().enumerate() {
        w.event(0, t, EventValues::payload(&byte(k as u64))).expect("event");
    }
    let f = w.finish().expect("finish");
    assert_eq!(f.packets, 3);
    let got: Vec<_> = read_mem(&class, f.out).into_iter().map(|e| e.1.expect("time")).collect();
    assert_eq!(got, times);
}

#[test]
fn owned_value_equality() {
    assert_eq!(OwnedValue::F(f64::NAN), OwnedValue::F(-f64::NAN));
    assert_ne!(OwnedValue::F(0.0), OwnedValue::F(-0.0));
    assert_ne!(OwnedValue::U(1), OwnedValue::I(1));
    assert_eq!(OwnedValue::from(3u32).as_i64(), Some(3));
    assert_eq!(OwnedValue::I(-1).as_u64(), None);
}
