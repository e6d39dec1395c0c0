//! The crate's error type.

use std::path::PathBuf;

/// What can go wrong while setting up or writing a probe trace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file or directory could not be created or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The system error.
        source: std::io::Error,
    },
    /// The CTF writer refused something.
    #[error(transparent)]
    Ctf(#[from] tracelens_ctf::Error),
    /// A thread's buffer holds a record the consumer cannot read (a bug, or memory
    /// overwritten by the program).
    #[error("thread {tid}'s probe buffer holds a record of unknown event class {id} at word {at}")]
    Corrupt {
        /// The thread.
        tid: i32,
        /// The record's position in the buffer, in words since the thread's first record.
        at: u64,
        /// The class id read.
        id: u32,
    },
    /// An environment variable holds a value that cannot be used.
    #[error("{name}={value:?}: {why}")]
    Env {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// What is wrong with it.
        why: String,
    },
}

/// A `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
