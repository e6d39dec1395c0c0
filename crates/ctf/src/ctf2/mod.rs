//! CTF 2 metadata (CTF2-SPEC-2.0): a JSON text sequence of fragments — a preamble, field
//! class aliases, a trace class, clock classes, data stream classes and event record classes —
//! lowered into the same [`TraceClass`] as TSDL (see [`crate::ir`] for how CTF 2's field
//! classes map onto it).
//!
//! Every property is checked (unknown ones, wrong JSON types, out-of-range values, bad
//! locations are errors) so that a metadata stream is accepted exactly when a conforming
//! consumer accepts it; an error names the fragment (its index, type and first line) and the
//! JSON path of the offending value ([`crate::Error::Ctf2`]). Field locations are then
//! resolved by the one layout compiler ([`crate::layout`]), which must find every length and
//! selector before the field that needs it.
//!
//! Also read: the pre-2.0 drafts' forms found in the Trace Compass samples — the
//! `fixed-length-{unsigned,signed}-enumeration` field classes, locations as an array
//! `[origin, name...]`, `uuid` arrays on the trace and clock classes, clock classes
//! identified by `name` and data stream classes naming theirs with
//! `default-clock-class-name`, `attributes` for `user-attributes`.

mod json;

use std::collections::HashMap;
use std::sync::Arc;

use crate::ir::{
    ArrayType, BlobLength, BlobType, ByteOrder, ClockClass, DisplayBase, Encoding, EnumMapping, EnumType, EnvValue, EventClass, FieldPath, FieldType, FloatType, IntType, NamedField,
    OptionalType, Role, Scope, SequenceType, StreamClass, StructType, TraceClass, VariantType,
};
use crate::layout::{NodeId, NodeKind, StreamLayout};
use crate::{Error, Result};

pub(crate) use json::RS;
use json::Json;

/// Whether metadata bytes are a CTF 2 JSON text sequence (their first non-blank byte is the
/// record separator).
pub fn is_ctf2(bytes: &[u8]) -> bool {
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&RS)
}

/// A lowering failure: the JSON path (from the fragment's root) and the message.
#[derive(Debug)]
struct E {
    path: String,
    msg: String,
}

type R<T> = std::result::Result<T, E>;

/// A JSON path under construction: a linked list of segments, rendered only on errors.
#[derive(Clone, Copy)]
struct P<'a> {
    parent: Option<&'a P<'a>>,
    seg: Seg<'a>,
}

#[derive(Clone, Copy)]
enum Seg<'a> {
    Root,
    Key(&'a str),
    Idx(usize),
}

impl<'a> P<'a> {
    const ROOT: P<'static> = P { parent: None, seg: Seg::Root };

    fn key(&'a self, k: &'a str) -> P<'a> {
        P { parent: Some(self), seg: Seg::Key(k) }
    }

    fn idx(&'a self, i: usize) -> P<'a> {
        P { parent: Some(self), seg: Seg::Idx(i) }
    }

    fn render(&self) -> String {
        let mut segs = Vec::new();
        let mut p = Some(self);
        while let Some(x) = p {
            segs.push(x.seg);
            p = x.parent;
        }
        let mut s = String::new();
        for seg in segs.iter().rev() {
            match seg {
                Seg::Root => {}
                Seg::Key(k) => {
                    s.push('/');
                    s.push_str(k);
                }
                Seg::Idx(i) => {
                    s.push('/');
                    s.push_str(&i.to_string());
                }
            }
        }
        if s.is_empty() {
            s.push('/');
        }
        s
    }

    fn err<T>(&self, msg: impl Into<String>) -> R<T> {
        Err(E { path: self.render(), msg: msg.into() })
    }
}

/// An object's members, checked against the properties its kind allows.
struct Obj<'j> {
    members: &'j [(String, Json)],
}

impl<'j> Obj<'j> {
    fn new(v: &'j Json, p: &P<'_>, what: &str, allowed: &[&str]) -> R<Obj<'j>> {
        let Json::Obj(members) = v else { return p.err(format!("expecting an object ({what}), got {}", v.kind())) };
        for (k, _) in members {
            if !allowed.contains(&k.as_str()) && !COMMON.contains(&k.as_str()) {
                return p.key(k).err(format!("unknown property `{k}` of {what}"));
            }
        }
        let o = Obj { members };
        for k in ["user-attributes", "attributes"] {
            if let Some(v) = o.get(k) {
                if !matches!(v, Json::Obj(_)) {
                    return p.key(k).err(format!("expecting an object, got {}", v.kind()));
                }
            }
        }
        if let Some(v) = o.get("extensions") {
            match v {
                Json::Obj(m) if m.is_empty() => {}
                Json::Obj(m) => return p.key("extensions").key(&m[0].0).err(format!("unsupported extension `{}`", m[0].0)),
                other => return p.key("extensions").err(format!("expecting an object, got {}", other.kind())),
            }
        }
        Ok(o)
    }

    fn get(&self, k: &str) -> Option<&'j Json> {
        self.members.iter().find(|(x, _)| x == k).map(|(_, v)| v)
    }

    fn req(&self, k: &str, p: &P<'_>) -> R<&'j Json> {
        self.get(k).ok_or_else(|| E { path: p.render(), msg: format!("missing property `{k}`") })
    }

    fn str(&self, k: &str, p: &P<'_>) -> R<Option<&'j str>> {
        match self.get(k) {
            None => Ok(None),
            Some(Json::Str(s)) => Ok(Some(s)),
            Some(v) => p.key(k).err(format!("expecting a string, got {}", v.kind())),
        }
    }

    fn uint(&self, k: &str, p: &P<'_>) -> R<Option<u64>> {
        match self.get(k) {
            None => Ok(None),
            Some(v) => uint(v, &p.key(k)).map(Some),
        }
    }

    fn int(&self, k: &str, p: &P<'_>) -> R<Option<i64>> {
        match self.get(k) {
            None => Ok(None),
            Some(Json::Int(i)) => i64::try_from(*i).map(Some).or_else(|_| p.key(k).err(format!("{i} is out of range"))),
            Some(v) => p.key(k).err(format!("expecting an integer, got {}", v.kind())),
        }
    }
}

/// Properties any fragment or field class may have.
const COMMON: [&str; 3] = ["type", "user-attributes", "extensions"];

fn uint(v: &Json, p: &P<'_>) -> R<u64> {
    match v {
        Json::Int(i) => u64::try_from(*i).or_else(|_| p.err(format!("expecting an unsigned integer, got {i}"))),
        v => p.err(format!("expecting an unsigned integer, got {}", v.kind())),
    }
}

/// What a field class is lowered in: the scope (for roles and absolute locations) and the
/// data stream class's default clock.
#[derive(Clone, Copy)]
struct Cx<'c> {
    scope: Scope,
    clock: Option<&'c str>,
}

/// The metadata being lowered.
struct Lower {
    aliases: HashMap<String, Json>,
    trace: TraceClass,
    /// Default clock name of each data stream class (by id).
    stream_clocks: HashMap<u64, Option<String>>,
    /// Fragment index of each data stream class and event record class, for errors found by
    /// the layout compiler: (stream id, event id or None) -> fragment index.
    origins: HashMap<(u64, Option<u64>), usize>,
    saw_trace_class: bool,
}

/// Parses CTF 2 metadata text (a JSON text sequence) into a [`TraceClass`].
pub fn parse(text: &str) -> Result<TraceClass> {
    let frags = json::split(text).map_err(|(line, message)| Error::Ctf2 { fragment: 0, line, kind: String::new(), path: String::new(), message })?;
    let mut l = Lower {
        aliases: HashMap::new(),
        trace: TraceClass {
            major: 2,
            minor: 0,
            uuid: None,
            byte_order: ByteOrder::Little,
            packet_header: None,
            env: Vec::new(),
            clocks: Vec::new(),
            streams: Vec::new(),
            callsites: Vec::new(),
        },
        stream_clocks: HashMap::new(),
        origins: HashMap::new(),
        saw_trace_class: false,
    };
    if frags.is_empty() {
        return Err(Error::Ctf2 { fragment: 0, line: 1, kind: String::new(), path: String::new(), message: "no fragment (a preamble must come first)".into() });
    }
    for (i, f) in frags.iter().enumerate() {
        let n = i + 1;
        let j = json::parse(f).map_err(|(line, column, message)| Error::Ctf2 {
            fragment: n,
            line,
            kind: String::new(),
            path: String::new(),
            message: format!("column {column}: invalid JSON: {message}"),
        })?;
        let kind = match j.get("type") {
            Some(Json::Str(s)) => s.clone(),
            _ => String::new(),
        };
        l.fragment(&j, i).map_err(|e| Error::Ctf2 { fragment: n, line: f.line, kind: kind.clone(), path: e.path, message: e.msg })?;
    }
    l.check_layouts(&frags)?;
    Ok(l.trace)
}

impl Lower {
    fn fragment(&mut self, j: &Json, index: usize) -> R<()> {
        let p = P::ROOT;
        let kind = match j {
            Json::Obj(_) => match j.get("type") {
                Some(Json::Str(s)) => s.as_str(),
                Some(v) => return p.key("type").err(format!("expecting a string, got {}", v.kind())),
                None => return p.err("missing property `type`"),
            },
            v => return p.err(format!("a fragment must be an object, got {}", v.kind())),
        };
        if index == 0 && kind != "preamble" {
            return p.err(format!("the first fragment must be the preamble, not `{kind}`"));
        }
        match kind {
            "preamble" if index == 0 => self.preamble(j, &p),
            "preamble" => p.err("a second preamble"),
            "field-class-alias" => self.alias(j, &p),
            "trace-class" => self.trace_class(j, &p),
            "clock-class" => self.clock_class(j, &p),
            "data-stream-class" => self.stream_class(j, &p, index),
            "event-record-class" => self.event_class(j, &p, index),
            other => p.key("type").err(format!("unknown fragment type `{other}`")),
        }
    }

    fn preamble(&mut self, j: &Json, p: &P<'_>) -> R<()> {
        let o = Obj::new(j, p, "the preamble", &["version", "uuid", "attributes"])?;
        match o.req("version", p)? {
            Json::Int(2) => {}
            v => return p.key("version").err(format!("unsupported CTF version {}", json_text(v))),
        }
        if let Some(u) = o.get("uuid") {
            self.trace.uuid = Some(uuid(u, &p.key("uuid"))?);
        }
        Ok(())
    }

    fn alias(&mut self, j: &Json, p: &P<'_>) -> R<()> {
        let o = Obj::new(j, p, "a field class alias", &["name", "field-class", "attributes"])?;
        let name = o.str("name", p)?.ok_or_else(|| E { path: p.render(), msg: "missing property `name`".into() })?;
        let fc = o.req("field-class", p)?;
        if self.aliases.contains_key(name) {
            return p.key("name").err(format!("duplicate field class alias `{name}`"));
        }
        // Checked now (with no scope-dependent role), used wherever it is named.
        self.field_class(fc, &p.key("field-class"), Cx { scope: Scope::EventPayload, clock: None }, false)?;
        self.aliases.insert(name.to_string(), fc.clone());
        Ok(())
    }

    fn trace_class(&mut self, j: &Json, p: &P<'_>) -> R<()> {
        let o = Obj::new(j, p, "the trace class", &["namespace", "name", "uid", "uuid", "environment", "packet-header-field-class", "attributes"])?;
        if self.saw_trace_class {
            return p.err("a second trace class");
        }
        if !self.trace.streams.is_empty() || !self.trace.clocks.is_empty() {
            return p.err("the trace class must come before clock and data stream classes");
        }
        self.saw_trace_class = true;
        for k in ["namespace", "name", "uid"] {
            o.str(k, p)?;
        }
        if let Some(u) = o.get("uuid") {
            let u = uuid(u, &p.key("uuid"))?;
            self.trace.uuid.get_or_insert(u);
        }
        if let Some(env) = o.get("environment") {
            let pe = p.key("environment");
            let Json::Obj(m) = env else { return pe.err(format!("expecting an object, got {}", env.kind())) };
            for (k, v) in m {
                let value = match v {
                    Json::Str(s) => EnvValue::Str(s.clone()),
                    Json::Int(i) => EnvValue::Int(i64::try_from(*i).or_else(|_| pe.key(k).err(format!("{i} is out of range")))?),
                    v => return pe.key(k).err(format!("an environment value must be a string or an integer, got {}", v.kind())),
                };
                self.trace.env.push((k.clone(), value));
            }
        }
        if let Some(fc) = o.get("packet-header-field-class") {
            let t = self.scope_root(fc, &p.key("packet-header-field-class"), Cx { scope: Scope::PacketHeader, clock: None })?;
            self.trace.packet_header = Some(Arc::new(t));
        }
        Ok(())
    }

    fn clock_class(&mut self, j: &Json, p: &P<'_>) -> R<()> {
        let o = Obj::new(
            j,
            p,
            "a clock class",
            &["id", "namespace", "name", "uid", "uuid", "frequency", "offset-from-origin", "origin", "precision", "accuracy", "description", "attributes"],
        )?;
        let id = o.str("id", p)?;
        let name = o.str("name", p)?;
        o.str("namespace", p)?;
        o.str("uid", p)?;
        let Some(key) = id.or(name) else { return p.err("missing property `id`") };
        if self.trace.clocks.iter().any(|c| c.name == key) {
            return p.err(format!("duplicate clock class `{key}`"));
        }
        let freq = o.uint("frequency", p)?.ok_or_else(|| E { path: p.render(), msg: "missing property `frequency`".into() })?;
        if freq == 0 {
            return p.key("frequency").err("the frequency must be positive");
        }
        let mut c = ClockClass { name: key.to_string(), freq, ..ClockClass::default() };
        if let Some(off) = o.get("offset-from-origin") {
            let po = p.key("offset-from-origin");
            let oo = Obj::new(off, &po, "a clock offset", &["seconds", "cycles"])?;
            c.offset_s = oo.int("seconds", &po)?.unwrap_or(0);
            let cycles = oo.uint("cycles", &po)?.unwrap_or(0);
            if cycles >= freq {
                return po.key("cycles").err(format!("{cycles} cycles is not below the frequency ({freq})"));
            }
            c.offset = cycles as i64;
        }
        match o.get("origin") {
            None => {}
            Some(Json::Str(s)) if s == "unix-epoch" => c.absolute = true,
            Some(Json::Str(s)) => return p.key("origin").err(format!("unknown origin `{s}` (expecting `unix-epoch` or an object)")),
            Some(v @ Json::Obj(_)) => {
                let po = p.key("origin");
                let oo = Obj::new(v, &po, "a clock origin", &["namespace", "name", "uid"])?;
                oo.str("namespace", &po)?;
                oo.str("name", &po)?.ok_or_else(|| E { path: po.render(), msg: "missing property `name`".into() })?;
                oo.str("uid", &po)?.ok_or_else(|| E { path: po.render(), msg: "missing property `uid`".into() })?;
            }
            Some(v) => return p.key("origin").err(format!("expecting a string or an object, got {}", v.kind())),
        }
        c.precision = o.uint("precision", p)?.unwrap_or(0);
        o.uint("accuracy", p)?;
        c.description = o.str("description", p)?.map(str::to_string);
        if let Some(u) = o.get("uuid") {
            c.uuid = Some(uuid(u, &p.key("uuid"))?);
        } else if let Some(uid) = o.str("uid", p)? {
            c.uuid = crate::ir::parse_uuid_string(uid);
        }
        self.trace.clocks.push(c);
        Ok(())
    }

    fn stream_class(&mut self, j: &Json, p: &P<'_>, index: usize) -> R<()> {
        let o = Obj::new(
            j,
            p,
            "a data stream class",
            &[
                "id",
                "namespace",
                "name",
                "uid",
                "default-clock-class-id",
                "default-clock-class-name",
                "packet-context-field-class",
                "event-record-header-field-class",
                "event-record-common-context-field-class",
                "attributes",
            ],
        )?;
        let id = o.uint("id", p)?.unwrap_or(0);
        for k in ["namespace", "name", "uid"] {
            o.str(k, p)?;
        }
        if self.stream_clocks.contains_key(&id) {
            return p.key("id").err(format!("duplicate data stream class id {id}"));
        }
        let clock = match (o.str("default-clock-class-id", p)?, o.str("default-clock-class-name", p)?) {
            (Some(c), _) => Some(("default-clock-class-id", c)),
            (None, Some(c)) => Some(("default-clock-class-name", c)),
            (None, None) => None,
        };
        if let Some((k, c)) = clock {
            if !self.trace.clocks.iter().any(|x| x.name == c) {
                return p.key(k).err(format!("no clock class `{c}`"));
            }
        }
        let clock = clock.map(|(_, c)| c);
        let root = |k: &str, scope: Scope| -> R<Option<Arc<FieldType>>> {
            match o.get(k) {
                None => Ok(None),
                Some(fc) => Ok(Some(Arc::new(self.scope_root(fc, &p.key(k), Cx { scope, clock })?))),
            }
        };
        let packet_context = root("packet-context-field-class", Scope::PacketContext)?;
        let event_header = root("event-record-header-field-class", Scope::EventHeader)?;
        let event_context = root("event-record-common-context-field-class", Scope::EventCommonContext)?;
        self.stream_clocks.insert(id, clock.map(str::to_string));
        self.origins.insert((id, None), index);
        self.trace.streams.push(StreamClass { id, packet_context, event_header, event_context, events: Vec::new() });
        Ok(())
    }

    fn event_class(&mut self, j: &Json, p: &P<'_>, index: usize) -> R<()> {
        let o = Obj::new(
            j,
            p,
            "an event record class",
            &["id", "data-stream-class-id", "namespace", "name", "uid", "specific-context-field-class", "payload-field-class", "attributes"],
        )?;
        let id = o.uint("id", p)?.unwrap_or(0);
        let sid = o.uint("data-stream-class-id", p)?.unwrap_or(0);
        o.str("namespace", p)?;
        o.str("uid", p)?;
        let name = o.str("name", p)?.unwrap_or("").to_string();
        let Some(clock) = self.stream_clocks.get(&sid).cloned() else {
            return match o.get("data-stream-class-id") {
                Some(_) => p.key("data-stream-class-id").err(format!("no data stream class {sid}")),
                None => p.err(format!("no data stream class {sid} (declare one before event record classes)")),
            };
        };
        let cx = |scope| Cx { scope, clock: clock.as_deref() };
        let context = match o.get("specific-context-field-class") {
            Some(fc) => Some(Arc::new(self.scope_root(fc, &p.key("specific-context-field-class"), cx(Scope::EventSpecificContext))?)),
            None => None,
        };
        let payload = match o.get("payload-field-class") {
            Some(fc) => Some(Arc::new(self.scope_root(fc, &p.key("payload-field-class"), cx(Scope::EventPayload))?)),
            None => None,
        };
        let (loglevel, model_emf_uri) = bt_attributes(&o);
        let stream = self.trace.streams.iter_mut().find(|s| s.id == sid).ok_or_else(|| E { path: p.render(), msg: format!("no data stream class {sid}") })?;
        if stream.events.iter().any(|e| e.id == id) {
            return p.key("id").err(format!("duplicate event record class id {id} in data stream class {sid}"));
        }
        stream.events.push(EventClass { id, name, loglevel, model_emf_uri, context, payload });
        self.origins.insert((sid, Some(id)), index);
        Ok(())
    }

    /// A scope's root: a structure.
    fn scope_root(&self, fc: &Json, p: &P<'_>, cx: Cx<'_>) -> R<FieldType> {
        let t = self.field_class(fc, p, cx, true)?;
        match t {
            FieldType::Struct(_) => Ok(t),
            _ => p.err("a scope's field class must be a structure"),
        }
    }

    /// Lowers a field class (an object, or an alias name). `roles`: whether roles are
    /// resolved (false when an alias is checked on its own).
    fn field_class(&self, fc: &Json, p: &P<'_>, cx: Cx<'_>, roles: bool) -> R<FieldType> {
        self.field_class_at(fc, p, cx, roles, 0)
    }

    fn field_class_at(&self, fc: &Json, p: &P<'_>, cx: Cx<'_>, roles: bool, depth: u32) -> R<FieldType> {
        if depth > 100 {
            return p.err("field classes nested too deeply");
        }
        let fc = match fc {
            Json::Str(name) => match self.aliases.get(name) {
                Some(a) => return self.field_class_at(a, p, cx, roles, depth + 1),
                None => return p.err(format!("no field class alias `{name}`")),
            },
            Json::Obj(_) => fc,
            v => return p.err(format!("expecting a field class (an object or an alias name), got {}", v.kind())),
        };
        let ty = match fc.get("type") {
            Some(Json::Str(s)) => s.as_str(),
            Some(v) => return p.key("type").err(format!("expecting a string, got {}", v.kind())),
            None => return p.err("missing property `type`"),
        };
        const BITS: [&str; 4] = ["length", "byte-order", "bit-order", "alignment"];
        const INT: [&str; 7] = ["length", "byte-order", "bit-order", "alignment", "preferred-display-base", "mappings", "roles"];
        const VINT: [&str; 3] = ["preferred-display-base", "mappings", "roles"];
        match ty {
            "fixed-length-bit-array" | "fixed-length-boolean" => {
                let o = Obj::new(fc, p, ty, &BITS)?;
                let i = self.fixed_int(&o, p, false, false)?;
                Ok(if ty == "fixed-length-boolean" { FieldType::Bool(i) } else { FieldType::Int(IntType { base: DisplayBase::Hexadecimal, ..i }) })
            }
            "fixed-length-bit-map" => {
                let o = Obj::new(fc, p, ty, &["length", "byte-order", "bit-order", "alignment", "flags"])?;
                let i = self.fixed_int(&o, p, false, false)?;
                let pf = p.key("flags");
                let Json::Obj(flags) = o.req("flags", p)? else { return pf.err("expecting an object") };
                if flags.is_empty() {
                    return pf.err("a bit map needs at least one flag");
                }
                let mut mappings = Vec::new();
                for (label, ranges) in flags {
                    for (lower, upper) in ranges_of(ranges, &pf.key(label), false)? {
                        if upper >= i.size as i128 {
                            return pf.key(label).err(format!("bit index {upper} is outside the {}-bit bit map", i.size));
                        }
                        mappings.push(EnumMapping { label: label.clone(), lower, upper });
                    }
                }
                Ok(FieldType::BitMap(EnumType { container: i, mappings }))
            }
            "fixed-length-unsigned-integer" | "fixed-length-signed-integer" | "fixed-length-unsigned-enumeration" | "fixed-length-signed-enumeration" => {
                let signed = ty.contains("-signed-");
                let allowed: &[&str] = if signed { &INT[..6] } else { &INT };
                let o = Obj::new(fc, p, ty, allowed)?;
                let mut i = self.fixed_int(&o, p, signed, false)?;
                self.int_extras(&o, p, cx, roles, &mut i)?;
                self.with_mappings(&o, p, i, ty.ends_with("-enumeration"))
            }
            "variable-length-unsigned-integer" | "variable-length-signed-integer" => {
                let signed = ty.contains("-signed-");
                let allowed: &[&str] = if signed { &VINT[..2] } else { &VINT };
                let o = Obj::new(fc, p, ty, allowed)?;
                let mut i = IntType { varlen: true, align: 8, ..IntType::new(64, signed, ByteOrder::Little) };
                self.int_extras(&o, p, cx, roles, &mut i)?;
                self.with_mappings(&o, p, i, false)
            }
            "fixed-length-floating-point-number" => {
                let o = Obj::new(fc, p, ty, &BITS)?;
                let i = self.fixed_int(&o, p, false, true)?;
                let (exp_dig, mant_dig) = match i.size {
                    16 => (5, 11),
                    32 => (8, 24),
                    64 => (11, 53),
                    128 => (15, 113),
                    n => return p.key("length").err(format!("a floating point number has 16, 32, 64 or 128 bits, not {n}")),
                };
                if i.reversed {
                    return p.key("bit-order").err("reversed bit order is not supported for floating point numbers");
                }
                Ok(FieldType::Float(FloatType { exp_dig, mant_dig, align: i.align, byte_order: i.byte_order }))
            }
            "null-terminated-string" => {
                let o = Obj::new(fc, p, ty, &["encoding"])?;
                Ok(FieldType::String(encoding(&o, p)?))
            }
            "static-length-string" | "dynamic-length-string" => {
                let dynamic = ty.starts_with("dynamic");
                let o = Obj::new(fc, p, ty, if dynamic { &["length-field-location", "encoding"] } else { &["length", "encoding"] })?;
                let e = encoding(&o, p)?;
                let element = Box::new(FieldType::Int(IntType { encoding: e, ..IntType::new(8, false, ByteOrder::Little) }));
                Ok(if dynamic {
                    FieldType::Sequence(SequenceType { element, length: location(o.req("length-field-location", p)?, &p.key("length-field-location"))? })
                } else {
                    FieldType::Array(ArrayType { element, length: o.uint("length", p)?.ok_or_else(|| missing(p, "length"))? })
                })
            }
            "static-length-blob" | "dynamic-length-blob" => {
                let dynamic = ty.starts_with("dynamic");
                let o = Obj::new(fc, p, ty, if dynamic { &["length-field-location", "media-type"] } else { &["length", "media-type", "roles"] })?;
                let media_type = o.str("media-type", p)?.unwrap_or("application/octet-stream").to_string();
                let length = if dynamic {
                    BlobLength::Dynamic(location(o.req("length-field-location", p)?, &p.key("length-field-location"))?)
                } else {
                    BlobLength::Static(o.uint("length", p)?.ok_or_else(|| missing(p, "length"))?)
                };
                let mut role = None;
                if let Some(rs) = o.get("roles") {
                    let prs = p.key("roles");
                    for (k, r) in strings(rs, &prs)?.into_iter().enumerate() {
                        let pr = prs.idx(k);
                        match r {
                            "metadata-stream-uuid" if roles && cx.scope != Scope::PacketHeader => return pr.err("the `metadata-stream-uuid` role belongs in the packet header"),
                            "metadata-stream-uuid" if length != BlobLength::Static(16) => return pr.err("the `metadata-stream-uuid` role needs a 16-byte BLOB"),
                            "metadata-stream-uuid" => role = Some(Role::Uuid),
                            other => return pr.err(format!("unknown BLOB role `{other}`")),
                        }
                    }
                }
                Ok(FieldType::Blob(BlobType { length, media_type, role }))
            }
            "structure" => {
                let o = Obj::new(fc, p, ty, &["member-classes", "minimum-alignment"])?;
                let min_align = alignment(&o, "minimum-alignment", p)?;
                let mut fields: Vec<NamedField> = Vec::new();
                if let Some(ms) = o.get("member-classes") {
                    let pm = p.key("member-classes");
                    let Json::Arr(ms) = ms else { return pm.err(format!("expecting an array, got {}", ms.kind())) };
                    for (k, m) in ms.iter().enumerate() {
                        let pk = pm.idx(k);
                        let mo = Obj::new(m, &pk, "a structure member", &["name", "field-class", "attributes"])?;
                        let name = mo.str("name", &pk)?.ok_or_else(|| missing(&pk, "name"))?;
                        if fields.iter().any(|f| f.name == name) {
                            return pk.key("name").err(format!("duplicate member name `{name}`"));
                        }
                        let ty = self.field_class_at(mo.req("field-class", &pk)?, &pk.key("field-class"), cx, roles, depth + 1)?;
                        fields.push(NamedField { name: name.to_string(), ty });
                    }
                }
                Ok(FieldType::Struct(StructType { fields, min_align }))
            }
            "static-length-array" | "dynamic-length-array" => {
                let dynamic = ty.starts_with("dynamic");
                let o = Obj::new(fc, p, ty, &["element-field-class", if dynamic { "length-field-location" } else { "length" }, "minimum-alignment"])?;
                let element = self.field_class_at(o.req("element-field-class", p)?, &p.key("element-field-class"), cx, roles, depth + 1)?;
                let min_align = alignment(&o, "minimum-alignment", p)?;
                if min_align > element.alignment() {
                    return p.key("minimum-alignment").err("an array minimum alignment above its elements' alignment is not supported");
                }
                let element = Box::new(element);
                Ok(if dynamic {
                    FieldType::Sequence(SequenceType { element, length: location(o.req("length-field-location", p)?, &p.key("length-field-location"))? })
                } else {
                    FieldType::Array(ArrayType { element, length: o.uint("length", p)?.ok_or_else(|| missing(p, "length"))? })
                })
            }
            "optional" => {
                let o = Obj::new(fc, p, ty, &["field-class", "selector-field-location", "selector-field-ranges"])?;
                let inner = self.field_class_at(o.req("field-class", p)?, &p.key("field-class"), cx, roles, depth + 1)?;
                let selector = location(o.req("selector-field-location", p)?, &p.key("selector-field-location"))?;
                let ranges = match o.get("selector-field-ranges") {
                    Some(r) => Some(ranges_of(r, &p.key("selector-field-ranges"), true)?),
                    None => None,
                };
                Ok(FieldType::Optional(OptionalType { ty: Box::new(inner), selector, ranges }))
            }
            "variant" => {
                let o = Obj::new(fc, p, ty, &["options", "selector-field-location"])?;
                let tag = location(o.req("selector-field-location", p)?, &p.key("selector-field-location"))?;
                let po = p.key("options");
                let Json::Arr(opts) = o.req("options", p)? else { return po.err("expecting an array") };
                if opts.is_empty() {
                    return po.err("a variant needs at least one option");
                }
                let (mut options, mut ranges) = (Vec::new(), Vec::new());
                for (k, opt) in opts.iter().enumerate() {
                    let pk = po.idx(k);
                    let oo = Obj::new(opt, &pk, "a variant option", &["name", "field-class", "selector-field-ranges", "attributes"])?;
                    let name = oo.str("name", &pk)?.unwrap_or("");
                    if !name.is_empty() && options.iter().any(|f: &NamedField| f.name == name) {
                        return pk.key("name").err(format!("duplicate option name `{name}`"));
                    }
                    let ty = self.field_class_at(oo.req("field-class", &pk)?, &pk.key("field-class"), cx, roles, depth + 1)?;
                    ranges.push(ranges_of(oo.req("selector-field-ranges", &pk)?, &pk.key("selector-field-ranges"), true)?);
                    options.push(NamedField { name: name.to_string(), ty });
                }
                Ok(FieldType::Variant(VariantType { tag, options, ranges: Some(ranges) }))
            }
            other => p.key("type").err(format!("unknown field class type `{other}`")),
        }
    }

    /// The common properties of fixed-length bit arrays.
    fn fixed_int(&self, o: &Obj<'_>, p: &P<'_>, signed: bool, float: bool) -> R<IntType> {
        let size = match o.req("length", p)? {
            Json::Int(n) if (1..=64).contains(n) => *n as u32,
            Json::Int(128) if float => 128,
            Json::Int(n) => return p.key("length").err(format!("a fixed length must be 1 to 64 bits, not {n}")),
            v => return p.key("length").err(format!("expecting an unsigned integer, got {}", v.kind())),
        };
        let byte_order = match o.req("byte-order", p)? {
            Json::Str(s) if s == "little-endian" => ByteOrder::Little,
            Json::Str(s) if s == "big-endian" => ByteOrder::Big,
            Json::Str(s) => return p.key("byte-order").err(format!("unknown byte order `{s}`")),
            v => return p.key("byte-order").err(format!("expecting a string, got {}", v.kind())),
        };
        let reversed = match o.str("bit-order", p)? {
            None => false,
            Some("first-to-last") => byte_order == ByteOrder::Big,
            Some("last-to-first") => byte_order == ByteOrder::Little,
            Some(s) => return p.key("bit-order").err(format!("unknown bit order `{s}`")),
        };
        let align = alignment(o, "alignment", p)?;
        Ok(IntType { size, align, reversed, ..IntType::new(size, signed, byte_order) })
    }

    /// Display base and roles of an integer.
    fn int_extras(&self, o: &Obj<'_>, p: &P<'_>, cx: Cx<'_>, roles: bool, i: &mut IntType) -> R<()> {
        i.base = match o.get("preferred-display-base") {
            None => DisplayBase::Decimal,
            Some(Json::Int(2)) => DisplayBase::Binary,
            Some(Json::Int(8)) => DisplayBase::Octal,
            Some(Json::Int(10)) => DisplayBase::Decimal,
            Some(Json::Int(16)) => DisplayBase::Hexadecimal,
            Some(v) => return p.key("preferred-display-base").err(format!("a display base is 2, 8, 10 or 16, not {}", json_text(v))),
        };
        let Some(rs) = o.get("roles") else { return Ok(()) };
        let pr = p.key("roles");
        for (k, r) in strings(rs, &pr)?.into_iter().enumerate() {
            let pk = pr.idx(k);
            let Some(&(_, role, scopes)) = INT_ROLES.iter().find(|(name, ..)| *name == r) else {
                return pk.err(format!("unknown integer role `{r}`"));
            };
            let role = if role == Role::Timestamp && cx.scope == Scope::PacketContext { Role::PacketBegin } else { role };
            if !roles {
                continue;
            }
            if !scopes.contains(&cx.scope) {
                return pk.err(format!("the `{r}` role does not belong in the {}", scope_name(cx.scope)));
            }
            if matches!(role, Role::PacketBegin | Role::PacketEnd | Role::Timestamp) {
                match cx.clock {
                    Some(c) => i.mapped_clock = Some(c.to_string()),
                    None => return pk.err(format!("the `{r}` role needs a default clock class in the data stream class")),
                }
            }
            i.role = Some(role);
        }
        Ok(())
    }

    /// An integer with its `mappings`, if any: an enumeration (required for the draft's
    /// enumeration field classes).
    fn with_mappings(&self, o: &Obj<'_>, p: &P<'_>, i: IntType, required: bool) -> R<FieldType> {
        let m = match o.get("mappings") {
            None if required => return Err(missing(p, "mappings")),
            None => return Ok(FieldType::Int(i)),
            Some(m) => m,
        };
        let pm = p.key("mappings");
        let Json::Obj(m) = m else { return pm.err(format!("expecting an object, got {}", m.kind())) };
        let mut mappings = Vec::new();
        let (lo, hi) = if i.signed { (i64::MIN as i128, i64::MAX as i128) } else { (0, u64::MAX as i128) };
        for (label, ranges) in m {
            for (lower, upper) in ranges_of(ranges, &pm.key(label), i.signed)? {
                if lower < lo || upper > hi {
                    return pm.key(label).err(format!("range [{lower}, {upper}] is outside the integer's values"));
                }
                mappings.push(EnumMapping { label: label.clone(), lower, upper });
            }
        }
        if m.is_empty() {
            return Ok(FieldType::Int(i));
        }
        Ok(FieldType::Enum(EnumType { container: i, mappings }))
    }

    /// Rejects metadata whose field locations the layout compiler cannot resolve (a length
    /// or selector not found, not decoded yet, or of the wrong type), naming the fragment
    /// and the JSON path of the field class.
    fn check_layouts(&self, frags: &[json::Fragment<'_>]) -> Result<()> {
        for s in &self.trace.streams {
            let layout = StreamLayout::compile(&self.trace, s);
            let err = |key: (u64, Option<u64>), root: &str, path: String, msg: String| {
                let i = self.origins.get(&key).copied().unwrap_or(0);
                let kind = if key.1.is_some() { "event-record-class" } else { "data-stream-class" };
                let (fragment, line, path) = match (key.1, root) {
                    // The packet header is the trace class's.
                    (None, "packet-header-field-class") => {
                        let t = frags.iter().position(|f| f.text.contains("\"trace-class\"")).unwrap_or(i);
                        (t + 1, frags.get(t).map_or(0, |f| f.line), format!("/{root}{path}"))
                    }
                    _ => (i + 1, frags.get(i).map_or(0, |f| f.line), format!("/{root}{path}")),
                };
                Error::Ctf2 { fragment, line, kind: kind.into(), path, message: msg }
            };
            let roots = [
                ("packet-header-field-class", layout.packet_header, self.trace.packet_header.as_deref()),
                ("packet-context-field-class", layout.packet_context, s.packet_context.as_deref()),
                ("event-record-header-field-class", layout.event_header, s.event_header.as_deref()),
                ("event-record-common-context-field-class", layout.event_context, s.event_context.as_deref()),
            ];
            for (name, node, ty) in roots {
                if let (Some(n), Some(t)) = (node, ty) {
                    if let Some((path, msg)) = invalid(&layout, n, t, String::new()) {
                        return Err(err((s.id, None), name, path, msg));
                    }
                }
            }
            for e in &layout.events {
                let roots = [("specific-context-field-class", e.context, e.class.context.as_deref()), ("payload-field-class", e.payload, e.class.payload.as_deref())];
                for (name, node, ty) in roots {
                    if let (Some(n), Some(t)) = (node, ty) {
                        if let Some((path, msg)) = invalid(&layout, n, t, String::new()) {
                            return Err(err((s.id, Some(e.class.id)), name, path, msg));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// The first invalid node under `id` (whose type is `ty`), as the JSON path of its field class
/// (relative to the scope root's) and the layout compiler's message. Floating point sizes
/// that the decoder does not read (16 and 128 bits) are valid metadata, not reported.
fn invalid(layout: &StreamLayout, id: NodeId, ty: &FieldType, path: String) -> Option<(String, String)> {
    let node = layout.node(id);
    match (&node.kind, ty) {
        (NodeKind::Invalid(_), FieldType::Float(_)) => None,
        (NodeKind::Invalid(m), _) => Some((path, m.clone())),
        (NodeKind::Struct { fields }, FieldType::Struct(s)) => {
            fields.iter().zip(&s.fields).enumerate().find_map(|(k, (&f, nf))| invalid(layout, f, &nf.ty, format!("{path}/member-classes/{k}/field-class")))
        }
        (NodeKind::Variant { options, .. }, FieldType::Variant(v)) => {
            options.iter().zip(&v.options).enumerate().find_map(|(k, (&o, nf))| invalid(layout, o, &nf.ty, format!("{path}/options/{k}/field-class")))
        }
        (NodeKind::Array { element, .. } | NodeKind::Sequence { element, .. }, FieldType::Array(ArrayType { element: t, .. }) | FieldType::Sequence(SequenceType { element: t, .. })) => {
            invalid(layout, *element, t, format!("{path}/element-field-class"))
        }
        (NodeKind::Optional { inner, .. }, FieldType::Optional(o)) => invalid(layout, *inner, &o.ty, format!("{path}/field-class")),
        _ => None,
    }
}

fn missing(p: &P<'_>, k: &str) -> E {
    E { path: p.render(), msg: format!("missing property `{k}`") }
}

/// The integer roles of CTF 2, by name, and the scopes each belongs in (the parser's and the
/// writer's one table). `default-clock-timestamp` is [`Role::PacketBegin`] in a packet
/// context, [`Role::Timestamp`] in an event header.
pub(crate) const INT_ROLES: [(&str, Role, &[Scope]); 10] = [
    ("packet-magic-number", Role::Magic, &[Scope::PacketHeader]),
    ("data-stream-class-id", Role::StreamId, &[Scope::PacketHeader]),
    ("data-stream-id", Role::StreamInstanceId, &[Scope::PacketHeader]),
    ("packet-total-length", Role::PacketSize, &[Scope::PacketContext]),
    ("packet-content-length", Role::ContentSize, &[Scope::PacketContext]),
    ("packet-end-default-clock-timestamp", Role::PacketEnd, &[Scope::PacketContext]),
    ("discarded-event-record-counter-snapshot", Role::EventsDiscarded, &[Scope::PacketContext]),
    ("packet-sequence-number", Role::PacketSeqNum, &[Scope::PacketContext]),
    ("event-record-class-id", Role::EventId, &[Scope::EventHeader]),
    ("default-clock-timestamp", Role::Timestamp, &[Scope::PacketContext, Scope::EventHeader]),
];

/// The CTF 2 name of an integer role ([`INT_ROLES`]), if it has one.
pub(crate) fn int_role_name(role: Role) -> Option<&'static str> {
    let role = if role == Role::PacketBegin { Role::Timestamp } else { role };
    INT_ROLES.iter().find(|(_, r, _)| *r == role).map(|(name, ..)| *name)
}

/// How errors and messages name a scope.
pub(crate) fn scope_name(s: Scope) -> &'static str {
    match s {
        Scope::PacketHeader => "packet header",
        Scope::PacketContext => "packet context",
        Scope::EventHeader => "event record header",
        Scope::EventCommonContext => "event record common context",
        Scope::EventSpecificContext => "event record specific context",
        Scope::EventPayload => "event record payload",
    }
}

/// A value as written, for messages.
fn json_text(v: &Json) -> String {
    match v {
        Json::Int(i) => i.to_string(),
        Json::Float(f) => f.to_string(),
        Json::Str(s) => format!("{s:?}"),
        other => other.kind().to_string(),
    }
}

/// An alignment property (a power of two; 1 when absent).
fn alignment(o: &Obj<'_>, k: &str, p: &P<'_>) -> R<u32> {
    match o.get(k) {
        None => Ok(1),
        Some(Json::Int(a)) if *a > 0 && *a <= 1 << 31 && (*a as u64).is_power_of_two() => Ok(*a as u32),
        Some(v) => p.key(k).err(format!("an alignment is a positive power of two, not {}", json_text(v))),
    }
}

fn encoding(o: &Obj<'_>, p: &P<'_>) -> R<Encoding> {
    Ok(match o.str("encoding", p)? {
        None | Some("utf-8") => Encoding::Utf8,
        Some("utf-16be") => Encoding::Utf16Be,
        Some("utf-16le") => Encoding::Utf16Le,
        Some("utf-32be") => Encoding::Utf32Be,
        Some("utf-32le") => Encoding::Utf32Le,
        Some(s) => return p.key("encoding").err(format!("unknown string encoding `{s}`")),
    })
}

fn strings<'j>(v: &'j Json, p: &P<'_>) -> R<Vec<&'j str>> {
    let Json::Arr(a) = v else { return p.err(format!("expecting an array, got {}", v.kind())) };
    a.iter()
        .enumerate()
        .map(|(k, x)| match x {
            Json::Str(s) => Ok(s.as_str()),
            x => p.idx(k).err(format!("expecting a string, got {}", x.kind())),
        })
        .collect()
}

/// An integer range set: a non-empty array of `[lower, upper]` pairs (`signed`: negative
/// bounds allowed).
fn ranges_of(v: &Json, p: &P<'_>, signed: bool) -> R<Vec<(i128, i128)>> {
    let Json::Arr(a) = v else { return p.err(format!("expecting an array of ranges, got {}", v.kind())) };
    if a.is_empty() {
        return p.err("an integer range set needs at least one range");
    }
    let mut out = Vec::with_capacity(a.len());
    for (k, r) in a.iter().enumerate() {
        let pk = p.idx(k);
        let bound = |x: &Json, i: usize| -> R<i128> {
            match x {
                Json::Int(n) if signed || *n >= 0 => Ok(*n),
                Json::Int(n) => pk.idx(i).err(format!("expecting an unsigned integer, got {n}")),
                x => pk.idx(i).err(format!("expecting an integer, got {}", x.kind())),
            }
        };
        let (lower, upper) = match r {
            Json::Arr(b) if b.len() == 2 => (bound(&b[0], 0)?, bound(&b[1], 1)?),
            _ => return pk.err("a range is an array of two integers"),
        };
        if lower > upper {
            return pk.err(format!("range lower bound {lower} is greater than its upper bound {upper}"));
        }
        out.push((lower, upper));
    }
    Ok(out)
}

fn uuid(v: &Json, p: &P<'_>) -> R<[u8; 16]> {
    let Json::Arr(a) = v else { return p.err(format!("expecting an array of 16 bytes, got {}", v.kind())) };
    if a.len() != 16 {
        return p.err(format!("a UUID has 16 bytes, not {}", a.len()));
    }
    let mut u = [0u8; 16];
    for (k, (x, b)) in a.iter().zip(u.iter_mut()).enumerate() {
        match x {
            Json::Int(n) if (0..=255).contains(n) => *b = *n as u8,
            _ => return p.idx(k).err("expecting a byte (0 to 255)"),
        }
    }
    Ok(u)
}

/// A field location: `{"origin": ..., "path": [...]}`, or the draft's `[origin, name...]`.
fn location(v: &Json, p: &P<'_>) -> R<FieldPath> {
    fn origin(s: &str, p: &P<'_>) -> R<Scope> {
        Ok(match s {
            "packet-header" => Scope::PacketHeader,
            "packet-context" => Scope::PacketContext,
            "event-record-header" => Scope::EventHeader,
            "event-record-common-context" => Scope::EventCommonContext,
            "event-record-specific-context" => Scope::EventSpecificContext,
            "event-record-payload" => Scope::EventPayload,
            other => return p.err(format!("unknown location origin `{other}`")),
        })
    }
    match v {
        Json::Arr(a) => {
            let names = strings(v, p)?;
            let Some((first, rest)) = names.split_first() else { return p.err("an empty field location") };
            if rest.is_empty() {
                return p.err("a field location needs at least one member name after its origin");
            }
            let _ = a;
            Ok(FieldPath::Absolute(origin(first, &p.idx(0))?, rest.iter().map(|s| s.to_string()).collect()))
        }
        Json::Obj(_) => {
            let o = Obj::new(v, p, "a field location", &["origin", "path"])?;
            let pp = p.key("path");
            let Json::Arr(path) = o.req("path", p)? else { return pp.err("expecting an array") };
            if path.is_empty() {
                return pp.err("an empty field location path");
            }
            let mut elems = Vec::with_capacity(path.len());
            for (k, x) in path.iter().enumerate() {
                match x {
                    Json::Str(s) => elems.push(Some(s.clone())),
                    Json::Null => elems.push(None),
                    x => return pp.idx(k).err(format!("expecting a string or null, got {}", x.kind())),
                }
            }
            if elems.last().is_some_and(Option::is_none) {
                return pp.idx(path.len() - 1).err("a field location path ends with a member name, not null");
            }
            match o.str("origin", p)? {
                Some(s) => {
                    let scope = origin(s, &p.key("origin"))?;
                    if let Some(k) = elems.iter().position(Option::is_none) {
                        return pp.idx(k).err("an absolute field location path holds member names only");
                    }
                    Ok(FieldPath::Absolute(scope, elems.into_iter().flatten().collect()))
                }
                None => Ok(FieldPath::Local(elems)),
            }
        }
        v => p.err(format!("expecting a field location (an object), got {}", v.kind())),
    }
}

/// babeltrace2's event record class attributes: its log level (by name) and EMF URI.
fn bt_attributes(o: &Obj<'_>) -> (Option<i64>, Option<String>) {
    let attrs = o.get("user-attributes").or_else(|| o.get("attributes")).and_then(|a| a.get("babeltrace.org,2020"));
    let Some(bt) = attrs else { return (None, None) };
    let level = match bt.get("log-level") {
        Some(Json::Str(s)) => LOG_LEVELS.iter().position(|l| l == s).map(|i| i as i64),
        Some(Json::Int(i)) => i64::try_from(*i).ok(),
        _ => None,
    };
    let emf = match bt.get("emf-uri") {
        Some(Json::Str(s)) => Some(s.clone()),
        _ => None,
    };
    (level, emf)
}

/// babeltrace2's log level names, by TSDL `loglevel` value.
pub(crate) const LOG_LEVELS: [&str; 15] = [
    "emergency",
    "alert",
    "critical",
    "error",
    "warning",
    "notice",
    "info",
    "debug:system",
    "debug:program",
    "debug:process",
    "debug:module",
    "debug:unit",
    "debug:function",
    "debug:line",
    "debug",
];
