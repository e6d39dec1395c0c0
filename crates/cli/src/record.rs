//! `tracelens record`: argument parsing, progress and summary for `tracelens_record::record`.

use std::ffi::OsString;
use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Result};
use clap::Args;
use tracelens_record::{record, stop_on_signals, Progress, RecordOptions, Target};

use crate::units::thousands;

pub const EXAMPLES: &str = "\
Examples:
  # Kernel events while a command runs (default groups), into ./tracelens-DATE-TIME/kernel
  sudo tracelens record -- make -j4

  # Only the scheduler and interrupts, bigger buffers, a chosen output directory
  sudo tracelens record -o /tmp/rec -e sched,irq --buffer-size 16M -- ./server --port 8080

  # Attach to a running process until it exits (or Ctrl-C)
  sudo tracelens record -o /tmp/rec -p 1234

  # The whole system until Ctrl-C, then look at it
  sudo tracelens record -o /tmp/rec -a && tracelens print /tmp/rec | less

  # Kernel events and the program's own probe events (TL_PROBE* in C, probe! in Rust),
  # interleaved in one time order
  sudo tracelens record -o /tmp/rec --probes -- ./server
  tracelens print /tmp/rec | less

  # Each call of a function (entry and return, no change to the program), with stacks: the
  # executions that `tracelens executions --function handle_request` finds
  sudo tracelens record -o /tmp/rec --stacks --uprobe ./server:handle_request -- ./server

  # Kernel events and user stacks (on-CPU every 0.5 ms, off-CPU at each blocking), symbolized
  sudo tracelens record -o /tmp/rec --stacks --period 0.5 -- ./server
  tracelens print /tmp/rec --event 'tracelens_stack_sample' --symbolize | less

  # A Python program: Python functions, files and lines in every stack (CPython 3.8-3.13),
  # then a profile of its on-CPU time by function
  sudo tracelens record -o /tmp/rec --python -- python3 app.py
  tracelens profile /tmp/rec

  # JIT-compiled code named from the program's perf map (saved into DIR/jit)
  sudo tracelens record -o /tmp/rec --stacks -- node --perf-basic-prof server.js
  sudo tracelens record -o /tmp/rec --stacks -- python3.12 -X perf app.py

Event groups (-e, comma-separated or repeated; default sched,irq,hrtimer,syscalls,block,net):
  sched     sched_switch, sched_waking, sched_wakeup, sched_wakeup_new, sched_migrate_task,
            sched_process_fork/exec/exit/free/wait
  irq       irq_handler_entry/exit, irq_softirq_entry/exit/raise, and on x86 the local timer
            and inter-processor interrupts (x86_irq_vectors_NAME_entry/exit)
  hrtimer   timer_hrtimer_expire_entry/exit
  timer     hrtimer and timer-wheel start, cancel, expire entry/exit
  syscalls  syscall_entry_NAME{args...} and syscall_exit_NAME{ret, ...} for every system call
  block     block_rq_issue, block_rq_complete
  net       net_dev_queue, netif_receive_skb
  SYSTEM:EVENT or SYSTEM:*  any tracefs event (e.g. kmem:mm_page_alloc), with its tracefs
            name and fields

What it writes:
  DIR/kernel: a CTF trace in LTTng's kernel layout (one stream per CPU, LTTng's event and field
  names, {tid, pid, procname} in every event's context, a state dump of threads and open files
  first, lost events as discarded-event counts) that `tracelens` and babeltrace2 read.
  DIR/stacks (with --stacks): `tracelens_stack_sample` events {kind = on_cpu | off_cpu |
  preempted, user registers, a copy of the user stack}, per CPU, on the kernel trace's clock;
  `tracelens_mmap` events (executable mappings with build ids), `tracelens_comm`,
  `tracelens_fork`, `tracelens_exit`. `tracelens print --symbolize` unwinds them (DWARF CFI,
  else frame pointers) and names each frame `function+offset (file:line)`; `tracelens
  profile` sums them by function. With --python, before each sample of a CPython 3.8-3.13
  thread: `tracelens_python_stack` {its Python frames: code ids, lines} and, once per code
  object, `tracelens_python_code` {id, name, file, first line}.
  DIR/jit (with --stacks): the perf maps (/tmp/perf-PID.map) and jitdumps (jit-PID.dump) of
  the sampled processes, copied when each exits, so that JIT-compiled code (node
  --perf-basic-prof, python3.12 -X perf, ...) is named later.
  With --uprobe BINARY:FUNCTION, the kernel trace also has FUNCTION_entry {function, arg1..arg6}
  and FUNCTION_return {function, ret} events (tracefs uprobes; the function found in the ELF
  symbol tables, executables with or without PIE and shared libraries alike; removed when
  the recording ends, and by the next recording after a SIGKILL). While a probed call runs,
  its return address is the kernel's uretprobe trampoline: in stacks sampled inside it, the
  caller's frame is that trampoline (`[uretprobe]` in `tracelens executions`' ECCTs), and
  frame pointers lead on to the callers' callers.
  DIR/ust (with --probes): one CTF trace per process that emitted probe events
  (PROCNAME-PID, one stream per thread), written by libtracelens_probe inside the command
  (include/tracelens/probe.h, link with -ltracelens_probe; or the tracelens-probe crate), on
  the kernel trace's clock: `tracelens print DIR` interleaves both.

How it works:
  Kernel events are recorded system-wide through a tracefs instance of its own
  (instances/tracelens-PID, trace_clock=mono), never the top-level buffer; the recorder's own
  system calls are left out. Each CPU's ring-buffer pages are saved to a spool while
  recording, and a converter thread (at idle priority while it keeps up) merges the CPUs in
  time order and writes the trace as it goes, deleting what it has converted: the trace is
  finished soon after the command ends, and the spool stays small. The kernel's tracing state is restored on exit, Ctrl-C, SIGTERM and
  errors; an instance left by a killed recorder is removed by the next run. Ctrl-C (or
  SIGTERM) ends the recording, and the command with SIGTERM if it is still running.
  With --stacks, perf_event_open samples the command's threads and the threads and processes
  they create (or the attached process's threads, or with -a every task): a cpu-clock timer
  for on-CPU stacks, and the sched:sched_switch tracepoint, in the context of the thread
  leaving the CPU, for its stack where it blocked. A command is held before its exec until
  the events are open, so that it is sampled from its first instruction.
  Needs root (or CAP_SYS_ADMIN with tracefs writable; CAP_PERFMON for --stacks).

Limits:
  The recording stops early, the command running on, when the spool of pages not converted
  yet passes --max-spool (the converter cannot keep up: record fewer events), when less than
  --min-free is left on the output's file system, or when the disk is full; the trace then
  holds the events until that moment. A command that cannot be started is reported before
  anything is set up.

Exit status: 0 when the recording was written (whatever the command's status, which is
printed), 2 when it was written but stopped early (see Limits; tracelens waits for the command
to end), 1 on any error.";

/// Options of `tracelens record`.
#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("sampling").args(["stacks", "python"]).multiple(true)))]
pub struct RecordArgs {
    /// Output directory (the trace goes to DIR/kernel) [default: ./tracelens-YYYYMMDD-HHMMSS]
    #[arg(short = 'o', long, value_name = "DIR")]
    output: Option<PathBuf>,
    /// Event groups or tracefs events to record, comma-separated; repeatable
    #[arg(short = 'e', long = "events", value_name = "GROUPS")]
    events: Vec<String>,
    /// Ring-buffer size per CPU, in bytes; suffixes K, M, G
    #[arg(long, value_name = "SIZE", default_value = "4M", value_parser = parse_size)]
    buffer_size: u64,
    /// Record until this process exits, instead of running a command
    #[arg(short = 'p', long, value_name = "PID", conflicts_with_all = ["all", "command"])]
    pid: Option<i32>,
    /// Record the whole system until Ctrl-C, instead of running a command
    #[arg(short = 'a', long, conflicts_with = "command")]
    all: bool,
    /// Keep the raw ring-buffer pages (DIR/.tracelens-spool) after converting them
    #[arg(long)]
    keep_spool: bool,
    /// The converter runs at idle priority while less than SIZE of pages wait to be
    /// converted, at normal priority above (0: always normal); suffixes K, M, G
    #[arg(long, value_name = "SIZE", default_value = "64M", value_parser = crate::units::parse_bytes)]
    idle_backlog: u64,
    /// Stop recording (the command runs on) when more than SIZE of pages wait to be
    /// converted: the converter cannot keep up (0: no limit); suffixes K, M, G
    #[arg(long, value_name = "SIZE", default_value = "1G", value_parser = crate::units::parse_bytes)]
    max_spool: u64,
    /// Do not start, and stop recording (the command runs on), when less than SIZE is free on
    /// the output's file system; suffixes K, M, G
    #[arg(long, value_name = "SIZE", default_value = "256M", value_parser = crate::units::parse_bytes)]
    min_free: u64,
    /// No progress line while recording
    #[arg(short = 'q', long)]
    quiet: bool,
    /// Also sample user stacks (on-CPU every --period, and at each context switch out of a
    /// traced thread) into DIR/stacks
    #[arg(long)]
    stacks: bool,
    /// Also read the Python frames (function, file, line) of CPython 3.8-3.13 processes at
    /// each stack sample, from outside the program (implies --stacks)
    #[arg(long)]
    python: bool,
    /// On-CPU stack sampling period, in milliseconds of CPU time (with --stacks)
    #[arg(long, value_name = "MS", default_value = "1", value_parser = parse_period, requires = "sampling")]
    period: u64,
    /// Bytes of user stack copied per sample (with --stacks); suffix K
    #[arg(long, value_name = "SIZE", default_value = "16K", value_parser = parse_stack_size, requires = "sampling")]
    stack_size: u32,
    /// Let the command's user-space probes (tracelens-probe: TL_PROBE* in C, probe! in
    /// Rust) write into DIR/ust, on the kernel trace's clock
    #[arg(long, conflicts_with_all = ["pid", "all"])]
    probes: bool,
    /// Record each call of FUNCTION in BINARY (entry and return, through tracefs uprobes):
    /// `--uprobe ./server:handle_request`; repeatable. The delimiters of
    /// `tracelens executions --function FUNCTION`
    #[arg(long, value_name = "BINARY:FUNCTION", value_parser = parse_uprobe)]
    uprobe: Vec<tracelens_record::uprobe::UprobeSpec>,
    /// The command to run and record, after `--`
    #[arg(last = true, value_name = "CMD")]
    command: Vec<OsString>,
}

/// `BINARY:FUNCTION`.
fn parse_uprobe(s: &str) -> Result<tracelens_record::uprobe::UprobeSpec, String> {
    tracelens_record::uprobe::UprobeSpec::parse(s).map_err(|e| e.to_string())
}

/// A buffer size (see [`crate::units::parse_bytes`]): at least one 4 KiB page.
fn parse_size(s: &str) -> Result<u64, String> {
    let bytes = crate::units::parse_bytes(s)?;
    if bytes < 4096 {
        return Err(format!("`{s}` is less than one 4 KiB page"));
    }
    Ok(bytes)
}

/// Milliseconds (decimals allowed) to nanoseconds.
fn parse_period(s: &str) -> Result<u64, String> {
    let ms: f64 = s.trim().parse().map_err(|_| format!("`{s}` is not a number of milliseconds"))?;
    if !(0.01..=10_000.0).contains(&ms) {
        return Err(format!("the period must be from 0.01 to 10000 ms, not `{s}`"));
    }
    Ok((ms * 1e6).round() as u64)
}

fn parse_stack_size(s: &str) -> Result<u32, String> {
    let t = s.trim();
    let (num, mult) = match t.strip_suffix(['K', 'k']) {
        Some(n) => (n, 1024),
        None => (t, 1),
    };
    let n: u32 = num.trim().parse().map_err(|_| format!("`{s}` is not a size"))?;
    let bytes = n.checked_mul(mult).filter(|b| (8..=65000).contains(b)).ok_or_else(|| format!("the stack size must be from 8 bytes to 63K, not `{s}`"))?;
    Ok(bytes / 8 * 8)
}

/// `tracelens-YYYYMMDD-HHMMSS` in local time.
fn default_output() -> PathBuf {
    // SAFETY: time and localtime_r fill the structures given; tm is plain data.
    let tm = unsafe {
        let t = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&t, &mut tm);
        tm
    };
    PathBuf::from(format!(
        "tracelens-{:04}{:02}{:02}-{:02}{:02}{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    ))
}

fn progress_line(p: &Progress) -> String {
    format!(
        "tracelens: recording {:.1} s: {} events, {:.1} MB, {} lost; {} written, {:.1} MB to convert",
        p.elapsed.as_secs_f64(),
        thousands(p.events),
        p.bytes as f64 / 1e6,
        thousands(p.lost),
        thousands(p.converted),
        p.spool_bytes as f64 / 1e6
    )
}

/// Runs `tracelens record`.
pub fn run(args: RecordArgs) -> Result<ExitCode> {
    let target = if let Some(pid) = args.pid {
        if pid <= 0 || !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            bail!("no process {pid} to attach to");
        }
        Target::Pid(pid)
    } else if args.all {
        Target::System
    } else if !args.command.is_empty() {
        Target::Command(args.command.clone())
    } else {
        bail!("nothing to record: give a command after `--`, -p PID or -a (see `tracelens record --help`)");
    };
    let output = args.output.clone().unwrap_or_else(default_output);
    let mut opts = RecordOptions::new(&output, target);
    opts.events = args.events.clone();
    opts.buffer_size_kb = args.buffer_size.div_ceil(1024);
    opts.keep_spool = args.keep_spool;
    opts.idle_backlog = args.idle_backlog;
    opts.probes = args.probes;
    opts.uprobes = args.uprobe.clone();
    opts.max_spool = args.max_spool;
    opts.min_free = args.min_free;
    if args.stacks || args.python {
        opts.stacks = Some(tracelens_record::stacks::StackOptions { period_ns: args.period, stack_size: args.stack_size, python: args.python, ..Default::default() });
    }
    opts.stop = Some(stop_on_signals()?);

    let stderr = io::stderr();
    let tty = stderr.is_terminal();
    let started = Instant::now();
    let mut last_line = Instant::now();
    let mut shown = false;
    let quiet = args.quiet;
    if !quiet && matches!(opts.target, Target::System | Target::Pid(_)) {
        eprintln!("tracelens: recording to {} (Ctrl-C to stop)", output.join("kernel").display());
    }
    let mut on_progress = |p: &Progress| {
        if quiet {
            return;
        }
        let mut e = stderr.lock();
        if tty {
            let _ = write!(e, "\r\x1b[K{}", progress_line(p));
            shown = true;
        } else if last_line.elapsed().as_secs() >= 5 {
            let _ = writeln!(e, "{}", progress_line(p));
            last_line = Instant::now();
        }
    };
    let result = record(&opts, &mut on_progress);
    if shown {
        let _ = writeln!(stderr.lock());
    }
    let mut s = result?;
    let c = &s.convert;
    let mut msg = format!(
        "tracelens: wrote {} events ({} lost, {} of the recorder left out) on {} CPUs, {:.1} MB, to {} in {:.1} s",
        thousands(c.events),
        thousands(c.discarded),
        thousands(c.own_dropped),
        s.cpus,
        c.bytes as f64 / 1e6,
        s.trace_dir.display(),
        started.elapsed().as_secs_f64()
    );
    if !s.removed_stale.is_empty() {
        msg += &format!("\ntracelens: removed the instance(s) of killed recorders: {}", s.removed_stale.join(", "));
    }
    if c.unrecorded_switches > 0 {
        let tids: Vec<String> = c.unrecorded_switch_tids.iter().take(10).map(|t| t.to_string()).collect();
        msg += &format!(
            "\ntracelens: warning: the kernel did not record {} context switch(es) (switching out thread(s) {}{}); counted as lost: the CPU time around them is uncertain",
            thousands(c.unrecorded_switches),
            tids.join(", "),
            if c.unrecorded_switch_tids.len() > 10 { ", ..." } else { "" }
        );
    }
    if c.late > 0 {
        msg += &format!(
            "\ntracelens: note: {} event(s) became readable only after later events of other CPUs were converted; their thread names and ids may lag a change made on another CPU just before",
            thousands(c.late)
        );
    }
    if let Some(p) = &c.first_problem {
        msg += &format!("\ntracelens: warning: {} page(s) or event(s) could not be converted; first: {p}", c.bad_pages + c.skipped);
    }
    if let Some(st) = s.exit {
        if !st.success() {
            msg += &format!("\ntracelens: the command ended with {st}");
        }
    }
    if let Some(st) = &s.stacks {
        msg += &format!(
            "\ntracelens: wrote {} stack samples ({} on-CPU, {} off-CPU, {} preempted; {} lost) and {} memory maps to {}{}",
            thousands(st.on_cpu + st.off_cpu + st.preempted),
            thousands(st.on_cpu),
            thousands(st.off_cpu),
            thousands(st.preempted),
            thousands(st.lost),
            thousands(st.mmaps),
            st.trace_dir.display(),
            if st.throttled > 0 { format!(" (the kernel throttled sampling {} times: see kernel.perf_event_max_sample_rate)", st.throttled) } else { String::new() }
        );
    }
    if let Some(py) = s.stacks.as_ref().and_then(|st| st.python.as_ref()) {
        let procs: Vec<String> = py.processes.iter().map(|(pid, v)| format!("{pid} (CPython {v})")).collect();
        if procs.is_empty() {
            msg += "\ntracelens: warning: --python: no CPython 3.8-3.13 process was sampled";
        } else {
            msg += &format!(
                "\ntracelens: Python frames in {} samples of process(es) {}, read {:.2} ms after their sample (median; {:.2} ms at most)",
                thousands(py.stacks),
                procs.join(", "),
                py.lag_ns.0 as f64 / 1e6,
                py.lag_ns.1 as f64 / 1e6
            );
        }
        match (&py.first_error, py.failed) {
            (Some(e), 0) => msg += &format!("\ntracelens: note: --python: {e}"),
            (Some(e), n) => msg += &format!("\ntracelens: note: {} Python stack(s) could not be read (the thread moved on while read, or the process ended); first: {e}", thousands(n)),
            (None, _) => {}
        }
        if py.stale > 0 {
            msg += &format!(
                "\ntracelens: note: {} Python stack(s) of switched-out threads left out: read only after the thread ran again",
                thousands(py.stale)
            );
        }
    }
    if let Some(st) = &s.stacks {
        if let Some(dir) = &st.jit.dir {
            msg += &format!("\ntracelens: saved {} perf map / jitdump file(s) ({:.1} MB) to {}", st.jit.files, st.jit.bytes as f64 / 1e6, dir.display());
        }
        for r in &st.jit.refused {
            msg += &format!("\ntracelens: warning: {r}");
        }
    }
    if args.probes {
        msg += &format!("\ntracelens: {}", probe_summary(&output.join("ust")));
    }
    if let Some(sp) = &s.spool {
        msg += &format!("\ntracelens: raw pages kept in {}", sp.display());
    }
    if let Some(cut) = &s.cut_short {
        msg += &format!(
            "\ntracelens: warning: recording stopped after {:.1} s: {cut}; the trace holds the events until then",
            s.progress.elapsed.as_secs_f64()
        );
    }
    eprintln!("{msg}");
    if s.cut_short.is_none() {
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(child) = s.running.as_mut() {
        // The command runs on, as if it had not been recorded: wait for it.
        eprintln!("tracelens: the command (pid {}) runs on; waiting for it to end", child.id());
        if let Ok(st) = child.wait() {
            if !st.success() {
                eprintln!("tracelens: the command ended with {st}");
            }
        }
    }
    Ok(ExitCode::from(2))
}

/// What the command's probes wrote into `dir`.
fn probe_summary(dir: &std::path::Path) -> String {
    if !dir.exists() {
        return format!("no probe events: the command emitted none (or did not load libtracelens_probe), {} not made", dir.display());
    }
    let set = match tracelens_trace::TraceSet::open(&[dir]) {
        Ok(s) => s,
        Err(e) => return format!("warning: the probe traces in {} cannot be read: {e}", dir.display()),
    };
    let (mut events, mut discarded) = (0u64, 0u64);
    for t in &set.traces {
        for i in 0..t.streams.len() {
            let mut c = t.cursor(i);
            loop {
                match c.advance() {
                    Ok(Some(tracelens_ctf::Item::Event)) => events += 1,
                    Ok(Some(tracelens_ctf::Item::DiscardedEvents { count, .. })) => discarded += count,
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                    Err(e) => return format!("warning: the probe traces in {} cannot be read: {e}", dir.display()),
                }
            }
        }
    }
    format!("wrote {} probe events ({} lost) from {} process(es) to {}", thousands(events), thousands(discarded), set.traces.len(), dir.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4M"), Ok(4 << 20));
        assert_eq!(parse_size("512k"), Ok(512 << 10));
        assert_eq!(parse_size("8192"), Ok(8192));
        assert!(parse_size("12").is_err());
        assert!(parse_size("3X").is_err());
        assert!(parse_size("M").is_err());
        assert_eq!(parse_stack_size("16K"), Ok(16384));
        assert_eq!(parse_stack_size("100"), Ok(96));
        assert!(parse_stack_size("64K").is_err());
        assert_eq!(parse_period("0.1"), Ok(100_000));
        assert_eq!(parse_period("1"), Ok(1_000_000));
        assert!(parse_period("0").is_err());
        assert!(parse_period("x").is_err());
    }

    #[test]
    fn numbers() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(999), "999");
    }
}
