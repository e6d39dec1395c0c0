//! Parallel trace analysis: the engine and the analyses built on it (`stats`, and the kernel
//! analyses `cpu`, `sched`, `syscalls`, `io`, `irq`, as lttng-analyses computes them).
//!
//! Data enters as a [`tracelens_trace::TraceSet`] (CTF traces opened by `tracelens-trace`) and
//! leaves as a typed report per analysis ([`StatsReport`], [`CpuReport`], [`SchedReport`],
//! [`SyscallsReport`], [`IoReport`], [`IrqReport`]): plain data that implements
//! `serde::Serialize`, which the CLI prints as text tables or JSON. Nothing here formats text.
//!
//! The crate has three layers, and an analysis only imports the first two:
//!
//! * the engine (`engine.rs`, with where its time goes: `timings.rs`) and the kernel-event mapping ([`kernel`]: LTTng's and perf's
//!   event and field names read as one [`kernel::Kind`]);
//! * the floor the analyses share: one total order of events across chunks ([`EventKey`],
//!   [`EventCounter`], [`StreamCpu`]), the k-way merge of sorted runs (`runs.rs`), the
//!   cross-chunk tracker of threads and system calls (`tracker.rs`), duration statistics
//!   ([`Durations`]), the time span a report covers (`span.rs`), error names ([`errno_name`]),
//!   system call names and fast integer maps;
//! * the analyses, one module each (`io` a folder: its descriptor model has several parts).
//!
//! The [`Engine`] cuts every stream of a [`tracelens_trace::TraceSet`] into *chunks* — runs of
//! consecutive packets whose total size is near a target, taken from the packet index (the
//! hybrid partitioning of *Parallel trace analysis*, 2019, section 4.1.3) — sorts them by start
//! time and reads them on a thread pool. An [`Analysis`] gives each chunk an empty state, feeds
//! it the chunk's events and discarded-items records, merges the states in time order with an
//! associative `merge(earlier, later)` (pipelined: a state is merged as soon as every earlier
//! chunk is done), and turns the final state into its output.
//!
//! Every analysis keeps one invariant, checked by this crate's tests: its output is the same
//! for any number of threads and any chunk size, down to one packet per chunk.
//!
//! ```no_run
//! use tracelens_analysis::{Engine, Options, Stats};
//! use tracelens_trace::TraceSet;
//!
//! let set = TraceSet::open(&["path/to/trace"])?;
//! let report = Engine::new(&set, &Options { threads: 4, ..Options::default() }).run(&Stats::new(&set))?;
//! println!("{} events in {:?} ns", report.events, report.span_ns());
//! for (name, n) in report.names_by_count() {
//!     println!("{n:>10} {name}");
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

// The engine and the kernel-event mapping.
mod engine;
mod error;
mod pair;
pub mod filter;
pub mod kernel;
mod kernel_syscalls;
mod timings;

// The floor the analyses share (an analysis imports these, never another analysis).
mod call_names;
mod durations;
mod errno;
mod id_map;
mod order;
mod replay;
mod runs;
mod sched_state;
mod shards;
mod span;
mod thread_info;
mod tracker;

// The analyses.
pub mod cpu;
pub mod io;
pub mod irq;
pub mod latency;
pub mod sched;
mod stats;
pub mod syscalls;
pub mod threads;
pub mod timeline;

#[cfg(test)]
mod testing;

pub use pair::{DecodedOnce, OnKernel};
pub use timings::{thread_cpu_ns, Phase, RunTimings, Stopwatch};
pub use engine::{chunks, packets_back, Analysis, Background, Chunk, Context, Engine, Options, PacketsBack, Progress, ReachedBack, DEFAULT_CHUNK_SIZE};
pub use cpu::{Cpu, CpuReport, CpuState, CpuUsage, ThreadUsage};
pub use error::{Error, Result};
pub use filter::Filter;
pub use io::{FdType, FileIo, InterfaceNet, InterfaceTraffic, Io, IoReport, IoState, NetUsage, ProcessIo, Rw, SlowCall, ThreadNet, Traffic};
pub use latency::{Latency, LatencyOptions, LatencyReport, LatencyState};
pub use irq::{HardIrqStats, Irq, IrqReport, IrqState, SoftIrqStats};
pub use sched::{PrioLatency, Sched, SchedReport, SchedState, ThreadLatency, WakeLatency};
pub use stats::{Stats, StatsReport, StatsState};
pub use timeline::{Arg, Instant, StateSlice, SyscallSlice, ThreadTimeline, Timeline, TimelineReport, TimelineState};
pub use threads::{BlockedTime, CpuTime, ThreadLife, Threads, ThreadsReport, ThreadsState, WaitSink};
pub use syscalls::{CallStats, Syscalls, SyscallsReport, SyscallsState, ThreadCalls};
pub use durations::Durations;
pub use errno::{errno_name, is_error_return, MAX_ERRNO};
pub use order::{EventCounter, EventKey, StreamCpu};
pub use replay::Replay;
pub use tracelens_trace::{Discarded, DiscardedItems};
