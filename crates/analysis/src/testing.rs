//! Test helpers: merging is associative — states merged in any tree (here right to left, so
//! that most merges join runs that do not start at the first chunk) give what the engine's
//! left-to-right merge gives.

use tracelens_ctf::{Cursor, Item};
use tracelens_trace::TraceSet;

use crate::engine::{chunks, Analysis, Context, Engine, Options};

/// Reads every chunk into its own state, then merges them right to left.
pub(crate) fn fold_right<A: Analysis>(set: &TraceSet, a: &A, chunk_size: u64) -> A::Output {
    let mut states = Vec::new();
    for chunk in chunks(set, chunk_size) {
        let trace = &set.traces[chunk.trace];
        let stream = &trace.streams[chunk.stream];
        let mut cursor = Cursor::with_packets(&trace.class, &trace.plans, stream, chunk.packets.clone());
        let mut st = a.new_state(&chunk);
        while let Some(item) = cursor.advance().expect("decodes") {
            if item == Item::Event {
                if let Some(ev) = cursor.event() {
                    let cx = Context { chunk: &chunk, trace, stream, packet: cursor.packet_index() };
                    a.on_event(&mut st, &ev, &cx);
                }
            }
        }
        a.end_chunk(&mut st, &Context { chunk: &chunk, trace, stream, packet: cursor.packet_index() });
        states.push(st);
    }
    let mut acc: Option<A::State> = None;
    while let Some(s) = states.pop() {
        acc = Some(match acc {
            None => s,
            Some(later) => a.merge(s, later),
        });
    }
    a.finish(acc.unwrap_or_default())
}

/// A synthetic trace with small packets, in a fresh directory.
pub(crate) fn synth(tag: &str, seed: u64) -> (std::path::PathBuf, TraceSet) {
    let dir = std::env::temp_dir().join(format!("tracelens-assoc-{tag}-{}-{seed}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let opts = tracelens_synth::Options { cpus: 3, threads: 12, events: 20_000, seed, packet_size: 4096 };
    tracelens_synth::generate(&dir, &opts).expect("synth");
    let set = TraceSet::open(&[&dir]).expect("open");
    (dir, set)
}

/// Checks that right-to-left merging gives the engine's output.
pub(crate) fn check<A: Analysis>(tag: &str, make: impl Fn(&TraceSet) -> A)
where
    A::Output: PartialEq + std::fmt::Debug,
{
    for seed in [1, 2] {
        let (dir, set) = synth(tag, seed);
        let a = make(&set);
        let want = Engine::new(&set, &Options { threads: 1, chunk_size: u64::MAX }).run(&a).expect("runs");
        for chunk_size in [1, 20_000] {
            assert!(fold_right(&set, &a, chunk_size) == want, "{tag}: right-to-left merge differs (chunk size {chunk_size})");
        }
        drop(set);
        let _ = std::fs::remove_dir_all(dir);
    }
}
