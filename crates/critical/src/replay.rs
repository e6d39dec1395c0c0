//! The replay that builds the [`ExecutionGraph`], split in two so that both halves run in
//! parallel.
//!
//! What a record means depends on two kinds of state: its CPU's (the thread running there, the
//! context stack of interrupts, the soft IRQs raised) and the threads' it names (their chains).
//! A CPU's state depends only on that CPU's records, in order; a thread's chain only on what
//! its records — on any CPU — say of it, in order, once the CPU's side is known. So the replay
//! is two passes, each sharded by the entity its state belongs to (*Parallel trace analysis*,
//! 2019, section 4.2: what a shard cannot know is handed on, resolved, to the shard that can):
//!
//! * the CPU pass ([`CpuReplay`]) replays one CPU's records and writes, for each thread a
//!   record concerns, an [`Op`]: what the record does to that thread, with what the CPU knew
//!   then (the thread running before, its last event, the source of a wake-up);
//! * the thread pass ([`ThreadShard`]) applies the ops of its threads in the trace's total
//!   order of events.
//!
//! Two things cross entities: lost events (a wait that ends without a wake-up after a loss is
//! unknown because of it, and a thread waiting for a CPU may have run on the CPU that lost
//! them), sent to every thread shard as an op; and block requests, issued on one CPU and
//! completed on another: the CPU pass writes the facts ([`Fact`]), [`Requests`] matches them
//! in key order, and a wake-up in the completion's interrupt reads the match by the
//! completion's key. The waits' [`Wake`]s are numbered per shard, in order, and shard after
//! shard in the graph ([`finish`]): the same numbering for any cut of the replay.
//!
//! [`Builder`] runs both passes one record at a time (the serial replay); `build.rs` runs them
//! per window of records, per CPU and per shard, on the engine's workers.
//!
//! Where only the waits' reasons are wanted (`tracelens threads`, `join.rs`), the same passes
//! keep no graph: a wait's wake is kept as its reason in the state ([`reason_state`]), the CPU
//! pass keeps no interrupts, and the thread pass hands on each chain's final steps as
//! [`Sealed`] marks and drops them — a step of an ended wait ([`ended_wait`]) is never given to
//! `Thread::set` nor equal to a state it is given, so once a step follows it, no later op can
//! change it or what comes before: the chain keeps only what follows it.

use std::collections::BTreeMap;

use tracelens_analysis::kernel::{softirq, IdMap};
use tracelens_analysis::EventKey;

use crate::build::{Rec, WakeEvent, What};
use crate::graph::{wait_state, By, Blocks, Ctx, Device, ExecutionGraph, Interrupt, State, Step, Thread, Vector, Wake, WakeId, Why};
use crate::waits::WaitReason;

/// Thread shards of the replay (a power of two).
pub(crate) const SHARDS: usize = 32;

/// The shard of thread `tid` (a multiplicative hash: ids that follow each other spread).
#[inline]
pub(crate) fn shard_of(tid: i64) -> usize {
    ((tid as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SHARDS.trailing_zeros())) as usize
}

/// `prev_state` bits of a thread that exited (`EXIT_DEAD`, `EXIT_ZOMBIE`; older kernels
/// switch an exiting thread out a last time with `TASK_DEAD`, 64, after
/// `sched_process_exit`). Runnable (preempted) is `prev_state & 0xff == 0`: the bits above
/// are the preemption marks (`TASK_REPORT_MAX`, `TASK_STATE_MAX`) of various kernels (records
/// keep only the low byte).
const EXITED: u8 = 16 | 32;

/// What a record does to one thread, with what its CPU knew then.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Does {
    /// Its own events ran on `cpu` from the key's time to `last` (`current`: the thread the
    /// CPU ran before; `cpu_last`: the CPU's last event before).
    Ran { cpu: u32, last: i64, current: Option<i64>, cpu_last: i64 },
    /// It stopped running on `cpu` at a time not recorded.
    LostTrack { cpu: u32 },
    /// Switched out on `cpu` for `next`.
    SwitchedOut { cpu: u32, prev_state: u8, next: i64, current: Option<i64>, cpu_last: i64 },
    /// Switched in on `cpu`.
    SwitchedIn { cpu: u32 },
    /// Woken, from `src` ([`Wake::Pending`]: by a `sched_wakeup` where `sched_waking` is
    /// traced, which only ends a wait whose wake-up was not recorded).
    Woken { src: Wake },
    /// Woken in `ctx`, where the block request that completed at `at` was.
    WokenByRequest { ctx: Ctx, at: EventKey },
    /// Forked by `parent`.
    Forked { parent: i64 },
    /// `sched_process_exit`.
    Exiting,
    /// Asleep in the state dump.
    Asleep,
    /// Events were lost on `cpu`, where it ran, after the CPU's event at `from`.
    LostOn { cpu: u32, from: i64 },
    /// Events were lost (on any CPU) after `from` (`i64::MIN`: CPU unknown): for every shard.
    Loss { from: i64 },
}

/// An op: what the record at `key` does to thread `tid`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Op {
    pub(crate) key: EventKey,
    pub(crate) tid: i64,
    pub(crate) does: Does,
}

/// A block request's issue (with who issued it, when in a thread's context) or completion,
/// for [`Requests`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fact {
    pub(crate) key: EventKey,
    dev: u64,
    sector: u64,
    issued: Option<Option<By>>,
}

/// Block requests issued and not completed, and what each completion found.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Requests {
    issued: IdMap<(u64, u64), Option<By>>,
    /// By completion key: the issue it completed, when known.
    completed: IdMap<EventKey, Option<By>>,
}

impl Requests {
    /// Applies a fact (facts come in key order).
    pub(crate) fn apply(&mut self, f: &Fact) {
        match f.issued {
            Some(by) => {
                self.issued.insert((f.dev, f.sector), by);
            }
            None => {
                let by = self.issued.remove(&(f.dev, f.sector)).flatten();
                self.completed.insert(f.key, by);
            }
        }
    }

    /// The issue the completion at `key` found.
    pub(crate) fn completion(&self, key: &EventKey) -> Option<By> {
        self.completed.get(key).copied().flatten()
    }
}

/// A frame of a CPU's context stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Frame {
    ctx: Ctx,
    /// Hard IRQs: the device its handler serves.
    device: Device,
    begin: i64,
    /// Soft IRQs: who raised this one from its own context, and when.
    raised: Option<By>,
    /// A block request completed in it: the completion's key.
    block: Option<EventKey>,
    /// A packet was received in it.
    net: bool,
}

/// What the replay knows of a CPU: the CPU pass's state.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct CpuReplay {
    /// The thread running (0: idle), if known.
    current: Option<i64>,
    /// When `current` last changed.
    changed: i64,
    /// The time of the last event of the running thread.
    last_ev: i64,
    /// Whether the context stack is known (a switch or a system call was seen since the
    /// start or the last loss).
    known: bool,
    stack: Vec<Frame>,
    /// Per soft IRQ vector, the pending raise (`Some(None)`: raised from an interrupt).
    raised: [Option<Option<By>>; softirq::NAMES.len()],
    pub(crate) interrupts: Blocks<Interrupt>,
    /// Whether a record needed the CPU's state (the graph lists the interrupts of CPUs up to
    /// the last such one).
    pub(crate) touched: bool,
    /// The interrupts are not kept (the wait reasons alone need none: [`Wakes::reasons`]).
    pub(crate) no_interrupts: bool,
}

/// What the CPU pass writes: ops by thread shard (each in key order), block facts.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Out {
    pub(crate) ops: Vec<Vec<Op>>,
    pub(crate) facts: Vec<Fact>,
}

impl Default for Out {
    fn default() -> Self {
        Out { ops: vec![Vec::new(); SHARDS], facts: Vec::new() }
    }
}

impl Out {
    /// Adds `op` to its thread's shard (lost events: to every shard).
    #[inline]
    fn push(&mut self, op: Op) {
        if matches!(op.does, Does::Loss { .. }) {
            self.ops.iter_mut().for_each(|o| o.push(op));
        } else {
            self.ops[shard_of(op.tid)].push(op);
        }
    }

    /// Empties it, keeping its room.
    pub(crate) fn clear(&mut self) {
        self.ops.iter_mut().for_each(Vec::clear);
        self.facts.clear();
    }
}

impl CpuReplay {
    /// Replays record `r` (of this CPU; records come in key order), writing its ops and facts.
    pub(crate) fn apply(&mut self, r: &Rec, has_waking: bool, out: &mut Out) {
        let (key, ns, cpu) = (r.key, r.key.ns, r.cpu);
        let op = |out: &mut Out, tid: i64, does: Does| out.push(Op { key, tid, does });
        if cpu == u32::MAX {
            // Lost events at the end of a packet, CPU unknown.
            if r.what == What::Lost {
                op(out, 0, Does::Loss { from: i64::MIN });
            }
            return;
        }
        if let Some(tid) = r.tid() {
            if !matches!(r.what, What::Evidence { .. }) {
                self.evidence(key, cpu, tid, ns, ns, false, out);
            }
        }
        match r.what {
            What::Switch { prev, next, prev_state } => {
                self.touched = true;
                // Switches happen outside interrupts: frames still open lost their exits.
                self.stack.clear();
                self.known = true;
                let (current, cpu_last) = (self.current, self.last_ev);
                if let Some(x) = current.filter(|&x| x != 0 && x != prev) {
                    op(out, x, Does::LostTrack { cpu });
                }
                if prev != 0 {
                    op(out, prev, Does::SwitchedOut { cpu, prev_state, next, current, cpu_last });
                }
                if next != 0 {
                    op(out, next, Does::SwitchedIn { cpu });
                }
                self.current = Some(next);
                self.changed = ns;
                self.last_ev = ns;
            }
            What::Waking { tid, how } => {
                if tid == 0 {
                    return;
                }
                if how == WakeEvent::Wakeup && has_waking {
                    // Only where its sched_waking was not recorded.
                    op(out, tid, Does::Woken { src: Wake::Pending });
                    return;
                }
                self.touched = true;
                let does = match self.source(r.tid()) {
                    (Wake::Block { ctx, .. }, Some(at)) => Does::WokenByRequest { ctx, at },
                    (src, _) => Does::Woken { src },
                };
                op(out, tid, does);
            }
            What::Fork { parent, child } => op(out, child, Does::Forked { parent }),
            What::Exit { tid } => op(out, tid, Does::Exiting),
            What::Asleep { tid } => op(out, tid, Does::Asleep),
            What::IrqEntry { irq, device } => self.push(Frame { ctx: Ctx::Irq(irq), device, begin: ns, raised: None, block: None, net: false }),
            What::IrqExit { irq } => self.pop(ns, Ctx::Irq(irq)),
            What::SoftirqEntry { vec } => {
                let raised = self.raised.get_mut(vec as usize).and_then(Option::take).flatten();
                self.push(Frame { ctx: Ctx::Softirq(vec), device: Device::Other, begin: ns, raised, block: None, net: false });
            }
            What::SoftirqExit { vec } => self.pop(ns, Ctx::Softirq(vec)),
            What::SoftirqRaise { vec } => {
                self.touched = true;
                let by = if self.stack.is_empty() && self.known { r.tid().or(self.current).and_then(|t| By::new(t, ns)) } else { None };
                if let Some(slot) = self.raised.get_mut(vec as usize) {
                    if slot.is_none() {
                        *slot = Some(by);
                    }
                }
            }
            What::HrtimerEntry => self.push_ctx(ns, Ctx::Hrtimer),
            What::HrtimerExit => self.pop(ns, Ctx::Hrtimer),
            What::VectorEntry(v) => self.push_ctx(ns, Ctx::Vector(v)),
            What::VectorExit(v) => self.pop(ns, Ctx::Vector(v)),
            What::BlockIssue { dev, sector } => {
                self.touched = true;
                let by = if self.stack.is_empty() { r.tid().or(self.current).and_then(|t| By::new(t, ns)) } else { None };
                out.facts.push(Fact { key, dev, sector, issued: Some(by) });
            }
            What::BlockComplete { dev, sector } => {
                self.touched = true;
                out.facts.push(Fact { key, dev, sector, issued: None });
                if let Some(f) = self.stack.last_mut() {
                    f.block = Some(key);
                }
            }
            What::NetReceive => {
                self.touched = true;
                if let Some(f) = self.stack.last_mut() {
                    f.net = true;
                }
            }
            What::Evidence { last_ns, syscall } => {
                if let Some(tid) = r.tid() {
                    self.evidence(key, cpu, tid, ns, last_ns, syscall, out);
                }
            }
            What::Lost => {
                // The events were lost after the CPU's last event (`ns` is the first event
                // after them): what the CPU ran since is not known, and its last known event
                // stays where it was.
                let from = self.last_ev;
                op(out, 0, Does::Loss { from });
                self.touched = true;
                self.known = false;
                self.stack.clear();
                let current = self.current.take();
                self.changed = ns;
                if let Some(x) = current.filter(|&x| x != 0) {
                    op(out, x, Does::LostOn { cpu, from });
                }
            }
        }
    }

    fn push(&mut self, f: Frame) {
        self.touched = true;
        self.stack.push(f);
    }

    fn push_ctx(&mut self, ns: i64, ctx: Ctx) {
        self.push(Frame { ctx, device: Device::Other, begin: ns, raised: None, block: None, net: false });
    }

    /// The handler of `ctx` ends: frames above it (whose exits were missed) go with it. An exit
    /// without its entry leaves the context unknown.
    fn pop(&mut self, ns: i64, ctx: Ctx) {
        self.touched = true;
        let Some(i) = self.stack.iter().rposition(|f| f.ctx == ctx) else {
            self.stack.clear();
            self.known = false;
            return;
        };
        let outer = self.stack[0];
        self.stack.truncate(i);
        if self.stack.is_empty() && !self.no_interrupts {
            self.interrupts.push(Interrupt { begin_ns: outer.begin, end_ns: ns, ctx: outer.ctx });
        }
    }

    /// Thread `tid` (0: the idle task) ran on `cpu` from `first` to `last` (its own events).
    #[allow(clippy::too_many_arguments)]
    fn evidence(&mut self, key: EventKey, cpu: u32, tid: i64, first: i64, last: i64, syscall: bool, out: &mut Out) {
        self.touched = true;
        let current = self.current;
        if current != Some(tid) {
            if let Some(x) = current.filter(|&x| x != 0) {
                out.push(Op { key, tid: x, does: Does::LostTrack { cpu } });
            }
            self.current = Some(tid);
            self.changed = first;
        }
        if tid != 0 {
            out.push(Op { key, tid, does: Does::Ran { cpu, last, current, cpu_last: self.last_ev } });
        }
        self.last_ev = self.last_ev.max(last);
        if syscall {
            self.stack.clear();
            self.known = true;
        }
    }

    /// The source of a wake-up on this CPU now, from its context (and the completion whose
    /// issue it takes).
    fn source(&self, ctx_tid: Option<i64>) -> (Wake, Option<EventKey>) {
        if let Some(f) = self.stack.last() {
            if let Some(at) = f.block {
                return (Wake::Block { ctx: f.ctx, issued: None }, Some(at));
            }
            let from = f.raised;
            if f.net {
                return (Wake::Network { ctx: f.ctx, from }, None);
            }
            let w = match f.ctx {
                Ctx::Hrtimer | Ctx::Vector(Vector::LocalTimer) => Wake::Timer(f.ctx),
                Ctx::Softirq(v) if softirq::is_timer(v) => Wake::Timer(f.ctx),
                Ctx::Softirq(v) if softirq::is_network(v) => Wake::Network { ctx: f.ctx, from },
                Ctx::Softirq(softirq::BLOCK) => Wake::Block { ctx: f.ctx, issued: None },
                Ctx::Vector(v) if v.is_ipi() => Wake::Ipi(f.ctx),
                Ctx::Irq(_) => match f.device {
                    Device::Block => Wake::Block { ctx: f.ctx, issued: None },
                    Device::Network => Wake::Network { ctx: f.ctx, from: None },
                    Device::Input => Wake::UserInput(f.ctx),
                    Device::Other => Wake::Other(f.ctx),
                },
                ctx => Wake::Other(ctx),
            };
            return (w, None);
        }
        if !self.known {
            return (Wake::Unknown(Why::Context), None);
        }
        let w = match ctx_tid.or(self.current) {
            Some(0) => Wake::Other(Ctx::Idle),
            Some(t) => Wake::Task(t),
            None => Wake::Unknown(Why::Context),
        };
        (w, None)
    }
}

/// What ended the waits of a shard: numbered in a list (the graph's [`ExecutionGraph::wakes`]),
/// or, where only the waits' reasons are wanted (`tracelens threads`), the reason kept in the
/// state itself ([`reason_state`]): no list that grows with the trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Wakes {
    pub(crate) list: Vec<Wake>,
    pub(crate) reasons: bool,
}

impl Wakes {
    /// The state of a thread waiting until `w`.
    fn state(&mut self, w: Wake) -> State {
        if self.reasons {
            reason_state(w)
        } else {
            wait_state(&mut self.list, w)
        }
    }
}

/// The state of a thread waiting until `w`, where only the wait's reason is kept: as
/// [`wait_state`], but a wake that needs the list is `Blocked` with its [`WaitReason`] as the
/// id ([`reason_of`] reads it back). Ids may repeat: `Thread::set` is never given an ended
/// wait's state, so no two of them are compared.
pub(crate) fn reason_state(w: Wake) -> State {
    let small = |t: i64| i32::try_from(t).ok();
    match w {
        Wake::Pending => State::Blocked(WakeId::PENDING),
        Wake::Task(t) if small(t).is_some() => State::WokenBy(t as i32),
        Wake::Created(t) if small(t).is_some() => State::CreatedBy(t as i32),
        w => State::Blocked(WakeId(WaitReason::of(w).unwrap_or(WaitReason::Unknown) as u32)),
    }
}

/// The reason of the wait a thread in `state` is in, as `threads` reports it, for a state of
/// [`reason_state`] (the time a thread is not waiting, or waits to be created, is `Unknown`).
pub(crate) fn reason_of(state: State) -> WaitReason {
    match state {
        State::Blocked(WakeId::PENDING) => WaitReason::NotWoken,
        State::Blocked(WakeId(r)) => WaitReason::ALL.get(r as usize).copied().unwrap_or(WaitReason::Unknown),
        State::WokenBy(_) => WaitReason::Thread,
        _ => WaitReason::Unknown,
    }
}

/// Whether `state` is that of an ended wait (its wake known): `Thread::set` is never given
/// such a state, so a step in it that has a step after it is never the last step again — it
/// and the steps before it are final (see [`Sealed`]).
fn ended_wait(state: State) -> bool {
    matches!(state, State::Blocked(id) if id != WakeId::PENDING) || matches!(state, State::WokenBy(_) | State::CreatedBy(_))
}

/// What a shard that keeps only the wait reasons hands on of a thread's chain (to a
/// [`crate::join::WaitJoin`]), in the order of its ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sealed {
    pub(crate) tid: i64,
    pub(crate) ns: i64,
    pub(crate) mark: Mark,
}

/// See [`Sealed`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mark {
    /// From `ns` on, the thread's state has this reason (until the next `From`).
    From(WaitReason),
    /// The reasons before `ns` are final.
    Upto,
    /// The thread's chain starts again (a fork of an exited thread's id): every time before
    /// `ns` is now before the thread existed (reason `Unknown`), and what came before is void.
    Reborn,
}

/// The thread pass's state: the threads of one shard, the waits' wakes they numbered, and the
/// time of the latest lost events.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ThreadShard {
    pub(crate) threads: IdMap<i64, Thread>,
    pub(crate) wakes: Wakes,
    /// Reasons only: the final parts of the chains, not handed on yet (the chains keep only
    /// what may still change).
    pub(crate) sealed: Vec<Sealed>,
    /// The time of the latest op applied.
    pub(crate) last_ns: i64,
    last_loss: Option<i64>,
    /// Threads made runnable since the latest lost events (some may have changed since): a
    /// loss makes those still runnable unknown.
    queued: IdMap<i64, ()>,
    /// Whether [`finalize`](Self::finalize) ran.
    done: bool,
}

impl ThreadShard {
    /// A shard that keeps only what the waits' reasons need: ended waits' reasons in their
    /// states ([`reason_state`]), and of each thread's chain only the steps that may still
    /// change, the rest handed on as [`Sealed`] marks.
    pub(crate) fn reasons_only() -> ThreadShard {
        ThreadShard { wakes: Wakes { list: Vec::new(), reasons: true }, ..ThreadShard::default() }
    }

    /// Applies `op` (ops come in key order); `completion` gives the issue a block request's
    /// completion found.
    pub(crate) fn apply(&mut self, op: &Op, completion: impl Fn(&EventKey) -> Option<By>) {
        let (ns, tid) = (op.key.ns, op.tid);
        self.last_ns = ns;
        let wakes = &mut self.wakes;
        let reasons = wakes.reasons;
        let sealed = &mut self.sealed;
        match op.does {
            Does::Loss { from } => {
                self.last_loss = Some(ns);
                // A runnable thread may have run on the CPU that lost events, from their start
                // to its next known event.
                for (tid, ()) in self.queued.drain() {
                    if let Some(t) = self.threads.get_mut(&tid) {
                        if waits_for_cpu(t.state()) {
                            t.set(t.since().max(from), State::Unknown(Why::Lost));
                        }
                    }
                }
            }
            Does::Ran { cpu, last, current, cpu_last } => {
                let first = ns;
                let t = thread_in(&mut self.threads, tid, last);
                match t.state() {
                    Some(State::Running { cpu: c }) if c == cpu => {}
                    Some(State::Running { .. }) => {
                        let at = t.last_seen.max(t.since());
                        t.set(at, State::Unknown(Why::MissedSwitch));
                        t.set(first, State::Running { cpu });
                    }
                    state => {
                        end_wait(wakes, t, Wake::Unknown(Why::NoWakeup));
                        // It was switched in after the CPU's previous thread's last event, at a
                        // time not recorded.
                        let from = t.since().max(cpu_last);
                        if !matches!(state, None | Some(State::Unknown(_))) && from < first {
                            t.set(from, missed_switch_in(cpu, current, state));
                        }
                        t.set(first, State::Running { cpu });
                    }
                }
                t.last_seen = last;
                if reasons {
                    seal(t, tid, sealed);
                }
            }
            Does::LostTrack { cpu } => {
                if let Some(t) = self.threads.get_mut(&tid) {
                    if t.state() == Some(State::Running { cpu }) {
                        let at = t.last_seen.max(t.since());
                        t.set(at, State::Unknown(Why::MissedSwitch));
                    }
                }
            }
            Does::SwitchedOut { cpu, prev_state, next, current, cpu_last } => {
                let t = thread_in(&mut self.threads, tid, ns);
                // It ran here before `ns`, since a time not recorded (unless that is known).
                if t.state() != Some(State::Running { cpu }) && !matches!(t.state(), None | Some(State::Unknown(_))) {
                    let from = t.since().max(cpu_last);
                    if from < ns {
                        t.set(from, missed_switch_in(cpu, current, t.state()));
                    }
                }
                let runnable = prev_state == 0;
                let state = if prev_state & EXITED != 0 || (t.exiting && !runnable) {
                    t.died_ns = Some(ns);
                    State::Gone
                } else if runnable {
                    self.queued.insert(tid, ());
                    State::Preempted { by: next as i32 }
                } else {
                    State::Blocked(WakeId::PENDING)
                };
                t.set(ns, state);
                t.last_seen = ns;
            }
            Does::SwitchedIn { cpu } => {
                let t = thread_in(&mut self.threads, tid, ns);
                let since = t.since();
                match t.state() {
                    Some(State::Running { cpu: c }) if c != cpu => {
                        let at = t.last_seen.max(t.since());
                        t.set(at, State::Unknown(Why::MissedSwitch));
                    }
                    Some(State::Blocked(_)) => {
                        let why = if self.last_loss.is_some_and(|l| l >= since) { Why::Lost } else { Why::NoWakeup };
                        end_wait(wakes, t, Wake::Unknown(why));
                    }
                    Some(State::Gone) => {
                        // A thread id used again.
                        t.set(ns, State::Unknown(Why::NotSeen));
                    }
                    _ => {}
                }
                t.set(ns, State::Running { cpu });
                t.last_seen = ns;
                if reasons {
                    seal(t, tid, sealed);
                }
            }
            Does::Woken { src: Wake::Pending } => {
                let t = thread_in(&mut self.threads, tid, ns);
                if end_wait(wakes, t, Wake::Unknown(Why::NoWakeup)) {
                    t.set(ns, State::WaitCpu);
                    self.queued.insert(tid, ());
                    if reasons {
                        seal(t, tid, sealed);
                    }
                }
            }
            Does::Woken { src } => woken(thread_in(&mut self.threads, tid, ns), wakes, ns, src, &mut self.queued, tid, reasons.then_some(sealed)),
            Does::WokenByRequest { ctx, at } => {
                let src = Wake::Block { ctx, issued: completion(&at) };
                woken(thread_in(&mut self.threads, tid, ns), wakes, ns, src, &mut self.queued, tid, reasons.then_some(sealed));
            }
            Does::Forked { parent } => {
                let fresh = self.threads.get(&tid).is_none_or(|t| t.steps.is_empty() || t.state() == Some(State::Gone));
                if fresh {
                    let created = wakes.state(Wake::Created(parent));
                    let t = thread_in(&mut self.threads, tid, ns);
                    if reasons && !t.steps.is_empty() {
                        sealed.push(Sealed { tid, ns, mark: Mark::Reborn });
                    }
                    t.steps.clear();
                    t.steps.push(Step { ns: i64::MIN, state: created });
                    t.steps.push(Step { ns, state: State::WaitCpu });
                    t.begin_ns = ns;
                    t.born_ns = Some(ns);
                    t.died_ns = None;
                    t.exiting = false;
                    self.queued.insert(tid, ());
                    if reasons {
                        seal(t, tid, sealed);
                    }
                }
            }
            Does::Exiting => thread_in(&mut self.threads, tid, ns).exiting = true,
            Does::Asleep => {
                // Only for a thread not seen yet, and it does not start its lifetime.
                self.threads.entry(tid).or_insert_with(|| {
                    let mut t = Thread::new(i64::MAX);
                    t.end_ns = i64::MIN;
                    t.steps.push(Step { ns, state: State::Blocked(WakeId::PENDING) });
                    t
                });
            }
            Does::LostOn { cpu, from } => {
                if let Some(t) = self.threads.get_mut(&tid) {
                    if t.state() == Some(State::Running { cpu }) {
                        t.set(t.since().max(from), State::Unknown(Why::Lost));
                    }
                }
            }
        }
    }

    /// Ends the replay of the shard: its wakes numbered from `first` on (the wakes of the
    /// shards before), its threads' lifetimes completed.
    pub(crate) fn finalize(&mut self, first: u32) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        for t in self.threads.values_mut() {
            if first > 0 {
                t.steps.for_each_mut(|s| {
                    if let State::Blocked(id) = &mut s.state {
                        if *id != WakeId::PENDING {
                            id.0 += first;
                        }
                    }
                });
            }
            if t.begin_ns > t.end_ns {
                // Only in the state dump.
                t.begin_ns = t.steps.first().map_or(0, |s| s.ns);
                t.end_ns = t.begin_ns;
            }
            // A thread never in a chain (only named) has no lifetime to speak of.
            if t.steps.is_empty() {
                t.steps.push(Step { ns: t.begin_ns, state: State::Unknown(Why::NotSeen) });
            }
            if let Some(d) = t.died_ns {
                t.end_ns = d;
            }
        }
    }
}

/// The first wake number of each shard: the wakes of the shards before it.
pub(crate) fn wake_offsets(counts: impl Iterator<Item = usize>) -> Vec<u32> {
    counts
        .scan(0usize, |n, c| {
            let first = *n;
            *n += c;
            Some(first as u32)
        })
        .collect()
}

/// The graph of a finished replay: the CPUs' interrupts (by CPU id), the shards' threads and
/// wakes (each shard finalized here unless it was before, with the same numbering).
pub(crate) fn finish(cpus: impl IntoIterator<Item = (u32, CpuReplay)>, mut shards: Vec<ThreadShard>, has_waking: bool) -> ExecutionGraph {
    let offsets = wake_offsets(shards.iter().map(|s| s.wakes.list.len()));
    let mut threads = BTreeMap::new();
    let mut wakes = Vec::with_capacity(shards.iter().map(|s| s.wakes.list.len()).sum());
    for (s, first) in shards.iter_mut().zip(offsets) {
        s.finalize(first);
        wakes.append(&mut s.wakes.list);
        threads.extend(std::mem::take(&mut s.threads));
    }
    let mut interrupts: Vec<Blocks<Interrupt>> = Vec::new();
    for (cpu, c) in cpus {
        if c.touched {
            let i = cpu as usize;
            if interrupts.len() <= i {
                interrupts.resize_with(i + 1, Blocks::default);
            }
            interrupts[i] = c.interrupts;
        }
    }
    ExecutionGraph { threads, interrupts, has_waking, wakes, ..ExecutionGraph::default() }
}

/// Replays records one at a time, both passes in turn (the serial replay; see the
/// [module docs](self)).
#[cfg(test)]
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Builder {
    cpus: Vec<CpuReplay>,
    shards: Vec<ThreadShard>,
    requests: Requests,
    has_waking: bool,
    out: Out,
}

#[cfg(test)]
impl Builder {
    pub(crate) fn new(has_waking: bool) -> Builder {
        Builder { has_waking, shards: vec![ThreadShard::default(); SHARDS], ..Builder::default() }
    }

    /// Applies one record (records come in the trace's total order).
    pub(crate) fn apply(&mut self, r: &Rec) {
        let mut scratch = CpuReplay::default();
        let cpu = if r.cpu == u32::MAX {
            &mut scratch
        } else {
            let i = r.cpu as usize;
            if self.cpus.len() <= i {
                self.cpus.resize_with(i + 1, CpuReplay::default);
            }
            &mut self.cpus[i]
        };
        cpu.apply(r, self.has_waking, &mut self.out);
        for f in &self.out.facts {
            self.requests.apply(f);
        }
        for (shard, ops) in self.shards.iter_mut().zip(&self.out.ops) {
            for op in ops {
                shard.apply(op, |k| self.requests.completion(k));
            }
        }
        self.out.clear();
    }

    /// The graph (names, span and counts come from the chunk states).
    pub(crate) fn finish(self) -> ExecutionGraph {
        finish(self.cpus.into_iter().enumerate().map(|(i, c)| (i as u32, c)), self.shards, self.has_waking)
    }
}

/// The state of a thread found running on a CPU whose switch to it was not recorded, from the
/// CPU's last event before (`current`: the thread `cpu` ran then; `state`: the thread's).
/// A woken thread on an idle CPU was switched in at once — the idle task runs nothing else and
/// gives way to a runnable thread as soon as it is queued (kernels that miss switches mostly
/// miss these, right after the interrupt that woke the thread) — so it was running; otherwise
/// when it was switched in is not known.
fn missed_switch_in(cpu: u32, current: Option<i64>, state: Option<State>) -> State {
    match (current, state) {
        (Some(0), Some(State::WaitCpu)) => State::Running { cpu },
        _ => State::Unknown(Why::MissedSwitch),
    }
}

/// Thread `tid` of `threads`, created at `ns` if new, its lifetime stretched to `ns`.
fn thread_in(threads: &mut IdMap<i64, Thread>, tid: i64, ns: i64) -> &mut Thread {
    let t = threads.entry(tid).or_insert_with(|| Thread::new(ns));
    t.begin_ns = t.begin_ns.min(ns);
    t.end_ns = t.end_ns.max(ns);
    t
}

/// `t` (thread `tid`) is woken at `ns` from `src` (made runnable: in `queued`); `sealed`: where
/// its final steps go when only the reasons are kept ([`seal`]).
#[allow(clippy::too_many_arguments)]
fn woken(t: &mut Thread, wakes: &mut Wakes, ns: i64, src: Wake, queued: &mut IdMap<i64, ()>, tid: i64, sealed: Option<&mut Vec<Sealed>>) {
    match t.state() {
        Some(State::Blocked(_)) => {
            if end_wait(wakes, t, src) {
                t.set(ns, State::WaitCpu);
                queued.insert(tid, ());
            }
        }
        Some(State::Running { .. } | State::Preempted { .. } | State::WaitCpu | State::WokenBy(_) | State::CreatedBy(_)) => {}
        Some(State::Unknown(_) | State::Gone) | None => {
            t.set(ns, State::WaitCpu);
            queued.insert(tid, ());
        }
    }
    if let Some(out) = sealed {
        seal(t, tid, out);
    }
}

/// Reasons only: hands on the steps of `t` (thread `tid`) that are final — those before the
/// step after its latest ended wait ([`ended_wait`]), looked for among the steps an op adds —
/// as marks (steps of the same reason as the one before are left out), and keeps the rest.
fn seal(t: &mut Thread, tid: i64, out: &mut Vec<Sealed>) {
    let n = t.steps.len();
    let Some(cut) = (n.saturating_sub(3)..n.saturating_sub(1)).rev().find(|&i| ended_wait(t.steps[i].state)).map(|i| i + 1) else { return };
    reasons_from(tid, t.steps.iter().take(cut), out);
    out.push(Sealed { tid, ns: t.steps[cut].ns, mark: Mark::Upto });
    t.steps.drop_front(cut);
}

/// The marks of `steps` of thread `tid`: where its reason changes.
fn reasons_from<'a>(tid: i64, steps: impl Iterator<Item = &'a Step>, out: &mut Vec<Sealed>) {
    let mut last = None;
    for s in steps {
        let reason = reason_of(s.state);
        if last != Some(reason) {
            out.push(Sealed { tid, ns: s.ns, mark: Mark::From(reason) });
            last = Some(reason);
        }
    }
}

/// Reasons only: hands on every step of the shard's threads as final (the end of the replay).
pub(crate) fn seal_all(shard: &mut ThreadShard) {
    for (&tid, t) in &shard.threads {
        reasons_from(tid, t.steps.iter(), &mut shard.sealed);
        shard.sealed.push(Sealed { tid, ns: i64::MAX, mark: Mark::Upto });
    }
}

/// Whether a thread in `state` waits for a CPU (preempted or woken).
fn waits_for_cpu(state: Option<State>) -> bool {
    matches!(state, Some(State::Preempted { .. } | State::WaitCpu))
}

/// Ends the wait of `t` with `w`, if it is blocked and not woken yet.
fn end_wait(wakes: &mut Wakes, t: &mut Thread, w: Wake) -> bool {
    match t.steps.last_mut() {
        Some(last) if last.state == State::Blocked(WakeId::PENDING) => {
            last.state = wakes.state(w);
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_op_is_one_cache_line_or_so() {
        assert!(std::mem::size_of::<Op>() <= 72, "{}", std::mem::size_of::<Op>());
    }
}
