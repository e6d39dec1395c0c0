//! `tracelens cpu`: argument parsing and output for `tracelens_analysis::Cpu`.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use tracelens_analysis::Cpu;

use crate::analysis::AnalysisArgs;

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
    let report = run.run(&Cpu::new(&run.set, run.filter.clone()))?;
    run.output(|| report.to_text(args.limit), || report.to_json(args.limit))
}
