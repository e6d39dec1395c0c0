//! The per-thread buffer: a single-producer single-consumer ring of 64-bit words, written
//! by its thread without a lock or a system call and drained by the consumer thread (the
//! FUT design of the 2005 paper, section 3, with one buffer per thread instead of a shared
//! one, so that producers never contend).
//!
//! A record is `[timestamp][class id | payload bytes << 32][payload words...]`. The producer
//! owns the words from `head` to `tail + capacity`, the consumer those from `tail` to
//! `head`; `head` is published with a release store after the words are written (a plain
//! store on x86-64) and read by the consumer with an acquire load, and `tail` the other way
//! round. The producer does not read `tail` on every event: it keeps a `limit` up to which
//! it may write without looking, the tail it last saw plus half the capacity. Crossing it
//! (once per half buffer) it reads `tail` again, and if the ring is more than half full wakes
//! the consumer (an unpark: a futex wake only if the consumer sleeps) and lets itself run to
//! the full capacity. When a record does not fit, the event is dropped and counted: the next
//! record that fits is preceded by a marker `[total dropped][MARKER]`, which the consumer
//! turns into a CTF discarded-events count at that place in the stream, and the total is
//! also kept in an atomic counter for drops never followed by a record.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The class id of a lost-events marker record.
pub(crate) const MARKER: u32 = u32::MAX;

/// Longest string payload, in bytes (longer text is cut).
pub const MAX_TEXT: usize = 4096;

#[repr(C, align(64))]
struct Producer {
    /// Words published.
    head: AtomicU64,
    /// Events dropped so far (written by the producer only).
    dropped: AtomicU64,
    /// The producer may write up to here without reading `tail`.
    limit: UnsafeCell<u64>,
    /// Drops not yet marked in the ring.
    pending: UnsafeCell<u64>,
}

#[repr(C, align(64))]
struct Consumer {
    /// Words consumed.
    tail: AtomicU64,
}

/// The ring's memory: an anonymous mapping populated at once, so that no probe takes a page
/// fault on a fresh page (falls back to a zeroed heap block where mapping fails).
enum Memory {
    Mapped(*mut UnsafeCell<u64>, usize),
    Heap(Box<[UnsafeCell<u64>]>),
}

impl Memory {
    fn new(words: usize) -> Memory {
        let bytes = words * 8;
        // SAFETY: a fresh private anonymous mapping, checked for failure; zero-filled.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), bytes, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE, -1, 0)
        };
        if p == libc::MAP_FAILED {
            Memory::Heap((0..words).map(|_| UnsafeCell::new(0)).collect())
        } else {
            Memory::Mapped(p.cast(), words)
        }
    }

    fn words(&self) -> &[UnsafeCell<u64>] {
        match self {
            // SAFETY: the mapping holds `n` words and lives as long as `self`.
            Memory::Mapped(p, n) => unsafe { std::slice::from_raw_parts(*p, *n) },
            Memory::Heap(b) => b,
        }
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        if let Memory::Mapped(p, n) = *self {
            // SAFETY: mapped in `new` with this size, unmapped once.
            unsafe { libc::munmap(p.cast(), n * 8) };
        }
    }
}

/// One thread's buffer (see the module documentation).
pub(crate) struct Ring {
    p: Producer,
    c: Consumer,
    _memory: Memory,
    /// The first word of `memory`.
    base: *mut u64,
    mask: u64,
    /// Longest payload in bytes.
    max_payload: usize,
    /// Timestamps are counter ticks (else CLOCK_MONOTONIC ns).
    pub(crate) tsc: bool,
    /// The thread's id.
    pub(crate) tid: i32,
    /// The thread has exited: once drained, the ring is done.
    pub(crate) exited: AtomicBool,
}

// SAFETY: the producer-only cells (`limit`, `pending`) are touched by the owning thread only
// (the `unsafe` producer methods' contract); the words are shared through the head/tail
// protocol described above.
unsafe impl Sync for Ring {}
unsafe impl Send for Ring {}

impl Ring {
    /// A ring of `bytes` (a power of two, at least 512) for thread `tid`.
    pub(crate) fn new(bytes: usize, tid: i32, tsc: bool) -> Ring {
        let n = (bytes / 8).next_power_of_two().max(64);
        let max_payload = MAX_TEXT.min((n / 2 - 4) * 8);
        let memory = Memory::new(n);
        Ring {
            p: Producer { head: AtomicU64::new(0), dropped: AtomicU64::new(0), limit: UnsafeCell::new(n as u64 / 2), pending: UnsafeCell::new(0) },
            c: Consumer { tail: AtomicU64::new(0) },
            base: memory.words().as_ptr().cast_mut().cast(),
            _memory: memory,
            mask: n as u64 - 1,
            max_payload,
            tsc,
            tid,
            exited: AtomicBool::new(false),
        }
    }

    /// Capacity in words.
    pub(crate) fn capacity(&self) -> u64 {
        self.mask + 1
    }

    #[inline(always)]
    fn slot(&self, pos: u64) -> *mut u64 {
        // SAFETY: masked, the index is within the `mask + 1` words at `base`, which live as
        // long as `memory` (UnsafeCell<u64> has u64's layout).
        unsafe { self.base.add((pos & self.mask) as usize) }
    }

    /// Room for `n` words: where to write them, or `None` when the event is dropped.
    ///
    /// # Safety
    /// Only the ring's own thread may call the producer methods.
    #[inline(always)]
    unsafe fn reserve(&self, n: u64) -> Option<u64> {
        let head = self.p.head.load(Ordering::Relaxed);
        if head + n <= *self.p.limit.get() {
            return Some(head);
        }
        self.reserve_slow(head, n)
    }

    #[cold]
    #[inline(never)]
    unsafe fn reserve_slow(&self, mut head: u64, n: u64) -> Option<u64> {
        let cap = self.capacity();
        let tail = self.c.tail.load(Ordering::Acquire);
        let pending = *self.p.pending.get();
        let marker = if pending > 0 { 2 } else { 0 };
        if head + marker + n - tail > cap {
            if pending == 0 {
                crate::state::wake_consumer();
            }
            *self.p.pending.get() = pending + 1;
            let total = self.p.dropped.load(Ordering::Relaxed) + 1;
            self.p.dropped.store(total, Ordering::Release);
            // Every event goes through here until there is room again.
            *self.p.limit.get() = 0;
            return None;
        }
        if pending > 0 {
            *self.slot(head) = self.p.dropped.load(Ordering::Relaxed);
            *self.slot(head + 1) = MARKER as u64;
            head += 2;
            *self.p.pending.get() = 0;
        }
        if head + n - tail > cap / 2 {
            crate::state::wake_consumer();
            *self.p.limit.get() = tail + cap;
        } else {
            *self.p.limit.get() = tail + cap / 2;
        }
        Some(head)
    }

    #[inline(always)]
    unsafe fn publish(&self, end: u64) {
        self.p.head.store(end, Ordering::Release);
    }

    /// Appends an event of class `id` with no payload.
    ///
    /// # Safety
    /// Only the ring's own thread may call the producer methods.
    #[inline(always)]
    pub(crate) unsafe fn push_empty(&self, id: u32) {
        if let Some(at) = self.reserve(2) {
            *self.slot(at) = crate::clock::now(self.tsc);
            *self.slot(at + 1) = id as u64;
            self.publish(at + 2);
        }
    }

    /// Appends an event of class `id` with one 64-bit payload word.
    ///
    /// # Safety
    /// Only the ring's own thread may call the producer methods.
    #[inline(always)]
    pub(crate) unsafe fn push_u64(&self, id: u32, value: u64) {
        if let Some(at) = self.reserve(3) {
            *self.slot(at) = crate::clock::now(self.tsc);
            *self.slot(at + 1) = id as u64 | 8 << 32;
            *self.slot(at + 2) = value;
            self.publish(at + 3);
        }
    }

    /// Appends an event of class `id` with `bytes` as payload (cut to the longest payload).
    ///
    /// # Safety
    /// Only the ring's own thread may call the producer methods.
    #[inline]
    pub(crate) unsafe fn push_bytes(&self, id: u32, bytes: &[u8]) {
        let bytes = &bytes[..bytes.len().min(self.max_payload)];
        let words = bytes.len().div_ceil(8) as u64;
        if let Some(at) = self.reserve(2 + words) {
            *self.slot(at) = crate::clock::now(self.tsc);
            *self.slot(at + 1) = id as u64 | (bytes.len() as u64) << 32;
            for (k, chunk) in bytes.chunks(8).enumerate() {
                let mut w = [0u8; 8];
                w[..chunk.len()].copy_from_slice(chunk);
                *self.slot(at + 2 + k as u64) = u64::from_ne_bytes(w);
            }
            self.publish(at + 2 + words);
        }
    }

    /// The published head (consumer side).
    pub(crate) fn head(&self) -> u64 {
        self.p.head.load(Ordering::Acquire)
    }

    /// The consumed tail (consumer side).
    pub(crate) fn tail(&self) -> u64 {
        self.c.tail.load(Ordering::Relaxed)
    }

    /// Hands the words before `tail` back to the producer (consumer side).
    pub(crate) fn release(&self, tail: u64) {
        self.c.tail.store(tail, Ordering::Release);
    }

    /// Events dropped so far (consumer side).
    pub(crate) fn dropped(&self) -> u64 {
        self.p.dropped.load(Ordering::Acquire)
    }

    /// The word at `pos`, which must lie between the tail and a head read before (consumer
    /// side).
    pub(crate) fn word(&self, pos: u64) -> u64 {
        // SAFETY: the producer does not write between tail and the published head.
        unsafe { *self.slot(pos) }
    }

    /// Reads the record at `pos` (before `head`): (its first word, class id, payload length
    /// in bytes, words in all).
    pub(crate) fn record(&self, pos: u64) -> Record {
        let w0 = self.word(pos);
        let w1 = self.word(pos + 1);
        let id = w1 as u32;
        let len = (w1 >> 32) as usize;
        let words = if id == MARKER { 2 } else { 2 + len.div_ceil(8) as u64 };
        Record { first: w0, id, len, words }
    }

    /// Copies the `len` payload bytes of the record at `pos` into `out`.
    pub(crate) fn payload(&self, pos: u64, len: usize, out: &mut Vec<u8>) {
        out.clear();
        for k in 0..len.div_ceil(8) {
            out.extend_from_slice(&self.word(pos + 2 + k as u64).to_ne_bytes());
        }
        out.truncate(len);
    }
}

/// A record's head as the consumer reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    /// The timestamp, or for a marker the total of events dropped.
    pub(crate) first: u64,
    /// The event class id, or [`MARKER`].
    pub(crate) id: u32,
    /// Payload bytes.
    pub(crate) len: usize,
    /// Words taken by the record.
    pub(crate) words: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(r: &Ring) -> Vec<(Record, Vec<u8>)> {
        let head = r.head();
        let mut pos = r.tail();
        let mut out = Vec::new();
        while pos < head {
            let rec = r.record(pos);
            let mut p = Vec::new();
            r.payload(pos, rec.len, &mut p);
            out.push((rec, p));
            pos += rec.words;
        }
        r.release(pos);
        out
    }

    #[test]
    fn records_round_trip_across_the_wrap() {
        let r = Ring::new(512, 1, false);
        let mut seen = 0u64;
        for round in 0..50u64 {
            unsafe {
                r.push_empty(1);
                r.push_u64(2, round);
                r.push_bytes(3, format!("text {round} ").repeat(round as usize % 5).as_bytes());
            }
            let got = drain(&r);
            assert_eq!(got.len(), 3, "round {round}");
            assert_eq!((got[0].0.id, got[0].0.len), (1, 0));
            assert_eq!((got[1].0.id, got[1].1.as_slice()), (2, round.to_ne_bytes().as_slice()));
            assert_eq!(got[2].1, format!("text {round} ").repeat(round as usize % 5).into_bytes());
            seen += 3;
        }
        assert_eq!(seen, 150);
        assert!(r.head() > r.capacity() * 2, "the ring wrapped");
        assert_eq!(r.dropped(), 0);
    }

    #[test]
    fn a_full_ring_drops_and_marks_the_drops_before_the_next_record() {
        let r = Ring::new(512, 1, false); // 64 words: 21 events of 3 words
        for v in 0..30u64 {
            unsafe { r.push_u64(7, v) };
        }
        assert_eq!(r.dropped(), 9);
        let got = drain(&r);
        assert_eq!(got.len(), 21);
        unsafe { r.push_u64(7, 100) };
        let got = drain(&r);
        assert_eq!(got.iter().map(|g| (g.0.id, g.0.first)).next(), Some((MARKER, 9)));
        assert_eq!(got[1].1, 100u64.to_ne_bytes());
    }

    #[test]
    fn long_text_is_cut_to_fit() {
        let r = Ring::new(512, 1, false);
        unsafe { r.push_bytes(1, &[b'x'; 1000]) };
        let got = drain(&r);
        assert_eq!(got[0].1.len(), (32 - 4) * 8);
    }
}
