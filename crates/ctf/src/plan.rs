//! Decoding plans: the decoder's view of a stream class's [`StreamLayout`] (the node arena
//! with roles and resolved field references, shared with the writer), annotated with what the
//! decoder's fast paths need: each structure's members as inline leaves with constant offsets
//! where possible, straight-line programs for event bodies, and a program for LTTng-shaped
//! event headers.
//!
//! The decoder (`decode.rs`) walks nodes, never the IR: no name lookups, no path resolution and
//! no allocation happen per event. A field that another field refers to (a sequence length, a
//! variant tag) stores its value in a slot when it is decoded; the referring field reads it.

use crate::ir::{ByteOrder, StreamClass, TraceClass};
pub use crate::layout::{EventLayout, IntNode, Node, NodeId, NodeKind, Role, StreamLayout, VariantRange};

/// An event class as the decoder sees it: its [`EventLayout`] (the decoder's annotations, such
/// as its body program, are in the [`StreamPlan`]).
pub type EventPlan = EventLayout;

/// A straight-line decoding program for consecutive scope roots made of leaves, strings and
/// plain variable-length integers: between those variable-size fields, every field's bit
/// offset from its segment's (aligned) start is a constant, so decoding is one bounds check
/// per segment and one read per leaf, and every compound's `end` is known in advance.
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

impl Program {
    /// Whether skipping a body of this program needs only its length: no leaf stores a value
    /// for later fields or has a role or a mapped clock ([`crate::decode::Decoder::body_end`]).
    pub(crate) fn skippable(&self) -> bool {
        !self.segments.is_empty() && self.segments.iter().all(|s| s.others.iter().all(|(_, leaf, _)| leaf.slot == NO_SLOT && !leaf.special))
    }
}

/// A run of leaves of a [`Program`], all at constant offsets from the run's start.
#[derive(Clone, Debug)]
pub(crate) struct Segment {
    /// The variable-size field read just before this run (none for the first run).
    pub head: Option<Head>,
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
    /// A variable-length integer (ends a segment).
    VarInt { node: NodeId },
}

/// The variable-size field that starts a [`Segment`] (at a byte boundary), by output index.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Head {
    /// A null-terminated string.
    Str(u32),
    /// A variable-length (LEB128) integer with no slot, role or clock.
    VarInt { out: u32, signed: bool },
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

/// The decoder's plan of one stream class: its [`StreamLayout`] (which it dereferences to:
/// `plan.nodes`, `plan.events`, `plan.node(id)`...) and the decoder's annotations.
#[derive(Clone, Debug)]
pub struct StreamPlan {
    layout: StreamLayout,
    /// For each structure node, its members as the decoder's fast path sees them; for each
    /// optional node, its inner field as the one member (`None` for other nodes). Built once
    /// all references are resolved (slots are known).
    pub(crate) members: Vec<Option<Box<StructPlan>>>,
    /// For each event class (by [`EventLayout`] position): the stream event context, event
    /// context and payload as one straight-line program, when all three are fixed-layout
    /// structures (the usual LTTng case).
    pub(crate) bodies: Vec<Option<Box<Program>>>,
    /// Fast path for the event header, when it has LTTng's shape.
    pub(crate) header: Option<Box<HeaderProgram>>,
    /// Numbers of both byte orders, some not whole bytes: a field could start in the middle
    /// of a byte in the other byte order, which is an error that only the node walk checks,
    /// so every number is read by it (no leaves, programs or header fast path).
    pub(crate) mixed_bits: bool,
}

impl std::ops::Deref for StreamPlan {
    type Target = StreamLayout;

    fn deref(&self) -> &StreamLayout {
        &self.layout
    }
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
    /// Compiles the packet header (from `trace`) and every scope of `stream`.
    pub fn compile(trace: &TraceClass, stream: &StreamClass) -> StreamPlan {
        StreamPlan::annotate(StreamLayout::compile(trace, stream))
    }

    /// The decoder's plan of `layout`.
    pub fn annotate(layout: StreamLayout) -> StreamPlan {
        let mixed_bits = mixed_bits(&layout);
        let mut plan = StreamPlan { layout, members: Vec::new(), bodies: Vec::new(), header: None, mixed_bits };
        plan.members = (0..plan.nodes.len())
            .map(|i| match &plan.nodes[i].kind {
                NodeKind::Struct { fields } => {
                    let members: Box<[Member]> = fields.iter().map(|&f| plan.member(f)).collect();
                    let fixed = fixed_layout(&members);
                    Some(Box::new(StructPlan { members, fixed }))
                }
                NodeKind::Optional { inner, .. } => Some(Box::new(StructPlan { members: Box::new([plan.member(*inner)]), fixed: None })),
                _ => None,
            })
            .collect();
        plan.bodies = plan.events.iter().map(|e| plan.program([plan.event_context, e.context, e.payload]).map(Box::new)).collect();
        plan.header = plan.event_header.and_then(|h| plan.header_program(h)).map(Box::new);
        plan
    }

    /// The layout this plan annotates.
    pub fn layout(&self) -> &StreamLayout {
        &self.layout
    }

    /// The body program of `event` (an event class of this plan), if it has one.
    #[inline]
    pub(crate) fn body(&self, event: &EventLayout) -> Option<&Program> {
        self.bodies.get(event.index as usize).and_then(|b| b.as_deref())
    }

    /// The member table of `id`, if it is a structure.
    fn struct_plan(&self, id: NodeId) -> Option<&StructPlan> {
        matches!(self.node(id).kind, NodeKind::Struct { .. }).then(|| self.members.get(id as usize)?.as_deref()).flatten()
    }

    /// The fixed leaves of a structure with their offsets, if it is fixed-layout.
    fn fixed_leaves(&self, id: NodeId) -> Option<(u64, Vec<(Leaf, u64)>)> {
        let sp = self.struct_plan(id)?;
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
    /// is a structure of leaves, strings and plain variable-length integers whose alignments
    /// allow constant offsets (see [`Segment`]).
    fn program(&self, roots: [Option<NodeId>; 3]) -> Option<Program> {
        // (variable-size field before, align, bits, [(output index, leaf, offset)])
        struct Seg {
            head: Option<Head>,
            align: Option<u32>,
            at: u64,
            leaves: Vec<(u32, Leaf, u64)>,
        }
        let mut steps = Vec::new();
        let mut scope_lens = [0u32; 3];
        let mut segs = vec![Seg { head: None, align: None, at: 0, leaves: Vec::new() }];
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
            let sp = self.struct_plan(root)?;
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
                    Member::Node(id) => {
                        let n = self.node(*id);
                        let (head, step) = match &n.kind {
                            NodeKind::String => (Head::Str(steps.len() as u32), Step::Str { node: *id }),
                            NodeKind::Int(i) if i.varlen && i.slot.is_none() && i.clock.is_none() && n.role == Role::None && n.align <= 8 => {
                                (Head::VarInt { out: steps.len() as u32, signed: i.signed }, Step::VarInt { node: *id })
                            }
                            _ => return None,
                        };
                        segs.push(Seg { head: Some(head), align: None, at: 0, leaves: Vec::new() });
                        steps.push(step);
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
                    head: seg.head,
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
                seg.head.is_none() && plain && texts && seg.others.is_empty() && seg.align.is_power_of_two()
            }
            _ => false,
        };
        Some(Program { steps: steps.into_boxed_slice(), scope_lens, segments, only_ints })
    }

    /// The header fast path, if the header has LTTng's shape.
    fn header_program(&self, root: NodeId) -> Option<HeaderProgram> {
        let node = self.node(root);
        let sp = self.struct_plan(root)?;
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
        let idnode = self.node(id.node);
        let NodeKind::Int(idn) = &idnode.kind else { return None };
        if idnode.role != Role::EventId || idn.clock.is_some() {
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
        let tsnode = self.node(ts.node);
        let NodeKind::Int(tsn) = &tsnode.kind else { return None };
        match (tsnode.role, tsn.clock) {
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
        let (idnode, tsnode) = (self.node(id.node), self.node(ts.node));
        let (NodeKind::Int(idn), NodeKind::Int(tsn)) = (&idnode.kind, &tsnode.kind) else { return None };
        (idnode.role == Role::EventId && idn.clock.is_none() && tsnode.role == Role::Timestamp && tsn.clock == Some(clock)).then_some(r.option)
    }

    fn member(&self, id: NodeId) -> Member {
        let n = self.node(id);
        if self.mixed_bits && matches!(n.kind, NodeKind::Int(_) | NodeKind::Float { .. }) {
            return Member::Node(id);
        }
        let leaf = |bits: u32, kind: LeafKind, signed: bool, slot: Option<u16>, special: bool| {
            Member::Leaf(Leaf { node: id, align: n.align.max(1), bits, kind, signed, slot: slot.unwrap_or(NO_SLOT), special })
        };
        match &n.kind {
            NodeKind::Int(i) if i.is_plain() => {
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
                leaf(i.size, kind, i.signed, i.slot, n.role != Role::None || i.clock.is_some())
            }
            NodeKind::Float { size: 32, byte_order } => leaf(32, LeafKind::F32(*byte_order), false, None, false),
            NodeKind::Float { size: 64, byte_order } => leaf(64, LeafKind::F64(*byte_order), false, None, false),
            // (A text array with a role, the packet UUID, goes through the node walk, which
            // reports where it is.)
            NodeKind::Array { length, text: true, .. } if *length <= u32::MAX as u64 / 8 && n.role == Role::None => {
                leaf(*length as u32 * 8, LeafKind::Text { len: *length as u32 }, false, None, false)
            }
            NodeKind::Struct { .. } => Member::Struct(id),
            NodeKind::Variant { .. } => Member::Variant(id),
            _ => Member::Node(id),
        }
    }
}

/// Whether a number of one byte order may end in the middle of a byte where one of the other
/// byte order may start (see [`StreamPlan::mixed_bits`]): a number that is not byte-aligned
/// may start there, one that is not whole bytes at a byte boundary may end there.
fn mixed_bits(layout: &StreamLayout) -> bool {
    // Per byte order (little, big): may end mid-byte, may start mid-byte.
    let mut ends = [false; 2];
    let mut starts = [false; 2];
    for n in &layout.nodes {
        let (bo, size) = match &n.kind {
            NodeKind::Int(i) if !i.varlen => (i.byte_order, i.size),
            NodeKind::Float { byte_order, size } => (*byte_order, *size),
            _ => continue,
        };
        let k = (bo == ByteOrder::Big) as usize;
        let unaligned = !n.align.is_multiple_of(8);
        starts[k] |= unaligned;
        ends[k] |= unaligned || !size.is_multiple_of(8);
    }
    (ends[0] && starts[1]) || (ends[1] && starts[0])
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
