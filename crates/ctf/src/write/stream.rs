//! The IR-driven stream writer: [`TraceWriter`], [`StreamWriter`] (documented in
//! [`crate::write`]), and the write plans they compile from a [`TraceClass`].

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{BitWriter, OwnedValue};
use crate::ir::{self, ByteOrder, EnumType, FieldPath, FieldType, Scope, TraceClass};
use crate::packet::{IDX_MAGIC, PACKET_MAGIC};
use crate::{Error, Result};

type NodeId = u32;

/// What a field means to the writer (CTF 1.8's well-known names, as readers see them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    None,
    Magic,
    StreamId,
    StreamInstanceId,
    PacketBegin,
    PacketEnd,
    ContentSize,
    PacketSize,
    EventsDiscarded,
    PacketSeqNum,
    EventId,
    Timestamp,
}

fn role_of(scope: Scope, name: &str) -> Role {
    match (scope, name) {
        (Scope::PacketHeader, "magic") => Role::Magic,
        (Scope::PacketHeader, "stream_id") => Role::StreamId,
        (Scope::PacketHeader, "stream_instance_id") => Role::StreamInstanceId,
        (Scope::PacketContext, "timestamp_begin") => Role::PacketBegin,
        (Scope::PacketContext, "timestamp_end") => Role::PacketEnd,
        (Scope::PacketContext, "content_size") => Role::ContentSize,
        (Scope::PacketContext, "packet_size") => Role::PacketSize,
        (Scope::PacketContext, "events_discarded") => Role::EventsDiscarded,
        (Scope::PacketContext, "packet_seq_num") => Role::PacketSeqNum,
        (Scope::EventHeader, "id") => Role::EventId,
        (Scope::EventHeader, "timestamp") => Role::Timestamp,
        _ => Role::None,
    }
}

#[derive(Clone, Debug, PartialEq)]
struct IntW {
    size: u32,
    signed: bool,
    bo: ByteOrder,
    /// Mapped to a clock class the trace declares (readers update their clock with it).
    clock: bool,
    slot: Option<u16>,
    role: Role,
    /// Enumeration mappings (to resolve variant options at compile time).
    enumeration: Option<Box<EnumType>>,
}

#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Int(IntW),
    Float { size: u32, bo: ByteOrder },
    Str,
    Struct(Vec<NodeId>),
    Variant { options: Vec<NodeId>, tag_slot: u16, tag_node: NodeId, ranges: Vec<(i128, i128, u32)>, tag: String },
    Array { elem: NodeId, len: u64, byte_elem: bool, uuid: bool },
    Sequence { elem: NodeId, len_slot: u16, byte_elem: bool, length: String },
    Invalid(String),
}

#[derive(Clone, Debug, PartialEq)]
struct Node {
    name: String,
    align: u32,
    kind: Kind,
}

/// One node of an event header flattened for a combo (see [`WritePlan::flatten`]): align to
/// `align` bits, then write the integer `node` when `int`.
#[derive(Clone, Copy, Debug)]
struct Step {
    node: NodeId,
    align: u32,
    int: bool,
}

/// Whether a node's whole subtree can be written by [`Enc::put_simple`]: whole bytes at
/// byte-aligned positions (integers of 1 to 8 bytes with no role or clock, strings, arrays and
/// sequences of plain bytes, structures of those), so no byte order check, bit packing or
/// per-field bookkeeping is needed. Computed once per plan.
fn simple_nodes(nodes: &[Node]) -> Vec<bool> {
    fn walk(nodes: &[Node], id: NodeId, memo: &mut [Option<bool>]) -> bool {
        if let Some(v) = memo[id as usize] {
            return v;
        }
        let node = &nodes[id as usize];
        let plain_byte = |e: NodeId| {
            let n = &nodes[e as usize];
            matches!(&n.kind, Kind::Int(i) if i.size == 8 && n.align == 8 && i.slot.is_none() && !i.clock && i.role == Role::None)
        };
        let v = node.align.is_multiple_of(8)
            && match &node.kind {
                Kind::Int(i) => i.size % 8 == 0 && i.size <= 64 && i.role == Role::None && !i.clock,
                Kind::Str => true,
                Kind::Struct(fields) => fields.iter().all(|&f| walk(nodes, f, memo)),
                Kind::Array { elem, byte_elem, uuid, .. } => *byte_elem && !*uuid && plain_byte(*elem),
                Kind::Sequence { elem, byte_elem, .. } => *byte_elem && plain_byte(*elem),
                Kind::Float { .. } | Kind::Variant { .. } | Kind::Invalid(_) => false,
            };
        memo[id as usize] = Some(v);
        v
    }
    let mut memo = vec![None; nodes.len()];
    (0..nodes.len() as NodeId).map(|id| walk(nodes, id, &mut memo)).collect()
}

#[derive(Clone, Debug)]
struct EventW {
    id: u64,
    name: String,
    context: Option<NodeId>,
    payload: Option<NodeId>,
}

/// One way to encode the event header: an option for each variant chosen by an `id`, and the
/// `id` and `timestamp` fields met on that path, in decoding order.
#[derive(Clone, Debug, Default)]
struct Combo {
    choices: Vec<(NodeId, u32)>,
    ids: Vec<NodeId>,
    /// (size, mapped to a clock) of each `timestamp`.
    ts: Vec<(u32, bool)>,
    bits: u64,
}

/// A stream class compiled for writing.
#[derive(Clone, Debug)]
struct WritePlan {
    nodes: Vec<Node>,
    /// Per node: see [`simple_nodes`].
    simple: Vec<bool>,
    /// Per combo (same order): the event header as a flat list of steps, when it is made of
    /// structures, variants selected by the event id and integers (see [`Enc::put_header`]).
    header_steps: Vec<Option<Vec<Step>>>,
    packet_header: Option<NodeId>,
    packet_context: Option<NodeId>,
    event_header: Option<NodeId>,
    event_context: Option<NodeId>,
    events: Vec<EventW>,
    /// Nodes of the packet header and context, event header and common context: the first
    /// ones compiled, the same for every event class set of the stream class.
    stream_nodes: usize,
    slot_count: usize,
    stream_class_id: u64,
    uuid: Option<[u8; 16]>,
    combos: Vec<Combo>,
    has_begin: bool,
    has_content_size: bool,
    has_packet_size: bool,
    has_discarded: bool,
    /// Smallest `content_size`/`packet_size` field, in bits.
    size_field_bits: u32,
}

impl WritePlan {
    fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id as usize]
    }

    fn event(&self, id: u64) -> Option<&EventW> {
        // Ids are usually 0, 1, 2, ...: the event at index `id` first.
        if let Some(e) = usize::try_from(id).ok().and_then(|i| self.events.get(i)).filter(|e| e.id == id) {
            return Some(e);
        }
        self.events.binary_search_by_key(&id, |e| e.id).ok().map(|i| &self.events[i])
    }

    fn members(&self, root: Option<NodeId>) -> &[NodeId] {
        match root.map(|r| &self.node(r).kind) {
            Some(Kind::Struct(f)) => f,
            _ => &[],
        }
    }

    /// A packet holds everything up to the end of the file (no size fields).
    fn single_packet(&self) -> bool {
        !self.has_content_size && !self.has_packet_size
    }

    fn compile(trace: &TraceClass, stream_class_id: u64) -> Result<WritePlan, String> {
        let stream = trace
            .stream(stream_class_id)
            .ok_or_else(|| format!("the metadata declares no stream class {stream_class_id}"))?;
        let mut c = Compiler { trace, nodes: Vec::new(), roots: Vec::new(), frames: Vec::new(), open: Vec::new(), slots: 0, scope: Scope::PacketHeader };
        let packet_header = c.root(Scope::PacketHeader, trace.packet_header.as_deref());
        let packet_context = c.root(Scope::PacketContext, stream.packet_context.as_deref());
        let event_header = c.root(Scope::EventHeader, stream.event_header.as_deref());
        let event_context = c.root(Scope::EventCommonContext, stream.event_context.as_deref());
        let stream_roots = c.roots.len();
        let stream_nodes = c.nodes.len();
        let mut events = Vec::with_capacity(stream.events.len());
        for ev in &stream.events {
            c.roots.truncate(stream_roots);
            let context = c.root(Scope::EventSpecificContext, ev.context.as_deref());
            let payload = c.root(Scope::EventPayload, ev.payload.as_deref());
            events.push(EventW { id: ev.id, name: ev.name.clone(), context, payload });
        }
        events.sort_by_key(|e| e.id);
        let simple = simple_nodes(&c.nodes);
        let mut plan = WritePlan {
            nodes: c.nodes,
            simple,
            header_steps: Vec::new(),
            packet_header,
            packet_context,
            event_header,
            event_context,
            events,
            stream_nodes,
            slot_count: c.slots as usize,
            stream_class_id,
            uuid: trace.uuid,
            combos: Vec::new(),
            has_begin: false,
            has_content_size: false,
            has_packet_size: false,
            has_discarded: false,
            size_field_bits: 64,
        };
        for n in &plan.nodes {
            if let Kind::Int(i) = &n.kind {
                match i.role {
                    Role::PacketBegin => plan.has_begin = true,
                    Role::ContentSize => plan.has_content_size = true,
                    Role::PacketSize => plan.has_packet_size = true,
                    Role::EventsDiscarded => plan.has_discarded = true,
                    _ => {}
                }
                if matches!(i.role, Role::ContentSize | Role::PacketSize) {
                    plan.size_field_bits = plan.size_field_bits.min(i.size);
                }
            }
        }
        let mut combos = vec![Combo::default()];
        if let Some(h) = event_header {
            combos = plan.shape(h, combos);
        }
        // Smallest encoding first; declaration order among equals (stable sort).
        combos.sort_by_key(|c| c.bits);
        plan.header_steps = combos
            .iter()
            .map(|c| {
                let mut steps = Vec::new();
                event_header.and_then(|h| plan.flatten(h, c, &mut steps)).map(|()| steps)
            })
            .collect();
        plan.combos = combos;
        Ok(plan)
    }

    /// Appends to `steps` how `combo` writes the header subtree `id` with no header value
    /// given; `None` where the subtree holds something else than structures, variants the
    /// combo selects, and integers of at most 64 bits with no role or the event id or
    /// timestamp role.
    fn flatten(&self, id: NodeId, combo: &Combo, steps: &mut Vec<Step>) -> Option<()> {
        let node = self.node(id);
        match &node.kind {
            Kind::Int(i) if i.size <= 64 && matches!(i.role, Role::None | Role::EventId | Role::Timestamp) => {
                steps.push(Step { node: id, align: node.align, int: true });
            }
            Kind::Struct(fields) => {
                steps.push(Step { node: id, align: node.align, int: false });
                for &f in fields {
                    self.flatten(f, combo, steps)?;
                }
            }
            Kind::Variant { options, .. } => {
                let &(_, k) = combo.choices.iter().find(|(v, _)| *v == id)?;
                steps.push(Step { node: id, align: node.align, int: false });
                self.flatten(*options.get(k as usize)?, combo, steps)?;
            }
            _ => return None,
        }
        Some(())
    }

    /// Every way to encode the header subtree `id`, appended to each of `combos`.
    fn shape(&self, id: NodeId, combos: Vec<Combo>) -> Vec<Combo> {
        const MAX_COMBOS: usize = 256;
        match &self.node(id).kind {
            Kind::Int(i) => combos
                .into_iter()
                .map(|mut c| {
                    match i.role {
                        Role::EventId => c.ids.push(id),
                        Role::Timestamp => c.ts.push((i.size, i.clock)),
                        _ => {}
                    }
                    c.bits += i.size as u64;
                    c
                })
                .collect(),
            Kind::Float { size, .. } => combos
                .into_iter()
                .map(|mut c| {
                    c.bits += *size as u64;
                    c
                })
                .collect(),
            Kind::Struct(fields) => fields.iter().fold(combos, |acc, &f| self.shape(f, acc)),
            Kind::Variant { options, tag_node, .. } => {
                let by_id = matches!(&self.node(*tag_node).kind, Kind::Int(i) if i.role == Role::EventId);
                if !by_id {
                    return combos;
                }
                let mut out = Vec::new();
                for c in combos {
                    for (k, &o) in options.iter().enumerate() {
                        if out.len() >= MAX_COMBOS {
                            break;
                        }
                        let mut c2 = c.clone();
                        c2.choices.push((id, k as u32));
                        out.extend(self.shape(o, vec![c2]));
                    }
                }
                out.truncate(MAX_COMBOS);
                out
            }
            _ => combos,
        }
    }
}

/// Names visible in one open structure while compiling: (raw name, node).
type Frame = Vec<(String, NodeId)>;

/// Compiles IR types to write nodes, resolving field references the way readers do
/// (`plan.rs`): a relative path looks in the enclosing structures, innermost first, at the
/// members declared so far, then in the earlier scopes' roots, latest first.
struct Compiler<'t> {
    trace: &'t TraceClass,
    nodes: Vec<Node>,
    roots: Vec<(Scope, NodeId)>,
    frames: Vec<Frame>,
    /// The name of the structure each frame belongs to (empty for scope roots, array elements
    /// and variant options' own structures).
    open: Vec<String>,
    slots: u32,
    scope: Scope,
}

const MAX_DEPTH: usize = 256;

impl Compiler<'_> {
    fn root(&mut self, scope: Scope, ty: Option<&FieldType>) -> Option<NodeId> {
        let ty = ty?;
        self.scope = scope;
        self.frames.clear();
        self.open.clear();
        let id = self.compile(String::new(), ty, 0);
        self.roots.push((scope, id));
        Some(id)
    }

    fn push(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        (self.nodes.len() - 1) as NodeId
    }

    fn int(&self, i: &ir::IntType, enumeration: Option<Box<EnumType>>, name: &str) -> IntW {
        IntW {
            size: i.size,
            signed: i.signed,
            bo: i.byte_order,
            clock: i.mapped_clock.as_ref().is_some_and(|c| self.trace.clock(c).is_some()),
            slot: None,
            role: role_of(self.scope, name),
            enumeration,
        }
    }

    fn compile(&mut self, name: String, ty: &FieldType, depth: usize) -> NodeId {
        let align = ty.alignment().max(1);
        if depth > MAX_DEPTH {
            return self.push(Node { name, align, kind: Kind::Invalid("types nested too deeply".into()) });
        }
        let kind = match ty {
            FieldType::Int(i) => Kind::Int(self.int(i, None, &name)),
            FieldType::Enum(e) => Kind::Int(self.int(&e.container, Some(Box::new(e.clone())), &name)),
            FieldType::Float(f) => match f.size() {
                32 | 64 => Kind::Float { size: f.size(), bo: f.byte_order },
                n => Kind::Invalid(format!("unsupported floating point size {n} bits")),
            },
            FieldType::String(_) => Kind::Str,
            FieldType::Struct(s) => {
                self.open.push(name.clone());
                let id = self.push(Node { name, align, kind: Kind::Struct(Vec::new()) });
                self.frames.push(Vec::new());
                let mut fields = Vec::with_capacity(s.fields.len());
                for f in &s.fields {
                    let child = self.compile(f.name.clone(), &f.ty, depth + 1);
                    fields.push(child);
                    if let Some(frame) = self.frames.last_mut() {
                        frame.push((f.name.clone(), child));
                    }
                }
                self.frames.pop();
                self.open.pop();
                self.nodes[id as usize].kind = Kind::Struct(fields);
                return id;
            }
            FieldType::Variant(v) => match self.resolve(&v.tag) {
                Err(msg) => Kind::Invalid(msg),
                Ok(tag_node) => {
                    let tag_slot = self.slot_of(tag_node);
                    let mut options = Vec::with_capacity(v.options.len());
                    for o in &v.options {
                        options.push(self.compile(o.name.clone(), &o.ty, depth + 1));
                    }
                    match &self.nodes[tag_node as usize].kind {
                        Kind::Int(IntW { enumeration: Some(e), .. }) => {
                            let mut ranges = Vec::new();
                            for m in &e.mappings {
                                let label = ir::display_name(&m.label);
                                if let Some(i) = v.options.iter().position(|o| o.name == m.label || ir::display_name(&o.name) == label) {
                                    ranges.push((m.lower, m.upper, i as u32));
                                }
                            }
                            Kind::Variant { options, tag_slot, tag_node, ranges, tag: v.tag.to_string() }
                        }
                        _ => Kind::Invalid(format!("variant tag `{}` is not an enumeration", v.tag)),
                    }
                }
            },
            FieldType::Array(a) => {
                let elem = self.compile(String::new(), &a.element, depth + 1);
                let byte_elem = self.is_byte(elem);
                let uuid = byte_elem && a.length == 16 && self.scope == Scope::PacketHeader && name == "uuid";
                Kind::Array { elem, len: a.length, byte_elem, uuid }
            }
            FieldType::Sequence(s) => match self.resolve(&s.length) {
                Err(msg) => Kind::Invalid(msg),
                Ok(len_node) => match &self.nodes[len_node as usize].kind {
                    Kind::Int(_) => {
                        let len_slot = self.slot_of(len_node);
                        let elem = self.compile(String::new(), &s.element, depth + 1);
                        Kind::Sequence { elem, len_slot, byte_elem: self.is_byte(elem), length: s.length.to_string() }
                    }
                    _ => Kind::Invalid(format!("sequence length `{}` is not an integer", s.length)),
                },
            },
        };
        self.push(Node { name, align, kind })
    }

    fn is_byte(&self, elem: NodeId) -> bool {
        matches!(&self.nodes[elem as usize].kind, Kind::Int(i) if i.size == 8)
    }

    fn slot_of(&mut self, node: NodeId) -> u16 {
        if let Kind::Int(i) = &mut self.nodes[node as usize].kind {
            if let Some(s) = i.slot {
                return s;
            }
            let s = self.slots.min(u16::MAX as u32) as u16;
            self.slots += 1;
            i.slot = Some(s);
            return s;
        }
        0
    }

    fn resolve(&self, path: &FieldPath) -> Result<NodeId, String> {
        let (start, rest): (Option<NodeId>, &[String]) = match path {
            FieldPath::Absolute(scope, names) => {
                let root = self.roots.iter().rev().find(|(s, _)| s == scope).map(|(_, r)| *r);
                match root {
                    Some(r) => (Some(r), &names[..]),
                    None if *scope == self.scope => {
                        // A reference into the scope being compiled: walk down the structures
                        // still open (whose members so far are in `frames`) from the root.
                        if names.is_empty() {
                            return Err(format!("empty field path `{path}`"));
                        }
                        let mut level = 0;
                        let mut i = 0;
                        loop {
                            let name = &names[i];
                            let done = self.frames.get(level).and_then(|f| f.iter().rev().find(|(n, _)| n == name)).map(|(_, id)| *id);
                            if done.is_some() {
                                break (done, &names[i + 1..]);
                            }
                            if self.open.get(level + 1).is_some_and(|n| n == name) && i + 1 < names.len() {
                                level += 1;
                                i += 1;
                                continue;
                            }
                            break (None, &names[i + 1..]);
                        }
                    }
                    None => return Err(format!("`{path}` refers to a scope that has no fields")),
                }
            }
            FieldPath::Relative(names) => {
                let first = names.first().ok_or_else(|| format!("empty field path `{path}`"))?;
                let mut found = None;
                for frame in self.frames.iter().rev() {
                    if let Some((_, id)) = frame.iter().rev().find(|(n, _)| n == first) {
                        found = Some(*id);
                        break;
                    }
                }
                if found.is_none() {
                    for (_, root) in self.roots.iter().rev() {
                        if let Some(id) = self.member(*root, first) {
                            found = Some(id);
                            break;
                        }
                    }
                }
                (found, &names[1..])
            }
        };
        let mut cur = start.ok_or_else(|| format!("field `{path}` not found"))?;
        for name in rest {
            cur = self.member(cur, name).ok_or_else(|| format!("field `{path}` not found"))?;
        }
        Ok(cur)
    }

    fn member(&self, node: NodeId, name: &str) -> Option<NodeId> {
        match &self.nodes[node as usize].kind {
            Kind::Struct(fields) => fields.iter().copied().find(|&f| self.nodes[f as usize].name == name),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Encoding

/// A value that does not match its type: the message and the path to the field (innermost
/// component first).
#[derive(Debug)]
struct FieldError {
    path: Vec<String>,
    message: String,
}

impl FieldError {
    fn new(message: impl Into<String>) -> FieldError {
        FieldError { path: Vec::new(), message: message.into() }
    }

    fn within(mut self, component: String) -> FieldError {
        if !component.is_empty() {
            self.path.push(component);
        }
        self
    }

    fn render(&self, scope: &str) -> String {
        let mut p = String::new();
        for c in self.path.iter().rev() {
            if !c.starts_with('[') && !p.is_empty() {
                p.push('.');
            }
            p.push_str(c);
        }
        if p.is_empty() {
            format!("{scope}: {}", self.message)
        } else {
            format!("{scope}: field `{p}`: {}", self.message)
        }
    }
}

type FResult<T = ()> = std::result::Result<T, FieldError>;

fn describe(v: &OwnedValue) -> String {
    match v {
        OwnedValue::U(u) => format!("the unsigned integer {u}"),
        OwnedValue::I(i) => format!("the signed integer {i}"),
        OwnedValue::F(f) => format!("the float {f}"),
        OwnedValue::Str(s) => format!("the string {s:?}"),
        OwnedValue::Bytes(b) => format!("{} bytes", b.len()),
        OwnedValue::Struct(m) => format!("a structure of {} members", m.len()),
        OwnedValue::Array(e) => format!("an array of {} elements", e.len()),
        OwnedValue::Variant(i, _) => format!("option {i} of a variant"),
    }
}

fn mismatch(expected: &str, got: &OwnedValue) -> FieldError {
    FieldError::new(format!("expected {expected}, got {}", describe(got)))
}

fn int_desc(i: &IntW) -> String {
    format!("{} {}-bit integer", if i.signed { "a signed" } else { "an unsigned" }, i.size)
}

fn mask(size: u32) -> u64 {
    if size >= 64 {
        u64::MAX
    } else {
        (1u64 << size) - 1
    }
}

/// Whether `v` is representable by an unsigned field of `size` bits.
fn fits_unsigned(v: u64, size: u32) -> bool {
    size >= 64 || v >> size == 0
}

fn sign_extend(raw: u64, size: u32) -> i64 {
    if size >= 64 {
        raw as i64
    } else {
        let s = 64 - size;
        ((raw << s) as i64) >> s
    }
}

/// The reader's clock update: a `size`-bit sample smaller than the clock's low bits means the
/// counter wrapped once.
fn update_clock(clock: u64, sample: u64, size: u32) -> u64 {
    if size >= 64 {
        return sample;
    }
    let m = mask(size);
    let mut c = clock;
    if sample < c & m {
        c = c.wrapping_add(m + 1);
    }
    (c & !m) | sample
}

/// A field to patch when the packet closes.
#[derive(Clone, Copy, Debug)]
struct Patch {
    role: Role,
    bit: u64,
    size: u32,
    bo: ByteOrder,
}

/// Where to roll back to.
#[derive(Clone, Copy, Debug)]
struct Mark {
    bit: u64,
    byte: u8,
    clock: u64,
    last_bo: Option<ByteOrder>,
}

/// Encoding state: the packet buffer and what a reader would know at this point.
#[derive(Debug)]
struct Enc {
    buf: BitWriter,
    slots: Vec<i128>,
    /// The clock value a reader has rebuilt at this point (cycles).
    clock: u64,
    /// Byte order of the last integer or float written.
    last_bo: Option<ByteOrder>,
    // Values of the fields the writer fills in.
    stream_id: u64,
    instance_id: u64,
    begin: u64,
    seq: u64,
    discarded: u64,
    ts: u64,
    class_id: u64,
    uuid: Option<[u8; 16]>,
    /// Values of the event header's `id` fields for the chosen encoding.
    ids: Vec<(NodeId, u64)>,
    /// The last event id written.
    last_id: Option<u64>,
    /// The raw `timestamp_begin` written in this packet.
    begin_written: Option<u64>,
    patches: Vec<Patch>,
}

impl Enc {
    fn new(plan: &WritePlan) -> Enc {
        Enc {
            buf: BitWriter::new(),
            slots: vec![0; plan.slot_count.max(1)],
            clock: 0,
            last_bo: None,
            stream_id: plan.stream_class_id,
            instance_id: 0,
            begin: 0,
            seq: 0,
            discarded: 0,
            ts: 0,
            class_id: 0,
            uuid: plan.uuid,
            ids: Vec::new(),
            last_id: None,
            begin_written: None,
            patches: Vec::new(),
        }
    }

    fn mark(&self) -> Mark {
        let bit = self.buf.position();
        Mark { bit, byte: self.buf.byte_at(bit), clock: self.clock, last_bo: self.last_bo }
    }

    fn rollback(&mut self, m: Mark) {
        self.buf.truncate(m.bit);
        if !m.bit.is_multiple_of(8) {
            self.buf.set_byte_at(m.bit, m.byte);
        }
        self.clock = m.clock;
        self.last_bo = m.last_bo;
    }

    fn check_bo(&self, bo: ByteOrder) -> FResult {
        match self.last_bo {
            Some(prev) if prev != bo && !self.buf.position().is_multiple_of(8) => Err(FieldError::new(format!(
                "a {} field starts in the middle of a byte after a {} field (at bit {}): readers cannot decode byte order changes within a byte",
                bo_word(bo),
                bo_word(prev),
                self.buf.position()
            ))),
            _ => Ok(()),
        }
    }

    /// Writes the members of the structure `root` with one optional value each.
    fn put_members(&mut self, plan: &WritePlan, root: NodeId, values: &[Option<OwnedValue>]) -> FResult {
        let node = plan.node(root);
        self.buf.align(node.align);
        if let Kind::Struct(fields) = &node.kind {
            for (k, &f) in fields.iter().enumerate() {
                let v = values.get(k).and_then(|v| v.as_ref());
                self.put(plan, f, v).map_err(|e| e.within(plan.node(f).name.clone()))?;
            }
        }
        Ok(())
    }

    /// Writes the event header by the flattened `steps` of the chosen combo, no header value
    /// given: what [`Enc::put`] does for it, without walking the types. False (what was
    /// written is then garbage) where the general path would fail: the caller rolls back and
    /// takes it, which says why.
    fn put_header(&mut self, plan: &WritePlan, steps: &[Step]) -> bool {
        for s in steps {
            self.buf.align(s.align);
            if !s.int {
                continue;
            }
            let Kind::Int(i) = &plan.node(s.node).kind else { return false };
            let raw = match i.role {
                Role::EventId => {
                    let x = self.ids.iter().find(|(n, _)| *n == s.node).map(|(_, x)| *x).unwrap_or(self.class_id);
                    if !fits_unsigned(x, i.size) {
                        return false;
                    }
                    self.last_id = Some(x);
                    x
                }
                Role::Timestamp => self.ts & mask(i.size),
                _ => 0,
            };
            if self.check_bo(i.bo).is_err() {
                return false;
            }
            self.buf.uint(raw, i.size, i.bo);
            self.last_bo = Some(i.bo);
            if let Some(slot) = i.slot {
                self.slots[slot as usize] = if i.signed { sign_extend(raw, i.size) as i128 } else { raw as i128 };
            }
            if i.clock {
                self.clock = update_clock(self.clock, raw, i.size);
            }
        }
        true
    }

    /// Writes `v` for the node `id`, whose subtree is simple (see [`simple_nodes`]), a few
    /// instructions per field. False where a value is not the plain case (a wrong kind, an
    /// integer out of range, a NUL in a string, a length mismatch, ...): what was written is
    /// then garbage, and the caller rolls back and takes the general path, which says why.
    fn put_simple(&mut self, plan: &WritePlan, id: NodeId, v: Option<&OwnedValue>) -> bool {
        let node = plan.node(id);
        self.buf.align_bytes(node.align);
        match &node.kind {
            Kind::Int(i) => {
                let Ok(raw) = Self::int_value(i, v) else { return false };
                self.buf.push_uint(raw, (i.size / 8) as usize, i.bo);
                self.last_bo = Some(i.bo);
                if let Some(s) = i.slot {
                    self.slots[s as usize] = if i.signed { sign_extend(raw, i.size) as i128 } else { raw as i128 };
                }
                true
            }
            Kind::Str => {
                let b: &[u8] = match v {
                    None => b"",
                    Some(OwnedValue::Str(s)) => s.as_bytes(),
                    Some(OwnedValue::Bytes(b)) => b,
                    Some(_) => return false,
                };
                if b.contains(&0) {
                    return false;
                }
                self.buf.push_bytes(b);
                self.buf.push_bytes(&[0]);
                true
            }
            Kind::Struct(fields) => match v {
                None => fields.iter().all(|&f| self.put_simple(plan, f, None)),
                Some(OwnedValue::Struct(vals)) if vals.len() == fields.len() => fields.iter().zip(vals).all(|(&f, x)| self.put_simple(plan, f, Some(x))),
                Some(_) => false,
            },
            Kind::Array { len, .. } => self.put_simple_bytes(*len, v, false),
            Kind::Sequence { len_slot, .. } => match u64::try_from(self.slots[*len_slot as usize]) {
                Ok(n) => self.put_simple_bytes(n, v, true),
                Err(_) => false,
            },
            Kind::Float { .. } | Kind::Variant { .. } | Kind::Invalid(_) => false,
        }
    }

    /// [`Enc::put_simple`] for `n` plain bytes (an array, or a sequence when `seq`).
    fn put_simple_bytes(&mut self, n: u64, v: Option<&OwnedValue>, seq: bool) -> bool {
        let b: &[u8] = match v {
            None => b"",
            Some(OwnedValue::Bytes(b)) if b.len() as u64 == n => b,
            Some(OwnedValue::Str(s)) if s.len() as u64 == n || (!seq && (s.len() as u64) < n) => s.as_bytes(),
            Some(_) => return false,
        };
        let Ok(n) = usize::try_from(n) else { return false };
        self.buf.push_bytes(b);
        self.buf.push_zeros(n - b.len());
        true
    }

    fn put(&mut self, plan: &WritePlan, id: NodeId, v: Option<&OwnedValue>) -> FResult {
        let node = plan.node(id);
        self.buf.align(node.align);
        match &node.kind {
            Kind::Int(i) => self.put_int(id, i, v),
            Kind::Float { size, bo } => {
                let x = match v {
                    None => 0.0,
                    Some(OwnedValue::F(x)) => *x,
                    Some(o) => return Err(mismatch(&format!("a {size}-bit float"), o)),
                };
                let raw = if *size == 32 { (x as f32).to_bits() as u64 } else { x.to_bits() };
                self.check_bo(*bo)?;
                self.buf.uint(raw, *size, *bo);
                self.last_bo = Some(*bo);
                Ok(())
            }
            Kind::Str => {
                let b: &[u8] = match v {
                    None => b"",
                    Some(OwnedValue::Str(s)) => s.as_bytes(),
                    Some(OwnedValue::Bytes(b)) => b,
                    Some(o) => return Err(mismatch("a string", o)),
                };
                if let Some(at) = b.iter().position(|&c| c == 0) {
                    return Err(FieldError::new(format!("a string cannot hold a NUL byte (byte {at})")));
                }
                self.buf.string(b);
                Ok(())
            }
            Kind::Struct(fields) => match v {
                None => {
                    for &f in fields {
                        self.put(plan, f, None).map_err(|e| e.within(plan.node(f).name.clone()))?;
                    }
                    Ok(())
                }
                Some(OwnedValue::Struct(vals)) if vals.len() == fields.len() => {
                    for (&f, x) in fields.iter().zip(vals) {
                        self.put(plan, f, Some(x)).map_err(|e| e.within(plan.node(f).name.clone()))?;
                    }
                    Ok(())
                }
                Some(OwnedValue::Struct(vals)) => Err(FieldError::new(format!(
                    "the structure has {} members, but {} values were given",
                    fields.len(),
                    vals.len()
                ))),
                Some(o) => Err(mismatch(&format!("a structure of {} members", fields.len()), o)),
            },
            Kind::Variant { options, tag_slot, ranges, tag, .. } => {
                let t = self.slots[*tag_slot as usize];
                let selected = ranges.iter().find(|r| r.0 <= t && t <= r.1).map(|r| r.2);
                let option_name = |i: u32| options.get(i as usize).map(|&o| plan.node(o).name.as_str()).unwrap_or("?");
                let (index, inner) = match v {
                    None => match selected {
                        Some(i) => (i, None),
                        None => return Err(FieldError::new(format!("the variant's tag `{tag}` is {t}, which selects no option"))),
                    },
                    Some(OwnedValue::Variant(i, inner)) => {
                        if *i as usize >= options.len() {
                            return Err(FieldError::new(format!("option {i} given, but the variant has {} options", options.len())));
                        }
                        if selected != Some(*i) {
                            let sel = match selected {
                                Some(s) => format!("option `{}`", option_name(s)),
                                None => "no option".to_string(),
                            };
                            return Err(FieldError::new(format!(
                                "option `{}` given, but the variant's tag `{tag}` is {t}, which selects {sel}",
                                option_name(*i)
                            )));
                        }
                        (*i, Some(&**inner))
                    }
                    Some(o) => return Err(mismatch("a variant", o)),
                };
                let o = options[index as usize];
                self.put(plan, o, inner).map_err(|e| e.within(plan.node(o).name.clone()))
            }
            Kind::Array { elem, len, byte_elem, uuid } => {
                if *uuid {
                    if let Some(u) = self.uuid {
                        return self.put_bytes(plan, *elem, &u, 16);
                    }
                }
                self.put_elems(plan, *elem, *len, *byte_elem, v, None)
            }
            Kind::Sequence { elem, len_slot, byte_elem, length } => {
                let n = self.slots[*len_slot as usize];
                let n = u64::try_from(n)
                    .map_err(|_| FieldError::new(format!("the sequence's length field `{length}` is negative ({n})")))?;
                self.put_elems(plan, *elem, n, *byte_elem, v, Some(length))
            }
            Kind::Invalid(m) => Err(FieldError::new(format!("the metadata cannot be encoded here: {m}"))),
        }
    }

    fn put_elems(&mut self, plan: &WritePlan, elem: NodeId, n: u64, byte_elem: bool, v: Option<&OwnedValue>, seq: Option<&str>) -> FResult {
        let count_error = |given: usize| match seq {
            Some(length) => FieldError::new(format!("the sequence has {given} elements, but its length field `{length}` is {n}")),
            None => FieldError::new(format!("the array has {n} elements, but {given} were given")),
        };
        match v {
            None => {
                for k in 0..n {
                    self.put(plan, elem, None).map_err(|e| e.within(format!("[{k}]")))?;
                }
                Ok(())
            }
            Some(OwnedValue::Array(vals)) => {
                if vals.len() as u64 != n {
                    return Err(count_error(vals.len()));
                }
                for (k, x) in vals.iter().enumerate() {
                    self.put(plan, elem, Some(x)).map_err(|e| e.within(format!("[{k}]")))?;
                }
                Ok(())
            }
            Some(OwnedValue::Bytes(b)) if byte_elem => {
                if b.len() as u64 != n {
                    return Err(count_error(b.len()));
                }
                self.put_bytes(plan, elem, b, n)
            }
            Some(OwnedValue::Str(s)) if byte_elem => {
                let b = s.as_bytes();
                if b.len() as u64 > n || (seq.is_some() && b.len() as u64 != n) {
                    return Err(match seq {
                        Some(length) => FieldError::new(format!("the string has {} bytes, but the sequence's length field `{length}` is {n}", b.len())),
                        None => FieldError::new(format!("the string has {} bytes, more than the array's {n}", b.len())),
                    });
                }
                self.put_bytes(plan, elem, b, n)
            }
            Some(o) => Err(mismatch(&format!("an array of {n} elements"), o)),
        }
    }

    /// Writes `b` then NUL bytes up to `n` elements of the 8-bit integer node `elem`.
    fn put_bytes(&mut self, plan: &WritePlan, elem: NodeId, b: &[u8], n: u64) -> FResult {
        let node = plan.node(elem);
        let Kind::Int(i) = &node.kind else { return Err(FieldError::new("internal error: not a byte array")) };
        let plain = node.align <= 8 && i.slot.is_none() && !i.clock && i.role == Role::None;
        if plain {
            self.buf.align(node.align);
            if self.buf.position().is_multiple_of(8) {
                self.buf.bytes_aligned(b);
                for _ in b.len() as u64..n {
                    self.buf.uint(0, 8, i.bo);
                }
                return Ok(());
            }
        }
        for k in 0..n {
            let x = b.get(k as usize).copied().unwrap_or(0);
            let v = if i.signed { OwnedValue::I(x as i8 as i64) } else { OwnedValue::U(x as u64) };
            self.put(plan, elem, Some(&v)).map_err(|e| e.within(format!("[{k}]")))?;
        }
        Ok(())
    }

    fn int_value(i: &IntW, v: Option<&OwnedValue>) -> FResult<u64> {
        let size = i.size;
        match v {
            None => Ok(0),
            Some(&OwnedValue::U(u)) => {
                let ok = if i.signed { size >= 64 && u <= i64::MAX as u64 || size < 64 && u < 1u64 << (size - 1) } else { fits_unsigned(u, size) };
                if !ok {
                    return Err(FieldError::new(format!("{u} does not fit {}", int_desc(i))));
                }
                Ok(u & mask(size))
            }
            Some(&OwnedValue::I(x)) => {
                let ok = if i.signed {
                    size >= 64 || (-(1i64 << (size - 1))..(1i64 << (size - 1))).contains(&x)
                } else {
                    x >= 0 && fits_unsigned(x as u64, size)
                };
                if !ok {
                    return Err(FieldError::new(format!("{x} does not fit {}", int_desc(i))));
                }
                Ok(x as u64 & mask(size))
            }
            Some(o) => Err(mismatch(&int_desc(i), o)),
        }
    }

    fn put_int(&mut self, id: NodeId, i: &IntW, v: Option<&OwnedValue>) -> FResult {
        let size = i.size;
        if size > 64 {
            if !size.is_multiple_of(8) || !self.buf.position().is_multiple_of(8) {
                return Err(FieldError::new(format!("a {size}-bit integer must be byte-aligned and a whole number of bytes")));
            }
            let n = (size / 8) as usize;
            match v {
                None => {
                    for _ in 0..n {
                        self.buf.uint(0, 8, i.bo);
                    }
                }
                Some(OwnedValue::Bytes(b)) if b.len() == n => self.buf.bytes_aligned(b),
                Some(o) => return Err(mismatch(&format!("{n} bytes (a {size}-bit integer)"), o)),
            }
            self.last_bo = Some(i.bo);
            return Ok(());
        }
        let need = |what: &str, value: u64| -> FResult<u64> {
            if fits_unsigned(value, size) {
                Ok(value)
            } else {
                Err(FieldError::new(format!("{what} {value} does not fit this {size}-bit field")))
            }
        };
        let raw = match i.role {
            Role::None => Self::int_value(i, v)?,
            Role::Magic => need("the packet magic", PACKET_MAGIC)?,
            Role::StreamId => need("the stream class id", self.stream_id)?,
            Role::StreamInstanceId => need("the stream instance id", self.instance_id)?,
            Role::PacketBegin => {
                let b = self.begin & mask(size);
                self.begin_written = Some(b);
                b
            }
            Role::PacketEnd | Role::ContentSize | Role::PacketSize => {
                self.patches.push(Patch { role: i.role, bit: self.buf.position(), size, bo: i.bo });
                0
            }
            Role::EventsDiscarded => self.discarded & mask(size),
            Role::PacketSeqNum => self.seq & mask(size),
            Role::EventId => {
                let x = self.ids.iter().find(|(n, _)| *n == id).map(|(_, x)| *x).unwrap_or(self.class_id);
                let x = need("the event class id", x)?;
                self.last_id = Some(x);
                x
            }
            Role::Timestamp => self.ts & mask(size),
        };
        self.check_bo(i.bo)?;
        self.buf.uint(raw, size, i.bo);
        self.last_bo = Some(i.bo);
        if let Some(s) = i.slot {
            self.slots[s as usize] = if i.signed { sign_extend(raw, size) as i128 } else { raw as i128 };
        }
        if i.clock && i.role != Role::PacketEnd {
            self.clock = update_clock(self.clock, raw, size);
        }
        Ok(())
    }
}

fn bo_word(bo: ByteOrder) -> &'static str {
    match bo {
        ByteOrder::Little => "little-endian",
        ByteOrder::Big => "big-endian",
    }
}

// ---------------------------------------------------------------------------------------------
// Public API

/// How a [`StreamWriter`] cuts and indexes packets.
#[derive(Clone, Debug)]
pub struct StreamOptions {
    /// Packet size in bytes (a multiple of 8 is usual; LTTng uses pages). Events go into a
    /// packet while they fit; an event larger than an empty packet gets a larger packet of
    /// its own. Ignored when the packet context has neither `packet_size` nor
    /// `content_size` (the stream is then one packet). Default 4096.
    pub packet_size: u64,
    /// Write an LTTng index (`index/NAME.idx`, format 1.1) beside the stream file
    /// ([`TraceWriter`] only: [`StreamWriter::new`] takes the index sink itself).
    /// Default true.
    pub index: bool,
    /// The `stream_instance_id` to write. By default [`TraceWriter`] numbers its streams 0, 1,
    /// 2, ... (readers take two files with the same stream class and instance id to be one
    /// stream split in tracefiles); [`StreamWriter::new`] uses 0.
    pub instance_id: Option<u64>,
    /// Encode every event field by field through the types, never by the fast paths (bodies
    /// of whole bytes, flattened headers). The output is the same either way; this is how the
    /// tests check that. Default false.
    pub general_only: bool,
}

impl Default for StreamOptions {
    fn default() -> StreamOptions {
        StreamOptions { packet_size: 4096, index: true, instance_id: None, general_only: false }
    }
}

/// The values of one event's scopes, each a structure value ([`OwnedValue::Struct`]).
///
/// A scope the stream or event class declares needs a value, except the event header: its
/// `id` and `timestamp` fields are filled in, and other members are zero or empty unless
/// `header` is given (values given for `id` and `timestamp` are ignored). Leave `header` out
/// for headers with variants chosen by `id` (LTTng's): the writer chooses their option.
#[derive(Clone, Copy, Debug, Default)]
pub struct EventValues<'v> {
    /// `stream.event.header` members other than `id` and `timestamp` (optional).
    pub header: Option<&'v OwnedValue>,
    /// `stream.event.context`.
    pub common_context: Option<&'v OwnedValue>,
    /// `event.context`.
    pub context: Option<&'v OwnedValue>,
    /// `event.fields`.
    pub payload: Option<&'v OwnedValue>,
}

impl<'v> EventValues<'v> {
    /// Only a payload.
    pub fn payload(payload: &'v OwnedValue) -> EventValues<'v> {
        EventValues { payload: Some(payload), ..EventValues::default() }
    }

    /// These values with `stream.event.context` set.
    pub fn with_common_context(self, value: &'v OwnedValue) -> EventValues<'v> {
        EventValues { common_context: Some(value), ..self }
    }

    /// These values with `event.context` set.
    pub fn with_context(self, value: &'v OwnedValue) -> EventValues<'v> {
        EventValues { context: Some(value), ..self }
    }

    /// These values with the event header's other members set.
    pub fn with_header(self, value: &'v OwnedValue) -> EventValues<'v> {
        EventValues { header: Some(value), ..self }
    }
}

/// What a finished [`StreamWriter`] wrote, and its sinks.
#[derive(Debug)]
pub struct Finished<W> {
    /// Events written.
    pub events: u64,
    /// Packets written.
    pub packets: u64,
    /// Discarded events recorded.
    pub discarded: u64,
    /// Bytes of the stream.
    pub bytes: u64,
    /// The stream sink, flushed.
    pub out: W,
    /// The index sink, flushed, if any.
    pub index: Option<W>,
}

/// Writes the packets of one data stream (see the [`crate::write`] documentation for what
/// it fills in, how packets are cut and how values are checked).
///
/// Call [`StreamWriter::finish`] at the end: it closes the last packet.
pub struct StreamWriter<W: Write> {
    plan: Arc<WritePlan>,
    enc: Enc,
    name: PathBuf,
    out: W,
    index: Option<W>,
    packet_bits: u64,
    open: bool,
    /// First and last event times of the open packet.
    packet_begin: u64,
    packet_end: u64,
    events_in_packet: u64,
    /// Last event time of the stream.
    last_ts: u64,
    offset: u64,
    seq: u64,
    discarded: u64,
    /// The discarded-event total carried by the last packet written.
    discarded_written: u64,
    /// Caller values of the packet header's and context's top-level members.
    ph_values: Vec<Option<OwnedValue>>,
    pc_values: Vec<Option<OwnedValue>>,
    events: u64,
    packets: u64,
    failed: bool,
    /// [`StreamOptions::general_only`].
    general_only: bool,
}

impl<W: Write> std::fmt::Debug for StreamWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamWriter")
            .field("name", &self.name)
            .field("stream_class_id", &self.plan.stream_class_id)
            .field("events", &self.events)
            .field("packets", &self.packets)
            .finish_non_exhaustive()
    }
}

impl<W: Write> StreamWriter<W> {
    /// A writer of a stream of class `stream_class_id` of `trace` into `out` (and its LTTng
    /// index into `index`, when given). `name` labels errors (and is the file's path when
    /// [`TraceWriter`] opens it). The index's header is written at once.
    pub fn new(trace: &TraceClass, stream_class_id: u64, name: impl Into<PathBuf>, out: W, index: Option<W>, options: &StreamOptions) -> Result<StreamWriter<W>> {
        let name = name.into();
        let plan = WritePlan::compile(trace, stream_class_id).map_err(|message| Error::Write { path: name.clone(), message })?;
        StreamWriter::with_plan(Arc::new(plan), name, out, index, options)
    }

    fn with_plan(plan: Arc<WritePlan>, name: PathBuf, out: W, mut index: Option<W>, options: &StreamOptions) -> Result<StreamWriter<W>> {
        let werr = |message: String| Error::Write { path: name.clone(), message };
        if options.packet_size == 0 {
            return Err(werr("the packet size must not be 0".into()));
        }
        let packet_bits = options.packet_size.checked_mul(8).ok_or_else(|| werr("the packet size is too large".into()))?;
        if !plan.single_packet() && !fits_unsigned(packet_bits, plan.size_field_bits) {
            return Err(werr(format!(
                "packets of {} bytes do not fit the packet context's {}-bit size fields",
                options.packet_size, plan.size_field_bits
            )));
        }
        if let Some(ix) = &mut index {
            let mut head = [0u8; 16];
            head[0..4].copy_from_slice(&IDX_MAGIC.to_be_bytes());
            head[4..8].copy_from_slice(&1u32.to_be_bytes());
            head[8..12].copy_from_slice(&1u32.to_be_bytes());
            head[12..16].copy_from_slice(&72u32.to_be_bytes());
            ix.write_all(&head).map_err(|source| Error::Io { path: name.clone(), source })?;
        }
        let mut enc = Enc::new(&plan);
        enc.instance_id = options.instance_id.unwrap_or(0);
        let ph = plan.members(plan.packet_header).len();
        let pc = plan.members(plan.packet_context).len();
        Ok(StreamWriter {
            plan,
            enc,
            name,
            out,
            index,
            packet_bits,
            open: false,
            packet_begin: 0,
            packet_end: 0,
            events_in_packet: 0,
            last_ts: 0,
            offset: 0,
            seq: 0,
            discarded: 0,
            discarded_written: 0,
            ph_values: vec![None; ph],
            pc_values: vec![None; pc],
            events: 0,
            packets: 0,
            failed: false,
            general_only: options.general_only,
        })
    }

    fn error(&self, message: String) -> Error {
        Error::Write { path: self.name.clone(), message }
    }

    fn io(&mut self, source: std::io::Error) -> Error {
        self.failed = true;
        Error::Io { path: self.name.clone(), source }
    }

    /// The stream class id.
    pub fn stream_class_id(&self) -> u64 {
        self.plan.stream_class_id
    }

    /// The `stream_instance_id` this writer writes.
    pub fn instance_id(&self) -> u64 {
        self.enc.instance_id
    }

    /// Events written so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Packets closed so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Sets the value of the packet header's top-level member `name` (raw or display name)
    /// for the packets opened from now on. Values set for `magic`, `uuid`, `stream_id` and
    /// `stream_instance_id` are ignored (the writer fills those in).
    pub fn set_packet_header(&mut self, name: &str, value: OwnedValue) -> Result<()> {
        let root = self.plan.packet_header;
        self.set_member(root, true, name, value)
    }

    /// Sets the value of the packet context's top-level member `name` (raw or display name,
    /// e.g. `cpu_id`) for the packets opened from now on (the open packet keeps its values).
    /// Values set for the members the writer fills in are ignored.
    pub fn set_packet_context(&mut self, name: &str, value: OwnedValue) -> Result<()> {
        let root = self.plan.packet_context;
        self.set_member(root, false, name, value)
    }

    fn set_member(&mut self, root: Option<NodeId>, header: bool, name: &str, value: OwnedValue) -> Result<()> {
        let scope = if header { "packet header" } else { "packet context" };
        let plan = Arc::clone(&self.plan);
        let members = plan.members(root);
        let Some(k) = members.iter().position(|&m| plan.node(m).name == name || ir::display_name(&plan.node(m).name) == name) else {
            return Err(self.error(format!("the {scope} has no member `{name}`")));
        };
        let vals = if header { &mut self.ph_values } else { &mut self.pc_values };
        let old = vals[k].replace(value);
        // Check the values now, on a scratch encoder, so that errors come from this call.
        let mut scratch = Enc::new(&plan);
        scratch.instance_id = self.enc.instance_id;
        if let Err(m) = packet_fields(&plan, &mut scratch, &self.ph_values, &self.pc_values) {
            let vals = if header { &mut self.ph_values } else { &mut self.pc_values };
            vals[k] = old;
            return Err(self.error(m));
        }
        Ok(())
    }

    fn open_packet(&mut self, ts: u64) -> Result<()> {
        let plan = Arc::clone(&self.plan);
        let e = &mut self.enc;
        e.buf.clear();
        e.last_bo = None;
        e.patches.clear();
        e.begin_written = None;
        e.begin = ts;
        e.seq = self.seq;
        e.discarded = self.discarded;
        let saved_clock = e.clock;
        if let Err(m) = packet_fields(&plan, e, &self.ph_values, &self.pc_values) {
            e.clock = saved_clock;
            e.buf.clear();
            return Err(self.error(m));
        }
        if let Some(b) = e.begin_written {
            e.clock = b;
        }
        self.open = true;
        self.packet_begin = ts;
        self.packet_end = ts;
        self.events_in_packet = 0;
        Ok(())
    }

    fn close_packet(&mut self) -> Result<()> {
        self.close_packet_sized(true)
    }

    /// Closes the open packet at its content size (rounded up to a byte) rather than at the
    /// stream's packet size: for packets closed before they are full (discarded events, an
    /// explicit flush, the end), so that they are not padded.
    fn close_packet_short(&mut self) -> Result<()> {
        self.close_packet_sized(false)
    }

    fn close_packet_sized(&mut self, full: bool) -> Result<()> {
        if !self.open {
            return Ok(());
        }
        let plan = Arc::clone(&self.plan);
        if plan.single_packet() && self.packets > 0 {
            return Err(self.error(
                "the packet context has neither `packet_size` nor `content_size`, so a stream of this class is a single packet".into(),
            ));
        }
        let content = self.enc.buf.position();
        let packet_bits = if plan.has_packet_size && plan.has_content_size {
            if full {
                self.packet_bits.max(content.div_ceil(8) * 8)
            } else {
                content.div_ceil(8) * 8
            }
        } else if plan.has_content_size {
            content.div_ceil(8) * 8
        } else {
            if !content.is_multiple_of(8) {
                return Err(self.error(format!(
                    "the packet's content ends in the middle of a byte (bit {content}) and the packet context has no `content_size` to say so"
                )));
            }
            content
        };
        let end = self.packet_end;
        for k in 0..self.enc.patches.len() {
            let p = self.enc.patches[k];
            let v = match p.role {
                Role::PacketEnd => end & mask(p.size),
                Role::ContentSize => content,
                _ => packet_bits,
            };
            if !fits_unsigned(v, p.size) {
                return Err(self.error(format!("a packet of {v} bits does not fit the packet context's {}-bit size field", p.size)));
            }
            self.enc.buf.patch_uint(p.bit, v, p.size, p.bo);
        }
        if packet_bits == 0 {
            // Nothing to write (no packet header, context or events): readers skip an empty
            // file, and an index entry of 0 bits would be invalid.
            self.open = false;
            return Ok(());
        }
        self.enc.buf.pad_to(packet_bits);
        let bytes = (packet_bits / 8) as usize;
        if let Err(e) = self.out.write_all(&self.enc.buf.bytes()[..bytes]) {
            return Err(self.io(e));
        }
        if self.index.is_some() {
            let begin = self.enc.begin_written.unwrap_or(self.packet_begin);
            let entry = [
                self.offset,
                packet_bits,
                content,
                begin,
                end,
                self.discarded,
                plan.stream_class_id,
                self.enc.instance_id,
                self.seq,
            ];
            let mut raw = [0u8; 72];
            for (k, v) in entry.iter().enumerate() {
                raw[k * 8..k * 8 + 8].copy_from_slice(&v.to_be_bytes());
            }
            if let Some(Err(e)) = self.index.as_mut().map(|ix| ix.write_all(&raw)) {
                return Err(self.io(e));
            }
        }
        self.offset += bytes as u64;
        self.seq += 1;
        self.packets += 1;
        self.discarded_written = self.enc.discarded;
        self.open = false;
        Ok(())
    }

    /// Appends an event of class `class_id` at `timestamp` (clock cycles) with `values`.
    ///
    /// On error (values that do not match their types, an id or a timestamp the event header
    /// cannot encode) nothing is written and the stream stays usable.
    pub fn event(&mut self, class_id: u64, timestamp: u64, values: EventValues<'_>) -> Result<()> {
        if self.failed {
            return Err(self.error("an earlier write failed".into()));
        }
        let plan = Arc::clone(&self.plan);
        let Some(ev) = plan.event(class_id) else {
            return Err(self.error(format!("stream class {} has no event class {class_id}", plan.stream_class_id)));
        };
        let what = |scope: &str| format!("event `{}` (class id {class_id}) at {timestamp}: {scope}", ev.name);
        for (declared, given, scope) in [
            (plan.event_context.is_some(), values.common_context.is_some(), "stream event context"),
            (ev.context.is_some(), values.context.is_some(), "event context"),
            (ev.payload.is_some(), values.payload.is_some(), "payload"),
        ] {
            if declared && !given {
                return Err(self.error(format!("{}: no value given", what(scope))));
            }
            if given && !declared {
                return Err(self.error(format!("{}: a value was given, but the metadata declares none", what(scope))));
            }
        }
        if values.header.is_some() && plan.event_header.is_none() {
            return Err(self.error(format!("{}: a value was given, but the metadata declares none", what("event header"))));
        }
        let limit = if plan.single_packet() { u64::MAX } else { self.packet_bits };
        for _attempt in 0..3 {
            if !self.open {
                self.open_packet(timestamp)?;
            }
            let mark = self.enc.mark();
            match self.encode_event(&plan, ev, class_id, timestamp, &values, mark.bit) {
                Ok(()) => {
                    if self.enc.buf.position() > limit && self.events_in_packet > 0 {
                        self.enc.rollback(mark);
                        self.close_packet()?;
                        continue;
                    }
                    self.events_in_packet += 1;
                    self.events += 1;
                    self.packet_end = self.packet_end.max(timestamp);
                    self.last_ts = timestamp;
                    return Ok(());
                }
                Err(EventError::Time(_)) if self.events_in_packet > 0 && plan.has_begin && !plan.single_packet() => {
                    // A new packet's `timestamp_begin` resets the clock.
                    self.enc.rollback(mark);
                    self.close_packet()?;
                }
                Err(EventError::Time(m)) | Err(EventError::Other(m)) => {
                    self.enc.rollback(mark);
                    return Err(self.error(format!("event `{}` (class id {class_id}) at {timestamp}: {m}", ev.name)));
                }
            }
        }
        Err(self.error(format!("event `{}` (class id {class_id}) at {timestamp}: cannot be placed in a packet", ev.name)))
    }

    /// Encodes one event after the mark at `start`. Unless `general_only`, the header goes
    /// through [`Enc::put_header`] and the scopes whose types are simple (see [`simple_nodes`])
    /// through [`Enc::put_simple`]; a scope either declines is rolled back and written by
    /// [`Enc::put`], which says what is wrong with it.
    fn encode_event(&mut self, plan: &WritePlan, ev: &EventW, class_id: u64, ts: u64, values: &EventValues<'_>, start: u64) -> Result<(), EventError> {
        let fast = !self.general_only;
        let e = &mut self.enc;
        let body = |e: &mut Enc, root: NodeId, v: Option<&OwnedValue>, scope: &str| -> Result<(), EventError> {
            if fast && plan.simple[root as usize] {
                let mark = e.mark();
                if e.put_simple(plan, root, v) {
                    return Ok(());
                }
                e.rollback(mark);
            }
            e.put(plan, root, v).map_err(|x| EventError::Other(x.render(scope)))
        };
        e.ts = ts;
        e.class_id = class_id;
        e.last_id = None;
        if let Some(h) = plan.event_header {
            let combo = choose_combo(plan, e, class_id, ts)?;
            let steps = plan.header_steps.get(combo).and_then(Option::as_deref).filter(|_| fast && values.header.is_none());
            let mark = e.mark();
            if !steps.is_some_and(|steps| e.put_header(plan, steps)) {
                e.rollback(mark);
                e.put(plan, h, values.header).map_err(|x| EventError::Other(x.render("event header")))?;
            }
            let c = &plan.combos[combo];
            if c.ts.iter().any(|t| t.1) && e.clock != ts {
                return Err(EventError::Time(format!(
                    "the event header encodes the timestamp as {} (other clock-mapped header fields?)",
                    e.clock
                )));
            }
            if e.last_id.unwrap_or(0) != class_id {
                return Err(EventError::Other(format!(
                    "the event header encodes event class id {} instead",
                    e.last_id.unwrap_or(0)
                )));
            }
        } else if class_id != 0 {
            return Err(EventError::Other(
                "the stream class has no event header: readers take every event to be of class 0".into(),
            ));
        }
        if let Some(c) = plan.event_context {
            body(e, c, values.common_context, "stream event context")?;
        }
        if let Some(c) = ev.context {
            body(e, c, values.context, "event context")?;
        }
        if let Some(p) = ev.payload {
            body(e, p, values.payload, "payload")?;
        }
        if e.buf.position() == start {
            return Err(EventError::Other("the event encodes to 0 bits, which readers cannot tell from the end of a packet".into()));
        }
        Ok(())
    }

    /// Records that the tracer discarded `count` events here: the open packet is closed, and
    /// the next packet's `events_discarded` (a running total) carries them, so readers report
    /// them between the events written before and after this call. Fails when the packet
    /// context has no `events_discarded` member.
    pub fn discard(&mut self, count: u64) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        if !self.plan.has_discarded {
            return Err(self.error("the packet context has no `events_discarded` member to record discarded events".into()));
        }
        self.close_packet_short()?;
        self.discarded = self.discarded.saturating_add(count);
        Ok(())
    }

    /// Closes the open packet, if any (the next event opens a new one).
    pub fn flush_packet(&mut self) -> Result<()> {
        self.close_packet_short()
    }

    /// Closes the open packet, if any, and flushes the sinks, so that a reader of the files
    /// (or a crash) sees every event written so far.
    pub fn flush(&mut self) -> Result<()> {
        self.close_packet_short()?;
        if let Err(e) = self.out.flush() {
            return Err(self.io(e));
        }
        if let Some(Err(e)) = self.index.as_mut().map(|ix| ix.flush()) {
            return Err(self.io(e));
        }
        Ok(())
    }

    /// Goes on writing with the event classes of `class` (a tracer that learns event classes
    /// while it runs, after [`TraceWriter::set_class`]). The stream class must keep its packet
    /// header and context, event header and common context exactly; the open packet stays
    /// open.
    pub fn set_class(&mut self, class: &TraceClass) -> Result<()> {
        let id = self.plan.stream_class_id;
        let plan = WritePlan::compile(class, id).map_err(|m| self.error(m))?;
        let old = &self.plan;
        if plan.stream_nodes != old.stream_nodes || plan.nodes[..plan.stream_nodes] != old.nodes[..old.stream_nodes] || plan.uuid != old.uuid {
            return Err(self.error(format!("the new class changes stream class {id}'s packet or event header or context")));
        }
        self.enc.slots.resize(plan.slot_count.max(1), 0);
        self.plan = Arc::new(plan);
        Ok(())
    }

    /// Closes the last packet (writing an empty one if discarded events are still to be
    /// reported), flushes the sinks and returns them.
    ///
    /// A stream without any packet gets one empty packet (timestamps 0): babeltrace2 2.0
    /// rejects an empty stream file.
    pub fn finish(mut self) -> Result<Finished<W>> {
        self.close_packet_short()?;
        if self.discarded > self.discarded_written || self.packets == 0 {
            self.open_packet(self.last_ts)?;
            self.close_packet_short()?;
        }
        if let Err(e) = self.out.flush() {
            return Err(self.io(e));
        }
        if let Some(Err(e)) = self.index.as_mut().map(|ix| ix.flush()) {
            return Err(self.io(e));
        }
        Ok(Finished {
            events: self.events,
            packets: self.packets,
            discarded: self.discarded,
            bytes: self.offset,
            out: self.out,
            index: self.index,
        })
    }
}

/// Encodes the packet header and context with `enc`.
fn packet_fields(plan: &WritePlan, enc: &mut Enc, ph: &[Option<OwnedValue>], pc: &[Option<OwnedValue>]) -> Result<(), String> {
    if let Some(h) = plan.packet_header {
        enc.put_members(plan, h, ph).map_err(|e| e.render("packet header"))?;
    }
    if let Some(c) = plan.packet_context {
        enc.put_members(plan, c, pc).map_err(|e| e.render("packet context"))?;
    }
    Ok(())
}

enum EventError {
    /// The timestamp cannot be encoded in this packet (a new packet may help).
    Time(String),
    Other(String),
}

/// Picks the cheapest header encoding for (`class_id`, `ts`) and fills `e.ids` with its `id`
/// values. Returns its index in `plan.combos`.
fn choose_combo(plan: &WritePlan, e: &mut Enc, class_id: u64, ts: u64) -> Result<usize, EventError> {
    let mut id_ok = false;
    for (ci, c) in plan.combos.iter().enumerate() {
        e.ids.clear();
        let mut ok = true;
        for &n in &c.ids {
            let Kind::Int(int) = &plan.node(n).kind else {
                ok = false;
                break;
            };
            let required = c.choices.iter().find(|(v, _)| matches!(&plan.node(*v).kind, Kind::Variant { tag_node, .. } if *tag_node == n));
            let fits = |x: u64| {
                if int.signed {
                    if int.size >= 64 {
                        x <= i64::MAX as u64
                    } else {
                        x < 1u64 << (int.size - 1)
                    }
                } else {
                    fits_unsigned(x, int.size)
                }
            };
            let value = match required {
                Some(&(v, option)) => {
                    let Kind::Variant { ranges, .. } = &plan.node(v).kind else {
                        ok = false;
                        break;
                    };
                    // Readers take the first range holding the tag value.
                    let selects = |x: i128| ranges.iter().find(|r| r.0 <= x && x <= r.1).map(|r| r.2);
                    if fits(class_id) && selects(class_id as i128) == Some(option) {
                        Some(class_id)
                    } else {
                        ranges
                            .iter()
                            .filter(|r| r.2 == option && selects(r.0) == Some(option))
                            .map(|r| (r.0 as i64 as u64) & mask(int.size))
                            .next()
                    }
                }
                None => fits(class_id).then_some(class_id),
            };
            match value {
                Some(x) => e.ids.push((n, x)),
                None => {
                    ok = false;
                    break;
                }
            }
        }
        if !ok {
            continue;
        }
        if e.ids.last().map_or(0, |x| x.1) != class_id {
            continue;
        }
        id_ok = true;
        let mut clock = e.clock;
        let mut any = false;
        for &(size, mapped) in &c.ts {
            if mapped {
                any = true;
                clock = update_clock(clock, ts & mask(size), size);
            }
        }
        if any && clock != ts {
            continue;
        }
        return Ok(ci);
    }
    e.ids.clear();
    if !id_ok {
        return Err(EventError::Other(format!("the event header cannot encode event class id {class_id}")));
    }
    Err(EventError::Time(format!(
        "the event header cannot encode timestamp {ts} after {} (a timestamp field of N bits encodes times from the previous one to 2^N - 1 after it)",
        e.clock
    )))
}

/// Writes a trace directory: its `metadata` (TSDL from the [`TraceClass`]), and data streams
/// through the [`StreamWriter`]s it hands out.
#[derive(Debug)]
pub struct TraceWriter {
    dir: PathBuf,
    class: TraceClass,
    plans: Vec<(u64, Arc<WritePlan>)>,
    next_instance: u64,
}

impl TraceWriter {
    /// Creates `dir` (and parents) and writes `dir/metadata` from `class`.
    ///
    /// The metadata text is parsed back, and streams are laid out from what was parsed, so
    /// that the data always agrees with what readers will parse; a class that does not
    /// survive the trip is an error.
    pub fn create(dir: impl AsRef<Path>, class: &TraceClass) -> Result<TraceWriter> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|source| Error::Io { path: dir.clone(), source })?;
        let meta = dir.join("metadata");
        let text = super::to_tsdl(class);
        let parsed = crate::tsdl::parse(&text).map_err(|e| Error::Write {
            path: meta.clone(),
            message: format!("the TSDL written for this trace class does not parse back: {e}"),
        })?;
        std::fs::write(&meta, text).map_err(|source| Error::Io { path: meta.clone(), source })?;
        Ok(TraceWriter { dir, class: parsed, plans: Vec::new(), next_instance: 0 })
    }

    /// The trace directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The trace class as readers will parse it from the `metadata` written.
    pub fn class(&self) -> &TraceClass {
        &self.class
    }

    /// Rewrites `metadata` for `class`, the current class with event classes added (and the
    /// environment possibly changed): streams opened from now on use it, and open
    /// [`StreamWriter`]s follow with [`StreamWriter::set_class`]. The file is replaced
    /// atomically (written beside, then renamed), so a reader never sees half of it.
    pub fn set_class(&mut self, class: &TraceClass) -> Result<()> {
        let meta = self.dir.join("metadata");
        let text = super::to_tsdl(class);
        let parsed = crate::tsdl::parse(&text).map_err(|e| Error::Write {
            path: meta.clone(),
            message: format!("the TSDL written for this trace class does not parse back: {e}"),
        })?;
        if let Some(why) = growth_error(&self.class, &parsed) {
            return Err(Error::Write { path: meta, message: format!("the new trace class does not only add event classes: {why}") });
        }
        let tmp = self.dir.join(".metadata.tmp");
        std::fs::write(&tmp, text).map_err(|source| Error::Io { path: tmp.clone(), source })?;
        std::fs::rename(&tmp, &meta).map_err(|source| Error::Io { path: meta.clone(), source })?;
        self.class = parsed;
        self.plans.clear();
        Ok(())
    }

    /// Opens the stream file `dir/name` (and its index `dir/index/name.idx`) for a stream of
    /// class `stream_class_id`, with default [`StreamOptions`].
    pub fn stream(&mut self, stream_class_id: u64, name: &str) -> Result<StreamWriter<BufWriter<File>>> {
        self.stream_with(stream_class_id, name, &StreamOptions::default())
    }

    /// Opens the stream file `dir/name` for a stream of class `stream_class_id`, with
    /// `options`.
    pub fn stream_with(&mut self, stream_class_id: u64, name: &str, options: &StreamOptions) -> Result<StreamWriter<BufWriter<File>>> {
        let path = self.dir.join(name);
        if name.is_empty() || name == "metadata" || name.contains('/') || name.starts_with('.') || name.ends_with(".idx") {
            return Err(Error::Write { path, message: format!("`{name}` cannot name a stream file (readers would skip or misread it)") });
        }
        let plan = match self.plans.iter().find(|(id, _)| *id == stream_class_id) {
            Some((_, p)) => Arc::clone(p),
            None => {
                let p = Arc::new(WritePlan::compile(&self.class, stream_class_id).map_err(|message| Error::Write { path: path.clone(), message })?);
                self.plans.push((stream_class_id, Arc::clone(&p)));
                p
            }
        };
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |source| Error::Io { path: p, source }
        };
        let out = BufWriter::with_capacity(1 << 16, File::create(&path).map_err(io(&path))?);
        let index = if options.index {
            let idx_dir = self.dir.join("index");
            std::fs::create_dir_all(&idx_dir).map_err(io(&idx_dir))?;
            let idx_path = idx_dir.join(format!("{name}.idx"));
            Some(BufWriter::new(File::create(&idx_path).map_err(io(&idx_path))?))
        } else {
            None
        };
        let mut opts = options.clone();
        if opts.instance_id.is_none() {
            opts.instance_id = Some(self.next_instance);
            self.next_instance += 1;
        }
        StreamWriter::with_plan(plan, path, out, index, &opts)
    }
}

/// Why `new` is not `old` with event classes added (and its environment possibly changed).
fn growth_error(old: &TraceClass, new: &TraceClass) -> Option<String> {
    if (old.major, old.minor, old.uuid, old.byte_order) != (new.major, new.minor, new.uuid, new.byte_order)
        || old.packet_header != new.packet_header
        || old.clocks != new.clocks
    {
        return Some("the trace block, packet header or clocks differ".into());
    }
    if old.streams.len() != new.streams.len() {
        return Some("the stream classes differ".into());
    }
    for (a, b) in old.streams.iter().zip(&new.streams) {
        if (a.id, &a.packet_context, &a.event_header, &a.event_context) != (b.id, &b.packet_context, &b.event_header, &b.event_context) {
            return Some(format!("stream class {} changes", a.id));
        }
        if let Some(e) = a.events.iter().find(|e| !b.events.contains(e)) {
            return Some(format!("event class {} (`{}`) of stream class {} changes or goes", e.id, e.name, a.id));
        }
    }
    None
}
