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

pub use crate::ir::Role;

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

    /// The role CTF 2 metadata gives a field of type `ty` explicitly (none when it gives none).
    pub fn given(ty: &FieldType) -> Role {
        match ty {
            FieldType::Int(i) | FieldType::Enum(ir::EnumType { container: i, .. }) => i.role.unwrap_or(Role::None),
            FieldType::Blob(b) => b.role.unwrap_or(Role::None),
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
    /// A variable-length (LEB128) integer: `size` is 64, the value's range.
    pub varlen: bool,
    /// The value is the `size` bits read, reversed (CTF 2 `bit-order` opposite to the byte
    /// order's usual one).
    pub reversed: bool,
    /// A boolean (CTF 2): false when zero.
    pub boolean: bool,
    /// A bit map's flags (CTF 2): each mapping names bit index ranges.
    pub flags: Option<Arc<EnumType>>,
}

impl IntNode {
    /// Whether the decoder's and writer's fixed-size fast paths may read or write it: a
    /// fixed-length integer of at most 64 bits in its byte order's bit order.
    #[inline]
    pub fn is_plain(&self) -> bool {
        !self.varlen && !self.reversed && self.size <= 64
    }
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
    /// A null-terminated string of 2- or 4-byte code units (CTF 2's UTF-16 and UTF-32): its
    /// value is its bytes, without the terminating NUL unit.
    WideString(Encoding),
    /// A BLOB (CTF 2): its bytes.
    Blob {
        /// Fixed length in bytes, or `None` when another field gives it.
        length: Option<u64>,
        /// Slot holding the length (when not fixed).
        length_slot: u16,
        /// Printable length path (for errors; empty when fixed).
        length_path: String,
    },
    /// An optional field (CTF 2): its one child is present or not.
    Optional {
        /// The field when present.
        inner: NodeId,
        /// Slot holding the selector value.
        selector_slot: u16,
        /// Integer selector: values that make it present; `None`: a boolean selector (present
        /// when not zero).
        ranges: Option<Box<[(i128, i128)]>>,
        /// Printable selector path (for errors).
        selector: String,
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

impl EventLayout {
    /// Its position among its stream class's event classes (0, 1, 2, ...: a dense index for
    /// per-class tables).
    #[inline]
    pub fn index(&self) -> usize {
        self.index as usize
    }
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
        let mut c = Compiler { trace, nodes: Vec::new(), roots: Vec::new(), frames: Vec::new(), current: Vec::new(), open: Vec::new(), slots: 0, scope: Scope::PacketHeader };
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
    /// The name of the member being compiled in each open structure (parallel to `frames`).
    current: Vec<String>,
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
        self.current.clear();
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
        let role = if self.trace.major >= 2 { Role::given(ty) } else { Role::of(self.scope, &raw_name, ty) };
        if depth > MAX_DEPTH {
            return self.push(Node { raw_name, align, role: Role::None, kind: NodeKind::Invalid("types nested too deeply".into()) });
        }
        let kind = match ty {
            FieldType::Int(i) => NodeKind::Int(self.int_node(i, None, role)),
            FieldType::Enum(e) => NodeKind::Int(self.int_node(&e.container, Some(Arc::new(e.clone())), role)),
            FieldType::Bool(i) => NodeKind::Int(IntNode { boolean: true, ..self.int_node(i, None, role) }),
            FieldType::BitMap(e) => NodeKind::Int(IntNode { flags: Some(Arc::new(e.clone())), ..self.int_node(&e.container, None, role) }),
            FieldType::Blob(b) => match &b.length {
                ir::BlobLength::Static(n) => NodeKind::Blob { length: Some(*n), length_slot: 0, length_path: String::new() },
                ir::BlobLength::Dynamic(path) => match self.length_slot(path) {
                    Ok((length_slot, _)) => NodeKind::Blob { length: None, length_slot, length_path: path.to_string() },
                    Err(msg) => NodeKind::Invalid(msg),
                },
            },
            FieldType::Optional(o) => {
                let boolean = o.ranges.is_none();
                let what = if boolean { "a boolean" } else { "an integer" };
                match self.ref_slot(&o.selector, |i| if boolean { i.boolean } else { !i.boolean && i.flags.is_none() }, &format!("optional selector `{}` is not {what}", o.selector)) {
                    Err(msg) => NodeKind::Invalid(msg),
                    Ok((selector_slot, _)) => {
                        let inner = self.compile(String::new(), &o.ty, depth + 1);
                        let ranges = o.ranges.as_ref().map(|r| r.clone().into_boxed_slice());
                        NodeKind::Optional { inner, selector_slot, ranges, selector: o.selector.to_string() }
                    }
                }
            }
            FieldType::Float(f) => match f.size() {
                32 | 64 => NodeKind::Float { size: f.size(), byte_order: f.byte_order },
                n => NodeKind::Invalid(format!("unsupported floating point size {n} bits")),
            },
            FieldType::String(e) if e.unit() > 1 => NodeKind::WideString(*e),
            FieldType::String(_) => NodeKind::String,
            FieldType::Struct(s) => {
                // Reserve the struct's id first so members follow it.
                let id = self.push(Node { raw_name, align, role, kind: NodeKind::Struct { fields: Vec::new() } });
                self.frames.push(Vec::new());
                self.open.push(id);
                self.current.push(String::new());
                let mut fields = Vec::with_capacity(s.fields.len());
                for f in &s.fields {
                    if let Some(c) = self.current.last_mut() {
                        c.clone_from(&f.name);
                    }
                    let child = self.compile(f.name.clone(), &f.ty, depth + 1);
                    fields.push(child);
                    if let Some(frame) = self.frames.last_mut() {
                        frame.push((f.name.clone(), child));
                    }
                }
                self.frames.pop();
                self.open.pop();
                self.current.pop();
                self.nodes[id as usize].kind = NodeKind::Struct { fields };
                return id;
            }
            FieldType::Variant(v) => match self.ref_slot(&v.tag, |i| !i.boolean && i.flags.is_none(), &format!("variant selector `{}` is not an integer", v.tag)) {
                Err(msg) => NodeKind::Invalid(msg),
                Ok((tag_slot, tag_node)) => {
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
            FieldType::Sequence(s) => match self.length_slot(&s.length) {
                Err(msg) => NodeKind::Invalid(msg),
                Ok((length_slot, _)) => {
                    let element = self.compile(String::new(), &s.element, depth + 1);
                    NodeKind::Sequence { element, length_slot, text: self.is_text(element), length: s.length.to_string() }
                }
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
        IntNode {
            size: i.size,
            signed: i.signed,
            byte_order: i.byte_order,
            base: i.base,
            encoding: i.encoding,
            clock,
            enumeration,
            slot: None,
            varlen: i.varlen,
            reversed: i.reversed,
            boolean: false,
            flags: None,
        }
    }

    /// The slot of the length field at `path`: an integer (unsigned for CTF 2, which says so).
    fn length_slot(&mut self, path: &FieldPath) -> Result<(u16, NodeId), String> {
        let ctf2 = self.trace.major >= 2;
        let what = if ctf2 { format!("length `{path}` is not an unsigned integer") } else { format!("sequence length `{path}` is not an integer") };
        self.ref_slot(path, |i| !i.boolean && i.flags.is_none() && !(ctf2 && i.signed), &what)
    }

    /// Resolves the reference `path` to the integers it may name (one, or for CTF 2 each
    /// integer option of the variants it names), checks them with `ok` (else fails with
    /// `what`) and gives them one slot: whichever is decoded stores its value there.
    fn ref_slot(&mut self, path: &FieldPath, ok: impl Fn(&IntNode) -> bool, what: &str) -> Result<(u16, NodeId), String> {
        let targets = self.resolve(path)?;
        let mut slot = None;
        for &t in &targets {
            match &self.nodes[t as usize].kind {
                NodeKind::Int(i) if ok(i) => match (slot, i.slot) {
                    (Some(a), Some(b)) if a != b => return Err(format!("`{path}` names integers that other references name differently")),
                    (None, s) => slot = s,
                    _ => {}
                },
                _ => return Err(what.to_string()),
            }
        }
        let slot = match slot {
            Some(s) => s,
            None => {
                let s = self.slots.min(u16::MAX as u32) as u16;
                self.slots += 1;
                s
            }
        };
        for &t in &targets {
            if let NodeKind::Int(i) = &mut self.nodes[t as usize].kind {
                i.slot = Some(slot);
            }
        }
        Ok((slot, targets[0]))
    }

    fn is_text(&self, element: NodeId) -> bool {
        let n = &self.nodes[element as usize];
        // babeltrace2 shows an array as a string when its elements are byte-aligned (exactly)
        // 8-bit encoded integers, enumerations included.
        matches!(&n.kind, NodeKind::Int(i) if i.size == 8 && i.encoding != Encoding::None && n.align == 8 && i.is_plain())
    }

    /// Finds the node a field path names.
    fn resolve(&self, path: &FieldPath) -> Result<Vec<NodeId>, String> {
        let (start, rest): (Option<NodeId>, Vec<&str>) = match path {
            FieldPath::Absolute(scope, names) => {
                let root = self.roots.iter().rev().find(|(s, _)| s == scope).map(|(_, r)| *r);
                let names = names.iter().map(String::as_str).collect();
                match root {
                    Some(r) => (Some(r), names),
                    // A reference into the scope being compiled: from its (open) root.
                    None if *scope == self.scope => (self.open.first().copied(), names),
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
                (found, names[1..].iter().map(String::as_str).collect())
            }
            FieldPath::Local(elems) => return self.resolve_local(path, elems),
        };
        let not_found = || format!("field `{path}` not found");
        let mut cur = vec![start.ok_or_else(not_found)?];
        for name in rest {
            let mut next = Vec::new();
            for &c in &cur {
                match self.open.iter().position(|&o| o == c) {
                    // A structure still being compiled (the path goes through an enclosing
                    // structure): its members so far, or the one being compiled, which holds
                    // the next open structure (through variants and arrays, for CTF 2).
                    Some(j) => {
                        let done = self.frames.get(j).and_then(|f| f.iter().rev().find(|(n, _)| n == name)).map(|(_, id)| *id);
                        let open = self.open.get(j + 1).copied().filter(|&o| {
                            if self.trace.major >= 2 {
                                self.current.get(j).is_some_and(|c| c == name)
                            } else {
                                self.nodes[o as usize].raw_name == name
                            }
                        });
                        next.extend(done.or(open));
                    }
                    None => self.members(c, name, &mut next),
                }
            }
            if next.is_empty() {
                return Err(not_found());
            }
            cur = next;
        }
        if self.trace.major >= 2 {
            // A CTF 2 length or selector may be a variant whose options are integers.
            let mut out = Vec::new();
            for c in cur {
                self.leaves(c, &mut out, 0);
            }
            return Ok(out);
        }
        Ok(cur)
    }

    /// Resolves a CTF 2 relative location: from the structure holding the referencing field,
    /// a name goes to a member (of a structure being compiled: one declared before, or the
    /// one being compiled), `None` back to the enclosing structure, as a file path does (and,
    /// as in a file path, a name followed by `None` cancels out first: `a/../b` is `b`).
    fn resolve_local(&self, path: &FieldPath, elems: &[Option<String>]) -> Result<Vec<NodeId>, String> {
        let not_found = || format!("field `{path}` not found");
        let mut norm: Vec<&Option<String>> = Vec::with_capacity(elems.len());
        for e in elems {
            match (e, norm.last()) {
                (None, Some(Some(_))) => {
                    norm.pop();
                }
                _ => norm.push(e),
            }
        }
        // The structures from the scope's root down to where the path is.
        let mut stack: Vec<NodeId> = self.open.clone();
        for e in norm {
            match e {
                None => {
                    stack.pop();
                    if stack.is_empty() {
                        return Err(format!("relative field location `{path}` goes above its scope's root"));
                    }
                }
                Some(name) => {
                    let &top = stack.last().ok_or_else(not_found)?;
                    let next = match self.open.iter().position(|&o| o == top) {
                        Some(j) => {
                            let done = self.frames.get(j).and_then(|f| f.iter().rev().find(|(n, _)| n == name)).map(|(_, id)| *id);
                            done.or_else(|| self.open.get(j + 1).copied().filter(|_| self.current.get(j).is_some_and(|c| c == name)))
                        }
                        None => {
                            let mut v = Vec::new();
                            self.members(top, name, &mut v);
                            v.first().copied()
                        }
                    };
                    stack.push(next.ok_or_else(not_found)?);
                }
            }
        }
        let target = *stack.last().ok_or_else(not_found)?;
        let mut out = Vec::new();
        self.leaves(target, &mut out, 0);
        Ok(out)
    }

    /// The integers `id` stands for: itself, or each option's of a variant (CTF 2).
    fn leaves(&self, id: NodeId, out: &mut Vec<NodeId>, depth: usize) {
        match &self.nodes[id as usize].kind {
            NodeKind::Variant { options, .. } if depth < MAX_DEPTH => {
                for &o in options {
                    self.leaves(o, out, depth + 1);
                }
            }
            _ => out.push(id),
        }
    }

    /// The members named `name` of the compiled node `node`: a structure's, or (CTF 2) each
    /// option's of a variant.
    fn members(&self, node: NodeId, name: &str, out: &mut Vec<NodeId>) {
        match &self.nodes[node as usize].kind {
            NodeKind::Variant { options, .. } if self.trace.major >= 2 => {
                for &o in options {
                    self.members(o, name, out);
                }
            }
            _ => out.extend(self.member(node, name)),
        }
    }

    fn member(&self, node: NodeId, name: &str) -> Option<NodeId> {
        match &self.nodes[node as usize].kind {
            NodeKind::Struct { fields } => fields.iter().copied().find(|&f| self.nodes[f as usize].raw_name == name),
            _ => None,
        }
    }

    fn variant_ranges(&self, v: &ir::VariantType, tag: NodeId) -> Result<Vec<VariantRange>, String> {
        if let Some(per_option) = &v.ranges {
            // CTF 2: explicit selector ranges on an integer selector.
            let NodeKind::Int(i) = &self.nodes[tag as usize].kind else {
                return Err(format!("variant selector `{}` is not an integer", v.tag));
            };
            if i.boolean || i.flags.is_some() {
                return Err(format!("variant selector `{}` is not an integer", v.tag));
            }
            let mut ranges = Vec::new();
            for (k, rs) in per_option.iter().enumerate() {
                for &(lower, upper) in rs {
                    if ranges.iter().any(|r: &VariantRange| r.lower <= upper && lower <= r.upper) {
                        return Err(format!("variant selector ranges of option {k} overlap another option's"));
                    }
                    ranges.push(VariantRange { lower, upper, option: k as u32 });
                }
            }
            return Ok(ranges);
        }
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
