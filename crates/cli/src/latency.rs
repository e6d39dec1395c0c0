//! `tracelens latency`: argument parsing and output for `tracelens_analysis::Latency`.

use std::fmt::Write;
use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::Args;
use tracelens_analysis::kernel::format_utc;
use tracelens_analysis::{Latency, LatencyOptions, LatencyReport};

use crate::analysis::AnalysisArgs;
use crate::table::esc;
use crate::units::{duration, thousands};

pub const EXAMPLES: &str = "\
Examples:
  # How long system calls take (each entry to the next exit, whichever thread)
  tracelens latency TRACE --from 'syscall_entry_*' --to 'syscall_exit_*' --match tid

  # Reactivity: from a request probe to its reply probe with the same id (TL_PROBE_U64)
  tracelens latency /tmp/rec --from request_begin --to request_end --match value

  # From each wake-up to the next context switch on the same CPU, as JSON
  tracelens latency TRACE --from sched_waking --to sched_switch --match cpu_id --json

  # The 50 slowest malloc-to-free lifetimes of a pointer (LTTng-UST libc wrapper)
  tracelens latency TRACE --from 'lttng_ust_libc:malloc' --to 'lttng_ust_libc:free' --match ptr --slowest 50

What is measured:
  Each event whose name matches --from is paired with the first event after it, in the time
  order of all the traces, whose name matches --to and, with --match FIELD, whose FIELD has the
  same value (looked up in the payload, then the contexts, then the packet context: `tid`,
  `vtid`, `cpu_id`, `fd`, a probe's `value`...). Several --from events may pair with the same
  --to event; a --from event no --to event follows is counted as unmatched. An event matching
  both patterns first ends the pairs waiting for it, then starts one. Patterns take `*` and
  `?` wildcards.

Output:
  Text: the number of pairs, minimum, percentiles (50, 90, 95, 99, 99.9, 99.99), maximum,
  mean and standard deviation, a histogram by powers of two, and the --slowest pairs with
  their times (UTC) and threads. JSON (--json): {\"from\", \"to\", \"match_field\",
  \"from_events\", \"to_events\", \"unmatched\", \"without_field\", \"count\", \"min_ns\",
  \"max_ns\", \"mean_ns\", \"stdev_ns\", \"percentiles\": [{\"p\", \"ns\"}], \"histogram\":
  [{\"lo_ns\", \"hi_ns\", \"count\"}], \"slowest\": [{\"from_ns\", \"to_ns\", \"duration_ns\",
  \"from_event\", \"to_event\", \"value\", \"from_tid\", \"to_tid\"}]}; times in ns from the
  clock's origin. The result does not depend on -j or --chunk-size.";

/// Options of `tracelens latency`.
#[derive(Args, Debug)]
pub struct LatencyArgs {
    #[command(flatten)]
    pub common: AnalysisArgs,
    /// Events that start a measure (name pattern, `*` and `?` wildcards)
    #[arg(long, value_name = "EVENT")]
    pub from: String,
    /// Events that end it (name pattern)
    #[arg(long, value_name = "EVENT")]
    pub to: String,
    /// Pair only events whose field FIELD has the same value
    #[arg(long = "match", value_name = "FIELD")]
    pub match_field: Option<String>,
    /// How many of the slowest pairs to list
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub slowest: usize,
}

/// Runs `tracelens latency`.
pub fn run(args: LatencyArgs) -> Result<ExitCode> {
    let run = args.common.prepare()?;
    if !run.filter.tids.is_empty() || !run.filter.procnames.is_empty() || !run.filter.cpus.is_empty() {
        bail!("latency takes --begin/--end, not --tid, --procname or --cpu (use --match tid, --match cpu_id)");
    }
    let options = LatencyOptions {
        from: args.from,
        to: args.to,
        match_field: args.match_field,
        slowest: args.slowest,
        begin_ns: run.filter.begin_ns,
        end_ns: run.filter.end_ns,
    };
    let report = run.run(&Latency::new(&run.set, options)?)?;
    run.output(&report, |out| out.write_all(text(&report).as_bytes()))
}

fn text(r: &LatencyReport) -> String {
    let mut out = String::new();
    let with = r.match_field.as_ref().map(|f| format!(" with the same `{f}`")).unwrap_or_default();
    let _ = writeln!(out, "From `{}` to the next `{}`{with}: {} pairs", r.from, r.to, thousands(r.count));
    let _ = write!(out, "  {} `from` events, {} `to` events, {} `from` events without a `to` after them", thousands(r.from_events), thousands(r.to_events), thousands(r.unmatched));
    if r.without_field > 0 {
        let _ = write!(out, ", {} events without the field", thousands(r.without_field));
    }
    let _ = writeln!(out);
    if r.count == 0 {
        return out;
    }
    let _ = writeln!(out, "\n  {:>12}  {}", "min", duration(r.min_ns));
    for p in &r.percentiles {
        let _ = writeln!(out, "  {:>12}  {}", format!("p{}", p.p), duration(p.ns));
    }
    let _ = writeln!(out, "  {:>12}  {}", "max", duration(r.max_ns));
    let stdev = r.stdev_ns.map(|s| format!(" ± {}", duration(s.round() as i64))).unwrap_or_default();
    let _ = writeln!(out, "  {:>12}  {}{stdev}", "mean", duration(r.mean_ns.round() as i64));
    let top = r.histogram.iter().map(|b| b.count).max().unwrap_or(1).max(1);
    let _ = writeln!(out, "\nHistogram (count per duration range)");
    for b in &r.histogram {
        let bar = "#".repeat(((b.count as f64 / top as f64) * 40.0).ceil() as usize);
        let _ = writeln!(out, "  [{:>10}, {:>10})  {:>10}  {bar}", duration(b.lo_ns), duration(b.hi_ns), thousands(b.count));
    }
    if !r.slowest.is_empty() {
        let _ = writeln!(out, "\nSlowest pairs");
        let _ = writeln!(out, "  {:>12}  {:<35} {:<35} {:>8} {:>8}  value", "duration", "from (UTC)", "to (UTC)", "from tid", "to tid");
        for p in &r.slowest {
            let tid = |t: Option<i64>| t.map_or_else(|| "-".into(), |t| t.to_string());
            let _ = writeln!(
                out,
                "  {:>12}  {:<35} {:<35} {:>8} {:>8}  {}",
                duration(p.duration_ns),
                format!("{} {}", format_utc(p.from_ns), esc(&p.from_event)),
                format!("{} {}", format_utc(p.to_ns), esc(&p.to_event)),
                tid(p.from_tid),
                tid(p.to_tid),
                esc(p.value.as_deref().unwrap_or(""))
            );
        }
    }
    out
}
