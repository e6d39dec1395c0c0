//! Writing a [`TraceClass`] as CTF 2 metadata (a JSON text sequence, CTF2-SPEC-2.0 forms),
//! the mirror of the parser in [`crate::ctf2`].
//!
//! A class read from CTF 2 comes back the same from its text. A class made for CTF 1.8 (roles
//! by field names, variants chosen by enumeration labels, relative TSDL paths) is translated
//! with the one layout compiler's view of it ([`StreamLayout`]): its roles become explicit,
//! each variant option gets the tag ranges that select it, and each length or tag reference
//! becomes an absolute location. What CTF 2 cannot say is refused, with the reason: integers
//! wider than 64 bits, integers mapped to a clock without being a timestamp, timestamps of
//! clocks other than their stream's default one.

use std::collections::HashMap;
use std::fmt::Write;

use crate::ir::{BlobLength, ByteOrder, ClockClass, DisplayBase, Encoding, EnumType, EnvValue, FieldPath, FieldType, IntType, Role, Scope, TraceClass};
use crate::layout::{NodeId, NodeKind, StreamLayout};

/// Renders a trace class as CTF 2 metadata (JSON fragments, each after a record separator), or
/// says what in it CTF 2 cannot express.
pub fn to_ctf2(trace: &TraceClass) -> Result<String, String> {
    let mut out = String::new();
    let frag = |out: &mut String, body: String| {
        out.push('\u{1e}');
        out.push_str(&body);
        out.push('\n');
    };
    let mut pre = String::from("{\"type\":\"preamble\",\"version\":2");
    if let Some(u) = trace.uuid {
        let _ = write!(pre, ",\"uuid\":{}", bytes(&u));
    }
    pre.push('}');
    frag(&mut out, pre);

    // Field locations and roles come from the layout of each stream class.
    let layouts: Vec<StreamLayout> = trace.streams.iter().map(|s| StreamLayout::compile(trace, s)).collect();

    let mut tc = String::from("{\"type\":\"trace-class\"");
    if !trace.env.is_empty() {
        tc.push_str(",\"environment\":{");
        for (i, (k, v)) in trace.env.iter().enumerate() {
            if i > 0 {
                tc.push(',');
            }
            tc.push_str(&json_str(k));
            tc.push(':');
            match v {
                EnvValue::Int(n) => {
                    let _ = write!(tc, "{n}");
                }
                EnvValue::Str(s) => tc.push_str(&json_str(s)),
            }
        }
        tc.push('}');
    }
    if let Some(h) = &trace.packet_header {
        // The packet header is laid out the same in every stream class: the first one's view.
        let w = Writer::new(layouts.first(), None);
        tc.push_str(",\"packet-header-field-class\":");
        w.field_class(&mut tc, h, layouts.first().and_then(|l| l.packet_header), Scope::PacketHeader)?;
    }
    tc.push('}');
    frag(&mut out, tc);

    for c in &trace.clocks {
        frag(&mut out, clock(c));
    }
    for (s, layout) in trace.streams.iter().zip(&layouts) {
        let default_clock = stream_clock(layout)?;
        let w = Writer::new(Some(layout), default_clock);
        let mut d = format!("{{\"type\":\"data-stream-class\",\"id\":{}", s.id);
        if let Some(c) = default_clock {
            let _ = write!(d, ",\"default-clock-class-id\":{}", json_str(&trace.clocks[c].name));
        }
        for (key, ty, node, scope) in [
            ("packet-context-field-class", &s.packet_context, layout.packet_context, Scope::PacketContext),
            ("event-record-header-field-class", &s.event_header, layout.event_header, Scope::EventHeader),
            ("event-record-common-context-field-class", &s.event_context, layout.event_context, Scope::EventCommonContext),
        ] {
            if let Some(t) = ty {
                let _ = write!(d, ",\"{key}\":");
                w.field_class(&mut d, t, node, scope)?;
            }
        }
        d.push('}');
        frag(&mut out, d);
        for e in &s.events {
            let el = layout.events.iter().find(|x| x.class.id == e.id);
            let mut f = format!("{{\"type\":\"event-record-class\",\"id\":{},\"data-stream-class-id\":{},\"name\":{}", e.id, s.id, json_str(&e.name));
            for (key, ty, node, scope) in [
                ("specific-context-field-class", &e.context, el.and_then(|x| x.context), Scope::EventSpecificContext),
                ("payload-field-class", &e.payload, el.and_then(|x| x.payload), Scope::EventPayload),
            ] {
                if let Some(t) = ty {
                    let _ = write!(f, ",\"{key}\":");
                    w.field_class(&mut f, t, node, scope)?;
                }
            }
            let level = e.loglevel.and_then(|l| usize::try_from(l).ok()).and_then(|l| crate::ctf2::LOG_LEVELS.get(l));
            if level.is_some() || e.model_emf_uri.is_some() {
                f.push_str(",\"user-attributes\":{\"babeltrace.org,2020\":{");
                let mut first = true;
                if let Some(l) = level {
                    let _ = write!(f, "\"log-level\":{}", json_str(l));
                    first = false;
                }
                if let Some(u) = &e.model_emf_uri {
                    let _ = write!(f, "{}\"emf-uri\":{}", if first { "" } else { "," }, json_str(u));
                }
                f.push_str("}}");
            }
            f.push('}');
            frag(&mut out, f);
        }
    }
    Ok(out)
}

fn clock(c: &ClockClass) -> String {
    let freq = c.freq.max(1) as i128;
    // CTF 2 wants the offset's cycles below one second.
    let total = c.offset as i128;
    let seconds = c.offset_s as i128 + total.div_euclid(freq);
    let cycles = total.rem_euclid(freq);
    let mut s = format!(
        "{{\"type\":\"clock-class\",\"id\":{},\"name\":{},\"frequency\":{},\"offset-from-origin\":{{\"seconds\":{},\"cycles\":{}}},\"precision\":{}",
        json_str(&c.name),
        json_str(&c.name),
        c.freq,
        seconds.clamp(i64::MIN as i128, i64::MAX as i128),
        cycles,
        c.precision
    );
    if c.absolute {
        s.push_str(",\"origin\":\"unix-epoch\"");
    }
    if let Some(d) = &c.description {
        let _ = write!(s, ",\"description\":{}", json_str(d));
    }
    if let Some(u) = &c.uuid {
        let _ = write!(s, ",\"uid\":{}", json_str(&crate::ir::uuid_string(u)));
    }
    s.push('}');
    s
}

/// The clock of a stream class's timestamps (packet beginnings and ends, event times): its
/// default clock class. They must all be of one clock.
fn stream_clock(layout: &StreamLayout) -> Result<Option<usize>, String> {
    let mut clock = None;
    for n in &layout.nodes {
        if let NodeKind::Int(i) = &n.kind {
            if let Some(c) = i.clock {
                if !matches!(n.role, Role::Timestamp | Role::PacketBegin | Role::PacketEnd) {
                    return Err(format!("field `{}` is mapped to a clock but is not a timestamp: CTF 2 cannot say so", n.raw_name));
                }
                match clock {
                    Some(k) if k != c => return Err(format!("stream class {} has timestamps of two clocks", layout.stream_class_id)),
                    _ => clock = Some(c),
                }
            }
        }
    }
    Ok(clock)
}

/// Writes field classes of one stream class, with its layout's view of them.
struct Writer<'t> {
    layout: Option<&'t StreamLayout>,
    /// Absolute location of every node that a length or selector may name.
    paths: HashMap<NodeId, (Scope, Vec<String>)>,
    clock: Option<usize>,
}

impl<'t> Writer<'t> {
    fn new(layout: Option<&'t StreamLayout>, clock: Option<usize>) -> Writer<'t> {
        let mut paths = HashMap::new();
        if let Some(l) = layout {
            let mut roots = vec![
                (Scope::PacketHeader, l.packet_header),
                (Scope::PacketContext, l.packet_context),
                (Scope::EventHeader, l.event_header),
                (Scope::EventCommonContext, l.event_context),
            ];
            for e in &l.events {
                roots.push((Scope::EventSpecificContext, e.context));
                roots.push((Scope::EventPayload, e.payload));
            }
            for (scope, root) in roots {
                if let Some(r) = root {
                    collect_paths(l, r, scope, &mut Vec::new(), &mut paths, 0);
                }
            }
        }
        Writer { layout, paths, clock }
    }

    fn node(&self, id: Option<NodeId>) -> Option<&'t crate::layout::Node> {
        Some(self.layout?.node(id?))
    }

    fn location(&self, path: &FieldPath, target: Option<NodeId>) -> Result<String, String> {
        let (scope, names) = match path {
            FieldPath::Absolute(scope, names) => (*scope, names.clone()),
            FieldPath::Local(elems) => {
                let items: Vec<String> = elems.iter().map(|e| e.as_deref().map_or("null".to_string(), json_str)).collect();
                return Ok(format!("{{\"path\":[{}]}}", items.join(",")));
            }
            FieldPath::Relative(_) => target.and_then(|t| self.paths.get(&t)).cloned().ok_or_else(|| format!("reference `{path}` cannot be resolved"))?,
        };
        let items: Vec<String> = names.iter().map(|n| json_str(n)).collect();
        Ok(format!("{{\"origin\":\"{}\",\"path\":[{}]}}", origin(scope), items.join(",")))
    }

    /// Writes the field class of `ty`, whose node in the layout is `node` (when known).
    fn field_class(&self, s: &mut String, ty: &FieldType, node: Option<NodeId>, scope: Scope) -> Result<(), String> {
        let n = self.node(node);
        let role = n.map_or(Role::None, |n| n.role);
        match ty {
            FieldType::Int(i) => self.int(s, i, None, role, scope)?,
            FieldType::Enum(e) => self.int(s, &e.container, Some(e), role, scope)?,
            FieldType::Bool(i) => {
                s.push_str("{\"type\":\"fixed-length-boolean\"");
                bits(s, i);
                s.push('}');
            }
            FieldType::BitMap(e) => {
                s.push_str("{\"type\":\"fixed-length-bit-map\"");
                bits(s, &e.container);
                s.push_str(",\"flags\":");
                mappings(s, e);
                s.push('}');
            }
            FieldType::Float(f) => {
                let size = f.size();
                if !matches!((f.exp_dig, f.mant_dig), (5, 11) | (8, 24) | (11, 53) | (15, 113)) {
                    return Err(format!("a floating point number of {} exponent and {} mantissa bits is not IEEE 754: CTF 2 cannot say so", f.exp_dig, f.mant_dig));
                }
                let _ = write!(s, "{{\"type\":\"fixed-length-floating-point-number\",\"length\":{size},\"byte-order\":\"{}\",\"alignment\":{}}}", bo(f.byte_order), f.align);
            }
            FieldType::String(e) => {
                s.push_str("{\"type\":\"null-terminated-string\"");
                encoding(s, *e);
                s.push('}');
            }
            FieldType::Struct(st) => {
                s.push_str("{\"type\":\"structure\",\"member-classes\":[");
                let kids: Vec<Option<NodeId>> = match n.map(|n| &n.kind) {
                    Some(NodeKind::Struct { fields }) => fields.iter().map(|&f| Some(f)).collect(),
                    _ => vec![None; st.fields.len()],
                };
                for (k, (f, kid)) in st.fields.iter().zip(kids).enumerate() {
                    if k > 0 {
                        s.push(',');
                    }
                    let _ = write!(s, "{{\"name\":{},\"field-class\":", json_str(&f.name));
                    self.field_class(s, &f.ty, kid, scope)?;
                    s.push('}');
                }
                s.push(']');
                if st.min_align > 1 {
                    let _ = write!(s, ",\"minimum-alignment\":{}", st.min_align);
                }
                s.push('}');
            }
            FieldType::Variant(v) => {
                let (kids, ranges, tag_node): (Vec<Option<NodeId>>, Option<&Vec<crate::layout::VariantRange>>, Option<NodeId>) = match n.map(|n| &n.kind) {
                    Some(NodeKind::Variant { options, ranges, tag_node, .. }) => (options.iter().map(|&o| Some(o)).collect(), Some(ranges), Some(*tag_node)),
                    _ => (vec![None; v.options.len()], None, None),
                };
                let _ = write!(s, "{{\"type\":\"variant\",\"selector-field-location\":{},\"options\":[", self.location(&v.tag, tag_node)?);
                for (k, (o, kid)) in v.options.iter().zip(kids).enumerate() {
                    let rs: Vec<(i128, i128)> = match (&v.ranges, ranges) {
                        (Some(r), _) => r.get(k).cloned().unwrap_or_default(),
                        (None, Some(r)) => r.iter().filter(|r| r.option == k as u32).map(|r| (r.lower, r.upper)).collect(),
                        (None, None) => return Err(format!("variant `{}` cannot be laid out", v.tag)),
                    };
                    if rs.is_empty() {
                        return Err(format!("variant option `{}` is selected by no tag value: CTF 2 cannot say so", o.name));
                    }
                    if k > 0 {
                        s.push(',');
                    }
                    let _ = write!(s, "{{\"name\":{},\"selector-field-ranges\":{},\"field-class\":", json_str(&o.name), range_set(&rs));
                    self.field_class(s, &o.ty, kid, scope)?;
                    s.push('}');
                }
                s.push_str("]}");
            }
            FieldType::Array(a) => {
                let kid = match n.map(|n| &n.kind) {
                    Some(NodeKind::Array { element, .. }) => Some(*element),
                    _ => None,
                };
                if role == Role::Uuid {
                    // CTF 1.8's `uint8_t uuid[16]`: CTF 2's UUID BLOB.
                    s.push_str("{\"type\":\"static-length-blob\",\"length\":16,\"roles\":[\"metadata-stream-uuid\"]}");
                } else if let Some(e) = text_element(&a.element) {
                    let _ = write!(s, "{{\"type\":\"static-length-string\",\"length\":{}", a.length);
                    encoding(s, e);
                    s.push('}');
                } else {
                    let _ = write!(s, "{{\"type\":\"static-length-array\",\"length\":{},\"element-field-class\":", a.length);
                    self.field_class(s, &a.element, kid, scope)?;
                    s.push('}');
                }
            }
            FieldType::Sequence(q) => {
                let (kid, len) = match n.map(|n| &n.kind) {
                    Some(NodeKind::Sequence { element, length_slot, .. }) => (Some(*element), self.slot_node(*length_slot)),
                    _ => (None, None),
                };
                let loc = self.location(&q.length, len)?;
                if let Some(e) = text_element(&q.element) {
                    let _ = write!(s, "{{\"type\":\"dynamic-length-string\",\"length-field-location\":{loc}");
                    encoding(s, e);
                    s.push('}');
                } else {
                    let _ = write!(s, "{{\"type\":\"dynamic-length-array\",\"length-field-location\":{loc},\"element-field-class\":");
                    self.field_class(s, &q.element, kid, scope)?;
                    s.push('}');
                }
            }
            FieldType::Blob(b) => {
                match &b.length {
                    BlobLength::Static(len) => {
                        let _ = write!(s, "{{\"type\":\"static-length-blob\",\"length\":{len}");
                    }
                    BlobLength::Dynamic(path) => {
                        let len = match n.map(|n| &n.kind) {
                            Some(NodeKind::Blob { length_slot, length: None, .. }) => self.slot_node(*length_slot),
                            _ => None,
                        };
                        let _ = write!(s, "{{\"type\":\"dynamic-length-blob\",\"length-field-location\":{}", self.location(path, len)?);
                    }
                }
                if b.media_type != "application/octet-stream" {
                    let _ = write!(s, ",\"media-type\":{}", json_str(&b.media_type));
                }
                if role == Role::Uuid || b.role == Some(Role::Uuid) {
                    s.push_str(",\"roles\":[\"metadata-stream-uuid\"]");
                }
                s.push('}');
            }
            FieldType::Optional(o) => {
                let (kid, sel) = match n.map(|n| &n.kind) {
                    Some(NodeKind::Optional { inner, selector_slot, .. }) => (Some(*inner), self.slot_node(*selector_slot)),
                    _ => (None, None),
                };
                let _ = write!(s, "{{\"type\":\"optional\",\"selector-field-location\":{}", self.location(&o.selector, sel)?);
                if let Some(r) = &o.ranges {
                    let _ = write!(s, ",\"selector-field-ranges\":{}", range_set(r));
                }
                s.push_str(",\"field-class\":");
                self.field_class(s, &o.ty, kid, scope)?;
                s.push('}');
            }
        }
        Ok(())
    }

    /// The first integer node holding slot `slot` (what a relative reference resolved to).
    fn slot_node(&self, slot: u16) -> Option<NodeId> {
        let l = self.layout?;
        l.nodes.iter().position(|n| matches!(&n.kind, NodeKind::Int(i) if i.slot == Some(slot))).map(|i| i as NodeId)
    }

    fn int(&self, s: &mut String, i: &IntType, e: Option<&EnumType>, role: Role, scope: Scope) -> Result<(), String> {
        if i.size > 64 {
            return Err(format!("a {}-bit integer: CTF 2 integers have at most 64 bits", i.size));
        }
        let sign = if i.signed { "signed" } else { "unsigned" };
        if i.varlen {
            let _ = write!(s, "{{\"type\":\"variable-length-{sign}-integer\"");
        } else {
            let _ = write!(s, "{{\"type\":\"fixed-length-{sign}-integer\"");
            bits(s, i);
        }
        let base = match i.base {
            DisplayBase::Binary => 2,
            DisplayBase::Octal => 8,
            DisplayBase::Decimal => 10,
            DisplayBase::Hexadecimal => 16,
        };
        if base != 10 {
            let _ = write!(s, ",\"preferred-display-base\":{base}");
        }
        if let Some(e) = e {
            s.push_str(",\"mappings\":");
            mappings(s, e);
        }
        let role = i.role.unwrap_or(role);
        if role != Role::None {
            if i.signed {
                return Err(format!("a signed integer cannot have a role in CTF 2 ({role:?})"));
            }
            let name = crate::ctf2::int_role_name(role);
            if matches!(role, Role::PacketBegin | Role::Timestamp | Role::PacketEnd) && self.clock.is_none() {
                return Err(format!("a timestamp in the {} with no clock: CTF 2 needs its stream's default clock class", crate::ctf2::scope_name(scope)));
            }
            if let Some(name) = name {
                let _ = write!(s, ",\"roles\":[\"{name}\"]");
            }
        }
        s.push('}');
        Ok(())
    }
}

/// Records the absolute location of every node reachable by member names from `id`
/// (variant options and array elements are crossed without a name, as CTF 2 locations do).
fn collect_paths(l: &StreamLayout, id: NodeId, scope: Scope, names: &mut Vec<String>, out: &mut HashMap<NodeId, (Scope, Vec<String>)>, depth: usize) {
    if depth > 256 {
        return;
    }
    out.entry(id).or_insert_with(|| (scope, names.clone()));
    match &l.node(id).kind {
        NodeKind::Struct { fields } => {
            for &f in fields {
                names.push(l.node(f).raw_name.clone());
                collect_paths(l, f, scope, names, out, depth + 1);
                names.pop();
            }
        }
        NodeKind::Variant { options, .. } => {
            for &o in options {
                collect_paths(l, o, scope, names, out, depth + 1);
            }
        }
        NodeKind::Array { element, .. } | NodeKind::Sequence { element, .. } => collect_paths(l, *element, scope, names, out, depth + 1),
        NodeKind::Optional { inner, .. } => collect_paths(l, *inner, scope, names, out, depth + 1),
        _ => {}
    }
}

/// The encoding of a text array's element (a byte-aligned 8-bit encoded integer), if it is one.
fn text_element(t: &FieldType) -> Option<Encoding> {
    match t {
        FieldType::Int(i) if i.size == 8 && i.align == 8 && i.encoding != Encoding::None && !i.varlen && !i.reversed && i.mapped_clock.is_none() && i.role.is_none() => Some(i.encoding),
        _ => None,
    }
}

fn bits(s: &mut String, i: &IntType) {
    let _ = write!(s, ",\"length\":{},\"byte-order\":\"{}\",\"alignment\":{}", i.size, bo(i.byte_order), i.align.max(1));
    if i.reversed {
        let order = match i.byte_order {
            ByteOrder::Little => "last-to-first",
            ByteOrder::Big => "first-to-last",
        };
        let _ = write!(s, ",\"bit-order\":\"{order}\"");
    }
}

fn encoding(s: &mut String, e: Encoding) {
    let name = match e {
        Encoding::Utf16Be => "utf-16be",
        Encoding::Utf16Le => "utf-16le",
        Encoding::Utf32Be => "utf-32be",
        Encoding::Utf32Le => "utf-32le",
        _ => return,
    };
    let _ = write!(s, ",\"encoding\":\"{name}\"");
}

/// An enumeration's or bit map's labels with their ranges, labels in first-seen order.
fn mappings(s: &mut String, e: &EnumType) {
    let mut labels: Vec<(&str, Vec<(i128, i128)>)> = Vec::new();
    for m in &e.mappings {
        match labels.iter_mut().find(|(l, _)| *l == m.label) {
            Some((_, r)) => r.push((m.lower, m.upper)),
            None => labels.push((&m.label, vec![(m.lower, m.upper)])),
        }
    }
    s.push('{');
    for (k, (l, r)) in labels.iter().enumerate() {
        if k > 0 {
            s.push(',');
        }
        let _ = write!(s, "{}:{}", json_str(l), range_set(r));
    }
    s.push('}');
}

fn range_set(r: &[(i128, i128)]) -> String {
    let items: Vec<String> = r.iter().map(|(a, b)| format!("[{a},{b}]")).collect();
    format!("[{}]", items.join(","))
}

fn origin(s: Scope) -> &'static str {
    match s {
        Scope::PacketHeader => "packet-header",
        Scope::PacketContext => "packet-context",
        Scope::EventHeader => "event-record-header",
        Scope::EventCommonContext => "event-record-common-context",
        Scope::EventSpecificContext => "event-record-specific-context",
        Scope::EventPayload => "event-record-payload",
    }
}

fn bo(b: ByteOrder) -> &'static str {
    match b {
        ByteOrder::Little => "little-endian",
        ByteOrder::Big => "big-endian",
    }
}

fn bytes(u: &[u8]) -> String {
    let items: Vec<String> = u.iter().map(|b| b.to_string()).collect();
    format!("[{}]", items.join(","))
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}
