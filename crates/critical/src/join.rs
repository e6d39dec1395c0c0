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

impl Joined {
    /// A thread none of whose intervals has its last instant before `begin`.
    fn new(begin: i64) -> Joined {
        Joined { waits: VecDeque::new(), marks: VecDeque::new(), sealed: i64::MIN, frontier: begin, by: [0; WaitReason::ALL.len()] }
    }

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

    /// Takes a mark of the graph; marks from `end` on are not kept (no interval ends after it).
    fn mark(&mut self, s: &Sealed, end: i64) {
        match s.mark {
            Mark::From(r) => {
                if s.ns < end && self.marks.back().is_none_or(|m| m.1 != r) {
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
/// gives on the whole graph. Per thread it holds the intervals whose reason is not final yet
/// and the graph's final reasons an interval to come may still fall in: the lag between the two
/// sides, not the trace.
#[derive(Debug)]
pub struct WaitJoin {
    shards: Vec<Mutex<JoinShard>>,
    /// The intervals' last instants are in `[begin, end)` (the time range of `threads`): marks
    /// outside it are not kept.
    begin: i64,
    end: i64,
}

impl Default for WaitJoin {
    fn default() -> Self {
        WaitJoin { shards: (0..SHARDS).map(|_| Mutex::new(JoinShard { cap: i64::MIN, ..JoinShard::default() })).collect(), begin: i64::MIN, end: i64::MAX }
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

    /// A join of the intervals of a `threads` run over the time range `begin_ns..=end_ns`
    /// (its [`Filter`](tracelens_analysis::Filter)'s): the graph's reasons outside it are
    /// dropped as they come, not kept until the end.
    pub fn between(begin_ns: Option<i64>, end_ns: Option<i64>) -> WaitJoin {
        WaitJoin { begin: begin_ns.unwrap_or(i64::MIN), end: end_ns.map_or(i64::MAX, |e| e.saturating_add(1)), ..WaitJoin::default() }
    }

    /// Takes graph shard `shard`'s marks, in the order of its ops; `cap`: the time of its latest op.
    pub(crate) fn marks(&self, shard: usize, marks: &[Sealed], cap: i64) {
        let mut guard = lock(&self.shards[shard]);
        let s = &mut *guard;
        // A fork in the batch voids what came before it: resolve after the whole batch then
        // (no fork to come is before `cap`); else as each thread's marks come.
        let reborn = marks.iter().any(|m| m.mark == Mark::Reborn);
        if !reborn {
            s.cap = s.cap.max(cap);
        }
        for group in marks.chunk_by(|a, b| a.tid == b.tid) {
            let t = s.threads.entry(group[0].tid).or_insert_with(|| Joined::new(self.begin));
            group.iter().for_each(|m| t.mark(m, self.end));
            if !reborn {
                t.resolve(s.cap);
            }
        }
        if reborn {
            s.cap = s.cap.max(cap);
            for group in marks.chunk_by(|a, b| a.tid == b.tid) {
                if let Some(t) = s.threads.get_mut(&group[0].tid) {
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
        // By shard (a counting sort: each thread's intervals stay in order), one lock each.
        let mut at = [0usize; SHARDS + 1];
        waits.iter().for_each(|w| at[shard_of(w.0) + 1] += 1);
        for i in 1..=SHARDS {
            at[i] += at[i - 1];
        }
        let mut by = vec![(0, 0, 0); waits.len()];
        let mut next = at;
        for &w in waits {
            let s = shard_of(w.0);
            by[next[s]] = w;
            next[s] += 1;
        }
        for (shard, m) in self.shards.iter().enumerate() {
            let group = &by[at[shard]..at[shard + 1]];
            if group.is_empty() {
                continue;
            }
            let mut guard = lock(m);
            let s = &mut *guard;
            for &(tid, from, to) in group.iter().filter(|w| w.2 > w.1) {
                let t = s.threads.entry(tid).or_insert_with(|| Joined::new(self.begin));
                t.waits.push_back((to - 1, to - from));
                t.frontier = to;
                t.resolve(s.cap);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::shard_of;

    fn mark(tid: i64, ns: i64, mark: Mark) -> Sealed {
        Sealed { tid, ns, mark }
    }

    fn from(tid: i64, ns: i64, r: WaitReason) -> Sealed {
        mark(tid, ns, Mark::From(r))
    }

    fn sums(join: &WaitJoin, tid: i64) -> [i64; WaitReason::ALL.len()] {
        let mut s = lock(&join.shards[shard_of(tid)]);
        let t = s.threads.get_mut(&tid).expect("thread in the join");
        t.sealed = i64::MAX;
        t.resolve(i64::MAX);
        t.by
    }

    fn by(v: &[(WaitReason, i64)]) -> [i64; WaitReason::ALL.len()] {
        let mut by = [0; WaitReason::ALL.len()];
        v.iter().for_each(|&(r, ns)| by[r as usize] += ns);
        by
    }

    #[test]
    fn each_wait_counts_once_whichever_side_comes_first() {
        use WaitReason::*;
        let join = WaitJoin::new();
        let s = shard_of(7);
        // A wait before the chain starts, one before the graph has its reason, one after.
        join.blocked(&[(7, 0, 5), (7, 15, 25)]);
        join.marks(s, &[from(7, 10, Unknown), from(7, 20, Timer), mark(7, 30, Mark::Upto)], 40);
        assert_eq!(join.held(), 1, "resolved: both waits; kept: the mark from 20 on");
        join.blocked(&[(7, 30, 35), (7, 35, 60)]);
        join.marks(s, &[from(7, 30, Thread), from(7, 40, Network), mark(7, 50, Mark::Upto)], 70);
        // 35..60 ends at 59, after what is final (50): kept until the end.
        assert_eq!(join.held(), 2);
        join.marks(s, &[from(7, 50, Network), from(7, 65, Unknown), mark(7, i64::MAX, Mark::Upto)], i64::MAX);
        assert_eq!(sums(&join, 7), by(&[(Unknown, 5), (Timer, 10), (Thread, 5), (Network, 25)]));
        assert_eq!(join.held(), 2, "the marks a wait to come may fall in (from 40 on)");
    }

    #[test]
    fn a_time_range_keeps_no_marks_outside_it() {
        use WaitReason::*;
        let join = WaitJoin::between(Some(100), Some(200));
        let s = shard_of(5);
        join.marks(s, &[from(5, 0, Timer), from(5, 50, Unknown), from(5, 90, Thread), mark(5, 120, Mark::Upto)], 130);
        assert_eq!(join.held(), 1, "only the mark that covers the range's start");
        join.marks(s, &[from(5, 120, Unknown), from(5, 201, Timer), from(5, 300, Thread), mark(5, 400, Mark::Upto)], 400);
        assert_eq!(join.held(), 2, "none from the range's end on");
        join.blocked(&[(5, 100, 110), (5, 150, 200)]);
        assert_eq!(sums(&join, 5), by(&[(Thread, 10), (Unknown, 50)]));
    }

    #[test]
    fn a_fork_of_an_exited_id_voids_the_reasons_before_it_and_none_after() {
        use WaitReason::*;
        let join = WaitJoin::new();
        let s = shard_of(3);
        join.marks(s, &[from(3, 0, Timer), mark(3, 100, Mark::Upto)], 50);
        // Ends at 79: final in the old chain (before 100), but not below the shard's latest op
        // (50), so a fork may still come before it.
        join.blocked(&[(3, 10, 40), (3, 60, 80)]);
        join.marks(s, &[mark(3, 60, Mark::Reborn), from(3, i64::MIN, Unknown), from(3, 70, Thread), mark(3, 90, Mark::Upto)], 95);
        // The first wait was resolved (timer), then voided by the fork; the second is the new
        // chain's.
        assert_eq!(sums(&join, 3), by(&[(Unknown, 30), (Thread, 20)]));
        // The same with the old chain's final marks, another thread's and the fork in one
        // batch: nothing is resolved against the old chain beyond the shard's latest op before.
        let join = WaitJoin::new();
        join.blocked(&[(3, 10, 40), (3, 60, 80)]);
        let old = [from(3, 0, Timer), mark(3, 100, Mark::Upto)];
        let other = [from(37, 0, Timer), mark(37, 10, Mark::Upto)];
        let new = [mark(3, 60, Mark::Reborn), from(3, i64::MIN, Unknown), from(3, 70, Thread), mark(3, 90, Mark::Upto)];
        join.marks(s, &[&old[..], &other[..], &new[..]].concat(), 95);
        assert_eq!(sums(&join, 3), by(&[(Unknown, 30), (Thread, 20)]));
    }
}
