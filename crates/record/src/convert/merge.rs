//! The CPUs' events merged in time order and released up to a watermark.
//!
//! [`Merge`] takes each CPU's spool records from a [`Records`] source and releases the
//! events, in time order, only up to a *watermark*: a time before which every CPU's events
//! are known. The recorder publishes, for each CPU, how far its spool is written and up to
//! when that CPU's events are known — the time of a read that found the buffer empty (the
//! trace clock is `CLOCK_MONOTONIC`), else the time of the last event read, since a CPU's
//! later events are later — and the watermark is the least of these. An event past it waits
//! (in the spool, not in memory: a source holds one page) until the watermark passes it; at
//! the end the watermark is lifted and everything left is released, to a [`Sink`] (the
//! [`super::Converter`]).
//!
//! A CPU's events keep their order; one that is earlier than an event of its CPU already
//! released (the kernel made it readable after the watermark had passed it) is released at
//! that event's time and counted as late ([`MergeStats::late`]).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::error::{Error, Result};
use crate::format::PageLayout;
use crate::ringbuf;
use crate::spool::{self, Records};

/// Receives the events a [`Merge`] releases, in time order.
pub trait Sink {
    /// `count` events were lost on the `k`-th CPU here (before its next event).
    fn lost(&mut self, k: usize, count: u64) -> Result<()>;
    /// The next event: on the `k`-th CPU, at `ts`, its record (common fields first).
    fn event(&mut self, k: usize, ts: u64, rec: &[u8]) -> Result<()>;
}

/// One CPU's events, a page at a time.
struct Source<F> {
    cpu: u32,
    records: F,
    page: Vec<u8>,
    /// (time, start, end) of the current page's events.
    events: Vec<(u64, usize, usize)>,
    next: usize,
    pending_lost: u64,
    /// The time of the last event released: later ones are released at this time or after.
    floor: u64,
    pages: u64,
    bad_pages: u64,
    bytes: u64,
    problem: Option<String>,
}

impl<F: Records> Source<F> {
    /// Makes `events[next]` the next event, reading pages as needed. False when there is
    /// none (yet).
    fn fill(&mut self, layout: &PageLayout) -> Result<bool> {
        while self.next >= self.events.len() {
            self.events.clear();
            self.next = 0;
            let item = self.records.next_record(&mut self.page).map_err(|e| Error::Io { path: format!("spool of cpu {}", self.cpu).into(), source: e })?;
            match item {
                None => return Ok(false),
                Some(spool::Item::Lost(n)) => self.pending_lost += n,
                Some(spool::Item::Page) => {
                    self.pages += 1;
                    self.bytes += self.page.len() as u64;
                    match ringbuf::events(&self.page, layout) {
                        Err(e) => self.bad(e.offset, &e.message),
                        Ok((h, it)) => {
                            // Events lost before this page (overwrite mode): a stored count,
                            // else at least one.
                            self.pending_lost += match h.missed {
                                ringbuf::Missed::None => 0,
                                ringbuf::Missed::Unknown => 1,
                                ringbuf::Missed::Count(n) => n.max(1),
                            };
                            for ev in it {
                                match ev {
                                    Ok(ev) => {
                                        let start = ev.data.as_ptr() as usize - self.page.as_ptr() as usize;
                                        self.events.push((ev.ts, start, start + ev.data.len()));
                                    }
                                    Err(e) => {
                                        self.bad(e.offset, &e.message);
                                        break;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        Ok(true)
    }

    /// The time of the next event, as it will be released.
    fn head(&self) -> u64 {
        self.events[self.next].0.max(self.floor)
    }

    fn bad(&mut self, offset: usize, message: &str) {
        self.bad_pages += 1;
        if self.problem.is_none() {
            self.problem = Some(format!("cpu {}, page {}, byte {offset}: {message}", self.cpu, self.pages - 1));
        }
    }
}

/// What a [`Merge`] read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MergeStats {
    /// Pages read.
    pub pages: u64,
    /// Pages with a malformed part.
    pub bad_pages: u64,
    /// Bytes of pages read.
    pub bytes: u64,
    /// Events released after a later event of another CPU (see [`super::ConvertSummary::late`]).
    pub late: u64,
    /// The first malformed page, if any.
    pub first_problem: Option<String>,
}

/// The CPUs' events merged in time order and released up to a watermark (see the module
/// documentation). A CPU's events keep their order; one that is earlier than an event of its
/// CPU already released (the kernel wrote it late) is released at that event's time.
pub struct Merge<F> {
    layout: PageLayout,
    sources: Vec<Source<F>>,
    /// (time of the next event, source) of the sources whose next event is read.
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    queued: Vec<bool>,
    /// The time of the last event released, and how many were released before it.
    last: u64,
    late: u64,
}

impl<F: Records> Merge<F> {
    /// A merge of the CPUs' spools `sources` (CPU number, records), whose events are all at or
    /// after `floor` (earlier ones are released at `floor`).
    pub fn new(layout: PageLayout, sources: Vec<(u32, F)>, floor: u64) -> Merge<F> {
        let sources: Vec<Source<F>> = sources
            .into_iter()
            .map(|(cpu, records)| Source {
                cpu,
                records,
                page: Vec::new(),
                events: Vec::new(),
                next: 0,
                pending_lost: 0,
                floor,
                pages: 0,
                bad_pages: 0,
                bytes: 0,
                problem: None,
            })
            .collect();
        let queued = vec![false; sources.len()];
        Merge { layout, sources, heap: BinaryHeap::new(), queued, last: 0, late: 0 }
    }

    /// The records of the `k`-th source (to move its limit, say).
    pub fn records_mut(&mut self, k: usize) -> &mut F {
        &mut self.sources[k].records
    }

    /// Bytes of pages read so far.
    pub fn bytes(&self) -> u64 {
        self.sources.iter().map(|s| s.bytes).sum()
    }

    /// Releases to `sink`, in time order, the events there are whose time is at or before
    /// `watermark`, at most `budget` of them; returns how many. The caller promises that
    /// every event not readable yet is at or after the watermark.
    pub fn release(&mut self, watermark: u64, budget: u64, sink: &mut impl Sink) -> Result<u64> {
        for k in 0..self.sources.len() {
            if !self.queued[k] && self.sources[k].fill(&self.layout)? {
                self.heap.push(Reverse((self.sources[k].head(), k)));
                self.queued[k] = true;
            }
        }
        let mut n = 0;
        while n < budget {
            let Some(&Reverse((ts, k))) = self.heap.peek() else { break };
            if ts > watermark {
                break;
            }
            self.heap.pop();
            self.queued[k] = false;
            let s = &mut self.sources[k];
            let (_, start, end) = s.events[s.next];
            s.next += 1;
            s.floor = ts;
            if s.pending_lost > 0 {
                sink.lost(k, s.pending_lost)?;
                s.pending_lost = 0;
            }
            sink.event(k, ts, &s.page[start..end])?;
            n += 1;
            if ts < self.last {
                self.late += 1;
            }
            self.last = self.last.max(ts);
            if s.fill(&self.layout)? {
                self.heap.push(Reverse((s.head(), k)));
                self.queued[k] = true;
            }
        }
        Ok(n)
    }

    /// Ends the merge: events lost after each CPU's last event go to `sink`.
    pub fn finish(self, sink: &mut impl Sink) -> Result<MergeStats> {
        let mut st = MergeStats { late: self.late, ..MergeStats::default() };
        for (k, s) in self.sources.into_iter().enumerate() {
            if s.pending_lost > 0 {
                sink.lost(k, s.pending_lost)?;
            }
            st.pages += s.pages;
            st.bad_pages += s.bad_pages;
            st.bytes += s.bytes;
            if st.first_problem.is_none() {
                st.first_problem = s.problem;
            }
        }
        Ok(st)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::collections::{HashMap, HashSet};

    use super::*;
    use crate::ringbuf::build::{record, PageBuilder};
    use crate::ringbuf::{common_pid, Missed};

    /// A spool part: a page, or a lost-events record.
    #[derive(Clone)]
    pub(in crate::convert) enum Part {
        Page(Vec<u8>),
        Lost(u64),
    }
    /// A spool in memory, readable up to `limit` records (what the recorder has published).
    pub(in crate::convert) struct Fed {
        pub parts: Vec<Part>,
        pub next: usize,
        pub limit: usize,
    }

    impl Records for Fed {
        fn next_record(&mut self, page: &mut Vec<u8>) -> std::io::Result<Option<spool::Item>> {
            if self.next >= self.limit.min(self.parts.len()) {
                return Ok(None);
            }
            self.next += 1;
            Ok(Some(match &self.parts[self.next - 1] {
                Part::Page(b) => {
                    page.clear();
                    page.extend_from_slice(b);
                    spool::Item::Page
                }
                Part::Lost(n) => spool::Item::Lost(*n),
            }))
        }
    }

    /// What a merge released: (source, time, event number) and, per source, events (`E n`)
    /// and lost counts (`L n`) in the order they came.
    #[derive(Default)]
    struct Log {
        events: Vec<(usize, u64, i32)>,
        per_source: HashMap<usize, Vec<String>>,
    }

    impl Sink for Log {
        fn lost(&mut self, k: usize, count: u64) -> Result<()> {
            self.per_source.entry(k).or_default().push(format!("L {count}"));
            Ok(())
        }

        fn event(&mut self, k: usize, ts: u64, rec: &[u8]) -> Result<()> {
            let n = common_pid(rec);
            self.events.push((k, ts, n));
            self.per_source.entry(k).or_default().push(format!("E {n}"));
            Ok(())
        }
    }

    /// One CPU's spool: events at the given times (ascending), numbered `base + i`, in pages
    /// of the given sizes, with lost counts after some pages.
    fn cpu_spool(times: &[u64], base: i32, pages: &[(usize, u64)]) -> (Vec<Part>, Vec<u64>, Vec<String>) {
        let l = PageLayout::default();
        let (mut parts, mut first_ts, mut expect) = (Vec::new(), Vec::new(), Vec::new());
        let mut pending = 0;
        let mut i = 0;
        for &(size, lost) in pages.iter().cycle() {
            if i >= times.len() {
                break;
            }
            let end = (i + size.max(1)).min(times.len());
            let mut p = PageBuilder::new(l, times[i]);
            for (j, &t) in times.iter().enumerate().take(end).skip(i) {
                p.event(t, &record(1, 0, base + j as i32, &[0; 4]), false);
                if pending > 0 {
                    expect.push(format!("L {pending}"));
                    pending = 0;
                }
                expect.push(format!("E {}", base + j as i32));
            }
            parts.push(Part::Page(p.finish(Missed::None, true)));
            first_ts.push(times[i]);
            if lost > 0 {
                parts.push(Part::Lost(lost));
                first_ts.push(times.get(end).copied().unwrap_or(u64::MAX));
                pending += lost;
            }
            i = end;
        }
        if pending > 0 {
            expect.push(format!("L {pending}"));
        }
        (parts, first_ts, expect)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]

        /// Events come out in time order, never past the watermark of the moment, all of
        /// them by the end, each CPU's in its own order with its lost counts in place,
        /// whatever the order in which the CPUs' pages arrive.
        #[test]
        fn watermark_merge_releases_in_time_order(
            cpus in proptest::collection::vec(
                (proptest::collection::vec(0u64..40, 0..60), proptest::collection::vec((1usize..8, proptest::prop_oneof![3 => proptest::strategy::Just(0u64), 1 => 1u64..5]), 1..6)),
                1..5,
            ),
            steps in proptest::collection::vec((0usize..4, 0usize..4, 0u64..100), 0..40),
        ) {
            let mut spools = Vec::new();
            let mut all = 0;
            for (c, (gaps, pages)) in cpus.iter().enumerate() {
                let mut t = 1_000;
                let times: Vec<u64> = gaps.iter().map(|g| { t += g; t }).collect();
                all += times.len();
                spools.push(cpu_spool(&times, c as i32 * 1000, pages));
            }
            let mut merge = Merge::new(
                PageLayout::default(),
                spools.iter().enumerate().map(|(c, s)| (c as u32, Fed { parts: s.0.clone(), next: 0, limit: 0 })).collect(),
                0,
            );
            let mut log = Log::default();
            let mut known = vec![0u64; spools.len()];
            let mut limits = vec![0usize; spools.len()];
            let mut last = 0;
            for &(c, n, slack) in &steps {
                let c = c % spools.len();
                limits[c] = (limits[c] + n).min(spools[c].0.len());
                merge.records_mut(c).limit = limits[c];
                // The CPU's known time: up to the first event not published yet.
                let first_unpublished = spools[c].1.get(limits[c]).copied().unwrap_or(u64::MAX);
                let last_published = if limits[c] == 0 { 0 } else { spools[c].1[limits[c] - 1] };
                known[c] = known[c].max(first_unpublished.min(last_published.saturating_add(slack)));
                let watermark = known.iter().copied().min().unwrap_or(0);
                let before = log.events.len();
                merge.release(watermark, u64::MAX, &mut log).unwrap();
                for &(_, ts, _) in &log.events[before..] {
                    proptest::prop_assert!(ts <= watermark, "{ts} released past the watermark {watermark}");
                    proptest::prop_assert!(ts >= last, "{ts} after {last}");
                    last = ts;
                }
                // Everything published at or before the watermark is out.
                let released: HashSet<i32> = log.events.iter().map(|e| e.2).collect();
                for (k, s) in spools.iter().enumerate() {
                    for part in &s.0[..limits[k]] {
                        if let Part::Page(p) = part {
                            let (_, evs) = ringbuf::events(p, &PageLayout::default()).unwrap();
                            for e in evs.flatten() {
                                proptest::prop_assert!(e.ts > watermark || released.contains(&common_pid(e.data)), "an event at {} is held back from the watermark {watermark}", e.ts);
                            }
                        }
                    }
                }
            }
            // The end: everything published, the watermark lifted.
            for (c, s) in spools.iter().enumerate() {
                merge.records_mut(c).limit = s.0.len();
            }
            merge.release(u64::MAX, u64::MAX, &mut log).unwrap();
            merge.finish(&mut log).unwrap();
            proptest::prop_assert_eq!(log.events.len(), all);
            for w in log.events.windows(2) {
                proptest::prop_assert!(w[0].1 <= w[1].1);
            }
            for (c, s) in spools.iter().enumerate() {
                let got = log.per_source.remove(&c).unwrap_or_default();
                proptest::prop_assert_eq!(&got, &s.2);
            }
        }
    }

    #[test]
    fn late_events_are_kept_in_their_cpus_order_and_counted() {
        let l = PageLayout::default();
        let page = |ts: &[(u64, i32)]| {
            let mut p = PageBuilder::new(l, ts[0].0);
            for &(t, n) in ts {
                p.event(t, &record(1, 0, n, &[0; 4]), false);
            }
            Part::Page(p.finish(Missed::None, true))
        };
        let cpu0 = vec![page(&[(1_010, 1), (1_030, 2)])];
        // CPU 1's event at 1_020 (and one at 1_015 behind it in its buffer, on the next
        // page) show up only after the watermark 1_030 was released.
        let cpu1 = vec![page(&[(1_005, 10)]), page(&[(1_020, 11)]), page(&[(1_015, 12), (1_040, 13)])];
        let mut merge = Merge::new(l, vec![(0, Fed { parts: cpu0, next: 0, limit: 1 }), (1, Fed { parts: cpu1, next: 0, limit: 1 })], 0);
        let mut log = Log::default();
        merge.release(1_030, u64::MAX, &mut log).unwrap();
        merge.records_mut(1).limit = 3;
        merge.release(u64::MAX, u64::MAX, &mut log).unwrap();
        let st = merge.finish(&mut log).unwrap();
        let got: Vec<(u64, i32)> = log.events.iter().map(|e| (e.1, e.2)).collect();
        assert_eq!(got, [(1_005, 10), (1_010, 1), (1_030, 2), (1_020, 11), (1_020, 12), (1_040, 13)]);
        assert_eq!(st.late, 2);
    }
}
