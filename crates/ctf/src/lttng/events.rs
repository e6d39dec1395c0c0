//! LTTng's kernel event classes: names and fields as lttng-modules 2.x declares them (field
//! names without the `_` prefix the payload types add). `tracelens record` writes these for
//! the tracefs events it converts; `tracelens synth` writes a subset.
//!
//! Priorities are LTTng's (`prio - MAX_RT_PRIO`, so a normal task shows 20); `*_tid` fields are
//! thread ids and `*_pid` fields thread-group ids, where the kernel's tracepoints call thread
//! ids `pid`.

use super::{EventDef, Ty, HEX32, HEX64, I32, I64, OCT32, U32, U64};

const fn def(name: &'static str, fields: &'static [(&'static str, Ty)]) -> EventDef {
    EventDef { name, fields }
}

/// `lttng_statedump_start`: the state dump begins.
pub const STATEDUMP_START: EventDef = def("lttng_statedump_start", &[]);
/// `lttng_statedump_end`: the state dump is over.
pub const STATEDUMP_END: EventDef = def("lttng_statedump_end", &[]);
/// `lttng_statedump_process_state`: one thread at the start.
pub const STATEDUMP_PROCESS_STATE: EventDef = def(
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
);
/// `lttng_statedump_file_descriptor`: one open file at the start.
pub const STATEDUMP_FILE_DESCRIPTOR: EventDef =
    def("lttng_statedump_file_descriptor", &[("pid", I32), ("fd", I32), ("flags", OCT32), ("fmode", HEX32), ("filename", Ty::Str)]);

/// The state dump's classes, in the order a recording numbers them first.
pub const STATEDUMP: [EventDef; 4] = [STATEDUMP_START, STATEDUMP_END, STATEDUMP_PROCESS_STATE, STATEDUMP_FILE_DESCRIPTOR];

const WAKE: &[(&str, Ty)] = &[("comm", Ty::Comm), ("tid", I32), ("prio", I32), ("target_cpu", I32)];
const TASK: &[(&str, Ty)] = &[("comm", Ty::Comm), ("tid", I32), ("prio", I32)];
const NET: &[(&str, Ty)] = &[("skbaddr", HEX64), ("len", U32), ("name", Ty::Str)];
const SOFTIRQ: &[(&str, Ty)] = &[("vec", U32)];

/// `sched_switch`.
pub const SCHED_SWITCH: EventDef = def(
    "sched_switch",
    &[("prev_comm", Ty::Comm), ("prev_tid", I32), ("prev_prio", I32), ("prev_state", I64), ("next_comm", Ty::Comm), ("next_tid", I32), ("next_prio", I32)],
);
/// `sched_waking`.
pub const SCHED_WAKING: EventDef = def("sched_waking", WAKE);
/// `sched_wakeup`.
pub const SCHED_WAKEUP: EventDef = def("sched_wakeup", WAKE);
/// `sched_wakeup_new`.
pub const SCHED_WAKEUP_NEW: EventDef = def("sched_wakeup_new", WAKE);
/// `sched_migrate_task`.
pub const SCHED_MIGRATE_TASK: EventDef = def("sched_migrate_task", &[("comm", Ty::Comm), ("tid", I32), ("prio", I32), ("orig_cpu", I32), ("dest_cpu", I32)]);
/// `sched_process_fork` (with the child's thread ids in its pid namespaces, `vtids`).
pub const SCHED_PROCESS_FORK: EventDef = def(
    "sched_process_fork",
    &[
        ("parent_comm", Ty::Comm),
        ("parent_tid", I32),
        ("parent_pid", I32),
        ("parent_ns_inum", U32),
        ("child_comm", Ty::Comm),
        ("child_tid", I32),
        ("_vtids_length", Ty::SeqLen8),
        ("vtids", Ty::SeqI32),
        ("child_pid", I32),
        ("child_ns_inum", U32),
    ],
);
/// `sched_process_exec`.
pub const SCHED_PROCESS_EXEC: EventDef = def("sched_process_exec", &[("filename", Ty::Str), ("tid", I32), ("old_tid", I32)]);
/// `sched_process_exit`.
pub const SCHED_PROCESS_EXIT: EventDef = def("sched_process_exit", TASK);
/// `sched_process_free`.
pub const SCHED_PROCESS_FREE: EventDef = def("sched_process_free", TASK);
/// `sched_process_wait`.
pub const SCHED_PROCESS_WAIT: EventDef = def("sched_process_wait", TASK);
/// `irq_handler_entry`.
pub const IRQ_HANDLER_ENTRY: EventDef = def("irq_handler_entry", &[("irq", I32), ("name", Ty::Str)]);
/// `irq_handler_exit`.
pub const IRQ_HANDLER_EXIT: EventDef = def("irq_handler_exit", &[("irq", I32), ("ret", I32)]);
/// `irq_softirq_entry` (`softirq_entry` before lttng-modules 2.8).
pub const IRQ_SOFTIRQ_ENTRY: EventDef = def("irq_softirq_entry", SOFTIRQ);
/// `irq_softirq_exit` (`softirq_exit` before lttng-modules 2.8).
pub const IRQ_SOFTIRQ_EXIT: EventDef = def("irq_softirq_exit", SOFTIRQ);
/// `irq_softirq_raise` (`softirq_raise` before lttng-modules 2.8).
pub const IRQ_SOFTIRQ_RAISE: EventDef = def("irq_softirq_raise", SOFTIRQ);
/// `timer_hrtimer_expire_entry`.
pub const TIMER_HRTIMER_EXPIRE_ENTRY: EventDef = def("timer_hrtimer_expire_entry", &[("hrtimer", HEX64), ("now", I64), ("function", HEX64)]);
/// `timer_hrtimer_expire_exit`.
pub const TIMER_HRTIMER_EXPIRE_EXIT: EventDef = def("timer_hrtimer_expire_exit", &[("hrtimer", HEX64)]);
/// `timer_hrtimer_start`.
pub const TIMER_HRTIMER_START: EventDef =
    def("timer_hrtimer_start", &[("hrtimer", HEX64), ("function", HEX64), ("expires", I64), ("softexpires", I64), ("mode", U32)]);
/// `timer_hrtimer_cancel`.
pub const TIMER_HRTIMER_CANCEL: EventDef = def("timer_hrtimer_cancel", &[("hrtimer", HEX64)]);
/// `timer_start`.
pub const TIMER_START: EventDef = def("timer_start", &[("timer", HEX64), ("function", HEX64), ("expires", U64), ("now", U64), ("flags", U32)]);
/// `timer_expire_entry`.
pub const TIMER_EXPIRE_ENTRY: EventDef = def("timer_expire_entry", &[("timer", HEX64), ("now", U64), ("function", HEX64)]);
/// `timer_expire_exit`.
pub const TIMER_EXPIRE_EXIT: EventDef = def("timer_expire_exit", &[("timer", HEX64)]);
/// `timer_cancel`.
pub const TIMER_CANCEL: EventDef = def("timer_cancel", &[("timer", HEX64)]);
/// `block_rq_issue` (`rwbs` as LTTng's bit mask).
pub const BLOCK_RQ_ISSUE: EventDef =
    def("block_rq_issue", &[("dev", U32), ("sector", U64), ("nr_sector", U32), ("bytes", U32), ("tid", I32), ("rwbs", U32), ("comm", Ty::Comm)]);
/// `block_rq_complete` (`rwbs` as LTTng's bit mask).
pub const BLOCK_RQ_COMPLETE: EventDef = def("block_rq_complete", &[("dev", U32), ("sector", U64), ("nr_sector", U32), ("error", I32), ("rwbs", U32)]);
/// `net_dev_queue`.
pub const NET_DEV_QUEUE: EventDef = def("net_dev_queue", NET);
/// `netif_receive_skb`.
pub const NETIF_RECEIVE_SKB: EventDef = def("netif_receive_skb", NET);

/// x86 interrupt vectors (local APIC timer, inter-processor interrupts): their one field.
const VECTOR: &[(&str, Ty)] = &[("vector", I32)];
/// `x86_irq_vectors_local_timer_entry`.
pub const X86_LOCAL_TIMER_ENTRY: EventDef = def("x86_irq_vectors_local_timer_entry", VECTOR);
/// `x86_irq_vectors_local_timer_exit`.
pub const X86_LOCAL_TIMER_EXIT: EventDef = def("x86_irq_vectors_local_timer_exit", VECTOR);
/// `x86_irq_vectors_reschedule_entry`.
pub const X86_RESCHEDULE_ENTRY: EventDef = def("x86_irq_vectors_reschedule_entry", VECTOR);
/// `x86_irq_vectors_reschedule_exit`.
pub const X86_RESCHEDULE_EXIT: EventDef = def("x86_irq_vectors_reschedule_exit", VECTOR);
/// `x86_irq_vectors_call_function_entry`.
pub const X86_CALL_FUNCTION_ENTRY: EventDef = def("x86_irq_vectors_call_function_entry", VECTOR);
/// `x86_irq_vectors_call_function_exit`.
pub const X86_CALL_FUNCTION_EXIT: EventDef = def("x86_irq_vectors_call_function_exit", VECTOR);
/// `x86_irq_vectors_call_function_single_entry`.
pub const X86_CALL_FUNCTION_SINGLE_ENTRY: EventDef = def("x86_irq_vectors_call_function_single_entry", VECTOR);
/// `x86_irq_vectors_call_function_single_exit`.
pub const X86_CALL_FUNCTION_SINGLE_EXIT: EventDef = def("x86_irq_vectors_call_function_single_exit", VECTOR);
/// `x86_irq_vectors_irq_work_entry`.
pub const X86_IRQ_WORK_ENTRY: EventDef = def("x86_irq_vectors_irq_work_entry", VECTOR);
/// `x86_irq_vectors_irq_work_exit`.
pub const X86_IRQ_WORK_EXIT: EventDef = def("x86_irq_vectors_irq_work_exit", VECTOR);

/// Every kernel event class above but the state dump's.
pub const KERNEL: [EventDef; 37] = [
    SCHED_SWITCH,
    SCHED_WAKING,
    SCHED_WAKEUP,
    SCHED_WAKEUP_NEW,
    SCHED_MIGRATE_TASK,
    SCHED_PROCESS_FORK,
    SCHED_PROCESS_EXEC,
    SCHED_PROCESS_EXIT,
    SCHED_PROCESS_FREE,
    SCHED_PROCESS_WAIT,
    IRQ_HANDLER_ENTRY,
    IRQ_HANDLER_EXIT,
    IRQ_SOFTIRQ_ENTRY,
    IRQ_SOFTIRQ_EXIT,
    IRQ_SOFTIRQ_RAISE,
    TIMER_HRTIMER_EXPIRE_ENTRY,
    TIMER_HRTIMER_EXPIRE_EXIT,
    TIMER_HRTIMER_START,
    TIMER_HRTIMER_CANCEL,
    TIMER_START,
    TIMER_EXPIRE_ENTRY,
    TIMER_EXPIRE_EXIT,
    TIMER_CANCEL,
    BLOCK_RQ_ISSUE,
    BLOCK_RQ_COMPLETE,
    NET_DEV_QUEUE,
    NETIF_RECEIVE_SKB,
    X86_LOCAL_TIMER_ENTRY,
    X86_LOCAL_TIMER_EXIT,
    X86_RESCHEDULE_ENTRY,
    X86_RESCHEDULE_EXIT,
    X86_CALL_FUNCTION_ENTRY,
    X86_CALL_FUNCTION_EXIT,
    X86_CALL_FUNCTION_SINGLE_ENTRY,
    X86_CALL_FUNCTION_SINGLE_EXIT,
    X86_IRQ_WORK_ENTRY,
    X86_IRQ_WORK_EXIT,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_sequences_follow_their_length() {
        let all: Vec<&EventDef> = STATEDUMP.iter().chain(KERNEL.iter()).collect();
        for (i, a) in all.iter().enumerate() {
            assert!(all[..i].iter().all(|b| b.name != a.name), "{} twice", a.name);
            for (k, (_, t)) in a.fields.iter().enumerate() {
                if *t == Ty::SeqI32 {
                    assert_eq!(a.fields.get(k.wrapping_sub(1)).map(|f| f.1), Some(Ty::SeqLen8), "{}: a sequence follows its length", a.name);
                }
            }
        }
    }
}
