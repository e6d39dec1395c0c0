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

/// Forks and shared descriptor tables: processes forked from a parent whose table holds an
/// opened file (the children read it as a disk file: the table is copied at the fork, whatever
/// shard of the model holds each process), threads created in a process (they share its
/// table: a file a thread opens is read by another), a state dump that puts threads under
/// their process, `dup2`, `close`, and a thread id reused by a new process. The report is the
/// same for every thread count and cut (one packet per chunk included), and the bytes land
/// where lttng-analyses' model puts them.
#[test]
fn forks_and_shared_tables_across_cuts() {
    use tracelens_ctf::lttng::events::{SCHED_SWITCH, STATEDUMP_FILE_DESCRIPTOR, STATEDUMP_PROCESS_STATE};
    use tracelens_ctf::lttng::{EventDef, Ty, HEX64, I32, I64, U32};
    const OPEN: EventDef = EventDef { name: "syscall_entry_openat", fields: &[("dfd", I32), ("filename", Ty::Str), ("flags", I32), ("mode", U32)] };
    const OPEN_X: EventDef = EventDef { name: "syscall_exit_openat", fields: &[("ret", I64)] };
    const READ: EventDef = EventDef { name: "syscall_entry_read", fields: &[("fd", U32), ("buf", HEX64), ("count", U32)] };
    const READ_X: EventDef = EventDef { name: "syscall_exit_read", fields: &[("ret", I64), ("buf", HEX64)] };
    const DUP2: EventDef = EventDef { name: "syscall_entry_dup2", fields: &[("oldfd", U32), ("newfd", U32)] };
    const DUP2_X: EventDef = EventDef { name: "syscall_exit_dup2", fields: &[("ret", I64)] };
    const CLOSE: EventDef = EventDef { name: "syscall_entry_close", fields: &[("fd", U32)] };
    const CLOSE_X: EventDef = EventDef { name: "syscall_exit_close", fields: &[("ret", I64)] };
    const FORK: EventDef = EventDef {
        name: "sched_process_fork",
        fields: &[("parent_comm", Ty::Comm), ("parent_tid", I32), ("parent_pid", I32), ("child_comm", Ty::Comm), ("child_tid", I32), ("child_pid", I32)],
    };
    let leak = |v: Vec<V<'static>>| -> &'static [V<'static>] { Box::leak(v.into_boxed_slice()) };
    let ev = |cpu: u32, ns: u64, def: &'static EventDef, values: Vec<V<'static>>| K::Ev { cpu, ns, tid: 0, def, values: leak(values) };
    let mut events: Vec<K<'static>> = Vec::new();
    // The state dump: process 100 (threads 100, 101) with /data/log open as 3.
    events.push(ev(0, 10, &STATEDUMP_PROCESS_STATE, vec![V::I(100), V::I(100), V::I(100), V::I(100), V::I(1), V::I(1), V::S("srv"), V::I(0), V::I(5), V::I(0), V::I(2), V::I(0)]));
    events.push(ev(0, 11, &STATEDUMP_PROCESS_STATE, vec![V::I(101), V::I(101), V::I(100), V::I(100), V::I(1), V::I(1), V::S("srv"), V::I(0), V::I(5), V::I(0), V::I(2), V::I(0)]));
    events.push(ev(0, 12, &STATEDUMP_FILE_DESCRIPTOR, vec![V::I(100), V::I(3), V::I(0), V::I(0), V::S("/data/log")]));
    let t = std::cell::Cell::new(100u64);
    let mut per_cpu = [0u32; 2];
    // A call of `tid` on `cpu`: switch in, entry, exit (some calls block: switched out and
    // back in on the other CPU), with a packet end now and then.
    let mut call = |events: &mut Vec<K<'static>>, cpu: u32, tid: i64, entry: (&'static EventDef, Vec<V<'static>>), exit: (&'static EventDef, Vec<V<'static>>)| {
        t.set(t.get() + 10);
        let t0 = t.get();
        events.push(ev(cpu, t0, &SCHED_SWITCH, vec![V::S("x"), V::I(0), V::I(20), V::I(0), V::S("w"), V::I(tid), V::I(20)]));
        events.push(ev(cpu, t0 + 1, entry.0, entry.1));
        let xcpu = if tid % 3 == 0 { 1 - cpu } else { cpu };
        if xcpu != cpu {
            events.push(ev(cpu, t0 + 2, &SCHED_SWITCH, vec![V::S("w"), V::I(tid), V::I(20), V::I(1), V::S("swapper"), V::I(0), V::I(20)]));
            events.push(ev(xcpu, t0 + 5, &SCHED_SWITCH, vec![V::S("x"), V::I(0), V::I(20), V::I(0), V::S("w"), V::I(tid), V::I(20)]));
        }
        events.push(ev(xcpu, t0 + 6, exit.0, exit.1));
        per_cpu[xcpu as usize] += 1;
        if per_cpu[xcpu as usize] % 3 == 0 {
            events.push(K::Packet { cpu: xcpu });
        }
        t.set(t0 + 10);
    };
    let fork = |t: u64, cpu: u32, parent: i64, child_tid: i64, child_pid: i64| {
        ev(cpu, t, &FORK, vec![V::S("srv"), V::I(parent), V::I(parent), V::S("kid"), V::I(child_tid), V::I(child_pid)])
    };
    let read = |fd: i64, n: i64| ((&READ, vec![V::I(fd), V::I(0), V::I(4096)]), (&READ_X, vec![V::I(n), V::I(0)]));
    // 101 opens /data/a (fd 4), 100 reads it: one table.
    call(&mut events, 0, 101, (&OPEN, vec![V::I(-100), V::S("/data/a"), V::I(0), V::I(0)]), (&OPEN_X, vec![V::I(4)]));
    let (e, x) = read(4, 7);
    call(&mut events, 1, 100, e, x);
    // Processes 200..=203 forked by 100 (their tables are copies), a thread 250 of 100.
    for (i, child) in [200i64, 201, 202, 203].into_iter().enumerate() {
        t.set(t.get() + 10);
        events.push(fork(t.get(), (i % 2) as u32, 100, child, child));
        let (e, x) = read(3, 100 + i as i64);
        call(&mut events, (i % 2) as u32, child, e, x);
        let (e, x) = read(4, 1000 + i as i64);
        call(&mut events, ((i + 1) % 2) as u32, child, e, x);
    }
    t.set(t.get() + 10);
    events.push(fork(t.get(), 1, 100, 250, 100));
    // The thread opens /data/b as 5; the process's first thread reads it; 202 closes 4 and
    // duplicates 3 onto 4.
    call(&mut events, 0, 250, (&OPEN, vec![V::I(-100), V::S("/data/b"), V::I(0), V::I(0)]), (&OPEN_X, vec![V::I(5)]));
    let (e, x) = read(5, 30);
    call(&mut events, 1, 101, e, x);
    call(&mut events, 0, 202, (&CLOSE, vec![V::I(4)]), (&CLOSE_X, vec![V::I(0)]));
    call(&mut events, 1, 202, (&DUP2, vec![V::I(3), V::I(4)]), (&DUP2_X, vec![V::I(4)]));
    let (e, x) = read(4, 9);
    call(&mut events, 0, 202, e, x);
    // 201 forks 300, which reads 4 (201's /data/a); the thread id 250 is reused by a process
    // forked from 203 (/data/a as 4 too).
    t.set(t.get() + 10);
    events.push(fork(t.get(), 0, 201, 300, 300));
    let (e, x) = read(4, 11);
    call(&mut events, 1, 300, e, x);
    t.set(t.get() + 10);
    events.push(fork(t.get(), 1, 203, 250, 250));
    let (e, x) = read(4, 13);
    call(&mut events, 0, 250, e, x);
    // Each CPU's events in time order.
    let mut by_cpu: Vec<K<'static>> = Vec::new();
    for c in 0..2 {
        by_cpu.extend(events.iter().filter(|e| matches!(e, K::Ev { cpu, .. } | K::Packet { cpu } if *cpu == c)));
    }
    let dir = TempDir::new("io-forks");
    write_kernel_trace(&dir.0, 2, false, &by_cpu);
    if let Some(keep) = std::env::var_os("TRACELENS_KEEP_FORKS_TRACE") {
        let _ = std::fs::create_dir_all(&keep);
        for f in std::fs::read_dir(&dir.0).expect("dir").flatten() {
            let _ = std::fs::copy(f.path(), std::path::Path::new(&keep).join(f.file_name()));
        }
    }
    let set = TraceSet::open(&[&dir.0]).expect("open");
    let r = assert_cut_independent("io forks", |j, cs| run(&set, &io(&set, 5), j, cs));
    let bytes = |tid: i64| r.processes.iter().find(|p| p.tid == tid).map(|p| (p.disk.read, p.unknown.read));
    // Inherited descriptors are the parent's files: an opened one is a disk file, the state
    // dump's (and its duplicate) of unknown kind.
    assert_eq!(bytes(100), Some((7, 0)));
    assert_eq!(bytes(101), Some((30, 0)));
    for (i, child) in [200i64, 201, 202, 203].into_iter().enumerate() {
        let dup = if child == 202 { 9 } else { 0 };
        assert_eq!(bytes(child), Some((1000 + i as u64, 100 + i as u64 + dup)), "process {child}");
    }
    assert_eq!(bytes(300), Some((11, 0)));
    assert_eq!(bytes(250), Some((13, 0)));
    let file = |p: &str| r.files.iter().find(|f| f.path == p).map(|f| f.bytes.read);
    assert_eq!(file("/data/b"), Some(30));
    assert_eq!(file("/data/log"), Some(100 + 101 + 102 + 103 + 9));
    assert_eq!(file("/data/a"), Some(7 + 1000 + 1001 + 1002 + 1003 + 11 + 13));
}

/// A packet whose header says it begins earlier than its index entry does (the header's
/// beginning damaged): its events come before the beginning of their chunk (cut at the index's
/// times), after the model's shards ran past their time. The report must still be the same for
/// any number of threads and from run to run: which pairs the merges wait for depends on the
/// merges, not on how far the workers got (it did, and `-j 2` gave two reports in five runs).
#[test]
fn a_packet_earlier_than_its_index_gives_one_report_for_any_threads() {
    const PACKET: usize = 64 << 10;
    let dir = synth_dir("io-reach", &tracelens_synth::Options { cpus: 4, threads: 16, events: 100_000, seed: 2, packet_size: PACKET as u64 });
    let path = dir.0.join("channel0_1");
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() / PACKET - 1;
    // The packet context's timestamp_begin and timestamp_end (after a 32-byte header).
    let time = |b: &[u8], packet: usize, at: usize| u64::from_le_bytes(b[packet * PACKET + at..][..8].try_into().unwrap());
    let (begin, end) = (time(&bytes, last - 1, 32), time(&bytes, last - 1, 40));
    let moved = begin.saturating_sub(3 * (end - begin));
    bytes[last * PACKET + 32..][..8].copy_from_slice(&moved.to_le_bytes());
    std::fs::write(&path, bytes).unwrap();
    let set = open(&dir.0);
    let a = io(&set, 10);
    for chunk_size in [PACKET as u64, 2 * PACKET as u64] {
        let serial = run(&set, &a, 1, chunk_size);
        for threads in [2, 2, 3, 3, 8, 8, 8] {
            assert_eq!(run(&set, &a, threads, chunk_size), serial, "{threads} threads, chunk size {chunk_size}");
        }
    }
}
