//! The mapping from tracefs events to LTTng's kernel event classes: names, field names, field
//! types and where each value comes from, so that a recording reads like an LTTng kernel
//! trace (`lttng enable-event -k` with `lttng add-context -k -t tid -t pid -t procname`).
//!
//! * Events LTTng has (sched, irq, timer, block, net) get its event and field names and
//!   types, e.g. tracefs `sched:sched_switch{prev_comm, prev_pid, prev_prio, prev_state,
//!   next_comm, next_pid, next_prio}` becomes `sched_switch{prev_comm, prev_tid, prev_prio,
//!   prev_state, next_comm, next_tid, next_prio}`, with priorities shifted as LTTng shifts
//!   them (`prio - MAX_RT_PRIO`, so a normal task shows 20) and thread-group ids filled in
//!   where LTTng has them (`sched_process_fork`'s `parent_pid`, `child_pid`).
//! * `syscalls:sys_enter_X` becomes `syscall_entry_X` with the arguments typed from their C
//!   types (`unsigned int fd` as a 32-bit unsigned integer, pointers as 64-bit hexadecimal);
//!   the path arguments LTTng records as strings (`filename`, `pathname`...) are strings here
//!   too, empty: tracefs gives only the user-space pointer, not the text.
//!   `syscalls:sys_exit_X` becomes `syscall_exit_X{ret, ...}`, with the output pointer
//!   arguments LTTng lists for that call (`syscall_exit_read{ret, buf}`) taken from the
//!   thread's matching entry.
//! * Any other tracefs event (`-e kmem:mm_page_alloc`) keeps its tracefs name and fields.

use std::collections::HashMap;

use crate::format::{EventFormat, Field, FieldKind};

/// The CTF type of an output field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// An integer.
    Int {
        /// Size in bits (8, 16, 32, 64).
        bits: u8,
        /// Signed.
        signed: bool,
        /// Display base (8, 10, 16).
        base: u8,
    },
    /// `char[16]` UTF-8 (a task name).
    Comm,
    /// `char[N]` UTF-8 text of another length.
    Text(u16),
    /// A NUL-terminated string.
    Str,
    /// The 8-bit length of the sequence that follows.
    SeqLen8,
    /// A sequence of signed 32-bit integers whose length is the field before.
    SeqI32,
}

/// `int32_t`.
pub const I32: Ty = Ty::Int { bits: 32, signed: true, base: 10 };
/// `uint32_t`.
pub const U32: Ty = Ty::Int { bits: 32, signed: false, base: 10 };
/// `uint16_t`.
pub const U16: Ty = Ty::Int { bits: 16, signed: false, base: 10 };
/// `int64_t`.
pub const I64: Ty = Ty::Int { bits: 64, signed: true, base: 10 };
/// `uint64_t`.
pub const U64: Ty = Ty::Int { bits: 64, signed: false, base: 10 };
/// `uint64_t` shown in hexadecimal (addresses).
pub const HEX64: Ty = Ty::Int { bits: 64, signed: false, base: 16 };
/// `uint32_t` shown in hexadecimal.
pub const HEX32: Ty = Ty::Int { bits: 32, signed: false, base: 16 };
/// `uint32_t` shown in octal (open flags).
pub const OCT32: Ty = Ty::Int { bits: 32, signed: false, base: 8 };

/// Where an output field's value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    /// The tracefs field of this name (an integer, or text for text types).
    F(&'static str),
    /// The tracefs field of this name minus 100 (LTTng's `prio - MAX_RT_PRIO`).
    Prio(&'static str),
    /// The thread-group id of the thread whose id is in the tracefs field of this name.
    Tgid(&'static str),
    /// The current thread (`common_pid`).
    Tid,
    /// The pid namespace's inode number.
    NsInum,
    /// The tracefs `rwbs` text of this field as LTTng's bit mask.
    Rwbs(&'static str),
    /// A one-element sequence (length, then elements) of the thread id in this field.
    Vtids(&'static str),
    /// The argument of this name of the thread's pending system call entry (exit events).
    EntryArg(&'static str),
    /// Zero, or empty text.
    Zero,
}

/// One LTTng event class and the tracefs event it comes from.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// tracefs system.
    pub system: &'static str,
    /// tracefs event.
    pub event: &'static str,
    /// LTTng event name.
    pub lttng: &'static str,
    /// Output fields: name (without LTTng's `_` prefix), type, source.
    pub fields: &'static [(&'static str, Ty, Src)],
}

const fn spec(system: &'static str, event: &'static str, lttng: &'static str, fields: &'static [(&'static str, Ty, Src)]) -> Spec {
    Spec { system, event, lttng, fields }
}

const WAKE: &[(&str, Ty, Src)] = &[("comm", Ty::Comm, Src::F("comm")), ("tid", I32, Src::F("pid")), ("prio", I32, Src::Prio("prio")), ("target_cpu", I32, Src::F("target_cpu"))];
const TASK: &[(&str, Ty, Src)] = &[("comm", Ty::Comm, Src::F("comm")), ("tid", I32, Src::F("pid")), ("prio", I32, Src::Prio("prio"))];
/// x86 interrupt vectors (local APIC timer, inter-processor interrupts), as lttng-modules'
/// `x86_irq_vectors_*` events.
const VECTOR: &[(&str, Ty, Src)] = &[("vector", I32, Src::F("vector"))];
const NET: &[(&str, Ty, Src)] = &[("skbaddr", HEX64, Src::F("skbaddr")), ("len", U32, Src::F("len")), ("name", Ty::Str, Src::F("name"))];

/// The tracefs events LTTng has, as LTTng names and lays them out.
pub const SPECS: &[Spec] = &[
    spec(
        "sched",
        "sched_switch",
        "sched_switch",
        &[
            ("prev_comm", Ty::Comm, Src::F("prev_comm")),
            ("prev_tid", I32, Src::F("prev_pid")),
            ("prev_prio", I32, Src::Prio("prev_prio")),
            ("prev_state", I64, Src::F("prev_state")),
            ("next_comm", Ty::Comm, Src::F("next_comm")),
            ("next_tid", I32, Src::F("next_pid")),
            ("next_prio", I32, Src::Prio("next_prio")),
        ],
    ),
    spec("sched", "sched_waking", "sched_waking", WAKE),
    spec("sched", "sched_wakeup", "sched_wakeup", WAKE),
    spec("sched", "sched_wakeup_new", "sched_wakeup_new", WAKE),
    spec(
        "sched",
        "sched_migrate_task",
        "sched_migrate_task",
        &[
            ("comm", Ty::Comm, Src::F("comm")),
            ("tid", I32, Src::F("pid")),
            ("prio", I32, Src::Prio("prio")),
            ("orig_cpu", I32, Src::F("orig_cpu")),
            ("dest_cpu", I32, Src::F("dest_cpu")),
        ],
    ),
    spec(
        "sched",
        "sched_process_fork",
        "sched_process_fork",
        &[
            ("parent_comm", Ty::Comm, Src::F("parent_comm")),
            ("parent_tid", I32, Src::F("parent_pid")),
            ("parent_pid", I32, Src::Tgid("parent_pid")),
            ("parent_ns_inum", U32, Src::NsInum),
            ("child_comm", Ty::Comm, Src::F("child_comm")),
            ("child_tid", I32, Src::F("child_pid")),
            ("_vtids_length", Ty::SeqLen8, Src::Vtids("child_pid")),
            ("vtids", Ty::SeqI32, Src::Vtids("child_pid")),
            ("child_pid", I32, Src::Tgid("child_pid")),
            ("child_ns_inum", U32, Src::NsInum),
        ],
    ),
    spec("sched", "sched_process_exec", "sched_process_exec", &[("filename", Ty::Str, Src::F("filename")), ("tid", I32, Src::F("pid")), ("old_tid", I32, Src::F("old_pid"))]),
    spec("sched", "sched_process_exit", "sched_process_exit", TASK),
    spec("sched", "sched_process_free", "sched_process_free", TASK),
    spec("sched", "sched_process_wait", "sched_process_wait", TASK),
    spec("irq", "irq_handler_entry", "irq_handler_entry", &[("irq", I32, Src::F("irq")), ("name", Ty::Str, Src::F("name"))]),
    spec("irq", "irq_handler_exit", "irq_handler_exit", &[("irq", I32, Src::F("irq")), ("ret", I32, Src::F("ret"))]),
    spec("irq", "softirq_entry", "irq_softirq_entry", &[("vec", U32, Src::F("vec"))]),
    spec("irq", "softirq_exit", "irq_softirq_exit", &[("vec", U32, Src::F("vec"))]),
    spec("irq", "softirq_raise", "irq_softirq_raise", &[("vec", U32, Src::F("vec"))]),
    spec(
        "timer",
        "hrtimer_expire_entry",
        "timer_hrtimer_expire_entry",
        &[("hrtimer", HEX64, Src::F("hrtimer")), ("now", I64, Src::F("now")), ("function", HEX64, Src::F("function"))],
    ),
    spec("timer", "hrtimer_expire_exit", "timer_hrtimer_expire_exit", &[("hrtimer", HEX64, Src::F("hrtimer"))]),
    spec(
        "timer",
        "hrtimer_start",
        "timer_hrtimer_start",
        &[
            ("hrtimer", HEX64, Src::F("hrtimer")),
            ("function", HEX64, Src::F("function")),
            ("expires", I64, Src::F("expires")),
            ("softexpires", I64, Src::F("softexpires")),
            ("mode", U32, Src::F("mode")),
        ],
    ),
    spec("timer", "hrtimer_cancel", "timer_hrtimer_cancel", &[("hrtimer", HEX64, Src::F("hrtimer"))]),
    spec(
        "timer",
        "timer_start",
        "timer_start",
        &[
            ("timer", HEX64, Src::F("timer")),
            ("function", HEX64, Src::F("function")),
            ("expires", U64, Src::F("expires")),
            ("now", U64, Src::F("now")),
            ("flags", U32, Src::F("flags")),
        ],
    ),
    spec(
        "timer",
        "timer_expire_entry",
        "timer_expire_entry",
        &[("timer", HEX64, Src::F("timer")), ("now", U64, Src::F("now")), ("function", HEX64, Src::F("function"))],
    ),
    spec("timer", "timer_expire_exit", "timer_expire_exit", &[("timer", HEX64, Src::F("timer"))]),
    spec("timer", "timer_cancel", "timer_cancel", &[("timer", HEX64, Src::F("timer"))]),
    spec(
        "block",
        "block_rq_issue",
        "block_rq_issue",
        &[
            ("dev", U32, Src::F("dev")),
            ("sector", U64, Src::F("sector")),
            ("nr_sector", U32, Src::F("nr_sector")),
            ("bytes", U32, Src::F("bytes")),
            ("tid", I32, Src::Tid),
            ("rwbs", U32, Src::Rwbs("rwbs")),
            ("comm", Ty::Comm, Src::F("comm")),
        ],
    ),
    spec(
        "block",
        "block_rq_complete",
        "block_rq_complete",
        &[
            ("dev", U32, Src::F("dev")),
            ("sector", U64, Src::F("sector")),
            ("nr_sector", U32, Src::F("nr_sector")),
            ("error", I32, Src::F("error")),
            ("rwbs", U32, Src::Rwbs("rwbs")),
        ],
    ),
    spec("net", "net_dev_queue", "net_dev_queue", NET),
    spec("net", "netif_receive_skb", "netif_receive_skb", NET),
    spec("irq_vectors", "local_timer_entry", "x86_irq_vectors_local_timer_entry", VECTOR),
    spec("irq_vectors", "local_timer_exit", "x86_irq_vectors_local_timer_exit", VECTOR),
    spec("irq_vectors", "reschedule_entry", "x86_irq_vectors_reschedule_entry", VECTOR),
    spec("irq_vectors", "reschedule_exit", "x86_irq_vectors_reschedule_exit", VECTOR),
    spec("irq_vectors", "call_function_entry", "x86_irq_vectors_call_function_entry", VECTOR),
    spec("irq_vectors", "call_function_exit", "x86_irq_vectors_call_function_exit", VECTOR),
    spec("irq_vectors", "call_function_single_entry", "x86_irq_vectors_call_function_single_entry", VECTOR),
    spec("irq_vectors", "call_function_single_exit", "x86_irq_vectors_call_function_single_exit", VECTOR),
    spec("irq_vectors", "irq_work_entry", "x86_irq_vectors_irq_work_entry", VECTOR),
    spec("irq_vectors", "irq_work_exit", "x86_irq_vectors_irq_work_exit", VECTOR),
];

/// Events read for the recorder's own bookkeeping (thread-group ids, names), not written.
pub const INTERNAL: &[(&str, &str)] = &[("task", "task_newtask"), ("task", "task_rename")];

/// A group's tracefs events: (system, event), `None` for the whole system.
pub type GroupEvents = &'static [(&'static str, Option<&'static str>)];

/// The event groups `-e` accepts, with the tracefs events of each.
pub const GROUPS: &[(&str, GroupEvents)] = &[
    (
        "sched",
        &[
            ("sched", Some("sched_switch")),
            ("sched", Some("sched_waking")),
            ("sched", Some("sched_wakeup")),
            ("sched", Some("sched_wakeup_new")),
            ("sched", Some("sched_migrate_task")),
            ("sched", Some("sched_process_fork")),
            ("sched", Some("sched_process_exec")),
            ("sched", Some("sched_process_exit")),
            ("sched", Some("sched_process_free")),
            ("sched", Some("sched_process_wait")),
        ],
    ),
    (
        "irq",
        &[
            ("irq", Some("irq_handler_entry")),
            ("irq", Some("irq_handler_exit")),
            ("irq", Some("softirq_entry")),
            ("irq", Some("softirq_exit")),
            ("irq", Some("softirq_raise")),
            // x86 only (absent elsewhere, then skipped): interrupts that are not IRQ lines —
            // the local timer and inter-processor interrupts, in which wake-ups also happen.
            ("irq_vectors", Some("local_timer_entry")),
            ("irq_vectors", Some("local_timer_exit")),
            ("irq_vectors", Some("reschedule_entry")),
            ("irq_vectors", Some("reschedule_exit")),
            ("irq_vectors", Some("call_function_entry")),
            ("irq_vectors", Some("call_function_exit")),
            ("irq_vectors", Some("call_function_single_entry")),
            ("irq_vectors", Some("call_function_single_exit")),
            ("irq_vectors", Some("irq_work_entry")),
            ("irq_vectors", Some("irq_work_exit")),
        ],
    ),
    ("hrtimer", &[("timer", Some("hrtimer_expire_entry")), ("timer", Some("hrtimer_expire_exit"))]),
    (
        "timer",
        &[
            ("timer", Some("hrtimer_expire_entry")),
            ("timer", Some("hrtimer_expire_exit")),
            ("timer", Some("hrtimer_start")),
            ("timer", Some("hrtimer_cancel")),
            ("timer", Some("timer_start")),
            ("timer", Some("timer_expire_entry")),
            ("timer", Some("timer_expire_exit")),
            ("timer", Some("timer_cancel")),
        ],
    ),
    ("syscalls", &[("syscalls", None)]),
    ("block", &[("block", Some("block_rq_issue")), ("block", Some("block_rq_complete"))]),
    ("net", &[("net", Some("net_dev_queue")), ("net", Some("netif_receive_skb"))]),
];

/// The groups recorded when `-e` is not given.
pub const DEFAULT_GROUPS: &[&str] = &["sched", "irq", "hrtimer", "syscalls", "block", "net"];

/// System-call arguments that LTTng records as user-space strings.
const STRING_ARGS: &[&str] = &[
    "filename", "pathname", "oldname", "newname", "name", "path", "type", "_type", "u_name", "name_user", "specialfile", "dev_name", "dir_name",
    "new_root", "put_old", "oldpath", "newpath", "library", "uname",
];

/// Output pointer arguments LTTng adds to `syscall_exit_X` (from lttng-modules' x86_64
/// system call instrumentation).
pub const EXIT_OUTPUTS: &[(&str, &[&str])] = &[
    ("accept4", &["upeer_sockaddr", "upeer_addrlen"]),
    ("adjtimex", &["txc_p"]),
    ("clock_adjtime", &["utx"]),
    ("clock_getres", &["tp"]),
    ("clock_gettime", &["tp"]),
    ("clock_nanosleep", &["rmtp"]),
    ("epoll_pwait", &["events"]),
    ("epoll_wait", &["events"]),
    ("fcntl", &["arg"]),
    ("fgetxattr", &["value"]),
    ("flistxattr", &["list"]),
    ("fstatfs", &["buf"]),
    ("futex", &["uaddr", "uaddr2"]),
    ("get_mempolicy", &["policy", "nmask"]),
    ("get_robust_list", &["head_ptr", "len_ptr"]),
    ("getcpu", &["cpup", "nodep", "tcache"]),
    ("getcwd", &["buf"]),
    ("getdents", &["dirent"]),
    ("getdents64", &["dirent"]),
    ("getgroups", &["grouplist"]),
    ("getitimer", &["value"]),
    ("getpeername", &["usockaddr", "usockaddr_len"]),
    ("getresgid", &["rgidp", "egidp", "sgidp"]),
    ("getresuid", &["ruidp", "euidp", "suidp"]),
    ("getrlimit", &["rlim"]),
    ("getrusage", &["ru"]),
    ("getsockname", &["usockaddr", "usockaddr_len"]),
    ("getsockopt", &["optval", "optlen"]),
    ("gettimeofday", &["tv", "tz"]),
    ("getxattr", &["value"]),
    ("io_cancel", &["result"]),
    ("io_getevents", &["events", "timeout"]),
    ("ioctl", &["arg"]),
    ("keyctl", &["arg2", "arg3", "arg4", "arg5"]),
    ("lgetxattr", &["value"]),
    ("listxattr", &["list"]),
    ("llistxattr", &["list"]),
    ("lookup_dcookie", &["buf"]),
    ("mincore", &["vec"]),
    ("move_pages", &["status"]),
    ("mq_getsetattr", &["u_omqstat"]),
    ("mq_timedreceive", &["u_msg_ptr", "u_msg_prio"]),
    ("msgctl", &["buf"]),
    ("msgrcv", &["msgp"]),
    ("name_to_handle_at", &["handle", "mnt_id"]),
    ("nanosleep", &["rmtp"]),
    ("newfstat", &["statbuf"]),
    ("newfstatat", &["statbuf"]),
    ("newlstat", &["statbuf"]),
    ("newstat", &["statbuf"]),
    ("newuname", &["name"]),
    ("poll", &["ufds"]),
    ("ppoll", &["ufds"]),
    ("prctl", &["arg2"]),
    ("pread64", &["buf"]),
    ("preadv", &["vec"]),
    ("prlimit64", &["old_rlim"]),
    ("process_vm_readv", &["lvec"]),
    ("pselect6", &["inp", "outp", "exp", "tsp"]),
    ("ptrace", &["addr", "data"]),
    ("quotactl", &["addr"]),
    ("read", &["buf"]),
    ("readlink", &["buf"]),
    ("readlinkat", &["buf"]),
    ("readv", &["vec"]),
    ("recvfrom", &["ubuf", "addr", "addr_len"]),
    ("recvmmsg", &["mmsg", "timeout"]),
    ("recvmsg", &["msg"]),
    ("rt_sigaction", &["oact"]),
    ("rt_sigpending", &["uset"]),
    ("rt_sigprocmask", &["oset"]),
    ("rt_sigtimedwait", &["uthese", "uinfo"]),
    ("sched_getaffinity", &["user_mask_ptr"]),
    ("sched_getparam", &["param"]),
    ("sched_rr_get_interval", &["interval"]),
    ("select", &["inp", "outp", "exp", "tvp"]),
    ("semctl", &["arg"]),
    ("semtimedop", &["timeout"]),
    ("sendfile64", &["offset"]),
    ("setitimer", &["ovalue"]),
    ("shmctl", &["buf"]),
    ("sigaltstack", &["uoss"]),
    ("socketpair", &["usockvec"]),
    ("statfs", &["buf"]),
    ("sysctl", &["args"]),
    ("sysinfo", &["info"]),
    ("syslog", &["buf"]),
    ("time", &["tloc"]),
    ("timer_create", &["created_timer_id"]),
    ("timer_gettime", &["setting"]),
    ("timer_settime", &["old_setting"]),
    ("timerfd_gettime", &["otmr"]),
    ("timerfd_settime", &["otmr"]),
    ("times", &["tbuf"]),
    ("ustat", &["ubuf"]),
    ("wait4", &["stat_addr", "ru"]),
    ("waitid", &["infop", "ru"]),
    ("writev", &["vec"]),
];

/// LTTng's type for a system-call argument of C type `ctype` named `name`.
pub fn syscall_arg_type(ctype: &str, name: &str) -> Ty {
    let t = ctype.trim();
    if t.contains('*') {
        let plain = t.trim_start_matches("const ").trim();
        if (plain == "char *" || plain == "char*") && STRING_ARGS.contains(&name) {
            return Ty::Str;
        }
        return HEX64;
    }
    let t = t.trim_start_matches("const ").trim();
    match t {
        "int" | "pid_t" | "key_serial_t" | "clockid_t" | "timer_t" | "mqd_t" | "rwf_t" | "s32" | "__s32" | "key_t" | "old_uid_t" | "old_gid_t" => I32,
        "unsigned int" | "unsigned" | "u32" | "__u32" | "uid_t" | "gid_t" | "qid_t" | "compat_uint_t" => U32,
        "umode_t" | "unsigned short" | "u16" | "__u16" => U16,
        "long" | "loff_t" | "off_t" | "ssize_t" | "s64" | "__s64" | "time_t" | "__kernel_old_time_t" | "long long" => I64,
        _ => U64,
    }
}

/// LTTng's block request flags (`rwbs`) from tracefs's text (`WS`, `RA`, `FWFS`...).
pub fn rwbs_mask(text: &[u8]) -> u32 {
    const WRITE: u32 = 1 << 0;
    const DISCARD: u32 = 1 << 1;
    const READ: u32 = 1 << 2;
    const RAHEAD: u32 = 1 << 3;
    const SYNC: u32 = 1 << 5;
    const META: u32 = 1 << 6;
    const SECURE: u32 = 1 << 7;
    const FUA: u32 = 1 << 9;
    const PREFLUSH: u32 = 1 << 10;
    let mut m = 0;
    let mut op_seen = false;
    for &c in text {
        match (c, op_seen) {
            (b'F', false) => m |= PREFLUSH,
            (b'W', false) => {
                m |= WRITE;
                op_seen = true
            }
            (b'R', false) => {
                m |= READ;
                op_seen = true
            }
            (b'D', false) => {
                m |= DISCARD;
                op_seen = true
            }
            (b'E', false) => {
                m |= DISCARD | SECURE;
                op_seen = true
            }
            (b'N', false) => op_seen = true,
            (b'F', true) => m |= FUA,
            (b'A', true) => m |= RAHEAD,
            (b'S', true) => m |= SYNC,
            (b'M', true) => m |= META,
            _ => {}
        }
    }
    m
}

/// An output event class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassDef {
    /// Event name.
    pub name: String,
    /// Fields: name (without the `_` prefix) and type.
    pub fields: Vec<(String, Ty)>,
}

/// A resolved value source: tracefs fields found by name in the event's format.
#[derive(Clone, Debug)]
pub enum RSrc {
    /// A tracefs field.
    Field(Field),
    /// A tracefs field minus 100.
    Prio(Field),
    /// The thread-group id of the thread in a field.
    Tgid(Field),
    /// `common_pid`.
    Tid,
    /// The pid namespace inode.
    NsInum,
    /// Block flags from text.
    Rwbs(Field),
    /// One-element sequence of a field's thread id.
    Vtids(Field),
    /// An argument of the pending entry, by index among the entry's arguments.
    EntryArg(usize),
    /// Nothing there: zero or empty.
    Zero,
}

/// How one tracefs event (by `common_type`) is converted.
#[derive(Clone, Debug)]
pub enum Conv {
    /// Written as output class `class` with these values.
    Write {
        /// Index in [`Schema::classes`].
        class: usize,
        /// One source per output field, with its type.
        fields: Vec<(Ty, RSrc)>,
        /// What the event means to the converter's tables.
        role: Role,
    },
    /// `task:task_newtask`: child pid and clone flags (not written).
    NewTask {
        /// `pid`.
        pid: Field,
        /// `clone_flags`.
        clone_flags: Field,
        /// `comm`.
        comm: Field,
    },
    /// `task:task_rename`: a thread's new name (not written).
    Rename {
        /// `pid`.
        pid: Field,
        /// `newcomm`.
        newcomm: Field,
    },
}

/// What a written event means to the converter's thread tables.
#[derive(Clone, Debug)]
pub enum Role {
    /// Nothing.
    Plain,
    /// A context switch: names of the previous and next threads.
    Switch {
        /// `prev_pid`, `prev_comm`, `next_pid`, `next_comm`.
        prev: (Field, Field),
        /// See `prev`.
        next: (Field, Field),
    },
    /// A fork: the child's id and name.
    Fork {
        /// `child_pid`, `child_comm`.
        child: (Field, Field),
    },
    /// A system call entry: its arguments are kept for the exit.
    SyscallEntry {
        /// The system call's number.
        nr: i64,
        /// The arguments, in order.
        args: Vec<Field>,
    },
    /// A system call exit: the pending entry is consumed.
    SyscallExit {
        /// The system call's number.
        nr: i64,
    },
    /// An `execve` (`sched_process_exec`): a thread other than the leader that runs it takes
    /// the leader's id, so the thread on the CPU changes id without a context switch.
    Exec {
        /// `pid`: the thread's id after the exec.
        pid: Field,
        /// `old_pid`: its id before.
        old_pid: Field,
    },
}

/// The output classes of a recording and how each tracefs event becomes one.
#[derive(Clone, Debug, Default)]
pub struct Schema {
    /// Output event classes (statedump classes first).
    pub classes: Vec<ClassDef>,
    /// Conversion by tracefs `common_type`.
    pub by_type: HashMap<u16, Conv>,
    /// Index of `sched_switch` in `classes`, if recorded (kept for the recorder's own
    /// threads, so that the CPU timeline stays whole).
    pub switch_class: Option<usize>,
}

/// Statedump classes, in this order at the start of [`Schema::classes`].
pub const STATEDUMP_START: usize = 0;
/// See [`STATEDUMP_START`].
pub const STATEDUMP_END: usize = 1;
/// See [`STATEDUMP_START`].
pub const STATEDUMP_PROCESS: usize = 2;
/// See [`STATEDUMP_START`].
pub const STATEDUMP_FD: usize = 3;

fn statedump_classes() -> Vec<ClassDef> {
    let c = |name: &str, fields: &[(&str, Ty)]| ClassDef { name: name.into(), fields: fields.iter().map(|(n, t)| (n.to_string(), *t)).collect() };
    vec![
        c("lttng_statedump_start", &[]),
        c("lttng_statedump_end", &[]),
        c(
            "lttng_statedump_process_state",
            &[
                ("tid", I32),
                ("vtid", I32),
                ("pid", I32),
                ("vpid", I32),
                ("ppid", I32),
                ("vppid", I32),
                ("name", Ty::Comm),
                ("type", I32),
                ("mode", I32),
                ("submode", I32),
                ("status", I32),
                ("cpu", I32),
            ],
        ),
        c("lttng_statedump_file_descriptor", &[("pid", I32), ("fd", I32), ("flags", OCT32), ("fmode", HEX32), ("filename", Ty::Str)]),
    ]
}

fn resolve(f: &EventFormat, src: Src) -> RSrc {
    let field = |name: &str| f.field(name).cloned();
    match src {
        Src::F(n) => field(n).map_or(RSrc::Zero, RSrc::Field),
        Src::Prio(n) => field(n).map_or(RSrc::Zero, RSrc::Prio),
        Src::Tgid(n) => field(n).map_or(RSrc::Zero, RSrc::Tgid),
        Src::Tid => RSrc::Tid,
        Src::NsInum => RSrc::NsInum,
        Src::Rwbs(n) => field(n).map_or(RSrc::Zero, RSrc::Rwbs),
        Src::Vtids(n) => field(n).map_or(RSrc::Zero, RSrc::Vtids),
        Src::EntryArg(_) | Src::Zero => RSrc::Zero,
    }
}

impl Schema {
    /// The schema for the tracefs events whose formats are `formats` (internal events
    /// included). Statedump classes always come first.
    pub fn build(formats: &[EventFormat]) -> Schema {
        let mut s = Schema { classes: statedump_classes(), ..Schema::default() };
        // Syscall entries first, so that exits can refer to their arguments.
        let mut entries: HashMap<String, (i64, Vec<Field>)> = HashMap::new();
        for f in formats {
            if f.system == "syscalls" {
                if let Some(sc) = f.name.strip_prefix("sys_enter_") {
                    let nr = syscall_nr(f);
                    entries.insert(sc.to_string(), (nr, f.fields.iter().filter(|x| x.name != "__syscall_nr").cloned().collect()));
                }
            }
        }
        for f in formats {
            if let Some(conv) = s.conv_for(f, &entries) {
                s.by_type.insert(f.id, conv);
            }
        }
        s
    }

    fn add_class(&mut self, name: String, fields: Vec<(String, Ty)>) -> usize {
        self.classes.push(ClassDef { name, fields });
        self.classes.len() - 1
    }

    fn conv_for(&mut self, f: &EventFormat, entries: &HashMap<String, (i64, Vec<Field>)>) -> Option<Conv> {
        let need = |n: &str| f.field(n).cloned();
        if f.system == "task" && f.name == "task_newtask" {
            return Some(Conv::NewTask { pid: need("pid")?, clone_flags: need("clone_flags")?, comm: need("comm")? });
        }
        if f.system == "task" && f.name == "task_rename" {
            return Some(Conv::Rename { pid: need("pid")?, newcomm: need("newcomm")? });
        }
        if let Some(sp) = SPECS.iter().find(|s| s.system == f.system && s.event == f.name) {
            let class = self.add_class(sp.lttng.to_string(), sp.fields.iter().map(|(n, t, _)| (n.to_string(), *t)).collect());
            let fields = sp.fields.iter().map(|(_, t, src)| (*t, resolve(f, *src))).collect();
            let role = match sp.lttng {
                "sched_switch" => {
                    self.switch_class = Some(class);
                    match (need("prev_pid"), need("prev_comm"), need("next_pid"), need("next_comm")) {
                        (Some(a), Some(b), Some(c), Some(d)) => Role::Switch { prev: (a, b), next: (c, d) },
                        _ => Role::Plain,
                    }
                }
                "sched_process_fork" => match (need("child_pid"), need("child_comm")) {
                    (Some(a), Some(b)) => Role::Fork { child: (a, b) },
                    _ => Role::Plain,
                },
                "sched_process_exec" => match (need("pid"), need("old_pid")) {
                    (Some(pid), Some(old_pid)) => Role::Exec { pid, old_pid },
                    _ => Role::Plain,
                },
                _ => Role::Plain,
            };
            return Some(Conv::Write { class, fields, role });
        }
        if f.system == "syscalls" {
            if let Some(sc) = f.name.strip_prefix("sys_enter_") {
                let args: Vec<Field> = f.fields.iter().filter(|x| x.name != "__syscall_nr").cloned().collect();
                let mut out = Vec::with_capacity(args.len());
                let mut defs = Vec::with_capacity(args.len());
                for a in &args {
                    let ty = syscall_arg_type(&a.ctype, &a.name);
                    defs.push((a.name.clone(), ty));
                    out.push((ty, if ty == Ty::Str { RSrc::Zero } else { RSrc::Field(a.clone()) }));
                }
                let class = self.add_class(format!("syscall_entry_{sc}"), defs);
                return Some(Conv::Write { class, fields: out, role: Role::SyscallEntry { nr: syscall_nr(f), args } });
            }
            if let Some(sc) = f.name.strip_prefix("sys_exit_") {
                let mut defs = vec![("ret".to_string(), I64)];
                let mut out = vec![(I64, need("ret").map_or(RSrc::Zero, RSrc::Field))];
                let entry = entries.get(sc);
                if let Some((_, outs)) = EXIT_OUTPUTS.iter().find(|(n, _)| *n == sc) {
                    for name in outs.iter() {
                        let at = entry.and_then(|(_, args)| args.iter().position(|a| a.name == *name));
                        defs.push((name.to_string(), HEX64));
                        out.push((HEX64, at.map_or(RSrc::Zero, RSrc::EntryArg)));
                    }
                }
                let nr = entry.map_or_else(|| syscall_nr(f), |e| e.0);
                let class = self.add_class(format!("syscall_exit_{sc}"), defs);
                return Some(Conv::Write { class, fields: out, role: Role::SyscallExit { nr } });
            }
        }
        // Any other event: its tracefs name and the fields we can type.
        let mut defs = Vec::new();
        let mut out = Vec::new();
        for x in &f.fields {
            let ty = match &x.kind {
                FieldKind::Int => Ty::Int { bits: (x.size * 8) as u8, signed: x.signed, base: if x.ctype.contains('*') { 16 } else { 10 } },
                FieldKind::Array { len, text: true } if *len == 16 => Ty::Comm,
                FieldKind::Array { len, text: true } if *len > 0 && *len <= u16::MAX as usize => Ty::Text(*len as u16),
                FieldKind::DataLoc { text: true } | FieldKind::RelLoc { text: true } => Ty::Str,
                _ => continue,
            };
            defs.push((x.name.clone(), ty));
            out.push((ty, RSrc::Field(x.clone())));
        }
        let class = self.add_class(f.name.clone(), defs);
        Some(Conv::Write { class, fields: out, role: Role::Plain })
    }
}

/// A system call's number: tracefs has it in each record (`__syscall_nr`), not in the
/// format, so events are matched by name; this is a stable stand-in (the format id).
fn syscall_nr(f: &EventFormat) -> i64 {
    f.id as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syscall_types() {
        assert_eq!(syscall_arg_type("unsigned int", "fd"), U32);
        assert_eq!(syscall_arg_type("const char *", "buf"), HEX64);
        assert_eq!(syscall_arg_type("char *", "buf"), HEX64);
        assert_eq!(syscall_arg_type("const char *", "filename"), Ty::Str);
        assert_eq!(syscall_arg_type("const char *const *", "argv"), HEX64);
        assert_eq!(syscall_arg_type("size_t", "count"), U64);
        assert_eq!(syscall_arg_type("int", "dfd"), I32);
        assert_eq!(syscall_arg_type("umode_t", "mode"), U16);
        assert_eq!(syscall_arg_type("loff_t", "pos"), I64);
    }

    #[test]
    fn rwbs() {
        assert_eq!(rwbs_mask(b"W"), 1);
        assert_eq!(rwbs_mask(b"WS"), 1 | 32);
        assert_eq!(rwbs_mask(b"RA"), 4 | 8);
        assert_eq!(rwbs_mask(b"FWFS"), 1024 | 1 | 512 | 32);
        assert_eq!(rwbs_mask(b"N"), 0);
    }

    #[test]
    fn groups_cover_the_specs() {
        for sp in SPECS {
            assert!(
                GROUPS.iter().any(|(_, evs)| evs.iter().any(|(s, e)| *s == sp.system && match e {
                    None => true,
                    Some(e) => *e == sp.event,
                })),
                "{}:{} is in no group",
                sp.system,
                sp.event
            );
        }
        for g in DEFAULT_GROUPS {
            assert!(GROUPS.iter().any(|(n, _)| n == g));
        }
    }
}
