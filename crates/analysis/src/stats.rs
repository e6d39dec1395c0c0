//! `stats`: event counts per event name and per stream, time span, discarded events and lost
//! packets, packets and bytes read.
//!
//! Nothing here depends on order or on neighbouring chunks: every number is a sum, a minimum or
//! a maximum, so any cut of the trace gives the same report.

use std::collections::{BTreeMap, HashMap};

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};
use tracelens_ctf::EventView;
use tracelens_trace::{Discarded, DiscardedItems};
use tracelens_trace::TraceSet;

use crate::engine::{Analysis, Chunk, Context};

/// Event class ids below this are counted in a vector during a chunk (no hashing per event);
/// larger ones by name.
const DENSE_IDS: u64 = 1 << 16;

/// The `stats` analysis. Build it with [`Stats::new`] for the trace set it will run on.
#[derive(Clone, Debug)]
pub struct Stats {
    /// Stream paths, per trace and stream.
    paths: Vec<Vec<String>>,
}

impl Stats {
    /// The analysis for `set` (it remembers how many traces and streams `set` has and the
    /// streams' paths, so that streams without events are listed too).
    pub fn new(set: &TraceSet) -> Stats {
        let paths = set.traces.iter().map(|t| t.streams.iter().map(|s| s.path().display().to_string()).collect()).collect();
        Stats { paths }
    }
}

/// What `stats` accumulates for a run of chunks.
#[derive(Clone, Debug)]
pub struct StatsState {
    /// The stream of the chunk being read.
    stream: Option<(usize, usize)>,
    /// Counts by event class id during a chunk (moved to `by_name` at its end).
    by_id: Vec<u64>,
    by_name: HashMap<String, u64>,
    by_stream: BTreeMap<(usize, usize), u64>,
    events: u64,
    /// Earliest and latest event times (`lo > hi`: no timed event yet).
    lo: i64,
    hi: i64,
    discarded_events: u64,
    lost_packets: u64,
    packets: u64,
    bytes: u64,
}

impl Default for StatsState {
    fn default() -> StatsState {
        StatsState {
            stream: None,
            by_id: Vec::new(),
            by_name: HashMap::new(),
            by_stream: BTreeMap::new(),
            events: 0,
            lo: i64::MAX,
            hi: i64::MIN,
            discarded_events: 0,
            lost_packets: 0,
            packets: 0,
            bytes: 0,
        }
    }
}

/// The result of `stats`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatsReport {
    /// Events read.
    pub events: u64,
    /// Events per event class name (classes of the same name in several traces or stream
    /// classes are counted together).
    pub by_name: BTreeMap<String, u64>,
    /// Events per stream, by the path of the stream's (first) file; every stream is listed.
    pub by_stream: BTreeMap<String, u64>,
    /// Events the tracer discarded: the sum of the increases of the packets' `events_discarded`
    /// counters, including the first packet's counter (babeltrace2 says "may have discarded"
    /// without a count there; this counts what the counter says).
    pub discarded_events: u64,
    /// Packets missing from the streams (`packet_seq_num` gaps).
    pub lost_packets: u64,
    /// Earliest event time, in ns from the clock's origin (`None` without timed events).
    pub begin_ns: Option<i64>,
    /// Latest event time, in ns from the clock's origin.
    pub end_ns: Option<i64>,
    /// Packets read.
    pub packets: u64,
    /// Bytes of packets read.
    pub bytes: u64,
    /// Traces in the set.
    pub traces: u64,
    /// Streams in the set.
    pub streams: u64,
}

impl StatsReport {
    /// `end_ns - begin_ns`, when there are timed events.
    pub fn span_ns(&self) -> Option<i64> {
        Some(self.end_ns?.saturating_sub(self.begin_ns?))
    }

    /// Event names and counts, the most frequent first (ties by name).
    pub fn names_by_count(&self) -> Vec<(&str, u64)> {
        let mut v: Vec<(&str, u64)> = self.by_name.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        v
    }
}

/// `{"events", "by_name" (most frequent first), "by_stream" (by path), "discarded_events",
/// "lost_packets", "begin_ns", "end_ns", "span_ns" (null without timed events), "packets",
/// "bytes", "traces", "streams"}`.
impl Serialize for StatsReport {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        /// Names and counts as an object, in this order.
        struct Ordered<'a>(Vec<(&'a str, u64)>);
        impl Serialize for Ordered<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
            }
        }
        let mut st = s.serialize_struct("StatsReport", 12)?;
        st.serialize_field("events", &self.events)?;
        st.serialize_field("by_name", &Ordered(self.names_by_count()))?;
        st.serialize_field("by_stream", &self.by_stream)?;
        st.serialize_field("discarded_events", &self.discarded_events)?;
        st.serialize_field("lost_packets", &self.lost_packets)?;
        st.serialize_field("begin_ns", &self.begin_ns)?;
        st.serialize_field("end_ns", &self.end_ns)?;
        st.serialize_field("span_ns", &self.span_ns())?;
        st.serialize_field("packets", &self.packets)?;
        st.serialize_field("bytes", &self.bytes)?;
        st.serialize_field("traces", &self.traces)?;
        st.serialize_field("streams", &self.streams)?;
        st.end()
    }
}

impl Analysis for Stats {
    type State = StatsState;
    type Output = StatsReport;

    fn new_state(&self, chunk: &Chunk) -> StatsState {
        StatsState {
            stream: Some((chunk.trace, chunk.stream)),
            packets: chunk.packets.len() as u64,
            bytes: chunk.bytes,
            ..StatsState::default()
        }
    }

    #[inline(always)]
    fn on_event(&self, st: &mut StatsState, ev: &EventView<'_, '_>, _cx: &Context<'_, '_>) {
        st.events += 1;
        let id = ev.class.class.id;
        if id < DENSE_IDS {
            let i = id as usize;
            if i >= st.by_id.len() {
                st.by_id.resize(i + 1, 0);
            }
            st.by_id[i] += 1;
        } else {
            *st.by_name.entry(ev.name().to_string()).or_default() += 1;
        }
        if let Some(ns) = ev.ns {
            st.lo = st.lo.min(ns);
            st.hi = st.hi.max(ns);
        }
    }

    fn on_discarded(&self, st: &mut StatsState, items: &DiscardedItems, _cx: &Context<'_, '_>) {
        match items.kind {
            Discarded::Events => st.discarded_events += items.count,
            Discarded::Packets => st.lost_packets += items.count,
        }
    }

    fn end_chunk(&self, st: &mut StatsState, cx: &Context<'_, '_>) {
        let plan = &cx.trace.plans[cx.stream.plan];
        for (id, n) in std::mem::take(&mut st.by_id).into_iter().enumerate() {
            if n > 0 {
                // The decoder found the class by this id, so it exists.
                let name = plan.event(id as u64).map_or("", |e| e.class.name.as_str());
                match st.by_name.get_mut(name) {
                    Some(c) => *c += n,
                    None => {
                        st.by_name.insert(name.to_string(), n);
                    }
                }
            }
        }
        if let Some(key) = st.stream {
            // A fresh state per chunk: `events` counts this chunk's events so far.
            *st.by_stream.entry(key).or_default() += st.events;
        }
    }

    fn merge(&self, earlier: StatsState, later: StatsState) -> StatsState {
        // Fold the smaller maps into the larger ones.
        let (mut a, b) = if earlier.by_name.len() >= later.by_name.len() { (earlier, later) } else { (later, earlier) };
        for (name, n) in b.by_name {
            *a.by_name.entry(name).or_default() += n;
        }
        for (k, n) in b.by_stream {
            *a.by_stream.entry(k).or_default() += n;
        }
        StatsState {
            stream: None,
            by_id: Vec::new(),
            by_name: a.by_name,
            by_stream: a.by_stream,
            events: a.events + b.events,
            lo: a.lo.min(b.lo),
            hi: a.hi.max(b.hi),
            discarded_events: a.discarded_events + b.discarded_events,
            lost_packets: a.lost_packets + b.lost_packets,
            packets: a.packets + b.packets,
            bytes: a.bytes + b.bytes,
        }
    }

    fn finish(&self, st: StatsState) -> StatsReport {
        let mut by_stream = BTreeMap::new();
        for (ti, paths) in self.paths.iter().enumerate() {
            for (si, p) in paths.iter().enumerate() {
                *by_stream.entry(p.clone()).or_default() += st.by_stream.get(&(ti, si)).copied().unwrap_or(0);
            }
        }
        StatsReport {
            events: st.events,
            by_name: st.by_name.into_iter().collect(),
            by_stream,
            discarded_events: st.discarded_events,
            lost_packets: st.lost_packets,
            begin_ns: (st.lo <= st.hi).then_some(st.lo),
            end_ns: (st.lo <= st.hi).then_some(st.hi),
            packets: st.packets,
            bytes: st.bytes,
            traces: self.paths.len() as u64,
            streams: self.paths.iter().map(|p| p.len() as u64).sum(),
        }
    }
}
