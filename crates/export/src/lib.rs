//! Exports of traces for viewers: [Chrome trace events](chrome) (`chrome://tracing`,
//! Perfetto, Speedscope), [Pajé](paje) (`pajeng`, ViTE) and [folded stacks](folded)
//! (flame graphs). The first two draw each thread's time line — scheduling states, system
//! calls, probe events — from the `timeline` analysis of `tracelens-analysis`, which reads
//! the traces in parallel; stack samples are unwound and symbolized in one pass in time order
//! ([`stack_samples`]).
//!
//! ```no_run
//! use tracelens_analysis::{Engine, Options, Timeline};
//! let set = tracelens_trace::TraceSet::open(&["/tmp/rec"])?;
//! let timeline = Engine::new(&set, &Options::default()).run(&Timeline::new(&set))?;
//! let samples = tracelens_export::stack_samples(&set)?;
//! tracelens_export::write_chrome(&timeline, &samples, std::fs::File::create("/tmp/rec.json")?)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod chrome;
mod error;
pub mod folded;
pub mod paje;
mod samples;

pub use chrome::write_chrome;
pub use error::{Error, Result};
pub use folded::{fold, write_folded, SampleKinds};
pub use paje::write_paje;
pub use samples::{stack_samples, Sample};
