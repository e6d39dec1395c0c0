//! Per-function profiles of the stack samples of a recording (`tracelens record --stacks`,
//! `--python`), as `perf report` shows them: each function's *self* share (samples in which
//! it is the innermost frame) and *total* share (samples in which it is anywhere on the stack,
//! once however deep it recurses), sorted; and the folded stacks that flame graph tools read.
//!
//! * **On-CPU** ([`Mode::OnCpu`]): the timer samples, one weight each (the sampling
//!   period of CPU time).
//! * **Off-CPU** ([`Mode::OffCpu`]): the stacks sampled when a thread blocked, each weighed
//!   by the time until the kernel switched the thread in again (the kernel trace's
//!   `sched_switch`; where that switch was not recorded, as this VM's kernel leaves out
//!   those from the idle task, the `sched_wakeup` that ended the blocking, or else the
//!   thread's first own kernel event): a share of the time threads spent blocked. Switch-outs of threads that
//!   were still runnable (preempted) are not blocked time and are left out.
//!
//! Frames are those of [`tracelens_symbolize`]: native functions, JIT-compiled functions
//! named by perf maps, and Python functions (read by `--python`, or named by CPython's
//! `-X perf` trampolines). A function is a name in a module (the mapped file, the Python
//! source file, the script of a JIT function).
//!
//! ```no_run
//! let set = tracelens_trace::TraceSet::open(&["/tmp/rec"])?;
//! let p = tracelens_profile::profile(&set, &tracelens_profile::ProfileOptions::default())?;
//! for f in p.functions.iter().take(10) {
//!     println!("{:5.1}% {:5.1}% {}", f.self_pct, f.total_pct, f.name);
//! }
//! # Ok::<(), tracelens_profile::Error>(())
//! ```

#![deny(missing_docs)]

mod aggregate;
mod error;

use std::collections::{BTreeSet, HashMap};
use std::io::{self, Write};
use std::path::Path;

use serde::Serialize;
use tracelens_ctf::Item;
use tracelens_export::folded::clean;
use tracelens_symbolize::{events, Frame, FrameKind, Symbolizer};
use tracelens_trace::TraceSet;

use aggregate::Aggregate;
pub use error::{Error, Result};

/// Which samples a profile counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Timer samples: shares of CPU time.
    #[default]
    OnCpu,
    /// Samples at blocking, weighed by the time blocked: shares of blocked time.
    OffCpu,
}

/// What to profile.
#[derive(Clone, Debug, Default)]
pub struct ProfileOptions {
    /// Only this thread. Default: all.
    pub tid: Option<i64>,
    /// Only this process. Default: all.
    pub pid: Option<i64>,
    /// On-CPU (default) or off-CPU.
    pub mode: Mode,
    /// Keep only the frames of this kind (e.g. Python: a Python function's self share then
    /// includes the interpreter and C code it runs); a sample without any is counted under
    /// `[no KIND frame]`. Default: every frame.
    pub only: Option<FrameKind>,
}

/// One function's shares.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FunctionRow {
    /// The function's name (`[unknown]` when it could not be named).
    pub name: String,
    /// Where it is: the mapped file, the Python source file, the JIT function's script
    /// (`[jit]` when unknown).
    pub module: String,
    /// `native`, `jit` or `python`.
    pub kind: &'static str,
    /// Percentage of the weight in which it is the innermost frame.
    pub self_pct: f64,
    /// Percentage of the weight in which it is on the stack.
    pub total_pct: f64,
    /// Samples in which it is on the stack.
    pub samples: u64,
    /// Samples in which it is the innermost frame.
    pub self_samples: u64,
    /// Off-CPU: nanoseconds blocked with it on the stack.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_ns: Option<u64>,
    /// Off-CPU: nanoseconds blocked with it innermost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_ns: Option<u64>,
}

/// A profile: the functions, by decreasing self share.
#[derive(Clone, Debug, Serialize)]
pub struct Profile {
    /// What was counted.
    pub mode: Mode,
    /// Stack samples counted.
    pub samples: u64,
    /// Off-CPU: the blocked time they weigh, in nanoseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked_ns: Option<u64>,
    /// Processes and threads sampled.
    pub pids: Vec<i64>,
    /// Threads sampled.
    pub tids: Vec<i64>,
    /// The functions, by decreasing self share (then total share, then name).
    pub functions: Vec<FunctionRow>,
    /// What the reader should know (files the symbolizer could not use, blockings without
    /// their end).
    pub warnings: Vec<String>,
    #[serde(skip)]
    agg: Aggregate,
}

/// A frame's function: (name, module).
fn key(f: &Frame) -> (String, String) {
    let name = f.symbol.function.clone().unwrap_or_else(|| "[unknown]".into());
    let module = match (&f.module, f.kind) {
        (Some(m), _) => m.clone(),
        (None, FrameKind::Native) => "[unknown]".into(),
        (None, _) => "[jit]".into(),
    };
    (name, module)
}

fn comm_of(ev: &tracelens_ctf::EventView<'_, '_>) -> String {
    ev.common_context.get("procname").and_then(|v| v.as_str()).map(|s| s.trim_end_matches('\0').to_string()).unwrap_or_default()
}

/// Off-CPU: the threads blocked in a sampled stack, each waiting for the end of its blocking.
#[derive(Default)]
struct Blocked {
    /// Per thread: since when, its name, its stack.
    open: HashMap<i64, (i64, String, Vec<u32>)>,
    /// Per blocked thread, when it was woken (`sched_wakeup`) since it blocked.
    woken: HashMap<i64, i64>,
}

impl Blocked {
    fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// Whether `tid` blocked before `ns`.
    fn before(&self, tid: i64, ns: i64) -> bool {
        self.open.get(&tid).is_some_and(|b| ns > b.0)
    }

    /// When blocked `tid` was woken, if that was recorded.
    fn woken_at(&self, tid: i64) -> Option<i64> {
        self.woken.get(&tid).copied()
    }

    /// `tid` woken at `ns` (the first wake-up since it blocked counts).
    fn wake(&mut self, tid: i64, ns: i64) {
        if self.before(tid, ns) {
            self.woken.entry(tid).or_insert(ns);
        }
    }

    /// Ends `tid`'s blocking, if any, at `at`: its time goes to its stack.
    fn end(&mut self, tid: i64, at: i64, agg: &mut Aggregate) {
        self.woken.remove(&tid);
        if let Some((since, comm, stack)) = self.open.remove(&tid) {
            agg.add(&comm, stack, at.saturating_sub(since).max(0) as u64);
        }
    }

    /// `tid` blocks at `ns` in `stack`. A blocking of it still open ended when it was woken;
    /// false when nothing said when (it is dropped).
    fn block(&mut self, tid: i64, ns: i64, comm: String, stack: Vec<u32>, agg: &mut Aggregate) -> bool {
        let ended = match self.woken_at(tid) {
            Some(at) => {
                self.end(tid, at, agg);
                true
            }
            None => !self.open.contains_key(&tid),
        };
        self.open.insert(tid, (ns, comm, stack));
        ended
    }
}

/// The profile of the stack samples of `set` (see the crate documentation).
pub fn profile(set: &TraceSet, opts: &ProfileOptions) -> Result<Profile> {
    let mut sym = Symbolizer::for_traces(set.traces.iter().map(|t| t.dir.as_path()));
    let mut agg = Aggregate::default();
    let (mut pids, mut tids) = (BTreeSet::new(), BTreeSet::new());
    let mut any_samples = false;
    let mut switches = 0u64;
    let mut blocked = Blocked::default();
    let mut unmatched = 0u64;
    let mut last_ns = 0i64;
    let want = match opts.mode {
        Mode::OnCpu => events::KIND_ON_CPU,
        Mode::OffCpu => events::KIND_OFF_CPU,
    };
    let mut merger = set.merger();
    while let Some((_, item)) = merger.next()? {
        if item != Item::Event {
            continue;
        }
        let Some(ev) = merger.event() else { continue };
        let ns = ev.ns.unwrap_or(last_ns);
        last_ns = last_ns.max(ns);
        sym.observe(&ev);
        let name = ev.name();
        if name == "sched_switch" {
            switches += 1;
            if let Some(next) = ev.payload.get("next_tid").and_then(|v| v.as_i64()) {
                blocked.end(next, ns, &mut agg);
            }
            // A blocked thread switched out after it was woken ran in between, though its
            // switch in was not recorded (this VM's kernel leaves out the switches from the
            // idle task): its blocking ended when it was woken, on a CPU that was idle.
            if let Some(prev) = ev.payload.get("prev_tid").and_then(|v| v.as_i64()) {
                if let Some(at) = blocked.woken_at(prev) {
                    blocked.end(prev, at, &mut agg);
                }
            }
            continue;
        }
        if name == "sched_wakeup" && !blocked.is_empty() {
            if let Some(tid) = ev.payload.get("tid").and_then(|v| v.as_i64()) {
                blocked.wake(tid, ns);
            }
        }
        if !blocked.is_empty() && !name.starts_with("tracelens_") {
            // Some kernels do not record every switch in (this VM's leaves out those from the
            // idle task): the thread's own kernel events show it runs again.
            if let Some(tid) = ev.common_context.get("tid").and_then(|v| v.as_i64()) {
                if blocked.before(tid, ns) {
                    let at = blocked.woken_at(tid).unwrap_or(ns);
                    blocked.end(tid, at, &mut agg);
                }
            }
        }
        if name != events::SAMPLE {
            continue;
        }
        any_samples = true;
        let pid = ev.common_context.get("pid").and_then(|v| v.as_i64()).unwrap_or(-1);
        let tid = ev.common_context.get("tid").and_then(|v| v.as_i64()).unwrap_or(-1);
        if opts.pid.is_some_and(|p| p != pid) || opts.tid.is_some_and(|t| t != tid) {
            continue;
        }
        let kind = ev.payload.get("kind").and_then(|v| v.as_u64()).and_then(|k| events::KINDS.get(k as usize)).copied();
        if kind != Some(want) {
            continue;
        }
        let Some(stack) = sym.stack(&ev) else { continue };
        pids.insert(pid);
        tids.insert(tid);
        let mut ids: Vec<u32> = stack
            .frames
            .iter()
            .filter(|f| opts.only.is_none_or(|k| k == f.kind))
            .map(|f| {
                let (n, m) = key(f);
                agg.intern(&n, &m, f.kind)
            })
            .collect();
        if let (Some(k), true) = (opts.only, ids.is_empty()) {
            ids.push(agg.intern(&format!("[no {} frame]", k.as_str()), "", FrameKind::Native));
        }
        let comm = comm_of(&ev);
        match opts.mode {
            Mode::OnCpu => agg.add(&comm, ids, 1),
            Mode::OffCpu => {
                if !blocked.block(tid, ns, comm, ids, &mut agg) {
                    unmatched += 1;
                }
            }
        }
    }
    let mut warnings: Vec<String> = sym.problems.iter().map(|p| p.to_string()).collect();
    if opts.mode == Mode::OffCpu {
        if switches == 0 {
            return Err(Error::NoSwitches);
        }
        if !blocked.is_empty() {
            warnings.push(format!("{} thread(s) still blocked when the trace ends: counted until its last event", blocked.open.len()));
        }
        for (_, (since, comm, stack)) in blocked.open.drain() {
            agg.add(&comm, stack, last_ns.saturating_sub(since).max(0) as u64);
        }
        if unmatched > 0 {
            warnings.push(format!("{unmatched} blocking(s) without a switch back in before the thread's next blocking (context switches lost?): not counted"));
        }
    }
    let (samples, weight) = agg.totals();
    if samples == 0 {
        let filtered = opts.pid.is_some() || opts.tid.is_some();
        return Err(Error::NoSamples(match (any_samples, filtered) {
            (false, _) => "no stack samples in these traces (record with --stacks or --python)".into(),
            (true, true) => format!("no {} stack sample matches --pid/--tid", want.replace('_', "-")),
            (true, false) => format!("no {} stack samples in these traces", want.replace('_', "-")),
        }));
    }
    let off = opts.mode == Mode::OffCpu;
    let pct = |w: u64| if weight == 0 { 0.0 } else { w as f64 * 100.0 / weight as f64 };
    let mut functions: Vec<FunctionRow> = agg
        .sums()
        .into_iter()
        .enumerate()
        .filter(|(_, s)| s.total_samples > 0)
        .map(|(i, s)| {
            let (name, module) = agg.functions[i].clone();
            let (sw, tw) = if off { (s.self_weight, s.total_weight) } else { (s.self_samples, s.total_samples) };
            FunctionRow {
                name,
                module,
                kind: agg.kinds[i].as_str(),
                self_pct: pct(sw),
                total_pct: pct(tw),
                samples: s.total_samples,
                self_samples: s.self_samples,
                total_ns: off.then_some(s.total_weight),
                self_ns: off.then_some(s.self_weight),
            }
        })
        .collect();
    functions.sort_by(|a, b| b.self_pct.total_cmp(&a.self_pct).then(b.total_pct.total_cmp(&a.total_pct)).then_with(|| a.name.cmp(&b.name)).then_with(|| a.module.cmp(&b.module)));
    Ok(Profile {
        mode: opts.mode,
        samples,
        blocked_ns: off.then_some(weight),
        pids: pids.into_iter().collect(),
        tids: tids.into_iter().collect(),
        functions,
        warnings,
        agg,
    })
}

/// A frame's text in folded stacks: its function, then `(file)` for Python and JIT frames
/// (without `;` and line breaks, which the format gives a meaning to: see
/// [`tracelens_export::folded::clean`]).
fn folded_frame(name: &str, module: &str, kind: FrameKind) -> String {
    let mut s = clean(name);
    if kind != FrameKind::Native {
        let file = Path::new(module).file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_else(|| module.to_string());
        s += &format!(" ({})", clean(&file));
    }
    s
}

impl Profile {
    /// Writes the folded stacks (`process;outermost;...;innermost WEIGHT` per line, sorted),
    /// as flame graph tools (`flamegraph.pl`, inferno, speedscope) read them. The weight is
    /// the number of samples on-CPU, microseconds blocked off-CPU.
    pub fn write_folded(&self, out: &mut (impl Write + ?Sized)) -> io::Result<()> {
        let mut lines: Vec<(String, u64)> = Vec::with_capacity(self.agg.stacks.len());
        for ((comm, stack), &(n, w)) in &self.agg.stacks {
            let mut line = clean(&self.agg.comms[*comm as usize]);
            for &f in stack.iter().rev() {
                let (name, module) = &self.agg.functions[f as usize];
                line.push(';');
                line += &folded_frame(name, module, self.agg.kinds[f as usize]);
            }
            let weight = if self.mode == Mode::OffCpu { w / 1000 } else { n };
            lines.push((line, weight));
        }
        lines.sort();
        for (l, w) in lines {
            if w > 0 {
                writeln!(out, "{l} {w}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folded_frames() {
        assert_eq!(folded_frame("f;g", "/lib/x.so", FrameKind::Native), "f:g");
        assert_eq!(folded_frame("f\ng", "/a;b\n.py", FrameKind::Python), "f g (a:b .py)");
        assert_eq!(folded_frame("Worker.run", "/srv/app.py", FrameKind::Python), "Worker.run (app.py)");
        assert_eq!(folded_frame("leaf", "[jit]", FrameKind::Jit), "leaf ([jit])");
    }
}
