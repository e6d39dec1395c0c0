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
//!
//! When each record belongs to one entity (a thread) and only the order among an entity's
//! records matters, [`ShardedReplay`] hands the records to per-entity shards instead
//! (`shards.rs`), which replay them in parallel, off the ordered chain of merges.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::engine::{Chunk, Pool};
use crate::order::EventKey;
use crate::runs::{drain_runs_into, sort_run};
use crate::shards::{shard_of, HandOut, Limit, Outbox};

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

/// A replay whose records each belong to one entity (`id` of the record): a chunk's records
/// are split by the entity's shard, and a run that starts at the first chunk hands them out
/// to be replayed per shard ([`ShardedReplay::hand_out`]).
#[derive(Clone, Debug)]
pub(crate) struct ShardedReplay<R> {
    prefix: bool,
    /// The start of the last chunk covered (`None`: sorted first).
    frontier: Option<i64>,
    /// The chunk's records, while it is read.
    chunk: Vec<(EventKey, R)>,
    outbox: Outbox<(EventKey, R)>,
}

impl<R> Default for ShardedReplay<R> {
    fn default() -> Self {
        ShardedReplay { prefix: true, frontier: None, chunk: Vec::new(), outbox: Outbox::default() }
    }
}

impl<R: Copy> ShardedReplay<R> {
    /// The records of `chunk`, none yet, to be kept in `buf` (empty; a spare buffer of an
    /// earlier chunk, whose room saves growing a vector one doubling at a time).
    pub(crate) fn new(chunk: &Chunk, buf: Vec<(EventKey, R)>) -> ShardedReplay<R> {
        ShardedReplay { prefix: chunk.index == 0, frontier: chunk.begin_ns, chunk: buf, outbox: Outbox::default() }
    }

    /// Adds a record of the chunk being read.
    #[inline]
    pub(crate) fn push(&mut self, key: EventKey, record: R) {
        self.chunk.push((key, record));
    }

    /// Sorts the chunk's records and splits them by the shard of `id` (buffers from `pool`).
    pub(crate) fn end_chunk(&mut self, id: impl Fn(&R) -> i64, pool: &Arc<Pool<(EventKey, R)>>) {
        let mut recs = std::mem::take(&mut self.chunk);
        sort_run(&mut recs, |r| r.0);
        self.outbox.add_chunk(recs, |r| shard_of(id(&r.1)), pool);
    }

    /// Appends the later run `later`.
    pub(crate) fn merge(&mut self, mut later: ShardedReplay<R>) {
        self.outbox.append(&mut later.outbox);
        self.frontier = later.frontier.or(self.frontier);
    }

    /// When this run starts at the first chunk (or with `end`): the records not handed out yet,
    /// by shard, and how far the shards may replay — before the start of the last chunk merged
    /// (every record before it is known), or everything with `end`.
    #[allow(clippy::type_complexity)]
    pub(crate) fn hand_out(&mut self, id: impl Fn(&R) -> i64, end: bool) -> HandOut<(EventKey, R)> {
        if !self.prefix && !end {
            return None;
        }
        let runs = self.outbox.take(|r| shard_of(id(&r.1)), |r| r.0);
        let limit = if end { Limit::END } else { Limit { ns: Some(self.frontier.unwrap_or(i64::MIN)), key: None } };
        Some((runs, limit))
    }
}
