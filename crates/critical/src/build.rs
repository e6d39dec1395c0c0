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
//! chunk from the first one on holds the builder (`graph.rs`): each merge hands on every record
//! earlier than the start of the last chunk merged — no later chunk can hold an earlier event —
//! as a *window*: the slices of the sorted runs (one per chunk) below that time. The engine's
//! workers merge each window's slices into one run in the trace's total order of events
//! ([`EventKey`]: time, then stream and position), apart from the ordered chain of merges
//! ([`Analysis::background`]; windows are independent, so several sort at once); the chain
//! then replays the sorted windows, in order, into the builder: the only serial part is the
//! replay itself, reading one run front to back. Records of a chunk live until their window is
//! replayed, which runs while later chunks are read. Since records are made per packet and
//! replayed in one total order, the graph is the same for any number of threads and any chunk
//! size.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tracelens_analysis::kernel::{Comm, IdMap, KernelMap, Kind, Kinds};
use tracelens_analysis::{Analysis, Background, Chunk, Context, DiscardedItems, EventCounter, EventKey};
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
    /// `prev_state`: its low byte, all the replay reads (runnable when 0; the exit bits),
    /// which keeps a record in one cache line.
    Switch { prev: i64, next: i64, prev_state: u8 },
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
/// event gives (`tid` context), and what it says. 64 bytes (the replay reads a few million of
/// them in an order that mixes the CPUs: one cache line each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rec {
    pub(crate) key: EventKey,
    pub(crate) what: What,
    /// The `tid` context, when `has_tid` (an `Option<i64>` would take 8 bytes more).
    tid: i64,
    pub(crate) cpu: u32,
    has_tid: bool,
}

impl Rec {
    /// A record at `key` on `cpu`, in the context of thread `tid`.
    pub(crate) fn new(key: EventKey, cpu: u32, tid: Option<i64>, what: What) -> Rec {
        Rec { key, what, tid: tid.unwrap_or(0), cpu, has_tid: tid.is_some() }
    }

    /// The thread whose context the event gives.
    pub(crate) fn tid(&self) -> Option<i64> {
        self.has_tid.then_some(self.tid)
    }
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
    /// With the builder: the windows handed on and not replayed yet, in time order, and the
    /// queue the workers sort them from.
    windows: VecDeque<Arc<Window>>,
    sorting: Option<Arc<Sorting>>,
    /// Records not handed on yet, each run in key order.
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

/// A chunk's records, sorted by key, and how many of them were handed on in windows.
#[derive(Debug)]
struct Run {
    recs: Arc<Vec<Rec>>,
    at: usize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Record buffers of replayed chunks, for later chunks, and the orders of replayed windows, for
/// later windows: reused memory instead of fresh pages (which the kernel zeroes) for each.
#[derive(Debug, Default)]
struct Spare {
    recs: Mutex<Vec<Vec<Rec>>>,
    orders: Mutex<Vec<Vec<(u32, u32)>>>,
}

/// Record buffers kept for reuse at most.
const SPARE: usize = 16;

impl Spare {
    /// An empty record buffer with room for `n`, reused when one is spare.
    fn take(&self, n: usize) -> Vec<Rec> {
        let mut v = lock(&self.recs).pop().unwrap_or_default();
        v.reserve(n);
        v
    }

    /// An empty order, reused when one is spare.
    fn take_order(&self) -> Vec<(u32, u32)> {
        lock(&self.orders).pop().unwrap_or_default()
    }

    /// Keeps `v`'s room for [`take_order`](Self::take_order).
    fn give_order(&self, mut v: Vec<(u32, u32)>) {
        v.clear();
        let mut spare = lock(&self.orders);
        if spare.len() < SPARE && v.capacity() > 0 {
            spare.push(v);
        }
    }

    /// Keeps `v`'s room for [`take`](Self::take).
    fn give(&self, mut v: Vec<Rec>) {
        v.clear();
        let mut spare = lock(&self.recs);
        if spare.len() < SPARE && v.capacity() > 0 {
            spare.push(v);
        }
    }

    /// Keeps the buffer of `recs` when this was its last holder.
    fn give_shared(&self, recs: Arc<Vec<Rec>>) {
        if let Some(v) = Arc::into_inner(recs) {
            self.give(v);
        }
    }
}

/// Windows a merge leaves to the workers at most (with the engine, they sort each window
/// before they read another chunk: a few wait at a time).
const WAITING: usize = 16;

/// Records gathered at a time for the replay.
const GATHER: usize = 64;

/// A slice of a sorted run: records `range` of the chunk's records.
type Part = (Arc<Vec<Rec>>, Range<usize>);

/// Where a window is.
#[derive(Debug)]
enum Stage {
    /// Handed on.
    Parts(Vec<Part>),
    /// Sorted: the parts and their merge in key order, as batches (part, how many records).
    Sorted(Vec<Part>, Vec<(u32, u32)>),
    /// Replayed.
    Replayed,
}

/// The records of every run below a merge's bound, replayed together once sorted.
#[derive(Debug)]
struct Window(Mutex<Stage>);

impl Window {
    /// Merges the parts in key order (nothing when done already).
    fn sort(&self, spare: &Spare) {
        let mut stage = lock(&self.0);
        let Stage::Parts(parts) = &mut *stage else { return };
        let parts = std::mem::take(parts);
        let mut order = spare.take_order();
        merge_order(parts.iter().map(|(recs, r)| &recs[r.clone()]).collect(), &mut order);
        *stage = Stage::Sorted(parts, order);
    }
}

/// Appends to `order` the merge of `parts` (each sorted by key) in key order, as batches of
/// consecutive records of one part: (part, how many).
fn merge_order(mut parts: Vec<&[Rec]>, order: &mut Vec<(u32, u32)>) {
    use std::collections::binary_heap::PeekMut;
    let mut heads: BinaryHeap<Reverse<(EventKey, usize)>> = parts.iter().enumerate().filter_map(|(i, p)| p.first().map(|r| Reverse((r.key, i)))).collect();
    loop {
        // The least head of the other parts (the root's children): how far the root's part goes.
        let limit = heads.as_slice().iter().skip(1).take(2).max().map(|Reverse((k, _))| *k);
        let Some(mut top) = heads.peek_mut() else { break };
        let Reverse((_, i)) = *top;
        let p = parts[i];
        // A linear scan: the records taken are next to each other (a binary search over the
        // part would touch far records for the one or two taken at a time).
        let n = limit.map_or(p.len(), |l| p.iter().position(|r| r.key > l).unwrap_or(p.len())).max(1);
        add_batch(order, i as u32, n);
        parts[i] = &p[n..];
        match parts[i].first() {
            Some(r) => top.0 .0 = r.key,
            None => drop(PeekMut::pop(top)),
        }
    }
}

/// Adds `n` records of part `i` to `order` (in batches of at most `u32::MAX`).
fn add_batch(order: &mut Vec<(u32, u32)>, i: u32, mut n: usize) {
    if let Some((_, m)) = order.last_mut().filter(|(j, _)| *j == i) {
        let more = n.min((u32::MAX - *m) as usize);
        *m += more as u32;
        n -= more;
    }
    while n > 0 {
        let more = n.min(u32::MAX as usize);
        order.push((i, more as u32));
        n -= more;
    }
}

/// The windows waiting for a worker to sort them: the analysis's background work.
#[derive(Debug)]
struct Sorting {
    queue: Mutex<VecDeque<Arc<Window>>>,
    /// Workers sorting a window now.
    running: AtomicUsize,
    spare: Arc<Spare>,
}

impl Background for Sorting {
    fn assist(&self) -> bool {
        self.running.fetch_add(1, Ordering::AcqRel);
        let w = lock(&self.queue).pop_front();
        if let Some(w) = &w {
            w.sort(&self.spare);
        }
        self.running.fetch_sub(1, Ordering::AcqRel);
        w.is_some()
    }

    fn busy(&self) -> bool {
        self.running.load(Ordering::Acquire) > 0 || !lock(&self.queue).is_empty()
    }
}

/// The analysis that builds the [`ExecutionGraph`] of a trace set (run it with
/// [`tracelens_analysis::Engine::run`]).
///
/// Each chunk turns its events into compact records; states merged in time order hand on, as
/// one window, every record earlier than the start of the last chunk merged (no later chunk
/// can hold an earlier one); the engine's workers sort each window into the trace's total
/// order of events, and the chain of merges replays the sorted windows in order, so the graph
/// is the same for any number of threads and any chunk size.
#[derive(Debug)]
pub struct GraphAnalysis {
    map: KernelMap,
    has_waking: bool,
    spare: Arc<Spare>,
}

impl Clone for GraphAnalysis {
    fn clone(&self) -> Self {
        GraphAnalysis { map: self.map.clone(), has_waking: self.has_waking, spare: Arc::default() }
    }
}

impl GraphAnalysis {
    /// The analysis of `set`.
    pub fn new(set: &TraceSet) -> GraphAnalysis {
        let has_waking = set.traces.iter().any(|t| t.class.streams.iter().any(|s| s.events.iter().any(|e| matches!(e.name.as_str(), "sched_waking" | "sched:sched_waking"))));
        GraphAnalysis { map: KernelMap::new(set), has_waking, spare: Arc::default() }
    }

    /// The queue of windows to sort, for the state that holds the replay.
    fn sorting(&self) -> Arc<Sorting> {
        Arc::new(Sorting { queue: Mutex::default(), running: AtomicUsize::new(0), spare: Arc::clone(&self.spare) })
    }
}

impl GraphState {
    /// Writes the pending evidence as a record.
    fn flush(&mut self) {
        if let Some(p) = self.pending.take() {
            self.recs.push(Rec::new(p.key, p.cpu, Some(p.tid), What::Evidence { last_ns: p.last_ns, syscall: p.syscall }));
        }
    }

    /// Writes lost events reported in a packet that has no event after them, at the packet's
    /// end, CPU unknown.
    fn lost_at_end(&mut self) {
        if let Some((_, end)) = self.lost_at.take() {
            self.flush();
            if let Some(ns) = end {
                let key = EventKey { ns, stream: u64::MAX, pos: u64::MAX };
                self.recs.push(Rec::new(key, u32::MAX, None, What::Lost));
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

    /// Hands on the records of `self.runs` earlier than `below` (all of them when `None`) as
    /// a window to sort, when this state holds the replay.
    fn hand_on(&mut self, below: Option<i64>, spare: &Spare) {
        let Some(sorting) = &self.sorting else { return };
        let mut parts = Vec::new();
        let mut kept = Vec::with_capacity(self.runs.len());
        for mut r in std::mem::take(&mut self.runs) {
            let end = match below {
                Some(b) => r.at + r.recs[r.at..].partition_point(|x| x.key.ns < b),
                None => r.recs.len(),
            };
            if end > r.at {
                parts.push((Arc::clone(&r.recs), r.at..end));
                r.at = end;
            }
            if r.at < r.recs.len() {
                kept.push(r);
            } else {
                // Its last window may be replayed already.
                spare.give_shared(r.recs);
            }
        }
        self.runs = kept;
        if parts.is_empty() {
            return;
        }
        let w = Arc::new(Window(Mutex::new(Stage::Parts(parts))));
        lock(&sorting.queue).push_back(Arc::clone(&w));
        self.windows.push_back(w);
    }

    /// Replays the windows at the front that are sorted, and sorts the front one itself while
    /// more than `waiting` are not replayed (0 at the end of the run: every window; a bound on
    /// the records kept when no worker sorts them, as in a merge tree of one's own).
    fn replay(&mut self, waiting: usize, spare: &Spare) {
        let Some(builder) = self.builder.as_mut() else { return };
        while let Some(w) = self.windows.front() {
            let behind = self.windows.len() > waiting;
            let mut stage = if behind {
                lock(&w.0)
            } else {
                match w.0.try_lock() {
                    Ok(s) => s,
                    Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
                    // A worker is sorting it: later.
                    Err(std::sync::TryLockError::WouldBlock) => break,
                }
            };
            if behind && matches!(*stage, Stage::Parts(_)) {
                drop(stage);
                w.sort(spare);
                stage = lock(&w.0);
            }
            let (parts, order) = match std::mem::replace(&mut *stage, Stage::Replayed) {
                Stage::Sorted(parts, order) => (parts, order),
                other => {
                    // Not sorted yet: later.
                    *stage = other;
                    break;
                }
            };
            drop(stage);
            self.windows.pop_front();
            let mut slices: Vec<std::slice::Iter<'_, Rec>> = parts.iter().map(|(recs, r)| recs[r.clone()].iter()).collect();
            // Records are gathered a few dozen at a time before they are replayed: the loads
            // of a gathering, from parts far apart in memory, are independent and overlap,
            // where the replay would wait for each record's cache miss in turn.
            let mut batch: Vec<Rec> = Vec::with_capacity(GATHER);
            for &(i, n) in &order {
                for r in slices[i as usize].by_ref().take(n as usize) {
                    batch.push(*r);
                    if batch.len() == GATHER {
                        batch.iter().for_each(|r| builder.apply(r));
                        batch.clear();
                    }
                }
            }
            batch.iter().for_each(|r| builder.apply(r));
            drop(slices);
            for (recs, _) in parts {
                spare.give_shared(recs);
            }
            spare.give_order(order);
        }
    }
}

impl Analysis for GraphAnalysis {
    type State = GraphState;
    type Output = ExecutionGraph;

    fn new_state(&self, chunk: &Chunk) -> GraphState {
        GraphState {
            builder: (chunk.index == 0).then(|| Box::new(Builder::new(self.has_waking))),
            sorting: (chunk.index == 0).then(|| self.sorting()),
            bound: chunk.begin_ns,
            // About one record per 80 bytes of an LTTng kernel trace's packets, 70 of a synthetic
            // one: room that is not used is never touched.
            recs: self.spare.take(usize::try_from(chunk.bytes / 64).unwrap_or(0).min(1 << 22)),
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
                st.recs.push(Rec::new(key, k.cpu, None, What::Lost));
            } else {
                st.lost_at_end();
            }
        }
        let what = match k.kind {
            Kind::SchedSwitch { prev_tid, prev_comm, prev_state, next_tid, next_comm, .. } => {
                st.name(key, prev_tid, prev_comm);
                st.name(key, next_tid, next_comm);
                What::Switch { prev: prev_tid, next: next_tid, prev_state: (prev_state & 0xff) as u8 }
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
        st.recs.push(Rec::new(key, k.cpu, k.tid, what));
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
            st.runs.push(Run { recs: Arc::new(recs), at: 0 });
        }
    }

    fn merge(&self, mut a: GraphState, b: GraphState) -> GraphState {
        if a.builder.is_none() && b.builder.is_some() && a.runs.is_empty() {
            // `a` holds no chunk.
            a.builder = b.builder;
            a.sorting = b.sorting;
            a.windows = b.windows;
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
        a.replay(WAITING, &self.spare);
        let bound = a.bound;
        a.hand_on(bound, &self.spare);
        a
    }

    fn end_merges(&self, st: &mut GraphState) {
        // What is left goes to the workers too; `finish` only replays.
        st.hand_on(None, &self.spare);
    }

    fn background(&self, st: &GraphState) -> Option<Arc<dyn Background>> {
        st.sorting.clone().map(|s| s as Arc<dyn Background>)
    }

    fn finish(&self, mut st: GraphState) -> ExecutionGraph {
        if st.builder.is_none() {
            st.builder = Some(Box::new(Builder::new(self.has_waking)));
            st.sorting = Some(self.sorting());
        }
        st.hand_on(None, &self.spare);
        st.replay(0, &self.spare);
        let builder = st.builder.take().map(|b| *b).unwrap_or_default();
        let mut g = builder.finish();
        g.names = st.names.into_iter().map(|(t, (_, c))| (t, c)).collect();
        g.irq_names = st.irq_names.into_iter().map(|(i, (_, n))| (i, n)).collect();
        g.span = st.span;
        g.lost_events = st.lost;
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Chunks of `cpus` streams, `slices` per stream: (start, records sorted by key), sorted by
    /// start as the engine numbers them. Times collide across streams (ties broken by stream).
    fn chunks(seed: u64, cpus: u64, slices: i64, per_slice: usize) -> Vec<(i64, Vec<Rec>)> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut out = Vec::new();
        for cpu in 0..cpus {
            for s in 0..slices {
                let begin = s * 100;
                let mut ns: Vec<i64> = (0..per_slice).map(|_| begin + next(100) as i64).collect();
                ns.sort_unstable();
                let recs: Vec<Rec> = ns
                    .into_iter()
                    .enumerate()
                    .map(|(i, ns)| {
                        let tid = next(6) as i64;
                        let what = match next(6) {
                            0 | 1 => What::Switch { prev: tid, next: next(6) as i64, prev_state: next(3) as u8 },
                            2 => What::Waking { tid: next(6) as i64, how: WakeEvent::Waking },
                            3 => What::Evidence { last_ns: ns + next(5) as i64, syscall: next(2) == 0 },
                            4 => What::HrtimerEntry,
                            _ => What::HrtimerExit,
                        };
                        Rec::new(EventKey { ns, stream: cpu, pos: (s as u64) << 32 | i as u64 }, cpu as u32, Some(tid), what)
                    })
                    .collect();
                out.push((begin, recs));
            }
        }
        out.sort_by_key(|(begin, recs)| (*begin, recs.first().map(|r| r.key.stream)));
        out
    }

    /// The state of chunk `i` as the engine would make it.
    fn state(a: &GraphAnalysis, i: usize, (begin, recs): &(i64, Vec<Rec>)) -> GraphState {
        GraphState {
            builder: (i == 0).then(|| Box::new(Builder::new(true))),
            sorting: (i == 0).then(|| a.sorting()),
            bound: Some(*begin),
            runs: vec![Run { recs: Arc::new(recs.clone()), at: 0 }],
            ..GraphState::default()
        }
    }

    #[test]
    fn batches_hold_at_most_u32_max_records() {
        let mut order = vec![(3, u32::MAX - 2)];
        add_batch(&mut order, 3, 5);
        add_batch(&mut order, 1, 2);
        add_batch(&mut order, 1, 4);
        assert_eq!(order, vec![(3, u32::MAX), (3, 3), (1, 6)]);
    }

    #[test]
    fn a_record_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Rec>(), 64);
    }

    proptest! {
        /// Windows sorted by workers at any time, or by the merges (beyond the backlog) and
        /// `finish`, and merges in any tree give the graph of one replay of every record
        /// sorted by key.
        #[test]
        fn windows_replay_in_key_order(seed in 1u64..10_000, cpus in 1u64..5, slices in 1i64..30, per_slice in 0usize..40, assist_every in 0usize..4) {
            let chunks = chunks(seed, cpus, slices, per_slice);
            let mut all: Vec<Rec> = chunks.iter().flat_map(|(_, r)| r.iter().copied()).collect();
            all.sort_by_key(|r| r.key);
            let mut b = Builder::new(true);
            for r in &all {
                b.apply(r);
            }
            let want = b.finish();
            let mut parts: Vec<&[Rec]> = chunks.iter().map(|(_, r)| r.as_slice()).collect();
            let mut merged = Vec::new();
            let mut order = Vec::new();
            merge_order(parts.clone(), &mut order);
            for (i, n) in order {
                let (taken, rest) = parts[i as usize].split_at(n as usize);
                merged.extend(taken.iter().map(|r| r.key));
                parts[i as usize] = rest;
            }
            prop_assert!(merged == all.iter().map(|r| r.key).collect::<Vec<_>>());

            let a = GraphAnalysis::new(&TraceSet { traces: Vec::new() });
            // Left to right, as the engine merges; the workers' sorting between some merges.
            let mut acc: Option<GraphState> = None;
            for (i, c) in chunks.iter().enumerate() {
                let s = state(&a, i, c);
                let st = match acc.take() {
                    None => s,
                    Some(earlier) => a.merge(earlier, s),
                };
                // Without workers, a merge sorts windows itself beyond a backlog.
                prop_assert!(st.windows.len() <= WAITING + 1);
                if assist_every > 0 && i % assist_every == 0 {
                    if let Some(bg) = a.background(&st) {
                        while bg.assist() {}
                        prop_assert!(!bg.busy());
                    }
                }
                acc = Some(st);
            }
            let mut st = acc.unwrap_or_default();
            a.end_merges(&mut st);
            if assist_every == 1 {
                if let Some(bg) = a.background(&st) {
                    bg.assist();
                }
            }
            prop_assert!(a.finish(st) == want, "left to right");
            // Right to left: the replay starts at the last merge.
            let mut acc: Option<GraphState> = None;
            for (i, c) in chunks.iter().enumerate().rev() {
                let s = state(&a, i, c);
                acc = Some(match acc.take() {
                    None => s,
                    Some(later) => a.merge(s, later),
                });
            }
            prop_assert!(a.finish(acc.unwrap_or_default()) == want, "right to left");
        }
    }
}
