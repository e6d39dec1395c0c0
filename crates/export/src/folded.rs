//! Folded stacks (Brendan Gregg's `stackcollapse` output, what `flamegraph.pl` and
//! `inferno-flamegraph` take): one line per distinct stack, `comm;outermost;...;innermost
//! COUNT`, from the stack samples of a recording (`tracelens record --stacks`).

use std::collections::BTreeMap;
use std::io::Write;

use crate::samples::Sample;
use crate::Result;

/// Which samples a folded export counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SampleKinds {
    /// On-CPU samples only (where the time is spent computing): the default.
    #[default]
    OnCpu,
    /// Off-CPU samples only (where threads block and are preempted).
    OffCpu,
    /// Every sample.
    All,
}

impl SampleKinds {
    fn keeps(self, kind: &str) -> bool {
        match self {
            SampleKinds::OnCpu => kind == "on_cpu",
            SampleKinds::OffCpu => kind != "on_cpu",
            SampleKinds::All => true,
        }
    }
}

/// `name` (of a frame or a process) as a folded line can hold it: without the characters the
/// format gives a meaning to (`;` becomes `:`, line breaks a space).
pub fn clean(name: &str) -> String {
    name.replace(';', ":").replace(['\n', '\r'], " ")
}

/// Folds `samples` of the kinds `which` into (stack, count) lines, sorted by stack. Frame
/// names are [`clean`]ed.
pub fn fold(samples: &[Sample], which: SampleKinds) -> Vec<(String, u64)> {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for s in samples.iter().filter(|s| which.keeps(&s.kind)) {
        let comm = if s.comm.is_empty() { format!("[{}]", s.pid) } else { s.comm.clone() };
        let mut line = clean(&comm);
        for f in &s.frames {
            line.push(';');
            line.push_str(&clean(f));
        }
        *counts.entry(line).or_default() += 1;
    }
    counts.into_iter().collect()
}

/// Writes folded lines to `out`.
pub fn write_folded(lines: &[(String, u64)], mut out: impl Write) -> Result<()> {
    for (stack, n) in lines {
        writeln!(out, "{stack} {n}")?;
    }
    out.flush()?;
    Ok(())
}
