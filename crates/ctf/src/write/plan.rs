//! Write plans: the writer's view of a stream class's [`StreamLayout`] (the node arena with
//! roles and resolved field references, shared with the decoder), annotated with what the
//! writer needs: which subtrees its byte-wise fast path can write, the event header's
//! encodings ([`super::header`]), and which packet fields the class has.

use crate::ir::TraceClass;
use crate::layout::{NodeId, NodeKind, Role, StreamLayout};

use super::header::{Combo, Step};

/// A stream class compiled for writing.
#[derive(Clone, Debug)]
pub(super) struct WritePlan {
    layout: StreamLayout,
    /// Per node: see [`simple_nodes`].
    pub simple: Vec<bool>,
    /// Per combo (same order): the event header as a flat list of steps, when it is made of
    /// structures, variants selected by the event id and integers (see
    /// `Enc::put_header`).
    pub header_steps: Vec<Option<Vec<Step>>>,
    /// The trace's UUID (written into the packet header's `uuid`).
    pub uuid: Option<[u8; 16]>,
    /// Every way to encode the event header, smallest first (see [`super::header`]).
    pub combos: Vec<Combo>,
    pub has_begin: bool,
    pub has_content_size: bool,
    pub has_packet_size: bool,
    pub has_discarded: bool,
    /// Smallest `content_size`/`packet_size` field, in bits.
    pub size_field_bits: u32,
}

impl std::ops::Deref for WritePlan {
    type Target = StreamLayout;

    fn deref(&self) -> &StreamLayout {
        &self.layout
    }
}

impl WritePlan {
    /// A packet holds everything up to the end of the file (no size fields).
    pub fn single_packet(&self) -> bool {
        !self.has_content_size && !self.has_packet_size
    }

    /// The plan of stream class `stream_class_id` of `trace`.
    pub fn compile(trace: &TraceClass, stream_class_id: u64) -> Result<WritePlan, String> {
        let stream = trace
            .stream(stream_class_id)
            .ok_or_else(|| format!("the metadata declares no stream class {stream_class_id}"))?;
        let layout = StreamLayout::compile(trace, stream);
        let simple = simple_nodes(&layout);
        let mut plan = WritePlan {
            layout,
            simple,
            header_steps: Vec::new(),
            uuid: trace.uuid,
            combos: Vec::new(),
            has_begin: false,
            has_content_size: false,
            has_packet_size: false,
            has_discarded: false,
            size_field_bits: 64,
        };
        for n in &plan.layout.nodes {
            if let NodeKind::Int(i) = &n.kind {
                match n.role {
                    Role::PacketBegin => plan.has_begin = true,
                    Role::ContentSize => plan.has_content_size = true,
                    Role::PacketSize => plan.has_packet_size = true,
                    Role::EventsDiscarded => plan.has_discarded = true,
                    _ => {}
                }
                if matches!(n.role, Role::ContentSize | Role::PacketSize) {
                    plan.size_field_bits = plan.size_field_bits.min(i.size);
                }
            }
        }
        let mut combos = vec![Combo::default()];
        if let Some(h) = plan.event_header {
            combos = super::header::shape(&plan, h, combos);
        }
        // Smallest encoding first; declaration order among equals (stable sort).
        combos.sort_by_key(|c| c.bits);
        plan.header_steps = combos
            .iter()
            .map(|c| {
                let mut steps = Vec::new();
                plan.event_header.and_then(|h| super::header::flatten(&plan, h, c, &mut steps)).map(|()| steps)
            })
            .collect();
        plan.combos = combos;
        Ok(plan)
    }
}

/// Whether a node's whole subtree can be written by `Enc::put_simple`: whole bytes at
/// byte-aligned positions (integers of 1 to 8 bytes with no role or clock, strings, arrays and
/// sequences of plain bytes, structures of those), so no byte order check, bit packing or
/// per-field bookkeeping is needed. Computed once per plan.
fn simple_nodes(layout: &StreamLayout) -> Vec<bool> {
    fn walk(layout: &StreamLayout, id: NodeId, memo: &mut [Option<bool>]) -> bool {
        if let Some(v) = memo[id as usize] {
            return v;
        }
        let node = layout.node(id);
        let plain_byte = |e: NodeId| {
            let n = layout.node(e);
            matches!(&n.kind, NodeKind::Int(i) if i.size == 8 && n.align == 8 && i.slot.is_none() && i.clock.is_none() && n.role == Role::None)
        };
        let v = node.align.is_multiple_of(8)
            && match &node.kind {
                NodeKind::Int(i) => i.size % 8 == 0 && i.is_plain() && node.role == Role::None && i.clock.is_none(),
                NodeKind::String => true,
                NodeKind::Struct { fields } => fields.iter().all(|&f| walk(layout, f, memo)),
                NodeKind::Array { element, .. } => node.role == Role::None && plain_byte(*element),
                NodeKind::Sequence { element, .. } => plain_byte(*element),
                NodeKind::Float { .. } | NodeKind::Variant { .. } | NodeKind::Invalid(_) | NodeKind::WideString(_) | NodeKind::Blob { .. } | NodeKind::Optional { .. } => false,
            };
        memo[id as usize] = Some(v);
        v
    }
    let mut memo = vec![None; layout.nodes.len()];
    (0..layout.nodes.len() as NodeId).map(|id| walk(layout, id, &mut memo)).collect()
}
