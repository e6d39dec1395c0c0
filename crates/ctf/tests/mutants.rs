//! Robustness: fixture traces mutated (truncated files, flipped bits, random packet and content
//! sizes, garbage metadata) must each end in a clean error or clean output — never a panic.
//! Termination and bounded memory follow from the decoder's design (every event consumes bits,
//! every array is bounded by the bits left in its packet); running thousands of mutants here
//! exercises those guards.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use tracelens_ctf::{Item, Trace};

mod common;
use common::fixtures;

/// xorshift64*: deterministic, dependency-free randomness for reproducible mutants.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

/// Reads every event; returns the number of items or the error text.
fn read_all(dir: &Path) -> Result<u64, String> {
    let trace = Trace::open(dir).map_err(|e| e.to_string())?;
    let mut n = 0u64;
    for i in 0..trace.streams.len() {
        let mut c = trace.cursor(i);
        loop {
            match c.advance() {
                Ok(Some(Item::Event)) => {
                    // Touch the decoded event like a printer would.
                    let ev = c.event().expect("an event after Item::Event");
                    n += ev.payload.list.len() as u64 + 1;
                }
                Ok(Some(_)) => n += 1,
                Ok(None) => break,
                Err(e) => return Err(e.to_string()),
            }
        }
    }
    Ok(n)
}

struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn copy_trace(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap().flatten() {
        if e.path().is_file() {
            std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
        }
    }
}

fn stream_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != "metadata"))
        .collect();
    v.sort();
    v
}

fn mutate(dir: &Path, rng: &mut Rng) -> String {
    let streams = stream_files(dir);
    let kind = rng.below(6);
    let pick_stream = |rng: &mut Rng| streams.get(rng.below(streams.len() as u64) as usize).cloned();
    match kind {
        0 => {
            // Truncate a stream file.
            let Some(p) = pick_stream(rng) else { return "none".into() };
            let mut b = std::fs::read(&p).unwrap();
            let at = rng.below(b.len() as u64 + 1) as usize;
            b.truncate(at);
            std::fs::write(&p, &b).unwrap();
            format!("truncate {} at {at}", p.display())
        }
        1 => {
            // Flip bits in a stream file.
            let Some(p) = pick_stream(rng) else { return "none".into() };
            let mut b = std::fs::read(&p).unwrap();
            if b.is_empty() {
                return "empty".into();
            }
            let flips = 1 + rng.below(8);
            for _ in 0..flips {
                let at = rng.below(b.len() as u64) as usize;
                b[at] ^= 1 << rng.below(8);
            }
            std::fs::write(&p, &b).unwrap();
            format!("{flips} bit flips in {}", p.display())
        }
        2 => {
            // Random 32/64-bit words early in a packet: packet and content sizes, ids, lengths.
            let Some(p) = pick_stream(rng) else { return "none".into() };
            let mut b = std::fs::read(&p).unwrap();
            if b.len() < 8 {
                return "short".into();
            }
            let at = (rng.below(b.len().min(256) as u64 - 7) as usize) & !3;
            let v = match rng.below(4) {
                0 => 0,
                1 => rng.next(),
                2 => rng.below(1 << 20),
                _ => u64::MAX,
            };
            b[at..at + 8].copy_from_slice(&v.to_le_bytes());
            std::fs::write(&p, &b).unwrap();
            format!("word {v:#x} at {at} of {}", p.display())
        }
        3 => {
            // Garbage in the metadata.
            let p = dir.join("metadata");
            let mut b = std::fs::read(&p).unwrap();
            let n = 1 + rng.below(16);
            for _ in 0..n {
                if b.is_empty() {
                    break;
                }
                let at = rng.below(b.len() as u64) as usize;
                const GARBAGE: &[u8] = b"{};:=<>[]0123456789xyz_ \n\0\xff";
                b[at] = GARBAGE[rng.below(GARBAGE.len() as u64) as usize];
            }
            std::fs::write(&p, &b).unwrap();
            format!("{n} garbage bytes in metadata")
        }
        4 => {
            // Truncated metadata.
            let p = dir.join("metadata");
            let mut b = std::fs::read(&p).unwrap();
            let at = rng.below(b.len() as u64 + 1) as usize;
            b.truncate(at);
            std::fs::write(&p, &b).unwrap();
            format!("metadata truncated at {at}")
        }
        _ => {
            // Duplicate a slice of a stream file somewhere else in it.
            let Some(p) = pick_stream(rng) else { return "none".into() };
            let mut b = std::fs::read(&p).unwrap();
            if b.len() < 16 {
                return "short".into();
            }
            let len = 1 + rng.below(64.min(b.len() as u64 / 2)) as usize;
            let from = rng.below((b.len() - len) as u64) as usize;
            let to = rng.below((b.len() - len) as u64) as usize;
            let chunk = b[from..from + len].to_vec();
            b[to..to + len].copy_from_slice(&chunk);
            std::fs::write(&p, &b).unwrap();
            format!("copied {len} bytes {from}->{to} in {}", p.display())
        }
    }
}

#[test]
fn mutated_traces_fail_cleanly() {
    let Some(f) = fixtures() else { return };
    let bases = [
        "babeltrace-conformance/succeed/smalltrace",
        "babeltrace-conformance/succeed/succeed1",
        "babeltrace-conformance/succeed/trace-with-index",
        "babeltrace-conformance/succeed/debug-info",
        "babeltrace-conformance/succeed/meta-variant-two-underscores",
        "babeltrace-conformance/succeed/ev-disc-no-ts-begin-end",
        "babeltrace-conformance/succeed/array-align-elem",
        "ctf-testsuite/regression/stream/pass/lttng-ust-heartbeat-event",
        "ctf-testsuite/regression/stream/pass/in-bound-variant-selected-element",
        "tracecompass/flipping-endianness",
        "tracecompass/ctf-sequence-empty",
    ];
    let per_base: u64 = std::env::var("TRACELENS_MUTANTS").ok().and_then(|v| v.parse().ok()).unwrap_or(150);
    let root = std::env::temp_dir().join(format!("tracelens-mutants-{}", std::process::id()));
    let _guard = Scratch(root.clone());
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut ok, mut rejected) = (0u64, 0u64);
    let mut panics = Vec::new();
    for base in bases {
        let src = f.join(base);
        if !src.is_dir() {
            panic!("fixture {} missing", src.display());
        }
        for m in 0..per_base {
            let dir = root.join(format!("{}-{m}", base.replace('/', "_")));
            copy_trace(&src, &dir);
            let what = mutate(&dir, &mut rng);
            match catch_unwind(AssertUnwindSafe(|| read_all(&dir))) {
                Ok(Ok(_)) => ok += 1,
                Ok(Err(e)) => {
                    rejected += 1;
                    assert!(!e.contains('\n'), "multi-line error for {base} ({what}): {e}");
                }
                Err(_) => panics.push(format!("{base}: {what}")),
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    eprintln!("mutants: {ok} read cleanly, {rejected} rejected cleanly, {} panicked", panics.len());
    assert!(panics.is_empty(), "panics on:\n{}", panics.join("\n"));
    assert!(rejected > 0, "no mutant was rejected: the mutations are not reaching the decoder");
}
