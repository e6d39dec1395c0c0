//! `tracelens serve`: the comparison of two groups of executions as a web page (the
//! TraceCompare thesis, 2015, chapter 4): a histogram per metric with groups A and B
//! overlaid, brushing that redefines a group, the differential flame graph of the current
//! groups (width = mean time in B, colour = z) and sample executions of each group.
//!
//! * [`model`] computes what the page draws from the executions database in memory:
//!   histograms, per-node statistics, samples, and the *cubes* that let the page brush a
//!   million executions within a frame.
//! * [`server`] serves the page and a small JSON API on 127.0.0.1 (other peers are refused
//!   unless the server is bound for them).
//! * [`html`] writes the same page as one self-contained file, its data inlined, with the
//!   executions' columns from which the page itself computes what the server would
//!   (`assets/local.js`), so that the file brushes too.
//!
//! The page is plain JavaScript modules drawing on canvas (`src/assets`), embedded in the
//! binary; nothing is fetched from elsewhere.
#![deny(missing_docs)]

pub mod assets;
pub mod html;
pub mod model;
pub mod server;

pub use model::Model;
pub use server::{Server, ServerOptions};

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A request the API does not understand (answered 400).
    #[error("{0}")]
    BadRequest(String),
    /// The server could not listen.
    #[error("cannot listen on {addr}: {message}")]
    Listen {
        /// The address.
        addr: String,
        /// Why not.
        message: String,
    },
    /// Writing failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// This crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
