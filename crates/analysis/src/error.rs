//! The crate's error type.

/// What can stop an analysis run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A chunk could not be decoded (the first such chunk in time order). The message names
    /// the stream file, the packet and the byte offset.
    #[error(transparent)]
    Ctf(#[from] tracelens_ctf::Error),
    /// The worker threads could not be started.
    #[error("cannot start {threads} worker threads: {message}")]
    ThreadPool {
        /// How many were asked for.
        threads: usize,
        /// Why not.
        message: String,
    },
    /// The analysis cannot run as asked (a pattern no event matches, say).
    #[error("{0}")]
    Invalid(String),
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
