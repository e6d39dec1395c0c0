//! Time chunks of a trace set: the merged, time-ordered sequence of items cut into
//! consecutive time ranges that can be read (and formatted) independently, for `print -j N`.
//!
//! Unlike the analyses' chunks (runs of packets of one stream), a time chunk covers every
//! stream: chunk *k* holds the items whose merge time ([`crate::Merger::key_ns`]) lies in
//! `[begin, end)`, and its reader is a [`crate::Merger::with_packets`] over, for each stream,
//! the packets that can hold such items:
//!
//! * from the first packet whose `timestamp_end` is ≥ `begin` (earlier packets end before the
//!   range; their events are earlier still);
//! * to the packet after the last one whose `timestamp_end` is < `end` (the one that holds
//!   the range's end, and whose discarded-items record, timed at the previous packet's end,
//!   may fall in the range).
//!
//! Packets on a boundary are read by both neighbouring chunks; each keeps only its items.
//! The concatenation of the chunks' items is the whole merge, in the same order, when every
//! stream's times are ordered: each event within its packet's `[timestamp_begin,
//! timestamp_end]`, events in order, packets in order (a packet beginning no earlier than the
//! previous one ends). The index shows the last condition (else [`time_chunks`] declines); the
//! others only reading shows, so a reader checks every event it reads ([`in_packet`], no
//! regression, no stream anomaly) and gives up on its chunk otherwise: with a time that goes
//! backwards, the serial merge's order is not a sort by time and only a serial reading gives it.

use std::ops::Range;

use tracelens_ctf::Cursor;

use crate::TraceSet;

/// Items of every stream in `[begin_ns, end_ns)` of merge time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeChunk {
    /// Inclusive lower bound in ns from the clock's origin; `None` for the first chunk
    /// (no lower bound).
    pub begin_ns: Option<i64>,
    /// Exclusive upper bound; `None` for the last chunk (no upper bound).
    pub end_ns: Option<i64>,
    /// For each stream of the set (in [`crate::Merger`] order), the packets to read.
    pub packets: Vec<Range<usize>>,
    /// Bytes of those packets.
    pub bytes: u64,
}

impl TimeChunk {
    /// Whether an item ordered at `ns` belongs to this chunk.
    pub fn holds(&self, ns: i64) -> bool {
        self.begin_ns.is_none_or(|b| ns >= b) && self.end_ns.is_none_or(|e| ns < e)
    }
}

/// The packets of one stream with their times in ns.
struct Timed {
    begin: Vec<i64>,
    end: Vec<i64>,
    size: Vec<u64>,
}

/// Cuts the items of `set` into time chunks of about `chunk_size` bytes of packets each
/// (see the module comment), in time order. `None` when the set cannot be cut by time: a
/// stream without a clock, a packet without `timestamp_begin`/`timestamp_end`, or packets
/// whose times overlap or go backwards in the index.
pub fn time_chunks(set: &TraceSet, chunk_size: u64) -> Option<Vec<TimeChunk>> {
    let target = chunk_size.max(1);
    let mut streams = Vec::new();
    for trace in &set.traces {
        for stream in &trace.streams {
            let clock = Cursor::new(&trace.class, &trace.plans, stream);
            clock.clock_class()?;
            let mut t = Timed { begin: Vec::new(), end: Vec::new(), size: Vec::new() };
            for p in &stream.packets {
                let (b, e) = (clock.cycles_to_ns(p.begin?)?, clock.cycles_to_ns(p.end?)?);
                if b > e || t.end.last().is_some_and(|&prev| prev > b) {
                    return None;
                }
                t.begin.push(b);
                t.end.push(e);
                t.size.push(p.size);
            }
            streams.push(t);
        }
    }
    // Boundaries: packet beginnings, cut where the bytes since the last cut reach the target.
    let mut starts: Vec<(i64, u64)> = streams.iter().flat_map(|t| t.begin.iter().copied().zip(t.size.iter().copied())).collect();
    starts.sort_unstable();
    let mut cuts: Vec<i64> = Vec::new();
    let mut bytes = 0u64;
    for &(b, size) in &starts {
        if bytes >= target && cuts.last().is_none_or(|&c| b > c) {
            cuts.push(b);
            bytes = 0;
        }
        bytes = bytes.saturating_add(size);
    }
    let bounds: Vec<(Option<i64>, Option<i64>)> = (0..=cuts.len()).map(|k| (k.checked_sub(1).map(|i| cuts[i]), cuts.get(k).copied())).collect();
    Some(
        bounds
            .into_iter()
            .map(|(begin_ns, end_ns)| {
                let mut bytes = 0u64;
                let packets = streams
                    .iter()
                    .map(|t| {
                        let n = t.end.len();
                        let from = begin_ns.map_or(0, |b| t.end.partition_point(|&e| e < b));
                        let to = end_ns.map_or(n, |e| (t.end.partition_point(|&x| x < e) + 1).min(n));
                        let r = from..to.max(from);
                        bytes = bytes.saturating_add(t.size[r.clone()].iter().sum::<u64>());
                        r
                    })
                    .collect();
                TimeChunk { begin_ns, end_ns, packets, bytes }
            })
            .collect(),
    )
}

/// Whether the current event of `cursor` lies within its packet's `timestamp_begin` and
/// `timestamp_end` (true when the packet lacks them or the stream has no clock).
pub fn in_packet(cursor: &Cursor<'_>) -> bool {
    let Some(c) = cursor.clock() else { return true };
    let Some(p) = cursor.packet() else { return true };
    p.begin.is_none_or(|b| b <= c) && p.end.is_none_or(|e| c <= e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds() {
        let c = TimeChunk { begin_ns: Some(10), end_ns: Some(20), packets: Vec::new(), bytes: 0 };
        assert!(!c.holds(9) && c.holds(10) && c.holds(19) && !c.holds(20));
        let open = TimeChunk { begin_ns: None, end_ns: None, ..c };
        assert!(open.holds(i64::MIN + 1) && open.holds(i64::MAX));
    }
}
