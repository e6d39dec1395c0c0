//! Finding the TSDL text in a `metadata` file: plain text (`/* CTF 1.8 */`) or packetized
//! (packets starting with magic 0x75D11D57, in either byte order), then parsing it.

use crate::ir::TraceClass;
use crate::{Error, Result};

/// TSDL text taken out of a metadata file, with how it was stored.
#[derive(Clone, Debug)]
pub struct MetadataText {
    /// The TSDL text.
    pub text: String,
    /// Whether it came from packetized metadata.
    pub packetized: bool,
    /// The UUID of the metadata packets, if packetized.
    pub uuid: Option<[u8; 16]>,
}

/// Extracts the TSDL text from the bytes of a `metadata` file (plain or packetized).
pub fn unpacketize(bytes: &[u8]) -> Result<MetadataText> {
    todo!("implemented with the TSDL parser")
}

/// Parses the bytes of a `metadata` file (plain or packetized TSDL) into a [`TraceClass`].
pub fn parse_metadata(bytes: &[u8]) -> Result<TraceClass> {
    let m = unpacketize(bytes)?;
    crate::tsdl::parse(&m.text)
}
