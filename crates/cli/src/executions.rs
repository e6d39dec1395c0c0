//! `tracelens executions`: argument parsing, progress and summary for
//! `tracelens_compare::build` and the database writer.

use std::io::{self, Write};
use std::mem::ManuallyDrop;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;
use tracelens_compare::build::{build, BuildOptions, BuildReport, Progress};
use tracelens_compare::delimit::Delimiter;
use tracelens_compare::metrics::col;
use tracelens_compare::{db, Executions, Values};

use crate::analysis::{AnalysisArgs, ParallelArgs, RangeArgs};
use crate::table::esc;
use crate::units::{duration, human_bytes, thousands};

pub const EXAMPLES: &str = "\
Examples:
  # Record a server with its stacks and each call of handle_request, then build the database
  sudo tracelens record -o /tmp/rec --stacks --uprobe ./server:handle_request -- ./server
  tracelens executions /tmp/rec -o runs.db --function handle_request
  tracelens compare runs.db --a 'duration<p50' --b 'duration>=p90'

  # Requests delimited by the program's own probes, paired by their request id
  tracelens executions /tmp/rec -o runs.db --begin-event request_begin --end-event request_end \\
    --match id

  # Connections of a server, from accept to shutdown on the same thread (kernel events only)
  tracelens executions /tmp/rec -o runs.db --begin-event syscall_exit_accept4 \\
    --end-event syscall_entry_shutdown

What it builds (the TraceCompare thesis, 2015, chapter 4):
  One execution per call (--function: uprobe entry to return on the same thread, as
  `record --uprobe` records them) or per begin/end pair (--begin-event/--end-event, on the
  same thread, or with --match between events with the same value of that field, on any
  threads); an execution begun while another of the same thread (or value) is open nests in
  it. For each: its critical path from begin to end (the end event's thread), and its
  enhanced calling context tree (ECCT): the time of each stack along the critical path -
  running time to the stacks sampled on the CPU, waits to the stack where the thread blocked
  plus a pseudo-frame for the reason ([timer], [block device], [network], [preempted], ...),
  a wait for another thread to that thread's stacks under [thread NAME], recursively. Time is
  in nanoseconds along the critical path: the ECCT of an execution sums to its duration.
  Metrics per execution: duration, time per critical-path state, CPU time, context switches,
  system calls, bytes read and written (of the begin event's thread), and the begin and end
  events' payload fields as dimensions (begin.FIELD, end.FIELD).

The database (-o): one SQLite file (docs/executions-db.md): an `executions` table for SQL,
the union ECCT once (frames, nodes), and per execution its (node, ns) pairs; read by
`tracelens compare`. An existing file is replaced. With --begin/--end, only the executions
that begin and end within that time range.

Without stack samples (record without --stacks) the ECCTs hold pseudo-frames only.";

/// Options of `tracelens executions`.
#[derive(Args, Debug)]
pub struct ExecutionsArgs {
    /// Trace directories (a recording's directory, holding kernel/ and stacks/), or folders to
    /// search for traces
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// The database to write (replaced if it exists)
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: PathBuf,
    /// One execution per call of this function, recorded with `record --uprobe BINARY:FUNCTION`
    #[arg(long, value_name = "FUNCTION", conflicts_with_all = ["begin_event", "end_event", "match_field"], required_unless_present = "begin_event")]
    pub function: Option<String>,
    /// Events that begin an execution (names or patterns with `*` and `?`, comma-separated)
    #[arg(long, value_name = "EVENT", requires = "end_event")]
    pub begin_event: Option<String>,
    /// Events that end an execution (names or patterns with `*` and `?`, comma-separated)
    #[arg(long, value_name = "EVENT", requires = "begin_event")]
    pub end_event: Option<String>,
    /// Pair begin and end events with the same value of this field (payload or context), on
    /// any threads, instead of on the same thread
    #[arg(long = "match", value_name = "FIELD", requires = "begin_event")]
    pub match_field: Option<String>,
    /// --begin, --end: only the executions that begin and end in this range; --clock-gmt.
    #[command(flatten)]
    pub range: RangeArgs,
    /// Print the summary as one JSON object
    #[arg(long)]
    pub json: bool,
    /// Worker threads and chunk size.
    #[command(flatten)]
    pub parallel: ParallelArgs,
}

/// Runs `tracelens executions`.
pub fn run(args: ExecutionsArgs) -> Result<ExitCode> {
    let delimiter = match (&args.function, &args.begin_event, &args.end_event) {
        (Some(f), _, _) => Delimiter::Function(f.clone()),
        (None, Some(b), Some(e)) => Delimiter::Events { begin: b.clone(), end: e.clone(), match_field: args.match_field.clone() },
        _ => bail!("give --function FUNCTION, or --begin-event and --end-event"),
    };
    if args.output.is_dir() {
        bail!("{} is a directory: -o names the database file to write", args.output.display());
    }
    let common = AnalysisArgs::over_range(args.traces.clone(), args.json, args.parallel.clone(), args.range.clone());
    let prepared = common.prepare()?;
    let opts = BuildOptions { delimiter, begin_ns: prepared.filter.begin_ns, end_ns: prepared.filter.end_ns, engine: prepared.options.clone() };
    let set = ManuallyDrop::into_inner(prepared.set);
    let line = crate::progress::Line::new();
    let (db, report) = build(set, &opts, &|p| {
        line.show(|| match p {
            Progress::Reading { done, total } => format!("reading {:5.1}% ({} of {})", pct(done, total), human_bytes(done), human_bytes(total)),
            Progress::Stacks { samples } => format!("unwinding stacks ({} samples)", thousands(samples)),
            Progress::Executions { done, total } => format!("critical paths and ECCTs {:5.1}% ({} of {} executions)", pct(done as u64, total as u64), thousands(done as u64), thousands(total as u64)),
            _ => String::new(),
        })
    })?;
    line.show(|| "writing the database".into());
    db::write(&args.output, &db).with_context(|| format!("cannot write {}", args.output.display()))?;
    line.clear();
    let size = std::fs::metadata(&args.output).map(|m| m.len()).unwrap_or(0);
    for w in warnings(&report) {
        eprintln!("tracelens: warning: {w}");
    }
    crate::output::to_stdout(|out| {
        if args.json {
            let v = serde_json::json!({ "database": args.output.display().to_string(), "bytes": size, "report": report, "summary": db.summary() });
            writeln!(out, "{v}")
        } else {
            write_text(out, &args.output, size, &db, &report)
        }
    })
}

fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        100.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

fn warnings(r: &BuildReport) -> Vec<String> {
    let mut w = Vec::new();
    if r.executions == 0 {
        w.push(format!("no execution found ({}): the database is empty", r.delimiter));
    }
    if r.samples == 0 && r.executions > 0 {
        w.push("no stack samples in the trace: the ECCTs hold pseudo-frames only (record with --stacks for the stacks)".into());
    }
    if r.lost_events > 0 {
        w.push(format!("the tracer discarded {} events: the time they leave unexplained is [unknown]", thousands(r.lost_events)));
    }
    if r.unfinished > 0 {
        w.push(format!("{} executions begun and not ended in the trace are left out", thousands(r.unfinished)));
    }
    if r.unmatched_ends > 0 {
        w.push(format!("{} end events without an execution to end are left out", thousands(r.unmatched_ends)));
    }
    if r.without_key > 0 {
        w.push(format!("{} delimiter events without a thread or the match field are left out", thousands(r.without_key)));
    }
    if r.no_path > 0 {
        w.push(format!("{} executions have no critical path (outside the kernel trace): their time is [unknown]", thousands(r.no_path as u64)));
    }
    for p in &r.stack_problems {
        w.push(format!("stacks: {p}"));
    }
    w
}

fn write_text(out: &mut dyn Write, path: &std::path::Path, size: u64, db: &Executions, r: &BuildReport) -> io::Result<()> {
    writeln!(
        out,
        "{} executions ({}{}) -> {} ({})",
        thousands(r.executions as u64),
        r.delimiter,
        if r.nested > 0 { format!(", {} nested", thousands(r.nested as u64)) } else { String::new() },
        path.display(),
        human_bytes(size)
    )?;
    if let Some(Values::Int(d)) = db.columns.get(col::DURATION) {
        if !d.is_empty() {
            let mut s = d.clone();
            s.sort_unstable();
            let q = |p: f64| s[(((p / 100.0) * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1];
            let mean = s.iter().map(|&x| x as f64).sum::<f64>() / s.len() as f64;
            writeln!(out, "  duration: mean {}, p50 {}, p90 {}, p99 {}, max {}", duration(mean as i64), duration(q(50.0)), duration(q(90.0)), duration(q(99.0)), duration(s[s.len() - 1]))?;
            let total: f64 = s.iter().map(|&x| x as f64).sum();
            let mut parts = Vec::new();
            for (i, st) in tracelens_critical::PathState::ALL.iter().enumerate() {
                if let Some(Values::Int(v)) = db.columns.get(col::STATES + i) {
                    let t: f64 = v.iter().map(|&x| x as f64).sum();
                    if t > 0.0 && total > 0.0 {
                        parts.push(format!("{} {:.1}%", st.name(), 100.0 * t / total));
                    }
                }
            }
            writeln!(out, "  critical path: {}", parts.join(", "))?;
        }
    }
    writeln!(
        out,
        "  ECCT: {} nodes, {} frames, {} (node, ns) pairs; {} stack samples, {:.1}% of the running time on the critical paths with a stack",
        thousands(r.nodes as u64),
        thousands(db.tree.frames.len() as u64),
        thousands(r.pairs as u64),
        thousands(r.samples),
        100.0 * r.running_with_stack
    )?;
    let dims: Vec<_> = db.metrics.iter().skip(tracelens_compare::metrics::FIXED.len()).map(|m| esc(&m.name)).collect();
    if !dims.is_empty() {
        writeln!(out, "  dimensions: {}", dims.join(", "))?;
    }
    if r.executions > 1 {
        writeln!(out, "Next: tracelens compare {} --a 'duration<p50' --b 'duration>=p90'", path.display())?;
    }
    Ok(())
}
