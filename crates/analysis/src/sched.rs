//! `sched`: wake-up latency — the time from a thread's wake-up (`sched_waking`, or
//! `sched_wakeup` / `sched_wakeup_new` on tracers without it) to the `sched_switch` that puts it
//! on a CPU; per thread, per priority, in total, and the longest ones (lttng-schedstats and
//! lttng-schedtop).
//!
//! # What is counted
//!
//! Per thread, in time order over all CPUs: a wake-up starts a wait unless the thread is
//! running (switched in and not switched out since) or a wait already started (the first of
//! `sched_waking` / `sched_wakeup` counts); the next switch-in ends the wait — a latency, with
//! the priority the switch gives and the CPU it happens on — and every switch-in clears it.
//! The waker is the thread running on the CPU the wake-up event comes from (none when that is
//! the idle thread, e.g. a wake-up from an interrupt on an idle CPU).
//!
//! Before a thread's first switch in the trace, whether it runs is not known yet: the first
//! switch tells (switched out: it was running, and the wake-ups before were of a running
//! thread; switched in: it was not).
//!
//! # In parallel
//!
//! A wake-up and its switch-in are usually on different CPUs, so in different chunks, and the
//! chunks of different CPUs overlap in time. Each chunk keeps its wake-ups and switches as
//! records in time order, each naming its thread (the unresolved fragments of the paper's
//! section 4.2), split by the thread's shard at the end of the chunk (`shards.rs`). A merge in
//! time order only joins the CPUs' first and last threads and hands the records on: each shard
//! replays its threads' records in key order, up to the start time of the last chunk merged —
//! no later chunk can hold an earlier event — keeping per thread only what the next record
//! needs, on whichever worker is free, in parallel with the reading. Ties between equal times
//! are broken by stream and position ([`EventKey`]), so the result is the same for any cut. A
//! wake-up before a chunk's first switch on its CPU does not know its waker: it waits apart
//! until a merge gives it the thread the earlier chunks left running on that CPU, and nothing
//! of its shard after it is replayed before. The shards' results are added up at the end.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use tracelens_ctf::{EventView, Field};
use tracelens_trace::TraceSet;

use crate::durations::Durations;
use crate::engine::{records_hint, Analysis, Background, Chunk, Context, Pool};
use crate::filter::Filter;
use crate::id_map::IdMap;
use crate::kernel::{text, Comm, Extra, KernelMap, Kind, Kinds, What};
use crate::order::{EventCounter, EventKey};
use crate::runs::sort_run;
use crate::shards::{shard_of, Board, Limit, Mail, Outbox, Run, Runs, Shard, SHARDS};
use crate::span::Span;

/// Default number of longest latencies kept by [`Sched::new`].
pub const DEFAULT_TOP: usize = 10;

/// The `sched` analysis.
#[derive(Clone, Debug)]
pub struct Sched {
    map: KernelMap,
    filter: Filter,
    top: usize,
    /// Buffers of chunks' records, reused.
    pool: Arc<Pool<TRec>>,
}

impl Sched {
    /// The analysis of `set`, keeping what `filter` selects and the `top` longest latencies.
    pub fn new(set: &TraceSet, filter: Filter, top: usize) -> Sched {
        Sched { map: KernelMap::new(set), filter, top, pool: Arc::default() }
    }
}

/// Who woke a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Waker {
    None,
    /// The thread and its name then.
    Tid(i64, Comm),
    /// The thread running on this (trace, CPU) at the start of the chunk: resolved at merge.
    CpuHead(usize, u32),
}

impl Waker {
    fn of((tid, comm): (i64, Comm)) -> Waker {
        if tid == 0 {
            Waker::None
        } else {
            Waker::Tid(tid, comm)
        }
    }
}

/// One record of a thread's timeline.
#[derive(Clone, Copy, Debug)]
enum Rec {
    Wake { key: EventKey, waker: Waker },
    /// A switch-in, and the switch-out that follows it in the same chunk, if any (a thread
    /// runs on one CPU at a time: nothing from another chunk can come in between but wake-ups
    /// of a running thread, which do not count).
    In { key: EventKey, cpu: u32, prio: i64, comm: Comm, counted: bool, out: Option<EventKey> },
    Out { key: EventKey },
}

impl Rec {
    fn key(&self) -> EventKey {
        match *self {
            Rec::Wake { key, .. } | Rec::In { key, .. } | Rec::Out { key } => key,
        }
    }
}

/// The resolved past of a thread (meaningful in prefix states).
#[derive(Clone, Copy, Debug, Default)]
struct Fold {
    /// `None` before its first switch.
    running: Option<bool>,
    /// It ran until then (the switch-out of an [`Rec::In`]): wake-ups before are ignored.
    ran_until: Option<EventKey>,
    /// The wake-up its current wait started with.
    pending: Option<(EventKey, Waker)>,
    /// Before its first switch: the first wake-up, which counts if the switch is a switch-in.
    tentative: Option<(EventKey, Waker)>,
}

/// A record and its thread.
#[derive(Clone, Copy, Debug)]
struct TRec {
    tid: i64,
    rec: Rec,
}

impl Fold {
    /// Resolves the thread's next record, in key order: a latency goes to `results`.
    #[inline]
    fn step(&mut self, tid: i64, r: Rec, results: &mut Results, top: usize) {
        let f = self;
        match r {
            Rec::Wake { key, .. } if f.ran_until.is_some_and(|u| key < u) => {}
            Rec::Wake { key, waker } => match f.running {
                Some(true) => {}
                Some(false) => {
                    if f.pending.is_none() {
                        f.pending = Some((key, waker));
                    }
                }
                None => {
                    if f.tentative.is_none() {
                        f.tentative = Some((key, waker));
                    }
                }
            },
            Rec::In { key, cpu, prio, comm, counted, out } => {
                let w = if f.running.is_none() { f.tentative.take() } else { f.pending.take() };
                if let (Some((wake, waker)), true) = (w, counted) {
                    results.add(Lat { wake, switch: key, tid, prio, cpu, waker }, comm, top);
                }
                f.pending = None;
                f.tentative = None;
                f.running = Some(out.is_none());
                f.ran_until = out;
            }
            Rec::Out { .. } => {
                f.tentative = None;
                f.running = Some(false);
            }
        }
    }
}

/// What one run of chunks knows of a CPU: the thread running before its first switch and after
/// its last.
#[derive(Clone, Copy, Debug, Default)]
struct CpuCur {
    head_prev: Option<(i64, Comm)>,
    tail_next: Option<(i64, Comm)>,
}

/// Name and process id of a thread, latest / earliest by key.
#[derive(Clone, Copy, Debug, Default)]
struct Info {
    name: Option<(EventKey, Comm)>,
    pid: Option<(EventKey, i64)>,
}

impl Info {
    fn name(&mut self, key: EventKey, comm: &[u8]) {
        if !matches!(&self.name, Some((k, _)) if key <= *k) {
            self.name = Some((key, Comm::new(comm)));
        }
    }
    fn pid(&mut self, key: EventKey, pid: i64) {
        if !matches!(self.pid, Some((k, _)) if key >= k) {
            self.pid = Some((key, pid));
        }
    }
    fn absorb(&mut self, o: Info) {
        if let Some((k, c)) = o.name {
            if !matches!(&self.name, Some((m, _)) if k <= *m) {
                self.name = Some((k, c));
            }
        }
        if let Some((k, p)) = o.pid {
            self.pid(k, p);
        }
    }
}

/// One latency, as resolved.
#[derive(Clone, Copy, Debug)]
struct Lat {
    wake: EventKey,
    switch: EventKey,
    tid: i64,
    prio: i64,
    cpu: u32,
    waker: Waker,
}

impl Lat {
    fn ns(&self) -> i64 {
        self.switch.ns - self.wake.ns
    }
    /// Longest first, then earliest switch.
    fn rank(&self) -> (std::cmp::Reverse<i64>, EventKey, i64) {
        (std::cmp::Reverse(self.ns()), self.switch, self.tid)
    }
}

/// Per-thread results.
#[derive(Clone, Debug, Default)]
struct TidAcc {
    acc: Durations,
    /// Name at its first latency, as the thread woken or as the waker.
    first: Option<(EventKey, Comm)>,
    prios: Vec<(i64, EventKey)>,
}

/// Resolved results.
#[derive(Clone, Debug, Default)]
struct Results {
    total: Durations,
    tids: IdMap<i64, TidAcc>,
    prios: BTreeMap<i64, Durations>,
    top: Vec<Lat>,
}

impl Results {
    fn add(&mut self, lat: Lat, comm: Comm, top: usize) {
        let v = lat.ns();
        self.total.add(v);
        self.prios.entry(lat.prio).or_default().add(v);
        if let Waker::Tid(w, wcomm) = lat.waker {
            let t = self.tids.entry(w).or_default();
            if !matches!(&t.first, Some((k, _)) if lat.switch >= *k) {
                t.first = Some((lat.switch, wcomm));
            }
        }
        let t = self.tids.entry(lat.tid).or_default();
        t.acc.add(v);
        if !matches!(&t.first, Some((k, _)) if lat.switch >= *k) {
            t.first = Some((lat.switch, comm));
        }
        match t.prios.iter_mut().find(|(p, _)| *p == lat.prio) {
            Some((_, k)) => *k = (*k).min(lat.switch),
            None => t.prios.push((lat.prio, lat.switch)),
        }
        if top > 0 && (self.top.len() < top || self.top.last().is_some_and(|l| lat.rank() < l.rank())) {
            let at = self.top.partition_point(|l| l.rank() < lat.rank());
            self.top.insert(at, lat);
            self.top.truncate(top);
        }
    }

    fn absorb(&mut self, o: Results, top: usize) {
        self.total.merge(&o.total);
        for (p, a) in o.prios {
            self.prios.entry(p).or_default().merge(&a);
        }
        for (tid, t) in o.tids {
            let s = self.tids.entry(tid).or_default();
            s.acc.merge(&t.acc);
            if let Some((k, c)) = t.first {
                if !matches!(&s.first, Some((m, _)) if k >= *m) {
                    s.first = Some((k, c));
                }
            }
            for (p, k) in t.prios {
                match s.prios.iter_mut().find(|(q, _)| *q == p) {
                    Some((_, m)) => *m = (*m).min(k),
                    None => s.prios.push((p, k)),
                }
            }
        }
        self.top.extend(o.top);
        self.top.sort_by_key(|l| l.rank());
        self.top.truncate(top);
    }
}

/// What `sched` accumulates for a run of chunks.
#[derive(Clone, Debug, Default)]
pub struct SchedState {
    /// Covers every chunk from the first one on.
    prefix: bool,
    /// Start time of the last chunk covered: no later chunk has an earlier event.
    frontier: Option<i64>,
    span: Span,
    cpus: BTreeMap<(usize, u32), CpuCur>,
    /// The chunk's records while it is read, in stream order.
    chunk: Vec<TRec>,
    /// While a chunk is read: per thread, where its last record is in `chunk`.
    last: IdMap<i64, usize>,
    /// Records not handed to the shards yet: chunks' records split by shard, and wake-ups whose
    /// waker a merge found.
    outbox: Outbox<TRec>,
    /// Wake-ups whose waker is not known yet ([`Waker::CpuHead`]), sorted by key: they, and
    /// everything of their shard after the first of them, wait.
    heads: Vec<TRec>,
    info: IdMap<i64, Info>,
    /// The shards' results, at the end.
    results: Results,
    counter: EventCounter,
    /// The shards replaying the records (prefix states).
    board: Option<Arc<Board<SchedShard>>>,
    /// Every waker is resolved and the last records handed out ([`SchedState::end`]).
    ended: bool,
}

/// One shard of the replay: its threads' records not replayed yet, their resolved past, and
/// the latencies found.
#[derive(Debug, Default)]
struct SchedShard {
    runs: Runs<TRec>,
    folds: IdMap<i64, Fold>,
    results: Results,
}

/// Work for a [`SchedShard`]: more records, and how far to replay.
struct SchedWork {
    runs: Vec<Run<TRec>>,
    limit: Limit,
    top: usize,
}

impl Shard for SchedShard {
    type Work = SchedWork;
    type Parcel = ();

    fn apply(&mut self, work: &mut SchedWork, _mail: &Mail<'_, ()>) -> Result<(), u64> {
        for r in work.runs.drain(..) {
            self.runs.add(r);
        }
        let (folds, results, top, limit) = (&mut self.folds, &mut self.results, work.top, work.limit);
        self.runs.drain(|t| t.rec.key(), |k| limit.admits(k), |t| folds.entry(t.tid).or_default().step(t.tid, t.rec, results, top));
        Ok(())
    }
}

/// Latencies of one thread.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThreadLatency {
    /// Thread id.
    pub tid: i64,
    /// Process id, when an event gave it.
    pub pid: Option<i64>,
    /// Its name when it was first switched in after a wake-up (as lttng-schedstats).
    pub name: String,
    /// The latencies.
    #[serde(flatten)]
    pub stats: Durations,
    /// Priorities of its switch-ins after a wake-up, in order of first appearance.
    pub priorities: Vec<i64>,
}

/// Latencies of one priority.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PrioLatency {
    /// The priority (as `sched_switch` gives it).
    pub prio: i64,
    /// The latencies.
    #[serde(flatten)]
    pub stats: Durations,
}

/// One wake-up latency.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WakeLatency {
    /// Wake-up time (ns from the clock's origin).
    pub wakeup_ns: i64,
    /// Switch-in time.
    pub switch_ns: i64,
    /// `switch_ns - wakeup_ns`.
    pub latency_ns: i64,
    /// Priority at the switch.
    pub prio: i64,
    /// CPU of the switch.
    pub cpu: u32,
    /// The thread woken.
    pub tid: i64,
    /// Its name (its last known name, as lttng-schedtop).
    pub name: String,
    /// The thread that woke it, if known.
    pub waker_tid: Option<i64>,
    /// Its last known name.
    pub waker_name: Option<String>,
}

/// The result of `sched`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SchedReport {
    /// First kernel event in the range.
    pub begin_ns: Option<i64>,
    /// Last kernel event in the range.
    pub end_ns: Option<i64>,
    /// All latencies.
    pub total: Durations,
    /// Per thread, by name (case-insensitive) then tid.
    pub threads: Vec<ThreadLatency>,
    /// Per priority, lowest first.
    pub priorities: Vec<PrioLatency>,
    /// The longest latencies, longest first (ties: earliest switch first).
    pub top: Vec<WakeLatency>,
}

impl SchedState {
    /// Every chunk is in: resolves every waker still unknown — it woke on a CPU before the
    /// CPU's first switch, so the thread running there is the one that switch puts out — and
    /// hands the last records out (once).
    fn end(&mut self, top: usize) {
        if self.ended {
            return;
        }
        self.ended = true;
        let heads: BTreeMap<(usize, u32), Option<(i64, Comm)>> = self.cpus.iter().map(|(k, c)| (*k, c.head_prev)).collect();
        let waiting = std::mem::take(&mut self.heads);
        self.resolve_heads(waiting, |cpu| Some(heads.get(&cpu).copied().flatten().map_or(Waker::None, Waker::of)));
        self.post(true, top);
    }

    /// Appends a record of `tid` to the chunk's.
    #[inline]
    fn push(&mut self, tid: i64, rec: Rec) {
        self.last.insert(tid, self.chunk.len());
        self.chunk.push(TRec { tid, rec });
    }

    /// Gives the waiting wake-ups of `heads` the waker `find` finds for their CPU; those it
    /// finds go to the outbox, the others wait (in `heads`).
    fn resolve_heads(&mut self, heads: Vec<TRec>, find: impl Fn((usize, u32)) -> Option<Waker>) {
        for mut t in heads {
            if let Rec::Wake { waker: w @ Waker::CpuHead(..), .. } = &mut t.rec {
                let Waker::CpuHead(tr, c) = *w else { continue };
                match find((tr, c)) {
                    Some(found) => {
                        *w = found;
                        self.outbox.add(t);
                    }
                    None => self.heads.push(t),
                }
            }
        }
        self.heads.sort_by_key(|t| t.rec.key());
    }

    /// Hands the records not handed yet to the shards, which replay up to the frontier (all
    /// with `end`) and, in each shard, up to its first wake-up still waiting for its waker.
    fn post(&mut self, end: bool, top: usize) {
        let board = self.board.get_or_insert_with(Arc::default).clone();
        let runs = self.outbox.take(|t| shard_of(t.tid), |t| t.rec.key());
        let mut wait: Vec<Option<EventKey>> = vec![None; SHARDS];
        for t in &self.heads {
            wait[shard_of(t.tid)].get_or_insert(t.rec.key());
        }
        let frontier = if end { None } else { Some(self.frontier.unwrap_or(i64::MIN)) };
        board.post_runs(runs, |s, runs| SchedWork { runs, limit: Limit { ns: frontier, key: wait[s] }, top });
    }
}

impl Analysis for Sched {
    type State = SchedState;
    type Output = SchedReport;

    fn new_state(&self, chunk: &Chunk) -> SchedState {
        SchedState { prefix: chunk.index == 0, frontier: chunk.begin_ns, chunk: self.pool.take(records_hint(chunk)), ..SchedState::default() }
    }

    fn on_event(&self, st: &mut SchedState, ev: &EventView<'_, '_>, cx: &Context<'_, '_>) {
        const WANT: Kinds = Kinds::of(&[What::SchedSwitch, What::SchedWaking, What::SchedWakeup, What::SchedWakeupNew, What::Fork, What::StatedumpProcess]);
        let Some(k) = self.map.decode_only(ev, cx, WANT) else { return };
        if !self.filter.time(k.ns) {
            return;
        }
        st.span.see(k.ns);
        match k.kind {
            Kind::SchedSwitch { prev_tid, prev_comm, next_tid, next_comm, next_prio, .. } => {
                let key = st.counter.key(k.ns, cx);
                let cur = st.cpus.entry((cx.chunk.trace, k.cpu)).or_default();
                if cur.head_prev.is_none() && cur.tail_next.is_none() {
                    cur.head_prev = Some((prev_tid, Comm::new(prev_comm)));
                }
                cur.tail_next = Some((next_tid, Comm::new(next_comm)));
                if prev_tid != 0 {
                    let last = st.last.get(&prev_tid).and_then(|&i| st.chunk.get_mut(i));
                    match last {
                        Some(TRec { rec: Rec::In { out: out @ None, .. }, .. }) => *out = Some(key),
                        _ => st.push(prev_tid, Rec::Out { key }),
                    }
                    st.info.entry(prev_tid).or_default().name(key, prev_comm);
                }
                if next_tid != 0 {
                    let counted = self.filter.cpu(k.cpu) && self.filter.process(next_tid, next_comm);
                    let comm = Comm::new(next_comm);
                    st.push(next_tid, Rec::In { key, cpu: k.cpu, prio: next_prio, comm, counted, out: None });
                    st.info.entry(next_tid).or_default().name(key, next_comm);
                }
            }
            Kind::SchedWaking { tid, comm, .. } | Kind::SchedWakeup { tid, comm, .. } | Kind::SchedWakeupNew { tid, comm, .. } => {
                if tid == 0 {
                    return;
                }
                let key = st.counter.key(k.ns, cx);
                let waker = match st.cpus.get(&(cx.chunk.trace, k.cpu)).and_then(|c| c.tail_next) {
                    Some(t) => Waker::of(t),
                    None => Waker::CpuHead(cx.chunk.trace, k.cpu),
                };
                st.push(tid, Rec::Wake { key, waker });
                st.info.entry(tid).or_default().name(key, comm);
            }
            Kind::ProcessFork { parent_tid, parent_pid, child_tid, child_pid, child_comm } => {
                let key = st.counter.key(k.ns, cx);
                let parent = st.info.entry(parent_tid).or_default();
                if let Some(p) = parent_pid {
                    parent.pid(key, p);
                }
                if let Some(c) = self.map.extra(ev, cx, Extra::ParentComm).and_then(Field::as_bytes) {
                    parent.name(key, c);
                }
                let child = st.info.entry(child_tid).or_default();
                child.name(key, child_comm);
                if let Some(p) = child_pid {
                    child.pid(key, p);
                }
            }
            Kind::StatedumpProcess { tid, pid, name, .. } => {
                let key = st.counter.key(k.ns, cx);
                let i = st.info.entry(tid).or_default();
                i.pid(key, pid);
                i.name(key, name);
            }
            _ => {
                if let (Some(tid), Some(pid)) = (k.tid, k.pid) {
                    let key = st.counter.key(k.ns, cx);
                    st.info.entry(tid).or_default().pid(key, pid);
                }
            }
        }
    }

    fn end_chunk(&self, st: &mut SchedState, _cx: &Context<'_, '_>) {
        // Wake-ups before the chunk's first switch on their CPU wait for their waker.
        let is_head = |t: &TRec| matches!(t.rec, Rec::Wake { waker: Waker::CpuHead(..), .. });
        let mut recs = std::mem::take(&mut st.chunk);
        st.heads = recs.iter().filter(|t| is_head(t)).copied().collect();
        if !st.heads.is_empty() {
            recs.retain(|t| !is_head(t));
            sort_run(&mut st.heads, |t| t.rec.key());
        }
        sort_run(&mut recs, |t| t.rec.key());
        st.outbox.add_chunk(recs, |t| shard_of(t.tid), &self.pool);
        st.last = IdMap::default();
    }

    fn merge(&self, mut a: SchedState, mut b: SchedState) -> SchedState {
        a.span.merge(b.span);
        // Wakers of `b`'s wake-ups before its first switch on their CPU: the thread `a` left
        // running there.
        let heads = std::mem::take(&mut b.heads);
        let waiting = std::mem::take(&mut a.heads);
        let tails: BTreeMap<(usize, u32), (i64, Comm)> = a.cpus.iter().filter_map(|(k, c)| Some((*k, c.tail_next?))).collect();
        a.resolve_heads(waiting, |_| None);
        a.resolve_heads(heads, |cpu| tails.get(&cpu).copied().map(Waker::of));
        for (cpu, cb) in b.cpus {
            let ca = a.cpus.entry(cpu).or_default();
            if ca.head_prev.is_none() && ca.tail_next.is_none() {
                ca.head_prev = cb.head_prev;
            }
            ca.tail_next = cb.tail_next.or(ca.tail_next);
        }
        for (tid, i) in b.info {
            a.info.entry(tid).or_default().absorb(i);
        }
        a.outbox.append(&mut b.outbox);
        a.frontier = crate::span::latest(a.frontier, b.frontier);
        if a.prefix {
            // In a prefix, a waker still unknown woke before the first switch of its CPU in
            // the whole trace: the thread that switch puts out, once that switch is in.
            let first: BTreeMap<(usize, u32), (i64, Comm)> = a.cpus.iter().filter_map(|(k, c)| Some((*k, c.head_prev?))).collect();
            let waiting = std::mem::take(&mut a.heads);
            a.resolve_heads(waiting, |cpu| first.get(&cpu).copied().map(Waker::of));
            a.post(false, self.top);
        }
        a
    }

    fn background(&self, st: &SchedState) -> Option<Arc<dyn Background>> {
        st.board.clone().map(|b| b as Arc<dyn Background>)
    }

    fn end_merges(&self, st: &mut SchedState) {
        // The records after the last chunk's start, replayed on the workers rather than in
        // `finish` on one thread.
        st.end(self.top);
    }

    fn finish(&self, mut st: SchedState) -> SchedReport {
        let (Some(begin), Some(end)) = (st.span.begin, st.span.end) else { return SchedReport::default() };
        st.end(self.top);
        let mut results = Results::default();
        for shard in st.board.take().map(|b| b.take_states()).unwrap_or_default() {
            results.absorb(shard.results, self.top);
        }
        st.results = results;
        let name_of = |tid: i64| st.info.get(&tid).and_then(|i| i.name).map(|(_, c)| text(c.as_bytes()).into_owned());
        let mut threads: Vec<ThreadLatency> = st
            .results
            .tids
            .iter()
            .filter(|(_, t)| t.acc.count > 0)
            .map(|(&tid, t)| {
                let mut prios = t.prios.clone();
                prios.sort_by_key(|&(p, k)| (k, p));
                ThreadLatency {
                    tid,
                    pid: st.info.get(&tid).and_then(|i| i.pid).map(|(_, p)| p),
                    name: t.first.map(|(_, c)| text(c.as_bytes()).into_owned()).unwrap_or_default(),
                    stats: t.acc,
                    priorities: prios.into_iter().map(|(p, _)| p).collect(),
                }
            })
            .collect();
        threads.sort_by(|a, b| a.name.to_lowercase().cmp(&b.name.to_lowercase()).then(a.tid.cmp(&b.tid)));
        let priorities = st.results.prios.iter().map(|(&prio, a)| PrioLatency { prio, stats: *a }).collect();
        let top = st
            .results
            .top
            .iter()
            .map(|l| {
                let waker_tid = match l.waker {
                    Waker::Tid(t, _) => Some(t),
                    _ => None,
                };
                WakeLatency {
                    wakeup_ns: l.wake.ns,
                    switch_ns: l.switch.ns,
                    latency_ns: l.ns(),
                    prio: l.prio,
                    cpu: l.cpu,
                    tid: l.tid,
                    name: name_of(l.tid).unwrap_or_default(),
                    waker_tid,
                    waker_name: waker_tid.map(|t| name_of(t).unwrap_or_default()),
                }
            })
            .collect();
        SchedReport { begin_ns: Some(begin), end_ns: Some(end), total: st.results.total, threads, priorities, top }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// States merged right to left (most merges join runs that do not start at the first
    /// chunk, whose wake-ups wait for their waker) give what the engine's merge in time order
    /// gives.
    #[test]
    fn merge_is_associative() {
        crate::testing::check("sched", |set| Sched::new(set, Filter::default(), 10));
    }
}
