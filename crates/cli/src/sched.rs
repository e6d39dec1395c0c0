//! `tracelens sched`: argument parsing and output for `tracelens_analysis::Sched`.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use tracelens_analysis::kernel::format_utc;
use tracelens_analysis::{Durations, Sched, SchedReport};

use crate::analysis::AnalysisArgs;
use crate::table::{esc, seconds, stats_us, us};

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
  \"count\", \"min_ns\", \"max_ns\", \"avg_ns\", \"stdev_ns\", \"total_ns\" (min, max and avg null
  without latencies, stdev below 2; avg and stdev rounded to 0.001 ns).
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
    run.output(&report, |out| write_text(out, &report))
}

/// The report as text tables.
fn write_text(out: &mut dyn Write, r: &SchedReport) -> io::Result<()> {
    let (Some(b), Some(e)) = (r.begin_ns, r.end_ns) else {
        return writeln!(out, "No kernel events in the time range.");
    };
    writeln!(out, "Timerange: [{}, {}] UTC, {} s", format_utc(b), format_utc(e), seconds(e - b))?;
    let row = |out: &mut dyn Write, label: &str, d: &Durations, tail: &str| {
        let (count, min, avg, max, stdev) = stats_us(d);
        writeln!(out, "{label:<28} {count:>8} {min:>12} {avg:>12} {max:>12} {stdev:>12}   {tail}")
    };
    let header = |out: &mut dyn Write, first: &str, last: &str| {
        writeln!(out, "{first:<28} {:>8} {:>12} {:>12} {:>12} {:>12}   {last}", "Count", "Min", "Avg", "Max", "Stdev")
    };
    writeln!(out, "\nScheduling latency stats (total) (us)")?;
    header(out, "", "")?;
    row(out, "All", &r.total, "")?;
    writeln!(out, "\nScheduling latency stats (per-TID) (us)")?;
    header(out, "Process", "Priorities")?;
    for t in &r.threads {
        let prios: Vec<String> = t.priorities.iter().map(|p| p.to_string()).collect();
        row(out, &format!("{} ({})", esc(&t.name), t.tid), &t.stats, &format!("[{}]", prios.join(", ")))?;
    }
    writeln!(out, "\nScheduling latency stats (per-prio) (us)")?;
    header(out, "Priority", "")?;
    for p in &r.priorities {
        row(out, &p.prio.to_string(), &p.stats, "")?;
    }
    writeln!(out, "\nScheduling top (longest wake-up latencies)")?;
    writeln!(
        out,
        "{:<31} {:<31} {:>12} {:>8} {:>4}   {:<26} {:<26}",
        "Wakeup (UTC)", "Switch (UTC)", "Latency (us)", "Priority", "CPU", "Wakee", "Waker"
    )?;
    for l in &r.top {
        let waker = match (&l.waker_name, l.waker_tid) {
            (Some(n), Some(t)) => format!("{} ({t})", esc(n)),
            _ => "Unknown (N/A)".to_string(),
        };
        writeln!(
            out,
            "{:<31} {:<31} {:>12} {:>8} {:>4}   {:<26} {:<26}",
            format_utc(l.wakeup_ns),
            format_utc(l.switch_ns),
            us(l.latency_ns as f64),
            l.prio,
            l.cpu,
            format!("{} ({})", esc(&l.name), l.tid),
            waker
        )?;
    }
    Ok(())
}
