//! `latency`: the time from each event of one kind to the next event of another — the
//! *reactivity* the 2005 multi-level toolkit paper's `sigmund` measures (section 2.3: the time
//! between the detection of an event by the kernel and its handling by the application).
//!
//! # What is paired
//!
//! Every event whose name matches the `from` pattern is paired with the first event after it
//! (in the time order of the whole trace set, ties broken by stream and position: the order
//! `tracelens print` uses) whose name matches the `to` pattern and, with a match field, whose
//! field of that name has the same value (the field is looked up in the payload, then the
//! contexts, then the packet context, so `vtid`, `tid`, `cpu_id`, `fd` or a probe's `value`
//! all work). Several `from` events may pair with the same `to` event (two requests answered
//! by one reply); a `from` event with no `to` after it is counted as unmatched. An event
//! matching both patterns ends the pairs waiting for it, then starts one. `from` and `to`
//! events without the match field are counted apart, never paired.
//!
//! # In parallel
//!
//! Pairing depends on the order of events across streams, so each chunk keeps its `from` and
//! `to` events as records (`replay.rs`), and the pairing runs as a fold over them in the one
//! time order, as soon as the merges make that order known. The report is the same for any
//! number of threads and any chunk size.

use std::collections::{BinaryHeap, HashMap};

use serde::Serialize;
use tracelens_ctf::{EventView, Value};
use tracelens_trace::filter::glob_match;
use tracelens_trace::TraceSet;

use crate::durations::Durations;
use crate::engine::{Analysis, Chunk, Context};
use crate::id_map::IdMap;
use crate::order::{EventCounter, EventKey};
use crate::replay::Replay;
use crate::{Error, Result};

/// What to measure.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LatencyOptions {
    /// Name pattern of the events that start a measure (`*` and `?` wildcards).
    pub from: String,
    /// Name pattern of the events that end it.
    pub to: String,
    /// Pair only events whose field of this name has the same value.
    pub match_field: Option<String>,
    /// How many of the slowest pairs to list. Default 10.
    pub slowest: usize,
    /// Events before this time (ns from the clock's origin) are not read.
    pub begin_ns: Option<i64>,
    /// Events after this time are not read.
    pub end_ns: Option<i64>,
}

impl LatencyOptions {
    /// From `from` to `to`, no match field, the 10 slowest pairs.
    pub fn new(from: impl Into<String>, to: impl Into<String>) -> LatencyOptions {
        LatencyOptions { from: from.into(), to: to.into(), slowest: 10, ..LatencyOptions::default() }
    }
}

/// Percentiles the report gives.
pub const PERCENTILES: [f64; 6] = [50.0, 90.0, 95.0, 99.0, 99.9, 99.99];

const FROM: u8 = 1;
const TO: u8 = 2;

/// The `latency` analysis.
#[derive(Clone, Debug)]
pub struct Latency {
    options: LatencyOptions,
    /// Role of each event class: (trace, stream plan, class id) -> (FROM|TO, name index).
    roles: IdMap<u64, (u8, u32)>,
    /// Event class names, by name index.
    names: Vec<String>,
}

fn class_key(trace: usize, plan: usize, id: u64) -> u64 {
    (trace as u64) << 48 | (plan as u64) << 32 | (id & 0xffff_ffff)
}

impl Latency {
    /// The analysis of `set`; an error when no event class matches a pattern.
    pub fn new(set: &TraceSet, options: LatencyOptions) -> Result<Latency> {
        let mut roles = IdMap::default();
        let mut names: Vec<String> = Vec::new();
        let (mut any_from, mut any_to) = (false, false);
        for (ti, t) in set.traces.iter().enumerate() {
            for (pi, s) in t.class.streams.iter().enumerate() {
                for e in &s.events {
                    let mut role = 0;
                    if glob_match(options.from.as_bytes(), e.name.as_bytes()) {
                        role |= FROM;
                        any_from = true;
                    }
                    if glob_match(options.to.as_bytes(), e.name.as_bytes()) {
                        role |= TO;
                        any_to = true;
                    }
                    if role != 0 {
                        let n = match names.iter().position(|x| *x == e.name) {
                            Some(n) => n,
                            None => {
                                names.push(e.name.clone());
                                names.len() - 1
                            }
                        };
                        roles.insert(class_key(ti, pi, e.id), (role, n as u32));
                    }
                }
            }
        }
        for (any, which, pattern) in [(any_from, "--from", &options.from), (any_to, "--to", &options.to)] {
            if !any {
                return Err(Error::Invalid(format!("{which} `{pattern}`: no event class of the trace(s) has a matching name")));
            }
        }
        Ok(Latency { options, roles, names })
    }
}

/// The value events are matched on.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Matched {
    /// No match field.
    Any,
    /// An integer field.
    Int(i128),
    /// A string or byte-array field.
    Bytes(Box<[u8]>),
}

impl Matched {
    fn render(&self) -> Option<String> {
        match self {
            Matched::Any => None,
            Matched::Int(i) => Some(i.to_string()),
            Matched::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
        }
    }
}

/// A `from` or `to` event, as a chunk keeps it.
#[derive(Clone, Debug)]
struct Rec {
    role: u8,
    name: u32,
    value: Matched,
    tid: Option<i64>,
}

/// A `from` event waiting for its `to`.
#[derive(Clone, Debug)]
struct Waiting {
    key: EventKey,
    name: u32,
    tid: Option<i64>,
}

/// One measured pair, as the report lists the slowest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Pair {
    /// The `from` event's time, ns from the clock's origin.
    pub from_ns: i64,
    /// The `to` event's time.
    pub to_ns: i64,
    /// `to_ns - from_ns`.
    pub duration_ns: i64,
    /// The `from` event's name.
    pub from_event: String,
    /// The `to` event's name.
    pub to_event: String,
    /// The matched value, with a match field.
    pub value: Option<String>,
    /// The `from` event's thread, when its context gives one (`tid` or `vtid`).
    pub from_tid: Option<i64>,
    /// The `to` event's thread.
    pub to_tid: Option<i64>,
}

/// A pair as the fold keeps the slowest: ordered by duration, then earliest first (`from`
/// keys are unique: one pair per `from` event).
#[derive(Clone, Debug)]
struct Slow {
    duration: i64,
    from: EventKey,
    to: EventKey,
    from_name: u32,
    to_name: u32,
    value: Matched,
    from_tid: Option<i64>,
    to_tid: Option<i64>,
}

impl Ord for Slow {
    fn cmp(&self, o: &Slow) -> std::cmp::Ordering {
        // The heap keeps the smallest on top: longer is greater; at equal durations the
        // earlier pair is greater (kept).
        self.duration.cmp(&o.duration).then(o.from.cmp(&self.from))
    }
}

impl PartialEq for Slow {
    fn eq(&self, o: &Slow) -> bool {
        self.cmp(o) == std::cmp::Ordering::Equal
    }
}

impl Eq for Slow {}

impl PartialOrd for Slow {
    fn partial_cmp(&self, o: &Slow) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

/// The pairing fold: waiting `from`s by value, and what was measured.
#[derive(Clone, Debug, Default)]
struct Pairing {
    waiting: HashMap<Matched, Vec<Waiting>>,
    durations: Vec<i64>,
    /// The slowest pairs (a min-heap of at most `slowest`).
    slowest: BinaryHeap<std::cmp::Reverse<Slow>>,
}

impl Pairing {
    fn apply(&mut self, key: EventKey, r: Rec, keep: usize) {
        if r.role & TO != 0 {
            if let Some(list) = self.waiting.remove(&r.value) {
                for w in list {
                    let d = key.ns - w.key.ns;
                    self.durations.push(d);
                    if keep > 0 {
                        let s = Slow { duration: d, from: w.key, to: key, from_name: w.name, to_name: r.name, value: r.value.clone(), from_tid: w.tid, to_tid: r.tid };
                        if self.slowest.len() < keep {
                            self.slowest.push(std::cmp::Reverse(s));
                        } else if self.slowest.peek().is_some_and(|m| s > m.0) {
                            self.slowest.pop();
                            self.slowest.push(std::cmp::Reverse(s));
                        }
                    }
                }
            }
        }
        if r.role & FROM != 0 {
            self.waiting.entry(r.value).or_default().push(Waiting { key, name: r.name, tid: r.tid });
        }
    }
}

/// What `latency` accumulates for a run of chunks.
#[derive(Clone, Debug, Default)]
pub struct LatencyState {
    replay: Replay<Rec>,
    pairing: Pairing,
    counter: EventCounter,
    from_events: u64,
    to_events: u64,
    /// `from` / `to` events without the match field.
    without_field: u64,
}

/// A bucket of the histogram: durations in `[lo_ns, hi_ns)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Bucket {
    /// Lower bound (inclusive).
    pub lo_ns: i64,
    /// Upper bound (exclusive).
    pub hi_ns: i64,
    /// Pairs in it.
    pub count: u64,
}

/// A percentile of the durations.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Percentile {
    /// Which (50.0 is the median).
    pub p: f64,
    /// The duration (nearest rank).
    pub ns: i64,
}

/// The result of `latency`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatencyReport {
    /// The `from` pattern.
    pub from: String,
    /// The `to` pattern.
    pub to: String,
    /// The match field.
    pub match_field: Option<String>,
    /// `from` events read.
    pub from_events: u64,
    /// `to` events read.
    pub to_events: u64,
    /// `from` events no `to` followed.
    pub unmatched: u64,
    /// `from` and `to` events without the match field (not paired).
    pub without_field: u64,
    /// Pairs measured.
    pub count: u64,
    /// Shortest (0 without pairs).
    pub min_ns: i64,
    /// Longest.
    pub max_ns: i64,
    /// Mean.
    pub mean_ns: f64,
    /// Sample standard deviation (`None` with fewer than two pairs).
    pub stdev_ns: Option<f64>,
    /// [`PERCENTILES`] of the durations.
    pub percentiles: Vec<Percentile>,
    /// Durations by powers of two, from the shortest's bucket to the longest's.
    pub histogram: Vec<Bucket>,
    /// The slowest pairs, slowest first (at equal durations, earliest first).
    pub slowest: Vec<Pair>,
}

/// The nearest-rank percentile `p` of sorted `v` (not empty).
fn percentile(v: &[i64], p: f64) -> i64 {
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// Buckets `[0, 1)` and `[2^k, 2^(k+1))` over sorted, non-negative `v`, from the first
/// value's to the last value's, empty buckets between included.
fn histogram(v: &[i64]) -> Vec<Bucket> {
    let mut out: Vec<Bucket> = Vec::new();
    let Some(&first) = v.first() else { return out };
    let (mut lo, mut hi) = if first <= 0 { (0, 1) } else { (1i64 << (63 - first.leading_zeros()), 0) };
    if hi == 0 {
        hi = lo.saturating_mul(2);
    }
    let mut i = 0;
    loop {
        let start = i;
        while i < v.len() && v[i] < hi {
            i += 1;
        }
        out.push(Bucket { lo_ns: lo, hi_ns: hi, count: (i - start) as u64 });
        if i == v.len() {
            return out;
        }
        (lo, hi) = (hi, hi.saturating_mul(2));
    }
}

impl Analysis for Latency {
    type State = LatencyState;
    type Output = LatencyReport;

    fn new_state(&self, chunk: &Chunk) -> LatencyState {
        LatencyState { replay: Replay::new(chunk), ..LatencyState::default() }
    }

    fn on_event(&self, st: &mut LatencyState, ev: &EventView<'_, '_>, cx: &Context<'_, '_>) {
        let Some(&(role, name)) = self.roles.get(&class_key(cx.chunk.trace, cx.stream.plan, ev.class.class.id)) else { return };
        let Some(ns) = ev.ns else { return };
        if matches!(self.options.begin_ns, Some(b) if ns < b) || matches!(self.options.end_ns, Some(e) if ns > e) {
            return;
        }
        st.from_events += u64::from(role & FROM != 0);
        st.to_events += u64::from(role & TO != 0);
        let value = match &self.options.match_field {
            None => Matched::Any,
            Some(f) => match ev.field(f).map(|f| f.value) {
                Some(Value::Unsigned(u)) => Matched::Int(u.into()),
                Some(Value::Signed(i)) => Matched::Int(i.into()),
                Some(Value::Str(b)) => Matched::Bytes(b.into()),
                Some(Value::BigInt(b)) => Matched::Bytes(b.into()),
                _ => {
                    st.without_field += 1;
                    return;
                }
            },
        };
        let tid = ev.field("tid").or_else(|| ev.field("vtid")).and_then(|f| f.as_i64());
        let key = st.counter.key(ns, cx);
        st.replay.push(key, Rec { role, name, value, tid });
    }

    fn end_chunk(&self, st: &mut LatencyState, _cx: &Context<'_, '_>) {
        st.replay.end_chunk();
    }

    fn merge(&self, mut a: LatencyState, b: LatencyState) -> LatencyState {
        let keep = self.options.slowest;
        let pairing = &mut a.pairing;
        a.replay.merge(b.replay, |k, r| pairing.apply(k, r, keep));
        a.from_events += b.from_events;
        a.to_events += b.to_events;
        a.without_field += b.without_field;
        a
    }

    fn finish(&self, st: LatencyState) -> LatencyReport {
        let keep = self.options.slowest;
        let mut p = st.pairing;
        st.replay.finish(|k, r| p.apply(k, r, keep));
        let unmatched = p.waiting.values().map(|w| w.len() as u64).sum();
        let mut d = p.durations;
        d.sort_unstable();
        let mut stats = Durations::default();
        for &x in &d {
            stats.add(x);
        }
        let mut slowest: Vec<Slow> = p.slowest.into_iter().map(|r| r.0).collect();
        slowest.sort_by(|a, b| b.cmp(a));
        let name = |i: u32| self.names.get(i as usize).cloned().unwrap_or_default();
        LatencyReport {
            from: self.options.from.clone(),
            to: self.options.to.clone(),
            match_field: self.options.match_field.clone(),
            from_events: st.from_events,
            to_events: st.to_events,
            unmatched,
            without_field: st.without_field,
            count: stats.count,
            min_ns: stats.min_ns,
            max_ns: stats.max_ns,
            mean_ns: stats.mean_ns(),
            stdev_ns: stats.stdev_ns(),
            percentiles: if d.is_empty() { Vec::new() } else { PERCENTILES.iter().map(|&q| Percentile { p: q, ns: percentile(&d, q) }).collect() },
            histogram: histogram(&d),
            slowest: slowest
                .into_iter()
                .map(|s| Pair {
                    from_ns: s.from.ns,
                    to_ns: s.to.ns,
                    duration_ns: s.duration,
                    from_event: name(s.from_name),
                    to_event: name(s.to_name),
                    value: s.value.render(),
                    from_tid: s.from_tid,
                    to_tid: s.to_tid,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), 50);
        assert_eq!(percentile(&v, 99.0), 99);
        assert_eq!(percentile(&v, 99.9), 100);
        assert_eq!(percentile(&[7], 50.0), 7);
    }

    #[test]
    fn histogram_buckets_are_powers_of_two_without_gaps() {
        let h = histogram(&[0, 1, 3, 3, 40]);
        let bounds: Vec<(i64, i64, u64)> = h.iter().map(|b| (b.lo_ns, b.hi_ns, b.count)).collect();
        assert_eq!(bounds, vec![(0, 1, 1), (1, 2, 1), (2, 4, 2), (4, 8, 0), (8, 16, 0), (16, 32, 0), (32, 64, 1)]);
        assert_eq!(histogram(&[]), vec![]);
        let big = histogram(&[5, 1 << 40]);
        assert_eq!((big.first().unwrap().lo_ns, big.last().unwrap().hi_ns, big.len()), (4, 1 << 41, 39));
    }

    #[test]
    fn merge_is_associative() {
        // sched_switch to the next sched_switch of the same CPU; wake-ups to switches of the
        // woken thread (the field names differ, so match on the CPU).
        crate::testing::check("latency", |set| {
            let mut o = LatencyOptions::new("sched_wak*", "sched_switch");
            o.match_field = Some("cpu_id".into());
            Latency::new(set, o).expect("classes")
        });
        crate::testing::check("latency-any", |set| Latency::new(set, LatencyOptions::new("syscall_entry_*", "syscall_exit_*")).expect("classes"));
    }
}
