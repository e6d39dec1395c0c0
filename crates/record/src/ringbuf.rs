//! Ring-buffer pages as `per_cpu/cpuN/trace_pipe_raw` hands them out.
//!
//! A page is a header — a u64 timestamp (the trace clock at the page's start) and a `commit`
//! word (the length of the data, with two flags in bits 31 and 30: events were lost before
//! this page, and their count is stored after the data) — then events. Each event starts
//! with a 32-bit word: `type_len` in the low 5 bits, `time_delta` (from the previous event)
//! in the high 27 bits:
//!
//! | type_len | meaning | size |
//! |---|---|---|
//! | 0 | data; its length in bytes + 4 is in the next u32 | 8 + length, rounded up to 4 |
//! | 1..=28 | data of `type_len * 4` bytes | 4 + `type_len * 4` |
//! | 29 | padding: with a delta of 0 the rest of the page is empty, else the next u32 is the padding's length (a discarded event) | 4 + length |
//! | 30 | time extend: `(next u32 << 27) + time_delta` is added to the time | 8 |
//! | 31 | absolute time stamp: `(next u32 << 27) + time_delta` is the time (its top 5 bits from the previous time) | 8 |
//!
//! The reading follows the kernel's own reader and libtraceevent's `kbuffer`.

use crate::format::PageLayout;

const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;
const TS_SHIFT: u32 = 27;
const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;
const COMMIT_MASK: u64 = (1 << 27) - 1;
/// Bits 59..63: what an absolute time stamp does not carry.
const TS_MSB: u64 = 0xf8 << 56;

/// Events lost before a page, as its header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missed {
    /// None.
    None,
    /// Some, how many unknown.
    Unknown,
    /// This many.
    Count(u64),
}

/// A page's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageHeader {
    /// The trace clock at the page's start.
    pub timestamp: u64,
    /// Bytes of event data.
    pub commit: usize,
    /// Events lost before this page.
    pub missed: Missed,
}

/// One data event of a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawEvent<'p> {
    /// Trace clock time (nanoseconds with `trace_clock=mono`).
    pub ts: u64,
    /// The record: common fields (`common_type` first) then the event's fields. May end with
    /// up to 3 bytes of padding.
    pub data: &'p [u8],
    /// Offset of the event's header in the page.
    pub offset: usize,
}

/// A malformed page: where and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageError {
    /// Byte offset in the page.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

fn u32_at(p: &[u8], at: usize) -> Option<u32> {
    p.get(at..at + 4).map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
}

fn u64_at(p: &[u8], at: usize) -> Option<u64> {
    p.get(at..at + 8).map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
}

/// Reads a page's header. The page may be shorter than the layout's page size (a partial
/// read), but must hold the header.
pub fn page_header(page: &[u8], layout: &PageLayout) -> Result<PageHeader, PageError> {
    let timestamp = u64_at(page, layout.timestamp_offset).ok_or_else(|| PageError { offset: 0, message: "page shorter than its header".into() })?;
    let raw = match layout.commit_size {
        4 => u32_at(page, layout.commit_offset).map(u64::from),
        _ => u64_at(page, layout.commit_offset),
    }
    .ok_or_else(|| PageError { offset: layout.commit_offset, message: "page shorter than its header".into() })?;
    let commit = (raw & COMMIT_MASK) as usize;
    let room = page.len().saturating_sub(layout.data_offset);
    if commit > room {
        return Err(PageError { offset: layout.commit_offset, message: format!("commit {commit} exceeds the page's {room} data bytes") });
    }
    let missed = if raw & MISSED_EVENTS == 0 {
        Missed::None
    } else if raw & MISSED_STORED != 0 {
        let at = layout.data_offset + commit;
        let n = match layout.commit_size {
            4 => u32_at(page, at).map(u64::from),
            _ => u64_at(page, at),
        };
        n.map_or(Missed::Unknown, Missed::Count)
    } else {
        Missed::Unknown
    };
    Ok(PageHeader { timestamp, commit, missed })
}

/// The data events of a page, in order, with their times.
pub struct Events<'p> {
    data: &'p [u8],
    base: usize,
    pos: usize,
    ts: u64,
    done: bool,
}

/// Iterates over the data events of `page` (header checked by [`page_header`]).
pub fn events<'p>(page: &'p [u8], layout: &PageLayout) -> Result<(PageHeader, Events<'p>), PageError> {
    let h = page_header(page, layout)?;
    let data = &page[layout.data_offset..layout.data_offset + h.commit];
    Ok((h, Events { data, base: layout.data_offset, pos: 0, ts: h.timestamp, done: false }))
}

impl<'p> Events<'p> {
    fn fail(&mut self, message: String) -> Option<Result<RawEvent<'p>, PageError>> {
        self.done = true;
        Some(Err(PageError { offset: self.base + self.pos, message }))
    }
}

impl<'p> Iterator for Events<'p> {
    type Item = Result<RawEvent<'p>, PageError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done && self.pos < self.data.len() {
            let at = self.pos;
            let Some(word) = u32_at(self.data, at) else {
                return self.fail(format!("{} stray bytes at the end of the data", self.data.len() - at));
            };
            let type_len = word & 0x1f;
            let delta = (word >> 5) as u64;
            match type_len {
                TYPE_PADDING => {
                    if delta == 0 {
                        // The rest of the page is empty.
                        self.done = true;
                        return None;
                    }
                    let Some(len) = u32_at(self.data, at + 4) else { return self.fail("truncated padding event".into()) };
                    self.ts = self.ts.wrapping_add(delta);
                    self.pos = at + 4 + len as usize;
                }
                TYPE_TIME_EXTEND | TYPE_TIME_STAMP => {
                    let Some(hi) = u32_at(self.data, at + 4) else { return self.fail("truncated time event".into()) };
                    let v = ((hi as u64) << TS_SHIFT) + delta;
                    if type_len == TYPE_TIME_EXTEND {
                        self.ts = self.ts.wrapping_add(v);
                    } else {
                        let mut abs = v;
                        if self.ts & TS_MSB != 0 {
                            abs |= self.ts & TS_MSB;
                            if abs < self.ts {
                                abs = abs.wrapping_add(1 << 59);
                            }
                        }
                        self.ts = abs;
                    }
                    self.pos = at + 8;
                }
                0 => {
                    let Some(len) = u32_at(self.data, at + 4) else { return self.fail("truncated event length".into()) };
                    if len < 4 {
                        return self.fail(format!("event length {len} is less than 4"));
                    }
                    let size = ((len as usize - 4) + 3) & !3;
                    let Some(rec) = self.data.get(at + 8..at + 8 + size) else {
                        return self.fail(format!("event of {size} bytes runs past the data ({} bytes)", self.data.len()));
                    };
                    self.ts = self.ts.wrapping_add(delta);
                    self.pos = at + 8 + size;
                    return Some(Ok(RawEvent { ts: self.ts, data: rec, offset: self.base + at }));
                }
                n => {
                    let size = n as usize * 4;
                    let Some(rec) = self.data.get(at + 4..at + 4 + size) else {
                        return self.fail(format!("event of {size} bytes runs past the data ({} bytes)", self.data.len()));
                    };
                    self.ts = self.ts.wrapping_add(delta);
                    self.pos = at + 4 + size;
                    return Some(Ok(RawEvent { ts: self.ts, data: rec, offset: self.base + at }));
                }
            }
        }
        None
    }
}

/// `common_type` of a record (its first two bytes).
pub fn common_type(rec: &[u8]) -> u16 {
    rec.get(..2).map_or(0, |b| u16::from_ne_bytes([b[0], b[1]]))
}

/// `common_flags` of a record (byte 2).
pub fn common_flags(rec: &[u8]) -> u8 {
    rec.get(2).copied().unwrap_or(0)
}

/// `common_pid` of a record (bytes 4..8).
pub fn common_pid(rec: &[u8]) -> i32 {
    rec.get(4..8).map_or(0, |b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
}

/// Builds pages the way the kernel lays them out (for tests, here and elsewhere).
#[cfg(test)]
pub(crate) mod build {
    use super::*;

    /// A page under construction.
    pub struct PageBuilder {
        pub layout: PageLayout,
        pub buf: Vec<u8>,
        pub last: u64,
    }

    impl PageBuilder {
        pub fn new(layout: PageLayout, timestamp: u64) -> PageBuilder {
            let mut buf = vec![0u8; layout.data_offset];
            buf[layout.timestamp_offset..layout.timestamp_offset + 8].copy_from_slice(&timestamp.to_ne_bytes());
            PageBuilder { layout, buf, last: timestamp }
        }

        fn word(&mut self, type_len: u32, delta: u64) {
            assert!(delta < 1 << 27);
            self.buf.extend_from_slice(&((delta as u32) << 5 | type_len).to_ne_bytes());
        }

        fn u32(&mut self, v: u32) {
            self.buf.extend_from_slice(&v.to_ne_bytes());
        }

        /// Appends a data event at `ts`, with a time extend first when the delta needs one.
        /// `force_long` uses the type_len 0 form.
        pub fn event(&mut self, ts: u64, rec: &[u8], force_long: bool) {
            let mut delta = ts - self.last;
            if delta >= 1 << 27 {
                self.word(TYPE_TIME_EXTEND, delta & ((1 << 27) - 1));
                self.u32((delta >> 27) as u32);
                delta = 0;
            }
            let padded = (rec.len() + 3) & !3;
            if force_long || padded > 28 * 4 || padded == 0 {
                self.word(0, delta);
                self.u32(rec.len() as u32 + 4);
            } else {
                self.word((padded / 4) as u32, delta);
            }
            self.buf.extend_from_slice(rec);
            self.buf.resize(self.buf.len() + (padded - rec.len()), 0);
            self.last = ts;
        }

        /// Appends an absolute time stamp.
        pub fn absolute(&mut self, ts: u64) {
            self.word(TYPE_TIME_STAMP, ts & ((1 << 27) - 1));
            self.u32(((ts >> 27) & 0xffff_ffff) as u32);
            self.last = ts;
        }

        /// Appends a discarded event (padding whose length word, counting itself, is `len`).
        pub fn discarded(&mut self, ts: u64, len: u32) {
            let delta = ts - self.last;
            self.word(TYPE_PADDING, delta.max(1));
            self.u32(len);
            self.buf.resize(self.buf.len() + len as usize - 4, 0xee);
            self.last = ts;
        }

        /// The finished page: commit patched (with `missed` flags), zero-filled to the page
        /// size (or left short when `partial`).
        pub fn finish(mut self, missed: Missed, partial: bool) -> Vec<u8> {
            let commit = (self.buf.len() - self.layout.data_offset) as u64;
            let mut word = commit;
            match missed {
                Missed::None => {}
                Missed::Unknown => word |= MISSED_EVENTS,
                Missed::Count(n) => {
                    word |= MISSED_EVENTS | MISSED_STORED;
                    self.buf.extend_from_slice(&n.to_ne_bytes());
                }
            }
            let at = self.layout.commit_offset;
            self.buf[at..at + 8].copy_from_slice(&word.to_ne_bytes());
            if !partial && self.buf.len() < self.layout.page_size {
                // Null padding closes the page, as the kernel leaves it.
                self.buf.resize(self.layout.page_size, 0);
            }
            self.buf
        }
    }

    /// A record: common fields (type, flags, pid) then `payload`.
    pub fn record(ty: u16, flags: u8, pid: i32, payload: &[u8]) -> Vec<u8> {
        let mut r = Vec::with_capacity(8 + payload.len());
        r.extend_from_slice(&ty.to_ne_bytes());
        r.push(flags);
        r.push(0);
        r.extend_from_slice(&pid.to_ne_bytes());
        r.extend_from_slice(payload);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::build::*;
    use super::*;

    fn collect(page: &[u8]) -> (PageHeader, Vec<(u64, Vec<u8>)>) {
        let (h, it) = events(page, &PageLayout::default()).unwrap();
        (h, it.map(|e| e.map(|e| (e.ts, e.data.to_vec())).unwrap()).collect())
    }

    #[test]
    fn short_long_extended_and_padding() {
        let l = PageLayout::default();
        let mut p = PageBuilder::new(l, 1_000_000);
        let a = record(1, 0, 10, &[1, 2, 3, 4]);
        let b = record(2, 0, 11, &[9; 200]); // too long for type_len: the type_len 0 form
        let c = record(3, 0, 12, &[7; 5]); // padded to 16 bytes
        p.event(1_000_010, &a, false);
        p.event(1_000_010, &b, false);
        p.discarded(1_000_500, 24);
        p.event(1_000_000 + (5 << 27) + 3, &c, false); // needs a time extend
        p.event(1_000_000 + (5 << 27) + 4, &a, true);
        let page = p.finish(Missed::None, false);
        assert_eq!(page.len(), 4096);
        let (h, evs) = collect(&page);
        assert_eq!(h.timestamp, 1_000_000);
        assert_eq!(h.missed, Missed::None);
        let times: Vec<u64> = evs.iter().map(|e| e.0).collect();
        assert_eq!(times, vec![1_000_010, 1_000_010, 1_000_000 + (5 << 27) + 3, 1_000_000 + (5 << 27) + 4]);
        assert_eq!(evs[0].1, a);
        assert_eq!(evs[1].1, b);
        assert_eq!(&evs[2].1[..c.len()], &c[..]);
        assert_eq!(evs[2].1.len(), 16);
        assert_eq!(evs[3].1, a);
        assert_eq!(common_type(&evs[1].1), 2);
        assert_eq!(common_pid(&evs[2].1), 12);
    }

    #[test]
    fn absolute_timestamps_keep_the_top_bits() {
        let base = (3u64 << 59) + 12345;
        let mut p = PageBuilder::new(PageLayout::default(), base);
        let a = record(1, 0, 1, &[0; 4]);
        p.event(base + 5, &a, false);
        p.absolute(base + 1_000_000);
        p.event(base + 1_000_007, &a, false);
        let (_, evs) = collect(&p.finish(Missed::None, true));
        assert_eq!(evs.iter().map(|e| e.0).collect::<Vec<_>>(), vec![base + 5, base + 1_000_007]);
    }

    #[test]
    fn missed_events_and_partial_pages() {
        let mut p = PageBuilder::new(PageLayout::default(), 7);
        p.event(8, &record(1, 0, 1, &[0; 4]), false);
        let page = p.finish(Missed::Count(42), true);
        assert!(page.len() < 4096);
        let (h, evs) = collect(&page);
        assert_eq!(h.missed, Missed::Count(42));
        assert_eq!(evs.len(), 1);
        let mut p = PageBuilder::new(PageLayout::default(), 7);
        p.event(8, &record(1, 0, 1, &[0; 4]), false);
        let (h, _) = collect(&p.finish(Missed::Unknown, false));
        assert_eq!(h.missed, Missed::Unknown);
    }

    #[test]
    fn malformed_pages_are_errors() {
        let l = PageLayout::default();
        assert!(page_header(&[0u8; 10], &l).is_err());
        // A commit larger than the page.
        let mut page = vec![0u8; 64];
        page[8..16].copy_from_slice(&100u64.to_ne_bytes());
        assert!(page_header(&page, &l).is_err());
        // An event running past the commit.
        let mut p = PageBuilder::new(l, 0);
        p.event(1, &record(1, 0, 1, &[0; 40]), false);
        let mut page = p.finish(Missed::None, true);
        page[8..16].copy_from_slice(&20u64.to_ne_bytes());
        let (_, mut it) = events(&page, &l).unwrap();
        let e = it.next().unwrap().unwrap_err();
        assert_eq!(e.offset, 16);
        assert!(it.next().is_none());
        // A long event whose length is below 4.
        let mut page = vec![0u8; 16];
        page.extend_from_slice(&0u32.to_ne_bytes());
        page.extend_from_slice(&2u32.to_ne_bytes());
        page[8..16].copy_from_slice(&8u64.to_ne_bytes());
        let (_, mut it) = events(&page, &l).unwrap();
        assert!(it.next().unwrap().is_err());
    }

    #[test]
    fn empty_page() {
        let p = PageBuilder::new(PageLayout::default(), 99);
        let (h, evs) = collect(&p.finish(Missed::None, false));
        assert_eq!((h.commit, evs.len()), (0, 0));
    }
}
