//! The critical path of a thread over an interval of time, on the [`ExecutionGraph`].
//!
//! This is the bounded backward algorithm of Giraldeau and Dagenais that the TraceCompare
//! thesis (2015, section 4.4.3, "Critical Path") builds on: walk the thread's chain forward
//! over the interval; where it is blocked, follow what woke it — when that is another thread,
//! walk *that* thread's chain over the wait (from the start of the wait to the wake-up, never
//! before), recursively; when it is a timer, the network, a block device, an inter-processor
//! interrupt, the wait is that. A wait on a block request issued by another thread after the
//! wait began follows the issuer up to the issue, then is `block_device`; a wait woken by the
//! network soft IRQ that a local thread raised by sending follows the sender up to the send.
//!
//! Every nanosecond of the interval is accounted for exactly once: the segments tile it. What
//! the trace cannot explain — a thread not seen, a switch or wake-up not recorded, lost events,
//! a wake-up from a context not known, a dependency that loops back on a thread already being
//! waited for — is `unknown`, never given to something around it.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use tracelens_analysis::kernel::{softirq, IdMap};

use crate::graph::{Ctx, ExecutionGraph, State, Wake, Why};
use crate::Error;

/// What a thread on the critical path is doing, or waiting for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PathState {
    /// On a CPU.
    Running,
    /// Runnable, not on a CPU (switched out for another thread, or woken and waiting for one).
    Preempted,
    /// On a CPU, which was serving an interrupt.
    Interrupted,
    /// Waiting for a timer.
    Timer,
    /// Waiting for a block device.
    BlockDevice,
    /// Waiting for the network.
    Network,
    /// Waiting for an inter-processor interrupt.
    Ipi,
    /// Waiting for an input device.
    UserInput,
    /// Waiting, for a reason the trace does not give.
    Blocked,
    /// Not known from the trace.
    Unknown,
}

impl PathState {
    /// Every state, in the order reports list them.
    pub const ALL: [PathState; 10] = [
        PathState::Running,
        PathState::Preempted,
        PathState::Interrupted,
        PathState::Timer,
        PathState::BlockDevice,
        PathState::Network,
        PathState::Ipi,
        PathState::UserInput,
        PathState::Blocked,
        PathState::Unknown,
    ];

    /// The name reports use (`block_device`, ...).
    pub fn name(self) -> &'static str {
        match self {
            PathState::Running => "running",
            PathState::Preempted => "preempted",
            PathState::Interrupted => "interrupted",
            PathState::Timer => "timer",
            PathState::BlockDevice => "block_device",
            PathState::Network => "network",
            PathState::Ipi => "ipi",
            PathState::UserInput => "user_input",
            PathState::Blocked => "blocked",
            PathState::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for PathState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One segment of the critical path: `tid` was in `state` from `begin_ns` to `end_ns`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Segment {
    /// Start, ns from the clock's origin.
    pub begin_ns: i64,
    /// End (exclusive), ns.
    pub end_ns: i64,
    /// The thread.
    pub tid: i64,
    /// Its name (shared by the thread's segments).
    pub name: Arc<str>,
    /// What it was doing.
    pub state: PathState,
    /// Why, in words (`on CPU 1`, `preempted by cc1 (4242)`, `hrtimer expiry`, ...; shared by
    /// the segments with the same cause).
    pub cause: Arc<str>,
    /// Which walk of a thread it comes from: an index in [`CriticalPath::follows`] (0: the
    /// thread asked for).
    pub follow: u32,
}

/// One thread the walk followed: the thread asked for (the first), or one that ended a wait
/// of the thread of its `parent`, walked from the start of that wait. The segments of a
/// thread walked for a wait say so by their [`Segment::follow`]; following `parent` up gives
/// the chain of waits that led there (the TraceCompare thesis's "stack of threads", Fig. 4.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Follow {
    /// The thread walked.
    pub tid: i64,
    /// When its walk starts, ns: the start of the wait it explains (clipped to the interval),
    /// or the interval's start for the thread asked for.
    pub since_ns: i64,
    /// The follow whose thread waited for this one (`None` for the thread asked for).
    pub parent: Option<u32>,
}

impl Segment {
    /// Its length in ns.
    pub fn duration_ns(&self) -> i64 {
        self.end_ns - self.begin_ns
    }
}

/// Nanoseconds per state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ByState {
    /// [`PathState::Running`].
    pub running: i64,
    /// [`PathState::Preempted`].
    pub preempted: i64,
    /// [`PathState::Interrupted`].
    pub interrupted: i64,
    /// [`PathState::Timer`].
    pub timer: i64,
    /// [`PathState::BlockDevice`].
    pub block_device: i64,
    /// [`PathState::Network`].
    pub network: i64,
    /// [`PathState::Ipi`].
    pub ipi: i64,
    /// [`PathState::UserInput`].
    pub user_input: i64,
    /// [`PathState::Blocked`].
    pub blocked: i64,
    /// [`PathState::Unknown`].
    pub unknown: i64,
}

impl ByState {
    /// The time in `state`.
    pub fn get(&self, state: PathState) -> i64 {
        let mut copy = *self;
        *copy.slot(state)
    }

    fn slot(&mut self, state: PathState) -> &mut i64 {
        match state {
            PathState::Running => &mut self.running,
            PathState::Preempted => &mut self.preempted,
            PathState::Interrupted => &mut self.interrupted,
            PathState::Timer => &mut self.timer,
            PathState::BlockDevice => &mut self.block_device,
            PathState::Network => &mut self.network,
            PathState::Ipi => &mut self.ipi,
            PathState::UserInput => &mut self.user_input,
            PathState::Blocked => &mut self.blocked,
            PathState::Unknown => &mut self.unknown,
        }
    }

    /// The sum over states.
    pub fn total(&self) -> i64 {
        PathState::ALL.iter().map(|&s| self.get(s)).sum()
    }
}

/// Time on the path per thread.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ThreadTotal {
    /// The thread.
    pub tid: i64,
    /// Its name.
    pub name: String,
    /// Its time on the path, ns.
    pub ns: i64,
    /// Of which running, ns.
    pub running_ns: i64,
}

/// The critical path of a thread over `[begin_ns, end_ns]`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CriticalPath {
    /// The thread.
    pub tid: i64,
    /// Its name.
    pub name: String,
    /// Start of the interval, ns from the clock's origin.
    pub begin_ns: i64,
    /// End of the interval.
    pub end_ns: i64,
    /// The segments, in time order: they tile `[begin_ns, end_ns]`.
    pub segments: Vec<Segment>,
    /// The threads walked, the thread asked for first (see [`Follow`]).
    pub follows: Vec<Follow>,
    /// Time per state; the sum is `end_ns - begin_ns`.
    pub by_state: ByState,
    /// Time per thread, most first.
    pub by_thread: Vec<ThreadTotal>,
    /// `by_state.unknown / (end_ns - begin_ns)` (0 for an empty interval).
    pub unknown_fraction: f64,
}

/// How deep dependencies are followed (a longer chain of threads waiting for each other is
/// `unknown` beyond).
pub const MAX_DEPTH: usize = 1000;

/// The critical path of thread `tid` between `begin` and `end` (ns from the clock's origin;
/// each defaults to the thread's lifetime in the trace).
///
/// Errors: a thread the graph does not have, an interval that ends before it begins, or one
/// outside the trace.
pub fn critical_path(graph: &ExecutionGraph, tid: i64, begin: Option<i64>, end: Option<i64>) -> Result<CriticalPath, Error> {
    let thread = graph.threads.get(&tid).ok_or(Error::NoSuchThread { tid, threads: graph.threads.len() })?;
    let (first, last) = graph.span.ok_or(Error::NoKernelEvents)?;
    let b = begin.unwrap_or(thread.begin_ns);
    let e = end.unwrap_or(thread.end_ns);
    if b > e {
        return Err(Error::EmptyRange { begin: b, end: e });
    }
    if b < first || e > last {
        return Err(Error::OutsideTrace { begin: b, end: e, first, last });
    }
    let mut w = Walker { g: graph, out: Vec::new(), chain: Vec::new(), last: None, names: IdMap::default(), causes: IdMap::default(), follows: Vec::new() };
    w.walk(tid, b, e);
    let segments = w.out;
    let follows = w.follows;
    let mut by_state = ByState::default();
    let mut threads: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    for s in &segments {
        *by_state.slot(s.state) += s.duration_ns();
        let t = threads.entry(s.tid).or_default();
        t.0 += s.duration_ns();
        if s.state == PathState::Running {
            t.1 += s.duration_ns();
        }
    }
    let mut by_thread: Vec<ThreadTotal> = threads.into_iter().map(|(tid, (ns, running_ns))| ThreadTotal { tid, name: graph.name(tid), ns, running_ns }).collect();
    by_thread.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.tid.cmp(&b.tid)));
    let span = e - b;
    let unknown_fraction = if span > 0 { by_state.unknown as f64 / span as f64 } else { 0.0 };
    Ok(CriticalPath { tid, name: graph.name(tid), begin_ns: b, end_ns: e, segments, follows, by_state, by_thread, unknown_fraction })
}

/// What is left to do, on an explicit stack (chains of dependencies may be long).
enum Work {
    /// Walk `tid`'s chain over `[a, b)` from step `at` (`None`: from `a`); `chain` is the
    /// length of [`Walker::chain`] (the threads being waited for) at this depth; `node` its
    /// [`Follow`] ([`NEW`]: a new one, whose parent is `parent`).
    Walk { tid: i64, a: i64, b: i64, chain: usize, at: Option<usize>, node: u32, parent: u32 },
    /// Emit a segment of follow `node`.
    Emit { a: i64, b: i64, tid: i64, state: PathState, cause: Cause, node: u32 },
}

/// [`Work::Walk::node`] of a walk not started: its [`Follow`] is made when it starts.
const NEW: u32 = u32::MAX;

/// A segment's cause, made into words only when emitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Cause {
    Cpu(u32),
    Interrupt(Ctx),
    PreemptedBy(i64),
    WaitCpu,
    Wake(Ctx),
    SentBy(Ctx, i64),
    Block(Ctx, Option<i64>),
    Unknown(Why),
    Cycle(i64),
    TooDeep,
    Exited,
    StillBlocked,
}

struct Walker<'g> {
    g: &'g ExecutionGraph,
    out: Vec<Segment>,
    /// The threads whose waits are being followed, outermost first.
    chain: Vec<i64>,
    /// What the last segment is.
    last: Option<(i64, PathState, Cause, u32)>,
    /// The threads walked.
    follows: Vec<Follow>,
    /// Thread names and causes in words, made once.
    names: IdMap<i64, Arc<str>>,
    causes: IdMap<Cause, Arc<str>>,
}

impl Walker<'_> {
    fn walk(&mut self, tid: i64, a: i64, b: i64) {
        // Each walk stands for the rest of its chain, one step at a time: the stack holds the
        // dependencies being followed, not every step of a long chain.
        let mut stack = vec![Work::Walk { tid, a, b, chain: 0, at: None, node: NEW, parent: NEW }];
        let mut items = Vec::new();
        while let Some(w) = stack.pop() {
            match w {
                Work::Emit { a, b, tid, state, cause, node } => self.emit(a, b, tid, state, cause, node),
                Work::Walk { tid, a, b, chain, at, mut node, parent } => {
                    if node == NEW {
                        node = self.follows.len() as u32;
                        self.follows.push(Follow { tid, since_ns: a, parent: (parent != NEW).then_some(parent) });
                    }
                    self.chain.truncate(chain);
                    self.chain.push(tid);
                    items.clear();
                    if let Some(next) = self.step(tid, a, b, at, node, &mut items) {
                        stack.push(Work::Walk { tid, a, b, chain, at: Some(next), node, parent });
                    }
                    stack.extend(items.drain(..).rev());
                }
            }
        }
    }

    /// The work for step `at` of `tid`'s chain over `[a, b)` (`None`: the first step there,
    /// and the time before the chain), in time order; returns the next step to walk, if any.
    fn step(&self, tid: i64, a: i64, b: i64, at: Option<usize>, node: u32, out: &mut Vec<Work>) -> Option<usize> {
        let chain = self.chain.len();
        let emit = |out: &mut Vec<Work>, a: i64, b: i64, state: PathState, cause: Cause| {
            if a < b {
                out.push(Work::Emit { a, b, tid, state, cause, node });
            }
        };
        let Some(t) = self.g.threads.get(&tid) else {
            emit(out, a, b, PathState::Unknown, Cause::Unknown(Why::NotSeen));
            return None;
        };
        let steps = &t.steps;
        let i = match at {
            Some(i) => i,
            None => {
                let first = steps.partition_point(|s| s.ns <= a);
                if first == 0 {
                    let until = steps.first().map_or(b, |s| s.ns.min(b));
                    emit(out, a, until, PathState::Unknown, Cause::Unknown(Why::NotSeen));
                }
                first.saturating_sub(1)
            }
        };
        let step = steps.get(i)?;
        let s = step.ns.max(a);
        let e = steps.get(i + 1).map_or(b, |n| n.ns.min(b));
        if s >= b {
            return None;
        }
        if s < e {
            match step.state {
                State::Running { cpu } => {
                    let mut at = s;
                    for irq in self.g.interrupts_in(cpu, s, e) {
                        let (x, y) = (irq.begin_ns.max(s), irq.end_ns.min(e));
                        emit(out, at, x, PathState::Running, Cause::Cpu(cpu));
                        emit(out, x, y, PathState::Interrupted, Cause::Interrupt(irq.ctx));
                        at = y;
                    }
                    emit(out, at, e, PathState::Running, Cause::Cpu(cpu));
                }
                State::Preempted { by } => emit(out, s, e, PathState::Preempted, Cause::PreemptedBy(by.into())),
                State::WaitCpu => emit(out, s, e, PathState::Preempted, Cause::WaitCpu),
                State::Unknown(why) => emit(out, s, e, PathState::Unknown, Cause::Unknown(why)),
                State::Gone => emit(out, s, e, PathState::Unknown, Cause::Exited),
                State::Blocked(id) => self.wait(tid, s, e, self.g.wake(id), chain, node, out),
                State::WokenBy(w) => self.wait(tid, s, e, Wake::Task(w.into()), chain, node, out),
                State::CreatedBy(w) => self.wait(tid, s, e, Wake::Created(w.into()), chain, node, out),
            }
        }
        (e < b && i + 1 < steps.len()).then_some(i + 1)
    }

    /// The work for `tid`'s wait over `[s, e)`, ended by `wake` (`node`: the follow of `tid`).
    #[allow(clippy::too_many_arguments)]
    fn wait(&self, tid: i64, s: i64, e: i64, wake: Wake, chain: usize, node: u32, out: &mut Vec<Work>) {
        let emit = |out: &mut Vec<Work>, a: i64, b: i64, state: PathState, cause: Cause| {
            if a < b {
                out.push(Work::Emit { a, b, tid, state, cause, node });
            }
        };
        // Follow `other` over [a, b), unless it is already waited for (a loop: the trace
        // contradicts itself) or the chain is too deep.
        let follow = |out: &mut Vec<Work>, other: i64, a: i64, b: i64| {
            if a >= b {
            } else if self.chain.contains(&other) {
                out.push(Work::Emit { a, b, tid, state: PathState::Unknown, cause: Cause::Cycle(other), node });
            } else if chain >= MAX_DEPTH {
                out.push(Work::Emit { a, b, tid, state: PathState::Unknown, cause: Cause::TooDeep, node });
            } else {
                out.push(Work::Walk { tid: other, a, b, chain, at: None, node: NEW, parent: node });
            }
        };
        match wake {
            Wake::Pending => emit(out, s, e, PathState::Blocked, Cause::StillBlocked),
            Wake::Task(w) | Wake::Created(w) => follow(out, w, s, e),
            Wake::Timer(ctx) => emit(out, s, e, PathState::Timer, Cause::Wake(ctx)),
            Wake::Network { ctx, from } => match from {
                Some(by) if by.ns > s && by.ns < e => {
                    follow(out, by.tid(), s, by.ns);
                    emit(out, by.ns, e, PathState::Network, Cause::SentBy(ctx, by.tid()));
                }
                _ => emit(out, s, e, PathState::Network, Cause::Wake(ctx)),
            },
            Wake::Block { ctx, issued } => match issued {
                Some(by) if by.ns > s && by.ns < e => {
                    follow(out, by.tid(), s, by.ns);
                    emit(out, by.ns, e, PathState::BlockDevice, Cause::Block(ctx, Some(by.tid())));
                }
                _ => emit(out, s, e, PathState::BlockDevice, Cause::Block(ctx, issued.map(|b| b.tid()))),
            },
            Wake::Ipi(ctx) => emit(out, s, e, PathState::Ipi, Cause::Wake(ctx)),
            Wake::UserInput(ctx) => emit(out, s, e, PathState::UserInput, Cause::Wake(ctx)),
            Wake::Other(ctx) => emit(out, s, e, PathState::Blocked, Cause::Wake(ctx)),
            Wake::Unknown(why) => emit(out, s, e, PathState::Unknown, Cause::Unknown(why)),
        }
    }

    /// Appends a segment, or lengthens the last one when it is the same.
    #[allow(clippy::too_many_arguments)]
    fn emit(&mut self, a: i64, b: i64, tid: i64, state: PathState, cause: Cause, node: u32) {
        if a >= b {
            return;
        }
        if let Some(last) = self.out.last_mut() {
            if last.end_ns == a && self.last == Some((tid, state, cause, node)) {
                last.end_ns = b;
                return;
            }
        }
        self.last = Some((tid, state, cause, node));
        let g = self.g;
        let name = self.names.entry(tid).or_insert_with(|| g.name(tid).into()).clone();
        let text = match self.causes.get(&cause) {
            Some(t) => t.clone(),
            None => {
                let t: Arc<str> = self.cause(cause).into();
                self.causes.insert(cause, t.clone());
                t
            }
        };
        self.out.push(Segment { begin_ns: a, end_ns: b, tid, name, state, cause: text, follow: node });
    }

    fn ctx(&self, ctx: Ctx) -> String {
        match ctx {
            Ctx::Irq(irq) => match self.g.irq_name(irq.into()) {
                Some(n) => format!("irq {irq} ({n})"),
                None => format!("irq {irq}"),
            },
            Ctx::Softirq(v) => match softirq::name(v) {
                Some(n) => format!("softirq {n}"),
                None => format!("softirq {v}"),
            },
            Ctx::Hrtimer => "hrtimer expiry".into(),
            Ctx::Vector(v) => format!("{} interrupt", v.name()),
            Ctx::Idle => "the idle task".into(),
        }
    }

    fn who(&self, tid: i64) -> String {
        format!("{} ({tid})", self.g.name(tid))
    }

    fn cause(&self, c: Cause) -> String {
        match c {
            Cause::Cpu(cpu) => format!("on CPU {cpu}"),
            Cause::Interrupt(ctx) => self.ctx(ctx),
            Cause::PreemptedBy(0) => "preempted (the CPU went idle)".into(),
            Cause::PreemptedBy(by) => format!("preempted by {}", self.who(by)),
            Cause::WaitCpu => "woken, waiting for a CPU".into(),
            Cause::Wake(ctx) => format!("woken in {}", self.ctx(ctx)),
            Cause::SentBy(ctx, tid) => format!("woken in {}, sent by {}", self.ctx(ctx), self.who(tid)),
            Cause::Block(ctx, Some(tid)) => format!("request issued by {}, completed in {}", self.who(tid), self.ctx(ctx)),
            Cause::Block(ctx, None) => format!("request completed in {}", self.ctx(ctx)),
            Cause::Unknown(why) => match why {
                Why::NotSeen => "no event of this thread".into(),
                Why::MissedSwitch => "context switch not recorded".into(),
                Why::Lost => "events lost".into(),
                Why::NoWakeup => "wake-up not recorded".into(),
                Why::Context => "wake-up from an unknown context".into(),
            },
            Cause::Cycle(tid) => format!("waits for {}, which waits for it (inconsistent trace)", self.who(tid)),
            Cause::TooDeep => format!("dependency chain deeper than {MAX_DEPTH}"),
            Cause::Exited => "exited".into(),
            Cause::StillBlocked => "still blocked at the end of the trace".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{Blocks, By, Interrupt, Step, Thread, Vector};
    use tracelens_analysis::kernel::Comm;

    /// A step, with a wait's wake in place (see [`graph`]).
    #[derive(Clone, Copy)]
    enum S {
        St(State),
        Blocked(Wake),
    }

    fn step(ns: i64, state: State) -> (i64, S) {
        (ns, S::St(state))
    }

    fn wait(ns: i64, wake: Wake) -> (i64, S) {
        (ns, S::Blocked(wake))
    }

    /// A thread built by hand: id, name, steps.
    type Hand<'a> = (i64, &'a str, Vec<(i64, S)>);

    fn graph(threads: Vec<Hand<'_>>) -> ExecutionGraph {
        let mut g = ExecutionGraph { span: Some((0, 1000)), ..ExecutionGraph::default() };
        for (tid, name, steps) in threads {
            let steps: Vec<Step> = steps
                .into_iter()
                .map(|(ns, s)| Step {
                    ns,
                    state: match s {
                        S::St(st) => st,
                        S::Blocked(w) => g.waiting(w),
                    },
                })
                .collect();
            let (b, e) = (steps.first().map_or(0, |s| s.ns.max(0)), 1000);
            g.threads.insert(tid, Thread::from_steps(steps, b, e));
            g.names.insert(tid, Comm::new(name.as_bytes()));
        }
        g
    }

    /// (tid, state, begin, end) of each segment.
    fn segs(p: &CriticalPath) -> Vec<(i64, PathState, i64, i64)> {
        p.segments.iter().map(|s| (s.tid, s.state, s.begin_ns, s.end_ns)).collect()
    }

    fn check_tiling(p: &CriticalPath) {
        let mut at = p.begin_ns;
        for s in &p.segments {
            assert_eq!(s.begin_ns, at, "gap or overlap at {at}: {:?}", segs(p));
            assert!(s.end_ns > s.begin_ns);
            at = s.end_ns;
        }
        assert_eq!(at, p.end_ns);
        assert_eq!(p.by_state.total(), p.end_ns - p.begin_ns);
    }

    use PathState::*;

    #[test]
    fn sleep_then_timer() {
        let g = graph(vec![(
            10,
            "a",
            vec![
                step(0, State::Running { cpu: 0 }),
                wait(100, Wake::Timer(Ctx::Hrtimer)),
                step(600, State::WaitCpu),
                step(620, State::Running { cpu: 1 }),
            ],
        )]);
        let p = critical_path(&g, 10, Some(0), Some(700)).unwrap();
        check_tiling(&p);
        assert_eq!(segs(&p), vec![(10, Running, 0, 100), (10, Timer, 100, 600), (10, Preempted, 600, 620), (10, Running, 620, 700)]);
        assert_eq!(p.by_state.timer, 500);
        assert_eq!(p.unknown_fraction, 0.0);
    }

    #[test]
    fn chain_of_wakers_bounded_by_the_wait() {
        // A waits for B from 100 to 600; B waits for C from 50 to 300, then runs; C runs from
        // 0 and wakes B at 300.
        let g = graph(vec![
            (1, "A", vec![step(0, State::Running { cpu: 0 }), wait(100, Wake::Task(2)), step(600, State::WaitCpu), step(610, State::Running { cpu: 0 })]),
            (2, "B", vec![step(0, State::Running { cpu: 1 }), wait(50, Wake::Task(3)), step(300, State::WaitCpu), step(320, State::Running { cpu: 1 })]),
            (3, "C", vec![step(0, State::Running { cpu: 2 }), wait(400, Wake::Pending)]),
        ]);
        let p = critical_path(&g, 1, Some(0), Some(700)).unwrap();
        check_tiling(&p);
        assert_eq!(
            segs(&p),
            vec![(1, Running, 0, 100), (3, Running, 100, 300), (2, Preempted, 300, 320), (2, Running, 320, 600), (1, Preempted, 600, 610), (1, Running, 610, 700)]
        );
        let c = p.by_thread.iter().find(|t| t.tid == 3).unwrap();
        assert_eq!((c.ns, c.running_ns, c.name.as_str()), (200, 200, "C"));
        // A's wait from 100 follows B, whose wait follows C: each segment knows its walk.
        assert_eq!(
            p.follows,
            vec![
                Follow { tid: 1, since_ns: 0, parent: None },
                Follow { tid: 2, since_ns: 100, parent: Some(0) },
                Follow { tid: 3, since_ns: 100, parent: Some(1) },
            ]
        );
        let follows: Vec<u32> = p.segments.iter().map(|s| s.follow).collect();
        assert_eq!(follows, vec![0, 2, 1, 1, 0, 0]);
    }

    #[test]
    fn a_loop_of_waits_is_unknown_not_followed() {
        let g = graph(vec![
            (1, "A", vec![wait(0, Wake::Task(2)), step(500, State::Running { cpu: 0 })]),
            (2, "B", vec![wait(0, Wake::Task(1)), step(400, State::Running { cpu: 1 })]),
        ]);
        let p = critical_path(&g, 1, Some(0), Some(600)).unwrap();
        check_tiling(&p);
        assert_eq!(segs(&p), vec![(2, Unknown, 0, 400), (2, Running, 400, 500), (1, Running, 500, 600)]);
        assert!(p.segments[0].cause.contains("waits for A (1)"), "{}", p.segments[0].cause);
        assert_eq!(&*p.segments[1].name, "B");
        assert!((p.unknown_fraction - 400.0 / 600.0).abs() < 1e-12);
    }

    #[test]
    fn interrupts_split_running_time() {
        let mut g = graph(vec![(1, "A", vec![step(0, State::Running { cpu: 3 })])]);
        g.interrupts = vec![Default::default(), Default::default(), Default::default(), Blocks::from(vec![
            Interrupt { begin_ns: 10, end_ns: 20, ctx: Ctx::Irq(11) },
            Interrupt { begin_ns: 50, end_ns: 70, ctx: Ctx::Vector(Vector::LocalTimer) },
            Interrupt { begin_ns: 95, end_ns: 130, ctx: Ctx::Softirq(3) },
        ])];
        g.irq_names.insert(11, "virtio0-requests".into());
        let p = critical_path(&g, 1, Some(15), Some(100)).unwrap();
        check_tiling(&p);
        assert_eq!(segs(&p), vec![(1, Interrupted, 15, 20), (1, Running, 20, 50), (1, Interrupted, 50, 70), (1, Running, 70, 95), (1, Interrupted, 95, 100)]);
        assert_eq!(&*p.segments[0].cause, "irq 11 (virtio0-requests)");
        assert_eq!(&*p.segments[4].cause, "softirq NET_RX");
    }

    #[test]
    fn block_request_follows_its_issuer_then_the_device() {
        // A blocks at 100; K issues the request at 250, it completes at 800.
        let g = graph(vec![
            (1, "A", vec![step(0, State::Running { cpu: 0 }), wait(100, Wake::Block { ctx: Ctx::Irq(24), issued: By::new(7, 250) }), step(800, State::Running { cpu: 0 })]),
            (7, "jbd2/vda-8", vec![wait(0, Wake::Timer(Ctx::Softirq(1))), step(120, State::Running { cpu: 1 }), wait(260, Wake::Pending)]),
        ]);
        let p = critical_path(&g, 1, Some(0), Some(900)).unwrap();
        check_tiling(&p);
        assert_eq!(segs(&p), vec![(1, Running, 0, 100), (7, Timer, 100, 120), (7, Running, 120, 250), (1, BlockDevice, 250, 800), (1, Running, 800, 900)]);
        assert_eq!(&*p.segments[3].cause, "request issued by jbd2/vda-8 (7), completed in irq 24");
    }

    #[test]
    fn network_wait_follows_the_local_sender() {
        let g = graph(vec![
            (1, "client", vec![wait(0, Wake::Network { ctx: Ctx::Softirq(3), from: By::new(2, 300) }), step(310, State::Running { cpu: 0 })]),
            (2, "server", vec![wait(0, Wake::Pending), step(50, State::Running { cpu: 1 })]),
        ]);
        let p = critical_path(&g, 1, Some(20), Some(400)).unwrap();
        check_tiling(&p);
        assert_eq!(segs(&p), vec![(2, Blocked, 20, 50), (2, Running, 50, 300), (1, Network, 300, 310), (1, Running, 310, 400)]);
        assert!(p.segments[2].cause.contains("sent by server (2)"));
    }

    #[test]
    fn what_the_chain_does_not_cover_is_unknown() {
        let g = graph(vec![(1, "A", vec![step(100, State::Running { cpu: 0 }), step(200, State::Gone)])]);
        let p = critical_path(&g, 1, Some(50), Some(300)).unwrap();
        check_tiling(&p);
        assert_eq!(segs(&p), vec![(1, Unknown, 50, 100), (1, Running, 100, 200), (1, Unknown, 200, 300)]);
        // The default interval is the thread's lifetime.
        let p = critical_path(&g, 1, None, Some(200)).unwrap();
        assert_eq!(segs(&p), vec![(1, Running, 100, 200)]);
    }

    #[test]
    fn a_fork_is_a_wait_for_the_parent() {
        let g = graph(vec![
            (1, "parent", vec![step(0, State::Running { cpu: 0 })]),
            (2, "child", vec![wait(i64::MIN, Wake::Created(1)), step(500, State::WaitCpu), step(510, State::Running { cpu: 1 })]),
        ]);
        let p = critical_path(&g, 2, Some(100), Some(600)).unwrap();
        check_tiling(&p);
        assert_eq!(segs(&p), vec![(1, Running, 100, 500), (2, Preempted, 500, 510), (2, Running, 510, 600)]);
    }

    #[test]
    fn errors() {
        let g = graph(vec![(1, "A", vec![step(100, State::Running { cpu: 0 })])]);
        assert!(matches!(critical_path(&g, 2, None, None), Err(Error::NoSuchThread { tid: 2, threads: 1 })));
        assert!(matches!(critical_path(&g, 1, Some(500), Some(400)), Err(Error::EmptyRange { .. })));
        assert!(matches!(critical_path(&g, 1, Some(-5), Some(400)), Err(Error::OutsideTrace { .. })));
        assert!(matches!(critical_path(&g, 1, Some(5), Some(4000)), Err(Error::OutsideTrace { .. })));
        let p = critical_path(&g, 1, Some(400), Some(400)).unwrap();
        assert!(p.segments.is_empty());
        assert_eq!(p.unknown_fraction, 0.0);
    }

    #[test]
    fn json_shape() {
        let g = graph(vec![(1, "A", vec![step(0, State::Running { cpu: 0 }), wait(10, Wake::Other(Ctx::Idle))])]);
        let p = critical_path(&g, 1, Some(0), Some(20)).unwrap();
        let v: serde_json::Value = serde_json::to_value(&p).unwrap();
        assert_eq!(v["segments"][1]["state"], "blocked");
        assert_eq!(v["segments"][1]["cause"], "woken in the idle task");
        assert_eq!(v["by_state"]["blocked"], 10);
        assert_eq!(v["by_state"]["block_device"], 0);
        assert_eq!(v["unknown_fraction"], 0.0);
        assert_eq!(v["tid"], 1);
    }
}
