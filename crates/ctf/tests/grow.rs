//! A trace whose event classes grow while it is written (`TraceWriter::set_class`,
//! `StreamWriter::set_class`): events of the first and of later classes read back, from one
//! metadata, by tracelens and by babeltrace2.

use std::path::PathBuf;
use std::sync::Arc;

use tracelens_ctf::ir::{
    ByteOrder, ClockClass, DisplayBase, Encoding, EventClass, FieldType, IntType, NamedField, StreamClass, StructType, TraceClass,
};
use tracelens_ctf::write::{EventValues, OwnedValue, TraceWriter};
use tracelens_ctf::{Item, Trace};

fn u(size: u32, clock: bool) -> FieldType {
    FieldType::Int(IntType {
        size,
        align: 8,
        signed: false,
        byte_order: ByteOrder::Little,
        base: DisplayBase::Decimal,
        encoding: Encoding::None,
        mapped_clock: clock.then(|| "c".to_string()),
        role: None,
        varlen: false,
        reversed: false,
    })
}

fn st(fields: &[(&str, FieldType)]) -> Arc<FieldType> {
    Arc::new(FieldType::Struct(StructType { fields: fields.iter().map(|(n, t)| NamedField { name: n.to_string(), ty: t.clone() }).collect(), min_align: 1 }))
}

fn class(events: usize) -> TraceClass {
    let names = ["first", "second", "third"];
    TraceClass {
        major: 1,
        minor: 8,
        uuid: Some([7; 16]),
        byte_order: ByteOrder::Little,
        packet_header: Some(st(&[("magic", u(32, false)), ("stream_id", u(8, false))])),
        env: Vec::new(),
        clocks: vec![ClockClass { name: "c".into(), freq: 1_000_000_000, offset_s: 0, offset: 0, precision: 0, absolute: false, description: None, uuid: None }],
        streams: vec![StreamClass {
            id: 0,
            packet_context: Some(st(&[("timestamp_begin", u(64, true)), ("timestamp_end", u(64, true)), ("content_size", u(32, false)), ("packet_size", u(32, false))])),
            event_header: Some(st(&[("id", u(8, false)), ("timestamp", u(64, true))])),
            event_context: None,
            events: (0..events)
                .map(|k| EventClass {
                    id: k as u64,
                    name: names[k].into(),
                    loglevel: None,
                    model_emf_uri: None,
                    context: None,
                    payload: Some(if k == 1 { st(&[("text", FieldType::String(Encoding::Utf8))]) } else { st(&[("v", u(16, false))]) }),
                })
                .collect(),
        }],
        callsites: Vec::new(),
    }
}

fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracelens-grow-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn event_classes_added_while_writing_read_back() {
    let d = dir("read-back");
    let mut tw = TraceWriter::create(&d, &class(1)).unwrap();
    let mut s = tw.stream(0, "s0").unwrap();
    s.event(0, 10, EventValues::payload(&OwnedValue::Struct(vec![OwnedValue::U(1)]))).unwrap();
    // Unknown class before the metadata grows.
    assert!(s.event(1, 11, EventValues::payload(&OwnedValue::Struct(vec![OwnedValue::from("x")]))).is_err());
    tw.set_class(&class(2)).unwrap();
    s.set_class(tw.class()).unwrap();
    s.event(1, 20, EventValues::payload(&OwnedValue::Struct(vec![OwnedValue::from("hello")]))).unwrap();
    tw.set_class(&class(3)).unwrap();
    s.set_class(tw.class()).unwrap();
    let mut s2 = tw.stream(0, "s1").unwrap();
    s2.event(2, 25, EventValues::payload(&OwnedValue::Struct(vec![OwnedValue::U(3)]))).unwrap();
    s.event(0, 30, EventValues::payload(&OwnedValue::Struct(vec![OwnedValue::U(2)]))).unwrap();
    s.finish().unwrap();
    s2.finish().unwrap();

    let trace = Trace::open(&d).unwrap();
    let mut seen = Vec::new();
    for i in 0..trace.streams.len() {
        let mut c = trace.cursor(i);
        while let Some(item) = c.advance().unwrap() {
            if let (Item::Event, Some(ev)) = (item, c.event()) {
                seen.push((ev.ns, ev.name().to_string()));
            }
        }
    }
    seen.sort();
    let names: Vec<&str> = seen.iter().map(|s| s.1.as_str()).collect();
    assert_eq!(names, ["first", "second", "third", "first"]);

    if let Ok(out) = std::process::Command::new("babeltrace2").arg(&d).output() {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "babeltrace2: {}", String::from_utf8_lossy(&out.stderr));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[1].contains("second: { text = \"hello\" }"), "{text}");
        assert!(lines[2].contains("third: { v = 3 }"), "{text}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_class_that_changes_more_than_its_events_is_refused() {
    let d = dir("refused");
    let mut tw = TraceWriter::create(&d, &class(1)).unwrap();
    let mut other = class(2);
    other.streams[0].event_header = Some(st(&[("id", u(16, false)), ("timestamp", u(64, true))]));
    let e = tw.set_class(&other).unwrap_err().to_string();
    assert!(e.contains("does not only add event classes"), "{e}");
    let mut renamed = class(1);
    renamed.streams[0].events[0].name = "renamed".into();
    assert!(tw.set_class(&renamed).is_err());
    let mut s = tw.stream(0, "s0").unwrap();
    assert!(s.set_class(&other).is_err());
    let _ = std::fs::remove_dir_all(&d);
}
