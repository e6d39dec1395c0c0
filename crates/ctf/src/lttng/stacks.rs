//! The stack trace `tracelens record --stacks` writes beside a recording (`OUTPUT/stacks`):
//! the kernel layout (per-CPU streams with `cpu_id`, the `{tid, pid, procname}` context, the
//! same clock) with tracelens's own events, which `tracelens-symbolize` reads back. Their
//! names and classes are defined here once, for the writer and the reader.
//!
//! | event | payload |
//! |---|---|
//! | [`SAMPLE`] | `kind` ([`KINDS`]), `abi` (perf's register ABI: 2 = 64-bit), `regs_mask` (perf register numbers), `regs[regs_len]`, `stack[stack_len]` (raw bytes from the stack pointer up) |
//! | [`MMAP`] | `start`, `len`, `pgoff`, `prot`, `maj`, `min`, `ino`, `build_id` (hex), `filename` |
//! | [`COMM`] | `comm`, `exec` (1 when the name changed at an `exec`, whose maps start anew) |
//! | [`FORK`] | `child_pid`, `child_tid`, `parent_pid`, `parent_tid` |
//! | [`EXIT`] | `ppid` |

use std::sync::Arc;

use super::{enumeration, field, hex, sequence, sint, string, structure, uint};
use crate::ir::{EventClass, FieldType, NamedField};

/// A stack sample.
pub const SAMPLE: &str = "tracelens_stack_sample";
/// A new executable mapping.
pub const MMAP: &str = "tracelens_mmap";
/// A thread's name (at the start, or changed, e.g. by `exec`).
pub const COMM: &str = "tracelens_comm";
/// A new thread or process.
pub const FORK: &str = "tracelens_fork";
/// A thread's end.
pub const EXIT: &str = "tracelens_exit";
/// `kind` label of a timer sample.
pub const KIND_ON_CPU: &str = "on_cpu";
/// `kind` label of a switch out of a thread that blocked.
pub const KIND_OFF_CPU: &str = "off_cpu";
/// `kind` label of a switch out of a thread still runnable.
pub const KIND_PREEMPTED: &str = "preempted";
/// `kind` labels, by value.
pub const KINDS: [&str; 3] = [KIND_ON_CPU, KIND_OFF_CPU, KIND_PREEMPTED];
/// Event class id of [`SAMPLE`].
pub const ID_SAMPLE: u64 = 0;
/// Event class id of [`MMAP`].
pub const ID_MMAP: u64 = 1;
/// Event class id of [`COMM`].
pub const ID_COMM: u64 = 2;
/// Event class id of [`FORK`].
pub const ID_FORK: u64 = 3;
/// Event class id of [`EXIT`].
pub const ID_EXIT: u64 = 4;

fn class(id: u64, name: &str, fields: Vec<NamedField>) -> EventClass {
    EventClass { id, name: name.to_string(), loglevel: None, model_emf_uri: None, context: None, payload: Some(Arc::new(structure(fields))) }
}

/// The event classes of the stack trace.
pub fn event_classes() -> Vec<EventClass> {
    vec![
        class(
            ID_SAMPLE,
            SAMPLE,
            vec![
                field("_kind", kind_type()),
                field("_abi", uint(8)),
                field("_regs_mask", hex(64)),
                field("_regs_len", uint(8)),
                field("_regs", sequence(hex(64), "_regs_len")),
                field("_stack_len", uint(32)),
                // Declared as text so that text printers show its first bytes only; the bytes
                // are the raw stack copy (read them as bytes, not up to a NUL).
                field("_stack", sequence(super::char_type(), "_stack_len")),
            ],
        ),
        class(
            ID_MMAP,
            MMAP,
            vec![
                field("_start", hex(64)),
                field("_len", hex(64)),
                field("_pgoff", hex(64)),
                field("_prot", uint(32)),
                field("_maj", uint(32)),
                field("_min", uint(32)),
                field("_ino", uint(64)),
                field("_build_id", string()),
                field("_filename", string()),
            ],
        ),
        class(ID_COMM, COMM, vec![field("_comm", string()), field("_exec", uint(8))]),
        class(ID_FORK, FORK, vec![field("_child_pid", sint(32)), field("_child_tid", sint(32)), field("_parent_pid", sint(32)), field("_parent_tid", sint(32))]),
        class(ID_EXIT, EXIT, vec![field("_ppid", sint(32))]),
    ]
}

/// The type of a [`SAMPLE`]'s `kind`: an 8-bit enumeration of [`KINDS`].
fn kind_type() -> FieldType {
    let kinds: Vec<(&str, i128, i128)> = KINDS.iter().enumerate().map(|(v, k)| (*k, v as i128, v as i128)).collect();
    enumeration(8, &kinds)
}
