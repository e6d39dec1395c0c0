//! `tracelens compare`: argument parsing and output for `tracelens_compare::stats`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use tracelens_compare::flamegraph::{human_ns, human_z, write_folded, write_svg, SvgOptions};
use tracelens_compare::metrics::Unit;
use tracelens_compare::{compare, db, Comparison, Expr};

use crate::table::esc;
use crate::units::thousands;

pub const EXAMPLES: &str = "\
Examples:
  # The slowest tenth against the faster half (the defaults)
  tracelens compare runs.db

  # Slow against fast, with the differential flame graph
  tracelens compare runs.db --a 'duration<2ms' --b 'duration>=p90' --svg diff.svg

  # One thread's executions that waited for a timer, against the others
  tracelens compare runs.db --a 'tid==1234 && timer<=1ms' --b 'tid==1234 && timer>1ms'

  # For other flame graph tools (two columns: mean self ns in A, in B)
  tracelens compare runs.db --b 'duration>=p99' --folded diff.folded
  inferno-flamegraph diff.folded > diff.svg

Expressions (--a, --b):
  METRIC OP VALUE, combined with && || ! and parentheses; `all` is every execution.
  OP: == (or =) != < <= > >=. METRIC: a column of the database (tracelens executions lists
  the dimensions; duration_ns, running_ns, preempted_ns, interrupted_ns, timer_ns,
  block_device_ns, network_ns, ipi_ns, user_input_ns, blocked_ns, unknown_ns, cpu_ns,
  switches, syscalls, read_bytes, written_bytes, tid, pid, end_tid, depth, begin_ns, end_ns,
  trace, begin.FIELD, end.FIELD); time metrics also without `_ns` (duration, timer).
  VALUE: a number with a unit for times (ns, us, ms, s; ns without) and bytes (B, KB, MB,
  GB, KiB, MiB, GiB), pNN for a percentile of the metric over all executions (p50, p99.9),
  or \"text\" for text dimensions. An execution without a value for a dimension matches no
  comparison on it.

What it computes (the TraceCompare thesis, 2015, section 4.4.4):
  For every node of the executions' ECCTs (a calling context, with pseudo-frames for waits
  and [thread NAME] for other threads waited for), its inclusive time per execution (0
  where an execution does not have it): the mean in A and in B, the sample standard
  deviation in A, and z = (mean B - mean A) / sd A - how unusual B's time there is, by A's
  variation.

Output:
  Text: both groups' sizes and mean durations; where B's extra time goes (the nodes whose
  own time grew most, with their share of the difference in mean duration); the metrics
  whose means differ; the calling contexts by inclusive difference.
  JSON (--json): {\"a\": {\"expr\", \"count\", \"mean_duration_ns\"}, \"b\": {...}, \"nodes\":
  [{\"node\", \"path\": [FRAME, ...], \"mean_a_ns\", \"mean_b_ns\", \"sd_a_ns\", \"z\", \"count_a\",
  \"count_b\", \"self_mean_a_ns\", \"self_mean_b_ns\"}], \"explain\": [index in nodes],
  \"metrics\": [{\"name\", \"unit\", \"mean_a\", \"mean_b\"}]}: nodes sorted by mean_b_ns -
  mean_a_ns, largest first; path from the root, pseudo-frames in brackets; z is null when
  sd_a is 0 and the means differ.
  --svg FILE: the differential flame graph: width = mean time in B, colour = z (neutral
  when |z| < 1, red when B spends more, blue when less, saturated at 3); frames B never
  reaches are drawn dashed with their width in A; tooltips with both means, z and counts.
  --html FILE: the page of `tracelens serve` as one file to share (data inlined, no server):
  the flame graph zooms, searches and shows tooltips, and brushing a histogram narrows a
  group (the group's expression and its ranges) as the served page does, computed in the
  page from the executions' columns inlined (about 180 bytes an execution, about the size
  of the database; up to 300,000 executions, beyond which the file does not brush).
  --folded FILE: `frame;frame;... A B` lines (mean self ns in each group) for
  inferno-flamegraph or flamegraph.pl's differential mode.";

/// Options of `tracelens compare`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The database (`tracelens executions -o FILE`)
    #[arg(value_name = "DB")]
    pub database: PathBuf,
    /// Group A, the reference: a filter over the metrics
    #[arg(long = "a", value_name = "EXPR", default_value = "duration<=p50", allow_hyphen_values = true)]
    pub a: String,
    /// Group B, compared with A
    #[arg(long = "b", value_name = "EXPR", default_value = "duration>=p90", allow_hyphen_values = true)]
    pub b: String,
    /// Print one JSON object instead of text
    #[arg(long)]
    pub json: bool,
    /// Write the differential flame graph (SVG) to FILE
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Write folded stacks with both groups' mean self times to FILE
    #[arg(long, value_name = "FILE")]
    pub folded: Option<PathBuf>,
    /// Write the comparison as one self-contained web page (histograms, differential flame
    /// graph with zoom, search and tooltips, samples; `tracelens serve` adds brushing)
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Calling contexts listed in the text
    #[arg(long, value_name = "N", default_value = "15")]
    pub top: usize,
}

/// Runs `tracelens compare`.
pub fn run(args: CompareArgs) -> Result<ExitCode> {
    let db = db::open(&args.database)?;
    let c = compare(&db, &args.a, &args.b)?;
    if let Some(p) = &args.svg {
        let title = format!("{}: B vs A", file_name(&args.database));
        write_file(p, |w| write_svg(w, &c, &db.tree, &SvgOptions { title, ..SvgOptions::default() }))?;
    }
    if let Some(p) = &args.folded {
        write_file(p, |w| write_folded(w, &c))?;
    }
    let (delimiter, total) = (db.delimiter.clone(), db.len());
    if let Some(p) = &args.html {
        let (a, b) = (Expr::parse(&args.a, &db)?.select(&db), Expr::parse(&args.b, &db)?.select(&db));
        let model = tracelens_web::Model::new(db, &file_name(&args.database));
        let mut brushes = false;
        write_file(p, |w| tracelens_web::html::write(w, &model, (&args.a, &a), (&args.b, &b)).map(|x| brushes = x).map_err(io::Error::other))?;
        if !brushes {
            eprintln!("tracelens: {}: more than {} executions: the page does not brush (tracelens serve does)", p.display(), thousands(tracelens_web::html::MAX_BRUSHED as u64));
        }
    }
    crate::output::to_stdout(|out| {
        if args.json {
            serde_json::to_writer(&mut *out, &c).map_err(io::Error::from)?;
            writeln!(out)
        } else {
            write_text(out, &args.database, &delimiter, total, &c, args.top)
        }
    })
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
}

fn write_file(p: &Path, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<()> {
    let f = std::fs::File::create(p).with_context(|| format!("cannot create {}", p.display()))?;
    let mut w = io::BufWriter::new(f);
    write(&mut w).and_then(|()| w.flush()).with_context(|| format!("cannot write {}", p.display()))
}

fn signed(ns: f64) -> String {
    if ns >= 0.0 {
        format!("+{}", human_ns(ns))
    } else {
        format!("-{}", human_ns(-ns))
    }
}

fn value(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Ns | Unit::Timestamp => human_ns(v),
        Unit::Bytes => format!("{} B", thousands(v.round() as u64)),
        _ => format!("{v:.1}"),
    }
}

/// A calling context as text, its frames (names from the trace) escaped.
fn context(frames: &[String]) -> String {
    frames.iter().map(|f| esc(f)).collect::<Vec<_>>().join(" > ")
}

fn write_text(out: &mut dyn Write, path: &Path, delimiter: &str, total: usize, c: &Comparison, top: usize) -> io::Result<()> {
    writeln!(out, "{}: {} executions ({delimiter})", path.display(), thousands(total as u64))?;
    let diff = c.b.mean_duration_ns - c.a.mean_duration_ns;
    writeln!(out, "A: {:<24} {:>9} executions, mean duration {}", c.a.expr, thousands(c.a.count as u64), human_ns(c.a.mean_duration_ns))?;
    let ratio = if c.a.mean_duration_ns > 0.0 { format!(", {:.2}x", c.b.mean_duration_ns / c.a.mean_duration_ns) } else { String::new() };
    writeln!(out, "B: {:<24} {:>9} executions, mean duration {} ({}{ratio})", c.b.expr, thousands(c.b.count as u64), human_ns(c.b.mean_duration_ns), signed(diff))?;
    writeln!(out, "\nWhere B's extra time goes (own time of a calling context, mean per execution, B - A):")?;
    if c.explain.is_empty() {
        writeln!(out, "  (no calling context takes more time in B)")?;
    }
    for &i in c.explain.iter().take(top.min(10)) {
        let n = &c.nodes[i];
        let share = if diff > 0.0 { format!("{:5.1}%", 100.0 * n.self_diff() / diff) } else { "     ".into() };
        writeln!(out, "  {:>12} {share}  z {:>7}  {}", signed(n.self_diff()), human_z(n.z), context(&n.path))?;
    }
    let differing: Vec<_> = c.metrics.iter().filter(|m| (m.mean_b - m.mean_a).abs() > 0.05 * m.mean_a.abs().max(m.mean_b.abs()) && (m.mean_a != 0.0 || m.mean_b != 0.0)).collect();
    if !differing.is_empty() {
        writeln!(out, "\nMetrics whose means differ (A -> B):")?;
        for m in differing {
            writeln!(out, "  {:<18} {:>14} -> {:<14}", esc(&m.name), value(m.mean_a, m.unit), value(m.mean_b, m.unit))?;
        }
    }
    writeln!(out, "\nCalling contexts, inclusive time, by mean B - mean A (--json lists all {}):", thousands(c.nodes.len() as u64))?;
    writeln!(out, "  {:>12} {:>12} {:>12} {:>8}  path", "B - A", "mean A", "mean B", "z")?;
    for n in c.nodes.iter().take(top) {
        writeln!(out, "  {:>12} {:>12} {:>12} {:>8}  {}", signed(n.diff()), human_ns(n.mean_a_ns), human_ns(n.mean_b_ns), human_z(n.z), context(&n.path))?;
    }
    Ok(())
}
