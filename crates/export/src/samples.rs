//! The stack samples of a recording (`tracelens record --stacks`), unwound and symbolized in
//! one pass over the events in time order (the symbolizer follows the recorded memory maps,
//! forks and execs as they come).

use tracelens_symbolize::Symbolizer;
use tracelens_trace::TraceSet;

use crate::Result;

/// One unwound stack sample.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Time, ns from the clock's origin.
    pub ns: i64,
    /// Thread.
    pub tid: i64,
    /// Process.
    pub pid: i64,
    /// The thread's name at the sample.
    pub comm: String,
    /// `on_cpu`, `off_cpu` or `preempted`.
    pub kind: String,
    /// Frames, outermost first: a function name, else `module+0xOFFSET`, else the address.
    pub frames: Vec<String>,
}

/// Every stack sample of `set`, in time order (none when it holds no stack trace).
pub fn stack_samples(set: &TraceSet) -> Result<Vec<Sample>> {
    let has_samples = set.traces.iter().any(|t| t.class.streams.iter().any(|s| s.events.iter().any(|e| e.name == tracelens_symbolize::events::SAMPLE)));
    if !has_samples {
        return Ok(Vec::new());
    }
    let mut sym = Symbolizer::for_traces(set.traces.iter().map(|t| t.dir.as_path()));
    let mut out = Vec::new();
    let mut m = set.merger();
    while m.next()?.is_some() {
        let Some(ev) = m.event() else { continue };
        sym.observe(&ev);
        let Some(stack) = sym.stack(&ev) else { continue };
        let frames = stack
            .frames
            .iter()
            .rev()
            .map(|f| match (&f.symbol.function, &f.module) {
                (Some(func), _) => func.clone(),
                (None, Some(module)) => format!("{}+{:#x}", module.rsplit('/').next().unwrap_or(module), f.module_offset),
                (None, None) => format!("{:#x}", f.address),
            })
            .collect();
        let comm = ev.field("procname").and_then(|f| f.as_str()).map(|s| s.trim_end_matches('\0').to_string()).unwrap_or_default();
        out.push(Sample { ns: ev.ns.unwrap_or(0), tid: stack.tid, pid: stack.pid, comm, kind: stack.kind, frames });
    }
    Ok(out)
}
