//! `syscalls`: system calls per thread and per call — count, min/avg/max/stdev duration,
//! errors — as lttng-syscallstats counts them, computed in parallel.
//!
//! # In parallel
//!
//! The thread of each event and the pairing of entries and exits across chunks and CPUs are
//! the cross-chunk tracker's (`tracker.rs`); this module counts the pairs it resolves, per
//! thread and call, and names threads by the last name the events give them (in [`EventKey`]
//! order).
//!
//! Durations are kept as integer nanosecond sums and sums of squares, so the result does not
//! depend on the order in which calls are counted: any cut of the trace and any number of
//! threads give the same report.
//!
//! # Semantics (lttng-analyses')
//!
//! * The thread of an event is the last thread switched in on its CPU (or the event's own
//!   `tid` context when it has one); events on a CPU before its first `sched_switch`, or while
//!   it runs the idle thread (tid 0), belong to no thread and are not counted.
//! * An exit ends the thread's pending entry, whatever its name (a call is named by its entry);
//!   an entry replaces a pending entry (a lost exit); an exit without a pending entry is
//!   dropped.
//! * A call is counted when its exit is within `--begin`/`--end` and on a `--cpu` CPU;
//!   `--tid`/`--procname` select threads by their last known name.

use std::collections::hash_map::Entry as MapEntry;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use tracelens_ctf::EventView;
use tracelens_trace::TraceSet;

use crate::call_names::CallNames;
use crate::durations::Durations;
use crate::engine::{Analysis, Background, Chunk, Context, Pool};
use crate::errno::{errno_name, is_error_return};
use crate::filter::Filter;
use crate::id_map::IdMap;
use crate::kernel::{Comm, KEvent, KernelMap, Kind, Kinds, What};
use crate::order::{EventCounter, EventKey, StreamCpu};
use crate::span::Span;
use crate::shards::{shard_of, Board, Limit, Mail, Run, Shard, SHARDS};
use crate::tracker::{Piece, Settle, Sink, Tracker};

/// The last name and process of each thread, as the events say (switches, state dump, forks):
/// "last" in event order, so it does not depend on the cut.
#[derive(Clone, Debug, Default)]
pub(crate) struct Names {
    map: IdMap<i64, ThreadName>,
}

#[derive(Clone, Copy, Debug, Default)]
struct ThreadName {
    comm: Option<(EventKey, Comm)>,
    pid: Option<(EventKey, i64)>,
}

impl Names {
    #[inline]
    pub(crate) fn comm(&mut self, tid: i64, key: EventKey, comm: &[u8]) {
        let e = self.map.entry(tid).or_default();
        if e.comm.as_ref().is_none_or(|(k, _)| *k < key) {
            e.comm = Some((key, Comm::new(comm)));
        }
    }

    #[inline]
    pub(crate) fn pid(&mut self, tid: i64, key: EventKey, pid: i64) {
        let e = self.map.entry(tid).or_default();
        if e.pid.as_ref().is_none_or(|(k, _)| *k < key) {
            e.pid = Some((key, pid));
        }
    }

    /// Records what a kernel event says about thread names and processes.
    pub(crate) fn observe(&mut self, k: &KEvent<'_>, key: EventKey) {
        match k.kind {
            Kind::SchedSwitch { prev_tid, prev_comm, next_tid, next_comm, .. } => {
                self.comm(prev_tid, key, prev_comm);
                self.comm(next_tid, key, next_comm);
            }
            Kind::StatedumpProcess { tid, pid, name, .. } => {
                self.comm(tid, key, name);
                self.pid(tid, key, pid);
            }
            Kind::ProcessFork { parent_tid, parent_pid, child_tid, child_pid, child_comm } => {
                self.comm(child_tid, key, child_comm);
                if let Some(p) = child_pid {
                    self.pid(child_tid, key, p);
                }
                if let Some(p) = parent_pid {
                    self.pid(parent_tid, key, p);
                }
            }
            _ => {}
        }
        if let (Some(t), Some(p)) = (k.tid, k.pid) {
            self.pid(t, key, p);
        }
    }

    pub(crate) fn merge(&mut self, other: Names) {
        for (tid, n) in other.map {
            let e = self.map.entry(tid).or_default();
            if let Some((k, c)) = n.comm {
                if e.comm.as_ref().is_none_or(|(k0, _)| *k0 < k) {
                    e.comm = Some((k, c));
                }
            }
            if let Some((k, p)) = n.pid {
                if e.pid.as_ref().is_none_or(|(k0, _)| *k0 < k) {
                    e.pid = Some((k, p));
                }
            }
        }
    }

    pub(crate) fn get_comm(&self, tid: i64) -> Option<String> {
        self.map.get(&tid).and_then(|n| n.comm).map(|(_, c)| c.to_string())
    }

    pub(crate) fn get_pid(&self, tid: i64) -> Option<i64> {
        self.map.get(&tid).and_then(|n| n.pid).map(|(_, p)| p)
    }
}

/// Never: `syscalls` has no per-thread items besides calls.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Never {}

#[derive(Clone, Copy, Debug)]
pub(crate) struct SysEntry {
    ns: i64,
    name: u16,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct SysExit {
    ns: i64,
    ret: i64,
    cpu: u32,
}

/// Statistics of one call (of one thread, or of all).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallStats {
    /// Durations, entry to exit.
    pub durations: Durations,
    /// Calls that returned an error: −4095 to −1 ([`is_error_return`]; other negative values,
    /// such as addresses above 2 GiB from a 32-bit `mmap2`, are successes).
    pub errors: u64,
    /// Error return values and how many times each came.
    pub by_error: BTreeMap<i64, u64>,
}

impl CallStats {
    #[inline]
    fn add(&mut self, d: i64, ret: i64) {
        self.durations.add(d);
        if is_error_return(ret) {
            self.errors += 1;
            *self.by_error.entry(ret).or_default() += 1;
        }
    }

    fn merge(&mut self, o: &CallStats) {
        self.durations.merge(&o.durations);
        self.errors += o.errors;
        for (k, v) in &o.by_error {
            *self.by_error.entry(*k).or_default() += v;
        }
    }
}

/// Where `syscalls` counts a call.
struct CallSink<'a> {
    per: &'a mut IdMap<(i64, u16), CallStats>,
    sel: &'a Filter,
}

impl Sink<SysEntry, SysExit, Never> for CallSink<'_> {
    #[inline]
    fn pair(&mut self, tid: i64, e: SysEntry, x: SysExit) {
        if !self.sel.time(x.ns) || !self.sel.cpu(x.cpu) || !self.sel.tid(tid) {
            return;
        }
        self.per.entry((tid, e.name)).or_default().add(x.ns - e.ns, x.ret);
    }

    fn item(&mut self, _tid: i64, item: Never) {
        match item {}
    }
}

/// The `syscalls` analysis (lttng-syscallstats). Build it with [`Syscalls::new`].
#[derive(Debug)]
pub struct Syscalls {
    map: KernelMap,
    names: CallNames,
    sel: Arc<Filter>,
    /// Buffers of the tracker's pieces, reused.
    pieces: Arc<Pool<Piece<SysEntry, SysExit>>>,
}

impl Syscalls {
    /// The analysis for `set`, counting what `filter` selects: calls that return within its time
    /// range, on its CPUs, of its threads (by id, and by last known name).
    pub fn new(set: &TraceSet, filter: Filter) -> Syscalls {
        Syscalls { map: KernelMap::new(set), names: CallNames::new(set), sel: Arc::new(filter), pieces: Arc::default() }
    }
}

/// What `syscalls` accumulates for a run of chunks.
#[derive(Debug, Default)]
pub struct SyscallsState {
    tracker: Tracker<SysEntry, SysExit, Never>,
    counter: EventCounter,
    per: IdMap<(i64, u16), CallStats>,
    /// The counts of the chunks read, by the shard of their thread (`end_chunk` fills it):
    /// the shards add them up, so that the ordered merges only move them.
    counts: Vec<Vec<((i64, u16), CallStats)>>,
    names: Names,
    cache: IdMap<(usize, usize), u16>,
    span: Span,
    /// The shards pairing the calls that span pieces (the first chunk's state).
    board: Option<Arc<Board<SyscallsShard>>>,
    /// The last pieces are handed out ([`Analysis::end_merges`] or `finish`).
    ended: bool,
}

/// One shard of the pairing: its threads' pieces, and the calls it pairs, counted.
#[derive(Debug, Default)]
struct SyscallsShard {
    settle: Settle<SysEntry, SysExit>,
    per: IdMap<(i64, u16), CallStats>,
}

/// Work for a [`SyscallsShard`].
struct SyscallsWork {
    runs: Vec<Run<Piece<SysEntry, SysExit>>>,
    limit: Limit,
    sel: Arc<Filter>,
    /// Counts of calls the chunks paired, to add to the shard's.
    counts: Vec<((i64, u16), CallStats)>,
}

impl Shard for SyscallsShard {
    type Work = SyscallsWork;
    type Parcel = ();

    fn apply(&mut self, work: &mut SyscallsWork, _mail: &Mail<'_, ()>) -> Result<(), u64> {
        for (k, v) in work.counts.drain(..) {
            add_count(&mut self.per, k, v);
        }
        let mut sink = CallSink { per: &mut self.per, sel: &work.sel };
        self.settle.settle(std::mem::take(&mut work.runs), work.limit, &mut sink);
        Ok(())
    }
}

impl SyscallsState {
    /// Hands the pieces to the shards (when the state starts at the first chunk).
    fn hand_out(&mut self, end: bool, sel: &Arc<Filter>) {
        if self.ended {
            return;
        }
        self.ended = end;
        let Some((runs, limit)) = self.tracker.hand_out(end) else { return };
        // The calls the merges paired, with the chunks' counts.
        self.split_counts();
        let board = self.board.get_or_insert_with(Arc::default);
        let counts = &mut self.counts;
        let mut take = |s: usize| counts.get_mut(s).map(std::mem::take).unwrap_or_default();
        board.post_runs(runs, |s, runs| SyscallsWork { runs, limit, sel: sel.clone(), counts: take(s) });
        for s in 0..SHARDS {
            let counts = take(s);
            if !counts.is_empty() {
                board.post(s, SyscallsWork { runs: Vec::new(), limit, sel: sel.clone(), counts });
            }
        }
    }

    /// Moves the counts of `per` to [`counts`](Self::counts), by shard.
    fn split_counts(&mut self) {
        if self.per.is_empty() {
            return;
        }
        self.counts.resize_with(SHARDS, Vec::new);
        for (k, v) in self.per.drain() {
            self.counts[shard_of(k.0)].push((k, v));
        }
    }
}

/// Adds `v` to the count of `k` in `per`.
fn add_count(per: &mut IdMap<(i64, u16), CallStats>, k: (i64, u16), v: CallStats) {
    match per.entry(k) {
        MapEntry::Occupied(mut o) => o.get_mut().merge(&v),
        MapEntry::Vacant(e) => {
            e.insert(v);
        }
    }
}

/// One thread's calls.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ThreadCalls {
    /// Thread id.
    pub tid: i64,
    /// Its process, when known.
    pub pid: Option<i64>,
    /// Its last known name.
    pub comm: String,
    /// Calls counted.
    pub total: u64,
    /// Per call name, the most frequent first (ties by name).
    #[serde(serialize_with = "serialize_calls")]
    pub calls: Vec<(String, CallStats)>,
}

/// The result of `syscalls`; serialized as `{"begin_ns", "end_ns", "total", "calls": [{"name",
/// ...}], "threads": [{"tid", "pid", "comm", "total", "calls": [...]}]}` (calls as
/// [`CallStats`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SyscallsReport {
    /// First and last kernel event times read (ns from the clock's origin).
    pub begin_ns: Option<i64>,
    /// See `begin_ns`.
    pub end_ns: Option<i64>,
    /// Calls counted.
    pub total: u64,
    /// All threads together, per call name, the most frequent first.
    #[serde(serialize_with = "serialize_calls")]
    pub calls: Vec<(String, CallStats)>,
    /// Threads, the busiest first (ties by tid).
    pub threads: Vec<ThreadCalls>,
}

impl Analysis for Syscalls {
    type State = SyscallsState;
    type Output = SyscallsReport;

    fn new_state(&self, chunk: &Chunk) -> SyscallsState {
        SyscallsState { tracker: Tracker::with_spare(chunk, &self.pieces), ..SyscallsState::default() }
    }

    #[inline]
    fn on_event(&self, st: &mut SyscallsState, ev: &EventView<'_, '_>, cx: &Context<'_, '_>) {
        const WANT: Kinds = Kinds::of(&[What::SysEntry, What::SysExit, What::SchedSwitch, What::Fork, What::StatedumpProcess]);
        let Some(k) = self.map.decode_only(ev, cx, WANT) else { return };
        if !st.span.read(&self.sel, k.ns) {
            return;
        }
        st.tracker.saw(k.ns);
        let cpu = StreamCpu::new(cx, k.cpu);
        match k.kind {
            Kind::SyscallEntry { name, .. } => {
                let key = st.counter.key(k.ns, cx);
                let id = self.names.get(&mut st.cache, name);
                st.tracker.target(cpu, k.tid).entry(key, SysEntry { ns: k.ns, name: id });
            }
            Kind::SyscallExit { ret, .. } => {
                let key = st.counter.key(k.ns, cx);
                let mut sink = CallSink { per: &mut st.per, sel: &self.sel };
                st.tracker.target(cpu, k.tid).exit(key, SysExit { ns: k.ns, ret, cpu: k.cpu }, &mut sink);
            }
            Kind::SchedSwitch { next_tid, .. } => {
                let key = st.counter.key(k.ns, cx);
                st.tracker.switch(cpu, next_tid);
                st.names.observe(&k, key);
            }
            Kind::StatedumpProcess { .. } | Kind::ProcessFork { .. } => {
                let key = st.counter.key(k.ns, cx);
                st.names.observe(&k, key);
            }
            _ => {}
        }
    }

    fn end_chunk(&self, st: &mut SyscallsState, _cx: &Context<'_, '_>) {
        st.tracker.end_chunk();
        st.cache = IdMap::default();
        st.split_counts();
    }

    fn merge(&self, mut a: SyscallsState, b: SyscallsState) -> SyscallsState {
        let mut sink = CallSink { per: &mut a.per, sel: &self.sel };
        a.tracker.merge(b.tracker, &mut sink);
        for (k, v) in b.per {
            add_count(&mut a.per, k, v);
        }
        if a.counts.is_empty() {
            a.counts = b.counts;
        } else {
            for (x, mut y) in a.counts.iter_mut().zip(b.counts) {
                x.append(&mut y);
            }
        }
        a.names.merge(b.names);
        a.span.merge(b.span);
        a.hand_out(false, &self.sel);
        a
    }

    fn background(&self, st: &SyscallsState) -> Option<Arc<dyn Background>> {
        st.board.clone().map(|b| b as Arc<dyn Background>)
    }

    fn end_merges(&self, st: &mut SyscallsState) {
        // The pieces after the last chunk's start, paired on the workers rather than in
        // `finish` on one thread.
        st.hand_out(true, &self.sel);
    }

    fn finish(&self, mut st: SyscallsState) -> SyscallsReport {
        st.hand_out(true, &self.sel);
        for shard in st.board.take().map(|b| b.take_states()).unwrap_or_default() {
            for (k, v) in shard.per {
                add_count(&mut st.per, k, v);
            }
        }
        // Counts not handed out (no shards: a state that never started at the first chunk).
        for (k, v) in st.counts.drain(..).flatten() {
            add_count(&mut st.per, k, v);
        }
        let mut by_tid: BTreeMap<i64, Vec<(String, CallStats)>> = BTreeMap::new();
        let mut all: BTreeMap<String, CallStats> = BTreeMap::new();
        let mut total = 0;
        let mut by_id: IdMap<u16, CallStats> = IdMap::default();
        for ((tid, name), cs) in st.per {
            if !self.sel.procnames.is_empty() {
                let comm = st.names.get_comm(tid);
                if !comm.as_deref().is_some_and(|c| self.sel.procname(c.as_bytes())) {
                    continue;
                }
            }
            by_id.entry(name).or_default().merge(&cs);
            total += cs.durations.count;
            by_tid.entry(tid).or_default().push((self.names.name(name).to_string(), cs));
        }
        for (id, cs) in by_id {
            all.entry(self.names.name(id).to_string()).or_default().merge(&cs);
        }
        let order = |v: &mut Vec<(String, CallStats)>| {
            v.sort_by(|a, b| b.1.durations.count.cmp(&a.1.durations.count).then_with(|| a.0.cmp(&b.0)));
        };
        let mut threads: Vec<ThreadCalls> = by_tid
            .into_iter()
            .map(|(tid, mut calls)| {
                order(&mut calls);
                ThreadCalls {
                    tid,
                    pid: st.names.get_pid(tid),
                    comm: st.names.get_comm(tid).unwrap_or_default(),
                    total: calls.iter().map(|c| c.1.durations.count).sum(),
                    calls,
                }
            })
            .collect();
        threads.sort_by(|a, b| b.total.cmp(&a.total).then(a.tid.cmp(&b.tid)));
        let mut calls: Vec<(String, CallStats)> = all.into_iter().collect();
        order(&mut calls);
        SyscallsReport { begin_ns: st.span.begin, end_ns: st.span.end, total, calls, threads }
    }
}

/// `{"count", "min_ns", "max_ns", "avg_ns", "stdev_ns", "total_ns", "errors", "returns":
/// {"success": N, "ENOENT": N, ...}}` (see [`Durations`]).
impl Serialize for CallStats {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Call<'a> {
            #[serde(flatten)]
            durations: &'a Durations,
            errors: u64,
            returns: Returns<'a>,
        }
        Call { durations: &self.durations, errors: self.errors, returns: Returns(self) }.serialize(s)
    }
}

/// The return values of a call: successes, then each error by name.
struct Returns<'a>(&'a CallStats);

impl Serialize for Returns<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let c = self.0;
        let mut m = s.serialize_map(Some(1 + c.by_error.len()))?;
        m.serialize_entry("success", &(c.durations.count - c.errors))?;
        for (ret, n) in &c.by_error {
            m.serialize_entry(&errno_name(*ret), n)?;
        }
        m.end()
    }
}

/// Calls by name, as a list of `{"name", ...CallStats}`.
fn serialize_calls<S: Serializer>(calls: &[(String, CallStats)], s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Named<'a> {
        name: &'a str,
        #[serde(flatten)]
        stats: &'a CallStats,
    }
    s.collect_seq(calls.iter().map(|(name, stats)| Named { name, stats }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_is_associative() {
        crate::testing::check("syscalls", |set| Syscalls::new(set, Filter::default()));
    }
}
