//! The statistics of `compare` against a direct computation, on a synthetic database of
//! 120,000 executions written to SQLite and read back: for every node, the means of both
//! groups, the standard deviation in A and z = (mean_B − mean_A) / sd_A, computed here the
//! plain way (a dense vector of each group's values, zeros where an execution lacks the
//! node; mean, then the sample variance around it).

use std::collections::HashMap;

use tracelens_compare::ecct::{LocalEcct, TreeBuilder, ROOT};
use tracelens_compare::metrics::{col, fixed};
use tracelens_compare::{compare, db, Executions, Values};

/// xorshift64*: a small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const N: usize = 120_000;

/// The database, and per execution its inclusive ns by node (what the test computes from).
fn synthetic() -> (Executions, Vec<HashMap<u32, i64>>) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut tb = TreeBuilder::default();
    // A tree of 300 calling contexts, up to 8 deep, frames from a small vocabulary (as
    // stacks share function names).
    let frames: Vec<u32> = (0..40).map(|i| tb.frames.id(&if i % 7 == 0 { format!("[pseudo {i}]") } else { format!("fn_{i}") })).collect();
    let mut paths: Vec<Vec<u32>> = vec![Vec::new()];
    while paths.len() < 300 {
        let parent = paths[rng.below(paths.len() as u64) as usize].clone();
        if parent.len() >= 8 {
            continue;
        }
        let mut p = parent;
        p.push(frames[rng.below(frames.len() as u64) as usize]);
        paths.push(p);
    }
    let mut db = Executions::with_metrics(fixed());
    let mut truth = Vec::with_capacity(N);
    for i in 0..N {
        let slow = rng.below(10) == 0;
        let mut e = LocalEcct::default();
        for _ in 0..1 + rng.below(12) {
            let p = &paths[1 + rng.below(paths.len() as u64 - 1) as usize];
            let n = e.descend(ROOT, p);
            // Times from a few µs to tens of ms; the slow ones much longer on a few paths.
            let base = 1_000 + rng.below(2_000_000) as i64;
            let extra = if slow && p.len() % 3 == 0 { 5_000_000 + rng.below(20_000_000) as i64 } else { 0 };
            e.add(n, base + extra);
        }
        let duration = e.total();
        let pairs = e.into_pairs(&mut tb);
        truth.push(pairs.iter().copied().collect::<HashMap<u32, i64>>());
        for (k, c) in db.columns.iter_mut().enumerate() {
            if let Values::Int(v) = c {
                v.push(match k {
                    col::DURATION => duration,
                    col::TID => 100 + rng.below(8) as i64,
                    col::BEGIN => i as i64 * 1_000_000,
                    _ => 0,
                });
            }
        }
        db.ecct.push(&pairs);
    }
    db.tree = tb.finish();
    db.delimiter = "synthetic".into();
    (db, truth)
}

/// Mean and sample standard deviation of the dense values of `node` over `group`.
fn direct(truth: &[HashMap<u32, i64>], group: &[usize], node: u32) -> (f64, f64) {
    let xs: Vec<f64> = group.iter().map(|&i| truth[i].get(&node).copied().unwrap_or(0) as f64).collect();
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

fn close(a: f64, b: f64) -> bool {
    if a.is_infinite() || b.is_infinite() {
        return a == b;
    }
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn z_scores_equal_a_direct_computation() {
    let (built, truth) = synthetic();
    let path = std::env::temp_dir().join(format!("tracelens-zscores-{}.db", std::process::id()));
    db::write(&path, &built).unwrap();
    let d = db::open(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(d.len(), N);
    assert_eq!(d, built, "the database reads back as written");

    // Group B: the slowest tenth (nearest-rank p90 of the duration); A: threads 100-103.
    let dur: Vec<i64> = (0..N).map(|i| d.columns[col::DURATION].int(i).unwrap()).collect();
    let mut sorted = dur.clone();
    sorted.sort_unstable();
    let p90 = sorted[(0.9 * N as f64).ceil() as usize - 1];
    let a: Vec<usize> = (0..N).filter(|&i| d.columns[col::TID].int(i).unwrap() < 104).collect();
    let b: Vec<usize> = (0..N).filter(|&i| dur[i] >= p90).collect();
    let c = compare(&d, "tid<104", "duration>=p90").unwrap();
    assert_eq!((c.a.count, c.b.count), (a.len(), b.len()));
    assert!(close(c.a.mean_duration_ns, a.iter().map(|&i| dur[i] as f64).sum::<f64>() / a.len() as f64));

    // Every node either group has, and only those.
    let mut expected: Vec<u32> = (1..d.tree.len() as u32).filter(|&k| a.iter().chain(&b).any(|&i| truth[i].contains_key(&k))).collect();
    expected.sort_unstable();
    let mut got: Vec<u32> = c.nodes.iter().map(|n| n.node).collect();
    got.sort_unstable();
    assert_eq!(got, expected);
    assert!(c.nodes.len() > 250, "{} nodes", c.nodes.len());
    let mut infinite = 0;
    for n in &c.nodes {
        let (ma, sa) = direct(&truth, &a, n.node);
        let (mb, _) = direct(&truth, &b, n.node);
        let z = if mb == ma { 0.0 } else if sa == 0.0 { (mb - ma).signum() * f64::INFINITY } else { (mb - ma) / sa };
        assert!(close(n.mean_a_ns, ma) && close(n.mean_b_ns, mb) && close(n.sd_a_ns, sa), "node {}: {n:?} vs ({ma}, {mb}, {sa})", n.node);
        assert!(close(n.z, z), "node {}: z {} vs {z}", n.node, n.z);
        infinite += usize::from(z.is_infinite());
        assert_eq!(n.count_a, a.iter().filter(|&&i| truth[i].contains_key(&n.node)).count() as u64);
        assert_eq!(n.path, d.tree.path(n.node));
    }
    eprintln!("{} nodes checked ({} with infinite z), A {} executions, B {}", c.nodes.len(), infinite, a.len(), b.len());
    // Sorted by mean_b - mean_a, and the slow paths explain B.
    assert!(c.nodes.windows(2).all(|w| w[0].diff() >= w[1].diff()));
    let top = c.top().unwrap();
    assert_eq!(top.path.len() % 3, 0, "the extra time was put on paths whose depth is a multiple of 3: {top:?}");
}
