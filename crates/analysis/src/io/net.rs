//! `io`'s network usage: bytes and packets received and sent per network interface
//! (lttng-iousagetop's "Network Received/Sent Bytes" tables), and per thread the packets it
//! sent.
//!
//! # What is counted
//!
//! * Received: every `netif_receive_skb` (its `len`: the packet from the network header on, the
//!   link-layer header already taken off).
//! * Sent: every `net_dev_xmit` (the packet handed to the device, as lttng-analyses counts
//!   it), or, in a trace without that event, every `net_dev_queue` (queued for the device:
//!   what `tracelens record -e net` records). Their `len` includes the link-layer header.
//! * Per thread: a packet sent in the context of a thread — not in an interrupt handler, a
//!   soft IRQ or an x86 interrupt vector — is that thread's. The thread is the event's own
//!   (`tid` context) or the one the CPU last switched in. Packets sent from interrupts (TCP
//!   acknowledgements and retransmissions, forwarding) are no thread's, and so are those sent
//!   before the CPU's state is known (before its first context switch or system call in the
//!   trace). Received packets are handled in interrupt context, on whatever thread the CPU
//!   was running: they are counted per interface only (what a thread read from its sockets is
//!   the `net` column of the per-thread I/O tables).
//!
//! # Chunks
//!
//! Per interface, the counts are sums. Per thread, a packet needs the CPU's state at that
//! moment: which thread runs, and how deep in interrupts it is. A chunk knows both once it
//! has seen, on that CPU, a context switch (the thread, and no interrupt: switches happen
//! outside interrupts) or a system call entry or exit (no interrupt). Before that, a chunk
//! keeps the packets as its CPU's *head*, with the interrupt depth relative to the chunk's
//! start; a merge resolves them from the earlier run's *tail* (its CPU's thread and depth at
//! its end), as the tracker resolves system calls (*Parallel trace analysis*, 2019, section
//! 4.2). A CPU's state through a run of chunks is a function of its state before (depth `d`
//! becomes `d + delta`, or a value set by a switch), and such functions compose
//! associatively, so the counts are the same for any cut.

use std::collections::BTreeMap;

use serde::Serialize;
use tracelens_trace::TraceSet;

use crate::engine::Context;
use crate::filter::Filter;
use crate::id_map::IdMap;
use crate::kernel::{text, Comm, KEvent, Kind, Kinds, What};
use crate::order::StreamCpu;

/// The kernel event kinds the network part reads.
pub(super) const NET_KINDS: Kinds = Kinds::of(&[
    What::NetQueue,
    What::NetXmit,
    What::NetReceive,
    What::IrqEntry,
    What::IrqExit,
    What::SoftirqEntry,
    What::SoftirqExit,
    What::VectorEntry,
    What::VectorExit,
]);

/// Bytes and packets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Traffic {
    /// Bytes (the packets' `len`).
    pub bytes: u64,
    /// Packets.
    pub packets: u64,
}

impl Traffic {
    fn add(&mut self, bytes: u64) {
        self.bytes += bytes;
        self.packets += 1;
    }

    fn absorb(&mut self, o: Traffic) {
        self.bytes += o.bytes;
        self.packets += o.packets;
    }
}

/// One network interface's traffic.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InterfaceNet {
    /// Its name (`eth0`, `lo`...).
    pub name: String,
    /// Received (`netif_receive_skb`).
    pub received: Traffic,
    /// Sent (`net_dev_xmit`, or `net_dev_queue`: [`NetUsage::sent_event`]).
    pub sent: Traffic,
}

/// Packets one thread sent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ThreadNet {
    /// Thread id.
    pub tid: i64,
    /// Its process, when an event gives it.
    pub pid: Option<i64>,
    /// Its name, as the per-thread I/O tables give it.
    pub comm: String,
    /// All it sent.
    pub sent: Traffic,
    /// What it sent per interface, most bytes first.
    pub interfaces: Vec<InterfaceTraffic>,
}

/// Bytes and packets on one interface.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InterfaceTraffic {
    /// The interface.
    pub name: String,
    /// Its traffic.
    #[serde(flatten)]
    pub traffic: Traffic,
}

/// `io`'s network usage: per interface, bytes and packets received (`netif_receive_skb`) and
/// sent (`net_dev_xmit`, else `net_dev_queue`); per thread, the packets it sent from its own
/// context (not from an interrupt handler or soft IRQ).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NetUsage {
    /// The event sent packets are counted from: `net_dev_xmit`, or `net_dev_queue` in traces
    /// without it; `None` when the trace has neither.
    pub sent_event: Option<String>,
    /// Per interface, most bytes (received + sent) first, ties by name.
    pub interfaces: Vec<InterfaceNet>,
    /// Per thread that sent packets, most bytes first (ties by tid).
    pub threads: Vec<ThreadNet>,
    /// Sent from interrupt handlers and soft IRQs (no thread's).
    pub sent_in_interrupts: Traffic,
    /// Sent where the CPU's state was not known (before its first context switch or system
    /// call in the trace, with no thread in the event's context).
    pub sent_context_unknown: Traffic,
    /// Whether the trace has soft IRQ events. Without them, a packet sent from an interrupt
    /// counts for the thread it interrupted.
    pub interrupts_traced: bool,
}

/// What the network part needs to know of the trace set.
#[derive(Clone, Debug, Default)]
pub(super) struct NetConf {
    /// Per trace: sent packets are counted from `net_dev_xmit` (else `net_dev_queue`).
    xmit: Vec<bool>,
    /// Per trace: it has `net_dev_queue`.
    queue: Vec<bool>,
    /// Some trace has soft IRQ entries.
    softirqs: bool,
}

impl NetConf {
    pub(super) fn new(set: &TraceSet) -> NetConf {
        let has = |t: &tracelens_ctf::Trace, names: &[&str]| t.class.streams.iter().any(|s| s.events.iter().any(|e| names.contains(&e.name.as_str())));
        NetConf {
            xmit: set.traces.iter().map(|t| has(t, &["net_dev_xmit", "net:net_dev_xmit"])).collect(),
            queue: set.traces.iter().map(|t| has(t, &["net_dev_queue", "net:net_dev_queue"])).collect(),
            softirqs: set.traces.iter().any(|t| has(t, &["irq_softirq_entry", "softirq_entry", "irq:softirq_entry"])),
        }
    }

    /// The event sent packets are counted from (`net_dev_xmit` when any trace of the set has
    /// it: a set normally holds one kernel trace).
    fn sent_event(&self) -> Option<String> {
        let xmit = self.xmit.iter().any(|&x| x);
        let queue = self.queue.iter().any(|&x| x);
        match (xmit, queue) {
            (true, _) => Some("net_dev_xmit".into()),
            (false, true) => Some("net_dev_queue".into()),
            _ => None,
        }
    }
}

/// A sent packet whose thread or context the chunk did not know yet.
#[derive(Clone, Copy, Debug)]
struct Pending {
    /// The thread, when known (the event's context, or the CPU's thread).
    tid: Option<i64>,
    /// The interrupt depth: absolute when `depth_known`, else relative to the run's start.
    depth: i32,
    depth_known: bool,
    iface: u32,
    bytes: u64,
}

/// What a run of chunks knows of one CPU's state at its end, and the packets it could not
/// place.
#[derive(Clone, Debug, Default)]
struct CpuNet {
    /// The thread running (0: idle), when a switch was seen.
    thread: Option<i64>,
    /// The interrupt depth: absolute when `depth_known`, else the change over the run.
    depth: i32,
    depth_known: bool,
    head: Vec<Pending>,
}

/// What the network part accumulates for a run of chunks.
#[derive(Clone, Debug, Default)]
pub(super) struct NetState {
    /// Interface names, numbered by the chunk (names are few).
    names: Vec<Box<[u8]>>,
    /// Per interface number: received, sent.
    ifaces: Vec<(Traffic, Traffic)>,
    /// Per thread, per interface number: sent.
    threads: IdMap<i64, BTreeMap<u32, Traffic>>,
    in_interrupts: Traffic,
    unknown: Traffic,
    cpus: IdMap<StreamCpu, CpuNet>,
    /// The CPU the chunk reads (out of `cpus`).
    hot: Option<(StreamCpu, CpuNet)>,
}

impl NetState {
    fn iface(&mut self, name: &[u8]) -> u32 {
        match self.names.iter().position(|n| &n[..] == name) {
            Some(i) => i as u32,
            None => {
                self.names.push(name.into());
                self.ifaces.push(Default::default());
                (self.names.len() - 1) as u32
            }
        }
    }

    /// Counts a sent packet whose thread and depth are known.
    fn place(&mut self, tid: i64, depth: i32, iface: u32, bytes: u64) {
        if depth > 0 {
            self.in_interrupts.add(bytes);
        } else if tid == 0 {
            // The idle task outside interrupts sends nothing itself.
            self.in_interrupts.add(bytes);
        } else {
            self.threads.entry(tid).or_default().entry(iface).or_default().add(bytes);
        }
    }

    /// The state of CPU `key` (kept out of the map while the chunk reads it: a chunk reads
    /// one stream, usually of one CPU).
    #[inline]
    fn cpu(&mut self, key: StreamCpu) -> &mut CpuNet {
        if self.hot.as_ref().is_none_or(|(k, _)| *k != key) {
            self.settle();
            let c = self.cpus.remove(&key).unwrap_or_default();
            self.hot = Some((key, c));
        }
        &mut self.hot.get_or_insert_with(|| (key, CpuNet::default())).1
    }

    /// Puts the CPU being read back in the map.
    fn settle(&mut self) {
        if let Some((k, c)) = self.hot.take() {
            self.cpus.insert(k, c);
        }
    }

    /// Takes in kernel event `k`.
    #[inline]
    pub(super) fn on_event(&mut self, conf: &NetConf, filter: &Filter, k: &KEvent<'_>, cx: &Context<'_, '_>) {
        let xmit = || conf.xmit.get(cx.chunk.trace).copied().unwrap_or(false);
        let (bytes, dev, sent) = match k.kind {
            Kind::SchedSwitch { next_tid, .. } => {
                let cpu = self.cpu(StreamCpu::new(cx, k.cpu));
                cpu.thread = Some(next_tid);
                (cpu.depth, cpu.depth_known) = (0, true);
                return;
            }
            Kind::SyscallEntry { .. } | Kind::SyscallExit { .. } => {
                let cpu = self.cpu(StreamCpu::new(cx, k.cpu));
                (cpu.depth, cpu.depth_known) = (0, true);
                return;
            }
            Kind::IrqHandlerEntry { .. } | Kind::SoftirqEntry { .. } | Kind::IrqVectorEntry { .. } => {
                self.cpu(StreamCpu::new(cx, k.cpu)).depth += 1;
                return;
            }
            Kind::IrqHandlerExit { .. } | Kind::SoftirqExit { .. } | Kind::IrqVectorExit { .. } => {
                self.cpu(StreamCpu::new(cx, k.cpu)).depth -= 1;
                return;
            }
            Kind::NetifReceiveSkb { len, dev } => (len, dev, false),
            Kind::NetDevXmit { len, dev, .. } if xmit() => (len, dev, true),
            Kind::NetDevQueue { len, dev } if !xmit() => (len, dev, true),
            _ => return,
        };
        if !filter.time(k.ns) || !filter.cpu(k.cpu) {
            return;
        }
        let iface = self.iface(dev);
        if !sent {
            self.ifaces[iface as usize].0.add(bytes);
            return;
        }
        self.ifaces[iface as usize].1.add(bytes);
        let cpu = self.cpu(StreamCpu::new(cx, k.cpu));
        let (tid, depth, depth_known) = (k.tid.or(cpu.thread), cpu.depth, cpu.depth_known);
        match (tid, depth_known) {
            (Some(t), true) => self.place(t, depth, iface, bytes),
            _ => cpu.head.push(Pending { tid, depth, depth_known, iface, bytes }),
        }
    }

    /// Takes in the next run of chunks.
    pub(super) fn merge(&mut self, mut b: NetState) {
        self.settle();
        b.settle();
        // Interface numbers of `b` in `self`.
        let map: Vec<u32> = b.names.iter().map(|n| self.iface(n)).collect();
        for (i, (r, s)) in b.ifaces.into_iter().enumerate() {
            let t = &mut self.ifaces[map[i] as usize];
            t.0.absorb(r);
            t.1.absorb(s);
        }
        for (tid, per) in b.threads {
            let mine = self.threads.entry(tid).or_default();
            for (i, t) in per {
                mine.entry(map[i as usize]).or_default().absorb(t);
            }
        }
        self.in_interrupts.absorb(b.in_interrupts);
        self.unknown.absorb(b.unknown);
        for (key, mut later) in b.cpus {
            for p in &mut later.head {
                p.iface = map[p.iface as usize];
            }
            let Some(earlier) = self.cpus.get_mut(&key) else {
                self.cpus.insert(key, later);
                continue;
            };
            // The later run's head, seen from the earlier run's end.
            let (thread, depth, known) = (earlier.thread, earlier.depth, earlier.depth_known);
            let mut placed = Vec::new();
            for p in later.head {
                let tid = p.tid.or(thread);
                let (d, dk) = if p.depth_known { (p.depth, true) } else { (depth + p.depth, known) };
                match tid {
                    Some(t) if dk => placed.push((t, d, p.iface, p.bytes)),
                    _ => earlier.head.push(Pending { tid, depth: d, depth_known: dk, ..p }),
                }
            }
            if later.thread.is_some() {
                earlier.thread = later.thread;
            }
            if later.depth_known {
                (earlier.depth, earlier.depth_known) = (later.depth, true);
            } else {
                earlier.depth += later.depth;
            }
            for (t, d, i, bytes) in placed {
                self.place(t, d, i, bytes);
            }
        }
    }

    /// The report: a thread's process and name are `label(tid)` (the descriptor model's, at the
    /// end of the trace); `threads` keeps a thread when `keep(tid, name)`.
    pub(super) fn finish(mut self, conf: &NetConf, label: impl Fn(i64) -> Option<(Option<i64>, Comm)>, keep: impl Fn(i64, &[u8]) -> bool) -> NetUsage {
        self.settle();
        // What no earlier run could place: sent before the CPU's state was known.
        for c in std::mem::take(&mut self.cpus).into_values() {
            for p in c.head {
                self.unknown.add(p.bytes);
            }
        }
        let names: Vec<String> = self.names.iter().map(|n| text(n).into_owned()).collect();
        let mut interfaces: Vec<InterfaceNet> =
            names.iter().zip(&self.ifaces).map(|(n, &(received, sent))| InterfaceNet { name: n.clone(), received, sent }).collect();
        interfaces.sort_by(|a, b| (b.received.bytes + b.sent.bytes).cmp(&(a.received.bytes + a.sent.bytes)).then_with(|| a.name.cmp(&b.name)));
        let mut threads: Vec<ThreadNet> = self
            .threads
            .into_iter()
            .filter_map(|(tid, per)| {
                let (pid, comm) = label(tid).unwrap_or_default();
                if !keep(tid, comm.as_bytes()) {
                    return None;
                }
                let mut sent = Traffic::default();
                let mut by: Vec<InterfaceTraffic> = per
                    .into_iter()
                    .map(|(i, traffic)| {
                        sent.absorb(traffic);
                        InterfaceTraffic { name: names[i as usize].clone(), traffic }
                    })
                    .collect();
                by.sort_by(|a, b| b.traffic.bytes.cmp(&a.traffic.bytes).then_with(|| a.name.cmp(&b.name)));
                Some(ThreadNet {
                    tid,
                    pid,
                    comm: comm.to_string(),
                    sent,
                    interfaces: by,
                })
            })
            .collect();
        threads.sort_by(|a, b| b.sent.bytes.cmp(&a.sent.bytes).then(a.tid.cmp(&b.tid)));
        NetUsage {
            sent_event: conf.sent_event(),
            interfaces,
            threads,
            sent_in_interrupts: self.in_interrupts,
            sent_context_unknown: self.unknown,
            interrupts_traced: conf.softirqs,
        }
    }
}
