//! The CTF trace class of a recording: LTTng's kernel layout ([`tracelens_ctf::lttng`]) with
//! the event common context `{tid, pid, procname}` that
//! `lttng add-context -k -t tid -t pid -t procname` gives, and the machine's facts.

use tracelens_ctf::ir::TraceClass;
use tracelens_ctf::lttng::{kernel_env, ClassDef, KernelTrace};

/// Facts about the recording machine and clock written into the metadata.
#[derive(Clone, Debug, Default)]
pub struct TraceInfo {
    /// The trace UUID.
    pub uuid: [u8; 16],
    /// `uname -n`.
    pub hostname: String,
    /// `uname -r`.
    pub kernel_release: String,
    /// `uname -v`.
    pub kernel_version: String,
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC at the start, in nanoseconds: the clock offset,
    /// so that times print as wall-clock times.
    pub clock_offset_ns: i64,
    /// Number of CPU streams.
    pub cpus: u32,
}

impl TraceInfo {
    /// The layout of a trace of this machine written by `producer`, with `events`.
    pub fn kernel_trace(&self, producer: &str, events: Vec<tracelens_ctf::ir::EventClass>) -> KernelTrace {
        KernelTrace {
            uuid: self.uuid,
            env: kernel_env(&self.hostname, Some((&self.kernel_release, &self.kernel_version)), producer),
            clock_offset_ns: self.clock_offset_ns,
            common_context: true,
            events,
        }
    }
}

/// The trace class: `classes[k]` gets event id `ids[k]`.
pub fn trace_class(info: &TraceInfo, classes: &[ClassDef], ids: &[u64]) -> TraceClass {
    let events = classes.iter().zip(ids).map(|(c, &id)| c.class(id)).collect();
    info.kernel_trace("tracelens record", events).class()
}
