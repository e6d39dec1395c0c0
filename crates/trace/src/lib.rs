//! Format-independent access to traces: sets of CTF traces opened together, a time-ordered
//! merge of all their streams, and event formatting (babeltrace2-compatible text, JSON).
#![deny(missing_docs)]

mod discarded;
mod error;
pub mod filter;
pub mod json;
mod layout;
mod set;
pub mod text;
mod write;

pub use discarded::{Discarded, DiscardedItems};
pub use error::{Error, Result};
pub use set::{discover, Merger, Regression, Source, TraceSet};
