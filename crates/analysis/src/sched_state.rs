//! A thread's scheduling state, from its own scheduler events taken in time order: running
//! (on a CPU) from its switch in, preempted after a switch out while runnable, blocked (in
//! the kernel task state it had) after any other switch out, waiting for a CPU once woken,
//! dead after it exits. `threads` adds the intervals up; `timeline` draws them.

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
    /// Switched out with this `prev_state`.
    Out(i64),
    /// Woken (`sched_waking` / `sched_wakeup`).
    Wake,
    /// Created and runnable (`sched_wakeup_new`).
    WakeNew,
    /// `sched_process_exit`: its next switch out is its last.
    Exit,
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
    /// Exited.
    Dead,
}

/// A thread's state and since when.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Track {
    /// The current state.
    pub(crate) state: State,
    /// Since when (ns).
    pub(crate) since: i64,
    exiting: bool,
}

impl Track {
    /// Applies `step` at `ns`; returns the interval it ended, `(state, from, to)`, when the
    /// state changed (a wake-up of a running or runnable thread changes nothing).
    pub(crate) fn step(&mut self, ns: i64, step: Step) -> Option<(State, i64, i64)> {
        let next = match step {
            Step::In(cpu) => State::Running(cpu),
            Step::Out(prev_state) => {
                let state = blocked_state(prev_state);
                if std::mem::take(&mut self.exiting) || matches!(state, Some(4 | 5)) {
                    State::Dead
                } else {
                    state.map_or(State::Preempted, State::Blocked)
                }
            }
            Step::Wake | Step::WakeNew => match self.state {
                State::Blocked(_) | State::Unknown | State::Dead => State::WaitCpu,
                _ => return None,
            },
            Step::Exit => {
                self.exiting = true;
                return None;
            }
        };
        Some(self.enter(next, ns))
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
        assert_eq!(t.step(100, Step::Out(1)), Some((State::Unknown, 0, 100)));
        assert_eq!(t.step(150, Step::Wake), Some((State::Blocked(0), 100, 150)));
        assert_eq!(t.step(160, Step::Wake), None);
        assert_eq!(t.step(170, Step::In(3)), Some((State::WaitCpu, 150, 170)));
        assert_eq!(t.step(180, Step::Exit), None);
        assert_eq!(t.step(190, Step::Out(0)), Some((State::Running(3), 170, 190)));
        assert_eq!(t.state, State::Dead);
        assert_eq!(t.end(300), (State::Dead, 190, 300));
    }
}
