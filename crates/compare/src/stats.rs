//! Group statistics over the in-memory database: per ECCT node, the mean and standard
//! deviation of its inclusive time over a group of executions (an execution without the node
//! counts as 0), and the comparison of two groups (the TraceCompare thesis, section 4.4.4):
//! z = (mean_B − mean_A) / sd_A per node.
//!
//! A group's statistics are two passes over its executions' (node, ns) runs — the sums, then
//! the squared deviations from the mean (no cancellation, unlike a sum of squares) — so they
//! cost what the group's executions hold, whatever the tree's size; each pass runs in
//! parallel over fixed parts of the executions.

use rayon::prelude::*;
use serde::Serialize;

use crate::ecct::ROOT;
use crate::expr::{Expr, Selection};
use crate::metrics::{col, Unit};
use crate::table::{Executions, Values};
use crate::{Error, Result};

/// Per node of the union tree, over one group of executions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeStats {
    /// Executions in the group.
    pub n: usize,
    /// Per node, mean inclusive ns.
    pub mean: Vec<f64>,
    /// Per node, sample standard deviation of the inclusive ns (0 with fewer than two
    /// executions).
    pub sd: Vec<f64>,
    /// Per node, executions of the group that have it.
    pub present: Vec<u64>,
}

/// Executions per part of [`node_stats`]' parallel passes (at least as many as the tree has
/// nodes, so that the parts' sums take no more room than the executions): fixed for a
/// database, so that the sums are added in the same order whatever the threads.
const PART: usize = 1 << 14;

/// The statistics of the executions `sel` selects, per node of `db`'s tree. The root's
/// (node 0) are those of the duration. Both passes run in parallel over parts of
/// [`PART`] executions or more, whose sums are added in part order.
pub fn node_stats(db: &Executions, sel: &Selection) -> NodeStats {
    let nodes = db.tree.len();
    let dur = match &db.columns.get(col::DURATION) {
        Some(Values::Int(v)) => Some(v),
        _ => None,
    };
    let part = PART.max(nodes);
    let parts = db.len().div_ceil(part);
    let range = |p: usize| (p * part)..((p + 1) * part).min(db.len());
    let firsts: Vec<(Vec<i128>, Vec<u64>, usize)> = (0..parts)
        .into_par_iter()
        .map(|p| {
            let (mut sum, mut present, mut n) = (vec![0i128; nodes], vec![0u64; nodes], 0usize);
            for i in range(p).filter(|&i| sel.contains(i)) {
                n += 1;
                let (ns_nodes, ns) = db.ecct.of(i);
                for (&k, &t) in ns_nodes.iter().zip(ns) {
                    sum[k as usize] += i128::from(t);
                    present[k as usize] += 1;
                }
                if let Some(d) = dur {
                    sum[ROOT as usize] += i128::from(d[i]);
                    present[ROOT as usize] += 1;
                }
            }
            (sum, present, n)
        })
        .collect();
    let (mut sum, mut present, mut n) = (vec![0i128; nodes], vec![0u64; nodes], 0usize);
    for (s, p, c) in &firsts {
        sum.iter_mut().zip(s).for_each(|(a, b)| *a += b);
        present.iter_mut().zip(p).for_each(|(a, b)| *a += b);
        n += c;
    }
    let mean: Vec<f64> = sum.iter().map(|&s| if n == 0 { 0.0 } else { s as f64 / n as f64 }).collect();
    let seconds: Vec<Vec<f64>> = (0..parts)
        .into_par_iter()
        .map(|p| {
            let mut m2 = vec![0f64; nodes];
            for i in range(p).filter(|&i| sel.contains(i)) {
                let (ns_nodes, ns) = db.ecct.of(i);
                for (&k, &t) in ns_nodes.iter().zip(ns) {
                    let d = t as f64 - mean[k as usize];
                    m2[k as usize] += d * d;
                }
                if let Some(d) = dur {
                    let x = d[i] as f64 - mean[ROOT as usize];
                    m2[ROOT as usize] += x * x;
                }
            }
            m2
        })
        .collect();
    let mut m2 = vec![0f64; nodes];
    for part in &seconds {
        m2.iter_mut().zip(part).for_each(|(a, b)| *a += b);
    }
    let sd = (0..nodes)
        .map(|k| {
            if n < 2 {
                return 0.0;
            }
            // The executions without the node are zeros.
            let absent = (n as u64 - present[k]) as f64;
            ((m2[k] + absent * mean[k] * mean[k]) / (n - 1) as f64).sqrt()
        })
        .collect();
    NodeStats { n, mean, sd, present }
}

/// z = (mean_b − mean_a) / sd_a: 0 when the means are equal, ±infinity when they differ and
/// `sd_a` is 0.
pub fn z_score(mean_a: f64, mean_b: f64, sd_a: f64) -> f64 {
    let d = mean_b - mean_a;
    if d == 0.0 {
        0.0
    } else if sd_a == 0.0 {
        d.signum() * f64::INFINITY
    } else {
        d / sd_a
    }
}

/// One group of a comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Group {
    /// Its expression.
    pub expr: String,
    /// Executions in it.
    pub count: usize,
    /// Their mean duration.
    pub mean_duration_ns: f64,
}

/// One ECCT node in a comparison (times are inclusive: the node and what it calls).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NodeDiff {
    /// Its id in the database's tree.
    pub node: u32,
    /// Frames from the root down (pseudo-frames in brackets).
    pub path: Vec<String>,
    /// Mean ns per execution of group A (0 for the executions without it).
    pub mean_a_ns: f64,
    /// Mean ns per execution of group B.
    pub mean_b_ns: f64,
    /// Sample standard deviation in group A.
    pub sd_a_ns: f64,
    /// (mean_b − mean_a) / sd_a; `null` in JSON when sd_a is 0 and the means differ.
    pub z: f64,
    /// Executions of A that have the node.
    pub count_a: u64,
    /// Executions of B that have the node.
    pub count_b: u64,
    /// Mean self time in A: the node's own, without its children's.
    pub self_mean_a_ns: f64,
    /// Mean self time in B.
    pub self_mean_b_ns: f64,
}

impl NodeDiff {
    /// mean_b − mean_a.
    pub fn diff(&self) -> f64 {
        self.mean_b_ns - self.mean_a_ns
    }

    /// Self mean in B − self mean in A.
    pub fn self_diff(&self) -> f64 {
        self.self_mean_b_ns - self.self_mean_a_ns
    }
}

/// The mean of a metric in each group.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricDiff {
    /// The metric.
    pub name: String,
    /// Its unit.
    pub unit: Unit,
    /// Mean over A (executions that have a value).
    pub mean_a: f64,
    /// Mean over B.
    pub mean_b: f64,
}

/// Two groups compared.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// Group A (the reference).
    pub a: Group,
    /// Group B.
    pub b: Group,
    /// Every node present in A or B, by `mean_b_ns − mean_a_ns`, largest first (at equal
    /// differences, deeper first).
    pub nodes: Vec<NodeDiff>,
    /// Indexes in `nodes` of the nodes whose own (self) time grew most, largest first: where
    /// the extra time of B is spent. Only nodes whose self time grew.
    pub explain: Vec<usize>,
    /// The means of the duration, critical-path state and count metrics in each group.
    pub metrics: Vec<MetricDiff>,
}

impl Comparison {
    /// The node that explains most of the difference: the first of `explain`.
    pub fn top(&self) -> Option<&NodeDiff> {
        self.explain.first().map(|&i| &self.nodes[i])
    }
}

/// How many nodes `explain` lists at most.
pub const EXPLAIN: usize = 20;

/// Compares the executions `a` and `b` select (their expressions are for the report).
pub fn compare_selections(db: &Executions, a: (&str, &Selection), b: (&str, &Selection)) -> Comparison {
    let (sa, sb) = rayon::join(|| node_stats(db, a.1), || node_stats(db, b.1));
    let group = |expr: &str, s: &NodeStats| Group { expr: expr.to_string(), count: s.n, mean_duration_ns: s.mean.first().copied().unwrap_or(0.0) };
    // Self means: the node's inclusive mean minus its children's (means are linear).
    let mut child_a = vec![0f64; db.tree.len()];
    let mut child_b = vec![0f64; db.tree.len()];
    for k in 1..db.tree.len() {
        let p = db.tree.parent[k] as usize;
        child_a[p] += sa.mean[k];
        child_b[p] += sb.mean[k];
    }
    let mut nodes: Vec<NodeDiff> = (1..db.tree.len())
        .filter(|&k| sa.present[k] > 0 || sb.present[k] > 0)
        .map(|k| NodeDiff {
            node: k as u32,
            path: db.tree.path(k as u32).into_iter().map(str::to_string).collect(),
            mean_a_ns: sa.mean[k],
            mean_b_ns: sb.mean[k],
            sd_a_ns: sa.sd[k],
            z: z_score(sa.mean[k], sb.mean[k], sa.sd[k]),
            count_a: sa.present[k],
            count_b: sb.present[k],
            self_mean_a_ns: (sa.mean[k] - child_a[k]).max(0.0),
            self_mean_b_ns: (sb.mean[k] - child_b[k]).max(0.0),
        })
        .collect();
    nodes.sort_by(|x, y| y.diff().total_cmp(&x.diff()).then(y.path.len().cmp(&x.path.len())).then(x.path.cmp(&y.path)));
    let mut explain: Vec<usize> = (0..nodes.len()).filter(|&i| nodes[i].self_diff() > 0.0).collect();
    explain.sort_by(|&x, &y| nodes[y].self_diff().total_cmp(&nodes[x].self_diff()).then(nodes[y].path.len().cmp(&nodes[x].path.len())).then(x.cmp(&y)));
    explain.truncate(EXPLAIN);
    let metrics = db
        .metrics
        .iter()
        .zip(&db.columns)
        .enumerate()
        .filter(|(c, (m, _))| matches!(m.unit, Unit::Ns | Unit::Count | Unit::Bytes) && *c != col::DEPTH)
        .filter_map(|(_, (m, v))| {
            let Values::Int(v) = v else { return None };
            Some(MetricDiff { name: m.name.clone(), unit: m.unit, mean_a: mean_of(v, a.1), mean_b: mean_of(v, b.1) })
        })
        .collect();
    Comparison { a: group(a.0, &sa), b: group(b.0, &sb), nodes, explain, metrics }
}

fn mean_of(v: &[i64], sel: &Selection) -> f64 {
    let (mut s, mut n) = (0i128, 0u64);
    for i in sel.iter() {
        if v[i] != crate::metrics::MISSING {
            s += i128::from(v[i]);
            n += 1;
        }
    }
    if n == 0 {
        0.0
    } else {
        s as f64 / n as f64
    }
}

/// Parses both expressions, checks that neither group is empty, and compares them.
pub fn compare(db: &Executions, a: &str, b: &str) -> Result<Comparison> {
    let (ea, eb) = (Expr::parse(a, db)?, Expr::parse(b, db)?);
    let (sa, sb) = (ea.select(db), eb.select(db));
    for (group, expr, s) in [("A", a, &sa), ("B", b, &sb)] {
        if s.count() == 0 {
            return Err(Error::EmptyGroup { group, expr: expr.to_string(), total: db.len() });
        }
    }
    Ok(compare_selections(db, (a, &sa), (b, &sb)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ecct::TreeBuilder;
    use crate::metrics::fixed;

    /// Executions 0..6: `work` 10 ns each; 3..6 also `[timer]` under it, 100, 110, 120.
    fn db() -> Executions {
        let mut db = Executions::with_metrics(fixed());
        let mut tb = TreeBuilder::default();
        let work = tb.path(&["main", "work"]);
        let timer = tb.path(&["main", "work", "[timer]"]);
        db.tree = tb.finish();
        for i in 0..6i64 {
            let t = if i >= 3 { 100 + 10 * (i - 3) } else { 0 };
            let d = 10 + t;
            for (k, c) in db.columns.iter_mut().enumerate() {
                if let Values::Int(v) = c {
                    v.push(if k == col::DURATION { d } else if k == col::TIMER_TEST { t } else { 0 });
                }
            }
            db.ecct.push(&[(1, d), (work, d), (timer, t)]);
        }
        db
    }

    mod col {
        pub use crate::metrics::col::*;
        pub const TIMER_TEST: usize = STATES + 3;
    }

    #[test]
    fn the_timer_explains_the_slow_group() {
        let d = db();
        let c = compare(&d, "duration<100", "duration>=100").unwrap();
        assert_eq!((c.a.count, c.b.count), (3, 3));
        assert_eq!(c.b.mean_duration_ns, 120.0);
        // Inclusive: main and work grow by 110 like the timer; the deepest comes first.
        assert_eq!(c.nodes[0].path, vec!["main", "work", "[timer]"]);
        assert_eq!(c.nodes[0].mean_a_ns, 0.0);
        assert_eq!(c.nodes[0].mean_b_ns, 110.0);
        assert!(c.nodes[0].z.is_infinite() && c.nodes[0].z > 0.0);
        assert_eq!(c.nodes[0].count_a, 0);
        assert_eq!(c.top().unwrap().path, vec!["main", "work", "[timer]"]);
        assert_eq!(c.explain.len(), 1);
        let timer = c.metrics.iter().find(|m| m.name == "timer_ns").unwrap();
        assert_eq!((timer.mean_a, timer.mean_b), (0.0, 110.0));
        // B against all: the sd of all six is the sample sd with zeros for the absent.
        let c = compare(&d, "all", "duration>=100").unwrap();
        let t = &c.nodes.iter().find(|n| n.path.len() == 3).unwrap();
        let xs = [0.0f64, 0.0, 0.0, 100.0, 110.0, 120.0];
        let m = xs.iter().sum::<f64>() / 6.0;
        let sd = (xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / 5.0).sqrt();
        assert!((t.sd_a_ns - sd).abs() < 1e-9);
        assert!((t.z - (110.0 - m) / sd).abs() < 1e-9);
        assert_eq!(t.self_mean_b_ns, 110.0);
    }

    #[test]
    fn an_empty_group_is_an_error() {
        let e = compare(&db(), "duration>1s", "all").unwrap_err().to_string();
        assert_eq!(e, "group A (`duration>1s`) selects none of the 6 executions");
    }

    #[test]
    fn z_scores() {
        assert_eq!(z_score(1.0, 1.0, 0.0), 0.0);
        assert_eq!(z_score(1.0, 0.0, 0.0), f64::NEG_INFINITY);
        assert_eq!(z_score(1.0, 3.0, 2.0), 1.0);
    }
}
