//! Time chunks of a trace set: the merged, time-ordered sequence of items cut into
//! consecutive time ranges that can be read (and formatted) independently, for `print -j N`.
//!
//! Unlike the analyses' chunks (runs of packets of one stream), a time chunk covers every
//! stream: chunk *k* holds the items whose merge time ([`crate::Merger::key_ns`]) lies in
//! `[begin, end)`. The cuts are not packet boundaries: they are placed so that each chunk
//! holds about the same number of bytes of events, estimated from the index by taking each
//! packet's bytes as spread evenly over its time range (`timestamp_begin` to
//! `timestamp_end`), so that a chunk's size, and its output's, does not depend on the size of
//! the packets or the number of streams. A chunk may begin and end inside packets.
//!
//! Toward the end the chunks get smaller, as in guided self-scheduling: a chunk is a
//! `2 × threads`-th of the bytes left, between a sixteenth of the size asked for and that size,
//! so that the readers finish at about the same time. With chunks of one size, the last
//! reader went on alone for up to a whole chunk (`print -j 2` on a 6 M-event trace: 1–10 ms,
//! about 5 on average, of about 600, while the other thread had nothing left; at 16 threads,
//! a chunk is a larger share of each thread's run).
//!
//! A reader of chunk *k* is a [`crate::Merger::with_packets`] over, for each stream, the
//! packets from the first whose `timestamp_end` is ≥ `begin` (earlier packets end before the
//! range; their events are earlier still) to the stream's end: it skips (decodes without
//! using) the items before `begin` and stops at the first item at or past `end`
//! ([`TimeChunks::lead`] estimates the bytes skipped). The same merger may then go on to a later
//! chunk, skipping the chunks between, when that reads fewer bytes than starting again.
//!
//! The concatenation of the chunks' items is the whole merge, in the same order, when every
//! stream's times are ordered: each event within its packet's `[timestamp_begin,
//! timestamp_end]`, events in order, packets in order (a packet beginning no earlier than the
//! previous one ends). The index shows the last condition (else [`TimeChunks::new`]
//! declines); the others only reading shows, so a reader checks every event it reads
//! ([`in_packet`], no regression, no stream anomaly), and where it stops, the next item of
//! every stream (the next chunk's reader starts each stream at the packet holding that item
//! only if it lies within its packet), and gives up on its chunk otherwise: with a time that
//! goes backwards, the serial merge's order is not a sort by time and only a serial reading
//! gives it.

use tracelens_ctf::Cursor;

use crate::TraceSet;

/// Items of every stream in `[begin_ns, end_ns)` of merge time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeChunk {
    /// Inclusive lower bound in ns from the clock's origin; `None` for the first chunk
    /// (no lower bound).
    pub begin_ns: Option<i64>,
    /// Exclusive upper bound; `None` for the last chunk (no upper bound).
    pub end_ns: Option<i64>,
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
    /// Bytes of the packets before each packet (and, last, of all).
    before: Vec<u64>,
}

impl Timed {
    /// The first packet that may hold an item at `ns` or later (the first whose end is ≥ `ns`),
    /// and the estimated bytes of that packet before `ns`.
    fn at(&self, ns: i64) -> (usize, u64) {
        let i = self.end.partition_point(|&e| e < ns);
        let Some((&b, &e)) = self.begin.get(i).zip(self.end.get(i)) else { return (i, 0) };
        if ns <= b || e <= b {
            return (i, 0);
        }
        let size = self.before[i + 1] - self.before[i];
        (i, (size as f64 * ((ns - b) as f64 / (e - b) as f64)) as u64)
    }
}

/// A trace set's time chunks (see the module comment).
pub struct TimeChunks {
    streams: Vec<Timed>,
    /// The boundaries: chunk `k` is `[cuts[k - 1], cuts[k])`.
    cuts: Vec<i64>,
    /// The estimated bytes of events before each cut.
    before: Vec<u64>,
    /// The bytes of events of a chunk before the chunks get smaller toward the end.
    target: u64,
}

impl TimeChunks {
    /// Cuts the items of `set` into time chunks of about `chunk_size` bytes of events each
    /// (at least a millionth of the trace; see the module comment), smaller toward the end
    /// so that `threads` readers finish together, in time order. `None` when the set cannot be
    /// cut by time: a stream without a clock, a packet without
    /// `timestamp_begin`/`timestamp_end`, or packets whose times overlap or go backwards in
    /// the index.
    pub fn new(set: &TraceSet, chunk_size: u64, threads: usize) -> Option<TimeChunks> {
        let mut streams = Vec::new();
        // Where each packet's bytes start and stop accumulating: (time, bytes per ns, bytes
        // at once for a packet without duration).
        let mut steps: Vec<(i64, f64, u64)> = Vec::new();
        for trace in &set.traces {
            for stream in &trace.streams {
                let clock = Cursor::new(&trace.class, &trace.plans, stream);
                clock.clock_class()?;
                let mut t = Timed { begin: Vec::new(), end: Vec::new(), before: vec![0] };
                for p in &stream.packets {
                    let (b, e) = (clock.cycles_to_ns(p.begin?)?, clock.cycles_to_ns(p.end?)?);
                    if b > e || t.end.last().is_some_and(|&prev| prev > b) {
                        return None;
                    }
                    t.begin.push(b);
                    t.end.push(e);
                    t.before.push(t.before.last().copied().unwrap_or(0).saturating_add(p.size));
                    packet_steps(&mut steps, b, e, p.size);
                }
                streams.push(t);
            }
        }
        // At most about a million chunks, whatever the size asked for.
        let total: u64 = streams.iter().map(|t| t.before.last().copied().unwrap_or(0)).sum();
        let target = chunk_size.max(total >> 20).max(1);
        let (cuts, before) = cut_times(steps, |at| tapered(target as f64, total as f64 - at, threads));
        Some(TimeChunks { streams, cuts, before, target })
    }

    /// The bytes of events of a chunk, but for the smaller ones at the end.
    pub fn target(&self) -> u64 {
        self.target
    }

    /// How many chunks.
    pub fn len(&self) -> usize {
        self.cuts.len() + 1
    }

    /// Whether there are none (never: one chunk holds everything at least).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Chunk `k`'s time range.
    pub fn chunk(&self, k: usize) -> TimeChunk {
        TimeChunk { begin_ns: k.checked_sub(1).and_then(|i| self.cuts.get(i).copied()), end_ns: self.cuts.get(k).copied() }
    }

    /// The estimated bytes of events before chunk `k`.
    pub fn bytes_before(&self, k: usize) -> u64 {
        k.checked_sub(1).and_then(|i| self.before.get(i).copied()).unwrap_or(0)
    }

    /// For each stream of the set (in [`crate::Merger`] order), the first packet a reader of
    /// chunk `k` reads.
    pub fn first_packets(&self, k: usize) -> Vec<usize> {
        let begin = self.chunk(k).begin_ns;
        self.streams.iter().map(|t| begin.map_or(0, |b| t.at(b).0)).collect()
    }

    /// The estimated bytes a reader of chunk `k` skips in those packets, before the chunk.
    pub fn lead(&self, k: usize) -> u64 {
        let Some(begin) = self.chunk(k).begin_ns else { return 0 };
        self.streams.iter().map(|t| t.at(begin).1).sum()
    }
}

/// Adds the steps of a packet of `size` bytes over `[b, e]` to the sweep's `steps`: its bytes
/// spread evenly over its time range, or all at once at `b` when it has none.
fn packet_steps(steps: &mut Vec<(i64, f64, u64)>, b: i64, e: i64, size: u64) {
    if e > b {
        let rate = size as f64 / (e - b) as f64;
        steps.extend([(b, rate, 0), (e, -rate, 0)]);
    } else {
        steps.push((b, 0.0, size));
    }
}

/// The bytes of a chunk with `left` bytes of the trace from its beginning on, for `threads`
/// readers of chunks of `target` bytes: a `2 × threads`-th of what is left, between
/// `target / 16` and `target` (see the module comment).
fn tapered(target: f64, left: f64, threads: usize) -> f64 {
    (left / (2 * threads.max(1)) as f64).clamp(target / 16.0, target)
}

/// The cut times of [`TimeChunks::new`] and the estimated bytes before each: `steps` are
/// (time, change of the bytes per ns, bytes at once), in any order; a chunk beginning `at`
/// bytes into the trace ends `size(at)` bytes further (at least one), the cuts at strictly
/// increasing times.
fn cut_times(mut steps: Vec<(i64, f64, u64)>, size: impl Fn(f64) -> f64) -> (Vec<i64>, Vec<u64>) {
    fn cut(t: i64, at: f64, cuts: &mut Vec<i64>, before: &mut Vec<u64>) {
        if cuts.last().is_none_or(|&c| t > c) {
            cuts.push(t);
            before.push(at as u64);
        }
    }
    let size = |at: f64| size(at).max(1.0);
    steps.sort_unstable_by_key(|s| s.0);
    // A sweep over time: `bytes` before `now`, growing at `rate` bytes per ns.
    let (mut cuts, mut before) = (Vec::new(), Vec::new());
    let (mut now, mut bytes, mut rate, mut next) = (None, 0.0f64, 0.0f64, size(0.0));
    for &(t, step, jump) in &steps {
        if let Some(now) = now.filter(|&n| t > n) {
            let span = (t - now) as f64;
            while rate > 0.0 && bytes + rate * span >= next {
                let dt = ((next - bytes) / rate).ceil().clamp(0.0, span);
                cut(now + dt as i64, next, &mut cuts, &mut before);
                next += size(next);
            }
            bytes += rate * span;
        }
        now = Some(t);
        rate = (rate + step).max(0.0);
        if jump > 0 {
            if bytes >= next {
                cut(t, bytes, &mut cuts, &mut before);
                next = bytes + size(bytes);
            }
            bytes += jump as f64;
        }
    }
    (cuts, before)
}

/// Whether the current event of `cursor` lies within its packet's `timestamp_begin` and
/// `timestamp_end` as the index gives them (true when the packet lacks them or the stream has
/// no clock).
#[inline(always)]
pub fn in_packet(cursor: &Cursor<'_>) -> bool {
    cursor.in_packet()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds() {
        let c = TimeChunk { begin_ns: Some(10), end_ns: Some(20) };
        assert!(!c.holds(9) && c.holds(10) && c.holds(19) && !c.holds(20));
        let open = TimeChunk { begin_ns: None, end_ns: None };
        assert!(open.holds(i64::MIN + 1) && open.holds(i64::MAX));
    }

    /// Packets (begin, end, bytes) as the sweep's steps.
    fn steps(packets: &[(i64, i64, u64)]) -> Vec<(i64, f64, u64)> {
        let mut s = Vec::new();
        for &(b, e, size) in packets {
            packet_steps(&mut s, b, e, size);
        }
        s
    }

    #[test]
    fn cuts_inside_packets_by_bytes() {
        // One stream, one packet of 1000 bytes over [0, 1000): a cut every 100 bytes.
        let (cuts, before) = cut_times(steps(&[(0, 1000, 1000)]), |_| 100.0);
        assert_eq!(cuts, (1..=10).map(|i| i * 100).collect::<Vec<_>>());
        assert_eq!(before, (1..=10).map(|i| i * 100).collect::<Vec<_>>());
        // Two streams overlapping: the second runs at twice the rate of the first.
        let (cuts, _) = cut_times(steps(&[(0, 1000, 1000), (500, 1000, 1000)]), |_| 500.0);
        assert_eq!(cuts, vec![500, 667, 834, 1000]);
        // A packet without duration counts at once; cuts stay strictly increasing.
        let (cuts, _) = cut_times(steps(&[(0, 100, 100), (100, 100, 10_000), (100, 200, 100)]), |_| 50.0);
        assert!(cuts.windows(2).all(|w| w[0] < w[1]), "{cuts:?}");
        assert!(cuts.contains(&50) && cuts.contains(&100), "{cuts:?}");
        // Nothing to cut.
        assert_eq!(cut_times(Vec::new(), |_| 100.0), (Vec::new(), Vec::new()));
        assert_eq!(cut_times(steps(&[(0, 10, 99)]), |_| 100.0).0, Vec::<i64>::new());
    }

    #[test]
    fn chunks_shrink_toward_the_end() {
        // 10,000 bytes over [0, 10,000), chunks of 500 for 2 readers: full chunks while more
        // than 2,000 bytes are left, then a quarter of what is left, down to 31.25 bytes.
        let (cuts, before) = cut_times(steps(&[(0, 10_000, 10_000)]), |at| tapered(500.0, 10_000.0 - at, 2));
        let sizes: Vec<u64> = before.iter().scan(0, |prev, &b| Some(b - std::mem::replace(prev, b))).collect();
        assert!(sizes[..16].iter().all(|&s| s == 500), "{sizes:?}");
        assert!(sizes.windows(2).all(|w| w[1] <= w[0] + 1), "{sizes:?}"); // (bytes rounded down)
        assert!(sizes.iter().all(|&s| s >= 31), "{sizes:?}");
        // The last chunk (from the last cut to the end) is no larger than the smallest size.
        assert!(10_000 - before.last().unwrap() <= 32, "{before:?}");
        // Fewer than 8 chunks per reader more than chunks of one size.
        assert!(cuts.len() < 20 + 16, "{}", cuts.len());
        // One reader: only the last two chunks' bytes are cut smaller.
        let (_, before) = cut_times(steps(&[(0, 10_000, 10_000)]), |at| tapered(500.0, 10_000.0 - at, 1));
        assert_eq!(before[..17], (1..=17).map(|i| i * 500).collect::<Vec<_>>()[..]);
    }
}
