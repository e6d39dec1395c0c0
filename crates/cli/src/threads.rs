//! `tracelens threads`: argument parsing and output for `tracelens_analysis::Threads`.

use std::fmt::Write;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Result};
use clap::Args;
use tracelens_analysis::kernel::format_utc;
use tracelens_analysis::{DecodedOnce, Options, Threads};
use tracelens_critical::{GraphAnalysis, ThreadWaits, ThreadsWaitsReport, WaitJoin};

use crate::analysis::AnalysisArgs;
use crate::table::esc;
use crate::units::duration;

pub const EXAMPLES: &str = "\
Examples:
  # Every thread's life in a recording: running, preempted, waiting for a CPU, blocked
  tracelens threads /tmp/rec

  # Only the threads of a program, all of them, as JSON
  tracelens threads TRACE --procname nginx --limit 0 --json | jq '.threads[] | {tid, blocked, blocked_by_reason}'

  # A very large trace on many cores: the task states only, without the reasons
  tracelens threads TRACE -j 16 --no-reasons

What is counted:
  From the scheduler's events (sched_switch, sched_waking/sched_wakeup/sched_wakeup_new,
  sched_process_exit): a thread runs from its switch in to its switch out; switched out
  runnable it is preempted until it runs again; switched out otherwise it is blocked, in the
  kernel task state it had (S sleeping, D uninterruptible, T stopped, t traced, P parked,
  I idle) until woken; woken, it waits for a CPU until it runs. Time is counted from a
  thread's first such event, until its exit or the end of the trace. Migrations: the times it
  runs on another CPU than the time before. First and last seen: the first and last events
  naming it (switches, wake-ups, forks, exits, events with its id in their context).
  Switches the trace does not have (lost events; some kernels leave switches out, which
  `tracelens record` warns about): where events carry their thread's id (recordings, LTTng
  with a tid context, perf), a thread's own events on a CPU show that it runs there. The
  stretch before them, from the later of its last known state change and the CPU's previous
  event, is unknown (it waited, or ran: the trace does not say), and so is the time between
  a thread's last event on one CPU and its first on another without a switch between. Except
  on an idle CPU (its last switch went to the idle task): a woken thread runs there from the
  CPU's previous event (the interrupt that woke it, mostly), as the critical path reads it.
  Blocked time is given twice: by the kernel task state the thread blocked in, and by
  reason - what ended each wait, as the critical path's execution graph reads the waker's
  context: timer, block_device, network, ipi, user_input, thread (another thread woke it),
  interrupt (an interrupt or the idle task that says nothing of why), unknown (the wake-up or
  its context was not recorded), not_woken (still blocked at the end). Both add up to the
  blocked time: each blocked stretch takes the reason of the wake-up that ended it (both come
  from one pass over the trace). The reasons need the execution graph's waits: its replay
  runs beside the task states (per CPU and per shard of threads, on every core), and each
  stretch is given its reason as soon as both sides have it, so memory does not grow with
  the trace (neither the graph nor the stretches are kept). --no-reasons leaves the graph
  out: about 40% less CPU time. Works with LTTng (2.x and older) and perf (CTF) kernel
  traces and `tracelens record` recordings.

Output:
  Text: the time range, then one row per thread (the --limit with the most running time):
  running, preempted, waiting for a CPU, blocked and unknown time, CPUs used, migrations,
  first and last seen, then the blocked time by state and by reason. JSON (--json):
  {\"begin_ns\", \"end_ns\", \"threads\": [{\"tid\", \"pid\", \"name\", \"first_seen_ns\",
  \"last_seen_ns\", \"running_ns\", \"preempted_ns\", \"waiting_cpu_ns\", \"blocked_ns\",
  \"unknown_ns\", \"blocked\": [{\"state\", \"meaning\", \"ns\"}], \"cpus\": [{\"cpu\",
  \"running_ns\"}], \"migrations\", \"switches_in\", \"exited\", \"blocked_by_reason\":
  [{\"reason\", \"ns\"}]}]}; with --no-reasons, no \"blocked_by_reason\".
  The result does not depend on -j or --chunk-size.";

/// Options of `tracelens threads`.
#[derive(Args, Debug)]
pub struct ThreadsArgs {
    #[command(flatten)]
    pub common: AnalysisArgs,
    /// How many threads to list, most running time first (0: all)
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub limit: usize,
    /// Leave out the blocked time by reason (and the replay of the execution graph it needs:
    /// about 40% of the CPU time): the task states alone
    #[arg(long)]
    pub no_reasons: bool,
}

/// Runs `tracelens threads`.
pub fn run(args: ThreadsArgs) -> Result<ExitCode> {
    let mut run = args.common.prepare()?;
    if args.common.parallel.chunk_size.is_none() {
        // The records of both sides wait for the merges' frontier, about a chunk per stream.
        run.options.chunk_size = Options::chunk_size_per_stream(&run.set);
    }
    if !run.filter.cpus.is_empty() {
        bail!("threads follows threads across CPUs: --cpu does not apply (use --tid or --procname)");
    }
    if args.no_reasons {
        let mut report = run.run(&Threads::new(&run.set, run.filter.clone()))?;
        if args.limit > 0 && report.threads.len() > args.limit && run.json {
            report.threads.truncate(args.limit);
        }
        let lives = || report.threads.iter().map(|life| ThreadWaits { life: life.clone(), blocked_by_reason: Vec::new() }).collect();
        return run.output(&report, |out| {
            let waits = ThreadsWaitsReport { begin_ns: report.begin_ns, end_ns: report.end_ns, threads: lives() };
            out.write_all(text(&waits, args.limit, false).as_bytes())
        });
    }
    // One reading for both: the task states, and the execution graph whose waits say why,
    // joined as both are found (neither the graph nor the blocked intervals are kept).
    let join = Arc::new(WaitJoin::between(run.filter.begin_ns, run.filter.end_ns));
    let both = DecodedOnce::new(Threads::new(&run.set, run.filter.clone()).sending_waits(join.clone()), GraphAnalysis::new(&run.set).joining(join.clone()));
    let (threads, _) = run.run(&both)?;
    let mut report = join.report(threads);
    if args.limit > 0 && report.threads.len() > args.limit && run.json {
        report.threads.truncate(args.limit);
    }
    run.output(&report, |out| out.write_all(text(&report, args.limit, true).as_bytes()))
}

/// The text report; `reasons`: whether the blocked time by reason was computed.
fn text(r: &ThreadsWaitsReport, limit: usize, reasons: bool) -> String {
    let mut out = String::new();
    let (Some(b), Some(e)) = (r.begin_ns, r.end_ns) else {
        return "No scheduler events in the time range.\n".into();
    };
    let _ = writeln!(out, "Timerange: [{}, {}] UTC, {}", format_utc(b), format_utc(e), duration(e - b));
    let _ = writeln!(
        out,
        "\n{:<24} {:>8}  {:>12} {:>12} {:>12} {:>12} {:>12}  {:<12} {:>5}  {:<41}  {}",
        "Thread", "PID", "running", "preempted", "wait CPU", "blocked", "unknown", "CPUs", "migr", "first seen - last seen (UTC)",
        if reasons { "blocked by state; by reason" } else { "blocked by state" }
    );
    let n = if limit == 0 { r.threads.len() } else { limit.min(r.threads.len()) };
    for w in &r.threads[..n] {
        let t = &w.life;
        let states: Vec<String> = t.blocked.iter().map(|s| format!("{} {}", s.state, duration(s.ns))).collect();
        let by_reason: Vec<String> = w.blocked_by_reason.iter().map(|s| format!("{} {}", s.reason, duration(s.ns))).collect();
        let cpus: Vec<String> = t.cpus.iter().map(|c| c.cpu.to_string()).collect();
        let pid = t.pid.map_or_else(|| "?".into(), |p| p.to_string());
        let time = |ns: i64| format_utc(ns).split(' ').nth(1).unwrap_or_default().to_string();
        let seen = format!("{} - {}{}", time(t.first_seen_ns), time(t.last_seen_ns), if t.exited { " (exited)" } else { "" });
        let blocked = match (states.is_empty(), by_reason.is_empty()) {
            (true, true) => String::new(),
            _ if !reasons => states.join(", "),
            _ => format!("{}; {}", states.join(", "), by_reason.join(", ")),
        };
        let _ = writeln!(
            out,
            "{:<24} {:>8}  {:>12} {:>12} {:>12} {:>12} {:>12}  {:<12} {:>5}  {:<41}  {}",
            format!("{} ({})", esc(&t.name), t.tid),
            pid,
            duration(t.running_ns),
            duration(t.preempted_ns),
            duration(t.waiting_cpu_ns),
            duration(t.blocked_ns),
            duration(t.unknown_ns),
            cpus.join(","),
            t.migrations,
            seen,
            blocked,
        );
    }
    if n < r.threads.len() {
        let _ = writeln!(out, "({} more threads; --limit 0 lists all)", r.threads.len() - n);
    }
    out
}
