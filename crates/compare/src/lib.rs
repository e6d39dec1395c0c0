//! Executions, their enhanced calling context trees, the executions database and the
//! comparison of two groups of executions: why are the slow ones slow? (The TraceCompare
//! thesis, 2015, chapter 4.)
//!
//! * [`build::build`] finds the executions of a recording — calls of a function recorded with
//!   uprobes, or begin/end event pairs ([`delimit::Delimiter`]) — in one parallel pass over
//!   the kernel trace, and for each its critical path (`tracelens-critical`), its metrics
//!   ([`metrics`]) and its ECCT ([`ecct`]): the time of every calling context along the
//!   critical path, waits and other threads included, from the stack samples of
//!   `tracelens record --stacks` ([`stacks`]).
//! * [`db`] writes and reads the executions database (SQLite, `docs/executions-db.md`): the
//!   union ECCT once, each execution's (node, ns) pairs, each metric as a column.
//! * [`Executions`] is the database in memory, column by column; an [`Expr`] selects a group
//!   ([`Selection`]); [`stats`] computes per-node statistics of groups and compares two
//!   ([`Comparison`]: means, standard deviation, z-scores); [`flamegraph`] draws the
//!   differential flame graph (SVG) and writes folded stacks.
//!
//! ```no_run
//! use tracelens_compare::{build, compare, db, delimit::Delimiter};
//! use tracelens_trace::TraceSet;
//!
//! let set = TraceSet::open(&["/tmp/rec"])?;
//! let opts = build::BuildOptions {
//!     delimiter: Delimiter::Function("handle_request".into()),
//!     begin_ns: None,
//!     end_ns: None,
//!     engine: tracelens_analysis::Options::default(),
//! };
//! let (executions, report) = build::build(set, &opts, &|_| {})?;
//! db::write("runs.db".as_ref(), &executions)?;
//! let c = compare(&executions, "duration<=p50", "duration>=p90")?;
//! if let Some(top) = c.top() {
//!     println!("{} executions; B spends {:.0} ns more in {}", report.executions, top.self_diff(), top.path.join(" > "));
//! }
//! # Ok::<(), tracelens_compare::Error>(())
//! ```
#![deny(missing_docs)]

pub mod build;
mod collect;
pub mod db;
pub mod delimit;
mod generate;
pub mod stacks;
pub mod ecct;
mod error;
pub mod expr;
pub mod flamegraph;
pub mod metrics;
pub mod stats;
pub mod synthetic;
pub mod table;
mod varint;

pub use error::{Error, Result};
pub use expr::{Expr, Selection};
pub use stats::{compare, compare_selections, node_stats, Comparison, NodeDiff, NodeStats};
pub use table::{Executions, Pairs, Values};
