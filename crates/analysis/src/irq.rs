//! `irq`: hard IRQ handler durations per IRQ line, soft IRQ handler durations and raise
//! latencies per vector, as lttng-irqstats computes them, in parallel.
//!
//! # Semantics (lttng-analyses')
//!
//! Per CPU: `irq_handler_entry` makes its IRQ the CPU's current one (replacing any); an
//! `irq_handler_exit` of the current IRQ ends it (duration = exit − entry), an exit of another
//! IRQ just forgets the current one. Per CPU and soft IRQ vector, a queue: `softirq_raise`
//! queues a raise unless one is waiting (a raise while the handler runs is queued behind it);
//! `softirq_entry` starts the first queued one (or an unraised one); `softirq_exit` ends the
//! first (duration = exit − entry; raise latency = entry − raise when it was raised). Both the
//! LTTng 2.8+ names (`irq_softirq_entry`, ...) and the older ones (`softirq_entry`) count.
//! A handler counts when it ends within `--begin`/`--end`, on a `--cpu` CPU.
//!
//! # Chunks
//!
//! These machines are per CPU, and a CPU's events are in one stream, whose chunks are merged in
//! stream order. A chunk runs them from the empty state (no handler running, nothing raised) and
//! counts what it sees, provisionally, keeping its raw IRQ events. At the merge, the earlier
//! state's machines for that CPU are known exactly: when they are empty (the chunk did not start
//! inside a handler or after a pending raise — almost always) the provisional counts are exact;
//! otherwise the chunk's events of that CPU are replayed from the true state. Either way the
//! counts equal a serial reading's, and durations are kept as exact integer sums.

use std::collections::hash_map::Entry as MapEntry;
use std::collections::BTreeMap;

use serde::Serialize;
use tracelens_ctf::EventView;
use tracelens_trace::TraceSet;

use crate::durations::Durations;
use crate::engine::{Analysis, Chunk, Context};
use crate::filter::Filter;
use crate::id_map::IdMap;
use crate::kernel::{softirq, KernelMap, Kind, Kinds, What};
use crate::order::{EventCounter, EventKey, StreamCpu};
use crate::span::Span;

/// One IRQ event of a CPU, as the machines read it.
#[derive(Clone, Copy, Debug)]
enum Ev {
    HardEntry(i64),
    HardExit(i64),
    Raise(u32),
    SoftEntry(u32),
    SoftExit(u32),
}

/// A queued soft IRQ: when it was raised and when its handler started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Soft {
    raise: Option<i64>,
    begin: Option<i64>,
}

/// The IRQ state of one CPU.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Machines {
    /// The hard IRQ running and since when.
    hard: Option<(i64, i64)>,
    /// Per vector, the queue (empty queues are removed).
    soft: Vec<(u32, Vec<Soft>)>,
}

/// What the machines count.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Counts {
    hard: BTreeMap<i64, Durations>,
    soft: BTreeMap<u32, (Durations, Durations)>,
}

impl Counts {
    fn merge(&mut self, o: Counts) {
        for (k, v) in o.hard {
            self.hard.entry(k).or_default().merge(&v);
        }
        for (k, (d, r)) in o.soft {
            let e = self.soft.entry(k).or_default();
            e.0.merge(&d);
            e.1.merge(&r);
        }
    }
}

impl Machines {
    fn is_empty(&self) -> bool {
        self.hard.is_none() && self.soft.is_empty()
    }

    /// One event at `ns` on `cpu`; what ends is counted in `out` when `filter` selects it.
    #[inline]
    fn step(&mut self, ev: Ev, ns: i64, cpu: u32, filter: &Filter, out: &mut Counts) {
        let counted = |filter: &Filter| filter.time(ns) && filter.cpu(cpu);
        match ev {
            Ev::HardEntry(irq) => self.hard = Some((irq, ns)),
            Ev::HardExit(irq) => {
                if let Some((cur, begin)) = self.hard.take() {
                    if cur == irq && counted(filter) {
                        out.hard.entry(irq).or_default().add(ns - begin);
                    }
                }
            }
            Ev::Raise(vec) => {
                let q = self.queue(vec);
                if q.first().is_some_and(|s| s.begin.is_none()) {
                    return;
                }
                q.push(Soft { raise: Some(ns), begin: None });
            }
            Ev::SoftEntry(vec) => {
                let q = self.queue(vec);
                match q.first_mut() {
                    Some(s) => s.begin = Some(ns),
                    None => q.push(Soft { raise: None, begin: Some(ns) }),
                }
            }
            Ev::SoftExit(vec) => {
                let Some(i) = self.soft.iter().position(|(v, _)| *v == vec) else { return };
                let q = &mut self.soft[i].1;
                if q.is_empty() {
                    return;
                }
                let s = q.remove(0);
                if q.is_empty() {
                    self.soft.swap_remove(i);
                }
                // lttng-analyses fails on a raised soft IRQ that exits without an entry; such a
                // one is not counted here.
                if let (Some(begin), true) = (s.begin, counted(filter)) {
                    let e = out.soft.entry(vec).or_default();
                    e.0.add(ns - begin);
                    if let Some(r) = s.raise {
                        e.1.add(begin - r);
                    }
                }
            }
        }
    }

    fn queue(&mut self, vec: u32) -> &mut Vec<Soft> {
        let i = match self.soft.iter().position(|(v, _)| *v == vec) {
            Some(i) => i,
            None => {
                self.soft.push((vec, Vec::new()));
                self.soft.len() - 1
            }
        };
        &mut self.soft[i].1
    }
}

/// What a run of chunks knows of one CPU.
#[derive(Clone, Debug, Default)]
struct CpuIrqs {
    cpu: u32,
    /// The machines after the run's events, run from the empty state (exact in a root run).
    state: Machines,
    /// What that run counted (provisional outside a root run).
    counts: Counts,
    /// The run's events (outside a root run: to replay from the true state).
    raw: Vec<(Ev, i64)>,
}

/// The `irq` analysis (lttng-irqstats). Build it with [`Irq::new`].
#[derive(Debug)]
pub struct Irq {
    map: KernelMap,
    filter: Filter,
}

impl Irq {
    /// The analysis for `set`, counting the handlers that `filter` selects (time range of their
    /// end, CPUs; thread filters do not apply to interrupts).
    pub fn new(set: &TraceSet, filter: Filter) -> Irq {
        Irq { map: KernelMap::new(set), filter }
    }
}

/// What `irq` accumulates for a run of chunks.
#[derive(Debug, Default)]
pub struct IrqState {
    live: bool,
    root: bool,
    counter: EventCounter,
    cpus: IdMap<StreamCpu, CpuIrqs>,
    /// Exact counts (root run).
    counts: Counts,
    /// Per IRQ line, each handler name with its first `irq_handler_entry`.
    names: BTreeMap<i64, BTreeMap<String, EventKey>>,
    span: Span,
}

/// Statistics of one hard IRQ line; serialized as `{"irq", "name", ...Durations}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HardIrqStats {
    /// The IRQ number.
    pub irq: i64,
    /// Its handler names, in order of first appearance, joined with `, `.
    pub name: String,
    /// Handler durations.
    #[serde(flatten)]
    pub durations: Durations,
}

/// Statistics of one soft IRQ vector; serialized as `{"vec", "name", ...Durations,
/// "raise_latency": Durations}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SoftIrqStats {
    /// The vector.
    pub vec: u32,
    /// Its name (`NET_RX_SOFTIRQ`...).
    pub name: String,
    /// Handler durations.
    #[serde(flatten)]
    pub durations: Durations,
    /// Raise to entry latencies (handlers that were raised).
    #[serde(rename = "raise_latency")]
    pub raise_latencies: Durations,
}

/// The result of `irq`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IrqReport {
    /// First and last kernel event times read (ns from the clock's origin).
    pub begin_ns: Option<i64>,
    /// See `begin_ns`.
    pub end_ns: Option<i64>,
    /// Hard IRQs with at least one handler counted, by number.
    pub hard: Vec<HardIrqStats>,
    /// Soft IRQs with at least one handler counted, by vector.
    pub soft: Vec<SoftIrqStats>,
}

impl IrqState {
    /// Runs `cpu`'s machines over `raw` from `state`, counting into `out`.
    fn replay(state: &mut Machines, raw: &[(Ev, i64)], cpu: u32, filter: &Filter, out: &mut Counts) {
        for &(ev, ns) in raw {
            state.step(ev, ns, cpu, filter, out);
        }
    }
}

impl Analysis for Irq {
    type State = IrqState;
    type Output = IrqReport;

    fn new_state(&self, chunk: &Chunk) -> IrqState {
        IrqState { live: true, root: chunk.index == 0, ..IrqState::default() }
    }

    #[inline]
    fn on_event(&self, st: &mut IrqState, ev: &EventView<'_, '_>, cx: &Context<'_, '_>) {
        const WANT: Kinds = Kinds::of(&[What::IrqEntry, What::IrqExit, What::SoftirqRaise, What::SoftirqEntry, What::SoftirqExit]);
        let Some(k) = self.map.decode_only(ev, cx, WANT) else { return };
        if !st.span.read(&self.filter, k.ns) {
            return;
        }
        let e = match k.kind {
            Kind::IrqHandlerEntry { irq, name } => {
                let key = st.counter.key(k.ns, cx);
                let name = String::from_utf8_lossy(name);
                let names = st.names.entry(irq).or_default();
                match names.get_mut(name.as_ref()) {
                    Some(first) => *first = (*first).min(key),
                    None => {
                        names.insert(name.into_owned(), key);
                    }
                }
                Ev::HardEntry(irq)
            }
            Kind::IrqHandlerExit { irq, .. } => Ev::HardExit(irq),
            Kind::SoftirqRaise { vec } => Ev::Raise(vec),
            Kind::SoftirqEntry { vec } => Ev::SoftEntry(vec),
            Kind::SoftirqExit { vec } => Ev::SoftExit(vec),
            _ => return,
        };
        let root = st.root;
        let c = st.cpus.entry(StreamCpu::new(cx, k.cpu)).or_insert_with(|| CpuIrqs { cpu: k.cpu, ..CpuIrqs::default() });
        if root {
            c.state.step(e, k.ns, k.cpu, &self.filter, &mut st.counts);
        } else {
            c.state.step(e, k.ns, k.cpu, &self.filter, &mut c.counts);
            c.raw.push((e, k.ns));
        }
    }

    fn merge(&self, mut a: IrqState, b: IrqState) -> IrqState {
        if !b.live {
            return a;
        }
        if !a.live {
            return b;
        }
        for (key, mut lc) in b.cpus {
            match a.cpus.entry(key) {
                MapEntry::Vacant(v) => {
                    if a.root {
                        // Nothing before on this CPU: the run started from the empty state.
                        a.counts.merge(std::mem::take(&mut lc.counts));
                        lc.raw = Vec::new();
                    }
                    v.insert(lc);
                }
                MapEntry::Occupied(mut o) => {
                    let ec = o.get_mut();
                    let out = if a.root { &mut a.counts } else { &mut ec.counts };
                    if ec.state.is_empty() {
                        out.merge(lc.counts);
                        ec.state = lc.state;
                    } else {
                        IrqState::replay(&mut ec.state, &lc.raw, lc.cpu, &self.filter, out);
                    }
                    if !a.root {
                        ec.raw.append(&mut lc.raw);
                    }
                }
            }
        }
        a.counts.merge(b.counts);
        for (irq, names) in b.names {
            let e = a.names.entry(irq).or_default();
            for (n, k) in names {
                let v = e.entry(n).or_insert(k);
                *v = (*v).min(k);
            }
        }
        a.span.merge(b.span);
        a
    }

    fn finish(&self, mut st: IrqState) -> IrqReport {
        if !st.root {
            // Not a whole trace (or no chunk at all): what is provisional is all there is.
            for (_, c) in st.cpus.drain() {
                st.counts.merge(c.counts);
            }
        }
        let hard = st
            .counts
            .hard
            .into_iter()
            .filter(|(_, d)| d.count > 0)
            .map(|(irq, durations)| {
                let mut names: Vec<(EventKey, String)> = st.names.remove(&irq).unwrap_or_default().into_iter().map(|(n, k)| (k, n)).collect();
                names.sort();
                let name = if names.is_empty() { "unknown".to_string() } else { names.into_iter().map(|(_, n)| n).collect::<Vec<_>>().join(", ") };
                HardIrqStats { irq, name, durations }
            })
            .collect();
        let soft = st
            .counts
            .soft
            .into_iter()
            .filter(|(_, (d, _))| d.count > 0)
            .map(|(vec, (durations, raise_latencies))| SoftIrqStats {
                vec,
                name: softirq::name(vec).map_or_else(|| format!("SOFTIRQ_{vec}"), |s| format!("{s}_SOFTIRQ")),
                durations,
                raise_latencies,
            })
            .collect();
        IrqReport { begin_ns: st.span.begin, end_ns: st.span.end, hard, soft }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_is_associative() {
        crate::testing::check("irq", |set| Irq::new(set, Filter::default()));
    }
}
