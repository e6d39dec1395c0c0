//! The crate's error type.

/// Why a profile could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The traces could not be read.
    #[error(transparent)]
    Trace(#[from] tracelens_trace::Error),
    /// No stack sample to profile.
    #[error("{0}")]
    NoSamples(String),
    /// An off-CPU profile needs the kernel's context switches.
    #[error("no sched_switch events: an off-CPU profile weighs each blocking by the time until the thread runs again, from the kernel trace (record with `-e sched`, as by default, and give the whole recording, not only DIR/stacks)")]
    NoSwitches,
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
