//! Format-independent access to traces: sets of CTF traces opened together, a time-ordered
//! merge of all their streams, and event formatting (babeltrace2-compatible text, JSON).
#![deny(missing_docs)]

mod error;
pub mod filter;
pub mod json;
pub mod merge;
mod set;
pub mod text;

pub use error::{Error, Result};
pub use set::{discover, Merger, Regression, Source, TraceSet};
