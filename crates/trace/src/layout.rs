//! What babeltrace2 shows of each stream class (its *trace IR*, which `src.ctf.fs` derives
//! from the CTF metadata), and the names it gives traces: the visibility rules the text and
//! JSON printers share (see [`crate::text`] for the rules).

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use tracelens_ctf::ir::{EnumType, EnvValue};
use tracelens_ctf::plan::{Node, NodeKind, StreamPlan};
use tracelens_ctf::Trace;

use crate::set::{Source, TraceSet};

/// One enumeration label with all its ranges (babeltrace2 groups ranges by label, in the order
/// labels first appear).
#[derive(Debug)]
pub(crate) struct LabelRanges {
    pub(crate) label: String,
    pub(crate) ranges: Vec<(i128, i128)>,
}

/// Visibility of every node of one stream class's plan.
#[derive(Debug)]
pub struct PlanLayout {
    base: usize,
    len: usize,
    visible: Vec<bool>,
    /// `, NAME = ` of every node (its separator and name as a structure member, written at
    /// once), by node index.
    labels: Vec<Box<[u8]>>,
    /// Enumerations whose labels repeat, by node index.
    grouped_enums: HashMap<usize, Vec<LabelRanges>>,
}

impl PlanLayout {
    fn new(trace: &Trace, plan: &StreamPlan) -> PlanLayout {
        let mut deps: Vec<bool> = Vec::new();
        let mut visible = vec![true; plan.nodes.len()];
        // Iterate to a fixed point: a shown sequence or variant makes its length/tag shown,
        // which can make the structure holding it shown, and so on.
        for _ in 0..64 {
            let mut cx = VisCx { plan, deps: &deps, visible: &mut visible, new_deps: Vec::new(), clocks: trace.class.clocks.len(), ctf2: trace.class.major >= 2 };
            if let Some(r) = plan.packet_context {
                cx.node(r, Sc::PacketContext, 0);
            }
            if let Some(r) = plan.event_context {
                cx.node(r, Sc::Other, 0);
            }
            for ev in &plan.events {
                for r in [ev.context, ev.payload].into_iter().flatten() {
                    cx.node(r, Sc::Other, 0);
                }
            }
            let new_deps = std::mem::take(&mut cx.new_deps);
            let mut grew = false;
            for s in new_deps {
                let s = s as usize;
                if deps.len() <= s {
                    deps.resize(s + 1, false);
                }
                if !deps[s] {
                    deps[s] = true;
                    grew = true;
                }
            }
            if !grew {
                break;
            }
        }
        // Headers are never shown.
        let mut hidden = Vec::new();
        hidden.extend(plan.packet_header);
        hidden.extend(plan.event_header);
        while let Some(id) = hidden.pop() {
            if let Some(v) = visible.get_mut(id as usize) {
                if !*v {
                    continue;
                }
                *v = false;
            }
            match &plan.node(id).kind {
                NodeKind::Struct { fields } => hidden.extend(fields),
                NodeKind::Variant { options, .. } => hidden.extend(options),
                NodeKind::Array { element, .. } | NodeKind::Sequence { element, .. } => hidden.push(*element),
                NodeKind::Optional { inner, .. } => hidden.push(*inner),
                _ => {}
            }
        }
        let mut grouped_enums = HashMap::new();
        for (i, n) in plan.nodes.iter().enumerate() {
            if let NodeKind::Int(int) = &n.kind {
                if let Some(e) = &int.enumeration {
                    if let Some(g) = group_labels(e) {
                        grouped_enums.insert(i, g);
                    }
                }
            }
        }
        let labels = plan.nodes.iter().map(|n| [&b", "[..], n.name().as_bytes(), b" = "].concat().into_boxed_slice()).collect();
        PlanLayout { base: plan.nodes.as_ptr() as usize, len: plan.nodes.len(), visible, labels, grouped_enums }
    }

    #[inline]
    fn index(&self, node: &Node) -> Option<usize> {
        let off = (node as *const Node as usize).checked_sub(self.base)?;
        let i = off / std::mem::size_of::<Node>();
        (i < self.len).then_some(i)
    }

    /// The labels of the enumeration `node` grouped as babeltrace2 groups them, when its
    /// ranges needed grouping.
    #[inline]
    pub(crate) fn label_groups(&self, node: &Node) -> Option<&[LabelRanges]> {
        self.index(node).and_then(|i| self.grouped_enums.get(&i)).map(Vec::as_slice)
    }

    /// Whether babeltrace2 shows `node`, and then its `, NAME = ` when it is a node of this
    /// plan (`Some(None)`: shown, not of this plan).
    #[inline]
    pub(crate) fn member(&self, node: &Node) -> Option<Option<&[u8]>> {
        match self.index(node) {
            Some(i) => self.visible[i].then(|| Some(&self.labels[i][..])),
            None => Some(None),
        }
    }

    /// Whether babeltrace2 shows `node` (a node of this plan; anything else is shown).
    #[inline]
    pub fn is_visible(&self, node: &Node) -> bool {
        match self.index(node) {
            Some(i) => self.visible[i],
            None => true,
        }
    }
}

fn group_labels(e: &EnumType) -> Option<Vec<LabelRanges>> {
    let m = &e.mappings;
    let dup = m.iter().enumerate().any(|(i, a)| m[..i].iter().any(|b| b.label == a.label));
    if !dup {
        return None;
    }
    let mut out: Vec<LabelRanges> = Vec::new();
    for x in m {
        match out.iter_mut().find(|g| g.label == x.label) {
            Some(g) => g.ranges.push((x.lower, x.upper)),
            None => out.push(LabelRanges { label: x.label.clone(), ranges: vec![(x.lower, x.upper)] }),
        }
    }
    Some(out)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sc {
    PacketContext,
    Other,
}

struct VisCx<'p, 'v> {
    plan: &'p StreamPlan,
    deps: &'v [bool],
    visible: &'v mut Vec<bool>,
    new_deps: Vec<u16>,
    clocks: usize,
    ctf2: bool,
}

const PACKET_MEANINGS: [&str; 6] = ["timestamp_begin", "timestamp_end", "content_size", "packet_size", "events_discarded", "packet_seq_num"];

impl VisCx<'_, '_> {
    /// Computes whether `id` is in babeltrace2's trace IR; `depth` 0 is a scope root.
    fn node(&mut self, id: u32, sc: Sc, depth: u32) -> bool {
        let node = self.plan.node(id);
        let v = match &node.kind {
            NodeKind::Int(i) => {
                let name = node.name();
                let auto_clock = sc == Sc::PacketContext && (name == "timestamp_begin" || name == "timestamp_end") && self.clocks <= 1;
                // CTF 2 gives the meanings (roles) explicitly; CTF 1.8 by these names.
                let meaning = sc == Sc::PacketContext && depth == 1 && if self.ctf2 { node.role.is_hidden() } else { PACKET_MEANINGS.contains(&name) };
                let dep = i.slot.is_some_and(|s| self.deps.get(s as usize).copied().unwrap_or(false));
                (i.clock.is_none() && !auto_clock && !meaning) || dep
            }
            NodeKind::Struct { fields } => {
                let mut any = fields.is_empty();
                for &f in fields.iter().rev() {
                    any |= self.node(f, sc, depth + 1);
                }
                any
            }
            NodeKind::Variant { options, tag_slot, .. } => {
                let mut any = false;
                for &o in options.iter().rev() {
                    any |= self.node(o, sc, depth + 1);
                }
                if any {
                    for &o in options {
                        self.visible[o as usize] = true;
                    }
                    self.new_deps.push(*tag_slot);
                }
                any
            }
            NodeKind::Array { element, .. } => self.node(*element, sc, depth + 1),
            NodeKind::Sequence { element, length_slot, .. } => {
                let v = self.node(*element, sc, depth + 1);
                if v {
                    self.new_deps.push(*length_slot);
                }
                v
            }
            NodeKind::Optional { inner, selector_slot, .. } => {
                let v = self.node(*inner, sc, depth + 1);
                if v {
                    self.new_deps.push(*selector_slot);
                }
                v
            }
            NodeKind::Blob { length: None, length_slot, .. } => {
                self.new_deps.push(*length_slot);
                true
            }
            NodeKind::Float { .. } | NodeKind::String | NodeKind::WideString(_) | NodeKind::Blob { .. } | NodeKind::Invalid(_) => true,
        };
        self.visible[id as usize] = v;
        v
    }
}

/// How babeltrace2 names one stream in its discarded-items warnings.
#[derive(Clone, Debug)]
pub struct StreamLayout {
    /// Absolute path of the stream's first file.
    pub path: String,
    /// Stream class id.
    pub class_id: u64,
    /// Stream id: the packet headers' `stream_instance_id`, else a counter over the trace's
    /// streams that have none (in path order).
    pub id: u64,
    /// Index of the stream's plan in the trace's plans.
    pub plan: usize,
}

/// What the formatters need to know about one trace.
#[derive(Debug)]
pub struct TraceLayout {
    /// babeltrace2's trace name (see [`trace_names`]).
    pub name: String,
    /// The trace directory (absolute).
    pub dir: String,
    /// `env.hostname`.
    pub hostname: Option<String>,
    /// `env.domain`.
    pub domain: Option<String>,
    /// `env.procname`.
    pub procname: Option<String>,
    /// `env.vpid`.
    pub vpid: Option<i64>,
    /// The trace UUID.
    pub uuid: Option<[u8; 16]>,
    /// One per stream class plan.
    pub plans: Vec<PlanLayout>,
    /// One per stream.
    pub streams: Vec<StreamLayout>,
}

/// The layout of every trace of a [`TraceSet`].
#[derive(Debug)]
pub struct Layout {
    /// One per trace, in [`TraceSet::traces`] order.
    pub traces: Vec<TraceLayout>,
}

fn env_str(t: &Trace, key: &str) -> Option<String> {
    match t.class.env(key) {
        Some(EnvValue::Str(s)) => Some(s.clone()),
        _ => None,
    }
}

/// `path` made absolute and lexically normalized (`.` and `..` removed), as babeltrace2 names
/// stream files.
pub fn absolute(path: &Path) -> PathBuf {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map(|d| d.join(path)).unwrap_or_else(|_| path.to_path_buf())
    };
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// babeltrace2's trace names for the traces of a set. `inputs[i]` is the command-line path
/// under which trace `i` was found.
///
/// babeltrace2 names a trace `HOSTNAME/RELATIVE-PATH` (the `hostname` environment entry, then
/// the trace directory relative to the command-line path), dropping either part when empty
/// (and the `/` with it). Traces that share a UUID are merged into one by babeltrace2 and get
/// no relative part.
pub fn trace_names(set: &TraceSet, inputs: &[PathBuf]) -> Vec<String> {
    let mut out = Vec::with_capacity(set.traces.len());
    for (i, t) in set.traces.iter().enumerate() {
        let shared = t.class.uuid.is_some() && set.traces.iter().enumerate().any(|(j, o)| j != i && o.class.uuid == t.class.uuid);
        let suffix = if shared {
            None
        } else {
            inputs.get(i).and_then(|input| {
                let rel = t.dir.strip_prefix(input).ok()?;
                let s = rel.to_string_lossy().trim_start_matches('/').to_string();
                (!s.is_empty()).then_some(s)
            })
        };
        let mut name = String::new();
        if let Some(h) = env_str(t, "hostname") {
            name.push_str(&h);
            if suffix.is_some() {
                name.push('/');
            }
        }
        if let Some(s) = suffix {
            name.push_str(&s);
        }
        out.push(name);
    }
    out
}

impl Layout {
    /// babeltrace2's order for items with equal timestamps from different streams, as a rank
    /// per stream (its muxer compares trace UUIDs — traces without one last —, then trace
    /// names, stream class ids and stream ids). Use with [`crate::Merger::set_tie_break`].
    pub fn tie_break_ranks(&self) -> Vec<Vec<u64>> {
        let mut all: Vec<(usize, usize)> = Vec::new();
        for (ti, t) in self.traces.iter().enumerate() {
            for si in 0..t.streams.len() {
                all.push((ti, si));
            }
        }
        all.sort_by(|&(ta, sa), &(tb, sb)| {
            let (a, b) = (&self.traces[ta], &self.traces[tb]);
            let (x, y) = (&a.streams[sa], &b.streams[sb]);
            (a.uuid.is_none(), a.uuid, a.name.as_bytes(), x.class_id, x.id, ta, sa).cmp(&(b.uuid.is_none(), b.uuid, b.name.as_bytes(), y.class_id, y.id, tb, sb))
        });
        let mut ranks: Vec<Vec<u64>> = self.traces.iter().map(|t| vec![0; t.streams.len()]).collect();
        for (r, (ti, si)) in all.into_iter().enumerate() {
            ranks[ti][si] = r as u64;
        }
        ranks
    }

    /// The rank of stream `src` in babeltrace2's order (see [`Layout::tie_break_ranks`]).
    pub fn tie_break_rank(ranks: &[Vec<u64>], src: Source) -> u64 {
        ranks.get(src.trace).and_then(|t| t.get(src.stream)).copied().unwrap_or(u64::MAX)
    }

    /// Computes the layout of every trace of `set`; `names` are the trace names (see
    /// [`trace_names`]; missing names are empty).
    pub fn new(set: &TraceSet, names: &[String]) -> Layout {
        let traces = set
            .traces
            .iter()
            .enumerate()
            .map(|(ti, t)| {
                let plans = t.plans.iter().map(|p| PlanLayout::new(t, p)).collect();
                let mut next_id = 0u64;
                let streams = t
                    .streams
                    .iter()
                    .map(|s| {
                        let id = match s.instance_id {
                            Some(id) => id,
                            None => {
                                next_id += 1;
                                next_id - 1
                            }
                        };
                        StreamLayout {
                            path: absolute(s.path()).to_string_lossy().into_owned(),
                            class_id: s.stream_class_id,
                            id,
                            plan: s.plan,
                        }
                    })
                    .collect();
                TraceLayout {
                    name: names.get(ti).cloned().unwrap_or_default(),
                    dir: absolute(&t.dir).to_string_lossy().into_owned(),
                    hostname: env_str(t, "hostname"),
                    domain: env_str(t, "domain"),
                    procname: env_str(t, "procname"),
                    vpid: match t.class.env("vpid") {
                        Some(EnvValue::Int(v)) => Some(*v),
                        _ => None,
                    },
                    uuid: t.class.uuid,
                    plans,
                    streams,
                }
            })
            .collect();
        Layout { traces }
    }
}
