//! The metadata intermediate representation: what a trace's metadata says, independent of the
//! syntax it was written in (CTF 1.8 TSDL or CTF 2 JSON fragments).
//!
//! CTF 2's field classes map onto it as follows: fixed-length bit arrays and integers are
//! [`IntType`]s (with [`IntType::varlen`] for LEB128 integers and [`IntType::reversed`] for the
//! bit order opposite to the byte order's), integers with `mappings` are [`EnumType`]s,
//! booleans are [`FieldType::Bool`], bit maps [`FieldType::BitMap`], null-terminated strings
//! [`FieldType::String`], static- and dynamic-length strings arrays and sequences of 8-bit
//! encoded integers (as TSDL writes text arrays), BLOBs [`FieldType::Blob`], optionals
//! [`FieldType::Optional`], variants with integer selectors [`VariantType`]s with
//! [`VariantType::ranges`]. Roles are [`IntType::role`] / [`BlobType::role`]; CTF 1.8 leaves
//! them out, its field names giving them instead.
//!
//! Every size and alignment here is in **bits**. Field references (a sequence's length, a
//! variant's tag) are kept as the [`FieldPath`] the metadata wrote; the decoder resolves them
//! when it compiles a plan for an event class (`plan.rs`).

use std::sync::Arc;

/// Byte order of a field or of the whole trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ByteOrder {
    /// Least significant byte first.
    Little,
    /// Most significant byte first (network order).
    Big,
}

impl ByteOrder {
    /// The byte order of the machine running this code.
    pub fn native() -> ByteOrder {
        if cfg!(target_endian = "little") {
            ByteOrder::Little
        } else {
            ByteOrder::Big
        }
    }
}

/// Text encoding of a string or of an integer used as a character.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// Not text.
    None,
    /// UTF-8 text.
    Utf8,
    /// ASCII text.
    Ascii,
    /// UTF-16, big-endian code units (CTF 2 strings).
    Utf16Be,
    /// UTF-16, little-endian code units (CTF 2 strings).
    Utf16Le,
    /// UTF-32, big-endian code units (CTF 2 strings).
    Utf32Be,
    /// UTF-32, little-endian code units (CTF 2 strings).
    Utf32Le,
}

impl Encoding {
    /// Bytes per code unit (the size of a null-terminated string's terminator).
    pub fn unit(self) -> usize {
        match self {
            Encoding::Utf16Be | Encoding::Utf16Le => 2,
            Encoding::Utf32Be | Encoding::Utf32Le => 4,
            _ => 1,
        }
    }
}

/// What a field means to readers and writers: CTF 1.8's well-known field names, CTF 2's
/// explicit `roles`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// Nothing special.
    None,
    /// `trace.packet.header.magic` (`packet-magic-number`).
    Magic,
    /// `trace.packet.header.uuid`, an array of 16 bytes (`metadata-stream-uuid`).
    Uuid,
    /// `trace.packet.header.stream_id` (`data-stream-class-id`).
    StreamId,
    /// `trace.packet.header.stream_instance_id` (`data-stream-id`).
    StreamInstanceId,
    /// `stream.packet.context.timestamp_begin` (`default-clock-timestamp` in a packet context).
    PacketBegin,
    /// `stream.packet.context.timestamp_end` (`packet-end-default-clock-timestamp`).
    PacketEnd,
    /// `stream.packet.context.content_size` (`packet-content-length`).
    ContentSize,
    /// `stream.packet.context.packet_size` (`packet-total-length`).
    PacketSize,
    /// `stream.packet.context.events_discarded` (`discarded-event-record-counter-snapshot`).
    EventsDiscarded,
    /// `stream.packet.context.packet_seq_num` (`packet-sequence-number`).
    PacketSeqNum,
    /// `stream.event.header.id` (at any depth; the last one decoded wins;
    /// `event-record-class-id`).
    EventId,
    /// `stream.event.header.timestamp` (at any depth; `default-clock-timestamp` in an event
    /// header).
    Timestamp,
}

/// Preferred display base of an integer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DisplayBase {
    /// Base 2.
    Binary,
    /// Base 8.
    Octal,
    /// Base 10.
    Decimal,
    /// Base 16.
    Hexadecimal,
}

/// A fixed-size integer field.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IntType {
    /// Size in bits (1 or more; more than 64 is allowed and read as raw bytes).
    pub size: u32,
    /// Alignment in bits (a power of two).
    pub align: u32,
    /// Two's complement signed.
    pub signed: bool,
    /// Byte order.
    pub byte_order: ByteOrder,
    /// Preferred display base.
    pub base: DisplayBase,
    /// Character encoding (an 8-bit encoded integer array prints as a string).
    pub encoding: Encoding,
    /// Name of the clock class this integer's value is a cycle count of (`map = clock.NAME.value`).
    pub mapped_clock: Option<String>,
    /// Its role, given explicitly (CTF 2); `None` for CTF 1.8, whose field names give roles.
    pub role: Option<Role>,
    /// A variable-length (LEB128) integer (CTF 2): `size` is then 64 (its value range) and
    /// `align` 8.
    pub varlen: bool,
    /// Bits in the order opposite to the byte order's usual one (CTF 2 `bit-order`): the
    /// value is the `size` bits read, reversed.
    pub reversed: bool,
}

impl IntType {
    /// A fixed-length integer of `size` bits, byte-aligned when `size` is a multiple of 8
    /// (else bit-aligned), decimal, not text, unmapped, with no explicit role.
    pub fn new(size: u32, signed: bool, byte_order: ByteOrder) -> IntType {
        IntType {
            size,
            align: if size.is_multiple_of(8) { 8 } else { 1 },
            signed,
            byte_order,
            base: DisplayBase::Decimal,
            encoding: Encoding::None,
            mapped_clock: None,
            role: None,
            varlen: false,
            reversed: false,
        }
    }
}

/// A floating point field (IEEE 754 binary32 / binary64).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FloatType {
    /// Exponent bits.
    pub exp_dig: u32,
    /// Mantissa bits, including the implicit leading bit (24 for binary32, 53 for binary64).
    pub mant_dig: u32,
    /// Alignment in bits.
    pub align: u32,
    /// Byte order.
    pub byte_order: ByteOrder,
}

impl FloatType {
    /// Total size in bits.
    pub fn size(&self) -> u32 {
        self.exp_dig + self.mant_dig
    }
}

/// One label of an enumeration and the inclusive value range it covers.
///
/// Values are stored as `i128` so both signed and unsigned 64-bit containers fit.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EnumMapping {
    /// The label.
    pub label: String,
    /// Lowest value (inclusive).
    pub lower: i128,
    /// Highest value (inclusive).
    pub upper: i128,
}

/// An enumeration: an integer container plus labelled ranges (ranges may overlap).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EnumType {
    /// The container integer.
    pub container: IntType,
    /// Labelled ranges, in declaration order.
    pub mappings: Vec<EnumMapping>,
}

impl EnumType {
    /// Labels whose range contains `value`, in declaration order.
    pub fn labels_for(&self, value: i128) -> impl Iterator<Item = &str> {
        self.mappings
            .iter()
            .filter(move |m| m.lower <= value && value <= m.upper)
            .map(|m| m.label.as_str())
    }
}

/// A named member of a structure or an option of a variant.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NamedField {
    /// Name as written in the metadata, without the leading-underscore stripping that
    /// pretty printers apply (see [`display_name`]).
    pub name: String,
    /// Its type.
    pub ty: FieldType,
}

/// A structure.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StructType {
    /// Members in order.
    pub fields: Vec<NamedField>,
    /// Minimum alignment in bits requested with `align(N)` (1 if none). The effective alignment
    /// is the maximum of this and the members' alignments.
    pub min_align: u32,
}

/// The root a field reference is written against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// `trace.packet.header`
    PacketHeader,
    /// `stream.packet.context`
    PacketContext,
    /// `stream.event.header`
    EventHeader,
    /// `stream.event.context`
    EventCommonContext,
    /// `event.context`
    EventSpecificContext,
    /// `event.fields`
    EventPayload,
}

impl Scope {
    /// All scopes in decoding order.
    pub const ALL: [Scope; 6] = [
        Scope::PacketHeader,
        Scope::PacketContext,
        Scope::EventHeader,
        Scope::EventCommonContext,
        Scope::EventSpecificContext,
        Scope::EventPayload,
    ];

    /// The TSDL prefix of an absolute reference into this scope.
    pub fn tsdl_prefix(self) -> &'static str {
        match self {
            Scope::PacketHeader => "trace.packet.header",
            Scope::PacketContext => "stream.packet.context",
            Scope::EventHeader => "stream.event.header",
            Scope::EventCommonContext => "stream.event.context",
            Scope::EventSpecificContext => "event.context",
            Scope::EventPayload => "event.fields",
        }
    }
}

/// A reference to another field (a sequence length or a variant tag), as written.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FieldPath {
    /// Absolute: the scope, then member names from that scope's root structure.
    Absolute(Scope, Vec<String>),
    /// Relative: member names looked up from the referencing field outwards (current struct,
    /// then enclosing structs, then earlier scopes).
    Relative(Vec<String>),
    /// CTF 2 relative location: from the structure holding the referencing field, `None`
    /// goes to the enclosing structure, a name to a member (declared before).
    Local(Vec<Option<String>>),
}

impl std::fmt::Display for FieldPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FieldPath::Absolute(scope, names) => {
                write!(f, "{}", scope.tsdl_prefix())?;
                for n in names {
                    write!(f, ".{n}")?;
                }
                Ok(())
            }
            FieldPath::Relative(names) => write!(f, "{}", names.join(".")),
            FieldPath::Local(names) => {
                for (i, n) in names.iter().enumerate() {
                    if i > 0 {
                        f.write_str("/")?;
                    }
                    f.write_str(n.as_deref().unwrap_or(".."))?;
                }
                Ok(())
            }
        }
    }
}

/// A variant: one of several options chosen by the value of an enumeration tag.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct VariantType {
    /// Where the tag is.
    pub tag: FieldPath,
    /// Options; an option is selected when the tag's label equals its name (or its name with
    /// one leading underscore removed).
    pub options: Vec<NamedField>,
    /// CTF 2: each option's selector ranges (parallel to `options`): the option is selected
    /// when the tag's value is in one of them, whatever its labels. `None` for CTF 1.8.
    pub ranges: Option<Vec<Vec<(i128, i128)>>>,
}

/// A BLOB (CTF 2): bytes that are not text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BlobType {
    /// Its length in bytes: fixed, or another field.
    pub length: BlobLength,
    /// IANA media type (`application/octet-stream` by default).
    pub media_type: String,
    /// Its role (`metadata-stream-uuid` for a 16-byte packet header UUID).
    pub role: Option<Role>,
}

/// The length of a [`BlobType`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum BlobLength {
    /// This many bytes.
    Static(u64),
    /// As many bytes as the integer field at this path says.
    Dynamic(FieldPath),
}

/// An optional field (CTF 2): present when its selector (a boolean, or an integer in one of
/// `ranges`) says so.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OptionalType {
    /// The field when present.
    pub ty: Box<FieldType>,
    /// Where the selector is.
    pub selector: FieldPath,
    /// Integer selector: the values that make the field present; `None`: a boolean selector.
    pub ranges: Option<Vec<(i128, i128)>>,
}

/// A fixed-length array.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArrayType {
    /// Element type.
    pub element: Box<FieldType>,
    /// Number of elements.
    pub length: u64,
}

/// A variable-length array whose length is another field.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SequenceType {
    /// Element type.
    pub element: Box<FieldType>,
    /// Where the length is.
    pub length: FieldPath,
}

/// Any field type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FieldType {
    /// Integer.
    Int(IntType),
    /// Floating point.
    Float(FloatType),
    /// Enumeration.
    Enum(EnumType),
    /// Null-terminated string.
    String(Encoding),
    /// Structure.
    Struct(StructType),
    /// Variant.
    Variant(VariantType),
    /// Fixed-length array.
    Array(ArrayType),
    /// Variable-length array.
    Sequence(SequenceType),
    /// Boolean (CTF 2 fixed-length boolean): an integer that is false when zero.
    Bool(IntType),
    /// Bit map (CTF 2): an unsigned integer whose flags are named by bit index ranges (each
    /// mapping's `lower..=upper` are bit indexes).
    BitMap(EnumType),
    /// BLOB (CTF 2).
    Blob(BlobType),
    /// Optional field (CTF 2).
    Optional(OptionalType),
}

impl FieldType {
    /// Alignment in bits of this type's first bit.
    pub fn alignment(&self) -> u32 {
        match self {
            FieldType::Int(i) => i.align,
            FieldType::Float(f) => f.align,
            FieldType::Enum(e) => e.container.align,
            FieldType::String(_) => 8,
            FieldType::Struct(s) => s
                .fields
                .iter()
                .map(|f| f.ty.alignment())
                .fold(s.min_align.max(1), u32::max),
            // A variant is aligned on its selected option; nothing before selection.
            FieldType::Variant(_) => 1,
            FieldType::Array(a) => a.element.alignment(),
            FieldType::Sequence(s) => s.element.alignment(),
            FieldType::Bool(i) => i.align,
            FieldType::BitMap(e) => e.container.align,
            FieldType::Blob(_) => 8,
            // Like a variant: aligned on its field when present.
            FieldType::Optional(_) => 1,
        }
    }

    /// The structure, if this is one.
    pub fn as_struct(&self) -> Option<&StructType> {
        match self {
            FieldType::Struct(s) => Some(s),
            _ => None,
        }
    }
}

/// A clock class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClockClass {
    /// Name (`monotonic` for LTTng).
    pub name: String,
    /// Frequency in Hz (default 1 GHz).
    pub freq: u64,
    /// Offset from the origin in seconds.
    pub offset_s: i64,
    /// Offset from the origin in cycles, added to `offset_s`.
    pub offset: i64,
    /// Precision in cycles.
    pub precision: u64,
    /// Whether the origin is the Unix epoch (`absolute = true`) — informational.
    pub absolute: bool,
    /// Description, if any.
    pub description: Option<String>,
    /// UUID, if any.
    pub uuid: Option<[u8; 16]>,
}

impl Default for ClockClass {
    fn default() -> Self {
        ClockClass {
            name: String::new(),
            freq: 1_000_000_000,
            offset_s: 0,
            offset: 0,
            precision: 0,
            absolute: false,
            description: None,
            uuid: None,
        }
    }
}

impl ClockClass {
    /// Converts a cycle count of this clock to nanoseconds since the clock's origin
    /// (offsets included), the way babeltrace2 2.0 does, so that times (and the order of
    /// events with equal times) agree with it: the offset in cycles is first normalized below
    /// one second, then the offset cycles and `cycles` are each converted with `double`
    /// arithmetic and truncated. For a 1 GHz clock this is exact; otherwise it can be one
    /// nanosecond below [`ClockClass::cycles_to_ns_exact`]. Saturates instead of overflowing
    /// (and falls back to the exact conversion where babeltrace2 cannot convert: negative
    /// offset in cycles, zero frequency, out-of-range values).
    pub fn cycles_to_ns(&self, cycles: u64) -> i64 {
        const NS: i64 = 1_000_000_000;
        let freq = self.freq;
        if freq == 0 || self.offset < 0 {
            return self.cycles_to_ns_exact(cycles);
        }
        let from_value = |v: u64| -> u64 {
            if freq == NS as u64 {
                v
            } else {
                let d = (1e9 * v as f64) / freq as f64;
                if d >= u64::MAX as f64 {
                    u64::MAX
                } else {
                    d as u64
                }
            }
        };
        let mut off_s = self.offset_s;
        let mut off_c = self.offset as u64;
        if off_c >= freq {
            off_s = off_s.saturating_add((off_c / freq) as i64);
            off_c %= freq;
        }
        if !(i64::MIN / NS..i64::MAX / NS - 1).contains(&off_s) {
            return self.cycles_to_ns_exact(cycles);
        }
        let base = off_s * NS + from_value(off_c) as i64;
        let v = from_value(cycles);
        if v >= i64::MAX as u64 || (base > 0 && v as i64 > i64::MAX - base) {
            return self.cycles_to_ns_exact(cycles);
        }
        base + v as i64
    }

    /// Converts a cycle count of this clock to nanoseconds since the clock's origin
    /// (offsets included), exactly (integer arithmetic, rounding toward negative infinity).
    /// Saturates instead of overflowing.
    pub fn cycles_to_ns_exact(&self, cycles: u64) -> i64 {
        let freq = self.freq.max(1) as i128;
        let total_cycles = cycles as i128 + self.offset as i128;
        let ns = self.offset_s as i128 * 1_000_000_000
            + if freq == 1_000_000_000 {
                total_cycles
            } else {
                total_cycles.div_euclid(freq) * 1_000_000_000
                    + (total_cycles.rem_euclid(freq) * 1_000_000_000) / freq
            };
        ns.clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }
}

/// A value in the `env` block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnvValue {
    /// An integer.
    Int(i64),
    /// A string.
    Str(String),
}

/// An event class.
#[derive(Clone, Debug, PartialEq)]
pub struct EventClass {
    /// Numeric id, unique within its stream class.
    pub id: u64,
    /// Name.
    pub name: String,
    /// Log level, if given.
    pub loglevel: Option<i64>,
    /// EMF URI, if given.
    pub model_emf_uri: Option<String>,
    /// `event.context`, if any.
    pub context: Option<Arc<FieldType>>,
    /// `event.fields`, if any.
    pub payload: Option<Arc<FieldType>>,
}

/// A stream class.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamClass {
    /// Numeric id (0 when the metadata names none).
    pub id: u64,
    /// `stream.packet.context`, if any.
    pub packet_context: Option<Arc<FieldType>>,
    /// `stream.event.header`, if any.
    pub event_header: Option<Arc<FieldType>>,
    /// `stream.event.context`, if any.
    pub event_context: Option<Arc<FieldType>>,
    /// Event classes of this stream, in declaration order.
    pub events: Vec<EventClass>,
}

/// A `callsite` block (informational).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Callsite {
    /// Event name.
    pub name: String,
    /// Function.
    pub func: String,
    /// Instruction pointer.
    pub ip: u64,
    /// Source file.
    pub file: String,
    /// Source line.
    pub line: u64,
}

/// The whole metadata of one trace.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceClass {
    /// Major version (1 for CTF 1.8).
    pub major: u64,
    /// Minor version (8 for CTF 1.8).
    pub minor: u64,
    /// UUID, if any.
    pub uuid: Option<[u8; 16]>,
    /// Default byte order (the trace's `byte_order`).
    pub byte_order: ByteOrder,
    /// `trace.packet.header`, if any.
    pub packet_header: Option<Arc<FieldType>>,
    /// `env` entries in declaration order.
    pub env: Vec<(String, EnvValue)>,
    /// Clock classes.
    pub clocks: Vec<ClockClass>,
    /// Stream classes.
    pub streams: Vec<StreamClass>,
    /// Callsites.
    pub callsites: Vec<Callsite>,
}

impl TraceClass {
    /// The `env` entry named `key`.
    pub fn env(&self, key: &str) -> Option<&EnvValue> {
        self.env.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The clock class named `name`.
    pub fn clock(&self, name: &str) -> Option<&ClockClass> {
        self.clocks.iter().find(|c| c.name == name)
    }

    /// The stream class with id `id`.
    pub fn stream(&self, id: u64) -> Option<&StreamClass> {
        self.streams.iter().find(|s| s.id == id)
    }
}

/// The name a pretty printer shows for a field: TSDL's one leading underscore (used to escape
/// keywords and by LTTng on every field) removed.
pub fn display_name(name: &str) -> &str {
    name.strip_prefix('_').unwrap_or(name)
}

/// A UUID in its usual text form (`8-4-4-4-12` lowercase hexadecimal digits), as TSDL writes it.
pub fn uuid_string(u: &[u8; 16]) -> String {
    let h: String = u.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

/// The UUID of a text in the form [`uuid_string`] writes (`8-4-4-4-12` hexadecimal digits, any
/// case), if it is one.
pub fn parse_uuid_string(s: &str) -> Option<[u8; 16]> {
    let b = s.as_bytes();
    if b.len() != 36 {
        return None;
    }
    let mut out = [0u8; 16];
    let mut digits = (0..36).filter(|i| !matches!(i, 8 | 13 | 18 | 23));
    if [8, 13, 18, 23].iter().any(|&i| b[i] != b'-') {
        return None;
    }
    for o in out.iter_mut() {
        let (hi, lo) = (digits.next()?, digits.next()?);
        *o = ((b[hi] as char).to_digit(16)? * 16 + (b[lo] as char).to_digit(16)?) as u8;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_text_round_trips_and_only_its_form_parses() {
        let u: [u8; 16] = std::array::from_fn(|i| (i as u8).wrapping_mul(37) ^ 0xA5);
        assert_eq!(parse_uuid_string(&uuid_string(&u)), Some(u));
        assert_eq!(parse_uuid_string("B73480DB-1C30-4C47-6ECF-5EC527A444B2").map(|u| u[0]), Some(0xB7));
        for bad in ["", "b73480db1c304c476ecf5ec527a444b2", "b73480db-1c30-4c47-6ecf-5ec527a444b", "b73480db-1c30-4c47-6ecf-5ec527a444bg", "b73480d-b1c30-4c47-6ecf-5ec527a444b2", "b73480db-1c30-4c47-6ecf-5ec527a444b2 "] {
            assert_eq!(parse_uuid_string(bad), None, "{bad}");
        }
    }
}
