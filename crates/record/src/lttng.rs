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

use tracelens_ctf::lttng::events::{self as ev, STATEDUMP};
pub use tracelens_ctf::lttng::syscalls::{arg_type as syscall_arg_type, EXIT_OUTPUTS};
pub use tracelens_ctf::lttng::{ClassDef, EventDef, Ty, HEX32, HEX64, I32, I64, OCT32, U16, U32, U64};

use crate::format::{EventFormat, Field, FieldKind};

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
    /// The LTTng event class (its name and fields).
    pub class: &'static EventDef,
    /// Where each of the class's fields comes from, in its order.
    pub sources: &'static [Src],
}

impl Spec {
    /// The LTTng event name.
    pub fn lttng(&self) -> &'static str {
        self.class.name
    }
}

const fn spec(system: &'static str, event: &'static str, class: &'static EventDef, sources: &'static [Src]) -> Spec {
    Spec { system, event, class, sources }
}

use Src::{Prio, Rwbs, Tgid, Vtids, F};

const WAKE: &[Src] = &[F("comm"), F("pid"), Prio("prio"), F("target_cpu")];
const TASK: &[Src] = &[F("comm"), F("pid"), Prio("prio")];
const NET: &[Src] = &[F("skbaddr"), F("len"), F("name")];
const SOFTIRQ: &[Src] = &[F("vec")];
/// x86 interrupt vectors (local APIC timer, inter-processor interrupts).
const VECTOR: &[Src] = &[F("vector")];

/// The tracefs events LTTng has, as LTTng names and lays them out.
pub const SPECS: &[Spec] = &[
    spec("sched", "sched_switch", &ev::SCHED_SWITCH, &[F("prev_comm"), F("prev_pid"), Prio("prev_prio"), F("prev_state"), F("next_comm"), F("next_pid"), Prio("next_prio")]),
    spec("sched", "sched_waking", &ev::SCHED_WAKING, WAKE),
    spec("sched", "sched_wakeup", &ev::SCHED_WAKEUP, WAKE),
    spec("sched", "sched_wakeup_new", &ev::SCHED_WAKEUP_NEW, WAKE),
    spec("sched", "sched_migrate_task", &ev::SCHED_MIGRATE_TASK, &[F("comm"), F("pid"), Prio("prio"), F("orig_cpu"), F("dest_cpu")]),
    spec(
        "sched",
        "sched_process_fork",
        &ev::SCHED_PROCESS_FORK,
        &[
            F("parent_comm"),
            F("parent_pid"),
            Tgid("parent_pid"),
            Src::NsInum,
            F("child_comm"),
            F("child_pid"),
            Vtids("child_pid"),
            Vtids("child_pid"),
            Tgid("child_pid"),
            Src::NsInum,
        ],
    ),
    spec("sched", "sched_process_exec", &ev::SCHED_PROCESS_EXEC, &[F("filename"), F("pid"), F("old_pid")]),
    spec("sched", "sched_process_exit", &ev::SCHED_PROCESS_EXIT, TASK),
    spec("sched", "sched_process_free", &ev::SCHED_PROCESS_FREE, TASK),
    spec("sched", "sched_process_wait", &ev::SCHED_PROCESS_WAIT, TASK),
    spec("irq", "irq_handler_entry", &ev::IRQ_HANDLER_ENTRY, &[F("irq"), F("name")]),
    spec("irq", "irq_handler_exit", &ev::IRQ_HANDLER_EXIT, &[F("irq"), F("ret")]),
    spec("irq", "softirq_entry", &ev::IRQ_SOFTIRQ_ENTRY, SOFTIRQ),
    spec("irq", "softirq_exit", &ev::IRQ_SOFTIRQ_EXIT, SOFTIRQ),
    spec("irq", "softirq_raise", &ev::IRQ_SOFTIRQ_RAISE, SOFTIRQ),
    spec("timer", "hrtimer_expire_entry", &ev::TIMER_HRTIMER_EXPIRE_ENTRY, &[F("hrtimer"), F("now"), F("function")]),
    spec("timer", "hrtimer_expire_exit", &ev::TIMER_HRTIMER_EXPIRE_EXIT, &[F("hrtimer")]),
    spec("timer", "hrtimer_start", &ev::TIMER_HRTIMER_START, &[F("hrtimer"), F("function"), F("expires"), F("softexpires"), F("mode")]),
    spec("timer", "hrtimer_cancel", &ev::TIMER_HRTIMER_CANCEL, &[F("hrtimer")]),
    spec("timer", "timer_start", &ev::TIMER_START, &[F("timer"), F("function"), F("expires"), F("now"), F("flags")]),
    spec("timer", "timer_expire_entry", &ev::TIMER_EXPIRE_ENTRY, &[F("timer"), F("now"), F("function")]),
    spec("timer", "timer_expire_exit", &ev::TIMER_EXPIRE_EXIT, &[F("timer")]),
    spec("timer", "timer_cancel", &ev::TIMER_CANCEL, &[F("timer")]),
    spec("block", "block_rq_issue", &ev::BLOCK_RQ_ISSUE, &[F("dev"), F("sector"), F("nr_sector"), F("bytes"), Src::Tid, Rwbs("rwbs"), F("comm")]),
    spec("block", "block_rq_complete", &ev::BLOCK_RQ_COMPLETE, &[F("dev"), F("sector"), F("nr_sector"), F("error"), Rwbs("rwbs")]),
    spec("net", "net_dev_queue", &ev::NET_DEV_QUEUE, NET),
    spec("net", "netif_receive_skb", &ev::NETIF_RECEIVE_SKB, NET),
    spec("irq_vectors", "local_timer_entry", &ev::X86_LOCAL_TIMER_ENTRY, VECTOR),
    spec("irq_vectors", "local_timer_exit", &ev::X86_LOCAL_TIMER_EXIT, VECTOR),
    spec("irq_vectors", "reschedule_entry", &ev::X86_RESCHEDULE_ENTRY, VECTOR),
    spec("irq_vectors", "reschedule_exit", &ev::X86_RESCHEDULE_EXIT, VECTOR),
    spec("irq_vectors", "call_function_entry", &ev::X86_CALL_FUNCTION_ENTRY, VECTOR),
    spec("irq_vectors", "call_function_exit", &ev::X86_CALL_FUNCTION_EXIT, VECTOR),
    spec("irq_vectors", "call_function_single_entry", &ev::X86_CALL_FUNCTION_SINGLE_ENTRY, VECTOR),
    spec("irq_vectors", "call_function_single_exit", &ev::X86_CALL_FUNCTION_SINGLE_EXIT, VECTOR),
    spec("irq_vectors", "irq_work_entry", &ev::X86_IRQ_WORK_ENTRY, VECTOR),
    spec("irq_vectors", "irq_work_exit", &ev::X86_IRQ_WORK_EXIT, VECTOR),
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
        let mut s = Schema { classes: STATEDUMP.iter().map(ClassDef::from).collect(), ..Schema::default() };
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
            let class = self.add_class(sp.class.name.to_string(), sp.class.fields.iter().map(|(n, t)| (n.to_string(), *t)).collect());
            let fields = sp.class.fields.iter().zip(sp.sources).map(|((_, t), src)| (*t, resolve(f, *src))).collect();
            let role = match sp.class.name {
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
                let entry = entries.get(sc);
                let mut defs = Vec::new();
                let mut out = Vec::new();
                for (name, ty) in tracelens_ctf::lttng::syscalls::exit_fields(sc) {
                    let src = match name {
                        "ret" => need("ret").map_or(RSrc::Zero, RSrc::Field),
                        _ => entry.and_then(|(_, args)| args.iter().position(|a| a.name == name)).map_or(RSrc::Zero, RSrc::EntryArg),
                    };
                    defs.push((name.to_string(), ty));
                    out.push((ty, src));
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
    fn every_field_has_a_source() {
        for sp in SPECS {
            assert_eq!(sp.sources.len(), sp.class.fields.len(), "{}", sp.class.name);
        }
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
