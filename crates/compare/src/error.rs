//! Errors of this crate.

use std::path::PathBuf;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading the traces failed.
    #[error(transparent)]
    Trace(#[from] tracelens_trace::Error),
    /// Running the parallel pass failed.
    #[error(transparent)]
    Analysis(#[from] tracelens_analysis::Error),
    /// A critical path could not be computed.
    #[error(transparent)]
    Critical(#[from] tracelens_critical::Error),
    /// No event of the trace delimits executions as asked.
    #[error("{0}")]
    NoDelimiter(String),
    /// The options do not make sense together.
    #[error("{0}")]
    Invalid(String),
    /// An expression that does not parse or names a metric the database does not have.
    #[error("bad expression `{expr}`: at column {column}: {message}")]
    Expression {
        /// The expression.
        expr: String,
        /// Where (1-based, in characters).
        column: usize,
        /// What is wrong there.
        message: String,
    },
    /// A group selects no execution.
    #[error("group {group} (`{expr}`) selects none of the {total} executions")]
    EmptyGroup {
        /// `A` or `B`.
        group: &'static str,
        /// Its expression.
        expr: String,
        /// Executions in the database.
        total: usize,
    },
    /// SQLite failed on the database.
    #[error("{}: {source}", path.display())]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The file is not an executions database.
    #[error("{}: not a tracelens executions database ({why})", path.display())]
    NotADatabase {
        /// The file.
        path: PathBuf,
        /// Why not.
        why: String,
    },
    /// The database was written by a version of tracelens with another schema.
    #[error(
        "{}: executions database of schema version {found} (written by {writer}); this tracelens reads version {expected}: \
         build it again with `tracelens executions`",
        path.display()
    )]
    Version {
        /// The file.
        path: PathBuf,
        /// Its schema version.
        found: String,
        /// The tracelens version that wrote it.
        writer: String,
        /// The version this build reads.
        expected: u32,
    },
    /// Data in the database that does not decode.
    #[error("{}: {what}: {message} (at byte {offset})", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Which table, column or chunk.
        what: String,
        /// Byte offset in that blob.
        offset: usize,
        /// What is wrong.
        message: String,
    },
    /// A file could not be written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// This crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
