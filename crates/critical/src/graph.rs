//! The execution graph: one chain of states per thread, wake-up edges between them, and the
//! interrupts each CPU served.
//!
//! # How it is built
//!
//! The replay (`replay.rs`) reads the compact records the chunks of the trace produced (see
//! `build.rs`), in the total order of the trace's events, and keeps per CPU what a replay in
//! time order knows and a chunk alone does not: the thread running on it and its context stack
//! (hard IRQ by line, soft IRQ by vector and who raised it, high-resolution timer expiry, x86
//! interrupt vector), so that each wake-up gets its source from the waker CPU's context at
//! that moment — the reading of `sched_waking` the TraceCompare thesis (2015, section 4.4.2,
//! "Critical Path Events") describes.
//!
//! A thread's chain changes state on:
//!
//! * `sched_switch`: the thread switched out is preempted (`prev_state` runnable) or blocked
//!   (anything else), or gone (it exited); the one switched in runs;
//! * a wake-up (`sched_waking`, else `sched_wakeup`; `sched_wakeup_new`): a blocked thread
//!   becomes runnable and its wait gets a [`Wake`] — another thread, or the interrupt,
//!   timer, soft IRQ or inter-processor interrupt it came from;
//! * `sched_process_fork`: the child exists from then on, runnable; before, it waited for
//!   its parent ([`Wake::Created`]);
//! * the thread's own events on a CPU (any event whose `tid` context names it): they prove it
//!   runs there, where the switch that put it there was not recorded (some kernels miss
//!   switches; see `tracelens record`'s documentation). What cannot be known then — when
//!   exactly it was switched in or out — becomes [`State::Unknown`], never the state around;
//!   except for a woken thread on an idle CPU, which the idle task gives way to at once: it
//!   runs from the end of the CPU's last event (the interrupt that woke it, mostly).
//!
//! Lost events (a CPU's discarded-events count) make the running thread of that CPU unknown
//! from the CPU's last event before them until its next event, forget the CPU's context, and
//! make a wait that ends without a recorded wake-up unknown; a thread waiting for a CPU then
//! may have run on that CPU: it is unknown from the loss's start (its own state's, if later)
//! until its next event.

use std::collections::BTreeMap;
use std::num::NonZeroI32;

use tracelens_analysis::kernel::Comm;


/// Where a wake-up (or an interrupt) ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ctx {
    /// A hard IRQ handler, by line (its name is in [`ExecutionGraph::irq_name`]).
    Irq(i32),
    /// A soft IRQ, by vector.
    Softirq(u32),
    /// A high-resolution timer's callback.
    Hrtimer,
    /// An x86 interrupt vector (local timer, inter-processor interrupts).
    Vector(Vector),
    /// The idle task, outside interrupts.
    Idle,
}

/// What kind of device an IRQ line serves, from its handler's name (a wake-up in its handler
/// is a wait for that kind of device, unless the handler completed a block request or
/// received a packet, which tell more).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Device {
    /// A disk or other block device (`ahci`, `nvme0q1`, `virtio2-req.0`, `mmc0`...).
    Block,
    /// A network interface (`eth0`, `enp3s0-rx-0`, `iwlwifi`, virtio-net's `virtio0-input.0`...).
    Network,
    /// An input device (`i8042`, a keyboard, a mouse).
    Input,
    /// Anything else.
    Other,
}

impl Device {
    /// The kind of device of the IRQ handler `name`.
    pub fn of_irq(name: &[u8]) -> Device {
        let n = String::from_utf8_lossy(name).to_ascii_lowercase();
        let has = |p: &[&str]| p.iter().any(|x| n.contains(x));
        let starts = |p: &[&str]| p.iter().any(|x| n.starts_with(x));
        if has(&["i8042", "keyboard", "kbd", "mouse", "touchpad", "hid"]) {
            Device::Input
        } else if starts(&["eth", "enp", "ens", "eno", "wl", "iwl", "mlx", "ixgbe", "i40e", "igb", "e1000", "bnx", "virtio-net"]) || has(&["-input.", "-output.", "-rx-", "-tx-", "-txrx-"]) {
            Device::Network
        } else if starts(&["ahci", "ata", "nvme", "mmc", "sdhci", "megasas", "mpt", "scsi", "virtio-blk"]) || has(&["-req", "-request"]) {
            Device::Block
        } else {
            Device::Other
        }
    }
}

/// The x86 interrupt vectors the graph tells apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Vector {
    /// The local APIC timer.
    LocalTimer,
    /// The scheduler's inter-processor interrupt.
    Reschedule,
    /// `smp_call_function` (many CPUs).
    CallFunction,
    /// `smp_call_function_single`.
    CallFunctionSingle,
    /// Deferred work run from an interrupt.
    IrqWork,
    /// Any other vector.
    Other,
}

impl Vector {
    /// The vector of an `irq_vectors` event's `NAME`.
    pub fn from_name(name: &str) -> Vector {
        match name {
            "local_timer" => Vector::LocalTimer,
            "reschedule" => Vector::Reschedule,
            "call_function" => Vector::CallFunction,
            "call_function_single" => Vector::CallFunctionSingle,
            "irq_work" => Vector::IrqWork,
            _ => Vector::Other,
        }
    }

    /// Its name, as in `irq_vectors:NAME_entry`.
    pub fn name(self) -> &'static str {
        match self {
            Vector::LocalTimer => "local_timer",
            Vector::Reschedule => "reschedule",
            Vector::CallFunction => "call_function",
            Vector::CallFunctionSingle => "call_function_single",
            Vector::IrqWork => "irq_work",
            Vector::Other => "other",
        }
    }

    /// Whether it is an inter-processor interrupt.
    pub fn is_ipi(self) -> bool {
        matches!(self, Vector::Reschedule | Vector::CallFunction | Vector::CallFunctionSingle | Vector::IrqWork)
    }
}

/// Why a stretch of a thread's time is not known.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Why {
    /// No event of the thread yet (or any more).
    NotSeen,
    /// A context switch of the thread was not recorded: it ran, or stopped running, at a time
    /// the trace does not give.
    MissedSwitch,
    /// Events were lost on its CPU.
    Lost,
    /// Its wait ended without a recorded wake-up.
    NoWakeup,
    /// The wake-up came from a CPU whose context was not known (no context switch or system
    /// call seen on it since the start or since lost events).
    Context,
}

/// A thread and a time: who sent a packet or issued a block request, and when (kept small:
/// the graph holds one [`Wake`] per wait).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct By {
    /// The thread (Linux thread ids are positive 32-bit numbers).
    pub tid: NonZeroI32,
    /// The time, ns.
    pub ns: i64,
}

impl By {
    /// `tid` at `ns`, unless `tid` is not a thread (0, the idle task, or beyond 32 bits).
    pub fn new(tid: i64, ns: i64) -> Option<By> {
        Some(By { tid: NonZeroI32::new(i32::try_from(tid).ok()?)?, ns })
    }

    /// The thread id.
    pub fn tid(&self) -> i64 {
        self.tid.get().into()
    }
}

/// What ended a wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Wake {
    /// Not woken (yet): still blocked at the end of the trace.
    Pending,
    /// Woken by this thread, in its own context.
    Task(i64),
    /// The thread did not exist yet: it was created by this thread (a fork).
    Created(i64),
    /// A timer: high-resolution timer expiry, the timer soft IRQs, the local timer.
    Timer(Ctx),
    /// The network: the network soft IRQs or an interrupt that received packets. `from`: the
    /// thread that raised the soft IRQ from its own context and when (a packet it sent over
    /// a local interface), when that is known.
    Network {
        /// Where it woke.
        ctx: Ctx,
        /// The sender and the time it raised the soft IRQ.
        from: Option<By>,
    },
    /// A block device: the completion of a request, or the block soft IRQ. `issued`: when the
    /// request that completed there was issued, and by which thread, when known.
    Block {
        /// Where it woke.
        ctx: Ctx,
        /// The request's `block_rq_issue` time and the thread it ran in, when it ran in a
        /// thread's context.
        issued: Option<By>,
    },
    /// An inter-processor interrupt.
    Ipi(Ctx),
    /// An input device's interrupt.
    UserInput(Ctx),
    /// An interrupt, soft IRQ or the idle task that says nothing of why.
    Other(Ctx),
    /// Not known.
    Unknown(Why),
}

/// Where a wait's [`Wake`] is kept: [`ExecutionGraph::wake`] (out of line, so that a
/// [`Step`] takes 16 bytes: a graph has about as many steps as context switches; waits
/// ended by a thread, the most common, need no entry: [`State::WokenBy`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WakeId(pub u32);

impl WakeId {
    /// A wait not ended yet ([`Wake::Pending`]).
    pub const PENDING: WakeId = WakeId(u32::MAX);
}

/// A thread's state from a time on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// On this CPU.
    Running {
        /// The CPU.
        cpu: u32,
    },
    /// Runnable, switched out for another thread.
    Preempted {
        /// The thread switched in (0: the idle task).
        by: i32,
    },
    /// Woken, waiting for a CPU.
    WaitCpu,
    /// Blocked, until what ended the wait ([`ExecutionGraph::wake`]).
    Blocked(WakeId),
    /// Blocked, until this thread woke it ([`Wake::Task`]).
    WokenBy(i32),
    /// Not created yet: created by this thread ([`Wake::Created`]).
    CreatedBy(i32),
    /// Not known.
    Unknown(Why),
    /// Exited.
    Gone,
}

/// A state change in a thread's chain: `state` from `ns` until the next step's time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Step {
    /// Time in ns from the clock's origin (`i64::MIN` for the time before a forked thread
    /// existed).
    pub ns: i64,
    /// The state.
    pub state: State,
}

/// A long list kept in blocks of [`Blocks::BLOCK`] items: it grows a block at a time instead
/// of being copied into a buffer twice its size (a graph holds about as many steps as the
/// trace has context switches, and as many interrupts as it has handlers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocks<T> {
    blocks: Vec<Vec<T>>,
    len: usize,
}

/// A thread's chain of steps, in time order.
pub type Steps = Blocks<Step>;

impl<T> Default for Blocks<T> {
    fn default() -> Self {
        Blocks { blocks: Vec::new(), len: 0 }
    }
}

impl<T> Blocks<T> {
    /// Items per block (the first block grows up to it).
    pub const BLOCK: usize = 4096;

    /// How many items.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Item `i`.
    pub fn get(&self, i: usize) -> Option<&T> {
        self.blocks.get(i / Self::BLOCK)?.get(i % Self::BLOCK)
    }

    /// The first item.
    pub fn first(&self) -> Option<&T> {
        self.blocks.first()?.first()
    }

    /// The last item.
    pub fn last(&self) -> Option<&T> {
        self.blocks.last()?.last()
    }

    pub(crate) fn last_mut(&mut self) -> Option<&mut T> {
        self.blocks.last_mut()?.last_mut()
    }

    /// Calls `f` on each item, in order.
    pub(crate) fn for_each_mut(&mut self, f: impl FnMut(&mut T)) {
        self.blocks.iter_mut().flatten().for_each(f);
    }

    /// The items in order.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.blocks.iter().flatten()
    }

    /// The items from `i` on.
    pub fn iter_from(&self, i: usize) -> impl Iterator<Item = &T> + '_ {
        let (b, at) = (i / Self::BLOCK, i % Self::BLOCK);
        self.blocks.get(b).map(|x| x.get(at..).unwrap_or(&[])).into_iter().flatten().chain(self.blocks.iter().skip(b + 1).flatten())
    }

    /// Appends an item.
    pub fn push(&mut self, item: T) {
        match self.blocks.last_mut() {
            Some(b) if b.len() < Self::BLOCK => b.push(item),
            last => {
                let mut b = if last.is_none() { Vec::new() } else { Vec::with_capacity(Self::BLOCK) };
                b.push(item);
                self.blocks.push(b);
            }
        }
        self.len += 1;
    }

    fn pop(&mut self) -> Option<T> {
        let b = self.blocks.last_mut()?;
        let s = b.pop();
        if b.is_empty() {
            self.blocks.pop();
        }
        self.len -= usize::from(s.is_some());
        s
    }

    pub(crate) fn clear(&mut self) {
        self.blocks.clear();
        self.len = 0;
    }

    /// Removes the first `n` items (keeping the first block's room when it is the only one).
    pub(crate) fn drop_front(&mut self, n: usize)
    where
        T: Copy,
    {
        match &mut self.blocks[..] {
            _ if n == 0 => return,
            [one] => drop(one.drain(..n.min(one.len()))),
            _ => {
                let kept: Vec<T> = self.iter_from(n).copied().collect();
                self.clear();
                kept.into_iter().for_each(|x| self.push(x));
                return;
            }
        }
        self.len = self.len.saturating_sub(n);
    }

    /// The number of leading items for which `pred` holds (`pred` must hold for a prefix), as
    /// [`slice::partition_point`].
    pub fn partition_point(&self, mut pred: impl FnMut(&T) -> bool) -> usize {
        let full = self.blocks.partition_point(|b| b.last().is_some_and(&mut pred));
        match self.blocks.get(full) {
            Some(b) => full * Self::BLOCK + b.partition_point(pred),
            None => self.len,
        }
    }
}

impl<T> From<Vec<T>> for Blocks<T> {
    fn from(v: Vec<T>) -> Blocks<T> {
        let mut s = Blocks::default();
        for x in v {
            s.push(x);
        }
        s
    }
}

impl<T> std::ops::Index<usize> for Blocks<T> {
    type Output = T;

    fn index(&self, i: usize) -> &T {
        &self.blocks[i / Self::BLOCK][i % Self::BLOCK]
    }
}

/// One thread of the graph.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Thread {
    /// Its chain, in time order (times strictly increasing).
    pub steps: Steps,
    /// Its lifetime in the trace: from its fork, else its first appearance, to its final
    /// switch-out, else its last appearance.
    pub begin_ns: i64,
    /// See `begin_ns`.
    pub end_ns: i64,
    /// Its fork, when in the trace.
    pub born_ns: Option<i64>,
    /// Its final switch-out, when in the trace.
    pub died_ns: Option<i64>,
    /// Its last event on a CPU (while building).
    pub(crate) last_seen: i64,
    /// `sched_process_exit` seen: its next switch-out is its last.
    pub(crate) exiting: bool,
}

impl Thread {
    /// A thread with this chain and lifetime (for graphs built by hand, e.g. in tests).
    pub fn from_steps(steps: Vec<Step>, begin_ns: i64, end_ns: i64) -> Thread {
        Thread { steps: steps.into(), begin_ns, end_ns, ..Thread::new(begin_ns) }
    }

    pub(crate) fn new(ns: i64) -> Thread {
        Thread { steps: Steps::default(), begin_ns: ns, end_ns: ns, born_ns: None, died_ns: None, last_seen: i64::MIN, exiting: false }
    }

    /// Its state at the end of its chain.
    pub(crate) fn state(&self) -> Option<State> {
        self.steps.last().map(|s| s.state)
    }

    /// The time of its last step.
    pub(crate) fn since(&self) -> i64 {
        self.steps.last().map_or(i64::MIN, |s| s.ns)
    }

    /// `state` from `ns` on (`ns` not before the last step: a step at the same time replaces
    /// it; the same state again adds nothing).
    pub(crate) fn set(&mut self, ns: i64, state: State) {
        match self.steps.last_mut() {
            Some(last) if last.state == state => {}
            Some(last) if last.ns >= ns => {
                last.state = state;
                // Merge with the step before when they are now the same.
                let n = self.steps.len();
                if n >= 2 && self.steps[n - 2].state == state {
                    self.steps.pop();
                }
            }
            _ => self.steps.push(Step { ns, state }),
        }
    }

    /// Its state at `ns` (the step holding `ns`), or `None` before its first step.
    pub fn state_at(&self, ns: i64) -> Option<State> {
        let i = self.steps.partition_point(|s| s.ns <= ns);
        i.checked_sub(1).map(|i| self.steps[i].state)
    }
}

/// An interrupt a CPU served, outermost handler first to last handler out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Interrupt {
    /// Start, ns.
    pub begin_ns: i64,
    /// End, ns.
    pub end_ns: i64,
    /// The outermost handler.
    pub ctx: Ctx,
}

/// The execution graph of a trace set (see the [module docs](self)).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExecutionGraph {
    /// The threads, by id (the idle tasks, 0, are not threads here).
    pub threads: BTreeMap<i64, Thread>,
    /// Per CPU, its interrupts in time order.
    pub interrupts: Vec<Blocks<Interrupt>>,
    /// Thread names (the latest in the trace).
    pub names: BTreeMap<i64, Comm>,
    /// IRQ handler names (the latest in the trace).
    pub irq_names: BTreeMap<i64, String>,
    /// Time of the first and last kernel event.
    pub span: Option<(i64, i64)>,
    /// Events the tracer discarded.
    pub lost_events: u64,
    /// Whether the trace has `sched_waking` (else wake-ups are `sched_wakeup`'s).
    pub has_waking: bool,
    /// What ended each wait ([`State::Blocked`]).
    pub wakes: Vec<Wake>,
}

impl ExecutionGraph {
    /// What ended the wait `id`.
    pub fn wake(&self, id: WakeId) -> Wake {
        if id == WakeId::PENDING {
            return Wake::Pending;
        }
        self.wakes.get(id.0 as usize).copied().unwrap_or(Wake::Unknown(Why::NotSeen))
    }

    /// What ended the wait of a thread in `state`, if it is waiting.
    pub fn wake_of(&self, state: State) -> Option<Wake> {
        match state {
            State::Blocked(id) => Some(self.wake(id)),
            State::WokenBy(t) => Some(Wake::Task(t.into())),
            State::CreatedBy(t) => Some(Wake::Created(t.into())),
            _ => None,
        }
    }

    /// The state of a thread waiting until `w` (for graphs built by hand).
    pub fn waiting(&mut self, w: Wake) -> State {
        wait_state(&mut self.wakes, w)
    }

    /// The name of thread `tid` (empty when the trace never names it).
    pub fn name(&self, tid: i64) -> String {
        if tid == 0 {
            return "swapper".into();
        }
        self.names.get(&tid).map(|c| c.to_string()).unwrap_or_default()
    }

    /// The name of IRQ line `irq`, when the trace gives it.
    pub fn irq_name(&self, irq: i64) -> Option<&str> {
        self.irq_names.get(&irq).map(String::as_str)
    }

    /// The interrupts of `cpu` that overlap `[begin, end)`, in time order.
    pub fn interrupts_in(&self, cpu: u32, begin: i64, end: i64) -> impl Iterator<Item = &Interrupt> + '_ {
        let list = self.interrupts.get(cpu as usize);
        let from = list.map_or(0, |l| l.partition_point(|i| i.end_ns <= begin));
        list.into_iter().flat_map(move |l| l.iter_from(from)).take_while(move |i| i.begin_ns < end)
    }
}

/// The state of a thread waiting until `w`: [`State::WokenBy`] and [`State::CreatedBy`]
/// inline, other wakes in `wakes`.
pub(crate) fn wait_state(wakes: &mut Vec<Wake>, w: Wake) -> State {
    let small = |t: i64| i32::try_from(t).ok();
    match w {
        Wake::Pending => State::Blocked(WakeId::PENDING),
        Wake::Task(t) if small(t).is_some() => State::WokenBy(t as i32),
        Wake::Created(t) if small(t).is_some() => State::CreatedBy(t as i32),
        w => {
            wakes.push(w);
            State::Blocked(WakeId(wakes.len() as u32 - 1))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::{Rec, WakeEvent, What};
    use crate::replay::Builder;
    use tracelens_analysis::EventKey;

    /// Records at increasing positions: (ns, cpu, context tid, what).
    fn replay(has_waking: bool, recs: &[(i64, u32, Option<i64>, What)]) -> ExecutionGraph {
        let mut b = Builder::new(has_waking);
        for (i, &(ns, cpu, tid, what)) in recs.iter().enumerate() {
            b.apply(&Rec::new(EventKey { ns, stream: cpu as u64, pos: i as u64 }, cpu, tid, what));
        }
        b.finish()
    }

    /// [`super::State`] with the wake of a wait in place.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum State {
        Running { cpu: u32 },
        Preempted { by: i32 },
        WaitCpu,
        Blocked(Wake),
        Unknown(Why),
        Gone,
    }

    fn steps(g: &ExecutionGraph, tid: i64) -> Vec<(i64, State)> {
        let view = |s: super::State| match s {
            super::State::Running { cpu } => State::Running { cpu },
            super::State::Preempted { by } => State::Preempted { by },
            super::State::WaitCpu => State::WaitCpu,
            s @ (super::State::Blocked(_) | super::State::WokenBy(_) | super::State::CreatedBy(_)) => State::Blocked(g.wake_of(s).unwrap()),
            super::State::Unknown(w) => State::Unknown(w),
            super::State::Gone => State::Gone,
        };
        g.threads[&tid].steps.iter().map(|s| (s.ns, view(s.state))).collect()
    }

    fn switch(prev: i64, next: i64, prev_state: i64) -> What {
        What::Switch { prev, next, prev_state: (prev_state & 0xff) as u8 }
    }

    fn waking(tid: i64) -> What {
        What::Waking { tid, how: WakeEvent::Waking }
    }

    #[test]
    fn steps_in_blocks() {
        let n = Steps::BLOCK * 2 + 17;
        let v: Vec<Step> = (0..n).map(|i| Step { ns: 10 * i as i64, state: super::State::WaitCpu }).collect();
        let mut s = Steps::from(v.clone());
        assert_eq!(s.len(), n);
        assert!(s.iter().eq(v.iter()));
        for at in [0, 5, 10 * Steps::BLOCK as i64 - 5, 10 * Steps::BLOCK as i64, 10 * n as i64 - 10, 10 * n as i64 + 99] {
            assert_eq!(s.partition_point(|x| x.ns <= at), v.partition_point(|x| x.ns <= at), "at {at}");
        }
        assert_eq!(s[Steps::BLOCK + 1], v[Steps::BLOCK + 1]);
        assert_eq!(s.get(n), None);
        assert!(s.iter_from(Steps::BLOCK - 1).eq(v[Steps::BLOCK - 1..].iter()));
        assert!(s.iter_from(n).eq(v[n..].iter()));
        for _ in 0..18 {
            s.pop();
        }
        assert_eq!((s.len(), s.last()), (n - 18, v.get(n - 19)));
        s.push(v[n - 18]);
        assert_eq!(s.last(), Some(&v[n - 18]));
        assert_eq!((s.len(), s.get(2 * Steps::BLOCK - 1)), (2 * Steps::BLOCK, Some(&v[2 * Steps::BLOCK - 1])));
    }

    #[test]
    fn a_timer_wakes_a_sleeper() {
        let g = replay(true, &[
            (100, 0, Some(10), switch(10, 0, 1)),
            (600, 0, Some(0), What::HrtimerEntry),
            (601, 0, Some(0), waking(10)),
            (602, 0, Some(0), What::HrtimerExit),
            (610, 0, Some(0), switch(0, 10, 0)),
        ]);
        assert_eq!(steps(&g, 10), vec![(100, State::Blocked(Wake::Timer(Ctx::Hrtimer))), (601, State::WaitCpu), (610, State::Running { cpu: 0 })]);
        assert_eq!(g.interrupts[0], Blocks::from(vec![Interrupt { begin_ns: 600, end_ns: 602, ctx: Ctx::Hrtimer }]));
        let t = &g.threads[&10];
        assert_eq!((t.begin_ns, t.end_ns), (100, 610));
    }

    #[test]
    fn a_task_wakes_a_thread_whose_switch_in_is_missing() {
        let g = replay(true, &[
            (50, 0, Some(0), switch(0, 20, 0)),
            (100, 1, Some(10), switch(10, 30, 1)),
            (500, 0, Some(20), waking(10)),
            (520, 1, Some(10), What::Evidence { last_ns: 530, syscall: true }),
            (540, 1, Some(10), switch(10, 0, 1)),
        ]);
        assert_eq!(
            steps(&g, 10),
            vec![(100, State::Blocked(Wake::Task(20))), (500, State::Unknown(Why::MissedSwitch)), (520, State::Running { cpu: 1 }), (540, State::Blocked(Wake::Pending))]
        );
    }

    #[test]
    fn a_thread_woken_on_an_idle_cpu_runs_from_the_end_of_the_interrupt() {
        let woken_in_idle = [
            (100, 1, Some(10), switch(10, 0, 1)),
            (600, 1, Some(0), What::HrtimerEntry),
            (601, 1, Some(0), waking(10)),
            (602, 1, Some(0), What::HrtimerExit),
            (602, 1, Some(0), What::Evidence { last_ns: 602, syscall: false }),
        ];
        let expected = vec![
            (100, State::Blocked(Wake::Timer(Ctx::Hrtimer))),
            (601, State::WaitCpu),
            (602, State::Running { cpu: 1 }),
            (620, State::Blocked(Wake::Pending)),
        ];
        let switch_out = (620, 1, Some(10), switch(10, 0, 1));
        // Its own events first show it running there.
        let g = replay(true, &[&woken_in_idle[..], &[(610, 1, Some(10), What::Evidence { last_ns: 615, syscall: true }), switch_out]].concat());
        assert_eq!(steps(&g, 10), expected);
        // Switched out without its switch in: the same, from the idle CPU's last event.
        let g = replay(true, &[&woken_in_idle[..], &[switch_out]].concat());
        assert_eq!(steps(&g, 10), expected);
    }

    #[test]
    fn wake_up_context_is_unknown_until_a_switch_or_system_call() {
        let g = replay(true, &[
            (10, 0, Some(10), switch(10, 0, 1)),
            (20, 1, Some(30), waking(10)),
            (30, 0, Some(0), switch(0, 10, 0)),
            (40, 0, Some(10), switch(10, 0, 1)),
            (50, 1, Some(30), What::Evidence { last_ns: 55, syscall: true }),
            (60, 1, Some(30), waking(10)),
        ]);
        assert_eq!(steps(&g, 10)[0], (10, State::Blocked(Wake::Unknown(Why::Context))));
        assert_eq!(steps(&g, 10)[3], (40, State::Blocked(Wake::Task(30))));
    }

    #[test]
    fn lost_events_make_the_running_thread_and_unseen_wake_ups_unknown() {
        let g = replay(true, &[
            (10, 0, None, switch(0, 10, 0)),
            (20, 1, None, switch(0, 11, 0)),
            (30, 1, None, switch(11, 0, 1)),
            (35, 0, Some(10), What::Evidence { last_ns: 36, syscall: false }),
            (40, 0, None, What::Lost),
            (50, 0, None, switch(10, 11, 0)),
        ]);
        // Unknown from its last event before the loss.
        assert_eq!(steps(&g, 10), vec![(10, State::Running { cpu: 0 }), (36, State::Unknown(Why::Lost)), (50, State::Preempted { by: 11 })]);
        assert_eq!(steps(&g, 11), vec![(20, State::Running { cpu: 1 }), (30, State::Blocked(Wake::Unknown(Why::Lost))), (50, State::Running { cpu: 0 })]);
    }

    #[test]
    fn a_loss_does_not_move_the_cpu_last_event() {
        // Found in a loaded trace: the switch out of 20 (not known running) comes right after
        // the loss, at the time of the first event after it.
        let g = replay(true, &[
            (5, 1, None, switch(0, 20, 0)),
            (10, 1, None, switch(20, 0, 1)),
            (20, 0, None, switch(0, 70, 0)),
            (30, 0, Some(70), What::Evidence { last_ns: 31, syscall: false }),
            (60, 0, None, What::Lost),
            (60, 0, None, switch(20, 40, 1)),
        ]);
        // The running thread is unknown from the CPU's last event before the loss,
        assert_eq!(steps(&g, 70), vec![(20, State::Running { cpu: 0 }), (31, State::Unknown(Why::Lost))]);
        // and so is a thread switched out after it, not known running there: it ran since then.
        assert_eq!(steps(&g, 20), vec![(5, State::Running { cpu: 1 }), (10, State::Blocked(Wake::Pending)), (31, State::Unknown(Why::MissedSwitch)), (60, State::Blocked(Wake::Pending))]);
    }

    #[test]
    fn a_thread_waiting_for_a_cpu_is_unknown_after_a_loss_on_any_cpu() {
        let g = replay(true, &[
            (5, 1, None, switch(0, 13, 0)),
            (10, 0, None, switch(11, 12, 0)),
            (12, 1, Some(13), What::Evidence { last_ns: 20, syscall: false }),
            (15, 1, Some(13), switch(13, 14, 1)),
            (25, 1, Some(14), waking(13)),
            (30, 1, Some(14), What::Evidence { last_ns: 40, syscall: false }),
            (50, 1, None, What::Lost),
            (60, 1, None, switch(14, 0, 1)),
            (70, 0, None, switch(12, 11, 0)),
            (80, 0, None, switch(11, 13, 1)),
        ]);
        // Preempted, then it may have run on CPU 1, from its last event before the loss.
        assert_eq!(steps(&g, 11), vec![(10, State::Preempted { by: 12 }), (40, State::Unknown(Why::Lost)), (70, State::Running { cpu: 0 }), (80, State::Blocked(Wake::Pending))]);
        // Woken before that: the same; then preempted (by 13's switch in: not a wait for a CPU).
        assert_eq!(steps(&g, 13)[1..], [(15, State::Blocked(Wake::Task(14))), (25, State::WaitCpu), (40, State::Unknown(Why::Lost)), (80, State::Running { cpu: 0 })]);
        // Running on another CPU, it stays known.
        assert_eq!(steps(&g, 12), vec![(10, State::Running { cpu: 0 }), (70, State::Preempted { by: 11 })]);
        // Lost events where the CPU is not known: unknown from the wait's start.
        let g = replay(true, &[(10, 0, None, switch(11, 12, 0)), (50, u32::MAX, None, What::Lost), (70, 0, None, switch(12, 11, 0))]);
        assert_eq!(steps(&g, 11), vec![(10, State::Unknown(Why::Lost)), (70, State::Running { cpu: 0 })]);
    }

    #[test]
    fn sched_wakeup_counts_only_without_sched_waking() {
        let recs = [
            (10, 0, None, switch(10, 20, 1)),
            (20, 1, None, switch(0, 30, 0)),
            (30, 1, None, What::Waking { tid: 10, how: WakeEvent::Wakeup }),
        ];
        let g = replay(false, &recs);
        assert_eq!(steps(&g, 10), vec![(10, State::Blocked(Wake::Task(30))), (30, State::WaitCpu)]);
        let g = replay(true, &recs);
        assert_eq!(steps(&g, 10), vec![(10, State::Blocked(Wake::Unknown(Why::NoWakeup))), (30, State::WaitCpu)]);
    }

    #[test]
    fn a_packet_sent_by_a_local_thread() {
        let g = replay(true, &[
            (5, 0, Some(7), switch(0, 7, 0)),
            (10, 1, Some(8), switch(8, 0, 1)),
            (20, 0, Some(7), What::SoftirqRaise { vec: 3 }),
            (21, 0, Some(7), What::SoftirqEntry { vec: 3 }),
            (22, 0, Some(7), What::NetReceive),
            (23, 0, Some(7), waking(8)),
            (24, 0, Some(7), What::SoftirqExit { vec: 3 }),
        ]);
        assert_eq!(steps(&g, 8)[0], (10, State::Blocked(Wake::Network { ctx: Ctx::Softirq(3), from: By::new(7, 20) })));
    }

    #[test]
    fn a_block_request_completes_in_an_interrupt() {
        let g = replay(true, &[
            (5, 0, Some(7), switch(0, 7, 0)),
            (10, 0, Some(7), What::BlockIssue { dev: 8, sector: 1000 }),
            (11, 0, Some(7), switch(7, 0, 2)),
            (30, 1, Some(0), What::IrqEntry { irq: 24, device: Device::Other }),
            (31, 1, Some(0), What::BlockComplete { dev: 8, sector: 1000 }),
            (32, 1, Some(0), waking(7)),
            (33, 1, Some(0), What::IrqExit { irq: 24 }),
        ]);
        assert_eq!(steps(&g, 7)[1], (11, State::Blocked(Wake::Block { ctx: Ctx::Irq(24), issued: By::new(7, 10) })));
    }

    #[test]
    fn irq_handlers_by_device() {
        for (name, d) in [
            ("i8042", Device::Input),
            ("eth0", Device::Network),
            ("virtio0-input.0", Device::Network),
            ("enp3s0-rx-1", Device::Network),
            ("nvme0q3", Device::Block),
            ("virtio2-req.0", Device::Block),
            ("ahci[0000:00:1f.2]", Device::Block),
            ("timer", Device::Other),
            ("acpi", Device::Other),
        ] {
            assert_eq!(Device::of_irq(name.as_bytes()), d, "{name}");
        }
        let wake = |device| {
            let g = replay(true, &[
                (5, 0, Some(7), switch(7, 0, 1)),
                (30, 0, Some(0), What::IrqEntry { irq: 1, device }),
                (32, 0, Some(0), waking(7)),
                (33, 0, Some(0), What::IrqExit { irq: 1 }),
            ]);
            steps(&g, 7)[0].1
        };
        assert_eq!(wake(Device::Input), State::Blocked(Wake::UserInput(Ctx::Irq(1))));
        assert_eq!(wake(Device::Network), State::Blocked(Wake::Network { ctx: Ctx::Irq(1), from: None }));
        assert_eq!(wake(Device::Other), State::Blocked(Wake::Other(Ctx::Irq(1))));
    }

    #[test]
    fn forks_exits_and_preemption() {
        let g = replay(true, &[
            (5, 0, Some(1), switch(0, 1, 0)),
            (10, 0, Some(1), What::Fork { parent: 1, child: 2 }),
            (12, 0, Some(1), What::Waking { tid: 2, how: WakeEvent::New }),
            (20, 0, Some(1), switch(1, 2, 256)),
            (30, 0, Some(2), What::Exit { tid: 2 }),
            (31, 0, Some(2), switch(2, 1, 0)),
            (40, 0, Some(1), switch(1, 2, 0)),
            (50, 0, Some(2), switch(2, 1, 16)),
        ]);
        assert_eq!(
            steps(&g, 2),
            vec![
                (i64::MIN, State::Blocked(Wake::Created(1))),
                (10, State::WaitCpu),
                (20, State::Running { cpu: 0 }),
                (31, State::Preempted { by: 1 }),
                (40, State::Running { cpu: 0 }),
                (50, State::Gone)
            ]
        );
        let t = &g.threads[&2];
        assert_eq!((t.begin_ns, t.end_ns, t.born_ns, t.died_ns), (10, 50, Some(10), Some(50)));
        assert_eq!(steps(&g, 1)[1], (20, State::Preempted { by: 2 }));
    }
}
