//! The event classes the generator writes, in LTTng's kernel layout
//! ([`tracelens_ctf::lttng`]): LTTng's kernel event classes, with the soft IRQ events under
//! their names before lttng-modules 2.8 (`softirq_entry`, as lttng-analyses 0.6 knows them),
//! and the system calls the simulation makes, typed as lttng-modules types them (a test
//! checks them against [`tracelens_ctf::lttng::syscalls`]).

use tracelens_ctf::ir::{EnvValue, TraceClass};
use tracelens_ctf::lttng::events as ev;
use tracelens_ctf::lttng::{kernel_env, ClassDef, EventDef, KernelTrace, Ty, HEX64, I32, I64, U16, U32, U64};

const fn def(name: &'static str, fields: &'static [(&'static str, Ty)]) -> EventDef {
    EventDef { name, fields }
}

const RET: &[(&str, Ty)] = &[("ret", I64)];

/// Event classes. Ids are the positions in this table.
pub const EVENTS: &[EventDef] = &[
    ev::STATEDUMP_START,
    ev::STATEDUMP_END,
    ev::STATEDUMP_PROCESS_STATE,
    ev::STATEDUMP_FILE_DESCRIPTOR,
    ev::SCHED_SWITCH,
    ev::SCHED_WAKING,
    ev::SCHED_WAKEUP,
    ev::SCHED_MIGRATE_TASK,
    def("syscall_entry_read", &[("fd", U32), ("buf", HEX64), ("count", U64)]),
    def("syscall_exit_read", &[("ret", I64), ("buf", HEX64)]),
    def("syscall_entry_write", &[("fd", U32), ("buf", HEX64), ("count", U64)]),
    def("syscall_exit_write", RET),
    def("syscall_entry_openat", &[("dfd", I32), ("filename", Ty::Str), ("flags", I32), ("mode", U16)]),
    def("syscall_exit_openat", RET),
    def("syscall_entry_close", &[("fd", U32)]),
    def("syscall_exit_close", RET),
    def("syscall_entry_futex", &[("uaddr", HEX64), ("op", I32), ("val", U32), ("utime", HEX64), ("uaddr2", HEX64), ("val3", U32)]),
    def("syscall_exit_futex", &[("ret", I64), ("uaddr", HEX64), ("uaddr2", HEX64)]),
    def("syscall_entry_getpid", &[]),
    def("syscall_exit_getpid", RET),
    ev::IRQ_HANDLER_ENTRY,
    ev::IRQ_HANDLER_EXIT,
    ev::IRQ_SOFTIRQ_RAISE.renamed("softirq_raise"),
    ev::IRQ_SOFTIRQ_ENTRY.renamed("softirq_entry"),
    ev::IRQ_SOFTIRQ_EXIT.renamed("softirq_exit"),
    ev::SCHED_PROCESS_FORK,
    ev::SCHED_PROCESS_EXEC,
    ev::SCHED_PROCESS_EXIT,
];

/// The id of the event class named `name` (panics on a name not in [`EVENTS`]: a bug here).
pub fn id(name: &str) -> u32 {
    EVENTS.iter().position(|d| d.name == name).unwrap_or_else(|| panic!("unknown synth event {name}")) as u32
}

/// The trace class: LTTng's kernel layout without the event common context, the clock's
/// origin at 1,700,000,000 s.
pub fn trace_class(uuid: [u8; 16], hostname: &str, cpus: u32) -> TraceClass {
    let mut env = kernel_env(hostname, None, "tracelens synth");
    env.push(("cpus".into(), EnvValue::Int(cpus as i64)));
    let events = EVENTS.iter().enumerate().map(|(i, d)| ClassDef::from(d).class(i as u64)).collect();
    KernelTrace { uuid, env, clock_offset_ns: 1_700_000_000 * 1_000_000_000, common_context: false, events }.class()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracelens_ctf::lttng::syscalls::{arg_type, exit_fields};

    /// The system calls are typed as `tracelens record` types them: arguments from their C
    /// types in the kernel's tracepoint formats, exits with LTTng's output arguments.
    #[test]
    fn syscalls_are_typed_as_lttng_types_them() {
        let prototypes: &[(&str, &[(&str, &str)])] = &[
            ("read", &[("fd", "unsigned int"), ("buf", "char *"), ("count", "size_t")]),
            ("write", &[("fd", "unsigned int"), ("buf", "const char *"), ("count", "size_t")]),
            ("openat", &[("dfd", "int"), ("filename", "const char *"), ("flags", "int"), ("mode", "umode_t")]),
            ("close", &[("fd", "unsigned int")]),
            ("futex", &[("uaddr", "u32 *"), ("op", "int"), ("val", "u32"), ("utime", "const struct __kernel_timespec *"), ("uaddr2", "u32 *"), ("val3", "u32")]),
            ("getpid", &[]),
        ];
        for (name, args) in prototypes {
            let entry = &EVENTS[id(&format!("syscall_entry_{name}")) as usize];
            let want: Vec<(&str, Ty)> = args.iter().map(|(a, c)| (*a, arg_type(c, a))).collect();
            assert_eq!(entry.fields, &want[..], "{name}");
            let exit = &EVENTS[id(&format!("syscall_exit_{name}")) as usize];
            assert_eq!(exit.fields, &exit_fields(name)[..], "{name}");
        }
    }
}
