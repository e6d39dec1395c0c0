//! `tracelens merge`: argument parsing, progress and summary for `tracelens_trace::merge`.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use tracelens_trace::merge::{merge, MergeInput, MergeOptions};

use crate::units::{human_bytes, thousands};

pub const EXAMPLES: &str = "\
Examples:
  # A recording's kernel and probe traces as one super-trace
  tracelens merge /tmp/rec -o /tmp/rec-merged
  babeltrace2 /tmp/rec-merged | less

  # Two machines' traces, the second one's clock 1.25 ms behind
  tracelens merge host-a/kernel host-b/kernel --offset host-b/kernel=1.25ms -o both

How it works:
  Every trace found under the given paths is read; the output is one CTF 1.8 trace (CTF 2
  when an input is CTF 2) whose metadata holds the stream classes of every input (one each,
  event classes and ids kept) and which holds every input stream (one file each), written in parallel. Times are
  converted to one 1 GHz clock whose origin is the earliest input clock's, so inputs of
  different clock frequencies and offsets print the same times as before; --offset shifts a
  trace recorded on another clock. Discarded-event counts are written where they were; lost
  packets are counted (CTF cannot carry them). Environment entries the inputs disagree on
  (a kernel trace's and a user-space trace's `domain`, two processes' `procname`) are left
  out of the one environment a trace has, and listed.

Output: a summary line on standard error; with --json, one object {\"output\", \"traces\",
\"stream_classes\", \"streams\", \"events\", \"discarded_events\", \"lost_packets\", \"bytes\",
\"clock\": {\"name\", \"offset_ns\"}, \"dropped_env\"} on standard output.

Exit status: 0 on success, 1 on any error (the output directory is then removed).";

/// Options of `tracelens merge`.
#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Trace directories (holding a `metadata` file), or folders to search for traces
    #[arg(required = true, value_name = "TRACE")]
    traces: Vec<PathBuf>,
    /// Output directory (must not exist, or be empty)
    #[arg(short = 'o', long, value_name = "OUT")]
    output: PathBuf,
    /// Shift the times of TRACE (one of the TRACE arguments) by NS nanoseconds (negative
    /// allowed; suffixes ns, us, ms, s); repeatable
    #[arg(long, value_name = "TRACE=NS", allow_hyphen_values = true, value_parser = parse_offset)]
    offset: Vec<(PathBuf, i64)>,
    /// Streams written at once (default: one per core)
    #[arg(short = 'j', long = "jobs", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    jobs: Option<u32>,
    /// Print the summary as one JSON object on standard output
    #[arg(long)]
    json: bool,
    /// No progress line
    #[arg(short = 'q', long)]
    quiet: bool,
}

/// `TRACE=NS` with an optional unit on NS.
fn parse_offset(s: &str) -> Result<(PathBuf, i64), String> {
    let (path, value) = s.rsplit_once('=').ok_or_else(|| format!("`{s}` is not TRACE=NS"))?;
    if path.is_empty() {
        return Err(format!("`{s}`: no trace before `=`"));
    }
    Ok((PathBuf::from(path), parse_ns(value)?))
}

/// Nanoseconds: an integer or decimal with an optional unit (ns, us, ms, s).
fn parse_ns(s: &str) -> Result<i64, String> {
    let t = s.trim();
    let (num, mul) = [("ns", 1.0), ("us", 1e3), ("ms", 1e6), ("s", 1e9)]
        .iter()
        .find_map(|(u, m)| t.strip_suffix(u).map(|n| (n, *m)))
        .unwrap_or((t, 1.0));
    if let Ok(n) = num.trim().parse::<i64>() {
        return n.checked_mul(mul as i64).ok_or_else(|| format!("`{s}` is too large"));
    }
    let x: f64 = num.trim().parse().map_err(|_| format!("`{s}` is not a time (e.g. 1500, -20us, 1.25ms)"))?;
    let ns = (x * mul).round();
    if !ns.is_finite() || ns.abs() >= 9.2e18 {
        return Err(format!("`{s}` is too large"));
    }
    Ok(ns as i64)
}

fn same_path(a: &Path, b: &Path) -> bool {
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

/// Runs `tracelens merge`.
pub fn run(args: MergeArgs) -> Result<ExitCode> {
    let mut inputs: Vec<MergeInput> = args.traces.iter().map(MergeInput::new).collect();
    for (path, ns) in &args.offset {
        let Some(input) = inputs.iter_mut().find(|i| same_path(&i.path, path)) else {
            bail!("--offset {}: not one of the traces given", path.display());
        };
        input.offset_ns = *ns;
    }
    let options = MergeOptions { jobs: args.jobs.map(|j| j as usize), ..MergeOptions::default() };
    let started = Instant::now();
    let tty = io::stderr().is_terminal() && !args.quiet;
    let last = Mutex::new(started);
    let progress = |events: u64| {
        if !tty || started.elapsed() < Duration::from_millis(500) {
            return;
        }
        let Ok(mut last) = last.try_lock() else { return };
        if last.elapsed() < Duration::from_millis(100) {
            return;
        }
        *last = Instant::now();
        let _ = write!(io::stderr().lock(), "\rtracelens: merging: {} events written\x1b[K", thousands(events));
    };
    let result = merge(&inputs, &args.output, &options, &progress);
    if tty && started.elapsed() >= Duration::from_millis(500) {
        let _ = write!(io::stderr().lock(), "\r\x1b[K");
    }
    let s = result.with_context(|| format!("cannot merge into {}", args.output.display()))?;
    let offset_ns = s.clock.cycles_to_ns_exact(0);
    if args.json {
        let v = serde_json::json!({
            "output": s.output, "traces": s.traces, "stream_classes": s.stream_classes, "streams": s.streams,
            "events": s.events, "discarded_events": s.discarded_events, "lost_packets": s.lost_packets, "bytes": s.bytes,
            "clock": {"name": s.clock.name, "offset_ns": offset_ns}, "dropped_env": s.dropped_env,
        });
        writeln!(io::stdout().lock(), "{v}")?;
    }
    if !args.quiet {
        let mut msg = format!(
            "tracelens: merged {} trace(s), {} stream(s), {} events ({} discarded) into {} ({}, clock `{}`) in {:.1} s",
            s.traces,
            s.streams,
            thousands(s.events),
            thousands(s.discarded_events),
            s.output.display(),
            human_bytes(s.bytes),
            s.clock.name,
            started.elapsed().as_secs_f64()
        );
        if s.lost_packets > 0 {
            msg += &format!("\ntracelens: warning: the inputs lost {} packet(s), which a CTF trace cannot say: the merged trace does not report them", thousands(s.lost_packets));
        }
        if !s.dropped_env.is_empty() {
            msg += &format!("\ntracelens: note: environment entries that differ between the inputs were left out: {}", s.dropped_env.join(", "));
        }
        eprintln!("{msg}");
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets() {
        assert_eq!(parse_offset("a/b=1500"), Ok((PathBuf::from("a/b"), 1500)));
        assert_eq!(parse_offset("x=-20us"), Ok((PathBuf::from("x"), -20_000)));
        assert_eq!(parse_offset("x=1.25ms"), Ok((PathBuf::from("x"), 1_250_000)));
        assert_eq!(parse_offset("x=2s"), Ok((PathBuf::from("x"), 2_000_000_000)));
        assert!(parse_offset("x").is_err());
        assert!(parse_offset("=5").is_err());
        assert!(parse_offset("x=fast").is_err());
    }
}
