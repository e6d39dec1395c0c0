//! LTTng's kernel trace layout, declared once for every writer of it (`tracelens record`, its
//! stack trace, `tracelens synth`): what lttng-modules 2.x writes, so that the analyses read
//! our traces and LTTng's with one code path.
//!
//! * the trace: little-endian, the packet header `{magic, uuid, stream_id,
//!   stream_instance_id}` ([`packet_header`]), the `monotonic` clock ([`monotonic_clock`]), the
//!   environment of a kernel trace ([`kernel_env`]);
//! * the stream class (id 0): the packet context `{timestamp_begin, timestamp_end,
//!   content_size, packet_size, packet_seq_num, events_discarded, cpu_id}`
//!   ([`packet_context`]), the compact event header — a 5-bit id, then a 27-bit timestamp, or
//!   31 and an extended 32-bit id and 64-bit timestamp ([`event_header`]) — and, when the
//!   recording asked for it, the event common context `{tid, pid, procname}` that
//!   `lttng add-context -k -t tid -t pid -t procname` gives ([`common_context`]);
//! * the event classes: their field types ([`Ty`]: the handful of C types lttng-modules
//!   declares), the kernel events with LTTng's names and fields ([`events`]), the typing of
//!   system-call arguments ([`syscalls`]), and tracelens's own stack events, written in this
//!   layout beside a recording ([`stacks`]).
//!
//! [`KernelTrace::class`] puts these together into a [`TraceClass`] for
//! [`crate::write::TraceWriter`]. The helpers that build field types ([`uint`], [`text`],
//! [`structure`]...) lay integers out as LTTng does: little-endian, byte-aligned when their
//! size is a whole number of bytes. The user-space probes (`tracelens-probe`) write
//! LTTng-UST's layout, which shares the packet header, the packet context members
//! ([`packet_context_members`]: no CPU), the event header and the clock, from these same
//! pieces.

use std::sync::Arc;

use crate::ir::{
    ArrayType, ByteOrder, ClockClass, DisplayBase, Encoding, EnumMapping, EnumType, EnvValue, EventClass, FieldPath, FieldType, IntType, NamedField,
    SequenceType, StreamClass, StructType, TraceClass, VariantType,
};
use crate::write::OwnedValue;

pub mod events;
pub mod stacks;
pub mod syscalls;

/// The name of the clock every stream of the layout is timed by.
pub const CLOCK: &str = "monotonic";

/// An integer as LTTng lays it out: little-endian, aligned on a byte when its size is a whole
/// number of bytes (else on a bit), mapped to the [`CLOCK`] when `clock`.
pub fn int_type(size: u32, signed: bool, base: DisplayBase, clock: bool) -> IntType {
    IntType { base, mapped_clock: clock.then(|| CLOCK.to_string()), ..IntType::new(size, signed, ByteOrder::Little) }
}

/// An unsigned decimal integer of `size` bits.
pub fn uint(size: u32) -> FieldType {
    FieldType::Int(int_type(size, false, DisplayBase::Decimal, false))
}

/// A signed decimal integer of `size` bits.
pub fn sint(size: u32) -> FieldType {
    FieldType::Int(int_type(size, true, DisplayBase::Decimal, false))
}

/// An unsigned integer of `size` bits shown in hexadecimal.
pub fn hex(size: u32) -> FieldType {
    FieldType::Int(int_type(size, false, DisplayBase::Hexadecimal, false))
}

/// An unsigned integer of `size` bits holding [`CLOCK`] cycles.
pub fn clock_int(size: u32) -> FieldType {
    FieldType::Int(int_type(size, false, DisplayBase::Decimal, true))
}

/// The 8-bit UTF-8 character type of text arrays and sequences.
pub fn char_type() -> FieldType {
    let mut c = int_type(8, false, DisplayBase::Decimal, false);
    c.encoding = Encoding::Utf8;
    FieldType::Int(c)
}

/// `char[len]`, UTF-8 text padded with NUL bytes.
pub fn text(len: u64) -> FieldType {
    FieldType::Array(ArrayType { element: Box::new(char_type()), length: len })
}

/// A NUL-terminated UTF-8 string.
pub fn string() -> FieldType {
    FieldType::String(Encoding::Utf8)
}

/// A sequence of `element`s whose length is the field `length` declared before it.
pub fn sequence(element: FieldType, length: &str) -> FieldType {
    FieldType::Sequence(SequenceType { element: Box::new(element), length: FieldPath::Relative(vec![length.to_string()]) })
}

/// An unsigned enumeration of `size` bits with one label per value range.
pub fn enumeration(size: u32, labels: &[(&str, i128, i128)]) -> FieldType {
    let mappings = labels.iter().map(|&(label, lower, upper)| EnumMapping { label: label.to_string(), lower, upper }).collect();
    FieldType::Enum(EnumType { container: int_type(size, false, DisplayBase::Decimal, false), mappings })
}

/// A named member.
pub fn field(name: &str, ty: FieldType) -> NamedField {
    NamedField { name: name.to_string(), ty }
}

/// A structure of `fields`.
pub fn structure(fields: Vec<NamedField>) -> FieldType {
    FieldType::Struct(StructType { fields, min_align: 1 })
}

/// The packet header: `{magic, uuid, stream_id, stream_instance_id}` (the writer fills every
/// member in).
pub fn packet_header() -> FieldType {
    structure(vec![
        field("magic", hex(32)),
        field("uuid", FieldType::Array(ArrayType { element: Box::new(uint(8)), length: 16 })),
        field("stream_id", uint(32)),
        field("stream_instance_id", uint(64)),
    ])
}

/// The packet context members of every LTTng stream, all filled in by the writer:
/// `{timestamp_begin, timestamp_end, content_size, packet_size, packet_seq_num,
/// events_discarded}`.
pub fn packet_context_members() -> Vec<NamedField> {
    vec![
        field("timestamp_begin", clock_int(64)),
        field("timestamp_end", clock_int(64)),
        field("content_size", uint(64)),
        field("packet_size", uint(64)),
        field("packet_seq_num", uint(64)),
        field("events_discarded", uint(64)),
    ]
}

/// The kernel packet context: [`packet_context_members`], then `cpu_id`, the CPU of the
/// stream (the one member the writer does not fill in).
pub fn packet_context() -> FieldType {
    let mut members = packet_context_members();
    members.push(field(CPU_ID, uint(32)));
    structure(members)
}

/// The name of the packet context member that holds the stream's CPU.
pub const CPU_ID: &str = "cpu_id";

/// The compact event header: a 5-bit `id` (0 to 30) and a 27-bit `timestamp` in one 32-bit
/// word, or `id` 31 and an extended `{id: 32 bits, timestamp: 64 bits}` (the writer picks the
/// smaller that holds the event's class id and time).
pub fn event_header() -> FieldType {
    FieldType::Struct(StructType {
        fields: vec![
            field("id", enumeration(5, &[("compact", 0, 30), ("extended", 31, 31)])),
            field(
                "v",
                FieldType::Variant(VariantType {
                    tag: FieldPath::Relative(vec!["id".into()]),
                    options: vec![
                        field("compact", structure(vec![field("timestamp", clock_int(27))])),
                        field("extended", structure(vec![field("id", uint(32)), field("timestamp", clock_int(64))])),
                    ],
                    ranges: None,
                }),
            ),
        ],
        min_align: 8,
    })
}

/// The event common context `{tid, pid, procname}` (LTTng's `_`-prefixed names).
pub fn common_context() -> FieldType {
    structure(vec![field("_tid", sint(32)), field("_pid", sint(32)), field("_procname", text(16))])
}

/// The value of [`common_context`] for thread `tid` of process `pid` named `comm` (cut to 15
/// bytes, NUL-padded).
pub fn common_context_value(tid: i32, pid: i32, comm: &[u8]) -> OwnedValue {
    let mut v = OwnedValue::Struct(Vec::new());
    set_common_context(&mut v, tid, pid, comm);
    v
}

/// Sets `ctx` (a [`common_context`] value, reusing its buffers) for thread `tid` of process
/// `pid` named `comm` (cut to 15 bytes, NUL-padded).
pub fn set_common_context(ctx: &mut OwnedValue, tid: i32, pid: i32, comm: &[u8]) {
    let n = comm.iter().position(|&c| c == 0).unwrap_or(comm.len()).min(15);
    if let OwnedValue::Struct(v) = ctx {
        if let [OwnedValue::I(t), OwnedValue::I(p), OwnedValue::Bytes(name)] = &mut v[..] {
            *t = tid.into();
            *p = pid.into();
            name.clear();
            name.extend_from_slice(&comm[..n]);
            name.resize(16, 0);
            return;
        }
    }
    let mut name = comm[..n].to_vec();
    name.resize(16, 0);
    *ctx = OwnedValue::Struct(vec![OwnedValue::I(tid.into()), OwnedValue::I(pid.into()), OwnedValue::Bytes(name)]);
}

/// The `monotonic` clock (1 GHz) with its origin `offset_ns` nanoseconds from the clock's zero
/// (CLOCK_REALTIME minus CLOCK_MONOTONIC, so that times print as wall-clock times).
pub fn monotonic_clock(offset_ns: i64) -> ClockClass {
    ClockClass {
        name: CLOCK.into(),
        description: Some("Monotonic Clock".into()),
        freq: 1_000_000_000,
        offset_s: offset_ns.div_euclid(1_000_000_000),
        offset: offset_ns.rem_euclid(1_000_000_000),
        precision: 0,
        absolute: false,
        uuid: None,
    }
}

/// The environment of an LTTng kernel trace: the machine's `hostname`, its kernel's release
/// and version (`uname -r`, `uname -v`) when known, and the program that wrote the trace.
pub fn kernel_env(hostname: &str, kernel: Option<(&str, &str)>, producer: &str) -> Vec<(String, EnvValue)> {
    let s = |k: &str, v: &str| (k.to_string(), EnvValue::Str(v.to_string()));
    let mut env = vec![s("hostname", hostname), s("domain", "kernel"), s("sysname", "Linux")];
    if let Some((release, version)) = kernel {
        env.push(s("kernel_release", release));
        env.push(s("kernel_version", version));
    }
    env.extend([
        s("tracer_name", "lttng-modules"),
        ("tracer_major".to_string(), EnvValue::Int(2)),
        ("tracer_minor".to_string(), EnvValue::Int(13)),
        ("tracer_patchlevel".to_string(), EnvValue::Int(0)),
        s("trace_producer", producer),
        s("trace_buffering_scheme", "global"),
    ]);
    env
}

/// Sets the `env` entry `key` of `env` to `value` (replacing it where it is, else appended).
pub fn set_env(env: &mut Vec<(String, EnvValue)>, key: &str, value: EnvValue) {
    match env.iter_mut().find(|(k, _)| k == key) {
        Some((_, v)) => *v = value,
        None => env.push((key.to_string(), value)),
    }
}

/// What varies between the kernel traces written in this layout.
#[derive(Clone, Debug)]
pub struct KernelTrace {
    /// The trace UUID (every packet header carries it).
    pub uuid: [u8; 16],
    /// The `env` entries (see [`kernel_env`]).
    pub env: Vec<(String, EnvValue)>,
    /// The clock's offset (see [`monotonic_clock`]).
    pub clock_offset_ns: i64,
    /// Events carry the [`common_context`].
    pub common_context: bool,
    /// The event classes (in any order; ids unique).
    pub events: Vec<EventClass>,
}

impl KernelTrace {
    /// The trace class: one stream class (id 0) of this layout.
    pub fn class(self) -> TraceClass {
        let mut events = self.events;
        events.sort_by_key(|e| e.id);
        TraceClass {
            major: 1,
            minor: 8,
            uuid: Some(self.uuid),
            byte_order: ByteOrder::Little,
            packet_header: Some(Arc::new(packet_header())),
            env: self.env,
            clocks: vec![monotonic_clock(self.clock_offset_ns)],
            streams: vec![StreamClass {
                id: 0,
                packet_context: Some(Arc::new(packet_context())),
                event_header: Some(Arc::new(event_header())),
                event_context: self.common_context.then(|| Arc::new(common_context())),
                events,
            }],
            callsites: Vec::new(),
        }
    }
}

/// The type of an event field, as lttng-modules declares them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// An integer.
    Int {
        /// Size in bits (8, 16, 32, 64).
        bits: u8,
        /// Signed.
        signed: bool,
        /// Display base (2, 8, 10, 16).
        base: u8,
    },
    /// `char[16]` UTF-8 (a task name).
    Comm,
    /// `char[N]` UTF-8 text of another length.
    Text(u16),
    /// A NUL-terminated string.
    Str,
    /// The 8-bit length of the sequence that follows.
    SeqLen8,
    /// A sequence of signed 32-bit integers whose length is the field before.
    SeqI32,
}

/// `int32_t`.
pub const I32: Ty = Ty::Int { bits: 32, signed: true, base: 10 };
/// `uint32_t`.
pub const U32: Ty = Ty::Int { bits: 32, signed: false, base: 10 };
/// `uint16_t`.
pub const U16: Ty = Ty::Int { bits: 16, signed: false, base: 10 };
/// `int64_t`.
pub const I64: Ty = Ty::Int { bits: 64, signed: true, base: 10 };
/// `uint64_t`.
pub const U64: Ty = Ty::Int { bits: 64, signed: false, base: 10 };
/// `uint64_t` shown in hexadecimal (addresses).
pub const HEX64: Ty = Ty::Int { bits: 64, signed: false, base: 16 };
/// `uint32_t` shown in hexadecimal.
pub const HEX32: Ty = Ty::Int { bits: 32, signed: false, base: 16 };
/// `uint32_t` shown in octal (open flags).
pub const OCT32: Ty = Ty::Int { bits: 32, signed: false, base: 8 };

impl Ty {
    /// The CTF type. `prev` is the name of the field before (a sequence's length).
    pub fn field_type(self, prev: &str) -> FieldType {
        match self {
            Ty::Int { bits, signed, base } => {
                let base = match base {
                    8 => DisplayBase::Octal,
                    16 => DisplayBase::Hexadecimal,
                    2 => DisplayBase::Binary,
                    _ => DisplayBase::Decimal,
                };
                FieldType::Int(int_type(bits as u32, signed, base, false))
            }
            Ty::Comm => text(16),
            Ty::Text(n) => text(n as u64),
            Ty::Str => string(),
            Ty::SeqLen8 => uint(8),
            Ty::SeqI32 => sequence(sint(32), prev),
        }
    }

    /// Whether values of this type are text.
    #[inline]
    pub fn is_text(self) -> bool {
        matches!(self, Ty::Comm | Ty::Text(_) | Ty::Str)
    }

    /// The value of an integer field of this type holding `v` (cut to its size).
    #[inline]
    pub fn int_value(self, v: i64) -> OwnedValue {
        match self {
            Ty::Int { bits, signed: true, .. } if bits < 64 => {
                let s = 64 - bits as u32;
                OwnedValue::I((v << s) >> s)
            }
            Ty::Int { signed: true, .. } => OwnedValue::I(v),
            Ty::Int { bits, .. } if bits < 64 => OwnedValue::U(v as u64 & ((1u64 << bits) - 1)),
            _ => OwnedValue::U(v as u64),
        }
    }

    /// Sets `slot` to the text `b` (up to its first NUL) for a text field of this type
    /// (fixed-size arrays are cut or padded with NUL bytes), reusing its buffer.
    #[inline]
    pub fn set_text(self, slot: &mut OwnedValue, b: &[u8]) {
        if !matches!(slot, OwnedValue::Bytes(_)) {
            *slot = OwnedValue::Bytes(Vec::new());
        }
        if let OwnedValue::Bytes(v) = slot {
            v.clear();
            v.extend_from_slice(&b[..b.iter().position(|&x| x == 0).unwrap_or(b.len())]);
            let fixed = match self {
                Ty::Comm => Some(16),
                Ty::Text(n) => Some(n as usize),
                _ => None,
            };
            if let Some(n) = fixed {
                v.truncate(n);
                v.resize(n, 0);
            }
        }
    }

    /// Sets `slot` to a sequence of the given integers, reusing its buffer.
    #[inline]
    pub fn set_seq(slot: &mut OwnedValue, items: &[i64]) {
        if !matches!(slot, OwnedValue::Array(_)) {
            *slot = OwnedValue::Array(Vec::new());
        }
        if let OwnedValue::Array(v) = slot {
            v.clear();
            v.extend(items.iter().map(|&i| OwnedValue::I(i)));
        }
    }

    /// A zero or empty value of this type.
    pub fn blank(self) -> OwnedValue {
        match self {
            Ty::SeqI32 => OwnedValue::Array(Vec::new()),
            t if t.is_text() => {
                let mut v = OwnedValue::Bytes(Vec::new());
                t.set_text(&mut v, b"");
                v
            }
            t => t.int_value(0),
        }
    }
}

/// An event class: its name and its fields (names without LTTng's `_` prefix, which
/// [`ClassDef::payload_type`] adds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassDef {
    /// Event name.
    pub name: String,
    /// Fields: name (without the `_` prefix) and type.
    pub fields: Vec<(String, Ty)>,
}

impl ClassDef {
    /// The payload type: LTTng's `_`-prefixed field names.
    pub fn payload_type(&self) -> FieldType {
        payload_type(self.fields.iter().map(|(n, t)| (n.as_str(), *t)))
    }

    /// The event class with id `id`.
    pub fn class(&self, id: u64) -> EventClass {
        EventClass { id, name: self.name.clone(), loglevel: None, model_emf_uri: None, context: None, payload: Some(Arc::new(self.payload_type())) }
    }

    /// A payload value of blank fields (see [`Ty::blank`]), to be updated in place.
    pub fn blank_payload(&self) -> OwnedValue {
        OwnedValue::Struct(self.fields.iter().map(|(_, t)| t.blank()).collect())
    }
}

/// An event class known in advance (see [`events`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventDef {
    /// Event name.
    pub name: &'static str,
    /// Fields: name (without the `_` prefix) and type.
    pub fields: &'static [(&'static str, Ty)],
}

impl EventDef {
    /// The same class under another name (older lttng-modules named some events differently).
    pub const fn renamed(self, name: &'static str) -> EventDef {
        EventDef { name, fields: self.fields }
    }
}

impl From<&EventDef> for ClassDef {
    fn from(d: &EventDef) -> ClassDef {
        ClassDef { name: d.name.to_string(), fields: d.fields.iter().map(|(n, t)| (n.to_string(), *t)).collect() }
    }
}

/// A payload type of `fields` (name without the `_` prefix, type), in order.
pub fn payload_type<'a>(fields: impl IntoIterator<Item = (&'a str, Ty)>) -> FieldType {
    let mut out = Vec::new();
    let mut prev = String::new();
    for (name, ty) in fields {
        let raw = format!("_{name}");
        out.push(field(&raw, ty.field_type(&prev)));
        prev = raw;
    }
    structure(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout survives the TSDL the writer emits and is LTTng's: the decoder recognizes
    /// its event header as LTTng's compact header with the extended option.
    #[test]
    fn layout_is_lttngs() {
        let events = events::KERNEL.iter().enumerate().map(|(i, d)| ClassDef::from(d).class(i as u64)).collect();
        let class = KernelTrace { uuid: [3; 16], env: kernel_env("h", Some(("6.1", "#1")), "test"), clock_offset_ns: -5, common_context: true, events }.class();
        let parsed = crate::parse_tsdl(&crate::write::to_tsdl(&class)).expect("parses back");
        assert_eq!(parsed, class);
        assert_eq!((parsed.clocks[0].offset_s, parsed.clocks[0].offset), (-1, 999_999_995));
        let plan = crate::plan::StreamPlan::compile(&parsed, &parsed.streams[0]);
        let h = plan.header.as_ref().and_then(|h| h.compact).expect("LTTng compact header");
        assert!(!h.large && h.extended.is_some());
    }

    #[test]
    fn values_are_cut_to_their_types() {
        assert_eq!(I32.int_value(-1), OwnedValue::I(-1));
        assert_eq!(I32.int_value(1 << 32 | 5), OwnedValue::I(5));
        assert_eq!(U16.int_value(-1), OwnedValue::U(0xffff));
        let mut v = OwnedValue::U(0);
        Ty::Comm.set_text(&mut v, b"a-very-long-task-name\0junk");
        assert_eq!(v, OwnedValue::Bytes(b"a-very-long-task".to_vec()));
        assert_eq!(common_context_value(1, 2, b"0123456789abcdefgh"), OwnedValue::Struct(vec![OwnedValue::I(1), OwnedValue::I(2), OwnedValue::Bytes(b"0123456789abcde\0".to_vec())]));
    }
}
