//! Format-independent access to traces: sets of CTF traces opened together, a time-ordered
//! merge of all their streams, filters, and event printers (babeltrace2-compatible text, JSON).
//!
//! Data enters as paths: [`discover`] finds the CTF traces under them (a directory with a
//! `metadata` file, or folders of several, as an LTTng session) and [`TraceSet::open`] opens
//! them with `tracelens-ctf` (memory-mapped, decoded in place). It leaves as events: a
//! [`Merger`] yields every event and discarded-items record of every stream in time order
//! (the analyses read the streams directly, chunk by chunk), and the printers ([`text`],
//! [`json`]) write them to any `io::Write`, one line per event.
//!
//! Modules: `set.rs` (discovery, the set, the merge), [`filter`], [`text`] (the printer and its
//! options), [`json`], and what both printers share — `layout.rs` (what babeltrace2 shows of
//! each stream class, and trace names), `write.rs` (number, time and string writers, escapes),
//! `discarded.rs`.
#![deny(missing_docs)]

pub mod chunks;
mod discarded;
mod error;
pub mod filter;
pub mod json;
mod layout;
pub mod merge;
mod program;
mod set;
pub mod text;
mod write;

pub use discarded::{Discarded, DiscardedItems};
pub use error::{Error, Result};
pub use set::{discover, Merger, Regression, Source, TraceSet};
pub use write::{LineOut, OutBuf};
