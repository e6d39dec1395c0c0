//! The crate's error type.

/// What can stop an export.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The output could not be written.
    #[error("cannot write the export: {0}")]
    Io(#[from] std::io::Error),
    /// The traces could not be read.
    #[error(transparent)]
    Trace(#[from] tracelens_trace::Error),
    /// The analysis behind the export failed.
    #[error(transparent)]
    Analysis(#[from] tracelens_analysis::Error),
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
