//! JSON Lines output: one object per event or discarded-items record, per line.
//!
//! An event:
//!
//! ```json
//! {"timestamp_ns":1571771741344453871,"name":"sched_switch","trace":"/path/to/trace","stream":"/path/to/trace/chan_0",
//!  "packet_context":{"cpu_id":0},"common_context":{},"context":{},"payload":{"prev_comm":"swapper/0","prev_tid":0}}
//! ```
//!
//! * `timestamp_ns`: nanoseconds from the clock's origin (the Unix epoch for LTTng), or `null`
//!   when the stream has no clock.
//! * `trace`: the absolute path of the trace directory; `stream`: the absolute path of the
//!   stream's first file.
//! * The four scopes are always present, as objects (`{}` when the scope is absent or shows no
//!   field). They hold the same fields babeltrace2 shows (see [`crate::text`]): packet and
//!   event headers and the packet bookkeeping fields (`packet_size`, `timestamp_begin` ...) are
//!   left out. Names have one leading underscore removed, like babeltrace2 does.
//!
//! Values:
//!
//! * integers: JSON numbers, exact (a `u64` above 2^53 is still written as a number; parse
//!   with a 64-bit-integer-aware reader if that matters);
//! * enumerations: `{"value": N, "labels": ["A", "B"]}` (`labels` empty when none matches);
//! * floats: numbers, except `"NaN"`, `"inf"` and `"-inf"` (strings: JSON has no such numbers);
//! * strings and text arrays/sequences: strings (up to the first NUL; invalid UTF-8 replaced by
//!   U+FFFD);
//! * structures: objects; arrays and sequences: arrays;
//! * variants: `{"OPTION": value}`, the selected option's name and value;
//! * integers wider than 64 bits: `"0x..."` strings (hexadecimal of the bytes as stored).
//!
//! Discarded records:
//!
//! ```json
//! {"discarded_events":17,"begin_ns":null,"end_ns":null,"trace":"...","stream":"..."}
//! {"discarded_packets":2,"begin_ns":1000,"end_ns":2000,"trace":"...","stream":"..."}
//! ```
//!
//! On a stream's first packet, the discarded-events counter may count events lost before the
//! recording of this stream started; such a record has `"exact":false` (babeltrace2 says
//! "may have discarded events" without a count).

use std::io::{self, Write};

use tracelens_ctf::plan::NodeKind;
use tracelens_ctf::{EventView, Field, Fields, Value};

use crate::set::{Source, TraceSet};
use crate::discarded::{Discarded, DiscardedItems};
use crate::layout::{Layout, PlanLayout, StreamLayout, TraceLayout};
use crate::program::{How, Program, ProgramBuilder, Programs};
use crate::write::{write_i64, write_u64, LineOut, StackBuf};

/// Writes events and discarded records as JSON Lines.
pub struct JsonPrinter {
    layout: Layout,
    /// The line programs of event classes, by trace, stream and event class index.
    programs: Programs,
    /// Print every event by the walk (no line programs).
    walk_only: bool,
}

/// Writes `s` as a JSON string (quotes included), replacing invalid UTF-8 with U+FFFD.
pub fn write_json_str<W: Write + ?Sized>(out: &mut W, s: &[u8]) -> io::Result<()> {
    out.write_all(b"\"")?;
    let mut rest = s;
    loop {
        match std::str::from_utf8(rest) {
            Ok(valid) => {
                write_json_valid(out, valid)?;
                break;
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                // SAFETY-free: `good` is valid UTF-8 per `valid_up_to`.
                write_json_valid(out, std::str::from_utf8(good).unwrap_or(""))?;
                out.write_all("\u{fffd}".as_bytes())?;
                let skip = e.error_len().unwrap_or(bad.len()).max(1);
                rest = &bad[skip.min(bad.len())..];
                if rest.is_empty() {
                    break;
                }
            }
        }
    }
    out.write_all(b"\"")
}

/// [`write_json_str`] of `s` up to its first NUL (what a field's bytes are) at the start of
/// `dst` (which has room for `s.len() + 2` bytes), when it is printable ASCII with neither `"`
/// nor `\` (written as it is); returns how many bytes it wrote and read.
#[inline]
pub(crate) fn put_json_plain(dst: &mut [u8], s: &[u8]) -> Option<(usize, usize)> {
    let s = &s[..s.iter().position(|&c| c == 0).unwrap_or(s.len())];
    if !s.iter().all(|&c| JSON_PLAIN[c as usize]) {
        return None;
    }
    dst[0] = b'"';
    dst[1..1 + s.len()].copy_from_slice(s);
    dst[1 + s.len()] = b'"';
    Some((s.len() + 2, s.len()))
}

fn write_json_valid<W: Write + ?Sized>(out: &mut W, s: &str) -> io::Result<()> {
    let mut rest = s.as_bytes();
    loop {
        // Bytes of 0x80 and above are valid UTF-8 here, written as they are.
        let i = rest.iter().position(|&c| c < 0x80 && !JSON_PLAIN[c as usize]).unwrap_or(rest.len());
        out.write_all(&rest[..i])?;
        let Some(&c) = rest.get(i) else { return Ok(()) };
        match c {
            b'"' => out.write_all(b"\\\"")?,
            b'\\' => out.write_all(b"\\\\")?,
            b'\n' => out.write_all(b"\\n")?,
            b'\r' => out.write_all(b"\\r")?,
            b'\t' => out.write_all(b"\\t")?,
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.write_all(&[b'\\', b'u', b'0', b'0', HEX[(c >> 4) as usize], HEX[(c & 15) as usize]])?;
            }
        }
        rest = &rest[i + 1..];
    }
}

/// The bytes a JSON string holds as they are: printable ASCII but `"` and `\`.
pub(crate) const JSON_PLAIN: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0x20;
    while c < 0x7f {
        t[c] = c != b'"' as usize && c != b'\\' as usize;
        c += 1;
    }
    t
};

fn write_opt_i64<W: Write + ?Sized>(out: &mut W, v: Option<i64>) -> io::Result<()> {
    match v {
        Some(v) => write_i64(out, v),
        None => out.write_all(b"null"),
    }
}

fn write_f64<W: Write + ?Sized>(out: &mut W, v: f64) -> io::Result<()> {
    if v.is_nan() {
        return out.write_all(b"\"NaN\"");
    }
    if v.is_infinite() {
        return out.write_all(if v > 0.0 { b"\"inf\"" } else { b"\"-inf\"" });
    }
    let mut b = StackBuf::<64>::new();
    let a = v.abs();
    let r = if a != 0.0 && !(1e-5..1e16).contains(&a) {
        std::fmt::Write::write_fmt(&mut b, format_args!("{v:e}"))
    } else {
        std::fmt::Write::write_fmt(&mut b, format_args!("{v}"))
    };
    if r.is_err() {
        return out.write_all(b"null");
    }
    out.write_all(b.bytes())
}

impl JsonPrinter {
    /// A printer for the traces of `set`.
    pub fn new(set: &TraceSet) -> JsonPrinter {
        JsonPrinter { layout: Layout::new(set, &[]), programs: Programs::default(), walk_only: false }
    }

    /// Whether events of a class whose fields always have the same shape are printed by a
    /// line program (the default; see [`crate::text::TextPrinter::set_line_programs`]).
    pub fn set_line_programs(&mut self, on: bool) {
        self.walk_only = !on;
    }

    /// How many (stream, event class) pairs seen so far have a line program, and how many
    /// are printed by walking their fields.
    pub fn line_programs(&self) -> (usize, usize) {
        self.programs.counts()
    }

    /// Writes one event line.
    pub fn write_event(&mut self, out: &mut impl LineOut, src: Source, ev: &EventView<'_, '_>) -> io::Result<()> {
        let Some(tl) = self.layout.traces.get(src.trace) else { return Ok(()) };
        let Some(sl) = tl.streams.get(src.stream) else { return Ok(()) };
        let Some(pl) = tl.plans.get(sl.plan) else { return Ok(()) };
        out.write_all(b"{\"timestamp_ns\":")?;
        write_opt_i64(out, ev.ns)?;
        // The rest: by the class's line program in this stream (made from its first event).
        let scopes = [ev.packet_context, ev.common_context, ev.context, ev.payload];
        let program = self.programs.slot(src.trace, src.stream, ev.class.index());
        if self.walk_only {
            *program = Program::Walk;
        }
        if let Program::Unknown = program {
            let mut b = ProgramBuilder::new(&[]);
            *program = match compile(&mut b, tl, sl, pl, ev).and_then(|()| b.finish(scopes)) {
                Some(p) => Program::Compiled(p),
                None => Program::Walk,
            };
        }
        if let Program::Compiled(p) = program {
            if p.fits(scopes) {
                return p.run(out, scopes, |out, fields, at, _| write_value(out, pl, fields, at));
            }
        }
        out.write_all(b",\"name\":")?;
        write_json_str(out, ev.name().as_bytes())?;
        out.write_all(b",\"trace\":")?;
        write_json_str(out, tl.dir.as_bytes())?;
        out.write_all(b",\"stream\":")?;
        write_json_str(out, sl.path.as_bytes())?;
        for (key, fields) in SCOPE_KEYS.into_iter().zip(scopes) {
            out.write_all(key)?;
            match fields.root() {
                Some(root) if pl.is_visible(root.node) => write_value(out, pl, fields, 0)?,
                _ => out.write_all(b"{}")?,
            }
        }
        out.write_all(b"}\n")
    }

    /// Writes one discarded-items line.
    pub fn write_discarded(&mut self, out: &mut impl Write, src: Source, d: &DiscardedItems) -> io::Result<()> {
        let (kind, count, exact, begin_ns, end_ns) = (d.kind, d.count, d.exact, d.begin_ns, d.end_ns);
        let Some(tl) = self.layout.traces.get(src.trace) else { return Ok(()) };
        let Some(sl) = tl.streams.get(src.stream) else { return Ok(()) };
        out.write_all(match kind {
            Discarded::Events => b"{\"discarded_events\":",
            Discarded::Packets => b"{\"discarded_packets\":",
        })?;
        write_u64(out, count)?;
        if !exact {
            out.write_all(b",\"exact\":false")?;
        }
        out.write_all(b",\"begin_ns\":")?;
        write_opt_i64(out, begin_ns)?;
        out.write_all(b",\"end_ns\":")?;
        write_opt_i64(out, end_ns)?;
        out.write_all(b",\"trace\":")?;
        write_json_str(out, tl.dir.as_bytes())?;
        out.write_all(b",\"stream\":")?;
        write_json_str(out, sl.path.as_bytes())?;
        out.write_all(b"}\n")
    }
}

/// The keys of the four scopes, with the comma before them.
const SCOPE_KEYS: [&[u8]; 4] = [b",\"packet_context\":", b",\"common_context\":", b",\"context\":", b",\"payload\":"];

/// Compiles the line of event `ev` of stream `sl` of trace `tl` after its timestamp, as
/// [`JsonPrinter::write_event`] writes it; `None` when the event's class can change shape
/// (see [`crate::program`]).
fn compile(b: &mut ProgramBuilder, tl: &TraceLayout, sl: &StreamLayout, pl: &PlanLayout, ev: &EventView<'_, '_>) -> Option<()> {
    b.lits.extend_from_slice(b",\"name\":");
    write_json_str(&mut b.lits, ev.name().as_bytes()).ok()?;
    b.lits.extend_from_slice(b",\"trace\":");
    write_json_str(&mut b.lits, tl.dir.as_bytes()).ok()?;
    b.lits.extend_from_slice(b",\"stream\":");
    write_json_str(&mut b.lits, sl.path.as_bytes()).ok()?;
    for (k, (key, fields)) in SCOPE_KEYS.into_iter().zip([ev.packet_context, ev.common_context, ev.context, ev.payload]).enumerate() {
        b.lits.extend_from_slice(key);
        match fields.root() {
            Some(root) if pl.is_visible(root.node) => compile_value(b, pl, fields, k, 0)?,
            _ => b.lits.extend_from_slice(b"{}"),
        }
    }
    b.lits.extend_from_slice(b"}\n");
    Some(())
}

/// Compiles the value at `at` of scope `scope` (`fields`) as [`write_value`] writes it;
/// `None` when its shape can change between events.
fn compile_value(b: &mut ProgramBuilder, pl: &PlanLayout, fields: Fields<'_, '_>, scope: usize, at: usize) -> Option<()> {
    let f = fields.list.get(at)?;
    let how = match f.value {
        Value::Compound { .. } => {
            let NodeKind::Struct { .. } = &f.node.kind else { return None };
            // `,"NAME":` (without the comma for the first member) before a shown member.
            let label = |lits: &mut Vec<u8>, c: &Field<'_>, first: bool| {
                if !pl.is_visible(c.node) {
                    return Some(false);
                }
                lits.extend_from_slice(&b","[usize::from(first)..]);
                write_json_str(lits, c.node.name().as_bytes()).ok()?;
                lits.push(b':');
                Some(true)
            };
            return b.structure(fields, at, [b"{", b"}"], label, |b, i| compile_value(b, pl, fields, scope, i));
        }
        Value::Unsigned(_) | Value::Signed(_) => match &f.node.kind {
            NodeKind::Int(int) if int.enumeration.is_some() || int.boolean => How::Walk,
            _ => How::Decimal,
        },
        Value::Str(_) if !matches!(f.node.kind, NodeKind::Blob { .. } | NodeKind::WideString(_)) => How::JsonStr,
        _ => How::Walk,
    };
    b.op(how, scope, at)
}

fn write_num<W: Write + ?Sized>(out: &mut W, v: Value<'_>) -> io::Result<()> {
    match v {
        Value::Unsigned(u) => write_u64(out, u),
        Value::Signed(s) => write_i64(out, s),
        _ => Ok(()),
    }
}

fn write_value<W: Write + ?Sized>(out: &mut W, pl: &PlanLayout, fields: Fields<'_, '_>, at: usize) -> io::Result<()> {
    let f = &fields.list[at];
    match f.value {
        Value::Compound { .. } => match &f.node.kind {
            NodeKind::Struct { .. } => {
                out.write_all(b"{")?;
                let mut first = true;
                for (i, c) in fields.children(at) {
                    if !pl.is_visible(c.node) {
                        continue;
                    }
                    if !first {
                        out.write_all(b",")?;
                    }
                    first = false;
                    write_json_str(out, c.node.name().as_bytes())?;
                    out.write_all(b":")?;
                    write_value(out, pl, fields, i)?;
                }
                out.write_all(b"}")
            }
            NodeKind::Variant { .. } => {
                out.write_all(b"{")?;
                if let Some((i, c)) = fields.children(at).next() {
                    write_json_str(out, c.node.name().as_bytes())?;
                    out.write_all(b":")?;
                    write_value(out, pl, fields, i)?;
                }
                out.write_all(b"}")
            }
            _ => {
                out.write_all(b"[")?;
                for (n, (i, _)) in fields.children(at).enumerate() {
                    if n > 0 {
                        out.write_all(b",")?;
                    }
                    write_value(out, pl, fields, i)?;
                }
                out.write_all(b"]")
            }
        },
        Value::Unsigned(_) | Value::Signed(_) => {
            match &f.node.kind {
                NodeKind::Int(int) if int.enumeration.is_some() => {
                    let e = int.enumeration.as_deref().expect("checked");
                    let v: i128 = match f.value {
                        Value::Unsigned(u) => u as i128,
                        Value::Signed(s) => s as i128,
                        _ => 0,
                    };
                    out.write_all(b"{\"value\":")?;
                    write_num(out, f.value)?;
                    out.write_all(b",\"labels\":[")?;
                    let mut n = 0;
                    for (i, m) in e.mappings.iter().enumerate() {
                        if m.lower <= v && v <= m.upper && !e.mappings[..i].iter().any(|p| p.label == m.label && p.lower <= v && v <= p.upper) {
                            if n > 0 {
                                out.write_all(b",")?;
                            }
                            n += 1;
                            write_json_str(out, m.label.as_bytes())?;
                        }
                    }
                    out.write_all(b"]}")
                }
                NodeKind::Int(int) if int.boolean => out.write_all(if f.as_u64() == Some(0) { b"false" } else { b"true" }),
                _ => write_num(out, f.value),
            }
        }
        Value::Float(v) => write_f64(out, v),
        Value::Str(b) => match &f.node.kind {
            NodeKind::Blob { .. } => {
                out.write_all(b"\"")?;
                for x in b {
                    write!(out, "{x:02x}")?;
                }
                out.write_all(b"\"")
            }
            NodeKind::WideString(_) => write_json_str(out, f.as_str().unwrap_or_default().as_bytes()),
            _ => write_json_str(out, f.as_bytes().unwrap_or(b"")),
        },
        Value::BigInt(bytes) => {
            out.write_all(b"\"0x")?;
            const HEX: &[u8; 16] = b"0123456789abcdef";
            for &b in bytes {
                out.write_all(&[HEX[(b >> 4) as usize], HEX[(b & 15) as usize]])?;
            }
            out.write_all(b"\"")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_strings_in_place_as_written() {
        let mut all: Vec<u8> = (1..=255).collect();
        all.push(0);
        for s in [&b""[..], b"plain /path:1", b"nul\0after", b"quote\"", b"back\\slash", b"tab\t", b"\x7f", "é".as_bytes(), &all[31..126], &all] {
            let text = &s[..s.iter().position(|&c| c == 0).unwrap_or(s.len())];
            let mut written = Vec::new();
            write_json_str(&mut written, text).unwrap();
            let mut room = vec![b'#'; s.len() + 3];
            let plain = text.iter().all(|&c| (0x20..0x7f).contains(&c) && c != b'"' && c != b'\\');
            match put_json_plain(&mut room, s) {
                Some((n, read)) => {
                    assert_eq!((&room[..n], room[n], read), (&written[..], b'#', text.len()));
                    assert!(plain);
                }
                None => assert!(!plain, "{text:?} is written as it is"),
            }
        }
    }

    #[test]
    fn strings() {
        let mut v = Vec::new();
        write_json_str(&mut v, b"a\"b\\c\nd\x01\xffe").unwrap();
        assert_eq!(String::from_utf8(v).unwrap(), "\"a\\\"b\\\\c\\nd\\u0001\u{fffd}e\"");
        let parsed: serde_json::Value = serde_json::from_str("\"a\\\"b\\\\c\\nd\\u0001\u{fffd}e\"").unwrap();
        assert_eq!(parsed.as_str().unwrap(), "a\"b\\c\nd\u{1}\u{fffd}e");
    }

    #[test]
    fn floats() {
        let f = |x: f64| {
            let mut v = Vec::new();
            write_f64(&mut v, x).unwrap();
            String::from_utf8(v).unwrap()
        };
        assert_eq!(f(1.5), "1.5");
        assert_eq!(f(2.0), "2");
        assert_eq!(f(1e300), "1e300");
        assert_eq!(f(f64::NAN), "\"NaN\"");
        for x in [1.5, 2.0, 1e300, 1e-300, -0.1, 123456789.125] {
            let s = f(x);
            let back: f64 = serde_json::from_str(&s).unwrap();
            assert_eq!(back, x);
        }
    }
}
