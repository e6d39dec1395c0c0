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
//! *facts*. Merging, in chunk start order, runs the descriptor tables over the facts older than
//! the next chunk's start (every older event is known then); the last merge runs the rest. The
//! pairing, the reading and most of the work stay parallel; the model runs on the facts, in
//! order, as a serial reading would. With chunks much shorter than the trace (see
//! [`Options::KERNEL_CHUNK_SIZE`](crate::Options::KERNEL_CHUNK_SIZE)) that serial part runs
//! while later chunks are read; it is kept cheap:
//!
//! * facts are plain data read in place; the runs of facts (one per chunk, sorted by event
//!   key) are merged by a loser tree (`LoserTree`: ⌈log2 k⌉ comparisons of times per fact);
//! * file names are numbered by the chunks themselves, in parallel (`FileNames`, a table
//!   shared by the workers, with a per-chunk cache), so that facts carry numbers;
//! * thread states are in a slab indexed by thread id; descriptor tables and per-descriptor
//!   statistics are vectors indexed by descriptor number (`FdMap`), maps only for sparse
//!   numbers; statistics are plain numbers;
//! * chunk buffers (facts, the tracker's pieces) are reused;
//! * the per-file tables are added up by name number, paths formatted once per row.

use std::cmp::Reverse;
use std::collections::hash_map::Entry as MapEntry;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};
use tracelens_ctf::{EventView, Field};
use tracelens_trace::TraceSet;

use crate::engine::{records_hint, Analysis, Chunk, Context, Pool};
use crate::filter::Filter;
use crate::kernel::{Comm, Extra, KEvent, KernelMap, Kind, Kinds, What};
use crate::call_names::CallNames;
use crate::durations::Durations;
use crate::id_map::{IdHasher, IdMap};
use crate::order::{EventCounter, EventKey, StreamCpu};
use crate::runs::{sort_run, LoserTree};
use crate::tracker::{Piece, Sink, Tracker};

/// `O_CLOEXEC` on Linux.
const O_CLOEXEC: i64 = 0o2_000_000;
/// `AF_INET`.
const AF_INET: i64 = 2;

/// The kind of an open file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FdType {
    /// Not known (state dump, or never seen opened).
    Unknown,
    /// Opened by `open`/`openat`.
    Disk,
    /// A socket.
    Net,
}

/// What a call does, read from its entry.
#[derive(Clone, Copy, Debug)]
enum Call {
    /// Not an I/O call (or one lttng-analyses does not count: `splice`, `fcntl` other than
    /// `F_DUPFD`...).
    Other,
    Open {
        filename: NameId,
        cloexec: bool,
    },
    Socket,
    /// `dup`-like: what it duplicates is looked up at the entry (a [`Item::Dup`]).
    Dup,
    Close {
        fd: i64,
    },
    Read {
        fd: i64,
    },
    Write {
        fd: i64,
    },
    Sync {
        fd: Option<i64>,
    },
}

/// A system call entry, for `io`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IoEntry {
    ns: i64,
    name: u16,
    call: Call,
}

/// A system call exit, for `io`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IoExit {
    key: EventKey,
    ret: i64,
    cpu: u32,
}

/// An entry effect that needs the thread (when a chunk does not know it yet).
#[derive(Clone, Copy, Debug)]
pub(crate) struct IoItem {
    key: EventKey,
    item: Item,
}

#[derive(Clone, Copy, Debug)]
enum Item {
    /// A `dup`-like entry: the original is looked up (and `dup2`'s target closed) now.
    Dup { dup3: bool, oldfd: i64, newfd: Option<i64>, cloexec: bool },
    /// `connect` to an IPv4 address: the socket takes its name.
    Connect { fd: i64, name: NameId },
}

/// What the descriptor model reads, in time order (plain data: a run of facts is dropped
/// without going through them).
#[derive(Clone, Copy, Debug)]
enum Fact {
    /// `next_tid` is switched in with this name.
    Switch {
        tid: i64,
        comm: Comm,
    },
    Fork(Fork),
    Exec {
        tid: i64,
        procname: Option<Comm>,
    },
    StatedumpProcess {
        tid: i64,
        pid: i64,
        name: Comm,
    },
    StatedumpFd {
        pid: i64,
        fd: i64,
        filename: NameId,
        cloexec: bool,
    },
    Item {
        tid: i64,
        item: Item,
    },
    Call {
        tid: i64,
        begin_ns: i64,
        ret: i64,
        cpu: u32,
        name: u16,
        call: Call,
    },
}

#[derive(Clone, Copy, Debug)]
struct Fork {
    parent_pid: i64,
    parent_comm: Comm,
    child_tid: i64,
    child_pid: i64,
    child_comm: Comm,
}

/// Where the tracker's results go: facts, with the key of the event that completes them.
struct FactSink<'a> {
    out: &'a mut Vec<(EventKey, Fact)>,
}

impl Sink<IoEntry, IoExit, IoItem> for FactSink<'_> {
    #[inline]
    fn pair(&mut self, tid: i64, entry: IoEntry, exit: IoExit) {
        if !matches!(entry.call, Call::Other) {
            self.out.push((exit.key, Fact::Call { tid, begin_ns: entry.ns, ret: exit.ret, cpu: exit.cpu, name: entry.name, call: entry.call }));
        }
    }

    #[inline]
    fn item(&mut self, tid: i64, item: IoItem) {
        self.out.push((item.key, Fact::Item { tid, item: item.item }));
    }
}

// ---------------------------------------------------------------------------------------------
// The descriptor model (lttng-analyses' automaton and period statistics).
// ---------------------------------------------------------------------------------------------

/// A file name, numbered in the model's [`FileNames`].
type NameId = u32;
/// The empty name.
const EMPTY_NAME: NameId = 0;
/// `unknown`.
const UNKNOWN_NAME: NameId = 1;
/// `socket`.
const SOCKET_NAME: NameId = 2;

/// The file names of an analysis, numbered as chunks meet them: facts, descriptor tables and
/// statistics hold plain numbers (copied, compared and freed for nothing). Shared by the
/// workers: a chunk numbers each name it meets once (see [`NameCache`]); the numbers only
/// name files, so the order in which chunks get them does not matter.
#[derive(Debug)]
struct FileNames {
    table: Mutex<NameTable>,
}

/// The numbered names: [`EMPTY_NAME`], [`UNKNOWN_NAME`] and [`SOCKET_NAME`] first. Found by
/// a hash of their text that the caller computes once ([`name_hash`]): a map from hashes to
/// the first name with that hash, a list for the (improbable) others.
#[derive(Debug, Default)]
struct NameTable {
    names: Vec<Box<str>>,
    ids: IdMap<u64, NameId>,
    collisions: Vec<(u64, NameId)>,
}

/// The hash of a name's bytes (or text) that [`NameTable`] and [`NameCache`] go by.
#[inline]
fn name_hash(bytes: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = IdHasher::default();
    h.write(bytes);
    h.finish()
}

impl NameTable {
    /// The number of `name`, whose [`name_hash`] is `hash`.
    fn id(&mut self, name: &str, hash: u64) -> NameId {
        let same = |i: NameId| self.names.get(i as usize).is_some_and(|n| **n == *name);
        let first = self.ids.get(&hash).copied();
        if let Some(i) = first.filter(|&i| same(i)) {
            return i;
        }
        if let Some(&(_, i)) = self.collisions.iter().find(|&&(h, i)| h == hash && same(i)) {
            return i;
        }
        let i = self.names.len() as NameId;
        self.names.push(name.into());
        match first {
            None => {
                self.ids.insert(hash, i);
            }
            Some(_) => self.collisions.push((hash, i)),
        }
        i
    }

    fn name(&self, id: NameId) -> &str {
        self.names.get(id as usize).map_or("", |s| s)
    }
}

impl Default for FileNames {
    fn default() -> Self {
        let mut t = NameTable::default();
        for s in ["", "unknown", "socket"] {
            t.id(s, name_hash(s.as_bytes()));
        }
        FileNames { table: Mutex::new(t) }
    }
}

impl FileNames {
    fn lock(&self) -> MutexGuard<'_, NameTable> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The number of `name` (bytes from the trace, invalid UTF-8 replaced), whose bytes have
    /// the [`name_hash`] `hash`.
    fn id(&self, name: &[u8], hash: u64) -> NameId {
        let text = String::from_utf8_lossy(name);
        let hash = match &text {
            std::borrow::Cow::Borrowed(_) => hash,
            std::borrow::Cow::Owned(t) => name_hash(t.as_bytes()),
        };
        self.lock().id(&text, hash)
    }
}

/// A chunk's numbers of the names it met (bytes kept end to end in one buffer), so that
/// repeated opens of a name do not go to the shared [`FileNames`].
#[derive(Debug, Default)]
struct NameCache {
    /// By [`name_hash`]: the number, and where the bytes are in `bytes`.
    ids: IdMap<u64, (NameId, u32, u32)>,
    bytes: Vec<u8>,
}

/// Bytes of names a [`NameCache`] keeps at most.
const NAME_CACHE_BYTES: usize = 1 << 20;

impl NameCache {
    #[inline]
    fn id(&mut self, names: &FileNames, name: &[u8]) -> NameId {
        let hash = name_hash(name);
        if let Some(&(i, at, len)) = self.ids.get(&hash) {
            if self.bytes.get(at as usize..at as usize + len as usize) == Some(name) {
                return i;
            }
        }
        let i = names.id(name, hash);
        if self.bytes.len() + name.len() <= NAME_CACHE_BYTES {
            self.ids.insert(hash, (i, self.bytes.len() as u32, name.len() as u32));
            self.bytes.extend_from_slice(name);
        }
        i
    }
}

#[derive(Clone, Copy, Debug)]
struct Fd {
    filename: NameId,
    kind: FdType,
    cloexec: bool,
}

/// Values by descriptor number: the numbers from 0 up to a bound in a vector indexed by number
/// (processes use the lowest free numbers), the others (and negative ones) in a map. The bound
/// is a power of two that doubles while the vector stays at least a quarter full (or under
/// [`FD_VEC_MIN`]), so that tables of many descriptors — a server's sockets, a process that
/// opens files without closing them — stay vectors (descriptors opened one after the other
/// sit side by side), and a few high numbers do not make one long and empty.
#[derive(Clone, Debug)]
struct FdMap<T> {
    /// Slots of the numbers below `bound`; no longer than the last one in use.
    dense: Vec<Option<T>>,
    /// Numbers below it are in `dense`, the others in `other`.
    bound: usize,
    /// Values in `dense`.
    count: usize,
    other: IdMap<i64, T>,
}

/// The bound of an [`FdMap`]'s vector may always reach this.
const FD_VEC_MIN: usize = 1024;

impl<T> Default for FdMap<T> {
    fn default() -> Self {
        FdMap { dense: Vec::new(), bound: 0, count: 0, other: IdMap::default() }
    }
}

impl<T: Copy> FdMap<T> {
    /// The slot of `fd` in `dense`, if it has one (it is below the bound).
    #[inline]
    fn slot(&self, fd: i64) -> Option<usize> {
        usize::try_from(fd).ok().filter(|&i| i < self.bound)
    }

    #[inline]
    fn get(&self, fd: i64) -> Option<&T> {
        match self.slot(fd) {
            Some(i) => self.dense.get(i).and_then(Option::as_ref),
            None => self.other.get(&fd),
        }
    }

    #[inline]
    fn get_mut(&mut self, fd: i64) -> Option<&mut T> {
        match self.slot(fd) {
            Some(i) => self.dense.get_mut(i).and_then(Option::as_mut),
            None => self.other.get_mut(&fd),
        }
    }

    /// Adds `v` as `fd` unless `fd` is there; whether it was added.
    #[inline]
    fn add(&mut self, fd: i64, v: T) -> bool {
        if self.slot(fd).is_none() && !self.grow(fd) {
            return match self.other.entry(fd) {
                MapEntry::Vacant(e) => {
                    e.insert(v);
                    true
                }
                MapEntry::Occupied(_) => false,
            };
        }
        let Some(i) = self.slot(fd) else { return false };
        if self.dense.len() <= i {
            self.dense.resize(i + 1, None);
        }
        match self.dense.get_mut(i) {
            Some(slot @ None) => {
                *slot = Some(v);
                self.count += 1;
                true
            }
            _ => false,
        }
    }

    /// Raises the bound over `fd` if the vector stays full enough; whether it did.
    #[cold]
    fn grow(&mut self, fd: i64) -> bool {
        let Ok(i) = usize::try_from(fd) else { return false };
        let bound = (i + 1).next_power_of_two();
        if bound > FD_VEC_MIN.max(4 * (self.count + self.other.len() + 1)) {
            return false;
        }
        self.bound = bound;
        // Numbers of the map now below the bound move to the vector.
        let moved: Vec<(i64, T)> = self.other.iter().filter(|(n, _)| self.slot(**n).is_some()).map(|(n, v)| (*n, *v)).collect();
        for (n, v) in moved {
            self.other.remove(&n);
            self.add(n, v);
        }
        true
    }

    #[inline]
    fn remove(&mut self, fd: i64) {
        match self.slot(fd) {
            Some(i) => {
                if self.dense.get_mut(i).and_then(Option::take).is_some() {
                    self.count -= 1;
                    while self.dense.last().is_some_and(Option::is_none) {
                        self.dense.pop();
                    }
                }
            }
            None => {
                self.other.remove(&fd);
            }
        }
    }

    /// The numbers and values, in no particular order.
    fn iter(&self) -> impl Iterator<Item = (i64, &T)> {
        let dense = self.dense.iter().enumerate().filter_map(|(n, v)| v.as_ref().map(|v| (n as i64, v))).take(self.count);
        dense.chain(self.other.iter().map(|(n, v)| (*n, v)))
    }

    /// The numbers of the values `pick` picks, in increasing order.
    fn numbers(&self, pick: impl Fn(&T) -> bool) -> Vec<i64> {
        let mut v: Vec<i64> = self.iter().filter(|(_, x)| pick(x)).map(|(n, _)| n).collect();
        if !self.other.is_empty() {
            v.sort_unstable();
        }
        v
    }
}

/// A process's descriptor table.
type FdTable = FdMap<Fd>;

/// What a `dup`-like entry found: (entry time, name, kind, close-on-exec).
type DupLookup = (i64, NameId, FdType, bool);

#[derive(Clone, Debug, Default)]
struct Proc {
    pid: Option<i64>,
    comm: Comm,
    fds: FdTable,
    /// A `dup`-like entry's lookup.
    dup: Option<DupLookup>,
    /// The thread's statistics (lttng-analyses keeps them by thread id, apart from the
    /// thread's state: they survive a `fork` that reuses the id).
    stats: Option<Box<Stats>>,
}

/// One opening of a descriptor (lttng-analyses' `FDStats`).
#[derive(Clone, Copy, Debug)]
struct FdStats {
    filename: NameId,
    kind: FdType,
    open_ts: i64,
    close_ts: Option<i64>,
    read: u64,
    write: u64,
}

/// The openings of one descriptor number: the last one, and the bytes of the earlier ones
/// by name, in order of first appearance (the per-file tables add up openings by name, in
/// that order): the first name here, the others in the model's [`Pasts`].
#[derive(Clone, Copy, Debug)]
struct FdList {
    last: Option<FdStats>,
    /// The first earlier name with bytes ([`NO_NAME`]: none yet) and its bytes.
    first: (NameId, u64, u64),
    /// 0: no other earlier name; else 1 + the index of the others in [`Pasts`].
    past: u32,
}

/// No name (never given to a file name: the table would not fit in memory first).
const NO_NAME: NameId = NameId::MAX;

impl Default for FdList {
    fn default() -> Self {
        FdList { last: None, first: (NO_NAME, 0, 0), past: 0 }
    }
}

/// The earlier openings of descriptors, by name (see [`FdList`]).
#[derive(Debug, Default)]
struct Past {
    list: Vec<(NameId, u64, u64)>,
    /// Where each name is in `list`, once it is long.
    index: Option<IdMap<NameId, u32>>,
}

/// `Past::list` gets an index beyond this length.
const PAST_SCAN: usize = 8;

/// Every [`FdList`]'s [`Past`].
type Pasts = Vec<Past>;

impl FdList {
    fn push(&mut self, s: FdStats, pasts: &mut Pasts) {
        let Some(old) = self.last.replace(s) else { return };
        if old.read == 0 && old.write == 0 {
            return;
        }
        if self.first.0 == NO_NAME || self.first.0 == old.filename {
            self.first = (old.filename, self.first.1 + old.read, self.first.2 + old.write);
            return;
        }
        if self.past == 0 {
            pasts.push(Past::default());
            self.past = pasts.len() as u32;
        }
        let Some(past) = pasts.get_mut(self.past as usize - 1) else { return };
        let at = match &past.index {
            Some(index) => index.get(&old.filename).map(|&i| i as usize),
            None => past.list.iter().position(|(n, _, _)| *n == old.filename),
        };
        match at.and_then(|i| past.list.get_mut(i)) {
            Some((_, r, w)) => {
                *r += old.read;
                *w += old.write;
            }
            None => {
                let n = past.list.len() as u32;
                if let Some(index) = &mut past.index {
                    index.insert(old.filename, n);
                } else if past.list.len() >= PAST_SCAN {
                    let mut index: IdMap<NameId, u32> = past.list.iter().enumerate().map(|(i, (n, _, _))| (*n, i as u32)).collect();
                    index.insert(old.filename, n);
                    past.index = Some(index);
                }
                past.list.push((old.filename, old.read, old.write));
            }
        }
    }

    /// The earlier openings by name (name, read, write), in order of first appearance.
    fn past<'p>(&self, pasts: &'p Pasts) -> impl Iterator<Item = (NameId, u64, u64)> + 'p {
        let others = match self.past {
            0 => &[][..],
            i => pasts.get(i as usize - 1).map_or(&[][..], |p| &p.list[..]),
        };
        let first = (self.first.0 != NO_NAME).then_some(self.first);
        first.into_iter().chain(others.iter().copied())
    }

    /// The current opening (`get_fd`): the last, unless closed.
    fn current(&mut self) -> Option<&mut FdStats> {
        self.last.as_mut().filter(|s| s.close_ts.is_none())
    }

    /// The opening that covers `ts` (lttng-analyses looks it up by time for its tables).
    fn at(&self, ts: i64) -> Option<&FdStats> {
        self.last.as_ref().filter(|s| s.open_ts <= ts && s.close_ts.is_none_or(|c| ts <= c))
    }
}

/// The [`FdList`]s of a thread's statistics, by descriptor number: kept in one vector (read
/// by the per-file tables), found through an [`FdMap`].
#[derive(Clone, Debug, Default)]
struct FdLists {
    /// The index in `lists` of each descriptor number.
    at: FdMap<u32>,
    lists: Vec<(i64, FdList)>,
}

impl FdLists {
    #[inline]
    fn get(&self, fd: i64) -> Option<&FdList> {
        let &i = self.at.get(fd)?;
        self.lists.get(i as usize).map(|(_, l)| l)
    }

    #[inline]
    fn get_mut(&mut self, fd: i64) -> Option<&mut FdList> {
        let &i = self.at.get(fd)?;
        self.lists.get_mut(i as usize).map(|(_, l)| l)
    }

    /// The list of `fd`, created empty when missing.
    #[inline]
    fn entry(&mut self, fd: i64) -> &mut FdList {
        let i = match self.at.get(fd) {
            Some(&i) => i as usize,
            None => {
                let n = self.lists.len();
                self.at.add(fd, n as u32);
                self.lists.push((fd, FdList::default()));
                n
            }
        };
        &mut self.lists[i].1
    }

    /// Adds the list of `fd` (not there yet).
    fn insert(&mut self, fd: i64, list: FdList) {
        *self.entry(fd) = list;
    }
}

/// Read and written bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Rw {
    /// Bytes read.
    pub read: u64,
    /// Bytes written.
    pub write: u64,
}

/// Per-thread statistics (lttng-analyses' `ProcessIOStats`).
#[derive(Clone, Debug)]
struct Stats {
    seq: u64,
    pid: Option<i64>,
    comm: Comm,
    disk: Rw,
    net: Rw,
    unknown: Rw,
    fds: FdLists,
}

/// A candidate row of a "longest calls" table.
#[derive(Clone, Debug, PartialEq, Eq)]
struct TopCall {
    duration: i64,
    /// Order among equal durations: thread statistics creation, then exit.
    order: (u64, EventKey),
    begin_ns: i64,
    end_ns: i64,
    name: u16,
    size: Option<u64>,
    tid: i64,
    fd: Option<i64>,
    path: Option<NameId>,
}

impl Ord for TopCall {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        // "Greater" is better: longer, then earlier in lttng-analyses' list order.
        self.duration.cmp(&o.duration).then_with(|| o.order.cmp(&self.order))
    }
}

impl PartialOrd for TopCall {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

/// Latency categories.
const OPEN: usize = 0;
const READ: usize = 1;
const WRITE: usize = 2;
const SYNC: usize = 3;
/// Their names in reports.
pub const CATEGORIES: [&str; 4] = ["open", "read", "write", "sync"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Open,
    Read,
    Write,
    Close,
    Sync,
}

/// Threads by id: an index into a slab, so that a fact looks each thread up once (directly for
/// the usual small ids).
#[derive(Debug, Default)]
struct Procs {
    /// 1 + the slab index of thread ids below [`DENSE_TIDS`] (0: none yet).
    dense: Vec<u32>,
    /// The slab index of the other thread ids.
    index: IdMap<i64, u32>,
    slab: Vec<(i64, Proc)>,
}

/// Thread ids below this are indexed directly (Linux's `pid_max` is at most 4194304; the
/// table grows only as far as the ids met).
const DENSE_TIDS: i64 = 1 << 22;

impl Procs {
    #[inline]
    fn find(&self, tid: i64) -> Option<usize> {
        if (0..DENSE_TIDS).contains(&tid) {
            return match self.dense.get(tid as usize) {
                Some(&i) if i > 0 => Some(i as usize - 1),
                _ => None,
            };
        }
        self.index.get(&tid).map(|&i| i as usize)
    }

    /// The index of `tid`, created with `make` when missing.
    #[inline]
    fn ensure_with(&mut self, tid: i64, make: impl FnOnce() -> Proc) -> usize {
        if let Some(i) = self.find(tid) {
            return i;
        }
        let i = self.slab.len();
        if (0..DENSE_TIDS).contains(&tid) {
            let t = tid as usize;
            if self.dense.len() <= t {
                self.dense.resize((t + 1).next_power_of_two().max(1024), 0);
            }
            self.dense[t] = i as u32 + 1;
        } else {
            self.index.insert(tid, i as u32);
        }
        self.slab.push((tid, make()));
        i
    }

    /// Puts `p` in place of `tid`'s state; returns the old one.
    fn replace(&mut self, tid: i64, p: Proc) -> Option<Proc> {
        match self.find(tid) {
            Some(i) => Some(std::mem::replace(&mut self.slab[i].1, p)),
            None => {
                self.ensure_with(tid, || p);
                None
            }
        }
    }

    fn iter(&self) -> impl Iterator<Item = (i64, &Proc)> {
        self.slab.iter().map(|(t, p)| (*t, p))
    }
}

/// The model: threads and their descriptor tables, and what is counted.
#[derive(Debug, Default)]
struct Model {
    procs: Procs,
    pasts: Pasts,
    next_seq: u64,
    latency: [Durations; 4],
    top: [BinaryHeap<Reverse<TopCall>>; 4],
}

/// What the model needs from the analysis.
struct Conf<'a> {
    filter: &'a Filter,
    top: usize,
}

fn new_proc(tid: i64) -> Proc {
    Proc { pid: (tid == 0).then_some(0), ..Proc::default() }
}

impl Model {
    /// The index of `tid`'s state, created when missing.
    #[inline]
    fn ix(&mut self, tid: i64) -> usize {
        self.procs.ensure_with(tid, || new_proc(tid))
    }

    #[inline]
    fn proc(&mut self, tid: i64) -> &mut Proc {
        let i = self.ix(tid);
        &mut self.procs.slab[i].1
    }

    /// `_get_parent_proc`: the thread group leader of a thread whose process is known.
    #[inline]
    fn parent_of(&mut self, tid: i64) -> i64 {
        let i = self.ix(tid);
        let p = self.parent_ix(i);
        self.procs.slab[p].0
    }

    /// [`parent_of`](Self::parent_of) by index.
    #[inline]
    fn parent_ix(&mut self, i: usize) -> usize {
        let (tid, ref p) = self.procs.slab[i];
        match p.pid {
            Some(pid) if pid != tid => self.ix(pid),
            _ => i,
        }
    }

    /// The statistics of `tid`, created from its state when missing.
    #[inline]
    fn stats(&mut self, tid: i64) -> &mut Stats {
        let i = self.ix(tid);
        self.stats_at(i)
    }

    /// The statistics of the thread at index `i`, created from its state when missing.
    #[inline]
    fn stats_at(&mut self, i: usize) -> &mut Stats {
        let seq = &mut self.next_seq;
        let p = &mut self.procs.slab[i].1;
        let (pid, comm) = (p.pid, p.comm);
        p.stats.get_or_insert_with(|| {
            let s = Box::new(Stats { seq: *seq, pid, comm, disk: Rw::default(), net: Rw::default(), unknown: Rw::default(), fds: FdLists::default() });
            *seq += 1;
            s
        })
    }

    /// The statistics of the thread at index `i`, if created.
    #[inline]
    fn created(&mut self, i: usize) -> Option<&mut Stats> {
        self.procs.slab.get_mut(i)?.1.stats.as_deref_mut()
    }

    fn stats_ref(&self, tid: i64) -> Option<&Stats> {
        self.procs.find(tid).and_then(|i| self.procs.slab[i].1.stats.as_deref())
    }

    fn stats_mut(&mut self, tid: i64) -> Option<&mut Stats> {
        let i = self.procs.find(tid)?;
        self.procs.slab[i].1.stats.as_deref_mut()
    }

    /// `create_fd` notification: `holder`'s descriptor `fd` (in the table) gets an opening.
    fn notify_create_fd(&mut self, holder: i64, fd: i64, ts: i64, period: bool) {
        if !period {
            return;
        }
        if let Some(i) = self.procs.find(holder) {
            self.notify_create_fd_at(i, fd, ts, true);
        }
    }

    /// [`notify_create_fd`](Self::notify_create_fd) by index.
    fn notify_create_fd_at(&mut self, i: usize, fd: i64, ts: i64, period: bool) {
        if !period {
            return;
        }
        let Some(f) = self.procs.slab[i].1.fds.get(fd).copied() else { return };
        self.stats_at(i);
        let Model { procs, pasts, .. } = self;
        if let Some(s) = procs.slab[i].1.stats.as_deref_mut() {
            s.fds.entry(fd).push(FdStats { filename: f.filename, kind: f.kind, open_ts: ts, close_ts: None, read: 0, write: 0 }, pasts);
        }
    }

    /// `close_fd` notification.
    fn notify_close_fd(&mut self, holder: i64, fd: i64, ts: i64, period: bool) {
        if !period {
            return;
        }
        if let Some(cur) = self.stats_mut(holder).and_then(|s| s.fds.get_mut(fd)).and_then(FdList::current) {
            cur.close_ts = Some(ts);
        }
    }

    /// `update_fd` notification: the descriptor's (new) name goes to its last opening.
    fn notify_update_fd(&mut self, holder: i64, fd: i64, ts: i64, period: bool) {
        if !period {
            return;
        }
        let Some(hi) = self.procs.find(holder) else { return };
        let Some(f) = self.procs.slab[hi].1.fds.get(fd).copied() else { return };
        self.stats_at(hi);
        let Model { procs, pasts, .. } = self;
        let Some(s) = procs.slab[hi].1.stats.as_deref_mut() else { return };
        let list = s.fds.entry(fd);
        match list.last.as_mut() {
            Some(l) => l.filename = f.filename,
            None => list.push(FdStats { filename: f.filename, kind: f.kind, open_ts: ts, close_ts: None, read: 0, write: 0 }, pasts),
        }
    }

    /// `_close_fd`: removes `fd` from the table of `tid`'s process.
    fn close_fd(&mut self, tid: i64, fd: i64, ts: i64, period: bool) {
        let i = self.ix(tid);
        let parent = self.parent_ix(i);
        self.close_fd_of(parent, fd, ts, period);
    }

    /// Removes `fd` from the table of the process at index `parent`.
    fn close_fd_of(&mut self, parent: usize, fd: i64, ts: i64, period: bool) {
        let p = &mut self.procs.slab[parent].1;
        if period {
            if let Some(cur) = p.stats.as_deref_mut().and_then(|s| s.fds.get_mut(fd)).and_then(FdList::current) {
                cur.close_ts = Some(ts);
            }
        }
        p.fds.remove(fd);
    }

    fn apply(&mut self, key: EventKey, fact: &Fact, conf: &Conf<'_>) {
        let ts = key.ns;
        let period = conf.filter.time(ts);
        match *fact {
            Fact::Switch { tid, comm } => self.proc(tid).comm = comm,
            Fact::Fork(Fork { parent_pid, parent_comm, child_tid, child_pid, child_comm }) => {
                let p = self.proc(parent_pid);
                p.pid = Some(parent_pid);
                p.comm = parent_comm;
                let fds = p.fds.clone();
                let numbers = if period { fds.numbers(|_| true) } else { Vec::new() };
                let stats = self.procs.find(child_tid).and_then(|i| self.procs.slab[i].1.stats.take());
                self.procs.replace(child_tid, Proc { pid: Some(child_pid), comm: child_comm, fds, dup: None, stats });
                for fd in numbers {
                    self.notify_create_fd(child_tid, fd, ts, period);
                }
            }
            Fact::Exec { tid, procname } => {
                let p = self.proc(tid);
                if let Some(c) = procname {
                    p.comm = c;
                }
                for fd in p.fds.numbers(|f| f.cloexec) {
                    self.notify_close_fd(tid, fd, ts, period);
                    self.proc(tid).fds.remove(fd);
                }
            }
            Fact::StatedumpProcess { tid, pid, name } => {
                let p = self.proc(tid);
                p.pid = Some(pid);
                p.comm = name;
                if pid != tid {
                    self.procs.ensure_with(pid, || Proc { pid: Some(pid), comm: name, ..Proc::default() });
                    // The thread's descriptors belong to its process.
                    let moved = std::mem::take(&mut self.proc(tid).fds);
                    let parent = self.proc(pid);
                    for (fd, &f) in moved.iter() {
                        if !parent.fds.add(fd, f) {
                            if let Some(o) = parent.fds.get_mut(fd).filter(|o| o.filename == EMPTY_NAME) {
                                o.filename = f.filename;
                            }
                        }
                    }
                    if period {
                        // `create_parent_proc`: the thread's statistics go under its process.
                        self.stats(tid);
                        self.stats(pid);
                        let s = self.stats(tid);
                        s.pid = Some(pid);
                        let moved = std::mem::take(&mut s.fds);
                        let ps = self.stats(pid);
                        for (fd, list) in moved.lists {
                            match ps.fds.get_mut(fd) {
                                None => ps.fds.insert(fd, list),
                                Some(o) => {
                                    if let (Some(cur), Some(l)) = (o.current(), list.last) {
                                        if cur.filename == EMPTY_NAME {
                                            cur.filename = l.filename;
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            Fact::StatedumpFd { pid, fd, filename, cloexec } => {
                let i = self.procs.ensure_with(pid, || Proc { pid: Some(pid), ..Proc::default() });
                let fds = &mut self.procs.slab[i].1.fds;
                match fds.get_mut(fd) {
                    Some(o) => {
                        o.filename = filename;
                        self.notify_update_fd(pid, fd, ts, period);
                    }
                    None => {
                        fds.add(fd, Fd { filename, kind: FdType::Unknown, cloexec });
                        self.notify_create_fd_at(i, fd, ts, period);
                    }
                }
            }
            Fact::Item { tid, item: Item::Dup { dup3, oldfd, newfd, cloexec } } => {
                let parent = self.parent_of(tid);
                if let Some(n) = newfd {
                    if self.proc(parent).fds.get(n).is_some() {
                        self.close_fd(parent, n, ts, period);
                    }
                }
                let (name, kind) = match self.proc(parent).fds.get(oldfd) {
                    Some(f) => (f.filename, f.kind),
                    None => (UNKNOWN_NAME, FdType::Unknown),
                };
                self.proc(tid).dup = Some((ts, name, kind, dup3 && cloexec));
            }
            Fact::Item { tid, item: Item::Connect { fd, name } } => {
                let parent = self.parent_of(tid);
                if let Some(f) = self.proc(parent).fds.get_mut(fd) {
                    f.filename = name;
                }
                self.notify_update_fd(tid, fd, ts, period);
            }
            Fact::Call { tid, begin_ns, ret, cpu, name, call } => self.call(tid, key, Req { begin_ns, ret, cpu, name }, call, period, conf),
        }
    }

    /// `_track_io_rq_exit` and the `io_rq_exit` notification.
    fn call(&mut self, tid: i64, key: EventKey, req: Req, call: Call, period: bool, conf: &Conf<'_>) {
        if matches!(call, Call::Other) {
            return;
        }
        let ret = req.ret;
        let end = key.ns;
        let ti = self.ix(tid);
        // The request.
        let (op, fd, open): (Op, Option<i64>, Option<Fd>) = match call {
            Call::Other => return,
            Call::Open { filename, cloexec } => (Op::Open, None, Some(Fd { filename, kind: FdType::Disk, cloexec })),
            Call::Socket => (Op::Open, None, Some(Fd { filename: SOCKET_NAME, kind: FdType::Net, cloexec: false })),
            Call::Dup => match self.procs.slab[ti].1.dup.take() {
                Some((ns, filename, kind, cloexec)) if ns == req.begin_ns => (Op::Open, None, Some(Fd { filename, kind, cloexec })),
                _ => return,
            },
            Call::Close { fd } => (Op::Close, Some(fd), None),
            Call::Read { fd } => (Op::Read, Some(fd), None),
            Call::Write { fd } => (Op::Write, Some(fd), None),
            Call::Sync { fd } => (Op::Sync, fd, None),
        };
        let ok = ret >= 0;
        // An open's descriptor is its return value.
        let fd = if open.is_some() { ok.then_some(ret) } else { fd };
        // Reads and writes: the size is what they return.
        let size = match op {
            Op::Read | Op::Write if ok => Some(ret as u64),
            _ => None,
        };
        let pi = self.parent_ix(ti);
        if ok {
            if let Some(n) = fd {
                let table = &mut self.procs.slab[pi].1.fds;
                if table.add(n, open.unwrap_or(Fd { filename: UNKNOWN_NAME, kind: FdType::Unknown, cloexec: false })) {
                    self.notify_create_fd_at(pi, n, end, period);
                }
            }
        }
        if period {
            self.count(ti, pi, op, fd, size, key, &req, conf);
        }
        if op == Op::Close && ret == 0 {
            if let Some(n) = fd {
                self.close_fd_of(pi, n, end, period);
            }
        }
    }

    /// The `io_rq_exit` notification: what is counted, for the thread at index `ti` of the
    /// process at index `pi`.
    #[allow(clippy::too_many_arguments)]
    fn count(&mut self, ti: usize, pi: usize, op: Op, fd: Option<i64>, size: Option<u64>, key: EventKey, req: &Req, conf: &Conf<'_>) {
        let ok = req.ret >= 0;
        self.stats_at(ti);
        self.stats_at(pi);
        let tid = self.procs.slab[ti].0;
        let comm = self.procs.slab[ti].1.comm;
        let selected = conf.filter.tid(tid) && conf.filter.procname(comm.as_bytes()) && conf.filter.cpu(req.cpu);
        let mut kind = FdType::Unknown;
        if ok && matches!(op, Op::Read | Op::Write) {
            let Some(cur) = fd.and_then(|n| self.created(pi)?.fds.get_mut(n)).and_then(FdList::current) else { return };
            kind = cur.kind;
            // The file's bytes (nothing below looks at them).
            if let (true, Some(sz)) = (selected, size) {
                match op {
                    Op::Read => cur.read += sz,
                    Op::Write => cur.write += sz,
                    _ => {}
                }
            }
        }
        if let (true, Some(s)) = (selected, self.created(ti)) {
            let (tseq, tpid) = (s.seq, s.pid);
            if let Some(n) = size {
                let rw = match kind {
                    FdType::Disk => &mut s.disk,
                    FdType::Net => &mut s.net,
                    FdType::Unknown => &mut s.unknown,
                };
                match op {
                    Op::Read => rw.read += n,
                    Op::Write => rw.write += n,
                    _ => {}
                }
            }
            let cat = match op {
                Op::Open => Some(OPEN),
                Op::Read => Some(READ),
                Op::Write => Some(WRITE),
                Op::Sync => Some(SYNC),
                Op::Close => None,
            };
            if let Some(c) = cat {
                let d = key.ns - req.begin_ns;
                self.latency[c].add(d);
                let heap_full = self.top[c].len() >= conf.top;
                let candidate =
                    conf.top > 0 && (!heap_full || self.top[c].peek().is_some_and(|Reverse(w)| d > w.duration || (d == w.duration && (tseq, key) < w.order)));
                if candidate {
                    // The file, as lttng-analyses' tables look it up: in the process of the
                    // thread's statistics, the opening that covers the end of the call.
                    let holder = tpid.unwrap_or(tid);
                    let path = fd.and_then(|n| self.stats_ref(holder).and_then(|s| s.fds.get(n)).and_then(|l| l.at(key.ns)).map(|s| s.filename));
                    let row = TopCall { duration: d, order: (tseq, key), begin_ns: req.begin_ns, end_ns: key.ns, name: req.name, size, tid, fd, path };
                    let heap = &mut self.top[c];
                    if heap_full {
                        heap.pop();
                    }
                    heap.push(Reverse(row));
                }
            }
        }
        let pc = self.procs.slab[pi].1.comm;
        if let Some(s) = self.created(ti) {
            s.comm = comm;
        }
        if let Some(s) = self.created(pi) {
            s.comm = pc;
        }
    }
}

/// A completed call's numbers.
#[derive(Clone, Copy, Debug)]
struct Req {
    begin_ns: i64,
    ret: i64,
    cpu: u32,
    name: u16,
}

// ---------------------------------------------------------------------------------------------
// The analysis.
// ---------------------------------------------------------------------------------------------

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
    pool: Pool<(EventKey, Fact)>,
    /// The file names met.
    paths: FileNames,
    /// Buffers of the tracker's pieces, reused.
    pieces: Arc<Pool<Piece<IoEntry, IoExit>>>,
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
        Io { map: KernelMap::new(set), names, io_calls, filter, top, pool: Pool::new(), paths: FileNames::default(), pieces: Arc::default() }
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
    counter: EventCounter,
    /// This chunk's facts, in stream order.
    facts: Vec<(EventKey, Fact)>,
    /// Facts not run yet, as runs sorted by key.
    runs: Vec<Run>,
    model: Model,
    cache: IdMap<(usize, usize), u16>,
    /// Numbers of the file names this chunk met.
    names: NameCache,
    first_ns: Option<i64>,
    last_ns: Option<i64>,
}

/// Facts sorted by key (a chunk's, or those a merge resolved), and how many of them are run.
#[derive(Debug, Default)]
struct Run {
    facts: Vec<(EventKey, Fact)>,
    done: usize,
}

impl Run {
    /// The key of the next fact to run.
    #[inline]
    fn head(&self) -> Option<EventKey> {
        self.facts.get(self.done).map(|(k, _)| *k)
    }
}

impl IoState {
    /// Runs the model over the facts older than `frontier` (all with `None`), in key order (on
    /// equal keys, the earlier run first: a [`LoserTree`] over the runs). The buffers of the
    /// runs used up go to `pool`.
    ///
    fn run_facts(&mut self, frontier: Option<i64>, conf: &Conf<'_>, pool: &Pool<(EventKey, Fact)>) {
        let head = |r: &Run| r.head().filter(|k| k.is_before(frontier));
        let mut tree = LoserTree::new(self.runs.iter().map(head).collect());
        while let Some(i) = tree.winner() {
            let Some(run) = self.runs.get_mut(i) else { break };
            let Some((key, fact)) = run.facts.get(run.done) else { break };
            self.model.apply(*key, fact, conf);
            run.done += 1;
            tree.replace(head(run));
        }
        self.runs.retain_mut(|r| {
            if r.done < r.facts.len() {
                return true;
            }
            pool.give(std::mem::take(&mut r.facts));
            false
        });
    }

    fn add_run(&mut self, mut facts: Vec<(EventKey, Fact)>) {
        if !facts.is_empty() {
            sort_run(&mut facts, |(k, _)| *k);
            self.runs.push(Run { facts, done: 0 });
        }
    }
}

/// One row of the per-process tables; serialized with the totals: `{"tid", "pid", "comm",
/// "read", "write", "disk": Rw, "net": Rw, "unknown": Rw}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessIo {
    /// Thread id (rows are per thread, as lttng-iousagetop's).
    pub tid: i64,
    /// Its process, when known.
    pub pid: Option<i64>,
    /// Its name.
    pub comm: String,
    /// To and from files opened by `open`/`openat`.
    pub disk: Rw,
    /// To and from sockets.
    pub net: Rw,
    /// To and from other descriptors.
    pub unknown: Rw,
}

impl ProcessIo {
    /// All bytes.
    pub fn total(&self) -> Rw {
        Rw { read: self.disk.read + self.net.read + self.unknown.read, write: self.disk.write + self.net.write + self.unknown.write }
    }
}

impl Serialize for ProcessIo {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let total = self.total();
        let mut st = s.serialize_struct("ProcessIo", 8)?;
        st.serialize_field("tid", &self.tid)?;
        st.serialize_field("pid", &self.pid)?;
        st.serialize_field("comm", &self.comm)?;
        st.serialize_field("read", &total.read)?;
        st.serialize_field("write", &total.write)?;
        st.serialize_field("disk", &self.disk)?;
        st.serialize_field("net", &self.net)?;
        st.serialize_field("unknown", &self.unknown)?;
        st.end()
    }
}

/// One row of the per-file tables; serialized as `{"path", "read", "write"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileIo {
    /// The path (`unknown`, `socket`, `pipe...` and `anon_inode...` are followed by the name of
    /// the process that holds them).
    pub path: String,
    /// Bytes.
    #[serde(flatten)]
    pub bytes: Rw,
}

/// One of the longest calls; serialized with its duration: `{"begin_ns", "end_ns",
/// "duration_ns", "syscall", "size", "comm", "tid", "fd", "path"}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlowCall {
    /// Entry time (ns from the clock's origin).
    pub begin_ns: i64,
    /// Exit time.
    pub end_ns: i64,
    /// The system call.
    pub syscall: String,
    /// Bytes read or written (reads and writes that succeeded).
    pub size: Option<u64>,
    /// The thread's name.
    pub comm: String,
    /// The thread.
    pub tid: i64,
    /// The descriptor.
    pub fd: Option<i64>,
    /// Its file, when known.
    pub path: Option<String>,
}

impl SlowCall {
    /// Duration in ns.
    pub fn duration_ns(&self) -> i64 {
        self.end_ns - self.begin_ns
    }
}

impl Serialize for SlowCall {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("SlowCall", 9)?;
        st.serialize_field("begin_ns", &self.begin_ns)?;
        st.serialize_field("end_ns", &self.end_ns)?;
        st.serialize_field("duration_ns", &self.duration_ns())?;
        st.serialize_field("syscall", &self.syscall)?;
        st.serialize_field("size", &self.size)?;
        st.serialize_field("comm", &self.comm)?;
        st.serialize_field("tid", &self.tid)?;
        st.serialize_field("fd", &self.fd)?;
        st.serialize_field("path", &self.path)?;
        st.end()
    }
}

/// The result of `io`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IoReport {
    /// First and last kernel event times read (ns from the clock's origin).
    pub begin_ns: Option<i64>,
    /// See `begin_ns`.
    pub end_ns: Option<i64>,
    /// Per thread with I/O, in order of first I/O (lttng-analyses' order among equals).
    pub processes: Vec<ProcessIo>,
    /// Per file name with bytes read or written.
    pub files: Vec<FileIo>,
    /// Latencies of open, read, write and sync calls ([`CATEGORIES`]).
    pub latency: [Durations; 4],
    /// The longest calls of each category, longest first.
    pub top: [Vec<SlowCall>; 4],
}

impl Analysis for Io {
    type State = IoState;
    type Output = IoReport;

    fn new_state(&self, chunk: &Chunk) -> IoState {
        IoState { live: true, tracker: Tracker::with_spare(chunk, &self.pieces), facts: self.pool.take(records_hint(chunk)), ..IoState::default() }
    }

    fn on_event(&self, st: &mut IoState, ev: &EventView<'_, '_>, cx: &Context<'_, '_>) {
        const WANT: Kinds = Kinds::of(&[What::SysEntry, What::SysExit, What::SchedSwitch, What::Fork, What::Exec, What::StatedumpProcess, What::StatedumpFd]);
        let Some(k) = self.map.decode_only(ev, cx, WANT) else { return };
        // lttng-analyses stops reading at the end of the range.
        if self.filter.end_ns.is_some_and(|e| k.ns > e) {
            return;
        }
        if self.filter.time(k.ns) {
            st.first_ns = Some(st.first_ns.map_or(k.ns, |f| f.min(k.ns)));
            st.last_ns = Some(st.last_ns.map_or(k.ns, |l| l.max(k.ns)));
        }
        st.tracker.saw(k.ns);
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
                st.facts.push((key, Fact::Fork(Fork { parent_pid, parent_comm, child_tid, child_pid, child_comm: Comm::new(child_comm) })));
            }
            Kind::ProcessExec { tid, .. } => {
                let key = st.counter.key(k.ns, cx);
                let procname = self.map.extra(ev, cx, Extra::Procname).and_then(Field::as_bytes).map(Comm::new);
                st.facts.push((key, Fact::Exec { tid, procname }));
            }
            Kind::StatedumpProcess { tid, pid, name, .. } => {
                let key = st.counter.key(k.ns, cx);
                st.facts.push((key, Fact::StatedumpProcess { tid, pid, name: Comm::new(name) }));
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
        let facts = std::mem::take(&mut st.facts);
        if facts.is_empty() {
            self.pool.give(facts);
        } else {
            st.add_run(facts);
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
        let mut late = Vec::new();
        a.tracker.merge(std::mem::take(&mut b.tracker), &mut FactSink { out: &mut late });
        a.runs.append(&mut b.runs);
        a.add_run(late);
        if a.tracker.is_root() {
            if let Some(f) = frontier {
                let conf = Conf { filter: &self.filter, top: self.top };
                a.run_facts(Some(f), &conf, &self.pool);
            }
        }
        a.first_ns = crate::engine::earliest(a.first_ns, b.first_ns);
        a.last_ns = crate::engine::latest(a.last_ns, b.last_ns);
        a
    }

    fn finish(&self, mut st: IoState) -> IoReport {
        let mut late = Vec::new();
        st.tracker.finish(&mut FactSink { out: &mut late });
        st.add_run(late);
        let conf = Conf { filter: &self.filter, top: self.top };
        st.run_facts(None, &conf, &self.pool);
        let model = st.model;
        // Per thread, in creation order.
        let mut stats: Vec<(i64, &Stats)> = model.procs.iter().filter_map(|(t, p)| p.stats.as_deref().map(|s| (t, s))).collect();
        stats.sort_by_key(|(_, s)| s.seq);
        let procname_ok = |c: &Comm| self.filter.procname(c.as_bytes());
        let processes: Vec<ProcessIo> = stats
            .iter()
            .filter(|(tid, s)| self.filter.tid(*tid) && procname_ok(&s.comm))
            .map(|(tid, s)| ProcessIo { tid: *tid, pid: s.pid, comm: s.comm.to_string(), disk: s.disk, net: s.net, unknown: s.unknown })
            .filter(|p| p.total() != Rw::default())
            .collect();
        let names = self.paths.lock();
        let files = file_rows(&stats, &model.pasts, &names);
        let top = model.top.clone().map(|h| {
            let mut v: Vec<TopCall> = h.into_iter().map(|Reverse(t)| t).collect();
            v.sort_by(|a, b| b.cmp(a));
            v.into_iter()
                .map(|t| SlowCall {
                    begin_ns: t.begin_ns,
                    end_ns: t.end_ns,
                    syscall: self.names.name(t.name).to_string(),
                    size: t.size,
                    comm: model.stats_ref(t.tid).map(|s| s.comm.to_string()).unwrap_or_default(),
                    tid: t.tid,
                    fd: t.fd,
                    path: t.path.map(|p| names.name(p).to_string()),
                })
                .collect()
        });
        IoReport { begin_ns: st.first_ns, end_ns: st.last_ns, processes, files, latency: model.latency, top }
    }
}

/// Names of files whose per-file rows are per holder (`unknown (bash)`).
const GENERIC_NAMES: [&str; 4] = ["pipe", "socket", "anon_inode", "unknown"];

/// The per-file rows: every opening of every descriptor of every thread's statistics (`stats`,
/// in creation order), added up by path. Rows come in order of first appearance: threads in
/// order, and within a thread, names in order of their first opening when openings are listed
/// by descriptor number, earlier openings first. A name is a path, except for the generic
/// ones, followed by the holder's name.
fn file_rows(stats: &[(i64, &Stats)], pasts: &Pasts, names: &NameTable) -> Vec<FileIo> {
    let mut files: Vec<FileIo> = Vec::new();
    // Per name: the row of its path (ordinary names), and where it is in `order` for the thread
    // at hand (valid when `stamp` is that thread's).
    let mut row_of: Vec<u32> = vec![u32::MAX; names.names.len()];
    let mut slot: Vec<(u32, u32)> = vec![(u32::MAX, 0); names.names.len()];
    let mut generic_rows: IdMap<String, usize> = IdMap::default();
    let mut order: Vec<(NameId, Rw)> = Vec::new();
    let mut fds: Vec<usize> = Vec::new();
    for (stamp, (_, s)) in stats.iter().enumerate() {
        let stamp = stamp as u32;
        order.clear();
        fds.clear();
        fds.extend(0..s.fds.lists.len());
        fds.sort_unstable_by_key(|&i| s.fds.lists.get(i).map_or(0, |(fd, _)| *fd));
        for &i in &fds {
            let Some((_, list)) = s.fds.lists.get(i) else { continue };
            let openings = list.past(pasts).chain(list.last.iter().map(|l| (l.filename, l.read, l.write)));
            for (name, r, w) in openings {
                if r == 0 && w == 0 {
                    continue;
                }
                let Some(sl) = slot.get_mut(name as usize) else { continue };
                if sl.0 != stamp {
                    *sl = (stamp, order.len() as u32);
                    order.push((name, Rw::default()));
                }
                if let Some((_, rw)) = order.get_mut(sl.1 as usize) {
                    rw.read += r;
                    rw.write += w;
                }
            }
        }
        for &(name, rw) in &order {
            let text = names.name(name);
            let row = if GENERIC_NAMES.iter().any(|g| text.starts_with(g)) {
                let path = format!("{text} ({})", s.comm);
                *generic_rows.entry(path).or_insert_with_key(|path| {
                    files.push(FileIo { path: path.clone(), bytes: Rw::default() });
                    files.len() - 1
                })
            } else {
                match row_of.get_mut(name as usize) {
                    Some(r) if *r != u32::MAX => *r as usize,
                    Some(r) => {
                        *r = files.len() as u32;
                        files.push(FileIo { path: text.to_string(), bytes: Rw::default() });
                        files.len() - 1
                    }
                    None => continue,
                }
            };
            if let Some(f) = files.get_mut(row) {
                f.bytes.read += rw.read;
                f.bytes.write += rw.write;
            }
        }
    }
    files
}

impl IoReport {
    /// Processes by bytes read (or written), most first; ties in lttng-analyses' order.
    pub fn processes_by(&self, write: bool) -> Vec<&ProcessIo> {
        let mut v: Vec<&ProcessIo> = self.processes.iter().filter(|p| if write { p.total().write > 0 } else { p.total().read > 0 }).collect();
        v.sort_by_key(|p| Reverse(if write { p.total().write } else { p.total().read }));
        v
    }

    /// Files by bytes read (or written), most first.
    pub fn files_by(&self, write: bool) -> Vec<&FileIo> {
        let mut v: Vec<&FileIo> = self.files.iter().filter(|f| if write { f.bytes.write > 0 } else { f.bytes.read > 0 }).collect();
        v.sort_by_key(|f| Reverse(if write { f.bytes.write } else { f.bytes.read }));
        v
    }
}

/// `{"begin_ns", "end_ns", "processes": [ProcessIo], "files": [FileIo], "latency": {"open":
/// Durations, "read": ..., "write": ..., "sync": ...}, "top": {"open": [SlowCall], ...}}`.
impl Serialize for IoReport {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        /// `[T; 4]` as an object keyed by [`CATEGORIES`].
        struct ByCategory<'a, T>(&'a [T; 4]);
        impl<T: Serialize> Serialize for ByCategory<'_, T> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_map(CATEGORIES.iter().zip(self.0.iter()))
            }
        }
        let mut st = s.serialize_struct("IoReport", 6)?;
        st.serialize_field("begin_ns", &self.begin_ns)?;
        st.serialize_field("end_ns", &self.end_ns)?;
        st.serialize_field("processes", &self.processes)?;
        st.serialize_field("files", &self.files)?;
        st.serialize_field("latency", &ByCategory(&self.latency))?;
        st.serialize_field("top", &ByCategory(&self.top))?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_is_associative() {
        crate::testing::check("io", |set| Io::new(set, Filter::default(), 5));
    }

    /// An `FdMap` answers like a map whatever the numbers (negative, small, large, dense or
    /// sparse), and lists numbers in increasing order.
    #[test]
    fn fd_map_is_a_map() {
        use std::collections::BTreeMap;
        let mut seed = 3u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as i64
        };
        for round in 0..40 {
            let mut m: FdMap<u32> = FdMap::default();
            let mut want: BTreeMap<i64, u32> = BTreeMap::new();
            for step in 0..3000u32 {
                let fd = match next() % 8 {
                    0 => -(next() % 5),
                    1 => 1 << (next() % 20),
                    2 => next() % 50_000,
                    _ => (step as i64) / 2 + next() % (8 << (round % 6)),
                };
                if next() % 3 == 0 {
                    m.remove(fd);
                    want.remove(&fd);
                } else {
                    let added = m.add(fd, step);
                    assert_eq!(added, !want.contains_key(&fd), "round {round} step {step} fd {fd}");
                    want.entry(fd).or_insert(step);
                }
                if step % 97 == 0 {
                    let mut probe = fd;
                    for _ in 0..20 {
                        assert_eq!(m.get(probe), want.get(&probe), "fd {probe}");
                        probe = next() % 70_000 - 10;
                    }
                    if let Some(v) = m.get_mut(fd) {
                        *v += 1;
                        if let Some(w) = want.get_mut(&fd) {
                            *w += 1;
                        }
                    }
                }
            }
            assert_eq!(m.numbers(|_| true), want.keys().copied().collect::<Vec<_>>());
            assert_eq!(m.numbers(|v| v % 2 == 0), want.iter().filter(|(_, v)| *v % 2 == 0).map(|(k, _)| *k).collect::<Vec<_>>());
            assert!(m.dense.len() <= m.bound && m.dense.last().is_none_or(Option::is_some));
            assert!(m.other.keys().all(|&n| m.slot(n).is_none()));
        }
    }
}
