//! `tracelens stats`: argument parsing, progress and output for `tracelens_analysis::Stats`.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use tracelens_analysis::{Options, Stats, StatsReport};
use tracelens_trace::TraceSet;

use crate::table::{esc, seconds};
use crate::timings::Timings;
use crate::units::{human_bytes, thousands};

pub const EXAMPLES: &str = "\
Examples:
  # Event counts by name and by stream, time span, lost events of a trace
  tracelens stats ~/lttng-traces/my-session-20240101-120000/kernel

  # A whole LTTng session (kernel and user space traces together)
  tracelens stats ~/lttng-traces/my-session-20240101-120000

  # The ten most frequent events, as JSON, for scripts
  tracelens stats TRACE --json | jq -r '.by_name | to_entries[:10][] | \"\\(.value) \\(.key)\"'

  # On 4 threads, in chunks of about 16 MiB of packets
  tracelens stats TRACE -j 4 --chunk-size 16M

How it works:
  Every event is read and fully decoded (so `stats` also checks that the whole trace decodes).
  Each stream's packets are cut into chunks of about --chunk-size bytes, read in parallel and
  their counts added up in time order; the result does not depend on -j or --chunk-size.

Output:
  Text: totals (traces, streams, packets, bytes, events), the time span of the events (first
  and last event times in UTC, and in seconds since the clock's origin), events discarded by
  the tracer and packets lost, then events by name (most frequent first) and by stream file.
  JSON (--json): one object {\"events\", \"by_name\", \"by_stream\", \"discarded_events\",
  \"lost_packets\", \"begin_ns\", \"end_ns\", \"span_ns\", \"packets\", \"bytes\", \"traces\",
  \"streams\"}; times in ns from the clock's origin (null without timed events).
  Discarded events count what the packets' counters say, including a stream's first packet
  (where babeltrace2 only says the tracer \"may have discarded\" events).

Exit status: 0 on success, 1 on any error (one line on standard error, e.g. the stream file,
packet and byte offset that cannot be decoded).";

/// Options of `tracelens stats`.
#[derive(Args, Debug)]
pub struct StatsArgs {
    /// Trace directories (holding a `metadata` file), or folders to search for traces
    #[arg(required = true, value_name = "TRACE")]
    traces: Vec<PathBuf>,
    /// Print one JSON object instead of tables
    #[arg(long)]
    json: bool,
    /// Worker threads (default: one per core)
    #[arg(short = 'j', long = "jobs", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    jobs: Option<u32>,
    /// Target size of the chunks read in parallel, in bytes of packets; suffixes K, M, G
    /// (powers of 1024) [default: 4M]
    #[arg(long, value_name = "BYTES", value_parser = crate::analysis::parse_size)]
    chunk_size: Option<u64>,
    /// After the output, print where the time went as one JSON line on standard error:
    /// wall_ns, chunks, parallel_cpu_ns (CPU time reading chunks), serial_ns (what one thread
    /// does alone), phases
    #[arg(long)]
    timings: bool,
}

/// Runs `tracelens stats`.
pub fn run(args: StatsArgs) -> Result<ExitCode> {
    let timings = Timings::new(args.timings);
    let set = timings.phase("open", || TraceSet::open(&args.traces))?;
    let options = Options { threads: args.jobs.map_or(0, |j| j as usize), chunk_size: args.chunk_size.unwrap_or(Options::KERNEL_CHUNK_SIZE) };
    let report = crate::progress::run(&set, &options, &Stats::new(&set), &timings)?;
    let code = timings.phase("output", || crate::output::to_stdout(|out| if args.json { crate::output::json_line(out, &report) } else { write_text(out, &report) }))?;
    timings.report();
    // The trace set is not taken apart: the process ends here.
    std::mem::forget(set);
    Ok(code)
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

fn percent(n: u64, total: u64) -> String {
    if total == 0 {
        return "-".into();
    }
    format!("{:.2}%", 100.0 * n as f64 / total as f64)
}

/// A two-column table (count, share) + label, counts right-aligned.
fn write_table<'a>(out: &mut dyn Write, label: &str, rows: impl Iterator<Item = (&'a str, u64)>, total: u64) -> io::Result<()> {
    let rows: Vec<(String, String, &str)> = rows.map(|(name, n)| (thousands(n), percent(n, total), name)).collect();
    let w = rows.iter().map(|r| r.0.len()).max().unwrap_or(0).max("count".len());
    let p = rows.iter().map(|r| r.1.len()).max().unwrap_or(0).max("share".len());
    writeln!(out, "  {:>w$}  {:>p$}  {label}", "count", "share")?;
    for (n, pct, name) in &rows {
        writeln!(out, "  {n:>w$}  {pct:>p$}  {}", esc(name))?;
    }
    Ok(())
}

/// The report as text tables.
fn write_text(out: &mut dyn Write, r: &StatsReport) -> io::Result<()> {
    writeln!(
        out,
        "Traces:     {} ({}, {}, {})",
        thousands(r.traces),
        plural(r.streams, "stream", "streams"),
        plural(r.packets, "packet", "packets"),
        human_bytes(r.bytes)
    )?;
    writeln!(out, "Events:     {}", thousands(r.events))?;
    match (r.begin_ns, r.end_ns, r.span_ns()) {
        (Some(b), Some(e), Some(span)) => {
            writeln!(out, "Time span:  {} s", seconds(span))?;
            writeln!(out, "  begin:    {} UTC ({} s from the clock's origin)", tracelens_analysis::kernel::format_utc(b), seconds(b))?;
            writeln!(out, "  end:      {} UTC ({} s from the clock's origin)", tracelens_analysis::kernel::format_utc(e), seconds(e))?;
        }
        _ => writeln!(out, "Time span:  none (no timed events)")?,
    }
    if r.discarded_events == 0 && r.lost_packets == 0 {
        writeln!(out, "Lost:       none (no events discarded by the tracer, no packets lost)")?;
    } else {
        writeln!(
            out,
            "Lost:       {} discarded by the tracer, {} lost",
            plural(r.discarded_events, "event", "events"),
            plural(r.lost_packets, "packet", "packets")
        )?;
    }
    writeln!(out)?;
    writeln!(out, "Events by name ({}):", plural(r.by_name.len() as u64, "name", "names"))?;
    write_table(out, "name", r.names_by_count().into_iter(), r.events)?;
    writeln!(out)?;
    writeln!(out, "Events by stream ({}):", plural(r.by_stream.len() as u64, "stream", "streams"))?;
    write_table(out, "stream", r.by_stream.iter().map(|(k, v)| (k.as_str(), *v)), r.events)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::parse_size;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert_eq!(parse_size("1"), Ok(1));
        assert!(parse_size("0").is_err());
        assert!(parse_size("12X").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("99999999999999999999").is_err());
    }

    #[test]
    fn dates_and_numbers() {
        assert_eq!(tracelens_analysis::kernel::format_utc(0), "1970-01-01 00:00:00.000000000");
        assert_eq!(tracelens_analysis::kernel::format_utc(1_704_067_200_123_456_789), "2024-01-01 00:00:00.123456789");
        assert_eq!(tracelens_analysis::kernel::format_utc(951_782_400_000_000_000), "2000-02-29 00:00:00.000000000");
        assert_eq!(tracelens_analysis::kernel::format_utc(-1), "1969-12-31 23:59:59.999999999");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(999), "999");
        assert_eq!(human_bytes(1536), "1.5 KiB");
    }
}
