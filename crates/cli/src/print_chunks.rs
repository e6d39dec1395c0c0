//! `tracelens print -j N`: the merged events cut into time chunks
//! ([`tracelens_trace::chunks`]) of about the same number of bytes of events (1 MiB for text,
//! 512 KiB for JSON by default, about 5 MB of output), each read and formatted into its own
//! buffer on a worker thread, the buffers written in time order by the worker that finds the
//! next one done ([`ordered`]).
//!
//! Chunks begin and end inside packets, so their size, and the memory they hold, depends
//! neither on the packets' size nor on the number of streams. A worker reads chunk *k* with a
//! merger that starts each stream at the packet holding the chunk's beginning and skips the
//! items before it stream by stream, without merging them ([`Merger::skip_before`]: decoding
//! is several times cheaper than formatting), or, when that skips fewer bytes, with a merger
//! already past those packets: the one it read its previous chunk with, left at that chunk's
//! end, would skip the chunks the other workers formatted since (with 2 threads, one chunk out
//! of two, where starting again would skip half a packet of every stream on average; with more,
//! the chunks of every other worker), so it takes over, when there is one, a copy of the merger
//! of the worker formatting the latest chunk before *k* as it stands ([`Relay`]), and skips the
//! rest of that chunk only (with 2 threads, about half of the other worker's chunk).
//!
//! What joins the chunks so that the output is the serial one byte for byte:
//!
//! * the `(+delta)` of a chunk's first event needs the time of the event printed before it,
//!   which only the previous chunks know: the worker prints it as the first event of a trace
//!   (`+?.?????????`) and remembers where; the writer puts the real delta there;
//! * the `WARNING: Tracer discarded ...` lines of the text format go to standard error: the
//!   worker keeps them aside with their place in its output, the writer writes them there
//!   (flushing standard output first when standard error is a terminal, as the serial run does);
//! * a chunk stops at the first item at or past its end, after checking that every stream's
//!   next item lies within its packet: the next chunk's reader starts each stream at the first
//!   packet ending at or after the chunk's beginning, which then holds that item;
//! * a chunk whose reading finds a time going backwards (or an error, or a warning that
//!   formatting prints) gives up, and its worker's merger is dropped: the chunks are only a
//!   sort by time when times are ordered. The writer then hands over to the serial reader,
//!   which starts from the beginning and skips what was already written — the chunks before
//!   are the serial output's beginning.
//!
//! At most `2 × threads` chunks are in flight (read or waiting for the writer), each in
//! buffers of at most 2 MiB ([`Buffers`], reused; a chunk goes on in another buffer when it
//! fills one), so memory is bounded by the chunk size and the number of threads, not
//! by the trace's size, its packets' or its streams'. The pages of the trace go back to the
//! system behind the readers, as the chunks are written ([`Release`]), not by each reader as
//! it reads: the readers' ranges overlap.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};

use tracelens_ctf::Item;
use tracelens_trace::chunks::{in_packet, TimeChunks};
use tracelens_trace::filter::Filter;
use tracelens_trace::text::{Discarded, DiscardedItems, UNKNOWN_DELTA};
use tracelens_trace::{Merger, OutBuf, Source, TraceSet};

use crate::print::Printer;

/// One chunk, formatted.
pub struct ChunkOut {
    /// Standard output's bytes: the first `len` bytes of each buffer, in order (more than one
    /// when the chunk outgrew the buffer it started in: see [`Buffers`]).
    segments: Vec<(Box<[u8]>, usize)>,
    /// Standard error's lines, each with the offset in the output where it comes.
    notes: Vec<(usize, Vec<u8>)>,
    /// Where the first event's `+?.?????????` is in `buf`, and that event's time.
    first: Option<(usize, i64)>,
    /// The time of the last event printed.
    last_ns: Option<i64>,
    /// Discarded events and lost packets printed.
    pub lost: (u64, u64),
    /// Whether the chunk is the serial output's (see the module comment).
    clean: bool,
}

/// What is read from each stream, and how.
pub struct Reading<'r, 'a> {
    pub set: &'a TraceSet,
    pub filter: &'a Filter,
    pub vpids: &'a [Option<i64>],
    /// Tie-break ranks of the merge (text), by set stream.
    pub ranks: Option<&'a (dyn Fn(Source) -> u64 + Sync)>,
    pub chunks: &'a TimeChunks,
    /// Output buffers written and given back, for the next chunks.
    pub buffers: &'a Buffers,
    /// Where the other workers' mergers are (see [`Relay`]).
    pub relay: &'r Relay<Merger<'a>>,
}

/// The chunks' output buffers, all of one size, reused: a chunk's output goes to one buffer,
/// and to more as it fills them, without copying; so the memory they take is touched once and
/// bounded by the output in flight. Buffers smaller than a chunk's output keep that bound
/// close: the chunks' sizes are estimated from the packets' times, which events need not fill
/// evenly (on LTTng-UST traces a tenth of the chunks hold twice the median), and a pool of
/// buffers each the size of the largest chunk would hold that much for every chunk in flight.
/// (A line longer than what is left of a buffer goes to a vector.)
pub struct Buffers {
    size: usize,
    free: Mutex<Vec<Box<[u8]>>>,
}

impl Buffers {
    /// The largest buffer: one huge page where the system backs memory with them.
    const MAX: usize = 2 << 20;

    /// Buffers for chunks of `chunk_size` bytes of events (text is 3.6 to 5.1 times the
    /// events' size on LTTng-UST and synthetic kernel traces, JSON 6.3 to 10.3 times), of at
    /// most [`Buffers::MAX`] bytes.
    pub fn new(chunk_size: u64, json: bool) -> Buffers {
        let expand = if json { 11 } else { 6 };
        let size = (chunk_size as usize).saturating_mul(expand).clamp(1 << 16, Self::MAX);
        Buffers { size, free: Mutex::new(Vec::new()) }
    }

    fn get(&self) -> Box<[u8]> {
        let free = self.free.lock().unwrap_or_else(PoisonError::into_inner).pop();
        free.unwrap_or_else(|| vec![0; self.size].into_boxed_slice())
    }

    /// What a buffer keeps free at its end for the next line (64 KiB, a sixteenth of a small
    /// buffer): with less, the next line goes to a new buffer.
    fn room(&self) -> usize {
        (self.size / 16).min(1 << 16)
    }

    /// Keeps `buf` for the next chunks if it is one of them.
    fn put(&self, buf: Box<[u8]>) {
        if buf.len() == self.size {
            self.free.lock().unwrap_or_else(PoisonError::into_inner).push(buf);
        }
    }
}

/// One thread's printer, and the merger it read its last chunk with (see the module comment).
pub struct Worker<'a> {
    printer: Printer,
    reader: Option<Reader<'a>>,
    /// Its place in the [`Relay`].
    id: usize,
}

/// A merger left where a chunk ended.
struct Reader<'a> {
    /// Stopped at the first item of a later chunk (its current item, which
    /// [`Merger::skip_before`] puts back).
    merger: Merger<'a>,
    /// The chunk after the one it read, or the chunk it stands in (a merger taken over from
    /// another worker part way through its chunk).
    next: usize,
}

impl<'a> Worker<'a> {
    /// A worker printing with `printer`, with a place in `relay`.
    pub fn new(printer: Printer, relay: &Relay<Merger<'a>>) -> Self {
        Worker { printer, reader: None, id: relay.join() }
    }
}

/// Where each worker's merger is, so that a worker starting chunk *k* away from where its own
/// merger stopped (the chunks other workers formatted since lie between: one with 2 threads,
/// those of every other worker with more) can take over a copy of the merger of the worker
/// formatting the latest chunk before *k*, and skip only the rest of that chunk. The worker
/// asked hands over its merger as it stands before its next item (or at the end of its
/// chunk), so the copy is at most one item behind it; the items before *k* that the copy
/// still holds are skipped as usual ([`Merger::skip_before`]). Without it each of `N` workers
/// would skip the chunks of the `N - 1` others, faulting in again the pages they handed back.
///
/// `M` is the merger ([`Merger`]; any `Clone` in tests). Workers are numbered by [`Relay::join`].
pub struct Relay<M> {
    state: Mutex<RelayState<M>>,
    answered: Condvar,
    /// Per worker: its flags, read without the lock.
    flags: Box<[Flags]>,
    joined: AtomicUsize,
}

/// A worker's flags, on a cache line of their own (the worker reading `wanted` before each
/// item does not share the line with another's flags).
#[repr(align(64))]
#[derive(Default)]
struct Flags {
    /// Another worker waits for a copy of this one's merger.
    wanted: AtomicBool,
    /// This worker's request is answered.
    answered: AtomicBool,
}

/// How long a worker waiting for another's merger spins before it sleeps, or withdraws its
/// request ([`Relay::take_over`]): the other answers before its next item, well under a
/// microsecond unless it is not running, where putting a thread to sleep and waking it costs
/// tens of microseconds on a virtual machine.
const SPIN: std::time::Duration = std::time::Duration::from_micros(50);

/// A merger handed over, and the chunk it stands in (where the next item comes from).
type HandedOver<M> = Option<(M, usize)>;

struct RelayState<M> {
    /// Per worker: the chunk it formats (past its skip), if any.
    formatting: Vec<Option<usize>>,
    /// Per worker: the workers waiting for its merger.
    waiting: Vec<Vec<usize>>,
    /// Per worker: the answer to its request, once there is one.
    answers: Vec<Option<HandedOver<M>>>,
    /// Mergers handed over so far.
    handed: usize,
    /// Of those, the ones taken over from the chunk the taker's own merger stood at.
    caught_up: usize,
    /// Requests withdrawn unanswered.
    withdrawn: usize,
}

impl<M: Clone> Relay<M> {
    /// A relay for `threads` workers.
    pub fn new(threads: usize) -> Self {
        let n = threads.max(1);
        let state = RelayState { formatting: vec![None; n], waiting: vec![Vec::new(); n], answers: (0..n).map(|_| None).collect(), handed: 0, caught_up: 0, withdrawn: 0 };
        Relay { state: Mutex::new(state), answered: Condvar::new(), flags: (0..n).map(|_| Flags::default()).collect(), joined: AtomicUsize::new(0) }
    }

    /// A new worker's number; past `threads` workers, a number that never takes over nor
    /// hands over.
    pub fn join(&self) -> usize {
        let id = self.joined.fetch_add(1, Ordering::Relaxed);
        if id < self.flags.len() {
            id
        } else {
            usize::MAX
        }
    }

    /// How many mergers were handed over to another worker.
    pub fn handed_over(&self) -> usize {
        self.lock().handed
    }

    /// How many of those were taken over from the chunk the taker's own merger stood at the
    /// beginning of ([`Relay::take_over`]'s `own`).
    pub fn caught_up(&self) -> usize {
        self.lock().caught_up
    }

    /// How many requests were withdrawn unanswered ([`Relay::take_over`]'s `withdraw`).
    pub fn withdrawn(&self) -> usize {
        self.lock().withdrawn
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RelayState<M>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Worker `me`, whose own merger stands at the beginning of chunk `own` (`None`: it has
    /// none), to start chunk `k`: a copy of the merger of the worker formatting the latest
    /// chunk `c` in `own..k` (other than `me`), if there is one and `good(c)`; with the chunk
    /// it stands in. Waits for the other worker's next item, or its chunk's end; with
    /// `withdraw`, only [`SPIN`]: past that, the other worker is not running (the system gave
    /// its CPU to another thread, or it waits for a page of the trace), for a time slice of
    /// milliseconds, while this worker's CPU would stay idle and, once woken, this worker would
    /// often share the other's CPU for a while. The request is then withdrawn and nothing is
    /// taken over: for a caller that has a cheaper way to start (skipping a short lead).
    pub fn take_over(&self, me: usize, k: usize, own: Option<usize>, good: impl Fn(usize) -> bool, withdraw: bool) -> HandedOver<M> {
        let mut g = self.lock();
        let from = own.unwrap_or(0);
        let (w, c) = g.formatting.iter().enumerate().filter_map(|(w, c)| c.filter(|&c| w != me && (from..k).contains(&c)).map(|c| (w, c))).max_by_key(|&(_, c)| c)?;
        let (Some(mine), Some(theirs)) = (self.flags.get(me), self.flags.get(w)) else { return None };
        if !good(c) {
            return None;
        }
        g.waiting[w].push(me);
        g.answers[me] = None;
        mine.answered.store(false, Ordering::Relaxed);
        theirs.wanted.store(true, Ordering::Release);
        drop(g);
        let start = std::time::Instant::now();
        let mut spins = 0u32;
        while !mine.answered.load(Ordering::Acquire) {
            std::hint::spin_loop();
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(64) && start.elapsed() > SPIN {
                break;
            }
        }
        let mut g = self.lock();
        loop {
            if let Some(a) = g.answers[me].take() {
                g.caught_up += usize::from(a.is_some() && own == Some(c));
                return a;
            }
            if withdraw {
                // Unanswered under the lock: `w` has not handed over yet, and no longer will to `me`.
                g.waiting[w].retain(|&r| r != me);
                if g.waiting[w].is_empty() {
                    theirs.wanted.store(false, Ordering::Relaxed);
                }
                g.withdrawn += 1;
                return None;
            }
            g = self.answered.wait(g).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Whether another worker waits for `me`'s merger (see [`Relay::hand_over`]).
    #[inline(always)]
    pub fn wanted(&self, me: usize) -> bool {
        self.flags.get(me).is_some_and(|f| f.wanted.load(Ordering::Relaxed))
    }

    /// Worker `me` formats chunk `k` from now on, until the returned turn ends.
    pub fn start(&self, me: usize, k: usize) -> Turn<'_, M> {
        if let Some(f) = self.lock().formatting.get_mut(me) {
            *f = Some(k);
        }
        Turn { relay: self, me, left: false }
    }

    /// Hands a copy of `merger` (standing in chunk `k`; `None`: none to hand over) to the
    /// workers waiting for `me`'s; with `leaving`, `me` no longer formats.
    #[cold]
    pub fn hand_over(&self, me: usize, merger: Option<&M>, k: usize, leaving: bool) {
        let mut g = self.lock();
        let RelayState { formatting, waiting, answers, handed, .. } = &mut *g;
        if leaving {
            if let Some(f) = formatting.get_mut(me) {
                *f = None;
            }
        }
        let Some(waiting) = waiting.get_mut(me) else { return };
        for r in waiting.drain(..) {
            answers[r] = Some(merger.map(|m| (m.clone(), k)));
            *handed += usize::from(merger.is_some());
            self.flags[r].answered.store(true, Ordering::Release);
        }
        self.flags[me].wanted.store(false, Ordering::Relaxed);
        self.answered.notify_all();
    }
}

/// A worker's turn of formatting in a [`Relay`]: ended by [`Turn::leave`], or when dropped
/// (also on a panic, so that nobody waits for it for ever) with nothing handed over.
pub struct Turn<'r, M: Clone> {
    relay: &'r Relay<M>,
    me: usize,
    left: bool,
}

impl<M: Clone> Turn<'_, M> {
    /// Ends the turn, handing `merger` (standing in chunk `k`; `None`: none) to those who wait.
    pub fn leave(mut self, merger: Option<&M>, k: usize) {
        self.left = true;
        self.relay.hand_over(self.me, merger, k, true);
    }
}

impl<M: Clone> Drop for Turn<'_, M> {
    fn drop(&mut self) {
        if !self.left {
            self.relay.hand_over(self.me, None, 0, true);
        }
    }
}

/// The longest lead, in chunks, that a worker skips rather than wait for another worker's
/// merger past [`SPIN`] ([`Relay::take_over`]): skipping a byte of lead costs a twentieth to
/// a fortieth of formatting it (the `skip_chunks` example against `print -j 1`, on synthetic
/// kernel traces and LTTng-UST), so 8 chunks of lead cost under half a chunk's formatting,
/// less than the time slice of the system's scheduler that the wait would last. (LTTng's
/// 4 MiB packets put 4 MiB of lead, on average, before a chunk of 1 MiB on two streams.)
const WITHDRAW_LEAD: u64 = 8;

/// Reads and formats chunk `k` with worker `w`: with the merger of its last chunk when
/// skipping the chunks between reads fewer bytes than starting at the chunk's packets, or
/// with a copy of the merger of a worker formatting a chunk between the one its own merger
/// stands at (included) and `k` ([`Relay`]).
pub fn read_chunk<'a>(r: &Reading<'_, 'a>, w: &mut Worker<'a>, k: usize) -> ChunkOut {
    let chunk = r.chunks.chunk(k);
    // The bytes a reader starting at chunk `k`'s packets skips.
    let lead = r.chunks.lead(k);
    // Whether reading on from the beginning of chunk `from` skips fewer bytes than that.
    let worth = |from: usize| from <= k && r.chunks.bytes_before(k).saturating_sub(r.chunks.bytes_before(from)) <= lead;
    let own = w.reader.as_ref().map(|rd| rd.next).filter(|&n| worth(n));
    if own != Some(k) {
        // A copy of the merger of a worker formatting a chunk at or after the one where `w`'s
        // own merger stands, if there is one: it stands further on (with 2 threads, half way
        // through the other worker's chunk on average), for the price of copying each
        // stream's cursor. Without a copy, the worker skips at most the chunk's lead: when
        // that is a few chunks, cheaper than waiting for a worker that is not running.
        let withdraw = lead <= WITHDRAW_LEAD * r.chunks.target();
        if let Some((merger, next)) = r.relay.take_over(w.id, k, own, worth, withdraw) {
            w.reader = Some(Reader { merger, next });
        } else if own.is_none() {
            w.reader = None;
        }
    }
    let Worker { printer, reader, id } = w;
    let id = *id;
    let rd = reader.get_or_insert_with(|| {
        let packets: Vec<_> = r.chunks.first_packets(k).into_iter().map(|from| from..usize::MAX).collect();
        let mut merger = Merger::with_packets(r.set, &packets);
        // The pages go back to the system behind all readers ([`Release`]).
        merger.hold_pages();
        if let Some(rank) = r.ranks {
            merger.set_tie_break(rank);
        }
        Reader { merger, next: k }
    });
    if let Printer::Text(p) = printer {
        p.restart();
        p.set_quiet(true);
    }
    let mut c = ChunkOut { segments: Vec::new(), notes: Vec::new(), first: None, last_ns: None, lost: (0, 0), clean: true };
    let mut out = OutBuf::with_buffer(r.buffers.get(), Vec::new());
    // The bytes in the full buffers before `out`'s.
    let mut done = 0;
    let at = |out: &OutBuf<Vec<u8>>, done: usize| done + out.get_ref().len() + out.buffer().len();
    let merger = &mut rd.merger;
    if let Some(begin) = chunk.begin_ns {
        // The items before the chunk: the previous chunks' (its own or other workers').
        c.clean = matches!(merger.skip_before(begin), Ok(true));
    }
    let keeps_all = r.filter.keeps_all();
    let room = r.buffers.room();
    // Whether the next text event printed is the chunk's first, whose `(+delta)` the writer
    // fills in (see the module comment).
    let mut first_delta = matches!(printer, Printer::Text(p) if p.shows_delta());
    let turn = c.clean.then(|| r.relay.start(id, k));
    let written: io::Result<()> = (|| {
        if !c.clean {
            return Ok(());
        }
        loop {
            if r.relay.wanted(id) {
                r.relay.hand_over(id, Some(merger), k, false);
            }
            let (src, item) = match merger.next() {
                Ok(Some(x)) => x,
                Ok(None) => break,
                Err(_) => {
                    c.clean = false;
                    break;
                }
            };
            let Some(key) = merger.key_ns() else {
                c.clean = false;
                break;
            };
            if item == Item::Event && !merger.cursor().is_some_and(in_packet) {
                c.clean = false;
                break;
            }
            if chunk.end_ns.is_some_and(|end| key >= end) {
                // The first item of a later chunk. Every stream's next item comes no earlier;
                // a reader starting there finds it in the first packet it reads if it lies
                // within its packet.
                c.clean &= merger.heads().all(|(cursor, item)| item != Item::Event || in_packet(cursor));
                break;
            }
            if !chunk.holds(key) {
                continue;
            }
            match item {
                Item::Event => {
                    let Some(ev) = merger.event() else { continue };
                    if !keeps_all && !r.filter.matches(&ev, r.vpids.get(src.trace).copied().flatten()) {
                        continue;
                    }
                    if out.spare() < room {
                        done += next_buffer(&mut out, &mut c.segments, r.buffers);
                    }
                    match printer {
                        Printer::Text(p) if first_delta && ev.ns.is_some() => {
                            first_delta = false;
                            let line = at(&out, done);
                            p.write_event(&mut out, src, &ev)?;
                            let spilled = out.get_ref().len();
                            let printed = if spilled <= line - done { &out.buffer()[line - done - spilled..] } else { &out.get_ref()[line - done..] };
                            let pos = printed.windows(UNKNOWN_DELTA.len()).position(|w| w == UNKNOWN_DELTA);
                            match (pos, ev.ns) {
                                (Some(pos), Some(ns)) => c.first = Some((line + pos, ns)),
                                _ => c.clean = false,
                            }
                        }
                        Printer::Text(p) => p.write_event(&mut out, src, &ev)?,
                        Printer::Json(p) => p.write_event(&mut out, src, &ev)?,
                    }
                    c.last_ns = ev.ns.or(c.last_ns);
                }
                Item::DiscardedEvents { count, .. } | Item::DiscardedPackets { count, .. } => {
                    let Some(d) = merger.cursor().and_then(|c| DiscardedItems::of(c, item)) else { continue };
                    if !r.filter.range_matches(d.begin_ns, d.end_ns) {
                        continue;
                    }
                    match d.kind {
                        Discarded::Events => c.lost.0 += count,
                        Discarded::Packets => c.lost.1 += count,
                    }
                    match printer {
                        Printer::Text(p) => {
                            let mut line = Vec::new();
                            p.write_discarded(&mut line, src, &d)?;
                            c.notes.push((at(&out, done), line));
                        }
                        Printer::Json(p) => p.write_discarded(&mut out, src, &d)?,
                    }
                }
            }
        }
        Ok(())
    })();
    if written.is_err() || merger.regressions > 0 || merger.stream_anomalies().0 > 0 {
        c.clean = false;
    }
    if let Printer::Text(p) = printer {
        c.clean &= !p.warned();
    }
    if let Some(turn) = turn {
        turn.leave(c.clean.then_some(&*merger), k + 1);
    }
    if c.clean {
        rd.next = k + 1;
    } else {
        *reader = None;
    }
    take_output(&mut out, &mut c.segments);
    c
}

/// Moves what `out` holds (the vector it spilled into, then its buffer) to the end of
/// `segments`, leaving it without a buffer; returns the bytes moved.
fn take_output(out: &mut OutBuf<Vec<u8>>, segments: &mut Vec<(Box<[u8]>, usize)>) -> usize {
    let spill = std::mem::take(out.get_mut());
    let spilled = spill.len();
    if spilled > 0 {
        segments.push((spill.into_boxed_slice(), spilled));
    }
    let (buf, len) = out.take_buffer();
    segments.push((buf, len));
    spilled + len
}

/// [`take_output`], then gives `out` a new buffer.
fn next_buffer(out: &mut OutBuf<Vec<u8>>, segments: &mut Vec<(Box<[u8]>, usize)>, buffers: &Buffers) -> usize {
    let moved = take_output(out, segments);
    *out = OutBuf::with_buffer(buffers.get(), Vec::new());
    moved
}

/// Hands back the pages of the trace that no chunk reader needs any more, as the chunks are
/// written. The readers keep what they read mapped ([`Merger::hold_pages`]): a reader starts
/// each stream at the packet holding its chunk's beginning, and copies of mergers read on
/// from where other workers stand, so the ranges the workers read overlap, and a page one of
/// them handed back was faulted in again by another (on a 32-stream trace, `print -j 4` to
/// `-j 16` took 3.5–4 times the page faults of `-j 1`). Once chunk `k` is written, the
/// chunks read are later ones ([`ordered`]); their readers start at their chunk's first
/// packets, or go on from a merger standing in a chunk in flight, or from the worker's own
/// merger across a gap smaller than the chunk's lead ([`read_chunk`]). So the packets before
/// chunk `k - lag`'s first ones go back, in steps of about [`Release::STEP`] bytes of events.
/// (A reader further back would only fault those pages in again: they are a read-only map
/// of the file.)
pub struct Release<'a> {
    set: &'a TraceSet,
    chunks: &'a TimeChunks,
    lag: usize,
    /// Per stream (in the set's order), the first packet not handed back.
    from: Vec<usize>,
    /// The chunk whose first packets `from` holds.
    at: usize,
}

impl<'a> Release<'a> {
    /// Bytes of events handed back at once, about: one `madvise` per stream each time, and
    /// each flushes the TLB of every CPU the process runs on.
    pub const STEP: u64 = 16 << 20;

    /// Hands back the pages of `set` read in `chunks` at least `lag` chunks before the last
    /// one written.
    pub fn new(set: &'a TraceSet, chunks: &'a TimeChunks, lag: usize) -> Self {
        Release { set, chunks, lag: lag.max(1), from: chunks.first_packets(0), at: 0 }
    }

    /// Chunk `k` is written.
    pub fn written(&mut self, k: usize) {
        let Some(to) = k.checked_sub(self.lag).filter(|&to| to > self.at) else { return };
        if self.chunks.bytes_before(to).saturating_sub(self.chunks.bytes_before(self.at)) < Self::STEP {
            return;
        }
        let firsts = self.chunks.first_packets(to);
        let streams = self.set.traces.iter().flat_map(|t| t.streams.iter());
        for ((stream, from), &first) in streams.zip(self.from.iter_mut()).zip(&firsts) {
            if first > *from {
                stream.release_packets(*from..first);
                *from = first;
            }
        }
        self.at = to;
    }
}

/// Writes the chunks' outputs in order.
pub struct Writer<'o, W: Write> {
    pub out: &'o mut OutBuf<W>,
    /// Flush `out` before each standard error line.
    pub interactive: bool,
    /// The time of the last event written.
    last_ns: Option<i64>,
    /// Bytes given to `out` and lines to standard error so far.
    pub bytes: u64,
    pub lines: u64,
    pub lost: (u64, u64),
    /// Chunks written.
    pub chunks: usize,
}

impl<'o, W: Write> Writer<'o, W> {
    pub fn new(out: &'o mut OutBuf<W>, interactive: bool) -> Self {
        Writer { out, interactive, last_ns: None, bytes: 0, lines: 0, lost: (0, 0), chunks: 0 }
    }

    /// Writes chunk `c`; `Ok(false)` (nothing written) when it gave up. Its buffer goes back
    /// to `buffers`.
    pub fn write(&mut self, c: ChunkOut, buffers: &Buffers) -> io::Result<bool> {
        let written = self.write_chunk(&c);
        for (buf, _) in c.segments {
            buffers.put(buf);
        }
        written
    }

    fn write_chunk(&mut self, c: &ChunkOut) -> io::Result<bool> {
        if !c.clean {
            return Ok(false);
        }
        let bytes = Bytes(&c.segments);
        let mut pos = 0;
        let mut notes = c.notes.iter().peekable();
        let mut first = c.first;
        loop {
            let note_at = notes.peek().map(|n| n.0);
            let delta_at = first.map(|f| f.0);
            let next = match (note_at, delta_at) {
                (Some(n), Some(d)) => n.min(d),
                (Some(n), None) => n,
                (None, Some(d)) => d,
                (None, None) => break,
            };
            self.put_range(bytes, pos, next)?;
            pos = next;
            if note_at == Some(next) {
                let line = notes.next().map_or(&[][..], |n| &n.1[..]);
                if self.interactive {
                    self.out.flush()?;
                }
                io::stderr().lock().write_all(line)?;
                self.lines += 1;
            } else if let Some((at, ns)) = first.take() {
                let mut d = Vec::with_capacity(32);
                match self.last_ns {
                    Some(prev) => tracelens_trace::text::write_delta_ns(&mut d, ns.wrapping_sub(prev))?,
                    None => d.extend_from_slice(UNKNOWN_DELTA),
                }
                self.put(&d)?;
                pos = at + UNKNOWN_DELTA.len();
            }
        }
        self.put_range(bytes, pos, usize::MAX)?;
        self.last_ns = c.last_ns.or(self.last_ns);
        self.lost.0 += c.lost.0;
        self.lost.1 += c.lost.1;
        self.chunks += 1;
        Ok(true)
    }

    fn put(&mut self, b: &[u8]) -> io::Result<()> {
        self.bytes += b.len() as u64;
        self.out.write_all(b)
    }

    /// Writes the bytes `from..to` of `bytes` (to its end at most).
    fn put_range(&mut self, bytes: Bytes<'_>, from: usize, to: usize) -> io::Result<()> {
        let mut start = 0;
        for (buf, len) in bytes.0 {
            let (a, b) = (from.max(start), to.min(start + len));
            if a < b {
                self.put(&buf[a - start..b - start])?;
            }
            start += len;
        }
        Ok(())
    }
}

/// A chunk's output: the first bytes of each buffer, one after the other.
#[derive(Clone, Copy)]
struct Bytes<'a>(&'a [(Box<[u8]>, usize)]);

/// Runs `work(state, i)` for `i` in `0..n` on `threads` threads (each with its own `state()`),
/// at most `ahead` items ahead of `take`, which gets the results in order; stops at the first
/// `take` that returns `Ok(false)` or an error, and returns that. A work item's panic is passed
/// on once the results before it are taken.
///
/// `take` runs on the worker that finds the next result in order there, one at a time: the
/// worker that finishes the item the others' results wait behind takes them all, so no
/// thread is woken to take a result (waking a thread costs tens of microseconds on a virtual
/// machine, and it takes a worker's CPU). Workers sleep only when `ahead` items wait.
pub fn ordered<S, T: Send>(
    threads: usize,
    n: usize,
    ahead: usize,
    state: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, usize) -> T + Sync,
    take: impl FnMut(T) -> io::Result<bool> + Send,
) -> io::Result<bool> {
    struct Queue<T> {
        next: usize,
        taken: usize,
        ready: BTreeMap<usize, std::thread::Result<T>>,
        stop: bool,
        /// A worker is taking results.
        taking: bool,
        /// Workers waiting for `taken` to move on.
        idle: usize,
        result: io::Result<bool>,
        panic: Option<Box<dyn std::any::Any + Send>>,
    }
    let q = Mutex::new(Queue { next: 0, taken: 0, ready: BTreeMap::new(), stop: false, taking: false, idle: 0, result: Ok(true), panic: None });
    let room = Condvar::new();
    let take = Mutex::new(take);
    let lock = || q.lock().unwrap_or_else(PoisonError::into_inner);
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                let mut st = None;
                loop {
                    let i = {
                        let mut g = lock();
                        loop {
                            if g.stop || g.next >= n {
                                return;
                            }
                            if g.next < g.taken + ahead.max(1) {
                                break;
                            }
                            g.idle += 1;
                            g = room.wait(g).unwrap_or_else(PoisonError::into_inner);
                            g.idle -= 1;
                        }
                        g.next += 1;
                        g.next - 1
                    };
                    let r = catch_unwind(AssertUnwindSafe(|| work(st.get_or_insert_with(&state), i)));
                    let mut g = lock();
                    g.ready.insert(i, r);
                    // Take what is in order, unless another worker does.
                    while !g.taking && !g.stop {
                        let at = g.taken;
                        let Some(r) = g.ready.remove(&at) else { break };
                        g.taking = true;
                        drop(g);
                        // A panic in `take` stops the others too, and is passed on.
                        let taken = r.and_then(|t| catch_unwind(AssertUnwindSafe(|| take.lock().unwrap_or_else(PoisonError::into_inner)(t))));
                        g = lock();
                        g.taking = false;
                        g.taken = at + 1;
                        match taken {
                            Ok(Ok(true)) => {}
                            Ok(result) => {
                                g.result = result;
                                g.stop = true;
                            }
                            Err(panic) => {
                                g.panic = Some(panic);
                                g.stop = true;
                            }
                        }
                        if g.idle > 0 || g.stop {
                            room.notify_all();
                        }
                    }
                }
            });
        }
    });
    let mut g = lock();
    if let Some(panic) = g.panic.take() {
        resume_unwind(panic);
    }
    std::mem::replace(&mut g.result, Ok(true))
}

/// A writer that drops the first `skip` bytes written to it.
pub struct Skip<W: Write> {
    pub inner: W,
    pub skip: u64,
}

impl<W: Write> Write for Skip<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.skip == 0 {
            return self.inner.write(buf);
        }
        let n = (self.skip.min(buf.len() as u64)) as usize;
        self.skip -= n as u64;
        if n == buf.len() {
            return Ok(n);
        }
        Ok(n + self.inner.write(&buf[n..])?)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_keeps_order_and_stops() {
        for threads in 1..4 {
            let mut got = Vec::new();
            let r = ordered(threads, 50, 3, || 0u32, |_, i| i * 2, |t| {
                got.push(t);
                Ok(true)
            });
            assert!(r.unwrap());
            assert_eq!(got, (0..50).map(|i| i * 2).collect::<Vec<_>>());
            let mut got = Vec::new();
            let r = ordered(threads, 50, 3, || (), |_, i| i, |t| {
                got.push(t);
                Ok(t < 7)
            });
            assert!(!r.unwrap());
            assert_eq!(got, (0..8).collect::<Vec<_>>());
        }
    }

    /// A work item that panics, or `take` panicking on its result, passes the panic on to the
    /// caller once the results before it are taken (and none after it is), whatever the
    /// thread count: the output is never cut short silently, and no worker waits for ever.
    #[test]
    fn ordered_passes_a_panic_on_after_the_results_before_it() {
        for threads in 1..4 {
            let mut got = Vec::new();
            let r = catch_unwind(AssertUnwindSafe(|| {
                ordered(threads, 50, 3, || (), |_, i| if i == 20 { panic!("work item 20 fails") } else { i }, |t| {
                    got.push(t);
                    Ok(true)
                })
            }));
            assert!(r.is_err(), "{threads} threads: the panic is passed on");
            assert_eq!(got, (0..20).collect::<Vec<_>>(), "{threads} threads");
            // The same when taking a result panics: the workers waiting for room stop.
            let mut got = Vec::new();
            let r = catch_unwind(AssertUnwindSafe(|| {
                ordered(threads, 50, 3, || (), |_, i| i, |t| {
                    assert!(t != 20, "taking item 20 fails");
                    got.push(t);
                    Ok(true)
                })
            }));
            assert!(r.is_err(), "{threads} threads: the panic is passed on");
            assert_eq!(got, (0..20).collect::<Vec<_>>(), "{threads} threads");
        }
    }

    /// A chunk's output in several buffers (only their first bytes used, one of them empty)
    /// is written as their concatenation, with the first event's delta put in place even
    /// where its placeholder straddles two buffers.
    #[test]
    fn a_chunk_in_several_buffers_is_written_whole() {
        let line = b"[00:00:01.000000000] (+?.?????????) e: { }\n[00:00:01.000000002] (+0.000000002) e: { }\n";
        let text: &[u8] = line;
        let at = text.windows(UNKNOWN_DELTA.len()).position(|w| w == UNKNOWN_DELTA).unwrap();
        for cuts in [vec![], vec![5], vec![at + 3, at + 3, 50], vec![1, at, at + 12, 70]] {
            let mut segments = Vec::new();
            let mut from = 0;
            for &to in cuts.iter().chain([&text.len()]) {
                let mut buf = text[from..to].to_vec();
                buf.extend_from_slice(b"junk past the used length");
                segments.push((buf.into_boxed_slice(), to - from));
                from = to;
            }
            let c = ChunkOut { segments, notes: Vec::new(), first: Some((at, 1_000_000_000)), last_ns: Some(1_000_000_002), lost: (0, 0), clean: true };
            let mut out = OutBuf::with_capacity(0, Vec::new());
            let mut w = Writer::new(&mut out, false);
            w.last_ns = Some(999_999_999);
            assert!(w.write(c, &Buffers::new(1, false)).unwrap());
            let bytes = w.bytes;
            out.flush().unwrap();
            let want = String::from_utf8_lossy(text).replace("+?.?????????", "+0.000000001");
            assert_eq!(String::from_utf8_lossy(out.get_ref()), want, "cut at {cuts:?}");
            assert_eq!(bytes, want.len() as u64);
        }
    }

    /// A worker asking for the merger of the worker formatting the latest chunk before its
    /// own gets a copy as it stands before that worker's next item, also when that chunk is
    /// the one its own merger stands at the beginning of; nothing when no other worker formats
    /// a chunk in the range asked, or when the range is not worth it.
    #[test]
    fn relay_hands_over_the_merger_of_the_latest_chunk_being_formatted() {
        use std::sync::atomic::AtomicU64;
        let relay: Relay<u64> = Relay::new(3);
        let (a, b, c) = (relay.join(), relay.join(), relay.join());
        assert_eq!(relay.join(), usize::MAX, "a fourth worker has no place");
        assert_eq!(relay.take_over(a, 5, None, |_| true, false), None, "nobody formats");
        let items = AtomicU64::new(0);
        let stop = AtomicBool::new(false);
        let ready = std::sync::Barrier::new(3);
        std::thread::scope(|s| {
            // Worker b formats chunk 3, worker c chunk 1: items counted as it goes.
            s.spawn(|| {
                let turn = relay.start(b, 3);
                ready.wait();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if relay.wanted(b) {
                        relay.hand_over(b, Some(&n), 3, false);
                    }
                    n += 1;
                    items.store(n, Ordering::Relaxed);
                }
                turn.leave(Some(&u64::MAX), 4);
            });
            s.spawn(|| {
                let turn = relay.start(c, 1);
                ready.wait();
                while !stop.load(Ordering::Relaxed) {
                    if relay.wanted(c) {
                        relay.hand_over(c, Some(&7), 1, false);
                    }
                }
                drop(turn);
            });
            ready.wait();
            let before = items.load(Ordering::Relaxed);
            let (got, chunk) = relay.take_over(a, 5, None, |_| true, false).expect("b formats chunk 3");
            assert_eq!(chunk, 3, "the latest chunk before 5");
            assert!(got >= before && got <= items.load(Ordering::Relaxed), "b's merger as it stands: {before} <= {got}");
            assert_eq!(relay.take_over(a, 3, None, |_| true, false), Some((7, 1)), "before chunk 3: c's");
            assert_eq!(relay.take_over(a, 5, Some(4), |_| true, false), None, "no chunk formatted from 4 on");
            assert_eq!(relay.caught_up(), 0);
            let (got, chunk) = relay.take_over(a, 5, Some(3), |_| true, false).expect("b formats the chunk a's own merger stands at");
            assert_eq!(chunk, 3);
            assert!(got >= before, "b's merger as it stands, past chunk 3's beginning");
            assert_eq!(relay.caught_up(), 1);
            assert_eq!(relay.take_over(a, 5, None, |c| c != 3, false), None, "not worth it");
            assert_eq!(relay.take_over(b, 2, None, |_| true, false), Some((7, 1)), "any worker may ask");
            stop.store(true, Ordering::Relaxed);
        });
        assert_eq!(relay.handed_over(), 4);
        assert_eq!(relay.take_over(a, 5, None, |_| true, false), None, "nobody formats any more");
    }

    /// A worker asking while the other ends its turn gets the merger it ends with, or
    /// nothing when it ends without one (a chunk given up, or a panic): it never waits for
    /// ever.
    #[test]
    fn relay_answers_at_the_end_of_a_turn() {
        for end_with in [Some(9u64), None] {
            let relay: Relay<u64> = Relay::new(2);
            let (a, b) = (relay.join(), relay.join());
            let turn = relay.start(b, 2);
            std::thread::scope(|s| {
                let asked = s.spawn(|| relay.take_over(a, 4, None, |_| true, false));
                // b never looks at its flag: it answers when its turn ends.
                while !relay.wanted(b) {
                    std::thread::yield_now();
                }
                match end_with {
                    Some(m) => turn.leave(Some(&m), 3),
                    None => drop(turn),
                }
                assert_eq!(asked.join().unwrap(), end_with.map(|m| (m, 3)));
            });
        }
        let relay: Relay<u64> = Relay::new(2);
        let (a, b) = (relay.join(), relay.join());
        std::thread::scope(|s| {
            let failed = s.spawn(|| {
                let _turn = relay.start(b, 0);
                panic!("formatting failed");
            });
            assert!(failed.join().is_err());
        });
        assert_eq!(relay.take_over(a, 1, None, |_| true, false), None, "b's turn ended with its thread");
    }

    /// A request withdrawn because the worker asked does not answer (it is not running)
    /// gets nothing, at once, and is never answered; the worker asked is still asked by those
    /// who wait for it, and by nobody once they are answered.
    #[test]
    fn relay_request_withdrawn_unanswered() {
        let relay: Relay<u64> = Relay::new(3);
        let (a, b, c) = (relay.join(), relay.join(), relay.join());
        let turn = relay.start(b, 2);
        // b does not look at its flag until told to: it is not running.
        assert_eq!(relay.take_over(a, 4, None, |_| true, true), None);
        assert_eq!(relay.withdrawn(), 1);
        assert!(!relay.wanted(b), "nobody waits for b");
        std::thread::scope(|s| {
            let waits = s.spawn(|| relay.take_over(c, 4, None, |_| true, false));
            while !relay.wanted(b) {
                std::thread::yield_now();
            }
            assert_eq!(relay.take_over(a, 4, None, |_| true, true), None);
            assert_eq!(relay.withdrawn(), 2);
            assert!(relay.wanted(b), "c still waits for b");
            relay.hand_over(b, Some(&9), 2, false);
            assert_eq!(waits.join().unwrap(), Some((9, 2)));
        });
        assert_eq!(relay.handed_over(), 1, "to c only");
        assert!(!relay.wanted(b));
        turn.leave(Some(&10), 3);
        assert_eq!(relay.handed_over(), 1, "the withdrawn requests are not answered");
    }

    #[test]
    fn skip_drops_a_prefix() {
        let mut s = Skip { inner: Vec::new(), skip: 5 };
        s.write_all(b"abc").unwrap();
        s.write_all(b"defg").unwrap();
        s.write_all(b"hi").unwrap();
        assert_eq!(s.inner, b"fghi");
    }
}
