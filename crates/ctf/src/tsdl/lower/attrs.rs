//! Attribute values (`size = 32;`, `byte_order = be;`, `uuid = "...";`...): their types and
//! ranges, and duplicate attributes.

use std::collections::HashSet;

use crate::Result;
use crate::ir::{ByteOrder, DisplayBase, Encoding};
use crate::tsdl::ast::{Attr, Name, Value};
use crate::tsdl::lexer::Pos;



pub(super) fn is_pow2(v: u64) -> bool {
    v != 0 && v & (v - 1) == 0
}

pub(super) fn parse_uuid(s: &str, pos: Pos) -> Result<[u8; 16]> {
    crate::ir::parse_uuid_string(s).ok_or_else(|| pos.err(format!("invalid UUID `{}`", s.escape_default())))
}

pub(super) fn int_of(v: &Value, what: &str) -> Result<(bool, u64)> {
    match v {
        Value::Int { neg, mag, .. } => Ok((*neg && *mag != 0, *mag)),
        _ => Err(v.pos().err(format!("{what} must be an integer literal"))),
    }
}

pub(super) fn uint_of(v: &Value, what: &str) -> Result<u64> {
    match int_of(v, what)? {
        (false, m) => Ok(m),
        (true, _) => Err(v.pos().err(format!("{what} must not be negative"))),
    }
}

pub(super) fn sint_of(v: &Value, what: &str) -> Result<i64> {
    let (neg, mag) = int_of(v, what)?;
    let x = if neg { -(mag as i128) } else { mag as i128 };
    i64::try_from(x).map_err(|_| v.pos().err(format!("{what} does not fit in 64 signed bits")))
}

pub(super) fn int128_of(v: &Value, what: &str) -> Result<i128> {
    let (neg, mag) = int_of(v, what)?;
    Ok(if neg { -(mag as i128) } else { mag as i128 })
}

pub(super) fn u32_of(v: &Value, what: &str) -> Result<u32> {
    let x = uint_of(v, what)?;
    u32::try_from(x).map_err(|_| v.pos().err(format!("{what} is too large")))
}

/// A one-word identifier value (`le`, `true`, `hex`).
pub(super) fn word_of<'v>(v: &'v Value, what: &str) -> Result<&'v str> {
    match v {
        Value::Path(p) if p.len() == 1 => Ok(&p[0].text),
        _ => Err(v.pos().err(format!("{what} must be an identifier"))),
    }
}

pub(super) fn str_of<'v>(v: &'v Value, what: &str) -> Result<&'v str> {
    match v {
        Value::Str(s, _) => Ok(s),
        _ => Err(v.pos().err(format!("{what} must be a string literal"))),
    }
}

/// A name given as an identifier, a dotted path or a string (`name = foo;`, `name = "foo";`).
pub(super) fn name_of(v: &Value, what: &str) -> Result<String> {
    match v {
        Value::Str(s, _) => Ok(s.clone()),
        Value::Path(p) => Ok(p.iter().map(|n| n.text.as_str()).collect::<Vec<_>>().join(".")),
        _ => Err(v.pos().err(format!("{what} must be an identifier or a string"))),
    }
}

pub(super) fn bool_of(v: &Value, what: &str) -> Result<bool> {
    match v {
        Value::Int { neg: false, mag: 0, .. } => Ok(false),
        Value::Int { neg: false, mag: 1, .. } => Ok(true),
        Value::Path(p) if p.len() == 1 => match p[0].text.as_str() {
            "true" | "TRUE" => Ok(true),
            "false" | "FALSE" => Ok(false),
            _ => Err(v.pos().err(format!("{what} must be true or false"))),
        },
        _ => Err(v.pos().err(format!("{what} must be true or false"))),
    }
}

/// `Some(order)`, or `None` for `native`.
pub(super) fn byte_order_of(v: &Value) -> Result<Option<ByteOrder>> {
    match word_of(v, "byte_order")? {
        "native" => Ok(None),
        "be" | "network" | "big_endian" => Ok(Some(ByteOrder::Big)),
        "le" | "little_endian" => Ok(Some(ByteOrder::Little)),
        w => Err(v.pos().err(format!("invalid byte order `{w}`"))),
    }
}

pub(super) fn encoding_of(v: &Value) -> Result<Encoding> {
    let w = word_of(v, "encoding")?;
    match w.to_ascii_lowercase().as_str() {
        "none" => Ok(Encoding::None),
        "utf8" => Ok(Encoding::Utf8),
        "ascii" => Ok(Encoding::Ascii),
        _ => Err(v.pos().err(format!("invalid encoding `{w}`"))),
    }
}

pub(super) fn base_of(v: &Value) -> Result<DisplayBase> {
    match v {
        Value::Int { neg: false, mag, .. } => match mag {
            2 => Ok(DisplayBase::Binary),
            8 => Ok(DisplayBase::Octal),
            10 => Ok(DisplayBase::Decimal),
            16 => Ok(DisplayBase::Hexadecimal),
            _ => Err(v.pos().err(format!("invalid base {mag}"))),
        },
        Value::Path(p) if p.len() == 1 => match p[0].text.as_str() {
            "decimal" | "dec" | "d" | "i" | "u" => Ok(DisplayBase::Decimal),
            "hexadecimal" | "hex" | "x" | "X" | "p" | "pointer" => Ok(DisplayBase::Hexadecimal),
            "octal" | "oct" | "o" => Ok(DisplayBase::Octal),
            "binary" | "bin" | "b" => Ok(DisplayBase::Binary),
            w => Err(v.pos().err(format!("invalid base `{w}`"))),
        },
        _ => Err(v.pos().err("base must be an integer or an identifier")),
    }
}

/// Rejects a second occurrence in one type of an attribute among `known` (`seen` has a bit per
/// known attribute); other names pass.
pub(super) fn attr_once(seen: &mut u8, known: &[&str], a: &Attr) -> Result<()> {
    let name = a.name.text.as_str();
    let bit = known.iter().position(|k| *k == name).map_or(0, |i| 1u8 << i);
    if *seen & bit != 0 {
        return Err(a.name.pos.err(format!("duplicate attribute `{name}`")));
    }
    *seen |= bit;
    Ok(())
}

/// Rejects a second occurrence of an attribute in one block or type.
pub(super) fn check_dup(seen: &mut HashSet<String>, key: String, pos: Pos) -> Result<()> {
    if !seen.insert(key.clone()) {
        return Err(pos.err(format!("duplicate attribute `{key}`")));
    }
    Ok(())
}

pub(super) fn path_key(lhs: &[Name]) -> String {
    lhs.iter().map(|n| n.text.as_str()).collect::<Vec<_>>().join(".")
}
