//! Reading Common Trace Format (CTF 1.8) traces: TSDL metadata (plain or packetized) lowered to
//! one intermediate representation ([`ir`]), and zero-copy decoding of memory-mapped data
//! streams through a plan compiled once per event class.
#![deny(missing_docs)]

pub mod ir;
mod error;
mod metadata;
mod tsdl;

pub use error::{Error, Result};
pub use metadata::{parse_metadata, unpacketize, MetadataText};
