//! API stable
//!
//! Kernel events, whatever tracer wrote them: one mapping layer for the analyses.
//!
//! Kernel traces name their events in three ways:
//!
//! * LTTng 2.x (modern): `sched_switch`, `sched_waking`, `syscall_entry_open` /
//!   `syscall_exit_open`, `compat_syscall_entry_*`, `syscall_entry_unknown` (with an `id`),
//!   `irq_softirq_entry`, `timer_hrtimer_expire_entry`, `lttng_statedump_*`, ...
//! * older LTTng (2.5 and before): `sys_open` ... for every entry, and one `exit_syscall` for
//!   every exit, which does not say which call it ends (the thread's pending entry does);
//!   `softirq_entry`, `hrtimer_expire_entry`, ...
//! * perf's CTF converter: `sched:sched_switch` (tids in `*_pid` fields), `irq:softirq_entry`,
//!   `raw_syscalls:sys_enter {id, args}` / `raw_syscalls:sys_exit {id, ret}` (names from an
//!   x86_64 number table), typed `syscalls:sys_enter_open {__syscall_nr, ...}`, and the thread
//!   and CPU of every event in `perf_tid` / `perf_cpu` payload fields.
//!
//! [`KernelMap::new`] classifies every event class of every stream class of a trace set once,
//! and finds where each field the analyses need sits in the decoded field lists, so that
//! [`KernelMap::decode`] costs an array lookup and a few indexed reads per event, not string
//! comparisons. A field whose position is not fixed (it comes after a sequence, say) is looked
//! up by name.
//!
//! One concept in one file (about a thousand lines): the classification of event classes, the
//! places of their fields, and the decoded [`KEvent`].
//!
//! ```no_run
//! use tracelens_analysis::kernel::{Kind, KernelMap};
//! # fn f(map: &KernelMap, ev: &tracelens_ctf::EventView<'_, '_>, cx: &tracelens_analysis::Context<'_, '_>) {
//! if let Some(k) = map.decode(ev, cx) {
//!     if let Kind::SchedSwitch { prev_tid, next_tid, .. } = k.kind {
//!         println!("{} cpu {}: {prev_tid} -> {next_tid}", k.ns, k.cpu);
//!     }
//! }
//! # }
//! ```

use std::borrow::Cow;

use tracelens_ctf::plan::{NodeId, NodeKind, StreamPlan};
use tracelens_ctf::{EventView, Field, Fields, Trace};
use tracelens_trace::TraceSet;

use crate::engine::Context;
use crate::kernel_syscalls;

// Their home was here; kept for the paths analyses outside this crate use.
pub use crate::id_map::{IdHasher, IdMap};
pub use crate::order::{EventCounter, EventKey};

/// A decoded kernel event: time, CPU, thread (when the event says it) and what happened.
#[derive(Clone, Copy, Debug)]
pub struct KEvent<'e> {
    /// Time in ns from the clock's origin.
    pub ns: i64,
    /// The CPU it happened on: the packet context's `cpu_id`, or perf's `perf_cpu`.
    pub cpu: u32,
    /// The thread, when the event carries it: a `tid` / `vtid` context, or perf's `perf_tid`.
    /// LTTng kernel traces usually do not: the thread is the one last switched in on `cpu`.
    pub tid: Option<i64>,
    /// The process, when the event carries it: a `pid` / `vpid` context, or `perf_pid`.
    pub pid: Option<i64>,
    /// What happened.
    pub kind: Kind<'e>,
    /// The event itself (its class name, every field).
    pub event: &'e EventView<'e, 'e>,
}

impl<'e> KEvent<'e> {
    /// The event class name as the trace spells it.
    pub fn name(&self) -> &'e str {
        &self.event.class.class.name
    }

    /// A payload field by name (`event.fields`), e.g. a system call's arguments (`fd`,
    /// `filename`, `count`, ...; perf's `raw_syscalls:sys_enter` has `args`).
    pub fn field(&self, name: &str) -> Option<&'e Field<'e>> {
        self.event.payload.get(name)
    }

    /// The payload fields.
    pub fn payload(&self) -> Fields<'e, 'e> {
        self.event.payload
    }
}

/// Text of a byte-string field (`comm`, `filename`, ...), lossy for invalid UTF-8.
pub fn text(bytes: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

/// The request flags of a block event: an LTTng bit set, or perf's `rwbs` text (`"WS"`, `"R"`...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rwbs<'e> {
    /// lttng-modules' `RWBS_FLAG_*` bits: write 1, discard 2, read 4, read-ahead 8, barrier 16,
    /// sync 32, meta 64, secure 128, flush 256, FUA 512, preflush 1024.
    Flags(u64),
    /// The kernel's text form.
    Text(&'e [u8]),
    /// The event has no such field.
    Unknown,
}

impl Rwbs<'_> {
    /// Whether the request writes.
    pub fn is_write(&self) -> bool {
        match *self {
            Rwbs::Flags(f) => f & 1 != 0,
            Rwbs::Text(t) => t.contains(&b'W'),
            Rwbs::Unknown => false,
        }
    }

    /// Whether the request reads.
    pub fn is_read(&self) -> bool {
        match *self {
            Rwbs::Flags(f) => f & (4 | 8) != 0,
            Rwbs::Text(t) => t.contains(&b'R'),
            Rwbs::Unknown => false,
        }
    }
}

/// What a kernel event says. Strings are the raw bytes of the field (see [`text`]); a field
/// the event lacks reads as 0 / empty unless it is an `Option`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind<'e> {
    /// A context switch on the event's CPU.
    SchedSwitch {
        /// The thread switched out.
        prev_tid: i64,
        /// Its name.
        prev_comm: &'e [u8],
        /// Its priority as the trace gives it (LTTng 2.x: `prio - 100`, e.g. 20; perf: 120).
        prev_prio: i64,
        /// Its state (0: runnable, i.e. preempted).
        prev_state: i64,
        /// The thread switched in.
        next_tid: i64,
        /// Its name.
        next_comm: &'e [u8],
        /// Its priority.
        next_prio: i64,
    },
    /// `sched_waking`: a wake-up starts (LTTng 2.8+).
    SchedWaking {
        /// The thread woken.
        tid: i64,
        /// Its name.
        comm: &'e [u8],
        /// Its priority.
        prio: i64,
        /// The CPU it will run on, when given.
        target_cpu: Option<u32>,
    },
    /// `sched_wakeup`: the thread is runnable.
    SchedWakeup {
        /// The thread woken.
        tid: i64,
        /// Its name.
        comm: &'e [u8],
        /// Its priority.
        prio: i64,
        /// The CPU it will run on, when given.
        target_cpu: Option<u32>,
    },
    /// `sched_wakeup_new`: a new thread is runnable.
    SchedWakeupNew {
        /// The thread woken.
        tid: i64,
        /// Its name.
        comm: &'e [u8],
        /// Its priority.
        prio: i64,
        /// The CPU it will run on, when given.
        target_cpu: Option<u32>,
    },
    /// `sched_migrate_task`.
    SchedMigrate {
        /// The thread moved.
        tid: i64,
        /// From.
        orig_cpu: u32,
        /// To.
        dest_cpu: u32,
    },
    /// `sched_process_fork`.
    ProcessFork {
        /// The forking thread.
        parent_tid: i64,
        /// Its process (not in perf traces).
        parent_pid: Option<i64>,
        /// The new thread.
        child_tid: i64,
        /// Its process (not in perf traces).
        child_pid: Option<i64>,
        /// Its name.
        child_comm: &'e [u8],
    },
    /// `sched_process_exec`.
    ProcessExec {
        /// The thread.
        tid: i64,
        /// The program.
        filename: &'e [u8],
    },
    /// `sched_process_exit`.
    ProcessExit {
        /// The thread.
        tid: i64,
    },
    /// `sched_process_free`.
    ProcessFree {
        /// The thread.
        tid: i64,
    },
    /// A system call starts (on the thread running on the CPU).
    SyscallEntry {
        /// The call (`open`, `newfstat`, ...; `unknown` for LTTng's `syscall_entry_unknown`
        /// and numbers the table does not know).
        name: &'e str,
        /// Its number, when the event gives it (`syscall_entry_unknown`, perf).
        nr: Option<i64>,
    },
    /// A system call returns.
    SyscallExit {
        /// The call; `None` for older LTTng's `exit_syscall` (it ends the thread's pending
        /// entry).
        name: Option<&'e str>,
        /// Its number, when the event gives it.
        nr: Option<i64>,
        /// The return value.
        ret: i64,
    },
    /// `irq_handler_entry`.
    IrqHandlerEntry {
        /// The interrupt line.
        irq: i64,
        /// The handler's name.
        name: &'e [u8],
    },
    /// `irq_handler_exit`.
    IrqHandlerExit {
        /// The interrupt line.
        irq: i64,
        /// The handler's return value.
        ret: i64,
    },
    /// A soft IRQ is raised.
    SoftirqRaise {
        /// Its vector.
        vec: u32,
    },
    /// A soft IRQ handler starts.
    SoftirqEntry {
        /// Its vector.
        vec: u32,
    },
    /// A soft IRQ handler ends.
    SoftirqExit {
        /// Its vector.
        vec: u32,
    },
    /// A high-resolution timer's callback starts.
    HrtimerExpireEntry {
        /// The timer.
        hrtimer: u64,
    },
    /// A high-resolution timer's callback ends.
    HrtimerExpireExit {
        /// The timer.
        hrtimer: u64,
    },
    /// `lttng_statedump_process_state`: a thread that existed when tracing started.
    StatedumpProcess {
        /// The thread.
        tid: i64,
        /// Its process.
        pid: i64,
        /// The parent process.
        ppid: i64,
        /// Its name.
        name: &'e [u8],
        /// `status` (LTTng: 1 wait-cpu? see lttng-modules: 0 unnamed, 1 wait_fork, 2 wait_cpu,
        /// 3 exit, 4 zombie, 5 wait, 6 run, 7 dead).
        status: i64,
        /// `type` (0 user thread, 1 kernel thread).
        thread_type: i64,
    },
    /// `lttng_statedump_file_descriptor`: a file open when tracing started.
    StatedumpFd {
        /// The process.
        pid: i64,
        /// The descriptor.
        fd: i64,
        /// The path.
        filename: &'e [u8],
    },
    /// `lttng_statedump_block_device`: a disk's number and name.
    StatedumpBlockDevice {
        /// Device number.
        dev: u64,
        /// Name.
        diskname: &'e [u8],
    },
    /// `block_rq_issue`: a request goes to the device.
    BlockRqIssue {
        /// Device number.
        dev: u64,
        /// First sector.
        sector: u64,
        /// Sectors.
        nr_sector: u64,
        /// Bytes, when given.
        bytes: Option<u64>,
        /// Flags.
        rwbs: Rwbs<'e>,
        /// The issuing thread, when given.
        tid: Option<i64>,
        /// Its name (may be empty).
        comm: &'e [u8],
    },
    /// `block_rq_complete`: the device is done.
    BlockRqComplete {
        /// Device number.
        dev: u64,
        /// First sector.
        sector: u64,
        /// Sectors.
        nr_sector: u64,
        /// Flags.
        rwbs: Rwbs<'e>,
        /// Error code, when given.
        errors: Option<i64>,
    },
    /// `net_dev_queue`: a packet is queued for sending.
    NetDevQueue {
        /// Bytes.
        len: u64,
        /// Interface.
        dev: &'e [u8],
    },
    /// `net_dev_xmit`: a packet was handed to the device (`rc` 0: sent).
    NetDevXmit {
        /// Bytes.
        len: u64,
        /// Interface.
        dev: &'e [u8],
        /// The driver's return code, when given.
        rc: Option<i64>,
    },
    /// `netif_receive_skb`: a packet is received.
    NetifReceiveSkb {
        /// Bytes.
        len: u64,
        /// Interface.
        dev: &'e [u8],
    },
    /// An x86 interrupt vector's handler starts: the local APIC timer or an inter-processor
    /// interrupt (LTTng `x86_irq_vectors_NAME_entry`, tracefs / perf `irq_vectors:NAME_entry`).
    IrqVectorEntry {
        /// The vector number.
        vector: i64,
        /// `NAME`: `local_timer`, `reschedule`, `call_function`, `call_function_single`,
        /// `irq_work`, `spurious_apic`, ...
        name: &'e str,
    },
    /// An x86 interrupt vector's handler ends (`..._exit`).
    IrqVectorExit {
        /// The vector number.
        vector: i64,
        /// `NAME`, as for [`Kind::IrqVectorEntry`].
        name: &'e str,
    },
    /// Anything else (see [`KEvent::name`] and [`KEvent::field`]).
    Other,
}

/// Which scope a field is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scope {
    Payload,
    Context,
    Common,
    Packet,
}

/// Where one field is found: at a fixed index of its scope's flat list (checked against the
/// node), else by name.
#[derive(Clone, Debug)]
struct Slot {
    scope: Scope,
    /// Index in the flat list, `u32::MAX` when not fixed.
    idx: u32,
    /// When `idx` is not fixed but only leaves follow the field (it comes after a sequence,
    /// say): its index counted from the end of the list (1 for the last), else 0.
    from_end: u32,
    /// Address of the expected node (for the check).
    node: usize,
    name: Box<str>,
}

impl Slot {
    /// A field the class does not have.
    fn absent() -> Slot {
        Slot { scope: Scope::Payload, idx: u32::MAX, from_end: 0, node: 0, name: "".into() }
    }

    #[inline]
    fn get<'e>(&self, ev: &'e EventView<'e, 'e>) -> Option<&'e Field<'e>> {
        let fields = match self.scope {
            Scope::Payload => ev.payload,
            Scope::Context => ev.context,
            Scope::Common => ev.common_context,
            Scope::Packet => ev.packet_context,
        };
        self.get_in(fields)
    }

    /// The field in `fields`, the flat list of its scope.
    #[inline(always)]
    fn get_in<'e>(&self, fields: Fields<'e, 'e>) -> Option<&'e Field<'e>> {
        if self.node == 0 {
            return None;
        }
        let at = if self.from_end == 0 { self.idx as usize } else { fields.list.len().wrapping_sub(self.from_end as usize) };
        if let Some(f) = fields.list.get(at) {
            if std::ptr::eq(f.node, self.node as *const _) {
                return Some(f);
            }
        }
        self.by_name(fields)
    }

    #[cold]
    #[inline(never)]
    fn by_name<'e>(&self, fields: Fields<'e, 'e>) -> Option<&'e Field<'e>> {
        if self.name.is_empty() {
            return None;
        }
        fields.get(&self.name)
    }
}

/// What an event class is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum What {
    Other,
    SchedSwitch,
    SchedWaking,
    SchedWakeup,
    SchedWakeupNew,
    SchedMigrate,
    Fork,
    Exec,
    Exit,
    Free,
    SysEntry,
    SysExit,
    IrqEntry,
    IrqExit,
    SoftirqRaise,
    SoftirqEntry,
    SoftirqExit,
    HrtimerEntry,
    HrtimerExit,
    StatedumpProcess,
    StatedumpFd,
    StatedumpBlockDevice,
    BlockIssue,
    BlockComplete,
    NetQueue,
    NetXmit,
    NetReceive,
    VectorEntry,
    VectorExit,
}

/// A set of event kinds: those an analysis wants decoded in full (the others come as
/// [`Kind::Other`], with their time, CPU and thread). See [`KernelMap::decode_only`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kinds(u32);

impl Kinds {
    /// Every kind.
    pub const ALL: Kinds = Kinds(u32::MAX);

    /// Every kind but system call entries and exits (which then come as [`Kind::Other`]).
    pub const NO_SYSCALLS: Kinds = Kinds(!Kinds::of(&[What::SysEntry, What::SysExit]).0);

    /// This set and `whats`.
    pub(crate) const fn with(self, whats: &[What]) -> Kinds {
        Kinds(self.0 | Kinds::of(whats).0)
    }

    /// The set of `whats`.
    pub(crate) const fn of(whats: &[What]) -> Kinds {
        let mut bits = 0u32;
        let mut i = 0;
        while i < whats.len() {
            bits |= 1 << whats[i] as u32;
            i += 1;
        }
        Kinds(bits)
    }

    /// The kinds in this set or in `other`.
    pub const fn union(self, other: Kinds) -> Kinds {
        Kinds(self.0 | other.0)
    }

    #[inline]
    fn has(self, w: What) -> bool {
        self.0 & (1 << w as u32) != 0
    }
}

impl<'e> KEvent<'e> {
    /// This event as [`KernelMap::decode_only`] with `want` gives it, from one decoded with
    /// more kinds: a kind outside `want` becomes [`Kind::Other`].
    #[inline]
    pub fn narrowed(&self, want: Kinds) -> KEvent<'e> {
        let mut k = *self;
        if !want.has(self.kind.what()) {
            k.kind = Kind::Other;
        }
        k
    }
}

impl Kind<'_> {
    /// The class of event it comes from.
    fn what(&self) -> What {
        match self {
            Kind::SchedSwitch { .. } => What::SchedSwitch,
            Kind::SchedWaking { .. } => What::SchedWaking,
            Kind::SchedWakeup { .. } => What::SchedWakeup,
            Kind::SchedWakeupNew { .. } => What::SchedWakeupNew,
            Kind::SchedMigrate { .. } => What::SchedMigrate,
            Kind::ProcessFork { .. } => What::Fork,
            Kind::ProcessExec { .. } => What::Exec,
            Kind::ProcessExit { .. } => What::Exit,
            Kind::ProcessFree { .. } => What::Free,
            Kind::SyscallEntry { .. } => What::SysEntry,
            Kind::SyscallExit { .. } => What::SysExit,
            Kind::IrqHandlerEntry { .. } => What::IrqEntry,
            Kind::IrqHandlerExit { .. } => What::IrqExit,
            Kind::SoftirqRaise { .. } => What::SoftirqRaise,
            Kind::SoftirqEntry { .. } => What::SoftirqEntry,
            Kind::SoftirqExit { .. } => What::SoftirqExit,
            Kind::HrtimerExpireEntry { .. } => What::HrtimerEntry,
            Kind::HrtimerExpireExit { .. } => What::HrtimerExit,
            Kind::StatedumpProcess { .. } => What::StatedumpProcess,
            Kind::StatedumpFd { .. } => What::StatedumpFd,
            Kind::StatedumpBlockDevice { .. } => What::StatedumpBlockDevice,
            Kind::BlockRqIssue { .. } => What::BlockIssue,
            Kind::BlockRqComplete { .. } => What::BlockComplete,
            Kind::NetDevQueue { .. } => What::NetQueue,
            Kind::NetDevXmit { .. } => What::NetXmit,
            Kind::NetifReceiveSkb { .. } => What::NetReceive,
            Kind::IrqVectorEntry { .. } => What::VectorEntry,
            Kind::IrqVectorExit { .. } => What::VectorExit,
            Kind::Other => What::Other,
        }
    }
}

/// How a system call event names its call.
#[derive(Clone, Debug, PartialEq, Eq)]
enum SysName {
    /// From the class name.
    Fixed(Box<str>),
    /// From the number (perf's `raw_syscalls`), with the x86_64 table or not.
    ByNumber { x86_64: bool },
    /// Not said (older LTTng's `exit_syscall`).
    None,
}

/// One event class, classified.
#[derive(Clone, Debug)]
struct ClassMap {
    what: What,
    sys: SysName,
    /// The fields of `what`, in the order [`fields_of`] lists them ([`Slot::absent`] for
    /// those the class lacks).
    slots: Box<[Slot]>,
    cpu: Option<Slot>,
    tid: Option<Slot>,
    pid: Option<Slot>,
    /// The [`Extra`] fields of a known kind ([`Slot::absent`] when missing; empty for
    /// `Other`).
    extra: Box<[Slot]>,
}

impl ClassMap {
    fn other() -> ClassMap {
        ClassMap { what: What::Other, sys: SysName::None, slots: Box::new([]), cpu: None, tid: None, pid: None, extra: Box::new([]) }
    }
}

/// Fields some analyses read beyond those of [`Kind`], found once per event class (see
/// [`KernelMap::extra`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Extra {
    Fd,
    Filename,
    Flags,
    Fildes,
    Oldfd,
    Newfd,
    Cmd,
    Family,
    V4addr,
    Dport,
    ParentComm,
    Comm,
    /// In any scope (payload first, then the contexts), as [`EventView::field`] looks.
    Procname,
}

/// The [`Extra`] fields looked up for events of kind `what` (a prefix of [`Extra`]'s order,
/// so that a field's slot is at its number).
fn extras_of(what: What) -> &'static [Extra] {
    use Extra::*;
    const ALL: [Extra; 13] = [Fd, Filename, Flags, Fildes, Oldfd, Newfd, Cmd, Family, V4addr, Dport, ParentComm, Comm, Procname];
    match what {
        What::SysEntry | What::StatedumpFd => &ALL[..10],
        What::Fork => &ALL[..11],
        What::SchedMigrate => &ALL[..12],
        What::Exec => &ALL[..],
        _ => &[],
    }
}

/// The names of the [`Extra`] fields, in their order.
const EXTRA_NAMES: [&str; 13] = ["fd", "filename", "flags", "fildes", "oldfd", "newfd", "cmd", "family", "v4addr", "dport", "parent_comm", "comm", "procname"];

/// The kernel event classes of a trace set, classified once (see the [module docs](self)).
#[derive(Clone, Debug, Default)]
pub struct KernelMap {
    /// Per trace, per stream class plan, per event class (in the plan's order).
    traces: Vec<Vec<Vec<ClassMap>>>,
}

/// The fields each kind reads, as alternatives (the first one present is used). `perf` is
/// true for perf's `subsystem:event` names, whose `*_pid` fields hold thread ids and which
/// have no process ids.
fn fields_of(what: What, perf: bool) -> Vec<&'static [&'static str]> {
    let lttng_only = |f: &'static [&'static str]| if perf { &[][..] } else { f };
    match what {
        What::Other => vec![],
        What::SchedSwitch => vec![
            &["prev_tid", "prev_pid"],
            &["prev_comm"],
            &["prev_prio"],
            &["prev_state"],
            &["next_tid", "next_pid"],
            &["next_comm"],
            &["next_prio"],
        ],
        What::SchedWaking | What::SchedWakeup | What::SchedWakeupNew => vec![&["tid", "pid"], &["comm"], &["prio"], &["target_cpu"]],
        What::SchedMigrate => vec![&["tid", "pid"], &["orig_cpu"], &["dest_cpu"]],
        What::Fork => vec![
            &["parent_tid", "parent_pid"],
            lttng_only(&["parent_pid"]),
            &["child_tid", "child_pid"],
            lttng_only(&["child_pid"]),
            &["child_comm"],
        ],
        What::Exec => vec![&["tid", "pid"], &["filename"]],
        What::Exit | What::Free => vec![&["tid", "pid"]],
        What::SysEntry => vec![&["id", "__syscall_nr", "_syscall_nr"]],
        What::SysExit => vec![&["ret"], &["id", "__syscall_nr", "_syscall_nr"]],
        What::IrqEntry => vec![&["irq"], &["name"]],
        What::IrqExit => vec![&["irq"], &["ret"]],
        What::SoftirqRaise | What::SoftirqEntry | What::SoftirqExit => vec![&["vec"]],
        What::HrtimerEntry | What::HrtimerExit => vec![&["hrtimer"]],
        What::StatedumpProcess => vec![&["tid"], &["pid"], &["ppid"], &["name"], &["status"], &["type"]],
        What::StatedumpFd => vec![&["pid"], &["fd"], &["filename"]],
        What::StatedumpBlockDevice => vec![&["dev"], &["diskname"]],
        What::BlockIssue => vec![&["dev"], &["sector"], &["nr_sector"], &["bytes"], &["rwbs"], &["tid"], &["comm"]],
        What::BlockComplete => vec![&["dev"], &["sector"], &["nr_sector"], &["rwbs"], &["errors"]],
        What::NetQueue | What::NetReceive => vec![&["len"], &["name"]],
        What::NetXmit => vec![&["len"], &["name"], &["rc"]],
        What::VectorEntry | What::VectorExit => vec![&["vector"]],
    }
}

/// Classifies an event class name: what it is, how it names its system call, whether it is
/// perf's naming.
fn classify(name: &str, x86_64: bool) -> (What, SysName, bool) {
    let fixed = |s: &str| SysName::Fixed(s.into());
    if let Some((subsys, ev)) = name.split_once(':') {
        // perf: `subsystem:event`.
        let what = match (subsys, ev) {
            ("raw_syscalls", "sys_enter") => return (What::SysEntry, SysName::ByNumber { x86_64 }, true),
            ("raw_syscalls", "sys_exit") => return (What::SysExit, SysName::ByNumber { x86_64 }, true),
            ("syscalls", _) => {
                if let Some(s) = ev.strip_prefix("sys_enter_") {
                    return (What::SysEntry, fixed(s), true);
                }
                if let Some(s) = ev.strip_prefix("sys_exit_") {
                    return (What::SysExit, fixed(s), true);
                }
                What::Other
            }
            ("sched" | "irq" | "timer" | "block" | "net", _) => plain(ev),
            ("irq_vectors", _) => vector(ev),
            _ => What::Other,
        };
        return (what, SysName::None, true);
    }
    let base = name.strip_prefix("compat_").unwrap_or(name);
    if let Some(s) = base.strip_prefix("syscall_entry_") {
        return (What::SysEntry, fixed(s), false);
    }
    if let Some(s) = base.strip_prefix("syscall_exit_") {
        return (What::SysExit, fixed(s), false);
    }
    if name == "exit_syscall" {
        return (What::SysExit, SysName::None, false);
    }
    if let Some(s) = base.strip_prefix("sys_") {
        return (What::SysEntry, fixed(s), false);
    }
    if let Some(v) = name.strip_prefix("x86_irq_vectors_") {
        return (vector(v), SysName::None, false);
    }
    (plain(name), SysName::None, false)
}

/// An x86 interrupt vector event (`NAME_entry` / `NAME_exit`, without the subsystem prefix).
fn vector(name: &str) -> What {
    if name.ends_with("_entry") {
        What::VectorEntry
    } else if name.ends_with("_exit") {
        What::VectorExit
    } else {
        What::Other
    }
}

/// `NAME` of an x86 interrupt vector event class (`x86_irq_vectors_NAME_entry`,
/// `irq_vectors:NAME_exit`, ...).
fn vector_name(class: &str) -> &str {
    let s = class.strip_prefix("x86_irq_vectors_").or_else(|| class.strip_prefix("irq_vectors:")).unwrap_or(class);
    s.strip_suffix("_entry").or_else(|| s.strip_suffix("_exit")).unwrap_or(s)
}

/// Non-syscall kernel event names (without perf's subsystem).
fn plain(name: &str) -> What {
    match name {
        "sched_switch" => What::SchedSwitch,
        "sched_waking" => What::SchedWaking,
        "sched_wakeup" => What::SchedWakeup,
        "sched_wakeup_new" => What::SchedWakeupNew,
        "sched_migrate_task" => What::SchedMigrate,
        "sched_process_fork" => What::Fork,
        "sched_process_exec" => What::Exec,
        "sched_process_exit" => What::Exit,
        "sched_process_free" => What::Free,
        "irq_handler_entry" => What::IrqEntry,
        "irq_handler_exit" => What::IrqExit,
        "irq_softirq_raise" | "softirq_raise" => What::SoftirqRaise,
        "irq_softirq_entry" | "softirq_entry" => What::SoftirqEntry,
        "irq_softirq_exit" | "softirq_exit" => What::SoftirqExit,
        "timer_hrtimer_expire_entry" | "hrtimer_expire_entry" => What::HrtimerEntry,
        "timer_hrtimer_expire_exit" | "hrtimer_expire_exit" => What::HrtimerExit,
        "lttng_statedump_process_state" => What::StatedumpProcess,
        "lttng_statedump_file_descriptor" => What::StatedumpFd,
        "lttng_statedump_block_device" => What::StatedumpBlockDevice,
        "block_rq_issue" => What::BlockIssue,
        "block_rq_complete" => What::BlockComplete,
        "net_dev_queue" => What::NetQueue,
        "net_dev_xmit" => What::NetXmit,
        "netif_receive_skb" => What::NetReceive,
        _ => What::Other,
    }
}

/// Finds the first of `names` among the direct members of the structure `root`.
fn find(plan: &StreamPlan, scope: Scope, root: Option<NodeId>, names: &[&str]) -> Option<Slot> {
    let root = root?;
    let NodeKind::Struct { fields } = &plan.node(root).kind else { return None };
    let leaf = |id: NodeId| match &plan.node(id).kind {
        NodeKind::Int(_) | NodeKind::Float { .. } | NodeKind::String => true,
        NodeKind::Array { text, .. } | NodeKind::Sequence { text, .. } => *text,
        _ => false,
    };
    for want in names {
        let mut idx = Some(1u32);
        for (p, &id) in fields.iter().enumerate() {
            let node = plan.node(id);
            if node.raw_name == *want || node.name() == *want {
                let from_end = match idx {
                    None if fields[p..].iter().all(|&f| leaf(f)) => (fields.len() - p) as u32,
                    _ => 0,
                };
                return Some(Slot { scope, idx: idx.unwrap_or(u32::MAX), from_end, node: node as *const _ as usize, name: node.raw_name.as_str().into() });
            }
            idx = idx.filter(|_| leaf(id)).map(|i| i + 1);
        }
    }
    None
}

/// Finds the first of `names` in any scope of an event class: payload, event context, stream
/// event context, packet context.
fn find_any(plan: &StreamPlan, ep: &tracelens_ctf::plan::EventPlan, names: &[&str]) -> Option<Slot> {
    find(plan, Scope::Payload, ep.payload, names)
        .or_else(|| find(plan, Scope::Context, ep.context, names))
        .or_else(|| find(plan, Scope::Common, plan.event_context, names))
        .or_else(|| find(plan, Scope::Packet, plan.packet_context, names))
}

/// Whether the trace's system call numbers are x86_64's: its env says so (`machine`, `arch`),
/// or says nothing about the architecture.
fn is_x86_64(trace: &Trace) -> bool {
    use tracelens_ctf::ir::EnvValue;
    for key in ["machine", "arch", "architecture"] {
        if let Some(EnvValue::Str(s)) = trace.class.env(key) {
            return matches!(s.as_str(), "x86_64" | "amd64" | "x86-64");
        }
    }
    true
}

impl KernelMap {
    /// Classifies every event class of every trace of `set`. User-space traces (env
    /// `domain = "ust"`) and streams without a CPU field give no kernel events.
    pub fn new(set: &TraceSet) -> KernelMap {
        let traces = set.traces.iter().map(Self::trace_map).collect();
        KernelMap { traces }
    }

    fn trace_map(trace: &Trace) -> Vec<Vec<ClassMap>> {
        use tracelens_ctf::ir::EnvValue;
        let ust = matches!(trace.class.env("domain"), Some(EnvValue::Str(d)) if d == "ust");
        let x86_64 = is_x86_64(trace);
        trace
            .plans
            .iter()
            .map(|plan| {
                // What the stream class's scopes hold, the same for all its event classes.
                let common_cpu = || find(plan, Scope::Common, plan.event_context, &["cpu_id", "perf_cpu"]);
                let packet_cpu = find(plan, Scope::Packet, plan.packet_context, &["cpu_id", "perf_cpu"]);
                let (common_cpu, common_tid, common_pid) = if ust {
                    (None, None, None)
                } else {
                    (common_cpu(), find(plan, Scope::Common, plan.event_context, &["tid", "vtid"]), find(plan, Scope::Common, plan.event_context, &["pid", "vpid"]))
                };
                plan.events
                    .iter()
                    .map(|ep| {
                        if ust {
                            return ClassMap::other();
                        }
                        // As `find_any`: payload, event context, stream event context, packet context.
                        let cpu = find(plan, Scope::Payload, ep.payload, &["cpu_id", "perf_cpu"])
                            .or_else(|| find(plan, Scope::Context, ep.context, &["cpu_id", "perf_cpu"]))
                            .or_else(|| common_cpu.clone())
                            .or_else(|| packet_cpu.clone());
                        let Some(cpu) = cpu else { return ClassMap::other() };
                        let (what, sys, perf) = classify(&ep.class.name, x86_64);
                        let slots = fields_of(what, perf).into_iter().map(|names| find(plan, Scope::Payload, ep.payload, names).unwrap_or_else(Slot::absent)).collect();
                        let tid = find(plan, Scope::Context, ep.context, &["tid", "vtid"])
                            .or_else(|| common_tid.clone())
                            .or_else(|| find(plan, Scope::Payload, ep.payload, &["perf_tid"]));
                        let pid = find(plan, Scope::Context, ep.context, &["pid", "vpid"])
                            .or_else(|| common_pid.clone())
                            .or_else(|| find(plan, Scope::Payload, ep.payload, &["perf_pid"]));
                        let extra = extras_of(what)
                            .iter()
                            .map(|&x| {
                                let n = EXTRA_NAMES[x as usize];
                                let found = if x == Extra::Procname { find_any(plan, ep, &[n]) } else { find(plan, Scope::Payload, ep.payload, &[n]) };
                                found.unwrap_or_else(Slot::absent)
                            })
                            .collect::<Vec<Slot>>()
                            .into_boxed_slice();
                        ClassMap { what, sys, slots, cpu: Some(cpu), tid, pid, extra }
                    })
                    .collect()
            })
            .collect()
    }

    /// Whether any event class of the set is a kernel event this map knows (not just `Other`).
    pub fn has_kernel_events(&self) -> bool {
        self.traces.iter().flatten().flatten().any(|c| c.what != What::Other)
    }

    /// The class map of `ev` (read from the stream of `cx`).
    #[inline]
    fn class(&self, ev: &EventView<'_, '_>, cx: &Context<'_, '_>) -> Option<&ClassMap> {
        let plan_index = cx.stream.plan;
        let plan = cx.trace.plans.get(plan_index)?;
        let size = std::mem::size_of::<tracelens_ctf::plan::EventPlan>().max(1);
        let at = (ev.class as *const _ as usize).wrapping_sub(plan.events.as_ptr() as usize) / size;
        if !plan.events.get(at).is_some_and(|p| std::ptr::eq(p, ev.class)) {
            return None;
        }
        self.traces.get(cx.chunk.trace)?.get(plan_index)?.get(at)
    }

    /// The [`Extra`] field `which` of `ev` (read from the stream of `cx`), found without
    /// comparing names: what `ev.payload.get(name)` (or, for [`Extra::Procname`],
    /// `ev.field(name)`) gives for an event of a known kind; `None` for other events.
    #[inline]
    pub(crate) fn extra<'e>(&self, ev: &'e EventView<'e, 'e>, cx: &Context<'_, '_>, which: Extra) -> Option<&'e Field<'e>> {
        self.class(ev, cx)?.extra.get(which as usize)?.get(ev)
    }

    /// The kernel event `ev` is, or `None` when it is not one: its trace is not a kernel trace,
    /// its stream has no CPU field, or it has no time. Events of kinds this layer does not
    /// know come as [`Kind::Other`].
    #[inline]
    pub fn decode<'e>(&'e self, ev: &'e EventView<'e, 'e>, cx: &Context<'_, '_>) -> Option<KEvent<'e>> {
        self.decode_only(ev, cx, Kinds::ALL)
    }

    /// [`decode`](Self::decode), with the kinds not in `want` left as [`Kind::Other`] (their
    /// fields are not read): what an analysis that ignores them sees is the same, for less.
    #[inline(always)]
    pub fn decode_only<'e>(&'e self, ev: &'e EventView<'e, 'e>, cx: &Context<'_, '_>, want: Kinds) -> Option<KEvent<'e>> {
        let c = self.class(ev, cx)?;
        let ns = ev.ns?;
        let cpu = c.cpu.as_ref()?.get(ev)?.as_u64()? as u32;
        let tid = match &c.tid {
            Some(s) => s.get(ev).and_then(Field::as_i64),
            None => None,
        };
        let pid = match &c.pid {
            Some(s) => s.get(ev).and_then(Field::as_i64),
            None => None,
        };
        let kind = if c.what != What::Other && want.has(c.what) { Self::kind(c, ev).unwrap_or(Kind::Other) } else { Kind::Other };
        Some(KEvent { ns, cpu, tid, pid, kind, event: ev })
    }

    fn kind<'e>(c: &'e ClassMap, ev: &'e EventView<'e, 'e>) -> Option<Kind<'e>> {
        let (slots, payload) = (&c.slots[..], ev.payload);
        let f = |i: usize| slot_field(slots, payload, i);
        let int = |i: usize| slot_int(slots, payload, i);
        let uint = |i: usize| slot_int(slots, payload, i).map(|v| v as u64);
        let bytes = |i: usize| slot_field(slots, payload, i).and_then(Field::as_bytes).unwrap_or(&[]);
        Some(match c.what {
            What::Other => Kind::Other,
            What::SchedSwitch => Kind::SchedSwitch {
                prev_tid: int(0)?,
                prev_comm: bytes(1),
                prev_prio: int(2).unwrap_or(0),
                prev_state: int(3).unwrap_or(0),
                next_tid: int(4)?,
                next_comm: bytes(5),
                next_prio: int(6).unwrap_or(0),
            },
            What::SchedWaking | What::SchedWakeup | What::SchedWakeupNew => {
                let (tid, comm, prio, target_cpu) = (int(0)?, bytes(1), int(2).unwrap_or(0), uint(3).map(|c| c as u32));
                match c.what {
                    What::SchedWaking => Kind::SchedWaking { tid, comm, prio, target_cpu },
                    What::SchedWakeup => Kind::SchedWakeup { tid, comm, prio, target_cpu },
                    _ => Kind::SchedWakeupNew { tid, comm, prio, target_cpu },
                }
            }
            What::SchedMigrate => Kind::SchedMigrate { tid: int(0)?, orig_cpu: uint(1)? as u32, dest_cpu: uint(2)? as u32 },
            What::Fork => Kind::ProcessFork { parent_tid: int(0)?, parent_pid: int(1), child_tid: int(2)?, child_pid: int(3), child_comm: bytes(4) },
            What::Exec => Kind::ProcessExec { tid: int(0)?, filename: bytes(1) },
            What::Exit => Kind::ProcessExit { tid: int(0)? },
            What::Free => Kind::ProcessFree { tid: int(0)? },
            What::SysEntry => {
                let nr = int(0);
                Kind::SyscallEntry { name: Self::sys_name(&c.sys, nr).unwrap_or("unknown"), nr }
            }
            What::SysExit => {
                let nr = int(1);
                Kind::SyscallExit { name: Self::sys_name(&c.sys, nr), nr, ret: int(0).unwrap_or(0) }
            }
            What::IrqEntry => Kind::IrqHandlerEntry { irq: int(0)?, name: bytes(1) },
            What::IrqExit => Kind::IrqHandlerExit { irq: int(0)?, ret: int(1).unwrap_or(0) },
            What::SoftirqRaise => Kind::SoftirqRaise { vec: uint(0)? as u32 },
            What::SoftirqEntry => Kind::SoftirqEntry { vec: uint(0)? as u32 },
            What::SoftirqExit => Kind::SoftirqExit { vec: uint(0)? as u32 },
            What::HrtimerEntry => Kind::HrtimerExpireEntry { hrtimer: uint(0).unwrap_or(0) },
            What::HrtimerExit => Kind::HrtimerExpireExit { hrtimer: uint(0).unwrap_or(0) },
            What::StatedumpProcess => Kind::StatedumpProcess {
                tid: int(0)?,
                pid: int(1).unwrap_or(0),
                ppid: int(2).unwrap_or(0),
                name: bytes(3),
                status: int(4).unwrap_or(0),
                thread_type: int(5).unwrap_or(0),
            },
            What::StatedumpFd => Kind::StatedumpFd { pid: int(0)?, fd: int(1)?, filename: bytes(2) },
            What::StatedumpBlockDevice => Kind::StatedumpBlockDevice { dev: uint(0)?, diskname: bytes(1) },
            What::BlockIssue => Kind::BlockRqIssue {
                dev: uint(0)?,
                sector: uint(1).unwrap_or(0),
                nr_sector: uint(2).unwrap_or(0),
                bytes: uint(3),
                rwbs: Self::rwbs(f(4)),
                tid: int(5),
                comm: bytes(6),
            },
            What::BlockComplete => Kind::BlockRqComplete {
                dev: uint(0)?,
                sector: uint(1).unwrap_or(0),
                nr_sector: uint(2).unwrap_or(0),
                rwbs: Self::rwbs(f(3)),
                errors: int(4),
            },
            What::NetQueue => Kind::NetDevQueue { len: uint(0).unwrap_or(0), dev: bytes(1) },
            What::NetXmit => Kind::NetDevXmit { len: uint(0).unwrap_or(0), dev: bytes(1), rc: int(2) },
            What::NetReceive => Kind::NetifReceiveSkb { len: uint(0).unwrap_or(0), dev: bytes(1) },
            What::VectorEntry => Kind::IrqVectorEntry { vector: int(0).unwrap_or(-1), name: vector_name(&ev.class.class.name) },
            What::VectorExit => Kind::IrqVectorExit { vector: int(0).unwrap_or(-1), name: vector_name(&ev.class.class.name) },
        })
    }

    fn rwbs<'e>(f: Option<&'e Field<'e>>) -> Rwbs<'e> {
        match f {
            Some(f) => match (f.as_bytes(), f.as_u64()) {
                (Some(t), _) => Rwbs::Text(t),
                (None, Some(b)) => Rwbs::Flags(b),
                _ => Rwbs::Unknown,
            },
            None => Rwbs::Unknown,
        }
    }

    fn sys_name(sys: &SysName, nr: Option<i64>) -> Option<&str> {
        match sys {
            SysName::Fixed(s) => Some(s),
            SysName::ByNumber { x86_64: true } => Some(syscall_name(nr?).unwrap_or("unknown")),
            SysName::ByNumber { x86_64: false } => Some("unknown"),
            SysName::None => None,
        }
    }
}

/// The payload field of slot `i`.
#[inline(always)]
fn slot_field<'e>(slots: &[Slot], payload: Fields<'e, 'e>, i: usize) -> Option<&'e Field<'e>> {
    slots.get(i)?.get_in(payload)
}

/// The payload field of slot `i` as an integer ([`Field::as_i64`]; [`Field::as_u64`] is the
/// same bits).
#[inline(always)]
fn slot_int(slots: &[Slot], payload: Fields<'_, '_>, i: usize) -> Option<i64> {
    match slot_field(slots, payload, i)?.value {
        tracelens_ctf::Value::Unsigned(u) => Some(u as i64),
        tracelens_ctf::Value::Signed(v) => Some(v),
        _ => None,
    }
}

/// Linux's soft IRQ vectors (`include/linux/interrupt.h`), as the kernel's `softirq_entry`
/// tracepoint names them (`vec=1 [action=TIMER]`); the kernel's enum adds `_SOFTIRQ`
/// (`TIMER_SOFTIRQ`). One table for every analysis and view that names or classifies a vector.
pub mod softirq {
    /// `HI_SOFTIRQ`: high-priority tasklets.
    pub const HI: u32 = 0;
    /// `TIMER_SOFTIRQ`: timer-wheel expiry.
    pub const TIMER: u32 = 1;
    /// `NET_TX_SOFTIRQ`: network transmit completion.
    pub const NET_TX: u32 = 2;
    /// `NET_RX_SOFTIRQ`: network receive.
    pub const NET_RX: u32 = 3;
    /// `BLOCK_SOFTIRQ`: block request completion.
    pub const BLOCK: u32 = 4;
    /// `IRQ_POLL_SOFTIRQ`: interrupt-poll handlers.
    pub const IRQ_POLL: u32 = 5;
    /// `TASKLET_SOFTIRQ`: tasklets.
    pub const TASKLET: u32 = 6;
    /// `SCHED_SOFTIRQ`: scheduler load balancing.
    pub const SCHED: u32 = 7;
    /// `HRTIMER_SOFTIRQ`: high-resolution timers run in soft IRQ context.
    pub const HRTIMER: u32 = 8;
    /// `RCU_SOFTIRQ`: RCU callbacks.
    pub const RCU: u32 = 9;

    /// The vectors' names, by number.
    pub const NAMES: [&str; 10] = ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"];

    /// The name of vector `vec` (`TIMER`), or `None` for a number the table does not know.
    pub fn name(vec: u32) -> Option<&'static str> {
        NAMES.get(vec as usize).copied()
    }

    /// Whether soft IRQs of vector `vec` run timers (`TIMER`, `HRTIMER`).
    pub fn is_timer(vec: u32) -> bool {
        matches!(vec, TIMER | HRTIMER)
    }

    /// Whether soft IRQs of vector `vec` serve the network (`NET_TX`, `NET_RX`).
    pub fn is_network(vec: u32) -> bool {
        matches!(vec, NET_TX | NET_RX)
    }
}

/// The x86_64 name of system call number `nr` (kernel function names, as LTTng uses:
/// `newfstat` for 5), if the table knows it.
pub fn syscall_name(nr: i64) -> Option<&'static str> {
    let s = *kernel_syscalls::X86_64.get(usize::try_from(nr).ok()?)?;
    (!s.is_empty()).then_some(s)
}

/// The thread running on each CPU, as far as the `sched_switch` events seen so far say: a
/// small helper for analyses that attribute CPU-local events (system calls, interrupts) to
/// threads within one chunk.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuThreads {
    current: Vec<Option<i64>>,
}

impl CpuThreads {
    /// The thread running on `cpu`, if a switch on it was seen.
    pub fn get(&self, cpu: u32) -> Option<i64> {
        self.current.get(cpu as usize).copied().flatten()
    }

    /// Records that `tid` runs on `cpu` from now on.
    pub fn set(&mut self, cpu: u32, tid: i64) {
        let i = cpu as usize;
        if self.current.len() <= i {
            self.current.resize(i + 1, None);
        }
        self.current[i] = Some(tid);
    }

    /// Updates from a decoded event (a `sched_switch` sets its CPU's thread); returns the
    /// thread the event belongs to: its own `tid` when it has one, else the CPU's (for a
    /// switch, the thread switched out).
    pub fn on_event(&mut self, ev: &KEvent<'_>) -> Option<i64> {
        if let Kind::SchedSwitch { prev_tid, next_tid, .. } = ev.kind {
            self.set(ev.cpu, next_tid);
            return Some(ev.tid.unwrap_or(prev_tid));
        }
        ev.tid.or_else(|| self.get(ev.cpu))
    }
}

/// A thread name (`comm`) stored inline: kernel names have at most 15 bytes (16 with the NUL);
/// longer names are cut at 15 bytes.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Comm {
    len: u8,
    bytes: [u8; 15],
}

impl Comm {
    /// The name `bytes` (cut at 15 bytes).
    pub fn new(bytes: &[u8]) -> Comm {
        let n = bytes.len().min(15);
        let mut c = Comm { len: n as u8, bytes: [0; 15] };
        c.bytes[..n].copy_from_slice(&bytes[..n]);
        c
    }

    /// The name's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// Whether the name is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl std::fmt::Display for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&text(self.as_bytes()))
    }
}

impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", text(self.as_bytes()))
    }
}

/// `ns` from the Unix epoch as `YYYY-MM-DD HH:MM:SS.NNNNNNNNN` in UTC (for report headers).
pub fn format_utc(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let nanos = ns.rem_euclid(1_000_000_000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}.{nanos:09}", rem / 3600, rem / 60 % 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn irq_vector_names() {
        for (name, what) in [
            ("x86_irq_vectors_local_timer_entry", What::VectorEntry),
            ("x86_irq_vectors_call_function_single_exit", What::VectorExit),
            ("irq_vectors:reschedule_entry", What::VectorEntry),
            ("irq_vectors:vector_update", What::Other),
        ] {
            assert_eq!(classify(name, true).0, what, "{name}");
        }
        assert_eq!(vector_name("x86_irq_vectors_call_function_single_exit"), "call_function_single");
        assert_eq!(vector_name("irq_vectors:local_timer_entry"), "local_timer");
        assert!(!Kinds::NO_SYSCALLS.has(What::SysEntry) && !Kinds::NO_SYSCALLS.has(What::SysExit));
        assert!(Kinds::NO_SYSCALLS.has(What::SchedSwitch) && Kinds::NO_SYSCALLS.has(What::VectorExit));
    }
}
