//! Synthetic databases of executions, deterministic for a seed: for tests, benchmarks and
//! demonstrations of the comparison without a recording.
//!
//! The executions are those of a made-up server: ECCTs over a tree of calling contexts (up
//! to eight frames deep, frames from a small vocabulary, a seventh of them pseudo-frames), a
//! few contexts per execution with times from a microsecond to 2 ms, and one execution in
//! ten slow, with 5 to 25 ms more on contexts whose depth is a multiple of three. Every fixed
//! metric has a value consistent with the ECCT (the critical-path states sum to the
//! duration), plus two dimensions, `begin.arg1` and `end.ret`.

use crate::ecct::{LocalEcct, TreeBuilder, ROOT};
use crate::metrics::{col, fixed, Metric, Unit, FIXED};
use crate::table::{Executions, Values};

/// What to make.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Executions. Default 100,000.
    pub executions: usize,
    /// Calling contexts of the tree. Default 300.
    pub contexts: usize,
    /// At most this many contexts with time per execution. Default 12.
    pub per_execution: u64,
    /// The seed. Default 1.
    pub seed: u64,
}

impl Default for Shape {
    fn default() -> Shape {
        Shape { executions: 100_000, contexts: 300, per_execution: 12, seed: 1 }
    }
}

/// xorshift64*: a small deterministic generator.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// The synthetic database of `shape`.
pub fn generate(shape: &Shape) -> Executions {
    let mut rng = Rng::new(shape.seed);
    let mut tb = TreeBuilder::default();
    let frames: Vec<u32> = (0..40).map(|i| tb.frames.id(&if i % 7 == 0 { format!("[pseudo {i}]") } else { format!("fn_{i}") })).collect();
    let mut paths: Vec<Vec<u32>> = vec![Vec::new()];
    while paths.len() < shape.contexts.max(2) {
        let mut p = paths[rng.below(paths.len() as u64) as usize].clone();
        if p.len() >= 8 {
            continue;
        }
        p.push(frames[rng.below(frames.len() as u64) as usize]);
        paths.push(p);
    }
    let mut metrics = fixed();
    metrics.push(Metric::new("begin.arg1", Unit::Id, "payload field arg1 of the begin event"));
    metrics.push(Metric::new("end.ret", Unit::Id, "payload field ret of the end event"));
    let mut db = Executions::with_metrics(metrics);
    let mut begin = 1_700_000_000_000_000_000i64;
    for _ in 0..shape.executions {
        let slow = rng.below(10) == 0;
        let mut e = LocalEcct::default();
        for _ in 0..1 + rng.below(shape.per_execution) {
            let p = &paths[1 + rng.below(paths.len() as u64 - 1) as usize];
            let n = e.descend(ROOT, p);
            let base = 1_000 + rng.below(2_000_000) as i64;
            let extra = if slow && p.len().is_multiple_of(3) { 5_000_000 + rng.below(20_000_000) as i64 } else { 0 };
            e.add(n, base + extra);
        }
        let duration = e.total();
        let pairs = e.into_pairs(&mut tb);
        begin += 100_000 + rng.below(1_000_000) as i64;
        let mut row = [0i64; FIXED.len()];
        row[col::TRACE] = 0;
        row[col::TID] = 1000 + rng.below(8) as i64;
        row[col::PID] = 1000;
        row[col::END_TID] = row[col::TID];
        row[col::BEGIN] = begin;
        row[col::END] = begin + duration;
        row[col::DURATION] = duration;
        // The duration split among running, preempted, timer, block device and network.
        let mut left = duration;
        for k in [0usize, 1, 3, 4] {
            let part = (left as u64 / 2).max(1);
            let v = rng.below(part) as i64;
            row[col::STATES + k] = v;
            left -= v;
        }
        row[col::STATES + 5] = left;
        row[col::CPU] = row[col::STATES];
        row[col::SWITCHES] = rng.below(20) as i64;
        row[col::SYSCALLS] = rng.below(200) as i64;
        row[col::READ] = rng.below(1 << 20) as i64;
        row[col::WRITTEN] = rng.below(1 << 16) as i64;
        let dims = [rng.below(64) as i64, if rng.below(50) == 0 { -1 } else { 0 }];
        for (c, v) in db.columns.iter_mut().zip(row.iter().chain(&dims)) {
            if let Values::Int(x) = c {
                x.push(*v);
            }
        }
        db.ecct.push(&pairs);
    }
    db.tree = tb.finish();
    db.delimiter = "synthetic executions".into();
    db
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consistent_and_deterministic() {
        let s = Shape { executions: 2000, ..Shape::default() };
        let a = generate(&s);
        assert_eq!(a, generate(&s));
        assert!(a.check_lengths().is_ok() && a.tree.check().is_ok());
        for i in 0..a.len() {
            let d = a.columns[col::DURATION].int(i).unwrap();
            let states: i64 = (0..10).map(|k| a.columns[col::STATES + k].int(i).unwrap()).sum();
            assert_eq!(states, d);
            let (nodes, ns) = a.ecct.of(i);
            let top: i64 = nodes.iter().zip(ns).filter(|(&n, _)| a.tree.parent[n as usize] == ROOT).map(|(_, &t)| t).sum();
            assert_eq!(top, d);
        }
    }
}
