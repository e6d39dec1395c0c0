//! Blocked time by reason: for every thread, how long it waited for a timer, a block device,
//! the network, another thread..., from the waits of the [`ExecutionGraph`] — each wait's
//! reason is what ended it, found from the waker CPU's context as the graph reads it (the
//! TraceCompare thesis, 2015, section 4.4.2). `tracelens threads` shows it beside the time by
//! kernel task state of `tracelens_analysis::Threads`; [`with_waits`] joins the two reports.
//!
//! The blocked intervals are those of `threads` (so the reasons add up to its blocked time
//! exactly); each takes the reason of the graph's wait that holds its last instant — the
//! same wake-up ends both, so the graph's wait ends where the interval does. Where the two
//! readings disagree (the graph has the thread running or runnable there: the trace lacks a
//! switch or a wake-up and they fill the gap differently) the reason is `unknown`.

use serde::Serialize;
use tracelens_analysis::{ThreadLife, ThreadsReport};

use crate::graph::{ExecutionGraph, Wake};

/// What ended a wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitReason {
    /// A timer (high-resolution timer expiry, the timer soft IRQs, the local timer).
    Timer,
    /// A block device (a request's completion, the block soft IRQ, a disk's interrupt).
    BlockDevice,
    /// The network (the network soft IRQs, a network interface's interrupt).
    Network,
    /// An inter-processor interrupt.
    Ipi,
    /// An input device's interrupt.
    UserInput,
    /// Another thread woke it (a lock, a pipe, a condition...).
    Thread,
    /// An interrupt, soft IRQ or the idle task that says nothing of why.
    Interrupt,
    /// The trace does not say (the wake-up, or the context it came from, was not recorded).
    Unknown,
    /// Not woken: still blocked at the end of the trace (or of the time range).
    NotWoken,
}

impl WaitReason {
    /// Every reason, in the order reports list them on equal times.
    pub const ALL: [WaitReason; 9] = [
        WaitReason::Timer,
        WaitReason::BlockDevice,
        WaitReason::Network,
        WaitReason::Ipi,
        WaitReason::UserInput,
        WaitReason::Thread,
        WaitReason::Interrupt,
        WaitReason::Unknown,
        WaitReason::NotWoken,
    ];

    /// The name reports use (`block_device`, ...).
    pub fn name(self) -> &'static str {
        match self {
            WaitReason::Timer => "timer",
            WaitReason::BlockDevice => "block_device",
            WaitReason::Network => "network",
            WaitReason::Ipi => "ipi",
            WaitReason::UserInput => "user_input",
            WaitReason::Thread => "thread",
            WaitReason::Interrupt => "interrupt",
            WaitReason::Unknown => "unknown",
            WaitReason::NotWoken => "not_woken",
        }
    }

    /// The reason of a wait ended by `wake`; `None` for the time before a thread existed.
    pub fn of(wake: Wake) -> Option<WaitReason> {
        Some(match wake {
            Wake::Pending => WaitReason::NotWoken,
            Wake::Task(_) => WaitReason::Thread,
            Wake::Created(_) => return None,
            Wake::Timer(_) => WaitReason::Timer,
            Wake::Network { .. } => WaitReason::Network,
            Wake::Block { .. } => WaitReason::BlockDevice,
            Wake::Ipi(_) => WaitReason::Ipi,
            Wake::UserInput(_) => WaitReason::UserInput,
            Wake::Other(_) => WaitReason::Interrupt,
            Wake::Unknown(_) => WaitReason::Unknown,
        })
    }
}

impl std::fmt::Display for WaitReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Time blocked for one reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ReasonTime {
    /// The reason.
    pub reason: WaitReason,
    /// Time in ns.
    pub ns: i64,
}

/// Thread `tid`'s blocked intervals `waits` (`(from, to)` in ns, as `threads` lists them in
/// [`ThreadLife::waits`]) summed by reason, longest first (ties in [`WaitReason::ALL`]'s
/// order).
pub fn blocked_by_reason(graph: &ExecutionGraph, tid: i64, waits: &[(i64, i64)]) -> Vec<ReasonTime> {
    let mut by = [0i64; WaitReason::ALL.len()];
    let thread = graph.threads.get(&tid);
    for &(from, to) in waits {
        if to <= from {
            continue;
        }
        let state = thread.and_then(|t| t.state_at(to - 1));
        let reason = state.and_then(|s| graph.wake_of(s)).and_then(WaitReason::of).unwrap_or(WaitReason::Unknown);
        by[reason as usize] += to - from;
    }
    sorted_reasons(by)
}

/// The times of `by` (by [`WaitReason`] index) that are not zero, longest first (ties in
/// [`WaitReason::ALL`]'s order).
pub(crate) fn sorted_reasons(by: [i64; WaitReason::ALL.len()]) -> Vec<ReasonTime> {
    let mut reasons: Vec<ReasonTime> = WaitReason::ALL.iter().zip(by).filter(|(_, ns)| *ns > 0).map(|(&reason, ns)| ReasonTime { reason, ns }).collect();
    reasons.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.reason.cmp(&b.reason)));
    reasons
}

/// A thread's life (see [`ThreadLife`]) with its blocked time by reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ThreadWaits {
    /// Its life, by kernel task state.
    #[serde(flatten)]
    pub life: ThreadLife,
    /// Its blocked time by what ended each wait, longest first: it adds up to
    /// `blocked_ns`.
    pub blocked_by_reason: Vec<ReasonTime>,
}

/// [`ThreadsReport`] with each thread's blocked time by reason.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ThreadsWaitsReport {
    /// First kernel event in the range (ns from the clock's origin).
    pub begin_ns: Option<i64>,
    /// Last kernel event in the range.
    pub end_ns: Option<i64>,
    /// Threads, in the report's order.
    pub threads: Vec<ThreadWaits>,
}

/// Joins `report` (a `threads` report that kept its waits: `Threads::keeping_waits`) and the
/// waits of `graph` (built from the same trace): each thread's blocked time by reason.
pub fn with_waits(report: ThreadsReport, graph: &ExecutionGraph) -> ThreadsWaitsReport {
    let threads = report
        .threads
        .into_iter()
        .map(|life| ThreadWaits { blocked_by_reason: blocked_by_reason(graph, life.tid, &life.waits), life })
        .collect();
    ThreadsWaitsReport { begin_ns: report.begin_ns, end_ns: report.end_ns, threads }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{Ctx, State, Step, Thread, Vector};

    #[test]
    fn waits_take_the_reason_of_the_graphs_wait_at_their_end() {
        let mut g = ExecutionGraph { span: Some((0, 1000)), ..ExecutionGraph::default() };
        let timer = g.waiting(Wake::Timer(Ctx::Hrtimer));
        let ipi = g.waiting(Wake::Ipi(Ctx::Vector(Vector::Reschedule)));
        let created = g.waiting(Wake::Created(1));
        let steps = vec![
            Step { ns: i64::MIN, state: created },
            Step { ns: 50, state: State::WaitCpu },
            Step { ns: 100, state: State::Running { cpu: 0 } },
            Step { ns: 200, state: timer },
            Step { ns: 300, state: State::Running { cpu: 0 } },
            Step { ns: 400, state: State::WokenBy(7) },
            Step { ns: 450, state: State::Running { cpu: 1 } },
            Step { ns: 500, state: ipi },
            Step { ns: 520, state: State::WaitCpu },
            Step { ns: 600, state: State::Blocked(crate::graph::WakeId::PENDING) },
        ];
        g.threads.insert(2, Thread::from_steps(steps, 50, 1000));
        let r = |v: &[(WaitReason, i64)]| v.iter().map(|&(reason, ns)| ReasonTime { reason, ns }).collect::<Vec<_>>();
        // The waits as the graph has them, one that `threads` starts earlier (the graph knew
        // less before: its wake-up is the same), and one where the graph has it running.
        let waits = [(200, 300), (380, 450), (500, 520), (600, 1000), (120, 140)];
        assert_eq!(
            blocked_by_reason(&g, 2, &waits),
            r(&[(WaitReason::NotWoken, 400), (WaitReason::Timer, 100), (WaitReason::Thread, 70), (WaitReason::Ipi, 20), (WaitReason::Unknown, 20)])
        );
        assert_eq!(blocked_by_reason(&g, 3, &[(0, 10)]), r(&[(WaitReason::Unknown, 10)]), "a thread not in the graph");
        assert!(blocked_by_reason(&g, 2, &[]).is_empty());
    }
}
