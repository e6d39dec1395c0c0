//! What events say about a thread whatever their order (names, process ids, first and last
//! times): shared by the analyses that list threads.

use crate::id_map::IdMap;
use crate::kernel::{Comm, KEvent, Kind, Kinds, What};
use crate::order::EventKey;
use crate::sched_state::Step;

/// The kernel event kinds [`observe`] reads.
pub(crate) const THREAD_KINDS: Kinds =
    Kinds::of(&[What::SchedSwitch, What::SchedWaking, What::SchedWakeup, What::SchedWakeupNew, What::Fork, What::Exit, What::StatedumpProcess]);

/// What kernel event `k` (at `key`) says about threads: `step(tid, step)` for each scheduler
/// step of a thread it is (a switch gives the thread switched out, then the one switched in),
/// and in `seen` when each thread was seen, its name and process.
pub(crate) fn observe(k: &KEvent<'_>, key: EventKey, seen: &mut IdMap<i64, Seen>, mut step: impl FnMut(i64, Step)) {
    let ns = k.ns;
    let mut named = |tid: i64, comm: &[u8], s: Option<Step>| {
        if let Some(s) = s {
            step(tid, s);
        }
        let t = seen.entry(tid).or_default();
        t.at(ns);
        t.name(key, comm);
    };
    match k.kind {
        Kind::SchedSwitch { prev_tid, prev_comm, prev_state, next_tid, next_comm, .. } => {
            if prev_tid != 0 {
                named(prev_tid, prev_comm, Some(Step::Out(prev_state)));
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
