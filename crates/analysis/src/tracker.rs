//! The cross-chunk tracker: which thread runs on each CPU, and the pairing of a thread's
//! entries and exits (system calls) across chunks and CPUs.
//!
//! An LTTng kernel event does not say which thread it belongs to: the thread is the one the
//! last `sched_switch` of its CPU switched in. A system call's entry and exit may be in two
//! chunks, and on two CPUs when the thread migrated while blocked in the call. The tracker
//! keeps, per chunk:
//!
//! * per CPU (of one stream), the *head*: what happened before the chunk's first switch on that
//!   CPU, for a thread the chunk cannot name. `merge` names it from the earlier state's last
//!   switch on that CPU (chunks of one stream are merged in stream order);
//! * per *piece* — a run of one thread on one CPU between two switches — a summary of its
//!   calls: the exit that came before any entry (it ends a call entered earlier), the calls
//!   entered and exited within the piece (sent to the [`Sink`] at once, in parallel), and how
//!   the piece leaves the thread (inside a call entered at a given time, or not);
//! * per thread, once the pieces before a time are all known, the entry that waits for its
//!   exit. A thread's pieces never overlap in time, so folding them in start order pairs every
//!   exit with the entry a serial reading pairs it with. Merges happen in chunk start order, so
//!   when the state of chunks `0..=k` meets chunk `k+1`, every piece that starts before chunk
//!   `k+1`'s start is known: those can be folded (the pipelined merge of *Parallel trace
//!   analysis*, 2019, section 4.2, with the per-execution fragments of its section 4.2.2).
//!   Only a thread's own pieces matter to it, so a chunk's pieces are split by the thread's
//!   shard (`shards.rs`), and the merge hands them out ([`Tracker::hand_out`]): each shard folds
//!   its threads' pieces ([`Settle`]) on whichever worker is free, while later chunks are read.
//!
//! The rules are lttng-analyses': an exit ends the thread's pending entry, whatever its name;
//! an entry replaces a pending entry (a lost exit); an exit without a pending entry is dropped.
//! Events of a CPU before its first `sched_switch` in the trace, or while it runs the idle
//! thread (tid 0), belong to no thread.
//!
//! `syscalls` pairs calls with it; `io` also sends per-thread items (a `dup` entry's lookup)
//! that need the thread.

use std::sync::Arc;

use crate::engine::{records_hint, Chunk, Pool};
use crate::id_map::IdMap;
use crate::order::{EventKey, StreamCpu};
use crate::runs::sort_run;
use crate::shards::{shard_of, HandOut, Limit, Outbox, Run, Runs};

/// Where the tracker sends what it resolves.
pub(crate) trait Sink<E, X, A> {
    /// `tid`'s call entered with `entry` returned with `exit`.
    fn pair(&mut self, tid: i64, entry: E, exit: X);
    /// An event item `item` turned out to belong to `tid`.
    fn item(&mut self, tid: i64, item: A);
}

/// How a piece leaves its thread.
#[derive(Clone, Copy, Debug)]
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
    start: Option<EventKey>,
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
    fn entry(&mut self, key: EventKey, e: E) {
        self.start.get_or_insert(key);
        self.last = Last::Pending(e);
    }

    #[inline]
    fn exit<S: Sink<E, X, A>>(&mut self, key: EventKey, x: X, tid: Option<i64>, sink: &mut S) {
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
#[derive(Clone, Copy, Debug)]
pub(crate) struct Piece<E, X> {
    start: EventKey,
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
    /// The start of the last chunk covered (what later merges settle up to).
    last_begin: Option<i64>,
    cpus: CpuRuns<E, X, A>,
    /// Pieces not handed to the shards yet: chunks' pieces split by shard, and pieces of heads
    /// a merge named the thread of.
    outbox: Outbox<Piece<E, X>>,
    /// The chunk's pieces, while it is read.
    chunk_pieces: Vec<Piece<E, X>>,
    /// Where the buffers of pieces go once folded, and come from for new chunks.
    spare: Option<Arc<Pool<Piece<E, X>>>>,
}

impl<E, X, A> Default for Tracker<E, X, A> {
    fn default() -> Self {
        Tracker { live: false, root: false, begin: None, last_begin: None, cpus: CpuRuns::default(), outbox: Outbox::default(), chunk_pieces: Vec::new(), spare: None }
    }
}

/// The pairing of one shard's threads: their pieces not folded yet, and per thread the entry
/// waiting for its exit.
#[derive(Debug)]
pub(crate) struct Settle<E, X> {
    runs: Runs<Piece<E, X>>,
    pending: IdMap<i64, E>,
}

impl<E, X> Default for Settle<E, X> {
    fn default() -> Self {
        Settle { runs: Runs::default(), pending: IdMap::default() }
    }
}

impl<E: Copy, X: Copy> Settle<E, X> {
    /// Adds `runs` (from [`Tracker::hand_out`]) and folds, in start order, every piece that
    /// starts within `limit`, sending the pairs to `sink`.
    pub(crate) fn settle<A, S: Sink<E, X, A>>(&mut self, runs: Vec<Run<Piece<E, X>>>, limit: Limit, sink: &mut S) {
        for r in runs {
            self.runs.add(r);
        }
        let pending = &mut self.pending;
        self.runs.drain(|p| p.start, |k| limit.admits(k), |p| {
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
        });
    }
}

/// A tracker's [`CpuRun`]s by CPU key: a vector found through a map, with the last one looked
/// up remembered (a chunk reads one stream, which is usually one CPU's).
#[derive(Clone, Debug)]
struct CpuRuns<E, X, A> {
    runs: Vec<(StreamCpu, CpuRun<E, X, A>)>,
    at: IdMap<StreamCpu, usize>,
    last: usize,
}

impl<E, X, A> Default for CpuRuns<E, X, A> {
    fn default() -> Self {
        CpuRuns { runs: Vec::new(), at: IdMap::default(), last: 0 }
    }
}

impl<E, X, A> CpuRuns<E, X, A> {
    /// The index of `cpu`'s run, created when missing.
    #[inline]
    fn index(&mut self, cpu: StreamCpu) -> usize {
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
    pub(crate) fn entry(self, key: EventKey, e: E) {
        match self {
            Target::Thread(_, s) | Target::Head(s) => s.entry(key, e),
            Target::Nobody => {}
        }
    }

    /// A system call exit.
    #[inline]
    pub(crate) fn exit<S: Sink<E, X, A>>(self, key: EventKey, x: X, sink: &mut S) {
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
        Tracker { live: true, root: chunk.index == 0, begin: chunk.begin_ns, last_begin: chunk.begin_ns, ..Tracker::default() }
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
            self.last_begin = Some(ns);
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

    /// A `sched_switch` on `cpu` to `next_tid`.
    #[inline]
    pub(crate) fn switch(&mut self, cpu: StreamCpu, next_tid: i64) {
        let i = self.cpus.index(cpu);
        self.close_open(i);
        if let Some((_, run)) = self.cpus.runs.get_mut(i) {
            run.tail = Some((next_tid != 0).then_some(next_tid));
        }
    }

    /// What an event of `cpu` applies to; `ctx_tid` is the event's own thread, when it says.
    #[inline]
    pub(crate) fn target(&mut self, cpu: StreamCpu, ctx_tid: Option<i64>) -> Target<'_, E, X, A> {
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

    /// Ends the chunk: closes the open segments, splits its pieces by shard.
    pub(crate) fn end_chunk(&mut self)
    where
        E: Copy,
        X: Copy,
    {
        for i in 0..self.cpus.runs.len() {
            self.close_open(i);
        }
        let mut pieces = std::mem::take(&mut self.chunk_pieces);
        sort_run(&mut pieces, |p| p.start);
        let spare = self.spare.get_or_insert_with(Arc::default);
        self.outbox.add_chunk(pieces, |p| shard_of(p.tid), spare);
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
            self.outbox.add(Piece { start, tid, first_exit: head.first_exit, last: head.last });
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
        self.outbox.append(&mut later.outbox);
        self.last_begin = later.last_begin;
    }

    /// When this state starts at the trace's first chunk: the pieces not handed out yet, by
    /// shard, and how far the shards may fold them — up to the start of the last chunk merged
    /// (every piece before it is known), or everything with `end`.
    pub(crate) fn hand_out(&mut self, end: bool) -> HandOut<Piece<E, X>>
    where
        E: Copy,
        X: Copy,
    {
        if !self.root && !end {
            return None;
        }
        let runs = self.outbox.take(|p| shard_of(p.tid), |p| p.start);
        let limit = if end { Limit::END } else { Limit { ns: Some(self.last_begin.unwrap_or(i64::MIN)), key: None } };
        Some((runs, limit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                    let key = EventKey { ns: i as i64, stream: 0, pos: i as u64 };
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
