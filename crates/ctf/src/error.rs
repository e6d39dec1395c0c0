//! The crate's one error type. Every variant says where: a metadata line and column, a byte
//! offset in the metadata stream, or a file, packet and byte offset in a data stream.

use std::path::PathBuf;

/// Everything that can go wrong reading a CTF trace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be opened, mapped or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A path to read is not a regular file (a FIFO, a device, a directory...): it is not
    /// opened, or not read once open.
    #[error("{}: not a regular file ({kind})", path.display())]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is: "a FIFO", "a character device"... (see [`crate::file_kind`]).
        kind: &'static str,
    },
    /// The TSDL text is malformed or means something impossible.
    #[error("metadata line {line}, column {column}: {message}")]
    Metadata {
        /// 1-based line in the (unpacketized) TSDL text.
        line: u32,
        /// 1-based column.
        column: u32,
        /// What is wrong.
        message: String,
    },
    /// CTF 2 metadata is malformed or means something impossible.
    #[error("metadata fragment {fragment}{} (line {line}){}: {message}", if kind.is_empty() { String::new() } else { format!(" ({kind})") }, if path.is_empty() { String::new() } else { format!(", at {path}") })]
    Ctf2 {
        /// 1-based index of the fragment in the JSON text sequence (0: before any).
        fragment: usize,
        /// 1-based line of the metadata text where the fragment starts (or where invalid
        /// JSON is).
        line: u32,
        /// The fragment's type (`event-record-class`...), when known.
        kind: String,
        /// JSON path of the offending value in the fragment (`/payload-field-class/...`).
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The packetized metadata framing is broken.
    #[error("metadata stream byte {offset}: {message}")]
    MetadataPacket {
        /// Byte offset in the `metadata` file.
        offset: u64,
        /// What is wrong.
        message: String,
    },
    /// A data stream cannot be decoded.
    #[error("{}: packet {packet}, byte {offset}: {message}", path.display())]
    Stream {
        /// The stream file.
        path: PathBuf,
        /// 0-based packet number in the file.
        packet: u64,
        /// Byte offset in the file where the problem is.
        offset: u64,
        /// What is wrong.
        message: String,
    },
    /// A trace directory is not usable as a whole (no metadata, ...).
    #[error("{}: {message}", path.display())]
    Trace {
        /// The trace directory or file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The writer was given values that do not match the metadata, or metadata it cannot
    /// encode (see [`crate::write`]).
    #[error("{}: {message}", path.display())]
    Write {
        /// The stream file being written (or the name given to an in-memory stream).
        path: PathBuf,
        /// What is wrong, naming the event and the field.
        message: String,
    },
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A metadata error at `line`:`column`.
    pub fn metadata(line: u32, column: u32, message: impl Into<String>) -> Error {
        Error::Metadata { line, column, message: message.into() }
    }
}
