//! `tracelens io`: argument parsing and output for `tracelens_analysis::Io`.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use tracelens_analysis::Io;

use crate::analysis::AnalysisArgs;

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

Output:
  Text: time range; per-process read and write tables (--limit rows: thread, process, disk,
  network, unknown bytes); per-file read and write tables (generic names such as `unknown`
  and `socket` followed by the holder process); latency statistics of open, read, write and
  sync calls in microseconds (count, min, average, max, sample standard deviation); the --top
  longest calls of each kind with their size, thread and file. JSON (--json): {\"begin_ns\",
  \"end_ns\", \"processes\": [{\"tid\", \"pid\", \"comm\", \"read\", \"write\", \"disk\", \"net\",
  \"unknown\"}], \"files\": [{\"path\", \"read\", \"write\"}], \"latency\": {\"open\": {\"count\",
  \"min_ns\", \"max_ns\", \"avg_ns\", \"stdev_ns\", \"total_ns\"}, ...}, \"top\": {\"open\":
  [{\"begin_ns\", \"end_ns\", \"duration_ns\", \"syscall\", \"size\", \"comm\", \"tid\", \"fd\",
  \"path\"}], ...}}. The result does not depend on -j or --chunk-size.";

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
    let run = args.common.prepare()?;
    let report = run.run(&Io::new(&run.set, run.filter.clone(), args.top))?;
    run.output(|| report.to_text(args.limit), || report.to_json())
}
