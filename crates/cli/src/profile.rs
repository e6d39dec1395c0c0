//! `tracelens profile`: argument parsing and output for `tracelens_profile::profile`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use tracelens_profile::{Mode, Profile, ProfileOptions};
use tracelens_symbolize::FrameKind;
use tracelens_trace::TraceSet;

use crate::table::esc;
use crate::units::thousands;

pub const EXAMPLES: &str = "\
Examples:
  # Where a program spends its CPU time, by function (native, JIT and Python functions)
  sudo tracelens record -o /tmp/rec --python -- python3 app.py
  tracelens profile /tmp/rec

  # Python functions only, each with the time of the interpreter and C code it runs
  tracelens profile /tmp/rec --only python

  # One thread; where it blocks and for how long (off-CPU)
  tracelens profile /tmp/rec --tid 4242 --off-cpu

  # A flame graph (inferno or Brendan Gregg's flamegraph.pl)
  tracelens profile /tmp/rec --folded /tmp/rec.folded && inferno-flamegraph /tmp/rec.folded > cpu.svg

  # As JSON, for a script
  tracelens profile /tmp/rec --json | jq '.functions[] | select(.self_pct > 5)'

What is counted:
  On-CPU (default): the timer samples of `record --stacks` (every --period of CPU time a
  thread runs). A function's self share is the share of samples where it is the innermost
  frame; its total share, of samples where it is anywhere on the stack (counted once however
  deep it recurses). With --off-cpu: the stacks sampled when threads blocked, each weighed by
  the time until the kernel ran the thread again (the kernel trace's sched_switch, so give
  the whole recording): shares of the time spent blocked. Switch-outs of threads still
  runnable (preempted) are not blocked time and are left out.

  Frames are unwound and named as `print --symbolize` does: native functions (DWARF CFI,
  symbol tables), JIT functions from the perf maps and jitdumps saved in DIR/jit
  (node --perf-basic-prof, python3.12 -X perf), and Python functions read by
  `record --python`, in place of the interpreter's evaluation loop.

Output:
  Text: one line per function (self %, total %, samples, function, module), by decreasing
  self share, --limit lines. JSON (--json): {\"mode\", \"samples\", \"blocked_ns\" (off-CPU),
  \"pids\", \"tids\", \"functions\": [{\"name\", \"module\", \"kind\", \"self_pct\", \"total_pct\",
  \"samples\", \"self_samples\", \"self_ns\" and \"total_ns\" (off-CPU)}], \"warnings\"}.
  --folded FILE: one line per distinct stack, `process;outer;...;inner WEIGHT` (samples
  on-CPU, microseconds off-CPU).";

/// Options of `tracelens profile`.
#[derive(Args, Debug)]
pub struct ProfileArgs {
    /// Trace directories (a recording's output directory, or folders holding traces)
    #[arg(required = true, value_name = "TRACE")]
    traces: Vec<PathBuf>,
    /// Only this thread
    #[arg(long, value_name = "TID")]
    tid: Option<i64>,
    /// Only this process
    #[arg(long, value_name = "PID")]
    pid: Option<i64>,
    /// Shares of blocked time (off-CPU stacks weighed by the time blocked) instead of CPU time
    #[arg(long)]
    off_cpu: bool,
    /// Keep only the frames of one kind: `python` gives Python functions' shares with the
    /// interpreter's and C code's time in the Python function that ran it
    #[arg(long, value_name = "KIND", value_parser = ["native", "jit", "python"])]
    only: Option<String>,
    /// Print JSON
    #[arg(long)]
    json: bool,
    /// Also write folded stacks (for flame graph tools) to FILE (`-`: standard output,
    /// instead of the table)
    #[arg(long, value_name = "FILE")]
    folded: Option<PathBuf>,
    /// How many functions to list (0: all; text only)
    #[arg(long, value_name = "N", default_value_t = 30)]
    limit: usize,
}

fn short(module: &str) -> &str {
    if module.starts_with('[') || module.contains("://") || module.starts_with("node:") {
        return module;
    }
    Path::new(module).file_name().and_then(|n| n.to_str()).unwrap_or(module)
}

fn text(p: &Profile, limit: usize, out: &mut dyn Write) -> std::io::Result<()> {
    match p.mode {
        Mode::OnCpu => writeln!(out, "# {} on-CPU samples", thousands(p.samples))?,
        Mode::OffCpu => writeln!(
            out,
            "# {} off-CPU samples, {:.3} s blocked",
            thousands(p.samples),
            p.blocked_ns.unwrap_or(0) as f64 / 1e9
        )?,
    }
    writeln!(out, "# {} process(es), {} thread(s)", p.pids.len(), p.tids.len())?;
    writeln!(out, "{:>7} {:>7} {:>9}  {:<40} module", "self%", "total%", "samples", "function")?;
    let n = if limit == 0 { p.functions.len() } else { limit.min(p.functions.len()) };
    for f in &p.functions[..n] {
        writeln!(out, "{:>7.2} {:>7.2} {:>9}  {:<40} {}", f.self_pct, f.total_pct, thousands(f.samples), esc(&f.name), esc(short(&f.module)))?;
    }
    if n < p.functions.len() {
        writeln!(out, "# {} more function(s) (--limit 0 lists all)", p.functions.len() - n)?;
    }
    Ok(())
}

/// Runs `tracelens profile`.
pub fn run(args: ProfileArgs) -> Result<ExitCode> {
    let set = TraceSet::open(&args.traces)?;
    let only = args.only.as_deref().map(|k| match k {
        "native" => FrameKind::Native,
        "jit" => FrameKind::Jit,
        _ => FrameKind::Python,
    });
    let opts = ProfileOptions { tid: args.tid, pid: args.pid, mode: if args.off_cpu { Mode::OffCpu } else { Mode::OnCpu }, only };
    let result = tracelens_profile::profile(&set, &opts);
    crate::warnings::report(&set);
    let p = result?;
    for w in &p.warnings {
        eprintln!("tracelens: warning: {w}");
    }
    let to_stdout_folded = args.folded.as_deref() == Some(Path::new("-"));
    if let Some(path) = args.folded.as_deref().filter(|_| !to_stdout_folded) {
        let f = std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
        let mut w = std::io::BufWriter::new(f);
        p.write_folded(&mut w).and_then(|()| w.flush()).with_context(|| format!("cannot write {}", path.display()))?;
    }
    crate::output::to_stdout(|out| {
        if to_stdout_folded {
            p.write_folded(out)
        } else if args.json {
            serde_json::to_writer(&mut *out, &p).map_err(std::io::Error::other)?;
            writeln!(out)
        } else {
            text(&p, args.limit, out)
        }
    })
}
