//! Fixed traces shared by several tests (`small_class`, `write_small`), fixed reader cases,
//! and generated traces kept for manual inspection.

use std::path::Path;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use tracelens_ctf::ir::*;
use tracelens_ctf::write::{EventValues, OwnedValue, StreamOptions, TraceWriter};
use tracelens_ctf::{parse_tsdl, Item, Trace};

use crate::*;

/// TSDL of a small trace in LTTng's layout, with most field kinds.
const SMALL_TSDL: &str = r#"/* CTF 1.8 */
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
trace {
	major = 1; minor = 8;
	uuid = "2a6422d0-6cee-11e0-8c08-cb07d7b3a564";
	byte_order = le;
	packet.header := struct { uint32_t magic; uint8_t uuid[16]; uint32_t stream_id; uint64_t stream_instance_id; };
};
env { hostname = "writer-test"; domain = "ust"; tracer_name = "lttng-ust"; tracer_major = 2; tracer_minor = 13; };
clock { name = "monotonic"; uuid = "2a6422d0-6cee-11e0-8c08-cb07d7b3a564"; freq = 1000000000; offset_s = 1600000000; offset = 0; precision = 0; absolute = true; };
typealias integer { size = 27; align = 1; signed = false; map = clock.monotonic.value; } := uint27_clock_monotonic_t;
typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := uint64_clock_monotonic_t;
stream {
	id = 0;
	event.header := struct {
		enum : integer { size = 5; align = 1; signed = false; } { compact = 0 ... 30, extended = 31 } id;
		variant <id> {
			struct { uint27_clock_monotonic_t timestamp; } compact;
			struct { uint32_t id; uint64_clock_monotonic_t timestamp; } extended;
		} v;
	} align(8);
	packet.context := struct {
		uint64_clock_monotonic_t timestamp_begin;
		uint64_clock_monotonic_t timestamp_end;
		uint64_t content_size;
		uint64_t packet_size;
		uint64_t packet_seq_num;
		uint64_t events_discarded;
		uint32_t cpu_id;
	};
	event.context := struct { integer { size = 32; align = 8; signed = true; } _vtid; };
};
event {
	name = "app:simple"; id = 1; stream_id = 0; loglevel = 13;
	fields := struct {
		integer { size = 32; align = 8; signed = true; } _intfield;
		integer { size = 16; align = 8; signed = false; base = 16; } _hexfield;
		string _strfield;
		floating_point { exp_dig = 8; mant_dig = 24; align = 32; } _floatfield;
		floating_point { exp_dig = 11; mant_dig = 53; align = 64; } _doublefield;
		enum : integer { size = 8; align = 8; signed = false; } { ZERO = 0, ONE = 1, MANY = 2 ... 100 } _enumfield;
		integer { size = 8; align = 8; signed = false; encoding = UTF8; } _chars[6];
	};
};
event {
	name = "app:dynamic"; id = 40; stream_id = 0;
	fields := struct {
		uint32_t _seqfield_length;
		integer { size = 16; align = 8; signed = true; } _seqfield[_seqfield_length];
		enum : integer { size = 8; align = 8; signed = false; } { _num = 0, _text = 1 } _tag;
		variant <_tag> { integer { size = 64; align = 8; signed = true; } _num; string _text; } _var;
		integer { size = 3; align = 1; signed = false; } _bits;
		integer { size = 13; align = 1; signed = true; } _more_bits;
	};
};
"#;

pub(crate) fn small_class() -> TraceClass {
    parse_tsdl(SMALL_TSDL).expect("SMALL_TSDL parses")
}

pub(crate) fn simple_payload(k: i64) -> OwnedValue {
    OwnedValue::structure([
        OwnedValue::I(-k),
        OwnedValue::U(0xbeef),
        OwnedValue::from(format!("event {k}")),
        OwnedValue::F(1.5),
        OwnedValue::F(-2.25e-3),
        OwnedValue::U(k as u64 % 4),
        OwnedValue::Bytes(b"abc\0\0\0".to_vec()),
    ])
}

pub(crate) fn dynamic_payload(k: i64) -> OwnedValue {
    let n = (k % 4) as usize;
    let var = if k % 2 == 0 { OwnedValue::variant(0, OwnedValue::I(-k * 1000)) } else { OwnedValue::variant(1, OwnedValue::from("text")) };
    OwnedValue::structure([
        OwnedValue::U(n as u64),
        OwnedValue::Array((0..n).map(|i| OwnedValue::I(i as i64 - 2)).collect()),
        OwnedValue::U((k % 2) as u64),
        var,
        OwnedValue::U(5),
        OwnedValue::I(-4000),
    ])
}

/// Writes the small trace: two CPUs, `n` events each (ids 1 and 40 alternating, timestamps
/// with gaps that need the extended header), some discarded events.
pub(crate) fn write_small(dir: &Path, n: i64) -> (u64, u64) {
    let class = small_class();
    let mut tw = TraceWriter::create(dir, &class).expect("create");
    let mut total = (0, 0);
    for cpu in 0..2u64 {
        let mut w = tw.stream_with(0, &format!("chan_{cpu}"), &StreamOptions { packet_size: 512, ..StreamOptions::default() }).expect("stream");
        w.set_packet_context("cpu_id", OwnedValue::U(cpu)).expect("cpu_id");
        let mut ts = 1_000 + cpu * 7;
        for k in 0..n {
            ts += if k % 17 == 16 { 1 << 28 } else { 1_000 + (k as u64 % 5) * 333 };
            let ctx = OwnedValue::structure([OwnedValue::I(100 + cpu as i64)]);
            let (id, payload) = if k % 2 == 0 { (1, simple_payload(k)) } else { (40, dynamic_payload(k)) };
            w.event(id, ts, EventValues::payload(&payload).with_common_context(&ctx)).expect("event");
            if k % 29 == 28 {
                w.discard(3).expect("discard");
            }
        }
        let f = w.finish().expect("finish");
        total.0 += f.events;
        total.1 += f.discarded;
    }
    (total.0, total.1)
}

/// The plan compiler resolves an absolute path into the scope being compiled only through
/// the root structure's completed members, so a sequence whose length is referred to as
/// `event.fields.s.len` from inside `s` cannot be decoded (babeltrace2 reads it).
#[test]
fn reader_resolves_absolute_paths_into_enclosing_structures() {
    let text = r#"/* CTF 1.8 */
trace { major = 1; minor = 8; byte_order = le; };
stream { event.header := struct { integer { size = 32; align = 8; signed = false; } id; }; };
event {
	name = "ev";
	fields := struct {
		struct {
			integer { size = 8; align = 8; signed = false; } len;
			integer { size = 8; align = 8; signed = false; } seq[event.fields.s.len];
		} s;
	};
};
"#;
    let class = parse_tsdl(text).expect("parses");
    let dir = temp_dir("nested-absolute");
    let mut tw = TraceWriter::create(&dir, &class).expect("create");
    let mut w = tw.stream(0, "stream").expect("stream");
    let payload = OwnedValue::structure([OwnedValue::structure([OwnedValue::U(2), OwnedValue::Array(vec![OwnedValue::U(7), OwnedValue::U(9)])])]);
    w.event(0, 0, EventValues::payload(&payload)).expect("event");
    w.finish().expect("finish");
    eprintln!("trace in {}", dir.display());
    let trace = Trace::open(&dir).expect("open");
    let mut cur = trace.cursor(0);
    assert_eq!(cur.advance().expect("decodes"), Some(Item::Event));
    let ev = cur.event().expect("event");
    assert_eq!(OwnedValue::from_fields(ev.payload, &trace.plans[0]), Some(payload));
}

/// Generated cases from a fixed seed.
pub(crate) fn generated_cases(n: usize, seed: u8, bt2: bool) -> Vec<Case> {
    use proptest::test_runner::{RngAlgorithm, TestRng};
    let mut runner = TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]));
    let strategy = case_strategy(bt2);
    (0..n).map(|_| strategy.new_tree(&mut runner).expect("generate").current()).collect()
}

#[test]
#[ignore = "writes generated traces under /tmp/tracelens-gen-* for manual inspection"]
fn keep_generated_traces() {
    let n: usize = std::env::var("GEN_TRACES").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    for (k, case) in generated_cases(n, 1, true).iter().enumerate() {
        let dir = std::env::temp_dir().join(format!("tracelens-gen-{k}"));
        let _ = std::fs::remove_dir_all(&dir);
        let class = build_class(&case.spec);
        write_case(case, &class, &dir, false).expect("write");
    }
}
