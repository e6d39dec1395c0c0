//! The CTF layout of a probe trace: LTTng-UST's (packet header, packet context with
//! discarded-event counts, compact event header, `monotonic` clock — the pieces it shares with
//! LTTng's kernel layout, taken from `tracelens_ctf::lttng`), with `{vpid, vtid}` as every
//! event's common context, and one event class per registered probe name and kind: no
//! payload, `{value: uint64}` or `{value: string}`.

use std::sync::Arc;

use tracelens_ctf::ir::{ByteOrder, ClockClass, EnvValue, EventClass, FieldType, StreamClass, TraceClass};
use tracelens_ctf::lttng::{self, field, sint, structure, Ty};

/// What a probe carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Nothing but its name and time (`TL_PROBE`, `probe!(name)`).
    Empty,
    /// An unsigned 64-bit `value` (`TL_PROBE_U64`, `probe!(name, 42u64)`).
    U64,
    /// A string `value` (`TL_PROBE_STR`, `probe!(name, "text")`).
    Str,
}

/// Facts about the process written into the metadata.
#[derive(Clone, Debug)]
pub(crate) struct Info {
    pub(crate) uuid: [u8; 16],
    pub(crate) hostname: String,
    pub(crate) procname: String,
    pub(crate) pid: i32,
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC, in ns.
    pub(crate) clock_offset_ns: i64,
    /// The clock's UUID, when the kernel trace it goes with has one.
    pub(crate) clock_uuid: Option<[u8; 16]>,
}

/// The payload of a probe kind.
fn payload(kind: Kind) -> Option<Arc<FieldType>> {
    match kind {
        Kind::Empty => None,
        Kind::U64 => Some(Arc::new(lttng::payload_type([("value", lttng::U64)]))),
        Kind::Str => Some(Arc::new(lttng::payload_type([("value", Ty::Str)]))),
    }
}

/// The trace class with `classes[k]` as event class `k`.
pub(crate) fn trace_class(info: &Info, classes: &[(String, Kind)]) -> TraceClass {
    let event_context = structure(vec![field("_vpid", sint(32)), field("_vtid", sint(32))]);
    let events = classes
        .iter()
        .enumerate()
        .map(|(id, (name, kind))| EventClass { id: id as u64, name: name.clone(), loglevel: None, model_emf_uri: None, context: None, payload: payload(*kind) })
        .collect();
    TraceClass {
        major: 1,
        minor: 8,
        uuid: Some(info.uuid),
        byte_order: ByteOrder::Little,
        packet_header: Some(Arc::new(lttng::packet_header())),
        env: vec![
            ("hostname".into(), EnvValue::Str(info.hostname.clone())),
            ("domain".into(), EnvValue::Str("ust".into())),
            ("tracer_name".into(), EnvValue::Str("tracelens-probe".into())),
            ("tracer_major".into(), EnvValue::Int(0)),
            ("tracer_minor".into(), EnvValue::Int(1)),
            ("procname".into(), EnvValue::Str(info.procname.clone())),
            ("vpid".into(), EnvValue::Int(info.pid.into())),
        ],
        // Times since the Unix epoch (the offset makes them so), which babeltrace2 needs to
        // order them with an LTTng kernel trace's (it takes those as absolute).
        clocks: vec![ClockClass { absolute: true, uuid: info.clock_uuid, ..lttng::monotonic_clock(info.clock_offset_ns) }],
        streams: vec![StreamClass {
            id: 0,
            packet_context: Some(Arc::new(structure(lttng::packet_context_members()))),
            event_header: Some(Arc::new(lttng::event_header())),
            event_context: Some(Arc::new(event_context)),
            events,
        }],
        callsites: Vec::new(),
    }
}

