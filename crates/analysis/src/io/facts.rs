//! What a chunk of `io` hands to the descriptor model: the system call entries and exits the
//! tracker pairs, and *facts* — completed I/O calls, `dup` and `connect` entries, switches,
//! execs, state dump descriptors — and *links* (forks, state dump records of processes), in
//! event order.

use crate::kernel::Comm;
use crate::order::EventKey;
use crate::tracker::Sink;

use super::names::NameId;

/// `O_CLOEXEC` on Linux.
pub(super) const O_CLOEXEC: i64 = 0o2_000_000;
/// `AF_INET`.
pub(super) const AF_INET: i64 = 2;

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
pub(super) enum Call {
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
    pub(super) ns: i64,
    pub(super) name: u16,
    pub(super) call: Call,
}

/// A system call exit, for `io`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IoExit {
    pub(super) key: EventKey,
    pub(super) ret: i64,
    pub(super) cpu: u32,
}

/// An entry effect that needs the thread (when a chunk does not know it yet).
#[derive(Clone, Copy, Debug)]
pub(crate) struct IoItem {
    pub(super) key: EventKey,
    pub(super) item: Item,
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Item {
    /// A `dup`-like entry: the original is looked up (and `dup2`'s target closed) now.
    Dup { dup3: bool, oldfd: i64, newfd: Option<i64>, cloexec: bool },
    /// `connect` to an IPv4 address: the socket takes its name.
    Connect { fd: i64, name: NameId },
}

/// What the descriptor model reads, in time order (plain data: a run of facts is dropped
/// without going through them), besides the [`Link`]s. 48 bytes: a chunk keeps one per I/O
/// call and switch until the merges pass it.
#[derive(Clone, Copy, Debug)]
pub(super) enum Fact {
    /// `next_tid` is switched in with this name.
    Switch {
        tid: i64,
        comm: Comm,
    },
    Exec {
        tid: i64,
        procname: Option<Comm>,
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

/// What links threads into processes: the router's input, run by the model where the router
/// says (few, and larger than facts: kept apart so that the many facts stay small).
#[derive(Clone, Copy, Debug)]
pub(super) enum Link {
    Fork(Fork),
    StatedumpProcess {
        tid: i64,
        pid: i64,
        name: Comm,
    },
}

// A chunk's facts take about as many bytes as its events: keep them at 48.
const _: () = assert!(std::mem::size_of::<Fact>() <= 48);

#[derive(Clone, Copy, Debug)]
pub(super) struct Fork {
    pub(super) parent_pid: i64,
    pub(super) parent_comm: Comm,
    pub(super) child_tid: i64,
    pub(super) child_pid: i64,
    pub(super) child_comm: Comm,
}

/// Where the tracker's results go: facts, with the key of the event that completes them.
pub(super) struct FactSink<'a> {
    pub(super) out: &'a mut Vec<(EventKey, Fact)>,
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
