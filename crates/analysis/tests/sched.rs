//! `sched` against lttng-schedstats / lttng-schedtop (lttng-analyses 0.6.1) on
//! tracecompass/many-threads, and the cases where they differ proved from the events.
//!
//! The reference files are read at test time from `shared/reference/lttng-analyses` beside the
//! repository; the tests skip (with a message) when they are missing, except under CI.

mod common;

use std::collections::BTreeMap;

use common::{fixture, reference};
use serde_json::Value;
use tracelens_analysis::{Engine, Filter, Options, Sched, SchedReport};
use tracelens_trace::TraceSet;

fn run(set: &TraceSet, top: usize) -> SchedReport {
    Engine::new(set, &Options { threads: 1, chunk_size: u64::MAX }).run(&Sched::new(set, Filter::default(), top)).expect("sched")
}

/// A per-TID row of schedstats-mi.json.
#[derive(Debug)]
struct MiRow {
    name: String,
    count: u64,
    min: i64,
    avg: f64,
    max: i64,
    stdev: Option<f64>,
    prios: String,
}

fn schedstats_mi() -> Option<(i64, i64, BTreeMap<i64, MiRow>)> {
    let text = reference("many-threads/schedstats-mi.json")?;
    let v: Value = serde_json::from_str(&text).expect("schedstats-mi.json");
    let table = v["results"].as_array().unwrap().iter().find(|r| r["class"] == "per_tid_stats").expect("per_tid_stats");
    let tr = &table["time-range"];
    let mut rows = BTreeMap::new();
    for row in table["data"].as_array().unwrap() {
        let tid = row[0]["tid"].as_i64().unwrap();
        let r = MiRow {
            name: row[0]["name"].as_str().unwrap().to_string(),
            count: row[1]["value"].as_u64().unwrap(),
            min: row[2]["value"].as_i64().unwrap(),
            avg: row[3]["value"].as_f64().unwrap(),
            max: row[4]["value"].as_i64().unwrap(),
            stdev: row[5]["value"].as_f64(),
            prios: row[6]["value"].as_str().unwrap().to_string(),
        };
        assert!(rows.insert(tid, r).is_none(), "tid {tid} twice");
    }
    Some((tr["begin"]["value"].as_i64().unwrap(), tr["end"]["value"].as_i64().unwrap(), rows))
}

/// A row of schedtop.txt: wake-up and switch times of day (ns into the day), latency (us,
/// 3 decimals), priority, CPU, wakee (name, tid), waker (name, tid) or None.
#[derive(Debug)]
struct TopRow {
    wakeup: i64,
    switch: i64,
    latency: String,
    prio: i64,
    cpu: u32,
    wakee: (String, i64),
    waker: Option<(String, i64)>,
}

fn tod(s: &str) -> i64 {
    let (hms, frac) = s.split_once('.').unwrap();
    let p: Vec<i64> = hms.split(':').map(|x| x.parse().unwrap()).collect();
    (p[0] * 3600 + p[1] * 60 + p[2]) * 1_000_000_000 + frac.parse::<i64>().unwrap()
}

fn proc(s: &str) -> Option<(String, i64)> {
    let s = s.trim();
    let (name, rest) = s.rsplit_once(" (")?;
    let tid = rest.strip_suffix(')')?.parse().ok()?;
    Some((name.to_string(), tid))
}

fn schedtop() -> Option<Vec<TopRow>> {
    let text = reference("many-threads/schedtop.txt")?;
    let mut rows = Vec::new();
    for line in text.lines().filter(|l| l.starts_with('[')) {
        let (times, rest) = line[1..].split_once(']').unwrap();
        let (w, s) = times.split_once(", ").unwrap();
        // ' {:>15} {:>10}  {:>3}   ' then '{:<25}  {:<25}' (wakee, waker; names may be longer).
        let f: Vec<&str> = rest[..35].split_whitespace().collect();
        let cols = &rest[35..];
        let (wakee, waker) = cols.split_at(cols.find(')').expect("wakee") + 1);
        rows.push(TopRow {
            wakeup: tod(w.trim()),
            switch: tod(s.trim()),
            latency: f[0].to_string(),
            prio: f[1].parse().unwrap(),
            cpu: f[2].parse().unwrap(),
            wakee: proc(wakee).expect("wakee"),
            waker: proc(waker),
        });
    }
    Some(rows)
}

fn day_ns(ns: i64) -> i64 {
    ns.rem_euclid(86_400 * 1_000_000_000)
}

fn us3(ns: f64) -> String {
    format!("{:.3}", ns / 1000.0)
}

#[test]
fn many_threads_per_tid_matches_schedstats_mi() {
    let (Some(set), Some((begin, end, rows))) = (fixture("tracecompass/many-threads"), schedstats_mi()) else { return };
    let r = run(&set, 10);
    assert_eq!((r.begin_ns, r.end_ns), (Some(begin), Some(end)));
    let ours: BTreeMap<i64, _> = r.threads.iter().map(|t| (t.tid, t)).collect();
    let mut diffs = Vec::new();
    for (tid, l) in &rows {
        let Some(t) = ours.get(tid) else {
            diffs.push(format!("{tid} {}: missing", l.name));
            continue;
        };
        let s = &t.stats;
        let prios = format!("[{}]", t.priorities.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", "));
        let same = t.name == l.name
            && s.count == l.count
            && s.min_ns == l.min
            && s.max_ns == l.max
            && (s.mean_ns() - l.avg).abs() < 1e-6
            && match (s.stdev_ns(), l.stdev) {
                (None, None) => true,
                (Some(a), Some(b)) => (a - b).abs() < 1e-6,
                _ => false,
            }
            && prios == l.prios;
        if !same {
            diffs.push(format!("{tid}: lttng {l:?}\n      ours {} {s:?} {prios}", t.name));
        }
    }
    for t in &r.threads {
        if !rows.contains_key(&t.tid) {
            diffs.push(format!("{} {}: not in lttng", t.tid, t.name));
        }
    }
    assert!(diffs.is_empty(), "{} differences:\n{}", diffs.len(), diffs.join("\n"));
}

#[test]
fn many_threads_top_matches_schedtop() {
    let (Some(set), Some(rows)) = (fixture("tracecompass/many-threads"), schedtop()) else { return };
    let r = run(&set, rows.len());
    assert_eq!(r.top.len(), rows.len());
    let mut renamed = 0;
    for (i, (l, o)) in rows.iter().zip(&r.top).enumerate() {
        assert_eq!(day_ns(o.wakeup_ns), l.wakeup, "row {i}");
        assert_eq!(day_ns(o.switch_ns), l.switch, "row {i}");
        assert_eq!(us3(o.latency_ns as f64), l.latency, "row {i}");
        assert_eq!(o.prio, l.prio, "row {i}");
        assert_eq!(o.cpu, l.cpu, "row {i}");
        assert_eq!((o.name.clone(), o.tid), l.wakee, "row {i}");
        let waker = o.waker_tid.map(|t| (o.waker_name.clone().unwrap_or_default(), t));
        match (&waker, &l.waker) {
            (Some((ours, t)), Some((theirs, u))) if t == u && ours != theirs => {
                // lttng-analyses only renames a thread when it is switched in (or forks): a
                // thread that renamed itself while running (prctl) and was not switched in
                // again keeps its old name there. Its last sched_switch out shows the new one.
                let (last_in, last_out) = last_comms(&set, *t);
                assert_eq!(&last_in, theirs, "row {i}: lttng's name is the one of the last switch-in");
                assert_eq!(&last_out, ours, "row {i}: ours is the one of the last switch-out, after it");
                renamed += 1;
            }
            _ => assert_eq!(waker, l.waker, "row {i}"),
        }
    }
    assert_eq!(renamed, 3, "three wakers renamed themselves");
}

/// The `next_comm` of the last switch-in of `tid`, and the `prev_comm` of its last switch-out
/// (checked to come after it), from a plain serial read.
fn last_comms(set: &TraceSet, tid: i64) -> (String, String) {
    let mut m = set.merger();
    let (mut last_in, mut last_out) = ((0, String::new()), (0, String::new()));
    while m.next().expect("read").is_some() {
        let Some(ev) = m.event() else { continue };
        if ev.name() != "sched_switch" {
            continue;
        }
        let get = |n: &str| ev.payload.get(n).unwrap();
        let ns = ev.ns.unwrap();
        if get("next_tid").as_i64() == Some(tid) {
            last_in = (ns, get("next_comm").as_str().unwrap().into_owned());
        }
        if get("prev_tid").as_i64() == Some(tid) {
            last_out = (ns, get("prev_comm").as_str().unwrap().into_owned());
        }
    }
    assert!(last_out.0 > last_in.0, "switched out after its last switch-in");
    (last_in.1, last_out.1)
}

// ---------------------------------------------------------------------------------------------
// Serial == parallel.
// ---------------------------------------------------------------------------------------------

use common::{assert_cut_independent, synth, synth_options, KERNEL_FIXTURES};

fn run_with(set: &TraceSet, filter: Filter, top: usize, threads: usize, chunk_size: u64) -> SchedReport {
    Engine::new(set, &Options { threads, chunk_size }).run(&Sched::new(set, filter, top)).expect("sched")
}

fn check_set(name: &str, set: &TraceSet) {
    let all = run_with(set, Filter::default(), 1000, 1, u64::MAX);
    let mut filters = vec![Filter::default()];
    if let (Some(b), Some(e)) = (all.begin_ns, all.end_ns) {
        let third = (e - b) / 3;
        filters.push(Filter { begin_ns: Some(b + third), end_ns: Some(e - third), ..Filter::default() });
    }
    if let Some(l) = all.top.first() {
        filters.push(Filter { cpus: vec![l.cpu], ..Filter::default() });
        filters.push(Filter { tids: vec![l.tid], ..Filter::default() });
        filters.push(Filter { procnames: vec![l.name.clone()], ..Filter::default() });
    }
    for f in filters {
        let r = assert_cut_independent(&format!("sched {name} {f:?}"), |j, cs| run_with(set, f.clone(), 1000, j, cs));
        assert_eq!(serde_json::to_string(&r).unwrap(), serde_json::to_string(&run_with(set, f.clone(), 1000, 8, 1)).unwrap());
    }
}

#[test]
fn fixtures_give_the_same_report_for_any_threads_and_chunk_size() {
    for rel in KERNEL_FIXTURES {
        let Some(set) = fixture(rel) else { continue };
        check_set(rel, &set);
    }
}

#[test]
fn synth_traces_give_the_same_report_for_any_threads_and_chunk_size() {
    for (i, o) in synth_options().iter().enumerate() {
        let (_dir, set) = synth(&format!("sched{i}"), o);
        let r = run_with(&set, Filter::default(), 10, 1, u64::MAX);
        if o.threads > 1 {
            assert!(r.total.count > 100, "{o:?}: {} latencies", r.total.count);
        }
        check_set(&format!("synth {o:?}"), &set);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 12, ..Default::default() })]

    /// Random synthetic traces, random chunk sizes and worker counts: the serial report.
    #[test]
    fn random_synth_traces_and_cuts((o, chunk, j) in common::synth_strategy()) {
        let (_dir, set) = synth("schedprop", &o);
        let serial = run_with(&set, Filter::default(), 20, 1, u64::MAX);
        proptest::prop_assert_eq!(&serial, &run_with(&set, Filter::default(), 20, j, chunk));
        proptest::prop_assert_eq!(&serial, &run_with(&set, Filter::default(), 20, j, 1));
    }
}
