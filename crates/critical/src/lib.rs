//! The execution graph of a kernel trace and the critical path of a thread over it.
//!
//! Why was this thread slow between two moments? Its *critical path* says what it was doing
//! or waiting for all along, and when it waited for another thread, what that thread was
//! doing, recursively (the TraceCompare thesis, 2015, sections 4.3.2 and 4.4.3; Giraldeau and
//! Dagenais's bounded algorithm).
//!
//! * [`GraphAnalysis`] builds the [`ExecutionGraph`] — per thread, a chain of states (running,
//!   preempted, waiting for a CPU, blocked until a wake-up from a thread, a timer, the
//!   network, a block device, an IPI...) and per CPU the interrupts it served — on the
//!   parallel engine of `tracelens-analysis`; the graph is the same for any number of
//!   threads and chunk size.
//! * [`critical_path`] walks it for one thread over an interval and returns a typed
//!   [`CriticalPath`] report whose segments tile the interval; what the trace cannot explain
//!   is `unknown`, and the report says how much.
//! * [`blocked_by_reason`] sums every thread's waits by what ended them (a timer, a block
//!   device, the network, another thread...); [`with_waits`] adds them to a `threads` report
//!   (`tracelens threads` reads the trace once for both: `(Threads, GraphAnalysis)` is one
//!   analysis); [`WaitJoin`] gives the same sums while the trace is read, keeping neither the
//!   graph nor the intervals (memory flat in the trace's size).
//!
//! ```no_run
//! use tracelens_analysis::{Engine, Options};
//! use tracelens_critical::{critical_path, GraphAnalysis};
//! use tracelens_trace::TraceSet;
//!
//! let set = TraceSet::open(&["path/to/kernel-trace"])?;
//! let graph = Engine::new(&set, &Options::default()).run(&GraphAnalysis::new(&set))?;
//! let path = critical_path(&graph, 1234, None, None)?;
//! for s in &path.segments {
//!     println!("{:>12} {:>10} ns  {:<16} {:<12} {}", s.begin_ns, s.duration_ns(), s.name, s.state, s.cause);
//! }
//! println!("unknown: {:.1}%", 100.0 * path.unknown_fraction);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod build;
mod error;
pub mod graph;
mod join;
mod path;
mod replay;
mod waits;

pub use build::{GraphAnalysis, GraphState};
pub use error::{Error, Result};
pub use graph::ExecutionGraph;
pub use join::WaitJoin;
pub use path::{critical_path, ByState, CriticalPath, Follow, PathState, Segment, ThreadTotal, MAX_DEPTH};
pub use waits::{blocked_by_reason, with_waits, ReasonTime, ThreadWaits, ThreadsWaitsReport, WaitReason};
