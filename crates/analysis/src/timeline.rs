//! `timeline`: each thread's time line — the slices of its scheduling states (running on a
//! CPU, preempted, waiting for a CPU, blocked), its system calls, and the probe events of its
//! user-space traces — for viewers (`tracelens export`: Chrome trace events, Pajé).
//!
//! States come from the thread's scheduler events (`sched_state.rs`); a system call is
//! charged to the thread its event's context names, else to the thread the CPU last switched
//! in, and runs from its entry to that thread's next exit (an entry without an exit before
//! the next entry, or the end, is dropped). Events of user-space traces (no CPU field, a
//! `vtid` or `tid` context) are the thread's instant events, with their payload's integer
//! and text fields. Like the other analyses it reads chunks in parallel; the order-dependent
//! part is one fold over records replayed in the time order (`replay.rs`), so the time line is
//! the same for any number of threads and any chunk size.

use std::collections::BTreeMap;

use serde::Serialize;
use tracelens_ctf::{EventView, Value};
use tracelens_trace::TraceSet;

use crate::engine::{Analysis, Chunk, Context};
use crate::id_map::IdMap;
use crate::kernel::{text, KernelMap, Kind, Kinds, What};
use crate::order::{EventCounter, EventKey, StreamCpu};
use crate::replay::Replay;
use crate::sched_state::{State, Step, Track, STATES};
use crate::span::Span;
use crate::thread_info::{Observer, Seen, THREAD_KINDS};

/// The `timeline` analysis.
#[derive(Clone, Debug)]
pub struct Timeline {
    map: KernelMap,
}

impl Timeline {
    /// The analysis of `set`.
    pub fn new(set: &TraceSet) -> Timeline {
        Timeline { map: KernelMap::new(set) }
    }
}

/// A value of an instant event's argument.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Arg {
    /// An integer.
    Int(i64),
    /// Text (or an unsigned integer beyond `i64`).
    Text(String),
}

/// What chunks keep for the fold.
#[derive(Clone, Debug)]
enum Rec {
    /// A scheduler step of a thread.
    Sched(i64, Step),
    /// A CPU now runs this thread.
    OnCpu(StreamCpu, i64),
    /// A system call starts, on the thread the context names or the CPU runs.
    Entry(Option<i64>, StreamCpu, Box<str>),
    /// A system call returns.
    Exit(Option<i64>, StreamCpu),
    /// A user-space event of a thread.
    Instant(i64, Box<str>, Vec<(Box<str>, Arg)>),
}

/// One slice of a thread's scheduling state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StateSlice {
    /// Start, ns from the clock's origin.
    pub begin_ns: i64,
    /// End.
    pub end_ns: i64,
    /// `running`, `preempted`, `waiting for CPU`, or `blocked (S)` with the task state letter.
    pub state: String,
    /// The CPU, while running.
    pub cpu: Option<u32>,
}

/// One system call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SyscallSlice {
    /// Entry, ns from the clock's origin.
    pub begin_ns: i64,
    /// Exit.
    pub end_ns: i64,
    /// The call.
    pub name: String,
}

/// A user-space (probe) event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Instant {
    /// Time, ns from the clock's origin.
    pub ns: i64,
    /// Event name.
    pub name: String,
    /// Its payload's integer and text fields.
    pub args: Vec<(String, Arg)>,
}

/// One thread's time line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ThreadTimeline {
    /// Thread id.
    pub tid: i64,
    /// Process id, when an event gave it.
    pub pid: Option<i64>,
    /// Its latest name.
    pub name: String,
    /// State slices, in time order, back to back while known.
    pub states: Vec<StateSlice>,
    /// System calls, in time order (never overlapping).
    pub syscalls: Vec<SyscallSlice>,
    /// User-space events, in time order.
    pub events: Vec<Instant>,
}

/// The result of `timeline`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TimelineReport {
    /// First event (ns from the clock's origin).
    pub begin_ns: Option<i64>,
    /// Last event.
    pub end_ns: Option<i64>,
    /// Threads by id.
    pub threads: Vec<ThreadTimeline>,
}

/// A thread as the fold builds it.
#[derive(Clone, Debug, Default)]
struct Line {
    track: Track,
    states: Vec<StateSlice>,
    pending: Option<(i64, Box<str>)>,
    syscalls: Vec<SyscallSlice>,
    events: Vec<Instant>,
}

/// Adds the slice of an interval a thread spent in `state` (none for a state not known).
fn slice(states: &mut Vec<StateSlice>, (state, from, to): (State, i64, i64)) {
    let (name, cpu) = match state {
        State::Running(cpu) => ("running".to_string(), Some(cpu)),
        State::Preempted => ("preempted".to_string(), None),
        State::WaitCpu => ("waiting for CPU".to_string(), None),
        State::Blocked(s) => (format!("blocked ({})", STATES[s].0), None),
        State::Unknown | State::Missed | State::Dead => return,
    };
    if to > from {
        states.push(StateSlice { begin_ns: from, end_ns: to, state: name, cpu });
    }
}

/// The fold: threads' lines, and which thread each CPU runs.
#[derive(Clone, Debug, Default)]
struct Fold {
    lines: IdMap<i64, Line>,
    cpus: BTreeMap<StreamCpu, i64>,
}

impl Fold {
    fn apply(&mut self, key: EventKey, r: Rec) {
        let ns = key.ns;
        let on = |cpus: &BTreeMap<StreamCpu, i64>, tid: Option<i64>, cpu: StreamCpu| tid.or_else(|| cpus.get(&cpu).copied()).filter(|&t| t != 0);
        match r {
            Rec::Sched(tid, step) => {
                let line = self.lines.entry(tid).or_default();
                let Line { track, states, .. } = line;
                track.step(ns, step, |interval| slice(states, interval));
            }
            Rec::OnCpu(cpu, tid) => {
                self.cpus.insert(cpu, tid);
            }
            Rec::Entry(tid, cpu, name) => {
                if let Some(t) = on(&self.cpus, tid, cpu) {
                    self.lines.entry(t).or_default().pending = Some((ns, name));
                }
            }
            Rec::Exit(tid, cpu) => {
                if let Some(t) = on(&self.cpus, tid, cpu) {
                    let line = self.lines.entry(t).or_default();
                    if let Some((begin, name)) = line.pending.take() {
                        line.syscalls.push(SyscallSlice { begin_ns: begin, end_ns: ns, name: name.into() });
                    }
                }
            }
            Rec::Instant(tid, name, args) => {
                let args = args.into_iter().map(|(k, v)| (k.into(), v)).collect();
                self.lines.entry(tid).or_default().events.push(Instant { ns, name: name.into(), args });
            }
        }
    }
}

/// What `timeline` accumulates for a run of chunks.
#[derive(Clone, Debug, Default)]
pub struct TimelineState {
    replay: Replay<Rec>,
    observer: Observer,
    fold: Fold,
    seen: IdMap<i64, Seen>,
    counter: EventCounter,
    span: Span,
}

/// An instant event's integer and text payload fields.
fn args(ev: &EventView<'_, '_>) -> Vec<(Box<str>, Arg)> {
    ev.payload
        .children(0)
        .filter_map(|(_, f)| {
            let v = match f.value {
                Value::Signed(i) => Arg::Int(i),
                Value::Unsigned(u) => i64::try_from(u).map_or_else(|_| Arg::Text(u.to_string()), Arg::Int),
                Value::Str(b) => Arg::Text(text(b).into_owned()),
                _ => return None,
            };
            Some((f.name().into(), v))
        })
        .collect()
}

impl Analysis for Timeline {
    type State = TimelineState;
    type Output = TimelineReport;

    fn new_state(&self, chunk: &Chunk) -> TimelineState {
        TimelineState { replay: Replay::new(chunk), ..TimelineState::default() }
    }

    fn on_event(&self, st: &mut TimelineState, ev: &EventView<'_, '_>, cx: &Context<'_, '_>) {
        const WANT: Kinds = THREAD_KINDS.with(&[What::SysEntry, What::SysExit]);
        let Some(ns) = ev.ns else { return };
        st.span.see(ns);
        let key = st.counter.key(ns, cx);
        let Some(k) = self.map.decode_only(ev, cx, WANT) else {
            // A user-space event: an instant of its thread.
            if let Some(tid) = ev.field("vtid").or_else(|| ev.field("tid")).and_then(|f| f.as_i64()) {
                st.replay.push(key, Rec::Instant(tid, ev.name().into(), args(ev)));
                if let Some(pid) = ev.field("vpid").or_else(|| ev.field("pid")).and_then(|f| f.as_i64()) {
                    st.seen.entry(tid).or_default().pid(key, pid);
                }
            }
            return;
        };
        let cpu = StreamCpu::new(cx, k.cpu);
        match k.kind {
            Kind::SchedSwitch { next_tid, .. } => st.replay.push(key, Rec::OnCpu(cpu, next_tid)),
            Kind::SyscallEntry { name, .. } => st.replay.push(key, Rec::Entry(k.tid, cpu, name.into())),
            Kind::SyscallExit { .. } => st.replay.push(key, Rec::Exit(k.tid, cpu)),
            _ => {}
        }
        let replay = &mut st.replay;
        st.observer.observe(&k, key, cx.packet, &mut st.seen, |key, tid, step| replay.push(key, Rec::Sched(tid, step)));
    }

    fn end_chunk(&self, st: &mut TimelineState, _cx: &Context<'_, '_>) {
        let replay = &mut st.replay;
        st.observer.flush(|key, tid, step| replay.push(key, Rec::Sched(tid, step)));
        st.replay.end_chunk();
    }

    fn merge(&self, mut a: TimelineState, b: TimelineState) -> TimelineState {
        let fold = &mut a.fold;
        a.replay.merge(b.replay, |k, r| fold.apply(k, r));
        for (tid, s) in b.seen {
            a.seen.entry(tid).or_default().absorb(s);
        }
        a.span.merge(b.span);
        a
    }

    fn finish(&self, st: TimelineState) -> TimelineReport {
        let mut fold = st.fold;
        st.replay.finish(|k, r| fold.apply(k, r));
        let Some(end) = st.span.end else { return TimelineReport::default() };
        let mut threads: Vec<ThreadTimeline> = fold
            .lines
            .into_iter()
            .filter(|(tid, _)| *tid != 0)
            .map(|(tid, mut line)| {
                let interval = line.track.end(end);
                slice(&mut line.states, interval);
                let seen = st.seen.get(&tid);
                ThreadTimeline {
                    tid,
                    pid: seen.and_then(|s| s.pid).map(|(_, p)| p),
                    name: seen.and_then(|s| s.name).map(|(_, c)| text(c.as_bytes()).into_owned()).unwrap_or_default(),
                    states: line.states,
                    syscalls: line.syscalls,
                    events: line.events,
                }
            })
            .filter(|t| !t.states.is_empty() || !t.syscalls.is_empty() || !t.events.is_empty())
            .collect();
        threads.sort_by_key(|t| t.tid);
        TimelineReport { begin_ns: st.span.begin, end_ns: Some(end), threads }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_is_associative() {
        crate::testing::check("timeline", Timeline::new);
    }
}
