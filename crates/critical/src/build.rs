//! Building the [`ExecutionGraph`] with the parallel engine.
//!
//! Each chunk (a run of packets of one CPU's stream) turns its kernel events into compact
//! records: context switches, wake-ups, forks and exits, interrupt and soft IRQ entries and
//! exits, timer expiries, block request issues and completions, packet receptions, lost
//! events — and, for the other events that name their thread (`tid` context), one record per
//! run of events of the same thread within a packet (the thread's *evidence* that it runs).
//! What a chunk cannot know — which thread runs on its CPU at its start, in which interrupt
//! its first events are, which thread a wake-up on another CPU woke — it does not try to:
//! its records are the unresolved fragments of *Parallel trace analysis* (2019), section 4.2.
//!
//! States are merged in time order (the engine's pipelined merge). A state that covers every
//! chunk from the first one on holds the builder (`graph.rs`): each merge replays, in the trace's total
//! order of events ([`EventKey`]: time, then stream and position), every record earlier than
//! the start of the last chunk merged — no later chunk can hold an earlier event — so the
//! replay runs while later chunks are read, and the records of a chunk live only until then.
//! Since records are made per packet and replayed in one total order, the graph is the same
//! for any number of threads and any chunk size.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Mutex, PoisonError};

use tracelens_analysis::kernel::{Comm, IdMap, KernelMap, Kind, Kinds};
use tracelens_analysis::{Analysis, Chunk, Context, DiscardedItems, EventCounter, EventKey};
use tracelens_ctf::EventView;
use tracelens_trace::TraceSet;

use crate::graph::{Builder, Device, ExecutionGraph, Vector};

/// Which wake-up event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WakeEvent {
    /// `sched_waking` (in the waker's context).
    Waking,
    /// `sched_wakeup` (on some kernels in the woken thread's CPU's context).
    Wakeup,
    /// `sched_wakeup_new` (a new thread).
    New,
}

/// What a record says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum What {
    Switch { prev: i64, next: i64, prev_state: i64 },
    Waking { tid: i64, how: WakeEvent },
    Fork { parent: i64, child: i64 },
    Exit { tid: i64 },
    /// The state dump says the thread sleeps (LTTng status 5, `WAIT`).
    Asleep { tid: i64 },
    IrqEntry { irq: i32, device: Device },
    IrqExit { irq: i32 },
    SoftirqRaise { vec: u32 },
    SoftirqEntry { vec: u32 },
    SoftirqExit { vec: u32 },
    HrtimerEntry,
    HrtimerExit,
    VectorEntry(Vector),
    VectorExit(Vector),
    BlockIssue { dev: u64, sector: u64 },
    BlockComplete { dev: u64, sector: u64 },
    NetReceive,
    /// The record's thread ran from the record's time to `last_ns` (events of its own, within
    /// one packet); `syscall`: the first was a system call event (so outside interrupts).
    Evidence { last_ns: i64, syscall: bool },
    /// Events were lost on the CPU before this point.
    Lost,
}

/// One record: where it stands in the trace's order, its CPU, the thread whose context the
/// event gives (`tid` context), and what it says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rec {
    pub(crate) key: EventKey,
    pub(crate) cpu: u32,
    pub(crate) tid: Option<i64>,
    pub(crate) what: What,
}

/// A run of evidence not yet written as a record.
#[derive(Clone, Copy, Debug)]
struct Pending {
    key: EventKey,
    cpu: u32,
    tid: i64,
    packet: usize,
    last_ns: i64,
    syscall: bool,
}

/// Sets `map[id]` to `value` seen at `key`, unless what it holds was seen later.
fn keep_latest<T>(map: &mut IdMap<i64, (EventKey, T)>, id: i64, key: EventKey, value: T) {
    match map.get_mut(&id) {
        Some(e) if e.0 >= key => {}
        Some(e) => *e = (key, value),
        None => {
            map.insert(id, (key, value));
        }
    }
}

/// Whether the event class `name` is a system call entry or exit (in any of the namings
/// [`KernelMap`] reads).
fn is_syscall(name: &str) -> bool {
    let base = name.strip_prefix("compat_").unwrap_or(name);
    base.starts_with("syscall_") || base.starts_with("sys_") || name == "exit_syscall" || name.starts_with("raw_syscalls:") || name.starts_with("syscalls:")
}

/// Whether an event of this kind is a record of its own (others only tell, by their `tid`
/// context, which thread runs).
fn makes_record(kind: &Kind<'_>) -> bool {
    matches!(
        kind,
        Kind::SchedSwitch { .. }
            | Kind::SchedWaking { .. }
            | Kind::SchedWakeup { .. }
            | Kind::SchedWakeupNew { .. }
            | Kind::ProcessFork { .. }
            | Kind::ProcessExit { .. }
            | Kind::StatedumpProcess { .. }
            | Kind::IrqHandlerEntry { .. }
            | Kind::IrqHandlerExit { .. }
            | Kind::SoftirqRaise { .. }
            | Kind::SoftirqEntry { .. }
            | Kind::SoftirqExit { .. }
            | Kind::HrtimerExpireEntry { .. }
            | Kind::HrtimerExpireExit { .. }
            | Kind::IrqVectorEntry { .. }
            | Kind::IrqVectorExit { .. }
            | Kind::BlockRqIssue { .. }
            | Kind::BlockRqComplete { .. }
            | Kind::NetifReceiveSkb { .. }
    )
}

/// LTTng's state-dump status of a sleeping thread (`LTTNG_WAIT`).
const STATEDUMP_WAIT: i64 = 5;

/// The state of a run of chunks: records not replayed yet, and, from the first chunk on, the
/// replay (see [`GraphAnalysis`]).
#[derive(Debug, Default)]
pub struct GraphState {
    /// The replay, in states that cover the first chunk.
    builder: Option<Box<Builder>>,
    /// Records not replayed yet, each run in key order.
    runs: Vec<Run>,
    /// The latest name of each thread, by key.
    names: IdMap<i64, (EventKey, Comm)>,
    /// The latest name of each IRQ line, by key.
    irq_names: IdMap<i64, (EventKey, String)>,
    /// The start time of the last chunk covered.
    bound: Option<i64>,
    span: Option<(i64, i64)>,
    lost: u64,
    // While reading a chunk:
    recs: Vec<Rec>,
    counter: EventCounter,
    pending: Option<Pending>,
    /// Lost events reported in this packet (and the packet's end time), to be placed at
    /// its next event.
    lost_at: Option<(usize, Option<i64>)>,
}

/// A sorted run of records and how far it was replayed.
#[derive(Debug, Default)]
struct Run {
    recs: Vec<Rec>,
    at: usize,
}

/// The analysis that builds the [`ExecutionGraph`] of a trace set (run it with
/// [`tracelens_analysis::Engine::run`]).
///
/// Each chunk turns its events into compact records; states merged in time order replay, in
/// the trace's total order of events, every record earlier than the start of the last chunk
/// merged (no later chunk can hold an earlier one), so the graph is the same for any number
/// of threads and any chunk size.
#[derive(Debug)]
pub struct GraphAnalysis {
    map: KernelMap,
    has_waking: bool,
    /// Record buffers of replayed chunks, for later chunks: reused memory instead of fresh
    /// pages (which the kernel zeroes) for every chunk.
    spare: Mutex<Vec<Vec<Rec>>>,
}

/// Record buffers kept for reuse at most.
const SPARE: usize = 16;

impl Clone for GraphAnalysis {
    fn clone(&self) -> Self {
        GraphAnalysis { map: self.map.clone(), has_waking: self.has_waking, spare: Mutex::new(Vec::new()) }
    }
}

impl GraphAnalysis {
    /// The analysis of `set`.
    pub fn new(set: &TraceSet) -> GraphAnalysis {
        let has_waking = set.traces.iter().any(|t| t.class.streams.iter().any(|s| s.events.iter().any(|e| matches!(e.name.as_str(), "sched_waking" | "sched:sched_waking"))));
        GraphAnalysis { map: KernelMap::new(set), has_waking, spare: Mutex::new(Vec::new()) }
    }

    /// An empty record buffer with room for `n`, reused when one is spare.
    fn take(&self, n: usize) -> Vec<Rec> {
        let mut v = self.spare.lock().unwrap_or_else(PoisonError::into_inner).pop().unwrap_or_default();
        v.reserve(n);
        v
    }

    /// Keeps the buffers of replayed runs for [`take`](Self::take).
    fn give(&self, runs: &mut Vec<Run>) {
        let mut spare = self.spare.lock().unwrap_or_else(PoisonError::into_inner);
        runs.retain_mut(|r| {
            if r.at < r.recs.len() {
                return true;
            }
            if spare.len() < SPARE {
                let mut v = std::mem::take(&mut r.recs);
                v.clear();
                spare.push(v);
            }
            false
        });
    }
}

impl GraphState {
    /// Writes the pending evidence as a record.
    fn flush(&mut self) {
        if let Some(p) = self.pending.take() {
            self.recs.push(Rec { key: p.key, cpu: p.cpu, tid: Some(p.tid), what: What::Evidence { last_ns: p.last_ns, syscall: p.syscall } });
        }
    }

    /// Writes lost events reported in a packet that has no event after them, at the packet's
    /// end, CPU unknown.
    fn lost_at_end(&mut self) {
        if let Some((_, end)) = self.lost_at.take() {
            self.flush();
            if let Some(ns) = end {
                let key = EventKey { ns, stream: u64::MAX, pos: u64::MAX };
                self.recs.push(Rec { key, cpu: u32::MAX, tid: None, what: What::Lost });
            }
        }
    }

    fn name(&mut self, key: EventKey, tid: i64, comm: &[u8]) {
        if tid == 0 || comm.is_empty() {
            return;
        }
        match self.names.get_mut(&tid) {
            Some((k, c)) => {
                if key > *k {
                    *k = key;
                    if c.as_bytes() != comm {
                        *c = Comm::new(comm);
                    }
                }
            }
            None => {
                self.names.insert(tid, (key, Comm::new(comm)));
            }
        }
    }

    /// Replays, in key order, the records of `self.runs` earlier than `below` (all of them
    /// when `None`).
    fn drain(&mut self, below: Option<i64>) {
        let Some(builder) = self.builder.as_mut() else { return };
        let open = |r: &Run| r.recs.get(r.at).filter(|x| below.is_none_or(|b| x.key.ns < b)).map(|x| x.key);
        let mut heap: BinaryHeap<Reverse<(EventKey, usize)>> = self.runs.iter().enumerate().filter_map(|(i, r)| open(r).map(|k| Reverse((k, i)))).collect();
        while let Some(Reverse((_, i))) = heap.pop() {
            let run = &mut self.runs[i];
            // Take every record of this run up to the next run's first key.
            let limit = heap.peek().map(|Reverse((k, _))| *k);
            while let Some(r) = run.recs.get(run.at) {
                if below.is_some_and(|b| r.key.ns >= b) || limit.is_some_and(|l| r.key > l) {
                    break;
                }
                builder.apply(r);
                run.at += 1;
            }
            if let Some(k) = open(run) {
                heap.push(Reverse((k, i)));
            }
        }
    }
}

impl Analysis for GraphAnalysis {
    type State = GraphState;
    type Output = ExecutionGraph;

    fn new_state(&self, chunk: &Chunk) -> GraphState {
        GraphState {
            builder: (chunk.index == 0).then(|| Box::new(Builder::new(self.has_waking))),
            bound: chunk.begin_ns,
            // About one record per 80 bytes of an LTTng kernel trace's packets.
            recs: self.take(usize::try_from(chunk.bytes / 80).unwrap_or(0).min(1 << 22)),
            ..GraphState::default()
        }
    }

    fn on_event(&self, st: &mut GraphState, ev: &EventView<'_, '_>, cx: &Context<'_, '_>) {
        // System calls only tell which thread runs (their fields are not needed).
        let Some(k) = self.map.decode_only(ev, cx, Kinds::NO_SYSCALLS) else { return };
        st.span = Some(match st.span {
            Some((a, b)) => (a.min(k.ns), b.max(k.ns)),
            None => (k.ns, k.ns),
        });
        if k.tid.is_none() && !makes_record(&k.kind) {
            // Says nothing here (and is left out of the order the same way in every chunk).
            return;
        }
        let key = st.counter.key(k.ns, cx);
        if let Some((packet, _)) = st.lost_at {
            if packet == cx.packet {
                st.lost_at = None;
                st.flush();
                st.recs.push(Rec { key, cpu: k.cpu, tid: None, what: What::Lost });
            } else {
                st.lost_at_end();
            }
        }
        let what = match k.kind {
            Kind::SchedSwitch { prev_tid, prev_comm, prev_state, next_tid, next_comm, .. } => {
                st.name(key, prev_tid, prev_comm);
                st.name(key, next_tid, next_comm);
                What::Switch { prev: prev_tid, next: next_tid, prev_state }
            }
            Kind::SchedWaking { tid, comm, .. } => {
                st.name(key, tid, comm);
                What::Waking { tid, how: WakeEvent::Waking }
            }
            Kind::SchedWakeup { tid, comm, .. } => {
                st.name(key, tid, comm);
                What::Waking { tid, how: WakeEvent::Wakeup }
            }
            Kind::SchedWakeupNew { tid, comm, .. } => {
                st.name(key, tid, comm);
                What::Waking { tid, how: WakeEvent::New }
            }
            Kind::ProcessFork { parent_tid, child_tid, child_comm, .. } => {
                st.name(key, child_tid, child_comm);
                What::Fork { parent: parent_tid, child: child_tid }
            }
            Kind::ProcessExit { tid } => What::Exit { tid },
            Kind::IrqHandlerEntry { irq, name } => {
                match st.irq_names.get_mut(&irq) {
                    // The same name: only the time it was seen changes (no allocation).
                    Some((k, n)) if n.as_bytes() == name => *k = (*k).max(key),
                    _ => keep_latest(&mut st.irq_names, irq, key, String::from_utf8_lossy(name).into_owned()),
                }
                What::IrqEntry { irq: irq as i32, device: Device::of_irq(name) }
            }
            Kind::IrqHandlerExit { irq, .. } => What::IrqExit { irq: irq as i32 },
            Kind::SoftirqRaise { vec } => What::SoftirqRaise { vec },
            Kind::SoftirqEntry { vec } => What::SoftirqEntry { vec },
            Kind::SoftirqExit { vec } => What::SoftirqExit { vec },
            Kind::HrtimerExpireEntry { .. } => What::HrtimerEntry,
            Kind::HrtimerExpireExit { .. } => What::HrtimerExit,
            Kind::IrqVectorEntry { name, .. } => What::VectorEntry(Vector::from_name(name)),
            Kind::IrqVectorExit { name, .. } => What::VectorExit(Vector::from_name(name)),
            Kind::BlockRqIssue { dev, sector, .. } => What::BlockIssue { dev, sector },
            Kind::BlockRqComplete { dev, sector, .. } => What::BlockComplete { dev, sector },
            Kind::NetifReceiveSkb { .. } => What::NetReceive,
            Kind::StatedumpProcess { tid, name, status, .. } => {
                st.name(key, tid, name);
                if status != STATEDUMP_WAIT || tid == 0 {
                    return;
                }
                What::Asleep { tid }
            }
            _ => {
                // Evidence: a run of the thread's own events within one packet.
                let Some(tid) = k.tid else { return };
                match &mut st.pending {
                    Some(p) if p.tid == tid && p.cpu == k.cpu && p.packet == cx.packet => p.last_ns = p.last_ns.max(k.ns),
                    _ => {
                        st.flush();
                        // Whether the run starts with a system call event (so outside interrupts).
                        let syscall = is_syscall(k.name());
                        st.pending = Some(Pending { key, cpu: k.cpu, tid, packet: cx.packet, last_ns: k.ns, syscall });
                    }
                }
                return;
            }
        };
        st.flush();
        st.recs.push(Rec { key, cpu: k.cpu, tid: k.tid, what });
    }

    fn on_discarded(&self, st: &mut GraphState, items: &DiscardedItems, cx: &Context<'_, '_>) {
        st.lost = st.lost.saturating_add(items.count);
        if items.count == 0 {
            return;
        }
        st.lost_at_end();
        st.lost_at = Some((cx.packet, items.end_ns));
    }

    fn end_chunk(&self, st: &mut GraphState, _cx: &Context<'_, '_>) {
        st.lost_at_end();
        st.flush();
        let mut recs = std::mem::take(&mut st.recs);
        if !recs.is_sorted_by_key(|r| r.key) {
            recs.sort_by_key(|r| r.key);
        }
        if !recs.is_empty() {
            st.runs.push(Run { recs, at: 0 });
        }
    }

    fn merge(&self, mut a: GraphState, b: GraphState) -> GraphState {
        if a.builder.is_none() && b.builder.is_some() && a.runs.is_empty() {
            // `a` holds no chunk.
            a.builder = b.builder;
        }
        a.runs.extend(b.runs);
        for (tid, (k, c)) in b.names {
            keep_latest(&mut a.names, tid, k, c);
        }
        for (irq, (k, n)) in b.irq_names {
            keep_latest(&mut a.irq_names, irq, k, n);
        }
        a.span = match (a.span, b.span) {
            (Some((x, y)), Some((u, v))) => Some((x.min(u), y.max(v))),
            (x, y) => x.or(y),
        };
        a.lost = a.lost.saturating_add(b.lost);
        a.bound = b.bound.or(a.bound);
        let bound = a.bound;
        a.drain(bound);
        self.give(&mut a.runs);
        a
    }

    fn finish(&self, mut st: GraphState) -> ExecutionGraph {
        if st.builder.is_none() {
            st.builder = Some(Box::new(Builder::new(self.has_waking)));
        }
        st.drain(None);
        let builder = st.builder.take().map(|b| *b).unwrap_or_default();
        let mut g = builder.finish();
        g.names = st.names.into_iter().map(|(t, (_, c))| (t, c)).collect();
        g.irq_names = st.irq_names.into_iter().map(|(i, (_, n))| (i, n)).collect();
        g.span = st.span;
        g.lost_events = st.lost;
        g
    }
}
