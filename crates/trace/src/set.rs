//! Trace sets: every CTF trace found under the given paths, opened together, and their
//! streams' events merged into one time-ordered sequence.
//!
//! The merge is a k-way merge over stream cursors keyed by (timestamp, stream order), so events
//! with equal timestamps come out in a stable order. A stream whose timestamps go backwards is
//! not an error: the event is delivered where the merge puts it and the regression is counted
//! and reported (babeltrace2 2.0 aborts instead).

use std::path::{Path, PathBuf};

use tracelens_ctf::{Cursor, EventView, Item, Trace};

use crate::{Error, Result};

/// Finds CTF traces under `path`: the path itself if it holds a `metadata` file, otherwise
/// every directory below it that does (sorted, `index/` folders skipped).
///
/// A `metadata` that is not a regular file (a FIFO, a directory, a link loop) and a directory
/// that cannot be read are errors naming them, not places without a trace.
pub fn discover(path: &Path) -> Result<Vec<PathBuf>> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && std::fs::symlink_metadata(path).is_err() => return Err(Error::NotFound(path.to_path_buf())),
        Err(e) => return Err(Error::Unreadable { path: path.to_path_buf(), source: e }),
        Ok(m) if !m.is_dir() => return Err(Error::NotADirectory { path: path.to_path_buf() }),
        Ok(_) => {}
    }
    let mut out = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    let mut visited = 0usize;
    while let Some(dir) = stack.pop() {
        visited += 1;
        if visited > 100_000 {
            break;
        }
        let meta = dir.join("metadata");
        match std::fs::metadata(&meta) {
            Ok(m) if m.is_file() => {
                out.push(dir);
                continue;
            }
            Ok(m) => return Err(Error::BadMetadata { path: meta, what: format!("not a regular file ({})", tracelens_ctf::file_kind(m.file_type())) }),
            // Something named `metadata` that cannot be followed (a broken link, a loop).
            Err(e) if std::fs::symlink_metadata(&meta).is_ok() => return Err(Error::BadMetadata { path: meta, what: e.to_string() }),
            Err(_) => {}
        }
        let entries = std::fs::read_dir(&dir).map_err(|source| Error::Unreadable { path: dir.clone(), source })?;
        for e in entries {
            let e = e.map_err(|source| Error::Unreadable { path: dir.clone(), source })?;
            let p = e.path();
            let is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
            if is_dir && p.file_name().is_some_and(|n| n != "index") {
                stack.push(p);
            }
        }
    }
    out.sort();
    if out.is_empty() {
        return Err(Error::NoTrace(path.to_path_buf()));
    }
    Ok(out)
}

/// Several traces opened together.
#[derive(Debug)]
pub struct TraceSet {
    /// The traces, in discovery order.
    pub traces: Vec<Trace>,
}

impl TraceSet {
    /// Opens every trace found under each of `paths`.
    pub fn open<P: AsRef<Path>>(paths: &[P]) -> Result<TraceSet> {
        let mut traces = Vec::new();
        for p in paths {
            for dir in discover(p.as_ref())? {
                traces.push(Trace::open(&dir)?);
            }
        }
        Ok(TraceSet { traces })
    }

    /// A time-ordered reader over all events of all traces.
    pub fn merger(&self) -> Merger<'_> {
        Merger::new(self)
    }

    /// What reading the traces found that their events do not show (see
    /// [`tracelens_ctf::Trace::warnings`]): files not read, streams shorter than their index,
    /// packets that disagree with their index. Ask after reading: cursors add to them.
    pub fn warnings(&self) -> Vec<tracelens_ctf::Warning> {
        self.traces.iter().flat_map(|t| t.warnings()).collect()
    }
}

/// Where a merged item came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Source {
    /// Index of the trace in [`TraceSet::traces`].
    pub trace: usize,
    /// Index of the stream in that trace's `streams`.
    pub stream: usize,
}

/// A timestamp that went backwards in the merged order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Regression {
    /// The stream file of the late event.
    pub path: PathBuf,
    /// Its timestamp (ns from origin).
    pub ns: i64,
    /// The timestamp already delivered before it.
    pub previous_ns: i64,
}

/// Reads the items of a [`TraceSet`] in timestamp order. A clone reads on from the same place.
#[derive(Clone)]
pub struct Merger<'a> {
    set: &'a TraceSet,
    cursors: Vec<(Source, Cursor<'a>, Option<Item>)>,
    /// The next items of the streams other than the current one, by merge key (see
    /// [`MinHeap`]).
    heap: MinHeap,
    /// Each cursor's place in the tie-break order (items with equal times: lowest first), in
    /// the merge keys.
    order: Vec<u32>,
    current: Option<usize>,
    /// The merge key (ns) of the current item.
    current_key: i64,
    started: bool,
    /// The latest event time delivered (`i64::MIN` before any).
    last_ns: i64,
    /// How many delivered items had a timestamp earlier than the previous one.
    pub regressions: u64,
    /// The first such regression.
    pub first_regression: Option<Regression>,
}

/// A stream's next item in the merge: its time (ns, or `i64::MIN` when it has none), the
/// stream's place in the tie-break order and the cursor's index, packed so that one integer
/// comparison orders by (time, rank, cursor index).
#[inline(always)]
fn merge_key(ns: i64, order: u32, cursor: usize) -> u128 {
    (u128::from((ns as u64) ^ (1 << 63)) << 64) | (u128::from(order) << 32) | cursor as u128
}

/// The time and cursor index of a [`merge_key`].
#[inline(always)]
fn unpack_key(key: u128) -> (i64, usize) {
    ((((key >> 64) as u64) ^ (1 << 63)) as i64, key as u32 as usize)
}

/// A binary min-heap of merge keys (all distinct: one per stream).
#[derive(Clone, Default)]
struct MinHeap {
    v: Vec<u128>,
}

impl MinHeap {
    fn push(&mut self, key: u128) {
        let v = &mut self.v;
        let mut at = v.len();
        v.push(key);
        while at > 0 {
            let parent = (at - 1) / 2;
            if v[parent] <= key {
                break;
            }
            v[at] = v[parent];
            at = parent;
        }
        v[at] = key;
    }

    fn pop(&mut self) -> Option<u128> {
        let last = self.v.pop()?;
        Some(if self.v.is_empty() { last } else { self.replace_top(last) })
    }

    /// The smaller of `key` and the top, the other one taking the top's place.
    #[inline(always)]
    fn min_with(&mut self, key: u128) -> u128 {
        match self.v.first() {
            Some(&top) if top < key => self.replace_top(key),
            _ => key,
        }
    }

    /// Puts `key` in the top's place (the heap is not empty) and sifts it down; the old top.
    #[inline(always)]
    fn replace_top(&mut self, key: u128) -> u128 {
        let v = &mut self.v[..];
        let top = v[0];
        let mut at = 0;
        loop {
            let left = 2 * at + 1;
            let Some(&l) = v.get(left) else { break };
            let (child, c) = match v.get(left + 1) {
                Some(&r) if r < l => (left + 1, r),
                _ => (left, l),
            };
            if key <= c {
                break;
            }
            v[at] = c;
            at = child;
        }
        v[at] = key;
        top
    }

    fn clear(&mut self) {
        self.v.clear();
    }
}

impl<'a> Merger<'a> {
    fn new(set: &'a TraceSet) -> Merger<'a> {
        let mut cursors = Vec::new();
        for (ti, t) in set.traces.iter().enumerate() {
            for si in 0..t.streams.len() {
                cursors.push((Source { trace: ti, stream: si }, t.cursor(si), None));
            }
        }
        Merger::over(set, cursors)
    }

    /// A merger over only the packets `packets[i]` of the `i`-th stream of the set (the
    /// streams of the first trace in order, then those of the second...), each cursor starting
    /// in the state its stream had after the previous packet (see
    /// [`tracelens_ctf::Cursor::with_packets`]). Streams beyond `packets` are not read.
    pub fn with_packets(set: &'a TraceSet, packets: &[std::ops::Range<usize>]) -> Merger<'a> {
        let mut cursors = Vec::new();
        for (ti, t) in set.traces.iter().enumerate() {
            for (si, s) in t.streams.iter().enumerate() {
                let Some(range) = packets.get(cursors.len()) else { break };
                cursors.push((Source { trace: ti, stream: si }, tracelens_ctf::Cursor::with_packets(&t.class, &t.plans, s, range.clone()), None));
            }
        }
        Merger::over(set, cursors)
    }

    fn over(set: &'a TraceSet, mut cursors: Vec<(Source, Cursor<'a>, Option<Item>)>) -> Merger<'a> {
        // The pages read and not yet handed back stay about 4 MiB in all, however many streams.
        let step = ((4u64 << 20) / cursors.len().max(1) as u64).max(256 << 10);
        for (_, c, _) in &mut cursors {
            c.set_release_step(step);
        }
        let order = (0..cursors.len() as u32).collect();
        Merger { set, cursors, heap: MinHeap::default(), order, current: None, current_key: i64::MIN, started: false, last_ns: i64::MIN, regressions: 0, first_regression: None }
    }

    /// Leaves the pages read mapped, for the caller to hand back
    /// ([`tracelens_ctf::DataStream::release_packets`]): for readers that share pages, where
    /// one reader's hand-back would make the others fault them in again.
    pub fn hold_pages(&mut self) {
        for (_, c, _) in &mut self.cursors {
            c.hold_pages();
        }
    }

    /// Orders items with equal timestamps from different streams by `rank(source)`, lowest
    /// first (then by stream order, as without ranks). Call before the first [`Merger::next`];
    /// babeltrace2's order is [`crate::text::Layout::tie_break_rank`].
    pub fn set_tie_break(&mut self, rank: impl Fn(Source) -> u64) {
        let ranks: Vec<u64> = self.cursors.iter().map(|(src, _, _)| rank(*src)).collect();
        let mut by_rank: Vec<usize> = (0..self.cursors.len()).collect();
        by_rank.sort_by_key(|&i| (ranks[i], i));
        for (place, i) in by_rank.into_iter().enumerate() {
            self.order[i] = place as u32;
        }
    }

    /// The trace set.
    pub fn set(&self) -> &'a TraceSet {
        self.set
    }

    #[inline(always)]
    fn key(cursor: &Cursor<'_>, item: &Item) -> i64 {
        let cycles = match item {
            Item::Event => return cursor.clock_ns().unwrap_or(i64::MIN),
            Item::DiscardedEvents { begin, .. } | Item::DiscardedPackets { begin, .. } => begin.or(cursor.clock()),
        };
        cycles.and_then(|c| cursor.cycles_to_ns(c)).unwrap_or(i64::MIN)
    }

    /// Advances cursor `i`; its next item's merge key, if any.
    fn advance_slow(&mut self, i: usize) -> tracelens_ctf::Result<Option<u128>> {
        let (_, cursor, slot) = &mut self.cursors[i];
        *slot = cursor.advance()?;
        Ok(slot.as_ref().map(|item| merge_key(Self::key(cursor, item), self.order[i], i)))
    }

    /// Moves to the next item in time order. `Ok(None)` when every stream is exhausted.
    ///
    /// After an error the failing stream is dropped from the merge; the caller decides whether
    /// to go on with the others.
    #[allow(clippy::should_implement_trait)] // fallible: Iterator's `next` cannot return a Result
    #[inline(always)]
    pub fn next(&mut self) -> Result<Option<(Source, Item)>> {
        if let Some(i) = self.current {
            // The common case, inlined in the caller's loop: the current stream's next item
            // is an event of the cursor's fast path. The stream just read usually stays ahead
            // of the others for a while: it is only swapped with the heap's top when that
            // comes first (one sift instead of a push and a pop).
            let (src, cursor, slot) = &mut self.cursors[i];
            if cursor.advance_event() {
                *slot = Some(Item::Event);
                let src = *src;
                let ns = cursor.clock_ns().unwrap_or(i64::MIN);
                let key = self.heap.min_with(merge_key(ns, self.order[i], i));
                let (ns, j) = unpack_key(key);
                if j == i {
                    self.current_key = ns;
                    if ns != i64::MIN {
                        self.note_event_time(i, ns);
                    }
                    return Ok(Some((src, Item::Event)));
                }
                // Another stream's event comes first.
                if let Some((src, _, Some(Item::Event))) = self.cursors.get(j) {
                    if ns != i64::MIN {
                        let src = *src;
                        self.current = Some(j);
                        self.current_key = ns;
                        self.note_event_time(j, ns);
                        return Ok(Some((src, Item::Event)));
                    }
                }
                return Ok(self.deliver(key));
            }
        }
        self.next_slow()
    }

    /// [`Merger::next`] for everything but its common case.
    #[inline(never)]
    fn next_slow(&mut self) -> Result<Option<(Source, Item)>> {
        let next = if let Some(i) = self.current.take() {
            match self.advance_slow(i)? {
                Some(key) => Some(self.heap.min_with(key)),
                None => self.heap.pop(),
            }
        } else if !self.started {
            self.started = true;
            let mut first_err = None;
            for i in 0..self.cursors.len() {
                match self.advance_slow(i) {
                    Ok(Some(key)) => self.heap.push(key),
                    Ok(None) => {}
                    Err(e) => {
                        first_err.get_or_insert(e);
                    }
                }
            }
            if let Some(e) = first_err {
                return Err(e.into());
            }
            self.heap.pop()
        } else {
            self.heap.pop()
        };
        Ok(next.and_then(|key| self.deliver(key)))
    }

    /// Makes the item of merge key `key` the current one.
    #[inline(never)]
    fn deliver(&mut self, key: u128) -> Option<(Source, Item)> {
        let (ns, i) = unpack_key(key);
        self.current = Some(i);
        self.current_key = ns;
        let (src, _, item) = self.cursors[i];
        // Only events count: discarded-event records carry their packet's time range, which
        // may start before the last event delivered.
        if ns != i64::MIN && item == Some(Item::Event) {
            self.note_event_time(i, ns);
        }
        item.map(|it| (src, it))
    }

    /// Notes that an event of cursor `i` at `ns` is delivered: a regression when the latest
    /// delivered is later.
    #[inline(always)]
    fn note_event_time(&mut self, i: usize, ns: i64) {
        if ns < self.last_ns {
            self.regression(i, ns);
        } else {
            self.last_ns = ns;
        }
    }

    /// Counts an event of cursor `i` at `ns`, earlier than the latest delivered.
    #[cold]
    #[inline(never)]
    fn regression(&mut self, i: usize, ns: i64) {
        self.regressions += 1;
        if self.first_regression.is_none() {
            self.first_regression = Some(Regression { path: self.cursors[i].1.stream().path().to_path_buf(), ns, previous_ns: self.last_ns });
        }
    }

    /// Times that went backwards inside streams (see [`tracelens_ctf::TimeAnomaly`]): their
    /// total, and the first one found with its stream file and its time in ns from origin.
    pub fn stream_anomalies(&self) -> (u64, Option<(PathBuf, tracelens_ctf::TimeAnomaly, Option<i64>)>) {
        let mut total = 0;
        let mut first = None;
        for (_, c, _) in &self.cursors {
            total += c.anomalies;
            if first.is_none() {
                if let Some(a) = &c.first_anomaly {
                    first = Some((c.stream().path().to_path_buf(), a.clone(), c.cycles_to_ns(a.cycles)));
                }
            }
        }
        (total, first)
    }

    /// Skips the items ordered before `ns` (the current item, if any, counts as not yet
    /// delivered), stream by stream without merging them, which is several times faster than
    /// [`Merger::next`]; the next [`Merger::next`] gives the first item at or after `ns`.
    /// `Ok(false)` when a skipped item has no time or a skipped event lies outside its
    /// packet's time range (see [`crate::chunks::in_packet`]): the merged order may then not
    /// be a sort by time, and the merger is left part way (as after an error).
    pub fn skip_before(&mut self, ns: i64) -> Result<bool> {
        if !self.started {
            self.started = true;
            for i in 0..self.cursors.len() {
                let (_, cursor, slot) = &mut self.cursors[i];
                *slot = cursor.advance()?;
            }
        }
        // The current item is still in its cursor's slot: back among the others.
        self.current = None;
        self.heap.clear();
        for (i, (_, cursor, slot)) in self.cursors.iter_mut().enumerate() {
            while let Some(item) = *slot {
                let key = Self::key(cursor, &item);
                if key >= ns {
                    self.heap.push(merge_key(key, self.order[i], i));
                    break;
                }
                if key == i64::MIN || (item == Item::Event && !crate::chunks::in_packet(cursor)) {
                    return Ok(false);
                }
                let mut last = if item == Item::Event { Some(key) } else { None };
                // The events after it that a skip passes without decoding their fields.
                if let Some(k) = cursor.skip_events_before(ns) {
                    last = Some(last.map_or(k, |l| l.max(k)));
                }
                if let Some(key) = last {
                    self.last_ns = self.last_ns.max(key);
                }
                *slot = cursor.advance()?;
            }
        }
        Ok(true)
    }

    /// The time the current item is ordered by, in ns from the clock's origin: an event's
    /// time, a discarded-items record's beginning (else its stream's current time); `None`
    /// when it has none (such items come first).
    pub fn key_ns(&self) -> Option<i64> {
        (self.current.is_some() && self.current_key != i64::MIN).then_some(self.current_key)
    }

    /// The cursor of the current item.
    #[inline]
    pub fn cursor(&self) -> Option<&Cursor<'a>> {
        self.current.map(|i| &self.cursors[i].1)
    }

    /// Every stream's next item to deliver (the current one included), with its cursor; none
    /// before the first [`Merger::next`].
    pub fn heads(&self) -> impl Iterator<Item = (&Cursor<'a>, Item)> + '_ {
        self.cursors.iter().filter_map(|(_, c, item)| item.map(|it| (c, it)))
    }

    /// The current event, if the current item is one.
    #[inline(always)]
    pub fn event(&self) -> Option<EventView<'a, '_>> {
        self.cursor().and_then(|c| c.event())
    }
}

#[cfg(test)]
mod tests {
    use super::{merge_key, unpack_key, MinHeap};
    use proptest::prelude::*;

    proptest! {
        /// One comparison of packed keys orders as the tuple (time, tie-break place, cursor).
        #[test]
        fn merge_keys_order_as_tuples(a in (any::<i64>(), any::<u32>(), 0..1usize << 32), b in (any::<i64>(), any::<u32>(), 0..1usize << 32)) {
            let (ka, kb) = (merge_key(a.0, a.1, a.2), merge_key(b.0, b.1, b.2));
            prop_assert_eq!(ka.cmp(&kb), a.cmp(&b));
            prop_assert_eq!(unpack_key(ka), (a.0, a.2));
        }

        /// The heap used as `Merger::next` uses it (push every stream's head, take the
        /// smallest; the stream taken hands in its next key with `min_with`, or leaves with
        /// `pop`) delivers what picking the smallest (time, rank, stream) among all heads at
        /// each step delivers, times going backwards and equal ranks included.
        #[test]
        fn heap_merge_picks_the_smallest_head(streams in prop::collection::vec((prop::collection::vec(-5i64..5, 0..12), 0u64..3), 0..7)) {
            let mut by_rank: Vec<usize> = (0..streams.len()).collect();
            by_rank.sort_by_key(|&i| (streams[i].1, i));
            let mut order = vec![0u32; streams.len()];
            for (place, &i) in by_rank.iter().enumerate() {
                order[i] = place as u32;
            }
            let mut got = Vec::new();
            let mut heap = MinHeap::default();
            let mut next = vec![0usize; streams.len()];
            for (i, (times, _)) in streams.iter().enumerate() {
                if let Some(&t) = times.first() {
                    heap.push(merge_key(t, order[i], i));
                    next[i] = 1;
                }
            }
            let mut current = heap.pop();
            while let Some(key) = current {
                let (ns, i) = unpack_key(key);
                got.push((ns, i));
                current = match streams[i].0.get(next[i]) {
                    Some(&t) => {
                        next[i] += 1;
                        Some(heap.min_with(merge_key(t, order[i], i)))
                    }
                    None => heap.pop(),
                };
            }
            let mut want = Vec::new();
            let mut heads = vec![0usize; streams.len()];
            while let Some(i) = (0..streams.len()).filter(|&i| heads[i] < streams[i].0.len()).min_by_key(|&i| (streams[i].0[heads[i]], streams[i].1, i)) {
                want.push((streams[i].0[heads[i]], i));
                heads[i] += 1;
            }
            prop_assert_eq!(got, want);
        }
    }
}
