//! The statistics of `compare` against a direct computation, on a synthetic database of
//! 120,000 executions written to SQLite and read back: for every node, the means of both
//! groups, the standard deviation in A and z = (mean_B − mean_A) / sd_A, computed here the
//! plain way (a dense vector of each group's values, zeros where an execution lacks the
//! node; mean, then the sample variance around it).

use std::collections::HashMap;

use tracelens_compare::metrics::col;
use tracelens_compare::synthetic::{generate, Shape};
use tracelens_compare::{compare, db, Executions};

const N: usize = 120_000;

/// The database, and per execution its inclusive ns by node, as made (what the test
/// computes from).
fn synthetic() -> (Executions, Vec<HashMap<u32, i64>>) {
    let db = generate(&Shape { executions: N, seed: 7, ..Shape::default() });
    let truth = (0..N)
        .map(|i| {
            let (nodes, ns) = db.ecct.of(i);
            nodes.iter().copied().zip(ns.iter().copied()).collect()
        })
        .collect();
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

    // Group B: the slowest tenth (nearest-rank p90 of the duration); A: threads 1000-1003.
    let dur: Vec<i64> = (0..N).map(|i| d.columns[col::DURATION].int(i).unwrap()).collect();
    let mut sorted = dur.clone();
    sorted.sort_unstable();
    let p90 = sorted[(0.9 * N as f64).ceil() as usize - 1];
    let a: Vec<usize> = (0..N).filter(|&i| d.columns[col::TID].int(i).unwrap() < 1004).collect();
    let b: Vec<usize> = (0..N).filter(|&i| dur[i] >= p90).collect();
    let c = compare(&d, "tid<1004", "duration>=p90").unwrap();
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
