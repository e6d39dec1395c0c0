//! The executions database in memory, column by column: what `tracelens compare` (and a web
//! view brushing histograms) recomputes group statistics over.
//!
//! Each metric is one vector of values, one per execution, so a filter reads one or two
//! columns; each execution's ECCT is a run of (node, inclusive ns) pairs in [`Pairs`], so the
//! statistics of a group are one pass over its executions' runs (see `stats.rs`).

use serde::Serialize;

use crate::ecct::Tree;
use crate::metrics::{Metric, MISSING};

/// The values of one metric, one per execution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Values {
    /// Integers ([`MISSING`] where the execution has none).
    Int(Vec<i64>),
    /// Text, as codes in a dictionary (`u32::MAX` where the execution has none).
    Text {
        /// Per execution, an index in `dict`.
        codes: Vec<u32>,
        /// The distinct strings.
        dict: Vec<String>,
    },
}

/// A text value no execution has.
pub const NO_TEXT: u32 = u32::MAX;

impl Values {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            Values::Int(v) => v.len(),
            Values::Text { codes, .. } => codes.len(),
        }
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The integer of execution `i`, if it has one.
    pub fn int(&self, i: usize) -> Option<i64> {
        match self {
            Values::Int(v) => v.get(i).copied().filter(|&x| x != MISSING),
            Values::Text { .. } => None,
        }
    }

    /// The text of execution `i`, if it has one.
    pub fn text(&self, i: usize) -> Option<&str> {
        match self {
            Values::Text { codes, dict } => codes.get(i).and_then(|&c| dict.get(c as usize)).map(String::as_str),
            Values::Int(_) => None,
        }
    }
}

/// Every execution's ECCT as (node, inclusive ns) pairs, by execution: execution `i`'s are
/// `nodes[offsets[i]..offsets[i + 1]]` and the same range of `ns`, by increasing node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pairs {
    /// `len + 1` offsets into `nodes` and `ns`.
    pub offsets: Vec<u64>,
    /// Union-tree node ids.
    pub nodes: Vec<u32>,
    /// Inclusive nanoseconds.
    pub ns: Vec<i64>,
}

impl Default for Pairs {
    fn default() -> Pairs {
        Pairs { offsets: vec![0], nodes: Vec::new(), ns: Vec::new() }
    }
}

impl Pairs {
    /// Number of executions.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends the pairs of the next execution (by increasing node, never the root; pairs of
    /// no time are left out).
    pub fn push(&mut self, pairs: &[(u32, i64)]) {
        for &(n, ns) in pairs.iter().filter(|p| p.1 > 0) {
            self.nodes.push(n);
            self.ns.push(ns);
        }
        self.offsets.push(self.nodes.len() as u64);
    }

    /// Execution `i`'s nodes and their inclusive ns.
    #[inline]
    pub fn of(&self, i: usize) -> (&[u32], &[i64]) {
        let (a, b) = (self.offsets[i] as usize, self.offsets[i + 1] as usize);
        (&self.nodes[a..b], &self.ns[a..b])
    }
}

/// A database of executions, in memory (see the [module docs](self)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Executions {
    /// The metrics, in column order: [`crate::metrics::FIXED`], then the dimensions.
    pub metrics: Vec<Metric>,
    /// Their values, one column per metric.
    pub columns: Vec<Values>,
    /// The union ECCT.
    pub tree: Tree,
    /// Each execution's ECCT.
    pub ecct: Pairs,
    /// The traces the executions come from, by id (the `trace` metric).
    pub traces: Vec<String>,
    /// How executions were delimited, in words (`function handle_request`, ...).
    pub delimiter: String,
}

/// A short description of a database, as `tracelens executions` reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Executions.
    pub executions: usize,
    /// Metrics (columns).
    pub metrics: usize,
    /// Nodes of the union ECCT.
    pub nodes: usize,
    /// Distinct frames.
    pub frames: usize,
    /// (node, ns) pairs over all executions.
    pub pairs: usize,
}

impl Executions {
    /// An empty database with the fixed metrics and `dims` after them.
    pub fn with_metrics(metrics: Vec<Metric>) -> Executions {
        let columns = metrics.iter().map(|m| if m.is_text() { Values::Text { codes: Vec::new(), dict: Vec::new() } } else { Values::Int(Vec::new()) }).collect();
        Executions { metrics, columns, ..Executions::default() }
    }

    /// Number of executions.
    pub fn len(&self) -> usize {
        self.ecct.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The column of the metric called `name`.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.metrics.iter().position(|m| m.name == name)
    }

    /// Its size in words.
    pub fn summary(&self) -> Summary {
        Summary { executions: self.len(), metrics: self.metrics.len(), nodes: self.tree.len(), frames: self.tree.frames.len(), pairs: self.ecct.nodes.len() }
    }

    /// Checks that every column has one value per execution (what a database read must hold).
    pub fn check_lengths(&self) -> Result<(), String> {
        if self.metrics.len() != self.columns.len() {
            return Err(format!("{} metrics but {} columns", self.metrics.len(), self.columns.len()));
        }
        for (m, c) in self.metrics.iter().zip(&self.columns) {
            if c.len() != self.len() {
                return Err(format!("metric {} has {} values for {} executions", m.name, c.len(), self.len()));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_by_execution() {
        let mut p = Pairs::default();
        p.push(&[(1, 10), (2, 4)]);
        p.push(&[]);
        p.push(&[(3, 7)]);
        assert_eq!(p.len(), 3);
        assert_eq!(p.of(0), (&[1u32, 2][..], &[10i64, 4][..]));
        assert_eq!(p.of(1).0.len(), 0);
        assert_eq!(p.of(2), (&[3u32][..], &[7i64][..]));
    }

    #[test]
    fn values() {
        let v = Values::Int(vec![3, MISSING]);
        assert_eq!((v.int(0), v.int(1), v.int(2)), (Some(3), None, None));
        let t = Values::Text { codes: vec![1, NO_TEXT, 0], dict: vec!["a".into(), "b".into()] };
        assert_eq!((t.text(0), t.text(1), t.text(2)), (Some("b"), None, Some("a")));
    }
}
