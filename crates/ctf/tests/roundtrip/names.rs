//! One name rule on both sides: the reader and the writer compile the same layout
//! (`tracelens_ctf::layout`), so a variant option is chosen by an enumeration label, and a
//! field gets its meaning from its name, the same way when writing as when reading — and as
//! babeltrace2 does (one leading underscore removed before comparing).

use std::path::Path;

use tracelens_ctf::ir::TraceClass;
use tracelens_ctf::write::{EventValues, OwnedValue, TraceWriter};
use tracelens_ctf::{parse_tsdl, Item, Trace, Value};

use crate::*;

/// The conformance traces whose variant options and labels differ by leading underscores.
const META_VARIANT: [&str; 5] = [
    "meta-variant-no-underscore",
    "meta-variant-one-underscore",
    "meta-variant-two-underscores",
    "meta-variant-same-with-underscore",
    "meta-variant-reserved-keywords",
];

/// For each event of the trace in `dir`: the tag's value and the raw name of the variant
/// option decoded (the payload is `{ tag; variant <tag> var; }`).
fn decoded_options(dir: &Path) -> Vec<(u64, String)> {
    let trace = Trace::open(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut out = Vec::new();
    for i in 0..trace.streams.len() {
        let mut c = trace.cursor(i);
        while let Some(item) = c.advance().unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            if item != Item::Event {
                continue;
            }
            let ev = c.event().expect("event");
            let tag = ev.payload.get("tag").and_then(|f| f.as_u64()).expect("tag");
            let var = ev.payload.children(0).map(|(k, _)| k).nth(1).expect("var");
            assert!(matches!(ev.payload.list[var].value, Value::Compound { .. }), "var is a variant");
            out.push((tag, ev.payload.list[var + 1].node.raw_name.clone()));
        }
    }
    out
}

/// The payload `{ tag = tag, var = option k holding a string }`.
fn payload(tag: u64, k: u32) -> OwnedValue {
    OwnedValue::structure([OwnedValue::U(tag), OwnedValue::Variant(k, Box::new(OwnedValue::from("Daniel Lavoie")))])
}

/// babeltrace's `meta-variant-*` traces, read, then written again from their own metadata with
/// every label's value: for each value the writer accepts exactly one option (the others are
/// errors naming the option the tag selects), the one the reader decodes from babeltrace's
/// trace and from ours — and babeltrace2 prints our trace as `tracelens print` does.
#[test]
fn meta_variant_option_names_on_both_sides() {
    let Some(fixtures) = common::fixtures() else { return };
    let oracle = print_oracle();
    for name in META_VARIANT {
        let src = fixtures.join("babeltrace-conformance/succeed").join(name);
        let theirs = decoded_options(&src);
        assert_eq!(theirs.len(), 1, "{name}: one event");
        let text = std::fs::read_to_string(src.join("metadata")).expect("metadata");
        let class: TraceClass = parse_tsdl(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let payload_ty = class.streams[0].events[0].payload.clone().expect("payload");
        let labels = match &payload_ty.as_struct().expect("struct").fields[0].ty {
            tracelens_ctf::ir::FieldType::Enum(e) => e.mappings.clone(),
            other => panic!("{name}: tag is {other:?}"),
        };
        let options = labels.len() as u32;
        let dir = temp_dir("meta-variant");
        let mut tw = TraceWriter::create(&dir, &class).expect("create");
        let mut w = tw.stream(0, "stream").expect("stream");
        let mut written = Vec::new();
        for m in &labels {
            let tag = m.lower as u64;
            let accepted: Vec<u32> = (0..options).filter(|&k| w.event(0, 0, EventValues::payload(&payload(tag, k))).is_ok()).collect();
            assert_eq!(accepted.len(), 1, "{name}: tag {tag} ({}): the writer accepts options {accepted:?}", m.label);
            written.push((tag, accepted[0]));
        }
        w.finish().expect("finish");
        let ours = decoded_options(&dir);
        let option_names: Vec<String> = match &payload_ty.as_struct().expect("struct").fields[1].ty {
            tracelens_ctf::ir::FieldType::Variant(v) => v.options.iter().map(|o| o.name.clone()).collect(),
            other => panic!("{name}: var is {other:?}"),
        };
        let want: Vec<(u64, String)> = written.iter().map(|&(tag, k)| (tag, option_names[k as usize].clone())).collect();
        assert_eq!(ours, want, "{name}: read back");
        assert!(ours.contains(&theirs[0]), "{name}: babeltrace's event {:?} decodes to another option than the writer picks: {ours:?}", theirs[0]);
        if let Some(bin) = &oracle {
            match print_difference(bin, &dir) {
                Ok((lines, _)) => eprintln!("{name}: babeltrace2 and tracelens print the same {lines} lines"),
                Err(report) => panic!("{name}: babeltrace2 and tracelens print differ:\n{report}"),
            }
        }
    }
}

/// A trace whose well-known fields are all spelled with a leading underscore (`_magic`,
/// `_uuid`, `_stream_id`, `_timestamp_begin`, `_content_size`, `_events_discarded`, the
/// header's `_id` and `_timestamp`...): the writer fills them in as the reader reads them, so
/// times (including 27-bit timestamps that wrap), discarded events and event classes come
/// back, and babeltrace2 prints the trace as `tracelens print` does.
#[test]
fn underscored_role_names_on_both_sides() {
    let text = r#"/* CTF 1.8 */
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
trace {
	major = 1; minor = 8; byte_order = le;
	uuid = "2a6422d0-6cee-11e0-8c08-cb07d7b3a564";
	packet.header := struct { uint32_t _magic; uint8_t _uuid[16]; uint32_t _stream_id; };
};
clock { name = monotonic; freq = 1000000000; };
typealias integer { size = 27; align = 1; signed = false; map = clock.monotonic.value; } := uint27_clock_monotonic_t;
typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := uint64_clock_monotonic_t;
stream {
	id = 0;
	packet.context := struct {
		uint64_clock_monotonic_t _timestamp_begin;
		uint64_clock_monotonic_t _timestamp_end;
		uint64_t _content_size;
		uint64_t _packet_size;
		uint64_t _packet_seq_num;
		uint64_t _events_discarded;
	};
	event.header := struct {
		enum : integer { size = 5; align = 8; signed = false; } { compact = 0 ... 30, extended = 31 } _id;
		variant <_id> {
			struct { uint27_clock_monotonic_t _timestamp; } compact;
			struct { uint32_t _id; uint64_clock_monotonic_t _timestamp; } extended;
		} _v;
	} align(8);
};
event { name = "a"; id = 0; stream_id = 0; fields := struct { uint32_t _x; }; };
event { name = "b"; id = 40; stream_id = 0; fields := struct { uint32_t _x; }; };
"#;
    let class = parse_tsdl(text).expect("parses");
    let dir = temp_dir("underscored");
    let mut tw = TraceWriter::create(&dir, &class).expect("create");
    let mut w = tw.stream_with(0, "s", &tracelens_ctf::write::StreamOptions { packet_size: 256, ..Default::default() }).expect("stream");
    let mut want = Vec::new();
    let mut ts = 1_000u64;
    for k in 0..60u64 {
        // Some steps past 2^27 cycles: the compact header's timestamp cannot say them.
        ts += if k % 7 == 6 { 1 << 28 } else { 1_000 + k };
        let id = if k % 3 == 0 { 40 } else { 0 };
        w.event(id, ts, EventValues::payload(&OwnedValue::structure([OwnedValue::U(k)]))).expect("event");
        want.push(Seen::Event { id, ts: Some(ts), common: None, context: None, payload: Some(OwnedValue::structure([OwnedValue::U(k)])), cpu: None, domain: None });
        if k % 20 == 19 {
            w.discard(5).expect("discard");
            want.push(Seen::Discarded(5));
        }
    }
    let f = w.finish().expect("finish");
    assert!(f.packets > 3, "several packets ({})", f.packets);
    let got = read_back(&dir, &|_| true).expect("reads back");
    assert_eq!(got.get("s"), Some(&want));
    if let Some(bin) = print_oracle() {
        match print_difference(&bin, &dir) {
            Ok((lines, _)) => eprintln!("babeltrace2 and tracelens print the same {lines} lines"),
            Err(report) => panic!("babeltrace2 and tracelens print differ:\n{report}"),
        }
    }
}
