//! `sched`: wake-up latency — the time from a thread's wake-up (`sched_waking`, or
//! `sched_wakeup` / `sched_wakeup_new` on tracers without it) to the `sched_switch` that puts it
//! on a CPU; per thread, per priority, in total, and the longest ones (lttng-schedstats and
//! lttng-schedtop).
//!
//! # What is counted
//!
//! Per thread, in time order over all CPUs: a wake-up starts a wait unless the thread is
//! running (switched in and not switched out since) or a wait already started (the first of
//! `sched_waking` / `sched_wakeup` counts); the next switch-in ends the wait — a latency, with
//! the priority the switch gives and the CPU it happens on — and every switch-in clears it.
//! The waker is the thread running on the CPU the wake-up event comes from (none when that is
//! the idle thread, e.g. a wake-up from an interrupt on an idle CPU).
//!
//! Before a thread's first switch in the trace, whether it runs is not known yet: the first
//! switch tells (switched out: it was running, and the wake-ups before were of a running
//! thread; switched in: it was not).
//!
//! # In parallel
//!
//! A wake-up and its switch-in are usually on different CPUs, so in different chunks, and the
//! chunks of different CPUs overlap in time. Each chunk keeps, per thread, its wake-ups and
//! switches in time order (the unresolved fragments of the paper's section 4.2). Merging states
//! merges these lists; a state that covers every chunk from the first one on (a *prefix*)
//! resolves, per thread, every record before the start time of the last chunk it covers — no
//! later chunk can hold an earlier event — into latencies, and keeps only the rest. Ties between
//! equal times are broken by stream and position ([`EventKey`]), so the result is the same for
//! any cut. A wake-up before a chunk's first switch on its CPU does not know its waker; the
//! merge gives it the thread the earlier chunks left running on that CPU.

use std::collections::BTreeMap;

use tracelens_ctf::EventView;
use tracelens_trace::TraceSet;

use crate::cpu::seconds;
use crate::engine::{Analysis, Chunk, Context};
use crate::filter::Filter;
use crate::kernel::{format_utc, text, Comm, EventCounter, EventKey, IdMap, KernelMap, Kind};

/// Default number of longest latencies kept by [`Sched::new`].
pub const DEFAULT_TOP: usize = 10;

/// The `sched` analysis.
#[derive(Clone, Debug)]
pub struct Sched {
    map: KernelMap,
    filter: Filter,
    top: usize,
}

impl Sched {
    /// The analysis of `set`, keeping what `filter` selects and the `top` longest latencies.
    pub fn new(set: &TraceSet, filter: Filter, top: usize) -> Sched {
        Sched { map: KernelMap::new(set), filter, top }
    }
}

/// Who woke a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Waker {
    None,
    /// The thread and its name then.
    Tid(i64, Comm),
    /// The thread running on this (trace, CPU) at the start of the chunk: resolved at merge.
    CpuHead(usize, u32),
}

impl Waker {
    fn of((tid, comm): (i64, Comm)) -> Waker {
        if tid == 0 {
            Waker::None
        } else {
            Waker::Tid(tid, comm)
        }
    }
}

/// One record of a thread's timeline.
#[derive(Clone, Copy, Debug)]
enum Rec {
    Wake { key: EventKey, waker: Waker },
    /// A switch-in, and the switch-out that follows it in the same chunk, if any (a thread
    /// runs on one CPU at a time: nothing from another chunk can come in between but wake-ups
    /// of a running thread, which do not count).
    In { key: EventKey, cpu: u32, prio: i64, comm: Comm, counted: bool, out: Option<EventKey> },
    Out { key: EventKey },
}

impl Rec {
    fn key(&self) -> EventKey {
        match *self {
            Rec::Wake { key, .. } | Rec::In { key, .. } | Rec::Out { key } => key,
        }
    }
}

/// The resolved past of a thread (meaningful in prefix states).
#[derive(Clone, Copy, Debug, Default)]
struct Fold {
    /// `None` before its first switch.
    running: Option<bool>,
    /// It ran until then (the switch-out of an [`Rec::In`]): wake-ups before are ignored.
    ran_until: Option<EventKey>,
    /// The wake-up its current wait started with.
    pending: Option<(EventKey, Waker)>,
    /// Before its first switch: the first wake-up, which counts if the switch is a switch-in.
    tentative: Option<(EventKey, Waker)>,
}

/// A thread's unresolved records (sorted by key) and resolved past.
#[derive(Clone, Debug, Default)]
struct Log {
    recs: Vec<Rec>,
    fold: Fold,
}

/// What one run of chunks knows of a CPU: the thread running before its first switch and after
/// its last.
#[derive(Clone, Copy, Debug, Default)]
struct CpuCur {
    head_prev: Option<(i64, Comm)>,
    tail_next: Option<(i64, Comm)>,
}

/// Name and process id of a thread, latest / earliest by key.
#[derive(Clone, Copy, Debug, Default)]
struct Info {
    name: Option<(EventKey, Comm)>,
    pid: Option<(EventKey, i64)>,
}

impl Info {
    fn name(&mut self, key: EventKey, comm: &[u8]) {
        if !matches!(&self.name, Some((k, _)) if key <= *k) {
            self.name = Some((key, Comm::new(comm)));
        }
    }
    fn pid(&mut self, key: EventKey, pid: i64) {
        if !matches!(self.pid, Some((k, _)) if key >= k) {
            self.pid = Some((key, pid));
        }
    }
    fn absorb(&mut self, o: Info) {
        if let Some((k, c)) = o.name {
            if !matches!(&self.name, Some((m, _)) if k <= *m) {
                self.name = Some((k, c));
            }
        }
        if let Some((k, p)) = o.pid {
            self.pid(k, p);
        }
    }
}

/// Count, sum, sum of squares, min and max of latencies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Acc {
    count: u64,
    sum: i128,
    sumsq: i128,
    min: i64,
    max: i64,
}

impl Acc {
    fn add(&mut self, v: i64) {
        if self.count == 0 || v < self.min {
            self.min = v;
        }
        if self.count == 0 || v > self.max {
            self.max = v;
        }
        self.count += 1;
        self.sum += v as i128;
        self.sumsq += (v as i128) * (v as i128);
    }

    fn absorb(&mut self, o: &Acc) {
        if o.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = *o;
            return;
        }
        self.count += o.count;
        self.sum += o.sum;
        self.sumsq += o.sumsq;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }

    fn stats(&self) -> LatencyStats {
        let n = self.count as i128;
        let stdev_ns = (n >= 2).then(|| {
            let var = (n * self.sumsq - self.sum * self.sum) as f64 / (n * (n - 1)) as f64;
            var.max(0.0).sqrt()
        });
        LatencyStats {
            count: self.count,
            min_ns: self.min,
            max_ns: self.max,
            total_ns: self.sum as i64,
            avg_ns: if self.count == 0 { 0.0 } else { self.sum as f64 / self.count as f64 },
            stdev_ns,
        }
    }
}

/// One latency, as resolved.
#[derive(Clone, Copy, Debug)]
struct Lat {
    wake: EventKey,
    switch: EventKey,
    tid: i64,
    prio: i64,
    cpu: u32,
    waker: Waker,
}

impl Lat {
    fn ns(&self) -> i64 {
        self.switch.ns - self.wake.ns
    }
    /// Longest first, then earliest switch.
    fn rank(&self) -> (std::cmp::Reverse<i64>, EventKey, i64) {
        (std::cmp::Reverse(self.ns()), self.switch, self.tid)
    }
}

/// Per-thread results.
#[derive(Clone, Debug, Default)]
struct TidAcc {
    acc: Acc,
    /// Name at its first latency, as the thread woken or as the waker.
    first: Option<(EventKey, Comm)>,
    prios: Vec<(i64, EventKey)>,
}

/// Resolved results.
#[derive(Clone, Debug, Default)]
struct Results {
    total: Acc,
    tids: IdMap<i64, TidAcc>,
    prios: BTreeMap<i64, Acc>,
    top: Vec<Lat>,
}

impl Results {
    fn add(&mut self, lat: Lat, comm: Comm, top: usize) {
        let v = lat.ns();
        self.total.add(v);
        self.prios.entry(lat.prio).or_default().add(v);
        if let Waker::Tid(w, wcomm) = lat.waker {
            let t = self.tids.entry(w).or_default();
            if !matches!(&t.first, Some((k, _)) if lat.switch >= *k) {
                t.first = Some((lat.switch, wcomm));
            }
        }
        let t = self.tids.entry(lat.tid).or_default();
        t.acc.add(v);
        if !matches!(&t.first, Some((k, _)) if lat.switch >= *k) {
            t.first = Some((lat.switch, comm));
        }
        match t.prios.iter_mut().find(|(p, _)| *p == lat.prio) {
            Some((_, k)) => *k = (*k).min(lat.switch),
            None => t.prios.push((lat.prio, lat.switch)),
        }
        if top > 0 && (self.top.len() < top || self.top.last().is_some_and(|l| lat.rank() < l.rank())) {
            let at = self.top.partition_point(|l| l.rank() < lat.rank());
            self.top.insert(at, lat);
            self.top.truncate(top);
        }
    }

    fn absorb(&mut self, o: Results, top: usize) {
        self.total.absorb(&o.total);
        for (p, a) in o.prios {
            self.prios.entry(p).or_default().absorb(&a);
        }
        for (tid, t) in o.tids {
            let s = self.tids.entry(tid).or_default();
            s.acc.absorb(&t.acc);
            if let Some((k, c)) = t.first {
                if !matches!(&s.first, Some((m, _)) if k >= *m) {
                    s.first = Some((k, c));
                }
            }
            for (p, k) in t.prios {
                match s.prios.iter_mut().find(|(q, _)| *q == p) {
                    Some((_, m)) => *m = (*m).min(k),
                    None => s.prios.push((p, k)),
                }
            }
        }
        self.top.extend(o.top);
        self.top.sort_by_key(|l| l.rank());
        self.top.truncate(top);
    }
}

/// What `sched` accumulates for a run of chunks.
#[derive(Clone, Debug, Default)]
pub struct SchedState {
    /// Covers every chunk from the first one on.
    prefix: bool,
    /// Start time of the last chunk covered: no later chunk has an earlier event.
    frontier: Option<i64>,
    begin: Option<i64>,
    end: Option<i64>,
    cpus: BTreeMap<(usize, u32), CpuCur>,
    logs: IdMap<i64, Log>,
    /// Threads whose records have [`Waker::CpuHead`] wakers.
    head_wakers: Vec<i64>,
    info: IdMap<i64, Info>,
    results: Results,
    counter: EventCounter,
}

/// Count, minimum, mean, maximum and standard deviation of latencies.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LatencyStats {
    /// Latencies.
    pub count: u64,
    /// Shortest, in ns (0 without latencies).
    pub min_ns: i64,
    /// Longest, in ns.
    pub max_ns: i64,
    /// Sum, in ns.
    pub total_ns: i64,
    /// Mean, in ns.
    pub avg_ns: f64,
    /// Sample standard deviation (n - 1), in ns; `None` with fewer than 2 latencies.
    pub stdev_ns: Option<f64>,
}

/// Latencies of one thread.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadLatency {
    /// Thread id.
    pub tid: i64,
    /// Process id, when an event gave it.
    pub pid: Option<i64>,
    /// Its name when it was first switched in after a wake-up (as lttng-schedstats).
    pub name: String,
    /// The latencies.
    pub stats: LatencyStats,
    /// Priorities of its switch-ins after a wake-up, in order of first appearance.
    pub priorities: Vec<i64>,
}

/// Latencies of one priority.
#[derive(Clone, Debug, PartialEq)]
pub struct PrioLatency {
    /// The priority (as `sched_switch` gives it).
    pub prio: i64,
    /// The latencies.
    pub stats: LatencyStats,
}

/// One wake-up latency.
#[derive(Clone, Debug, PartialEq)]
pub struct WakeLatency {
    /// Wake-up time (ns from the clock's origin).
    pub wakeup_ns: i64,
    /// Switch-in time.
    pub switch_ns: i64,
    /// `switch_ns - wakeup_ns`.
    pub latency_ns: i64,
    /// Priority at the switch.
    pub prio: i64,
    /// CPU of the switch.
    pub cpu: u32,
    /// The thread woken.
    pub tid: i64,
    /// Its name (its last known name, as lttng-schedtop).
    pub name: String,
    /// The thread that woke it, if known.
    pub waker_tid: Option<i64>,
    /// Its last known name.
    pub waker_name: Option<String>,
}

/// The result of `sched`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SchedReport {
    /// First kernel event in the range.
    pub begin_ns: Option<i64>,
    /// Last kernel event in the range.
    pub end_ns: Option<i64>,
    /// All latencies.
    pub total: LatencyStats,
    /// Per thread, by name (case-insensitive) then tid.
    pub threads: Vec<ThreadLatency>,
    /// Per priority, lowest first.
    pub priorities: Vec<PrioLatency>,
    /// The longest latencies, longest first (ties: earliest switch first).
    pub top: Vec<WakeLatency>,
}

fn stats_json(s: &LatencyStats) -> serde_json::Value {
    serde_json::json!({"count": s.count, "min_ns": s.min_ns, "avg_ns": s.avg_ns, "max_ns": s.max_ns,
                       "stdev_ns": s.stdev_ns, "total_ns": s.total_ns})
}

/// `ns` as microseconds with 3 decimals.
fn us(ns: f64) -> String {
    format!("{:.3}", ns / 1000.0)
}

impl SchedReport {
    /// The report as one JSON object: `{"begin_ns", "end_ns", "total": STATS, "threads":
    /// [{"tid", "pid", "name", "priorities", STATS...}], "priorities": [{"prio", STATS...}],
    /// "top": [{"wakeup_ns", "switch_ns", "latency_ns", "prio", "cpu", "tid", "name",
    /// "waker_tid", "waker_name"}]}` where STATS is `"count", "min_ns", "avg_ns", "max_ns",
    /// "stdev_ns"` (null below 2 latencies), `"total_ns"`.
    pub fn to_json(&self) -> String {
        use serde_json::{json, Value};
        let merge = |mut a: Value, b: Value| {
            if let (Some(a), Value::Object(b)) = (a.as_object_mut(), b) {
                a.extend(b);
            }
            a
        };
        let threads: Vec<Value> = self
            .threads
            .iter()
            .map(|t| merge(json!({"tid": t.tid, "pid": t.pid, "name": t.name, "priorities": t.priorities}), stats_json(&t.stats)))
            .collect();
        let prios: Vec<Value> = self.priorities.iter().map(|p| merge(json!({"prio": p.prio}), stats_json(&p.stats))).collect();
        let top: Vec<Value> = self
            .top
            .iter()
            .map(|l| {
                json!({"wakeup_ns": l.wakeup_ns, "switch_ns": l.switch_ns, "latency_ns": l.latency_ns, "prio": l.prio,
                       "cpu": l.cpu, "tid": l.tid, "name": l.name, "waker_tid": l.waker_tid, "waker_name": l.waker_name})
            })
            .collect();
        json!({"begin_ns": self.begin_ns, "end_ns": self.end_ns, "total": stats_json(&self.total), "threads": threads,
               "priorities": prios, "top": top})
        .to_string()
    }

    /// The report as text tables.
    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let (Some(b), Some(e)) = (self.begin_ns, self.end_ns) else {
            return "No kernel events in the time range.\n".into();
        };
        let _ = writeln!(out, "Timerange: [{}, {}] UTC, {} s", format_utc(b), format_utc(e), seconds(e - b));
        let stdev = |s: &LatencyStats| s.stdev_ns.map_or_else(|| "?".to_string(), us);
        let row = |out: &mut String, label: &str, s: &LatencyStats, tail: &str| {
            let _ = writeln!(
                out,
                "{label:<28} {:>8} {:>12} {:>12} {:>12} {:>12}   {tail}",
                s.count,
                us(s.min_ns as f64),
                us(s.avg_ns),
                us(s.max_ns as f64),
                stdev(s)
            );
        };
        let header = |out: &mut String, first: &str, last: &str| {
            let _ = writeln!(out, "{first:<28} {:>8} {:>12} {:>12} {:>12} {:>12}   {last}", "Count", "Min", "Avg", "Max", "Stdev");
        };
        let _ = writeln!(out, "\nScheduling latency stats (total) (us)");
        header(&mut out, "", "");
        row(&mut out, "All", &self.total, "");
        let _ = writeln!(out, "\nScheduling latency stats (per-TID) (us)");
        header(&mut out, "Process", "Priorities");
        for t in &self.threads {
            let prios: Vec<String> = t.priorities.iter().map(|p| p.to_string()).collect();
            row(&mut out, &format!("{} ({})", t.name, t.tid), &t.stats, &format!("[{}]", prios.join(", ")));
        }
        let _ = writeln!(out, "\nScheduling latency stats (per-prio) (us)");
        header(&mut out, "Priority", "");
        for p in &self.priorities {
            row(&mut out, &p.prio.to_string(), &p.stats, "");
        }
        let _ = writeln!(out, "\nScheduling top (longest wake-up latencies)");
        let _ = writeln!(
            out,
            "{:<31} {:<31} {:>12} {:>8} {:>4}   {:<26} {:<26}",
            "Wakeup (UTC)", "Switch (UTC)", "Latency (us)", "Priority", "CPU", "Wakee", "Waker"
        );
        for l in &self.top {
            let waker = match (&l.waker_name, l.waker_tid) {
                (Some(n), Some(t)) => format!("{n} ({t})"),
                _ => "Unknown (N/A)".to_string(),
            };
            let _ = writeln!(
                out,
                "{:<31} {:<31} {:>12} {:>8} {:>4}   {:<26} {:<26}",
                format_utc(l.wakeup_ns),
                format_utc(l.switch_ns),
                us(l.latency_ns as f64),
                l.prio,
                l.cpu,
                format!("{} ({})", l.name, l.tid),
                waker
            );
        }
        out
    }
}

impl SchedState {
    fn log(&mut self, tid: i64) -> &mut Log {
        self.logs.entry(tid).or_default()
    }

    /// Resolves the records of `tid` before the frontier (prefix states only).
    fn fold(&mut self, tid: i64, top: usize, all: bool) {
        let Some(log) = self.logs.get_mut(&tid) else { return };
        let frontier = self.frontier;
        let mut n = if all { log.recs.len() } else { log.recs.partition_point(|r| frontier.is_some_and(|f| r.key().ns < f)) };
        // A wake-up whose waker is not known yet waits (and what follows it).
        if let Some(i) = log.recs[..n].iter().position(|r| matches!(r, Rec::Wake { waker: Waker::CpuHead(..), .. })) {
            n = i;
        }
        if n == 0 {
            return;
        }
        let f = &mut log.fold;
        for r in log.recs.drain(..n) {
            match r {
                Rec::Wake { key, .. } if f.ran_until.is_some_and(|u| key < u) => {}
                Rec::Wake { key, waker } => match f.running {
                    Some(true) => {}
                    Some(false) => {
                        if f.pending.is_none() {
                            f.pending = Some((key, waker));
                        }
                    }
                    None => {
                        if f.tentative.is_none() {
                            f.tentative = Some((key, waker));
                        }
                    }
                },
                Rec::In { key, cpu, prio, comm, counted, out } => {
                    let w = if f.running.is_none() { f.tentative.take() } else { f.pending.take() };
                    if let (Some((wake, waker)), true) = (w, counted) {
                        self.results.add(Lat { wake, switch: key, tid, prio, cpu, waker }, comm, top);
                    }
                    f.pending = None;
                    f.tentative = None;
                    f.running = Some(out.is_none());
                    f.ran_until = out;
                }
                Rec::Out { .. } => {
                    f.tentative = None;
                    f.running = Some(false);
                }
            }
        }
        if log.recs.is_empty() && log.fold.pending.is_none() && log.fold.tentative.is_none() {
            // Keep the running state only: it is all a later record needs.
            log.recs = Vec::new();
        }
    }
}

impl Analysis for Sched {
    type State = SchedState;
    type Output = SchedReport;

    fn new_state(&self, chunk: &Chunk) -> SchedState {
        SchedState { prefix: chunk.index == 0, frontier: chunk.begin_ns, ..SchedState::default() }
    }

    fn on_event(&self, st: &mut SchedState, ev: &EventView<'_, '_>, cx: &Context<'_, '_>) {
        let Some(k) = self.map.decode(ev, cx) else { return };
        if !self.filter.time(k.ns) {
            return;
        }
        st.begin = Some(st.begin.map_or(k.ns, |b| b.min(k.ns)));
        st.end = Some(st.end.map_or(k.ns, |e| e.max(k.ns)));
        match k.kind {
            Kind::SchedSwitch { prev_tid, prev_comm, next_tid, next_comm, next_prio, .. } => {
                let key = st.counter.key(k.ns, cx);
                let cur = st.cpus.entry((cx.chunk.trace, k.cpu)).or_default();
                if cur.head_prev.is_none() && cur.tail_next.is_none() {
                    cur.head_prev = Some((prev_tid, Comm::new(prev_comm)));
                }
                cur.tail_next = Some((next_tid, Comm::new(next_comm)));
                if prev_tid != 0 {
                    let log = st.log(prev_tid);
                    match log.recs.last_mut() {
                        Some(Rec::In { out: out @ None, .. }) => *out = Some(key),
                        _ => log.recs.push(Rec::Out { key }),
                    }
                    st.info.entry(prev_tid).or_default().name(key, prev_comm);
                }
                if next_tid != 0 {
                    let counted = self.filter.cpu(k.cpu) && self.filter.process(next_tid, next_comm);
                    let comm = Comm::new(next_comm);
                    st.log(next_tid).recs.push(Rec::In { key, cpu: k.cpu, prio: next_prio, comm, counted, out: None });
                    st.info.entry(next_tid).or_default().name(key, next_comm);
                }
            }
            Kind::SchedWaking { tid, comm, .. } | Kind::SchedWakeup { tid, comm, .. } | Kind::SchedWakeupNew { tid, comm, .. } => {
                if tid == 0 {
                    return;
                }
                let key = st.counter.key(k.ns, cx);
                let waker = match st.cpus.get(&(cx.chunk.trace, k.cpu)).and_then(|c| c.tail_next) {
                    Some(t) => Waker::of(t),
                    None => {
                        if st.head_wakers.last() != Some(&tid) {
                            st.head_wakers.push(tid);
                        }
                        Waker::CpuHead(cx.chunk.trace, k.cpu)
                    }
                };
                st.log(tid).recs.push(Rec::Wake { key, waker });
                st.info.entry(tid).or_default().name(key, comm);
            }
            Kind::ProcessFork { parent_tid, parent_pid, child_tid, child_pid, child_comm } => {
                let key = st.counter.key(k.ns, cx);
                let parent = st.info.entry(parent_tid).or_default();
                if let Some(p) = parent_pid {
                    parent.pid(key, p);
                }
                if let Some(c) = k.field("parent_comm").and_then(|f| f.as_bytes()) {
                    parent.name(key, c);
                }
                let child = st.info.entry(child_tid).or_default();
                child.name(key, child_comm);
                if let Some(p) = child_pid {
                    child.pid(key, p);
                }
            }
            Kind::StatedumpProcess { tid, pid, name, .. } => {
                let key = st.counter.key(k.ns, cx);
                let i = st.info.entry(tid).or_default();
                i.pid(key, pid);
                i.name(key, name);
            }
            _ => {
                if let (Some(tid), Some(pid)) = (k.tid, k.pid) {
                    let key = st.counter.key(k.ns, cx);
                    st.info.entry(tid).or_default().pid(key, pid);
                }
            }
        }
    }

    fn merge(&self, mut a: SchedState, mut b: SchedState) -> SchedState {
        a.begin = crate::engine::earliest(a.begin, b.begin);
        a.end = crate::engine::latest(a.end, b.end);
        // Wakers of `b`'s wake-ups before its first switch on their CPU: the thread `a` left
        // running there.
        let mut still = Vec::new();
        for tid in std::mem::take(&mut b.head_wakers) {
            let Some(log) = b.logs.get_mut(&tid) else { continue };
            let mut left = false;
            for r in &mut log.recs {
                if let Rec::Wake { waker: w @ Waker::CpuHead(..), .. } = r {
                    let Waker::CpuHead(t, c) = *w else { unreachable!() };
                    match a.cpus.get(&(t, c)).and_then(|cur| cur.tail_next) {
                        Some(cur) => *w = Waker::of(cur),
                        None => left = true,
                    }
                }
            }
            if left {
                still.push(tid);
            }
        }
        // Results already resolved in `b` (only when `b` is itself a prefix: never in a merge
        // in time order, kept for associativity).
        a.results.absorb(std::mem::take(&mut b.results), self.top);
        for (cpu, cb) in b.cpus {
            let ca = a.cpus.entry(cpu).or_default();
            if ca.head_prev.is_none() && ca.tail_next.is_none() {
                ca.head_prev = cb.head_prev;
            }
            ca.tail_next = cb.tail_next.or(ca.tail_next);
        }
        for (tid, i) in b.info {
            a.info.entry(tid).or_default().absorb(i);
        }
        let touched: Vec<i64> = b.logs.keys().copied().collect();
        for (tid, lb) in b.logs {
            let la = a.logs.entry(tid).or_default();
            let in_order = match (la.recs.last(), lb.recs.first()) {
                (Some(l), Some(f)) => l.key() <= f.key(),
                _ => true,
            };
            if in_order {
                la.recs.extend(lb.recs);
            } else {
                let mut merged = Vec::with_capacity(la.recs.len() + lb.recs.len());
                let (mut i, mut j) = (0, 0);
                while i < la.recs.len() && j < lb.recs.len() {
                    if la.recs[i].key() <= lb.recs[j].key() {
                        merged.push(la.recs[i]);
                        i += 1;
                    } else {
                        merged.push(lb.recs[j]);
                        j += 1;
                    }
                }
                merged.extend_from_slice(&la.recs[i..]);
                merged.extend_from_slice(&lb.recs[j..]);
                la.recs = merged;
            }
        }
        a.head_wakers.extend(still);
        a.head_wakers.sort_unstable();
        a.head_wakers.dedup();
        a.frontier = crate::engine::latest(a.frontier, b.frontier);
        if a.prefix {
            // In a prefix, a waker still unknown woke before the first switch of its CPU in
            // the whole trace: the thread that switch puts out, once that switch is in.
            let mut touched = touched;
            let cpus = &a.cpus;
            let logs = &mut a.logs;
            a.head_wakers.retain(|&tid| {
                let Some(log) = logs.get_mut(&tid) else { return false };
                let mut left = false;
                for r in &mut log.recs {
                    if let Rec::Wake { waker: w @ Waker::CpuHead(..), .. } = r {
                        let Waker::CpuHead(t, c) = *w else { unreachable!() };
                        match cpus.get(&(t, c)).and_then(|cur| cur.head_prev) {
                            Some(head) => *w = Waker::of(head),
                            None => left = true,
                        }
                    }
                }
                touched.push(tid);
                left
            });
            touched.sort_unstable();
            touched.dedup();
            for tid in touched {
                a.fold(tid, self.top, false);
            }
        }
        a
    }

    fn finish(&self, mut st: SchedState) -> SchedReport {
        let (Some(begin), Some(end)) = (st.begin, st.end) else { return SchedReport::default() };
        // Every chunk is in: resolve everything. Wakers still unknown woke on a CPU before its
        // first switch: the thread running there is the one that switch puts out.
        let heads: BTreeMap<(usize, u32), Option<(i64, Comm)>> = st.cpus.iter().map(|(k, c)| (*k, c.head_prev)).collect();
        let tids: Vec<i64> = st.logs.keys().copied().collect();
        for tid in tids {
            if let Some(log) = st.logs.get_mut(&tid) {
                for r in &mut log.recs {
                    if let Rec::Wake { waker: w @ Waker::CpuHead(..), .. } = r {
                        let Waker::CpuHead(t, c) = *w else { unreachable!() };
                        *w = heads.get(&(t, c)).copied().flatten().map_or(Waker::None, Waker::of);
                    }
                }
            }
            st.fold(tid, self.top, true);
        }
        let name_of = |tid: i64| st.info.get(&tid).and_then(|i| i.name).map(|(_, c)| text(c.as_bytes()).into_owned());
        let mut threads: Vec<ThreadLatency> = st
            .results
            .tids
            .iter()
            .filter(|(_, t)| t.acc.count > 0)
            .map(|(&tid, t)| {
                let mut prios = t.prios.clone();
                prios.sort_by_key(|&(p, k)| (k, p));
                ThreadLatency {
                    tid,
                    pid: st.info.get(&tid).and_then(|i| i.pid).map(|(_, p)| p),
                    name: t.first.map(|(_, c)| text(c.as_bytes()).into_owned()).unwrap_or_default(),
                    stats: t.acc.stats(),
                    priorities: prios.into_iter().map(|(p, _)| p).collect(),
                }
            })
            .collect();
        threads.sort_by(|a, b| a.name.to_lowercase().cmp(&b.name.to_lowercase()).then(a.tid.cmp(&b.tid)));
        let priorities = st.results.prios.iter().map(|(&prio, a)| PrioLatency { prio, stats: a.stats() }).collect();
        let top = st
            .results
            .top
            .iter()
            .map(|l| {
                let waker_tid = match l.waker {
                    Waker::Tid(t, _) => Some(t),
                    _ => None,
                };
                WakeLatency {
                    wakeup_ns: l.wake.ns,
                    switch_ns: l.switch.ns,
                    latency_ns: l.ns(),
                    prio: l.prio,
                    cpu: l.cpu,
                    tid: l.tid,
                    name: name_of(l.tid).unwrap_or_default(),
                    waker_tid,
                    waker_name: waker_tid.map(|t| name_of(t).unwrap_or_default()),
                }
            })
            .collect();
        SchedReport { begin_ns: Some(begin), end_ns: Some(end), total: st.results.total.stats(), threads, priorities, top }
    }
}
