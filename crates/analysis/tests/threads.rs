//! `threads`: the same report for any number of workers and any chunk size (down to one packet)
//! on real kernel fixtures and synthetic traces, and the same numbers as a plain serial pass
//! over the events written here from the raw field names (nothing shared with the library but
//! the reader).

mod common;

use std::collections::BTreeMap;

use common::{assert_cut_independent, fixture, synth, synth_options, KERNEL_FIXTURES};
use tracelens_analysis::{Engine, Filter, Options, Threads, ThreadsReport};
use tracelens_trace::TraceSet;

fn run(set: &TraceSet, threads: usize, chunk_size: u64) -> ThreadsReport {
    Engine::new(set, &Options { threads, chunk_size }).run(&Threads::new(set, Filter::default())).expect("threads")
}

/// Per thread: running, preempted, waiting for a CPU, blocked (by state bit), migrations,
/// switches in, exited.
type Numbers = (i64, i64, i64, BTreeMap<u32, i64>, u64, u64, bool);

/// The serial pass: a state per thread, changed by its switches, wake-ups and exit in the
/// merged time order; time counted from a thread's first such event to the next, the last
/// state until the last kernel event.
fn serial(set: &TraceSet) -> BTreeMap<i64, Numbers> {
    #[derive(Default)]
    struct T {
        // 0 unknown, 1 running, 2 preempted, 3 waiting, 4 blocked, 5 dead
        st: u8,
        since: i64,
        bit: u32,
        cpu: Option<u64>,
        exiting: bool,
        n: (i64, i64, i64, BTreeMap<u32, i64>, u64, u64, bool),
    }
    fn close(t: &mut T, ns: i64) {
        let d = ns - t.since;
        match t.st {
            1 => t.n.0 += d,
            2 => t.n.1 += d,
            3 => t.n.2 += d,
            4 => *t.n.3.entry(t.bit).or_default() += d,
            _ => {}
        }
        t.since = ns;
    }
    let mut threads: BTreeMap<i64, T> = BTreeMap::new();
    let mut end = 0;
    let mut m = set.merger();
    while m.next().expect("read").is_some() {
        let Some(ev) = m.event() else { continue };
        let Some(ns) = ev.ns else { continue };
        if ev.packet_context.get("cpu_id").is_none() {
            continue;
        }
        end = ns;
        let int = |n: &str| ev.payload.get(n).and_then(|f| f.as_i64()).unwrap_or(0);
        match ev.name() {
            "sched_switch" => {
                let cpu = ev.packet_context.get("cpu_id").and_then(|f| f.as_u64()).unwrap();
                let (prev, state, next) = (int("prev_tid"), int("prev_state"), int("next_tid"));
                if prev != 0 {
                    let t = threads.entry(prev).or_default();
                    close(t, ns);
                    let bits = state & 0xff;
                    // The lowest state bit names the state: 0x10 dead, 0x20 zombie.
                    let dead = bits != 0 && matches!(bits.trailing_zeros(), 4 | 5);
                    if t.exiting || dead {
                        t.st = 5;
                        t.exiting = false;
                        t.n.6 = true;
                    } else if bits == 0 {
                        t.st = 2;
                    } else {
                        t.st = 4;
                        t.bit = bits.trailing_zeros();
                    }
                }
                if next != 0 {
                    let t = threads.entry(next).or_default();
                    close(t, ns);
                    t.st = 1;
                    t.n.5 += 1;
                    if t.cpu.is_some_and(|c| c != cpu) {
                        t.n.4 += 1;
                    }
                    t.cpu = Some(cpu);
                    t.n.6 = false;
                }
            }
            "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => {
                let tid = int("tid");
                if tid != 0 {
                    let t = threads.entry(tid).or_default();
                    if matches!(t.st, 0 | 4 | 5) {
                        close(t, ns);
                        t.st = 3;
                        t.n.6 = false;
                    }
                }
            }
            "sched_process_exit" => {
                let tid = int("tid");
                if tid != 0 {
                    threads.entry(tid).or_default().exiting = true;
                }
            }
            _ => {}
        }
    }
    threads
        .into_iter()
        .map(|(tid, mut t)| {
            close(&mut t, end);
            (tid, t.n)
        })
        .collect()
}

fn numbers(r: &ThreadsReport) -> BTreeMap<i64, Numbers> {
    let bit = |s: &str| "SDTtXZPI".find(s).unwrap() as u32;
    r.threads
        .iter()
        .map(|t| {
            let blocked = t.blocked.iter().map(|b| (bit(&b.state), b.ns)).collect();
            (t.tid, (t.running_ns, t.preempted_ns, t.waiting_cpu_ns, blocked, t.migrations, t.switches_in, t.exited))
        })
        .collect()
}

/// Checks `set`; returns how many threads ran.
fn check(set: &TraceSet, what: &str) -> usize {
    let report = assert_cut_independent(what, |j, cs| run(set, j, cs));
    let mut want = serial(set);
    // Threads the serial pass only met in a wake-up it ignored, with nothing counted.
    let got = numbers(&report);
    want.retain(|tid, _| got.contains_key(tid));
    for (tid, n) in &want {
        let g = &got[tid];
        let mut w = n.clone();
        w.3.retain(|_, ns| *ns > 0);
        assert_eq!(g, &w, "{what}: thread {tid}");
    }
    // Every thread's counted time fits in the trace.
    let (Some(b), Some(e)) = (report.begin_ns, report.end_ns) else { return 0 };
    for t in &report.threads {
        assert!(t.running_ns + t.preempted_ns + t.waiting_cpu_ns + t.blocked_ns <= e - b, "{what}: thread {} over the trace's span", t.tid);
        assert_eq!(t.cpus.iter().map(|c| c.running_ns).sum::<i64>(), t.running_ns);
    }
    report.threads.iter().filter(|t| t.running_ns > 0).count()
}

#[test]
fn kernel_fixtures_serial_equals_parallel_and_the_serial_pass() {
    let mut ran = 0;
    for rel in KERNEL_FIXTURES {
        let Some(set) = fixture(rel) else { continue };
        ran += check(&set, rel);
    }
    assert!(ran > 100 || fixture(KERNEL_FIXTURES[0]).is_none(), "only {ran} threads ran in the fixtures");
}

#[test]
fn synth_traces_serial_equals_parallel_and_the_serial_pass() {
    for (i, o) in synth_options().into_iter().enumerate() {
        let (_dir, set) = synth(&format!("threads-{i}"), &o);
        assert!(check(&set, &format!("synth {i}")) > 0, "synth {i}: no thread ran");
    }
}
