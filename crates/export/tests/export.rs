//! Exports of fixture traces checked against their formats and against the events: the Chrome
//! file follows the trace-event format's rules (strict nesting included) and has one
//! `running` slice per interval a plain pass over the `sched_switch` events finds, and one
//! probe instant per user-space event; the Pajé file is read by pajeng's `pj_dump` without a
//! complaint, with every thread's states.

mod common;

use std::collections::BTreeMap;

use common::{check_chrome, fixture, pj_dump};
use tracelens_analysis::{Engine, Options, Timeline, TimelineReport};
use tracelens_trace::TraceSet;

fn timeline(set: &TraceSet) -> TimelineReport {
    Engine::new(set, &Options { threads: 2, chunk_size: 64 << 10 }).run(&Timeline::new(set)).expect("timeline")
}

/// Running intervals of positive length per thread, from the switches of each CPU, and the
/// number of events with a `vtid` (user-space events).
fn plain_pass(set: &TraceSet) -> (BTreeMap<i64, usize>, usize) {
    let mut on: BTreeMap<u64, (i64, i64)> = BTreeMap::new();
    let mut runs: BTreeMap<i64, usize> = BTreeMap::new();
    let (mut end, mut user) = (0, 0);
    let mut m = set.merger();
    while m.next().expect("read").is_some() {
        let Some(ev) = m.event() else { continue };
        let Some(ns) = ev.ns else { continue };
        end = end.max(ns);
        if ev.field("vtid").is_some() && ev.packet_context.get("cpu_id").is_none() {
            user += 1;
        }
        if ev.name() != "sched_switch" {
            continue;
        }
        let cpu = ev.packet_context.get("cpu_id").and_then(|f| f.as_u64()).unwrap();
        let next = ev.payload.get("next_tid").and_then(|f| f.as_i64()).unwrap();
        if let Some((tid, since)) = on.insert(cpu, (next, ns)) {
            if tid != 0 && ns > since {
                *runs.entry(tid).or_default() += 1;
            }
        }
    }
    for (tid, since) in on.into_values() {
        if tid != 0 && end > since {
            *runs.entry(tid).or_default() += 1;
        }
    }
    (runs, user)
}

fn check(rel: &str) {
    let Some(p) = fixture(rel) else { return };
    let set = TraceSet::open(&[p]).unwrap();
    let t = timeline(&set);
    let mut json = Vec::new();
    tracelens_export::write_chrome(&t, &[], &mut json).unwrap();
    let c = check_chrome(&json);
    let (runs, user) = plain_pass(&set);
    let got: BTreeMap<i64, usize> = c.complete.iter().filter_map(|((_, tid), names)| names.get("running").map(|n| (*tid, *n))).collect();
    assert_eq!(got, runs, "{rel}: running slices per thread");
    assert_eq!(c.instants.get("probe").copied().unwrap_or(0), user, "{rel}: probe instants");
    let syscalls: usize = t.threads.iter().map(|x| x.syscalls.len()).sum();
    let pieces: usize = c.complete.values().map(|n| n.iter().filter(|(k, _)| !matches!(k.as_str(), "running" | "preempted" | "waiting for CPU") && !k.starts_with("blocked")).map(|(_, v)| v).sum::<usize>()).sum();
    assert!(pieces >= syscalls, "{rel}: {pieces} system call pieces for {syscalls} calls");
    for th in &t.threads {
        assert_eq!(c.thread_names.get(&(th.pid.unwrap_or(th.tid), th.tid)), Some(&format!("{} ({})", th.name, th.tid)));
    }

    let file = std::env::temp_dir().join(format!("tracelens-export-{}-{}.paje", rel.replace('/', "_"), std::process::id()));
    tracelens_export::write_paje(&t, std::fs::File::create(&file).unwrap()).unwrap();
    let Some(lines) = pj_dump(&file) else {
        eprintln!("skipped the Pajé check: no pj_dump (Debian: pajeng)");
        return;
    };
    let _ = std::fs::remove_file(&file);
    // `State, CONTAINER, TYPE, begin, end, duration, imbrication, value` lines, counted by
    // (container, type).
    let mut dumped: BTreeMap<(String, String), usize> = BTreeMap::new();
    for l in lines.iter().filter_map(|l| l.strip_prefix("State, ")) {
        let f: Vec<&str> = l.split(", ").collect();
        *dumped.entry((f[0].to_string(), f[1].to_string())).or_default() += 1;
    }
    let end = t.end_ns.unwrap();
    let count = |name: &str, ty: &str| dumped.get(&(name.to_string(), ty.to_string())).copied().unwrap_or(0);
    for th in t.threads.iter().filter(|th| !th.states.is_empty()) {
        let name = format!("{} ({})", th.name, th.tid);
        let gaps = th.states.windows(2).filter(|w| w[0].end_ns < w[1].begin_ns).count() + usize::from(th.states.last().unwrap().end_ns < end);
        assert_eq!(count(&name, "State"), th.states.len() + gaps, "{rel}: pj_dump's states of {name}");
        assert_eq!(count(&name, "Syscall"), th.syscalls.len(), "{rel}: pj_dump's system calls of {name}");
    }
}

#[test]
fn kernel_trace_with_system_calls() {
    check("tracecompass/many-threads");
}

#[test]
fn kernel_and_user_space_session() {
    check("babeltrace-conformance/succeed/multi-domains");
}
