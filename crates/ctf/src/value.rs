//! Decoded field values: a flat, pre-order list per scope, borrowed from the memory map and the
//! plan. A compound value (structure, variant, array, sequence) is followed by its
//! descendants; `end` says where they stop, so a reader can skip a subtree in O(1).

use crate::ir::{DisplayBase, Encoding};
use crate::layout::{Node, NodeKind};

/// `bytes` up to its first NUL (all of it without one), found eight bytes at a time.
#[inline]
pub fn until_nul(bytes: &[u8]) -> &[u8] {
    match crate::bits::nul_at(bytes) {
        Some(n) => &bytes[..n],
        None => bytes,
    }
}

/// One decoded value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    /// An unsigned integer (or enumeration).
    Unsigned(u64),
    /// A signed integer (or enumeration).
    Signed(i64),
    /// A float.
    Float(f64),
    /// A string, or an array/sequence of 8-bit encoded integers, as raw bytes (strings without
    /// their terminating NUL; arrays in full — a printer stops at the first NUL).
    Str(&'a [u8]),
    /// An integer wider than 64 bits, as its raw bytes in the stream.
    BigInt(&'a [u8]),
    /// A structure, variant, array or sequence: its descendants follow, up to index `end`
    /// (exclusive) of the same list, and it has `count` direct children.
    Compound {
        /// Index one past its last descendant.
        end: u32,
        /// Number of direct children.
        count: u32,
    },
}

/// A decoded field: its compiled type and its value.
#[derive(Clone, Copy, Debug)]
pub struct Field<'a> {
    /// Type, name and display hints.
    pub node: &'a Node,
    /// Value.
    pub value: Value<'a>,
}

impl<'a> Field<'a> {
    /// The field's display name (leading underscore removed).
    pub fn name(&self) -> &'a str {
        self.node.name()
    }

    /// The value as a signed 64-bit integer, if it is an integer.
    pub fn as_i64(&self) -> Option<i64> {
        match self.value {
            Value::Unsigned(u) => Some(u as i64),
            Value::Signed(s) => Some(s),
            _ => None,
        }
    }

    /// The value as an unsigned 64-bit integer, if it is an integer.
    pub fn as_u64(&self) -> Option<u64> {
        match self.value {
            Value::Unsigned(u) => Some(u),
            Value::Signed(s) => Some(s as u64),
            _ => None,
        }
    }

    /// The bytes of a string value up to its first NUL (all the bytes of a BLOB, and all the
    /// code units of a UTF-16 or UTF-32 string).
    pub fn as_bytes(&self) -> Option<&'a [u8]> {
        match (self.value, &self.node.kind) {
            (Value::Str(b), NodeKind::Blob { .. } | NodeKind::WideString(_)) => Some(b),
            (Value::Str(b), _) => Some(until_nul(b)),
            _ => None,
        }
    }

    /// The value as text (lossy for invalid UTF-8, UTF-16 or UTF-32), if it is a string.
    pub fn as_str(&self) -> Option<std::borrow::Cow<'a, str>> {
        let b = self.as_bytes()?;
        match &self.node.kind {
            NodeKind::WideString(e) => Some(std::borrow::Cow::Owned(decode_units(b, *e))),
            _ => Some(String::from_utf8_lossy(b)),
        }
    }

    /// Display base of an integer (decimal for anything else).
    pub fn base(&self) -> DisplayBase {
        match &self.node.kind {
            NodeKind::Int(i) => i.base,
            _ => DisplayBase::Decimal,
        }
    }

    /// Encoding of an integer or string.
    pub fn encoding(&self) -> Encoding {
        match &self.node.kind {
            NodeKind::Int(i) => i.encoding,
            NodeKind::String => Encoding::Utf8,
            NodeKind::WideString(e) => *e,
            _ => Encoding::None,
        }
    }
}

/// The text of UTF-16 or UTF-32 code units `b` in encoding `e` (invalid units replaced).
pub fn decode_units(b: &[u8], e: Encoding) -> String {
    match e {
        Encoding::Utf16Be | Encoding::Utf16Le => {
            let units = b.chunks_exact(2).map(|c| if e == Encoding::Utf16Be { u16::from_be_bytes([c[0], c[1]]) } else { u16::from_le_bytes([c[0], c[1]]) });
            char::decode_utf16(units).map(|r| r.unwrap_or('\u{fffd}')).collect()
        }
        Encoding::Utf32Be | Encoding::Utf32Le => b
            .chunks_exact(4)
            .map(|c| {
                let a = [c[0], c[1], c[2], c[3]];
                let u = if e == Encoding::Utf32Be { u32::from_be_bytes(a) } else { u32::from_le_bytes(a) };
                char::from_u32(u).unwrap_or('\u{fffd}')
            })
            .collect(),
        _ => String::from_utf8_lossy(b).into_owned(),
    }
}

/// The fields of one scope (a structure root and its descendants), in pre-order.
#[derive(Clone, Copy, Debug)]
pub struct Fields<'a, 'f> {
    /// The flat list; `list[0]` is the scope's root structure when non-empty.
    pub list: &'f [Field<'a>],
}

impl<'a, 'f> Fields<'a, 'f> {
    /// No fields.
    pub const EMPTY: Fields<'static, 'static> = Fields { list: &[] };

    /// Whether there is no root at all (the scope is not declared).
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The root field (the scope's structure), if any.
    pub fn root(&self) -> Option<&'f Field<'a>> {
        self.list.first()
    }

    /// Direct children of the compound at index `at` as (index, field) pairs.
    pub fn children(&self, at: usize) -> Children<'a, 'f> {
        let end = match self.list.get(at).map(|f| f.value) {
            Some(Value::Compound { end, .. }) => end as usize,
            _ => at + 1,
        };
        Children { list: self.list, next: at + 1, end }
    }

    /// The top-level member named `name` (display name or raw name) of the root structure.
    pub fn get(&self, name: &str) -> Option<&'f Field<'a>> {
        self.children(0)
            .find(|(_, f)| f.node.raw_name == name || f.name() == name)
            .map(|(_, f)| f)
    }
}

/// Iterator over the direct children of a compound value.
#[derive(Clone, Debug)]
pub struct Children<'a, 'f> {
    list: &'f [Field<'a>],
    next: usize,
    end: usize,
}

impl<'a, 'f> Iterator for Children<'a, 'f> {
    type Item = (usize, &'f Field<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.end {
            return None;
        }
        let at = self.next;
        let f = self.list.get(at)?;
        self.next = match f.value {
            Value::Compound { end, .. } => (end as usize).max(at + 1),
            _ => at + 1,
        };
        Some((at, f))
    }
}
