//! `cpu`: CPU usage per thread and per CPU, migrations, priorities — what lttng-cputop
//! reports.
//!
//! # What is counted
//!
//! A thread uses a CPU from the `sched_switch` that switches it in to the one that switches it
//! out, on that CPU. A CPU is busy while a thread other than its idle thread (tid 0) runs on it.
//! Percentages are of the analysed time range, from the first to the last kernel event (after
//! `--begin`/`--end`), as lttng-analyses does; the total is the mean of the per-CPU
//! percentages.
//!
//! At the edges of the range, as lttng-analyses:
//!
//! * The thread switched out by a CPU's first `sched_switch` ran since the beginning of the
//!   range — unless it was seen earlier (switched in or out or migrated elsewhere), then that
//!   time is not counted. The CPU was busy during that time unless that thread is its idle
//!   thread (lttng-analyses counts the CPU busy even then: see
//!   `docs/lttng-analyses-differences.md`).
//! * The thread switched in by a CPU's last `sched_switch` runs until the end of the range.
//!
//! # In parallel
//!
//! A chunk (a run of packets of one stream, so of one CPU for LTTng) only knows the intervals
//! between its own switches. For each CPU it keeps a *fragment*: its first switch (head: the
//! thread switched out, running since before the chunk) and its last (tail: the thread
//! switched in, running after the chunk), and the busy time in between. Merging two states
//! joins the fragments of each CPU: the interval from the earlier's tail to the later's head
//! goes to the earlier's tail thread. The fragments of one CPU come from one stream, so they
//! are merged in stream order. What is left at the end — the very first head and the very last
//! tail of each CPU — is resolved against the range's beginning and end, which only the whole
//! trace knows. Every other number (migrations, first appearance, names, priorities) is a sum,
//! a minimum or a first-by-[`EventKey`], so any cut gives the same report.

use std::collections::BTreeMap;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};
use tracelens_ctf::{EventView, Field};
use tracelens_trace::TraceSet;

use crate::engine::{Analysis, Chunk, Context};
use crate::filter::Filter;
use crate::id_map::IdMap;
use crate::kernel::{text, Comm, Extra, KernelMap, Kind, Kinds, What};
use crate::order::{EventCounter, EventKey};
use crate::span::Span;

/// The `cpu` analysis.
#[derive(Clone, Debug)]
pub struct Cpu {
    map: KernelMap,
    filter: Filter,
}

impl Cpu {
    /// The analysis of `set`, keeping what `filter` selects.
    pub fn new(set: &TraceSet, filter: Filter) -> Cpu {
        Cpu { map: KernelMap::new(set), filter }
    }
}

/// A CPU's first switch in a run of chunks: the thread switched out ran before it.
#[derive(Clone, Copy, Debug)]
struct Head {
    ns: i64,
    tid: i64,
    /// The thread is not the idle thread and passes the filter.
    pass: bool,
}

/// A CPU's last switch in a run of chunks: the thread switched in runs after it.
#[derive(Clone, Copy, Debug)]
struct Tail {
    ns: i64,
    tid: i64,
    pass: bool,
}

/// What a run of chunks knows of one CPU.
#[derive(Clone, Debug, Default)]
struct Frag {
    head: Option<Head>,
    tail: Option<Tail>,
    /// Busy time between the head and the tail.
    busy: i64,
}

/// What a run of chunks knows of one thread.
#[derive(Clone, Debug)]
struct ThreadAcc {
    cpu_ns: i64,
    migrations: u64,
    /// Earliest switch or migration naming the thread.
    first_seen: i64,
    /// The name at its first appearance.
    name: Option<(EventKey, Comm)>,
    /// Priorities with their first appearance.
    prios: Vec<(i64, EventKey)>,
    /// Process id, from the earliest event giving one.
    pid: Option<(EventKey, i64)>,
    /// Selected by the filter at least once.
    listed: bool,
}

impl Default for ThreadAcc {
    fn default() -> Self {
        ThreadAcc { cpu_ns: 0, migrations: 0, first_seen: i64::MAX, name: None, prios: Vec::new(), pid: None, listed: false }
    }
}

impl ThreadAcc {
    fn seen(&mut self, key: EventKey, comm: &[u8], prio: Option<i64>) {
        self.first_seen = self.first_seen.min(key.ns);
        if !matches!(&self.name, Some((k, _)) if key >= *k) {
            self.name = Some((key, Comm::new(comm)));
        }
        if let Some(p) = prio {
            add_prio(&mut self.prios, p, key);
        }
    }

    fn pid(&mut self, key: EventKey, pid: i64) {
        if !matches!(self.pid, Some((k, _)) if key >= k) {
            self.pid = Some((key, pid));
        }
    }

    fn absorb(&mut self, o: ThreadAcc) {
        self.cpu_ns += o.cpu_ns;
        self.migrations += o.migrations;
        self.first_seen = self.first_seen.min(o.first_seen);
        if let Some((k, c)) = o.name {
            if !matches!(&self.name, Some((m, _)) if k >= *m) {
                self.name = Some((k, c));
            }
        }
        for (p, k) in o.prios {
            add_prio(&mut self.prios, p, k);
        }
        if let Some((k, p)) = o.pid {
            self.pid(k, p);
        }
        self.listed |= o.listed;
    }
}

fn add_prio(list: &mut Vec<(i64, EventKey)>, prio: i64, key: EventKey) {
    match list.iter_mut().find(|(p, _)| *p == prio) {
        Some((_, k)) => *k = (*k).min(key),
        None => list.push((prio, key)),
    }
}

/// What `cpu` accumulates for a run of chunks.
#[derive(Clone, Debug, Default)]
pub struct CpuState {
    span: Span,
    /// Per (trace, CPU).
    cpus: BTreeMap<(usize, u32), Frag>,
    threads: IdMap<i64, ThreadAcc>,
    counter: EventCounter,
}

/// One thread's CPU usage.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThreadUsage {
    /// Thread id.
    pub tid: i64,
    /// Process id, when an event gave it (fork, state dump, context).
    pub pid: Option<i64>,
    /// The thread's name when it first appeared (as lttng-cputop).
    pub name: String,
    /// Time on CPUs, in ns.
    pub cpu_ns: i64,
    /// `cpu_ns` in percent of the time range.
    pub percent: f64,
    /// `sched_migrate_task` events.
    pub migrations: u64,
    /// Priorities (as `sched_switch` gives them), in order of first appearance.
    pub priorities: Vec<i64>,
}

/// One CPU's usage.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CpuUsage {
    /// CPU number.
    pub cpu: u32,
    /// Time a thread other than the idle thread ran, in ns.
    pub busy_ns: i64,
    /// `busy_ns` in percent of the time range.
    pub percent: f64,
}

/// The result of `cpu`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CpuReport {
    /// First kernel event in the range (ns from the clock's origin).
    pub begin_ns: Option<i64>,
    /// Last kernel event in the range.
    pub end_ns: Option<i64>,
    /// Threads, most CPU time first (ties by tid).
    pub threads: Vec<ThreadUsage>,
    /// CPUs that had a `sched_switch`, by number.
    pub cpus: Vec<CpuUsage>,
    /// Mean of the CPUs' percentages.
    pub total_percent: f64,
}

impl CpuReport {
    /// `end_ns - begin_ns` (0 without events).
    pub fn duration_ns(&self) -> i64 {
        match (self.begin_ns, self.end_ns) {
            (Some(b), Some(e)) => e - b,
            _ => 0,
        }
    }
}

/// `{"begin_ns", "end_ns", "duration_ns", "threads": [{"tid", "pid", "name", "cpu_ns",
/// "percent", "migrations", "priorities"}], "cpus": [{"cpu", "busy_ns", "percent"}],
/// "total_percent"}`.
impl Serialize for CpuReport {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("CpuReport", 6)?;
        st.serialize_field("begin_ns", &self.begin_ns)?;
        st.serialize_field("end_ns", &self.end_ns)?;
        st.serialize_field("duration_ns", &self.duration_ns())?;
        st.serialize_field("threads", &self.threads)?;
        st.serialize_field("cpus", &self.cpus)?;
        st.serialize_field("total_percent", &self.total_percent)?;
        st.end()
    }
}

impl Analysis for Cpu {
    type State = CpuState;
    type Output = CpuReport;

    fn new_state(&self, _chunk: &Chunk) -> CpuState {
        CpuState::default()
    }

    fn on_event(&self, st: &mut CpuState, ev: &EventView<'_, '_>, cx: &Context<'_, '_>) {
        const WANT: Kinds = Kinds::of(&[What::SchedSwitch, What::SchedMigrate, What::Fork, What::StatedumpProcess]);
        let Some(k) = self.map.decode_only(ev, cx, WANT) else { return };
        if !self.filter.time(k.ns) {
            return;
        }
        st.span.see(k.ns);
        match k.kind {
            Kind::SchedSwitch { prev_tid, prev_comm, prev_prio, next_tid, next_comm, next_prio, .. } => {
                if !self.filter.cpu(k.cpu) {
                    return;
                }
                let key = st.counter.key(k.ns, cx);
                let prev_pass = prev_tid != 0 && self.filter.process(prev_tid, prev_comm);
                let next_pass = next_tid != 0 && self.filter.process(next_tid, next_comm);
                let frag = st.cpus.entry((cx.chunk.trace, k.cpu)).or_default();
                match frag.tail {
                    Some(t) => {
                        if t.pass {
                            let d = k.ns - t.ns;
                            frag.busy += d;
                            st.threads.entry(t.tid).or_default().cpu_ns += d;
                        }
                    }
                    None => frag.head = Some(Head { ns: k.ns, tid: prev_tid, pass: prev_pass }),
                }
                frag.tail = Some(Tail { ns: k.ns, tid: next_tid, pass: next_pass });
                if prev_tid != 0 {
                    let t = st.threads.entry(prev_tid).or_default();
                    t.seen(key, prev_comm, Some(prev_prio));
                    t.listed |= prev_pass;
                }
                if next_pass {
                    let t = st.threads.entry(next_tid).or_default();
                    t.seen(key, next_comm, Some(next_prio));
                    t.listed = true;
                }
            }
            Kind::SchedMigrate { tid, .. } => {
                let comm = self.map.extra(ev, cx, Extra::Comm).and_then(Field::as_bytes).unwrap_or(&[]);
                if tid == 0 || !self.filter.cpu(k.cpu) || !self.filter.process(tid, comm) {
                    return;
                }
                let key = st.counter.key(k.ns, cx);
                let t = st.threads.entry(tid).or_default();
                t.migrations += 1;
                t.seen(key, comm, None);
                t.listed = true;
            }
            Kind::ProcessFork { parent_tid, parent_pid, child_tid, child_pid, .. } => {
                let key = st.counter.key(k.ns, cx);
                if let Some(p) = parent_pid {
                    st.threads.entry(parent_tid).or_default().pid(key, p);
                }
                if let Some(p) = child_pid {
                    st.threads.entry(child_tid).or_default().pid(key, p);
                }
            }
            Kind::StatedumpProcess { tid, pid, .. } => {
                let key = st.counter.key(k.ns, cx);
                st.threads.entry(tid).or_default().pid(key, pid);
            }
            _ => {
                if let (Some(tid), Some(pid)) = (k.tid, k.pid) {
                    let key = st.counter.key(k.ns, cx);
                    st.threads.entry(tid).or_default().pid(key, pid);
                }
            }
        }
    }

    fn merge(&self, mut a: CpuState, b: CpuState) -> CpuState {
        a.span.merge(b.span);
        if a.threads.len() < b.threads.len() {
            // Fold the smaller map into the larger one.
            let (small, big) = (std::mem::take(&mut a.threads), b.threads);
            a.threads = big;
            for (tid, t) in small {
                a.threads.entry(tid).or_default().absorb(t);
            }
        } else {
            for (tid, t) in b.threads {
                a.threads.entry(tid).or_default().absorb(t);
            }
        }
        for (cpu, fb) in b.cpus {
            match a.cpus.get_mut(&cpu) {
                None => {
                    a.cpus.insert(cpu, fb);
                }
                Some(fa) => {
                    if let (Some(t), Some(h)) = (fa.tail, fb.head) {
                        if t.pass {
                            let d = h.ns - t.ns;
                            fa.busy += d;
                            a.threads.entry(t.tid).or_default().cpu_ns += d;
                        }
                    }
                    fa.busy += fb.busy;
                    fa.head = fa.head.or(fb.head);
                    fa.tail = fb.tail.or(fa.tail);
                }
            }
        }
        a
    }

    fn finish(&self, mut st: CpuState) -> CpuReport {
        let (Some(begin), Some(end)) = (st.span.begin, st.span.end) else { return CpuReport::default() };
        let duration = end - begin;
        let pct = |ns: i64| if duration == 0 { 0.0 } else { ns as f64 * 100.0 / duration as f64 };
        let mut cpus: BTreeMap<u32, i64> = BTreeMap::new();
        for (&(_, cpu), f) in &st.cpus {
            let mut busy = f.busy;
            if let Some(h) = f.head {
                if h.pass {
                    busy += h.ns - begin;
                }
                if h.tid != 0 {
                    if let Some(t) = st.threads.get_mut(&h.tid) {
                        // Not seen before this switch: it ran since the beginning.
                        if t.first_seen >= h.ns {
                            t.cpu_ns += h.ns - begin;
                        }
                    }
                }
            }
            if let Some(t) = f.tail {
                if t.pass {
                    busy += end - t.ns;
                    st.threads.entry(t.tid).or_default().cpu_ns += end - t.ns;
                }
            }
            *cpus.entry(cpu).or_default() += busy;
        }
        let cpus: Vec<CpuUsage> = cpus.into_iter().map(|(cpu, busy_ns)| CpuUsage { cpu, busy_ns, percent: pct(busy_ns) }).collect();
        let total_percent = if cpus.is_empty() { 0.0 } else { cpus.iter().map(|c| c.percent).sum::<f64>() / cpus.len() as f64 };
        let mut threads: Vec<ThreadUsage> = st
            .threads
            .into_iter()
            .filter(|(tid, t)| *tid != 0 && t.listed)
            .map(|(tid, mut t)| {
                t.prios.sort_by_key(|&(p, k)| (k, p));
                ThreadUsage {
                    tid,
                    pid: t.pid.map(|(_, p)| p),
                    name: t.name.map(|(_, c)| text(c.as_bytes()).into_owned()).unwrap_or_default(),
                    cpu_ns: t.cpu_ns,
                    percent: pct(t.cpu_ns),
                    migrations: t.migrations,
                    priorities: t.prios.into_iter().map(|(p, _)| p).collect(),
                }
            })
            .collect();
        threads.sort_by(|a, b| b.cpu_ns.cmp(&a.cpu_ns).then(a.tid.cmp(&b.tid)));
        CpuReport { begin_ns: Some(begin), end_ns: Some(end), threads, cpus, total_percent }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// States merged right to left give what the engine's merge in time order gives.
    #[test]
    fn merge_is_associative() {
        crate::testing::check("cpu", |set| Cpu::new(set, Filter::default()));
    }
}
