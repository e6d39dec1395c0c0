//! `syscalls`: system calls per thread and per call — count, min/avg/max/stdev duration,
//! errors — as lttng-syscallstats counts them, computed in parallel.
//!
//! # What a chunk cannot know, and how merging resolves it
//!
//! An LTTng kernel event does not say which thread it belongs to: the thread is the one the
//! last `sched_switch` of its CPU switched in. A system call's entry and exit may be in two
//! chunks, and on two CPUs when the thread migrated while blocked in the call. The
//! tracker here keeps, per chunk:
//!
//! * per CPU (of one stream), the *head*: what happened before the chunk's first switch on that
//!   CPU, for a thread the chunk cannot name. `merge` names it from the earlier state's last
//!   switch on that CPU (chunks of one stream are merged in stream order);
//! * per *piece* — a run of one thread on one CPU between two switches — a summary of its
//!   calls: the exit that came before any entry (it ends a call entered earlier), the calls
//!   entered and exited within the piece (counted at once, in parallel), and how the piece
//!   leaves the thread (inside a call entered at a given time, or not);
//! * per thread, once the pieces before a time are all known, the entry that waits for its
//!   exit. A thread's pieces never overlap in time, so folding them in start order pairs every
//!   exit with the entry a serial reading pairs it with. Merges happen in chunk start order, so
//!   when the state of chunks `0..=k` meets chunk `k+1`, every piece that starts before chunk
//!   `k+1`'s start is known: those are folded (the pipelined merge of the 2019 paper, section
//!   4.2, with the per-execution fragments of its section 4.2.2).
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
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::sync::Arc;

use tracelens_ctf::EventView;
use tracelens_trace::TraceSet;

use crate::engine::{records_hint, Analysis, Chunk, Context, Pool};
use crate::filter::Filter;
use crate::kernel::{format_utc, Comm, KEvent, KernelMap, Kind, Kinds, What};

// ---------------------------------------------------------------------------------------------
// Shared pieces: event order, per-chunk positions, a fast hasher, thread names.
// ---------------------------------------------------------------------------------------------

/// Where an event sits in the one total order every cut of the trace agrees on: time, then
/// stream, then position in the stream (chunk index, then rank in the chunk: chunks of one
/// stream are numbered in stream order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Key {
    pub(crate) ns: i64,
    pub(crate) src: u32,
    pub(crate) pos: u64,
}

/// Hands out the [`Key`]s of one chunk's events.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Here {
    src: u32,
    chunk: u64,
    seq: u64,
}

impl Here {
    pub(crate) fn new(streams: &Streams, chunk: &Chunk) -> Here {
        Here { src: streams.src(chunk.trace, chunk.stream), chunk: (chunk.index as u64) << 40, seq: 0 }
    }

    #[inline]
    pub(crate) fn key(&mut self, ns: i64) -> Key {
        self.seq += 1;
        Key { ns, src: self.src, pos: self.chunk | self.seq }
    }

    /// The key of the CPU `cpu` of this chunk's stream (per-CPU state is per stream).
    #[inline]
    pub(crate) fn cpu(&self, cpu: u32) -> u64 {
        (u64::from(self.src) << 32) | u64::from(cpu)
    }
}

/// Numbers every stream of a trace set.
#[derive(Clone, Debug, Default)]
pub(crate) struct Streams {
    base: Vec<u32>,
}

impl Streams {
    pub(crate) fn new(set: &TraceSet) -> Streams {
        let mut base = Vec::with_capacity(set.traces.len());
        let mut n = 0u32;
        for t in &set.traces {
            base.push(n);
            n += t.streams.len() as u32;
        }
        Streams { base }
    }

    fn src(&self, trace: usize, stream: usize) -> u32 {
        self.base.get(trace).copied().unwrap_or(0) + stream as u32
    }
}

/// Maps keyed by small integers (thread ids, CPU keys), with a fast hash.
pub(crate) type FxMap<K, V> = crate::kernel::IdMap<K, V>;

/// The last name and process of each thread, as the events say (switches, state dump, forks):
/// "last" in event order, so it does not depend on the cut.
#[derive(Clone, Debug, Default)]
pub(crate) struct Names {
    map: FxMap<i64, ThreadName>,
}

#[derive(Clone, Copy, Debug, Default)]
struct ThreadName {
    comm: Option<(Key, Comm)>,
    pid: Option<(Key, i64)>,
}

impl Names {
    #[inline]
    pub(crate) fn comm(&mut self, tid: i64, key: Key, comm: &[u8]) {
        let e = self.map.entry(tid).or_default();
        if e.comm.as_ref().is_none_or(|(k, _)| *k < key) {
            e.comm = Some((key, Comm::new(comm)));
        }
    }

    #[inline]
    pub(crate) fn pid(&mut self, tid: i64, key: Key, pid: i64) {
        let e = self.map.entry(tid).or_default();
        if e.pid.as_ref().is_none_or(|(k, _)| *k < key) {
            e.pid = Some((key, pid));
        }
    }

    /// Records what a kernel event says about thread names and processes.
    pub(crate) fn observe(&mut self, k: &KEvent<'_>, key: Key) {
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

// ---------------------------------------------------------------------------------------------
// The tracker: threads of CPUs, pieces, pairing of entries and exits across chunks.
// ---------------------------------------------------------------------------------------------

/// Where the tracker sends what it resolves.
pub(crate) trait Sink<E, X, A> {
    /// `tid`'s call entered with `entry` returned with `exit`.
    fn pair(&mut self, tid: i64, entry: E, exit: X);
    /// An event item `item` turned out to belong to `tid`.
    fn item(&mut self, tid: i64, item: A);
}

/// How a piece leaves its thread.
#[derive(Clone, Debug)]
enum Last<E> {
    /// No entry or exit in the piece.
    Untouched,
    /// Out of any call.
    Cleared,
    /// Inside the call entered with this entry.
    Pending(E),
}

/// A piece being built, or a CPU's head (thread unknown: what it resolves is held).
#[derive(Clone, Debug)]
pub(crate) struct Seg<E, X, A> {
    start: Option<Key>,
    first_exit: Option<X>,
    last: Last<E>,
    held: Vec<Held<E, X, A>>,
}

#[derive(Clone, Debug)]
enum Held<E, X, A> {
    Pair(E, X),
    Item(A),
}

impl<E, X, A> Default for Seg<E, X, A> {
    fn default() -> Self {
        Seg { start: None, first_exit: None, last: Last::Untouched, held: Vec::new() }
    }
}

impl<E, X, A> Seg<E, X, A> {
    fn is_empty(&self) -> bool {
        self.start.is_none() && self.held.is_empty()
    }

    #[inline]
    fn entry(&mut self, key: Key, e: E) {
        self.start.get_or_insert(key);
        self.last = Last::Pending(e);
    }

    #[inline]
    fn exit<S: Sink<E, X, A>>(&mut self, key: Key, x: X, tid: Option<i64>, sink: &mut S) {
        self.start.get_or_insert(key);
        match std::mem::replace(&mut self.last, Last::Cleared) {
            Last::Pending(e) => match tid {
                Some(t) => sink.pair(t, e, x),
                None => self.held.push(Held::Pair(e, x)),
            },
            Last::Cleared => {}
            Last::Untouched => self.first_exit = Some(x),
        }
    }

    /// `self` then `next`, of the same thread on the same CPU with nothing in between.
    fn then(mut self, mut next: Seg<E, X, A>) -> Seg<E, X, A> {
        if self.is_empty() {
            return next;
        }
        if self.start.is_none() {
            // Only held items before: `next` decides the rest.
            self.held.append(&mut next.held);
            next.held = self.held;
            return next;
        }
        if next.start.is_none() {
            self.held.append(&mut next.held);
            return self;
        }
        if let Some(x) = next.first_exit {
            if let Last::Pending(e) = std::mem::replace(&mut self.last, Last::Cleared) {
                self.held.push(Held::Pair(e, x));
            }
        }
        self.held.append(&mut next.held);
        if !matches!(next.last, Last::Untouched) {
            self.last = next.last;
        }
        self
    }
}

/// A run of one thread on one CPU: how it uses and leaves the thread's pending entry.
#[derive(Clone, Debug)]
pub(crate) struct Piece<E, X> {
    start: Key,
    tid: i64,
    first_exit: Option<X>,
    last: Last<E>,
}

/// What a run of chunks knows of one CPU.
#[derive(Clone, Debug)]
struct CpuRun<E, X, A> {
    /// Before the run's first switch on the CPU (the thread is not known yet).
    head: Option<Seg<E, X, A>>,
    /// After its last switch: `Some(None)` idle, `Some(Some(tid))`; `None`: no switch.
    tail: Option<Option<i64>>,
    /// During a chunk: the segment being built (the head while `tail` is `None`).
    open: Seg<E, X, A>,
}

impl<E, X, A> Default for CpuRun<E, X, A> {
    fn default() -> Self {
        CpuRun { head: None, tail: None, open: Seg::default() }
    }
}

/// Threads of CPUs and pairing of system call entries (`E`) and exits (`X`) across chunks;
/// `A`: other per-thread items of events whose thread a chunk may not know.
#[derive(Clone, Debug)]
pub(crate) struct Tracker<E, X, A> {
    live: bool,
    root: bool,
    begin: Option<i64>,
    cpus: CpuRuns<E, X, A>,
    /// Pieces not folded yet, as runs sorted by start.
    runs: Vec<VecDeque<Piece<E, X>>>,
    /// The chunk's pieces, while it is read.
    chunk_pieces: Vec<Piece<E, X>>,
    /// Per thread, the entry waiting for its exit (pieces folded so far).
    pending: FxMap<i64, E>,
    /// Where the buffers of pieces go once folded, and come from for new chunks.
    spare: Option<Arc<Pool<Piece<E, X>>>>,
}

impl<E, X, A> Default for Tracker<E, X, A> {
    fn default() -> Self {
        Tracker { live: false, root: false, begin: None, cpus: CpuRuns::default(), runs: Vec::new(), chunk_pieces: Vec::new(), pending: FxMap::default(), spare: None }
    }
}

/// A tracker's [`CpuRun`]s by CPU key: a vector found through a map, with the last one looked
/// up remembered (a chunk reads one stream, which is usually one CPU's).
#[derive(Clone, Debug)]
struct CpuRuns<E, X, A> {
    runs: Vec<(u64, CpuRun<E, X, A>)>,
    at: FxMap<u64, usize>,
    last: usize,
}

impl<E, X, A> Default for CpuRuns<E, X, A> {
    fn default() -> Self {
        CpuRuns { runs: Vec::new(), at: FxMap::default(), last: 0 }
    }
}

impl<E, X, A> CpuRuns<E, X, A> {
    /// The index of `cpu`'s run, created when missing.
    #[inline]
    fn index(&mut self, cpu: u64) -> usize {
        if self.runs.get(self.last).is_some_and(|(c, _)| *c == cpu) {
            return self.last;
        }
        let i = match self.at.get(&cpu) {
            Some(&i) => i,
            None => {
                let i = self.runs.len();
                self.runs.push((cpu, CpuRun::default()));
                self.at.insert(cpu, i);
                i
            }
        };
        self.last = i;
        i
    }
}

/// What an event applies to: the thread's current segment, and the thread when known.
pub(crate) enum Target<'t, E, X, A> {
    /// A known thread's piece.
    Thread(i64, &'t mut Seg<E, X, A>),
    /// The CPU's head (thread not known yet).
    Head(&'t mut Seg<E, X, A>),
    /// Nobody (idle CPU, or before any switch in the trace).
    Nobody,
}

impl<E, X, A> Target<'_, E, X, A> {
    /// A system call entry.
    #[inline]
    pub(crate) fn entry(self, key: Key, e: E) {
        match self {
            Target::Thread(_, s) | Target::Head(s) => s.entry(key, e),
            Target::Nobody => {}
        }
    }

    /// A system call exit.
    #[inline]
    pub(crate) fn exit<S: Sink<E, X, A>>(self, key: Key, x: X, sink: &mut S) {
        match self {
            Target::Thread(t, s) => s.exit(key, x, Some(t), sink),
            Target::Head(s) => s.exit(key, x, None, sink),
            Target::Nobody => {}
        }
    }

    /// Another item of the thread.
    #[inline]
    pub(crate) fn item<S: Sink<E, X, A>>(self, a: A, sink: &mut S) {
        match self {
            Target::Thread(t, _) => sink.item(t, a),
            Target::Head(s) => s.held.push(Held::Item(a)),
            Target::Nobody => {}
        }
    }
}

impl<E, X, A> Tracker<E, X, A> {
    /// The empty state of `chunk`.
    pub(crate) fn new(chunk: &Chunk) -> Self {
        Tracker { live: true, root: chunk.index == 0, begin: chunk.begin_ns, ..Tracker::default() }
    }

    /// [`new`](Self::new), with the buffers of pieces taken from and given back to `spare`
    /// (shared by the chunks of a run: no allocation and page faults per chunk).
    pub(crate) fn with_spare(chunk: &Chunk, spare: &Arc<Pool<Piece<E, X>>>) -> Self {
        // About one piece (a run of a thread between switches) per 256 bytes of kernel trace.
        let chunk_pieces = spare.take(records_hint(chunk) / 4);
        Tracker { chunk_pieces, spare: Some(spare.clone()), ..Tracker::new(chunk) }
    }

    /// The chunk's start (what later merges settle up to).
    pub(crate) fn begin(&self) -> Option<i64> {
        self.begin
    }

    /// An event of the chunk at `ns`: a time that goes back before the chunk's start (an
    /// event older than its packet's beginning) lowers what merges settle up to.
    #[inline]
    pub(crate) fn saw(&mut self, ns: i64) {
        if self.begin.is_some_and(|b| ns < b) {
            self.begin = Some(ns);
        }
    }

    /// Whether this state starts at the trace's first chunk (everything before it is known).
    pub(crate) fn is_root(&self) -> bool {
        self.root
    }

    /// Closes the open segment of the CPU run at index `i`.
    fn close_open(&mut self, i: usize) {
        let root = self.root;
        let Some((_, run)) = self.cpus.runs.get_mut(i) else { return };
        let seg = std::mem::take(&mut run.open);
        match run.tail {
            None => {
                if !root && !seg.is_empty() {
                    run.head = Some(match run.head.take() {
                        Some(h) => h.then(seg),
                        None => seg,
                    });
                }
            }
            Some(Some(tid)) => {
                if let Some(start) = seg.start {
                    self.chunk_pieces.push(Piece { start, tid, first_exit: seg.first_exit, last: seg.last });
                }
            }
            Some(None) => {}
        }
    }

    /// A `sched_switch` on `cpu` (a [`Here::cpu`] key) to `next_tid`.
    #[inline]
    pub(crate) fn switch(&mut self, cpu: u64, next_tid: i64) {
        let i = self.cpus.index(cpu);
        self.close_open(i);
        if let Some((_, run)) = self.cpus.runs.get_mut(i) {
            run.tail = Some((next_tid != 0).then_some(next_tid));
        }
    }

    /// What an event of `cpu` applies to; `ctx_tid` is the event's own thread, when it says.
    #[inline]
    pub(crate) fn target(&mut self, cpu: u64, ctx_tid: Option<i64>) -> Target<'_, E, X, A> {
        let i = self.cpus.index(cpu);
        if let Some(t) = ctx_tid {
            let want = (t != 0).then_some(t);
            if self.cpus.runs.get(i).is_none_or(|(_, r)| r.tail != Some(want)) {
                self.switch(cpu, t);
            }
        }
        let root = self.root;
        let Some((_, run)) = self.cpus.runs.get_mut(i) else { return Target::Nobody };
        let seg = &mut run.open;
        match run.tail {
            None if root => Target::Nobody,
            None => Target::Head(seg),
            Some(None) => Target::Nobody,
            Some(Some(t)) => Target::Thread(t, seg),
        }
    }

    /// Ends the chunk: closes the open segments.
    pub(crate) fn end_chunk(&mut self) {
        for i in 0..self.cpus.runs.len() {
            self.close_open(i);
        }
        let mut pieces = std::mem::take(&mut self.chunk_pieces);
        if !pieces.is_empty() {
            sort_run(&mut pieces, |p| p.start);
            self.runs.push(pieces.into());
        } else if let Some(spare) = &self.spare {
            spare.give(pieces);
        }
    }

    fn resolve<S: Sink<E, X, A>>(&mut self, head: Seg<E, X, A>, thread: Option<i64>, sink: &mut S) {
        let Some(tid) = thread else { return };
        for h in head.held {
            match h {
                Held::Pair(e, x) => sink.pair(tid, e, x),
                Held::Item(a) => sink.item(tid, a),
            }
        }
        if let Some(start) = head.start {
            self.runs.push(VecDeque::from([Piece { start, tid, first_exit: head.first_exit, last: head.last }]));
        }
    }

    /// `self` then `later` (the run of chunks right after it in time order).
    pub(crate) fn merge<S: Sink<E, X, A>>(&mut self, mut later: Tracker<E, X, A>, sink: &mut S) {
        if !later.live {
            return;
        }
        if !self.live {
            *self = later;
            return;
        }
        let mut resolved = Vec::new();
        for (c, mut lrun) in later.cpus.runs.drain(..) {
            match self.cpus.at.get(&c).and_then(|&i| self.cpus.runs.get_mut(i)) {
                Some((_, erun)) => {
                    let head = lrun.head.take();
                    match erun.tail {
                        Some(thread) => {
                            erun.tail = lrun.tail.or(erun.tail);
                            if let Some(h) = head {
                                resolved.push((h, thread));
                            }
                        }
                        None => {
                            if !self.root {
                                erun.head = match (erun.head.take(), head) {
                                    (Some(a), Some(b)) => Some(a.then(b)),
                                    (a, b) => a.or(b),
                                };
                            }
                            erun.tail = lrun.tail;
                        }
                    }
                }
                None => {
                    if self.root {
                        lrun.head = None;
                    }
                    self.cpus.at.insert(c, self.cpus.runs.len());
                    self.cpus.runs.push((c, lrun));
                }
            }
        }
        for (h, thread) in resolved {
            self.resolve(h, thread, sink);
        }
        self.runs.append(&mut later.runs);
        if self.root {
            if let Some(f) = later.begin {
                self.settle(Some(f), sink);
            }
        }
    }

    /// Folds, in start order, every piece that starts before `frontier` (all with `None`).
    pub(crate) fn settle<S: Sink<E, X, A>>(&mut self, frontier: Option<i64>, sink: &mut S) {
        let pending = &mut self.pending;
        let spare = &self.spare;
        let give = |run: VecDeque<Piece<E, X>>| {
            if let Some(s) = spare {
                s.give(run.into());
            }
        };
        drain_runs_into(&mut self.runs, |p| p.start, |k| before_frontier(k, frontier), |p| {
            if let Some(x) = p.first_exit {
                if let Some(e) = pending.remove(&p.tid) {
                    sink.pair(p.tid, e, x);
                }
            }
            match p.last {
                Last::Pending(e) => {
                    pending.insert(p.tid, e);
                }
                Last::Cleared => {
                    pending.remove(&p.tid);
                }
                Last::Untouched => {}
            }
        }, give);
    }

    /// Folds everything left (the end of the trace).
    pub(crate) fn finish<S: Sink<E, X, A>>(&mut self, sink: &mut S) {
        self.settle(None, sink);
    }
}

/// Takes the items of `runs` (each sorted by `key`) in key order — on equal keys, the earlier
/// run first — while their keys are `before` the limit, passing each to `f`;
/// hands the runs left empty to `spare`.
pub(crate) fn drain_runs_into<T, K: Ord + Copy>(
    runs: &mut Vec<VecDeque<T>>,
    key: impl Fn(&T) -> K,
    before: impl Fn(&K) -> bool,
    mut f: impl FnMut(T),
    mut spare: impl FnMut(VecDeque<T>),
) {
    use std::collections::binary_heap::PeekMut;
    let mut heads: BinaryHeap<Reverse<(K, usize)>> = runs.iter().enumerate().filter_map(|(i, r)| r.front().map(|t| Reverse((key(t), i)))).collect();
    while let Some(mut top) = heads.peek_mut() {
        let Reverse((k, i)) = *top;
        if !before(&k) {
            break;
        }
        let Some(t) = runs[i].pop_front() else {
            PeekMut::pop(top);
            continue;
        };
        match runs[i].front() {
            Some(next) => *top = Reverse((key(next), i)),
            None => {
                PeekMut::pop(top);
            }
        }
        f(t);
    }
    runs.retain_mut(|r| {
        if r.is_empty() {
            spare(std::mem::take(r));
            false
        } else {
            true
        }
    });
}

/// A merge key's first component as a number: keys in order have it in order (so that most
/// comparisons of a merge are of two numbers).
pub(crate) trait Coarse {
    /// The number (ties are broken by the full key).
    fn coarse(&self) -> i64;
}

impl Coarse for Key {
    #[inline]
    fn coarse(&self) -> i64 {
        self.ns
    }
}

#[cfg(test)]
impl Coarse for u8 {
    #[inline]
    fn coarse(&self) -> i64 {
        i64::from(*self)
    }
}

/// Which of `k` sorted sources holds the smallest head — on equal heads, the first source —
/// as a tournament of losers (Knuth's replacement selection): after the winner's head changes,
/// one pass from its leaf to the root, ⌈log2 k⌉ comparisons (mostly of [`Coarse`] numbers),
/// finds the next winner. `io` merges its runs of facts with it (fewer instructions than a
/// binary heap there; the analyses whose runs are longer-lived keep [`drain_runs_into`]).
#[derive(Debug)]
pub(crate) struct LoserTree<K> {
    /// The head of each source (`None`: spent), then spent padding up to a power of two.
    heads: Vec<Option<K>>,
    /// The [`Coarse`] number of each head (`i64::MAX` when spent).
    coarse: Vec<i64>,
    /// Internal nodes (1..): the loser of the match played there; 0: the winner.
    nodes: Vec<usize>,
}

impl<K: Ord + Copy + Coarse> LoserTree<K> {
    /// The tournament of sources with these heads.
    pub(crate) fn new(mut heads: Vec<Option<K>>) -> LoserTree<K> {
        let m = heads.len().next_power_of_two();
        heads.resize(m, None);
        let coarse = heads.iter().map(|h| h.as_ref().map_or(i64::MAX, Coarse::coarse)).collect();
        let mut t = LoserTree { heads, coarse, nodes: vec![0; m] };
        // Winners of the subtrees, leaves at m..2m.
        let mut win: Vec<usize> = vec![0; 2 * m];
        for (i, w) in win.iter_mut().skip(m).enumerate() {
            *w = i;
        }
        for n in (1..m).rev() {
            let (a, b) = (win[2 * n], win[2 * n + 1]);
            let (w, l) = if t.less(b, a) { (b, a) } else { (a, b) };
            win[n] = w;
            t.nodes[n] = l;
        }
        t.nodes[0] = if m > 1 { win[1] } else { 0 };
        t
    }

    /// Whether source `a`'s head comes before source `b`'s (spent sources last).
    #[inline(always)]
    fn less(&self, a: usize, b: usize) -> bool {
        let (x, y) = (self.coarse[a], self.coarse[b]);
        if x != y {
            return x < y;
        }
        match (&self.heads[a], &self.heads[b]) {
            (Some(x), Some(y)) => match x.cmp(y) {
                std::cmp::Ordering::Less => true,
                std::cmp::Ordering::Equal => a < b,
                std::cmp::Ordering::Greater => false,
            },
            (Some(_), None) => true,
            _ => false,
        }
    }

    /// The source with the smallest head, unless all are spent.
    #[inline]
    pub(crate) fn winner(&self) -> Option<usize> {
        let w = self.nodes[0];
        self.heads[w].as_ref().map(|_| w)
    }

    /// Gives the winner its next head (`None`: spent) and plays its matches again.
    #[inline(always)]
    pub(crate) fn replace(&mut self, head: Option<K>) {
        let m = self.nodes.len();
        let mut w = self.nodes[0];
        self.coarse[w] = head.as_ref().map_or(i64::MAX, Coarse::coarse);
        self.heads[w] = head;
        let mut n = (m + w) / 2;
        while n > 0 {
            let l = self.nodes[n];
            if self.less(l, w) {
                self.nodes[n] = w;
                w = l;
            }
            n /= 2;
        }
        self.nodes[0] = w;
    }
}

/// Sorts `v` by `key` (stably) unless it is sorted already (as a chunk's records, read in
/// stream order, nearly always are): no scratch buffer then.
pub(crate) fn sort_run<T, K: Ord>(v: &mut [T], key: impl Fn(&T) -> K) {
    if !v.windows(2).all(|w| key(&w[0]) <= key(&w[1])) {
        v.sort_by_key(key);
    }
}

/// Whether `k` is before `frontier` (always with `None`).
#[inline]
pub(crate) fn before_frontier(k: &Key, frontier: Option<i64>) -> bool {
    frontier.is_none_or(|f| k.ns < f)
}

// ---------------------------------------------------------------------------------------------
// Duration statistics.
// ---------------------------------------------------------------------------------------------

/// Count, extremes and exact sums of a set of durations (ns): the mean and the standard
/// deviation come from integer sums, so they do not depend on the order of the values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Durations {
    /// How many.
    pub count: u64,
    /// Shortest (0 when `count` is 0).
    pub min_ns: i64,
    /// Longest (0 when `count` is 0).
    pub max_ns: i64,
    /// Sum.
    pub sum_ns: i128,
    /// Sum of squares.
    pub sum_sq: u128,
}

impl Durations {
    /// Adds one duration.
    #[inline]
    pub fn add(&mut self, d: i64) {
        if self.count == 0 {
            self.min_ns = d;
            self.max_ns = d;
        } else {
            self.min_ns = self.min_ns.min(d);
            self.max_ns = self.max_ns.max(d);
        }
        self.count += 1;
        self.sum_ns += i128::from(d);
        let a = u128::from(d.unsigned_abs());
        self.sum_sq = self.sum_sq.saturating_add(a * a);
    }

    /// Adds another set.
    pub fn merge(&mut self, o: &Durations) {
        if o.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = *o;
            return;
        }
        self.min_ns = self.min_ns.min(o.min_ns);
        self.max_ns = self.max_ns.max(o.max_ns);
        self.count += o.count;
        self.sum_ns += o.sum_ns;
        self.sum_sq = self.sum_sq.saturating_add(o.sum_sq);
    }

    /// The mean, in ns (0 without values).
    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.count as f64
        }
    }

    /// The sample standard deviation (n - 1 in the denominator, as Python's
    /// `statistics.stdev`), in ns; `None` with fewer than two values.
    pub fn stdev_ns(&self) -> Option<f64> {
        if self.count < 2 {
            return None;
        }
        let n = i128::from(self.count as i64);
        // n * sum(x^2) - (sum x)^2, exactly when it fits.
        let exact = (self.sum_sq)
            .checked_mul(n as u128)
            .and_then(|a| self.sum_ns.checked_mul(self.sum_ns).map(|b| (a, b.unsigned_abs())))
            .and_then(|(a, b)| a.checked_sub(b));
        let var = match exact {
            Some(num) => num as f64 / ((n * (n - 1)) as f64),
            None => {
                let mean = self.sum_ns as f64 / n as f64;
                ((self.sum_sq as f64 - mean * self.sum_ns as f64) / (n - 1) as f64).max(0.0)
            }
        };
        Some(var.sqrt())
    }

    /// `{"count","min_ns","max_ns","avg_ns","stdev_ns","total_ns"}` (nulls when undefined).
    pub fn to_json(&self) -> String {
        let f = |v: Option<f64>| v.map_or_else(|| "null".to_string(), json_f64);
        format!(
            "{{\"count\":{},\"min_ns\":{},\"max_ns\":{},\"avg_ns\":{},\"stdev_ns\":{},\"total_ns\":{}}}",
            self.count,
            if self.count > 0 { self.min_ns.to_string() } else { "null".into() },
            if self.count > 0 { self.max_ns.to_string() } else { "null".into() },
            f((self.count > 0).then(|| self.mean_ns())),
            f(self.stdev_ns()),
            self.sum_ns
        )
    }
}

/// A float as JSON (finite; 3 decimals are plenty for nanoseconds).
pub(crate) fn json_f64(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.3}")
    } else {
        "null".into()
    }
}

/// A string as a JSON string.
pub(crate) fn json_str(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// Microseconds with 3 decimals, as lttng-analyses prints durations.
pub fn us(ns: f64) -> String {
    format!("{:.3}", ns / 1000.0)
}

/// Linux (x86_64, arm, arm64: asm-generic) error names, by number.
const ERRNO: &[&str] = &[
    "",
    "EPERM",
    "ENOENT",
    "ESRCH",
    "EINTR",
    "EIO",
    "ENXIO",
    "E2BIG",
    "ENOEXEC",
    "EBADF",
    "ECHILD",
    "EAGAIN",
    "ENOMEM",
    "EACCES",
    "EFAULT",
    "ENOTBLK",
    "EBUSY",
    "EEXIST",
    "EXDEV",
    "ENODEV",
    "ENOTDIR",
    "EISDIR",
    "EINVAL",
    "ENFILE",
    "EMFILE",
    "ENOTTY",
    "ETXTBSY",
    "EFBIG",
    "ENOSPC",
    "ESPIPE",
    "EROFS",
    "EMLINK",
    "EPIPE",
    "EDOM",
    "ERANGE",
    "EDEADLK",
    "ENAMETOOLONG",
    "ENOLCK",
    "ENOSYS",
    "ENOTEMPTY",
    "ELOOP",
    "",
    "ENOMSG",
    "EIDRM",
    "ECHRNG",
    "EL2NSYNC",
    "EL3HLT",
    "EL3RST",
    "ELNRNG",
    "EUNATCH",
    "ENOCSI",
    "EL2HLT",
    "EBADE",
    "EBADR",
    "EXFULL",
    "ENOANO",
    "EBADRQC",
    "EBADSLT",
    "",
    "EBFONT",
    "ENOSTR",
    "ENODATA",
    "ETIME",
    "ENOSR",
    "ENONET",
    "ENOPKG",
    "EREMOTE",
    "ENOLINK",
    "EADV",
    "ESRMNT",
    "ECOMM",
    "EPROTO",
    "EMULTIHOP",
    "EDOTDOT",
    "EBADMSG",
    "EOVERFLOW",
    "ENOTUNIQ",
    "EBADFD",
    "EREMCHG",
    "ELIBACC",
    "ELIBBAD",
    "ELIBSCN",
    "ELIBMAX",
    "ELIBEXEC",
    "EILSEQ",
    "ERESTART",
    "ESTRPIPE",
    "EUSERS",
    "ENOTSOCK",
    "EDESTADDRREQ",
    "EMSGSIZE",
    "EPROTOTYPE",
    "ENOPROTOOPT",
    "EPROTONOSUPPORT",
    "ESOCKTNOSUPPORT",
    "EOPNOTSUPP",
    "EPFNOSUPPORT",
    "EAFNOSUPPORT",
    "EADDRINUSE",
    "EADDRNOTAVAIL",
    "ENETDOWN",
    "ENETUNREACH",
    "ENETRESET",
    "ECONNABORTED",
    "ECONNRESET",
    "ENOBUFS",
    "EISCONN",
    "ENOTCONN",
    "ESHUTDOWN",
    "ETOOMANYREFS",
    "ETIMEDOUT",
    "ECONNREFUSED",
    "EHOSTDOWN",
    "EHOSTUNREACH",
    "EALREADY",
    "EINPROGRESS",
    "ESTALE",
    "EUCLEAN",
    "ENOTNAM",
    "ENAVAIL",
    "EISNAM",
    "EREMOTEIO",
    "EDQUOT",
    "ENOMEDIUM",
    "EMEDIUMTYPE",
    "ECANCELED",
    "ENOKEY",
    "EKEYEXPIRED",
    "EKEYREVOKED",
    "EKEYREJECTED",
    "EOWNERDEAD",
    "ENOTRECOVERABLE",
    "ERFKILL",
    "EHWPOISON",
];

/// The name of a negative return value (`-2` → `ENOENT`), or the number.
pub fn errno_name(ret: i64) -> String {
    match usize::try_from(ret.unsigned_abs()).ok().and_then(|i| ERRNO.get(i)) {
        Some(n) if ret < 0 && !n.is_empty() => (*n).to_string(),
        _ => ret.to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// The `syscalls` analysis.
// ---------------------------------------------------------------------------------------------

/// System call names, numbered once for the trace set.
#[derive(Clone, Debug, Default)]
pub(crate) struct CallNames {
    names: Vec<Box<str>>,
    ids: FxMap<Box<str>, u16>,
}

impl CallNames {
    pub(crate) fn new(set: &TraceSet) -> CallNames {
        let mut cn = CallNames::default();
        cn.id("unknown");
        for nr in 0..1024 {
            if let Some(n) = crate::kernel::syscall_name(nr) {
                cn.id(n);
            }
        }
        for t in &set.traces {
            for p in t.plans.iter() {
                for e in p.events.iter() {
                    let name = e.class.name.as_str();
                    let name = name.rsplit_once(':').map_or(name, |(_, e)| e);
                    let base = name.strip_prefix("compat_").unwrap_or(name);
                    for pre in ["syscall_entry_", "syscall_exit_", "sys_enter_", "sys_exit_", "sys_"] {
                        if let Some(s) = base.strip_prefix(pre) {
                            cn.id(s);
                        }
                    }
                }
            }
        }
        cn
    }

    fn id(&mut self, name: &str) -> u16 {
        if let Some(&i) = self.ids.get(name) {
            return i;
        }
        let i = self.names.len().min(u16::MAX as usize) as u16;
        if (i as usize) == self.names.len() {
            self.names.push(name.into());
            self.ids.insert(name.into(), i);
        }
        i
    }

    /// The id of `name` (0, `unknown`, for a name not numbered at the start).
    #[inline]
    pub(crate) fn get(&self, cache: &mut FxMap<(usize, usize), u16>, name: &str) -> u16 {
        let k = (name.as_ptr() as usize, name.len());
        if let Some(&i) = cache.get(&k) {
            return i;
        }
        let i = self.ids.get(name).copied().unwrap_or(0);
        cache.insert(k, i);
        i
    }

    pub(crate) fn name(&self, id: u16) -> &str {
        self.names.get(id as usize).map_or("unknown", |s| s)
    }

    /// How many names are numbered.
    pub(crate) fn len(&self) -> usize {
        self.names.len()
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
    /// Calls that returned a negative value.
    pub errors: u64,
    /// Negative return values and how many times each came.
    pub by_error: BTreeMap<i64, u64>,
}

impl CallStats {
    #[inline]
    fn add(&mut self, d: i64, ret: i64) {
        self.durations.add(d);
        if ret < 0 {
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

    /// `success: N, ENOENT: M, ...` (successes first, then errors by number).
    pub fn returns(&self) -> String {
        let mut s = format!("success: {}", self.durations.count - self.errors);
        for (ret, n) in self.by_error.iter().rev() {
            s.push_str(&format!(", {}: {n}", errno_name(*ret)));
        }
        s
    }
}

/// Where `syscalls` counts a call.
struct CallSink<'a> {
    per: &'a mut FxMap<(i64, u16), CallStats>,
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
    streams: Streams,
    names: CallNames,
    sel: Filter,
}

impl Syscalls {
    /// The analysis for `set`, counting what `filter` selects: calls that return within its time
    /// range, on its CPUs, of its threads (by id, and by last known name).
    pub fn new(set: &TraceSet, filter: Filter) -> Syscalls {
        Syscalls { map: KernelMap::new(set), streams: Streams::new(set), names: CallNames::new(set), sel: filter }
    }
}

/// What `syscalls` accumulates for a run of chunks.
#[derive(Debug, Default)]
pub struct SyscallsState {
    tracker: Tracker<SysEntry, SysExit, Never>,
    here: Here,
    per: FxMap<(i64, u16), CallStats>,
    names: Names,
    cache: FxMap<(usize, usize), u16>,
    first_ns: Option<i64>,
    last_ns: Option<i64>,
}

/// One thread's calls.
#[derive(Clone, Debug, PartialEq, Eq)]
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
    pub calls: Vec<(String, CallStats)>,
}

/// The result of `syscalls`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SyscallsReport {
    /// First and last kernel event times read (ns from the clock's origin).
    pub begin_ns: Option<i64>,
    /// See `begin_ns`.
    pub end_ns: Option<i64>,
    /// Threads, the busiest first (ties by tid).
    pub threads: Vec<ThreadCalls>,
    /// All threads together, per call name, the most frequent first.
    pub calls: Vec<(String, CallStats)>,
    /// Calls counted.
    pub total: u64,
}

impl Analysis for Syscalls {
    type State = SyscallsState;
    type Output = SyscallsReport;

    fn new_state(&self, chunk: &Chunk) -> SyscallsState {
        SyscallsState { tracker: Tracker::new(chunk), here: Here::new(&self.streams, chunk), ..SyscallsState::default() }
    }

    #[inline]
    fn on_event(&self, st: &mut SyscallsState, ev: &EventView<'_, '_>, cx: &Context<'_, '_>) {
        const WANT: Kinds = Kinds::of(&[What::SysEntry, What::SysExit, What::SchedSwitch, What::Fork, What::StatedumpProcess]);
        let Some(k) = self.map.decode_only(ev, cx, WANT) else { return };
        if !self.sel.time(k.ns) {
            if self.sel.end_ns.is_some_and(|e| k.ns > e) {
                return;
            }
        } else {
            st.first_ns = Some(st.first_ns.map_or(k.ns, |f| f.min(k.ns)));
            st.last_ns = Some(st.last_ns.map_or(k.ns, |l| l.max(k.ns)));
        }
        st.tracker.saw(k.ns);
        let cpu = st.here.cpu(k.cpu);
        match k.kind {
            Kind::SyscallEntry { name, .. } => {
                let key = st.here.key(k.ns);
                let id = self.names.get(&mut st.cache, name);
                st.tracker.target(cpu, k.tid).entry(key, SysEntry { ns: k.ns, name: id });
            }
            Kind::SyscallExit { ret, .. } => {
                let key = st.here.key(k.ns);
                let mut sink = CallSink { per: &mut st.per, sel: &self.sel };
                st.tracker.target(cpu, k.tid).exit(key, SysExit { ns: k.ns, ret, cpu: k.cpu }, &mut sink);
            }
            Kind::SchedSwitch { next_tid, .. } => {
                let key = st.here.key(k.ns);
                st.tracker.switch(cpu, next_tid);
                st.names.observe(&k, key);
            }
            Kind::StatedumpProcess { .. } | Kind::ProcessFork { .. } => {
                let key = st.here.key(k.ns);
                st.names.observe(&k, key);
            }
            _ => {}
        }
    }

    fn end_chunk(&self, st: &mut SyscallsState, _cx: &Context<'_, '_>) {
        st.tracker.end_chunk();
        st.cache = FxMap::default();
    }

    fn merge(&self, mut a: SyscallsState, b: SyscallsState) -> SyscallsState {
        let mut sink = CallSink { per: &mut a.per, sel: &self.sel };
        a.tracker.merge(b.tracker, &mut sink);
        for (k, v) in b.per {
            match a.per.entry(k) {
                MapEntry::Occupied(mut o) => o.get_mut().merge(&v),
                MapEntry::Vacant(e) => {
                    e.insert(v);
                }
            }
        }
        a.names.merge(b.names);
        a.first_ns = crate::engine::earliest(a.first_ns, b.first_ns);
        a.last_ns = crate::engine::latest(a.last_ns, b.last_ns);
        a
    }

    fn finish(&self, mut st: SyscallsState) -> SyscallsReport {
        let mut sink = CallSink { per: &mut st.per, sel: &self.sel };
        st.tracker.finish(&mut sink);
        let mut by_tid: BTreeMap<i64, Vec<(String, CallStats)>> = BTreeMap::new();
        let mut all: BTreeMap<String, CallStats> = BTreeMap::new();
        let mut total = 0;
        let mut by_id: FxMap<u16, CallStats> = FxMap::default();
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
        SyscallsReport { begin_ns: st.first_ns, end_ns: st.last_ns, threads, calls, total }
    }
}

impl SyscallsReport {
    /// Text tables (durations in µs): all threads per call, then per thread, like
    /// lttng-syscallstats; `limit` caps the number of threads shown (0: all).
    pub fn to_text(&self, limit: usize) -> String {
        let mut out = String::new();
        if let (Some(b), Some(e)) = (self.begin_ns, self.end_ns) {
            out.push_str(&format!("Timerange: [{}, {}] UTC\n", format_utc(b), format_utc(e)));
        }
        let line = |out: &mut String, name: &str, c: &CallStats| {
            let d = &c.durations;
            out.push_str(&format!(
                "{:<38} {:>10} {:>12} {:>12} {:>12} {:>12}  {}\n",
                name,
                d.count,
                us(d.min_ns as f64),
                us(d.mean_ns()),
                us(d.max_ns as f64),
                d.stdev_ns().map_or_else(|| "?".to_string(), us),
                c.returns()
            ));
        };
        let header = |out: &mut String, title: &str| {
            out.push_str(&format!("{:<38} {:>10} {:>12} {:>12} {:>12} {:>12}  {}\n", title, "Count", "Min", "Average", "Max", "Stdev", "Return values"));
        };
        out.push_str("\nSyscalls statistics, all threads (usec)\n");
        header(&mut out, "Syscall");
        for (name, c) in &self.calls {
            line(&mut out, name, c);
        }
        out.push_str(&format!("{:<38} {:>10}\n", "Total:", self.total));
        out.push_str("\nPer-TID syscalls statistics (usec)\n");
        let n = if limit == 0 { usize::MAX } else { limit };
        for t in self.threads.iter().take(n) {
            let pid = t.pid.map_or_else(|| "?".to_string(), |p| p.to_string());
            header(&mut out, &format!("{} ({}, TID: {})", t.comm, pid, t.tid));
            for (name, c) in &t.calls {
                line(&mut out, &format!(" - {name}"), c);
            }
            out.push_str(&format!("{:<38} {:>10}\n", "Total:", t.total));
            out.push_str(&"-".repeat(113));
            out.push('\n');
        }
        if self.threads.len() > n {
            out.push_str(&format!("({} more threads; --limit to show them)\n", self.threads.len() - n));
        }
        out.push_str(&format!("\nTotal syscalls: {}\n", self.total));
        out
    }

    /// The report as one JSON object: `{"begin_ns","end_ns","total","calls":[{"name",
    /// "count","min_ns","max_ns","avg_ns","stdev_ns","total_ns","errors","returns":{...}}],
    /// "threads":[{"tid","pid","comm","total","calls":[...]}]}`.
    pub fn to_json(&self) -> String {
        let opt = |v: Option<i64>| v.map_or_else(|| "null".to_string(), |v| v.to_string());
        let calls = |v: &[(String, CallStats)]| {
            let items: Vec<String> = v
                .iter()
                .map(|(name, c)| {
                    let d = c.durations.to_json();
                    let rets: Vec<String> = c.by_error.iter().map(|(r, n)| format!("{}:{n}", json_str(&errno_name(*r)))).collect();
                    format!(
                        "{{\"name\":{},{},\"errors\":{},\"returns\":{{\"success\":{}{}{}}}}}",
                        json_str(name),
                        &d[1..d.len() - 1],
                        c.errors,
                        c.durations.count - c.errors,
                        if rets.is_empty() { "" } else { "," },
                        rets.join(",")
                    )
                })
                .collect();
            format!("[{}]", items.join(","))
        };
        let threads: Vec<String> = self
            .threads
            .iter()
            .map(|t| format!("{{\"tid\":{},\"pid\":{},\"comm\":{},\"total\":{},\"calls\":{}}}", t.tid, opt(t.pid), json_str(&t.comm), t.total, calls(&t.calls)))
            .collect();
        format!(
            "{{\"begin_ns\":{},\"end_ns\":{},\"total\":{},\"calls\":{},\"threads\":[{}]}}",
            opt(self.begin_ns),
            opt(self.end_ns),
            self.total,
            calls(&self.calls),
            threads.join(",")
        )
    }
}

#[cfg(test)]
pub(crate) mod tests {
    //! Merging is associative: states merged in any tree (here: right to left, so that most
    //! merges join runs that do not start at the first chunk) give what the engine's left-to-right
    //! merge gives.

    use super::*;
    use crate::engine::{chunks, Engine, Options};
    use tracelens_ctf::{Cursor, Item};

    /// Reads every chunk into its own state, then merges them right to left.
    pub(crate) fn fold_right<A: Analysis>(set: &TraceSet, a: &A, chunk_size: u64) -> A::Output {
        let mut states = Vec::new();
        for chunk in chunks(set, chunk_size) {
            let trace = &set.traces[chunk.trace];
            let stream = &trace.streams[chunk.stream];
            let mut cursor = Cursor::with_packets(&trace.class, &trace.plans, stream, chunk.packets.clone());
            let mut st = a.new_state(&chunk);
            while let Some(item) = cursor.advance().expect("decodes") {
                if item == Item::Event {
                    if let Some(ev) = cursor.event() {
                        let cx = Context { chunk: &chunk, trace, stream, packet: cursor.packet_index() };
                        a.on_event(&mut st, &ev, &cx);
                    }
                }
            }
            a.end_chunk(&mut st, &Context { chunk: &chunk, trace, stream, packet: cursor.packet_index() });
            states.push(st);
        }
        let mut acc: Option<A::State> = None;
        while let Some(s) = states.pop() {
            acc = Some(match acc {
                None => s,
                Some(later) => a.merge(s, later),
            });
        }
        a.finish(acc.unwrap_or_default())
    }

    /// A synthetic trace with small packets, in a fresh directory.
    pub(crate) fn synth(tag: &str, seed: u64) -> (std::path::PathBuf, TraceSet) {
        let dir = std::env::temp_dir().join(format!("tracelens-assoc-{tag}-{}-{seed}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let opts = tracelens_synth::Options { cpus: 3, threads: 12, events: 20_000, seed, packet_size: 4096 };
        tracelens_synth::generate(&dir, &opts).expect("synth");
        let set = TraceSet::open(&[&dir]).expect("open");
        (dir, set)
    }

    /// Checks that right-to-left merging gives the engine's output.
    pub(crate) fn check<A: Analysis>(tag: &str, make: impl Fn(&TraceSet) -> A)
    where
        A::Output: PartialEq + std::fmt::Debug,
    {
        for seed in [1, 2] {
            let (dir, set) = synth(tag, seed);
            let a = make(&set);
            let want = Engine::new(&set, &Options { threads: 1, chunk_size: u64::MAX }).run(&a).expect("runs");
            for chunk_size in [1, 20_000] {
                assert!(fold_right(&set, &a, chunk_size) == want, "{tag}: right-to-left merge differs (chunk size {chunk_size})");
            }
            drop(set);
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    #[test]
    fn merge_is_associative() {
        check("syscalls", |set| Syscalls::new(set, Filter::default()));
    }

    /// `drain_runs_into` takes items in key order, the earlier run first on equal keys, stops at
    /// the limit and keeps what is left, for any number of runs.
    #[test]
    fn runs_drain_in_key_order() {
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            seed >> 33
        };
        for k in 0..12usize {
            // (key, run, rank in run): keys repeat across and within runs.
            let mut runs: Vec<VecDeque<(u64, usize, usize)>> = (0..k)
                .map(|r| {
                    let n = (next() % 9) as usize;
                    let mut keys: Vec<u64> = (0..n).map(|_| next() % 20).collect();
                    keys.sort_unstable();
                    keys.into_iter().enumerate().map(|(i, key)| (key, r, i)).collect()
                })
                .collect();
            let mut want: Vec<(u64, usize, usize)> = runs.iter().flatten().copied().filter(|t| t.0 < 15).collect();
            want.sort_unstable();
            let left: usize = runs.iter().flatten().filter(|t| t.0 >= 15).count();
            let mut got = Vec::new();
            let mut spent = 0;
            drain_runs_into(&mut runs, |t| t.0, |key| *key < 15, |t| got.push(t), |_| spent += 1);
            assert_eq!(got, want, "{k} runs");
            assert_eq!(runs.iter().map(VecDeque::len).sum::<usize>(), left);
            assert!(runs.iter().all(|r| !r.is_empty()));
            assert_eq!(spent + runs.len(), k);
        }
    }

    #[test]
    fn loser_tree_picks_smallest_then_first() {
        let mut t = LoserTree::new(vec![Some(5u8), None, Some(3), Some(3), Some(9)]);
        let mut order = Vec::new();
        while let Some(w) = t.winner() {
            order.push(w);
            t.replace(None);
        }
        assert_eq!(order, [2, 3, 0, 4]);
        assert_eq!(LoserTree::<u8>::new(Vec::new()).winner(), None);
        assert_eq!(LoserTree::new(vec![Some(1u8)]).winner(), Some(0));
        // Merging sorted runs: key order, the earlier run first on equal keys.
        let mut seed = 11u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as u8
        };
        for k in 0..12usize {
            let runs: Vec<Vec<u8>> = (0..k)
                .map(|_| {
                    let mut v: Vec<u8> = (0..next() % 9).map(|_| next() % 20).collect();
                    v.sort_unstable();
                    v
                })
                .collect();
            let mut at = vec![0usize; k];
            let mut t = LoserTree::new(runs.iter().map(|r| r.first().copied()).collect());
            let mut got = Vec::new();
            while let Some(w) = t.winner() {
                got.push((runs[w][at[w]], w));
                at[w] += 1;
                t.replace(runs[w].get(at[w]).copied());
            }
            let mut want: Vec<(u8, usize)> = runs.iter().enumerate().flat_map(|(r, v)| v.iter().map(move |&x| (x, r))).collect();
            want.sort_unstable();
            assert_eq!(got, want, "{k} runs");
        }
    }

    struct Pairs(Vec<(u32, u32)>);

    impl Sink<u32, u32, u32> for Pairs {
        fn pair(&mut self, _tid: i64, e: u32, x: u32) {
            self.0.push((e, x));
        }
        fn item(&mut self, _tid: i64, _a: u32) {}
    }

    /// Held pairs, first exit, how it leaves the thread, held items.
    type Summary = (Vec<(u32, u32)>, Option<u32>, Option<Option<u32>>, usize);

    /// The summary of a segment.
    fn summary(s: Seg<u32, u32, u32>) -> Summary {
        let mut pairs = Vec::new();
        let mut items = 0;
        for h in s.held {
            match h {
                Held::Pair(e, x) => pairs.push((e, x)),
                Held::Item(_) => items += 1,
            }
        }
        let last = match s.last {
            Last::Untouched => None,
            Last::Cleared => Some(None),
            Last::Pending(e) => Some(Some(e)),
        };
        (pairs, s.first_exit, last, items)
    }

    /// Heads of one thread composed piecewise (`then`) equal the head read in one go.
    #[test]
    fn heads_compose() {
        // Event codes: 0 entry, 1 exit, 2 item; ids are positions.
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for _ in 0..2000 {
            let n = (next() % 8) as usize;
            let evs: Vec<u64> = (0..n).map(|_| next() % 3).collect();
            let cuts: Vec<usize> = {
                let mut c: Vec<usize> = (0..(next() % 4)).map(|_| (next() % (n as u64 + 1)) as usize).collect();
                c.sort_unstable();
                c
            };
            let read = |range: std::ops::Range<usize>| {
                let mut s: Seg<u32, u32, u32> = Seg::default();
                let mut sink = Pairs(Vec::new());
                for i in range {
                    let key = Key { ns: i as i64, src: 0, pos: i as u64 };
                    match evs[i] {
                        0 => s.entry(key, i as u32),
                        1 => s.exit(key, i as u32, None, &mut sink),
                        _ => s.held.push(Held::Item(i as u32)),
                    }
                }
                assert!(sink.0.is_empty());
                s
            };
            let whole = read(0..n);
            let mut bounds = vec![0];
            bounds.extend(cuts);
            bounds.push(n);
            let mut parts = bounds.windows(2).map(|w| read(w[0]..w[1]));
            let mut acc = parts.next().unwrap_or_default();
            for p in parts {
                acc = acc.then(p);
            }
            let (mut a, b) = (summary(acc), summary(whole));
            a.0.sort_unstable();
            let mut b = b;
            b.0.sort_unstable();
            assert_eq!(a, b, "events {evs:?} cut at {bounds:?}");
        }
    }
}
