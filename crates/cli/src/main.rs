//! `tracelens`: record, read, analyze and compare multi-level execution traces.
//!
//! This binary is argument parsing and output only. Each command lives in the module named
//! after it (`print`, `stats`, `cpu`, ...): it turns its flags into the options of a library
//! crate (`tracelens-trace`, `-analysis`, `-record`, `-synth`), runs it, and renders what it
//! returns as text or JSON on standard output. `main` maps what a command returns to the exit
//! status: 0 on success (a closed output pipe, as with `| head`, included), 1 on any error, with
//! one line on standard error.
//!
//! Data enters as command-line arguments (trace paths, options) and leaves as standard output
//! (events, reports) and standard error (progress, warnings, the error). Besides the command
//! modules: `analysis.rs` (the options every analysis command shares), `table.rs` (text table
//! helpers: escaped names, times, microseconds), `progress.rs`, `output.rs` (standard output,
//! JSON lines), `units.rs` (sizes and counts), `symbolize.rs` (`print --symbolize`).

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc instead of the system allocator: parsing a kernel trace's metadata and the
/// analyses' per-chunk buffers allocate a lot, and mimalloc reuses freed memory per thread
/// instead of handing it back to the system (one page fault per page per reuse).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod analysis;
mod cpu;
mod export;
mod compare;
mod critical_path;
mod executions;
mod io;
mod output;
mod irq;
mod latency;
mod merge;
mod print;
mod print_chunks;
mod profile;
mod progress;
mod record;
mod sched;
mod serve;
mod stats;
mod symbolize;
mod synth;
mod syscalls;
mod table;
mod threads;
mod timings;
mod units;
mod warnings;

#[derive(Parser, Debug)]
#[command(
    name = "tracelens",
    version,
    about = "Record, read and analyze execution traces: Linux kernel events and user stacks, in CTF",
    long_about = "tracelens is a toolkit for multi-level execution traces: Linux kernel events, user-space events and \
                  call stacks, in the Common Trace Format (CTF, LTTng's format).\n\n\
                  Record kernel events and user stacks while a command runs (record); read any CTF 1.8 or CTF 2 trace - LTTng \
                  kernel and user space, barectf, perf's CTF conversions - and print its events merged in time order \
                  exactly as babeltrace2 does, or as JSON (print); count them (stats); compute lttng-analyses' \
                  reports in parallel on chunks of the trace (cpu, sched, io, syscalls, irq), as text tables or JSON; \
                  write synthetic kernel traces for tests and benchmarks (synth).\n\n\
                  A TRACE is a trace directory (with a `metadata` file) or a folder holding several, such as an LTTng \
                  session with kernel/ and ust/...: all are read together as one time-ordered set.",
    after_help = "Run `tracelens COMMAND --help` for options and examples."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the events of one or more traces, in time order
    #[command(after_long_help = print::EXAMPLES, after_help = "Run with --help (not -h) for examples.")]
    Print(print::PrintArgs),
    /// Record kernel events while a command runs (or a process, or the whole system), as CTF
    #[command(after_long_help = record::EXAMPLES, after_help = "Run with --help (not -h) for examples.")]
    Record(record::RecordArgs),
    /// Count events by name and by stream; time span, lost events and packets (in parallel)
    #[command(after_long_help = stats::EXAMPLES, after_help = "Run with --help (not -h) for examples.")]
    Stats(stats::StatsArgs),
    /// Merge traces into one CTF trace (one metadata, every stream, one clock)
    #[command(after_long_help = merge::EXAMPLES, after_help = "Run with --help (not -h) for examples.")]
    Merge(merge::MergeArgs),
    /// Export traces for viewers: Chrome trace events, Pajé, folded stacks (flame graphs)
    #[command(after_long_help = export::EXAMPLES, after_help = "Run with --help (not -h) for examples.")]
    Export(export::ExportArgs),
    /// Write a synthetic LTTng-kernel-layout trace from a small scheduler simulation
    #[command(after_long_help = synth::EXAMPLES)]
    Synth(synth::SynthArgs),
    /// CPU usage per thread and per CPU, migrations, priorities (like lttng-cputop; in parallel)
    #[command(after_long_help = cpu::EXAMPLES, after_help = "Run with --help (not -h) for examples.")]
    Cpu(cpu::CpuArgs),
    /// Wake-up to switch-in latency per thread and priority, and the longest ones (like
    /// lttng-schedstats and lttng-schedtop; in parallel)
    #[command(after_long_help = sched::EXAMPLES, after_help = "Run with --help (not -h) for examples.")]
    Sched(sched::SchedArgs),
    /// Bytes read and written per process and per file, I/O call latencies and the longest
    /// calls (like lttng-iousagetop, -iolatencystats, -iolatencytop; in parallel)
    #[command(after_long_help = io::EXAMPLES, after_help = "Run with --help (not -h) for examples.")]
    Io(io::IoArgs),
    /// System calls per thread and per call: count, durations, errors (like
    /// lttng-syscallstats; in parallel)
    #[command(after_long_help = syscalls::EXAMPLES, after_help = "Run with --help (not -h) for examples.")]
    Syscalls(syscalls::SyscallsArgs),
    /// Per thread: first and last seen, running, preempted, waiting-for-CPU and blocked time
    /// (by task state), CPUs used, migrations (in parallel)
    #[command(after_long_help = threads::EXAMPLES, after_help = "Run with --help (not -h) for examples.")]
    Threads(threads::ThreadsArgs),
    /// Time from each event of one kind to the next of another (optionally with the same field
    /// value): count, percentiles, histogram, slowest pairs (in parallel)
    #[command(after_long_help = latency::EXAMPLES, after_help = "Run with --help (not -h) for examples.")]
    Latency(latency::LatencyArgs),
    /// Hard and soft IRQ handler durations and soft IRQ raise latencies (like lttng-irqstats;
    /// in parallel)
    #[command(after_long_help = irq::EXAMPLES, after_help = "Run with --help (not -h) for examples.")]
    Irq(irq::IrqArgs),
    /// What a thread waited for between two times, and for whom, recursively: its critical
    /// path over the execution graph (built in parallel)
    #[command(name = "critical-path", after_long_help = critical_path::EXAMPLES, after_help = "Run with --help (not -h) for examples.")]
    CriticalPath(critical_path::CriticalPathArgs),
    /// Per-function shares of the recorded stack samples, on-CPU or off-CPU (like perf
    /// report), and folded stacks for flame graphs
    #[command(after_long_help = profile::EXAMPLES, after_help = "Run with --help (not -h) for examples.")]
    Profile(profile::ProfileArgs),
    /// Find executions (calls of a function, begin/end event pairs), their critical paths and
    /// enhanced calling context trees, and write them to a database for `compare`
    #[command(after_long_help = executions::EXAMPLES, after_help = "Run with --help (not -h) for examples.")]
    Executions(executions::ExecutionsArgs),
    /// Compare two groups of executions of a database: which calling contexts explain the
    /// difference (z-scores, differential flame graph)
    #[command(after_long_help = compare::EXAMPLES, after_help = "Run with --help (not -h) for examples.")]
    Compare(compare::CompareArgs),
    /// Serve the comparison as a web page on 127.0.0.1: brushing histograms, a differential
    /// flame graph, sample executions
    #[command(after_long_help = serve::EXAMPLES, after_help = "Run with --help (not -h) for examples.")]
    Serve(serve::ServeArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => return usage_error(e),
    };
    // The commands whose result is on standard output fail at once when it is closed (Rust
    // would drop their writes silently).
    let writes_stdout = !matches!(cli.command, Command::Record(_) | Command::Synth(_) | Command::Merge(_) | Command::Export(_));
    let result = if writes_stdout { output::check_stdout() } else { Ok(()) }.and_then(|()| match cli.command {
        Command::Print(args) => print::run(args),
        Command::Record(args) => record::run(args),
        Command::Stats(args) => stats::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Export(args) => export::run(args),
        Command::Synth(args) => synth::run(args),
        Command::Cpu(args) => cpu::run(args),
        Command::Sched(args) => sched::run(args),
        Command::Io(args) => io::run(args),
        Command::Syscalls(args) => syscalls::run(args),
        Command::Irq(args) => irq::run(args),
        Command::Threads(args) => threads::run(args),
        Command::Latency(args) => latency::run(args),
        Command::CriticalPath(args) => critical_path::run(args),
        Command::Profile(args) => profile::run(args),
        Command::Executions(args) => executions::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Serve(args) => serve::run(args),
    });
    match result {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(std::io::stderr().lock(), "tracelens: error: {}", message(&e));
            ExitCode::from(1)
        }
    }
}

/// Help and version go to standard output (exit 0); a command line clap refuses is one line
/// on standard error (exit 1).
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand) {
        let _ = e.print();
        return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand { ExitCode::from(1) } else { ExitCode::SUCCESS };
    }
    let text = e.render().to_string();
    // The message up to the first blank line (before clap's usage and tips), on one line.
    let msg: Vec<&str> = text.lines().take_while(|l| !l.trim().is_empty()).map(str::trim).collect();
    let joined = msg.join(" ");
    let first = joined.strip_prefix("error: ").unwrap_or(&joined);
    let _ = writeln!(std::io::stderr().lock(), "tracelens: error: {first} (see `tracelens --help`)");
    ExitCode::from(1)
}

/// Whether the output pipe was closed by its reader (`| head`): the command is done.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe))
}

/// The error and its contexts on one line, outermost first (`context: cause`). The library
/// errors already print their source (`path: OS error`), so a cause whose text ends what is
/// written so far is not repeated.
fn message(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.ends_with(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contexts_come_first_and_sources_are_not_repeated() {
        let os = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory");
        let lib = tracelens_ctf::Error::Io { path: "/x/metadata".into(), source: os };
        let e = anyhow::Error::new(lib).context("cannot open the trace");
        assert_eq!(message(&e), "cannot open the trace: /x/metadata: No such file or directory");
        let pipe = anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::BrokenPipe)).context("cannot write the output");
        assert!(is_broken_pipe(&pipe));
        assert!(!is_broken_pipe(&e));
    }
}
