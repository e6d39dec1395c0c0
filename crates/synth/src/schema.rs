//! The LTTng kernel layout the generator writes: packet header and context, the compact event
//! header, and event classes with LTTng's kernel event and field names (as lttng-modules 2.x
//! declares them).

use std::sync::Arc;

use tracelens_ctf::ir::{
    ByteOrder, ClockClass, DisplayBase, Encoding, EnumMapping, EnumType, EnvValue, EventClass,
    FieldPath, FieldType, IntType, NamedField, StreamClass, StructType, TraceClass, VariantType,
};

/// How a payload field is declared and encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `int32_t`.
    I32,
    /// `uint32_t`.
    U32,
    /// `uint16_t`.
    U16,
    /// `int64_t`.
    I64,
    /// `uint64_t`.
    U64,
    /// `uint64_t`, shown in hexadecimal (addresses).
    Hex64,
    /// `char[16]` UTF-8 (a task name).
    Comm,
    /// A NUL-terminated string.
    Str,
}

/// Event classes: (name, fields). Ids are the positions in this table.
pub const EVENTS: &[(&str, &[(&str, Kind)])] = &[
    ("lttng_statedump_start", &[]),
    ("lttng_statedump_end", &[]),
    (
        "lttng_statedump_process_state",
        &[
            ("tid", Kind::I32),
            ("vtid", Kind::I32),
            ("pid", Kind::I32),
            ("vpid", Kind::I32),
            ("ppid", Kind::I32),
            ("vppid", Kind::I32),
            ("name", Kind::Comm),
            ("type", Kind::I32),
            ("mode", Kind::I32),
            ("submode", Kind::I32),
            ("status", Kind::I32),
            ("cpu", Kind::I32),
        ],
    ),
    ("lttng_statedump_file_descriptor", &[("pid", Kind::I32), ("fd", Kind::I32), ("flags", Kind::U32), ("fmode", Kind::U32), ("filename", Kind::Str)]),
    (
        "sched_switch",
        &[
            ("prev_comm", Kind::Comm),
            ("prev_tid", Kind::I32),
            ("prev_prio", Kind::I32),
            ("prev_state", Kind::I64),
            ("next_comm", Kind::Comm),
            ("next_tid", Kind::I32),
            ("next_prio", Kind::I32),
        ],
    ),
    ("sched_waking", &[("comm", Kind::Comm), ("tid", Kind::I32), ("prio", Kind::I32), ("target_cpu", Kind::I32)]),
    ("sched_wakeup", &[("comm", Kind::Comm), ("tid", Kind::I32), ("prio", Kind::I32), ("target_cpu", Kind::I32)]),
    ("sched_migrate_task", &[("comm", Kind::Comm), ("tid", Kind::I32), ("prio", Kind::I32), ("orig_cpu", Kind::I32), ("dest_cpu", Kind::I32)]),
    ("syscall_entry_read", &[("fd", Kind::U32), ("buf", Kind::Hex64), ("count", Kind::U64)]),
    ("syscall_exit_read", &[("ret", Kind::I64), ("buf", Kind::Hex64)]),
    ("syscall_entry_write", &[("fd", Kind::U32), ("buf", Kind::Hex64), ("count", Kind::U64)]),
    ("syscall_exit_write", &[("ret", Kind::I64)]),
    ("syscall_entry_openat", &[("dfd", Kind::I32), ("filename", Kind::Str), ("flags", Kind::I32), ("mode", Kind::U16)]),
    ("syscall_exit_openat", &[("ret", Kind::I64)]),
    ("syscall_entry_close", &[("fd", Kind::U32)]),
    ("syscall_exit_close", &[("ret", Kind::I64)]),
    (
        "syscall_entry_futex",
        &[("uaddr", Kind::Hex64), ("op", Kind::I32), ("val", Kind::U32), ("utime", Kind::Hex64), ("uaddr2", Kind::Hex64), ("val3", Kind::U32)],
    ),
    ("syscall_exit_futex", &[("ret", Kind::I64), ("uaddr", Kind::Hex64), ("uaddr2", Kind::Hex64)]),
    ("syscall_entry_getpid", &[]),
    ("syscall_exit_getpid", &[("ret", Kind::I64)]),
    ("irq_handler_entry", &[("irq", Kind::I32), ("name", Kind::Str)]),
    ("irq_handler_exit", &[("irq", Kind::I32), ("ret", Kind::I32)]),
    ("softirq_raise", &[("vec", Kind::U32)]),
    ("softirq_entry", &[("vec", Kind::U32)]),
    ("softirq_exit", &[("vec", Kind::U32)]),
    ("sched_process_fork", &[("parent_comm", Kind::Comm), ("parent_tid", Kind::I32), ("parent_pid", Kind::I32), ("child_comm", Kind::Comm), ("child_tid", Kind::I32), ("child_pid", Kind::I32)]),
    ("sched_process_exec", &[("filename", Kind::Str), ("tid", Kind::I32), ("old_tid", Kind::I32)]),
    ("sched_process_exit", &[("comm", Kind::Comm), ("tid", Kind::I32), ("prio", Kind::I32)]),
];

/// The id of the event class named `name` (panics on a name not in [`EVENTS`]: a bug here).
pub fn id(name: &str) -> u32 {
    EVENTS.iter().position(|(n, _)| *n == name).unwrap_or_else(|| panic!("unknown synth event {name}")) as u32
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

fn st(fields: Vec<NamedField>, min_align: u32) -> FieldType {
    FieldType::Struct(StructType { fields, min_align })
}

fn payload_type(kind: Kind) -> FieldType {
    match kind {
        Kind::I32 => FieldType::Int(int(32, true, DisplayBase::Decimal, false)),
        Kind::U32 => u(32),
        Kind::U16 => u(16),
        Kind::I64 => FieldType::Int(int(64, true, DisplayBase::Decimal, false)),
        Kind::U64 => u(64),
        Kind::Hex64 => FieldType::Int(int(64, false, DisplayBase::Hexadecimal, false)),
        Kind::Comm => {
            let mut c = int(8, false, DisplayBase::Decimal, false);
            c.encoding = Encoding::Utf8;
            FieldType::Array(tracelens_ctf::ir::ArrayType { element: Box::new(FieldType::Int(c)), length: 16 })
        }
        Kind::Str => FieldType::String(Encoding::Utf8),
    }
}

/// The trace class: LTTng kernel packet header/context and compact event headers.
pub fn trace_class(uuid: [u8; 16], hostname: &str, cpus: u32) -> TraceClass {
    let clock = |size| FieldType::Int(int(size, false, DisplayBase::Decimal, true));
    let header = st(
        vec![
            field("magic", FieldType::Int(int(32, false, DisplayBase::Hexadecimal, false))),
            field("uuid", FieldType::Array(tracelens_ctf::ir::ArrayType { element: Box::new(u(8)), length: 16 })),
            field("stream_id", u(32)),
            field("stream_instance_id", u(64)),
        ],
        8,
    );
    let context = st(
        vec![
            field("timestamp_begin", clock(64)),
            field("timestamp_end", clock(64)),
            field("content_size", u(64)),
            field("packet_size", u(64)),
            field("packet_seq_num", u(64)),
            field("events_discarded", u(64)),
            field("cpu_id", u(32)),
        ],
        8,
    );
    let id_enum = EnumType {
        container: int(5, false, DisplayBase::Decimal, false),
        mappings: vec![
            EnumMapping { label: "compact".into(), lower: 0, upper: 30 },
            EnumMapping { label: "extended".into(), lower: 31, upper: 31 },
        ],
    };
    let event_header = st(
        vec![
            field("id", FieldType::Enum(id_enum)),
            field(
                "v",
                FieldType::Variant(VariantType {
                    tag: FieldPath::Relative(vec!["id".into()]),
                    options: vec![
                        field("compact", st(vec![field("timestamp", clock(27))], 1)),
                        field("extended", st(vec![field("id", u(32)), field("timestamp", clock(64))], 1)),
                    ],
                }),
            ),
        ],
        8,
    );
    let events = EVENTS
        .iter()
        .enumerate()
        .map(|(i, (name, fields))| EventClass {
            id: i as u64,
            name: name.to_string(),
            loglevel: None,
            model_emf_uri: None,
            context: None,
            payload: Some(Arc::new(st(fields.iter().map(|(n, k)| field(&format!("_{n}"), payload_type(*k))).collect(), 1))),
        })
        .collect();
    TraceClass {
        major: 1,
        minor: 8,
        uuid: Some(uuid),
        byte_order: ByteOrder::Little,
        packet_header: Some(Arc::new(header)),
        env: vec![
            ("hostname".into(), EnvValue::Str(hostname.into())),
            ("domain".into(), EnvValue::Str("kernel".into())),
            ("sysname".into(), EnvValue::Str("Linux".into())),
            ("tracer_name".into(), EnvValue::Str("lttng-modules".into())),
            ("tracer_major".into(), EnvValue::Int(2)),
            ("tracer_minor".into(), EnvValue::Int(13)),
            ("trace_producer".into(), EnvValue::Str("tracelens synth".into())),
            ("cpus".into(), EnvValue::Int(cpus as i64)),
        ],
        clocks: vec![ClockClass {
            name: "monotonic".into(),
            description: Some("Monotonic Clock".into()),
            freq: 1_000_000_000,
            offset_s: 1_700_000_000,
            offset: 0,
            precision: 0,
            absolute: false,
            uuid: None,
        }],
        streams: vec![StreamClass {
            id: 0,
            packet_context: Some(Arc::new(context)),
            event_header: Some(Arc::new(event_header)),
            event_context: None,
            events,
        }],
        callsites: Vec::new(),
    }
}
