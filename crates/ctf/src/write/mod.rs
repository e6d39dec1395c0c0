//! Writing CTF 1.8: TSDL metadata from the IR ([`to_tsdl`]), bit-exact field encoding
//! ([`BitWriter`], the mirror of the reader's `bits` module), and whole traces driven by the
//! IR ([`TraceWriter`], [`StreamWriter`]) from owned value trees ([`OwnedValue`]).

mod bits;
mod owned;
mod stream;
mod tsdl;

pub use bits::BitWriter;
pub use owned::OwnedValue;
pub use stream::{EventValues, Finished, StreamOptions, StreamWriter, TraceWriter};
pub use tsdl::{quote, to_tsdl};
