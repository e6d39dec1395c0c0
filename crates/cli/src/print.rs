//! `tracelens print`: the events of one or more traces in time order, as babeltrace2's text
//! or as JSON lines, filtered by thread, process, CPU, event name and time; with
//! `--symbolize`, the unwound stack after each stack sample.
//!
//! Data enters as trace directories (opened into a [`TraceSet`] and merged by time); it
//! leaves on standard output, one line per event, while discarded-event warnings and the
//! closing summary go to standard error.

use std::io::{self, IsTerminal, Write};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::ValueEnum;
use tracelens_ctf::Item;
use tracelens_trace::filter::{Filter, TimeBound};
use tracelens_trace::json::JsonPrinter;
use tracelens_trace::text::{trace_names, Discarded, DiscardedItems, TextOptions, TextPrinter};
use tracelens_trace::{discover, Source, TraceSet};

use crate::print_chunks;

use crate::symbolize;

pub const EXAMPLES: &str = "\
Examples:
  # Every event of a trace, like `babeltrace2 TRACE` (times in local time; set TZ to change)
  tracelens print ~/lttng-traces/my-session-20240101-120000

  # All traces under a folder (e.g. a kernel and a user space trace), merged by time
  tracelens print ~/lttng-traces/my-session-20240101-120000/

  # Scheduler events of thread 1234 between two times of day (date of the first event)
  tracelens print TRACE --event 'sched_*' --tid 1234 --begin 10:15:09 --end 10:15:10.5

  # Events on CPU 2 during one second, given as seconds since the clock's origin
  tracelens print TRACE --cpu 2 --begin 1571771741 --end 1571771742

  # One JSON object per event, for scripts (see `--format`)
  tracelens print TRACE --format json | jq -r 'select(.name == \"sched_switch\") | .payload.next_comm'

  # babeltrace2-style field names everywhere, and the date
  tracelens print TRACE --names all --clock-date

  # On one thread only (the default is one per core; the output is the same)
  tracelens print -j 1 TRACE > events.txt

Output:
  Text lines are byte-for-byte what babeltrace2 2.0 prints:
    [HH:MM:SS.NNNNNNNNN] (+DELTA) HOST:PROC:(VPID) EVENT: { packet context }, { stream event context }, { event context }, { payload }
  Lines about events or packets the tracer discarded (`WARNING: Tracer discarded ...`) go to
  standard error, as with babeltrace2. At the end, a warning on standard error sums up
  discarded events and any timestamps that went backwards (babeltrace2 stops there; tracelens
  keeps reading and prints the events in the order read).

Threads (`-j N`, default one per core): the events are cut into time ranges of about
`--chunk-size` bytes of events (default 1 MiB for text, 512 KiB for JSON; a chunk may begin
and end inside packets; the last ones are smaller, so that the threads finish together),
formatted in parallel and written in order, byte
for byte what one thread writes (times, deltas, warnings). `--symbolize`, `--begin`/`--end`, `--clock-cycles`,
traces whose packets lack begin/end times and ranges whose times go backwards are printed by one
thread.

Exit status: 0 on success (also when the output pipe closes early, e.g. `| head`), 1 on any
error; on a decoding error, the events before it are printed first.";

const TIME_HELP: &str = "TIME is `YYYY-MM-DD HH:MM[:SS[.NANO]]`, `YYYY-MM-DD`, `HH:MM[:SS[.NANO]]` (local time; with \
                         no date, the date of the first event) or `[-]SECONDS[.NANO]` since the clock's origin \
                         (the Unix epoch for LTTng). Bounds are inclusive.";

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// babeltrace2's text format (`sink.text.pretty`)
    Text,
    /// One JSON object per line: {"timestamp_ns", "name", "trace", "stream", "packet_context",
    /// "common_context", "context", "payload"}; enums as {"value", "labels"}, variants as
    /// {"OPTION": value}; discarded events/packets as {"discarded_events"|"discarded_packets",
    /// "begin_ns", "end_ns", "trace", "stream"}
    Json,
}

#[derive(clap::Args, Debug)]
pub struct PrintArgs {
    /// Trace directories (holding a `metadata` file), or folders to search for traces
    #[arg(required = true, value_name = "TRACE")]
    traces: Vec<PathBuf>,

    /// Drop events before TIME
    #[arg(long, value_name = "TIME", allow_hyphen_values = true, long_help = format!("Drop events before TIME. {TIME_HELP}"))]
    begin: Option<String>,

    /// Drop events after TIME
    #[arg(long, value_name = "TIME", allow_hyphen_values = true, long_help = format!("Drop events after TIME. {TIME_HELP}"))]
    end: Option<String>,

    /// Keep only events whose name matches GLOB (`*` any run, `?` one character); repeatable
    #[arg(long = "event", short = 'e', value_name = "GLOB")]
    events: Vec<String>,

    /// Keep only events of this thread (context field `tid`/`vtid`, or `perf_tid`)
    #[arg(long, value_name = "TID", allow_hyphen_values = true)]
    tid: Option<i64>,

    /// Keep only events of this process (context field `pid`/`vpid`, `perf_pid`, or the
    /// trace's `vpid` for per-process user space traces)
    #[arg(long, value_name = "PID", allow_hyphen_values = true)]
    pid: Option<i64>,

    /// Keep only events of this CPU (packet context `cpu_id`, or `perf_cpu`)
    #[arg(long, value_name = "CPU", allow_hyphen_values = true)]
    cpu: Option<i64>,

    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,

    /// Which field names to show (text): comma-separated `payload`, `context`, `scope`,
    /// `header`, `all`, `none` (default: payload,context)
    #[arg(long, short = 'n', value_name = "LIST")]
    names: Option<String>,

    /// Which event header fields to show (text): comma-separated `trace`, `trace:hostname`,
    /// `trace:domain`, `trace:procname`, `trace:vpid`, `loglevel`, `emf`, `all`
    /// (default: trace:hostname,trace:procname,trace:vpid)
    #[arg(long, short = 'f', value_name = "LIST")]
    fields: Option<String>,

    /// Do not print the time since the previous event (text)
    #[arg(long)]
    no_delta: bool,

    /// Print clock cycles instead of times (text)
    #[arg(long)]
    clock_cycles: bool,

    /// Print times as seconds since the clock's origin (text)
    #[arg(long)]
    clock_seconds: bool,

    /// Print the date with the time (text)
    #[arg(long)]
    clock_date: bool,

    /// Use UTC instead of the local time zone, for printed times and for --begin/--end
    #[arg(long)]
    clock_gmt: bool,

    /// After each stack sample (`tracelens record --stacks`), its unwound stack: one line per
    /// frame, `function+offset (file:line) [module]` (JSON: a `frames` member)
    #[arg(long)]
    symbolize: bool,

    #[command(flatten)]
    parallel: crate::analysis::ParallelArgs,
}

pub(crate) enum Printer {
    Text(TextPrinter),
    Json(JsonPrinter),
}

/// Runs `tracelens print`.
pub fn run(args: PrintArgs) -> Result<ExitCode> {
    // Options first, so mistakes are reported before any work.
    let mut text_opts = TextOptions::default();
    if let Some(n) = &args.names {
        text_opts.set_names(n)?;
    }
    if let Some(f) = &args.fields {
        text_opts.set_fields(f)?;
    }
    text_opts.delta = !args.no_delta;
    text_opts.clock_cycles = args.clock_cycles;
    text_opts.clock_seconds = args.clock_seconds;
    text_opts.clock_date = args.clock_date;
    text_opts.clock_gmt = args.clock_gmt;
    tracelens_trace::text::init_timezone();
    let mut filter = Filter::default();
    filter.events = args.events.clone();
    filter.tid = args.tid;
    filter.pid = args.pid;
    filter.cpu = args.cpu;
    if let Some(b) = &args.begin {
        filter.begin = Some(TimeBound::parse_tz(b, args.clock_gmt)?);
    }
    if let Some(e) = &args.end {
        filter.end = Some(TimeBound::parse_tz(e, args.clock_gmt)?);
    }
    if let (Some(b), Some(e)) = (&filter.begin, &filter.end) {
        if TimeBound::inverted(b, e) {
            bail!("{}", crate::analysis::inverted_range(&args.begin, &args.end));
        }
    }

    // Find and open the traces; remember under which argument each was found.
    let mut dirs = Vec::new();
    let mut inputs = Vec::new();
    for t in &args.traces {
        for d in discover(t)? {
            inputs.push(t.clone());
            dirs.push(d);
        }
    }
    let set = TraceSet::open(&dirs)?;

    let names = trace_names(&set, &inputs);
    let new_printer = || match args.format {
        Format::Text => Printer::Text(TextPrinter::new(&set, &names, text_opts.clone())),
        Format::Json => Printer::Json(JsonPrinter::new(&set)),
    };
    let mut printer = new_printer();

    let stdout = io::stdout();
    let out = tracelens_trace::OutBuf::with_capacity(1 << 16, stdout.lock());
    let stderr = io::stderr();
    let interactive = stderr.is_terminal();

    let vpids: Vec<Option<i64>> = set
        .traces
        .iter()
        .map(|t| match t.class.env("vpid") {
            Some(tracelens_ctf::ir::EnvValue::Int(v)) => Some(*v),
            _ => None,
        })
        .collect();
    // Equal timestamps: babeltrace2's order, so that the first event (the one without a
    // delta) is the same.
    let ranks = match &printer {
        Printer::Text(p) => Some(p.layout().tie_break_ranks()),
        Printer::Json(_) => None,
    };
    let rank = |src| ranks.as_ref().map_or(0, |r| tracelens_trace::text::Layout::tie_break_rank(r, src));

    // In parallel first, where the options and the traces allow (see `print_chunks`).
    let threads = match args.parallel.jobs {
        Some(j) => j as usize,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let chunk_size = args.parallel.chunk_size.unwrap_or(if args.format == Format::Json { JSON_CHUNK_SIZE } else { TEXT_CHUNK_SIZE });
    let chunks = (threads > 1 && !args.symbolize && filter.begin.is_none() && filter.end.is_none() && !args.clock_cycles)
        .then(|| tracelens_trace::chunks::TimeChunks::new(&set, chunk_size, threads))
        .flatten()
        .filter(|c| c.len() > 1);
    let (mut skip_bytes, mut skip_lines) = (0u64, 0u64);
    // The workers write the chunks (see `print_chunks::ordered`), through a duplicate of
    // standard output's descriptor: `Stdout`'s lock, which this thread holds for the serial
    // reading after them, cannot move to another thread. (Without a duplicate, the serial
    // reading prints everything.)
    let chunks = chunks.and_then(|c| Some((c, std::fs::File::from(stdout.as_fd().try_clone_to_owned().ok()?))));
    if let Some((chunks, stdout_file)) = chunks {
        let mut out = tracelens_trace::OutBuf::with_capacity(1 << 16, stdout_file);
        let buffers = print_chunks::Buffers::new(chunk_size, args.format == Format::Json);
        let relay = print_chunks::Relay::new(threads);
        let reading = print_chunks::Reading { set: &set, filter: &filter, vpids: &vpids, ranks: ranks.is_some().then_some(&rank as &(dyn Fn(Source) -> u64 + Sync)), chunks: &chunks, buffers: &buffers, relay: &relay };
        let mut w = print_chunks::Writer::new(&mut out, interactive);
        // The pages of the chunks `threads` before the one written go back (see `Release`).
        let mut release = print_chunks::Release::new(&set, &chunks, threads);
        let done = print_chunks::ordered(threads, chunks.len(), 2 * threads, || print_chunks::Worker::new(new_printer(), &relay), |wk, i| print_chunks::read_chunk(&reading, wk, i), |c| {
            let written = w.write(c, &buffers);
            release.written(w.chunks.saturating_sub(1));
            written
        });
        let (bytes, lines, lost, written) = (w.bytes, w.lines, w.lost, w.chunks);
        if std::env::var_os("TRACELENS_PRINT_CHUNKS").is_some() {
            // For tests: whether the parallel path ran, and how far.
            eprintln!("tracelens: print: {} chunks, {written} written in parallel, {} readers taken over, {} in the chunk the worker's own stood at, {} requests withdrawn", chunks.len(), relay.handed_over(), relay.caught_up(), relay.withdrawn());
        }
        match done.and_then(|done| out.flush().map(|()| done)) {
            Ok(true) => {
                crate::warnings::report(&set);
                report_lost(lost, args.format);
                return Ok(ExitCode::SUCCESS);
            }
            // A chunk whose times are not in order: the serial reading, after what is written.
            Ok(false) => (skip_bytes, skip_lines) = (bytes, lines),
            Err(e) => {
                crate::warnings::report(&set);
                return Err(e).context("cannot write the output");
            }
        }
    }
    let mut out = tracelens_trace::OutBuf::with_capacity(1 << 16, print_chunks::Skip { inner: out, skip: skip_bytes });

    let mut merger = set.merger();
    if ranks.is_some() {
        merger.set_tie_break(rank);
    }
    let mut stacks = args.symbolize.then(|| symbolize::Stacks::new(&set));
    let mut lost_events = 0u64;
    let mut lost_packets = 0u64;
    let mut failure: Option<tracelens_trace::Error> = None;

    let keeps_all = filter.keeps_all();
    let outcome: io::Result<()> = (|| {
        loop {
            let (src, item) = match merger.next() {
                Ok(Some(x)) => x,
                Ok(None) => break,
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            };
            match item {
                Item::Event => {
                    let Some(ev) = merger.event() else { continue };
                    if !keeps_all {
                        if let Some(ns) = ev.ns {
                            filter.observe_first_time(ns);
                            if filter.past_end(ns) && merger.regressions == 0 {
                                break;
                            }
                        }
                    }
                    if let Some(st) = stacks.as_mut() {
                        st.observe(&ev);
                    }
                    if !keeps_all && !filter.matches(&ev, vpids.get(src.trace).copied().flatten()) {
                        continue;
                    }
                    let Some(st) = stacks.as_mut() else {
                        match &mut printer {
                            Printer::Text(p) => p.write_event(&mut out, src, &ev)?,
                            Printer::Json(p) => p.write_event(&mut out, src, &ev)?,
                        }
                        continue;
                    };
                    match (&mut printer, st.stack(&ev)) {
                        (Printer::Text(p), Some(stack)) => {
                            p.write_event(&mut out, src, &ev)?;
                            st.write_text(&mut out, &stack)?;
                        }
                        (Printer::Json(p), Some(stack)) => st.write_json(&mut out, &stack, |line| p.write_event(line, src, &ev))?,
                        (Printer::Text(p), None) => p.write_event(&mut out, src, &ev)?,
                        (Printer::Json(p), None) => p.write_event(&mut out, src, &ev)?,
                    }
                }
                Item::DiscardedEvents { count, .. } | Item::DiscardedPackets { count, .. } => {
                    let Some(d) = merger.cursor().and_then(|c| DiscardedItems::of(c, item)) else { continue };
                    if let Some(t) = d.begin_ns.or(d.end_ns) {
                        filter.observe_first_time(t);
                    }
                    if !filter.range_matches(d.begin_ns, d.end_ns) {
                        continue;
                    }
                    match d.kind {
                        Discarded::Events => lost_events += count,
                        Discarded::Packets => lost_packets += count,
                    }
                    match &mut printer {
                        Printer::Text(p) => {
                            // Keep the terminal readable: events before the warning come first.
                            if interactive {
                                out.flush()?;
                            }
                            if skip_lines > 0 {
                                skip_lines -= 1;
                                continue;
                            }
                            let mut err = stderr.lock();
                            p.write_discarded(&mut err, src, &d)?;
                        }
                        Printer::Json(p) => p.write_discarded(&mut out, src, &d)?,
                    }
                }
            }
        }
        out.flush()
    })();

    crate::warnings::report(&set);
    // A closed pipe (`| head`) ends the run; main treats it as success.
    outcome.context("cannot write the output")?;
    // A time of day and a date (or seconds) are compared once the date is known.
    if filter.empty_range() {
        bail!("{}", crate::analysis::inverted_range(&args.begin, &args.end));
    }

    let mut err = stderr.lock();
    for p in stacks.as_ref().map(|s| s.problems()).unwrap_or_default() {
        let _ = writeln!(err, "tracelens: warning: --symbolize: {p}");
    }
    report_lost((lost_events, lost_packets), args.format);
    if merger.regressions > 0 {
        let n = merger.regressions;
        let first = match merger.first_regression.as_ref() {
            Some(r) => format!(
                "; first in {}: {} ns from origin, after {} ns ({} ns backwards)",
                r.path.display(),
                r.ns,
                r.previous_ns,
                r.previous_ns.saturating_sub(r.ns)
            ),
            None => String::new(),
        };
        let _ = writeln!(
            err,
            "tracelens: warning: timestamps went backwards {n} time{} (an event or discarded-items record earlier than the one before it; \
             babeltrace2 stops there, tracelens prints them in the order read){first}",
            if n == 1 { "" } else { "s" },
        );
    }
    let (anomalies, first) = merger.stream_anomalies();
    if anomalies > 0 {
        let at = match first {
            Some((path, a, ns)) => format!(
                "; first in {} packet {}: {} after {} cycles{}",
                path.display(),
                a.packet,
                a.cycles,
                a.floor,
                ns.map(|n| format!(" ({n} ns from origin)")).unwrap_or_default()
            ),
            None => String::new(),
        };
        let _ = writeln!(
            err,
            "tracelens: warning: time went backwards {anomalies} time{} inside streams (an event or packet earlier than its \
             packet's beginning, the previous packet's end or the previous event; babeltrace2 stops there, tracelens goes on){at}",
            if anomalies == 1 { "" } else { "s" },
        );
    }
    if let Some(e) = failure {
        return Err(e.into());
    }
    Ok(ExitCode::SUCCESS)
}

/// Default target sizes of `print -j N`'s chunks, in bytes of events (about 5 MB of text or
/// JSON each). Each chunk's output is held until written (up to `2 × threads` chunks in flight,
/// in reused buffers of at most 2 MiB), so these bound the memory per thread; smaller chunks
/// also stay warmer in the caches and take fewer page faults (with 8 MiB chunks of whole
/// packets, JSON at `-j 2` on the LTTng-UST trace spent 0.45–0.75 s in the kernel). Chunks
/// start and end inside packets, so their size is independent of the packets'.
const TEXT_CHUNK_SIZE: u64 = 1 << 20;
const JSON_CHUNK_SIZE: u64 = 512 << 10;

/// The closing warning about discarded events and lost packets, if any.
fn report_lost((lost_events, lost_packets): (u64, u64), format: Format) {
    if lost_events > 0 || lost_packets > 0 {
        let _ = writeln!(
            io::stderr(),
            "tracelens: warning: the tracer discarded {lost_events} event{} and lost {lost_packets} packet{} ({})",
            if lost_events == 1 { "" } else { "s" },
            if lost_packets == 1 { "" } else { "s" },
            if format == Format::Text { "see the WARNING lines above" } else { "see the discarded_events/discarded_packets records" },
        );
    }
}
