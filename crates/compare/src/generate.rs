//! An execution's ECCT from its critical path: the thesis's GENERATEECCT and
//! UPDATETHREADSTACK (2015, Fig. 4.3 and 4.4), over the execution graph and the stack
//! samples instead of a state history.
//!
//! For each segment of the path, in order, the time goes to a calling context:
//!
//! * **running**: the thread's stacks sampled while it ran. An instant belongs to the first
//!   sample at or after it in the same run on the CPU (a timer sample stands for the time
//!   before it; the switch-out sample ends the run), else to the last timer sample before it
//!   in the run; a run without any is `[running]` (no user frame is known);
//! * **waits** (timer, network, block device, IPI, input, blocked, unknown): the stack where
//!   the thread stopped running — the switch-out sample at the start of the wait — and a
//!   pseudo-frame for the reason: `[timer]`, `[network]`, ...;
//! * **preempted**: that stack, `[preempted]`, and under it each thread that ran on the CPU
//!   meanwhile as `[thread NAME]` with its running stacks (Fig. 4.3, lines 11–17);
//! * **block device**: the time is shared between the thread and the other threads whose
//!   block requests were in flight during the wait — at each instant, equally between the
//!   requests in flight — each other thread under `[block device]` as `[thread NAME]` with
//!   its stack when it issued (Fig. 4.3, lines 18–24, which shares equally between threads);
//! * **interrupted**: the stack at that moment and `[interrupted]`.
//!
//! A thread walked for another's wait (a [`Follow`] of the path) hangs under the waiter's
//! context: the waiter's stack where it blocked, then `[thread NAME]`, recursively. Every
//! nanosecond of the path lands in exactly one node: the ECCT's total is the duration.

use std::sync::OnceLock;

use tracelens_analysis::kernel::IdMap;
use tracelens_critical::graph::{State, Thread};
use tracelens_critical::{CriticalPath, ExecutionGraph, PathState};

use crate::collect::Request;
use crate::ecct::{pseudo, Frames, LocalEcct, ROOT};
use crate::stacks::{Kind, Samples};

/// How far (ns) a sample's time may be from the context switch it was taken at (both are
/// CLOCK_MONOTONIC readings in the same scheduler path, microseconds apart at most).
pub const TOLERANCE_NS: i64 = 200_000;

/// How far back (ns) from a wait the last sample may be, when the switch out has none.
const FALLBACK_NS: i64 = 10_000_000;

/// Frame ids of the pseudo-frames.
#[derive(Clone, Copy, Debug)]
struct Pseudo {
    running: u32,
    preempted: u32,
    interrupted: u32,
    timer: u32,
    block_device: u32,
    network: u32,
    ipi: u32,
    user_input: u32,
    blocked: u32,
    unknown: u32,
}

/// A thread's run on a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    begin: i64,
    end: i64,
    tid: i64,
    /// The time of the thread's next step (`i64::MAX`: none): the end of the run as
    /// [`Sources::stretch`] gives it.
    until: i64,
}

/// What ECCTs are made from, shared by the threads that make them.
pub(crate) struct Sources<'a> {
    graph: &'a ExecutionGraph,
    samples: &'a Samples,
    requests: &'a [Request],
    /// The longest request.
    longest_request: i64,
    pseudo: Pseudo,
    /// `[thread NAME]` of each thread of the graph.
    threads: IdMap<i64, u32>,
    /// Per CPU, the threads' runs, by start (made when a preemption first needs them).
    runs: OnceLock<Vec<Vec<Run>>>,
}

impl<'a> Sources<'a> {
    /// The sources; the pseudo-frames and the `[thread NAME]` frames are numbered in
    /// `frames` now (ECCTs are then made with `frames` read only).
    pub(crate) fn new(graph: &'a ExecutionGraph, samples: &'a Samples, requests: &'a [Request], frames: &mut Frames) -> Sources<'a> {
        let pseudo = Pseudo {
            running: frames.id(pseudo::RUNNING),
            preempted: frames.id(pseudo::PREEMPTED),
            interrupted: frames.id(pseudo::INTERRUPTED),
            timer: frames.id(pseudo::TIMER),
            block_device: frames.id(pseudo::BLOCK_DEVICE),
            network: frames.id(pseudo::NETWORK),
            ipi: frames.id(pseudo::IPI),
            user_input: frames.id(pseudo::USER_INPUT),
            blocked: frames.id(pseudo::BLOCKED),
            unknown: frames.id(pseudo::UNKNOWN),
        };
        let mut threads = IdMap::default();
        for &tid in graph.threads.keys().chain(graph.names.keys()) {
            let name = graph.name(tid);
            let name = if name.is_empty() { tid.to_string() } else { name };
            threads.insert(tid, frames.id(&pseudo::thread(&name)));
        }
        let longest_request = requests.iter().map(|r| r.complete_ns - r.issue_ns).max().unwrap_or(0);
        Sources { graph, samples, requests, longest_request, pseudo, threads, runs: OnceLock::new() }
    }

    fn thread_frame(&self, tid: i64) -> Option<u32> {
        self.threads.get(&tid).copied()
    }

    fn thread(&self, tid: i64) -> Option<&Thread> {
        self.graph.threads.get(&tid)
    }

    /// The index of `t`'s step holding `ns`.
    fn step_at(t: &Thread, ns: i64) -> Option<usize> {
        t.steps.partition_point(|s| s.ns <= ns).checked_sub(1)
    }

    /// The run on a CPU of `tid` that holds `ns`: (start, end).
    fn stretch(&self, tid: i64, ns: i64) -> Option<(i64, i64)> {
        let t = self.thread(tid)?;
        let i = Self::step_at(t, ns)?;
        if !matches!(t.steps[i].state, State::Running { .. }) {
            return None;
        }
        Some((t.steps[i].ns, Self::next_ns(t, i).unwrap_or(i64::MAX)))
    }

    /// The time of the step after step `i` of `t`, if there is one.
    fn next_ns(t: &Thread, i: usize) -> Option<i64> {
        t.steps.get(i + 1).map(|s| s.ns)
    }

    /// When the wait of `tid` that holds `ns` began: the first step after its last run.
    fn wait_start(&self, tid: i64, ns: i64) -> i64 {
        let Some(t) = self.thread(tid) else { return ns };
        let Some(mut i) = Self::step_at(t, ns) else { return ns };
        for _ in 0..64 {
            if i == 0 || matches!(t.steps[i - 1].state, State::Running { .. }) {
                break;
            }
            i -= 1;
        }
        if matches!(t.steps[i].state, State::Running { .. }) {
            return ns;
        }
        t.steps[i].ns.max(i64::MIN + 1)
    }

    /// The stack of `tid` where its wait holding `ns` began: the switch-out sample there,
    /// else the last sample shortly before.
    fn wait_stack(&self, tid: i64, ns: i64) -> Option<u32> {
        let s = self.samples.of(tid);
        if s.is_empty() {
            return None;
        }
        let w = self.wait_start(tid, ns);
        let from = s.partition_point(|x| x.ns < w.saturating_sub(TOLERANCE_NS));
        let near = s[from..].iter().take_while(|x| x.ns <= w.saturating_add(TOLERANCE_NS)).filter(|x| x.kind != Kind::OnCpu).min_by_key(|x| (x.ns - w).abs());
        if let Some(x) = near {
            return Some(x.stack);
        }
        let upto = s.partition_point(|x| x.ns <= w.saturating_add(TOLERANCE_NS));
        upto.checked_sub(1).map(|k| s[k]).filter(|x| x.ns >= w.saturating_sub(FALLBACK_NS)).map(|x| x.stack)
    }

    /// Splits `[a, b)` of `tid`'s running time between its samples (see the module docs):
    /// `emit(stack, ns)`.
    fn running(&self, tid: i64, a: i64, b: i64, emit: &mut dyn FnMut(Option<u32>, i64)) {
        self.running_in(tid, a, b, None, emit);
    }

    /// [`Sources::running`], with the run holding `a` when the caller knows it (see
    /// [`Sources::stretch`]): a thread without samples, or a known run, needs no search of
    /// the thread's chain.
    fn running_in(&self, tid: i64, a: i64, b: i64, run: Option<(i64, i64)>, emit: &mut dyn FnMut(Option<u32>, i64)) {
        let s = self.samples.of(tid);
        if s.is_empty() {
            if a < b {
                emit(None, b - a);
            }
            return;
        }
        let (start, end) = run.or_else(|| self.stretch(tid, a)).unwrap_or((a, b));
        let limit = end.saturating_add(TOLERANCE_NS);
        let mut j = s.partition_point(|x| x.ns < a);
        let mut t = a;
        while t < b {
            match s.get(j) {
                Some(x) if x.ns <= limit => {
                    let upto = x.ns.min(b);
                    if upto > t {
                        emit(Some(x.stack), upto - t);
                        t = upto;
                    }
                    j += 1;
                }
                _ => {
                    // A switch-out sample before `t` ends an earlier run: only a timer sample
                    // of this run will do.
                    let prev = j.checked_sub(1).map(|k| s[k]).filter(|x| x.kind == Kind::OnCpu && x.ns >= start.saturating_sub(TOLERANCE_NS));
                    emit(prev.map(|x| x.stack), b - t);
                    t = b;
                }
            }
        }
    }

    /// The stack of `tid` at `ns` while it runs (the sample that covers that instant).
    fn stack_at(&self, tid: i64, ns: i64) -> Option<u32> {
        let mut out = None;
        self.running(tid, ns, ns + 1, &mut |s, _| out = s);
        out.or_else(|| self.wait_stack(tid, ns))
    }

    fn runs(&self) -> &[Vec<Run>] {
        self.runs.get_or_init(|| {
            let mut per: Vec<Vec<Run>> = Vec::new();
            for (&tid, t) in &self.graph.threads {
                for (i, st) in t.steps.iter().enumerate() {
                    if let State::Running { cpu } = st.state {
                        let next = Self::next_ns(t, i);
                        let end = next.unwrap_or(t.end_ns.max(st.ns));
                        let until = next.unwrap_or(i64::MAX);
                        let c = cpu as usize;
                        if per.len() <= c {
                            per.resize_with(c + 1, Vec::new);
                        }
                        per[c].push(Run { begin: st.ns, end, tid, until });
                    }
                }
            }
            for l in per.iter_mut() {
                l.sort_by_key(|r| (r.begin, r.tid));
            }
            per
        })
    }

    /// The CPU `tid` waited for over `[a, b)`: the one it runs on next (else the last one).
    fn cpu_of_wait(&self, tid: i64, a: i64) -> Option<u32> {
        let t = self.thread(tid)?;
        let i = Self::step_at(t, a).unwrap_or(0);
        let forward = t.steps.iter_from(i).take(16);
        let cpu_of = |s: &tracelens_critical::graph::Step| match s.state {
            State::Running { cpu } => Some(cpu),
            _ => None,
        };
        if let Some(c) = forward.filter_map(cpu_of).next() {
            return Some(c);
        }
        (i.saturating_sub(16)..=i).rev().filter_map(|k| t.steps.get(k)).find_map(cpu_of)
    }

    /// The `[unknown]` frame.
    pub(crate) fn unknown_frame(&self) -> u32 {
        self.pseudo.unknown
    }

    /// Adds the ECCT of `path` to `out` (empty: its total is then the path's length);
    /// returns the running time of the path that got a sampled stack.
    pub(crate) fn ecct(&self, path: &CriticalPath, out: &mut LocalEcct) -> i64 {
        let p = self.pseudo;
        let mut stacked = 0;
        // The node each follow's segments hang under.
        let mut under: Vec<Option<u32>> = vec![None; path.follows.len()];
        for seg in &path.segments {
            let f = seg.follow as usize;
            let base = self.follow_node(path, f, &mut under, out);
            let (a, b, tid) = (seg.begin_ns, seg.end_ns, seg.tid);
            let stack = |s: Option<u32>| s.map_or(&[][..], |s| self.samples.stack(s));
            match seg.state {
                PathState::Running => {
                    self.running(tid, a, b, &mut |s, ns| {
                        if s.is_some() {
                            stacked += ns;
                        }
                        let n = match s {
                            Some(_) => out.descend(base, stack(s)),
                            None => out.child(base, p.running),
                        };
                        out.add(n, ns);
                    });
                }
                PathState::Interrupted => {
                    let n = out.descend(base, stack(self.stack_at(tid, a)));
                    let n = out.child(n, p.interrupted);
                    out.add(n, b - a);
                }
                PathState::Preempted => {
                    let n = out.descend(base, stack(self.wait_stack(tid, a)));
                    let n = out.child(n, p.preempted);
                    let mut covered = 0;
                    if let Some(cpu) = self.cpu_of_wait(tid, a) {
                        if let Some(list) = self.runs().get(cpu as usize) {
                            // Runs do not overlap: those ending after `a` start at most one before.
                            let from = list.partition_point(|r| r.begin < a).saturating_sub(1);
                            for r in list[from..].iter().take_while(|r| r.begin < b) {
                                let (x, y) = (r.begin.max(a), r.end.min(b));
                                if x >= y || r.tid == tid {
                                    continue;
                                }
                                let Some(tf) = self.thread_frame(r.tid) else { continue };
                                let m = out.child(n, tf);
                                self.running_in(r.tid, x, y, Some((r.begin, r.until)), &mut |s, ns| {
                                    let k = match s {
                                        Some(_) => out.descend(m, stack(s)),
                                        None => out.child(m, p.running),
                                    };
                                    out.add(k, ns);
                                });
                                covered += y - x;
                            }
                        }
                    }
                    out.add(n, (b - a - covered).max(0));
                }
                PathState::BlockDevice => {
                    let n = out.descend(base, stack(self.wait_stack(tid, a)));
                    let n = out.child(n, p.block_device);
                    let mut given = 0;
                    for (t, issue, ns) in self.device_shares(tid, a, b) {
                        let Some(tf) = self.thread_frame(t) else { continue };
                        let m = out.child(n, tf);
                        let k = out.descend(m, stack(self.stack_at(t, issue)));
                        out.add(k, ns);
                        given += ns;
                    }
                    out.add(n, b - a - given);
                }
                state => {
                    let frame = match state {
                        PathState::Timer => p.timer,
                        PathState::Network => p.network,
                        PathState::Ipi => p.ipi,
                        PathState::UserInput => p.user_input,
                        PathState::Blocked => p.blocked,
                        _ => p.unknown,
                    };
                    let n = out.descend(base, stack(self.wait_stack(tid, a)));
                    let n = out.child(n, frame);
                    out.add(n, b - a);
                }
            }
        }
        stacked
    }

    /// The share of `[a, b)` of each thread other than `tid` whose block requests were in
    /// flight then: at each instant, the requests in flight share it equally, and a thread
    /// gets its requests' part. Returns (thread, its first such request's issue, ns), by
    /// thread; what is left (the thread's own requests, instants with none) is `tid`'s.
    fn device_shares(&self, tid: i64, a: i64, b: i64) -> Vec<(i64, i64, i64)> {
        let r = self.requests;
        let to = r.partition_point(|x| x.issue_ns < b);
        let from = r.partition_point(|x| x.issue_ns < a.saturating_sub(self.longest_request));
        // (time, +1/-1, thread: None for `tid` and unknown issuers)
        let mut edges: Vec<(i64, i32, Option<i64>)> = Vec::new();
        let mut first: Vec<(i64, i64)> = Vec::new();
        for x in &r[from..to] {
            if x.complete_ns <= a {
                continue;
            }
            let who = x.tid.filter(|&t| t != tid);
            if let Some(t) = who {
                match first.iter_mut().find(|o| o.0 == t) {
                    Some(o) => o.1 = o.1.min(x.issue_ns),
                    None => first.push((t, x.issue_ns)),
                }
            }
            edges.push((x.issue_ns.max(a), 1, who));
            edges.push((x.complete_ns.min(b), -1, who));
        }
        if first.is_empty() {
            return Vec::new();
        }
        edges.sort_unstable_by_key(|e| (e.0, e.1));
        let mut counts: Vec<(i64, i64)> = first.iter().map(|&(t, _)| (t, 0)).collect();
        let mut share = vec![0f64; first.len()];
        let (mut n, mut at) = (0i64, a);
        for (t, d, who) in edges {
            if t > at && n > 0 {
                let dt = (t - at) as f64;
                for (k, &(_, c)) in counts.iter().enumerate() {
                    share[k] += dt * c as f64 / n as f64;
                }
            }
            at = at.max(t);
            n += i64::from(d);
            if let Some(w) = who {
                if let Some(c) = counts.iter_mut().find(|c| c.0 == w) {
                    c.1 += i64::from(d);
                }
            }
        }
        let mut out: Vec<(i64, i64, i64)> = first.iter().zip(&share).map(|(&(t, issue), &ns)| (t, issue, ns.floor() as i64)).filter(|x| x.2 > 0).collect();
        out.sort_unstable();
        out
    }

    /// The node of follow `f`: the root for the thread asked for; for a thread walked for
    /// another's wait, the waiter's node, its stack where it blocked, then `[thread NAME]`.
    fn follow_node(&self, path: &CriticalPath, f: usize, under: &mut [Option<u32>], out: &mut LocalEcct) -> u32 {
        if let Some(n) = under.get(f).copied().flatten() {
            return n;
        }
        // Resolve the chain from the outermost follow not made yet (chains may be long).
        let mut chain = vec![f];
        while let Some(&last) = chain.last() {
            match path.follows.get(last).and_then(|x| x.parent) {
                Some(p) if under.get(p as usize).copied().flatten().is_none() => chain.push(p as usize),
                _ => break,
            }
        }
        let mut node = ROOT;
        for &g in chain.iter().rev() {
            let fo = &path.follows[g];
            node = match fo.parent {
                None => ROOT,
                Some(p) => {
                    let parent_node = under[p as usize].unwrap_or(ROOT);
                    let waiter = path.follows[p as usize].tid;
                    let stack = self.wait_stack(waiter, fo.since_ns).map_or(&[][..], |s| self.samples.stack(s));
                    let n = out.descend(parent_node, stack);
                    match self.thread_frame(fo.tid) {
                        Some(tf) => out.child(n, tf),
                        None => n,
                    }
                }
            };
            under[g] = Some(node);
        }
        node
    }
}

/// CPU time and switches out of thread `tid` over `[a, b)`, from its chain in the graph.
pub(crate) fn own_cpu(graph: &ExecutionGraph, tid: i64, a: i64, b: i64) -> (i64, i64) {
    let Some(t) = graph.threads.get(&tid) else { return (0, 0) };
    let mut i = t.steps.partition_point(|s| s.ns <= a).saturating_sub(1);
    let (mut cpu, mut switches) = (0, 0);
    while let Some(s) = t.steps.get(i) {
        if s.ns >= b {
            break;
        }
        let end = t.steps.get(i + 1).map_or(b, |n| n.ns);
        if let State::Running { .. } = s.state {
            cpu += end.min(b) - s.ns.max(a);
            if end < b && end > a {
                switches += 1;
            }
        }
        i += 1;
    }
    (cpu.max(0), switches)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ecct::TreeBuilder;
    use crate::stacks::Sample;
    use tracelens_analysis::kernel::Comm;
    use tracelens_critical::critical_path;
    use tracelens_critical::graph::{Step, Wake};

    /// A thread built by hand: id, name, steps.
    type Hand<'a> = (i64, &'a str, Vec<(i64, State)>);

    /// A graph built by hand (see `tracelens-critical`'s tests).
    fn graph(threads: Vec<Hand<'_>>) -> ExecutionGraph {
        let mut g = ExecutionGraph { span: Some((0, 10_000_000)), ..ExecutionGraph::default() };
        for (tid, name, steps) in threads {
            let steps: Vec<Step> = steps.into_iter().map(|(ns, state)| Step { ns, state }).collect();
            g.threads.insert(tid, Thread::from_steps(steps, 0, 10_000_000));
            g.names.insert(tid, Comm::new(name.as_bytes()));
        }
        g
    }

    struct Fixture {
        frames: Frames,
        samples: Samples,
    }

    impl Fixture {
        fn new() -> Fixture {
            Fixture { frames: Frames::default(), samples: Samples::default() }
        }

        /// A sample of `tid` at `ns` with stack `frames` (outermost first).
        fn sample(&mut self, tid: i64, ns: i64, kind: Kind, frames: &[&str]) {
            let ids: Vec<u32> = frames.iter().map(|f| self.frames.id(f)).collect();
            self.samples.stacks.push(ids.into_boxed_slice());
            let stack = self.samples.stacks.len() as u32 - 1;
            self.samples.by_tid.entry(tid).or_default().push(Sample { ns, stack, kind });
            self.samples.count += 1;
        }

        /// The ECCT of `tid` over `[a, b)`: (path joined with `;`, self ns), sorted.
        fn ecct(mut self, g: &ExecutionGraph, requests: &[Request], tid: i64, a: i64, b: i64) -> Vec<(String, i64)> {
            for l in self.samples.by_tid.values_mut() {
                l.sort_by_key(|s| s.ns);
            }
            let src = Sources::new(g, &self.samples, requests, &mut self.frames);
            let path = critical_path(g, tid, Some(a), Some(b)).unwrap();
            let mut e = LocalEcct::default();
            src.ecct(&path, &mut e);
            assert_eq!(e.total(), b - a, "every nanosecond is somewhere");
            let mut tb = TreeBuilder::new(self.frames);
            let mut out: Vec<(String, i64)> = e
                .self_times()
                .into_iter()
                .map(|(p, ns)| (p.iter().map(|&f| tb.frames.name(f).to_string()).collect::<Vec<_>>().join(";"), ns))
                .collect();
            out.sort();
            let _ = e.into_pairs(&mut tb);
            out
        }
    }

    fn v(x: &[(&str, i64)]) -> Vec<(String, i64)> {
        let mut o: Vec<(String, i64)> = x.iter().map(|(s, n)| (s.to_string(), *n)).collect();
        o.sort();
        o
    }

    #[test]
    fn running_time_goes_to_the_samples_and_a_sleep_to_its_stack() {
        let timer = State::Blocked(tracelens_critical::graph::WakeId(0));
        let mut g = graph(vec![(1, "app", vec![(0, State::Running { cpu: 0 }), (3_000_000, timer), (8_000_000, State::Running { cpu: 0 })])]);
        g.wakes = vec![Wake::Timer(tracelens_critical::graph::Ctx::Hrtimer)];
        let mut f = Fixture::new();
        f.sample(1, 1_000_000, Kind::OnCpu, &["main", "work"]);
        f.sample(1, 2_000_000, Kind::OnCpu, &["main", "work", "hash"]);
        f.sample(1, 3_000_050, Kind::OffCpu, &["main", "nap", "nanosleep"]);
        f.sample(1, 9_000_000, Kind::OnCpu, &["main", "after"]);
        let got = f.ecct(&g, &[], 1, 0, 9_500_000);
        assert_eq!(
            got,
            v(&[
                ("main;work", 1_000_000),
                ("main;work;hash", 1_000_000),
                ("main;nap;nanosleep", 1_000_000),
                ("main;nap;nanosleep;[timer]", 5_000_000),
                ("main;after", 1_500_000),
            ])
        );
    }

    #[test]
    fn a_wait_for_a_thread_hangs_its_stacks_under_the_waiter() {
        // A blocks at 1 ms on a lock that B, computing, releases at 4 ms.
        let mut g = graph(vec![
            (1, "client", vec![(0, State::Running { cpu: 0 }), (1_000_000, State::WokenBy(2)), (4_000_000, State::Running { cpu: 0 })]),
            (2, "holder", vec![(0, State::Running { cpu: 1 })]),
        ]);
        g.span = Some((0, 10_000_000));
        let mut f = Fixture::new();
        f.sample(1, 1_000_000, Kind::OffCpu, &["main", "lock", "futex"]);
        f.sample(2, 2_500_000, Kind::OnCpu, &["hmain", "costly"]);
        f.sample(2, 5_000_000, Kind::OnCpu, &["hmain", "other"]);
        f.sample(1, 5_000_000, Kind::OnCpu, &["main", "done"]);
        let got = f.ecct(&g, &[], 1, 0, 5_000_000);
        assert_eq!(
            got,
            v(&[
                ("main;lock;futex", 1_000_000),
                ("main;lock;futex;[thread holder];hmain;costly", 1_500_000),
                ("main;lock;futex;[thread holder];hmain;other", 1_500_000),
                ("main;done", 1_000_000),
            ])
        );
    }

    #[test]
    fn preemption_shows_who_ran() {
        let g = graph(vec![
            (1, "app", vec![(0, State::Running { cpu: 0 }), (2_000_000, State::Preempted { by: 7 }), (5_000_000, State::Running { cpu: 0 })]),
            (7, "hog", vec![(0, State::Blocked(tracelens_critical::graph::WakeId::PENDING)), (2_000_000, State::Running { cpu: 0 }), (4_000_000, State::Blocked(tracelens_critical::graph::WakeId::PENDING))]),
        ]);
        let mut f = Fixture::new();
        f.sample(1, 1_000_000, Kind::OnCpu, &["main", "work"]);
        f.sample(1, 2_000_000, Kind::Preempted, &["main", "work"]);
        f.sample(7, 3_000_000, Kind::OnCpu, &["hogmain", "spin"]);
        f.sample(7, 4_000_000, Kind::OffCpu, &["hogmain", "sleep"]);
        f.sample(1, 6_000_000, Kind::OnCpu, &["main", "work"]);
        let got = f.ecct(&g, &[], 1, 0, 6_000_000);
        assert_eq!(
            got,
            v(&[
                ("main;work", 3_000_000),
                ("main;work;[preempted]", 1_000_000),
                ("main;work;[preempted];[thread hog];hogmain;spin", 1_000_000),
                ("main;work;[preempted];[thread hog];hogmain;sleep", 1_000_000),
            ])
        );
    }

    /// A run taken from its CPU's list is split between the thread's samples as a search of
    /// the thread's chain splits it, its last run too (which ends at no next step: a sample
    /// after the thread's last event still stands for it).
    #[test]
    fn a_known_run_is_split_as_a_searched_one() {
        let pending = State::Blocked(tracelens_critical::graph::WakeId::PENDING);
        let g = graph(vec![(7, "hog", vec![(0, pending), (2_000_000, State::Running { cpu: 0 }), (4_000_000, pending), (6_000_000, State::Running { cpu: 0 })])]);
        let mut f = Fixture::new();
        f.sample(7, 3_000_000, Kind::OnCpu, &["hogmain", "spin"]);
        f.sample(7, 4_000_000, Kind::OffCpu, &["hogmain", "sleep"]);
        f.sample(7, 7_000_000, Kind::OnCpu, &["hogmain", "spin"]);
        f.sample(7, 10_500_000, Kind::OnCpu, &["hogmain", "late"]);
        let src = Sources::new(&g, &f.samples, &[], &mut f.frames);
        let runs = &src.runs()[0];
        assert_eq!(runs.iter().map(|r| (r.begin, r.end, r.until)).collect::<Vec<_>>(), [(2_000_000, 4_000_000, 4_000_000), (6_000_000, 10_000_000, i64::MAX)]);
        for r in runs {
            for (a, b) in [(r.begin, r.end), (r.begin + 500_000, r.end - 500_000), (r.begin, r.begin + 1)] {
                let (mut known, mut searched) = (Vec::new(), Vec::new());
                src.running_in(r.tid, a, b, Some((r.begin, r.until)), &mut |s, ns| known.push((s, ns)));
                src.running(r.tid, a, b, &mut |s, ns| searched.push((s, ns)));
                assert_eq!(known, searched, "run {r:?} over [{a}, {b})");
            }
        }
    }

    #[test]
    fn a_disk_wait_is_shared_with_the_other_requesters() {
        let mut g = graph(vec![
            (1, "app", vec![(0, State::Running { cpu: 0 }), (1_000_000, State::Blocked(tracelens_critical::graph::WakeId(0))), (7_000_000, State::Running { cpu: 0 })]),
            (3, "logger", vec![(0, State::Running { cpu: 1 }), (600_000, State::Blocked(tracelens_critical::graph::WakeId::PENDING))]),
        ]);
        g.wakes = vec![Wake::Block { ctx: tracelens_critical::graph::Ctx::Irq(24), issued: None }];
        let reqs = [
            Request { issue_ns: 500_000, complete_ns: 6_000_000, tid: Some(3) },
            Request { issue_ns: 900_000, complete_ns: 7_000_000, tid: Some(1) },
            Request { issue_ns: 8_000_000, complete_ns: 9_000_000, tid: Some(5) },
        ];
        let mut f = Fixture::new();
        f.sample(1, 1_000_000, Kind::OffCpu, &["main", "pread"]);
        f.sample(3, 600_000, Kind::OffCpu, &["lmain", "fsync"]);
        f.sample(1, 7_500_000, Kind::OnCpu, &["main"]);
        let got = f.ecct(&g, &reqs, 1, 0, 7_500_000);
        assert_eq!(
            got,
            v(&[
                ("main;pread", 1_000_000),
                // 1 to 6 ms: two requests in flight, one the logger's; 6 to 7: only the app's.
                ("main;pread;[block device]", 3_500_000),
                ("main;pread;[block device];[thread logger];lmain;fsync", 2_500_000),
                ("main", 500_000),
            ])
        );
    }

    #[test]
    fn a_run_without_samples_is_running_not_an_earlier_stack() {
        // A short wait (50 µs) before a run with no sample: the switch-out sample of the wait
        // is the wait's stack, never the run's.
        let mut g = graph(vec![(1, "app", vec![(0, State::Running { cpu: 0 }), (1_000_000, State::WokenBy(1)), (1_050_000, State::Running { cpu: 0 })])]);
        g.span = Some((0, 10_000_000));
        let mut f = Fixture::new();
        f.sample(1, 1_000_000, Kind::OffCpu, &["main", "sleep_until"]);
        let got = f.ecct(&g, &[], 1, 1_100_000, 2_000_000);
        assert_eq!(got, v(&[("[running]", 900_000)]));
    }

    #[test]
    fn own_cpu_time_and_switches() {
        let g = graph(vec![(1, "a", vec![(0, State::Running { cpu: 0 }), (10, State::Preempted { by: 2 }), (20, State::Running { cpu: 1 }), (30, State::WokenBy(2)), (50, State::Running { cpu: 0 })])]);
        assert_eq!(own_cpu(&g, 1, 5, 55), (5 + 10 + 5, 2));
        assert_eq!(own_cpu(&g, 1, 0, 10), (10, 0));
        assert_eq!(own_cpu(&g, 9, 0, 10), (0, 0));
    }
}
