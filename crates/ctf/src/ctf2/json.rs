//! The JSON text sequence of a CTF 2 metadata stream (RFC 7464: each fragment starts with a
//! record separator, U+001E) split into fragments, each parsed by `serde_json` into a [`Json`]
//! tree that keeps object members in their written order (mapping and flag labels are shown
//! in that order) and rejects duplicate keys.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// The record separator that starts every fragment.
pub(crate) const RS: u8 = 0x1E;

/// A JSON value, objects in member order.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    /// An integer (any JSON number without a fraction or exponent that fits).
    Int(i128),
    /// Any other number.
    Float(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    /// What kind of value this is, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Int(_) => "an integer",
            Json::Float(_) => "a real number",
            Json::Str(_) => "a string",
            Json::Arr(_) => "an array",
            Json::Obj(_) => "an object",
        }
    }

    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Int(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Int(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
        Ok(Json::Float(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::Str(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::Str(v))
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_none<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element()? {
            out.push(v);
        }
        Ok(Json::Arr(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut out: Vec<(String, Json)> = Vec::new();
        while let Some(k) = map.next_key::<String>()? {
            if out.iter().any(|(x, _)| *x == k) {
                return Err(de::Error::custom(format!("duplicate object member `{k}`")));
            }
            let v = map.next_value()?;
            out.push((k, v));
        }
        Ok(Json::Obj(out))
    }
}

/// One fragment of the sequence: its text and where it starts.
#[derive(Clone, Debug)]
pub(crate) struct Fragment<'t> {
    /// 1-based line of the metadata text where the fragment's text starts.
    pub line: u32,
    pub text: &'t str,
}

/// Splits a JSON text sequence into fragments (text before the first record separator must
/// be blank).
pub(crate) fn split(text: &str) -> Result<Vec<Fragment<'_>>, (u32, String)> {
    let mut out = Vec::new();
    let mut pieces = text.split('\u{1e}');
    let head = pieces.next().unwrap_or("");
    if !head.trim().is_empty() {
        return Err((1, "text before the first record separator (U+001E)".into()));
    }
    let mut line = 1 + head.matches('\n').count() as u32;
    for p in pieces {
        out.push(Fragment { line, text: p });
        line += p.matches('\n').count() as u32;
    }
    Ok(out)
}

/// Parses one fragment; an error gives the line (of the whole text) and column.
pub(crate) fn parse(f: &Fragment<'_>) -> Result<Json, (u32, u32, String)> {
    serde_json::from_str::<Json>(f.text).map_err(|e| {
        let msg = e.to_string();
        // serde_json appends " at line L column C": keep the message, report the position.
        let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
        (f.line + e.line().saturating_sub(1) as u32, e.column() as u32, msg)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_kept_and_duplicates_rejected() {
        let j: Json = serde_json::from_str(r#"{"b": 1, "a": [true, null, -2, 1.5, "x"]}"#).unwrap();
        let Json::Obj(m) = &j else { panic!() };
        assert_eq!(m[0].0, "b");
        assert_eq!(j.get("a"), Some(&Json::Arr(vec![Json::Bool(true), Json::Null, Json::Int(-2), Json::Float(1.5), Json::Str("x".into())])));
        assert!(serde_json::from_str::<Json>(r#"{"a": 1, "a": 2}"#).is_err());
        let big: Json = serde_json::from_str("18446744073709551615").unwrap();
        assert_eq!(big, Json::Int(u64::MAX as i128));
    }

    #[test]
    fn split_counts_lines() {
        let t = "\n\u{1e}{\"a\": 1}\n\u{1e}\n{\n\"b\": }";
        let f = split(t).unwrap();
        assert_eq!(f.len(), 2);
        assert_eq!((f[0].line, f[1].line), (2, 3));
        let (line, _, _) = parse(&f[1]).unwrap_err();
        assert_eq!(line, 5);
        assert!(split("x\u{1e}{}").is_err());
    }
}
