//! Decoding plans: every field type of a stream class (its packet header and context, event
//! header and contexts, and every event class's context and payload) compiled once into an arena
//! of [`Node`]s with field references resolved to register slots.
//!
//! The decoder (`decode.rs`) walks nodes, never the IR: no name lookups, no path resolution and
//! no allocation happen per event. A field that another field refers to (a sequence length, a
//! variant tag) stores its value in a slot when it is decoded; the referring field reads it.

use std::sync::Arc;

use crate::ir::{
    self, ByteOrder, DisplayBase, Encoding, EnumType, EventClass, FieldPath, FieldType, Scope,
    StreamClass, TraceClass,
};

/// Index of a node in a [`StreamPlan`].
pub type NodeId = u32;

/// What a field means to the reader (CTF 1.8's well-known field names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Nothing special.
    None,
    /// `trace.packet.header.magic`.
    Magic,
    /// `trace.packet.header.uuid` (a byte array).
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
    fn of(scope: Scope, name: &str) -> Role {
        // babeltrace2 matches the well-known names after removing one leading underscore.
        match (scope, ir::display_name(name)) {
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
            _ => Role::None,
        }
    }

    /// Whether babeltrace2 hides this field from printed contexts (it becomes packet or event
    /// metadata instead of a user field).
    pub fn is_hidden(self) -> bool {
        self != Role::None
    }
}

/// An integer as the decoder needs it.
#[derive(Clone, Debug)]
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
    /// Index of the mapped clock class in [`TraceClass::clocks`].
    pub clock: Option<usize>,
    /// Enumeration labels, if this is an enum.
    pub enumeration: Option<Arc<EnumType>>,
    /// Slot this value is stored in for later references.
    pub slot: Option<u16>,
    /// Meaning.
    pub role: Role,
}

/// One option table entry of a variant: tag values `lower..=upper` select `option`.
#[derive(Clone, Debug)]
pub struct VariantRange {
    /// Lowest tag value.
    pub lower: i128,
    /// Highest tag value.
    pub upper: i128,
    /// Index into the variant's options.
    pub option: u32,
}

/// What a node decodes.
#[derive(Clone, Debug)]
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
        /// Elements are byte-aligned 8-bit encoded integers: decoded as one string.
        text: bool,
    },
    /// A sequence.
    Sequence {
        /// Element node.
        element: NodeId,
        /// Slot holding the length.
        length_slot: u16,
        /// Elements are byte-aligned 8-bit encoded integers: decoded as one string.
        text: bool,
    },
    /// A type whose references could not be resolved; decoding it fails with this message.
    Invalid(String),
}

/// A compiled field type.
#[derive(Clone, Debug)]
pub struct Node {
    /// Name as written in the metadata (empty for array elements and scope roots).
    pub raw_name: String,
    /// Alignment in bits.
    pub align: u32,
    /// What it decodes.
    pub kind: NodeKind,
}

impl Node {
    /// The name printers show (one leading underscore removed).
    pub fn name(&self) -> &str {
        ir::display_name(&self.raw_name)
    }
}

/// A compiled event class.
#[derive(Clone, Debug)]
pub struct EventPlan {
    /// The class.
    pub class: EventClass,
    /// Root of `event.context`.
    pub context: Option<NodeId>,
    /// Root of `event.fields`.
    pub payload: Option<NodeId>,
    /// The stream event context, event context and payload as one straight-line program, when
    /// all three are fixed-layout structures (the usual LTTng case).
    pub(crate) body: Option<Box<Program>>,
    /// Position in [`StreamPlan::events`].
    pub(crate) index: u32,
}

/// A straight-line decoding program for consecutive scope roots made of leaves and strings:
/// between strings, every field's bit offset from its segment's (aligned) start is a constant,
/// so decoding is one bounds check per segment and one read per leaf, and every compound's
/// `end` is known in advance.
#[derive(Clone, Debug)]
pub(crate) struct Program {
    /// Steps, in output order (they shape the field template).
    pub steps: Box<[Step]>,
    /// Number of output fields of each scope: stream event context, event context, payload.
    pub scope_lens: [u32; 3],
    /// Runs of leaves between strings.
    pub segments: Box<[Segment]>,
    /// The program is one byte-aligned run of little-endian integers and fixed-size text
    /// arrays (no string, no role, no bit field): `segments[0].ints` and `segments[0].rest`
    /// say everything.
    pub only_ints: bool,
}

/// A run of leaves of a [`Program`], all at constant offsets from the run's start.
#[derive(Clone, Debug)]
pub(crate) struct Segment {
    /// Output index of the string read just before this run (none for the first run).
    pub string: Option<u32>,
    /// Alignment of the run's start; every alignment inside divides it.
    pub align: u32,
    /// Size in bits.
    pub bits: u64,
    /// When the start is byte-aligned: the plain byte-aligned leaves as (output index, byte
    /// offset, kind), read without any per-leaf bookkeeping; `None` to use `others` only.
    pub fills: Option<Box<[(u32, u32, Fill)]>>,
    /// The little-endian integers of `fills`, read branch-free as 8-byte words when the
    /// packet has `ints_reach` bytes from the run's start (else `fills` is used).
    pub ints: Box<[IntFill]>,
    /// Bytes from the run's start that the 8-byte reads of `ints` touch.
    pub ints_reach: u32,
    /// The output index of the first of `ints` when their outputs are consecutive, else
    /// `u32::MAX`.
    pub ints_first: u32,
    /// The members of `fills` that are not in `ints`.
    pub rest: Box<[(u32, u32, Fill)]>,
    /// The other leaves (slots, roles, bit fields, floats), as (output index, leaf, bit offset).
    pub others: Box<[(u32, Leaf, u64)]>,
}

/// A little-endian integer of a [`Segment`], read as the low `64 - shift` bits of the 8-byte
/// word at byte `off` (one code path for every width: no branch on the field's type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IntFill {
    /// Output index.
    pub out: u32,
    /// Byte offset from the segment's start.
    pub off: u32,
    /// 64 minus the integer's width.
    pub shift: u32,
    /// Sign-extended.
    pub signed: bool,
}

impl IntFill {
    /// The integer in the low bits of `word` (the 8 bytes at its offset, little-endian).
    #[inline(always)]
    pub fn value(&self, word: u64) -> crate::value::Value<'static> {
        let raw = word << self.shift;
        if self.signed {
            crate::value::Value::Signed((raw as i64) >> self.shift)
        } else {
            crate::value::Value::Unsigned(raw >> self.shift)
        }
    }
}

/// One step of a [`Program`].
#[derive(Clone, Copy, Debug)]
pub(crate) enum Step {
    /// A scope root structure: `end` is relative to the scope's first field.
    Open { node: NodeId, end: u32, count: u32 },
    /// A leaf (its offset is in its [`Segment`]).
    Leaf { leaf: Leaf },
    /// A null-terminated string (ends a segment).
    Str { node: NodeId },
}

/// How a plain byte-aligned leaf of a [`Program`] is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fill {
    U8,
    I8,
    U16Le,
    I16Le,
    U32Le,
    I32Le,
    U64Le,
    I64Le,
    U16Be,
    I16Be,
    U32Be,
    I32Be,
    U64Be,
    I64Be,
    Text(u32),
}

/// A fast path for event headers shaped like LTTng's: fixed leaves (the `id`) followed by a
/// variant on that id whose options are fixed-layout structures.
#[derive(Clone, Debug)]
pub(crate) struct HeaderProgram {
    pub root: NodeId,
    pub root_align: u32,
    pub root_count: u32,
    /// Leaves before the variant, with offsets from the root's start, and their size.
    pub prefix: Box<[(Leaf, u64)]>,
    pub prefix_bits: u64,
    pub variant: NodeId,
    pub tag_slot: u16,
    pub ranges: Box<[VariantRange]>,
    /// Options: (node, alignment, size in bits, leaves with offsets from the option's start).
    pub options: Box<[VariantOption]>,
    /// LTTng's compact or large header exactly, for its common option.
    pub compact: Option<LttngHeader>,
}

/// One option of a header variant: its node, alignment, size in bits, and its leaves with
/// offsets from the option's start.
pub(crate) type VariantOption = (NodeId, u32, u64, Box<[(Leaf, u64)]>);

/// LTTng's event headers, for their common (non-extended) option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LttngHeader {
    /// `false`: compact (5-bit id and 27-bit timestamp in one 32-bit word); `true`: large
    /// (16-bit id, then a 32-bit timestamp at byte 2).
    pub large: bool,
    pub byte_order: ByteOrder,
    /// Index of the common option.
    pub option: u32,
    /// Clock class of the timestamp.
    pub clock: usize,
    /// The extended option (tag 31, or 65535 for the large header), when it is LTTng's: a
    /// 32-bit id then a 64-bit timestamp of the same clock, from the first byte boundary after
    /// the tag (byte 1 of the header, or byte 2 for the large one).
    pub extended: Option<u32>,
}

/// Every plan of one stream class, in one node arena.
#[derive(Clone, Debug)]
pub struct StreamPlan {
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
    pub events: Vec<EventPlan>,
    /// Number of slots a decoder needs.
    pub slot_count: usize,
    /// Stream class id.
    pub stream_class_id: u64,
    /// For each structure node, its members as the decoder's fast path sees them (`None` for
    /// other nodes). Built once all references are resolved (slots are known).
    pub(crate) members: Vec<Option<Box<StructPlan>>>,
    /// Index into `events` for every id below 65 536 (`u32::MAX`: no such class).
    by_id: Vec<u32>,
    /// Fast path for the event header, when it has LTTng's shape.
    pub(crate) header: Option<Box<HeaderProgram>>,
}

/// How the decoder reads a simple leaf: byte-aligned fixed-size reads need no shifting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LeafKind {
    U8,
    U16Le,
    U16Be,
    U32Le,
    U32Be,
    U64Le,
    U64Be,
    /// Any other integer: `size` bits at any bit offset.
    Bits { size: u32, byte_order: ByteOrder },
    F32(ByteOrder),
    F64(ByteOrder),
    /// A fixed-length byte-aligned 8-bit encoded array: one string of `len` bytes.
    Text { len: u32 },
}

/// A structure member that needs no special handling: no role, no clock, no nesting.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Leaf {
    pub node: NodeId,
    pub align: u32,
    pub bits: u32,
    pub kind: LeafKind,
    pub signed: bool,
    /// Slot to store the value in, or `NO_SLOT`.
    pub slot: u16,
    /// Has a role or a mapped clock (handled out of line).
    pub special: bool,
}

/// No slot.
pub(crate) const NO_SLOT: u16 = u16::MAX;

/// How the decoder reads one structure.
#[derive(Clone, Debug)]
pub(crate) struct StructPlan {
    /// Members in order.
    pub members: Box<[Member]>,
    /// When every member is a fixed-size leaf: the structure's size in bits and each member's
    /// bit offset from the structure's start. A structure is aligned on its largest member
    /// alignment, so these offsets do not depend on where it lands: one bounds check covers it.
    pub fixed: Option<(u64, Box<[u64]>)>,
}

/// A structure member for the decoder's fast path.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Member {
    /// Decoded inline.
    Leaf(Leaf),
    /// A structure (with its own member table).
    Struct(NodeId),
    /// A variant.
    Variant(NodeId),
    /// Decoded by the general node walk.
    Node(NodeId),
}

impl StreamPlan {
    /// The node `id`.
    #[inline]
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id as usize]
    }

    /// The compiled event class with id `id`.
    #[inline]
    pub fn event(&self, id: u64) -> Option<&EventPlan> {
        if let Some(&i) = self.by_id.get(id as usize) {
            return self.events.get(i as usize);
        }
        match self.events.binary_search_by_key(&id, |e| e.class.id) {
            Ok(i) => Some(&self.events[i]),
            Err(_) => None,
        }
    }

    /// Compiles the packet header (from `trace`) and every scope of `stream`.
    pub fn compile(trace: &TraceClass, stream: &StreamClass) -> StreamPlan {
        let mut c = Compiler { trace, nodes: Vec::new(), roots: Vec::new(), frames: Vec::new(), open: Vec::new(), slots: 0, scope: Scope::PacketHeader };
        let packet_header = c.root(Scope::PacketHeader, trace.packet_header.as_deref());
        let packet_context = c.root(Scope::PacketContext, stream.packet_context.as_deref());
        let event_header = c.root(Scope::EventHeader, stream.event_header.as_deref());
        let event_context = c.root(Scope::EventCommonContext, stream.event_context.as_deref());
        let stream_roots = c.roots.len();
        let mut events = Vec::with_capacity(stream.events.len());
        for ev in &stream.events {
            c.roots.truncate(stream_roots);
            let context = c.root(Scope::EventSpecificContext, ev.context.as_deref());
            let payload = c.root(Scope::EventPayload, ev.payload.as_deref());
            events.push(EventPlan { class: ev.clone(), context, payload, body: None, index: 0 });
        }
        events.sort_by_key(|e| e.class.id);
        StreamPlan {
            nodes: c.nodes,
            packet_header,
            packet_context,
            event_header,
            event_context,
            events,
            slot_count: c.slots as usize,
            stream_class_id: stream.id,
            members: Vec::new(),
            by_id: Vec::new(),
            header: None,
        }
        .with_members()
    }

    fn with_members(mut self) -> StreamPlan {
        let members = (0..self.nodes.len())
            .map(|i| match &self.nodes[i].kind {
                NodeKind::Struct { fields } => {
                    let members: Box<[Member]> = fields.iter().map(|&f| self.member(f)).collect();
                    let fixed = fixed_layout(&members);
                    Some(Box::new(StructPlan { members, fixed }))
                }
                _ => None,
            })
            .collect();
        self.members = members;
        for i in 0..self.events.len() {
            self.events[i].index = i as u32;
            let roots = [self.event_context, self.events[i].context, self.events[i].payload];
            self.events[i].body = self.program(roots).map(Box::new);
        }
        self.header = self.event_header.and_then(|h| self.header_program(h)).map(Box::new);
        let dense = self.events.iter().map(|e| e.class.id).filter(|&id| id < 1 << 16).max().map_or(0, |m| m as usize + 1);
        self.by_id = vec![u32::MAX; dense];
        for (i, e) in self.events.iter().enumerate() {
            if let Some(slot) = self.by_id.get_mut(e.class.id as usize) {
                *slot = i as u32;
            }
        }
        self
    }

    /// The fixed leaves of a structure with their offsets, if it is fixed-layout.
    fn fixed_leaves(&self, id: NodeId) -> Option<(u64, Vec<(Leaf, u64)>)> {
        let sp = self.members.get(id as usize)?.as_ref()?;
        let (bits, offsets) = sp.fixed.as_ref()?;
        let leaves = sp
            .members
            .iter()
            .zip(offsets.iter())
            .map(|(m, off)| match m {
                Member::Leaf(l) => Some((*l, *off)),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?;
        Some((*bits, leaves))
    }

    /// A straight-line program for the present roots among `roots` (in scope order), if each
    /// is a structure of leaves and strings whose alignments allow constant offsets (see
    /// [`Segment`]).
    fn program(&self, roots: [Option<NodeId>; 3]) -> Option<Program> {
        // (string before, align, bits, [(output index, leaf, offset)])
        struct Seg {
            string: Option<u32>,
            align: Option<u32>,
            at: u64,
            leaves: Vec<(u32, Leaf, u64)>,
        }
        let mut steps = Vec::new();
        let mut scope_lens = [0u32; 3];
        let mut segs = vec![Seg { string: None, align: None, at: 0, leaves: Vec::new() }];
        // Places something of alignment `a` in the current segment; `None` if offsets would
        // stop being constant.
        fn place(seg: &mut Seg, a: u32) -> Option<u64> {
            let a = a.max(1);
            let sa = *seg.align.get_or_insert(a);
            if !sa.is_multiple_of(a) {
                return None;
            }
            let a = a as u64;
            seg.at = (seg.at + a - 1) & !(a - 1);
            Some(seg.at)
        }
        for (k, root) in roots.iter().enumerate() {
            let Some(root) = *root else { continue };
            let node = self.node(root);
            let sp = self.members.get(root as usize)?.as_ref()?;
            let first = steps.len();
            place(segs.last_mut()?, node.align)?;
            steps.push(Step::Open { node: root, end: 0, count: sp.members.len() as u32 });
            for m in sp.members.iter() {
                match m {
                    Member::Leaf(l) => {
                        let seg = segs.last_mut()?;
                        let off = place(seg, l.align)?;
                        seg.leaves.push((steps.len() as u32, *l, off));
                        seg.at += l.bits as u64;
                        steps.push(Step::Leaf { leaf: *l });
                    }
                    Member::Node(id) if matches!(self.node(*id).kind, NodeKind::String) => {
                        segs.push(Seg { string: Some(steps.len() as u32), align: None, at: 0, leaves: Vec::new() });
                        steps.push(Step::Str { node: *id });
                    }
                    _ => return None,
                }
            }
            let n = (steps.len() - first) as u32;
            if let Some(Step::Open { end, .. }) = steps.get_mut(first) {
                *end = n;
            }
            scope_lens[k] = n;
        }
        let segments: Box<[Segment]> = segs
            .into_iter()
            .map(|seg| {
                let align = seg.align.unwrap_or(1);
                let mut fills = Vec::new();
                let mut others = Vec::new();
                for (i, leaf, off) in seg.leaves.iter().copied() {
                    let plain = leaf.slot == NO_SLOT && !leaf.special && off % 8 == 0 && off / 8 <= u32::MAX as u64;
                    let fill = match (leaf.kind, leaf.signed) {
                        _ if !plain => None,
                        (LeafKind::U8, false) => Some(Fill::U8),
                        (LeafKind::U8, true) => Some(Fill::I8),
                        (LeafKind::U16Le, false) => Some(Fill::U16Le),
                        (LeafKind::U16Le, true) => Some(Fill::I16Le),
                        (LeafKind::U32Le, false) => Some(Fill::U32Le),
                        (LeafKind::U32Le, true) => Some(Fill::I32Le),
                        (LeafKind::U64Le, false) => Some(Fill::U64Le),
                        (LeafKind::U64Le, true) => Some(Fill::I64Le),
                        (LeafKind::U16Be, false) => Some(Fill::U16Be),
                        (LeafKind::U16Be, true) => Some(Fill::I16Be),
                        (LeafKind::U32Be, false) => Some(Fill::U32Be),
                        (LeafKind::U32Be, true) => Some(Fill::I32Be),
                        (LeafKind::U64Be, false) => Some(Fill::U64Be),
                        (LeafKind::U64Be, true) => Some(Fill::I64Be),
                        (LeafKind::Text { len }, _) => Some(Fill::Text(len)),
                        _ => None,
                    };
                    match fill {
                        Some(f) => fills.push((i, (off / 8) as u32, f)),
                        None => others.push((i, leaf, off)),
                    }
                }
                let fills = if align % 8 == 0 {
                    Some(fills.into_boxed_slice())
                } else {
                    others = seg.leaves.clone();
                    None
                };
                let mut ints = Vec::new();
                let mut rest = Vec::new();
                for &(out, off, fill) in fills.iter().flatten() {
                    let (width, signed) = match fill {
                        Fill::U8 => (8, false),
                        Fill::I8 => (8, true),
                        Fill::U16Le => (16, false),
                        Fill::I16Le => (16, true),
                        Fill::U32Le => (32, false),
                        Fill::I32Le => (32, true),
                        Fill::U64Le => (64, false),
                        Fill::I64Le => (64, true),
                        _ => (0, false),
                    };
                    if width == 0 || off > u32::MAX - 8 {
                        rest.push((out, off, fill));
                    } else {
                        ints.push(IntFill { out, off, shift: 64 - width, signed });
                    }
                }
                let ints_reach = ints.iter().map(|f| f.off + 8).max().unwrap_or(0);
                let ints_first = match ints.first() {
                    Some(f0) if ints.iter().enumerate().all(|(i, f)| f.out as usize == f0.out as usize + i) => f0.out,
                    _ => u32::MAX,
                };
                Segment {
                    string: seg.string,
                    align,
                    bits: seg.at,
                    fills,
                    ints: ints.into_boxed_slice(),
                    ints_reach,
                    ints_first,
                    rest: rest.into_boxed_slice(),
                    others: others.into_boxed_slice(),
                }
            })
            .collect();
        let only_ints = match &segments[..] {
            [seg] => {
                let texts = seg.rest.iter().all(|(_, _, f)| matches!(f, Fill::Text(_)));
                let plain = seg.fills.is_some() && seg.align % 8 == 0 || seg.ints.is_empty() && seg.rest.is_empty();
                seg.string.is_none() && plain && texts && seg.others.is_empty() && seg.align.is_power_of_two()
            }
            _ => false,
        };
        Some(Program { steps: steps.into_boxed_slice(), scope_lens, segments, only_ints })
    }

    /// The header fast path, if the header has LTTng's shape.
    fn header_program(&self, root: NodeId) -> Option<HeaderProgram> {
        let node = self.node(root);
        let sp = self.members.get(root as usize)?.as_ref()?;
        let (last, prefix_members) = sp.members.split_last()?;
        let Member::Variant(variant) = *last else { return None };
        if prefix_members.len() > 4 {
            return None;
        }
        let mut prefix = Vec::new();
        let mut at = 0u64;
        for m in prefix_members {
            let Member::Leaf(l) = m else { return None };
            let a = l.align.max(1) as u64;
            at = (at + a - 1) & !(a - 1);
            prefix.push((*l, at));
            at += l.bits as u64;
        }
        let NodeKind::Variant { options, tag_slot, ranges, .. } = &self.node(variant).kind else { return None };
        let mut opts = Vec::with_capacity(options.len());
        for &o in options {
            let (bits, leaves) = self.fixed_leaves(o)?;
            opts.push((o, self.node(o).align.max(1), bits, leaves.into_boxed_slice()));
        }
        let compact = self.lttng_compact(&prefix, *tag_slot, ranges, &opts, node.align);
        Some(HeaderProgram {
            root,
            root_align: node.align.max(1),
            root_count: sp.members.len() as u32,
            prefix: prefix.into_boxed_slice(),
            prefix_bits: at,
            variant,
            tag_slot: *tag_slot,
            ranges: ranges.clone().into_boxed_slice(),
            compact,
            options: opts.into_boxed_slice(),
        })
    }

    /// Recognizes LTTng's compact event header: a byte-aligned 32-bit word holding a 5-bit id
    /// (the variant's tag; values 0..=30 select an option holding just a 27-bit clock-mapped
    /// timestamp right after it) in either byte order.
    fn lttng_compact(&self, prefix: &[(Leaf, u64)], tag_slot: u16, ranges: &[VariantRange], opts: &[VariantOption], root_align: u32) -> Option<LttngHeader> {
        let [(id, 0)] = prefix else { return None };
        let (large, byte_order, max) = match id.kind {
            LeafKind::Bits { size: 5, byte_order } => (false, byte_order, 30),
            LeafKind::U16Le => (true, ByteOrder::Little, 65534),
            LeafKind::U16Be => (true, ByteOrder::Big, 65534),
            _ => return None,
        };
        if id.signed || id.slot != tag_slot || !root_align.is_multiple_of(8) {
            return None;
        }
        let NodeKind::Int(idn) = &self.node(id.node).kind else { return None };
        if idn.role != Role::EventId || idn.clock.is_some() {
            return None;
        }
        let r = ranges.iter().find(|r| r.lower == 0 && r.upper == max)?;
        let (_, align, bits, leaves) = opts.get(r.option as usize)?;
        let [(ts, 0)] = &leaves[..] else { return None };
        let want = if large {
            if byte_order == ByteOrder::Little { LeafKind::U32Le } else { LeafKind::U32Be }
        } else {
            LeafKind::Bits { size: 27, byte_order }
        };
        let aligned = if large { 16 % *align == 0 && *bits == 32 } else { *align == 1 && *bits == 27 };
        if !aligned || ts.signed || ts.slot != NO_SLOT || ts.kind != want {
            return None;
        }
        let NodeKind::Int(tsn) = &self.node(ts.node).kind else { return None };
        match (tsn.role, tsn.clock) {
            (Role::Timestamp, Some(clock)) => {
                let extended = self.lttng_extended(large, byte_order, clock, ranges, opts);
                Some(LttngHeader { large, byte_order, option: r.option, clock, extended })
            }
            _ => None,
        }
    }

    /// The option of LTTng's extended event header, if it has its exact layout (see
    /// [`LttngHeader::extended`]).
    fn lttng_extended(&self, large: bool, byte_order: ByteOrder, clock: usize, ranges: &[VariantRange], opts: &[VariantOption]) -> Option<u32> {
        let tag = if large { 65535 } else { 31 };
        let r = ranges.iter().find(|r| r.lower == tag && r.upper == tag)?;
        let (_, align, bits, leaves) = opts.get(r.option as usize)?;
        // The option starts at the first byte boundary after the tag (5 or 16 bits).
        let placed = if large { 16 % *align == 0 } else { *align == 8 };
        let [(id, 0), (ts, 32)] = &leaves[..] else { return None };
        let (want_id, want_ts) = match byte_order {
            ByteOrder::Little => (LeafKind::U32Le, LeafKind::U64Le),
            ByteOrder::Big => (LeafKind::U32Be, LeafKind::U64Be),
        };
        if !placed || *bits != 96 || id.kind != want_id || ts.kind != want_ts || id.signed || ts.signed || id.slot != NO_SLOT || ts.slot != NO_SLOT {
            return None;
        }
        let (NodeKind::Int(idn), NodeKind::Int(tsn)) = (&self.node(id.node).kind, &self.node(ts.node).kind) else { return None };
        (idn.role == Role::EventId && idn.clock.is_none() && tsn.role == Role::Timestamp && tsn.clock == Some(clock)).then_some(r.option)
    }

    fn member(&self, id: NodeId) -> Member {
        let n = self.node(id);
        let leaf = |bits: u32, kind: LeafKind, signed: bool, slot: Option<u16>, special: bool| {
            Member::Leaf(Leaf { node: id, align: n.align.max(1), bits, kind, signed, slot: slot.unwrap_or(NO_SLOT), special })
        };
        match &n.kind {
            NodeKind::Int(i) if i.size <= 64 => {
                let aligned = n.align.is_multiple_of(8);
                let kind = match (aligned, i.size, i.byte_order) {
                    (true, 8, _) => LeafKind::U8,
                    (true, 16, ByteOrder::Little) => LeafKind::U16Le,
                    (true, 16, ByteOrder::Big) => LeafKind::U16Be,
                    (true, 32, ByteOrder::Little) => LeafKind::U32Le,
                    (true, 32, ByteOrder::Big) => LeafKind::U32Be,
                    (true, 64, ByteOrder::Little) => LeafKind::U64Le,
                    (true, 64, ByteOrder::Big) => LeafKind::U64Be,
                    (_, size, byte_order) => LeafKind::Bits { size, byte_order },
                };
                leaf(i.size, kind, i.signed, i.slot, i.role != Role::None || i.clock.is_some())
            }
            NodeKind::Float { size: 32, byte_order } => leaf(32, LeafKind::F32(*byte_order), false, None, false),
            NodeKind::Float { size: 64, byte_order } => leaf(64, LeafKind::F64(*byte_order), false, None, false),
            NodeKind::Array { length, text: true, .. } if *length <= u32::MAX as u64 / 8 => {
                leaf(*length as u32 * 8, LeafKind::Text { len: *length as u32 }, false, None, false)
            }
            NodeKind::Struct { .. } => Member::Struct(id),
            NodeKind::Variant { .. } => Member::Variant(id),
            _ => Member::Node(id),
        }
    }
}

/// Offsets of a structure whose members are all fixed-size leaves.
fn fixed_layout(members: &[Member]) -> Option<(u64, Box<[u64]>)> {
    let mut at = 0u64;
    let mut offsets = Vec::with_capacity(members.len());
    for m in members {
        let Member::Leaf(l) = m else { return None };
        let a = l.align.max(1) as u64;
        at = (at + a - 1) & !(a - 1);
        offsets.push(at);
        at += l.bits as u64;
    }
    Some((at, offsets.into_boxed_slice()))
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

/// Deepest type nesting compiled (deeper metadata is rejected at decode time).
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
        if depth > MAX_DEPTH {
            return self.push(Node { raw_name, align, kind: NodeKind::Invalid("types nested too deeply".into()) });
        }
        let kind = match ty {
            FieldType::Int(i) => NodeKind::Int(self.int_node(i, None, &raw_name)),
            FieldType::Enum(e) => {
                NodeKind::Int(self.int_node(&e.container, Some(Arc::new(e.clone())), &raw_name))
            }
            FieldType::Float(f) => match f.size() {
                32 | 64 => NodeKind::Float { size: f.size(), byte_order: f.byte_order },
                n => NodeKind::Invalid(format!("unsupported floating point size {n} bits")),
            },
            FieldType::String(_) => NodeKind::String,
            FieldType::Struct(s) => {
                // Reserve the struct's id first so members follow it.
                let id = self.push(Node { raw_name, align, kind: NodeKind::Struct { fields: Vec::new() } });
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
                        Ok(ranges) => NodeKind::Variant { options, tag_slot, ranges, tag: v.tag.to_string() },
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
                        NodeKind::Sequence { element, length_slot, text: self.is_text(element) }
                    }
                    _ => NodeKind::Invalid(format!("sequence length `{}` is not an integer", s.length)),
                },
            },
        };
        self.push(Node { raw_name, align, kind })
    }

    fn int_node(&self, i: &ir::IntType, enumeration: Option<Arc<EnumType>>, raw_name: &str) -> IntNode {
        let role = Role::of(self.scope, raw_name);
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
            role,
        }
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
            let label = ir::display_name(&m.label);
            if let Some(i) = v.options.iter().position(|o| o.name == m.label || ir::display_name(&o.name) == label) {
                ranges.push(VariantRange { lower: m.lower, upper: m.upper, option: i as u32 });
            }
        }
        Ok(ranges)
    }
}

#[cfg(test)]
mod tests {
    /// LTTng kernel traces use the extended event header for ids past the compact tag's range:
    /// its layout is recognized, so that such events take the decoder's fast path (which the
    /// conformance tests compare with the generic decoder on every fixture).
    #[test]
    fn lttng_extended_header_is_recognized() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces/tracecompass/many-threads");
        if !dir.exists() {
            assert!(std::env::var_os("CI").is_none(), "CI must have the fixtures: {} is missing", dir.display());
            eprintln!("skipped: {} not found", dir.display());
            return;
        }
        let trace = crate::Trace::open(&dir).expect("many-threads opens");
        let header = trace.plans.first().and_then(|p| p.header.as_ref()).and_then(|h| h.compact).expect("LTTng compact header");
        assert!(!header.large);
        let extended = header.extended.expect("extended option recognized");
        assert_ne!(extended, header.option);
    }
}
