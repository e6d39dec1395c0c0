//! The blocked time by reason of `tracelens threads`, joined while the trace is read: memory
//! flat in the trace's size.
//!
//! [`with_waits`](crate::with_waits) gives each blocked interval of `threads` the reason of the
//! graph's state at the interval's last instant, over the whole [`ExecutionGraph`] kept to the
//! end (about 0.4 GB per GB of trace). [`WaitJoin`] gives the same sums with neither the graph
//! nor the intervals kept. Both sides come per thread in time order:
//!
//! * `Threads` ([`Threads::sending_waits`]) sends each thread's blocked intervals as its shards
//!   find them ([`WaitSink`]); a thread's next interval starts where its last one ended or later.
//! * [`GraphAnalysis::joining`](crate::GraphAnalysis::joining) builds the graph's chains in a
//!   mode that keeps only what may still change. A step whose wait has ended (its wake known) is
//!   never given to `Thread::set` again and never compared with one it is given, so once a step
//!   follows it, it and every step before it are final: the shard hands them on as *marks*
//!   (from this time on, this reason; the reasons before this time are final) and drops them.
//!   The wakes are kept as reasons in the states, not in a list; the CPUs' interrupts and the
//!   block requests' issuers are not kept.
//!
//! Per thread, the join holds the intervals not resolved yet and the marks still needed: an
//! interval whose last instant is before the thread's final marks takes its reason and is added
//! to the thread's sums; a mark no interval to come can fall in (the thread's next interval
//! starts after it) is dropped. What stays is the lag between the two sides, not the trace.
//! One thing reaches back: a fork of an exited thread's id starts its chain again, and every
//! instant before the fork then reads as before the thread existed (reason `unknown`, as the
//! whole graph's `state_at` reads it): the thread's sums so far move to `unknown` — exact, since
//! an interval is resolved only below the graph shard's latest op, which the fork cannot
//! precede.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};

use tracelens_analysis::kernel::IdMap;
use tracelens_analysis::{ThreadsReport, WaitSink};

use crate::replay::{shard_of, Mark, Sealed, SHARDS};
use crate::waits::{sorted_reasons, ThreadWaits, ThreadsWaitsReport, WaitReason};
#[cfg(doc)]
use crate::ExecutionGraph;
#[cfg(doc)]
use tracelens_analysis::Threads;

/// One thread in the join.
#[derive(Clone, Debug)]
struct Joined {
    /// Blocked intervals not resolved yet: (last instant, duration), in time order.
    waits: VecDeque<(i64, i64)>,
    /// Marks still needed: from this time on, this reason (before the first, `unknown`).
    marks: VecDeque<(i64, WaitReason)>,
    /// The reasons before this time are final.
    sealed: i64,
    /// No interval to come has its last instant before this time (the end of the last one).
    frontier: i64,
    /// Blocked time by reason so far, by [`WaitReason`] index.
    by: [i64; WaitReason::ALL.len()],
}

impl Default for Joined {
    fn default() -> Self {
        Joined { waits: VecDeque::new(), marks: VecDeque::new(), sealed: i64::MIN, frontier: i64::MIN, by: [0; WaitReason::ALL.len()] }
    }
}

impl Joined {
    /// Resolves the intervals whose last instant is before `limit` and the thread's final
    /// marks, and drops the marks no interval to come needs.
    fn resolve(&mut self, limit: i64) {
        let limit = limit.min(self.sealed);
        while let Some(&(at, ns)) = self.waits.front() {
            if at >= limit {
                break;
            }
            self.drop_marks(at);
            let reason = match self.marks.front() {
                Some(&(from, r)) if from <= at => r,
                _ => WaitReason::Unknown,
            };
            self.by[reason as usize] += ns;
            self.waits.pop_front();
        }
        let low = self.waits.front().map_or(self.frontier, |w| w.0);
        self.drop_marks(low);
    }

    /// Drops the marks that no instant from `at` on falls in.
    fn drop_marks(&mut self, at: i64) {
        while self.marks.get(1).is_some_and(|m| m.0 <= at) {
            self.marks.pop_front();
        }
    }

    fn mark(&mut self, s: &Sealed) {
        match s.mark {
            Mark::From(r) => {
                if self.marks.back().is_none_or(|m| m.1 != r) {
                    self.marks.push_back((s.ns, r));
                }
            }
            Mark::Upto => self.sealed = self.sealed.max(s.ns),
            Mark::Reborn => {
                // Every instant before the fork is now before the thread existed.
                let all: i64 = self.by.iter().sum();
                self.by = [0; WaitReason::ALL.len()];
                self.by[WaitReason::Unknown as usize] = all;
                self.marks.clear();
                self.sealed = i64::MIN;
            }
        }
    }
}

/// One shard of the join (the threads of one graph shard).
#[derive(Debug, Default)]
struct JoinShard {
    threads: IdMap<i64, Joined>,
    /// The time of the graph shard's latest op handed on: no fork to come is before it.
    cap: i64,
}

/// Joins the blocked intervals of `threads` ([`Threads::sending_waits`]) and the waits of the
/// execution graph ([`GraphAnalysis::joining`](crate::GraphAnalysis::joining)) as both are
/// found: each thread's blocked time by reason, the same as [`with_waits`](crate::with_waits)
/// (see the [module docs](self)).
#[derive(Debug)]
pub struct WaitJoin {
    shards: Vec<Mutex<JoinShard>>,
}

impl Default for WaitJoin {
    fn default() -> Self {
        WaitJoin { shards: (0..SHARDS).map(|_| Mutex::new(JoinShard { cap: i64::MIN, ..JoinShard::default() })).collect() }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl WaitJoin {
    /// A join with nothing yet.
    pub fn new() -> WaitJoin {
        WaitJoin::default()
    }

    /// Takes graph shard `shard`'s marks, in the order of its ops; `cap`: the time of its latest op.
    pub(crate) fn marks(&self, shard: usize, marks: &[Sealed], cap: i64) {
        let mut guard = lock(&self.shards[shard]);
        let s = &mut *guard;
        for m in marks {
            s.threads.entry(m.tid).or_default().mark(m);
        }
        // Resolved after the batch: a fork in it voids what came before (no fork to come is
        // before `cap`).
        s.cap = s.cap.max(cap);
        let mut last = None;
        for m in marks {
            if last != Some(m.tid) {
                last = Some(m.tid);
                if let Some(t) = s.threads.get_mut(&m.tid) {
                    t.resolve(s.cap);
                }
            }
        }
    }

    /// The report of `threads` with each thread's blocked time by reason, once both sides
    /// are done (the engine run of both returned).
    pub fn report(&self, threads: ThreadsReport) -> ThreadsWaitsReport {
        let mut shards: Vec<MutexGuard<'_, JoinShard>> = self.shards.iter().map(lock).collect();
        let (begin_ns, end_ns) = (threads.begin_ns, threads.end_ns);
        let threads = threads
            .threads
            .into_iter()
            .map(|life| {
                let by = shards[shard_of(life.tid)].threads.get_mut(&life.tid).map_or([0; WaitReason::ALL.len()], |t| {
                    t.sealed = i64::MAX;
                    t.resolve(i64::MAX);
                    t.by
                });
                ThreadWaits { blocked_by_reason: sorted_reasons(by), life }
            })
            .collect();
        ThreadsWaitsReport { begin_ns, end_ns, threads }
    }

    /// Intervals and marks held now, in all (for tests and measurements of the lag).
    pub fn held(&self) -> usize {
        self.shards.iter().map(|s| lock(s).threads.values().map(|t| t.waits.len() + t.marks.len()).sum::<usize>()).sum()
    }
}

impl WaitSink for WaitJoin {
    fn blocked(&self, waits: &[(i64, i64, i64)]) {
        let mut by: Vec<(usize, i64, i64, i64)> = waits.iter().filter(|w| w.2 > w.1).map(|&(tid, from, to)| (shard_of(tid), tid, from, to)).collect();
        // Stable: each thread's intervals stay in order.
        by.sort_by_key(|w| w.0);
        for group in by.chunk_by(|a, b| a.0 == b.0) {
            let mut guard = lock(&self.shards[group[0].0]);
            let s = &mut *guard;
            for &(_, tid, from, to) in group {
                let t = s.threads.entry(tid).or_default();
                t.waits.push_back((to - 1, to - from));
                t.frontier = to;
                t.resolve(s.cap);
            }
        }
    }
}
