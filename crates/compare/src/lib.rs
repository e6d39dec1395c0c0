//! Executions, their enhanced calling context trees, the executions database and the
//! comparison of two groups of executions: why are the slow ones slow?
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
