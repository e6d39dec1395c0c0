//! The user stacks of a recording (`tracelens record --stacks`), unwound and symbolized
//! once, kept per thread in time order for the ECCTs: on-CPU samples (a timer, every
//! period of CPU time) and the stack at each switch out (off-CPU: where the thread blocked;
//! preempted: where it was when another thread took the CPU).
//!
//! In a stack walked through a function probed with a uretprobe, the caller's frame is the
//! kernel's trampoline, which replaced the function's return address (in no mapped file:
//! `[unknown]` here, `[uretprobe]` once the build knows the probed function). Frames in no
//! mapped file at the outer end of a stack are left out.
//!
//! Stack samples must be read in time order with the recording's map, fork and exec events
//! (each process's memory maps change over time), so they are read by one thread
//! ([`read`]), while the parallel pass reads the kernel trace.

use std::collections::HashMap;
use std::path::Path;

use tracelens_analysis::kernel::IdMap;
use tracelens_ctf::Item;
use tracelens_symbolize::{Frame, Symbolizer};
use tracelens_trace::TraceSet;

use crate::ecct::Frames;
use crate::Result;

/// Why a stack was sampled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A timer, while the thread ran.
    OnCpu,
    /// The thread blocked (switched out not runnable).
    OffCpu,
    /// The thread was switched out runnable.
    Preempted,
}

impl Kind {
    fn of(value: Option<u64>) -> Kind {
        match value {
            Some(1) => Kind::OffCpu,
            Some(2) => Kind::Preempted,
            _ => Kind::OnCpu,
        }
    }
}

/// One sample of a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// When, ns from the clock's origin.
    pub ns: i64,
    /// The stack, an index in [`Samples::stacks`].
    pub stack: u32,
    /// Why.
    pub kind: Kind,
}

/// Every sample of a recording, by thread.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    /// Distinct stacks: frame ids, outermost first.
    pub stacks: Vec<Box<[u32]>>,
    /// Per thread, its samples in time order.
    pub by_tid: IdMap<i64, Vec<Sample>>,
    /// Samples read.
    pub count: u64,
    /// Samples whose stack could not be unwound at all (no frame).
    pub empty: u64,
    /// What unwinding met (files missing, build ids that differ...), once each.
    pub problems: Vec<String>,
}

impl Samples {
    /// The frames of stack `id`, outermost first.
    pub fn stack(&self, id: u32) -> &[u32] {
        self.stacks.get(id as usize).map_or(&[], |s| s)
    }

    /// The samples of `tid`, in time order.
    pub fn of(&self, tid: i64) -> &[Sample] {
        self.by_tid.get(&tid).map_or(&[], Vec::as_slice)
    }

    /// Whether there are any.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// The name of a frame: its function, else `[MODULE]`, else `[unknown]`; `[uretprobe]` for
/// the trampoline the kernel returns through from a function probed with a uretprobe (the
/// caller it stands for is not in the stack).
pub fn frame_name(f: &Frame) -> String {
    if let Some(name) = &f.symbol.function {
        return name.clone();
    }
    match &f.module {
        Some(m) if m == "[uprobes]" => "[uretprobe]".into(),
        Some(m) => format!("[{}]", Path::new(m).file_name().map_or_else(|| m.clone(), |n| n.to_string_lossy().into_owned())),
        None => "[unknown]".into(),
    }
}

/// Whether trace `t` holds stack samples.
pub fn is_stack_trace(t: &tracelens_ctf::Trace) -> bool {
    t.class.streams.iter().any(|s| s.events.iter().any(|e| e.name == tracelens_symbolize::events::SAMPLE))
}

/// Splits a trace set into the traces without stack samples and those with.
pub fn split(set: TraceSet) -> (TraceSet, TraceSet) {
    let (stacks, other): (Vec<_>, Vec<_>) = set.traces.into_iter().partition(is_stack_trace);
    (TraceSet { traces: other }, TraceSet { traces: stacks })
}

/// Reads, unwinds and symbolizes every stack sample of `set` (the traces of a `--stacks`
/// recording), numbering frames in `frames`. `progress` gets the samples read so far, now
/// and then.
pub fn read(set: &TraceSet, frames: &mut Frames, progress: &dyn Fn(u64)) -> Result<Samples> {
    let mut out = Samples::default();
    if set.traces.is_empty() {
        return Ok(out);
    }
    let mut sym = Symbolizer::new();
    let mut ids: HashMap<Box<[u32]>, u32> = HashMap::new();
    let mut m = set.merger();
    let mut frame_ids = Vec::new();
    while let Some((_, item)) = m.next()? {
        if item != Item::Event {
            continue;
        }
        let Some(ev) = m.event() else { continue };
        sym.observe(&ev);
        let Some(ns) = ev.ns else { continue };
        let Some(stack) = sym.stack(&ev) else { continue };
        out.count += 1;
        if out.count.is_multiple_of(4096) {
            progress(out.count);
        }
        if stack.frames.is_empty() {
            out.empty += 1;
        }
        frame_ids.clear();
        // Outermost frames in no mapped file are not code: where a walk went astray, or a
        // uretprobe's trampoline (the kernel puts it in place of the return address of a
        // function `record --uprobe` probes), beyond which the stack cannot be walked.
        let known = stack.frames.iter().rposition(|f| f.module.is_some()).map_or(0, |i| i + 1);
        for f in stack.frames[..known].iter().rev() {
            frame_ids.push(frames.id(&frame_name(f)));
        }
        let next = out.stacks.len() as u32;
        let id = *ids.entry(frame_ids.clone().into_boxed_slice()).or_insert(next);
        if id == next {
            out.stacks.push(frame_ids.clone().into_boxed_slice());
        }
        let kind = Kind::of(ev.payload.get("kind").and_then(|f| f.as_u64()));
        out.by_tid.entry(stack.tid).or_default().push(Sample { ns, stack: id, kind });
    }
    for list in out.by_tid.values_mut() {
        list.sort_by_key(|s| s.ns);
    }
    out.problems = sym.problems.iter().map(|p| p.to_string()).collect();
    progress(out.count);
    Ok(out)
}
