//! User stacks (`tracelens record --stacks`): `perf_event_open` sampling of the traced
//! threads, written as CTF events beside the kernel trace (`OUTPUT/stacks`).
//!
//! Two kinds of samples, both carrying the thread's user registers and a copy of its user
//! stack (from the stack pointer up, [`StackOptions::stack_size`] bytes at most):
//!
//! * **on-CPU**: the `cpu-clock` software timer, every [`StackOptions::period_ns`] of CPU
//!   time a thread runs;
//! * **off-CPU**: the `sched:sched_switch` tracepoint, each time a traced thread is switched
//!   out. It fires in the context of the thread leaving the CPU, so its user registers are
//!   those saved when it entered the kernel: the stack at the blocking point (the system
//!   call that blocked), with neither a signal nor a kernel module (the thesis's
//!   `syscall_stack`). A switch of a thread still runnable (preempted) is labelled
//!   `preempted` rather than `off_cpu`.
//!
//! A command is sampled from its `exec` on (its child waits before `exec` until the events
//! are open: `enable_on_exec` and `inherit`, so that the threads and processes it creates
//! are sampled too). An attached process has its existing threads sampled, and what they
//! create from then on. System-wide recording samples every task but the recorder.
//!
//! Times are CLOCK_MONOTONIC (`use_clockid`), the kernel trace's `mono` clock: the stack
//! trace has the same clock class and offset, so both merge exactly. The memory maps are
//! recorded (executable mappings at the start, and every new one as the kernel reports it),
//! with the GNU build id of each file, so that stacks are unwound with the files' DWARF
//! call-frame information and symbolized offline (`tracelens print --symbolize`, crate
//! `tracelens-symbolize`).
//!
//! The events ([`events`]) use the kernel trace's layout (`{tid, pid, procname}` context,
//! per-CPU streams with `cpu_id`); their table is in [`tracelens_ctf::lttng::stacks`].
//!
//! Samples the kernel could not write (buffers full) are CTF discarded-event counts.

mod maps;
mod perf;
mod records;
mod sampler;
mod write;

use std::path::Path;
use std::process::{Child, Command};

pub use sampler::Sampler;
pub use write::StacksSummary;

use crate::error::Result;
use crate::metadata::TraceInfo;

/// Event names and ids of the stack trace (defined with its layout in
/// [`tracelens_ctf::lttng::stacks`], which `tracelens-symbolize` reads them from too).
pub use tracelens_ctf::lttng::stacks as events;

/// How stacks are sampled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackOptions {
    /// On-CPU sampling period, in nanoseconds of CPU time. Default 1 ms.
    pub period_ns: u64,
    /// Bytes of user stack copied per sample (a multiple of 8, at most 65000). Default
    /// 16 KiB.
    pub stack_size: u32,
    /// Ring buffer per CPU, in KiB (rounded up to a power of two pages). Default 4 MiB.
    pub buffer_kb: u64,
    /// Also sample at each context switch out of a traced thread. Default true.
    pub off_cpu: bool,
}

impl Default for StackOptions {
    fn default() -> StackOptions {
        StackOptions { period_ns: 1_000_000, stack_size: 16 * 1024, buffer_kb: 4096, off_cpu: true }
    }
}

/// Checks that stacks can be sampled here (architecture, `perf_event_open` permitted, the
/// `sched_switch` tracepoint under `events_dir` for off-CPU stacks), by opening and closing
/// the events on this process.
pub fn check(options: &StackOptions, events_dir: &Path) -> Result<()> {
    let switch = if options.off_cpu { Some(sampler::switch_event(events_dir)?) } else { None };
    sampler::check(options, switch.as_ref())
}

impl Sampler {
    /// Starts `cmd` with its stacks sampled (see the [module](self) documentation).
    pub fn start_command(cmd: Command, options: &StackOptions, events_dir: &Path, spool_dir: &Path) -> Result<(Child, Sampler)> {
        let switch = if options.off_cpu { Some(sampler::switch_event(events_dir)?) } else { None };
        Sampler::spawn(cmd, options, switch, spool_dir)
    }

    /// Samples the stacks of running process `pid`.
    pub fn start_pid(pid: i32, options: &StackOptions, events_dir: &Path, spool_dir: &Path) -> Result<Sampler> {
        let switch = if options.off_cpu { Some(sampler::switch_event(events_dir)?) } else { None };
        Sampler::attach(pid, options, switch, spool_dir)
    }

    /// Samples the stacks of every task.
    pub fn start_system(options: &StackOptions, events_dir: &Path, spool_dir: &Path) -> Result<Sampler> {
        let switch = if options.off_cpu { Some(sampler::switch_event(events_dir)?) } else { None };
        Sampler::system(options, switch, spool_dir)
    }

    /// Stops sampling and writes the samples as a CTF trace in `dir`, with the clock and
    /// machine facts of `info` (its UUID is replaced). Samples of process `drop_pid` (the
    /// recorder) are left out.
    pub fn finish(mut self, dir: &Path, info: &TraceInfo, drop_pid: Option<i32>) -> Result<StacksSummary> {
        self.stop()?;
        let mut info = info.clone();
        info.uuid[15] ^= 0x5a;
        info.uuid[14] ^= 0xa5;
        write::write(&self, dir, &info, drop_pid)
    }
}
