//! `tracelens irq`: argument parsing and output for `tracelens_analysis::Irq`.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use tracelens_analysis::{Durations, Irq, IrqReport};

use crate::analysis::AnalysisArgs;
use crate::table::{esc, stats_us, timerange};

pub const EXAMPLES: &str = "\
Examples:
  # Hard IRQ handler durations per IRQ line, soft IRQ durations and raise latencies per
  # vector (like lttng-irqstats)
  tracelens irq ~/lttng-traces/my-session-20240101-120000/kernel

  # CPUs 0 and 1, one second, as JSON
  tracelens irq TRACE --cpu 0,1 --begin 10:15:09 --end 10:15:10 --json | jq '.soft[]'

What is counted:
  Per CPU, a hard IRQ handler runs from irq_handler_entry to the irq_handler_exit of the same
  IRQ (an exit of another IRQ drops the one running). A soft IRQ runs from softirq_entry to
  softirq_exit; its raise latency is from the softirq_raise it serves to its entry (a raise
  while one is pending is the same raise). LTTng 2.8+ names (irq_softirq_*) and older ones
  (softirq_*) both count - lttng-analyses 0.6 only knows the older ones. A handler counts
  when it ends within --begin/--end, on a --cpu CPU (--tid and --procname do not apply).
  Handler names are the IRQ's names in order of appearance.

Output:
  Text: time range, then hard IRQs (number, names, count, min, average, max, standard
  deviation in microseconds) and soft IRQs (the same, and the raise latencies), laid out as
  lttng-irqstats prints them. JSON (--json): {\"begin_ns\", \"end_ns\", \"hard\": [{\"irq\",
  \"name\", \"count\", \"min_ns\", \"max_ns\", \"avg_ns\", \"stdev_ns\", \"total_ns\"}], \"soft\":
  [{\"vec\", \"name\", ..., \"raise_latency\": {...}}]}. The result does not depend on -j or
  --chunk-size.";

/// Options of `tracelens irq`.
#[derive(Args, Debug)]
pub struct IrqArgs {
    #[command(flatten)]
    pub common: AnalysisArgs,
}

/// Runs `tracelens irq`.
pub fn run(args: IrqArgs) -> Result<ExitCode> {
    let run = args.common.prepare()?;
    let report = run.run(&Irq::new(&run.set, run.filter.clone()))?;
    run.output(&report, |out| write_text(out, &report))
}

/// Text tables in µs, laid out as lttng-irqstats prints them.
fn write_text(out: &mut dyn Write, r: &IrqReport) -> io::Result<()> {
    if let Some(t) = timerange(r.begin_ns, r.end_ns) {
        writeln!(out, "{t}")?;
    }
    let row = |out: &mut dyn Write, nr: String, name: &str, d: &Durations| {
        let (count, min, avg, max, stdev) = stats_us(d);
        write!(out, "{:<3} {:<18} {count:>5} {min:>12} {avg:>12} {max:>12} {stdev:>12} {:<2}", format!("{nr}:"), format!("<{}>", esc(name)), " |")
    };
    if !r.hard.is_empty() {
        writeln!(out, "{:<52} {:<12}", "Hard IRQ", "Duration (us)")?;
        writeln!(out, "{:<22} {:<14} {:<12} {:<12} {:<10} {:<12}", "", "count", "min", "avg", "max", "stdev")?;
        writeln!(out, "{}|", "-".repeat(82))?;
        for h in &r.hard {
            row(out, h.irq.to_string(), &h.name, &h.durations)?;
            writeln!(out)?;
        }
    }
    if !r.soft.is_empty() {
        if !r.hard.is_empty() {
            writeln!(out)?;
        }
        writeln!(out, "{:<52} {:<52} {:<12}", "Soft IRQ", "Duration (us)", "Raise latency (us)")?;
        writeln!(
            out,
            "{:<22} {:<14} {:<12} {:<12} {:<10} {:<4} {:<3} {:<14} {:<12} {:<12} {:<10} {:<12}",
            "", "count", "min", "avg", "max", "stdev", " |", "count", "min", "avg", "max", "stdev"
        )?;
        writeln!(out, "{}|{}", "-".repeat(82), "-".repeat(60))?;
        for s in &r.soft {
            row(out, s.vec.to_string(), &s.name, &s.durations)?;
            if s.raise_latencies.count > 0 {
                let (count, min, avg, max, stdev) = stats_us(&s.raise_latencies);
                write!(out, " {count:>6} {min:>12} {avg:>12} {max:>12} {stdev:>12}")?;
            }
            writeln!(out)?;
        }
    }
    if r.hard.is_empty() && r.soft.is_empty() {
        writeln!(out, "No interrupt handler in the trace.")?;
    }
    Ok(())
}
