//! The Common Trace Format (CTF 1.8) core of tracelens: what every other crate reads traces
//! with and writes them with.
//!
//! * **In:** a trace directory (`metadata`, stream files, LTTng `index/*.idx`) opened with
//!   [`Trace::open`], or bytes already in memory ([`Trace::from_memory`]). The metadata — TSDL
//!   text, plain or packetized — is lowered to one intermediate representation ([`ir`]);
//!   stream files are memory-mapped ([`MappedFile`], the crate's one `unsafe` module) and
//!   indexed by packet (from the LTTng index when it agrees with the stream, else by walking
//!   packet headers).
//! * **Layout:** each stream class is compiled once into a [`layout::StreamLayout`] — a node
//!   arena with the roles CTF gives well-known field names and every field reference resolved
//!   — which both directions annotate: the decoder's [`plan::StreamPlan`] and the writer's plan.
//! * **Out (reading):** a [`Cursor`] per stream yields [`Item`]s — events, discarded events,
//!   lost packets — and borrows each event's fields ([`EventView`], [`Fields`]) from the map
//!   without allocating; the `tracelens-trace` crate merges streams in time order on top.
//! * **Out (writing):** [`write`](mod@write) turns a [`ir::TraceClass`] and owned values into a trace
//!   directory babeltrace2 reads (TSDL metadata, packets, LTTng indexes); [`lttng`] declares
//!   LTTng's kernel layout once for every writer of it (`record`, its stack trace, `synth`),
//!   and the pieces LTTng-UST's layout shares with it for the user-space probes (`probe`).
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
pub mod layout;
pub mod lttng;
pub mod plan;

mod bits;
mod ctf2;
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

pub use ctf2::{is_ctf2, parse as parse_ctf2};
pub use decode::{DecodeError, Decoder, Specials};
pub use error::{Error, Result};
pub use metadata::{parse_metadata, unpacketize, MetadataText};
pub use mmap::{file_kind, free_space, MappedFile};
pub use tsdl::parse as parse_tsdl;
pub use packet::{read_idx, IdxEntry, IdxProblem, PacketEntry, IDX_MAGIC, PACKET_MAGIC};
pub use stream::{Cursor, DataStream, EventView, Item, StreamFile, TimeAnomaly};
pub use trace::Trace;
pub use value::{until_nul, Children, Field, Fields, Value};
pub use warning::Warning;
