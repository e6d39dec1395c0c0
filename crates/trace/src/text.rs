//! babeltrace2's `sink.text.pretty` output, byte for byte (babeltrace2 2.0.4 with its default
//! options unless [`TextOptions`] says otherwise):
//!
//! ```text
//! [19:15:41.344453871] (+0.000005019) host:proc:(1234) name: { pkt ctx }, { stream ev ctx }, { ev ctx }, { payload }
//! ```
//!
//! What babeltrace2 shows of a trace is its *trace IR*, which `src.ctf.fs` derives from the CTF
//! metadata; [`Layout`] reproduces that derivation once per stream class:
//!
//! * the packet header and the event header are never shown;
//! * an integer is hidden when it is mapped to a clock (explicitly, or implicitly like the
//!   packet context's `timestamp_begin`/`timestamp_end`), or when it is a direct member of the
//!   packet context named `timestamp_begin`, `timestamp_end`, `content_size`, `packet_size`,
//!   `events_discarded` or `packet_seq_num` — unless a shown sequence or variant uses it as
//!   its length or tag;
//! * a structure none of whose members is shown is hidden (an originally empty structure is
//!   shown as `{ }`); an array is hidden when its element is; a variant is shown when one of its
//!   options is, and then all its options are;
//! * a scope is printed (as `{ ... }`, separated by `, `) only when its root structure is shown.
//!
//! Events of a stream without a clock have no `[time] (+delta)` prefix. The delta of the first
//! event printed is `+?.?????????`. Times are local time (`TZ`), from the clock's nanoseconds
//! from origin.
//!
//! Discarded events and packets become babeltrace2's `WARNING: Tracer discarded ...` lines,
//! which babeltrace2 2.0.4 writes to **standard error**; [`TextPrinter::write_discarded`] writes
//! them to whatever it is given.
//!
//! Events with equal timestamps come out in babeltrace2's order when the merger is given
//! [`Layout::tie_break_ranks`] (see [`crate::Merger::set_tie_break`]); this matters for which
//! event is first (the one without a delta).
//!
//! Deliberately not reproduced: babeltrace2 2.0.4 prints an empty string field as a stale
//! earlier value of that field (it recycles field objects and clears a string by setting its
//! length to 0 without terminating it); tracelens prints `""`.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};

use tracelens_ctf::ir::{DisplayBase, EnumType, EnvValue};
use tracelens_ctf::plan::{Node, NodeKind, StreamPlan};
use tracelens_ctf::{EventView, Fields, Trace, Value};

use crate::set::{Source, TraceSet};

/// What the text output shows (babeltrace2's `--names`, `--fields` and clock options).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextOptions {
    /// Show payload field names (`--names=payload`).
    pub names_payload: bool,
    /// Show context field names (`--names=context`).
    pub names_context: bool,
    /// Show header field names: `timestamp = `, `delta = `, `name = ` ... (`--names=header`).
    pub names_header: bool,
    /// Show scope names: `stream.packet.context = ` ... (`--names=scope`).
    pub names_scope: bool,
    /// Show the trace name (`--fields=trace`).
    pub field_trace: bool,
    /// Show the `hostname` environment entry (`--fields=trace:hostname`).
    pub field_hostname: bool,
    /// Show the `domain` environment entry (`--fields=trace:domain`).
    pub field_domain: bool,
    /// Show the `procname` environment entry (`--fields=trace:procname`).
    pub field_procname: bool,
    /// Show the `vpid` environment entry (`--fields=trace:vpid`).
    pub field_vpid: bool,
    /// Show the event class's log level (`--fields=loglevel`).
    pub field_loglevel: bool,
    /// Show the event class's EMF URI (`--fields=emf`).
    pub field_emf: bool,
    /// Print the time since the previous event (`(+S.NNNNNNNNN)`); babeltrace2's `--no-delta`
    /// clears it.
    pub delta: bool,
    /// Print clock cycles instead of times (`--clock-cycles`).
    pub clock_cycles: bool,
    /// Print times as seconds since the origin (`--clock-seconds`).
    pub clock_seconds: bool,
    /// Print the date too (`--clock-date`).
    pub clock_date: bool,
    /// Print times in UTC instead of local time (`--clock-gmt`).
    pub clock_gmt: bool,
}

impl Default for TextOptions {
    fn default() -> Self {
        TextOptions {
            names_payload: true,
            names_context: true,
            names_header: false,
            names_scope: false,
            field_trace: false,
            field_hostname: true,
            field_domain: false,
            field_procname: true,
            field_vpid: true,
            field_loglevel: false,
            field_emf: false,
            delta: true,
            clock_cycles: false,
            clock_seconds: false,
            clock_date: false,
            clock_gmt: false,
        }
    }
}

fn split_list(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').map(str::trim).filter(|s| !s.is_empty())
}

impl TextOptions {
    /// Applies a babeltrace2 `--names` list: `payload` (or `args`, `arg`), `context` (or
    /// `ctx`), `scope`, `header`, `all`, `none`. Naming any item hides the others (as
    /// babeltrace2 does); `all` shows everything; `none` hides everything.
    pub fn set_names(&mut self, list: &str) -> Result<(), String> {
        let (mut all, mut none, mut items) = (false, false, Vec::new());
        for item in split_list(list) {
            match item {
                "payload" | "args" | "arg" => items.push(0),
                "context" | "ctx" => items.push(1),
                "scope" => items.push(2),
                "header" => items.push(3),
                "all" => all = true,
                "none" => none = true,
                other => return Err(format!("unknown name `{other}` in --names (expected payload, context, scope, header, all or none)")),
            }
        }
        if all && none {
            return Err("only one of `all` and `none` can be given to --names".into());
        }
        let default = if all {
            Some(true)
        } else if none || !items.is_empty() {
            Some(false)
        } else {
            None
        };
        if let Some(d) = default {
            self.names_payload = d;
            self.names_context = d;
            self.names_header = d;
            self.names_scope = d;
        }
        for i in items {
            match i {
                0 => self.names_payload = true,
                1 => self.names_context = true,
                2 => self.names_scope = true,
                _ => self.names_header = true,
            }
        }
        Ok(())
    }

    /// Applies a babeltrace2 `--fields` list: `trace`, `trace:hostname`, `trace:domain`,
    /// `trace:procname`, `trace:vpid`, `loglevel`, `emf`, `callsite`, `all`. Naming any item
    /// hides the others unless `all` is given.
    pub fn set_fields(&mut self, list: &str) -> Result<(), String> {
        let (mut all, mut items) = (false, Vec::new());
        for item in split_list(list) {
            match item {
                "trace" | "trace:hostname" | "trace:domain" | "trace:procname" | "trace:vpid" | "loglevel" | "emf" | "callsite" => {
                    items.push(item)
                }
                "all" => all = true,
                other => return Err(format!(
                    "unknown field `{other}` in --fields (expected trace, trace:hostname, trace:domain, trace:procname, trace:vpid, loglevel, emf, callsite or all)"
                )),
            }
        }
        if all || !items.is_empty() {
            let d = all;
            self.field_trace = d;
            self.field_hostname = d;
            self.field_domain = d;
            self.field_procname = d;
            self.field_vpid = d;
            self.field_loglevel = d;
            self.field_emf = d;
        }
        for i in items {
            match i {
                "trace" => self.field_trace = true,
                "trace:hostname" => self.field_hostname = true,
                "trace:domain" => self.field_domain = true,
                "trace:procname" => self.field_procname = true,
                "trace:vpid" => self.field_vpid = true,
                "loglevel" => self.field_loglevel = true,
                "emf" => self.field_emf = true,
                _ => {} // callsite: babeltrace2 2.0 prints nothing for it either
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Layout: what babeltrace2's trace IR keeps of each stream class, and names of traces/streams.
// ---------------------------------------------------------------------------------------------

/// One enumeration label with all its ranges (babeltrace2 groups ranges by label, in the order
/// labels first appear).
#[derive(Debug)]
struct LabelRanges {
    label: String,
    ranges: Vec<(i128, i128)>,
}

/// Visibility of every node of one stream class's plan.
#[derive(Debug)]
pub struct PlanLayout {
    base: usize,
    len: usize,
    visible: Vec<bool>,
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
            let mut cx = VisCx { plan, deps: &deps, visible: &mut visible, new_deps: Vec::new(), clocks: trace.class.clocks.len() };
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
        PlanLayout { base: plan.nodes.as_ptr() as usize, len: plan.nodes.len(), visible, grouped_enums }
    }

    #[inline]
    fn index(&self, node: &Node) -> Option<usize> {
        let off = (node as *const Node as usize).checked_sub(self.base)?;
        let i = off / std::mem::size_of::<Node>();
        (i < self.len).then_some(i)
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
                let meaning = sc == Sc::PacketContext && depth == 1 && PACKET_MEANINGS.contains(&name);
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
            NodeKind::Float { .. } | NodeKind::String | NodeKind::Invalid(_) => true,
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

// ---------------------------------------------------------------------------------------------
// Low-level writers (no allocation).
// ---------------------------------------------------------------------------------------------

/// Writes `v` in decimal.
#[inline]
pub(crate) fn write_u64<W: Write + ?Sized>(out: &mut W, mut v: u64) -> io::Result<()> {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.write_all(&buf[i..])
}

/// Writes `v` in decimal.
#[inline]
pub(crate) fn write_i64<W: Write + ?Sized>(out: &mut W, v: i64) -> io::Result<()> {
    if v < 0 {
        out.write_all(b"-")?;
    }
    write_u64(out, v.unsigned_abs())
}

/// Writes `v` zero-padded to `width` digits.
#[inline]
fn write_u64_pad<W: Write + ?Sized>(out: &mut W, mut v: u64, width: usize) -> io::Result<()> {
    let mut buf = [b'0'; 24];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let start = (buf.len() - width.min(buf.len())).min(i);
    out.write_all(&buf[start..])
}

fn write_radix<W: Write + ?Sized>(out: &mut W, mut v: u64, shift: u32, upper: bool) -> io::Result<()> {
    let digits: &[u8; 16] = if upper { b"0123456789ABCDEF" } else { b"0123456789abcdef" };
    let mask = (1u64 << shift) - 1;
    let mut buf = [0u8; 64];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = digits[(v & mask) as usize];
        v >>= shift;
        if v == 0 {
            break;
        }
    }
    out.write_all(&buf[i..])
}

/// A fixed-size stack buffer usable with `write!`.
pub(crate) struct StackBuf<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> StackBuf<N> {
    pub(crate) fn new() -> Self {
        StackBuf { buf: [0; N], len: 0 }
    }
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl<const N: usize> std::fmt::Write for StackBuf<N> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let b = s.as_bytes();
        let end = self.len.checked_add(b.len()).filter(|&e| e <= N).ok_or(std::fmt::Error)?;
        self.buf[self.len..end].copy_from_slice(b);
        self.len = end;
        Ok(())
    }
}

/// Writes `v` like C's `printf("%g", v)` (glibc: `nan`, `-nan`, `inf`, `-0`, `1e+10` ...).
pub(crate) fn write_g<W: Write + ?Sized>(out: &mut W, v: f64) -> io::Result<()> {
    let mut buf = [0u8; 64];
    // SAFETY: the buffer is 64 bytes and snprintf writes at most that many, NUL included; "%g"
    // of a double never needs more than ~15 characters.
    let n = unsafe { libc::snprintf(buf.as_mut_ptr() as *mut libc::c_char, buf.len(), c"%g".as_ptr(), v) };
    if n < 0 {
        return out.write_all(b"?");
    }
    out.write_all(&buf[..(n as usize).min(buf.len() - 1)])
}

/// Writes `s` between double quotes, escaped as babeltrace2 does: `\\`, `\'`, `\"`, `\?`, and
/// control characters as [`write_control`] writes them; everything else (including bytes of
/// invalid UTF-8) is written as is. Stops at the first NUL.
pub(crate) fn write_escaped<W: Write + ?Sized>(out: &mut W, s: &[u8]) -> io::Result<()> {
    out.write_all(b"\"")?;
    let mut run = 0;
    for (i, &c) in s.iter().enumerate() {
        let esc: &[u8] = match c {
            b'\\' => b"\\\\",
            b'\'' => b"\\'",
            b'"' => b"\\\"",
            b'?' => b"\\?",
            0 => {
                out.write_all(&s[run..i])?;
                return out.write_all(b"\"");
            }
            c if is_control(c) => b"",
            _ => continue,
        };
        out.write_all(&s[run..i])?;
        run = i + 1;
        if esc.is_empty() {
            write_control(out, c)?;
        } else {
            out.write_all(esc)?;
        }
    }
    out.write_all(&s[run..])?;
    out.write_all(b"\"")
}

/// Whether `c` is a control byte (C0 or DEL): what a terminal may act on.
fn is_control(c: u8) -> bool {
    c < 32 || c == 127
}

/// Writes the control byte `c` escaped as babeltrace2 does: the C escapes `\a`, `\b`, `\e`,
/// `\f`, `\n`, `\r`, `\t`, `\v`, else `\xNN`.
fn write_control<W: Write + ?Sized>(out: &mut W, c: u8) -> io::Result<()> {
    let esc: &[u8] = match c {
        7 => b"\\a",
        8 => b"\\b",
        27 => b"\\e",
        12 => b"\\f",
        b'\n' => b"\\n",
        b'\r' => b"\\r",
        b'\t' => b"\\t",
        11 => b"\\v",
        _ => {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            return out.write_all(&[b'\\', b'x', HEX[(c >> 4) as usize], HEX[(c & 15) as usize]]);
        }
    };
    out.write_all(esc)
}

/// `s` with its control characters escaped as `print` escapes them in strings (`\e`, `\n`,
/// `\x01`...), for text meant for a terminal: a thread or file name from a trace must not
/// reach it raw (an `ESC ] 0 ; ... BEL` in a name would retitle the window, other sequences do
/// worse). Other characters are kept.
pub fn escape_controls(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.bytes().any(is_control) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = Vec::with_capacity(s.len() + 8);
    for &c in s.as_bytes() {
        if is_control(c) {
            // Writing to a vector cannot fail.
            let _ = write_control(&mut out, c);
        } else {
            out.push(c);
        }
    }
    // Only ASCII bytes were replaced, by ASCII: still UTF-8.
    std::borrow::Cow::Owned(String::from_utf8(out).unwrap_or_default())
}

/// Broken-down time of `secs` (local time, or UTC when `gmt`): (year, month 1-12, day, hour,
/// minute, second).
pub(crate) fn broken_down(secs: i64, gmt: bool) -> Option<(i32, u32, u32, u32, u32, u32)> {
    let t = secs as libc::time_t;
    // SAFETY: `tm` is plain old data, filled by the call.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let r = unsafe {
        if gmt {
            libc::gmtime_r(&t, &mut tm)
        } else {
            libc::localtime_r(&t, &mut tm)
        }
    };
    if r.is_null() {
        return None;
    }
    Some((tm.tm_year + 1900, (tm.tm_mon + 1) as u32, tm.tm_mday as u32, tm.tm_hour as u32, tm.tm_min as u32, tm.tm_sec as u32))
}

extern "C" {
    fn tzset();
}

/// Reads `TZ` (once per process is enough; the printers call it when created).
pub fn init_timezone() {
    // SAFETY: tzset only reads the environment and sets libc's timezone globals.
    unsafe { tzset() }
}

/// The UUID in its canonical lowercase form.
pub(crate) fn write_uuid<W: Write + ?Sized>(out: &mut W, u: &[u8; 16]) -> io::Result<()> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [0u8; 36];
    let mut j = 0;
    for (i, b) in u.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            buf[j] = b'-';
            j += 1;
        }
        buf[j] = HEX[(b >> 4) as usize];
        buf[j + 1] = HEX[(b & 15) as usize];
        j += 2;
    }
    out.write_all(&buf)
}

// ---------------------------------------------------------------------------------------------
// The printer.
// ---------------------------------------------------------------------------------------------

/// Which discarded items a warning is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Discarded {
    /// Events (`events_discarded` went up).
    Events,
    /// Packets (`packet_seq_num` skipped).
    Packets,
}

/// A discarded-items record, as the printers take it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiscardedItems {
    /// Events or packets.
    pub kind: Discarded,
    /// How many.
    pub count: u64,
    /// Whether `count` can be trusted: babeltrace2 does not trust the discarded-events counter
    /// of a stream's first packet (it may count events lost before this recording started)
    /// and says "may have discarded events" without a count.
    pub exact: bool,
    /// Start of the time range (ns from origin), when the stream's packets have both begin
    /// and end times.
    pub begin_ns: Option<i64>,
    /// End of the time range (ns from origin).
    pub end_ns: Option<i64>,
}

const LOG_LEVELS: [&str; 15] = [
    "TRACE_EMERG",
    "TRACE_ALERT",
    "TRACE_CRIT",
    "TRACE_ERR",
    "TRACE_WARNING",
    "TRACE_NOTICE",
    "TRACE_INFO",
    "TRACE_DEBUG_SYSTEM",
    "TRACE_DEBUG_PROGRAM",
    "TRACE_DEBUG_PROCESS",
    "TRACE_DEBUG_MODULE",
    "TRACE_DEBUG_UNIT",
    "TRACE_DEBUG_FUNCTION",
    "TRACE_DEBUG_LINE",
    "TRACE_DEBUG",
];

/// A broken-down time: (year, month, day), hour, minute, second.
struct LocalTime {
    date: (i32, u32, u32),
    h: u32,
    m: u32,
    s: u32,
}

/// Cache of the last broken-down minute, to call `localtime_r` about once a minute.
#[derive(Clone, Copy, Debug)]
struct MinuteCache {
    start: i64,
    gmt: bool,
    date: (i32, u32, u32),
    hm: (u32, u32),
}

/// Formats events like babeltrace2's `sink.text.pretty`. Keeps the state babeltrace2 keeps
/// between events (the previous timestamp for the delta).
pub struct TextPrinter {
    opts: TextOptions,
    layout: Layout,
    st: State,
}

/// What babeltrace2 remembers between lines.
#[derive(Default)]
struct State {
    last_ns: Option<i64>,
    delta_ns: Option<i64>,
    last_cycles: Option<u64>,
    delta_cycles: Option<u64>,
    negative_warned: bool,
    minute: Option<MinuteCache>,
}

/// Per-event printing context for fields.
struct FieldCx<'a> {
    pl: &'a PlanLayout,
    names: bool,
}

impl TextPrinter {
    /// A printer for the traces of `set`, named `names` (see [`trace_names`]).
    pub fn new(set: &TraceSet, names: &[String], opts: TextOptions) -> TextPrinter {
        init_timezone();
        TextPrinter::with_layout(Layout::new(set, names), opts)
    }

    /// A printer over a computed [`Layout`].
    pub fn with_layout(layout: Layout, opts: TextOptions) -> TextPrinter {
        TextPrinter { opts, layout, st: State::default() }
    }

    /// The layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Writes one event line (newline included).
    pub fn write_event(&mut self, out: &mut impl Write, src: Source, ev: &EventView<'_, '_>) -> io::Result<()> {
        let TextPrinter { opts, layout, st } = self;
        st.event(out, opts, layout, src, ev)
    }

    /// Writes babeltrace2's warning line about discarded events or packets of stream `src`
    /// (`WARNING: Tracer discarded N events between [T1] and [T2] in trace ...`).
    pub fn write_discarded(&mut self, out: &mut impl Write, src: Source, d: &DiscardedItems) -> io::Result<()> {
        // Build the line first: a warning printed while formatting its times (negative time)
        // must come before it, as with babeltrace2.
        let mut line = Vec::with_capacity(256);
        let TextPrinter { opts, layout, st } = self;
        st.discarded(&mut line, opts, layout, src, d)?;
        out.write_all(&line)
    }
}

impl State {
    fn event(&mut self, out: &mut impl Write, opts: &TextOptions, layout: &Layout, src: Source, ev: &EventView<'_, '_>) -> io::Result<()> {
        let Some(tl) = layout.traces.get(src.trace) else { return Ok(()) };
        let Some(sl) = tl.streams.get(src.stream) else { return Ok(()) };
        let Some(pl) = tl.plans.get(sl.plan) else { return Ok(()) };
        let pn = opts.names_header;
        let mut start_line = true;

        // Timestamp and delta.
        if let Some(ns) = ev.ns {
            out.write_all(if pn { b"timestamp = " } else { b"[" })?;
            if opts.clock_cycles {
                let cycles = ev.cycles.unwrap_or(0);
                write_u64_pad(out, cycles, 20)?;
                if let Some(last) = self.last_cycles {
                    self.delta_cycles = Some(cycles.wrapping_sub(last));
                }
                self.last_cycles = Some(cycles);
            } else {
                if let Some(last) = self.last_ns {
                    self.delta_ns = Some(ns.wrapping_sub(last));
                }
                self.last_ns = Some(ns);
                self.wall(out, opts, ns)?;
            }
            if !pn {
                out.write_all(b"] ")?;
            }
            if opts.delta {
                out.write_all(if pn { b", delta = " } else { b"(" })?;
                if opts.clock_cycles {
                    match self.delta_cycles {
                        None => out.write_all(b"+????????????")?,
                        Some(d) => {
                            out.write_all(b"+")?;
                            write_u64_pad(out, d, 12)?;
                        }
                    }
                } else {
                    match self.delta_ns {
                        None => out.write_all(b"+?.?????????")?,
                        Some(d) => {
                            let d = d as u64;
                            out.write_all(b"+")?;
                            write_u64(out, d / 1_000_000_000)?;
                            out.write_all(b".")?;
                            write_u64_pad(out, d % 1_000_000_000, 9)?;
                        }
                    }
                }
                if !pn {
                    out.write_all(b") ")?;
                }
            }
            start_line = !pn;
        }

        // Trace name and environment.
        let mut dom_print = false;
        if opts.field_trace {
            if !start_line {
                out.write_all(b", ")?;
            }
            if pn {
                out.write_all(b"trace = ")?;
            }
            out.write_all(tl.name.as_bytes())?;
            if pn {
                out.write_all(b", ")?;
            }
        }
        if opts.field_hostname {
            if let Some(h) = &tl.hostname {
                if !start_line {
                    out.write_all(b", ")?;
                }
                if pn {
                    out.write_all(b"trace:hostname = ")?;
                }
                out.write_all(h.as_bytes())?;
                dom_print = true;
            }
        }
        let class = &ev.class.class;
        let mut dom_field = |out: &mut dyn Write, label: &[u8], body: &dyn Fn(&mut dyn Write) -> io::Result<()>| -> io::Result<()> {
            if !start_line {
                out.write_all(b", ")?;
            }
            if pn {
                out.write_all(label)?;
            } else if dom_print {
                out.write_all(b":")?;
            }
            body(out)?;
            dom_print = true;
            Ok(())
        };
        if opts.field_domain {
            if let Some(d) = &tl.domain {
                dom_field(out, b"trace:domain = ", &|o| o.write_all(d.as_bytes()))?;
            }
        }
        if opts.field_procname {
            if let Some(p) = &tl.procname {
                dom_field(out, b"trace:procname = ", &|o| o.write_all(p.as_bytes()))?;
            }
        }
        if opts.field_vpid {
            if let Some(v) = tl.vpid {
                dom_field(out, b"trace:vpid = ", &|o| {
                    o.write_all(b"(")?;
                    let mut b = StackBuf::<24>::new();
                    let _ = std::fmt::Write::write_fmt(&mut b, format_args!("{v}"));
                    o.write_all(b.bytes())?;
                    o.write_all(b")")
                })?;
            }
        }
        if opts.field_loglevel {
            if let Some(l) = class.loglevel.filter(|l| (0..15).contains(l)) {
                dom_field(out, b"loglevel = ", &|o| {
                    o.write_all(LOG_LEVELS[l as usize].as_bytes())?;
                    o.write_all(b" (")?;
                    let mut b = StackBuf::<24>::new();
                    let _ = std::fmt::Write::write_fmt(&mut b, format_args!("{l}"));
                    o.write_all(b.bytes())?;
                    o.write_all(b")")
                })?;
            }
        }
        if opts.field_emf {
            if let Some(u) = class.model_emf_uri.as_deref().filter(|u| !u.is_empty()) {
                dom_field(out, b"model.emf.uri = ", &|o| o.write_all(u.as_bytes()))?;
            }
        }
        if dom_print && !pn {
            out.write_all(b" ")?;
        }
        if !start_line {
            out.write_all(b", ")?;
        }
        if pn {
            out.write_all(b"name = ")?;
        }
        if class.name.is_empty() {
            out.write_all(b"<unknown>")?;
        } else {
            out.write_all(class.name.as_bytes())?;
        }
        out.write_all(if pn { b", " } else { b": " })?;

        // Scopes.
        let mut start_line = true;
        let (nc, np, ns) = (opts.names_context, opts.names_payload, opts.names_scope);
        let mut cx = FieldCx { pl, names: nc };
        scope(out, &mut cx, ev.packet_context, "stream.packet.context", ns, &mut start_line)?;
        scope(out, &mut cx, ev.common_context, "stream.event.context", ns, &mut start_line)?;
        scope(out, &mut cx, ev.context, "event.context", ns, &mut start_line)?;
        cx.names = np;
        scope(out, &mut cx, ev.payload, "event.fields", ns, &mut start_line)?;
        out.write_all(b"\n")
    }

    /// Writes a time as babeltrace2 does (`HH:MM:SS.NNNNNNNNN`, or per the clock options).
    fn wall(&mut self, out: &mut impl Write, opts: &TextOptions, ns: i64) -> io::Result<()> {
        const NS: i64 = 1_000_000_000;
        let (sec, nsec) = (ns / NS, ns % NS);
        let (neg, sec_abs, nsec_abs): (bool, u64, u64) = if sec >= 0 && nsec >= 0 {
            (false, sec as u64, nsec as u64)
        } else if sec > 0 && nsec < 0 {
            (false, (sec - 1) as u64, (NS + nsec) as u64)
        } else if sec == 0 && nsec < 0 {
            (true, 0, (-nsec) as u64)
        } else if sec < 0 && nsec > 0 {
            (true, (-(sec + 1)) as u64, (NS - nsec) as u64)
        } else if sec < 0 && nsec == 0 {
            (true, sec.unsigned_abs(), 0)
        } else {
            (true, sec.unsigned_abs(), nsec.unsigned_abs())
        };
        if !opts.clock_seconds {
            let fallback = if neg && !self.negative_warned {
                self.negative_warned = true;
                eprintln!("[warning] Fallback to [sec.ns] to print negative time value. Use --clock-seconds.");
                true
            } else {
                false
            };
            if !fallback {
                if let Some(LocalTime { date, h, m, s }) = self.minute_of(opts, sec_abs as i64) {
                    if opts.clock_date {
                        let mut b = StackBuf::<32>::new();
                        let _ = std::fmt::Write::write_fmt(&mut b, format_args!("{}-{:02}-{:02} ", date.0, date.1, date.2));
                        out.write_all(b.bytes())?;
                    }
                    let hms = [
                        b'0' + (h / 10) as u8,
                        b'0' + (h % 10) as u8,
                        b':',
                        b'0' + (m / 10) as u8,
                        b'0' + (m % 10) as u8,
                        b':',
                        b'0' + (s / 10) as u8,
                        b'0' + (s % 10) as u8,
                        b'.',
                    ];
                    out.write_all(&hms)?;
                    return write_u64_pad(out, nsec_abs, 9);
                }
                eprintln!("[warning] Unable to get localtime.");
            }
        }
        if neg {
            out.write_all(b"-")?;
        }
        write_u64(out, sec_abs)?;
        out.write_all(b".")?;
        write_u64_pad(out, nsec_abs, 9)
    }

    /// Local (or UTC) date, hour, minute and second of `secs`, with a one-minute cache.
    fn minute_of(&mut self, opts: &TextOptions, secs: i64) -> Option<LocalTime> {
        let gmt = opts.clock_gmt;
        if let Some(c) = self.minute {
            if c.gmt == gmt && secs >= c.start && secs < c.start + 60 {
                return Some(LocalTime { date: c.date, h: c.hm.0, m: c.hm.1, s: (secs - c.start) as u32 });
            }
        }
        let (y, mo, d, h, mi, s) = broken_down(secs, gmt)?;
        if s < 60 {
            self.minute = Some(MinuteCache { start: secs - s as i64, gmt, date: (y, mo, d), hm: (h, mi) });
        }
        Some(LocalTime { date: (y, mo, d), h, m: mi, s })
    }

}

impl State {

    fn discarded(&mut self, out: &mut impl Write, opts: &TextOptions, layout: &Layout, src: Source, d: &DiscardedItems) -> io::Result<()> {
        let (kind, count, begin_ns, end_ns) = (d.kind, d.exact.then_some(d.count), d.begin_ns, d.end_ns);
        let Some(tl) = layout.traces.get(src.trace) else { return Ok(()) };
        let Some(sl) = tl.streams.get(src.stream) else { return Ok(()) };
        let elem: &[u8] = match kind {
            Discarded::Events => b"event",
            Discarded::Packets => b"packet",
        };
        match count {
            None => {
                out.write_all(b"WARNING: Tracer may have discarded ")?;
                out.write_all(elem)?;
                out.write_all(b"s")?;
            }
            Some(count) => {
                out.write_all(b"WARNING: Tracer discarded ")?;
                write_u64(out, count)?;
                out.write_all(b" ")?;
                out.write_all(elem)?;
                if count != 1 {
                    out.write_all(b"s")?;
                }
            }
        }
        out.write_all(b" ")?;
        match (begin_ns, end_ns) {
            (Some(b), Some(e)) => {
                out.write_all(b"between [")?;
                self.wall(out, opts, b)?;
                out.write_all(b"] and [")?;
                self.wall(out, opts, e)?;
                out.write_all(b"]")?;
            }
            _ => out.write_all(b"(unknown time range)")?,
        }
        out.write_all(b" in trace \"")?;
        out.write_all(tl.name.as_bytes())?;
        out.write_all(b"\" ")?;
        match &tl.uuid {
            Some(u) => {
                out.write_all(b"(UUID: ")?;
                write_uuid(out, u)?;
                out.write_all(b") ")?;
            }
            None => out.write_all(b"(no UUID) ")?,
        }
        out.write_all(b"within stream \"")?;
        out.write_all(sl.path.as_bytes())?;
        out.write_all(b"\" (stream class ID: ")?;
        write_u64(out, sl.class_id)?;
        out.write_all(b", stream ID: ")?;
        write_u64(out, sl.id)?;
        out.write_all(b").\n")
    }
}

fn scope<W: Write + ?Sized>(out: &mut W, cx: &mut FieldCx<'_>, fields: Fields<'_, '_>, scope: &str, names_scope: bool, start_line: &mut bool) -> io::Result<()> {
    let Some(root) = fields.root() else { return Ok(()) };
    if !cx.pl.is_visible(root.node) {
        return Ok(());
    }
    if !*start_line {
        out.write_all(b", ")?;
    }
    *start_line = false;
    if names_scope {
        out.write_all(scope.as_bytes())?;
        out.write_all(b" = ")?;
    }
    write_field(out, cx, fields, 0)
}

/// Writes the field at `at` of `fields` and its descendants.
fn write_field<W: Write + ?Sized>(out: &mut W, cx: &mut FieldCx<'_>, fields: Fields<'_, '_>, at: usize) -> io::Result<()> {
    let f = &fields.list[at];
    let (pl, names) = (cx.pl, cx.names);
    match f.value {
        Value::Compound { .. } => match &f.node.kind {
            NodeKind::Struct { .. } => {
                out.write_all(b"{")?;
                let mut first = true;
                for (i, c) in fields.children(at) {
                    if !pl.is_visible(c.node) {
                        continue;
                    }
                    out.write_all(if first { b" " } else { b", " })?;
                    first = false;
                    if names {
                        out.write_all(c.node.name().as_bytes())?;
                        out.write_all(b" = ")?;
                    }
                    write_field(out, cx, fields, i)?;
                }
                out.write_all(b" }")
            }
            NodeKind::Variant { .. } => {
                out.write_all(b"{ ")?;
                if let Some((i, _)) = fields.children(at).next() {
                    write_field(out, cx, fields, i)?;
                }
                out.write_all(b" }")
            }
            _ => {
                out.write_all(b"[")?;
                for (n, (i, _)) in fields.children(at).enumerate() {
                    out.write_all(if n == 0 { b" " } else { b", " })?;
                    if names {
                        out.write_all(b"[")?;
                        write_u64(out, n as u64)?;
                        out.write_all(b"] = ")?;
                    }
                    write_field(out, cx, fields, i)?;
                }
                out.write_all(b" ]")
            }
        },
        Value::Unsigned(_) | Value::Signed(_) => {
            let NodeKind::Int(int) = &f.node.kind else {
                return write_int(out, f.value, 64, DisplayBase::Decimal);
            };
            match &int.enumeration {
                None => write_int(out, f.value, int.size, int.base),
                Some(e) => {
                    out.write_all(b"( ")?;
                    let v: i128 = match f.value {
                        Value::Unsigned(u) => u as i128,
                        Value::Signed(s) => s as i128,
                        _ => 0,
                    };
                    let mut n = 0;
                    match pl.index(f.node).and_then(|i| pl.grouped_enums.get(&i)) {
                        Some(groups) => {
                            for g in groups {
                                if g.ranges.iter().any(|&(lo, hi)| lo <= v && v <= hi) {
                                    if n > 0 {
                                        out.write_all(b", ")?;
                                    }
                                    n += 1;
                                    write_escaped(out, g.label.as_bytes())?;
                                }
                            }
                        }
                        None => {
                            for m in &e.mappings {
                                if m.lower <= v && v <= m.upper {
                                    if n > 0 {
                                        out.write_all(b", ")?;
                                    }
                                    n += 1;
                                    write_escaped(out, m.label.as_bytes())?;
                                }
                            }
                        }
                    }
                    if n == 0 {
                        out.write_all(b"<unknown>")?;
                    }
                    out.write_all(b" : container = ")?;
                    write_int(out, f.value, int.size, int.base)?;
                    out.write_all(b" )")
                }
            }
        }
        Value::Float(v) => write_g(out, v),
        Value::Str(_) => write_escaped(out, f.as_bytes().unwrap_or(b"")),
        Value::BigInt(bytes) => {
            out.write_all(b"0x")?;
            let mut any = false;
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            for &b in bytes {
                if !any && b == 0 {
                    continue;
                }
                if !any && b < 16 {
                    out.write_all(&[HEX[b as usize]])?;
                } else {
                    out.write_all(&[HEX[(b >> 4) as usize], HEX[(b & 15) as usize]])?;
                }
                any = true;
            }
            if !any {
                out.write_all(b"0")?;
            }
            Ok(())
        }
    }
}

/// Writes an integer of `size` bits in `base` exactly like babeltrace2's `print_integer`.
fn write_int<W: Write + ?Sized>(out: &mut W, value: Value<'_>, size: u32, base: DisplayBase) -> io::Result<()> {
    let (mut u, signed) = match value {
        Value::Unsigned(u) => (u, false),
        Value::Signed(s) => (s as u64, true),
        _ => (0, false),
    };
    let len = size.clamp(1, 64);
    match base {
        DisplayBase::Binary => {
            out.write_all(b"0b")?;
            let mut buf = [0u8; 64];
            for (bit, slot) in buf[..len as usize].iter_mut().enumerate() {
                let shift = len - 1 - bit as u32;
                *slot = if (u >> shift) & 1 == 1 { b'1' } else { b'0' };
            }
            out.write_all(&buf[..len as usize])
        }
        DisplayBase::Octal => {
            if signed && len < 64 {
                let rounded = ((len - 1) / 3 + 1) * 3;
                if rounded < 64 {
                    u &= (1u64 << rounded) - 1;
                }
            }
            out.write_all(b"0")?;
            if u == 0 {
                return out.write_all(b"0");
            }
            write_radix(out, u, 3, false)
        }
        DisplayBase::Decimal => {
            if signed {
                write_i64(out, u as i64)
            } else {
                write_u64(out, u)
            }
        }
        DisplayBase::Hexadecimal => {
            if len < 64 {
                let rounded = (len + 3) & !3;
                // babeltrace2 computes `(1 << rounded) - 1`; for rounded == 64 the shift count
                // wraps on x86-64, which gives a mask of 0.
                let mask = if rounded >= 64 { 0 } else { (1u64 << rounded) - 1 };
                u &= mask;
            }
            out.write_all(b"0x")?;
            write_radix(out, u, 4, true)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(f: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> String {
        let mut v = Vec::new();
        f(&mut v).unwrap();
        String::from_utf8_lossy(&v).into_owned()
    }

    #[test]
    fn g_format() {
        assert_eq!(s(|o| write_g(o, 2.0)), "2");
        assert_eq!(s(|o| write_g(o, 1.5)), "1.5");
        assert_eq!(s(|o| write_g(o, 2222.0)), "2222");
        assert_eq!(s(|o| write_g(o, 1e10)), "1e+10");
        assert_eq!(s(|o| write_g(o, 0.0001)), "0.0001");
        assert_eq!(s(|o| write_g(o, 0.00001)), "1e-05");
        assert_eq!(s(|o| write_g(o, -0.0)), "-0");
        assert_eq!(s(|o| write_g(o, f64::INFINITY)), "inf");
        assert_eq!(s(|o| write_g(o, f64::NEG_INFINITY)), "-inf");
        assert_eq!(s(|o| write_g(o, f64::NAN)), "nan");
        assert_eq!(s(|o| write_g(o, 1.234567891)), "1.23457");
        assert_eq!(s(|o| write_g(o, 123456789.0)), "1.23457e+08");
        assert_eq!(s(|o| write_g(o, 1e-40)), "1e-40");
    }

    #[test]
    fn escapes() {
        assert_eq!(s(|o| write_escaped(o, b"a\\b'c\"d?e\nf\x01\x7f\xff")), "\"a\\\\b\\'c\\\"d\\?e\\nf\\x01\\x7f\u{fffd}\"");
        assert_eq!(s(|o| write_escaped(o, b"ab\0cd")), "\"ab\"");
        assert_eq!(escape_controls("plain"), "plain");
        assert_eq!(escape_controls("a\u{1b}]0;x\u{7}b\u{0}\u{7f}é"), "a\\e]0;x\\ab\\x00\\x7fé");
    }

    #[test]
    fn ints() {
        assert_eq!(s(|o| write_int(o, Value::Unsigned(0x32), 32, DisplayBase::Hexadecimal)), "0x32");
        assert_eq!(s(|o| write_int(o, Value::Signed(-1), 8, DisplayBase::Hexadecimal)), "0xFF");
        assert_eq!(s(|o| write_int(o, Value::Signed(-1), 64, DisplayBase::Hexadecimal)), "0xFFFFFFFFFFFFFFFF");
        assert_eq!(s(|o| write_int(o, Value::Signed(-1), 8, DisplayBase::Octal)), "0777");
        assert_eq!(s(|o| write_int(o, Value::Unsigned(0), 8, DisplayBase::Octal)), "00");
        assert_eq!(s(|o| write_int(o, Value::Unsigned(5), 4, DisplayBase::Binary)), "0b0101");
        assert_eq!(s(|o| write_int(o, Value::Signed(-5), 32, DisplayBase::Decimal)), "-5");
        assert_eq!(s(|o| write_int(o, Value::Unsigned(u64::MAX), 64, DisplayBase::Decimal)), "18446744073709551615");
    }

    #[test]
    fn names_and_fields() {
        let mut o = TextOptions::default();
        o.set_names("payload").unwrap();
        assert!(o.names_payload && !o.names_context && !o.names_header && !o.names_scope);
        let mut o = TextOptions::default();
        o.set_names("all").unwrap();
        assert!(o.names_payload && o.names_context && o.names_header && o.names_scope);
        assert!(TextOptions::default().set_names("all,none").is_err());
        let mut o = TextOptions::default();
        o.set_fields("trace:domain").unwrap();
        assert!(o.field_domain && !o.field_hostname && !o.field_procname);
    }
}
