//! `io`: the same report for every thread count and chunk size on real kernel traces and on
//! synthetic ones (calls spanning chunks and CPUs); bytes and call counts equal to a serial
//! reading of the events. (lttng-iousagetop, lttng-iolatencystats and lttng-iolatencytop's
//! tables on many-threads: `crates/cli/tests/lttng_analyses.rs`.)

mod common;

use std::collections::{BTreeMap, HashMap};

use proptest::prelude::*;
use common::*;
use tracelens_analysis::{Filter, Io, IoReport};
use tracelens_ctf::Item;
use tracelens_trace::TraceSet;

fn io(set: &TraceSet, top: usize) -> Io {
    Io::new(set, Filter::default(), top)
}

#[test]
fn fixtures_serial_equals_parallel() {
    for rel in KERNEL_FIXTURES {
        let Some(p) = fixture_path(rel) else { continue };
        let set = open(&p);
        check_serial_parallel(&set, &io(&set, 10), rel);
    }
}

/// Per thread: (bytes read, bytes written, open calls, read calls, write calls, sync calls),
/// from a serial reading with lttng-analyses' pairing (the thread of a CPU is its last
/// switched-in thread; an exit ends the thread's pending entry). Every successful read or
/// write counts its return value: a descriptor never seen opened becomes an unknown file.
fn serial_model(set: &TraceSet) -> BTreeMap<i64, [u64; 6]> {
    let mut m = set.merger();
    let mut cur: HashMap<(usize, u64), i64> = HashMap::new();
    let mut pending: HashMap<i64, (String, i64)> = HashMap::new();
    let mut out: BTreeMap<i64, [u64; 6]> = BTreeMap::new();
    while let Some((src, item)) = m.next().expect("trace reads") {
        if item != Item::Event {
            continue;
        }
        let ev = m.event().expect("event");
        let Some(cpu) = ev.field("cpu_id").and_then(|f| f.as_u64()) else { continue };
        let name = ev.name();
        let int = |n: &str| ev.payload.get(n).and_then(|f| f.as_i64());
        if name == "sched_switch" {
            match int("next_tid").expect("next_tid") {
                0 => cur.remove(&(src.trace, cpu)),
                t => cur.insert((src.trace, cpu), t),
            };
            continue;
        }
        let Some(&tid) = cur.get(&(src.trace, cpu)) else { continue };
        if let Some(call) = name.strip_prefix("syscall_entry_").or_else(|| name.strip_prefix("sys_")) {
            // `fcntl` opens a descriptor only with F_DUPFD.
            let call = if call == "fcntl" && int("cmd") != Some(0) { "fcntl-other" } else { call };
            pending.insert(tid, (call.to_string(), 0));
        } else if name.starts_with("syscall_exit_") || name == "exit_syscall" {
            let Some((call, _)) = pending.remove(&tid) else { continue };
            let ret = int("ret").unwrap_or(-1);
            let e = out.entry(tid).or_default();
            match call.as_str() {
                "open" | "openat" | "socket" | "dup" | "dup2" | "dup3" | "fcntl" => e[2] += 1,
                "read" | "recvmsg" | "recvfrom" | "readv" | "pread64" | "preadv" => {
                    e[3] += 1;
                    e[0] += ret.max(0) as u64;
                }
                "write" | "sendmsg" | "sendto" | "writev" | "pwrite64" | "pwritev" => {
                    e[4] += 1;
                    e[1] += ret.max(0) as u64;
                }
                "sync" | "fsync" | "fdatasync" | "sync_file_range" => e[5] += 1,
                _ => {}
            }
        }
    }
    out.retain(|_, v| v.iter().any(|&x| x > 0));
    out
}

/// Bytes per thread and call counts of a report, as `serial_model` gives them (counts per
/// category: the report's latency counts).
fn totals(r: &IoReport) -> (BTreeMap<i64, [u64; 2]>, [u64; 4]) {
    let bytes = r.processes.iter().map(|p| (p.tid, [p.total().read, p.total().write])).filter(|(_, v)| v[0] + v[1] > 0).collect();
    (bytes, [r.latency[0].count, r.latency[1].count, r.latency[2].count, r.latency[3].count])
}

fn model_totals(m: &BTreeMap<i64, [u64; 6]>) -> (BTreeMap<i64, [u64; 2]>, [u64; 4]) {
    let bytes = m.iter().map(|(t, v)| (*t, [v[0], v[1]])).filter(|(_, v)| v[0] + v[1] > 0).collect();
    let mut n = [0; 4];
    for v in m.values() {
        for i in 0..4 {
            n[i] += v[2 + i];
        }
    }
    (bytes, n)
}

#[test]
fn synth_serial_equals_parallel_and_serial_reading() {
    for (cpus, threads, seed) in [(4, 32, 1), (2, 5, 7), (8, 64, 3)] {
        let dir = synth_small("io", cpus, threads, 60_000, seed);
        let set = open(&dir.0);
        let a = io(&set, 10);
        check_serial_parallel(&set, &a, "synth");
        let r = run(&set, &a, 8, 1);
        assert_eq!(totals(&r), model_totals(&serial_model(&set)), "synth {cpus} cpus {threads} threads seed {seed}");
        assert!(r.latency[1].count > 100 && !r.files.is_empty());
        // Synthetic files: the state dump's terminals and the opened /etc/hosts.
        assert!(r.files.iter().any(|f| f.path == "/etc/hosts"), "{:?}", r.files);
    }
}

#[test]
fn filters() {
    let dir = synth_small("iof", 4, 16, 30_000, 11);
    let set = open(&dir.0);
    let all = run(&set, &io(&set, 10), 2, 4096);
    let t = all.processes[0].tid;
    let one = run(&set, &Io::new(&set, Filter { tids: vec![t], ..Filter::default() }, 10), 2, 4096);
    assert_eq!(one.processes.len(), 1);
    assert_eq!(one.processes[0], all.processes[0]);
    let (b, e) = (all.begin_ns.unwrap(), all.end_ns.unwrap());
    let f = Filter { begin_ns: Some(b + (e - b) / 2), ..Filter::default() };
    check_serial_parallel(&set, &Io::new(&set, f, 10), "synth --begin");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn synth_any_cut(seed in 1u64..10_000, cpus in 1u32..6, threads in 1u32..24, chunk in prop::sample::select(vec![1u64, 4096, 9000, 40_000, u64::MAX]), j in 1usize..6) {
        let dir = synth_small("iop", cpus, threads, 8_000, seed);
        let set = open(&dir.0);
        let a = io(&set, 5);
        let serial = run(&set, &a, 1, u64::MAX);
        prop_assert_eq!(&run(&set, &a, j, chunk), &serial);
        prop_assert_eq!(totals(&serial), model_totals(&serial_model(&set)));
    }
}

/// Network usage per thread without `tid` contexts (LTTng's default): a packet is the thread's
/// the CPU last switched in, unless sent from an interrupt (the depth of interrupt handlers
/// and soft IRQs since the last switch or system call), or before the CPU's first switch.
/// Packets at the start of packets, inside interrupts that began in an earlier packet, resolve
/// the same for any cut (one packet per chunk included).
#[test]
fn network_sent_per_thread_across_cuts() {
    use tracelens_ctf::lttng::events::{IRQ_HANDLER_ENTRY, IRQ_HANDLER_EXIT, IRQ_SOFTIRQ_ENTRY, IRQ_SOFTIRQ_EXIT, NETIF_RECEIVE_SKB, SCHED_SWITCH};
    use tracelens_ctf::lttng::{EventDef, Ty, HEX64, I32, I64, U32};
    const XMIT: EventDef = EventDef { name: "net_dev_xmit", fields: &[("skbaddr", HEX64), ("rc", I32), ("len", U32), ("name", Ty::Str)] };
    const GETPID: EventDef = EventDef { name: "syscall_entry_getpid", fields: &[] };
    const GETPID_EXIT: EventDef = EventDef { name: "syscall_exit_getpid", fields: &[("ret", I64)] };
    fn ev<'a>(ns: u64, def: &'a EventDef, values: &'a [V<'a>]) -> K<'a> {
        K::Ev { cpu: 0, ns, tid: 0, def, values }
    }
    let sw = |ns, prev: i64, next: i64| ev(ns, &SCHED_SWITCH, Box::leak(Box::new([V::S("p"), V::I(prev), V::I(20), V::I(1), V::S("n"), V::I(next), V::I(20)])));
    let xmit = |ns, len: i64, dev: &'static str| ev(ns, &XMIT, Box::leak(Box::new([V::I(0), V::I(0), V::I(len), V::S(dev)])));
    let recv = |ns, len: i64| ev(ns, &NETIF_RECEIVE_SKB, Box::leak(Box::new([V::I(0), V::I(len), V::S("eth0")])));
    let irq = |ns, entry: bool| ev(ns, if entry { &IRQ_HANDLER_ENTRY } else { &IRQ_HANDLER_EXIT }, Box::leak(Box::new([V::I(30), if entry { V::S("eth0") } else { V::I(1) }])));
    let soft = |ns, entry: bool| ev(ns, if entry { &IRQ_SOFTIRQ_ENTRY } else { &IRQ_SOFTIRQ_EXIT }, &[V::I(3)]);
    let events = [
        xmit(100, 1, "eth0"), // before the CPU's first switch: not known
        sw(200, 0, 10),
        xmit(210, 2, "eth0"), // 10
        K::Packet { cpu: 0 },
        irq(300, true),
        xmit(310, 4, "eth0"), // in the interrupt
        irq(320, false),
        xmit(330, 8, "lo"), // 10 again (known from the earlier packet's end)
        soft(400, true),
        recv(405, 1000),
        K::Packet { cpu: 0 },
        xmit(410, 16, "eth0"), // in the soft IRQ entered in the earlier packet
        irq(415, true),
        xmit(416, 32, "eth0"), // a hard IRQ in the soft IRQ
        irq(417, false),
        soft(420, false),
        K::Packet { cpu: 0 },
        xmit(430, 64, "eth0"), // 10
        sw(500, 10, 20),
        soft(510, true),
        K::Packet { cpu: 0 },
        ev(520, &GETPID, &[]), // a system call: outside interrupts (the soft IRQ's exit was lost)
        xmit(530, 128, "eth0"), // 20
        ev(540, &GETPID_EXIT, &[V::I(20)]),
        recv(600, 2000),
    ];
    let dir = TempDir::new("io-net");
    write_kernel_trace(&dir.0, 1, false, &events);
    let set = TraceSet::open(&[&dir.0]).expect("open");
    let r = assert_cut_independent("io network", |j, cs| run(&set, &io(&set, 0), j, cs));
    let n = &r.network;
    assert_eq!(n.sent_event.as_deref(), Some("net_dev_xmit"));
    let per: Vec<(i64, u64, u64)> = n.threads.iter().map(|t| (t.tid, t.sent.bytes, t.sent.packets)).collect();
    assert_eq!(per, vec![(20, 128, 1), (10, 2 + 8 + 64, 3)]);
    assert_eq!((n.sent_in_interrupts.bytes, n.sent_in_interrupts.packets), (4 + 16 + 32, 3));
    assert_eq!((n.sent_context_unknown.bytes, n.sent_context_unknown.packets), (1, 1));
    let iface: Vec<(&str, u64, u64, u64)> = n.interfaces.iter().map(|i| (i.name.as_str(), i.received.bytes, i.received.packets, i.sent.bytes)).collect();
    assert_eq!(iface, vec![("eth0", 3000, 2, 1 + 2 + 4 + 16 + 32 + 64 + 128), ("lo", 0, 0, 8)]);
    assert_eq!(n.threads[1].interfaces.iter().map(|i| (i.name.as_str(), i.traffic.bytes)).collect::<Vec<_>>(), vec![("eth0", 66), ("lo", 8)]);
}

/// On bug446190 (ARM, LTTng 2.5, no `tid` context): the packets each thread sent, and those
/// sent from interrupts, as a plain serial reading of the events finds them.
#[test]
fn bug446190_network_per_thread_matches_a_serial_reading() {
    let Some(p) = fixture_path("tracecompass/bug446190") else { return };
    let set = open(&p);
    let mut cur: HashMap<u64, i64> = HashMap::new();
    let mut depth: HashMap<u64, i32> = HashMap::new();
    let mut per: BTreeMap<i64, u64> = BTreeMap::new();
    let (mut in_irq, mut unknown) = (0u64, 0u64);
    let mut m = set.merger();
    while let Some((_, item)) = m.next().expect("reads") {
        if item != Item::Event {
            continue;
        }
        let ev = m.event().expect("event");
        let cpu = ev.field("cpu_id").and_then(|f| f.as_u64()).expect("cpu");
        let name = ev.name();
        let d = depth.entry(cpu).or_default();
        match name {
            "sched_switch" => {
                cur.insert(cpu, ev.payload.get("next_tid").and_then(|f| f.as_i64()).unwrap());
                *d = 0;
            }
            "irq_handler_entry" | "softirq_entry" => *d += 1,
            "irq_handler_exit" | "softirq_exit" => *d -= 1,
            n if n.starts_with("sys_") || n == "exit_syscall" => *d = 0,
            "net_dev_xmit" => {
                let len = ev.payload.get("len").and_then(|f| f.as_u64()).unwrap();
                match cur.get(&cpu) {
                    Some(&t) if *d <= 0 && t != 0 => *per.entry(t).or_default() += len,
                    Some(_) => in_irq += len,
                    None => unknown += len,
                }
            }
            _ => {}
        }
    }
    let r = run(&set, &io(&set, 0), 2, 4096);
    let got: BTreeMap<i64, u64> = r.network.threads.iter().map(|t| (t.tid, t.sent.bytes)).collect();
    assert_eq!(got, per);
    assert_eq!((r.network.sent_in_interrupts.bytes, r.network.sent_context_unknown.bytes), (in_irq, unknown));
    assert!(in_irq > 0 && !per.is_empty(), "packets sent by threads and from interrupts");
}
