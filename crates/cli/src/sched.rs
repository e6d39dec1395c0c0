//! `tracelens sched`: argument parsing and output for `tracelens_analysis::Sched`.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use tracelens_analysis::Sched;

use crate::analysis::AnalysisArgs;

pub const EXAMPLES: &str = "\
Examples:
  # Wake-up latencies per thread and priority, and the 10 longest (like lttng-schedstats
  # and lttng-schedtop)
  tracelens sched ~/lttng-traces/my-session-20240101-120000/kernel

  # The 50 longest wake-up latencies of threads named Xorg, as JSON
  tracelens sched TRACE --procname Xorg --top 50 --json | jq '.top[]'

What is counted:
  Per thread, the time from its wake-up (sched_waking, or sched_wakeup/sched_wakeup_new on
  tracers without it; the first one if several) to the sched_switch that puts it on a CPU.
  Wake-ups of a running thread do not count. The waker is the thread running on the CPU the
  wake-up comes from (Unknown when that CPU is idle, e.g. in an interrupt). --tid, --procname
  and --cpu select the switch-in (the thread woken and its CPU).

Output:
  Text: totals, per-thread and per-priority statistics in microseconds (count, min, mean,
  max, sample standard deviation), then the --top longest latencies. JSON (--json):
  {\"begin_ns\", \"end_ns\", \"total\", \"threads\": [{\"tid\", \"pid\", \"name\", \"priorities\",
  ...}], \"priorities\": [{\"prio\", ...}], \"top\": [{\"wakeup_ns\", \"switch_ns\", \"latency_ns\",
  \"prio\", \"cpu\", \"tid\", \"name\", \"waker_tid\", \"waker_name\"}]} where statistics are
  \"count\", \"min_ns\", \"avg_ns\", \"max_ns\", \"stdev_ns\" (null below 2), \"total_ns\".
  The result does not depend on -j or --chunk-size.";

/// Options of `tracelens sched`.
#[derive(Args, Debug)]
pub struct SchedArgs {
    #[command(flatten)]
    pub common: AnalysisArgs,
    /// How many of the longest latencies to list
    #[arg(long, value_name = "N", default_value_t = tracelens_analysis::sched::DEFAULT_TOP)]
    pub top: usize,
}

/// Runs `tracelens sched`.
pub fn run(args: SchedArgs) -> Result<ExitCode> {
    let run = args.common.prepare()?;
    let report = run.run(&Sched::new(&run.set, run.filter.clone(), args.top))?;
    run.output(|| report.to_text(), || report.to_json())
}
