//! The layout of a stream class, compiled once from the IR: every field type of the class (its
//! packet header and context, event header and common context, and every event class's
//! context and payload) as one arena of [`Node`]s, each with the [`Role`] its name gives it,
//! and every field reference (a sequence's length, a variant's tag) resolved to the node it
//! names and to a register slot that holds that node's value while a packet is read or
//! written.
//!
//! This is the one layout both directions work from: the decoder's plan
//! ([`crate::plan::StreamPlan`]) and the writer's plan (`write/plan.rs`) each wrap a
//! [`StreamLayout`] and annotate it with what their own fast paths need, so that a name means
//! the same field, a path resolves to the same node and a tag selects the same option on
//! both sides.
//!
//! Names follow babeltrace2's rules, in one place:
//!
//! * a field's meaning ([`Role::of`]) comes from its name after one leading underscore is
//!   removed (`_timestamp` is the event header's timestamp, as `timestamp` is);
//! * a variant option is selected by an enumeration label ([`option_matches`]) when the names
//!   are equal, or equal once each has lost one leading underscore (the `meta-variant-*`
//!   conformance traces pin this down).
//!
//! Field references are resolved as readers resolve them: a relative path looks in the
//! enclosing structures, innermost first, at the members declared so far, then in the earlier
//! scopes' roots, latest first; an absolute path into the scope being compiled walks down the
//! structures still open.

use std::sync::Arc;

use crate::ir::{self, ByteOrder, DisplayBase, Encoding, EnumType, EventClass, FieldPath, FieldType, Scope, StreamClass, TraceClass};

/// Index of a node in a [`StreamLayout`].
pub type NodeId = u32;

/// What a field means to readers and writers (CTF 1.8's well-known field names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Nothing special.
    None,
    /// `trace.packet.header.magic`.
    Magic,
    /// `trace.packet.header.uuid` (an array of 16 bytes).
    Uuid,
    /// `trace.packet.header.stream_id`.
    StreamId,
    /// `trace.packet.header.stream_instance_id`.
    StreamInstanceId,
    /// `stream.packet.context.timestamp_begin`.
    PacketBegin,
    /// `stream.packet.context.timestamp_end`.
    PacketEnd,
    /// `stream.packet.context.content_size`.
    ContentSize,
    /// `stream.packet.context.packet_size`.
    PacketSize,
    /// `stream.packet.context.events_discarded`.
    EventsDiscarded,
    /// `stream.packet.context.packet_seq_num`.
    PacketSeqNum,
    /// `stream.event.header.id` (at any depth; the last one decoded wins).
    EventId,
    /// `stream.event.header.timestamp` (at any depth).
    Timestamp,
}

impl Role {
    /// The role of a field named `name` (as written in the metadata) of type `ty` in `scope`:
    /// the well-known names of CTF 1.8, matched after one leading underscore is removed (as
    /// babeltrace2 does). `uuid` means the packet's UUID only when it is an array of 16
    /// 8-bit integers; every other role needs an integer (or enumeration).
    pub fn of(scope: Scope, name: &str, ty: &FieldType) -> Role {
        let role = match (scope, ir::display_name(name)) {
            (Scope::PacketHeader, "magic") => Role::Magic,
            (Scope::PacketHeader, "uuid") => Role::Uuid,
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
            _ => return Role::None,
        };
        let byte = |t: &FieldType| match t {
            FieldType::Int(i) => i.size == 8,
            FieldType::Enum(e) => e.container.size == 8,
            _ => false,
        };
        match (role, ty) {
            (Role::Uuid, FieldType::Array(a)) if a.length == 16 && byte(&a.element) => Role::Uuid,
            (Role::Uuid, _) => Role::None,
            (r, FieldType::Int(_) | FieldType::Enum(_)) => r,
            _ => Role::None,
        }
    }

    /// Whether babeltrace2 hides this field from printed contexts (it becomes packet or event
    /// metadata instead of a user field).
    pub fn is_hidden(self) -> bool {
        self != Role::None
    }
}

/// Whether the variant option named `option` is the one the enumeration label `label`
/// selects: the names are equal, or equal once each has lost one leading underscore.
pub fn option_matches(option: &str, label: &str) -> bool {
    option == label || ir::display_name(option) == ir::display_name(label)
}

/// An integer (or an enumeration's container).
#[derive(Clone, Debug, PartialEq)]
pub struct IntNode {
    /// Size in bits.
    pub size: u32,
    /// Signedness.
    pub signed: bool,
    /// Byte order.
    pub byte_order: ByteOrder,
    /// Display base.
    pub base: DisplayBase,
    /// Character encoding.
    pub encoding: Encoding,
    /// Index of the mapped clock class in [`TraceClass::clocks`]. An unmapped timestamp of a
    /// trace with a single clock is mapped to it, as babeltrace2 does.
    pub clock: Option<usize>,
    /// Enumeration labels, if this is an enum.
    pub enumeration: Option<Arc<EnumType>>,
    /// Slot this value is stored in for later references (a sequence length, a variant tag).
    pub slot: Option<u16>,
}

/// One option table entry of a variant: tag values `lower..=upper` select `option`.
#[derive(Clone, Debug, PartialEq)]
pub struct VariantRange {
    /// Lowest tag value.
    pub lower: i128,
    /// Highest tag value.
    pub upper: i128,
    /// Index into the variant's options.
    pub option: u32,
}

/// What a node is.
#[derive(Clone, Debug, PartialEq)]
pub enum NodeKind {
    /// An integer or enumeration.
    Int(IntNode),
    /// A float of `size` bits (32 or 64).
    Float {
        /// Size in bits.
        size: u32,
        /// Byte order.
        byte_order: ByteOrder,
    },
    /// A null-terminated string.
    String,
    /// A structure.
    Struct {
        /// Members.
        fields: Vec<NodeId>,
    },
    /// A variant.
    Variant {
        /// Options.
        options: Vec<NodeId>,
        /// Slot holding the tag value.
        tag_slot: u16,
        /// The tag's node.
        tag_node: NodeId,
        /// Tag value ranges to options.
        ranges: Vec<VariantRange>,
        /// Printable tag path (for errors).
        tag: String,
    },
    /// A fixed-length array.
    Array {
        /// Element node.
        element: NodeId,
        /// Element count.
        length: u64,
        /// Elements are byte-aligned 8-bit encoded integers: text (babeltrace2 prints such an
        /// array as a string).
        text: bool,
    },
    /// A sequence.
    Sequence {
        /// Element node.
        element: NodeId,
        /// Slot holding the length.
        length_slot: u16,
        /// Elements are byte-aligned 8-bit encoded integers: text.
        text: bool,
        /// Printable length path (for errors).
        length: String,
    },
    /// A type whose references could not be resolved (or that cannot be laid out); reading or
    /// writing it fails with this message.
    Invalid(String),
}

/// A compiled field type.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// Name as written in the metadata (empty for array elements and scope roots).
    pub raw_name: String,
    /// Alignment in bits.
    pub align: u32,
    /// What the field means (see [`Role::of`]).
    pub role: Role,
    /// What it is.
    pub kind: NodeKind,
}

impl Node {
    /// The name printers show (one leading underscore removed).
    pub fn name(&self) -> &str {
        ir::display_name(&self.raw_name)
    }

    /// Whether this is an integer of exactly 8 bits (an element of a byte array or sequence).
    pub fn is_byte(&self) -> bool {
        matches!(&self.kind, NodeKind::Int(i) if i.size == 8)
    }
}

/// An event class in a [`StreamLayout`].
#[derive(Clone, Debug)]
pub struct EventLayout {
    /// The class.
    pub class: EventClass,
    /// Root of `event.context`.
    pub context: Option<NodeId>,
    /// Root of `event.fields`.
    pub payload: Option<NodeId>,
    /// Position in [`StreamLayout::events`].
    pub(crate) index: u32,
}

/// Every field type of one stream class in one node arena (see the [module](self)
/// documentation).
#[derive(Clone, Debug)]
pub struct StreamLayout {
    /// All nodes.
    pub nodes: Vec<Node>,
    /// Root of `trace.packet.header`.
    pub packet_header: Option<NodeId>,
    /// Root of `stream.packet.context`.
    pub packet_context: Option<NodeId>,
    /// Root of `stream.event.header`.
    pub event_header: Option<NodeId>,
    /// Root of `stream.event.context`.
    pub event_context: Option<NodeId>,
    /// Event classes, sorted by id.
    pub events: Vec<EventLayout>,
    /// Number of slots a reader or writer needs.
    pub slot_count: usize,
    /// Nodes of the packet header and context, event header and common context: the first
    /// ones compiled, the same whatever event classes the stream class has.
    pub stream_nodes: usize,
    /// Stream class id.
    pub stream_class_id: u64,
    /// Index into `events` for every id below 65 536 (`u32::MAX`: no such class).
    by_id: Vec<u32>,
}

impl StreamLayout {
    /// Compiles the packet header (from `trace`) and every scope of `stream`.
    pub fn compile(trace: &TraceClass, stream: &StreamClass) -> StreamLayout {
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
            events.push(EventLayout { class: ev.clone(), context, payload, index: 0 });
        }
        events.sort_by_key(|e| e.class.id);
        let dense = events.iter().map(|e| e.class.id).filter(|&id| id < 1 << 16).max().map_or(0, |m| m as usize + 1);
        let mut by_id = vec![u32::MAX; dense];
        for (i, e) in events.iter_mut().enumerate() {
            e.index = i as u32;
            if let Some(slot) = by_id.get_mut(e.class.id as usize) {
                *slot = i as u32;
            }
        }
        StreamLayout {
            nodes: c.nodes,
            packet_header,
            packet_context,
            event_header,
            event_context,
            events,
            slot_count: c.slots as usize,
            stream_nodes,
            stream_class_id: stream.id,
            by_id,
        }
    }

    /// The node `id`.
    #[inline]
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id as usize]
    }

    /// The event class with id `id`.
    #[inline]
    pub fn event(&self, id: u64) -> Option<&EventLayout> {
        if let Some(&i) = self.by_id.get(id as usize) {
            return self.events.get(i as usize);
        }
        match self.events.binary_search_by_key(&id, |e| e.class.id) {
            Ok(i) => Some(&self.events[i]),
            Err(_) => None,
        }
    }

    /// The members of the structure `root` (none when it is absent or not a structure).
    pub fn members(&self, root: Option<NodeId>) -> &[NodeId] {
        match root.map(|r| &self.node(r).kind) {
            Some(NodeKind::Struct { fields }) => fields,
            _ => &[],
        }
    }

    /// Whether `other` lays out the packet header and context, the event header and the
    /// common context exactly as this layout does (the event classes may differ).
    pub fn same_stream_scopes(&self, other: &StreamLayout) -> bool {
        self.stream_class_id == other.stream_class_id
            && (self.packet_header, self.packet_context, self.event_header, self.event_context)
                == (other.packet_header, other.packet_context, other.event_header, other.event_context)
            && self.nodes[..self.stream_nodes] == other.nodes[..other.stream_nodes]
    }
}

/// Names visible in one open structure while compiling: (raw name, node).
type Frame = Vec<(String, NodeId)>;

struct Compiler<'t> {
    trace: &'t TraceClass,
    nodes: Vec<Node>,
    /// Compiled scope roots so far: (scope, root node).
    roots: Vec<(Scope, NodeId)>,
    /// Open structures, innermost last: the names compiled so far in each.
    frames: Vec<Frame>,
    /// The node of each open structure (parallel to `frames`).
    open: Vec<NodeId>,
    slots: u32,
    scope: Scope,
}

/// Deepest type nesting compiled (deeper types become [`NodeKind::Invalid`]).
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

    fn compile(&mut self, raw_name: String, ty: &FieldType, depth: usize) -> NodeId {
        let align = ty.alignment().max(1);
        let role = Role::of(self.scope, &raw_name, ty);
        if depth > MAX_DEPTH {
            return self.push(Node { raw_name, align, role: Role::None, kind: NodeKind::Invalid("types nested too deeply".into()) });
        }
        let kind = match ty {
            FieldType::Int(i) => NodeKind::Int(self.int_node(i, None, role)),
            FieldType::Enum(e) => NodeKind::Int(self.int_node(&e.container, Some(Arc::new(e.clone())), role)),
            FieldType::Float(f) => match f.size() {
                32 | 64 => NodeKind::Float { size: f.size(), byte_order: f.byte_order },
                n => NodeKind::Invalid(format!("unsupported floating point size {n} bits")),
            },
            FieldType::String(_) => NodeKind::String,
            FieldType::Struct(s) => {
                // Reserve the struct's id first so members follow it.
                let id = self.push(Node { raw_name, align, role, kind: NodeKind::Struct { fields: Vec::new() } });
                self.frames.push(Vec::new());
                self.open.push(id);
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
                self.nodes[id as usize].kind = NodeKind::Struct { fields };
                return id;
            }
            FieldType::Variant(v) => match self.resolve(&v.tag) {
                Err(msg) => NodeKind::Invalid(msg),
                Ok(tag_node) => {
                    let tag_slot = self.slot_of(tag_node);
                    let mut options = Vec::with_capacity(v.options.len());
                    for o in &v.options {
                        options.push(self.compile(o.name.clone(), &o.ty, depth + 1));
                    }
                    match self.variant_ranges(v, tag_node) {
                        Ok(ranges) => NodeKind::Variant { options, tag_slot, tag_node, ranges, tag: v.tag.to_string() },
                        Err(msg) => NodeKind::Invalid(msg),
                    }
                }
            },
            FieldType::Array(a) => {
                let element = self.compile(String::new(), &a.element, depth + 1);
                NodeKind::Array { element, length: a.length, text: self.is_text(element) }
            }
            FieldType::Sequence(s) => match self.resolve(&s.length) {
                Err(msg) => NodeKind::Invalid(msg),
                Ok(len_node) => match &self.nodes[len_node as usize].kind {
                    NodeKind::Int(_) => {
                        let length_slot = self.slot_of(len_node);
                        let element = self.compile(String::new(), &s.element, depth + 1);
                        NodeKind::Sequence { element, length_slot, text: self.is_text(element), length: s.length.to_string() }
                    }
                    _ => NodeKind::Invalid(format!("sequence length `{}` is not an integer", s.length)),
                },
            },
        };
        self.push(Node { raw_name, align, role, kind })
    }

    fn int_node(&self, i: &ir::IntType, enumeration: Option<Arc<EnumType>>, role: Role) -> IntNode {
        let clock = match &i.mapped_clock {
            Some(name) => self.trace.clocks.iter().position(|c| &c.name == name),
            // babeltrace2 maps an unmapped timestamp to the trace's only clock.
            None if matches!(role, Role::Timestamp | Role::PacketBegin | Role::PacketEnd) && self.trace.clocks.len() == 1 => Some(0),
            None => None,
        };
        IntNode { size: i.size, signed: i.signed, byte_order: i.byte_order, base: i.base, encoding: i.encoding, clock, enumeration, slot: None }
    }

    fn is_text(&self, element: NodeId) -> bool {
        let n = &self.nodes[element as usize];
        // babeltrace2 shows an array as a string when its elements are byte-aligned (exactly)
        // 8-bit encoded integers, enumerations included.
        matches!(&n.kind, NodeKind::Int(i) if i.size == 8 && i.encoding != Encoding::None && n.align == 8)
    }

    fn slot_of(&mut self, node: NodeId) -> u16 {
        if let NodeKind::Int(i) = &mut self.nodes[node as usize].kind {
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

    /// Finds the node a field path names.
    fn resolve(&self, path: &FieldPath) -> Result<NodeId, String> {
        let (start, rest): (Option<NodeId>, &[String]) = match path {
            FieldPath::Absolute(scope, names) => {
                let root = self.roots.iter().rev().find(|(s, _)| s == scope).map(|(_, r)| *r);
                match root {
                    Some(r) => (Some(r), &names[..]),
                    // A reference into the scope being compiled: from its (open) root.
                    None if *scope == self.scope => (self.open.first().copied(), &names[..]),
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
            // A structure still being compiled (the path goes through an enclosing structure)
            // has its members so far in its frame.
            let next = match self.open.iter().position(|&o| o == cur) {
                Some(j) => self
                    .frames
                    .get(j)
                    .and_then(|f| f.iter().rev().find(|(n, _)| n == name))
                    .map(|(_, id)| *id)
                    .or_else(|| self.open.get(j + 1).copied().filter(|&o| self.nodes[o as usize].raw_name == *name)),
                None => self.member(cur, name),
            };
            cur = next.ok_or_else(|| format!("field `{path}` not found"))?;
        }
        Ok(cur)
    }

    fn member(&self, node: NodeId, name: &str) -> Option<NodeId> {
        match &self.nodes[node as usize].kind {
            NodeKind::Struct { fields } => fields.iter().copied().find(|&f| self.nodes[f as usize].raw_name == name),
            _ => None,
        }
    }

    fn variant_ranges(&self, v: &ir::VariantType, tag: NodeId) -> Result<Vec<VariantRange>, String> {
        let NodeKind::Int(IntNode { enumeration: Some(e), .. }) = &self.nodes[tag as usize].kind else {
            return Err(format!("variant tag `{}` is not an enumeration", v.tag));
        };
        let mut ranges = Vec::new();
        for m in &e.mappings {
            if let Some(i) = v.options.iter().position(|o| option_matches(&o.name, &m.label)) {
                ranges.push(VariantRange { lower: m.lower, upper: m.upper, option: i as u32 });
            }
        }
        Ok(ranges)
    }
}
