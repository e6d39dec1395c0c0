//! Writing a [`TraceClass`] as CTF 1.8 TSDL text that babeltrace2 and our parser read back.
//!
//! Every type is written inline (no typealiases), so the text is self-contained and parsing it
//! gives back the same IR, with one normalization: a string of [`Encoding::None`] is written
//! as `string` and parses back as UTF-8. A stream class's `id` (and its events' `stream_id`)
//! is left out when the packet header has no `stream_id` member and the id is 0
//! (babeltrace2 rejects a stream `id` readers cannot find in packets); it parses back as 0.

use std::fmt::Write;

use crate::ir::{
    uuid_string, ByteOrder, DisplayBase, Encoding, EnvValue, FieldPath, FieldType, IntType, TraceClass,
};

/// Renders `trace` as TSDL text (starting with the `/* CTF 1.8 */` signature).
pub fn to_tsdl(trace: &TraceClass) -> String {
    let mut s = String::from("/* CTF 1.8 */\n\n");
    let bo = trace.byte_order;
    s.push_str("trace {\n");
    let _ = writeln!(s, "\tmajor = {};\n\tminor = {};", trace.major, trace.minor);
    if let Some(u) = trace.uuid {
        let _ = writeln!(s, "\tuuid = \"{}\";", uuid_string(&u));
    }
    let _ = writeln!(s, "\tbyte_order = {};", bo_name(bo));
    if let Some(h) = &trace.packet_header {
        s.push_str("\tpacket.header := ");
        ty(&mut s, h, bo, 1);
        s.push_str(";\n");
    }
    s.push_str("};\n\n");
    if !trace.env.is_empty() {
        s.push_str("env {\n");
        for (k, v) in &trace.env {
            match v {
                EnvValue::Int(i) => {
                    let _ = writeln!(s, "\t{k} = {i};");
                }
                EnvValue::Str(t) => {
                    let _ = writeln!(s, "\t{k} = {};", quote(t));
                }
            }
        }
        s.push_str("};\n\n");
    }
    for c in &trace.clocks {
        s.push_str("clock {\n");
        let _ = writeln!(s, "\tname = {};", ident_or_quote(&c.name));
        if let Some(u) = c.uuid {
            let _ = writeln!(s, "\tuuid = \"{}\";", uuid_string(&u));
        }
        if let Some(d) = &c.description {
            let _ = writeln!(s, "\tdescription = {};", quote(d));
        }
        let _ = writeln!(s, "\tfreq = {};", c.freq);
        let _ = writeln!(s, "\tprecision = {};", c.precision);
        let _ = writeln!(s, "\toffset_s = {};", c.offset_s);
        let _ = writeln!(s, "\toffset = {};", c.offset);
        let _ = writeln!(s, "\tabsolute = {};", if c.absolute { "true" } else { "false" });
        s.push_str("};\n\n");
    }
    // babeltrace2 rejects a stream `id` when the packet header has no `stream_id` member; the
    // id is then meaningless (one stream class), and 0 when parsed back.
    let has_stream_id = trace.packet_header.as_deref().and_then(FieldType::as_struct).is_some_and(|h| h.fields.iter().any(|f| f.name == "stream_id"));
    for st in &trace.streams {
        let write_id = has_stream_id || st.id != 0;
        s.push_str("stream {\n");
        if write_id {
            let _ = writeln!(s, "\tid = {};", st.id);
        }
        for (name, t) in [("packet.context", &st.packet_context), ("event.header", &st.event_header), ("event.context", &st.event_context)] {
            if let Some(t) = t {
                let _ = write!(s, "\t{name} := ");
                ty(&mut s, t, bo, 1);
                s.push_str(";\n");
            }
        }
        s.push_str("};\n\n");
        for ev in &st.events {
            s.push_str("event {\n");
            let _ = writeln!(s, "\tname = {};", quote(&ev.name));
            let _ = writeln!(s, "\tid = {};", ev.id);
            if write_id {
                let _ = writeln!(s, "\tstream_id = {};", st.id);
            }
            if let Some(l) = ev.loglevel {
                let _ = writeln!(s, "\tloglevel = {l};");
            }
            if let Some(u) = &ev.model_emf_uri {
                let _ = writeln!(s, "\tmodel.emf.uri = {};", quote(u));
            }
            for (name, t) in [("context", &ev.context), ("fields", &ev.payload)] {
                if let Some(t) = t {
                    let _ = write!(s, "\t{name} := ");
                    ty(&mut s, t, bo, 1);
                    s.push_str(";\n");
                }
            }
            s.push_str("};\n\n");
        }
    }
    for c in &trace.callsites {
        let _ = writeln!(
            s,
            "callsite {{\n\tname = {};\n\tfunc = {};\n\tip = {:#x};\n\tfile = {};\n\tline = {};\n}};\n",
            quote(&c.name),
            quote(&c.func),
            c.ip,
            quote(&c.file),
            c.line
        );
    }
    s
}

fn bo_name(bo: ByteOrder) -> &'static str {
    match bo {
        ByteOrder::Little => "le",
        ByteOrder::Big => "be",
    }
}

/// A TSDL string literal.
pub fn quote(t: &str) -> String {
    let mut q = String::with_capacity(t.len() + 2);
    q.push('"');
    for c in t.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\t' => q.push_str("\\t"),
            '\r' => q.push_str("\\r"),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

fn ident_or_quote(t: &str) -> String {
    let ident = !t.is_empty() && t.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ident {
        t.to_string()
    } else {
        quote(t)
    }
}

fn int(s: &mut String, i: &IntType, trace_bo: ByteOrder) {
    let _ = write!(s, "integer {{ size = {}; align = {}; signed = {}; ", i.size, i.align, if i.signed { "true" } else { "false" });
    if i.byte_order != trace_bo {
        let _ = write!(s, "byte_order = {}; ", bo_name(i.byte_order));
    }
    let base = match i.base {
        DisplayBase::Binary => 2,
        DisplayBase::Octal => 8,
        DisplayBase::Decimal => 10,
        DisplayBase::Hexadecimal => 16,
    };
    let _ = write!(s, "base = {base}; ");
    match i.encoding {
        Encoding::None => {}
        Encoding::Ascii => s.push_str("encoding = ASCII; "),
        // (UTF-16 and UTF-32 are CTF 2's: see `write::ctf2_only`.)
        _ => s.push_str("encoding = UTF8; "),
    }
    if let Some(c) = &i.mapped_clock {
        let _ = write!(s, "map = clock.{c}.value; ");
    }
    s.push('}');
}

fn path(p: &FieldPath) -> String {
    p.to_string()
}

fn indent(s: &mut String, depth: usize) {
    for _ in 0..depth {
        s.push('\t');
    }
}

/// Writes a type specifier; arrays and sequences are written by [`member`] around it.
fn ty(s: &mut String, t: &FieldType, bo: ByteOrder, depth: usize) {
    match t {
        FieldType::Int(i) => int(s, i, bo),
        FieldType::Float(f) => {
            let _ = write!(s, "floating_point {{ exp_dig = {}; mant_dig = {}; align = {}; ", f.exp_dig, f.mant_dig, f.align);
            if f.byte_order != bo {
                let _ = write!(s, "byte_order = {}; ", bo_name(f.byte_order));
            }
            s.push('}');
        }
        FieldType::String(e) => match e {
            Encoding::Ascii => s.push_str("string { encoding = ASCII; }"),
            _ => s.push_str("string"),
        },
        FieldType::Enum(e) => {
            s.push_str("enum : ");
            int(s, &e.container, bo);
            s.push_str(" {\n");
            for (k, m) in e.mappings.iter().enumerate() {
                indent(s, depth + 1);
                if m.lower == m.upper {
                    let _ = write!(s, "{} = {}", quote(&m.label), m.lower);
                } else {
                    let _ = write!(s, "{} = {} ... {}", quote(&m.label), m.lower, m.upper);
                }
                s.push_str(if k + 1 < e.mappings.len() { ",\n" } else { "\n" });
            }
            indent(s, depth);
            s.push('}');
        }
        FieldType::Struct(st) => {
            s.push_str("struct {\n");
            for f in &st.fields {
                member(s, &f.name, &f.ty, bo, depth + 1);
            }
            indent(s, depth);
            s.push('}');
            if st.min_align > 1 {
                let _ = write!(s, " align({})", st.min_align);
            }
        }
        FieldType::Variant(v) => {
            let _ = writeln!(s, "variant <{}> {{", path(&v.tag));
            for o in &v.options {
                member(s, &o.name, &o.ty, bo, depth + 1);
            }
            indent(s, depth);
            s.push('}');
        }
        // CTF 2's own field classes, written as near as TSDL gets (the trace writer refuses
        // them for CTF 1.8 output: see `write::ctf2_only`).
        FieldType::Bool(i) => int(s, i, bo),
        FieldType::BitMap(e) => int(s, &e.container, bo),
        FieldType::Optional(o) => ty(s, &o.ty, bo, depth),
        FieldType::Array(_) | FieldType::Sequence(_) | FieldType::Blob(_) => {
            // A nameless array cannot be a declaration's type; wrap it in a structure.
            s.push_str("struct {\n");
            member(s, "_value", t, bo, depth + 1);
            indent(s, depth);
            s.push('}');
        }
    }
}

/// Writes `type name[dims];` for a structure member or variant option.
fn member(s: &mut String, name: &str, t: &FieldType, bo: ByteOrder, depth: usize) {
    let mut dims = String::new();
    let mut base = t;
    loop {
        match base {
            FieldType::Array(a) => {
                let _ = write!(dims, "[{}]", a.length);
                base = &a.element;
            }
            FieldType::Sequence(q) => {
                let _ = write!(dims, "[{}]", path(&q.length));
                base = &q.element;
            }
            FieldType::Blob(b) => {
                match &b.length {
                    crate::ir::BlobLength::Static(n) => write!(dims, "[{n}]"),
                    crate::ir::BlobLength::Dynamic(p) => write!(dims, "[{}]", path(p)),
                }
                .ok();
                indent(s, depth);
                let _ = writeln!(s, "integer {{ size = 8; align = 8; signed = false; base = 16; }} {name}{dims};");
                return;
            }
            _ => break,
        }
    }
    indent(s, depth);
    ty(s, base, bo, depth);
    let _ = writeln!(s, " {name}{dims};");
}
