//! Reading Common Trace Format (CTF 1.8) traces: TSDL metadata (plain or packetized) lowered to
//! one intermediate representation ([`ir`]), and zero-copy decoding of memory-mapped data
//! streams through a plan compiled once per event class ([`plan`]).
//!
//! ```no_run
//! let trace = tracelens_ctf::Trace::open("path/to/trace")?;
//! for i in 0..trace.streams.len() {
//!     let mut cursor = trace.cursor(i);
//!     while let Some(item) = cursor.advance()? {
//!         if let (tracelens_ctf::Item::Event, Some(ev)) = (item, cursor.event()) {
//!             println!("{} {:?}", ev.name(), ev.ns);
//!         }
//!     }
//! }
//! # Ok::<(), tracelens_ctf::Error>(())
//! ```
#![deny(missing_docs)]

pub mod ir;
pub mod plan;

mod bits;
mod decode;
mod error;
mod metadata;
mod mmap;
mod packet;
mod stream;
mod trace;
mod tsdl;
mod value;
mod warning;
pub mod write;

pub use decode::{DecodeError, Decoder, Specials};
pub use error::{Error, Result};
pub use metadata::{parse_metadata, unpacketize, MetadataText};
pub use mmap::{file_kind, free_space};
pub use tsdl::parse as parse_tsdl;
pub use packet::{read_idx, IdxEntry, IdxProblem, PacketEntry, IDX_MAGIC, PACKET_MAGIC};
pub use stream::{Cursor, DataStream, EventView, Item, StreamFile, TimeAnomaly};
pub use trace::Trace;
pub use value::{until_nul, Children, Field, Fields, Value};
pub use warning::Warning;
