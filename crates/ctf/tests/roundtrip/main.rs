//! Round trips through the CTF writer and the reader.
//!
//! * `roundtrip_random_traces` (proptest): random metadata (trace byte order; packet header
//!   with or without magic, UUID, stream id and instance id; packet contexts made of the
//!   well-known members in random order and sizes, or none; LTTng compact and large event
//!   headers, simple `{id; timestamp}` headers of 64 and 32 bits, or none; 1-3 stream classes;
//!   payloads and contexts of random integers (1-64 bits, random alignment, signedness, byte
//!   order, base), enumerations, floats, strings, structures with a minimum alignment,
//!   arrays, text arrays and sequences, sequences with their length field, variants with their
//!   enumeration tag, nested up to depth 3) and random events (and discarded events) written
//!   with `TraceWriter`, read back with `Trace::open`, and checked: (a) the TSDL the writer
//!   emits parses back to the same trace class; (b) every stream gives back the events
//!   written, in order (class, timestamp, each scope's value tree, the packet context's
//!   `cpu_id`); (c) discarded-event counts come back where they were recorded.
//! * Writer unit checks: header choice (compact vs. extended), errors on mismatched values
//!   leave the stream usable, oversized events, single-packet streams.
//! * `babeltrace2_reads_written_trace`: babeltrace2 (when installed) reads a fixed trace with
//!   no error and the same event count.
//! * `print_matches_babeltrace2`: for a few generated traces, `tracelens print` and
//!   `babeltrace2` print the same multiset of lines (TZ=UTC), when both are available.
//!
//! One test binary, one module per topic: `generate` (random shapes and strategies), `build`
//! (shapes to IR and values), `readback` (write, read back, compare), `fixed` (fixed traces),
//! `babeltrace2` (the oracle), `names` (one name rule on both sides), `reader`, `writer`,
//! `alloc` (no allocation per event).

mod alloc;
mod babeltrace2;
mod build;
#[path = "../common/mod.rs"]
mod common;
mod fixed;
mod generate;
mod names;
mod reader;
mod readback;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) use build::*;
pub(crate) use fixed::*;
pub(crate) use generate::*;
pub(crate) use readback::*;
pub(crate) use babeltrace2::{print_difference, print_oracle};

/// A scratch directory, removed when dropped (also when the test fails).
pub(crate) struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub(crate) fn temp_dir(tag: &str) -> TempDir {
    static N: AtomicU64 = AtomicU64::new(0);
    let d = std::env::temp_dir().join(format!("tracelens-{tag}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    let _ = std::fs::remove_dir_all(&d);
    TempDir(d)
}
