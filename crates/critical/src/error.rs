//! Errors of this crate.

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The thread is not in the trace.
    #[error("thread {tid} is not in the trace ({threads} threads seen in its scheduling events)")]
    NoSuchThread {
        /// The thread asked for.
        tid: i64,
        /// Threads the trace has.
        threads: usize,
    },
    /// The trace has no kernel event with a time.
    #[error("the trace has no kernel events (a critical path needs a kernel trace: LTTng, `tracelens record`, perf's CTF)")]
    NoKernelEvents,
    /// The interval ends before it begins.
    #[error("the interval ends ({end} ns) before it begins ({begin} ns)")]
    EmptyRange {
        /// Its start, ns.
        begin: i64,
        /// Its end, ns.
        end: i64,
    },
    /// The interval is not within the trace.
    #[error("the interval {begin}..{end} ns is outside the trace's kernel events ({first}..{last} ns)")]
    OutsideTrace {
        /// Its start, ns.
        begin: i64,
        /// Its end, ns.
        end: i64,
        /// The trace's first kernel event, ns.
        first: i64,
        /// Its last.
        last: i64,
    },
    /// Reading the trace failed.
    #[error(transparent)]
    Analysis(#[from] tracelens_analysis::Error),
}

/// This crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
