//! What the page shows, computed in Rust from the executions database in memory (the
//! TraceCompare thesis, chapter 4: histograms of every metric for groups A and B, and the
//! per-node statistics of each group that the differential flame graph is drawn from).
//!
//! A group is a set of ranges, one per metric at most (an execution is in when each of its
//! values is in its range; one without a value for a metric is not). Every metric shown is
//! binned once per scale (linear or log) into at most [`MAX_BINS`] bins with integer edges,
//! and each execution's bin is kept as one byte per metric: a histogram of a group is then
//! one pass over the group's bytes.
//!
//! Brushing at a million executions (Falcon, Moritz, Howe & Heer, CHI 2019): when the page
//! is about to brush metric M for group G, it asks for the *cube* of (G, M): for each bin of
//! M, over the executions of that bin that the group's other ranges keep, the count, every
//! metric's histogram and every node's sum, sum of squares and presence count, accumulated
//! over the bins (prefix sums). A brush over bins `[b0, b1]` is then one subtraction of two
//! rows in the page, whatever the number of executions: histograms, means and standard
//! deviations for the flame graph without a round trip. When the brush ends, the page asks
//! for the exact [`View`] of the new groups.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;
use serde::Serialize;
use serde_json::Value;
use tracelens_compare::expr::percentile;
use tracelens_compare::metrics::{col, Unit, FIXED, MISSING};
use tracelens_compare::{node_stats, Executions, Selection, Values};

use crate::{Error, Result};

/// Most bins of a histogram.
pub const MAX_BINS: usize = 100;

/// The bin of an execution without a value.
const NO_BIN: u8 = u8::MAX;

/// Sample executions listed per group.
pub const SAMPLES: usize = 20;

/// A histogram's axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scale {
    /// Bins of equal width.
    Linear,
    /// Bins of equal width on log(1 + value - min).
    Log,
}

/// One metric's bins at one scale: the edges (bin `k` holds the integers in
/// `[edges[k], edges[k + 1])`) and each execution's bin.
#[derive(Debug)]
pub struct Binned {
    /// `bins + 1` increasing edges.
    pub edges: Vec<i64>,
    /// Per execution, its bin (`u8::MAX` without a value).
    pub index: Vec<u8>,
    /// Executions per bin.
    pub all: Vec<u32>,
}

impl Binned {
    /// Number of bins.
    pub fn bins(&self) -> usize {
        self.edges.len() - 1
    }
}

/// The edges of at most [`MAX_BINS`] bins over the integers `min..=max`.
pub fn edges(min: i64, max: i64, scale: Scale) -> Vec<i64> {
    let lo = i128::from(min);
    let hi = i128::from(max) + 1;
    let span = (hi - lo).max(1);
    let n = (MAX_BINS as i128).min(span);
    let clamp = |x: i128| x.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
    let mut e: Vec<i64> = match scale {
        Scale::Linear => (0..=n).map(|k| clamp(lo + span * k / n)).collect(),
        Scale::Log => {
            let l = (span as f64).ln_1p();
            (0..=n).map(|k| clamp(lo + ((l * k as f64 / n as f64).exp_m1().round() as i128).min(span))).collect()
        }
    };
    e.dedup();
    if let Some(last) = e.last_mut() {
        *last = clamp(hi);
    }
    e.dedup();
    if e.len() < 2 {
        e = vec![min, clamp(hi)];
    }
    e
}

/// The bin of `v` among `edges`.
fn bin_of(edges: &[i64], v: i64) -> u8 {
    let k = edges.partition_point(|&e| e <= v);
    (k.saturating_sub(1)).min(edges.len() - 2) as u8
}

/// Puts the elements of ranks `ranks` (increasing) of `v` at their place in sorted order, in
/// O(n log k) for k ranks.
fn select_ranks<T: Ord>(v: &mut [T], ranks: &[usize]) {
    if ranks.is_empty() || v.is_empty() {
        return;
    }
    let mid = ranks.len() / 2;
    let r = ranks[mid];
    v.select_nth_unstable(r);
    let (lo, hi) = v.split_at_mut(r);
    select_ranks(lo, &ranks[..mid]);
    let later: Vec<usize> = ranks[mid + 1..].iter().map(|&x| x - r - 1).collect();
    select_ranks(&mut hi[1..], &later);
}

/// A metric shown as a histogram.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricInfo {
    /// Its name (`duration_ns`).
    pub name: String,
    /// Its unit.
    pub unit: Unit,
    /// What it is.
    pub description: String,
    /// Smallest value.
    pub min: i64,
    /// Largest value.
    pub max: i64,
    /// Its column in the database.
    #[serde(skip)]
    pub column: usize,
}

/// A group as ranges: per metric (index in [`Meta::metrics`]), the inclusive range kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ranges(pub BTreeMap<usize, (i64, i64)>);

/// Which group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// Group A, the reference.
    A,
    /// Group B.
    B,
}

/// What the page asks for: both groups and the scale of each histogram.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Request {
    /// Group A.
    pub a: Ranges,
    /// Group B.
    pub b: Ranges,
    /// Metrics (indexes) drawn on a log axis.
    pub log: Vec<usize>,
}

/// The database summary the page starts from.
#[derive(Clone, Debug, Serialize)]
pub struct Meta {
    /// What the page is titled (the database's file name).
    pub title: String,
    /// How executions were delimited.
    pub delimiter: String,
    /// Executions in the database.
    pub executions: usize,
    /// The metrics shown as histograms, in order.
    pub metrics: Vec<MetricInfo>,
    /// The union ECCT: per node, its parent (-1 for the root) and its frame's name.
    pub parent: Vec<i64>,
    /// Per node, its frame's name (`all` for the root).
    pub name: Vec<String>,
    /// Default groups: A = at most the median duration, B = the slowest tenth.
    pub defaults: DefaultGroups,
}

/// The groups of a page opened without state.
#[derive(Clone, Debug, Serialize)]
pub struct DefaultGroups {
    /// `{metric: [lo, hi]}` of group A.
    pub a: BTreeMap<String, [i64; 2]>,
    /// Of group B.
    pub b: BTreeMap<String, [i64; 2]>,
}

/// Per node of the tree, one group's statistics (see `tracelens_compare::node_stats`).
#[derive(Clone, Debug, Serialize)]
pub struct GroupStats {
    /// Executions in the group.
    pub count: usize,
    /// Per node, mean inclusive ns (an execution without the node counts 0).
    pub mean: Vec<f64>,
    /// Per node, sample standard deviation.
    pub sd: Vec<f64>,
    /// Per node, executions that have it.
    pub present: Vec<u64>,
    /// Per metric shown, the group's histogram.
    pub hist: Vec<Vec<u32>>,
    /// Some executions of the group, by duration, slowest first.
    pub samples: Vec<Sample>,
}

/// One execution of the samples table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sample {
    /// Its index in the database.
    pub id: usize,
    /// Its trace's path.
    pub trace: String,
    /// Its thread.
    pub tid: Option<i64>,
    /// Its begin time, ns.
    pub begin_ns: Option<i64>,
    /// Its duration, ns.
    pub duration_ns: Option<i64>,
}

/// One metric's histogram axis and the histogram of all executions.
#[derive(Clone, Debug, Serialize)]
pub struct Axis {
    /// Its scale.
    pub scale: Scale,
    /// The bin edges.
    pub edges: Vec<i64>,
    /// Executions per bin, over all.
    pub all: Vec<u32>,
}

/// Everything the page draws for two groups.
#[derive(Clone, Debug, Serialize)]
pub struct View {
    /// Per metric shown, its axis.
    pub axes: Vec<Axis>,
    /// Group A.
    pub a: GroupStats,
    /// Group B.
    pub b: GroupStats,
}

/// The database in memory with what the page needs of it, computed once.
pub struct Model {
    db: Executions,
    meta: Meta,
    binned: Mutex<HashMap<(usize, Scale), Arc<Binned>>>,
    /// The request of a page opened without state, and its view as JSON.
    first: (Request, Vec<u8>),
}

fn ints(v: &Values) -> Option<&[i64]> {
    match v {
        Values::Int(x) => Some(x),
        Values::Text { .. } => None,
    }
}

impl Model {
    /// The model of `db`, titled `title`.
    pub fn new(db: Executions, title: &str) -> Model {
        let mut metrics = Vec::new();
        for (c, (m, v)) in db.metrics.iter().zip(&db.columns).enumerate() {
            let shown = if c < FIXED.len() { matches!(m.unit, Unit::Ns | Unit::Count | Unit::Bytes) && c != col::DEPTH } else { !m.is_text() };
            let Some(v) = ints(v).filter(|_| shown) else { continue };
            let mut it = v.iter().copied().filter(|&x| x != MISSING);
            let Some(first) = it.next() else { continue };
            let (min, max) = it.fold((first, first), |(lo, hi), x| (lo.min(x), hi.max(x)));
            metrics.push(MetricInfo { name: m.name.clone(), unit: m.unit, description: m.description.clone(), min, max, column: c });
        }
        let (mut a, mut b) = (BTreeMap::new(), BTreeMap::new());
        if let Some(d) = metrics.iter().find(|m| m.column == col::DURATION) {
            if let (Some(p50), Some(p90)) = (percentile(&db, d.column, 50.0), percentile(&db, d.column, 90.0)) {
                a.insert(d.name.clone(), [d.min, p50]);
                b.insert(d.name.clone(), [p90, d.max]);
            }
        }
        let t = &db.tree;
        let parent = t.parent.iter().enumerate().map(|(k, &p)| if k == 0 { -1 } else { i64::from(p) }).collect();
        let name = (0..t.len() as u32).map(|k| if k == 0 { "all".to_string() } else { t.frame_name(k).to_string() }).collect();
        let meta = Meta { title: title.to_string(), delimiter: db.delimiter.clone(), executions: db.len(), metrics, parent, name, defaults: DefaultGroups { a, b } };
        let mut model = Model { db, meta, binned: Mutex::new(HashMap::new()), first: (Request::default(), Vec::new()) };
        // The view of a page opened without state, now: the first view comes at once.
        let index = |g: &BTreeMap<String, [i64; 2]>| Ranges(g.iter().filter_map(|(k, r)| Some((model.meta.metrics.iter().position(|m| &m.name == k)?, (r[0], r[1])))).collect());
        let req = Request { a: index(&model.meta.defaults.a), b: index(&model.meta.defaults.b), log: Vec::new() };
        let json = serde_json::to_vec(&model.view(&req)).unwrap_or_default();
        model.first = (req, json);
        model
    }

    /// The view of `req` as JSON (that of a page opened without state is kept).
    pub fn view_json(&self, req: &Request) -> serde_json::Result<Vec<u8>> {
        if *req == self.first.0 && !self.first.1.is_empty() {
            return Ok(self.first.1.clone());
        }
        serde_json::to_vec(&self.view(req))
    }

    /// The database.
    pub fn db(&self) -> &Executions {
        &self.db
    }

    /// Its summary for the page.
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    fn values(&self, m: usize) -> &[i64] {
        ints(&self.db.columns[self.meta.metrics[m].column]).unwrap_or(&[])
    }

    /// Metric `m`'s bins at `scale` (computed on first use, then kept).
    pub fn binned(&self, m: usize, scale: Scale) -> Arc<Binned> {
        if let Some(b) = self.binned.lock().unwrap_or_else(|p| p.into_inner()).get(&(m, scale)) {
            return b.clone();
        }
        let info = &self.meta.metrics[m];
        let e = edges(info.min, info.max, scale);
        let index: Vec<u8> = self.values(m).par_iter().with_min_len(1 << 14).map(|&v| if v == MISSING { NO_BIN } else { bin_of(&e, v) }).collect();
        let mut all = vec![0u32; e.len() - 1];
        for &x in index.iter().filter(|&&x| x != NO_BIN) {
            all[x as usize] += 1;
        }
        let b = Arc::new(Binned { edges: e, index, all });
        self.binned.lock().unwrap_or_else(|p| p.into_inner()).insert((m, scale), b.clone());
        b
    }

    fn scale(req: &Request, m: usize) -> Scale {
        if req.log.contains(&m) {
            Scale::Log
        } else {
            Scale::Linear
        }
    }

    fn all_binned(&self, req: &Request) -> Vec<Arc<Binned>> {
        (0..self.meta.metrics.len()).into_par_iter().map(|m| self.binned(m, Model::scale(req, m))).collect()
    }

    /// The executions of group `g`, leaving out its range on metric `except`.
    pub fn select(&self, g: &Ranges, except: Option<usize>) -> Selection {
        let ranges: Vec<(&[i64], i64, i64)> = g.0.iter().filter(|(&m, _)| Some(m) != except).map(|(&m, &(lo, hi))| (self.values(m), lo, hi)).collect();
        if ranges.is_empty() {
            return Selection::all(self.db.len());
        }
        Selection::from_fn(self.db.len(), |i| ranges.iter().all(|&(v, lo, hi)| v[i] != MISSING && lo <= v[i] && v[i] <= hi))
    }

    /// The histograms, node statistics and samples of both groups.
    pub fn view(&self, req: &Request) -> View {
        let (sa, sb) = rayon::join(|| self.select(&req.a, None), || self.select(&req.b, None));
        self.view_of(req, &sa, &sb)
    }

    /// The view of the executions `a` and `b` select, with the axes `req` asks for.
    pub fn view_of(&self, req: &Request, a: &Selection, b: &Selection) -> View {
        let binned = self.all_binned(req);
        let axes = binned.iter().enumerate().map(|(m, b)| Axis { scale: Model::scale(req, m), edges: b.edges.clone(), all: b.all.clone() }).collect();
        let (a, b) = rayon::join(|| self.group_stats(a, &binned), || self.group_stats(b, &binned));
        View { axes, a, b }
    }

    /// One group's statistics, histograms over `binned` and samples.
    fn group_stats(&self, sel: &Selection, binned: &[Arc<Binned>]) -> GroupStats {
        let (s, hist) = rayon::join(
            || node_stats(&self.db, sel),
            || {
                binned
                    .par_iter()
                    .map(|b| {
                        let mut h = vec![0u32; b.bins()];
                        for i in sel.iter() {
                            let x = b.index[i];
                            if x != NO_BIN {
                                h[x as usize] += 1;
                            }
                        }
                        h
                    })
                    .collect()
            },
        );
        GroupStats { count: s.n, mean: s.mean, sd: s.sd, present: s.present, hist, samples: self.samples(sel) }
    }

    /// Up to [`SAMPLES`] executions of `sel` evenly spread over its durations, slowest first.
    pub fn samples(&self, sel: &Selection) -> Vec<Sample> {
        let int = |c: usize, i: usize| self.db.columns.get(c).and_then(|v| v.int(i));
        // Slowest first: by decreasing duration, then decreasing index.
        let mut ids: Vec<(std::cmp::Reverse<i64>, std::cmp::Reverse<usize>)> = sel.iter().map(|i| (std::cmp::Reverse(int(col::DURATION, i).unwrap_or(MISSING)), std::cmp::Reverse(i))).collect();
        let n = ids.len();
        let picks: Vec<usize> = if n <= SAMPLES { (0..n).collect() } else { (0..SAMPLES).map(|k| k * (n - 1) / (SAMPLES - 1)).collect() };
        select_ranks(&mut ids, &picks);
        let ids: Vec<(i64, usize)> = ids.iter().map(|&(d, i)| (d.0, i.0)).collect();
        picks
            .into_iter()
            .map(|k| {
                let i = ids[k].1;
                let trace = int(col::TRACE, i).and_then(|t| self.db.traces.get(t as usize)).cloned().unwrap_or_default();
                Sample { id: i, trace, tid: int(col::TID, i), begin_ns: int(col::BEGIN, i), duration_ns: int(col::DURATION, i) }
            })
            .collect()
    }

    /// The cube of group `which` brushed on metric `m` (see the [module docs](self)), as
    /// little-endian f64: `bins, H, N`, then `bins + 1` rows of `1 + H + 3N` prefix sums over
    /// the bins of `m` (row `k`: the bins before `k`): the count, the histograms of every
    /// metric (H bins in all, in metric order), and per node the sum of its ns, the sum of
    /// their squares and the executions that have it. Node 0 is the execution (its duration).
    pub fn cube(&self, req: &Request, which: Which, m: usize) -> Vec<u8> {
        let binned = self.all_binned(req);
        let g = if which == Which::A { &req.a } else { &req.b };
        let keep = self.select(g, Some(m));
        let bm = &binned[m];
        let bins = bm.bins();
        let offsets: Vec<usize> = binned.iter().scan(1usize, |o, b| Some(std::mem::replace(o, *o + b.bins()))).collect();
        let h: usize = binned.iter().map(|b| b.bins()).sum();
        let nodes = self.db.tree.len();
        let row = 1 + h + 3 * nodes;
        let dur = ints(&self.db.columns[col::DURATION]).unwrap_or(&[]);
        let n = self.db.len();
        let parts = (rayon::current_num_threads() * 2).max(1);
        let step = n.div_ceil(parts).max(1);
        let sums = (0..parts)
            .into_par_iter()
            .map(|p| {
                let mut acc = vec![0f64; bins * row];
                for i in (p * step)..((p + 1) * step).min(n) {
                    let b = bm.index[i];
                    if b == NO_BIN || !keep.contains(i) {
                        continue;
                    }
                    let r = &mut acc[b as usize * row..(b as usize + 1) * row];
                    r[0] += 1.0;
                    for (bj, &o) in binned.iter().zip(&offsets) {
                        let x = bj.index[i];
                        if x != NO_BIN {
                            r[o + x as usize] += 1.0;
                        }
                    }
                    let (sum, rest) = r[1 + h..].split_at_mut(nodes);
                    let (sq, present) = rest.split_at_mut(nodes);
                    let mut add = |k: usize, t: f64| {
                        sum[k] += t;
                        sq[k] += t * t;
                        present[k] += 1.0;
                    };
                    if let Some(&d) = dur.get(i) {
                        add(0, d as f64);
                    }
                    let (ks, ns) = self.db.ecct.of(i);
                    for (&k, &t) in ks.iter().zip(ns) {
                        add(k as usize, t as f64);
                    }
                }
                acc
            })
            .reduce(
                || vec![0f64; bins * row],
                |mut x, y| {
                    x.iter_mut().zip(&y).for_each(|(a, b)| *a += b);
                    x
                },
            );
        let mut out = Vec::with_capacity((3 + (bins + 1) * row) * 8);
        for v in [bins as f64, h as f64, nodes as f64] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        let mut cum = vec![0f64; row];
        for k in 0..=bins {
            for v in &cum {
                out.extend_from_slice(&v.to_le_bytes());
            }
            if k < bins {
                cum.iter_mut().zip(&sums[k * row..(k + 1) * row]).for_each(|(c, s)| *c += s);
            }
        }
        out
    }

    /// The metric called `name`, by index.
    pub fn metric(&self, name: &str) -> Result<usize> {
        self.meta.metrics.iter().position(|m| m.name == name).ok_or_else(|| {
            let names: Vec<&str> = self.meta.metrics.iter().map(|m| m.name.as_str()).collect();
            Error::BadRequest(format!("unknown metric `{name}` (this database's metrics: {})", names.join(", ")))
        })
    }

    /// Parses a request body: `{"a": {METRIC: [LO, HI], ...}, "b": {...}, "log": [METRIC,
    /// ...]}`, plus for a cube `"group": "a"|"b"` and `"metric": METRIC`. Numbers out of the
    /// 64-bit range are clamped to it.
    pub fn parse(&self, body: &[u8]) -> Result<(Request, Option<(Which, usize)>)> {
        let bad = |m: String| Error::BadRequest(m);
        let v: Value = serde_json::from_slice(body).map_err(|e| bad(format!("the request is not JSON: {e}")))?;
        let Value::Object(o) = v else { return Err(bad("the request is not a JSON object".into())) };
        for k in o.keys() {
            if !["a", "b", "log", "group", "metric"].contains(&k.as_str()) {
                return Err(bad(format!("unknown field `{k}` (fields: a, b, log, group, metric)")));
            }
        }
        let ranges = |key: &str| -> Result<Ranges> {
            let mut r = Ranges::default();
            match o.get(key) {
                None | Some(Value::Null) => {}
                Some(Value::Object(g)) => {
                    for (name, range) in g {
                        let m = self.metric(name)?;
                        let pair = range.as_array().filter(|a| a.len() == 2).and_then(|a| Some((a[0].as_f64()?, a[1].as_f64()?)));
                        let Some((lo, hi)) = pair else {
                            return Err(bad(format!("group {key}: the range of {name} is not [LO, HI] (two numbers): {range}")));
                        };
                        if lo > hi {
                            return Err(bad(format!("group {key}: the range of {name} is empty ({lo} > {hi})")));
                        }
                        r.0.insert(m, (lo.ceil() as i64, hi.floor() as i64));
                    }
                }
                Some(x) => return Err(bad(format!("group {key} is not an object of ranges ({{\"duration_ns\": [LO, HI]}}): {x}"))),
            }
            Ok(r)
        };
        let log = match o.get("log") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a.iter().map(|x| x.as_str().ok_or_else(|| bad(format!("log: {x} is not a metric name"))).and_then(|n| self.metric(n))).collect::<Result<_>>()?,
            Some(x) => return Err(bad(format!("log is not a list of metric names: {x}"))),
        };
        let req = Request { a: ranges("a")?, b: ranges("b")?, log };
        let cube = match (o.get("group"), o.get("metric")) {
            (None, None) => None,
            (Some(g), Some(m)) => {
                let which = match g.as_str() {
                    Some("a") => Which::A,
                    Some("b") => Which::B,
                    _ => return Err(bad(format!("group is {g}, not \"a\" or \"b\""))),
                };
                let m = m.as_str().ok_or_else(|| bad(format!("metric {m} is not a name")))?;
                Some((which, self.metric(m)?))
            }
            _ => return Err(bad("a cube needs both `group` and `metric`".into())),
        };
        Ok((req, cube))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracelens_compare::synthetic::{generate, Shape};

    fn model(n: usize) -> Model {
        Model::new(generate(&Shape { executions: n, ..Shape::default() }), "t.db")
    }

    #[test]
    fn edges_cover_every_value_once() {
        for (lo, hi) in [(0i64, 0i64), (0, 3), (-5, 5), (0, 1_000_000_007), (7, 250), (i64::MAX - 3, i64::MAX)] {
            for scale in [Scale::Linear, Scale::Log] {
                let e = edges(lo, hi, scale);
                assert!(e.windows(2).all(|w| w[0] < w[1]), "{lo} {hi} {scale:?} {e:?}");
                assert!(e.len() - 1 <= MAX_BINS && e[0] == lo);
                for v in [lo, hi, lo / 2 + hi / 2] {
                    let b = bin_of(&e, v) as usize;
                    assert!(e[b] <= v && (v < e[b + 1] || e[b + 1] == i64::MAX), "{v} in bin {b} of {e:?}");
                }
            }
        }
    }

    #[test]
    fn view_matches_a_direct_count() {
        let m = model(3000);
        let d = m.meta().metrics.iter().position(|x| x.name == "duration_ns").unwrap();
        let (lo, hi) = (m.meta().metrics[d].min, m.meta().metrics[d].max);
        let mid = lo + (hi - lo) / 3;
        let req = Request { a: Ranges([(d, (lo, mid))].into()), b: Ranges([(d, (mid + 1, hi))].into()), log: vec![d] };
        let v = m.view(&req);
        let durs = ints(&m.db().columns[col::DURATION]).unwrap();
        let na = durs.iter().filter(|&&x| x <= mid).count();
        assert_eq!((v.a.count, v.b.count), (na, 3000 - na));
        assert_eq!(v.a.hist[d].iter().sum::<u32>() as usize, na);
        assert_eq!(v.axes[d].all.iter().sum::<u32>(), 3000);
        assert_eq!(v.axes[d].scale, Scale::Log);
        // The node statistics are the library's.
        let c = tracelens_compare::compare(m.db(), &format!("duration<={mid}"), &format!("duration>{mid}")).unwrap();
        for nd in &c.nodes {
            assert!((v.b.mean[nd.node as usize] - nd.mean_b_ns).abs() < 1e-6 && (v.a.sd[nd.node as usize] - nd.sd_a_ns).abs() < 1e-6);
        }
        assert_eq!(v.b.samples.len(), SAMPLES);
        assert!(v.b.samples.windows(2).all(|w| w[0].duration_ns >= w[1].duration_ns));
        assert_eq!(v.b.samples[0].duration_ns, Some(hi));
    }

    /// A brush over bins [b0, b1] of the cube equals the exact view of the group with that
    /// range.
    #[test]
    fn a_cube_brush_is_the_exact_group() {
        let m = model(2000);
        let d = m.metric("duration_ns").unwrap();
        let t = m.metric("timer_ns").unwrap();
        let tmax = m.meta().metrics[t].max;
        let mut req = Request::default();
        req.b.0.insert(t, (0, tmax / 2));
        let bytes = m.cube(&req, Which::B, d);
        let f: Vec<f64> = bytes.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect();
        let (bins, h, nodes) = (f[0] as usize, f[1] as usize, f[2] as usize);
        let row = 1 + h + 3 * nodes;
        assert_eq!(f.len(), 3 + (bins + 1) * row);
        let (b0, b1) = (3, bins / 2);
        let at = |k: usize, j: usize| f[3 + k * row + j];
        let diff = |j: usize| at(b1 + 1, j) - at(b0, j);
        let e = &m.binned(d, Scale::Linear).edges;
        req.b.0.insert(d, (e[b0], e[b1 + 1] - 1));
        let v = m.view(&req);
        assert_eq!(diff(0) as usize, v.b.count);
        assert!(v.b.count > 0);
        let hist_t: Vec<u32> = (0..v.axes[t].all.len()).map(|x| diff(1 + (0..t).map(|q| v.axes[q].all.len()).sum::<usize>() + x) as u32).collect();
        assert_eq!(hist_t, v.b.hist[t]);
        for k in 0..nodes {
            let n = v.b.count as f64;
            let mean = diff(1 + h + k) / n;
            assert!((mean - v.b.mean[k]).abs() <= 1e-6 * mean.abs().max(1.0), "node {k}");
            assert_eq!(diff(1 + h + 2 * nodes + k) as u64, v.b.present[k]);
        }
    }

    #[test]
    fn the_first_view_is_kept_and_the_same() {
        let m = model(1000);
        let (req, kept) = (&m.first.0, &m.first.1);
        assert_eq!(req.a.0.len(), 1);
        assert_eq!(m.view_json(req).unwrap(), serde_json::to_vec(&m.view(req)).unwrap());
        assert_eq!(&m.view_json(req).unwrap(), kept);
        let v: serde_json::Value = serde_json::from_slice(kept).unwrap();
        let c = tracelens_compare::compare(m.db(), "duration<=p50", "duration>=p90").unwrap();
        assert_eq!((v["a"]["count"].as_u64(), v["b"]["count"].as_u64()), (Some(c.a.count as u64), Some(c.b.count as u64)));
    }

    #[test]
    fn selected_ranks_are_the_sorted_ones() {
        let mut rng = tracelens_compare::synthetic::Rng::new(7);
        for n in [1usize, 2, 5, 40, 1000] {
            let v: Vec<u64> = (0..n).map(|_| rng.below(50)).collect();
            let mut sorted = v.clone();
            sorted.sort();
            let ranks: Vec<usize> = (0..n).step_by(1 + n / 7).collect();
            let mut w = v.clone();
            select_ranks(&mut w, &ranks);
            for &r in &ranks {
                assert_eq!(w[r], sorted[r], "rank {r} of {n}");
            }
        }
    }

    #[test]
    fn bad_requests_are_messages() {
        let m = model(100);
        let err = |b: &str| m.parse(b.as_bytes()).unwrap_err().to_string();
        assert!(err("{").contains("not JSON"));
        assert!(err("[1]").contains("not a JSON object"));
        assert!(err(r#"{"a": {"nope": [1, 2]}}"#).contains("unknown metric `nope`"));
        assert!(err(r#"{"a": {"duration_ns": [3, 2]}}"#).contains("empty"));
        assert!(err(r#"{"a": {"duration_ns": "x"}}"#).contains("not [LO, HI]"));
        assert!(err(r#"{"group": "c", "metric": "duration_ns"}"#).contains("not \"a\" or \"b\""));
        assert!(err(r#"{"zz": 1}"#).contains("unknown field"));
        // Huge ranges are clamped: every execution.
        let (r, _) = m.parse(br#"{"b": {"duration_ns": [-1e300, 1e300]}}"#).unwrap();
        assert_eq!(m.select(&r.b, None).count(), 100);
    }
}
