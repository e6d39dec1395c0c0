//! What the analysis commands (`cpu`, `sched`, `io`, `syscalls`, `irq`) share: trace
//! arguments, `-j`, `--chunk-size`, the filters (`--begin`/`--end`, `--tid`, `--procname`,
//! `--cpu`), `--json`, `--timings`, progress on a terminal, and output.
//!
//! A new command is a file named after it: an `Args` struct that flattens [`AnalysisArgs`]
//! (plus its own options), a function that runs the analysis and hands its report (typed
//! data, `serde::Serialize`) to [`Prepared::output`], and the report's text rendering:
//!
//! ```ignore
//! pub fn run(args: IrqArgs) -> Result<ExitCode> {
//!     let run = args.common.prepare()?;
//!     let report = run.run(&Irq::new(&run.set, run.filter.clone()))?;
//!     run.output(&report, |out| write_text(out, &report))
//! }
//! ```
//!
//! wired in `main.rs` as `Command::Irq(args) => irq::run(args)`.

use std::io::{self, Write};
use std::mem::ManuallyDrop;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, Result};
use clap::Args;
use serde::Serialize;
use tracelens_analysis::{Analysis, Filter, Options};
use tracelens_trace::filter::TimeBound;
use tracelens_trace::{discover, TraceSet};

use crate::timings::Timings;

/// The options every analysis command has.
#[derive(Args, Debug, Clone)]
pub struct AnalysisArgs {
    /// Trace directories (holding a `metadata` file), or folders to search for traces
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// Print one JSON object instead of tables
    #[arg(long)]
    pub json: bool,
    /// Worker threads and chunk size.
    #[command(flatten)]
    pub parallel: ParallelArgs,
    /// --begin, --end, --clock-gmt.
    #[command(flatten)]
    pub range: RangeArgs,
    /// Only these threads (comma-separated thread ids; repeatable)
    #[arg(long, value_name = "TID", value_delimiter = ',', allow_hyphen_values = true)]
    pub tid: Vec<i64>,
    /// Only threads with these names (comma-separated `comm` names; repeatable)
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub procname: Vec<String>,
    /// Only these CPUs (comma-separated numbers; repeatable)
    #[arg(long, value_name = "CPU", value_delimiter = ',')]
    pub cpu: Vec<u32>,
    /// After the output, print where the time went as one JSON line on standard error:
    /// wall_ns, chunks, parallel_cpu_ns (CPU time reading chunks), serial_ns (what one thread
    /// does alone), phases
    #[arg(long)]
    pub timings: bool,
}

/// `--begin`, `--end` and `--clock-gmt`: the time range of a command that reads traces (the
/// command's help says what the range selects: events, a thread's path, executions).
#[derive(Args, Debug, Clone, Default)]
pub struct RangeArgs {
    /// Start of the time range (`YYYY-MM-DD HH:MM[:SS[.NANO]]`, `HH:MM[:SS[.NANO]]` on the
    /// date of the first event, or `[-]SECONDS[.NANO]` since the clock's origin; local time
    /// unless --clock-gmt)
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub begin: Option<String>,
    /// End of the time range (same formats as --begin)
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub end: Option<String>,
    /// Read --begin/--end dates and times of day as UTC instead of local time
    #[arg(long)]
    pub clock_gmt: bool,
}

/// `-j` and `--chunk-size`, for every command that reads traces in parallel.
#[derive(Args, Debug, Clone, Default)]
pub struct ParallelArgs {
    /// Worker threads (default: one per core)
    #[arg(short = 'j', long = "jobs", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub jobs: Option<u32>,
    /// Target size of the chunks read in parallel, in bytes of packets; suffixes K, M, G
    /// (powers of 1024) [default: 4M; io and threads: 4M divided among the streams, at least
    /// 512K]
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub chunk_size: Option<u64>,
}

impl AnalysisArgs {
    /// The options of a command that reads the traces in parallel over a time range but
    /// filters no thread, process or CPU (`critical-path`, `executions`).
    pub fn over_range(traces: Vec<PathBuf>, json: bool, parallel: ParallelArgs, range: RangeArgs) -> AnalysisArgs {
        AnalysisArgs { traces, json, parallel, range, tid: Vec::new(), procname: Vec::new(), cpu: Vec::new(), timings: false }
    }
}

/// The error of a `--begin` after the `--end` (babeltrace2 refuses such a range too).
pub fn inverted_range(begin: &Option<String>, end: &Option<String>) -> String {
    format!(
        "--begin {} is after --end {}: no event can be in that range",
        begin.as_deref().unwrap_or_default(),
        end.as_deref().unwrap_or_default()
    )
}

/// Parses a chunk size (see [`crate::units::parse_bytes`]); at least 1 byte.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let v = crate::units::parse_bytes(s)?;
    if v == 0 {
        return Err("the chunk size must be at least 1 byte".into());
    }
    Ok(v)
}

/// Opened traces, the filter and the engine options of one command.
pub struct Prepared {
    /// The traces. Never dropped: the process ends after the output, and taking apart the
    /// metadata, plans and maps of a kernel trace costs about a tenth of an analysis of a
    /// small trace.
    pub set: ManuallyDrop<TraceSet>,
    /// The filters, times resolved.
    pub filter: Filter,
    /// Threads and chunk size.
    pub options: Options,
    /// `--json`.
    pub json: bool,
    /// Where the time goes (`--timings`).
    pub timings: Timings,
}

impl AnalysisArgs {
    /// Checks the options, finds and opens the traces, resolves --begin/--end.
    pub fn prepare(&self) -> Result<Prepared> {
        let timings = Timings::new(self.timings);
        let (set, filter) = timings.phase("open", || self.open())?;
        let options = Options { threads: self.parallel.jobs.map_or(0, |j| j as usize), chunk_size: self.parallel.chunk_size.unwrap_or(Options::KERNEL_CHUNK_SIZE) };
        Ok(Prepared { set: ManuallyDrop::new(set), filter, options, json: self.json, timings })
    }

    /// Finds and opens the traces, resolves the filter's times.
    fn open(&self) -> Result<(TraceSet, Filter)> {
        tracelens_trace::text::init_timezone();
        let r = &self.range;
        let begin = r.begin.as_deref().map(|b| TimeBound::parse_tz(b, r.clock_gmt)).transpose()?;
        let end = r.end.as_deref().map(|e| TimeBound::parse_tz(e, r.clock_gmt)).transpose()?;
        if let (Some(b), Some(e)) = (&begin, &end) {
            if TimeBound::inverted(b, e) {
                return Err(anyhow!("{}", inverted_range(&r.begin, &r.end)));
            }
        }
        let mut dirs = Vec::new();
        for t in &self.traces {
            dirs.extend(discover(t)?);
        }
        let set = TraceSet::open(&dirs)?;
        let first = if matches!(begin, Some(TimeBound::TimeOfDay { .. })) || matches!(end, Some(TimeBound::TimeOfDay { .. })) {
            first_event_ns(&set)?
        } else {
            None
        };
        let resolve = |b: Option<TimeBound>| -> Result<Option<i64>> {
            match b {
                None => Ok(None),
                Some(TimeBound::Ns(ns)) => Ok(Some(ns)),
                Some(t) => match first {
                    Some(f) => Ok(t.resolve(f)),
                    None => Err(anyhow!("a time of day needs a trace with timed events (give SECONDS or a date)")),
                },
            }
        };
        let (begin_ns, end_ns) = (resolve(begin)?, resolve(end)?);
        if matches!((begin_ns, end_ns), (Some(b), Some(e)) if b > e) {
            return Err(anyhow!("{}", inverted_range(&r.begin, &r.end)));
        }
        let filter = Filter {
            begin_ns,
            end_ns,
            tids: self.tid.clone(),
            procnames: self.procname.clone(),
            cpus: self.cpu.clone(),
        };
        Ok((set, filter))
    }
}

/// The time of the first event of the set, in ns.
fn first_event_ns(set: &TraceSet) -> Result<Option<i64>> {
    let mut m = set.merger();
    while m.next()?.is_some() {
        if let Some(ns) = m.event().and_then(|e| e.ns) {
            return Ok(Some(ns));
        }
    }
    Ok(None)
}

impl Prepared {
    /// Runs `analysis` on the engine, with a progress line on standard error when it is a
    /// terminal and the run takes more than half a second.
    pub fn run<A: Analysis>(&self, analysis: &A) -> Result<A::Output> {
        Ok(crate::progress::run(&self.set, &self.options, analysis, &self.timings)?)
    }

    /// Writes the report to standard output: as one line of JSON with `--json`, else as
    /// `text` writes it; then the timings line with `--timings`.
    pub fn output<R: Serialize>(&self, report: &R, text: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<ExitCode> {
        self.write(|out| if self.json { crate::output::json_line(out, report) } else { text(out) })
    }

    /// Writes standard output with `write` (the `output` phase), then the timings line with
    /// `--timings`.
    pub fn write(&self, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<ExitCode> {
        let code = self.timings.phase("output", || crate::output::to_stdout(write))?;
        self.timings.report();
        Ok(code)
    }
}
