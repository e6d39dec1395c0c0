//! `tracelens threads`: argument parsing and output for `tracelens_analysis::Threads`.

use std::fmt::Write;
use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::Args;
use tracelens_analysis::kernel::format_utc;
use tracelens_analysis::{Threads, ThreadsReport};

use crate::analysis::AnalysisArgs;
use crate::table::esc;
use crate::units::duration;

pub const EXAMPLES: &str = "\
Examples:
  # Every thread's life in a recording: running, preempted, waiting for a CPU, blocked
  tracelens threads /tmp/rec

  # Only the threads of a program, all of them, as JSON
  tracelens threads TRACE --procname nginx --limit 0 --json | jq '.threads[] | {tid, blocked}'

What is counted:
  From the scheduler's events (sched_switch, sched_waking/sched_wakeup/sched_wakeup_new,
  sched_process_exit): a thread runs from its switch in to its switch out; switched out
  runnable it is preempted until it runs again; switched out otherwise it is blocked, in the
  kernel task state it had (S sleeping, D uninterruptible, T stopped, t traced, P parked,
  I idle) until woken; woken, it waits for a CPU until it runs. Time is counted from a
  thread's first such event, until its exit or the end of the trace. Migrations: the times it
  runs on another CPU than the time before. First and last seen: the first and last events
  naming it (switches, wake-ups, forks, exits, events with its id in their context).
  Blocked time is by task state: the causes (disk, network, another thread) are what the
  critical path finds. Works with LTTng (2.x and older) and perf (CTF) kernel traces and
  `tracelens record` recordings.

Output:
  Text: the time range, then one row per thread (the --limit with the most running time):
  running, preempted, waiting for a CPU and blocked time (with the blocked states), CPUs used,
  migrations, first and last seen. JSON (--json): {\"begin_ns\", \"end_ns\", \"threads\":
  [{\"tid\", \"pid\", \"name\", \"first_seen_ns\", \"last_seen_ns\", \"running_ns\",
  \"preempted_ns\", \"waiting_cpu_ns\", \"blocked_ns\", \"blocked\": [{\"state\", \"meaning\",
  \"ns\"}], \"cpus\": [{\"cpu\", \"running_ns\"}], \"migrations\", \"switches_in\", \"exited\"}]}.
  The result does not depend on -j or --chunk-size.";

/// Options of `tracelens threads`.
#[derive(Args, Debug)]
pub struct ThreadsArgs {
    #[command(flatten)]
    pub common: AnalysisArgs,
    /// How many threads to list, most running time first (0: all)
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub limit: usize,
}

/// Runs `tracelens threads`.
pub fn run(args: ThreadsArgs) -> Result<ExitCode> {
    let run = args.common.prepare()?;
    if !run.filter.cpus.is_empty() {
        bail!("threads follows threads across CPUs: --cpu does not apply (use --tid or --procname)");
    }
    let mut report = run.run(&Threads::new(&run.set, run.filter.clone()))?;
    if args.limit > 0 && report.threads.len() > args.limit && run.json {
        report.threads.truncate(args.limit);
    }
    run.output(&report, |out| out.write_all(text(&report, args.limit).as_bytes()))
}

fn text(r: &ThreadsReport, limit: usize) -> String {
    let mut out = String::new();
    let (Some(b), Some(e)) = (r.begin_ns, r.end_ns) else {
        return "No scheduler events in the time range.\n".into();
    };
    let _ = writeln!(out, "Timerange: [{}, {}] UTC, {}", format_utc(b), format_utc(e), duration(e - b));
    let _ = writeln!(
        out,
        "\n{:<24} {:>8}  {:>12} {:>12} {:>12} {:>12}  {:<26} {:<12} {:>5}  first seen - last seen (UTC)",
        "Thread", "PID", "running", "preempted", "wait CPU", "blocked", "blocked by state", "CPUs", "migr"
    );
    let n = if limit == 0 { r.threads.len() } else { limit.min(r.threads.len()) };
    for t in &r.threads[..n] {
        let states: Vec<String> = t.blocked.iter().map(|s| format!("{} {}", s.state, duration(s.ns))).collect();
        let cpus: Vec<String> = t.cpus.iter().map(|c| c.cpu.to_string()).collect();
        let pid = t.pid.map_or_else(|| "?".into(), |p| p.to_string());
        let _ = writeln!(
            out,
            "{:<24} {:>8}  {:>12} {:>12} {:>12} {:>12}  {:<26} {:<12} {:>5}  {} - {}{}",
            format!("{} ({})", esc(&t.name), t.tid),
            pid,
            duration(t.running_ns),
            duration(t.preempted_ns),
            duration(t.waiting_cpu_ns),
            duration(t.blocked_ns),
            states.join(", "),
            cpus.join(","),
            t.migrations,
            format_utc(t.first_seen_ns).split(' ').nth(1).unwrap_or_default(),
            format_utc(t.last_seen_ns).split(' ').nth(1).unwrap_or_default(),
            if t.exited { " (exited)" } else { "" }
        );
    }
    if n < r.threads.len() {
        let _ = writeln!(out, "({} more threads; --limit 0 lists all)", r.threads.len() - n);
    }
    out
}
