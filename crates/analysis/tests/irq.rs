//! `irq`: the same report for every thread count and chunk size on real kernel traces and
//! synthetic ones (handlers cut by chunk boundaries); the same handlers as a serial reading
//! with lttng-analyses' rules; and lttng-irqstats' numbers on many-threads.

mod common;

use std::collections::{BTreeMap, HashMap};

use proptest::prelude::*;
use common::*;
use tracelens_analysis::{Filter, Irq, IrqReport};
use tracelens_ctf::Item;
use tracelens_trace::TraceSet;

/// Per hard IRQ: (count, min, max, sum).
type Hard = BTreeMap<i64, (u64, i64, i64, i128)>;
/// Per soft IRQ vector: (count, min, max, sum, raises, sum of raise latencies).
type Soft = BTreeMap<u32, (u64, i64, i64, i128, u64, i128)>;
type Model = (Hard, Soft);

fn model_of(r: &IrqReport) -> Model {
    let hard = r.hard.iter().map(|h| (h.irq, (h.durations.count, h.durations.min_ns, h.durations.max_ns, h.durations.sum_ns))).collect();
    let soft = r
        .soft
        .iter()
        .map(|s| {
            let d = &s.durations;
            (s.vec, (d.count, d.min_ns, d.max_ns, d.sum_ns, s.raise_latencies.count, s.raise_latencies.sum_ns))
        })
        .collect();
    (hard, soft)
}

/// lttng-analyses' IRQ automaton (with both soft IRQ namings), read serially in time order.
fn serial_model(set: &TraceSet) -> Model {
    /// A queued soft IRQ: (raise, entry).
    type Queued = (Option<i64>, Option<i64>);
    #[derive(Default)]
    struct Cpu {
        hard: Option<(i64, i64)>,
        soft: HashMap<u64, Vec<Queued>>,
    }
    let mut cpus: HashMap<(usize, u64), Cpu> = HashMap::new();
    let mut m = set.merger();
    let (mut hard, mut soft) = (BTreeMap::new(), BTreeMap::new());
    let add = |e: &mut (u64, i64, i64, i128), d: i64| {
        if e.0 == 0 {
            e.1 = d;
            e.2 = d;
        }
        e.0 += 1;
        e.1 = e.1.min(d);
        e.2 = e.2.max(d);
        e.3 += i128::from(d);
    };
    while let Some((src, item)) = m.next().expect("trace reads") {
        if item != Item::Event {
            continue;
        }
        let ev = m.event().expect("event");
        let (Some(ns), Some(cpu)) = (ev.ns, ev.field("cpu_id").and_then(|f| f.as_u64())) else { continue };
        let name = ev.name();
        let name = name.strip_prefix("irq_").filter(|n| n.starts_with("softirq_")).unwrap_or(name);
        let int = |n: &str| ev.payload.get(n).and_then(|f| f.as_i64()).unwrap_or(-1);
        let c = cpus.entry((src.trace, cpu)).or_default();
        match name {
            "irq_handler_entry" => c.hard = Some((int("irq"), ns)),
            "irq_handler_exit" => {
                if let Some((irq, b)) = c.hard.take() {
                    if irq == int("irq") {
                        let e = hard.entry(irq).or_insert((0, 0, 0, 0));
                        add(e, ns - b);
                    }
                }
            }
            "softirq_raise" => {
                let q = c.soft.entry(int("vec") as u64).or_default();
                if q.first().is_none_or(|s| s.1.is_some()) {
                    q.push((Some(ns), None));
                }
            }
            "softirq_entry" => {
                let q = c.soft.entry(int("vec") as u64).or_default();
                match q.first_mut() {
                    Some(s) => s.1 = Some(ns),
                    None => q.push((None, Some(ns))),
                }
            }
            "softirq_exit" => {
                let vec = int("vec") as u64;
                let q = c.soft.entry(vec).or_default();
                if !q.is_empty() {
                    let (raise, begin) = q.remove(0);
                    if let Some(b) = begin {
                        let e: &mut (u64, i64, i64, i128, u64, i128) = soft.entry(vec as u32).or_insert((0, 0, 0, 0, 0, 0));
                        let mut d4 = (e.0, e.1, e.2, e.3);
                        add(&mut d4, ns - b);
                        (e.0, e.1, e.2, e.3) = d4;
                        if let Some(r) = raise {
                            e.4 += 1;
                            e.5 += i128::from(b - r);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    (hard, soft)
}

#[test]
fn fixtures_serial_equals_parallel_and_serial_reading() {
    for rel in KERNEL_FIXTURES {
        let Some(p) = fixture_path(rel) else { continue };
        let set = open(&p);
        let a = Irq::new(&set, Filter::default());
        check_serial_parallel(&set, &a, rel);
        assert_eq!(model_of(&run(&set, &a, 2, 1)), serial_model(&set), "{rel}");
    }
}

#[test]
fn synth_serial_equals_parallel_and_serial_reading() {
    for (cpus, threads, seed) in [(4, 32, 1), (2, 5, 7), (8, 64, 3)] {
        let dir = synth_small("irq", cpus, threads, 60_000, seed);
        let set = open(&dir.0);
        let a = Irq::new(&set, Filter::default());
        check_serial_parallel(&set, &a, "synth");
        let r = run(&set, &a, 8, 1);
        assert_eq!(model_of(&r), serial_model(&set));
        assert!(!r.hard.is_empty() && !r.soft.is_empty());
    }
}

#[test]
fn filters() {
    let dir = synth_small("irqf", 4, 16, 30_000, 9);
    let set = open(&dir.0);
    let all = run(&set, &Irq::new(&set, Filter::default()), 2, 4096);
    let n = |r: &IrqReport| r.hard.iter().map(|h| h.durations.count).sum::<u64>() + r.soft.iter().map(|s| s.durations.count).sum::<u64>();
    let (b, e) = (all.begin_ns.unwrap(), all.end_ns.unwrap());
    let mid = b + (e - b) / 3;
    let f1 = Filter { end_ns: Some(mid), ..Filter::default() };
    let f2 = Filter { begin_ns: Some(mid + 1), ..Filter::default() };
    let r1 = run(&set, &Irq::new(&set, f1.clone()), 2, 4096);
    let r2 = run(&set, &Irq::new(&set, f2), 2, 4096);
    assert_eq!(n(&r1) + n(&r2), n(&all));
    check_serial_parallel(&set, &Irq::new(&set, f1), "synth --end");
    let per_cpu: u64 = (0..4).map(|c| n(&run(&set, &Irq::new(&set, Filter { cpus: vec![c], ..Filter::default() }), 2, 4096))).sum();
    assert_eq!(per_cpu, n(&all));
}

/// The rows of lttng-irqstats' hard IRQ table: (irq, name, count, min, avg, max, stdev).
fn reference_hard(text: &str) -> Vec<(i64, String, u64, String, String, String, String)> {
    let mut rows = Vec::new();
    for line in text.lines() {
        let Some((nr, rest)) = line.split_once(": <") else { continue };
        let Ok(irq) = nr.trim().parse::<i64>() else { continue };
        let Some((name, rest)) = rest.split_once('>') else { continue };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() < 6 {
            continue;
        }
        rows.push((irq, name.to_string(), f[0].parse().unwrap(), f[1].into(), f[2].into(), f[3].into(), f[4].into()));
    }
    rows
}

#[test]
fn many_threads_matches_lttng_irqstats() {
    let (Some(p), Some(text)) = (fixture_path("tracecompass/many-threads"), reference("many-threads/irqstats.txt")) else { return };
    let set = open(&p);
    let r = run(&set, &Irq::new(&set, Filter::default()), 2, 1 << 20);
    let want = reference_hard(&text);
    assert_eq!(want.len(), 3, "the reference has three hard IRQ lines");
    let got: Vec<_> = r
        .hard
        .iter()
        .map(|h| {
            let d = &h.durations;
            let us = |ns: f64| format!("{:.3}", ns / 1000.0);
            (h.irq, h.name.clone(), d.count, us(d.min_ns as f64), us(d.mean_ns()), us(d.max_ns as f64), d.stdev_ns().map_or("?".into(), us))
        })
        .collect();
    assert_eq!(got, want);
    // The rows as lttng-irqstats prints them: crates/cli/tests/lttng_analyses.rs.
}

/// lttng-analyses 0.6 only knows the soft IRQ events by their pre-2.8 names (`softirq_entry`):
/// lttng-modules 2.8, which recorded many-threads, names them `irq_softirq_entry`, so
/// lttng-irqstats shows no soft IRQ at all. The trace has thousands, each raised, entered and
/// exited on one CPU; tracelens counts them.
#[test]
fn many_threads_soft_irqs_lttng_misses() {
    let (Some(p), Some(text)) = (fixture_path("tracecompass/many-threads"), reference("many-threads/irqstats.txt")) else { return };
    assert!(!text.contains("Soft IRQ"), "the reference has no soft IRQ table");
    let set = open(&p);
    let mut names: BTreeMap<String, u64> = BTreeMap::new();
    let mut m = set.merger();
    while let Some((_, item)) = m.next().unwrap() {
        if item == Item::Event {
            let n = m.event().unwrap().name().to_string();
            if n.contains("softirq") {
                *names.entry(n).or_default() += 1;
            }
        }
    }
    assert_eq!(names.get("irq_softirq_entry"), Some(&6042));
    assert_eq!(names.get("irq_softirq_exit"), Some(&6042));
    assert!(!names.contains_key("softirq_entry"), "{names:?}");
    let r = run(&set, &Irq::new(&set, Filter::default()), 2, 1 << 20);
    let counted: u64 = r.soft.iter().map(|s| s.durations.count).sum();
    assert!(counted > 6000 && counted <= 6042, "{counted}");
    assert_eq!(model_of(&r).1, serial_model(&set).1);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn synth_any_cut(seed in 1u64..10_000, cpus in 1u32..6, threads in 1u32..24, chunk in prop::sample::select(vec![1u64, 4096, 9000, 40_000, u64::MAX]), j in 1usize..6) {
        let dir = synth_small("irqp", cpus, threads, 8_000, seed);
        let set = open(&dir.0);
        let a = Irq::new(&set, Filter::default());
        let serial = run(&set, &a, 1, u64::MAX);
        prop_assert_eq!(&run(&set, &a, j, chunk), &serial);
        prop_assert_eq!(model_of(&serial), serial_model(&set));
    }
}
