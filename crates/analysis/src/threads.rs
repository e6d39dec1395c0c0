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
//! Blocked time is given by task state, not by cause (the disk, the network, another
//! thread): causes are what the critical path (`crates/critical`) finds.
//!
//! # In parallel
//!
//! A thread's switches and wake-ups happen on several CPUs, so in several streams: each chunk
//! keeps them as records, and one fold replays them in the time order of the whole trace set
//! (`replay.rs`); names, processes and first/last times are minima and maxima merged as they
//! come. The report is the same for any number of threads and any chunk size.

use std::collections::BTreeMap;

use serde::Serialize;
use tracelens_ctf::EventView;
use tracelens_trace::TraceSet;

use crate::engine::{Analysis, Chunk, Context};
use crate::filter::Filter;
use crate::id_map::IdMap;
use crate::kernel::{text, KernelMap};
use crate::order::EventCounter;
use crate::replay::Replay;
use crate::sched_state::{State, Step, Track, STATES};
use crate::span::Span;
use crate::thread_info::{observe, Seen, THREAD_KINDS};

/// The `threads` analysis.
#[derive(Clone, Debug)]
pub struct Threads {
    map: KernelMap,
    filter: Filter,
}

impl Threads {
    /// The analysis of `set`: the threads `filter` selects, the events in its time range.
    pub fn new(set: &TraceSet, filter: Filter) -> Threads {
        Threads { map: KernelMap::new(set), filter }
    }
}

/// A thread's life as the fold builds it.
#[derive(Clone, Debug, Default)]
struct Life {
    track: Track,
    running: i64,
    preempted: i64,
    wait_cpu: i64,
    blocked: [i64; 8],
    cpus: BTreeMap<u32, i64>,
    last_cpu: Option<u32>,
    migrations: u64,
    switches_in: u64,
}

impl Life {
    fn step(&mut self, ns: i64, step: Step) {
        if let Step::In(cpu) = step {
            self.switches_in += 1;
            if self.last_cpu.is_some_and(|c| c != cpu) {
                self.migrations += 1;
            }
            self.last_cpu = Some(cpu);
        }
        if let Some(interval) = self.track.step(ns, step) {
            self.add(interval);
        }
    }

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
            State::Blocked(s) => self.blocked[s] += d,
            State::Unknown | State::Dead => {}
        }
    }

    /// Ends the life at the end of the trace.
    fn close(&mut self, end: i64) {
        let interval = self.track.end(end);
        self.add(interval);
    }
}

/// What `threads` accumulates for a run of chunks.
#[derive(Clone, Debug, Default)]
pub struct ThreadsState {
    replay: Replay<(i64, Step)>,
    lives: IdMap<i64, Life>,
    seen: IdMap<i64, Seen>,
    counter: EventCounter,
    span: Span,
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
    /// Blocked time by task state, longest first.
    pub blocked: Vec<BlockedTime>,
    /// Running time by CPU, by CPU number.
    pub cpus: Vec<CpuTime>,
    /// Times it ran on another CPU than the time before.
    pub migrations: u64,
    /// Times it was switched in.
    pub switches_in: u64,
    /// It exited in the trace (and did not run again under this id).
    pub exited: bool,
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

impl Analysis for Threads {
    type State = ThreadsState;
    type Output = ThreadsReport;

    fn new_state(&self, chunk: &Chunk) -> ThreadsState {
        ThreadsState { replay: Replay::new(chunk), ..ThreadsState::default() }
    }

    fn on_event(&self, st: &mut ThreadsState, ev: &EventView<'_, '_>, cx: &Context<'_, '_>) {
        let Some(k) = self.map.decode_only(ev, cx, THREAD_KINDS) else { return };
        if !self.filter.time(k.ns) {
            return;
        }
        st.span.see(k.ns);
        let key = st.counter.key(k.ns, cx);
        let replay = &mut st.replay;
        observe(&k, key, &mut st.seen, |tid, step| replay.push(key, (tid, step)));
    }

    fn end_chunk(&self, st: &mut ThreadsState, _cx: &Context<'_, '_>) {
        st.replay.end_chunk();
    }

    fn merge(&self, mut a: ThreadsState, b: ThreadsState) -> ThreadsState {
        let lives = &mut a.lives;
        a.replay.merge(b.replay, |k, (tid, s)| lives.entry(tid).or_default().step(k.ns, s));
        for (tid, s) in b.seen {
            a.seen.entry(tid).or_default().absorb(s);
        }
        a.span.merge(b.span);
        a
    }

    fn finish(&self, st: ThreadsState) -> ThreadsReport {
        let mut lives = st.lives;
        st.replay.finish(|k, (tid, s)| lives.entry(tid).or_default().step(k.ns, s));
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
                let mut life = lives.remove(&tid).unwrap_or_default();
                let exited = life.track.state == State::Dead;
                life.close(end);
                let mut blocked: Vec<BlockedTime> = life
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
                    running_ns: life.running,
                    preempted_ns: life.preempted,
                    waiting_cpu_ns: life.wait_cpu,
                    blocked_ns: life.blocked.iter().sum(),
                    blocked,
                    cpus: life.cpus.into_iter().map(|(cpu, running_ns)| CpuTime { cpu, running_ns }).collect(),
                    migrations: life.migrations,
                    switches_in: life.switches_in,
                    exited,
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
        let mut l = Life::default();
        l.step(100, Step::Out(1)); // unknown before: nothing counted
        l.step(150, Step::Wake);
        l.step(170, Step::In(0));
        l.step(200, Step::Out(0));
        l.step(230, Step::In(1));
        l.step(260, Step::Exit);
        l.step(270, Step::Out(0));
        assert_eq!(l.track.state, State::Dead);
        l.close(400);
        assert_eq!((l.blocked[0], l.wait_cpu, l.running, l.preempted), (50, 20, 30 + 40, 30));
        assert_eq!((l.migrations, l.switches_in, l.track.state), (1, 2, State::Unknown));
        assert_eq!(l.cpus.get(&0), Some(&30));
        assert_eq!(l.cpus.get(&1), Some(&40));
    }

    #[test]
    fn merge_is_associative() {
        crate::testing::check("threads", |set| Threads::new(set, Filter::default()));
    }
}
