//! The crate's error type.

use std::path::PathBuf;

/// What can go wrong opening or reading a trace set.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A path does not exist.
    #[error("{}: no such file or directory", .0.display())]
    NotFound(PathBuf),
    /// No CTF trace (a directory with a `metadata` file) under a path.
    #[error("{}: no CTF trace found (a trace is a directory with a `metadata` file)", .0.display())]
    NoTrace(PathBuf),
    /// A path given is not a directory (a trace is one).
    #[error("{}: not a directory (a trace is a directory with a `metadata` file{})", path.display(), if path.ends_with("metadata") { "; give the directory that holds this one" } else { "" })]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// A directory (the path given or one below it) could not be read.
    #[error("{}: cannot read it: {source}", path.display())]
    Unreadable {
        /// The directory.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// A trace's `metadata` is not a regular file, or cannot be followed.
    #[error("{}: {what}: a trace's metadata must be a regular file", path.display())]
    BadMetadata {
        /// The `metadata` entry.
        path: PathBuf,
        /// What it is, or why it cannot be followed.
        what: String,
    },
    /// A trace could not be read.
    #[error(transparent)]
    Ctf(#[from] tracelens_ctf::Error),
    /// A time or option value could not be understood.
    #[error("{0}")]
    Invalid(String),
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
