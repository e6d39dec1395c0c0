//! The descriptor model: lttng-analyses' automaton of threads, processes and descriptor
//! tables, run over the facts in event order, and the statistics it keeps (bytes per thread
//! and per opening, latencies, the longest calls).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::durations::Durations;
use crate::errno::is_error_return;
use crate::filter::Filter;
use crate::id_map::IdMap;
use crate::kernel::Comm;
use crate::order::EventKey;

use super::facts::{Call, Fact, FdType, Fork, Item, Link};
use super::fds::{Fd, FdList, FdLists, FdStats, FdTable, Pasts};
use super::names::{NameId, EMPTY_NAME, SOCKET_NAME, UNKNOWN_NAME};
use super::report::Rw;

/// What a `dup`-like entry found: (entry time, name, kind, close-on-exec).
pub(super) type DupLookup = (i64, NameId, FdType, bool);

#[derive(Clone, Debug, Default)]
pub(super) struct Proc {
    pub(super) pid: Option<i64>,
    pub(super) comm: Comm,
    pub(super) fds: FdTable,
    /// A `dup`-like entry's lookup.
    pub(super) dup: Option<DupLookup>,
    /// The thread's statistics (lttng-analyses keeps them by thread id, apart from the
    /// thread's state: they survive a `fork` that reuses the id).
    pub(super) stats: Option<Box<Stats>>,
}

/// Where a thread's statistics stand in lttng-analyses' list of them (its order of
/// creation): the key of the fact that created them, and their rank among those it created.
pub(super) type Seq = (EventKey, u32);

/// Per-thread statistics (lttng-analyses' `ProcessIOStats`).
#[derive(Clone, Debug)]
pub(super) struct Stats {
    pub(super) seq: Seq,
    pub(super) pid: Option<i64>,
    pub(super) comm: Comm,
    pub(super) disk: Rw,
    pub(super) net: Rw,
    pub(super) unknown: Rw,
    pub(super) fds: FdLists,
    /// The earlier openings of `fds`' lists, by name.
    pub(super) pasts: Pasts,
    /// The thread's per-file rows, once made at the end (`report::thread_rows`).
    pub(super) rows: Option<Vec<(NameId, Rw)>>,
}

/// A candidate row of a "longest calls" table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct TopCall {
    pub(super) duration: i64,
    /// Order among equal durations: thread statistics creation, then exit.
    pub(super) order: (Seq, EventKey),
    pub(super) begin_ns: i64,
    pub(super) end_ns: i64,
    pub(super) name: u16,
    pub(super) size: Option<u64>,
    pub(super) tid: i64,
    pub(super) fd: Option<i64>,
    pub(super) path: Option<NameId>,
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
pub(super) const OPEN: usize = 0;
pub(super) const READ: usize = 1;
pub(super) const WRITE: usize = 2;
pub(super) const SYNC: usize = 3;
/// Their names in reports.
pub const CATEGORIES: [&str; 4] = ["open", "read", "write", "sync"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    Open,
    Read,
    Write,
    Close,
    Sync,
}

/// Threads by id: an index into a slab, so that a fact looks each thread up once (directly for
/// the usual small ids).
#[derive(Debug, Default)]
pub(super) struct Procs {
    /// 1 + the slab index of thread ids below [`DENSE_TIDS`] (0: none yet).
    pub(super) dense: Vec<u32>,
    /// The slab index of the other thread ids.
    pub(super) index: IdMap<i64, u32>,
    pub(super) slab: Vec<(i64, Proc)>,
}

/// Thread ids below this are indexed directly (the table grows only as far as the ids met;
/// each shard of the model has one, so it stays small: larger ids go to a map).
pub(super) const DENSE_TIDS: i64 = 1 << 16;

impl Procs {
    #[inline]
    pub(super) fn find(&self, tid: i64) -> Option<usize> {
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
    pub(super) fn ensure_with(&mut self, tid: i64, make: impl FnOnce() -> Proc) -> usize {
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
    pub(super) fn replace(&mut self, tid: i64, p: Proc) -> Option<Proc> {
        match self.find(tid) {
            Some(i) => Some(std::mem::replace(&mut self.slab[i].1, p)),
            None => {
                self.ensure_with(tid, || p);
                None
            }
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (i64, &Proc)> {
        self.slab.iter().map(|(t, p)| (*t, p))
    }

    /// Takes `tid`'s state out (the last one of the slab takes its place).
    pub(super) fn remove(&mut self, tid: i64) -> Option<Proc> {
        let i = self.find(tid)?;
        if (0..DENSE_TIDS).contains(&tid) {
            self.dense[tid as usize] = 0;
        } else {
            self.index.remove(&tid);
        }
        let (_, p) = self.slab.swap_remove(i);
        if let Some(&(moved, _)) = self.slab.get(i) {
            if (0..DENSE_TIDS).contains(&moved) {
                self.dense[moved as usize] = i as u32 + 1;
            } else {
                self.index.insert(moved, i as u32);
            }
        }
        Some(p)
    }
}

/// The model: threads and their descriptor tables, and what is counted.
#[derive(Debug, Default)]
pub(super) struct Model {
    pub(super) procs: Procs,
    /// The key of the fact being run, and how many statistics it created so far.
    pub(super) now: Seq,
    pub(super) latency: [Durations; 4],
    pub(super) top: [BinaryHeap<Reverse<TopCall>>; 4],
}

/// What the model needs from the analysis.
pub(super) struct Conf<'a> {
    pub(super) filter: &'a Filter,
    pub(super) top: usize,
}

pub(super) fn new_proc(tid: i64) -> Proc {
    Proc { pid: (tid == 0).then_some(0), ..Proc::default() }
}

impl Model {
    /// The index of `tid`'s state, created when missing.
    #[inline]
    pub(super) fn ix(&mut self, tid: i64) -> usize {
        self.procs.ensure_with(tid, || new_proc(tid))
    }

    #[inline]
    pub(super) fn proc(&mut self, tid: i64) -> &mut Proc {
        let i = self.ix(tid);
        &mut self.procs.slab[i].1
    }

    /// `_get_parent_proc`: the thread group leader of a thread whose process is known.
    #[inline]
    pub(super) fn parent_of(&mut self, tid: i64) -> i64 {
        let i = self.ix(tid);
        let p = self.parent_ix(i);
        self.procs.slab[p].0
    }

    /// [`parent_of`](Self::parent_of) by index.
    #[inline]
    pub(super) fn parent_ix(&mut self, i: usize) -> usize {
        let (tid, ref p) = self.procs.slab[i];
        match p.pid {
            Some(pid) if pid != tid => self.ix(pid),
            _ => i,
        }
    }

    /// The statistics of `tid`, created from its state when missing.
    #[inline]
    pub(super) fn stats(&mut self, tid: i64) -> &mut Stats {
        let i = self.ix(tid);
        self.stats_at(i)
    }

    /// The statistics of the thread at index `i`, created from its state when missing.
    #[inline]
    pub(super) fn stats_at(&mut self, i: usize) -> &mut Stats {
        let now = &mut self.now;
        let p = &mut self.procs.slab[i].1;
        let (pid, comm) = (p.pid, p.comm);
        p.stats.get_or_insert_with(|| {
            let s = Box::new(Stats { seq: *now, pid, comm, disk: Rw::default(), net: Rw::default(), unknown: Rw::default(), fds: FdLists::default(), pasts: Pasts::default(), rows: None });
            now.1 += 1;
            s
        })
    }

    /// The statistics of the thread at index `i`, if created.
    #[inline]
    pub(super) fn created(&mut self, i: usize) -> Option<&mut Stats> {
        self.procs.slab.get_mut(i)?.1.stats.as_deref_mut()
    }

    pub(super) fn stats_ref(&self, tid: i64) -> Option<&Stats> {
        self.procs.find(tid).and_then(|i| self.procs.slab[i].1.stats.as_deref())
    }

    pub(super) fn stats_mut(&mut self, tid: i64) -> Option<&mut Stats> {
        let i = self.procs.find(tid)?;
        self.procs.slab[i].1.stats.as_deref_mut()
    }

    /// `create_fd` notification: `holder`'s descriptor `fd` (in the table) gets an opening.
    pub(super) fn notify_create_fd(&mut self, holder: i64, fd: i64, ts: i64, period: bool) {
        if !period {
            return;
        }
        if let Some(i) = self.procs.find(holder) {
            self.notify_create_fd_at(i, fd, ts, true);
        }
    }

    /// [`notify_create_fd`](Self::notify_create_fd) by index.
    pub(super) fn notify_create_fd_at(&mut self, i: usize, fd: i64, ts: i64, period: bool) {
        if !period {
            return;
        }
        let Some(f) = self.procs.slab[i].1.fds.get(fd).copied() else { return };
        let s = self.stats_at(i);
        s.fds.entry(fd).push(FdStats { filename: f.filename, kind: f.kind, open_ts: ts, close_ts: None, read: 0, write: 0 }, &mut s.pasts);
    }

    /// `close_fd` notification.
    pub(super) fn notify_close_fd(&mut self, holder: i64, fd: i64, ts: i64, period: bool) {
        if !period {
            return;
        }
        if let Some(cur) = self.stats_mut(holder).and_then(|s| s.fds.get_mut(fd)).and_then(FdList::current) {
            cur.close_ts = Some(ts);
        }
    }

    /// `update_fd` notification: the descriptor's (new) name goes to its last opening.
    pub(super) fn notify_update_fd(&mut self, holder: i64, fd: i64, ts: i64, period: bool) {
        if !period {
            return;
        }
        let Some(hi) = self.procs.find(holder) else { return };
        let Some(f) = self.procs.slab[hi].1.fds.get(fd).copied() else { return };
        let s = self.stats_at(hi);
        let list = s.fds.entry(fd);
        match list.last.as_mut() {
            Some(l) => l.filename = f.filename,
            None => list.push(FdStats { filename: f.filename, kind: f.kind, open_ts: ts, close_ts: None, read: 0, write: 0 }, &mut s.pasts),
        }
    }

    /// `_close_fd`: removes `fd` from the table of `tid`'s process.
    pub(super) fn close_fd(&mut self, tid: i64, fd: i64, ts: i64, period: bool) {
        let i = self.ix(tid);
        let parent = self.parent_ix(i);
        self.close_fd_of(parent, fd, ts, period);
    }

    /// Removes `fd` from the table of the process at index `parent`.
    pub(super) fn close_fd_of(&mut self, parent: usize, fd: i64, ts: i64, period: bool) {
        let p = &mut self.procs.slab[parent].1;
        if period {
            if let Some(cur) = p.stats.as_deref_mut().and_then(|s| s.fds.get_mut(fd)).and_then(FdList::current) {
                cur.close_ts = Some(ts);
            }
        }
        p.fds.remove(fd);
    }

    /// The parent's side of a `fork`: the parent's state, and a copy of its table.
    pub(super) fn fork_parent(&mut self, parent_pid: i64, parent_comm: Comm) -> FdTable {
        let p = self.proc(parent_pid);
        p.pid = Some(parent_pid);
        p.comm = parent_comm;
        p.fds.clone()
    }

    /// The child's side of a `fork` at `key`: it gets `fds`, the parent's table.
    pub(super) fn fork_child(&mut self, key: EventKey, f: &Fork, fds: FdTable, conf: &Conf<'_>) {
        self.start(key);
        let ts = key.ns;
        let period = conf.filter.time(ts);
        let numbers = if period { fds.numbers(|_| true) } else { Vec::new() };
        let stats = self.procs.find(f.child_tid).and_then(|i| self.procs.slab[i].1.stats.take());
        self.procs.replace(f.child_tid, Proc { pid: Some(f.child_pid), comm: f.child_comm, fds, dup: None, stats });
        for fd in numbers {
            self.notify_create_fd(f.child_tid, fd, ts, period);
        }
    }

    /// Starts running the fact at `key`.
    #[inline]
    fn start(&mut self, key: EventKey) {
        if self.now.0 != key {
            self.now = (key, 0);
        }
    }

    /// Runs a link (a `fork` within one shard, a state dump record of a process) at `key`.
    pub(super) fn apply_link(&mut self, key: EventKey, link: &Link, conf: &Conf<'_>) {
        self.start(key);
        let ts = key.ns;
        let period = conf.filter.time(ts);
        match *link {
            Link::Fork(ref f) => {
                let fds = self.fork_parent(f.parent_pid, f.parent_comm);
                self.fork_child(key, f, fds, conf);
            }
            Link::StatedumpProcess { tid, pid, name } => {
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
                        let moved_pasts = std::mem::take(&mut s.pasts);
                        let ps = self.stats(pid);
                        for (fd, mut list) in moved.lists {
                            match ps.fds.get_mut(fd) {
                                None => {
                                    list.rehome(&moved_pasts, &mut ps.pasts);
                                    ps.fds.insert(fd, list)
                                }
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
        }
    }

    pub(super) fn apply(&mut self, key: EventKey, fact: &Fact, conf: &Conf<'_>) {
        self.start(key);
        let ts = key.ns;
        let period = conf.filter.time(ts);
        match *fact {
            Fact::Switch { tid, comm } => self.proc(tid).comm = comm,
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
    pub(super) fn call(&mut self, tid: i64, key: EventKey, req: Req, call: Call, period: bool, conf: &Conf<'_>) {
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
        let ok = !is_error_return(ret);
        // An open's descriptor is its return value.
        let fd = if open.is_some() { ok.then_some(ret) } else { fd };
        // Reads and writes: the size is what they return.
        let size = match op {
            Op::Read | Op::Write if ok => u64::try_from(ret).ok(),
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
    pub(super) fn count(&mut self, ti: usize, pi: usize, op: Op, fd: Option<i64>, size: Option<u64>, key: EventKey, req: &Req, conf: &Conf<'_>) {
        let ok = !is_error_return(req.ret);
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
pub(super) struct Req {
    pub(super) begin_ns: i64,
    pub(super) ret: i64,
    pub(super) cpu: u32,
    pub(super) name: u16,
}
