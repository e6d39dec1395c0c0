//! Building a database of executions from traces (the TraceCompare thesis, section 4.4.3):
//!
//! 1. one parallel pass over the kernel trace (`collect.rs`) builds the execution graph and
//!    pairs the delimiters into executions, while another thread unwinds the stack samples
//!    (`stacks.rs`);
//! 2. per execution, in parallel: its critical path (`tracelens-critical`), its ECCT
//!    (`generate.rs`) and its metrics;
//! 3. the ECCTs are added to the union tree, in execution order.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;
use serde::Serialize;
use tracelens_critical::{critical_path, PathState};
use tracelens_trace::TraceSet;

use crate::collect::{Collect, Raw};
use crate::delimit::{Delimiter, Dim};
use crate::ecct::{Frames, LocalEcct, TreeBuilder};
use crate::generate::{own_cpu, Sources};
use crate::metrics::{col, fixed, Metric, Unit, FIXED, MISSING};
use crate::stacks::{self, Samples};
use crate::table::{Executions, Values, NO_TEXT};
use crate::{Error, Result};

/// What to build.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// How executions are delimited.
    pub delimiter: Delimiter,
    /// Only executions that begin at or after this time (ns from the clock's origin).
    pub begin_ns: Option<i64>,
    /// Only executions that end at or before this time.
    pub end_ns: Option<i64>,
    /// Threads and chunk size of the parallel work.
    pub engine: tracelens_analysis::Options,
}

/// Where a build is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Progress {
    /// Reading the trace: bytes of packets read, of all.
    Reading {
        /// Read so far.
        done: u64,
        /// In all.
        total: u64,
    },
    /// Stack samples unwound so far.
    Stacks {
        /// Samples.
        samples: u64,
    },
    /// Critical paths and ECCTs made.
    Executions {
        /// Made so far.
        done: usize,
        /// In all.
        total: usize,
    },
}

/// What a build did, besides the database.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BuildReport {
    /// How executions were delimited.
    pub delimiter: String,
    /// Executions in the database.
    pub executions: usize,
    /// Of which nested in another of the same kind.
    pub nested: usize,
    /// Executions begun and not ended in the trace (left out).
    pub unfinished: u64,
    /// End events with no execution to end (left out).
    pub unmatched_ends: u64,
    /// Delimiter events without a thread or the match field (left out).
    pub without_key: u64,
    /// Executions whose critical path could not be computed (their time is `[unknown]`).
    pub no_path: usize,
    /// Stack samples unwound.
    pub samples: u64,
    /// Of the running time on the executions' critical paths, the share that got a sampled
    /// stack (0 to 1; 0 without stack samples).
    pub running_with_stack: f64,
    /// Events the tracer discarded.
    pub lost_events: u64,
    /// What unwinding met (files missing...), once each.
    pub stack_problems: Vec<String>,
    /// Nodes in the union ECCT.
    pub nodes: usize,
    /// (node, ns) pairs stored.
    pub pairs: usize,
    /// Mean share of the executions' time that their critical path cannot explain.
    pub unknown_fraction: f64,
}

/// One execution made (step 2).
struct Made {
    row: Vec<i64>,
    ecct: LocalEcct,
    no_path: bool,
    running: i64,
    running_stacked: i64,
}

/// Builds the executions of `set` (a kernel trace, with or without stack samples and
/// user-space probe traces). The traces with stack samples are read apart.
pub fn build(set: TraceSet, opts: &BuildOptions, progress: &(dyn Fn(Progress) + Sync)) -> Result<(Executions, BuildReport)> {
    let traces: Vec<String> = set.traces.iter().map(|t| crate::db::trace_path(&t.dir)).collect();
    let (kernel, stack_set) = stacks::split(set);
    if kernel.traces.is_empty() {
        return Err(Error::Invalid("no kernel trace among the traces (only stack samples): give the recording's directory".into()));
    }
    let (collect, dims) = Collect::new(&kernel, &opts.delimiter, opts.begin_ns, opts.end_ns)?;
    let engine = tracelens_analysis::Engine::new(&kernel, &opts.engine).on_progress(|p| progress(Progress::Reading { done: p.bytes_done, total: p.bytes }));
    let mut frames = Frames::default();
    let (collected, samples) = std::thread::scope(|s| {
        let reader = s.spawn(|| stacks::read(&stack_set, &mut frames, &|n| progress(Progress::Stacks { samples: n })));
        let collected = engine.run(&collect);
        let samples = reader.join().unwrap_or_else(|_| Err(Error::Invalid("the stack reader failed".into())));
        (collected, samples)
    });
    let collected = collected?;
    let mut samples: Samples = samples?;
    if let Delimiter::Function(f) = &opts.delimiter {
        name_uretprobe_frames(&mut samples, &mut frames, f);
    }
    // Trace ids of the executions are positions in `traces`; kernel and stack traces were split.
    let kernel_ids: Vec<u32> = kernel.traces.iter().map(|t| traces.iter().position(|p| *p == crate::db::trace_path(&t.dir)).unwrap_or(0) as u32).collect();

    let graph = &collected.graph;
    let sources = Sources::new(graph, &samples, &collected.requests, &mut frames);
    let total = collected.executions.len();
    let done = AtomicUsize::new(0);
    let threads = match opts.engine.threads {
        0 => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        n => n,
    };
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().map_err(|e| Error::Invalid(format!("cannot start {threads} threads: {e}")))?;
    let mut metrics = fixed();
    let mut is_text = vec![false; dims.len()];
    for (i, v) in collected.executions.iter().flat_map(|e| e.dims.iter()) {
        if matches!(v, Dim::Text(_)) {
            if let Some(t) = is_text.get_mut(*i as usize) {
                *t = true;
            }
        }
    }
    for (d, &text) in dims.iter().zip(&is_text) {
        metrics.push(Metric::new(d.clone(), if text { Unit::Text } else { Unit::Id }, format!("payload field {} of the {} event", d.split_once('.').map_or(d.as_str(), |x| x.1), d.split_once('.').map_or("", |x| x.0))));
    }
    let mut db = Executions::with_metrics(metrics);
    db.traces = traces;
    db.delimiter = opts.delimiter.describe();
    let mut tree = TreeBuilder::new(Frames::default());
    let mut report = BuildReport { delimiter: db.delimiter.clone(), ..BuildReport::default() };
    let (mut running, mut stacked) = (0i64, 0i64);
    let mut unknown = 0f64;
    // Frames numbered by the stack reader and the sources, in the tree's frame table.
    let mut frame_map: Vec<u32> = Vec::new();
    let mut text_codes: Vec<HashMap<String, u32>> = vec![HashMap::new(); dims.len()];
    let names = frames;
    for batch in collected.executions.chunks(4096) {
        let made: Vec<Made> = pool.install(|| {
            batch
                .par_iter()
                .map(|e| {
                    let m = make(&sources, graph, e, &kernel_ids);
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if n.is_multiple_of(1024) {
                        progress(Progress::Executions { done: n, total });
                    }
                    m
                })
                .collect()
        });
        for (e, m) in batch.iter().zip(made) {
            report.no_path += usize::from(m.no_path);
            running += m.running;
            stacked += m.running_stacked;
            let dur = m.row[col::DURATION];
            if dur > 0 {
                unknown += m.row[col::STATES + 9] as f64 / dur as f64;
            }
            if e.depth > 0 {
                report.nested += 1;
            }
            for (k, v) in m.row.iter().enumerate() {
                if let Values::Int(c) = &mut db.columns[k] {
                    c.push(*v);
                }
            }
            push_dims(&mut db, e, &mut text_codes);
            let pairs = into_union(m.ecct, &names, &mut frame_map, &mut tree);
            db.ecct.push(&pairs);
        }
    }
    progress(Progress::Executions { done: total, total });
    db.tree = tree.finish();
    report.executions = db.len();
    report.unfinished = collected.unfinished;
    report.unmatched_ends = collected.unmatched_ends;
    report.without_key = collected.without_key;
    report.samples = samples.count;
    report.running_with_stack = if running > 0 { stacked as f64 / running as f64 } else { 0.0 };
    report.lost_events = graph.lost_events;
    report.stack_problems = samples.problems.clone();
    report.nodes = db.tree.len();
    report.pairs = db.ecct.nodes.len();
    report.unknown_fraction = if total > 0 { unknown / total as f64 } else { 0.0 };
    Ok((db, report))
}

/// While a call of a function probed with a uretprobe runs, the kernel's trampoline stands
/// in for its return address: a frame-pointer walk goes on past it to the callers, but that
/// frame is in no file the recording saw mapped (`[unknown]`). Directly outside the probed
/// function, such a frame is named `[uretprobe]`.
fn name_uretprobe_frames(samples: &mut Samples, frames: &mut Frames, function: &str) {
    let (Some(f), Some(unknown)) = (frames.get(function), frames.get("[unknown]")) else { return };
    let trampoline = frames.id("[uretprobe]");
    for s in &mut samples.stacks {
        for k in 1..s.len() {
            if s[k] == f && s[k - 1] == unknown {
                s[k - 1] = trampoline;
            }
        }
    }
}

/// Adds an ECCT made over the frames of the build to the union tree (whose frames are
/// numbered as they are first used, so that the database keeps only those).
fn into_union(e: LocalEcct, names: &Frames, map: &mut Vec<u32>, tree: &mut TreeBuilder) -> Vec<(u32, i64)> {
    for &f in e.frames() {
        let i = f as usize;
        if map.len() <= i {
            map.resize(names.len().max(i + 1), u32::MAX);
        }
        if map[i] == u32::MAX {
            map[i] = tree.frames.id(names.name(f));
        }
    }
    e.into_pairs_with(tree, |f| map[f as usize])
}

/// Appends the dimensions of `e` to the columns after the fixed ones; `codes` numbers the
/// strings of each text column (its dictionary's indexes).
fn push_dims(db: &mut Executions, e: &Raw, codes: &mut [HashMap<String, u32>]) {
    for (d, codes) in codes.iter_mut().enumerate() {
        let v = e.dims.iter().find(|(i, _)| *i as usize == d).map(|(_, v)| v);
        match &mut db.columns[FIXED.len() + d] {
            Values::Int(c) => c.push(match v {
                Some(Dim::Int(x)) => *x,
                _ => MISSING,
            }),
            Values::Text { codes: out, dict } => {
                let text = match v {
                    Some(Dim::Text(s)) => Some(s.to_string()),
                    Some(Dim::Int(x)) => Some(x.to_string()),
                    None => None,
                };
                out.push(match text {
                    Some(t) => *codes.entry(t).or_insert_with_key(|t| {
                        dict.push(t.clone());
                        dict.len() as u32 - 1
                    }),
                    None => NO_TEXT,
                });
            }
        }
    }
}

/// The critical path, ECCT and metrics of one execution.
fn make(src: &Sources<'_>, graph: &tracelens_critical::ExecutionGraph, e: &Raw, kernel_ids: &[u32]) -> Made {
    let end = e.end_ns.unwrap_or(e.begin_ns);
    let dur = end - e.begin_ns;
    let mut row = vec![0i64; FIXED.len()];
    row[col::TRACE] = kernel_ids.get(e.trace as usize).copied().unwrap_or(0).into();
    row[col::TID] = e.tid;
    row[col::PID] = e.pid;
    row[col::END_TID] = e.end_tid;
    row[col::DEPTH] = e.depth.into();
    row[col::BEGIN] = e.begin_ns;
    row[col::END] = end;
    row[col::DURATION] = dur;
    let (cpu, switches) = own_cpu(graph, e.tid, e.begin_ns, end);
    row[col::CPU] = cpu;
    row[col::SWITCHES] = switches;
    row[col::SYSCALLS] = e.syscalls;
    row[col::READ] = e.read;
    row[col::WRITTEN] = e.written;
    let mut ecct = LocalEcct::default();
    let (mut running, mut stacked) = (0, 0);
    let no_path = match critical_path(graph, e.end_tid, Some(e.begin_ns), Some(end)) {
        Ok(path) => {
            for (i, s) in PathState::ALL.iter().enumerate() {
                row[col::STATES + i] = path.by_state.get(*s);
            }
            stacked = src.ecct(&path, &mut ecct);
            running = path.by_state.running;
            false
        }
        Err(_) => {
            row[col::STATES + 9] = dur;
            let n = ecct.child(crate::ecct::ROOT, src.unknown_frame());
            ecct.add(n, dur);
            true
        }
    };
    Made { row, ecct, no_path, running, running_stacked: stacked }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probed_functions_unknown_caller_is_the_trampoline() {
        let mut frames = Frames::default();
        let ids: Vec<u32> = ["main", "[unknown]", "handle", "work"].iter().map(|n| frames.id(n)).collect();
        let mut samples = Samples { stacks: vec![ids.clone().into(), vec![ids[1], ids[3]].into()], ..Samples::default() };
        name_uretprobe_frames(&mut samples, &mut frames, "handle");
        let names = |s: &[u32]| s.iter().map(|&f| frames.name(f).to_string()).collect::<Vec<_>>();
        assert_eq!(names(&samples.stacks[0]), ["main", "[uretprobe]", "handle", "work"]);
        assert_eq!(names(&samples.stacks[1]), ["[unknown]", "work"], "an unknown frame elsewhere stays unknown");
    }
}
