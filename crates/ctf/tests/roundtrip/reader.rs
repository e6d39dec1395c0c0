//! Reader behaviour found with the writer: index instance ids, packet UUIDs.

use tracelens_ctf::write::{EventValues, OwnedValue, StreamOptions, StreamWriter, TraceWriter};
use tracelens_ctf::{parse_tsdl, Trace};

use crate::*;

/// `trace.rs` `from_idx` takes `stream_instance_id` from an LTTng index even when the packet
/// headers have no `stream_instance_id`, so two streams of one class whose indexes say the
/// same instance id (LTTng writes 0) are merged as if they were rotated tracefiles of one
/// stream (and `tracelens print` shows that id as the stream ID, where babeltrace2 numbers the
/// streams).
#[test]
fn reader_ignores_index_instance_id_without_header_field() {
    let text = r#"/* CTF 1.8 */
trace { major = 1; minor = 8; byte_order = le; packet.header := struct { integer { size = 32; align = 8; signed = false; } magic; }; };
clock { name = monotonic; };
stream {
	packet.context := struct {
		integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } timestamp_begin;
		integer { size = 64; align = 8; signed = false; } content_size;
		integer { size = 64; align = 8; signed = false; } packet_size;
	};
	event.header := struct { integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } timestamp; };
};
event { name = "ev"; fields := struct { integer { size = 8; align = 8; signed = false; } x; }; };
"#;
    let dir = temp_dir("idx-instance");
    let mut tw = TraceWriter::create(&dir, &parse_tsdl(text).expect("parses")).expect("create");
    for (k, name) in ["a", "b"].iter().enumerate() {
        let mut w = tw.stream_with(0, name, &StreamOptions { instance_id: Some(0), ..StreamOptions::default() }).expect("stream");
        w.event(0, 10 + k as u64, EventValues::payload(&OwnedValue::structure([OwnedValue::U(k as u64)]))).expect("event");
        w.finish().expect("finish");
    }
    let trace = Trace::open(&dir).expect("open");
    assert_eq!(trace.streams.len(), 2, "two stream files without instance ids are two streams");
    assert!(trace.streams.iter().all(|s| s.instance_id.is_none()));
}

/// A packet whose UUID is not the trace's is reported with its file and packet (the packet
/// header's `uuid` array has the `Uuid` role of the one layout both sides compile). This is
/// how a stream file left over from another trace in the same directory is noticed.
#[test]
fn reader_checks_packet_uuid() {
    let class = small_class();
    let mut other = class.clone();
    other.uuid = Some([7; 16]);
    let dir = temp_dir("uuid");
    write_small(&dir, 3);
    assert!(Trace::open(&dir).is_ok(), "packets with the trace's UUID read");
    // `chan_1` replaced by packets written for a trace class with another UUID.
    write_with_uuid(&other, &dir.join("chan_1"), 1);
    let r = Trace::open(&dir).and_then(|t| {
        for i in 0..t.streams.len() {
            let mut c = t.cursor(i);
            while c.advance()?.is_some() {}
        }
        Ok(())
    });
    assert!(r.is_err(), "a packet whose UUID differs from the trace's must be rejected");
    match r {
        Err(tracelens_ctf::Error::Stream { path, packet, message, .. }) => {
            assert_eq!(path, dir.join("chan_1"));
            assert_eq!(packet, 0);
            assert!(message.contains("UUID"), "{message}");
        }
        other => panic!("expected a stream error naming the file and packet, got {other:?}"),
    }
}

/// When no stream file carries the metadata's UUID and all carry the same other one, the
/// metadata's UUID is stale: the trace reads (as babeltrace2 reads babeltrace's own
/// `intersection` test traces, which are made that way), and the streams say which UUID their
/// packets carry.
#[test]
fn stale_metadata_uuid_is_the_streams_one() {
    let class = small_class();
    let mut other = class.clone();
    other.uuid = Some([7; 16]);
    let dir = temp_dir("stale-uuid");
    TraceWriter::create(&dir, &class).expect("create");
    for (k, name) in ["chan_0", "chan_1"].iter().enumerate() {
        write_with_uuid(&other, &dir.join(name), k as u64);
    }
    let t = Trace::open(&dir).expect("opens");
    assert_eq!(t.class.uuid, class.uuid);
    assert_eq!(t.streams.len(), 2);
    for (i, s) in t.streams.iter().enumerate() {
        assert_eq!(s.uuid, Some([7; 16]));
        let mut c = t.cursor(i);
        let mut n = 0;
        while let Some(item) = c.advance().expect("reads") {
            n += (item == tracelens_ctf::Item::Event) as u32;
        }
        assert_eq!(n, 1);
    }
}

/// Writes one event of `class` (its UUID in the packet headers) to the stream file `path`, as
/// stream instance `instance`.
fn write_with_uuid(class: &tracelens_ctf::ir::TraceClass, path: &std::path::Path, instance: u64) {
    let out = std::fs::File::create(path).expect("file");
    let opts = StreamOptions { instance_id: Some(instance), ..StreamOptions::default() };
    let mut w = StreamWriter::new(class, 0, path, std::io::BufWriter::new(out), None, &opts).expect("writer");
    let ctx = OwnedValue::structure([OwnedValue::I(1)]);
    w.event(1, 5, EventValues { common_context: Some(&ctx), payload: Some(&simple_payload(1)), ..EventValues::default() }).expect("event");
    w.finish().expect("finish");
}
