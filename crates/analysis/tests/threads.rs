//! `threads`: the same report for any number of workers and any chunk size (down to one packet)
//! on real kernel fixtures and synthetic traces, and the same numbers as a plain serial pass
//! over the events written here from the raw field names (nothing shared with the library but
//! the reader).

mod common;

use std::collections::BTreeMap;

use common::{assert_cut_independent, fixture, synth, synth_options, write_kernel_trace, TempDir, K, KERNEL_FIXTURES, V};
use tracelens_analysis::{packets_back, Engine, Filter, Options, Threads, ThreadsReport, DEFAULT_CHUNK_SIZE};
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

/// A recording-like trace (every event names its thread) whose kernel left context switches
/// out: a thread's own events on a CPU show where it runs, the stretch the trace cannot tell
/// is `unknown_ns`, and the report is the same for any cut (one packet per chunk included).
#[test]
fn own_events_stand_for_missing_switches() {
    use tracelens_ctf::lttng::events::{SCHED_SWITCH, SCHED_WAKING};
    use tracelens_ctf::lttng::{EventDef, I64};
    const ENTRY: EventDef = EventDef { name: "syscall_entry_getpid", fields: &[] };
    const EXIT: EventDef = EventDef { name: "syscall_exit_getpid", fields: &[("ret", I64)] };
    let sw = |cpu, ns, prev: i64, state: i64, next: i64| K::Ev {
        cpu,
        ns,
        tid: prev as i32,
        def: &SCHED_SWITCH,
        values: Box::leak(Box::new([V::S("p"), V::I(prev), V::I(20), V::I(state), V::S("n"), V::I(next), V::I(20)])),
    };
    let wake = |cpu, ns, by: i32, tid: i64| K::Ev { cpu, ns, tid: by, def: &SCHED_WAKING, values: Box::leak(Box::new([V::S("w"), V::I(tid), V::I(20), V::I(cpu as i64)])) };
    let entry = |cpu, ns, tid| K::Ev { cpu, ns, tid, def: &ENTRY, values: &[] };
    let exit = |cpu, ns, tid| K::Ev { cpu, ns, tid, def: &EXIT, values: &[V::I(0)] };
    let events = [
        // Thread 10 runs on CPU 0, sleeps, is woken on CPU 1 by an interrupt of its idle
        // thread at 1500; its switch in there is not recorded; its events from 1520.
        sw(0, 1000, 0, 0, 10),
        entry(0, 1100, 10),
        exit(0, 1110, 10),
        sw(0, 1200, 10, 1, 0),
        entry(1, 1400, 0),
        wake(1, 1500, 0, 10),
        exit(1, 1520, 10),
        K::Packet { cpu: 1 },
        entry(1, 1600, 10),
        sw(1, 1700, 10, 1, 0),
        // Thread 30 runs on CPU 0 (last event there at 3020), then has events on CPU 1 from
        // 3500 without any switch recorded; switched out there at 3600.
        sw(0, 3000, 0, 0, 30),
        entry(0, 3010, 30),
        exit(0, 3020, 30),
        K::Packet { cpu: 0 },
        exit(1, 3500, 30),
        entry(1, 3550, 30),
        sw(1, 3600, 30, 1, 0),
        // Thread 40, woken at 4000, is switched out of CPU 1 at 4200 without a switch in; the
        // CPU's previous event at 4100, in its idle task (switched to at 3600, same packet).
        wake(0, 4000, 0, 40),
        entry(1, 4100, 0),
        sw(1, 4200, 40, 1, 0),
        exit(0, 5000, 0),
    ];
    let dir = TempDir::new("threads-missed");
    write_kernel_trace(&dir.0, 2, true, &events);
    let set = TraceSet::open(&[&dir.0]).expect("open");
    let r = assert_cut_independent("missed switches", |j, cs| run(&set, j, cs));
    let t = |tid| r.threads.iter().find(|t| t.tid == tid).unwrap();
    let times = |tid| {
        let t = t(tid);
        (t.running_ns, t.waiting_cpu_ns, t.blocked_ns, t.unknown_ns, t.switches_in, t.migrations)
    };
    // 10: running 1000-1200 and 1520-1700, blocked 1200-1500 and 1700-5000, unknown 1500-1520.
    assert_eq!(times(10), (200 + 180, 0, 300 + 3300, 20, 2, 1));
    assert_eq!(t(10).cpus.iter().map(|c| (c.cpu, c.running_ns)).collect::<Vec<_>>(), vec![(0, 200), (1, 180)]);
    // 30: running 3000-3020 on CPU 0 and 3500-3600 on CPU 1, unknown between, then blocked.
    assert_eq!(times(30), (20 + 100, 0, 1400, 480, 2, 1));
    // 40: waiting 4000-4100, then running: the idle CPU took it at once (after its event at
    // 4100), one switch in; blocked from 4200.
    assert_eq!(times(40), (100, 100, 800, 0, 1, 0));
    // The same woken thread on a CPU that was not idle: when it was switched in is not known.
    let mut busy = events;
    busy[busy.len() - 3] = entry(1, 4100, 30);
    let dir = TempDir::new("threads-missed-busy");
    write_kernel_trace(&dir.0, 2, true, &busy);
    let set = TraceSet::open(&[&dir.0]).expect("open");
    let r = assert_cut_independent("missed switches, busy CPU", |j, cs| run(&set, j, cs));
    let t = r.threads.iter().find(|t| t.tid == 40).unwrap();
    assert_eq!((t.running_ns, t.waiting_cpu_ns, t.blocked_ns, t.unknown_ns, t.switches_in), (0, 100, 800, 100, 0));
}

/// A stream's last packet whose beginning time is damaged (moved back before the packet
/// before it, so that its events' times go back by more than a packet): no panic (the replay
/// panicked on a thread state that began after the step ending it), the same report for any
/// number of threads, and no state interval counted backwards.
#[test]
fn a_packet_whose_times_go_backwards_reads_the_same_for_any_threads() {
    let dir = common::synth_dir("threads-back", &tracelens_synth::Options { cpus: 8, threads: 64, events: 400_000, seed: 5, packet_size: 256 << 10 });
    // Without the index, the packets' times come from their headers.
    std::fs::remove_dir_all(dir.0.join("index")).unwrap();
    let path = dir.0.join("channel0_1");
    assert_eq!(packets_back(&TraceSet::open(&[&dir.0]).unwrap()), [], "the undamaged trace's packets go back in time");
    let mut bytes = std::fs::read(&path).unwrap();
    let field = |b: &[u8], packet: usize, at: usize| u64::from_le_bytes(b[packet * (256 << 10) + at..][..8].try_into().unwrap());
    // The packet context's timestamp_begin and timestamp_end (after a 32-byte header).
    let (begin, end) = (32, 40);
    let last = bytes.len() / (256 << 10) - 1;
    let (b, e) = (field(&bytes, last - 1, begin), field(&bytes, last - 1, end));
    let moved = b - (e - b) * 5 / 4;
    bytes[last * (256 << 10) + begin..][..8].copy_from_slice(&moved.to_le_bytes());
    std::fs::write(&path, bytes).unwrap();
    let set = TraceSet::open(&[&dir.0]).unwrap();
    // The damaged packet is found (what the analyses warn about).
    let back = packets_back(&set);
    assert_eq!(back.iter().map(|b| (b.path.clone(), b.packet, b.offset, b.count)).collect::<Vec<_>>(), [(path, last, (last * (256 << 10)) as u64, 1)]);
    // Records earlier than their chunk's beginning come after the replay went past them: how
    // far it went depends on the cut, not on the number of threads.
    for cs in [1, 4096, 100_000, DEFAULT_CHUNK_SIZE, u64::MAX] {
        let serial = run(&set, 1, cs);
        assert!(serial.threads.iter().any(|t| t.running_ns > 0));
        for t in &serial.threads {
            assert!(t.running_ns >= 0 && t.preempted_ns >= 0 && t.waiting_cpu_ns >= 0 && t.blocked_ns >= 0, "--chunk-size {cs}: thread {}: a negative time", t.tid);
        }
        for j in [2, 8] {
            assert!(run(&set, j, cs) == serial, "--chunk-size {cs}: -j {j} differs from -j 1");
        }
    }
}

/// A packet whose header says it begins earlier than its index entry does (the header's
/// beginning damaged): the chunks are cut at the index's times, so the packet's events come
/// before the beginning of their chunk, which the engine reports with the packet; nothing on
/// the undamaged trace.
#[test]
fn an_event_before_its_chunk_is_reported() {
    let dir = common::synth_dir("threads-reach", &tracelens_synth::Options { cpus: 4, threads: 16, events: 100_000, seed: 2, packet_size: 64 << 10 });
    let reached = |cs: u64| {
        let set = TraceSet::open(&[&dir.0]).unwrap();
        let engine = Engine::new(&set, &Options { threads: 2, chunk_size: cs });
        engine.run(&Threads::new(&set, Filter::default())).expect("threads");
        engine.reached_back()
    };
    assert_eq!(reached(1), None);
    let path = dir.0.join("channel0_2");
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() / (64 << 10) - 1;
    // The packet context's timestamp_begin (after a 32-byte header), set to the first packet's.
    let first: [u8; 8] = bytes[32..40].try_into().unwrap();
    bytes[last * (64 << 10) + 32..][..8].copy_from_slice(&first);
    std::fs::write(&path, bytes).unwrap();
    let back = reached(1).expect("an event before its chunk's beginning");
    assert_eq!((back.path.clone(), back.packet), (path, last));
    assert!(back.ns < back.chunk_begin_ns, "{back:?}");
}
