//! `tracelens export`: argument parsing for `tracelens_export` (Chrome trace events, Pajé,
//! folded stacks).

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use tracelens_analysis::{Options, Timeline};
use tracelens_export::{fold, stack_samples, write_chrome, write_folded, write_paje, SampleKinds};
use tracelens_trace::{discover, TraceSet};

pub const EXAMPLES: &str = "\
Examples:
  # A recording as a Chrome trace: open it in Perfetto (ui.perfetto.dev) or chrome://tracing
  tracelens export /tmp/rec --to chrome -o /tmp/rec.json

  # As a Pajé trace for pajeng / ViTE
  tracelens export /tmp/rec --to paje -o /tmp/rec.paje && pj_dump /tmp/rec.paje | head

  # An on-CPU flame graph of `record --stacks` samples
  tracelens export /tmp/rec --to folded -o - | inferno-flamegraph > /tmp/rec.svg

What is written:
  chrome: each thread a track (named, in its process) with its scheduling states as complete
  events (running on CPU N, preempted, waiting for CPU, blocked (S/D/...)), its system calls
  nested in them (a call that blocks is cut at the state changes, so events nest strictly),
  probe events (tracelens-probe, LTTng-UST) as instant events with their fields, and stack
  samples as instant events with their stacks in `stackFrames`; times in microseconds from
  the first event.
  paje: a Machine > Process > Thread container tree, a State and a Syscall state per thread,
  probe events as Pajé events; times in seconds from the first event.
  folded: `comm;outer;...;inner COUNT` lines from the stack samples (--samples picks on-CPU,
  off-CPU or all), for flamegraph.pl and inferno-flamegraph.

Exit status: 0 on success, 1 on any error.";

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum To {
    /// Chrome trace-event JSON
    Chrome,
    /// Pajé trace
    Paje,
    /// Folded stacks (flame graphs)
    Folded,
}

/// Which stack samples `--to folded` counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Samples {
    /// On-CPU samples
    OnCpu,
    /// Off-CPU samples (blocked and preempted)
    OffCpu,
    /// Every sample
    All,
}

/// Options of `tracelens export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Trace directories (holding a `metadata` file), or folders to search for traces
    #[arg(required = true, value_name = "TRACE")]
    traces: Vec<PathBuf>,
    /// Output format
    #[arg(long, value_enum)]
    to: To,
    /// Output file (`-`: standard output)
    #[arg(short = 'o', long, value_name = "FILE")]
    output: PathBuf,
    /// Stack samples to fold (with --to folded)
    #[arg(long, value_enum, default_value = "on-cpu")]
    samples: Samples,
    /// Worker threads (default: one per core)
    #[arg(short = 'j', long = "jobs", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    jobs: Option<u32>,
}

/// Runs `tracelens export`.
pub fn run(args: ExportArgs) -> Result<ExitCode> {
    let mut dirs = Vec::new();
    for t in &args.traces {
        dirs.extend(discover(t)?);
    }
    let set = TraceSet::open(&dirs)?;
    let options = Options { threads: args.jobs.map_or(0, |j| j as usize), chunk_size: Options::KERNEL_CHUNK_SIZE };
    let out: Box<dyn Write> = if args.output.as_os_str() == "-" {
        Box::new(io::stdout().lock())
    } else {
        Box::new(std::fs::File::create(&args.output).with_context(|| format!("cannot create {}", args.output.display()))?)
    };
    let out = BufWriter::with_capacity(1 << 20, out);
    match args.to {
        To::Chrome | To::Paje => {
            let timeline = crate::progress::run(&set, &options, &Timeline::new(&set))?;
            if args.to == To::Chrome {
                write_chrome(&timeline, &stack_samples(&set)?, out)?;
            } else {
                write_paje(&timeline, out)?;
            }
        }
        To::Folded => {
            let samples = stack_samples(&set)?;
            if samples.is_empty() {
                bail!("no stack samples in the trace(s): record with `tracelens record --stacks`");
            }
            let which = match args.samples {
                Samples::OnCpu => SampleKinds::OnCpu,
                Samples::OffCpu => SampleKinds::OffCpu,
                Samples::All => SampleKinds::All,
            };
            write_folded(&fold(&samples, which), out)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
