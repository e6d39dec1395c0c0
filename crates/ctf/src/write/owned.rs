//! Owned field values: what the [`StreamWriter`](super::StreamWriter) encodes, and what a
//! decoded [`Fields`] list converts to, so that what was written can be compared with what was
//! read.

use crate::layout::{NodeKind, StreamLayout};
use crate::value::{Field, Fields, Value};

/// A field value that owns its data, shaped like its field type.
///
/// | field type | value |
/// |---|---|
/// | unsigned integer, unsigned enumeration | [`OwnedValue::U`] (or a non-negative [`OwnedValue::I`]) |
/// | signed integer, signed enumeration | [`OwnedValue::I`] (or an [`OwnedValue::U`] that fits) |
/// | integer wider than 64 bits | [`OwnedValue::Bytes`]: its raw bytes in stream order |
/// | floating point | [`OwnedValue::F`] (rounded to `f32` for a 32-bit float) |
/// | string | [`OwnedValue::Str`], or [`OwnedValue::Bytes`] (no NUL byte either way) |
/// | structure | [`OwnedValue::Struct`]: one value per member, in order |
/// | array, sequence | [`OwnedValue::Array`]: one value per element |
/// | array or sequence of 8-bit integers | also [`OwnedValue::Bytes`] (exact length) or [`OwnedValue::Str`] (at most the length; padded with NUL bytes) |
/// | variant | [`OwnedValue::Variant`]: the option's index and its value |
///
/// Equality is structural, except that floats compare by their bits, with any two NaNs equal
/// (a round trip must keep `-0.0`, and may change a NaN's payload).
#[derive(Clone, Debug)]
pub enum OwnedValue {
    /// An unsigned integer or enumeration value.
    U(u64),
    /// A signed integer or enumeration value.
    I(i64),
    /// A floating point value.
    F(f64),
    /// A string (valid UTF-8).
    Str(String),
    /// Raw bytes: a string that is not valid UTF-8, the bytes of an array or sequence of 8-bit
    /// integers (text arrays), or an integer wider than 64 bits.
    Bytes(Vec<u8>),
    /// A structure's members, in order.
    Struct(Vec<OwnedValue>),
    /// An array's or sequence's elements.
    Array(Vec<OwnedValue>),
    /// A variant: the index of the selected option (in declaration order) and its value.
    Variant(u32, Box<OwnedValue>),
}

impl PartialEq for OwnedValue {
    fn eq(&self, other: &OwnedValue) -> bool {
        use OwnedValue::*;
        match (self, other) {
            (U(a), U(b)) => a == b,
            (I(a), I(b)) => a == b,
            (F(a), F(b)) => a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
            (Str(a), Str(b)) => a == b,
            (Bytes(a), Bytes(b)) => a == b,
            (Struct(a), Struct(b)) | (Array(a), Array(b)) => a == b,
            (Variant(i, a), Variant(j, b)) => i == j && a == b,
            _ => false,
        }
    }
}

impl From<u64> for OwnedValue {
    fn from(v: u64) -> OwnedValue {
        OwnedValue::U(v)
    }
}

impl From<u32> for OwnedValue {
    fn from(v: u32) -> OwnedValue {
        OwnedValue::U(v.into())
    }
}

impl From<i64> for OwnedValue {
    fn from(v: i64) -> OwnedValue {
        OwnedValue::I(v)
    }
}

impl From<i32> for OwnedValue {
    fn from(v: i32) -> OwnedValue {
        OwnedValue::I(v.into())
    }
}

impl From<f64> for OwnedValue {
    fn from(v: f64) -> OwnedValue {
        OwnedValue::F(v)
    }
}

impl From<f32> for OwnedValue {
    fn from(v: f32) -> OwnedValue {
        OwnedValue::F(v.into())
    }
}

impl From<&str> for OwnedValue {
    fn from(v: &str) -> OwnedValue {
        OwnedValue::Str(v.to_string())
    }
}

impl From<String> for OwnedValue {
    fn from(v: String) -> OwnedValue {
        OwnedValue::Str(v)
    }
}

impl From<Vec<u8>> for OwnedValue {
    fn from(v: Vec<u8>) -> OwnedValue {
        OwnedValue::Bytes(v)
    }
}

impl OwnedValue {
    /// A structure value from its members' values.
    pub fn structure(members: impl IntoIterator<Item = OwnedValue>) -> OwnedValue {
        OwnedValue::Struct(members.into_iter().collect())
    }

    /// A variant value: option `index` holding `value`.
    pub fn variant(index: u32, value: OwnedValue) -> OwnedValue {
        OwnedValue::Variant(index, Box::new(value))
    }

    /// The value as an unsigned integer, if it is a non-negative integer.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            OwnedValue::U(u) => Some(u),
            OwnedValue::I(i) => u64::try_from(i).ok(),
            _ => None,
        }
    }

    /// The value as a signed integer, if it is an integer that fits.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            OwnedValue::U(u) => i64::try_from(u).ok(),
            OwnedValue::I(i) => Some(i),
            _ => None,
        }
    }

    /// The members of a structure, or the elements of an array, if it is one.
    pub fn children(&self) -> Option<&[OwnedValue]> {
        match self {
            OwnedValue::Struct(v) | OwnedValue::Array(v) => Some(v),
            _ => None,
        }
    }

    /// Converts the decoded scope `fields` (a root and its descendants, as a
    /// [`crate::EventView`] gives them) to a value tree. `plan` is the plan the fields were
    /// decoded with (`&trace.plans[cursor.stream().plan]`); it tells which option of a
    /// variant was decoded. `None` when the scope is empty (not declared).
    ///
    /// Strings become [`OwnedValue::Str`] when they are valid UTF-8, else
    /// [`OwnedValue::Bytes`]; arrays and sequences decoded as text (8-bit encoded integers)
    /// and integers wider than 64 bits become [`OwnedValue::Bytes`].
    pub fn from_fields(fields: Fields<'_, '_>, plan: &StreamLayout) -> Option<OwnedValue> {
        if fields.list.is_empty() {
            return None;
        }
        Some(convert(fields.list, 0, plan))
    }

    /// Converts the field at index `at` of a decoded flat list and its descendants (see
    /// [`OwnedValue::from_fields`]).
    pub fn from_field_at(list: &[Field<'_>], at: usize, plan: &StreamLayout) -> Option<OwnedValue> {
        (at < list.len()).then(|| convert(list, at, plan))
    }
}

fn convert(list: &[Field<'_>], at: usize, plan: &StreamLayout) -> OwnedValue {
    let f = &list[at];
    match f.value {
        Value::Unsigned(u) => OwnedValue::U(u),
        Value::Signed(i) => OwnedValue::I(i),
        Value::Float(x) => OwnedValue::F(x),
        Value::BigInt(b) => OwnedValue::Bytes(b.to_vec()),
        Value::Str(b) => match (&f.node.kind, std::str::from_utf8(b)) {
            (NodeKind::String, Ok(s)) => OwnedValue::Str(s.to_string()),
            _ => OwnedValue::Bytes(b.to_vec()),
        },
        Value::Compound { .. } => {
            let fields = Fields { list };
            let kids = fields.children(at).map(|(i, _)| convert(list, i, plan));
            match &f.node.kind {
                NodeKind::Variant { options, .. } => {
                    let child = list.get(at + 1);
                    let index = child
                        .and_then(|c| {
                            options.iter().position(|&o| std::ptr::eq(plan.node(o), c.node)).or_else(|| {
                                options.iter().position(|&o| plan.node(o).raw_name == c.node.raw_name)
                            })
                        })
                        .map_or(u32::MAX, |i| i as u32);
                    let value = kids.into_iter().next().unwrap_or(OwnedValue::Struct(Vec::new()));
                    OwnedValue::Variant(index, Box::new(value))
                }
                NodeKind::Struct { .. } => OwnedValue::Struct(kids.collect()),
                _ => OwnedValue::Array(kids.collect()),
            }
        }
    }
}
