//! The event header's encodings. A header may hold variants chosen by the event id (LTTng's
//! compact and large headers: a 5-bit or 16-bit id, then either a short timestamp or an
//! extended id and a 64-bit timestamp): every way through them is a [`Combo`], listed once
//! per plan, and each event takes the smallest that encodes its class id and its timestamp
//! exactly ([`choose_combo`]) — a timestamp field of N bits can only encode a time `t` with
//! `0 <= t - previous < 2^N`, which is how readers rebuild wrapped timestamps.

use crate::layout::{NodeId, NodeKind, Role, StreamLayout};
use crate::decode::next_clock;

use super::encode::{fits_unsigned, mask, Enc, EventError};
use super::plan::WritePlan;

/// One way to encode the event header: an option for each variant chosen by an `id`, and the
/// `id` and `timestamp` fields met on that path, in decoding order.
#[derive(Clone, Debug, Default)]
pub(super) struct Combo {
    pub choices: Vec<(NodeId, u32)>,
    pub ids: Vec<NodeId>,
    /// (size, mapped to a clock) of each `timestamp`.
    pub ts: Vec<(u32, bool)>,
    pub bits: u64,
}

/// One node of an event header flattened for a combo (see [`flatten`]): align to `align`
/// bits, then write the integer `node` when `int`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Step {
    pub node: NodeId,
    pub align: u32,
    pub int: bool,
}

/// Every way to encode the header subtree `id`, appended to each of `combos`.
pub(super) fn shape(layout: &StreamLayout, id: NodeId, combos: Vec<Combo>) -> Vec<Combo> {
    const MAX_COMBOS: usize = 256;
    let node = layout.node(id);
    match &node.kind {
        NodeKind::Int(i) => combos
            .into_iter()
            .map(|mut c| {
                match node.role {
                    Role::EventId => c.ids.push(id),
                    Role::Timestamp => c.ts.push((i.size, i.clock.is_some())),
                    _ => {}
                }
                c.bits += i.size as u64;
                c
            })
            .collect(),
        NodeKind::Float { size, .. } => combos
            .into_iter()
            .map(|mut c| {
                c.bits += *size as u64;
                c
            })
            .collect(),
        NodeKind::Struct { fields } => fields.iter().fold(combos, |acc, &f| shape(layout, f, acc)),
        NodeKind::Variant { options, tag_node, .. } => {
            let tag = layout.node(*tag_node);
            let by_id = matches!(tag.kind, NodeKind::Int(_)) && tag.role == Role::EventId;
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
                    out.extend(shape(layout, o, vec![c2]));
                }
            }
            out.truncate(MAX_COMBOS);
            out
        }
        _ => combos,
    }
}

/// Appends to `steps` how `combo` writes the header subtree `id` with no header value given;
/// `None` where the subtree holds something else than structures, variants the combo
/// selects, and integers of at most 64 bits with no role or the event id or timestamp role.
pub(super) fn flatten(layout: &StreamLayout, id: NodeId, combo: &Combo, steps: &mut Vec<Step>) -> Option<()> {
    let node = layout.node(id);
    match &node.kind {
        NodeKind::Int(i) if i.is_plain() && matches!(node.role, Role::None | Role::EventId | Role::Timestamp) => {
            steps.push(Step { node: id, align: node.align, int: true });
        }
        NodeKind::Struct { fields } => {
            steps.push(Step { node: id, align: node.align, int: false });
            for &f in fields {
                flatten(layout, f, combo, steps)?;
            }
        }
        NodeKind::Variant { options, .. } => {
            let &(_, k) = combo.choices.iter().find(|(v, _)| *v == id)?;
            steps.push(Step { node: id, align: node.align, int: false });
            flatten(layout, *options.get(k as usize)?, combo, steps)?;
        }
        _ => return None,
    }
    Some(())
}

/// Picks the cheapest header encoding for (`class_id`, `ts`) and fills `e.ids` with its `id`
/// values. Returns its index in `plan.combos`.
pub(super) fn choose_combo(plan: &WritePlan, e: &mut Enc, class_id: u64, ts: u64) -> Result<usize, EventError> {
    let mut id_ok = false;
    for (ci, c) in plan.combos.iter().enumerate() {
        e.ids.clear();
        let mut ok = true;
        for &n in &c.ids {
            let NodeKind::Int(int) = &plan.node(n).kind else {
                ok = false;
                break;
            };
            let required = c.choices.iter().find(|(v, _)| matches!(&plan.node(*v).kind, NodeKind::Variant { tag_node, .. } if *tag_node == n));
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
                    let NodeKind::Variant { ranges, .. } = &plan.node(v).kind else {
                        ok = false;
                        break;
                    };
                    // Readers take the first range holding the tag value.
                    let selects = |x: i128| ranges.iter().find(|r| r.lower <= x && x <= r.upper).map(|r| r.option);
                    if fits(class_id) && selects(class_id as i128) == Some(option) {
                        Some(class_id)
                    } else {
                        ranges
                            .iter()
                            .filter(|r| r.option == option && selects(r.lower) == Some(option))
                            .map(|r| (r.lower as i64 as u64) & mask(int.size))
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
                clock = next_clock(clock, ts & mask(size), size);
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
