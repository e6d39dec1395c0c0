//! The parallel engine: chunks cut from the packet index, read on a thread pool, their states
//! merged in time order as soon as they are ready.
//!
//! See [`Engine`] for how a run goes.

use std::collections::BTreeMap;
use std::ops::Range;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tracelens_ctf::{Cursor, DataStream, EventView, Item, Trace};
use tracelens_trace::DiscardedItems;
use tracelens_trace::TraceSet;

use crate::timings::{Phase, RunTimings, Stopwatch};
use crate::{Error, Result};

/// Default target size of a chunk: 64 MiB of packets.
pub const DEFAULT_CHUNK_SIZE: u64 = 64 << 20;

/// How to run an analysis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Worker threads. `0` (the default) means one per available core.
    pub threads: usize,
    /// Target size of a chunk in bytes of packets (default [`DEFAULT_CHUNK_SIZE`]). A chunk
    /// closes at the first packet boundary where it reaches this size: `1` gives one packet
    /// per chunk, `u64::MAX` one chunk per stream. `0` counts as `1`. A stream with a clock
    /// is only cut before packets that have a beginning time (see [`Chunk`]).
    pub chunk_size: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options { threads: 0, chunk_size: DEFAULT_CHUNK_SIZE }
    }
}

impl Options {
    /// Target chunk size for the kernel analyses (`cpu`, `sched`, `syscalls`, `io`, `irq`):
    /// 4 MiB. Their merges resolve, in time order, what each chunk could not (wake-ups and
    /// switch-ins on other CPUs, the descriptor tables of `io`) up to the start of the next
    /// chunk; with chunks much shorter than the trace, that work runs while later chunks are
    /// read and little is left for the end, and each chunk's unresolved state stays small.
    /// `stats` uses it too: on 16 threads, 64 MiB chunks left a 2.1 GB trace of 32 streams
    /// with two or three chunks per thread, and the last ones alone at the end.
    pub const KERNEL_CHUNK_SIZE: u64 = 4 << 20;

    /// [`Options::KERNEL_CHUNK_SIZE`] divided among the streams of `set` that have packets,
    /// between 512 KiB and 4 MiB: for analyses that keep about one chunk's state per stream
    /// until the merges pass it (`io`'s facts, the records of `threads` and its execution
    /// graph), so that it stays near [`Options::KERNEL_CHUNK_SIZE`] in all whatever the
    /// streams; below 512 KiB the merges' work per chunk starts to show.
    pub fn chunk_size_per_stream(set: &TraceSet) -> u64 {
        let streams = set.traces.iter().flat_map(|t| &t.streams).filter(|s| !s.packets.is_empty()).count() as u64;
        (Options::KERNEL_CHUNK_SIZE / streams.max(1)).clamp(512 << 10, Options::KERNEL_CHUNK_SIZE)
    }
}

/// A run of consecutive packets of one stream, read by one worker with its own state.
///
/// A stream whose events have times is only cut before packets whose context has a
/// `timestamp_begin` (every LTTng packet has one): a stream without them is one chunk.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Chunk {
    /// Position of the chunk in time order (0 is the earliest): states are merged in this order.
    pub index: usize,
    /// Index of the trace in [`TraceSet::traces`].
    pub trace: usize,
    /// Index of the stream in that trace's `streams`.
    pub stream: usize,
    /// Number of the stream in the whole set: the streams of the first trace in order, then
    /// those of the second, and so on.
    pub set_stream: u32,
    /// The packets, as indexes in the stream's `packets`.
    pub packets: Range<usize>,
    /// Their total size in bytes.
    pub bytes: u64,
    /// The time chunks are sorted by, in ns from the clock's origin: the first packet's
    /// `timestamp_begin`, raised to the previous chunk's of the same stream when it is earlier
    /// (so that a stream's chunks stay in stream order), or the previous chunk's when the
    /// packet has none. `None` (sorted first) when no packet of the stream up to this chunk
    /// has a beginning time. Ties are broken by trace, stream and packet.
    pub begin_ns: Option<i64>,
    /// The last packet's `timestamp_end` in ns from the clock's origin, if it has one.
    pub end_ns: Option<i64>,
}

/// Where an item comes from, as the analysis sees it.
#[non_exhaustive]
pub struct Context<'c, 'a> {
    /// The chunk being read.
    pub chunk: &'c Chunk,
    /// Its trace.
    pub trace: &'a Trace,
    /// The stream being read.
    pub stream: &'a DataStream,
    /// The index, in the stream's packets, of the packet being read (the number of packets
    /// after the last one).
    pub packet: usize,
}

/// An analysis the engine can run in parallel.
///
/// The engine calls, for each chunk, [`new_state`](Analysis::new_state), then
/// [`on_event`](Analysis::on_event) / [`on_discarded`](Analysis::on_discarded) for each item
/// in stream order, then [`end_chunk`](Analysis::end_chunk); states of consecutive chunks (in
/// time order) are combined with [`merge`](Analysis::merge), and the last one goes to
/// [`finish`](Analysis::finish).
///
/// What a chunk cannot know (which thread runs on its CPU at its start, a system call whose
/// entry is in an earlier chunk) belongs in the state as unresolved head/tail fragments, which
/// `merge` resolves. The output must not depend on how the trace was cut: `merge` must be
/// associative, and reading the chunks of a stream one by one must give what reading the
/// stream whole gives.
pub trait Analysis: Sync {
    /// What a chunk accumulates. `Default` is the state of no chunk at all: what
    /// [`finish`](Analysis::finish) gets for a trace set without packets.
    type State: Send + Default;
    /// The result.
    type Output;

    /// The empty state of `chunk`: it knows nothing of earlier chunks. The default is
    /// `Self::State::default()`.
    fn new_state(&self, chunk: &Chunk) -> Self::State {
        let _ = chunk;
        Self::State::default()
    }

    /// Records one event of the chunk. Every field of the event has been decoded.
    fn on_event(&self, state: &mut Self::State, event: &EventView<'_, '_>, cx: &Context<'_, '_>);

    /// Records discarded events (the packet's `events_discarded` counter went up) or lost
    /// packets (a `packet_seq_num` gap), reported before the events of the packet that shows
    /// them. The default ignores them.
    fn on_discarded(&self, state: &mut Self::State, items: &DiscardedItems, cx: &Context<'_, '_>) {
        let _ = (state, items, cx);
    }

    /// Called after the chunk's last item (not when the chunk fails). The default does
    /// nothing.
    fn end_chunk(&self, state: &mut Self::State, cx: &Context<'_, '_>) {
        let _ = (state, cx);
    }

    /// Combines the state of a run of chunks with that of the run right after it in time
    /// order. Must be associative.
    fn merge(&self, earlier: Self::State, later: Self::State) -> Self::State;

    /// The result, from the state of all chunks.
    fn finish(&self, state: Self::State) -> Self::Output;

    /// Called once after the last merge, before the workers finish the background work (not
    /// when a chunk failed): what `finish` would hand out last can be handed out here, to run
    /// on the workers. The default does nothing.
    fn end_merges(&self, state: &mut Self::State) {
        let _ = state;
    }

    /// The work the merges of `state` hand out to run apart from their ordered chain (the
    /// per-entity shards of a replay), if any: the engine asks the first state of the chain
    /// after each merge, and its workers run that work before reading more chunks and, once
    /// every chunk is read, until none is left; `finish` runs what is still queued (none with
    /// the engine). The default: none.
    fn background(&self, state: &Self::State) -> Option<Arc<dyn Background>> {
        let _ = state;
        None
    }
}

/// Work an analysis's merges hand out to run on any worker, apart from the ordered chain of
/// merges (see [`Analysis::background`]).
pub trait Background: Send + Sync {
    /// Runs one unit of the work waiting, on the calling thread; `false` when none was waiting
    /// (some may still be running on other threads).
    fn assist(&self) -> bool;

    /// Whether work is waiting or running.
    fn busy(&self) -> bool;
}

/// How far a run is, as given to [`Engine::on_progress`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Progress {
    /// Chunks read.
    pub chunks_done: usize,
    /// Chunks in all.
    pub chunks: usize,
    /// Bytes of packets read.
    pub bytes_done: u64,
    /// Bytes of packets in all.
    pub bytes: u64,
}

/// Where a stream's time goes back from one packet to the next (see [`packets_back`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PacketsBack {
    /// The stream's file holding the first such packet.
    pub path: std::path::PathBuf,
    /// That packet's number in the stream.
    pub packet: usize,
    /// Its byte offset in its file.
    pub offset: u64,
    /// Its beginning, in ns from the clock's origin.
    pub begin_ns: Option<i64>,
    /// The end of the packet before it, in ns from the clock's origin.
    pub previous_end_ns: Option<i64>,
    /// Such packets in the stream.
    pub count: usize,
}

/// The streams of `set` whose packets go back in time (a packet beginning before the packet
/// before it ends), one entry each: the engine cuts streams at packet times and replays the
/// chunks' records in time order up to the latest chunk's beginning, so records earlier than
/// their chunk's beginning are replayed late. The output is then still the same for any number
/// of threads, but may change with the chunk size; and babeltrace2 stops at such a place.
pub fn packets_back(set: &TraceSet) -> Vec<PacketsBack> {
    let mut out = Vec::new();
    for t in &set.traces {
        for (si, s) in t.streams.iter().enumerate() {
            let mut found: Option<PacketsBack> = None;
            let mut previous_end: Option<u64> = None;
            for (i, p) in s.packets.iter().enumerate() {
                if let (Some(b), Some(e)) = (p.begin, previous_end) {
                    if b < e {
                        let f = found.get_or_insert_with(|| {
                            let c = t.cursor(si);
                            PacketsBack { path: s.packet_path(i).to_path_buf(), packet: i, offset: p.offset, begin_ns: c.cycles_to_ns(b), previous_end_ns: c.cycles_to_ns(e), count: 0 }
                        });
                        f.count += 1;
                    }
                }
                previous_end = p.end.or(previous_end);
            }
            out.extend(found);
        }
    }
    out
}

/// An event earlier than the beginning of the chunk that holds it (see [`Engine::reached_back`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReachedBack {
    /// The stream's file holding the event.
    pub path: std::path::PathBuf,
    /// The event's packet: its number in the stream.
    pub packet: usize,
    /// The event's time, in ns from the clock's origin.
    pub ns: i64,
    /// The chunk's beginning (its first packet's, as the packet list says), in ns.
    pub chunk_begin_ns: i64,
}

/// Lists the chunks of every stream of `set`, sorted by start time and numbered in that order
/// (see [`Chunk`] and [`Engine`]).
pub fn chunks(set: &TraceSet, chunk_size: u64) -> Vec<Chunk> {
    let target = chunk_size.max(1);
    let mut out = Vec::new();
    let mut set_stream = 0u32;
    for (ti, trace) in set.traces.iter().enumerate() {
        for (si, stream) in trace.streams.iter().enumerate() {
            set_stream = set_stream.wrapping_add(1);
            // Only for its clock conversion.
            let clock = Cursor::new(&trace.class, &trace.plans, stream);
            let to_ns = |c: Option<u64>| c.and_then(|c| clock.cycles_to_ns(c));
            let timed = clock.clock().is_some();
            let mut key: Option<i64> = None;
            let mut start = 0;
            let mut bytes = 0u64;
            let n = stream.packets.len();
            for (pi, p) in stream.packets.iter().enumerate() {
                bytes = bytes.saturating_add(p.size);
                let last = pi + 1 == n;
                // A timed stream is only cut before a packet with a beginning time: that time
                // sets the clock, so the cursor of the chunk starting there rebuilds partial
                // (wrapping) event timestamps from the same value as a whole-stream reading,
                // which carries the previous event's time over instead.
                let cuttable = !timed || stream.packets.get(pi + 1).is_some_and(|next| next.begin.is_some());
                if !last && (bytes < target || !cuttable) {
                    continue;
                }
                let first = &stream.packets[start];
                key = match (key, to_ns(first.begin)) {
                    (Some(k), Some(b)) => Some(k.max(b)),
                    (k, b) => k.or(b),
                };
                out.push(Chunk { index: 0, trace: ti, stream: si, set_stream: set_stream - 1, packets: start..pi + 1, bytes, begin_ns: key, end_ns: to_ns(p.end) });
                start = pi + 1;
                bytes = 0;
            }
        }
    }
    out.sort_by_key(|c| (c.begin_ns, c.trace, c.stream, c.packets.start));
    for (i, c) in out.iter_mut().enumerate() {
        c.index = i;
    }
    out
}

/// Runs analyses over a trace set in parallel.
///
/// # How a run goes
///
/// 1. [`chunks`] walks the packet index of every stream of every trace and cuts it into runs of
///    consecutive packets: a chunk closes at the first packet boundary where its size reaches
///    the target (so a target of 1 gives one packet per chunk, and `u64::MAX` one chunk per
///    stream), and only before a packet with a beginning time when the stream has a clock
///    (see [`Chunk`]). Chunks are sorted by start time (see [`Chunk::begin_ns`]) and numbered
///    in that order.
/// 2. Worker threads take chunks in that order from a shared counter, so the chunks in flight
///    are always the earliest ones left. Each chunk gets a fresh state
///    ([`Analysis::new_state`]) and a cursor over its packets only
///    ([`tracelens_ctf::Cursor::with_packets`], which starts in the state the stream had after
///    the previous packet, as the index records it); every item the cursor yields — events
///    and discarded-events / discarded-packets records — goes to the analysis.
/// 3. A finished chunk's state is put in a reorder buffer. Whichever worker finds the next
///    chunk in time order there merges it into the accumulated state
///    (`merge(accumulated, next)`), then the next, and so on; the others go back to reading.
///    Merges therefore run in time order, one at a time, overlapped with the reading of later
///    chunks (the pipelined merge of the paper's section 4.2.1). The buffer usually holds about
///    as many states as there are threads, and never many more than `2 × threads + 2`: a
///    worker starts a chunk only that close to the last one merged, and otherwise helps with
///    the analysis's background work or waits (a merge slower than the reading would
///    otherwise let the states pile up, memory growing with the trace).
/// 4. When every chunk is merged, [`Analysis::finish`] turns the state into the output.
///
/// A chunk that fails to decode stops the run: chunks after it in time order are not started,
/// chunks before it are finished (one of them may fail too), and the error of the earliest
/// failing chunk is returned. With the same chunk size, that is the same error for any number
/// of threads.
pub struct Engine<'s> {
    set: &'s TraceSet,
    chunks: Vec<Chunk>,
    threads: usize,
    bytes: u64,
    progress: Option<Box<dyn Fn(Progress) + Send + Sync + 's>>,
    /// Time spent listing the chunks.
    listing: Phase,
    /// The last run's timings.
    timings: Mutex<RunTimings>,
    /// The last run's first event earlier than its chunk (see [`Engine::reached_back`]).
    reached_back: Mutex<Option<ReachedBack>>,
}

impl<'s> Engine<'s> {
    /// An engine over `set`, its chunks listed with `options.chunk_size`.
    pub fn new(set: &'s TraceSet, options: &Options) -> Engine<'s> {
        let watch = Stopwatch::start();
        let chunks = chunks(set, options.chunk_size);
        let listing = watch.stop();
        let threads = match options.threads {
            0 => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            n => n,
        };
        let bytes = chunks.iter().map(|c| c.bytes).sum();
        Engine { set, chunks, threads, bytes, progress: None, listing, timings: Mutex::default(), reached_back: Mutex::default() }
    }

    /// Calls `f` after each chunk is read, from the worker that read it (so possibly from
    /// several threads at once).
    pub fn on_progress(mut self, f: impl Fn(Progress) + Send + Sync + 's) -> Self {
        self.progress = Some(Box::new(f));
        self
    }

    /// The chunks, in time order.
    pub fn chunks(&self) -> &[Chunk] {
        &self.chunks
    }

    /// How many worker threads a run uses (at most one per chunk).
    pub fn threads(&self) -> usize {
        self.threads.min(self.chunks.len()).max(1)
    }

    /// Total size of the packets to read, in bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Where the time of the last [`run`](Self::run) went (all zero before one).
    pub fn timings(&self) -> RunTimings {
        self.timings.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The last run's first event (in the earliest chunk that has one) earlier than the
    /// beginning of its chunk: a stream whose time goes back by more than a packet, or a
    /// packet whose times disagree with its index entry (the chunks are cut at the index's
    /// times). The analyses' replays go up to the latest chunk's beginning, so such a record
    /// comes after they went past its time: the output may then change with the chunk size
    /// (not with the number of threads: how far a replay has gone at each merge depends on the
    /// merges only).
    pub fn reached_back(&self) -> Option<ReachedBack> {
        self.reached_back.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Runs `analysis` over every chunk and returns its output, or the error of the earliest
    /// chunk (in time order) that could not be decoded.
    pub fn run<A: Analysis>(&self, analysis: &A) -> Result<A::Output> {
        let started = Stopwatch::start();
        let n = self.chunks.len();
        let shared = Shared::<A::State> {
            chunks: n,
            next: AtomicUsize::new(0),
            stop: AtomicUsize::new(usize::MAX),
            panicked: AtomicBool::new(false),
            chunks_done: AtomicUsize::new(0),
            bytes_done: AtomicU64::new(0),
            started: std::time::Instant::now(),
            read_wall_ns: AtomicU64::new(0),
            read_cpu_ns: AtomicU64::new(0),
            background_cpu_ns: AtomicU64::new(0),
            background: Mutex::new(None),
            merged: AtomicBool::new(n == 0),
            merged_upto: AtomicUsize::new(0),
            ahead: threads_ahead(self.threads()),
            slots: Mutex::new(Slots { next: 0, acc: None, ready: BTreeMap::new(), merging: false, error: None, merge: Phase::default() }),
            reached_back: Mutex::new(None),
        };
        let work = || {
            if let Err(panic) = catch_unwind(AssertUnwindSafe(|| self.work(analysis, &shared))) {
                shared.panicked.store(true, Ordering::Relaxed);
                resume_unwind(panic);
            }
        };
        let threads = self.threads();
        if threads <= 1 || n <= 1 {
            work();
        } else {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .thread_name(|i| format!("tracelens-worker-{i}"))
                .build()
                .map_err(|e| Error::ThreadPool { threads, message: e.to_string() })?;
            pool.scope(|s| {
                for _ in 0..threads {
                    s.spawn(|_| work());
                }
            });
        }
        *self.reached_back.lock().unwrap_or_else(PoisonError::into_inner) = shared.reached_back.lock().unwrap_or_else(PoisonError::into_inner).take().map(|(_, r)| r);
        let background_cpu_ns = shared.background_cpu_ns.load(Ordering::Relaxed);
        let parallel_cpu_ns = shared.read_cpu_ns.load(Ordering::Relaxed) + background_cpu_ns;
        let slots = shared.slots.into_inner().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, e)) = slots.error {
            return Err(e.into());
        }
        debug_assert_eq!(slots.next, n, "every chunk is merged");
        let watch = Stopwatch::start();
        let out = analysis.finish(slots.acc.unwrap_or_default());
        let finish = watch.stop();
        *self.timings.lock().unwrap_or_else(PoisonError::into_inner) = RunTimings {
            chunks: n,
            threads,
            parallel_cpu_ns,
            background_cpu_ns,
            read_wall_ns: shared.read_wall_ns.load(Ordering::Relaxed),
            wall_ns: started.stop().wall_ns,
            serial: vec![("chunks", self.listing), ("merge", slots.merge), ("finish", finish)],
        };
        Ok(out)
    }

    /// One worker: runs the analysis's background work first, then takes the next chunk in
    /// time order, until no chunk is left; then helps with the background work until every
    /// chunk is merged and none is left. It leaves at once when another worker panicked.
    fn work<A: Analysis>(&self, analysis: &A, shared: &Shared<A::State>) {
        loop {
            shared.assist();
            if !shared.wait_for_merges() {
                return;
            }
            let i = shared.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.chunks.len() || i > shared.stop.load(Ordering::Relaxed) {
                break;
            }
            let chunk = &self.chunks[i];
            let cpu = crate::timings::thread_cpu_ns();
            let result = self.read(analysis, chunk).map(|(state, back)| {
                if let Some(back) = back {
                    let mut first = shared.reached_back.lock().unwrap_or_else(PoisonError::into_inner);
                    if first.as_ref().is_none_or(|(j, _)| i < *j) {
                        *first = Some((i, back));
                    }
                }
                state
            });
            shared.read_cpu_ns.fetch_add(crate::timings::thread_cpu_ns().saturating_sub(cpu), Ordering::Relaxed);
            shared.complete(analysis, i, result);
            let done = shared.chunks_done.fetch_add(1, Ordering::Relaxed) + 1;
            if done == self.chunks.len() {
                shared.read_wall_ns.store(u64::try_from(shared.started.elapsed().as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
            }
            let bytes_done = shared.bytes_done.fetch_add(chunk.bytes, Ordering::Relaxed) + chunk.bytes;
            if let Some(f) = &self.progress {
                f(Progress { chunks_done: done, chunks: self.chunks.len(), bytes_done, bytes: self.bytes });
            }
        }
        shared.help_until(|| shared.merged.load(Ordering::Acquire) && !shared.handle().is_some_and(|b| b.busy()));
    }

    /// Reads one chunk into a fresh state; with its first event earlier than the chunk's
    /// beginning, if any.
    fn read<A: Analysis>(&self, analysis: &A, chunk: &Chunk) -> Result<(A::State, Option<ReachedBack>), tracelens_ctf::Error> {
        let (trace, stream, mut cursor) = self.cursor(chunk);
        let mut state = analysis.new_state(chunk);
        // The chunk's earliest event time (a minimum, cheaper than a test per event).
        let mut earliest = i64::MAX;
        loop {
            // Events of the common kinds in a tight loop, then one item of any kind.
            cursor.burst(|ev, packet| {
                earliest = earliest.min(ev.ns.unwrap_or(i64::MAX));
                analysis.on_event(&mut state, ev, &Context { chunk, trace, stream, packet });
            });
            let Some(item) = cursor.advance()? else { break };
            let cx = Context { chunk, trace, stream, packet: cursor.packet_index() };
            match item {
                Item::Event => {
                    if let Some(ev) = cursor.event() {
                        earliest = earliest.min(ev.ns.unwrap_or(i64::MAX));
                        analysis.on_event(&mut state, &ev, &cx);
                    }
                }
                Item::DiscardedEvents { .. } | Item::DiscardedPackets { .. } => {
                    if let Some(items) = DiscardedItems::of(&cursor, item) {
                        analysis.on_discarded(&mut state, &items, &cx);
                    }
                }
            }
        }
        analysis.end_chunk(&mut state, &Context { chunk, trace, stream, packet: cursor.packet_index() });
        let back = match chunk.begin_ns {
            Some(begin) if earliest < begin => self.first_before(chunk, begin),
            _ => None,
        };
        Ok((state, back))
    }

    /// The first event of `chunk` earlier than `begin` (read again: only for a chunk whose
    /// earliest event is).
    #[cold]
    fn first_before(&self, chunk: &Chunk, begin: i64) -> Option<ReachedBack> {
        let (_, stream, mut cursor) = self.cursor(chunk);
        while let Ok(Some(item)) = cursor.advance() {
            let Some(ns) = cursor.event().filter(|_| item == Item::Event).and_then(|ev| ev.ns) else { continue };
            if ns < begin {
                let packet = cursor.packet_index();
                return Some(ReachedBack { path: stream.packet_path(packet).to_path_buf(), packet, ns, chunk_begin_ns: begin });
            }
        }
        None
    }

    /// `chunk`'s trace and stream, and a cursor over its packets.
    fn cursor(&self, chunk: &Chunk) -> (&'s Trace, &'s DataStream, Cursor<'s>) {
        let trace = &self.set.traces[chunk.trace];
        let stream = &trace.streams[chunk.stream];
        (trace, stream, Cursor::with_packets(&trace.class, &trace.plans, stream, chunk.packets.clone()))
    }
}

/// How a worker with nothing to do waits for the last merges and background work (or, held
/// back by [`Shared::wait_for_merges`], for the merges to catch up): a few yields, then sleeps
/// that double up to a millisecond, so that the threads left without a chunk do not spin on
/// the cores (and on the scheduler) the workers still busy need. The cost is at most a
/// millisecond of latency per wake-up.
#[derive(Default)]
struct Idle {
    rounds: u32,
}

impl Idle {
    fn wait(&mut self) {
        const YIELDS: u32 = 16;
        if self.rounds < YIELDS {
            std::thread::yield_now();
        } else {
            let shift = (self.rounds - YIELDS).min(6);
            std::thread::sleep(std::time::Duration::from_micros(16 << shift));
        }
        self.rounds = self.rounds.saturating_add(1);
    }
}

/// What the workers of one run share.
struct Shared<S> {
    /// Chunks in all.
    chunks: usize,
    /// The next chunk to start.
    next: AtomicUsize,
    /// Chunks after this one are not started (the earliest failed chunk so far).
    stop: AtomicUsize,
    /// A worker panicked: the others leave at once rather than wait for work that the panic
    /// left unfinished (the panic then reaches the caller).
    panicked: AtomicBool,
    /// The earliest chunk with an event earlier than its beginning, and that event.
    reached_back: Mutex<Option<(usize, ReachedBack)>>,
    chunks_done: AtomicUsize,
    bytes_done: AtomicU64,
    /// When the run started, and the wall time from then until the last chunk was read.
    started: std::time::Instant,
    read_wall_ns: AtomicU64,
    /// CPU time of the workers in [`Engine::read`].
    read_cpu_ns: AtomicU64,
    /// CPU time of the workers in [`Background::assist`].
    background_cpu_ns: AtomicU64,
    /// The analysis's background work, once a merge has handed it out.
    background: Mutex<Option<Arc<dyn Background>>>,
    /// Set when every chunk is merged (or the run failed).
    merged: AtomicBool,
    /// Chunks merged so far (`Slots::next` once their merges are done).
    merged_upto: AtomicUsize,
    /// How many chunks may be started past the merged ones ([`threads_ahead`]).
    ahead: usize,
    slots: Mutex<Slots<S>>,
}

/// The reorder buffer and the merged state.
struct Slots<S> {
    /// The next chunk to merge.
    next: usize,
    /// The merge of chunks `0..next` (`None` before the first, and while a worker merges).
    acc: Option<S>,
    /// States of finished chunks after `next`.
    ready: BTreeMap<usize, S>,
    /// Whether a worker is merging (outside the lock).
    merging: bool,
    /// The earliest failed chunk and its error.
    error: Option<(usize, tracelens_ctf::Error)>,
    /// Time spent merging.
    merge: Phase,
}

impl<S> Shared<S> {
    fn lock(&self) -> MutexGuard<'_, Slots<S>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The background work, once handed out.
    fn handle(&self) -> Option<Arc<dyn Background>> {
        self.background.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Runs background work while some is waiting; whether there was any.
    fn assist(&self) -> bool {
        let Some(b) = self.handle() else { return false };
        let cpu = crate::timings::thread_cpu_ns();
        let mut any = false;
        while b.assist() {
            any = true;
        }
        if any {
            self.background_cpu_ns.fetch_add(crate::timings::thread_cpu_ns().saturating_sub(cpu), Ordering::Relaxed);
        }
        any
    }

    /// Waits, helping with the background work, while the next chunk to start lies `ahead`
    /// chunks or more past the merges (or until the run failed); false when a worker panicked.
    ///
    /// Without it, a merge slower than the reading (a serial merge on many cores, or one that
    /// waits for background work) let the finished states pile up in the reorder buffer: `io
    /// -j 16` held 2.0 GB at its peak on a 4.33 GB trace, growing with the trace.
    fn wait_for_merges(&self) -> bool {
        self.help_until(|| self.next.load(Ordering::Relaxed) < self.merged_upto.load(Ordering::Acquire).saturating_add(self.ahead) || self.merged.load(Ordering::Acquire))
    }

    /// Runs background work while some is waiting, else waits ([`Idle`]), until `done()`;
    /// false when a worker panicked (the others leave rather than wait for its work).
    fn help_until(&self, done: impl Fn() -> bool) -> bool {
        let mut idle = Idle::default();
        loop {
            if self.panicked.load(Ordering::Relaxed) {
                return false;
            }
            if done() {
                return true;
            }
            if self.assist() {
                idle = Idle::default();
            } else {
                idle.wait();
            }
        }
    }

    /// Files the result of chunk `i`, then merges whatever is ready in time order unless
    /// another worker is already doing it.
    fn complete<A: Analysis<State = S>>(&self, analysis: &A, i: usize, result: Result<S, tracelens_ctf::Error>) {
        let mut slots = self.lock();
        match result {
            Ok(state) => {
                slots.ready.insert(i, state);
            }
            Err(e) => {
                self.stop.fetch_min(i, Ordering::Relaxed);
                self.merged.store(true, Ordering::Release);
                if !matches!(&slots.error, Some((j, _)) if *j < i) {
                    slots.error = Some((i, e));
                }
            }
        }
        if slots.merging {
            return;
        }
        slots.merging = true;
        loop {
            let mut run = Vec::new();
            loop {
                let next = slots.next;
                match slots.ready.remove(&next) {
                    Some(s) => {
                        run.push(s);
                        slots.next += 1;
                    }
                    None => break,
                }
            }
            if run.is_empty() {
                slots.merging = false;
                return;
            }
            let last = slots.next == self.chunks;
            let mut acc = slots.acc.take();
            drop(slots);
            let watch = Stopwatch::start();
            for s in run {
                acc = Some(match acc {
                    None => s,
                    Some(earlier) => analysis.merge(earlier, s),
                });
                self.merged_upto.fetch_add(1, Ordering::Release);
            }
            if last && self.stop.load(Ordering::Relaxed) == usize::MAX {
                if let Some(acc) = &mut acc {
                    analysis.end_merges(acc);
                }
            }
            let spent = watch.stop();
            if let Some(acc) = &acc {
                // Asked after every merge: an analysis made of several (a pair) may hand out
                // more work later than its first merge.
                if let Some(b) = analysis.background(acc) {
                    *self.background.lock().unwrap_or_else(PoisonError::into_inner) = Some(b);
                }
            }
            slots = self.lock();
            slots.acc = acc;
            slots.merge.add(spent);
            if last {
                self.merged.store(true, Ordering::Release);
            }
        }
    }
}

/// How many chunks past the merged ones the workers may start, with `threads` workers: each
/// worker's chunk and one more finished each, waiting for the merge (the reorder buffer usually
/// holds about as many states as there are threads), and two for a chunk much longer than
/// those after it.
fn threads_ahead(threads: usize) -> usize {
    threads.saturating_mul(2).saturating_add(2)
}

/// Room to reserve for the records an analysis keeps of a chunk (one per 64 bytes of packets,
/// more than the kernel analyses keep of LTTng kernel traces): a guess that spares most
/// reallocations as the chunk is read; pages of the room not used are never touched.
pub(crate) fn records_hint(chunk: &Chunk) -> usize {
    usize::try_from(chunk.bytes / 64).unwrap_or(0).min(1 << 22)
}

/// Spare buffers for the large per-chunk vectors of an analysis, shared by the workers: a
/// chunk's buffer, once its merge has used it up, serves a later chunk instead of going back to
/// the allocator (which hands the pages back to the system and takes them again for the next
/// chunk, a page fault at a time).
pub(crate) struct Pool<T> {
    spare: Mutex<Vec<Vec<T>>>,
}

/// Spare buffers kept at most.
const POOL_SIZE: usize = 8;

impl<T> Pool<T> {
    /// An empty pool.
    pub(crate) fn new() -> Pool<T> {
        Pool { spare: Mutex::new(Vec::new()) }
    }

    /// An empty buffer with room for `n` items, from an earlier chunk when one is spare.
    pub(crate) fn take(&self, n: usize) -> Vec<T> {
        let mut v = self.spare.lock().unwrap_or_else(PoisonError::into_inner).pop().unwrap_or_default();
        v.reserve(n);
        v
    }

    /// Keeps `v`'s room for a later [`take`](Self::take).
    pub(crate) fn give(&self, mut v: Vec<T>) {
        v.clear();
        if v.capacity() == 0 {
            return;
        }
        let mut spare = self.spare.lock().unwrap_or_else(PoisonError::into_inner);
        if spare.len() < POOL_SIZE {
            spare.push(v);
        }
    }
}

impl<T> Default for Pool<T> {
    fn default() -> Self {
        Pool::new()
    }
}

impl<T> Clone for Pool<T> {
    /// A new, empty pool.
    fn clone(&self) -> Self {
        Pool::new()
    }
}

impl<T> std::fmt::Debug for Pool<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pool")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts the calls of its `assist`: a worker calls it once before each chunk it starts,
    /// and again and again while it waits.
    #[derive(Default)]
    struct Asks(AtomicUsize);

    impl Background for Asks {
        fn assist(&self) -> bool {
            self.0.fetch_add(1, Ordering::SeqCst);
            false
        }

        fn busy(&self) -> bool {
            false
        }
    }

    /// Counts its events and the states alive (made and not yet merged into an earlier one).
    /// Its merges wait until every chunk is read or a worker waits (asks for background work
    /// more often than once per chunk started): without the engine holding the workers back,
    /// every chunk is read before the second merge.
    struct SlowMerge {
        chunks: usize,
        threads: usize,
        asks: Arc<Asks>,
        given: AtomicBool,
        read: AtomicUsize,
        made: AtomicUsize,
        live: AtomicUsize,
        most: AtomicUsize,
    }

    impl Analysis for SlowMerge {
        type State = u64;
        type Output = u64;

        fn new_state(&self, _: &Chunk) -> u64 {
            self.made.fetch_add(1, Ordering::SeqCst);
            let live = self.live.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(live, Ordering::SeqCst);
            0
        }

        fn on_event(&self, st: &mut u64, _: &EventView<'_, '_>, _: &Context<'_, '_>) {
            *st += 1;
        }

        fn end_chunk(&self, _: &mut u64, _: &Context<'_, '_>) {
            self.read.fetch_add(1, Ordering::SeqCst);
        }

        fn merge(&self, a: u64, b: u64) -> u64 {
            // (The engine asks for the background work after a run of merges: a merge in the
            // first run cannot wait for the workers to ask for it.)
            while self.given.load(Ordering::SeqCst) && self.read.load(Ordering::SeqCst) < self.chunks && self.asks.0.load(Ordering::SeqCst) <= self.made.load(Ordering::SeqCst) + self.threads {
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
            self.live.fetch_sub(1, Ordering::SeqCst);
            a + b
        }

        fn finish(&self, st: u64) -> u64 {
            st
        }

        fn background(&self, _: &u64) -> Option<Arc<dyn Background>> {
            self.given.store(true, Ordering::SeqCst);
            Some(self.asks.clone())
        }
    }

    #[test]
    fn workers_wait_for_a_slow_merge_instead_of_piling_up_states() {
        let (dir, set) = crate::testing::synth("ahead", 4);
        let all = Engine::new(&set, &Options { threads: 1, chunk_size: u64::MAX }).run(&crate::Stats::new(&set)).expect("stats").events;
        let threads = 3;
        let engine = Engine::new(&set, &Options { threads, chunk_size: 1 });
        let ahead = threads_ahead(threads);
        assert!(engine.chunks.len() > 4 * ahead, "{} chunks", engine.chunks.len());
        let slow = SlowMerge { chunks: engine.chunks.len(), threads, asks: Arc::default(), given: AtomicBool::new(false), read: AtomicUsize::new(0), made: AtomicUsize::new(0), live: AtomicUsize::new(0), most: AtomicUsize::new(0) };
        assert_eq!(engine.run(&slow).expect("run"), all);
        // Each worker may start one chunk past the bound between its check and its start.
        let most = slow.most.load(Ordering::SeqCst);
        assert!(most <= ahead + threads, "{most} states alive at once, {} chunks, at most {ahead} ahead of the merges", slow.chunks);
        drop(engine);
        drop(set);
        let _ = std::fs::remove_dir_all(dir);
    }
}
