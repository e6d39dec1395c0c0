//! What events say about a thread: its scheduler steps (for `sched_state.rs`) and, whatever
//! their order, its names, process ids, first and last times: shared by the analyses that
//! list threads.

use crate::id_map::IdMap;
use crate::kernel::{Comm, KEvent, Kind, Kinds, What};
use crate::order::EventKey;
use crate::sched_state::Step;

/// The kernel event kinds [`observe`] reads.
pub(crate) const THREAD_KINDS: Kinds =
    Kinds::of(&[What::SchedSwitch, What::SchedWaking, What::SchedWakeup, What::SchedWakeupNew, What::Fork, What::Exit, What::StatedumpProcess]);

/// A run of a thread's own events on a CPU, not handed over yet.
#[derive(Clone, Copy, Debug)]
struct Run {
    key: EventKey,
    tid: i64,
    cpu: u32,
    packet: usize,
    until: i64,
    after: i64,
    idle: bool,
}

/// What the kernel events of a chunk say about threads, event by event: their scheduler
/// steps, and the runs of their own events on a CPU ([`Step::Ran`], see `sched_state.rs`),
/// one step per run of consecutive events of one thread on one CPU within a packet (so the
/// steps do not depend on where the trace is cut into chunks).
#[derive(Clone, Debug, Default)]
pub(crate) struct Observer {
    run: Option<Run>,
    /// Per CPU: the packet and time of its last event, and whether the CPU ran its idle task
    /// then (as far as that packet says: see [`Step::Ran`]). The CPU of the latest event is
    /// kept apart (`hot`), out of the map: a chunk reads one stream, whose events are mostly
    /// of one CPU, so that most events find their CPU without hashing.
    hot: (u32, Option<CpuLast>),
    last: IdMap<u32, CpuLast>,
}

/// A CPU's last event in a chunk: its packet, its time, and whether the CPU was idle then.
type CpuLast = (usize, i64, bool);

impl Observer {
    /// What kernel event `k` (at `key`, in packet `packet` of the chunk's stream) says about
    /// threads: `step(key, tid, step)` for each scheduler step of a thread it is (a switch
    /// gives the thread switched out, then the one switched in; the run of events of the
    /// thread its context names comes later, as one step), and in `seen` when each thread was
    /// seen, its name and process.
    pub(crate) fn observe(&mut self, k: &KEvent<'_>, key: EventKey, packet: usize, seen: &mut IdMap<i64, Seen>, mut step: impl FnMut(EventKey, i64, Step)) {
        let ns = k.ns;
        // The CPU's previous event in this packet, and whether the CPU was idle then: its last
        // switch in the packet went to the idle task, and no event since names another thread.
        let last = self.last_mut(k.cpu);
        let idle_now = match k.kind {
            Kind::SchedSwitch { next_tid, .. } => next_tid == 0,
            _ => matches!(*last, Some((p, _, true)) if p == packet) && k.tid.is_none_or(|t| t == 0),
        };
        let (after, idle) = match last.replace((packet, ns, idle_now)) {
            Some((p, t, idle)) if p == packet => (t, idle),
            _ => (i64::MIN, false),
        };
        match (k.tid, &mut self.run) {
            // A switch ends the runs of its CPU (its context is the thread switched out).
            (_, Some(r)) if r.cpu == k.cpu && matches!(k.kind, Kind::SchedSwitch { .. }) => self.flush(&mut step),
            (_, _) if matches!(k.kind, Kind::SchedSwitch { .. }) => {}
            (Some(tid), Some(r)) if r.tid == tid && r.cpu == k.cpu && r.packet == packet => r.until = ns,
            (Some(tid), _) => {
                self.flush(&mut step);
                self.run = Some(Run { key, tid, cpu: k.cpu, packet, until: ns, after, idle });
            }
            (None, _) => {}
        }
        let mut named = |tid: i64, comm: &[u8], s: Option<Step>| {
            if let Some(s) = s {
                step(key, tid, s);
            }
            let t = seen.entry(tid).or_default();
            t.at(ns);
            t.name(key, comm);
        };
        match k.kind {
            Kind::SchedSwitch { prev_tid, prev_comm, prev_state, next_tid, next_comm, .. } => {
                if prev_tid != 0 {
                    named(prev_tid, prev_comm, Some(Step::Out { state: prev_state, cpu: k.cpu, after, idle }));
                }
                if next_tid != 0 {
                    named(next_tid, next_comm, Some(Step::In(k.cpu)));
                }
            }
            Kind::SchedWaking { tid, comm, .. } | Kind::SchedWakeup { tid, comm, .. } if tid != 0 => named(tid, comm, Some(Step::Wake)),
            Kind::SchedWakeupNew { tid, comm, .. } if tid != 0 => named(tid, comm, Some(Step::WakeNew)),
            Kind::ProcessExit { tid } if tid != 0 => named(tid, &[], Some(Step::Exit)),
            Kind::ProcessFork { parent_tid, parent_pid, child_tid, child_pid, child_comm } => {
                named(child_tid, child_comm, None);
                let p = seen.entry(parent_tid).or_default();
                p.at(ns);
                if let Some(pid) = parent_pid {
                    p.pid(key, pid);
                }
                if let Some(pid) = child_pid {
                    seen.entry(child_tid).or_default().pid(key, pid);
                }
            }
            Kind::StatedumpProcess { tid, pid, name, .. } => {
                let s = seen.entry(tid).or_default();
                s.pid(key, pid);
                s.name(key, name);
            }
            _ => {
                if let Some(tid) = k.tid.filter(|&t| t != 0) {
                    let s = seen.entry(tid).or_default();
                    s.at(ns);
                    if let Some(pid) = k.pid {
                        s.pid(key, pid);
                    }
                }
            }
        }
    }

    /// CPU `cpu`'s last event (in `hot`).
    #[inline(always)]
    fn last_mut(&mut self, cpu: u32) -> &mut Option<CpuLast> {
        if self.hot.0 != cpu {
            self.make_hot(cpu);
        }
        &mut self.hot.1
    }

    /// Moves CPU `cpu`'s last event from the map to `hot`, and the one there to the map.
    #[cold]
    fn make_hot(&mut self, cpu: u32) {
        let now = self.last.remove(&cpu);
        if let (c, Some(l)) = std::mem::replace(&mut self.hot, (cpu, now)) {
            self.last.insert(c, l);
        }
    }

    /// Hands over the run of events not handed over yet (at the end of a chunk).
    pub(crate) fn flush(&mut self, mut step: impl FnMut(EventKey, i64, Step)) {
        if let Some(r) = self.run.take() {
            if r.tid != 0 {
                step(r.key, r.tid, Step::Ran { cpu: r.cpu, until: r.until, after: r.after, idle: r.idle });
            }
        }
    }
}

/// What events say about a thread in any order: when it was first and last seen, its latest
/// name and its earliest process id (merged by minima and maxima, so any cut agrees).
#[derive(Clone, Debug)]
pub(crate) struct Seen {
    /// First event naming it (ns).
    pub(crate) first: i64,
    /// Last event naming it.
    pub(crate) last: i64,
    /// Its latest name.
    pub(crate) name: Option<(EventKey, Comm)>,
    /// Its earliest process id.
    pub(crate) pid: Option<(EventKey, i64)>,
}

impl Default for Seen {
    fn default() -> Self {
        Seen { first: i64::MAX, last: i64::MIN, name: None, pid: None }
    }
}

impl Seen {
    /// Seen at `ns`.
    pub(crate) fn at(&mut self, ns: i64) {
        self.first = self.first.min(ns);
        self.last = self.last.max(ns);
    }

    /// The latest name wins (a thread renamed by `exec` shows its new name).
    pub(crate) fn name(&mut self, key: EventKey, comm: &[u8]) {
        if !comm.is_empty() && !matches!(&self.name, Some((k, _)) if *k > key) {
            self.name = Some((key, Comm::new(comm)));
        }
    }

    /// The earliest process id wins.
    pub(crate) fn pid(&mut self, key: EventKey, pid: i64) {
        if !matches!(self.pid, Some((k, _)) if k < key) {
            self.pid = Some((key, pid));
        }
    }

    /// Adds what another run of chunks saw.
    pub(crate) fn absorb(&mut self, o: Seen) {
        self.first = self.first.min(o.first);
        self.last = self.last.max(o.last);
        if let Some((k, c)) = o.name {
            self.name(k, c.as_bytes());
        }
        if let Some((k, p)) = o.pid {
            self.pid(k, p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{CpuLast, Observer};
    use proptest::prelude::*;

    proptest! {
        /// The CPU kept apart (`hot`) and the map behave as one map of each CPU's last event:
        /// every replacement returns what a plain map's insert returns, whatever the order in
        /// which CPUs come (one CPU at a time, interleaved, CPU 0 and `u32::MAX` included).
        #[test]
        fn last_events_are_one_map(ops in prop::collection::vec((prop::sample::select(vec![0u32, 1, 2, 7, u32::MAX]), any::<(usize, i64, bool)>()), 0..200)) {
            let mut o = Observer::default();
            let mut model: std::collections::HashMap<u32, CpuLast> = std::collections::HashMap::new();
            for (cpu, now) in ops {
                prop_assert_eq!(o.last_mut(cpu).replace(now), model.insert(cpu, now));
            }
            for (cpu, want) in model {
                prop_assert_eq!(*o.last_mut(cpu), Some(want));
            }
        }
    }
}
