//! `tracelens syscalls`: argument parsing and output for `tracelens_analysis::Syscalls`.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use tracelens_analysis::{errno_name, CallStats, Syscalls, SyscallsReport};

use crate::analysis::AnalysisArgs;
use crate::table::{esc, stats_us, timerange};

pub const EXAMPLES: &str = "\
Examples:
  # System calls per thread and per call: count, min/avg/max/stdev duration, errors
  # (like lttng-syscallstats)
  tracelens syscalls ~/lttng-traces/my-session-20240101-120000/kernel

  # Threads named nginx, calls that return on CPU 3, every thread listed
  tracelens syscalls TRACE --procname nginx --cpu 3 --limit 0

  # The slowest kinds of calls, as JSON
  tracelens syscalls TRACE --json | jq -r '.calls | sort_by(-.max_ns)[:5][] | \"\\(.name) \\(.max_ns)\"'

What is counted:
  A call runs from its entry to its exit on the same thread, even when the thread migrated to
  another CPU in between. The thread of an event is the one the last sched_switch of its CPU
  put on it (or the event's own tid context); events before a CPU's first sched_switch, or on
  an idle CPU, belong to no thread. An exit ends the thread's pending entry (a call is named by
  its entry); an entry with no exit is replaced by the next one; an exit without an entry is
  dropped - lttng-analyses' rules. A call counts when it returns within --begin/--end (calls
  entered before --begin count), on a --cpu CPU; --tid/--procname select threads (by their
  last name in the trace). Errors are the return values -4095 to -1 (the kernel's error
  codes); any other value is a success, negative ones included (on 32-bit systems, mmap2
  addresses above 2 GiB read as negative numbers). A thread is labelled with what the whole
  trace says of it: its latest name, its process id from the state dump or a fork
  (lttng-syscallstats keeps what it knew at the thread's first call). Works with LTTng (2.x
  and older, `sys_*`/`exit_syscall`) and perf (CTF) kernel traces.

Output:
  Text: time range, all threads per call, then per thread (busiest first, --limit of them):
  count, min, average, max, standard deviation (sample, n-1) in microseconds, and the return
  values. JSON (--json): {\"begin_ns\", \"end_ns\", \"total\", \"calls\": [{\"name\", \"count\",
  \"min_ns\", \"max_ns\", \"avg_ns\", \"stdev_ns\", \"total_ns\", \"errors\", \"returns\"}],
  \"threads\": [{\"tid\", \"pid\", \"comm\", \"total\", \"calls\": [...]}]} (every thread;
  \"pid\" null when no event gives it). \"returns\" always has \"success\" (0 when no call
  succeeded), then one key per error: its name (\"ENOENT\"), or its number.
  The result does not depend on -j or --chunk-size.";

/// Options of `tracelens syscalls`.
#[derive(Args, Debug)]
pub struct SyscallsArgs {
    #[command(flatten)]
    pub common: AnalysisArgs,
    /// How many threads to list in text, busiest first (0: all)
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub limit: usize,
}

/// Runs `tracelens syscalls`.
pub fn run(args: SyscallsArgs) -> Result<ExitCode> {
    let run = args.common.prepare()?;
    let report = run.run(&Syscalls::new(&run.set, run.filter.clone()))?;
    run.output(&report, |out| write_text(out, &report, args.limit))
}

/// Text tables (durations in µs): all threads per call, then per thread, like
/// lttng-syscallstats; `limit` caps the number of threads shown (0: all).
fn write_text(out: &mut dyn Write, r: &SyscallsReport, limit: usize) -> io::Result<()> {
    if let Some(t) = timerange(r.begin_ns, r.end_ns) {
        writeln!(out, "{t}")?;
    }
    let line = |out: &mut dyn Write, name: &str, c: &CallStats| {
        let (count, min, avg, max, stdev) = stats_us(&c.durations);
        writeln!(out, "{name:<38} {count:>10} {min:>12} {avg:>12} {max:>12} {stdev:>12}  {}", returns(c))
    };
    let header = |out: &mut dyn Write, title: &str| {
        writeln!(out, "{:<38} {:>10} {:>12} {:>12} {:>12} {:>12}  Return values", title, "Count", "Min", "Average", "Max", "Stdev")
    };
    writeln!(out, "\nSyscalls statistics, all threads (usec)")?;
    header(out, "Syscall")?;
    for (name, c) in &r.calls {
        line(out, &esc(name), c)?;
    }
    writeln!(out, "{:<38} {:>10}", "Total:", r.total)?;
    writeln!(out, "\nPer-TID syscalls statistics (usec)")?;
    let n = if limit == 0 { usize::MAX } else { limit };
    for t in r.threads.iter().take(n) {
        let pid = t.pid.map_or_else(|| "?".to_string(), |p| p.to_string());
        header(out, &format!("{} ({}, TID: {})", esc(&t.comm), pid, t.tid))?;
        for (name, c) in &t.calls {
            line(out, &format!(" - {}", esc(name)), c)?;
        }
        writeln!(out, "{:<38} {:>10}", "Total:", t.total)?;
        writeln!(out, "{}", "-".repeat(113))?;
    }
    if r.threads.len() > n {
        writeln!(out, "({} more threads; --limit to show them)", r.threads.len() - n)?;
    }
    writeln!(out, "\nTotal syscalls: {}", r.total)
}

/// `success: N, ENOENT: M, ...` (successes first, then errors by number).
fn returns(c: &CallStats) -> String {
    let mut s = format!("success: {}", c.durations.count - c.errors);
    for (ret, n) in c.by_error.iter().rev() {
        s.push_str(&format!(", {}: {n}", errno_name(*ret)));
    }
    s
}
