//! Writing CTF 1.8: TSDL metadata from the IR ([`to_tsdl`]) and bit-exact field encoding
//! ([`BitWriter`]), the mirror of the reader's `bits` module.

mod bits;
mod tsdl;

pub use bits::BitWriter;
pub use tsdl::{quote, to_tsdl};
