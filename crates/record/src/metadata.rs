//! The CTF trace class of a recording: LTTng's kernel layout (packet header and context,
//! compact event header, `monotonic` clock) with the event common context
//! `{tid, pid, procname}` that `lttng add-context -k -t tid -t pid -t procname` gives.

use std::sync::Arc;

use tracelens_ctf::ir::{
    ArrayType, ByteOrder, ClockClass, DisplayBase, Encoding, EnumMapping, EnumType, EnvValue, EventClass, FieldPath, FieldType, IntType, NamedField,
    SequenceType, StreamClass, StructType, TraceClass, VariantType,
};

use crate::lttng::{ClassDef, Ty};

/// Facts about the recording machine and clock written into the metadata.
#[derive(Clone, Debug, Default)]
pub struct TraceInfo {
    /// The trace UUID.
    pub uuid: [u8; 16],
    /// `uname -n`.
    pub hostname: String,
    /// `uname -r`.
    pub kernel_release: String,
    /// `uname -v`.
    pub kernel_version: String,
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC at the start, in nanoseconds: the clock offset,
    /// so that times print as wall-clock times.
    pub clock_offset_ns: i64,
    /// Number of CPU streams.
    pub cpus: u32,
}

fn int(size: u32, signed: bool, base: DisplayBase, clock: bool) -> IntType {
    IntType {
        size,
        align: if size.is_multiple_of(8) { 8 } else { 1 },
        signed,
        byte_order: ByteOrder::Little,
        base,
        encoding: Encoding::None,
        mapped_clock: clock.then(|| "monotonic".to_string()),
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

fn text(len: u64) -> FieldType {
    let mut c = int(8, false, DisplayBase::Decimal, false);
    c.encoding = Encoding::Utf8;
    FieldType::Array(ArrayType { element: Box::new(FieldType::Int(c)), length: len })
}

/// The CTF type of an output field type. `prev` is the name of the field before (a
/// sequence's length).
fn ctf_type(ty: Ty, prev: &str) -> FieldType {
    match ty {
        Ty::Int { bits, signed, base } => {
            let base = match base {
                8 => DisplayBase::Octal,
                16 => DisplayBase::Hexadecimal,
                2 => DisplayBase::Binary,
                _ => DisplayBase::Decimal,
            };
            FieldType::Int(int(bits as u32, signed, base, false))
        }
        Ty::Comm => text(16),
        Ty::Text(n) => text(n as u64),
        Ty::Str => FieldType::String(Encoding::Utf8),
        Ty::SeqLen8 => u(8),
        Ty::SeqI32 => FieldType::Sequence(SequenceType {
            element: Box::new(FieldType::Int(int(32, true, DisplayBase::Decimal, false))),
            length: FieldPath::Relative(vec![prev.to_string()]),
        }),
    }
}

/// The payload type of a class: LTTng's `_`-prefixed field names.
pub fn payload_type(c: &ClassDef) -> FieldType {
    let mut fields = Vec::with_capacity(c.fields.len());
    let mut prev = String::new();
    for (name, ty) in &c.fields {
        let raw = format!("_{name}");
        fields.push(field(&raw, ctf_type(*ty, &prev)));
        prev = raw;
    }
    st(fields)
}

/// The trace class: `classes[k]` gets event id `ids[k]`.
pub fn trace_class(info: &TraceInfo, classes: &[ClassDef], ids: &[u64]) -> TraceClass {
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
        field("cpu_id", u(32)),
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
    let event_context = st(vec![
        field("_tid", FieldType::Int(int(32, true, DisplayBase::Decimal, false))),
        field("_pid", FieldType::Int(int(32, true, DisplayBase::Decimal, false))),
        field("_procname", text(16)),
    ]);
    let mut events: Vec<EventClass> = classes
        .iter()
        .zip(ids)
        .map(|(c, &id)| EventClass { id, name: c.name.clone(), loglevel: None, model_emf_uri: None, context: None, payload: Some(Arc::new(payload_type(c))) })
        .collect();
    events.sort_by_key(|e| e.id);
    let offset_s = info.clock_offset_ns.div_euclid(1_000_000_000);
    let offset = info.clock_offset_ns.rem_euclid(1_000_000_000);
    TraceClass {
        major: 1,
        minor: 8,
        uuid: Some(info.uuid),
        byte_order: ByteOrder::Little,
        packet_header: Some(Arc::new(header)),
        env: vec![
            ("hostname".into(), EnvValue::Str(info.hostname.clone())),
            ("domain".into(), EnvValue::Str("kernel".into())),
            ("sysname".into(), EnvValue::Str("Linux".into())),
            ("kernel_release".into(), EnvValue::Str(info.kernel_release.clone())),
            ("kernel_version".into(), EnvValue::Str(info.kernel_version.clone())),
            ("tracer_name".into(), EnvValue::Str("lttng-modules".into())),
            ("tracer_major".into(), EnvValue::Int(2)),
            ("tracer_minor".into(), EnvValue::Int(13)),
            ("tracer_patchlevel".into(), EnvValue::Int(0)),
            ("trace_producer".into(), EnvValue::Str("tracelens record".into())),
            ("trace_buffering_scheme".into(), EnvValue::Str("global".into())),
        ],
        clocks: vec![ClockClass {
            name: "monotonic".into(),
            description: Some("Monotonic Clock".into()),
            freq: 1_000_000_000,
            offset_s,
            offset,
            precision: 0,
            absolute: false,
            uuid: None,
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
