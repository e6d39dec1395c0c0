//! `threads`: each thread's life from the scheduler's events — when it was first and last
//! seen, and how its time went: running (on which CPUs), preempted, woken and waiting for a
//! CPU, blocked (by the kernel's task state when it blocked). The `sigmund` filter tool of the
//! 2005 multi-level toolkit paper answers "a thread's active time" (section 2.3); this is
//! that, for every thread at once.
//!
//! # What is counted
//!
//! A thread's state changes at its `sched_switch` events (switched in on a CPU: running;
//! switched out runnable — `prev_state` with no sleep bit — preempted; switched out otherwise:
//! blocked, in the state the bits say: `S` sleeping, `D` uninterruptible, `T` stopped, ...),
//! at its wake-ups (`sched_waking`, `sched_wakeup`, `sched_wakeup_new`: a blocked thread is
//! runnable, waiting for a CPU) and when it exits (`sched_process_exit`, or a switch out in a
//! dead state). Time is counted from a thread's first such event to its last, or to the end of
//! the trace while it lives: before its first event its state is unknown, and nothing is
//! counted. Migrations are the times a thread runs on another CPU than the time before.
//! First and last seen are the first and last events naming the thread in any way (its
//! switches and wake-ups, forks, exits, and events whose context carries its id).
//!
//! Where the trace lacks a thread's switch (lost events, or a kernel that leaves some out) and
//! its events carry their thread's id, the thread's own events on a CPU show that it runs
//! there; what the trace cannot tell is counted as unknown (`unknown_ns`), never as the state
//! around it, and a woken thread found on an idle CPU runs from the CPU's previous event —
//! the critical path's rules (see `sched_state.rs`).
//!
//! Blocked time is given by task state. Its causes (a timer, the disk, the network, another
//! thread) are what the critical path's execution graph finds: with
//! [`Threads::keeping_waits`], each thread's blocked intervals are in the report, and
//! `tracelens_critical::with_waits` gives each the reason of the wait that holds its end; with
//! [`Threads::sending_waits`], the shards send them as they find them, each thread's in time
//! order, to a [`WaitSink`] (`tracelens_critical::WaitJoin` joins them with the graph as both
//! are read, keeping neither).
//!
//! # In parallel
//!
//! A thread's switches and wake-ups happen on several CPUs, so in several streams: each chunk
//! keeps them as records, and a fold per thread replays them in the time order of the whole
//! trace set — the threads split among shards replayed in parallel with the reading
//! (`replay.rs`, `shards.rs`); names, processes and first/last times are minima and maxima,
//! merged in any order: each chunk's go to the first shard, which absorbs them off the
//! merges' serial chain. The report is the same for any number of threads and any chunk size.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use tracelens_ctf::EventView;
use tracelens_trace::TraceSet;

use crate::engine::{Analysis, Background, Chunk, Context, Pool};
use crate::filter::Filter;
use crate::id_map::IdMap;
use crate::kernel::{text, KEvent, KernelMap, Kinds};
use crate::order::{EventCounter, EventKey};
use crate::replay::ShardedReplay;
use crate::pair::OnKernel;
use crate::shards::{Board, Limit, Mail, Run, Runs, Shard};
use crate::sched_state::{State, Step, Track, STATES};
use crate::span::Span;
use crate::thread_info::{Observer, Seen, THREAD_KINDS};

/// Where [`Threads::sending_waits`] sends the blocked intervals its shards find.
pub trait WaitSink: Send + Sync + std::fmt::Debug {
    /// Blocked intervals `(tid, from, to)` in ns; each thread's come in time order, the next
    /// starting where the one before ended or later, over all calls.
    fn blocked(&self, waits: &[(i64, i64, i64)]);
}

/// The `threads` analysis.
#[derive(Clone, Debug)]
pub struct Threads {
    map: KernelMap,
    filter: Filter,
    keep_waits: bool,
    /// Where the blocked intervals go as they are found ([`Threads::sending_waits`]).
    sink: Option<Arc<dyn WaitSink>>,
    /// Buffers of chunks' records, reused.
    pool: Arc<Pool<(EventKey, (i64, Step))>>,
}

impl Threads {
    /// The analysis of `set`: the threads `filter` selects, the events in its time range.
    pub fn new(set: &TraceSet, filter: Filter) -> Threads {
        Threads { map: KernelMap::new(set), filter, keep_waits: false, sink: None, pool: Arc::default() }
    }

    /// The same analysis, listing each thread's blocked intervals in [`ThreadLife::waits`]
    /// (for views that explain them, such as the critical path's wait reasons).
    pub fn keeping_waits(mut self) -> Threads {
        self.keep_waits = true;
        self
    }

    /// The same analysis, sending each thread's blocked intervals to `sink` as they are found
    /// instead of keeping them ([`ThreadLife::waits`] stays empty): every interval
    /// [`keeping_waits`](Self::keeping_waits) would list, of every thread (filtered or not).
    pub fn sending_waits(mut self, sink: Arc<dyn WaitSink>) -> Threads {
        self.keep_waits = true;
        self.sink = Some(sink);
        self
    }

    /// A new thread's life.
    fn life(&self) -> Life {
        Life::new(self.keep_waits)
    }
}

/// A thread's life as the fold builds it.
#[derive(Clone, Debug, Default)]
struct Life {
    track: Track,
    times: Times,
    last_cpu: Option<u32>,
    migrations: u64,
    switches_in: u64,
}

/// Time per state.
#[derive(Clone, Debug, Default)]
struct Times {
    running: i64,
    preempted: i64,
    wait_cpu: i64,
    blocked: [i64; 8],
    missed: i64,
    cpus: BTreeMap<u32, i64>,
    /// The blocked intervals, when kept.
    waits: Option<Vec<(i64, i64)>>,
}

impl Times {
    /// Counts an interval the thread spent in `state`.
    fn add(&mut self, (state, from, to): (State, i64, i64)) {
        let d = to - from;
        match state {
            State::Running(cpu) => {
                self.running += d;
                *self.cpus.entry(cpu).or_default() += d;
            }
            State::Preempted => self.preempted += d,
            State::WaitCpu => self.wait_cpu += d,
            State::Blocked(s) => {
                self.blocked[s] += d;
                if let Some(w) = &mut self.waits {
                    if d > 0 {
                        w.push((from, to));
                    }
                }
            }
            State::Missed => self.missed += d,
            State::Unknown | State::Dead => {}
        }
    }

    /// Moves the blocked intervals kept so far to `out`, as `(tid, from, to)`.
    fn send(&mut self, tid: i64, out: &mut Vec<(i64, i64, i64)>) {
        if let Some(w) = self.waits.as_mut().filter(|w| !w.is_empty()) {
            out.extend(w.drain(..).map(|(from, to)| (tid, from, to)));
        }
    }
}

impl Life {
    /// A new thread's life, keeping its blocked intervals when `keep_waits`.
    fn new(keep_waits: bool) -> Life {
        Life { times: Times { waits: keep_waits.then(Vec::new), ..Times::default() }, ..Life::default() }
    }

    fn step(&mut self, ns: i64, step: Step) {
        let before = self.track.state;
        let mut ran = None;
        self.track.step(ns, step, |i| {
            if let State::Running(cpu) = i.0 {
                ran = Some(cpu);
            }
            self.times.add(i);
        });
        // Switched in: by a recorded switch, or where its own events show it, or its switch
        // out on an idle CPU after a wake-up (switches the trace does not have).
        let switched_in = match (step, self.track.state) {
            (Step::In(cpu), _) => Some(cpu),
            (Step::Ran { .. }, State::Running(cpu)) if before != State::Running(cpu) => Some(cpu),
            (Step::Out { .. }, _) if !matches!(before, State::Running(_)) => ran,
            _ => None,
        };
        if let Some(cpu) = switched_in {
            self.switches_in += 1;
            if self.last_cpu.is_some_and(|c| c != cpu) {
                self.migrations += 1;
            }
            self.last_cpu = Some(cpu);
        }
    }

    /// Ends the life at the end of the trace.
    fn close(&mut self, end: i64) {
        let interval = self.track.end(end);
        self.times.add(interval);
    }
}

/// What `threads` accumulates for a run of chunks.
#[derive(Clone, Debug, Default)]
pub struct ThreadsState {
    replay: ShardedReplay<(i64, Step)>,
    observer: Observer,
    seen: IdMap<i64, Seen>,
    /// What later chunks saw, not absorbed into `seen` yet: the merges hand these to the
    /// first shard to absorb, off their serial chain, and `finish` gathers them.
    seen_later: Vec<IdMap<i64, Seen>>,
    counter: EventCounter,
    span: Span,
    /// The shards replaying the records (prefix states).
    board: Option<Arc<Board<ThreadsShard>>>,
    /// The last records are handed out ([`Analysis::end_merges`] or `finish`).
    ended: bool,
}

/// One shard of the replay: its threads' records not replayed yet, and their lives.
#[derive(Debug, Default)]
struct ThreadsShard {
    runs: Runs<(EventKey, (i64, Step))>,
    lives: IdMap<i64, Life>,
    /// What the chunks handed to this shard saw of threads (any threads; only the first
    /// shard is handed any, so that one map, kept warm, absorbs them: see
    /// `ThreadsState::seen_later`).
    seen: IdMap<i64, Seen>,
}

/// Work for a [`ThreadsShard`].
struct ThreadsWork {
    runs: Vec<Run<(EventKey, (i64, Step))>>,
    limit: Limit,
    /// [`Threads::keeping_waits`].
    keep_waits: bool,
    /// [`Threads::sending_waits`].
    sink: Option<Arc<dyn WaitSink>>,
    /// A chunk's threads seen, to absorb.
    seen: Option<IdMap<i64, Seen>>,
}

impl Shard for ThreadsShard {
    type Work = ThreadsWork;
    type Parcel = ();

    fn apply(&mut self, work: &mut ThreadsWork, _mail: &Mail<'_, ()>) -> Result<(), u64> {
        for (tid, s) in work.seen.take().unwrap_or_default() {
            self.seen.entry(tid).or_default().absorb(s);
        }
        for r in work.runs.drain(..) {
            self.runs.add(r);
        }
        let (lives, limit, keep_waits) = (&mut self.lives, work.limit, work.keep_waits);
        let Some(sink) = &work.sink else {
            self.runs.drain(|r| r.0, |k| limit.admits(k), |&(k, (tid, s))| lives.entry(tid).or_insert_with(|| Life::new(keep_waits)).step(k.ns, s));
            return Ok(());
        };
        let mut sent = Vec::new();
        self.runs.drain(
            |r| r.0,
            |k| limit.admits(k),
            |&(k, (tid, s))| {
                let life = lives.entry(tid).or_insert_with(|| Life::new(keep_waits));
                life.step(k.ns, s);
                life.times.send(tid, &mut sent);
            },
        );
        if !sent.is_empty() {
            sink.blocked(&sent);
        }
        Ok(())
    }
}

impl ThreadsState {
    /// Hands the records to the shards (when the state starts at the first chunk).
    fn hand_out(&mut self, end: bool, keep_waits: bool, sink: &Option<Arc<dyn WaitSink>>) {
        if self.ended {
            return;
        }
        self.ended = end;
        let Some((runs, limit)) = self.replay.hand_out(|r| r.0, end) else { return };
        let board = self.board.get_or_insert_with(Arc::default);
        board.post_runs(runs, |_, runs| ThreadsWork { runs, limit, keep_waits, sink: sink.clone(), seen: None });
        // Posted after the runs' work, with the same limit: the shard replays nothing more for it.
        for seen in self.seen_later.drain(..) {
            board.post(0, ThreadsWork { runs: Vec::new(), limit, keep_waits, sink: sink.clone(), seen: Some(seen) });
        }
    }
}

/// Time a thread spent blocked in one task state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BlockedTime {
    /// The state's letter, as `ps` shows it (`S`, `D`, ...).
    pub state: String,
    /// What it means (`sleeping`, `uninterruptible`, ...).
    pub meaning: String,
    /// Time in ns.
    pub ns: i64,
}

/// Time a thread ran on one CPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CpuTime {
    /// The CPU.
    pub cpu: u32,
    /// Time in ns.
    pub running_ns: i64,
}

/// One thread's life.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ThreadLife {
    /// Thread id.
    pub tid: i64,
    /// Process id, when an event gave it.
    pub pid: Option<i64>,
    /// Its latest name.
    pub name: String,
    /// First event naming it, ns from the clock's origin.
    pub first_seen_ns: i64,
    /// Last event naming it.
    pub last_seen_ns: i64,
    /// Time on a CPU.
    pub running_ns: i64,
    /// Time runnable after being preempted, until back on a CPU.
    pub preempted_ns: i64,
    /// Time runnable after a wake-up, until on a CPU.
    pub waiting_cpu_ns: i64,
    /// Time blocked, all states.
    pub blocked_ns: i64,
    /// Time whose state the trace does not give: a switch of the thread was not recorded
    /// (lost events, or a kernel that leaves some out), and its own events show only that it
    /// ran from some time on.
    pub unknown_ns: i64,
    /// Blocked time by task state, longest first.
    pub blocked: Vec<BlockedTime>,
    /// Running time by CPU, by CPU number.
    pub cpus: Vec<CpuTime>,
    /// Times it ran on another CPU than the time before.
    pub migrations: u64,
    /// Times it was switched in (switches the trace lacks included, where the thread's own
    /// events show them).
    pub switches_in: u64,
    /// It exited in the trace (and did not run again under this id).
    pub exited: bool,
    /// Its blocked intervals `(from, to)` in ns, in time order, when the analysis keeps them
    /// ([`Threads::keeping_waits`]; not in the JSON).
    #[serde(skip)]
    pub waits: Vec<(i64, i64)>,
}

/// The result of `threads`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ThreadsReport {
    /// First kernel event in the range (ns from the clock's origin).
    pub begin_ns: Option<i64>,
    /// Last kernel event in the range.
    pub end_ns: Option<i64>,
    /// Threads, most running time first (ties by tid).
    pub threads: Vec<ThreadLife>,
}

impl OnKernel for Threads {
    fn kinds(&self) -> Kinds {
        THREAD_KINDS
    }

    fn kernel_map(&self) -> &KernelMap {
        &self.map
    }

    #[inline]
    fn on_kernel(&self, st: &mut ThreadsState, k: &KEvent<'_>, cx: &Context<'_, '_>) {
        if !self.filter.time(k.ns) {
            return;
        }
        st.span.see(k.ns);
        let key = st.counter.key(k.ns, cx);
        let replay = &mut st.replay;
        st.observer.observe(k, key, cx.packet, &mut st.seen, |key, tid, step| replay.push(key, (tid, step)));
    }
}

impl Analysis for Threads {
    type State = ThreadsState;
    type Output = ThreadsReport;

    fn new_state(&self, chunk: &Chunk) -> ThreadsState {
        ThreadsState { replay: ShardedReplay::new(chunk, self.pool.take(0)), ..ThreadsState::default() }
    }

    fn on_event(&self, st: &mut ThreadsState, ev: &EventView<'_, '_>, cx: &Context<'_, '_>) {
        let Some(k) = self.map.decode_only(ev, cx, self.kinds()) else { return };
        self.on_kernel(st, &k, cx);
    }

    fn end_chunk(&self, st: &mut ThreadsState, _cx: &Context<'_, '_>) {
        let replay = &mut st.replay;
        st.observer.flush(|key, tid, step| replay.push(key, (tid, step)));
        st.replay.end_chunk(|r| r.0, &self.pool);
    }

    fn merge(&self, mut a: ThreadsState, b: ThreadsState) -> ThreadsState {
        a.replay.merge(b.replay);
        // Minima, maxima and the latest name: absorbed in any order, by the first shard.
        a.seen_later.push(b.seen);
        a.seen_later.extend(b.seen_later);
        a.span.merge(b.span);
        a.hand_out(false, self.keep_waits, &self.sink);
        a
    }

    fn background(&self, st: &ThreadsState) -> Option<Arc<dyn Background>> {
        st.board.clone().map(|b| b as Arc<dyn Background>)
    }

    fn end_merges(&self, st: &mut ThreadsState) {
        // The records after the last chunk's start, replayed on the workers rather than in
        // `finish` on one thread.
        st.hand_out(true, self.keep_waits, &self.sink);
    }

    fn finish(&self, mut st: ThreadsState) -> ThreadsReport {
        st.hand_out(true, self.keep_waits, &self.sink);
        let mut lives: IdMap<i64, Life> = IdMap::default();
        let mut seen_later = std::mem::take(&mut st.seen_later);
        for shard in st.board.take().map(|b| b.take_states()).unwrap_or_default() {
            lives.extend(shard.lives);
            seen_later.push(shard.seen);
        }
        for (tid, s) in seen_later.into_iter().flatten() {
            st.seen.entry(tid).or_default().absorb(s);
        }
        let Some(end) = st.span.end else { return ThreadsReport::default() };
        let mut threads: Vec<ThreadLife> = st
            .seen
            .into_iter()
            .filter(|(tid, s)| *tid != 0 && s.first <= s.last)
            .filter_map(|(tid, s)| {
                let name = s.name.map(|(_, c)| text(c.as_bytes()).into_owned()).unwrap_or_default();
                if !self.filter.process(tid, name.as_bytes()) {
                    return None;
                }
                let mut life = lives.remove(&tid).unwrap_or_else(|| self.life());
                let exited = life.track.state == State::Dead;
                life.close(end);
                if let Some(sink) = &self.sink {
                    let mut last = Vec::new();
                    life.times.send(tid, &mut last);
                    if !last.is_empty() {
                        sink.blocked(&last);
                    }
                }
                let times = life.times;
                let mut blocked: Vec<BlockedTime> = times
                    .blocked
                    .iter()
                    .enumerate()
                    .filter(|(_, &ns)| ns > 0)
                    .map(|(i, &ns)| BlockedTime { state: STATES[i].0.to_string(), meaning: STATES[i].1.to_string(), ns })
                    .collect();
                blocked.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.state.cmp(&b.state)));
                Some(ThreadLife {
                    tid,
                    pid: s.pid.map(|(_, p)| p),
                    name,
                    first_seen_ns: s.first,
                    last_seen_ns: s.last,
                    running_ns: times.running,
                    preempted_ns: times.preempted,
                    waiting_cpu_ns: times.wait_cpu,
                    blocked_ns: times.blocked.iter().sum(),
                    unknown_ns: times.missed,
                    blocked,
                    cpus: times.cpus.into_iter().map(|(cpu, running_ns)| CpuTime { cpu, running_ns }).collect(),
                    migrations: life.migrations,
                    switches_in: life.switches_in,
                    exited,
                    waits: times.waits.unwrap_or_default(),
                })
            })
            .collect();
        threads.sort_by(|a, b| b.running_ns.cmp(&a.running_ns).then(a.tid.cmp(&b.tid)));
        ThreadsReport { begin_ns: st.span.begin, end_ns: Some(end), threads }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_life_counts_each_state_until_the_next() {
        let out = |state, cpu| Step::Out { state, cpu, after: i64::MIN, idle: false };
        let mut l = Life::default();
        l.step(100, out(1, 0)); // unknown before: nothing counted
        l.step(150, Step::Wake);
        l.step(170, Step::In(0));
        l.step(200, out(0, 0));
        l.step(230, Step::In(1));
        l.step(260, Step::Exit);
        l.step(270, out(0, 1));
        assert_eq!(l.track.state, State::Dead);
        l.close(400);
        let t = &l.times;
        assert_eq!((t.blocked[0], t.wait_cpu, t.running, t.preempted, t.missed), (50, 20, 30 + 40, 30, 0));
        assert_eq!((l.migrations, l.switches_in, l.track.state), (1, 2, State::Unknown));
        assert_eq!(t.cpus.get(&0), Some(&30));
        assert_eq!(t.cpus.get(&1), Some(&40));
    }

    #[test]
    fn own_events_where_a_switch_in_is_missing() {
        let mut l = Life::default();
        l.step(100, Step::In(0));
        l.step(200, Step::Out { state: 1, cpu: 0, after: 150, idle: false });
        l.step(300, Step::Wake);
        // Switched in on CPU 1 at a time not recorded, after its previous event at 320.
        l.step(330, Step::Ran { cpu: 1, until: 380, after: 320, idle: false });
        l.step(400, Step::Out { state: 1, cpu: 1, after: 380, idle: false });
        let t = &l.times;
        assert_eq!((t.running, t.blocked[0], t.wait_cpu, t.missed), (100 + 70, 100, 20, 10));
        assert_eq!((l.switches_in, l.migrations), (2, 1));
    }

    #[test]
    fn merge_is_associative() {
        crate::testing::check("threads", |set| Threads::new(set, Filter::default()));
    }
}
