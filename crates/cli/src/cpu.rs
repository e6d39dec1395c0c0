//! `tracelens cpu`: argument parsing and output for `tracelens_analysis::Cpu`.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use tracelens_analysis::kernel::format_utc;
use tracelens_analysis::{Cpu, CpuReport};

use crate::analysis::AnalysisArgs;
use crate::table::{esc, seconds};

pub const EXAMPLES: &str = "\
Examples:
  # CPU usage per thread and per CPU of a kernel trace (like lttng-cputop)
  tracelens cpu ~/lttng-traces/my-session-20240101-120000/kernel

  # Every thread, as JSON
  tracelens cpu TRACE --limit 0 --json | jq '.threads[] | select(.percent > 1)'

  # One second of the trace, CPUs 0 and 1 only, threads named bash
  tracelens cpu TRACE --begin 10:15:09 --end 10:15:10 --cpu 0,1 --procname bash

What is counted:
  A thread uses a CPU from the sched_switch that puts it on the CPU to the one that takes it
  off. A CPU is busy while a thread other than its idle thread runs. Percentages are of the
  time from the first to the last kernel event in the range (as lttng-analyses); the total is
  the mean over CPUs. The thread a CPU's first sched_switch takes off ran since the beginning
  of the range (unless seen elsewhere before); the one its last switch puts on runs until the
  end. Works with LTTng (2.x and older) and perf (CTF) kernel traces.

Output:
  Text: time range, the --limit busiest threads (CPU time, name, pid, migrations,
  priorities), per-CPU usage and the total. JSON (--json): {\"begin_ns\", \"end_ns\",
  \"duration_ns\", \"threads\": [{\"tid\", \"pid\", \"name\", \"cpu_ns\", \"percent\", \"migrations\",
  \"priorities\"}], \"cpus\": [{\"cpu\", \"busy_ns\", \"percent\"}], \"total_percent\"}.
  The result does not depend on -j or --chunk-size.";

/// Options of `tracelens cpu`.
#[derive(Args, Debug)]
pub struct CpuArgs {
    #[command(flatten)]
    pub common: AnalysisArgs,
    /// How many threads to list, busiest first (0: all)
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub limit: usize,
}

/// Runs `tracelens cpu`.
pub fn run(args: CpuArgs) -> Result<ExitCode> {
    let run = args.common.prepare()?;
    let mut report = run.run(&Cpu::new(&run.set, run.filter.clone()))?;
    if run.json && args.limit > 0 {
        report.threads.truncate(args.limit);
    }
    run.output(&report, |out| write_text(out, &report, args.limit))
}

/// The report as text tables (the `limit` busiest threads; 0: all).
fn write_text(out: &mut dyn Write, r: &CpuReport, limit: usize) -> io::Result<()> {
    let (Some(b), Some(e)) = (r.begin_ns, r.end_ns) else {
        return writeln!(out, "No kernel events in the time range.");
    };
    writeln!(out, "Timerange: [{}, {}] UTC, {} s", format_utc(b), format_utc(e), seconds(e - b))?;
    writeln!(out, "\nPer-thread CPU usage")?;
    writeln!(out, "{:>7}  {:>14}  {:<24} {:>8} {:>10}  Priorities", "%CPU", "CPU time (ms)", "Thread", "PID", "Migrations")?;
    let n = if limit == 0 { r.threads.len() } else { limit.min(r.threads.len()) };
    for t in &r.threads[..n] {
        let pid = t.pid.map_or_else(|| "?".to_string(), |p| p.to_string());
        let prios: Vec<String> = t.priorities.iter().map(|p| p.to_string()).collect();
        writeln!(
            out,
            "{:>6.2} %  {:>14.3}  {:<24} {:>8} {:>10}  [{}]",
            t.percent,
            t.cpu_ns as f64 / 1e6,
            format!("{} ({})", esc(&t.name), t.tid),
            pid,
            t.migrations,
            prios.join(", ")
        )?;
    }
    if n < r.threads.len() {
        writeln!(out, "({} more threads; --limit 0 lists all)", r.threads.len() - n)?;
    }
    writeln!(out, "\nPer-CPU usage")?;
    writeln!(out, "{:>7}  {:>14}  CPU", "%busy", "busy (ms)")?;
    for c in &r.cpus {
        writeln!(out, "{:>6.2} %  {:>14.3}  {:<4} {}", c.percent, c.busy_ns as f64 / 1e6, c.cpu, bar(c.percent, 40))?;
    }
    writeln!(out, "\nTotal CPU usage: {:.2} %", r.total_percent)
}

/// A bar of `width` characters for `percent` (0 to 100).
fn bar(percent: f64, width: usize) -> String {
    let n = ((percent / 100.0) * width as f64).round().clamp(0.0, width as f64) as usize;
    "#".repeat(n)
}
