//! Writing CTF: TSDL metadata from the IR ([`to_tsdl`]) or CTF 2 metadata ([`to_ctf2`]), bit-exact field encoding
//! ([`BitWriter`], the mirror of the reader's `bits` module), and whole traces driven by the
//! IR ([`TraceWriter`], [`StreamWriter`]) from owned value trees ([`OwnedValue`]).
//!
//! [`TraceWriter`] writes a trace directory's `metadata` and hands out one [`StreamWriter`]
//! per stream file; a [`StreamWriter`] encodes events given as [`OwnedValue`] trees into
//! packets.
//!
//! What the writer fills in by itself, found by name as readers find it (the roles of
//! [`crate::layout`], which the decoder's plans use too: one leading underscore is removed
//! before a name is matched):
//!
//! * packet header: `magic` (0xC1FC1FC1), `uuid` (the trace's UUID), `stream_id` (the stream
//!   class id), `stream_instance_id` (see [`StreamOptions::instance_id`]);
//! * packet context: `timestamp_begin` (the packet's first event time), `timestamp_end` (its
//!   last), `content_size` and `packet_size` (bits), `packet_seq_num` (0, 1, ...),
//!   `events_discarded` (the running total of [`StreamWriter::discard`]);
//! * event header: every integer named `id` or `timestamp` at any depth. When the header has
//!   variants chosen by an `id` enumeration (LTTng's compact and large headers), the writer
//!   picks the smallest option that encodes the event class id and the timestamp exactly: a
//!   timestamp field of N bits can only encode a time `t` with `0 <= t - previous < 2^N`,
//!   which is how readers rebuild wrapped timestamps.
//!
//! Other packet header and context members are set with
//! [`StreamWriter::set_packet_header`] and [`StreamWriter::set_packet_context`] (zero or
//! empty until set); other event header members come from [`EventValues::header`] (zero or
//! empty when not given); the stream event context, event context and payload are the
//! caller's, checked against their types: integers must fit, a sequence's length field must
//! have been written (by the caller, as a normal value before it) with its element count, a
//! variant's tag must select the option given.
//!
//! A packet is closed when the next event would not fit in [`StreamOptions::packet_size`]
//! bytes: `content_size` and `timestamp_end` are patched and the packet is padded with zeros.
//! An event too large for an empty packet gets a larger packet of its own. With an LTTng index
//! ([`StreamOptions::index`]), every packet also gets an entry in `index/NAME.idx`.
//!
//! No allocation happens per event once buffers have grown to the packet size (values are
//! encoded straight into the packet buffer; an event that does not fit is rolled back and
//! written again in the next packet). An event whose values do not match the types is
//! rolled back too and reported as an [`crate::Error::Write`]; the stream stays usable.
//!
//! Details:
//!
//! * [`StreamWriter::discard`] closes the open packet, so that the next packet's
//!   `events_discarded` carries the count: readers report the discarded events exactly
//!   between the events written before and after the call. [`StreamWriter::finish`] writes an
//!   empty packet when discarded events are still to be reported, and when the stream has no
//!   packet at all (babeltrace2 2.0 rejects an empty stream file).
//! * Without `packet_size` and `content_size` in the packet context, a stream is a single
//!   packet (readers take the whole file); its content must then end on a byte. With
//!   `content_size` only, packets are padded to the next byte (babeltrace2 2.0 needs the
//!   content itself to end on a byte there).
//! * A field may not start in the middle of a byte after a field of the other byte order
//!   (readers cannot decode that): such values are an error.
//! * When no event header option can encode a timestamp (a 32-bit header timestamp 2^32
//!   cycles after the previous one), the writer closes the packet and tries again in a new
//!   one, whose `timestamp_begin` resets the reader's clock.
//! * [`TraceWriter`] lays streams out from the metadata as parsed back from the TSDL it
//!   writes, so data and metadata always agree.
//!
//! ```no_run
//! use tracelens_ctf::write::{EventValues, OwnedValue, TraceWriter};
//! # fn demo(class: &tracelens_ctf::ir::TraceClass) -> tracelens_ctf::Result<()> {
//! let mut trace = TraceWriter::create("/tmp/trace", class)?;
//! let mut s = trace.stream(0, "channel0_0")?;
//! s.set_packet_context("cpu_id", OwnedValue::U(0))?;
//! let payload = OwnedValue::structure([OwnedValue::I(-3), OwnedValue::from("hello")]);
//! s.event(0, 1_000, EventValues::payload(&payload))?;
//! s.discard(5)?;
//! s.finish()?;
//! # Ok(()) }
//! ```

mod bits;
mod encode;
mod header;
mod index;
mod owned;
mod plan;
mod ctf2;
mod stream;
mod trace;
mod tsdl;

pub use bits::BitWriter;
pub use owned::OwnedValue;
pub use stream::{EventValues, Finished, StreamOptions, StreamWriter};
pub use trace::{TraceWriter, Version};
pub use ctf2::to_ctf2;
pub use tsdl::{quote, to_tsdl};
