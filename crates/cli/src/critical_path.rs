//! `tracelens critical-path`: argument parsing and output for `tracelens_critical`.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use tracelens_analysis::kernel::format_utc;
use tracelens_critical::{critical_path, CriticalPath, GraphAnalysis, PathState};

use crate::analysis::{AnalysisArgs, ParallelArgs, RangeArgs};
use crate::table::esc;

pub const EXAMPLES: &str = "\
Examples:
  # What thread 4242 waited for over its whole life in the trace, and for whom
  tracelens critical-path ~/lttng-traces/my-session-20240101-120000/kernel --tid 4242

  # One slow request, between two times of day, as JSON
  tracelens critical-path TRACE --tid 4242 --begin 10:15:09.120 --end 10:15:09.480 --json \\
    | jq '.segments[] | select(.state != \"running\")'

  # Record a command, then look at its main thread (its pid)
  sudo tracelens record -o /tmp/rec -- ./client && tracelens critical-path /tmp/rec --tid PID

What it computes:
  The execution graph of the trace: per thread, its states from the context switches
  (sched_switch: preempted when switched out runnable, else blocked), its wake-ups
  (sched_waking, else sched_wakeup; forks) and what woke it, from the context of the waking
  CPU at that moment: a thread, a timer (hrtimer expiry, timer soft IRQs, local timer), the
  network (NET_RX/NET_TX soft IRQs, a packet received), a block device (a request completed,
  the BLOCK soft IRQ), an inter-processor interrupt, or another interrupt. Then the critical
  path of the thread over [--begin, --end] (default: its lifetime in the trace): its own
  chain; where it was blocked and another thread woke it, that thread's chain over the wait,
  from the start of the wait to the wake-up, recursively (the bounded algorithm of Giraldeau
  and Dagenais, as in Trace Compass). A block request issued by another thread after the wait
  began follows the issuer up to the issue; a packet sent over a local interface follows the
  sender up to the send.
  What the trace cannot explain - a thread not seen yet, a context switch or wake-up not
  recorded, lost events, a wake-up from a CPU whose context is not known - is `unknown`,
  never given to the state around it. A thread's own events (the tid context of every event
  in LTTng traces with that context and in `tracelens record` traces) prove it runs where a
  context switch is missing.

Output:
  Text: the interval, then the segments in time order (start relative to the interval,
  duration, thread, state, cause), then the time per state and per thread.
  JSON (--json): {\"tid\", \"name\", \"begin_ns\", \"end_ns\", \"segments\": [{\"begin_ns\",
  \"end_ns\", \"tid\", \"name\", \"state\", \"cause\", \"follow\"}], \"follows\": [{\"tid\",
  \"since_ns\", \"parent\"}], \"by_state\": {STATE: ns},
  \"by_thread\": [{\"tid\", \"name\", \"ns\", \"running_ns\"}], \"unknown_fraction\"} with STATE one of
  running, preempted, interrupted, timer, block_device, network, ipi, user_input, blocked
  (waiting, reason not in the trace), unknown. `follows` lists the threads walked: the
  thread asked for first, then each thread walked for another's wait from since_ns, its
  `parent` the index of the waiter's; a segment's `follow` is the walk it comes from. The
  segments tile [begin_ns, end_ns] and
  by_state sums to end_ns - begin_ns. The result does not depend on -j or --chunk-size.";

/// Options of `tracelens critical-path`.
#[derive(Args, Debug)]
pub struct CriticalPathArgs {
    /// Trace directories (holding a `metadata` file), or folders to search for traces
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// The thread whose critical path to compute
    #[arg(long, value_name = "TID", allow_hyphen_values = true)]
    pub tid: i64,
    /// The interval: --begin, --end (default: the thread's lifetime in the trace), --clock-gmt.
    #[command(flatten)]
    pub range: RangeArgs,
    /// Print one JSON object instead of text
    #[arg(long)]
    pub json: bool,
    /// Worker threads and chunk size.
    #[command(flatten)]
    pub parallel: ParallelArgs,
    /// After the output, print where the time went as one JSON line on standard error
    #[arg(long)]
    pub timings: bool,
}

/// Runs `tracelens critical-path`.
pub fn run(args: CriticalPathArgs) -> Result<ExitCode> {
    let mut common = AnalysisArgs::over_range(args.traces, args.json, args.parallel.clone(), args.range);
    common.timings = args.timings;
    let run = common.prepare()?;
    let graph = run.run(&GraphAnalysis::new(&run.set))?;
    let path = run.timings.phase("path", || critical_path(&graph, args.tid, run.filter.begin_ns, run.filter.end_ns))?;
    // Written as it is rendered: a path over a long trace has many segments.
    run.write(|out| {
        if args.json {
            crate::output::json_line(out, &path)
        } else {
            write_text(out, &path, graph.lost_events)
        }
    })
}

/// Threads listed in the text's totals (the most time first).
const THREADS_SHOWN: usize = 15;

/// ns as milliseconds with 3 decimals (to the microsecond, towards zero), without going
/// through floating point: the segment list of a long trace has many lines.
struct Ms(i64);

impl std::fmt::Display for Ms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let us = self.0 / 1000;
        let sign = if us < 0 { "-" } else { "" };
        write!(f, "{sign}{}.{:03}", (us / 1000).abs(), (us % 1000).abs())
    }
}

/// [`Ms`] as a string (to pad it).
fn ms(ns: i64) -> String {
    Ms(ns).to_string()
}

fn write_text(out: &mut dyn Write, p: &CriticalPath, lost: u64) -> io::Result<()> {
    let span = p.end_ns - p.begin_ns;
    writeln!(
        out,
        "Critical path of {} ({}) from {} to {} UTC, {} ms",
        esc(&p.name),
        p.tid,
        format_utc(p.begin_ns),
        format_utc(p.end_ns),
        ms(span)
    )?;
    if lost > 0 {
        writeln!(out, "warning: the tracer discarded {lost} events; the time they leave unexplained is `unknown`")?;
    }
    writeln!(out, "\n{:>12} {:>12}  {:<24} {:<12} cause", "start (ms)", "length (ms)", "thread", "state")?;
    // Lines formatted in reused buffers (padding needs each column as one string).
    let (mut start, mut len, mut who) = (String::new(), String::new(), String::new());
    for s in &p.segments {
        use std::fmt::Write as _;
        start.clear();
        len.clear();
        who.clear();
        let _ = write!(start, "{}", Ms(s.begin_ns - p.begin_ns));
        let _ = write!(len, "{}", Ms(s.duration_ns()));
        let _ = write!(who, "{} ({})", esc(&s.name), s.tid);
        writeln!(out, "{start:>12} {len:>12}  {who:<24} {:<12} {}", s.state.name(), esc(&s.cause))?;
    }
    let pct = |ns: i64| if span > 0 { 100.0 * ns as f64 / span as f64 } else { 0.0 };
    writeln!(out, "\nBy state:")?;
    for st in PathState::ALL {
        let ns = p.by_state.get(st);
        if ns > 0 {
            writeln!(out, "  {:<14} {:>12} ms {:>6.1}%", st.name(), ms(ns), pct(ns))?;
        }
    }
    writeln!(out, "\nBy thread:")?;
    for t in p.by_thread.iter().take(THREADS_SHOWN) {
        let who = format!("{} ({})", esc(&t.name), t.tid);
        writeln!(out, "  {:<24} {:>12} ms {:>6.1}%  (running {} ms)", who, ms(t.ns), pct(t.ns), ms(t.running_ns))?;
    }
    if p.by_thread.len() > THREADS_SHOWN {
        let rest: i64 = p.by_thread[THREADS_SHOWN..].iter().map(|t| t.ns).sum();
        writeln!(out, "  ({} more threads, {} ms; --json lists all)", p.by_thread.len() - THREADS_SHOWN, ms(rest))?;
    }
    writeln!(out, "\nUnknown: {:.1}% of the interval", 100.0 * p.unknown_fraction)
}
