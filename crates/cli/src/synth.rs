//! `tracelens synth`: argument parsing and progress for `tracelens_synth::generate`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;
use clap::Args;

pub const EXAMPLES: &str = "\
Examples:
  # A small trace to look at (about 4 MB)
  tracelens synth -o /tmp/demo --events 200000 && tracelens print /tmp/demo | head

  # A 1 GB trace on 8 CPUs with 64 threads, for benchmarks
  tracelens synth -o /tmp/big --cpus 8 --threads 64 --events 45000000

What it writes:
  DIR/metadata (CTF 1.8 TSDL, or CTF 2 JSON fragments with --ctf 2), DIR/channel0_N (one stream per CPU, LTTng packets with compact
  event headers) and DIR/index/channel0_N.idx. Events use LTTng's kernel names and fields:
  sched_switch/sched_waking/sched_wakeup, syscall_entry_*/syscall_exit_* (read, write, openat,
  close, futex, getpid; blocking calls switch out and are woken later, possibly on another CPU;
  descriptors as a kernel hands them out: openat returns the lowest free number of the
  process's table, close closes the thread's last opened one), irq_handler_*, softirq_*, and
  an lttng_statedump_* prologue. The same --seed gives the same
  bytes. About 24 bytes an event: a request of more than 1 GB says its size first, and one
  that would not fit on the disk is refused.

  DIR must be new or empty: a trace written over another would be read with the other's
  leftover stream files. --force replaces the trace in DIR (and nothing else).";

/// Options of `tracelens synth`.
#[derive(Args, Debug)]
pub struct SynthArgs {
    /// Output directory: new or empty (see --force)
    #[arg(short = 'o', long, value_name = "DIR")]
    output: PathBuf,
    /// Replace the CTF trace in DIR (its metadata, stream files and index are removed first;
    /// a directory holding anything else is refused)
    #[arg(long)]
    force: bool,
    /// Number of CPUs (one stream file each), 1 to 1024
    #[arg(long, default_value_t = 4)]
    cpus: u32,
    /// Number of user threads (in processes of up to 4 threads), 1 to 100000
    #[arg(long, default_value_t = 16)]
    threads: u32,
    /// Approximate number of events (the state dump prologue comes on top)
    #[arg(long, default_value_t = 100_000)]
    events: u64,
    /// Random seed
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Packet size in bytes, 4096 to 64 MiB (a multiple of 8)
    #[arg(long, default_value_t = 256 * 1024, value_name = "BYTES")]
    packet_size: u64,
    /// CTF version of the metadata: 1 (CTF 1.8 TSDL, what babeltrace2 2.0 reads) or 2 (CTF 2
    /// JSON fragments); the stream files are the same bytes either way
    #[arg(long = "ctf", default_value_t = 1, value_name = "VERSION", value_parser = clap::value_parser!(u8).range(1..=2))]
    ctf: u8,
}

/// Requests above this many bytes are announced with their size.
const ANNOUNCE_BYTES: u64 = 1 << 30;

/// Runs `tracelens synth`.
pub fn run(args: SynthArgs) -> Result<ExitCode> {
    let opts = tracelens_synth::Options {
        cpus: args.cpus,
        threads: args.threads,
        events: args.events,
        seed: args.seed,
        packet_size: args.packet_size,
    };
    // Everything is checked before the output directory is touched.
    opts.check()?;
    tracelens_synth::check_space(&args.output, &opts)?;
    let size = opts.estimated_bytes();
    tracelens_synth::prepare_output(&args.output, args.force)?;
    if size > ANNOUNCE_BYTES {
        eprintln!("tracelens: writing about {:.1} GB to {} (Ctrl-C to stop)", size as f64 / 1e9, args.output.display());
    }
    let started = Instant::now();
    let version = if args.ctf == 2 { tracelens_synth::Version::Ctf2 } else { tracelens_synth::Version::Ctf1 };
    let summary = tracelens_synth::generate_version(&args.output, &opts, version)?;
    eprintln!(
        "tracelens: wrote {} events, {:.1} MB in {} stream files to {} ({:.1} s)",
        summary.events,
        summary.bytes as f64 / 1e6,
        opts.cpus,
        args.output.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}
