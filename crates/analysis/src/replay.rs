//! Records replayed in the one time order: for analyses whose answer depends on the order of
//! events across streams (what comes next on another CPU, or in another trace), each chunk
//! keeps the few records it needs as a run sorted by [`EventKey`], and a sequential fold
//! consumes them in key order once no chunk can hold an earlier one.
//!
//! When is that? Chunks are merged in start order, and a chunk's events are not earlier than
//! its start (*Parallel trace analysis*, 2019, section 4.2.1). So when the run of chunks
//! starting at the first chunk is merged with the next run, every record before the next run's
//! start is known: those are handed to the fold, in key order. A run that does not start at
//! the first chunk (a merge tree other than the engine's left-to-right one) only keeps its
//! records; the fold then gets them later, in the same order. Either way the fold sees exactly
//! the serial order, for any cut and any merge tree, and the records it has consumed are gone
//! (with the engine, what is kept is about one chunk's records per thread).

use std::collections::VecDeque;

use crate::engine::Chunk;
use crate::order::EventKey;
use crate::runs::{drain_runs_into, sort_run};

/// A run of chunks' records not yet replayed.
#[derive(Clone, Debug)]
pub struct Replay<R> {
    /// The run starts at the first chunk: every record before the next run's start is here.
    prefix: bool,
    /// The start of the run's first chunk (`None`: sorted first, no record can be replayed
    /// before it).
    begin: Option<i64>,
    /// Sorted runs (the last one is the chunk being read).
    runs: Vec<VecDeque<(EventKey, R)>>,
}

impl<R> Default for Replay<R> {
    fn default() -> Self {
        Replay { prefix: true, begin: None, runs: Vec::new() }
    }
}

impl<R> Replay<R> {
    /// The records of `chunk`, none yet.
    pub fn new(chunk: &Chunk) -> Replay<R> {
        Replay { prefix: chunk.index == 0, begin: chunk.begin_ns, runs: vec![VecDeque::new()] }
    }

    /// Adds a record of the chunk being read.
    #[inline]
    pub fn push(&mut self, key: EventKey, record: R) {
        if self.runs.is_empty() {
            self.runs.push(VecDeque::new());
        }
        if let Some(run) = self.runs.last_mut() {
            run.push_back((key, record));
        }
    }

    /// Sorts the chunk's run (records come in stream order, nearly always sorted already).
    pub fn end_chunk(&mut self) {
        if let Some(run) = self.runs.last_mut() {
            sort_run(run.make_contiguous(), |r| r.0);
        }
    }

    /// Appends the later run `later`, handing `fold` the records that come before its start
    /// when this run starts at the first chunk.
    pub fn merge(&mut self, later: Replay<R>, mut fold: impl FnMut(EventKey, R)) {
        if self.prefix {
            let frontier = later.begin.unwrap_or(i64::MIN);
            drain_runs_into(&mut self.runs, |r| r.0, |k| k.ns < frontier, |(k, r)| fold(k, r), drop);
        }
        self.runs.extend(later.runs.into_iter().filter(|r| !r.is_empty()));
    }

    /// Hands `fold` every record left, in key order.
    pub fn finish(mut self, mut fold: impl FnMut(EventKey, R)) {
        drain_runs_into(&mut self.runs, |r| r.0, |_| true, |(k, r)| fold(k, r), drop);
    }
}
