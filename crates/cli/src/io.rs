//! `tracelens io`: argument parsing and output for `tracelens_analysis::Io`.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use tracelens_analysis::io::CATEGORIES;
use tracelens_analysis::{Io, IoReport, NetUsage, Rw, Traffic};

use crate::analysis::AnalysisArgs;
use crate::table::{esc, stats_us, time_of_day, timerange, us};

pub const EXAMPLES: &str = "\
Examples:
  # Bytes read and written per process and per file, I/O call latencies and the longest
  # calls (like lttng-iousagetop, lttng-iolatencystats and lttng-iolatencytop)
  tracelens io ~/lttng-traces/my-session-20240101-120000/kernel

  # Twenty rows per table, the 50 longest calls of each kind, as JSON
  tracelens io TRACE --limit 20 --top 50 --json | jq '.top.write[:5]'

What is counted (lttng-analyses' model):
  open/openat, socket, dup/dup2/dup3/fcntl(F_DUPFD), close, reads (read, readv, pread64,
  recvmsg, recvfrom...), writes (write, writev, pwrite64, sendmsg, sendto...) and syncs
  (sync, fsync, fdatasync, sync_file_range), each paired entry to exit on its thread across
  CPUs. Each process has a descriptor table: from the state dump, from opens (open/openat:
  disk files; sockets: network; a duplicate: its original's), or from the first call that uses
  a descriptor never seen opened (an unknown file); close, dup2 and exec (close-on-exec)
  remove descriptors, fork copies the table. A successful read or write counts its returned
  size for the thread (disk, network or unknown by the kind of the descriptor) and for the
  file. splice and sendfile are not counted (as lttng-analyses). A call counts when it returns
  within --begin/--end; --tid, --procname (the name at the time of the call) and --cpu (where
  it returns) select calls.

Network usage (when the trace has network events):
  Per interface, bytes and packets received (netif_receive_skb, whose len starts at the
  network header) and sent (net_dev_xmit, as lttng-iousagetop counts them, or net_dev_queue
  in traces without it, such as `tracelens record -e net` recordings; len includes the
  link-layer header). Per thread, the packets sent in its context: by its system calls, not
  from an interrupt handler or soft IRQ (acknowledgements and retransmissions sent there are
  no thread's); the thread is the event's own (tid context) or the one its CPU last switched
  in. Received packets are handled in interrupt context: they are counted per interface only
  (what a thread read from its sockets is the Net column of the per-process tables).
  --begin/--end and --cpu select packets; --tid/--procname select the per-thread rows.

Output:
  Text: time range; per-process read and write tables (--limit rows: thread, process, disk,
  network, unknown bytes); per-file read and write tables (generic names such as `unknown`
  and `socket` followed by the holder process); latency statistics of open, read, write and
  sync calls in microseconds (count, min, average, max, sample standard deviation); the --top
  longest calls of each kind with their size, thread and file; the network tables: received
  and sent per interface, sent per thread. JSON (--json): {\"begin_ns\",
  \"end_ns\", \"processes\": [{\"tid\", \"pid\", \"comm\", \"read\", \"write\", \"disk\", \"net\",
  \"unknown\"}], \"files\": [{\"path\", \"read\", \"write\"}], \"latency\": {\"open\": {\"count\",
  \"min_ns\", \"max_ns\", \"avg_ns\", \"stdev_ns\", \"total_ns\"}, ...}, \"top\": {\"open\":
  [{\"begin_ns\", \"end_ns\", \"duration_ns\", \"syscall\", \"size\", \"comm\", \"tid\", \"fd\",
  \"path\"}], ...}, \"network\": {\"sent_event\", \"interfaces\": [{\"name\", \"received\": {\"bytes\",
  \"packets\"}, \"sent\": {...}}], \"threads\": [{\"tid\", \"pid\", \"comm\", \"sent\": {...},
  \"interfaces\": [{\"name\", \"bytes\", \"packets\"}]}], \"sent_in_interrupts\", \"sent_context_unknown\",
  \"interrupts_traced\"}}. The result does not depend on -j or --chunk-size.

Memory: io keeps the calls of about one chunk per stream until the merge of the chunks passes
  them, so by default it reads 4 MiB of packets divided among the streams per chunk (1 MiB
  for a 4-CPU trace, at least 512 KiB); a larger --chunk-size takes more memory.";

/// Options of `tracelens io`.
#[derive(Args, Debug)]
pub struct IoArgs {
    #[command(flatten)]
    pub common: AnalysisArgs,
    /// Rows of each per-process and per-file table in text
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub limit: usize,
    /// How many of the longest calls of each kind (open, read, write, sync) to list
    #[arg(long, value_name = "N", default_value_t = tracelens_analysis::io::DEFAULT_TOP)]
    pub top: usize,
}

/// Runs `tracelens io`.
pub fn run(args: IoArgs) -> Result<ExitCode> {
    let mut run = args.common.prepare()?;
    if args.common.parallel.chunk_size.is_none() {
        // The model keeps the facts of about a chunk per stream (see `tracelens_analysis::io`).
        run.options.chunk_size = tracelens_analysis::Options::chunk_size_per_stream(&run.set);
    }
    let report = run.run(&Io::new(&run.set, run.filter.clone(), args.top))?;
    run.output(&report, |out| write_text(out, &report, args.limit))
}

/// Text tables (lttng-iousagetop, lttng-iolatencystats, lttng-iolatencytop), `limit` rows per
/// usage table.
fn write_text(out: &mut dyn Write, r: &IoReport, limit: usize) -> io::Result<()> {
    if let Some(t) = timerange(r.begin_ns, r.end_ns) {
        writeln!(out, "{t}")?;
    }
    for (write, title) in [(false, "Read"), (true, "Write")] {
        writeln!(out, "\nPer-process I/O {title}\n{:<12} {:<32} {:>12} {:>12} {:>12}", "Total", "Process", "Disk", "Net", "Unknown")?;
        let pick = |rw: Rw| if write { rw.write } else { rw.read };
        for p in r.processes_by(write).into_iter().take(limit) {
            let pid = p.pid.map_or_else(|| format!("unknown (tid={})", p.tid), |p| p.to_string());
            writeln!(
                out,
                "{:>12} {:<32} {:>12} {:>12} {:>12}",
                format_size(pick(p.total())),
                format!("{} ({pid})", esc(&p.comm)),
                format_size(pick(p.disk)),
                format_size(pick(p.net)),
                format_size(pick(p.unknown))
            )?;
        }
    }
    for (write, title) in [(false, "Read"), (true, "Write")] {
        writeln!(out, "\nPer-file I/O {title}\n{:<12} Path", "Total")?;
        for f in r.files_by(write).into_iter().take(limit) {
            writeln!(out, "{:>12} {}", format_size(if write { f.bytes.write } else { f.bytes.read }), esc(&f.path))?;
        }
    }
    write_network(out, &r.network, limit)?;
    writeln!(out, "\nSyscalls latency statistics (usec):")?;
    writeln!(out, "{:<14} {:>14} {:>14} {:>14} {:>14} {:>14}", "Type", "Count", "Min", "Average", "Max", "Stdev")?;
    writeln!(out, "{}", "-".repeat(89))?;
    for (name, d) in ["Open", "Read", "Write", "Sync"].iter().zip(&r.latency) {
        let (count, min, avg, max, stdev) = stats_us(d);
        writeln!(out, "{name:<14} {count:>14} {min:>14} {avg:>14} {max:>14} {stdev:>14}")?;
    }
    for (cat, top) in CATEGORIES.iter().zip(&r.top) {
        if top.is_empty() {
            continue;
        }
        writeln!(out, "\nTop system call latencies {cat} (usec)")?;
        writeln!(
            out,
            "{:<20} {:<20} {:<16} {:<23} {:<5} {:<24} {:<8} {:<14}",
            "Begin", "End", "Name", "Duration (usec)", "Size", "Proc", "TID", "Filename"
        )?;
        for c in top {
            let range = format!("[{}, {}]", time_of_day(c.begin_ns), time_of_day(c.end_ns));
            let size = c.size.map_or_else(|| "N/A".to_string(), format_size);
            let file = match c.fd {
                None => "N/A".to_string(),
                Some(fd) => format!("{} (fd={fd})", esc(c.path.as_deref().unwrap_or("unknown"))),
            };
            writeln!(
                out,
                "{:<40} {:<16} {:>16} {:>11}  {:<24} {:<8} {:<14}",
                range,
                esc(&c.syscall),
                format!("{} ", us(c.duration_ns() as f64)),
                size,
                esc(&c.comm),
                c.tid,
                file
            )?;
        }
    }
    Ok(())
}

/// The network tables (lttng-iousagetop's "Network Received/Sent Bytes", and what each thread
/// sent), when the trace has network events.
fn write_network(out: &mut dyn Write, n: &NetUsage, limit: usize) -> io::Result<()> {
    if n.interfaces.is_empty() {
        return Ok(());
    }
    let row = |out: &mut dyn Write, t: Traffic, label: &str| writeln!(out, "{:>12} {:>10}  {label}", format_size(t.bytes), t.packets);
    for (sent, title) in [(false, "Network Received Bytes".to_string()), (true, format!("Network Sent Bytes ({})", n.sent_event.as_deref().unwrap_or("none")))] {
        writeln!(out, "\n{title}\n{:<12} {:>10}  Interface", "Total", "Packets")?;
        let mut rows: Vec<(Traffic, &str)> = n.interfaces.iter().map(|i| (if sent { i.sent } else { i.received }, i.name.as_str())).filter(|(t, _)| t.packets > 0).collect();
        rows.sort_by(|a, b| b.0.bytes.cmp(&a.0.bytes).then(a.1.cmp(b.1)));
        for (t, name) in rows.into_iter().take(limit) {
            row(out, t, &esc(name))?;
        }
    }
    writeln!(out, "\nPer-process Network Sent (packets sent in the thread's context)\n{:<12} {:>10}  {:<32} Interfaces", "Total", "Packets", "Process")?;
    for t in n.threads.iter().take(limit) {
        let pid = t.pid.map_or_else(|| format!("unknown (tid={})", t.tid), |p| p.to_string());
        let ifaces: Vec<String> = t.interfaces.iter().map(|i| esc(&i.name).into_owned()).collect();
        row(out, t.sent, &format!("{:<32} {}", format!("{} ({pid})", esc(&t.comm)), ifaces.join(", ")))?;
    }
    for (t, what) in [(n.sent_in_interrupts, "(sent from interrupts: no thread's)"), (n.sent_context_unknown, "(sent before the CPU's thread was known)")] {
        if t.packets > 0 {
            row(out, t, what)?;
        }
    }
    if !n.interrupts_traced {
        writeln!(out, "(the trace has no soft IRQ events: packets sent from interrupts count for the thread they interrupted)")?;
    }
    Ok(())
}

/// A size as lttng-analyses prints it: `919   B`, `1.00 KiB`, `145.70 KiB`...
fn format_size(size: u64) -> String {
    const UNITS: [&str; 9] = ["  B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"];
    if size == 0 {
        return "0   B".to_string();
    }
    let mut exp = 0usize;
    while exp + 1 < UNITS.len() && size >= 1u64.checked_shl(10 * (exp as u32 + 1)).unwrap_or(u64::MAX) {
        exp += 1;
    }
    if exp == 0 {
        format!("{size} {}", UNITS[0])
    } else {
        format!("{:.2} {}", size as f64 / (1u64 << (10 * exp)) as f64, UNITS[exp])
    }
}

#[cfg(test)]
mod tests {
    use super::format_size;

    #[test]
    fn sizes_as_lttng_analyses() {
        assert_eq!(format_size(0), "0   B");
        assert_eq!(format_size(919), "919   B");
        assert_eq!(format_size(1024), "1.00 KiB");
        assert_eq!(format_size(149_197), "145.70 KiB");
        assert_eq!(format_size(3 << 20), "3.00 MiB");
    }
}
