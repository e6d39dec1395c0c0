//! The field decoder: runs a [`StreamPlan`]'s nodes over the bytes of one packet.
//!
//! Positions are bit offsets from the start of the packet (CTF aligns relative to the packet).
//! Reading past the packet's content size is an error, never a panic. Values are appended to a
//! caller-owned `Vec<Field>` that is cleared, not reallocated, between events.

use crate::bits::{align_up, read_uint, sign_extend};
use crate::ir::ByteOrder;
use crate::layout::{IntNode, Node, NodeId, NodeKind, Role};
use crate::plan::{Fill, HeaderProgram, Head, IntFill, Leaf, LeafKind, Member, Program, Segment, Step, StreamPlan, NO_SLOT};
use crate::value::{Field, Value};

/// A decoding failure at a bit offset of the current packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// Bit offset in the packet.
    pub bit: u64,
    /// What went wrong.
    pub message: String,
}

/// Special field values seen while decoding (packet header/context and event header).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Specials {
    /// Packet magic.
    pub magic: Option<u64>,
    /// Bit offset of the packet header's UUID array.
    pub uuid_at: Option<u64>,
    /// Stream class id.
    pub stream_id: Option<u64>,
    /// Stream instance id.
    pub stream_instance_id: Option<u64>,
    /// Packet begin timestamp (cycles, as stored).
    pub packet_begin: Option<u64>,
    /// Packet end timestamp (cycles, as stored).
    pub packet_end: Option<u64>,
    /// Content size in bits.
    pub content_size: Option<u64>,
    /// Packet size in bits.
    pub packet_size: Option<u64>,
    /// Discarded-event counter.
    pub events_discarded: Option<u64>,
    /// Packet sequence number.
    pub packet_seq_num: Option<u64>,
    /// Event class id.
    pub event_id: Option<u64>,
    /// Whether an event timestamp was decoded.
    pub timestamp_seen: bool,
}

/// Decoding state of one stream: slots, the current clock value and the current packet.
#[derive(Clone, Debug)]
pub struct Decoder<'a> {
    plan: &'a StreamPlan,
    /// The packet's bytes (the whole packet, up to its packet size or the end of file).
    pub(crate) data: &'a [u8],
    /// Current bit position.
    pub pos: u64,
    /// Bit limit (the content size).
    pub limit: u64,
    slots: Vec<i128>,
    /// Current value of the stream's clock, in cycles (rebuilt to 64 bits).
    pub clock: u64,
    /// Index of the clock class the stream's timestamps use.
    pub clock_class: Option<usize>,
    /// Special values seen since the last reset.
    pub specials: Specials,
    /// Index in the output list where the scope being decoded starts (compound `end`s are
    /// relative to it, so each scope's slice is self-contained).
    base: usize,
    /// Byte order of the last integer or float read by the node walk (a field may not start
    /// in the middle of a byte in the other byte order). Plans where that can happen read
    /// every number through the node walk (see `StreamPlan::mixed_bits`).
    last_bo: Option<ByteOrder>,
}

/// Internal result: the error boxed so the hot path returns one word.
type R<T> = Result<T, Box<DecodeError>>;

impl<'a> Decoder<'a> {
    /// A decoder for streams of `plan`.
    pub fn new(plan: &'a StreamPlan) -> Decoder<'a> {
        Decoder {
            plan,
            data: &[],
            pos: 0,
            limit: 0,
            slots: vec![0; plan.slot_count.max(1)],
            clock: 0,
            clock_class: None,
            specials: Specials::default(),
            base: 0,
            last_bo: None,
        }
    }

    /// The plan.
    pub fn plan(&self) -> &'a StreamPlan {
        self.plan
    }

    /// Starts decoding a packet whose bytes are `data`, readable up to `limit` bits.
    pub fn start_packet(&mut self, data: &'a [u8], limit: u64) {
        self.data = data;
        self.limit = limit.min(data.len() as u64 * 8);
        self.pos = 0;
        self.last_bo = None;
    }

    /// Checks that a number in byte order `bo` may start here (not in the middle of a byte
    /// after one in the other byte order), and remembers `bo`: in plans where that can
    /// happen, whose numbers are all read by the node walk.
    #[inline]
    fn byte_order_at(&mut self, bo: ByteOrder) -> R<()> {
        if !self.plan.mixed_bits {
            return Ok(());
        }
        if !self.pos.is_multiple_of(8) && self.last_bo.is_some_and(|b| b != bo) {
            return self.err(self.pos, "the byte order changes within a byte");
        }
        self.last_bo = Some(bo);
        Ok(())
    }

    /// Sets the readable limit (once the content size is known).
    pub fn set_limit(&mut self, limit: u64) {
        self.limit = limit.min(self.data.len() as u64 * 8);
    }

    #[cold]
    fn err<T>(&self, bit: u64, message: impl Into<String>) -> R<T> {
        Err(Box::new(DecodeError { bit, message: message.into() }))
    }

    /// Decodes an LTTng-shaped event header (see [`HeaderProgram`]) into the selected option's
    /// field buffer (`templates`, from [`Decoder::header_templates`]: compounds and nodes are
    /// already right, only leaf values are written) and returns that option. Returns `None`,
    /// with the position as it was, when the fast path does not apply to this event (it does
    /// not fit, or its tag selects no option): the caller then decodes it field by field.
    /// Re-decoding is harmless: slots, roles and clock updates are idempotent.
    #[inline]
    pub(crate) fn run_header(&mut self, h: &HeaderProgram, templates: &mut [Box<[Field<'a>]>]) -> Option<usize> {
        if let Some(l) = h.compact {
            // LTTng's compact header (one 32-bit word) or large header (16 + 32 bits).
            let a = h.root_align as u64;
            let start = (self.pos + a - 1) & !(a - 1);
            let bits = if l.large { 48 } else { 32 };
            if start + bits <= self.limit {
                let at = (start / 8) as usize;
                let d = self.data;
                let (id, ts, ts_bits) = match (l.large, l.byte_order) {
                    (false, ByteOrder::Little) => {
                        let w = u32::from_le_bytes(take(d, at));
                        (w & 31, w >> 5, 27)
                    }
                    (false, ByteOrder::Big) => {
                        let w = u32::from_be_bytes(take(d, at));
                        (w >> 27, w & ((1 << 27) - 1), 27)
                    }
                    (true, ByteOrder::Little) => (u16::from_le_bytes(take(d, at)) as u32, u32::from_le_bytes(take(d, at + 2)), 32),
                    (true, ByteOrder::Big) => (u16::from_be_bytes(take(d, at)) as u32, u32::from_be_bytes(take(d, at + 2)), 32),
                };
                let max = if l.large { 65535 } else { 31 };
                if id < max && self.clock_class == Some(l.clock) {
                    if let Some([_, idf, _, _, tsf, ..]) = templates.get_mut(l.option as usize).map(|t| &mut t[..]) {
                        self.slots[h.tag_slot as usize] = id as i128;
                        self.specials.event_id = Some(id as u64);
                        self.specials.timestamp_seen = true;
                        self.update_clock(ts as u64, ts_bits);
                        idf.value = Value::Unsigned(id as u64);
                        tsf.value = Value::Unsigned(ts as u64);
                        self.pos = start + bits;
                        return Some(l.option as usize);
                    }
                }
            }
        }
        let saved = self.pos;
        let a = h.root_align as u64;
        let start = (self.pos + a - 1) & !(a - 1);
        if start + h.prefix_bits > self.limit {
            return None;
        }
        // The prefix (the id) decides the option: read it first, into a small buffer.
        let mut prefix = [Value::Unsigned(0); 4];
        for (k, (leaf, off)) in h.prefix.iter().enumerate().take(4) {
            prefix[k] = self.leaf_val(leaf, start + off);
        }
        self.pos = start + h.prefix_bits;
        let tag = self.slots[h.tag_slot as usize];
        let Some(r) = h.ranges.iter().find(|r| r.lower <= tag && tag <= r.upper) else {
            self.pos = saved;
            return None;
        };
        let (_, oalign, obits, leaves) = &h.options[r.option as usize];
        let oa = *oalign as u64;
        let ostart = (self.pos + oa - 1) & !(oa - 1);
        if ostart + obits > self.limit {
            self.pos = saved;
            return None;
        }
        let Some(fields) = templates.get_mut(r.option as usize) else {
            self.pos = saved;
            return None;
        };
        let np = h.prefix.len();
        for (f, v) in fields[1..].iter_mut().zip(prefix.iter()).take(np) {
            f.value = *v;
        }
        for (f, (leaf, off)) in fields[np + 3..].iter_mut().zip(leaves.iter()) {
            f.value = self.leaf_val(leaf, ostart + off);
        }
        self.pos = ostart + obits;
        Some(r.option as usize)
    }

    /// Field templates of a header program, one per option (see [`Decoder::run_header`]).
    pub(crate) fn header_templates(&self, h: &HeaderProgram) -> Vec<Box<[Field<'a>]>> {
        let plan = self.plan;
        h.options
            .iter()
            .map(|(onode, _, _, leaves)| {
                let n = (1 + h.prefix.len() + 2 + leaves.len()) as u32;
                let mut t = Vec::with_capacity(n as usize);
                t.push(Field { node: plan.node(h.root), value: Value::Compound { end: n, count: h.root_count } });
                t.extend(h.prefix.iter().map(|(l, _)| Field { node: plan.node(l.node), value: Value::Unsigned(0) }));
                t.push(Field { node: plan.node(h.variant), value: Value::Compound { end: n, count: 1 } });
                t.push(Field { node: plan.node(*onode), value: Value::Compound { end: n, count: leaves.len() as u32 } });
                t.extend(leaves.iter().map(|(l, _)| Field { node: plan.node(l.node), value: Value::Unsigned(0) }));
                t.into_boxed_slice()
            })
            .collect()
    }

    /// Decodes the tree rooted at `root`, appending values to `out`.
    pub fn decode(&mut self, root: NodeId, out: &mut Vec<Field<'a>>) -> Result<(), DecodeError> {
        self.base = out.len();
        self.node(root, out, 0).map_err(|e| *e)
    }

    #[inline]
    fn need(&self, bits: u64) -> R<()> {
        match self.pos.checked_add(bits) {
            Some(end) if end <= self.limit => Ok(()),
            _ => self.need_failed(bits),
        }
    }

    #[cold]
    #[inline(never)]
    fn need_failed(&self, bits: u64) -> R<()> {
        self.err(self.pos, format!("a {bits}-bit field at bit {} runs past the packet content ({} bits)", self.pos, self.limit))
    }

    #[inline]
    fn align(&mut self, align: u32) -> R<()> {
        let to = align_up(self.pos, align);
        if to > self.limit {
            return self.align_failed(align);
        }
        self.pos = to;
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn align_failed(&self, align: u32) -> R<()> {
        self.err(self.pos, format!("aligning to {align} bits runs past the packet content ({} bits)", self.limit))
    }

    fn node(&mut self, id: NodeId, out: &mut Vec<Field<'a>>, depth: u32) -> R<()> {
        let plan = self.plan;
        let node = plan.node(id);
        self.align(node.align)?;
        match &node.kind {
            NodeKind::Int(i) => {
                let value = self.int(node.role, i)?;
                out.push(Field { node, value });
            }
            NodeKind::Float { size, byte_order } => {
                self.byte_order_at(*byte_order)?;
                self.need(*size as u64)?;
                let raw = read_uint(self.data, self.pos, *size, *byte_order);
                self.pos += *size as u64;
                let v = if *size == 32 { f32::from_bits(raw as u32) as f64 } else { f64::from_bits(raw) };
                out.push(Field { node, value: Value::Float(v) });
            }
            NodeKind::String => {
                let start = (self.pos / 8) as usize;
                let end = (self.limit / 8) as usize;
                let bytes = &self.data[start.min(end)..end];
                match bytes.iter().position(|&b| b == 0) {
                    Some(n) => {
                        self.pos += (n as u64 + 1) * 8;
                        out.push(Field { node, value: Value::Str(&bytes[..n]) });
                    }
                    None => return self.err(self.pos, "string runs past the packet content (no terminating NUL)"),
                }
            }
            NodeKind::WideString(e) => {
                let unit = e.unit();
                let start = (self.pos / 8) as usize;
                let end = (self.limit / 8) as usize;
                let bytes = &self.data[start.min(end)..end];
                match bytes.chunks_exact(unit).position(|c| c.iter().all(|&b| b == 0)) {
                    Some(n) => {
                        self.pos += ((n + 1) * unit) as u64 * 8;
                        out.push(Field { node, value: Value::Str(&bytes[..n * unit]) });
                    }
                    None => return self.err(self.pos, "string runs past the packet content (no terminating NUL)"),
                }
            }
            NodeKind::Blob { length, length_slot, .. } => {
                let len = match length {
                    Some(n) => *n,
                    None => match u64::try_from(self.slots[*length_slot as usize]) {
                        Ok(n) => n,
                        Err(_) => return self.err(self.pos, format!("BLOB length {} is negative", self.slots[*length_slot as usize])),
                    },
                };
                self.need(len.saturating_mul(8))?;
                if node.role == Role::Uuid && self.specials.uuid_at.is_none() {
                    self.specials.uuid_at = Some(self.pos);
                }
                let start = (self.pos / 8) as usize;
                out.push(Field { node, value: Value::Str(&self.data[start..start + len as usize]) });
                self.pos += len * 8;
            }
            NodeKind::Optional { inner, selector_slot, ranges, .. } => {
                let sel = self.slots[*selector_slot as usize];
                let present = match ranges {
                    None => sel != 0,
                    Some(r) => r.iter().any(|&(lo, hi)| lo <= sel && sel <= hi),
                };
                let at = self.open(node, out, present as u32, depth)?;
                if present {
                    // A plain inner integer is read as a structure's leaf member is.
                    match self.plan.members.get(id as usize).and_then(|m| m.as_deref()).map(|sp| &sp.members[..]) {
                        Some([Member::Leaf(l)]) => self.leaf(l, out)?,
                        _ => self.node(*inner, out, depth + 1)?,
                    }
                }
                close(out, at, self.base);
            }
            NodeKind::Struct { .. } => return self.structure(id, out, depth),
            NodeKind::Variant { .. } => return self.variant(id, out, depth),
            NodeKind::Array { element, length, text } => {
                if node.role == Role::Uuid && self.specials.uuid_at.is_none() {
                    self.specials.uuid_at = Some(self.pos);
                }
                self.array(node, *element, *length, *text, out, depth)?
            }
            NodeKind::Sequence { element, length_slot, text, .. } => {
                let len = self.slots[*length_slot as usize];
                if len < 0 {
                    return self.err(self.pos, format!("sequence length {len} is negative"));
                }
                self.array(node, *element, len as u64, *text, out, depth)?;
            }
            NodeKind::Invalid(msg) => return self.err(self.pos, msg.clone()),
        }
        Ok(())
    }

    /// Decodes a structure: members that are simple leaves inline, the rest by kind.
    fn structure(&mut self, id: NodeId, out: &mut Vec<Field<'a>>, depth: u32) -> R<()> {
        let plan = self.plan;
        let node = plan.node(id);
        self.align(node.align)?;
        let (Some(Some(sp)), NodeKind::Struct { fields }) = (plan.members.get(id as usize), &node.kind) else {
            return self.err(self.pos, "internal: structure without a member table");
        };
        let at = self.open(node, out, fields.len() as u32, depth)?;
        match &sp.fixed {
            Some((bits, offsets)) if self.pos + bits <= self.limit => {
                // One bounds check for the whole structure.
                let base = self.pos;
                out.reserve(sp.members.len());
                for (m, off) in sp.members.iter().zip(offsets.iter()) {
                    if let Member::Leaf(l) = m {
                        self.leaf_at(l, base + off, out);
                    }
                }
                self.pos = base + bits;
            }
            _ => {
                for m in sp.members.iter() {
                    match m {
                        Member::Leaf(l) => self.leaf(l, out)?,
                        Member::Struct(f) => self.structure(*f, out, depth + 1)?,
                        Member::Variant(f) => self.variant(*f, out, depth + 1)?,
                        Member::Node(f) => self.node(*f, out, depth + 1)?,
                    }
                }
            }
        }
        close(out, at, self.base);
        Ok(())
    }

    /// Decodes a variant: the option its tag selects.
    fn variant(&mut self, id: NodeId, out: &mut Vec<Field<'a>>, depth: u32) -> R<()> {
        let plan = self.plan;
        let node = plan.node(id);
        let NodeKind::Variant { options, tag_slot, ranges, tag, .. } = &node.kind else {
            return self.err(self.pos, "internal: not a variant");
        };
        let value = self.slots[*tag_slot as usize];
        let Some(r) = ranges.iter().find(|r| r.lower <= value && value <= r.upper) else {
            return self.err(self.pos, format!("variant tag `{tag}` value {value} selects no option"));
        };
        let at = self.open(node, out, 1, depth)?;
        let option = options[r.option as usize];
        match &plan.node(option).kind {
            NodeKind::Struct { .. } => self.structure(option, out, depth + 1)?,
            _ => self.node(option, out, depth + 1)?,
        }
        close(out, at, self.base);
        Ok(())
    }

    #[inline]
    fn open(&self, node: &'a Node, out: &mut Vec<Field<'a>>, count: u32, depth: u32) -> R<usize> {
        if depth > 512 {
            return self.too_deep();
        }
        out.push(Field { node, value: Value::Compound { end: 0, count } });
        Ok(out.len() - 1)
    }

    fn array(&mut self, node: &'a Node, element: NodeId, length: u64, text: bool, out: &mut Vec<Field<'a>>, depth: u32) -> R<()> {
        if text {
            self.need(length.saturating_mul(8))?;
            let start = (self.pos / 8) as usize;
            let bytes = &self.data[start..start + length as usize];
            self.pos += length * 8;
            out.push(Field { node, value: Value::Str(bytes) });
            return Ok(());
        }
        // Every element takes at least one bit unless it is an empty structure; bound the
        // element count by what the packet can hold before reserving anything.
        let remaining = self.limit.saturating_sub(self.pos);
        let zero_size = is_zero_size(self.plan, element);
        if !zero_size && length > remaining {
            return self.err(self.pos, format!("array of {length} elements cannot fit in the {remaining} bits left in the packet"));
        }
        if zero_size && length > 1 << 20 {
            return self.err(self.pos, format!("array of {length} empty elements is too long"));
        }
        let count = u32::try_from(length).map_err(|_| Box::new(DecodeError { bit: self.pos, message: "array too long".into() }))?;
        let at = self.open(node, out, count, depth)?;
        for _ in 0..length {
            self.node(element, out, depth + 1)?;
        }
        close(out, at, self.base);
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn too_deep(&self) -> R<usize> {
        self.err(self.pos, "fields nested too deeply")
    }

    /// Decodes a simple structure member: one alignment, one bounds check, one read.
    #[inline(always)]
    fn leaf(&mut self, l: &Leaf, out: &mut Vec<Field<'a>>) -> R<()> {
        let a = l.align as u64;
        let pos = (self.pos + a - 1) & !(a - 1);
        let end = pos + l.bits as u64;
        if end > self.limit {
            self.pos = pos.min(self.limit);
            return self.need(l.bits as u64);
        }
        self.leaf_at(l, pos, out);
        self.pos = end;
        Ok(())
    }

    /// Reads a leaf at `pos`, already aligned and bounds-checked by the caller.
    #[inline(always)]
    fn leaf_at(&mut self, l: &Leaf, pos: u64, out: &mut Vec<Field<'a>>) {
        let f = self.leaf_value(l, pos);
        out.push(f);
    }

    /// The field a leaf at `pos` holds (aligned and bounds-checked by the caller); stores its
    /// slot and handles its role.
    #[inline(always)]
    fn leaf_value(&mut self, l: &Leaf, pos: u64) -> Field<'a> {
        let value = self.leaf_val(l, pos);
        Field { node: self.plan.node(l.node), value }
    }

    /// The value of a leaf at `pos` (aligned and bounds-checked by the caller); stores its slot
    /// and handles its role.
    #[inline(always)]
    fn leaf_val(&mut self, l: &Leaf, pos: u64) -> Value<'a> {
        let d = self.data;
        let at = (pos / 8) as usize;
        let raw = match l.kind {
            LeafKind::U8 => d[at] as u64,
            LeafKind::U16Le => u16::from_le_bytes([d[at], d[at + 1]]) as u64,
            LeafKind::U16Be => u16::from_be_bytes([d[at], d[at + 1]]) as u64,
            LeafKind::U32Le => u32::from_le_bytes(take(d, at)) as u64,
            LeafKind::U32Be => u32::from_be_bytes(take(d, at)) as u64,
            LeafKind::U64Le => u64::from_le_bytes(take(d, at)),
            LeafKind::U64Be => u64::from_be_bytes(take(d, at)),
            LeafKind::Bits { size, byte_order } => crate::bits::read_bits(d, pos, size, byte_order),
            LeafKind::F32(bo) => return Value::Float(f32::from_bits(read_uint(d, pos, 32, bo) as u32) as f64),
            LeafKind::F64(bo) => return Value::Float(f64::from_bits(read_uint(d, pos, 64, bo))),
            LeafKind::Text { len } => return Value::Str(&d[at..at + len as usize]),
        };
        let (value, wide) = if l.signed {
            let v = sign_extend(raw, l.bits);
            (Value::Signed(v), v as i128)
        } else {
            (Value::Unsigned(raw), raw as i128)
        };
        if l.slot != NO_SLOT {
            self.slots[l.slot as usize] = wide;
        }
        if l.special {
            self.leaf_special(l, raw);
        }
        value
    }

    /// Roles of leaves: the event id and clock updates inline, the rest out of line.
    #[inline(always)]
    fn leaf_special(&mut self, l: &Leaf, raw: u64) {
        let node = self.plan.node(l.node);
        if let NodeKind::Int(i) = &node.kind {
            match (node.role, i.clock) {
                (Role::EventId, None) => self.specials.event_id = Some(raw),
                (Role::Timestamp, Some(_)) if self.clock_class.is_some() => {
                    self.specials.timestamp_seen = true;
                    self.update_clock(raw, l.bits);
                }
                (role, clock) => self.special(role, clock, raw, l.bits),
            }
        }
    }

    /// Runs a body program into `fields` (a copy of its template: the compounds and nodes are
    /// already right, only values are written). Returns `false`, with the position as it was,
    /// when the event does not fit (a segment or a string runs past the content): the caller
    /// then decodes field by field for the precise error (slots, roles and clock updates are
    /// idempotent, so having done some of them is harmless).
    #[inline]
    pub(crate) fn run_body(&mut self, p: &Program, fields: &mut [Field<'a>]) -> bool {
        let saved = self.pos;
        for seg in p.segments.iter() {
            if let Some(head) = seg.head {
                let Some((i, value, next)) = self.read_head(head, self.pos) else {
                    self.pos = saved;
                    return false;
                };
                if let Some(f) = fields.get_mut(i as usize) {
                    f.value = value;
                }
                self.pos = next;
            }
            let Some(start) = self.segment_start(seg, self.pos) else {
                self.pos = saved;
                return false;
            };
            self.fill_segment(seg, start, fields);
            self.pos = start + seg.bits;
        }
        true
    }

    /// Where a body of program `p` starting at bit `from` ends, without reading its leaves
    /// (the strings' and variable-length integers' bytes only, for their lengths): the end
    /// [`Decoder::run_body`] reaches, or `None` where it fails (a field past the limit). For
    /// programs whose leaves store nothing ([`Program::skippable`]).
    #[inline]
    pub(crate) fn body_end(&self, p: &Program, from: u64) -> Option<u64> {
        let mut pos = from;
        for seg in p.segments.iter() {
            if let Some(head) = seg.head {
                pos = self.read_head(head, pos)?.2;
            }
            pos = self.segment_start(seg, pos)? + seg.bits;
        }
        Some(pos)
    }

    /// The variable-size field `head` that starts a segment, read at the byte boundary from
    /// bit `pos` on: its output index, its value and the bit after it; `None` when it runs
    /// past the limit (a string without its NUL, a truncated integer).
    #[inline(always)]
    fn read_head(&self, head: Head, pos: u64) -> Option<(u32, Value<'a>, u64)> {
        let start = (pos + 7) & !7;
        let from = (start / 8) as usize;
        let end = ((self.limit / 8) as usize).max(from);
        let bytes = self.data.get(from..end).unwrap_or(&[]);
        let (i, value, len) = match head {
            Head::Str(i) => {
                let n = crate::bits::nul_at(bytes)?;
                (i, Value::Str(&bytes[..n]), n + 1)
            }
            Head::VarInt { out, signed } => {
                let (raw, _, len) = leb128(bytes, signed).ok()?;
                (out, if signed { Value::Signed(raw as i64) } else { Value::Unsigned(raw) }, len)
            }
        };
        Some((i, value, start + len as u64 * 8))
    }

    /// Where segment `seg` starts when what comes before it ends at bit `pos` (aligned), if
    /// the segment ends within the limit.
    #[inline(always)]
    fn segment_start(&self, seg: &Segment, pos: u64) -> Option<u64> {
        let a = seg.align as u64;
        let start = (pos + a - 1) & !(a - 1);
        (start + seg.bits <= self.limit).then_some(start)
    }

    /// Fills the leaves of one segment starting at `start` (aligned and bounds-checked).
    #[inline]
    fn fill_segment(&mut self, seg: &Segment, start: u64, fields: &mut [Field<'a>]) {
        if let Some(fills) = &seg.fills {
            // Byte-aligned start: plain leaves straight from the bytes.
            let base = (start / 8) as usize;
            match self.data.get(base..).filter(|d| d.len() >= seg.ints_reach as usize) {
                Some(d) if !seg.ints.is_empty() => {
                    fill_ints(&seg.ints, seg.ints_reach as usize, seg.ints_first, d, fields);
                    let d = &self.data[base..];
                    for &(i, o, kind) in seg.rest.iter() {
                        if let Some(x) = fields.get_mut(i as usize) {
                            x.value = fill_value(d, o as usize, kind);
                        }
                    }
                }
                _ => {
                    let d = &self.data[base..];
                    for &(i, o, kind) in fills.iter() {
                        if let Some(x) = fields.get_mut(i as usize) {
                            x.value = fill_value(d, o as usize, kind);
                        }
                    }
                }
            }
        }
        for (i, leaf, off) in seg.others.iter() {
            let v = self.leaf_val(leaf, start + off);
            if let Some(f) = fields.get_mut(*i as usize) {
                f.value = v;
            }
        }
    }

    /// The fields a body program outputs, with placeholder leaf values (see
    /// [`Decoder::fill_program`]).
    pub(crate) fn template(&self, p: &Program) -> Box<[Field<'a>]> {
        p.steps
            .iter()
            .map(|step| match step {
                Step::Open { node, end, count } => Field { node: self.plan.node(*node), value: Value::Compound { end: *end, count: *count } },
                Step::Leaf { leaf, .. } => Field { node: self.plan.node(leaf.node), value: Value::Unsigned(0) },
                Step::Str { node } => Field { node: self.plan.node(*node), value: Value::Str(&[]) },
                Step::VarInt { node } => Field { node: self.plan.node(*node), value: Value::Unsigned(0) },
            })
            .collect()
    }

    /// What a role or clock-mapped integer means to the reader.
    #[inline(never)]
    fn special(&mut self, role: Role, clock: Option<usize>, raw: u64, size: u32) {
        if clock.is_some() && role != Role::PacketEnd {
            if self.clock_class.is_none() {
                self.clock_class = clock;
            }
            self.update_clock(raw, size);
        }
        let sp = &mut self.specials;
        match role {
            Role::Magic => sp.magic = Some(raw),
            Role::StreamId => sp.stream_id = Some(raw),
            Role::StreamInstanceId => sp.stream_instance_id = Some(raw),
            Role::PacketBegin => sp.packet_begin = Some(raw),
            Role::PacketEnd => sp.packet_end = Some(raw),
            Role::ContentSize => sp.content_size = Some(raw),
            Role::PacketSize => sp.packet_size = Some(raw),
            Role::EventsDiscarded => sp.events_discarded = Some(raw),
            Role::PacketSeqNum => sp.packet_seq_num = Some(raw),
            Role::EventId => sp.event_id = Some(raw),
            Role::Timestamp => sp.timestamp_seen = true,
            // The UUID is an array: its position is noted where it is decoded (`node`).
            Role::Uuid | Role::None => {}
        }
    }

    /// A variable-length (LEB128) integer at the (byte-aligned) position: its raw 64 bits (sign
    /// extended when signed) and how many bits it carried (7 per byte, at most 64).
    fn leb128(&mut self, signed: bool) -> R<(u64, u32)> {
        let start = (self.pos / 8) as usize;
        let end = ((self.limit / 8) as usize).max(start);
        match leb128(self.data.get(start..end).unwrap_or(&[]), signed) {
            Ok((value, bits, len)) => {
                self.pos += len as u64 * 8;
                Ok((value, bits))
            }
            Err(msg) => self.err(self.pos, msg),
        }
    }

    #[inline]
    fn int(&mut self, role: Role, i: &IntNode) -> R<Value<'a>> {
        if i.varlen {
            let (raw, bits) = self.leb128(i.signed)?;
            let (value, wide) = if i.signed { (Value::Signed(raw as i64), raw as i64 as i128) } else { (Value::Unsigned(raw), raw as i128) };
            if let Some(slot) = i.slot {
                self.slots[slot as usize] = wide;
            }
            if i.clock.is_some() || role != Role::None {
                self.special(role, i.clock, raw, bits);
            }
            return Ok(value);
        }
        let size = i.size;
        self.byte_order_at(i.byte_order)?;
        self.need(size as u64)?;
        if size > 64 {
            if !self.pos.is_multiple_of(8) || !size.is_multiple_of(8) {
                return self.err(self.pos, format!("a {size}-bit integer must be byte-aligned and a whole number of bytes"));
            }
            let start = (self.pos / 8) as usize;
            let bytes = &self.data[start..start + size as usize / 8];
            self.pos += size as u64;
            return Ok(Value::BigInt(bytes));
        }
        let mut raw = read_uint(self.data, self.pos, size, i.byte_order);
        if i.reversed {
            raw = raw.reverse_bits() >> (64 - size);
        }
        self.pos += size as u64;
        let (value, wide) = if i.signed {
            let s = sign_extend(raw, size);
            (Value::Signed(s), s as i128)
        } else {
            (Value::Unsigned(raw), raw as i128)
        };
        if let Some(slot) = i.slot {
            self.slots[slot as usize] = wide;
        }
        if i.clock.is_some() || role != Role::None {
            self.special(role, i.clock, raw, size);
        }
        Ok(value)
    }

    /// Updates the stream clock with a `size`-bit sample, rebuilding the high bits (a sample
    /// smaller than the current low bits means the counter wrapped once).
    #[inline]
    pub fn update_clock(&mut self, sample: u64, size: u32) {
        self.clock = next_clock(self.clock, sample, size);
    }
}

/// The clock `clock` updated with a `size`-bit sample: its high bits rebuilt (a sample smaller
/// than the current low bits means the counter wrapped once).
#[inline(always)]
pub(crate) fn next_clock(clock: u64, sample: u64, size: u32) -> u64 {
    if size >= 64 {
        return sample;
    }
    let mask = (1u64 << size) - 1;
    if sample < clock & mask {
        return wrapped_clock(clock, sample, mask);
    }
    (clock & !mask) | sample
}

/// [`next_clock`] when the counter wrapped: rare (once per 2^size cycles at most), so kept out
/// of line, which leaves the common case a predicted branch rather than a select computing
/// both.
#[cold]
#[inline(never)]
fn wrapped_clock(clock: u64, sample: u64, mask: u64) -> u64 {
    (clock.wrapping_add(mask + 1) & !mask) | sample
}

/// Writes the values of little-endian integers read from `d` (the bytes from the run's start,
/// at least `reach` of them: every byte their 8-byte reads touch, see
/// [`crate::plan::Segment::ints_reach`]) into `fields`.
#[inline(always)]
pub(crate) fn fill_ints<'a>(ints: &[IntFill], reach: usize, first: u32, d: &[u8], fields: &mut [Field<'a>]) {
    if let Some(w) = d.first_chunk::<{ WINDOW + 8 }>().filter(|_| reach < WINDOW + 8) {
        fill_ints_window(ints, first, w, fields);
        return;
    }
    for f in ints {
        let v = f.value(u64::from_le_bytes(take(d, f.off as usize)));
        if let Some(x) = fields.get_mut(f.out as usize) {
            x.value = v;
        }
    }
}

/// [`fill_ints`] when every read is inside the fixed-size window `w` (the integers reach less
/// than `WINDOW + 8` bytes): no bounds check per field at all.
#[inline(always)]
pub(crate) fn fill_ints_window<'a>(ints: &[IntFill], first: u32, w: &[u8; WINDOW + 8], fields: &mut [Field<'a>]) {
    let first = first as usize;
    if let Some(dst) = fields.get_mut(first..first + ints.len()) {
        // Outputs are consecutive (`first` is not `u32::MAX`).
        for (f, x) in ints.iter().zip(dst) {
            x.value = f.value(u64::from_le_bytes(take_fixed(w, f.off as usize)));
        }
        return;
    }
    for f in ints {
        let v = f.value(u64::from_le_bytes(take_fixed(w, f.off as usize)));
        if let Some(x) = fields.get_mut(f.out as usize) {
            x.value = v;
        }
    }
}

/// Integers at byte offsets below this are read from a fixed-size window by [`fill_ints`].
pub(crate) const WINDOW: usize = 64;

/// Eight bytes at `at` of a window (`at < WINDOW`: in bounds by the types).
#[inline(always)]
fn take_fixed(w: &[u8; WINDOW + 8], at: usize) -> [u8; 8] {
    let at = at % WINDOW;
    let mut a = [0u8; 8];
    a.copy_from_slice(&w[at..at + 8]);
    a
}

/// The value of a plain byte-aligned leaf at byte `o` of `d` (bounds-checked by the caller).
#[inline(always)]
fn fill_value(d: &[u8], o: usize, kind: Fill) -> Value<'_> {
    match kind {
        Fill::U8 => Value::Unsigned(d[o] as u64),
        Fill::I8 => Value::Signed(d[o] as i8 as i64),
        Fill::U16Le => Value::Unsigned(u16::from_le_bytes(take(d, o)) as u64),
        Fill::I16Le => Value::Signed(i16::from_le_bytes(take(d, o)) as i64),
        Fill::U32Le => Value::Unsigned(u32::from_le_bytes(take(d, o)) as u64),
        Fill::I32Le => Value::Signed(i32::from_le_bytes(take(d, o)) as i64),
        Fill::U64Le => Value::Unsigned(u64::from_le_bytes(take(d, o))),
        Fill::I64Le => Value::Signed(i64::from_le_bytes(take(d, o))),
        Fill::U16Be => Value::Unsigned(u16::from_be_bytes(take(d, o)) as u64),
        Fill::I16Be => Value::Signed(i16::from_be_bytes(take(d, o)) as i64),
        Fill::U32Be => Value::Unsigned(u32::from_be_bytes(take(d, o)) as u64),
        Fill::I32Be => Value::Signed(i32::from_be_bytes(take(d, o)) as i64),
        Fill::U64Be => Value::Unsigned(u64::from_be_bytes(take(d, o))),
        Fill::I64Be => Value::Signed(i64::from_be_bytes(take(d, o))),
        Fill::Text(len) => Value::Str(&d[o..o + len as usize]),
    }
}

#[inline(always)]
pub(crate) fn take<const N: usize>(d: &[u8], at: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&d[at..at + N]);
    a
}

#[inline]
fn close(out: &mut [Field<'_>], at: usize, base: usize) {
    let end = (out.len() - base) as u32;
    if let Value::Compound { end: e, .. } = &mut out[at].value {
        *e = end;
    }
}

/// Whether a node always decodes to zero bits (an empty structure, or arrays of them).
/// The variable-length (LEB128) integer `bytes` start with: its raw 64 bits (sign extended
/// when signed), how many bits it carried (7 per byte, at most 64) and its length in bytes.
#[inline]
fn leb128(bytes: &[u8], signed: bool) -> Result<(u64, u32, usize), &'static str> {
    if let Some(word) = bytes.first_chunk::<8>() {
        let w = u64::from_le_bytes(*word);
        let stops = !w & 0x8080_8080_8080_8080;
        if stops != 0 {
            // At most eight bytes: keep those up to the first without a continuation bit and
            // pack their 7-bit groups (pairs, then quads, then the two halves).
            let len = (stops.trailing_zeros() / 8 + 1) as usize;
            let bits = 7 * len as u32;
            let keep = if len == 8 { u64::MAX } else { (1u64 << (8 * len)) - 1 };
            let mut v = w & keep & 0x7f7f_7f7f_7f7f_7f7f;
            v = (v & 0x007f_007f_007f_007f) | ((v & 0x7f00_7f00_7f00_7f00) >> 1);
            v = (v & 0x0000_3fff_0000_3fff) | ((v & 0x3fff_0000_3fff_0000) >> 2);
            v = (v & 0x0000_0000_0fff_ffff) | ((v & 0x0fff_ffff_0000_0000) >> 4);
            if signed && (v >> (bits - 1)) & 1 != 0 {
                v |= u64::MAX << bits;
            }
            return Ok((v, bits, len));
        }
    }
    // Near the end of the content, or nine or ten bytes: byte by byte.
    let mut value: u64 = 0;
    for (k, &b) in bytes.iter().enumerate() {
        let shift = 7 * k as u32;
        let chunk = (b & 0x7f) as u64;
        if shift >= 64 || (shift == 63 && chunk > 1 && !(signed && chunk == 0x7f)) {
            return Err("variable-length integer does not fit 64 bits");
        }
        value |= chunk << shift;
        if b & 0x80 == 0 {
            let bits = shift + 7;
            if signed && bits < 64 && b & 0x40 != 0 {
                value |= u64::MAX << bits;
            }
            return Ok((value, bits.min(64), k + 1));
        }
    }
    Err("variable-length integer runs past the packet content")
}

fn is_zero_size(plan: &StreamPlan, id: NodeId) -> bool {
    match &plan.node(id).kind {
        NodeKind::Struct { fields } => fields.iter().all(|&f| is_zero_size(plan, f)),
        NodeKind::Array { element, length, .. } => *length == 0 || is_zero_size(plan, *element),
        NodeKind::Blob { length: Some(0), .. } => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::{leb128, next_clock};
    use proptest::prelude::*;

    proptest! {
        /// The clock after a `size`-bit sample is the CTF specification's: the smallest value
        /// at or after the current clock whose low `size` bits are the sample (modulo 2^64),
        /// whether the counter wrapped (the out-of-line path) or not.
        #[test]
        fn next_clock_is_the_first_value_at_or_after_the_clock_with_the_sample_bits(clock: u64, raw: u64, size in 1u32..=64, near in any::<bool>()) {
            let mask = if size == 64 { u64::MAX } else { (1 << size) - 1 };
            // Half the cases near the clock's low bits, where wrapping is decided.
            let sample = if near { (clock & mask).wrapping_add(raw % 5).wrapping_sub(2) & mask } else { raw & mask };
            let candidate = (clock & !mask) | sample;
            let want = if candidate < clock { candidate.wrapping_add(mask).wrapping_add(1) } else { candidate };
            prop_assert_eq!(next_clock(clock, sample, size), want);
        }
    }

    #[test]
    fn leb128_reads_64_bits_at_most() {
        assert_eq!(leb128(&[0x4d, 0xff], false), Ok((77, 7, 1)));
        assert_eq!(leb128(&[0xe5, 0x8e, 0x26], false), Ok((624_485, 21, 3)));
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(leb128(&max, false), Ok((u64::MAX, 64, 10)));
        assert_eq!(leb128(&[0x7f], true), Ok((u64::MAX, 7, 1)), "-1");
        assert_eq!(leb128(&[0xc0, 0xbb, 0x78], true), Ok((-123_456i64 as u64, 21, 3)));
        let min = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f];
        assert_eq!(leb128(&min, true), Ok((i64::MIN as u64, 64, 10)));
        // A 65th bit, an 11th byte, or no last byte.
        let mut over = max;
        over[9] = 0x02;
        assert!(leb128(&over, false).is_err());
        assert!(leb128(&[0x80; 11], false).is_err());
        assert!(leb128(&[0x80, 0x80], false).is_err());
        assert!(leb128(&[], true).is_err());
    }

    /// The word-at-a-time path and the byte loop agree on every length, sign and bit pattern.
    #[test]
    fn leb128_word_path_matches_the_byte_loop() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = x >> (x % 64);
            for signed in [false, true] {
                let v = if signed { (v as i64 >> (x % 3)) as u64 } else { v };
                // Encode.
                let mut enc = Vec::new();
                let mut r = v;
                loop {
                    let b = (r & 0x7f) as u8;
                    let done = if signed { let s = (r as i64) >> 7; (s == 0 && b & 0x40 == 0) || (s == -1 && b & 0x40 != 0) } else { r >> 7 == 0 };
                    r = if signed { ((r as i64) >> 7) as u64 } else { r >> 7 };
                    enc.push(if done { b } else { b | 0x80 });
                    if done {
                        break;
                    }
                }
                let short = leb128(&enc, signed).unwrap();
                let mut padded = enc.clone();
                padded.extend([0xAA; 10]);
                let long = leb128(&padded, signed).unwrap();
                assert_eq!(short.0, v, "{enc:02x?}");
                assert_eq!(short, long, "{enc:02x?}");
                assert_eq!(short.2, enc.len());
            }
        }
    }
}
