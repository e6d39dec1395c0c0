//! Shared plumbing of the analysis commands (`cpu`, `sched`, and the others built the same
//! way): trace arguments, `-j`, `--chunk-size`, the filters (`--begin`/`--end`, `--tid`,
//! `--procname`, `--cpu`), `--json`, progress on a terminal, and output.
//!
//! A new command is a few lines: an `Args` struct that flattens [`AnalysisArgs`] (plus its own
//! options), and a function
//!
//! ```ignore
//! pub fn irq(args: IrqArgs) -> Result<ExitCode, Failure> {
//!     let run = args.common.prepare()?;
//!     let report = run.run(&Irq::new(&run.set, run.filter.clone()))?;
//!     run.output(|| report.to_text(), || report.to_json())
//! }
//! ```
//!
//! wired in `main.rs` as `Command::Irq(args) => analyze::irq(args)`.

use std::mem::ManuallyDrop;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Args;
use tracelens_analysis::{Analysis, Cpu, Engine, Filter, Options, Sched};
use tracelens_trace::filter::TimeBound;
use tracelens_trace::{discover, TraceSet};

use crate::Failure;

/// The options every analysis command has.
#[derive(Args, Debug, Clone)]
pub struct AnalysisArgs {
    /// Trace directories (holding a `metadata` file), or folders to search for traces
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// Print one JSON object instead of tables
    #[arg(long)]
    pub json: bool,
    /// Worker threads (default: one per core)
    #[arg(short = 'j', long = "jobs", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub jobs: Option<u32>,
    /// Target size of the chunks read in parallel, in bytes of packets; suffixes K, M, G
    /// (powers of 1024) [default: 4M]
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub chunk_size: Option<u64>,
    /// Ignore events before TIME (`YYYY-MM-DD HH:MM[:SS[.NANO]]`, `HH:MM[:SS[.NANO]]` on the
    /// date of the first event, or `[-]SECONDS[.NANO]` since the clock's origin; local time
    /// unless --clock-gmt)
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub begin: Option<String>,
    /// Ignore events after TIME (same formats as --begin)
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub end: Option<String>,
    /// Only these threads (comma-separated thread ids; repeatable)
    #[arg(long, value_name = "TID", value_delimiter = ',', allow_hyphen_values = true)]
    pub tid: Vec<i64>,
    /// Only threads with these names (comma-separated `comm` names; repeatable)
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub procname: Vec<String>,
    /// Only these CPUs (comma-separated numbers; repeatable)
    #[arg(long, value_name = "CPU", value_delimiter = ',')]
    pub cpu: Vec<u32>,
    /// Read --begin/--end dates and times of day as UTC instead of local time
    #[arg(long)]
    pub clock_gmt: bool,
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
}

impl AnalysisArgs {
    /// Checks the options, finds and opens the traces, resolves --begin/--end.
    pub fn prepare(&self) -> Result<Prepared, Failure> {
        tracelens_trace::text::init_timezone();
        let begin = self.begin.as_deref().map(|b| TimeBound::parse_tz(b, self.clock_gmt)).transpose()?;
        let end = self.end.as_deref().map(|e| TimeBound::parse_tz(e, self.clock_gmt)).transpose()?;
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
        let resolve = |b: Option<TimeBound>| -> Result<Option<i64>, Failure> {
            match b {
                None => Ok(None),
                Some(TimeBound::Ns(ns)) => Ok(Some(ns)),
                Some(t) => match first {
                    Some(f) => Ok(t.resolve(f)),
                    None => Err(Failure("a time of day needs a trace with timed events (give SECONDS or a date)".into())),
                },
            }
        };
        let filter = Filter {
            begin_ns: resolve(begin)?,
            end_ns: resolve(end)?,
            tids: self.tid.clone(),
            procnames: self.procname.clone(),
            cpus: self.cpu.clone(),
        };
        let options = Options { threads: self.jobs.map_or(0, |j| j as usize), chunk_size: self.chunk_size.unwrap_or(Options::KERNEL_CHUNK_SIZE) };
        Ok(Prepared { set: ManuallyDrop::new(set), filter, options, json: self.json })
    }
}

/// The time of the first event of the set, in ns.
fn first_event_ns(set: &TraceSet) -> Result<Option<i64>, Failure> {
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
    pub fn run<A: Analysis>(&self, analysis: &A) -> Result<A::Output, Failure> {
        let mut engine = Engine::new(&self.set, &self.options);
        let threads = engine.threads();
        let started = Instant::now();
        let last = Arc::new(Mutex::new(started));
        let shown = Arc::new(std::sync::atomic::AtomicBool::new(false));
        if io::stderr().is_terminal() {
            let (last, shown) = (last.clone(), shown.clone());
            engine = engine.on_progress(move |p| {
                let now = Instant::now();
                if now.duration_since(started) < Duration::from_millis(500) {
                    return;
                }
                let Ok(mut last) = last.try_lock() else { return };
                if now.duration_since(*last) < Duration::from_millis(100) {
                    return;
                }
                *last = now;
                shown.store(true, std::sync::atomic::Ordering::Relaxed);
                let pct = if p.bytes == 0 { 100.0 } else { 100.0 * p.bytes_done as f64 / p.bytes as f64 };
                let mut err = io::stderr().lock();
                let _ = write!(err, "\rtracelens: reading {pct:5.1}% ({threads} thread{})\x1b[K", if threads == 1 { "" } else { "s" });
                let _ = err.flush();
            });
        }
        let result = engine.run(analysis);
        if shown.load(std::sync::atomic::Ordering::Relaxed) {
            let _ = write!(io::stderr().lock(), "\r\x1b[K");
        }
        crate::warnings::report(&self.set);
        Ok(result?)
    }

    /// Writes the text (or, with --json, the JSON line) to standard output; a closed pipe is
    /// not an error.
    pub fn output(&self, text: impl FnOnce() -> String, json: impl FnOnce() -> String) -> Result<ExitCode, Failure> {
        let stdout = io::stdout();
        let mut out = BufWriter::new(stdout.lock());
        let written = if self.json { writeln!(out, "{}", json()) } else { out.write_all(text().as_bytes()) };
        match written.and_then(|()| out.flush()) {
            Ok(()) => Ok(ExitCode::SUCCESS),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
            Err(e) => Err(Failure(format!("cannot write the output: {e}"))),
        }
    }
}

pub const CPU_EXAMPLES: &str = "\
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
pub fn cpu(args: CpuArgs) -> Result<ExitCode, Failure> {
    let run = args.common.prepare()?;
    let report = run.run(&Cpu::new(&run.set, run.filter.clone()))?;
    run.output(|| report.to_text(args.limit), || report.to_json(args.limit))
}

pub const SCHED_EXAMPLES: &str = "\
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
pub fn sched(args: SchedArgs) -> Result<ExitCode, Failure> {
    let run = args.common.prepare()?;
    let report = run.run(&Sched::new(&run.set, run.filter.clone(), args.top))?;
    run.output(|| report.to_text(), || report.to_json())
}
