//! A thread's scheduling state, from its own scheduler events taken in time order: running
//! (on a CPU) from its switch in, preempted after a switch out while runnable, blocked (in
//! the kernel task state it had) after any other switch out, waiting for a CPU once woken,
//! dead after it exits. `threads` adds the intervals up; `timeline` draws them.
//!
//! # Switches the trace does not have
//!
//! Some kernels do not record every context switch (the recorder warns, and writes them as
//! lost events; lost events lose switches too). Where the trace gives each event its thread
//! (a `tid` context, as `tracelens record` and `lttng add-context -t tid` write; perf's
//! `perf_tid`), a thread's own events on a CPU prove that it runs there: a [`Step::Ran`]. The
//! rule is the critical path's (`tracelens-critical`, its graph's `evidence`):
//!
//! * a thread not running (preempted, waiting, blocked) that has events on a CPU was switched
//!   in there at a time the trace does not give: after the later of the start of its state
//!   and the CPU's previous event, before its own first event. That stretch is
//!   [`State::Missed`] (not known: it waited, or ran); it runs from its first event on;
//! * a thread running on one CPU that has events on another, or is switched in on another,
//!   was switched out of the first after its last event there: from then to its first event
//!   on the new CPU is [`State::Missed`];
//! * a thread switched out while not running was switched in after the later of the start of
//!   its state and the CPU's previous event: that stretch is [`State::Missed`] too;
//! * except where the CPU ran its idle task at its previous event (its last switch in the
//!   packet went to the idle task, and no event since named another thread): a woken thread
//!   ([`State::WaitCpu`]) is switched in at once there — the idle task runs nothing else and
//!   gives way as soon as a thread is queued; kernels that miss switches mostly miss these,
//!   right after the interrupt that woke the thread — so it runs from that previous event on.
//!   The critical path's graph reads them the same way.
//!
//! Nothing else is guessed: what is not known is counted as such, never as the state around
//! it.

/// Task-state letters and meanings, by bit of `prev_state` (the kernel's `TASK_REPORT` order,
/// kernels since 4.14).
pub(crate) const STATES: [(char, &str); 8] = [
    ('S', "sleeping"),
    ('D', "uninterruptible"),
    ('T', "stopped"),
    ('t', "traced"),
    ('X', "dead"),
    ('Z', "zombie"),
    ('P', "parked"),
    ('I', "idle"),
];

/// The index in [`STATES`] of a switched-out thread's state, `None` when it stays runnable
/// (no state bit: 0, or only the kernel's preemption flag above them).
pub(crate) fn blocked_state(prev_state: i64) -> Option<usize> {
    let bits = prev_state & 0xff;
    (bits != 0).then(|| bits.trailing_zeros() as usize)
}

/// A scheduler event of one thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Switched in on a CPU.
    In(u32),
    /// Switched out of `cpu` with this `prev_state`; `after`: the time of the CPU's previous
    /// event in the same packet (`i64::MIN` when there is none); `idle`: the CPU ran its idle
    /// task then (see the module docs).
    Out {
        /// `prev_state`.
        state: i64,
        /// The CPU.
        cpu: u32,
        /// See above.
        after: i64,
        /// See above.
        idle: bool,
    },
    /// Woken (`sched_waking` / `sched_wakeup`).
    Wake,
    /// Created and runnable (`sched_wakeup_new`).
    WakeNew,
    /// `sched_process_exit`: its next switch out is its last.
    Exit,
    /// Events of the thread's own (its id in their context) on `cpu`, from the step's time to
    /// `until`, all in one packet; `after`: the time of the CPU's previous event in that packet
    /// (`i64::MIN` when there is none); `idle`: the CPU ran its idle task then.
    Ran {
        /// The CPU.
        cpu: u32,
        /// The time of its last event of the run.
        until: i64,
        /// See above.
        after: i64,
        /// See above.
        idle: bool,
    },
}

/// What a thread is doing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum State {
    /// Not known yet (before its first event).
    #[default]
    Unknown,
    /// On this CPU.
    Running(u32),
    /// Runnable after being preempted.
    Preempted,
    /// Runnable after a wake-up.
    WaitCpu,
    /// Blocked in the [`STATES`] entry of this index.
    Blocked(usize),
    /// Not known: a switch of the thread was not recorded (see the module docs).
    Missed,
    /// Exited.
    Dead,
}

/// A thread's state and since when.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Track {
    /// The current state.
    pub(crate) state: State,
    /// Since when (ns).
    pub(crate) since: i64,
    /// The time of its last own event on a CPU (its switch in, a [`Step::Ran`]).
    last_seen: i64,
    exiting: bool,
}

impl Default for Track {
    fn default() -> Self {
        Track { state: State::Unknown, since: 0, last_seen: i64::MIN, exiting: false }
    }
}

impl Track {
    /// Applies `step` at `ns`: `ended(state, from, to)` for each interval it ends (none when
    /// nothing changes, as for a wake-up of a running or runnable thread or its own events
    /// where it runs; two when a missed switch comes first).
    pub(crate) fn step(&mut self, ns: i64, step: Step, mut ended: impl FnMut((State, i64, i64))) {
        // A step before the current state began (times going backwards from one packet to the
        // next, in a damaged trace) comes at that beginning: no interval runs backwards.
        let ns = if self.state == State::Unknown { ns } else { ns.max(self.since) };
        let next = match step {
            Step::In(cpu) => {
                if let State::Running(c) = self.state {
                    if c != cpu {
                        self.left(ns, &mut ended);
                    }
                }
                self.last_seen = ns;
                State::Running(cpu)
            }
            Step::Out { state, cpu, after, idle } => {
                match self.state {
                    State::Running(c) if c == cpu => {}
                    State::Running(_) => self.left(ns, &mut ended),
                    State::Unknown | State::Dead => {}
                    // It ran here before `ns`; since when, the trace does not say (but an
                    // idle CPU takes a woken thread at once).
                    _ => self.switched_in(cpu, after, idle, ns, &mut ended),
                }
                let state = blocked_state(state);
                if std::mem::take(&mut self.exiting) || matches!(state, Some(4 | 5)) {
                    State::Dead
                } else {
                    state.map_or(State::Preempted, State::Blocked)
                }
            }
            Step::Wake | Step::WakeNew => match self.state {
                State::Blocked(_) | State::Unknown | State::Dead | State::Missed => State::WaitCpu,
                _ => return,
            },
            Step::Exit => {
                self.exiting = true;
                return;
            }
            Step::Ran { cpu, until, after, idle } => {
                match self.state {
                    State::Running(c) if c == cpu => {
                        self.last_seen = self.last_seen.max(until);
                        return;
                    }
                    State::Running(_) => self.left(ns, &mut ended),
                    State::Unknown => {}
                    _ => self.switched_in(cpu, after, idle, ns, &mut ended),
                }
                self.last_seen = until;
                if self.state == State::Running(cpu) {
                    // Running since the idle CPU's previous event.
                    return;
                }
                State::Running(cpu)
            }
        };
        ended(self.enter(next, ns));
    }

    /// The thread, running, left its CPU at a time not recorded, after its last event there
    /// and before `ns`.
    fn left(&mut self, ns: i64, ended: &mut impl FnMut((State, i64, i64))) {
        let at = self.last_seen.max(self.since).min(ns);
        if at > self.since {
            ended(self.enter(State::Missed, at));
        } else {
            self.state = State::Missed;
        }
    }

    /// The thread, not running, was switched in on `cpu` at a time not recorded, after the
    /// CPU's previous event at `after` and before `ns`: running from `after` when it was woken
    /// and the CPU idle then, else not known from `after`.
    fn switched_in(&mut self, cpu: u32, after: i64, idle: bool, ns: i64, ended: &mut impl FnMut((State, i64, i64))) {
        if !(idle && self.state == State::WaitCpu && after != i64::MIN) {
            return self.missed(after.max(self.since), ns, ended);
        }
        let from = after.clamp(self.since, ns);
        if from > self.since {
            ended(self.enter(State::Running(cpu), from));
        } else {
            self.state = State::Running(cpu);
        }
    }

    /// Not known from `from` (clamped to the state's start) to `to`.
    fn missed(&mut self, from: i64, to: i64, ended: &mut impl FnMut((State, i64, i64))) {
        let from = from.clamp(self.since, to);
        if self.state == State::Missed || from == self.since {
            self.state = State::Missed;
        } else {
            ended(self.enter(State::Missed, from));
        }
    }

    /// Ends the current state at `ns` (the end of the trace): the interval it ended.
    pub(crate) fn end(&mut self, ns: i64) -> (State, i64, i64) {
        self.enter(State::Unknown, ns)
    }

    fn enter(&mut self, next: State, ns: i64) -> (State, i64, i64) {
        let ended = (self.state, self.since, ns);
        self.state = next;
        self.since = ns;
        ended
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(t: &mut Track, steps: &[(i64, Step)]) -> Vec<(State, i64, i64)> {
        let mut out = Vec::new();
        for &(ns, s) in steps {
            t.step(ns, s, |i| out.push(i));
        }
        out
    }

    fn out(state: i64) -> Step {
        Step::Out { state, cpu: 3, after: i64::MIN, idle: false }
    }

    fn any_step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        let after = prop_oneof![Just(i64::MIN), -50i64..1050];
        prop_oneof![
            (0u32..3).prop_map(Step::In),
            (0i64..0x101, 0u32..3, after.clone(), any::<bool>()).prop_map(|(state, cpu, after, idle)| Step::Out { state, cpu, after, idle }),
            Just(Step::Wake),
            Just(Step::WakeNew),
            Just(Step::Exit),
            (0u32..3, -50i64..1050, after, any::<bool>()).prop_map(|(cpu, until, after, idle)| Step::Ran { cpu, until, after, idle }),
        ]
    }

    proptest::proptest! {
        /// Steps in any time order (a damaged trace's times go backwards between packets):
        /// no panic, and no known state's interval ends before it begins.
        #[test]
        fn steps_out_of_time_order_end_no_interval_backwards(seq in proptest::collection::vec((0i64..1000, any_step()), 0..40)) {
            let mut t = Track::default();
            for (state, from, to) in steps(&mut t, &seq) {
                proptest::prop_assert!(state == State::Unknown || from <= to, "{state:?} from {from} to {to}");
            }
        }
    }

    #[test]
    fn states_from_prev_state() {
        assert_eq!(blocked_state(0), None);
        assert_eq!(blocked_state(0x100), None); // preempted (TASK_REPORT_MAX)
        assert_eq!(blocked_state(1), Some(0));
        assert_eq!(blocked_state(2), Some(1));
        assert_eq!(blocked_state(0x80), Some(7));
    }

    #[test]
    fn steps_end_intervals() {
        let mut t = Track::default();
        let got = steps(&mut t, &[(100, out(1)), (150, Step::Wake), (160, Step::Wake), (170, Step::In(3)), (180, Step::Exit), (190, out(0))]);
        assert_eq!(got, vec![(State::Unknown, 0, 100), (State::Blocked(0), 100, 150), (State::WaitCpu, 150, 170), (State::Running(3), 170, 190)]);
        assert_eq!(t.state, State::Dead);
        assert_eq!(t.end(300), (State::Dead, 190, 300));
    }

    #[test]
    fn own_events_of_a_running_thread_change_nothing() {
        let mut t = Track::default();
        let got = steps(&mut t, &[(10, Step::In(3)), (20, Step::Ran { cpu: 3, until: 40, after: 15, idle: false }), (50, out(1))]);
        assert_eq!(got, vec![(State::Unknown, 0, 10), (State::Running(3), 10, 50)]);
    }

    /// Woken at 100; the CPU's previous event at 120 (the interrupt that woke it, say); its
    /// switch in not recorded; its own events from 130 to 400; switched out at 500.
    #[test]
    fn a_missed_switch_in_is_unknown_until_the_threads_own_events() {
        let mut t = Track::default();
        let got = steps(&mut t, &[(10, out(1)), (100, Step::Wake), (130, Step::Ran { cpu: 2, until: 400, after: 120, idle: false }), (500, Step::Out { state: 1, cpu: 2, after: 400, idle: false })]);
        assert_eq!(
            got,
            vec![(State::Unknown, 0, 10), (State::Blocked(0), 10, 100), (State::WaitCpu, 100, 120), (State::Missed, 120, 130), (State::Running(2), 130, 500)]
        );
        // Without a previous event on the CPU, the whole wait is unknown.
        let mut t = Track::default();
        let got = steps(&mut t, &[(100, Step::Wake), (130, Step::Ran { cpu: 2, until: 130, after: i64::MIN, idle: false })]);
        assert_eq!(got, vec![(State::Unknown, 0, 100), (State::Missed, 100, 130)]);
    }

    /// Blocked, woken at 100 by an interrupt on idle CPU 2 (its last event at 120); its switch
    /// in not recorded: running from 120, by its own events (from 130) or its switch out.
    #[test]
    fn a_woken_thread_runs_on_an_idle_cpu_from_the_cpus_previous_event() {
        let woken = [(10, out(1)), (100, Step::Wake)];
        let mut t = Track::default();
        let got = steps(&mut t, &[woken[0], woken[1], (130, Step::Ran { cpu: 2, until: 400, after: 120, idle: true }), (500, Step::Out { state: 1, cpu: 2, after: 400, idle: false })]);
        let want = vec![(State::Unknown, 0, 10), (State::Blocked(0), 10, 100), (State::WaitCpu, 100, 120), (State::Running(2), 120, 500)];
        assert_eq!(got, want);
        let mut t = Track::default();
        assert_eq!(steps(&mut t, &[woken[0], woken[1], (500, Step::Out { state: 1, cpu: 2, after: 120, idle: true })]), want);
        // Preempted (not woken), or the CPU not idle: not known.
        let mut t = Track::default();
        let got = steps(&mut t, &[(10, out(0)), (130, Step::Ran { cpu: 2, until: 400, after: 120, idle: true })]);
        assert_eq!(got, vec![(State::Unknown, 0, 10), (State::Preempted, 10, 120), (State::Missed, 120, 130)]);
        let mut t = Track::default();
        let got = steps(&mut t, &[woken[0], woken[1], (130, Step::Ran { cpu: 2, until: 400, after: 120, idle: false })]);
        assert_eq!(got[2..], [(State::WaitCpu, 100, 120), (State::Missed, 120, 130)]);
    }

    #[test]
    fn a_switch_out_without_its_switch_in() {
        let mut t = Track::default();
        let got = steps(&mut t, &[(10, out(0)), (100, Step::Out { state: 1, cpu: 0, after: 60, idle: false })]);
        assert_eq!(got, vec![(State::Unknown, 0, 10), (State::Preempted, 10, 60), (State::Missed, 60, 100)]);
        assert_eq!(t.state, State::Blocked(0));
    }

    #[test]
    fn moving_cpus_without_switches() {
        // Running on CPU 0 (last event there at 40), then its events on CPU 1 from 70.
        let mut t = Track::default();
        let got = steps(&mut t, &[(10, Step::In(0)), (20, Step::Ran { cpu: 0, until: 40, after: 10, idle: false }), (70, Step::Ran { cpu: 1, until: 90, after: 50, idle: false })]);
        assert_eq!(got, vec![(State::Unknown, 0, 10), (State::Running(0), 10, 40), (State::Missed, 40, 70)]);
        assert_eq!((t.state, t.since), (State::Running(1), 70));
        // Switched in on CPU 2 at 200, its switch out of CPU 1 missed.
        let got = steps(&mut t, &[(200, Step::In(2))]);
        assert_eq!(got, vec![(State::Running(1), 70, 90), (State::Missed, 90, 200)]);
    }
}
