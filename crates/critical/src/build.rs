//! Building the [`ExecutionGraph`] with the parallel engine.
//!
//! Each chunk (a run of packets of one CPU's stream) turns its kernel events into compact
//! records: context switches, wake-ups, forks and exits, interrupt and soft IRQ entries and
//! exits, timer expiries, block request issues and completions, packet receptions, lost
//! events — and, for the other events that name their thread (`tid` context), one record per
//! run of events of the same thread within a packet (the thread's *evidence* that it runs).
//! What a chunk cannot know — which thread runs on its CPU at its start, in which interrupt
//! its first events are, which thread a wake-up on another CPU woke — it does not try to:
//! its records are the unresolved fragments of *Parallel trace analysis* (2019), section 4.2.
//!
//! States are merged in time order (the engine's pipelined merge). A state that covers every
//! chunk from the first one on holds the replay: each merge hands on every record earlier than
//! the start of the last chunk merged — no later chunk can hold an earlier event — as a
//! *window*: the slices of the sorted runs (one per chunk and CPU) below that time. The replay
//! is split (`replay.rs`): per CPU, a pass over that CPU's records, and per shard of threads, a
//! pass over what those records did to its threads, merged from every CPU's pass in the trace's
//! total order of events ([`EventKey`]: time, then stream and position). The engine's workers
//! run these passes apart from the ordered chain of merges ([`Analysis::background`]), each as
//! soon as what it needs is done ([`Pipeline`]): a CPU's pass of a window after that CPU's pass
//! of the window before; the matching of block requests (issued on one CPU, completed on
//! another) after every CPU's pass of the window; a shard's pass after the matching and that
//! shard's pass of the window before. So passes of different CPUs, shards and windows run at
//! once, and the chain only hands windows on. Records of a chunk live until their window's CPU
//! passes are done, which run while later chunks are read. Since records are made per packet
//! and each pass sees its records in the one total order, the graph is the same for any number
//! of threads and any chunk size.
//!
//! [`GraphAnalysis::joining`] runs the same passes keeping only what the waits' reasons need,
//! handed to a [`WaitJoin`] as they become final (`join.rs`): memory flat in the trace's size.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, VecDeque};
use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tracelens_analysis::kernel::{Comm, IdMap, KEvent, KernelMap, Kind, Kinds};
use tracelens_analysis::{Analysis, Background, Chunk, Context, DiscardedItems, EventCounter, EventKey, OnKernel};
use tracelens_ctf::EventView;
use tracelens_trace::TraceSet;

use crate::graph::{Device, ExecutionGraph, Vector};
use crate::join::WaitJoin;
use crate::replay::{self, wake_offsets, CpuReplay, Fact, Op, Out, Requests, ThreadShard, SHARDS};

/// Which wake-up event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WakeEvent {
    /// `sched_waking` (in the waker's context).
    Waking,
    /// `sched_wakeup` (on some kernels in the woken thread's CPU's context).
    Wakeup,
    /// `sched_wakeup_new` (a new thread).
    New,
}

/// What a record says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum What {
    /// `prev_state`: its low byte, all the replay reads (runnable when 0; the exit bits),
    /// which keeps a record in one cache line.
    Switch { prev: i64, next: i64, prev_state: u8 },
    Waking { tid: i64, how: WakeEvent },
    Fork { parent: i64, child: i64 },
    Exit { tid: i64 },
    /// The state dump says the thread sleeps (LTTng status 5, `WAIT`).
    Asleep { tid: i64 },
    IrqEntry { irq: i32, device: Device },
    IrqExit { irq: i32 },
    SoftirqRaise { vec: u32 },
    SoftirqEntry { vec: u32 },
    SoftirqExit { vec: u32 },
    HrtimerEntry,
    HrtimerExit,
    VectorEntry(Vector),
    VectorExit(Vector),
    BlockIssue { dev: u64, sector: u64 },
    BlockComplete { dev: u64, sector: u64 },
    NetReceive,
    /// The record's thread ran from the record's time to `last_ns` (events of its own, within
    /// one packet); `syscall`: the first was a system call event (so outside interrupts).
    Evidence { last_ns: i64, syscall: bool },
    /// Events were lost on the CPU before this point.
    Lost,
}

/// One record: where it stands in the trace's order, its CPU, the thread whose context the
/// event gives (`tid` context), and what it says. 64 bytes (the replay reads a few million of
/// them in an order that mixes the CPUs: one cache line each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rec {
    pub(crate) key: EventKey,
    pub(crate) what: What,
    /// The `tid` context, when `has_tid` (an `Option<i64>` would take 8 bytes more).
    tid: i64,
    pub(crate) cpu: u32,
    has_tid: bool,
}

impl Rec {
    /// A record at `key` on `cpu`, in the context of thread `tid`.
    pub(crate) fn new(key: EventKey, cpu: u32, tid: Option<i64>, what: What) -> Rec {
        Rec { key, what, tid: tid.unwrap_or(0), cpu, has_tid: tid.is_some() }
    }

    /// The thread whose context the event gives.
    pub(crate) fn tid(&self) -> Option<i64> {
        self.has_tid.then_some(self.tid)
    }
}

/// A run of evidence not yet written as a record.
#[derive(Clone, Copy, Debug)]
struct Pending {
    key: EventKey,
    cpu: u32,
    tid: i64,
    packet: usize,
    last_ns: i64,
    syscall: bool,
}

/// Sets `map[id]` to `value` seen at `key`, unless what it holds was seen later.
fn keep_latest<T>(map: &mut IdMap<i64, (EventKey, T)>, id: i64, key: EventKey, value: T) {
    match map.get_mut(&id) {
        Some(e) if e.0 >= key => {}
        Some(e) => *e = (key, value),
        None => {
            map.insert(id, (key, value));
        }
    }
}

/// Whether the event class `name` is a system call entry or exit (in any of the namings
/// [`KernelMap`] reads).
fn is_syscall(name: &str) -> bool {
    let base = name.strip_prefix("compat_").unwrap_or(name);
    base.starts_with("syscall_") || base.starts_with("sys_") || name == "exit_syscall" || name.starts_with("raw_syscalls:") || name.starts_with("syscalls:")
}

/// Whether an event of this kind is a record of its own (others only tell, by their `tid`
/// context, which thread runs).
fn makes_record(kind: &Kind<'_>) -> bool {
    matches!(
        kind,
        Kind::SchedSwitch { .. }
            | Kind::SchedWaking { .. }
            | Kind::SchedWakeup { .. }
            | Kind::SchedWakeupNew { .. }
            | Kind::ProcessFork { .. }
            | Kind::ProcessExit { .. }
            | Kind::StatedumpProcess { .. }
            | Kind::IrqHandlerEntry { .. }
            | Kind::IrqHandlerExit { .. }
            | Kind::SoftirqRaise { .. }
            | Kind::SoftirqEntry { .. }
            | Kind::SoftirqExit { .. }
            | Kind::HrtimerExpireEntry { .. }
            | Kind::HrtimerExpireExit { .. }
            | Kind::IrqVectorEntry { .. }
            | Kind::IrqVectorExit { .. }
            | Kind::BlockRqIssue { .. }
            | Kind::BlockRqComplete { .. }
            | Kind::NetifReceiveSkb { .. }
    )
}

/// LTTng's state-dump status of a sleeping thread (`LTTNG_WAIT`).
const STATEDUMP_WAIT: i64 = 5;

/// The state of a run of chunks: records not handed on yet, and, from the first chunk on, the
/// split replay they are handed to (see [`GraphAnalysis`]).
#[derive(Debug, Default)]
pub struct GraphState {
    /// The replay, in states that cover the first chunk.
    pipe: Option<Arc<Pipeline>>,
    /// Records not handed on yet, each run in key order.
    runs: Vec<Run>,
    /// The latest names seen (in a state holding the replay, those of its first chunk: the
    /// merges hand the later chunks' to the workers, `Pipeline::names_later`).
    names: Names,
    /// The start time of the last chunk covered.
    bound: Option<i64>,
    span: Option<(i64, i64)>,
    lost: u64,
    // While reading a chunk:
    recs: Vec<Rec>,
    counter: EventCounter,
    pending: Option<Pending>,
    /// Lost events reported in this packet (and the packet's end time), to be placed at
    /// its next event.
    lost_at: Option<(usize, Option<i64>)>,
}

/// The latest name of each thread and IRQ line, by key: merged in any order.
#[derive(Debug, Default)]
struct Names {
    threads: IdMap<i64, (EventKey, Comm)>,
    irqs: IdMap<i64, (EventKey, String)>,
}

impl Names {
    /// Adds what another run of chunks saw.
    fn absorb(&mut self, other: Names) {
        for (tid, (k, c)) in other.threads {
            keep_latest(&mut self.threads, tid, k, c);
        }
        for (irq, (k, n)) in other.irqs {
            keep_latest(&mut self.irqs, irq, k, n);
        }
    }
}

/// A chunk's records of one CPU, sorted by key, and how many of them were handed on.
#[derive(Debug)]
struct Run {
    recs: Arc<Vec<Rec>>,
    at: usize,
    cpu: u32,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Record buffers of replayed chunks, for later chunks, and the outputs of the CPU pass, for
/// later windows: reused memory instead of fresh pages (which the kernel zeroes) for each.
#[derive(Debug, Default)]
struct Spare {
    recs: Mutex<Vec<Vec<Rec>>>,
    outs: Mutex<Vec<Out>>,
}

/// Buffers kept for reuse at most, of each kind.
const SPARE: usize = 16;

impl Spare {
    /// An empty record buffer with room for `n`, reused when one is spare.
    fn take(&self, n: usize) -> Vec<Rec> {
        let mut v = lock(&self.recs).pop().unwrap_or_default();
        v.reserve(n);
        v
    }

    /// Keeps `v`'s room for [`take`](Self::take).
    fn give(&self, mut v: Vec<Rec>) {
        v.clear();
        let mut spare = lock(&self.recs);
        if spare.len() < SPARE && v.capacity() > 0 {
            spare.push(v);
        }
    }

    /// Keeps the buffer of `recs` when this was its last holder.
    fn give_shared(&self, recs: Arc<Vec<Rec>>) {
        if let Some(v) = Arc::into_inner(recs) {
            self.give(v);
        }
    }

    /// An empty output of the CPU pass, reused when one is spare.
    fn take_out(&self) -> Out {
        lock(&self.outs).pop().unwrap_or_default()
    }

    /// Keeps the output `out` when this was its last holder.
    fn give_out(&self, out: Arc<Out>) {
        if let Some(mut o) = Arc::into_inner(out) {
            o.clear();
            let mut spare = lock(&self.outs);
            if spare.len() < SPARE {
                spare.push(o);
            }
        }
    }
}

/// Windows the chain leaves to the workers at most before it works on them itself: a bound on
/// the records kept when no worker takes the replay's work (outside the engine: with it,
/// workers take that work before they read another chunk, and a few windows wait at a time).
/// Large enough that the slices of one large window (the first chunks of many streams start
/// together) do not make the chain work.
const WAITING: usize = 64;

/// A slice of a sorted run: records `range` of the chunk's records.
type Part = (Arc<Vec<Rec>>, Range<usize>);

/// Where a task is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Waiting,
    Running,
    Done,
}

/// One CPU's records of a window (`cpu`: its index in [`Sched::cpus`]) and, once its CPU
/// pass ran, what it wrote.
#[derive(Debug)]
struct CpuWork {
    cpu: usize,
    parts: Vec<Part>,
    out: Option<Arc<Out>>,
}

/// The records of every run below a merge's bound, and the replay's tasks on them: the CPU
/// pass of each CPU (after that CPU's pass of the window before), the matching of block
/// requests (after every CPU's pass, and the window before's), then the thread pass of each
/// shard (after the matching, and that shard's pass of the window before).
#[derive(Debug)]
struct Window {
    cpus: Vec<CpuWork>,
    /// CPU passes not done.
    cpus_left: usize,
    requests: Status,
    /// Thread shard passes not done (which ones: [`Sched::shard_passes`]).
    shards_left: u32,
}

impl Window {
    fn done(&self) -> bool {
        self.cpus_left == 0 && self.requests == Status::Done && self.shards_left == 0
    }

    fn outs(&self) -> Vec<Arc<Out>> {
        self.cpus.iter().filter_map(|c| c.out.clone()).collect()
    }
}

/// A unit of the replay's work.
enum Task {
    /// Window `seq`'s CPU pass `i`.
    Cpu { seq: u64, i: usize, state: Arc<Mutex<CpuReplay>>, parts: Vec<Part> },
    /// Window `seq`'s matching of block requests.
    Requests { seq: u64, outs: Vec<Arc<Out>> },
    /// Window `seq`'s thread pass of shard `shard`.
    Shard { seq: u64, shard: usize, outs: Vec<Arc<Out>> },
    /// Shard `shard`'s end: its wakes numbered from `first`.
    Finalize { shard: usize, first: u32 },
}

/// A task that can run now: window `seq`'s pass of `kind`, the `index`th CPU of the window or
/// the thread shard `index`. Ordered as they are picked: the earliest window first (its
/// records go back soonest), and in a window the CPU passes, then the matching, then the
/// shards.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Ready {
    seq: u64,
    kind: Pass,
    index: usize,
}

/// The kinds of a window's tasks, in the order they are picked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Pass {
    Cpu,
    Requests,
    Shard,
}

/// The replay's windows and tasks.
///
/// Which tasks can run is kept up to date as windows come and tasks end, rather than found by
/// scanning the windows: with many workers a few tens of windows wait at once, each with a
/// pass for each of tens of CPUs, and every worker looks for work under this lock before each
/// chunk it reads (on the 32-CPU synth trace, `threads -j 16` scanned 8 million passes, 21
/// windows on average, for 25 thousand tasks: 1.5% of its instructions, under the lock).
#[derive(Debug, Default)]
struct Sched {
    /// Windows not done, in time order; the first is number `first`.
    windows: VecDeque<Window>,
    first: u64,
    /// The CPUs' states and ids, in the order first seen.
    cpus: Vec<(u32, Arc<Mutex<CpuReplay>>)>,
    cpu_index: IdMap<u32, usize>,
    /// Tasks running.
    running: usize,
    /// No window comes any more.
    ended: bool,
    /// Once every window is done: the shards still to finalize, and the first wake of each.
    finals: Option<(u64, Vec<u32>)>,
    finals_running: u64,
    /// The tasks that can run now.
    ready: BTreeSet<Ready>,
    /// Per CPU (by index in `cpus`): its passes not done, in window order (window, pass); the
    /// first can run when it is not running.
    cpu_passes: Vec<VecDeque<(u64, usize)>>,
    /// Per thread shard: the windows whose pass of it is not done, in order; likewise.
    shard_passes: Vec<VecDeque<u64>>,
    /// The first window whose matching of requests is not done: the matchings run in order.
    requests_next: u64,
}

impl Sched {
    /// Window `seq`, if it is queued and not done.
    fn window(&mut self, seq: u64) -> Option<&mut Window> {
        let i = usize::try_from(seq.checked_sub(self.first)?).ok()?;
        self.windows.get_mut(i)
    }

    /// Window `seq` of a task picked or done: not done, so still queued.
    fn window_of_task(&mut self, seq: u64) -> &mut Window {
        &mut self.windows[(seq - self.first) as usize]
    }

    /// Queues a window of CPU passes (their `cpu` an index in `cpus`).
    fn push(&mut self, cpus: Vec<CpuWork>) {
        let seq = self.first + self.windows.len() as u64;
        for (i, c) in cpus.iter().enumerate() {
            if self.cpu_passes.len() <= c.cpu {
                self.cpu_passes.resize_with(c.cpu + 1, VecDeque::new);
            }
            let passes = &mut self.cpu_passes[c.cpu];
            passes.push_back((seq, i));
            if passes.len() == 1 {
                self.ready.insert(Ready { seq, kind: Pass::Cpu, index: i });
            }
        }
        let cpus_left = cpus.len();
        self.windows.push_back(Window { cpus, cpus_left, requests: Status::Waiting, shards_left: 0 });
        self.requests_may_run(seq);
    }

    /// The first task that can run now (a matching is marked running in its window).
    fn take(&mut self) -> Option<Ready> {
        let r = self.ready.pop_first()?;
        if r.kind == Pass::Requests {
            self.window_of_task(r.seq).requests = Status::Running;
        }
        Some(r)
    }

    /// Window `seq`'s pass of its CPU `i` is done (with `out`): the CPU's pass of a later
    /// window can run, or the window's matching.
    fn cpu_done(&mut self, seq: u64, i: usize, out: Option<Arc<Out>>) {
        let w = self.window_of_task(seq);
        w.cpus[i].out = out;
        w.cpus_left -= 1;
        let cpu = w.cpus[i].cpu;
        self.cpu_passes[cpu].pop_front();
        if let Some(&(later, j)) = self.cpu_passes[cpu].front() {
            self.ready.insert(Ready { seq: later, kind: Pass::Cpu, index: j });
        }
        self.requests_may_run(seq);
    }

    /// Window `seq`'s matching is done, with work for the thread shards in `todo` (a bit
    /// each): their passes can run after their passes of the windows before, and the next
    /// window's matching.
    fn requests_done(&mut self, seq: u64, todo: u64) {
        let w = self.window_of_task(seq);
        w.requests = Status::Done;
        w.shards_left = todo.count_ones();
        self.shard_passes.resize_with(SHARDS, VecDeque::new);
        for shard in (0..SHARDS).filter(|sh| todo & 1 << sh != 0) {
            self.shard_passes[shard].push_back(seq);
            if self.shard_passes[shard].len() == 1 {
                self.ready.insert(Ready { seq, kind: Pass::Shard, index: shard });
            }
        }
        self.requests_next = seq + 1;
        self.requests_may_run(seq + 1);
    }

    /// Window `seq`'s pass of thread shard `shard` is done: its pass of a later window can run.
    fn shard_done(&mut self, seq: u64, shard: usize) {
        let w = self.window_of_task(seq);
        w.shards_left -= 1;
        self.shard_passes[shard].pop_front();
        if let Some(&later) = self.shard_passes[shard].front() {
            self.ready.insert(Ready { seq: later, kind: Pass::Shard, index: shard });
        }
    }

    /// Window `seq`'s matching can run if its CPU passes are done and the matchings before it.
    fn requests_may_run(&mut self, seq: u64) {
        if seq == self.requests_next && self.window(seq).is_some_and(|w| w.cpus_left == 0 && w.requests == Status::Waiting) {
            self.ready.insert(Ready { seq, kind: Pass::Requests, index: 0 });
        }
    }

    /// Takes the windows done at the front.
    fn pop_done(&mut self, gone: &mut Vec<Window>) {
        while self.windows.front().is_some_and(Window::done) {
            gone.extend(self.windows.pop_front());
            self.first += 1;
        }
    }
}

/// Every shard, a bit each.
const ALL_SHARDS: u64 = if SHARDS == 64 { u64::MAX } else { (1 << SHARDS) - 1 };

/// The split replay (`replay.rs`) of the windows a chain of merges hands on, run by the
/// engine's workers as the analysis's background work: per window, each CPU's pass and each
/// thread shard's pass run apart, on any worker, in the order their state needs.
#[derive(Debug)]
struct Pipeline {
    sched: Mutex<Sched>,
    shards: Vec<Mutex<ThreadShard>>,
    requests: Mutex<Requests>,
    has_waking: bool,
    spare: Arc<Spare>,
    /// Records a window holds at most, about ([`SLICE`]).
    slice: usize,
    /// Where the shards hand the waits' reasons on, keeping no graph
    /// ([`GraphAnalysis::joining`]).
    join: Option<Arc<WaitJoin>>,
    /// The names the merges handed over, not absorbed yet, and those absorbed: a worker
    /// absorbs them (any order gives the same), not the merges' serial chain.
    names_later: Mutex<Vec<Names>>,
    names: Mutex<Names>,
}

impl Pipeline {
    fn new(has_waking: bool, spare: Arc<Spare>, slice: usize, join: Option<Arc<WaitJoin>>) -> Pipeline {
        let shard = || Mutex::new(if join.is_some() { ThreadShard::reasons_only() } else { ThreadShard::default() });
        Pipeline { sched: Mutex::default(), shards: (0..SHARDS).map(|_| shard()).collect(), requests: Mutex::default(), has_waking, spare, slice, join, names_later: Mutex::default(), names: Mutex::default() }
    }

    /// Absorbs one of the names handed over, if any.
    fn absorb_names(&self) -> bool {
        let Some(later) = lock(&self.names_later).pop() else { return false };
        lock(&self.names).absorb(later);
        true
    }

    /// Every name handed over and `first`'s.
    fn take_names(&self, mut first: Names) -> Names {
        first.absorb(std::mem::take(&mut *lock(&self.names)));
        for later in std::mem::take(&mut *lock(&self.names_later)) {
            first.absorb(later);
        }
        first
    }

    /// Queues a window: records by CPU.
    fn post(&self, by_cpu: Vec<(u32, Vec<Part>)>) {
        let mut s = lock(&self.sched);
        let cpus = by_cpu
            .into_iter()
            .map(|(id, parts)| {
                let n = s.cpus.len();
                let cpu = *s.cpu_index.entry(id).or_insert(n);
                if cpu == n {
                    let mut c = CpuReplay::default();
                    c.no_interrupts = self.join.is_some();
                    s.cpus.push((id, Arc::new(Mutex::new(c))));
                }
                CpuWork { cpu, parts, out: None }
            })
            .collect::<Vec<_>>();
        s.push(cpus);
    }

    /// No window comes any more.
    fn end(&self) {
        lock(&self.sched).ended = true;
    }

    /// Windows not done.
    fn waiting(&self) -> usize {
        lock(&self.sched).windows.len()
    }

    /// The first task that can run now, marked running.
    fn pick(&self) -> Option<Task> {
        let mut guard = lock(&self.sched);
        let s = &mut *guard;
        if s.ended && s.windows.is_empty() && s.running == 0 && s.finals.is_none() {
            let counts: Vec<usize> = self.shards.iter().map(|m| lock(m).wakes.list.len()).collect();
            s.finals = Some((ALL_SHARDS, wake_offsets(counts.into_iter())));
        }
        if let Some((todo, firsts)) = &mut s.finals {
            if *todo == 0 {
                return None;
            }
            let shard = todo.trailing_zeros() as usize;
            *todo &= !(1 << shard);
            s.finals_running |= 1 << shard;
            s.running += 1;
            return Some(Task::Finalize { shard, first: firsts[shard] });
        }
        let Ready { seq, kind, index: i } = s.take()?;
        let w = s.window_of_task(seq);
        let task = match kind {
            Pass::Cpu => {
                let c = &mut w.cpus[i];
                let (cpu, parts) = (c.cpu, std::mem::take(&mut c.parts));
                Task::Cpu { seq, i, state: Arc::clone(&s.cpus[cpu].1), parts }
            }
            Pass::Requests => Task::Requests { seq, outs: w.outs() },
            Pass::Shard => Task::Shard { seq, shard: i, outs: w.outs() },
        };
        s.running += 1;
        Some(task)
    }

    /// Runs `task` (a CPU pass returns what it wrote).
    fn run(&self, task: &Task) -> Option<Arc<Out>> {
        match task {
            Task::Cpu { state, parts, .. } => {
                let mut out = self.spare.take_out();
                let mut c = lock(state);
                let slices: Vec<&[Rec]> = parts.iter().map(|(recs, r)| &recs[r.clone()]).collect();
                if let [one] = slices[..] {
                    one.iter().for_each(|r| c.apply(r, self.has_waking, &mut out));
                } else {
                    merged(slices, |r| r.key, |r| c.apply(r, self.has_waking, &mut out));
                }
                return Some(Arc::new(out));
            }
            Task::Requests { outs, .. } => {
                let mut facts: Vec<Fact> = outs.iter().flat_map(|o| o.facts.iter().copied()).collect();
                // The reasons alone do not need who issued a request (a wait's reason is the
                // block device either way).
                if !facts.is_empty() && self.join.is_none() {
                    facts.sort_by_key(|f| f.key);
                    let mut req = lock(&self.requests);
                    facts.iter().for_each(|f| req.apply(f));
                }
            }
            Task::Shard { shard, outs, .. } => {
                let slices: Vec<&[Op]> = outs.iter().map(|o| o.ops[*shard].as_slice()).filter(|s| !s.is_empty()).collect();
                let mut sh = lock(&self.shards[*shard]);
                let completion = |k: &EventKey| lock(&self.requests).completion(k);
                if let [one] = slices[..] {
                    one.iter().for_each(|op| sh.apply(op, completion));
                } else {
                    merged(slices, |op| op.key, |op| sh.apply(op, completion));
                }
                if let Some(join) = &self.join {
                    join.marks(*shard, &sh.sealed, sh.last_ns);
                    sh.sealed.clear();
                }
            }
            Task::Finalize { shard, first } => lock(&self.shards[*shard]).finalize(*first),
        }
        None
    }

    /// Files `task` as done (`out`: what a CPU pass wrote); windows done give their buffers
    /// back.
    fn done(&self, task: Task, out: Option<Arc<Out>>) {
        let mut gone = Vec::new();
        {
            let mut s = lock(&self.sched);
            s.running -= 1;
            match task {
                Task::Cpu { seq, i, parts, .. } => {
                    for (recs, _) in parts {
                        self.spare.give_shared(recs);
                    }
                    s.cpu_done(seq, i, out);
                }
                Task::Requests { seq, outs } => {
                    let todo = (0..SHARDS).filter(|&sh| outs.iter().any(|o| !o.ops[sh].is_empty())).fold(0, |m, sh| m | 1 << sh);
                    s.requests_done(seq, todo);
                }
                Task::Shard { seq, shard, .. } => s.shard_done(seq, shard),
                Task::Finalize { shard, .. } => s.finals_running &= !(1 << shard),
            }
            s.pop_done(&mut gone);
        }
        for w in gone {
            for c in w.cpus {
                if let Some(o) = c.out {
                    self.spare.give_out(o);
                }
            }
        }
    }

    /// Runs the replay's work until at most `waiting` windows are left, or none can run on
    /// this thread now.
    fn keep_up(&self, waiting: usize) {
        while self.waiting() > waiting && self.assist() {}
    }

    /// Runs every task left on the calling thread (waiting for those running elsewhere).
    fn drain(&self) {
        while self.busy() {
            if !self.assist() {
                std::thread::yield_now();
            }
        }
    }

    /// The graph, once every task is done.
    fn graph(&self) -> ExecutionGraph {
        let cpus: Vec<(u32, CpuReplay)> = std::mem::take(&mut lock(&self.sched).cpus).into_iter().map(|(id, c)| (id, std::mem::take(&mut *lock(&c)))).collect();
        let mut shards: Vec<ThreadShard> = self.shards.iter().map(|m| std::mem::take(&mut *lock(m))).collect();
        if let Some(join) = &self.join {
            // What is left of the chains is final now.
            for (i, sh) in shards.iter_mut().enumerate() {
                replay::seal_all(sh);
                join.marks(i, &sh.sealed, i64::MAX);
                sh.sealed = Vec::new();
            }
        }
        replay::finish(cpus, shards, self.has_waking)
    }
}

impl Background for Pipeline {
    fn assist(&self) -> bool {
        // The names first: little work each, and they would pile up behind the replay's.
        if self.absorb_names() {
            return true;
        }
        let Some(task) = self.pick() else { return false };
        let out = self.run(&task);
        self.done(task, out);
        true
    }

    fn busy(&self) -> bool {
        let s = lock(&self.sched);
        s.running > 0 || !s.windows.is_empty() || (s.ended && s.finals.as_ref().is_none_or(|(todo, _)| *todo != 0)) || !lock(&self.names_later).is_empty()
    }
}

/// Parts merged by a scan of their heads rather than a heap.
const FEW: usize = 8;

/// Calls `f` on the items of `parts` (each sorted by `key`) in key order — on equal keys, the
/// earlier part first.
fn merged<T>(mut parts: Vec<&[T]>, key: impl Fn(&T) -> EventKey, mut f: impl FnMut(&T)) {
    if parts.len() <= FEW {
        // A few parts (a shard's ops of each CPU, whose turns alternate often): the least head
        // by a scan, cheaper than a heap's upkeep (taking runs below the next head costs more:
        // they are short).
        loop {
            let mut least: Option<(usize, EventKey)> = None;
            for (i, p) in parts.iter().enumerate() {
                if let Some(x) = p.first() {
                    let k = key(x);
                    // On equal keys the earlier part first.
                    if least.is_none_or(|(_, l)| k < l) {
                        least = Some((i, k));
                    }
                }
            }
            let Some((i, _)) = least else { return };
            if let Some((x, rest)) = parts[i].split_first() {
                f(x);
                parts[i] = rest;
            }
        }
    }
    let mut order = Vec::new();
    merge_order(parts.clone(), &key, &mut order);
    let mut iters: Vec<std::slice::Iter<'_, T>> = parts.iter().map(|p| p.iter()).collect();
    for (i, n) in order {
        iters[i as usize].by_ref().take(n as usize).for_each(&mut f);
    }
}

/// Appends to `order` the merge of `parts` (each sorted by `key`) in key order, as batches of
/// consecutive items of one part: (part, how many).
fn merge_order<T>(mut parts: Vec<&[T]>, key: impl Fn(&T) -> EventKey, order: &mut Vec<(u32, u32)>) {
    use std::collections::binary_heap::PeekMut;
    let mut heads: BinaryHeap<Reverse<(EventKey, usize)>> = parts.iter().enumerate().filter_map(|(i, p)| p.first().map(|r| Reverse((key(r), i)))).collect();
    loop {
        // The least head of the other parts (the root's children): how far the root's part goes.
        let limit = heads.as_slice().iter().skip(1).take(2).max().map(|Reverse(head)| *head);
        let Some(mut top) = heads.peek_mut() else { break };
        let Reverse((_, i)) = *top;
        let p = parts[i];
        // A linear scan: the items taken are next to each other (a binary search over the
        // part would touch far items for the one or two taken at a time).
        // (On equal keys the earlier part first.)
        let n = limit.map_or(p.len(), |l| p.iter().position(|r| (key(r), i) > l).unwrap_or(p.len())).max(1);
        add_batch(order, i as u32, n);
        parts[i] = &p[n..];
        match parts[i].first() {
            Some(r) => top.0 .0 = key(r),
            None => drop(PeekMut::pop(top)),
        }
    }
}

/// Adds `n` records of part `i` to `order` (in batches of at most `u32::MAX`).
fn add_batch(order: &mut Vec<(u32, u32)>, i: u32, mut n: usize) {
    if let Some((_, m)) = order.last_mut().filter(|(j, _)| *j == i) {
        let more = n.min((u32::MAX - *m) as usize);
        *m += more as u32;
        n -= more;
    }
    while n > 0 {
        let more = n.min(u32::MAX as usize);
        order.push((i, more as u32));
        n -= more;
    }
}

/// How many items of `items` (sorted by `ns`) come before time `at`: `items.partition_point(|x|
/// ns(x) < at)`, found from a guess where `at` falls between the first and last items' times
/// (records are spread about evenly over a run's time), bracketed by steps doubling away from
/// it, then bisected. Each run is searched at every merge, on the merges' serial chain, for
/// the few thousand of its tens of thousands of records (one per cache line) to hand on: a
/// bisection of the whole run reads about 16 lines, most of them from memory. On the 32-CPU
/// synth trace the searches fell from 60 to 14 samples of `threads`' merges (`perf`).
fn first_from<T>(items: &[T], at: i64, ns: impl Fn(&T) -> i64) -> usize {
    let (Some(first), Some(last)) = (items.first(), items.last()) else { return 0 };
    let (lo_ns, hi_ns) = (ns(first), ns(last));
    if lo_ns >= at {
        return 0;
    }
    if hi_ns < at {
        return items.len();
    }
    // Now ns(items[0]) < at <= ns(items[n - 1]): the answer is in 1..n; find lo < hi with
    // ns(items[lo]) < at <= ns(items[hi]).
    let n = items.len();
    let span = i128::from(hi_ns) - i128::from(lo_ns);
    let guess = (i128::from(at) - i128::from(lo_ns)).saturating_mul((n - 1) as i128).checked_div(span).unwrap_or(0);
    let guess = usize::try_from(guess).unwrap_or(n - 1).clamp(1, n - 1);
    let (mut lo, mut hi) = (0, n - 1);
    let mut step = 1;
    if ns(&items[guess]) < at {
        lo = guess;
        while lo + step < hi {
            if ns(&items[lo + step]) >= at {
                hi = lo + step;
                break;
            }
            lo += step;
            step *= 2;
        }
    } else {
        hi = guess;
        while hi - lo > step {
            if ns(&items[hi - step]) < at {
                lo = hi - step;
                break;
            }
            hi -= step;
            step *= 2;
        }
    }
    lo + 1 + items[lo + 1..hi].partition_point(|x| ns(x) < at)
}

/// Records a window holds at most, about: a larger one goes to the replay as several, cut at
/// times evenly spread over its span, so that what its CPU passes write for the thread passes
/// (about a record's size per record) lives for a slice of the window at a time.
const SLICE: usize = 1 << 16;

/// Posts the window of `by_cpu`'s parts to `pipe`, in slices of time of about `pipe.slice`
/// records ([`SLICE`]).
fn post_in_slices(pipe: &Pipeline, mut by_cpu: Vec<(u32, Vec<Part>)>) {
    let per_slice = pipe.slice.max(1);
    let total: usize = by_cpu.iter().flat_map(|(_, parts)| parts.iter().map(|(_, r)| r.len())).sum();
    let n = total.div_ceil(per_slice).max(1);
    // The span to cut, read only when there is a cut (a merge's window is usually one slice:
    // reading each part's first and last records' times would cost two cache misses a part).
    let (lo, hi) = if n > 1 {
        let ends = by_cpu.iter().flat_map(|(_, parts)| parts.iter().filter_map(|(recs, r)| Some((recs.get(r.start)?.key.ns, recs.get(r.end.checked_sub(1)?)?.key.ns))));
        ends.fold((i64::MAX, i64::MIN), |(a, b), (x, y)| (a.min(x), b.max(y)))
    } else {
        (0, 0)
    };
    for k in 1..=n {
        // Records before `cut` (all of them in the last slice).
        let cut = (k < n).then(|| lo.saturating_add((i128::from(hi) - i128::from(lo)).saturating_mul(k as i128).checked_div(n as i128).and_then(|d| i64::try_from(d).ok()).unwrap_or(0)));
        let mut slice: Vec<(u32, Vec<Part>)> = Vec::new();
        for (cpu, parts) in &mut by_cpu {
            let taken: Vec<Part> = parts
                .iter_mut()
                .filter_map(|(recs, r)| {
                    let end = cut.map_or(r.end, |c| r.start + first_from(&recs[r.clone()], c, |x| x.key.ns));
                    let part = (end > r.start).then(|| (Arc::clone(recs), r.start..end));
                    r.start = end;
                    part
                })
                .collect();
            if !taken.is_empty() {
                slice.push((*cpu, taken));
            }
        }
        if !slice.is_empty() {
            pipe.post(slice);
        }
    }
}

/// The analysis that builds the [`ExecutionGraph`] of a trace set (run it with
/// [`tracelens_analysis::Engine::run`]).
///
/// Each chunk turns its events into compact records; states merged in time order hand on, as
/// one window, every record earlier than the start of the last chunk merged (no later chunk
/// can hold an earlier one); the engine's workers replay each window, per CPU and then per
/// shard of threads (`replay.rs`), each in the trace's total order of events, so the graph is
/// the same for any number of threads and any chunk size.
#[derive(Debug)]
pub struct GraphAnalysis {
    map: KernelMap,
    has_waking: bool,
    spare: Arc<Spare>,
    /// Records a window holds at most, about ([`SLICE`]).
    slice: usize,
    /// [`GraphAnalysis::joining`].
    join: Option<Arc<WaitJoin>>,
}

impl Clone for GraphAnalysis {
    fn clone(&self) -> Self {
        GraphAnalysis { map: self.map.clone(), has_waking: self.has_waking, spare: Arc::default(), slice: self.slice, join: self.join.clone() }
    }
}

impl GraphAnalysis {
    /// The analysis of `set`.
    pub fn new(set: &TraceSet) -> GraphAnalysis {
        let has_waking = set.traces.iter().any(|t| t.class.streams.iter().any(|s| s.events.iter().any(|e| matches!(e.name.as_str(), "sched_waking" | "sched:sched_waking"))));
        GraphAnalysis { map: KernelMap::new(set), has_waking, spare: Arc::default(), slice: SLICE, join: None }
    }

    /// The same replay, keeping only what the waits' reasons need and handing them to `join`
    /// as they become final (see [`WaitJoin`]): the graph it returns has the names, span and
    /// counts, but neither the threads' chains (only their last steps), the CPUs' interrupts nor
    /// the wakes — memory flat in the trace's size. For `tracelens threads`.
    pub fn joining(mut self, join: Arc<WaitJoin>) -> GraphAnalysis {
        self.join = Some(join);
        self
    }

    /// Files the chunk's records as sorted runs, one per CPU (a chunk's records are its
    /// stream's CPU's, but for lost events at the end of a packet, CPU unknown).
    fn end_chunk_records(&self, st: &mut GraphState) {
        let mut recs = std::mem::take(&mut st.recs);
        if recs.is_empty() {
            self.spare.give(recs);
            return;
        }
        if !recs.is_sorted_by_key(|r| r.key) {
            recs.sort_by_key(|r| r.key);
        }
        // One run per CPU (a chunk's records are its stream's CPU's, but for lost events at
        // the end of a packet, CPU unknown).
        let cpu = recs[0].cpu;
        if recs.iter().all(|r| r.cpu == cpu) {
            st.runs.push(Run { recs: Arc::new(recs), at: 0, cpu });
            return;
        }
        let mut cpus: Vec<u32> = recs.iter().map(|r| r.cpu).collect();
        cpus.sort_unstable();
        cpus.dedup();
        for c in cpus {
            let mut v = self.spare.take(0);
            v.extend(recs.iter().filter(|r| r.cpu == c));
            st.runs.push(Run { recs: Arc::new(v), at: 0, cpu: c });
        }
        self.spare.give(recs);
    }

    /// The replay, for the state that holds it.
    fn pipeline(&self) -> Arc<Pipeline> {
        Arc::new(Pipeline::new(self.has_waking, Arc::clone(&self.spare), self.slice, self.join.clone()))
    }
}

impl GraphState {
    /// Writes the pending evidence as a record.
    fn flush(&mut self) {
        if let Some(p) = self.pending.take() {
            self.recs.push(Rec::new(p.key, p.cpu, Some(p.tid), What::Evidence { last_ns: p.last_ns, syscall: p.syscall }));
        }
    }

    /// Writes lost events reported in a packet that has no event after them, at the packet's
    /// end, CPU unknown.
    fn lost_at_end(&mut self) {
        if let Some((_, end)) = self.lost_at.take() {
            self.flush();
            if let Some(ns) = end {
                let key = EventKey { ns, stream: u64::MAX, pos: u64::MAX };
                self.recs.push(Rec::new(key, u32::MAX, None, What::Lost));
            }
        }
    }

    fn name(&mut self, key: EventKey, tid: i64, comm: &[u8]) {
        if tid == 0 || comm.is_empty() {
            return;
        }
        match self.names.threads.get_mut(&tid) {
            Some((k, c)) => {
                if key > *k {
                    *k = key;
                    if c.as_bytes() != comm {
                        *c = Comm::new(comm);
                    }
                }
            }
            None => {
                self.names.threads.insert(tid, (key, Comm::new(comm)));
            }
        }
    }

    /// Hands on the records of `self.runs` earlier than `below` (all of them when `None`) as
    /// a window to replay, when this state holds the replay.
    fn hand_on(&mut self, below: Option<i64>, spare: &Spare) {
        let Some(pipe) = &self.pipe else { return };
        let mut by_cpu: Vec<(u32, Vec<Part>)> = Vec::new();
        let mut kept = Vec::with_capacity(self.runs.len());
        for mut r in std::mem::take(&mut self.runs) {
            let end = match below {
                Some(b) => r.at + first_from(&r.recs[r.at..], b, |x| x.key.ns),
                None => r.recs.len(),
            };
            if end > r.at {
                let part = (Arc::clone(&r.recs), r.at..end);
                match by_cpu.iter_mut().find(|(c, _)| *c == r.cpu) {
                    Some((_, parts)) => parts.push(part),
                    None => by_cpu.push((r.cpu, vec![part])),
                }
                r.at = end;
            }
            if r.at < r.recs.len() {
                kept.push(r);
            } else {
                // Its last window may be replayed already.
                spare.give_shared(r.recs);
            }
        }
        self.runs = kept;
        post_in_slices(pipe, by_cpu);
    }
}

impl Analysis for GraphAnalysis {
    type State = GraphState;
    type Output = ExecutionGraph;

    fn new_state(&self, chunk: &Chunk) -> GraphState {
        GraphState {
            pipe: (chunk.index == 0).then(|| self.pipeline()),
            bound: chunk.begin_ns,
            // About one record per 80 bytes of an LTTng kernel trace's packets, 70 of a synthetic
            // one: room that is not used is never touched.
            recs: self.spare.take(usize::try_from(chunk.bytes / 64).unwrap_or(0).min(1 << 22)),
            ..GraphState::default()
        }
    }

    fn on_event(&self, st: &mut GraphState, ev: &EventView<'_, '_>, cx: &Context<'_, '_>) {
        let Some(k) = self.map.decode_only(ev, cx, self.kinds()) else { return };
        self.on_kernel(st, &k, cx);
    }

    fn on_discarded(&self, st: &mut GraphState, items: &DiscardedItems, cx: &Context<'_, '_>) {
        st.lost = st.lost.saturating_add(items.count);
        if items.count == 0 {
            return;
        }
        st.lost_at_end();
        st.lost_at = Some((cx.packet, items.end_ns));
    }

    fn end_chunk(&self, st: &mut GraphState, _cx: &Context<'_, '_>) {
        st.lost_at_end();
        st.flush();
        self.end_chunk_records(st);
    }

    fn merge(&self, mut a: GraphState, b: GraphState) -> GraphState {
        if a.pipe.is_none() && b.pipe.is_some() && a.runs.is_empty() {
            // `a` holds no chunk.
            a.pipe = b.pipe;
        }
        a.runs.extend(b.runs);
        match &a.pipe {
            Some(pipe) => lock(&pipe.names_later).push(b.names),
            None => a.names.absorb(b.names),
        }
        a.span = match (a.span, b.span) {
            (Some((x, y)), Some((u, v))) => Some((x.min(u), y.max(v))),
            (x, y) => x.or(y),
        };
        a.lost = a.lost.saturating_add(b.lost);
        a.bound = b.bound.or(a.bound);
        let bound = a.bound;
        a.hand_on(bound, &self.spare);
        if let Some(pipe) = &a.pipe {
            // A bound on the records kept when no worker replays them.
            pipe.keep_up(WAITING);
        }
        a
    }

    fn end_merges(&self, st: &mut GraphState) {
        // What is left goes to the workers too; `finish` only collects the graph.
        st.hand_on(None, &self.spare);
        if let Some(pipe) = &st.pipe {
            pipe.end();
        }
    }

    fn background(&self, st: &GraphState) -> Option<Arc<dyn Background>> {
        st.pipe.clone().map(|s| s as Arc<dyn Background>)
    }

    fn finish(&self, mut st: GraphState) -> ExecutionGraph {
        if st.pipe.is_none() {
            st.pipe = Some(self.pipeline());
        }
        st.hand_on(None, &self.spare);
        let pipe = st.pipe.take().unwrap_or_else(|| self.pipeline());
        pipe.end();
        pipe.drain();
        let mut g = pipe.graph();
        let names = pipe.take_names(st.names);
        g.names = names.threads.into_iter().map(|(t, (_, c))| (t, c)).collect();
        g.irq_names = names.irqs.into_iter().map(|(i, (_, n))| (i, n)).collect();
        g.span = st.span;
        g.lost_events = st.lost;
        g
    }
}

impl OnKernel for GraphAnalysis {
    /// System calls only tell which thread runs (their fields are not needed).
    fn kinds(&self) -> Kinds {
        Kinds::NO_SYSCALLS
    }

    fn kernel_map(&self) -> &KernelMap {
        &self.map
    }

    #[inline]
    fn on_kernel(&self, st: &mut GraphState, k: &KEvent<'_>, cx: &Context<'_, '_>) {
        st.span = Some(match st.span {
            Some((a, b)) => (a.min(k.ns), b.max(k.ns)),
            None => (k.ns, k.ns),
        });
        if k.tid.is_none() && !makes_record(&k.kind) {
            // Says nothing here (and is left out of the order the same way in every chunk).
            return;
        }
        let key = st.counter.key(k.ns, cx);
        if let Some((packet, _)) = st.lost_at {
            if packet == cx.packet {
                st.lost_at = None;
                st.flush();
                st.recs.push(Rec::new(key, k.cpu, None, What::Lost));
            } else {
                st.lost_at_end();
            }
        }
        let what = match k.kind {
            Kind::SchedSwitch { prev_tid, prev_comm, prev_state, next_tid, next_comm, .. } => {
                st.name(key, prev_tid, prev_comm);
                st.name(key, next_tid, next_comm);
                What::Switch { prev: prev_tid, next: next_tid, prev_state: (prev_state & 0xff) as u8 }
            }
            Kind::SchedWaking { tid, comm, .. } => {
                st.name(key, tid, comm);
                What::Waking { tid, how: WakeEvent::Waking }
            }
            Kind::SchedWakeup { tid, comm, .. } => {
                st.name(key, tid, comm);
                What::Waking { tid, how: WakeEvent::Wakeup }
            }
            Kind::SchedWakeupNew { tid, comm, .. } => {
                st.name(key, tid, comm);
                What::Waking { tid, how: WakeEvent::New }
            }
            Kind::ProcessFork { parent_tid, child_tid, child_comm, .. } => {
                st.name(key, child_tid, child_comm);
                What::Fork { parent: parent_tid, child: child_tid }
            }
            Kind::ProcessExit { tid } => What::Exit { tid },
            Kind::IrqHandlerEntry { irq, name } => {
                match st.names.irqs.get_mut(&irq) {
                    // The same name: only the time it was seen changes (no allocation).
                    Some((k, n)) if n.as_bytes() == name => *k = (*k).max(key),
                    _ => keep_latest(&mut st.names.irqs, irq, key, String::from_utf8_lossy(name).into_owned()),
                }
                What::IrqEntry { irq: irq as i32, device: Device::of_irq(name) }
            }
            Kind::IrqHandlerExit { irq, .. } => What::IrqExit { irq: irq as i32 },
            Kind::SoftirqRaise { vec } => What::SoftirqRaise { vec },
            Kind::SoftirqEntry { vec } => What::SoftirqEntry { vec },
            Kind::SoftirqExit { vec } => What::SoftirqExit { vec },
            Kind::HrtimerExpireEntry { .. } => What::HrtimerEntry,
            Kind::HrtimerExpireExit { .. } => What::HrtimerExit,
            Kind::IrqVectorEntry { name, .. } => What::VectorEntry(Vector::from_name(name)),
            Kind::IrqVectorExit { name, .. } => What::VectorExit(Vector::from_name(name)),
            Kind::BlockRqIssue { dev, sector, .. } => What::BlockIssue { dev, sector },
            Kind::BlockRqComplete { dev, sector, .. } => What::BlockComplete { dev, sector },
            Kind::NetifReceiveSkb { .. } => What::NetReceive,
            Kind::StatedumpProcess { tid, name, status, .. } => {
                st.name(key, tid, name);
                if status != STATEDUMP_WAIT || tid == 0 {
                    return;
                }
                What::Asleep { tid }
            }
            _ => {
                // Evidence: a run of the thread's own events within one packet.
                let Some(tid) = k.tid else { return };
                match &mut st.pending {
                    Some(p) if p.tid == tid && p.cpu == k.cpu && p.packet == cx.packet => p.last_ns = p.last_ns.max(k.ns),
                    _ => {
                        st.flush();
                        // Whether the run starts with a system call event (so outside interrupts).
                        let syscall = is_syscall(k.name());
                        st.pending = Some(Pending { key, cpu: k.cpu, tid, packet: cx.packet, last_ns: k.ns, syscall });
                    }
                }
                return;
            }
        };
        st.flush();
        st.recs.push(Rec::new(key, k.cpu, k.tid, what));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::Builder;
    use proptest::prelude::*;
    use tracelens_analysis::ThreadsReport;

    /// Chunks of `cpus` streams, `slices` per stream: (start, records sorted by key), sorted by
    /// start as the engine numbers them. Times collide across streams (ties broken by stream).
    fn chunks(seed: u64, cpus: u64, slices: i64, per_slice: usize) -> Vec<(i64, Vec<Rec>)> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut out = Vec::new();
        for cpu in 0..cpus {
            for s in 0..slices {
                let begin = s * 100;
                let mut ns: Vec<i64> = (0..per_slice).map(|_| begin + next(100) as i64).collect();
                ns.sort_unstable();
                let recs: Vec<Rec> = ns
                    .into_iter()
                    .enumerate()
                    .map(|(i, ns)| {
                        let tid = next(6) as i64;
                        // Few block requests, so that completions find their issues (on any CPU).
                        let (dev, sector) = (next(2), next(3));
                        let what = match next(16) {
                            0..=3 => What::Switch { prev: tid, next: next(6) as i64, prev_state: next(3) as u8 },
                            4 | 5 => What::Waking { tid: next(6) as i64, how: if next(4) == 0 { WakeEvent::Wakeup } else { WakeEvent::Waking } },
                            6 | 7 => What::Evidence { last_ns: ns + next(5) as i64, syscall: next(2) == 0 },
                            8 => What::HrtimerEntry,
                            9 => What::HrtimerExit,
                            10 => What::IrqEntry { irq: next(3) as i32, device: Device::Other },
                            11 => What::IrqExit { irq: next(3) as i32 },
                            12 => What::BlockIssue { dev, sector },
                            13 => What::BlockComplete { dev, sector },
                            14 => match next(4) {
                                0 => What::Lost,
                                1 => What::Fork { parent: tid, child: next(8) as i64 },
                                2 => What::Exit { tid: next(6) as i64 },
                                _ => What::Asleep { tid: next(8) as i64 },
                            },
                            _ => match next(3) {
                                0 => What::SoftirqRaise { vec: next(10) as u32 },
                                1 => What::SoftirqEntry { vec: next(10) as u32 },
                                _ => What::SoftirqExit { vec: next(10) as u32 },
                            },
                        };
                        // Some records without a thread context, and lost events at a packet's end, CPU unknown.
                        let (cpu_of, tid) = match (what, next(8)) {
                            (What::Lost, 0) => (u32::MAX, None),
                            (_, 1) => (cpu as u32, None),
                            _ => (cpu as u32, Some(tid)),
                        };
                        Rec::new(EventKey { ns, stream: cpu, pos: (s as u64) << 32 | i as u64 }, cpu_of, tid, what)
                    })
                    .collect();
                out.push((begin, recs));
            }
        }
        out.sort_by_key(|(begin, recs)| (*begin, recs.first().map(|r| r.key.stream)));
        out
    }

    /// The state of chunk `i` as the engine would make it.
    fn state(a: &GraphAnalysis, i: usize, (begin, recs): &(i64, Vec<Rec>)) -> GraphState {
        let mut st = GraphState { pipe: (i == 0).then(|| a.pipeline()), bound: Some(*begin), recs: recs.clone(), ..GraphState::default() };
        a.end_chunk_records(&mut st);
        st
    }

    /// The serial replay of `chunks`' records in key order.
    fn serial(chunks: &[(i64, Vec<Rec>)], has_waking: bool) -> ExecutionGraph {
        let mut all: Vec<Rec> = chunks.iter().flat_map(|(_, r)| r.iter().copied()).collect();
        all.sort_by_key(|r| r.key);
        let mut b = Builder::new(has_waking);
        all.iter().for_each(|r| b.apply(r));
        b.finish()
    }

    #[test]
    fn workers_on_other_threads_replay_as_one() {
        for seed in 1..6 {
            let chunks = chunks(seed, 6, 40, 60);
            let want = serial(&chunks, true);
            let mut a = GraphAnalysis::new(&TraceSet { traces: Vec::new() });
            a.has_waking = true;
            a.slice = 100;
            let first = state(&a, 0, &chunks[0]);
            let bg = a.background(&first).unwrap();
            let stop = std::sync::atomic::AtomicBool::new(false);
            let got = std::thread::scope(|s| {
                for _ in 0..3 {
                    s.spawn(|| {
                        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                            if !bg.assist() {
                                std::thread::yield_now();
                            }
                        }
                    });
                }
                let mut acc = first;
                for (i, c) in chunks.iter().enumerate().skip(1) {
                    acc = a.merge(acc, state(&a, i, c));
                }
                a.end_merges(&mut acc);
                while bg.busy() {
                    std::thread::yield_now();
                }
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
                a.finish(acc)
            });
            assert!(got == want, "seed {seed}");
        }
    }

    /// The states of `chunks` merged left to right, as the engine merges, the replay's work
    /// run after every `assist_every`-th merge (never if 0), `each(i)` after the merge of chunk
    /// `i`; with the most windows waiting right after a merge, and whether the replay was busy
    /// after its work was run.
    fn left_to_right(a: &GraphAnalysis, chunks: &[(i64, Vec<Rec>)], assist_every: usize, mut each: impl FnMut(usize)) -> (GraphState, usize, bool) {
        let (mut acc, mut waiting, mut busy): (Option<GraphState>, usize, bool) = (None, 0, false);
        for (i, c) in chunks.iter().enumerate() {
            let s = state(a, i, c);
            let st = match acc.take() {
                None => s,
                Some(earlier) => a.merge(earlier, s),
            };
            waiting = waiting.max(st.pipe.as_ref().map_or(0, |p| p.waiting()));
            if assist_every > 0 && i % assist_every == 0 {
                if let Some(bg) = a.background(&st) {
                    while bg.assist() {}
                    busy |= bg.busy();
                }
            }
            each(i);
            acc = Some(st);
        }
        (acc.unwrap_or_default(), waiting, busy)
    }

    /// Random blocked intervals `(tid, from, to)` of threads 0..8 over `[0, end)`, each thread's
    /// in time order (some of zero length), sorted by end (so each thread's stay in order).
    fn random_waits(seed: u64, end: i64) -> Vec<(i64, i64, i64)> {
        let mut x = seed.wrapping_mul(0xD1B5_4A32_D192_ED03) | 1;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n) as i64
        };
        let mut out = Vec::new();
        for tid in 0..8 {
            let mut t = next(60);
            while t < end {
                let from = t + next(40);
                let to = from + next(90);
                out.push((tid, from, to));
                t = to;
            }
        }
        out.sort_by_key(|w| w.2);
        out
    }

    fn life(tid: i64) -> tracelens_analysis::ThreadLife {
        tracelens_analysis::ThreadLife {
            tid,
            pid: None,
            name: String::new(),
            first_seen_ns: 0,
            last_seen_ns: 0,
            running_ns: 0,
            preempted_ns: 0,
            waiting_cpu_ns: 0,
            blocked_ns: 0,
            unknown_ns: 0,
            blocked: Vec::new(),
            cpus: Vec::new(),
            migrations: 0,
            switches_in: 0,
            exited: false,
            waits: Vec::new(),
        }
    }

    proptest! {
        /// The join of the reasons-only replay and blocked intervals sent in batches at any
        /// point of the merges gives every thread the sums [`crate::blocked_by_reason`] gives on
        /// the whole graph of the serial replay (chains with missed switches, lost events,
        /// forks of exited threads' ids); and they add up to the intervals' time.
        #[test]
        fn joined_reasons_are_those_of_the_whole_graph(seed in 1u64..10_000, cpus in 1u64..5, slices in 1i64..30, per_slice in 0usize..40, assist_every in 0usize..4, has_waking: bool, slice in 1usize..200, batch in 1usize..20) {
            use tracelens_analysis::WaitSink;
            let chunks = chunks(seed, cpus, slices, per_slice);
            let whole = serial(&chunks, has_waking);
            let waits = random_waits(seed, slices * 100 + 50);
            let join = Arc::new(WaitJoin::new());
            let mut a = GraphAnalysis::new(&TraceSet { traces: Vec::new() }).joining(Arc::clone(&join));
            a.has_waking = has_waking;
            a.slice = slice;
            let mut sent = waits.chunks(batch);
            let (mut st, _, _) = left_to_right(&a, &chunks, assist_every, |i| {
                if i % 2 == 0 {
                    if let Some(b) = sent.next() {
                        join.blocked(b);
                    }
                }
            });
            a.end_merges(&mut st);
            a.finish(st);
            for b in sent {
                join.blocked(b);
            }
            let report = join.report(ThreadsReport { begin_ns: None, end_ns: None, threads: (0..8).map(life).collect() });
            for t in &report.threads {
                let tid = t.life.tid;
                let mine: Vec<(i64, i64)> = waits.iter().filter(|w| w.0 == tid).map(|w| (w.1, w.2)).collect();
                prop_assert_eq!(&t.blocked_by_reason, &crate::blocked_by_reason(&whole, tid, &mine), "thread {}", tid);
                prop_assert_eq!(t.blocked_by_reason.iter().map(|r| r.ns).sum::<i64>(), mine.iter().map(|(a, b)| b - a).sum::<i64>());
            }
        }
    }

    #[test]
    fn batches_hold_at_most_u32_max_records() {
        let mut order = vec![(3, u32::MAX - 2)];
        add_batch(&mut order, 3, 5);
        add_batch(&mut order, 1, 2);
        add_batch(&mut order, 1, 4);
        assert_eq!(order, vec![(3, u32::MAX), (3, 3), (1, 6)]);
    }

    #[test]
    fn a_record_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Rec>(), 64);
    }

    /// A window in the model of `sched_picks_what_a_scan_of_the_windows_picks`: its CPU passes
    /// (CPU, status), its matching, its shards to do and running (a bit each).
    type Model = (Vec<(usize, Status)>, Status, u64, u64);

    /// The first task the scan of every window finds, as the scheduler picked before it kept
    /// the tasks that can run (`Sched`'s comment): per window in order, a waiting CPU pass
    /// whose CPU has no pass left in an earlier window, then the matching when the window's
    /// CPU passes and the matchings before are done, then a shard whose passes in earlier
    /// windows are done.
    fn scan(windows: &[Model]) -> Option<(u64, Pass, usize)> {
        let mut busy = std::collections::HashSet::new();
        let (mut shards_behind, mut requests_behind) = (0u64, false);
        for (seq, (cpus, requests, todo, running)) in windows.iter().enumerate() {
            let seq = seq as u64;
            for (i, &(cpu, st)) in cpus.iter().enumerate() {
                if st == Status::Waiting && !busy.contains(&cpu) {
                    return Some((seq, Pass::Cpu, i));
                }
                if st != Status::Done {
                    busy.insert(cpu);
                }
            }
            let cpus_left = cpus.iter().filter(|c| c.1 != Status::Done).count();
            if cpus_left == 0 && *requests == Status::Waiting && !requests_behind {
                return Some((seq, Pass::Requests, 0));
            }
            if *requests == Status::Done {
                let ready = todo & !shards_behind;
                if ready != 0 {
                    return Some((seq, Pass::Shard, ready.trailing_zeros() as usize));
                }
            } else {
                requests_behind = true;
            }
            shards_behind |= todo | running;
            if *requests != Status::Done {
                shards_behind = ALL_SHARDS;
            }
        }
        None
    }

    proptest! {
        /// The scheduler picks what a scan of every window would, through any interleaving of
        /// windows posted, tasks picked and tasks done, and every task runs once.
        #[test]
        fn sched_picks_what_a_scan_of_the_windows_picks(
            windows in prop::collection::vec((prop::collection::vec(0usize..5, 0..5), 0u64..16), 1..10),
            steps in prop::collection::vec(0u32..1000, 1..400),
        ) {
            let mut sched = Sched::default();
            // The model of the windows, and the tasks running.
            let mut model: Vec<Model> = Vec::new();
            let mut running: Vec<(u64, Pass, usize)> = Vec::new();
            let mut ran = 0;
            let total: usize = windows.iter().map(|(cpus, todo)| cpus.len() + 1 + todo.count_ones() as usize).sum();
            let mut posted = 0;
            let mut gone = Vec::new();
            // Then post, pick and finish in turn until all is done.
            for step in steps.iter().copied().chain((0..3 * (total + windows.len()) as u32).map(|k| k % 3)) {
                match step % 3 {
                    0 if posted < windows.len() => {
                        // A window's CPUs are distinct.
                        let mut cpus = windows[posted].0.clone();
                        cpus.sort_unstable();
                        cpus.dedup();
                        let n = cpus.len().max(1);
                        cpus.rotate_left(step as usize / 3 % n);
                        sched.push(cpus.iter().map(|&cpu| CpuWork { cpu, parts: Vec::new(), out: None }).collect());
                        model.push((cpus.iter().map(|&c| (c, Status::Waiting)).collect(), Status::Waiting, 0, 0));
                        posted += 1;
                    }
                    1 | 0 => {
                        let want = scan(&model);
                        let got = sched.take().map(|r| (r.seq, r.kind, r.index));
                        prop_assert_eq!(got, want);
                        let Some((seq, kind, i)) = got else { continue };
                        let w = &mut model[seq as usize];
                        match kind {
                            Pass::Cpu => w.0[i].1 = Status::Running,
                            Pass::Requests => w.1 = Status::Running,
                            Pass::Shard => {
                                w.2 &= !(1 << i);
                                w.3 |= 1 << i;
                            }
                        }
                        running.push((seq, kind, i));
                    }
                    _ => {
                        if running.is_empty() {
                            continue;
                        }
                        let (seq, kind, i) = running.swap_remove(step as usize / 3 % running.len());
                        let w = &mut model[seq as usize];
                        match kind {
                            Pass::Cpu => {
                                w.0[i].1 = Status::Done;
                                sched.cpu_done(seq, i, None);
                            }
                            Pass::Requests => {
                                w.1 = Status::Done;
                                w.2 = windows[seq as usize].1;
                                sched.requests_done(seq, w.2);
                            }
                            Pass::Shard => {
                                w.3 &= !(1 << i);
                                sched.shard_done(seq, i);
                            }
                        }
                        ran += 1;
                        sched.pop_done(&mut gone);
                    }
                }
            }
            prop_assert_eq!(posted, windows.len());
            prop_assert_eq!(ran, model.iter().map(|(cpus, ..)| cpus.len()).sum::<usize>() + windows.len() + windows.iter().map(|w| w.1.count_ones() as usize).sum::<usize>());
            prop_assert!(sched.windows.is_empty() && sched.ready.is_empty(), "every window done and gone");
            prop_assert_eq!(gone.len(), windows.len());
        }
    }

    proptest! {
        /// `first_from` is `partition_point`, whatever the spread of the times (even, bunched,
        /// repeated, at the extremes of `i64`) and wherever the time searched falls.
        #[test]
        fn first_from_is_partition_point(mut v in prop::collection::vec(prop_oneof![0i64..50, 0i64..1_000_000, Just(i64::MIN), Just(i64::MAX)], 0..200), at in prop_oneof![-5i64..60, 0i64..1_000_000, Just(i64::MIN), Just(i64::MAX)]) {
            v.sort_unstable();
            prop_assert_eq!(first_from(&v, at, |&x| x), v.partition_point(|&x| x < at));
            for &x in &v {
                prop_assert_eq!(first_from(&v, x, |&x| x), v.partition_point(|&y| y < x));
            }
        }

        /// `merged` gives every item in key order, on equal keys the earlier part's first (a
        /// stable sort of the parts one after the other), with few parts or many.
        #[test]
        fn merged_is_a_stable_sort(parts in prop::collection::vec(prop::collection::vec(0i64..20, 0..30), 0..12)) {
            let parts: Vec<Vec<(EventKey, usize)>> = parts
                .into_iter()
                .enumerate()
                .map(|(i, mut v)| {
                    v.sort_unstable();
                    v.into_iter().map(|ns| (EventKey { ns, stream: 0, pos: 0 }, i)).collect()
                })
                .collect();
            let mut want: Vec<(EventKey, usize)> = parts.concat();
            want.sort_by_key(|x| x.0);
            let mut got = Vec::new();
            merged(parts.iter().map(Vec::as_slice).collect(), |x| x.0, |x| got.push(*x));
            prop_assert_eq!(got, want);
        }

        /// The split replay — its per-CPU and per-shard passes run by workers at any time, or
        /// by the merges (beyond the backlog) and `finish` — and merges in any tree give the
        /// graph of the serial replay (both passes record by record) of every record sorted by
        /// key.
        #[test]
        fn split_replay_is_the_serial_replay(seed in 1u64..10_000, cpus in 1u64..5, slices in 1i64..30, per_slice in 0usize..40, assist_every in 0usize..4, has_waking: bool, slice in 1usize..200) {
            let chunks = chunks(seed, cpus, slices, per_slice);
            let want = serial(&chunks, has_waking);
            let mut all: Vec<Rec> = chunks.iter().flat_map(|(_, r)| r.iter().copied()).collect();
            all.sort_by_key(|r| r.key);
            let mut parts: Vec<&[Rec]> = chunks.iter().map(|(_, r)| r.as_slice()).collect();
            let mut merged = Vec::new();
            let mut order = Vec::new();
            merge_order(parts.clone(), |r| r.key, &mut order);
            for (i, n) in order {
                let (taken, rest) = parts[i as usize].split_at(n as usize);
                merged.extend(taken.iter().map(|r| r.key));
                parts[i as usize] = rest;
            }
            prop_assert!(merged == all.iter().map(|r| r.key).collect::<Vec<_>>());

            let mut a = GraphAnalysis::new(&TraceSet { traces: Vec::new() });
            a.has_waking = has_waking;
            a.slice = slice;
            // Left to right, as the engine merges; the workers' sorting between some merges.
            let (mut st, waiting, busy) = left_to_right(&a, &chunks, assist_every, |_| {});
            // Without workers, a merge sorts windows itself beyond a backlog.
            prop_assert!(waiting <= WAITING + 1);
            prop_assert!(!busy);
            a.end_merges(&mut st);
            if assist_every == 1 {
                if let Some(bg) = a.background(&st) {
                    bg.assist();
                }
            }
            prop_assert!(a.finish(st) == want, "left to right");
            // Right to left: the replay starts at the last merge.
            let mut acc: Option<GraphState> = None;
            for (i, c) in chunks.iter().enumerate().rev() {
                let s = state(&a, i, c);
                acc = Some(match acc.take() {
                    None => s,
                    Some(later) => a.merge(s, later),
                });
            }
            prop_assert!(a.finish(acc.unwrap_or_default()) == want, "right to left");
        }
    }
}
