//! The CTF layout of a probe trace: LTTng-UST's (packet header, packet context with
//! discarded-event counts, compact event header, `monotonic` clock), with `{vpid, vtid}` as
//! every event's common context, and one event class per registered probe name and kind:
//! no payload, `{value: uint64}` or `{value: string}`.

use std::sync::Arc;

use tracelens_ctf::ir::{
    ArrayType, ByteOrder, ClockClass, DisplayBase, Encoding, EnumMapping, EnumType, EnvValue, EventClass, FieldPath, FieldType, IntType, NamedField,
    StreamClass, StructType, TraceClass, VariantType,
};

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

const CLOCK: &str = "monotonic";

fn int(size: u32, signed: bool, base: DisplayBase, clock: bool) -> IntType {
    IntType {
        size,
        align: if size.is_multiple_of(8) { 8 } else { 1 },
        signed,
        byte_order: ByteOrder::Little,
        base,
        encoding: Encoding::None,
        mapped_clock: clock.then(|| CLOCK.to_string()),
    }
}

fn u(size: u32) -> FieldType {
    FieldType::Int(int(size, false, DisplayBase::Decimal, false))
}

fn field(name: &str, ty: FieldType) -> NamedField {
    NamedField { name: name.to_string(), ty }
}

fn st(fields: Vec<NamedField>) -> FieldType {
    FieldType::Struct(StructType { fields, min_align: 1 })
}

/// The payload of a probe kind.
fn payload(kind: Kind) -> Option<Arc<FieldType>> {
    match kind {
        Kind::Empty => None,
        Kind::U64 => Some(Arc::new(st(vec![field("_value", u(64))]))),
        Kind::Str => Some(Arc::new(st(vec![field("_value", FieldType::String(Encoding::Utf8))]))),
    }
}

/// The trace class with `classes[k]` as event class `k`.
pub(crate) fn trace_class(info: &Info, classes: &[(String, Kind)]) -> TraceClass {
    let clock = |size| FieldType::Int(int(size, false, DisplayBase::Decimal, true));
    let header = st(vec![
        field("magic", FieldType::Int(int(32, false, DisplayBase::Hexadecimal, false))),
        field("uuid", FieldType::Array(ArrayType { element: Box::new(u(8)), length: 16 })),
        field("stream_id", u(32)),
        field("stream_instance_id", u(64)),
    ]);
    let context = st(vec![
        field("timestamp_begin", clock(64)),
        field("timestamp_end", clock(64)),
        field("content_size", u(64)),
        field("packet_size", u(64)),
        field("packet_seq_num", u(64)),
        field("events_discarded", u(64)),
    ]);
    let id_enum = EnumType {
        container: int(5, false, DisplayBase::Decimal, false),
        mappings: vec![EnumMapping { label: "compact".into(), lower: 0, upper: 30 }, EnumMapping { label: "extended".into(), lower: 31, upper: 31 }],
    };
    let event_header = FieldType::Struct(StructType {
        fields: vec![
            field("id", FieldType::Enum(id_enum)),
            field(
                "v",
                FieldType::Variant(VariantType {
                    tag: FieldPath::Relative(vec!["id".into()]),
                    options: vec![
                        field("compact", st(vec![field("timestamp", clock(27))])),
                        field("extended", st(vec![field("id", u(32)), field("timestamp", clock(64))])),
                    ],
                }),
            ),
        ],
        min_align: 8,
    });
    let sint = FieldType::Int(int(32, true, DisplayBase::Decimal, false));
    let event_context = st(vec![field("_vpid", sint.clone()), field("_vtid", sint)]);
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
        packet_header: Some(Arc::new(header)),
        env: vec![
            ("hostname".into(), EnvValue::Str(info.hostname.clone())),
            ("domain".into(), EnvValue::Str("ust".into())),
            ("tracer_name".into(), EnvValue::Str("tracelens-probe".into())),
            ("tracer_major".into(), EnvValue::Int(0)),
            ("tracer_minor".into(), EnvValue::Int(1)),
            ("procname".into(), EnvValue::Str(info.procname.clone())),
            ("vpid".into(), EnvValue::Int(info.pid.into())),
        ],
        clocks: vec![ClockClass {
            name: CLOCK.into(),
            description: Some("Monotonic Clock".into()),
            freq: 1_000_000_000,
            offset_s: info.clock_offset_ns.div_euclid(1_000_000_000),
            offset: info.clock_offset_ns.rem_euclid(1_000_000_000),
            precision: 0,
            // Times since the Unix epoch (the offset makes them so), which babeltrace2 needs
            // to order them with an LTTng kernel trace's (it takes those as absolute).
            absolute: true,
            uuid: info.clock_uuid,
        }],
        streams: vec![StreamClass {
            id: 0,
            packet_context: Some(Arc::new(context)),
            event_header: Some(Arc::new(event_header)),
            event_context: Some(Arc::new(event_context)),
            events,
        }],
        callsites: Vec::new(),
    }
}
