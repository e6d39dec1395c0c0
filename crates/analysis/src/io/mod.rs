//! `io`: bytes read and written per process and per file, and I/O system call latencies
//! (statistics and the longest calls) — lttng-iousagetop, lttng-iolatencystats and
//! lttng-iolatencytop — computed in parallel with lttng-analyses' rules.
//!
//! # What it counts (lttng-analyses' model)
//!
//! I/O system calls are `open`/`openat`, `socket`, `dup`/`dup2`/`dup3`/`fcntl(F_DUPFD)` (they
//! open a descriptor), `close`, reads (`read`, `readv`, `pread64`, `recvmsg`, `recvfrom`, ...),
//! writes (`write`, `writev`, `pwrite64`, `sendmsg`, `sendto`, ...) and syncs (`sync`, `fsync`,
//! `fdatasync`, `sync_file_range`). Each process (thread group) has a descriptor table:
//! descriptors come from the state dump, from opens (a file opened by `open`/`openat` is a
//! *disk* file, a socket a *network* one, a duplicate takes its original's name and kind) and,
//! for a descriptor never seen opened, from the first call that uses it (an *unknown* file);
//! `close`, `dup2` over an open descriptor and `exec` (close-on-exec descriptors) remove them;
//! `fork` copies the table. A read or write counts its returned size for the calling thread
//! (as disk, network or unknown I/O by the kind of its descriptor) and for the file. Latency
//! statistics and the longest calls are per category: open, read, write, sync.
//!
//! # Chunks
//!
//! A descriptor table is shared by threads running on any CPU, so its state at a time depends
//! on events of every stream. Each chunk pairs the entries and exits of system calls of its
//! threads (the cross-chunk tracker of `tracker.rs`, which resolves calls that span chunks and
//! CPUs) and turns what the I/O model needs — completed I/O calls, `dup` and `connect`
//! entries, switches (thread names), forks, execs, state dump records — into time-ordered
//! *facts*. The calls that span a chunk's pieces (a thread that blocks in a read is switched
//! out before its exit) are paired by the tracker's shards (`shards.rs`) on the engine's
//! workers, beside the reading; each merge hands them the new pieces as a *batch*.
//!
//! The model itself is sharded by process (`spread.rs`): threads that a fork or a state dump links
//! form a group whose tables and statistics live in one of the model's shards, which runs the
//! group's facts in key order on the engine's workers. The merge (serial) does little per chunk: it
//! gives the links (forks, state dump records: few) to the router, and hands on the facts older
//! than the frontier of the batch handed out two merges before (every older fact is known then;
//! the merge helps pair that batch if the workers have not yet: a frontier that followed the
//! workers' progress made the output of traces with events before their chunk vary from run to
//! run). The facts are grouped by shard where they are made, in parallel — a chunk's by the
//! routes known when the chunk
//! started, a batch's pairs by the routes known when it was handed out — and the merge only checks
//! that no link changed a route in between (else it routes them again itself). A chunk's groups go
//! whole, once the frontier has passed its last fact; the shards run only below the first fact of
//! the chunks still held, and the router's steps wait for them too, so each shard still meets its
//! facts and steps in key order. After the last merge ([`Analysis::end_merges`]) the last facts,
//! and the making of each thread's per-file rows, go to the shards too; `finish` combines what the
//! shards hold. The output is the serial model's for any number of threads and any cut:
//!
//! * facts are plain data read in place; each shard merges its runs of facts (sorted by event
//!   key) with a loser tree;
//! * file names are numbered by the chunks themselves, in parallel (`FileNames`, a table
//!   shared by the workers, with a per-chunk cache), so that facts carry numbers;
//! * thread states are in a slab indexed by thread id; descriptor tables and per-descriptor
//!   statistics are vectors indexed by descriptor number (`FdMap`), maps only for sparse
//!   numbers; statistics are plain numbers, ordered by the key of the fact that created them;
//! * chunk buffers (facts, the tracker's pieces) are reused;
//! * the per-file tables are added up by name number, paths formatted once per row.
//!
//! Memory: the model runs a chunk's facts once the merges have passed the whole chunk, so it keeps
//! the facts of about two chunks per stream — those around the merges' frontier — plus those of the
//! chunks being read: it grows with the streams times the chunk size (the facts take about as many
//! bytes as the events they come from), not with the trace. `tracelens io` therefore reads with
//! chunks of `Options::chunk_size_per_stream` by default, which keeps that near
//! `Options::KERNEL_CHUNK_SIZE` in all (BENCHMARKS.md, "io's memory").

use std::cmp::Reverse;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tracelens_ctf::{EventView, Field};
use tracelens_trace::TraceSet;

use crate::call_names::CallNames;
use crate::engine::{records_hint, Analysis, Background, Chunk, Context, Pool};
use crate::filter::Filter;
use crate::id_map::IdMap;
use crate::kernel::{Comm, Extra, KEvent, KernelMap, Kind, Kinds, What};
use crate::order::{EventCounter, EventKey, StreamCpu};
use crate::runs::sort_run;
use crate::durations::Durations;
use crate::shards::{Limit, Mail, Parts, Run as PieceRun, Shard, SHARDS};
use crate::span::Span;
use crate::tracker::{Piece, Settle, Tracker};

mod facts;
mod fds;
mod model;
mod names;
mod net;
mod report;
mod spread;

use facts::{Call, Fact, FactSink, Fork, IoEntry, IoExit, IoItem, Item, Link, AF_INET, O_CLOEXEC};
use model::{Stats, TopCall};
use names::{name_hash, FileNames, NameCache};
use net::{NetConf, NetState, NET_KINDS};
use report::file_rows;
use spread::{owner, Boards, Control, ModelConf, ModelWork, Router, Snapshot};

pub use facts::FdType;
pub use model::CATEGORIES;
pub use net::{InterfaceNet, InterfaceTraffic, NetUsage, ThreadNet, Traffic};
pub use report::{FileIo, IoReport, ProcessIo, Rw, SlowCall};

/// The `io` analysis. Build it with [`Io::new`].
#[derive(Debug)]
pub struct Io {
    map: KernelMap,
    names: CallNames,
    /// Per call name id: what [`Io::entry_call`] makes of its entries.
    io_calls: Vec<IoCall>,
    filter: Filter,
    top: usize,
    /// Buffers of chunks' facts, reused.
    pool: Arc<Pool<(EventKey, Fact)>>,
    /// The file names met.
    paths: FileNames,
    /// Buffers of the tracker's pieces, reused.
    pieces: Arc<Pool<Piece<IoEntry, IoExit>>>,
    /// What the network part needs to know of the traces.
    net: NetConf,
    /// What the model's shards need.
    conf: Arc<ModelConf>,
    /// The routes of the model's facts as the last merge left them.
    routes: Mutex<Arc<Snapshot>>,
}

/// The system calls whose entries [`Io::entry_call`] reads, by what it reads; the others are
/// [`Call::Other`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IoCall {
    Other,
    Open,
    Socket,
    Dup,
    Dup2,
    Dup3,
    Fcntl,
    Close,
    Read,
    Write,
    Sync,
    SyncFd,
    Connect,
}

impl IoCall {
    /// What the call `name` is.
    fn of(name: &str) -> IoCall {
        match name {
            "open" | "openat" => IoCall::Open,
            "socket" => IoCall::Socket,
            "dup" => IoCall::Dup,
            "dup2" => IoCall::Dup2,
            "dup3" => IoCall::Dup3,
            "fcntl" => IoCall::Fcntl,
            "close" => IoCall::Close,
            "read" | "recvmsg" | "recvfrom" | "readv" | "pread" | "pread64" | "preadv" => IoCall::Read,
            "write" | "sendmsg" | "sendto" | "writev" | "pwrite" | "pwrite64" | "pwritev" => IoCall::Write,
            "sync" => IoCall::Sync,
            "fsync" | "fdatasync" | "sync_file_range" => IoCall::SyncFd,
            "connect" => IoCall::Connect,
            _ => IoCall::Other,
        }
    }
}

/// How many of the longest calls per category `io` lists by default.
pub const DEFAULT_TOP: usize = 10;

impl Io {
    /// The analysis for `set`: what `filter` selects (calls that return within its time range,
    /// of its threads — by id and by name at the time of the call — on its CPUs), with the
    /// `top` longest calls of each category.
    pub fn new(set: &TraceSet, filter: Filter, top: usize) -> Io {
        let names = CallNames::new(set);
        let io_calls = (0..names.len()).map(|id| IoCall::of(names.name(id as u16))).collect();
        Io { map: KernelMap::new(set), names, io_calls, filter: filter.clone(), top, pool: Arc::default(), paths: FileNames::default(), pieces: Arc::default(), net: NetConf::new(set), conf: Arc::new(ModelConf { filter: filter.clone(), top }), routes: Mutex::default() }
    }

    /// What the call `name` (numbered `id`) is.
    #[inline]
    fn io_call(&self, id: u16, name: &str) -> IoCall {
        match self.io_calls.get(id as usize) {
            // 0 is also what a name not numbered gets.
            Some(&c) if id != 0 => c,
            _ => IoCall::of(name),
        }
    }

    fn entry_call(&self, k: &KEvent<'_>, cx: &Context<'_, '_>, what: IoCall, names: &mut NameCache) -> (Call, Option<Item>) {
        let field = |f: Extra| self.map.extra(k.event, cx, f);
        let int = |f: Extra| field(f).and_then(|v| v.as_i64());
        let fd = int(Extra::Fd);
        let call = match what {
            IoCall::Other => Call::Other,
            IoCall::Open => match field(Extra::Filename).and_then(Field::as_bytes) {
                Some(b) => Call::Open { filename: names.id(&self.paths, b), cloexec: int(Extra::Flags).unwrap_or(0) & O_CLOEXEC != 0 },
                None => Call::Other,
            },
            IoCall::Socket => Call::Socket,
            IoCall::Dup => {
                return match int(Extra::Fildes) {
                    Some(oldfd) => (Call::Dup, Some(Item::Dup { dup3: false, oldfd, newfd: None, cloexec: false })),
                    None => (Call::Other, None),
                }
            }
            IoCall::Dup2 | IoCall::Dup3 => {
                return match (int(Extra::Oldfd), int(Extra::Newfd)) {
                    (Some(oldfd), Some(newfd)) => {
                        let cloexec = int(Extra::Flags).unwrap_or(0) & O_CLOEXEC != 0;
                        (Call::Dup, Some(Item::Dup { dup3: what == IoCall::Dup3, oldfd, newfd: Some(newfd), cloexec }))
                    }
                    _ => (Call::Other, None),
                }
            }
            IoCall::Fcntl => {
                // Only F_DUPFD (0) opens a descriptor.
                return match (int(Extra::Cmd), fd) {
                    (Some(0), Some(oldfd)) => (Call::Dup, Some(Item::Dup { dup3: false, oldfd, newfd: None, cloexec: false })),
                    _ => (Call::Other, None),
                };
            }
            IoCall::Close => fd.map_or(Call::Other, |fd| Call::Close { fd }),
            IoCall::Read => fd.map_or(Call::Other, |fd| Call::Read { fd }),
            IoCall::Write => fd.map_or(Call::Other, |fd| Call::Write { fd }),
            IoCall::Sync => Call::Sync { fd: None },
            IoCall::SyncFd => fd.map_or(Call::Other, |fd| Call::Sync { fd: Some(fd) }),
            IoCall::Connect => {
                let item = match (int(Extra::Family), fd) {
                    (Some(AF_INET), Some(fd)) => {
                        let addr = field(Extra::V4addr);
                        let ip = addr.and_then(|a| a.as_u64()).map(|v| std::net::Ipv4Addr::from(v as u32).to_string()).or_else(|| {
                            // lttng-modules 2.6+: a sequence of 4 bytes.
                            let fields = k.payload();
                            let at = fields.list.iter().position(|f| f.name() == "v4addr")?;
                            let bytes: Vec<String> = fields.children(at).filter_map(|(_, f)| f.as_u64()).map(|b| b.to_string()).collect();
                            (bytes.len() == 4).then(|| bytes.join("."))
                        });
                        ip.map(|ip| {
                            let name = format!("{ip}:{}", int(Extra::Dport).unwrap_or(0));
                            Item::Connect { fd, name: self.paths.id(name.as_bytes(), name_hash(name.as_bytes())) }
                        })
                    }
                    _ => None,
                };
                return (Call::Other, item);
            }
        };
        (call, None)
    }
}

/// What `io` accumulates for a run of chunks.
#[derive(Debug, Default)]
pub struct IoState {
    live: bool,
    tracker: Tracker<IoEntry, IoExit, IoItem>,
    /// The shards pairing the calls that span pieces and those of the model (the first
    /// chunk's state).
    boards: Option<Arc<Boards>>,
    /// The pairs the shards are making, in the order handed out, each with the frontier below
    /// which the model may run once it and those before it are done.
    batches: VecDeque<(Arc<Batch>, Option<i64>)>,
    counter: EventCounter,
    /// This chunk's facts, in stream order.
    facts: Vec<(EventKey, Fact)>,
    /// Facts not routed yet, as runs sorted by key.
    runs: Vec<Run>,
    /// Links (forks, state dump records of processes) not routed yet, in stream order.
    links: Vec<(EventKey, Link)>,
    /// Which shard of the model runs each thread's facts.
    router: Router,
    /// The shards of the facts being routed.
    ids: Vec<u8>,
    /// Whether the last facts are handed on ([`IoState::end`]).
    ended: bool,
    /// The routes this chunk's facts go by.
    snapshot: Option<Arc<Snapshot>>,
    /// Chunks' facts routed by their chunk, not handed to the model's shards yet.
    routed: Vec<Routed>,
    /// The router's steps for each shard not handed on yet (their keys are past the frontier
    /// the shards were last given), in key order.
    controls: Vec<Vec<(EventKey, Control)>>,
    /// For each shard given facts past its frontier, the time of the last: the shard is given
    /// each new frontier until that time is below it.
    ahead: Vec<Option<i64>>,
    /// The batches' pairs routed by the pairing's shards, not handed on yet.
    paired: Vec<Paired>,
    cache: IdMap<(usize, usize), u16>,
    /// Numbers of the file names this chunk met.
    names: NameCache,
    span: Span,
    /// Network usage.
    net: NetState,
}

/// A chunk's facts, grouped by the shard its snapshot of the routes sent them to.
#[derive(Debug)]
struct Routed {
    parts: Arc<Parts<(EventKey, Fact)>>,
    /// Each shard's range of `parts`, handed to it whole (see [`IoState::route`]).
    groups: Vec<(usize, std::ops::Range<usize>)>,
    /// The snapshot's version and last key.
    version: usize,
    last: Option<EventKey>,
    /// The first and last keys.
    min: EventKey,
    max: EventKey,
}

/// A batch's pairs before its frontier, by the shard the batch's snapshot of the routes sent
/// them to (each group unsorted).
#[derive(Debug)]
struct Paired {
    routed: Vec<Vec<(EventKey, Fact)>>,
    version: usize,
    last: Option<EventKey>,
    min: EventKey,
    max: EventKey,
}

/// The calls the shards pair for one hand-out: those before the batch's frontier grouped by
/// the shard of the model the snapshot of the routes sends them to (the merge checks them as a
/// chunk's), the others apart.
#[derive(Debug)]
struct Batch {
    facts: Mutex<BatchFacts>,
    /// The routes it goes by.
    snapshot: Arc<Snapshot>,
    frontier: Option<i64>,
    /// Works not done yet.
    left: AtomicUsize,
}

#[derive(Debug, Default)]
struct BatchFacts {
    /// By shard of the model (unsorted).
    routed: Vec<Vec<(EventKey, Fact)>>,
    /// The first and last keys of those.
    keys: Option<(EventKey, EventKey)>,
    /// At or after the frontier.
    rest: Vec<(EventKey, Fact)>,
}

impl Batch {
    fn done(&self) -> bool {
        self.left.load(Ordering::Acquire) == 0
    }

    fn take(&self) -> BatchFacts {
        std::mem::take(&mut *self.facts.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// One shard of the pairing: its threads' pieces, the entries waiting for their exits.
#[derive(Debug, Default)]
pub(crate) struct IoShard {
    settle: Settle<IoEntry, IoExit>,
    /// The pairs of one work, before they go to its batch.
    out: Vec<(EventKey, Fact)>,
}

/// Work for an [`IoShard`].
pub(crate) struct IoWork {
    runs: Vec<PieceRun<Piece<IoEntry, IoExit>>>,
    limit: Limit,
    batch: Arc<Batch>,
}

impl Shard for IoShard {
    type Work = IoWork;
    type Parcel = ();

    fn apply(&mut self, work: &mut IoWork, _mail: &Mail<'_, ()>) -> Result<(), u64> {
        self.settle.settle(std::mem::take(&mut work.runs), work.limit, &mut FactSink { out: &mut self.out });
        if !self.out.is_empty() {
            let b = &work.batch;
            let mut facts = b.facts.lock().unwrap_or_else(PoisonError::into_inner);
            let facts = &mut *facts;
            if facts.routed.is_empty() {
                facts.routed = (0..SHARDS).map(|_| Vec::new()).collect();
            }
            for &(k, f) in &self.out {
                if k.is_before(b.frontier) {
                    facts.routed[b.snapshot.route(owner(&f))].push((k, f));
                    facts.keys = Some(facts.keys.map_or((k, k), |(lo, hi)| (lo.min(k), hi.max(k))));
                } else {
                    facts.rest.push((k, f));
                }
            }
            self.out.clear();
        }
        work.batch.left.fetch_sub(1, Ordering::AcqRel);
        Ok(())
    }
}

/// Facts (a chunk's, those a merge resolved, sorted by key; or the pairs of a batch, not
/// sorted), and how many of them are routed (with unsorted facts, those put first).
#[derive(Debug, Default)]
struct Run {
    facts: Vec<(EventKey, Fact)>,
    done: usize,
    sorted: bool,
}

/// How many of the latest batches of pairs a merge leaves to the workers; it waits for (and
/// helps with) the older ones. With one, the merge thread paired a third of a batch itself at
/// `-j 2` (`io`'s serial time 25 → 62 ms on a 218 MB trace); with two, 30 ms, for 10 MB more
/// (the facts of one more merge held).
const BATCHES_AHEAD: usize = 2;

impl IoState {
    /// Hands the facts older than `frontier` (all with `None`) to the model's shards: the links
    /// to the router, each other fact to the shard of its thread as of its key (each run's
    /// facts stay in key order within a shard). The buffers of the runs used up go to `pool`.
    ///
    /// A chunk routed by itself goes whole, once the frontier is past its last fact (its
    /// routes are then known to hold or not); until then the shards run only below its first
    /// fact. Handing such chunks out in slices, one per merge, cost a search per shard and
    /// chunk at every merge: with many streams, most of io's serial time.
    fn route(&mut self, frontier: Option<i64>, io: &Io, rows: bool) {
        let (conf, pool) = (&io.conf, &io.pool);
        let boards = self.boards.get_or_insert_with(Arc::default).clone();
        let mut controls = std::mem::take(&mut self.controls);
        controls.resize_with(SHARDS, Vec::new);
        self.ahead.resize(SHARDS, None);
        if !self.links.is_empty() {
            sort_run(&mut self.links, |(k, _)| *k);
            let n = self.links.partition_point(|(k, _)| k.is_before(frontier));
            let version = self.router.version();
            for (k, f) in self.links.drain(..n) {
                self.router.add_link(k, &f, &mut controls);
            }
            if self.router.version() != version {
                *io.routes.lock().unwrap_or_else(PoisonError::into_inner) = Arc::new(self.router.snapshot());
            }
        }
        type Runs = Vec<PieceRun<(EventKey, Fact)>>;
        let mut runs: Vec<(Runs, Runs)> = (0..SHARDS).map(|_| (Vec::new(), Vec::new())).collect();
        // The chunks' own routing where it holds, else the facts go by the router below.
        let (router, ahead) = (&self.router, &mut self.ahead);
        let mut again = Vec::new();
        let mut held: Option<i64> = None;
        self.routed.retain(|r| {
            if !r.max.is_before(frontier) {
                held = Some(held.map_or(r.min.ns, |h| h.min(r.min.ns)));
                return true;
            }
            if router.still_valid(r.version, r.last, r.min, r.max) {
                for (s, range) in &r.groups {
                    runs[*s].0.push(PieceRun::new(r.parts.clone(), range.clone()));
                    ahead[*s] = ahead[*s].max(Some(r.max.ns));
                }
            } else {
                let mut facts = pool.take(0);
                for (_, range) in &r.groups {
                    facts.extend_from_slice(r.parts.slice(range.clone()));
                }
                again.push(facts);
            }
            false
        });
        // Below every fact still held (a held chunk's facts all have its first key's time or later).
        let frontier = match (frontier, held) {
            (Some(f), Some(h)) => Some(f.min(h)),
            (f, _) => f,
        };
        for facts in again {
            self.add_run(facts, true, pool);
        }
        for p in std::mem::take(&mut self.paired) {
            if self.router.still_valid(p.version, p.last, p.min, p.max) {
                for (s, facts) in p.routed.into_iter().enumerate() {
                    if !facts.is_empty() {
                        runs[s].1.push(PieceRun::owned(facts));
                        self.ahead[s] = self.ahead[s].max(Some(p.max.ns));
                    }
                }
            } else {
                let facts = p.routed.concat();
                self.add_run(facts, false, pool);
            }
        }
        let router = &self.router;
        let ids = &mut self.ids;
        for run in &mut self.runs {
            let rest = &mut run.facts[run.done..];
            // The facts to route now: a prefix of the rest, put first when not sorted.
            let n = if run.sorted {
                rest.partition_point(|(k, _)| k.is_before(frontier))
            } else {
                let mut n = 0;
                for i in 0..rest.len() {
                    if rest[i].0.is_before(frontier) {
                        rest.swap(n, i);
                        n += 1;
                    }
                }
                n
            };
            if n == 0 {
                continue;
            }
            let now = &rest[..n];
            ids.clear();
            ids.extend(now.iter().map(|(k, f)| router.route(owner(f), *k) as u8));
            let parts = Parts::gather(now, ids, pool);
            for (s, range) in parts.groups() {
                let r = PieceRun::new(parts.clone(), range);
                if run.sorted {
                    runs[s].0.push(r);
                } else {
                    runs[s].1.push(r);
                }
            }
            run.done += n;
        }
        for (s, ((runs, unsorted), pending)) in runs.into_iter().zip(&mut controls).enumerate() {
            let later = pending.split_off(pending.partition_point(|(k, _)| k.is_before(frontier)));
            let controls = std::mem::replace(pending, later);
            let waits = self.ahead[s].is_some();
            if self.ahead[s].is_some_and(|a| frontier.is_none_or(|f| a < f)) {
                self.ahead[s] = None;
            }
            if rows || waits || !runs.is_empty() || !unsorted.is_empty() || !controls.is_empty() {
                boards.model.post(s, ModelWork { runs, unsorted, controls, frontier, conf: conf.clone(), rows });
            }
        }
        self.controls = controls;
        self.runs.retain_mut(|r| {
            if r.done < r.facts.len() {
                return true;
            }
            pool.give(std::mem::take(&mut r.facts));
            false
        });
    }

    /// After the last merge: pairs the last pieces (here: few), hands the rest of the facts to
    /// the model's shards, with the making of the threads' per-file rows after them (run by
    /// the workers when called from [`Analysis::end_merges`]). Does nothing the second time.
    fn end(&mut self, io: &Io) {
        if self.ended || !self.live {
            return;
        }
        self.ended = true;
        self.hand_out(true, None, io);
        self.collect(0, &io.pool);
        debug_assert!(self.batches.is_empty(), "every batch is done");
        self.route(None, io, true);
    }

    /// Hands the pieces to the shards (when the state starts at the first chunk); their pairs
    /// will let the model run below `frontier`.
    fn hand_out(&mut self, end: bool, frontier: Option<i64>, io: &Io) {
        let Some((runs, limit)) = self.tracker.hand_out(end) else { return };
        let board = &self.boards.get_or_insert_with(Arc::default).pairs;
        let snapshot = io.routes.lock().unwrap_or_else(PoisonError::into_inner).clone();
        // One for the posting itself, so that the batch is not done before every work is posted.
        let batch = Arc::new(Batch { facts: Mutex::default(), snapshot, frontier, left: AtomicUsize::new(1) });
        board.post_runs(runs, |_, runs| {
            batch.left.fetch_add(1, Ordering::AcqRel);
            IoWork { runs, limit, batch: batch.clone() }
        });
        batch.left.fetch_sub(1, Ordering::AcqRel);
        self.batches.push_back((batch, frontier));
    }

    /// Takes the pairs of every batch but the last `keep` ones, in order, pairing what is left
    /// of them here; the frontier below which every fact is then known (`None`: no new one).
    ///
    /// Which batches are taken depends on the merges only, never on how far the workers got:
    /// a fact that comes before its chunk's beginning (a packet whose header disagrees with the
    /// index) meets the model's shards where they stand, and with a frontier that depended on
    /// the workers' speed, `io`'s output changed from run to run.
    fn collect(&mut self, keep: usize, pool: &Arc<Pool<(EventKey, Fact)>>) -> Option<i64> {
        let mut ready = None;
        while self.batches.len() > keep {
            let Some((b, frontier)) = self.batches.pop_front() else { break };
            if let Some(boards) = &self.boards {
                // Other workers may be running some of its pairing.
                while !b.done() {
                    // A pairing that panicked on another worker is never done.
                    assert!(!boards.pairs.panicked(), "a worker panicked while pairing input/output calls");
                    if !boards.pairs.assist() {
                        std::thread::yield_now();
                    }
                }
            }
            let facts = b.take();
            self.add_run(facts.rest, false, pool);
            if let Some((min, max)) = facts.keys {
                self.paired.push(Paired { routed: facts.routed, version: b.snapshot.version, last: b.snapshot.last, min, max });
            }
            ready = frontier.or(ready);
        }
        ready
    }

    /// Adds a run of facts (sorted here unless `sort` is false: the model's shards sort them);
    /// an empty buffer goes back to `pool`.
    fn add_run(&mut self, mut facts: Vec<(EventKey, Fact)>, sort: bool, pool: &Arc<Pool<(EventKey, Fact)>>) {
        if facts.is_empty() {
            pool.give(facts);
        } else {
            if sort {
                sort_run(&mut facts, |(k, _)| *k);
            }
            self.runs.push(Run { facts, done: 0, sorted: sort });
        }
    }
}

impl Analysis for Io {
    type State = IoState;
    type Output = IoReport;

    fn new_state(&self, chunk: &Chunk) -> IoState {
        let snapshot = Some(self.routes.lock().unwrap_or_else(PoisonError::into_inner).clone());
        IoState { live: true, tracker: Tracker::with_spare(chunk, &self.pieces), facts: self.pool.take(records_hint(chunk)), snapshot, ..IoState::default() }
    }

    fn on_event(&self, st: &mut IoState, ev: &EventView<'_, '_>, cx: &Context<'_, '_>) {
        const WANT: Kinds = NET_KINDS.with(&[What::SysEntry, What::SysExit, What::SchedSwitch, What::Fork, What::Exec, What::StatedumpProcess, What::StatedumpFd]);
        let Some(k) = self.map.decode_only(ev, cx, WANT) else { return };
        if !st.span.read(&self.filter, k.ns) {
            return;
        }
        st.tracker.saw(k.ns);
        st.net.on_event(&self.net, &self.filter, &k, cx);
        let cpu = StreamCpu::new(cx, k.cpu);
        match k.kind {
            Kind::SyscallEntry { name, .. } => {
                let key = st.counter.key(k.ns, cx);
                let id = self.names.get(&mut st.cache, name);
                let (call, item) = match self.io_call(id, name) {
                    IoCall::Other => (Call::Other, None),
                    what => self.entry_call(&k, cx, what, &mut st.names),
                };
                let mut sink = FactSink { out: &mut st.facts };
                if let Some(item) = item {
                    st.tracker.target(cpu, k.tid).item(IoItem { key, item }, &mut sink);
                }
                st.tracker.target(cpu, k.tid).entry(key, IoEntry { ns: k.ns, name: id, call });
            }
            Kind::SyscallExit { ret, .. } => {
                let key = st.counter.key(k.ns, cx);
                let mut sink = FactSink { out: &mut st.facts };
                st.tracker.target(cpu, k.tid).exit(key, IoExit { key, ret, cpu: k.cpu }, &mut sink);
            }
            Kind::SchedSwitch { next_tid, next_comm, .. } => {
                let key = st.counter.key(k.ns, cx);
                st.tracker.switch(cpu, next_tid);
                st.facts.push((key, Fact::Switch { tid: next_tid, comm: Comm::new(next_comm) }));
            }
            Kind::ProcessFork { parent_pid: Some(parent_pid), child_tid, child_pid: Some(child_pid), child_comm, .. } => {
                let key = st.counter.key(k.ns, cx);
                let parent_comm = Comm::new(self.map.extra(ev, cx, Extra::ParentComm).and_then(Field::as_bytes).unwrap_or(&[]));
                st.links.push((key, Link::Fork(Fork { parent_pid, parent_comm, child_tid, child_pid, child_comm: Comm::new(child_comm) })));
            }
            Kind::ProcessExec { tid, .. } => {
                let key = st.counter.key(k.ns, cx);
                let procname = self.map.extra(ev, cx, Extra::Procname).and_then(Field::as_bytes).map(Comm::new);
                st.facts.push((key, Fact::Exec { tid, procname }));
            }
            Kind::StatedumpProcess { tid, pid, name, .. } => {
                let key = st.counter.key(k.ns, cx);
                st.links.push((key, Link::StatedumpProcess { tid, pid, name: Comm::new(name) }));
            }
            Kind::StatedumpFd { pid, fd, filename } => {
                let key = st.counter.key(k.ns, cx);
                let flags = self.map.extra(ev, cx, Extra::Flags).and_then(|f| f.as_i64()).unwrap_or(0);
                let filename = st.names.id(&self.paths, filename);
                st.facts.push((key, Fact::StatedumpFd { pid, fd, filename, cloexec: flags & O_CLOEXEC != 0 }));
            }
            _ => {}
        }
    }

    fn end_chunk(&self, st: &mut IoState, _cx: &Context<'_, '_>) {
        st.tracker.end_chunk();
        let mut facts = std::mem::take(&mut st.facts);
        // Routed here, in parallel, by the routes known when the chunk started (the merge
        // checks them).
        if let (Some(snap), Some(&(min, _)), Some(&(max, _))) = (st.snapshot.take(), facts.first(), facts.last()) {
            sort_run(&mut facts, |(k, _)| *k);
            let (min, max) = (min.min(facts[0].0), max.max(facts[facts.len() - 1].0));
            st.ids.clear();
            st.ids.extend(facts.iter().map(|(_, f)| snap.route(owner(f)) as u8));
            let parts = Parts::gather(&facts, &st.ids, &self.pool);
            let groups = parts.groups().collect();
            st.routed.push(Routed { parts, groups, version: snap.version, last: snap.last, min, max });
            self.pool.give(facts);
        } else {
            st.add_run(facts, true, &self.pool);
        }
        st.cache = IdMap::default();
        st.names = NameCache::default();
    }

    fn merge(&self, mut a: IoState, mut b: IoState) -> IoState {
        if !b.live {
            return a;
        }
        if !a.live {
            return b;
        }
        let frontier = b.tracker.begin();
        // A buffer used before: the calls the settling pairs are most of a chunk's facts where
        // threads block in them, and fresh pages cost a fault each in this serial part.
        let mut late = self.pool.take(0);
        a.tracker.merge(std::mem::take(&mut b.tracker), &mut FactSink { out: &mut late });
        a.runs.append(&mut b.runs);
        a.links.append(&mut b.links);
        a.routed.append(&mut b.routed);
        debug_assert!(b.controls.iter().all(Vec::is_empty), "only the first chunk's state routes");
        a.add_run(late, true, &self.pool);
        if a.tracker.is_root() {
            // The pairs of these pieces are made by the shards; the model runs as far as the
            // pairs of the batches before the last `BATCHES_AHEAD` allow.
            a.hand_out(false, frontier, self);
            if let Some(f) = a.collect(BATCHES_AHEAD, &self.pool) {
                a.route(Some(f), self, false);
            }
        }
        a.span.merge(b.span);
        a.net.merge(b.net);
        a
    }

    fn background(&self, st: &IoState) -> Option<Arc<dyn Background>> {
        st.boards.clone().map(|b| b as Arc<dyn Background>)
    }

    fn end_merges(&self, st: &mut IoState) {
        st.end(self);
    }

    fn finish(&self, mut st: IoState) -> IoReport {
        st.end(self);
        // A next run of this analysis starts with the routes of no link.
        *self.routes.lock().unwrap_or_else(PoisonError::into_inner) = Arc::default();
        let shards = st.boards.take().map(|b| b.model.states()).unwrap_or_default();
        // Where each thread's state is at the end: in one shard.
        let mut at: IdMap<i64, (usize, usize)> = IdMap::default();
        let mut latency = [Durations::default(); 4];
        let mut tops: [Vec<TopCall>; 4] = Default::default();
        for (si, sh) in shards.iter().enumerate() {
            for (i, (tid, _)) in sh.model.procs.slab.iter().enumerate() {
                at.insert(*tid, (si, i));
            }
            for c in 0..4 {
                latency[c].merge(&sh.model.latency[c]);
                tops[c].extend(sh.model.top[c].iter().map(|Reverse(t)| t.clone()));
            }
        }
        let proc_of = |tid: i64| at.get(&tid).and_then(|&(s, i)| shards.get(s)?.model.procs.slab.get(i)).map(|(_, p)| p);
        // Per thread, in creation order.
        let mut stats: Vec<(i64, &Stats)> = shards.iter().flat_map(|sh| sh.model.procs.iter().filter_map(|(t, p)| p.stats.as_deref().map(|s| (t, s)))).collect();
        stats.sort_by_key(|(_, s)| s.seq);
        let procname_ok = |c: &Comm| self.filter.procname(c.as_bytes());
        let processes: Vec<ProcessIo> = stats
            .iter()
            .filter(|(tid, s)| self.filter.tid(*tid) && procname_ok(&s.comm))
            .map(|(tid, s)| ProcessIo { tid: *tid, pid: s.pid, comm: s.comm.to_string(), disk: s.disk, net: s.net, unknown: s.unknown })
            .filter(|p| p.total() != Rw::default())
            .collect();
        let names = self.paths.lock();
        let files = file_rows(&stats, &names);
        let top = tops.map(|mut v| {
            v.sort_by(|a, b| b.cmp(a));
            v.truncate(self.top);
            v.into_iter()
                .map(|t| SlowCall {
                    begin_ns: t.begin_ns,
                    end_ns: t.end_ns,
                    syscall: self.names.name(t.name).to_string(),
                    size: t.size,
                    comm: proc_of(t.tid).and_then(|p| p.stats.as_deref()).map(|s| s.comm.to_string()).unwrap_or_default(),
                    tid: t.tid,
                    fd: t.fd,
                    path: t.path.map(|p| names.name(p).to_string()),
                })
                .collect()
        });
        let label = |tid| proc_of(tid).map(|p| (p.pid, p.comm));
        let network = st.net.finish(&self.net, label, |tid, comm| self.filter.process(tid, comm));
        IoReport { begin_ns: st.span.begin, end_ns: st.span.end, processes, files, latency, top, network }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_is_associative() {
        crate::testing::check("io", |set| Io::new(set, Filter::default(), 5));
    }
}
