//! The recording loop: set up our instance, start the target, save the CPUs' ring-buffer
//! pages to a spool while it runs and convert the spool to CTF as it grows, then restore the
//! kernel's state and convert what is left.
//!
//! Two threads of the recorder do the work: the reader (`reader_loop`), whose only job is to
//! empty the kernel's buffers into the spool (a read and a write per page, so that it keeps
//! up and little is lost), and the converter ([`crate::live`]), which merges the CPUs' spools
//! in time order (so that the thread names and thread-group ids in each event's context are
//! exact) up to a watermark the reader publishes, writes the CTF streams and deletes the
//! spool segments it has read. The converter runs at idle priority while it keeps up; the
//! spool holds only what it has not converted yet, and the trace is finished almost as soon
//! as the target ends.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::convert::{ConvertInput, ConvertSummary, Fallback};
use crate::error::{io, Error, Result};
use crate::format::{EventFormat, PageLayout};
use crate::lttng::{Schema, DEFAULT_GROUPS, GROUPS, INTERNAL};
use crate::metadata::TraceInfo;
use crate::ringbuf;
use crate::limits::{is_disk_full, CutShort};
use tracelens_ctf::free_space as free_bytes;
use crate::live::{self, Marks};
use crate::spool::{SegmentWriter, SEGMENT_BYTES};
use crate::statedump;
use crate::tracefs::{process_start, read_file, Instance, Tracefs};

/// What to record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Run this command (program and arguments) and record until it exits.
    Command(Vec<OsString>),
    /// Record until this process exits.
    Pid(i32),
    /// Record the whole system until stopped.
    System,
}

/// How to record. Kernel events are recorded system-wide in every case; the target decides
/// when the recording ends.
#[derive(Clone, Debug)]
pub struct RecordOptions {
    /// Output directory: the trace goes to `OUTPUT/kernel/`. Must not hold a `kernel/`
    /// already.
    pub output: PathBuf,
    /// Event groups (`sched`, `irq`, `hrtimer`, `timer`, `syscalls`, `block`, `net`) or
    /// tracefs events (`SYSTEM:EVENT`, `SYSTEM:*`). Empty: [`DEFAULT_GROUPS`].
    pub events: Vec<String>,
    /// Ring-buffer size per CPU, in KiB. Default 4096.
    pub buffer_size_kb: u64,
    /// What to record and until when.
    pub target: Target,
    /// How long the reader sleeps between passes over the buffers when they are not
    /// filling fast. Default 100 ms.
    pub poll_interval: Duration,
    /// CTF packet size in bytes. Default 256 KiB.
    pub packet_size: u64,
    /// Keep the raw spool (`OUTPUT/.tracelens-spool/`, segment files `cpuN.SEQ`) after
    /// converting, instead of deleting each segment once converted. Default false.
    pub keep_spool: bool,
    /// Set to true (by a signal handler, see [`crate::stop_on_signals`], or another thread)
    /// to end the recording early. Checked every 100 ms.
    pub stop: Option<Arc<AtomicBool>>,
    /// Also sample the target's user stacks (on-CPU and at context switches) into
    /// `OUTPUT/stacks/` (see [`crate::stacks`]). Default None.
    pub stacks: Option<crate::stacks::StackOptions>,
    /// The converter thread, which writes the trace while recording, runs at idle priority
    /// (the recorded workload wins the CPU) while fewer than this many bytes of pages wait in
    /// the spool, and at normal priority above (so that the spool stays bounded on busy
    /// CPUs), until the backlog is down to a quarter of this. 0: always at normal priority;
    /// `u64::MAX`: always idle. Default 64 MiB.
    pub idle_backlog: u64,
    /// The most bytes of pages the spool may hold not converted yet: when the converter falls
    /// this far behind, the recording stops ([`CutShort::SpoolLimit`]) and the command runs
    /// on. 0: no limit. Default 1 GiB.
    pub max_spool: u64,
    /// Free space to leave on the output's file system: a recording does not start with less,
    /// and stops ([`CutShort::LowSpace`]) when less is left; the command runs on. Default
    /// 256 MiB.
    pub min_free: u64,
    /// Let the command's user-space probes (`tracelens-probe`) write into `OUTPUT/ust/`, on
    /// the kernel trace's clock: its environment gets `TRACELENS_PROBE_DIR` and the clock
    /// offset the kernel trace is written with. Default false.
    pub probes: bool,
    /// Functions whose calls (entry and return) are recorded through uprobes (see
    /// [`crate::uprobe`]). Default none.
    pub uprobes: Vec<crate::uprobe::UprobeSpec>,
}

impl RecordOptions {
    /// Options with the defaults, writing to `output`, for `target`.
    pub fn new(output: impl Into<PathBuf>, target: Target) -> RecordOptions {
        RecordOptions {
            output: output.into(),
            events: Vec::new(),
            buffer_size_kb: 4096,
            target,
            poll_interval: Duration::from_millis(100),
            packet_size: 256 * 1024,
            keep_spool: false,
            stop: None,
            stacks: None,
            idle_backlog: 64 << 20,
            max_spool: 1 << 30,
            min_free: 256 << 20,
            probes: false,
            uprobes: Vec::new(),
        }
    }
}

/// Counters while recording (events as the kernel recorded them, before the recorder's own
/// are removed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Time since recording started.
    pub elapsed: Duration,
    /// Events read from the buffers.
    pub events: u64,
    /// Bytes of pages read.
    pub bytes: u64,
    /// Events the kernel lost (buffers full).
    pub lost: u64,
    /// Events written to the trace so far (the recorder's own left out, the state dump
    /// included).
    pub converted: u64,
    /// Bytes of pages in the spool not converted yet.
    pub spool_bytes: u64,
}

/// What a recording did.
#[derive(Debug)]
pub struct Summary {
    /// The CTF trace directory (`OUTPUT/kernel`).
    pub trace_dir: PathBuf,
    /// Our instance's name.
    pub instance: String,
    /// Stale instances of killed recorders that were removed first.
    pub removed_stale: Vec<String>,
    /// CPUs recorded.
    pub cpus: u32,
    /// Counters at the end of the recording.
    pub progress: Progress,
    /// What the conversion wrote.
    pub convert: ConvertSummary,
    /// The command's process id, when a command was run.
    pub child_pid: Option<i32>,
    /// The command's exit status, when a command was run and exited.
    pub exit: Option<ExitStatus>,
    /// The command, still running: the recording was cut short ([`Summary::cut_short`]) and
    /// the command left to run on (the caller may wait for it).
    pub running: Option<Child>,
    /// Whether the recording ended because `stop` was set.
    pub stopped: bool,
    /// Why the recording stopped before its target ended (spool limit, low disk space, a
    /// full disk), when it did: the trace holds the events until then.
    pub cut_short: Option<CutShort>,
    /// The spool directory, when kept.
    pub spool: Option<PathBuf>,
    /// What the stack sampling wrote, when asked for.
    pub stacks: Option<crate::stacks::StacksSummary>,
}

/// Expands `-e` items (comma-separated lists allowed) into tracefs (system, event) pairs,
/// `None` meaning the whole system. Group members this kernel lacks are left out; a named
/// event it lacks is an error.
pub fn resolve_events(tracefs: &Tracefs, items: &[String]) -> Result<Vec<(String, Option<String>)>> {
    let events_dir = tracefs.path("events");
    let mut out: Vec<(String, Option<String>)> = Vec::new();
    let mut push = |s: &str, e: Option<&str>| {
        let item = (s.to_string(), e.map(str::to_string));
        if !out.contains(&item) {
            out.push(item);
        }
    };
    let defaults: Vec<String> = DEFAULT_GROUPS.iter().map(|s| s.to_string()).collect();
    let items = if items.is_empty() { &defaults[..] } else { items };
    for item in items.iter().flat_map(|i| i.split(',')).map(str::trim).filter(|s| !s.is_empty()) {
        check_event_item(item)?;
        if let Some((_, members)) = GROUPS.iter().find(|(g, _)| *g == item) {
            for (s, e) in members.iter() {
                let exists = match e {
                    Some(e) => events_dir.join(s).join(e).join("format").is_file(),
                    None => events_dir.join(s).is_dir(),
                };
                if exists {
                    push(s, *e);
                }
            }
            continue;
        }
        let (s, e) = match item.split_once(':') {
            Some((s, "*")) | Some((s, "")) => (s, None),
            Some((s, e)) => (s, Some(e)),
            None if events_dir.join(item).is_dir() => (item, None),
            None => {
                let groups: Vec<&str> = GROUPS.iter().map(|g| g.0).collect();
                return Err(Error::Events(format!("unknown event group `{item}` (groups: {}; or SYSTEM:EVENT as in {})", groups.join(", "), events_dir.display())));
            }
        };
        let ok = match e {
            Some(e) => events_dir.join(s).join(e).join("format").is_file(),
            None => events_dir.join(s).is_dir(),
        };
        if !ok {
            return Err(Error::Events(format!("no tracefs event `{item}` in {}", events_dir.display())));
        }
        push(s, e);
    }
    Ok(out)
}

/// Accepts only what names events: a group, `SYSTEM`, `SYSTEM:EVENT`, `SYSTEM:*` or
/// `SYSTEM:`, each name made of letters, digits, `_` and `-` (never a path: `..` or `/` would
/// reach outside our instance's `events/`).
fn check_event_item(item: &str) -> Result<()> {
    let name = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    let ok = match item.split_once(':') {
        Some((s, e)) => name(s) && (e.is_empty() || e == "*" || name(e)),
        None => name(item),
    };
    if ok {
        return Ok(());
    }
    Err(Error::Events(format!(
        "`{item}` is not an event group or event name (names are letters, digits, `_` and `-`: a group such as `sched`, \
         SYSTEM, SYSTEM:EVENT or SYSTEM:*, e.g. `kmem:mm_page_alloc`)"
    )))
}

/// Reads the formats of the selected events (whole systems expanded), plus the internal
/// events the converter uses.
fn read_formats(tracefs: &Tracefs, selected: &[(String, Option<String>)]) -> Result<Vec<EventFormat>> {
    let events_dir = tracefs.path("events");
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut add = |s: &str, e: &str, out: &mut Vec<EventFormat>| -> Result<()> {
        if seen.insert((s.to_string(), e.to_string())) {
            out.push(EventFormat::read(&events_dir, s, e)?);
        }
        Ok(())
    };
    for (s, e) in selected {
        match e {
            Some(e) => add(s, e, &mut out)?,
            None => {
                let dir = events_dir.join(s);
                let mut names: Vec<String> = fs::read_dir(&dir)
                    .map_err(|e| io(&dir, e))?
                    .filter_map(|d| d.ok())
                    .filter(|d| d.path().join("format").is_file())
                    .map(|d| d.file_name().to_string_lossy().into_owned())
                    .collect();
                names.sort();
                for n in names {
                    add(s, &n, &mut out)?;
                }
            }
        }
    }
    for (s, e) in INTERNAL {
        if events_dir.join(s).join(e).join("format").is_file() {
            add(s, e, &mut out)?;
        }
    }
    Ok(out)
}

fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

fn clock_ns(clock: libc::clockid_t) -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid timespec to fill.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    #[allow(clippy::unnecessary_cast)] // time_t and c_long are not i64 everywhere
    let ns = ts.tv_sec as i64 * 1_000_000_000 + ts.tv_nsec as i64;
    ns
}

fn uname() -> (String, String, String) {
    // SAFETY: utsname is plain data; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return Default::default();
    }
    let s = |f: &[libc::c_char]| {
        let b: Vec<u8> = f.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        String::from_utf8_lossy(&b).into_owned()
    };
    (s(&u.nodename), s(&u.release), s(&u.version))
}

fn random_uuid() -> [u8; 16] {
    let mut b = [0u8; 16];
    if File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b)).is_err() {
        let t = clock_ns(libc::CLOCK_REALTIME) as u128 ^ ((std::process::id() as u128) << 64);
        b = t.to_le_bytes();
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    b
}

fn ns_inum() -> u32 {
    use std::os::unix::fs::MetadataExt;
    fs::metadata("/proc/self/ns/pid").map(|m| m.ino() as u32).unwrap_or(0)
}

/// `saved_tgids` and `saved_cmdlines` of the top-level tracefs: what the kernel remembers of
/// threads that may be gone.
fn saved_tasks(tracefs: &Tracefs) -> Fallback {
    let mut m = Fallback::new();
    if let Ok(t) = read_file(&tracefs.path("saved_tgids")) {
        for l in t.lines() {
            let mut it = l.split_whitespace();
            if let (Some(Ok(pid)), Some(Ok(tgid))) = (it.next().map(str::parse::<i32>), it.next().map(str::parse::<i32>)) {
                m.entry(pid).or_default().0 = Some(tgid);
            }
        }
    }
    if let Ok(t) = read_file(&tracefs.path("saved_cmdlines")) {
        for l in t.lines() {
            if let Some((pid, comm)) = l.split_once(' ') {
                if let Ok(pid) = pid.trim().parse::<i32>() {
                    m.entry(pid).or_default().1 = comm.as_bytes().to_vec();
                }
            }
        }
    }
    m
}

/// Shared between the recording loop, the reader thread and the converter thread.
#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    events: AtomicU64,
    bytes: AtomicU64,
    lost: AtomicU64,
    error: Mutex<Option<Error>>,
    /// Set by the reader when the disk is full.
    cut: Mutex<Option<CutShort>>,
    marks: Marks,
}

struct CpuReader {
    cpu: u32,
    pipe: File,
    stats: PathBuf,
    spool: SegmentWriter,
    /// The buffer's counters when recording started.
    base: crate::tracefs::CpuStats,
    /// Events written to the spool as lost so far.
    reported_lost: u64,
    /// Events the page headers said were lost (the converter counts them from the pages).
    header_missed: u64,
    /// The time before which every event of this CPU is in the spool (see
    /// [`crate::convert`]): the last event's time, or that of a read that found the buffer
    /// empty, less [`LATE_NS`].
    known: u64,
}

/// How late (ns) after its time stamp an event may still appear in a buffer read: the kernel
/// takes the time when it reserves the event's space, and a reader sees the event once it is
/// committed (microseconds later, or more when the writer's virtual CPU is held up). A read
/// that finds a buffer empty at time T vouches only for the events before T minus this.
const LATE_NS: u64 = 10_000_000;

/// The reader thread: saves every page of every CPU to its spool until told to stop (after
/// a last pass that empties the buffers), and after each pass publishes for the converter how
/// far each spool is written and up to when each CPU's events are known.
///
/// A pass over a CPU stops at the first page holding an event recorded after the pass
/// began: what comes after is mostly the events of the reader's own reads (reading them at
/// once would only make more). The buffers are read again after `poll`, when the kernel says
/// one is filling (`buffer_percent`), or at once when the pass found one filling fast
/// (`busy_pages` pages read).
///
/// The last pass reads at most `buffer_pages` pages (and a few more) per CPU: tracing is off
/// by then, so a buffer cannot hold more, and the pass ends even if it were not.
///
/// A spool write that finds the disk full ends the reading ([`CutShort::DiskFull`]): what is
/// in the spool is published for the converter, and the recording loop stops the recording.
fn reader_loop(mut cpus: Vec<CpuReader>, layout: PageLayout, shared: &Shared, poll: Duration, busy_pages: usize, buffer_pages: usize) {
    let mut buf = vec![0u8; layout.page_size];
    let fail = |e: Error| {
        let mut g = shared.error.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_none() {
            *g = Some(e);
        }
    };
    // A spool write failed: a full disk ends the recording early; any other error fails it.
    let spool_failed = |cpus: &mut [CpuReader], k: usize, e: std::io::Error| {
        if !is_disk_full(&e) {
            fail(io(cpus[k].spool.path(), e));
            return;
        }
        let cut = CutShort::DiskFull { path: cpus[k].spool.path().to_path_buf(), message: e.to_string() };
        shared.cut.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(cut);
        // What reached the files is converted; a record cut short ends its spool.
        for (k, c) in cpus.iter_mut().enumerate() {
            let _ = c.spool.flush();
            shared.marks.publish(k, c.spool.position(), c.known);
        }
        shared.marks.finish();
    };
    let mut pass = 0u64;
    loop {
        let stopping = shared.stop.load(Ordering::Acquire);
        let mut busy = false;
        // The trace clock is CLOCK_MONOTONIC.
        let pass_start = clock_ns(libc::CLOCK_MONOTONIC).max(0) as u64;
        for k in 0..cpus.len() {
            let c = &mut cpus[k];
            let mut pages = 0usize;
            let read_start = clock_ns(libc::CLOCK_MONOTONIC).max(0) as u64;
            let mut emptied = false;
            loop {
                if stopping && pages > buffer_pages + 8 {
                    break;
                }
                match c.pipe.read(&mut buf) {
                    Ok(0) => {
                        emptied = true;
                        break;
                    }
                    Ok(n) => {
                        let page = &buf[..n];
                        // Keep only the header and the data (and a stored missed count).
                        let keep = match ringbuf::page_header(page, &layout) {
                            Ok(h) => {
                                // As the converter counts them (see convert::Source::fill).
                                let missed = match h.missed {
                                    ringbuf::Missed::None => 0,
                                    ringbuf::Missed::Unknown => 1,
                                    ringbuf::Missed::Count(n) => n.max(1),
                                };
                                c.header_missed += missed;
                                shared.lost.fetch_add(missed, Ordering::Relaxed);
                                let extra = if h.missed == ringbuf::Missed::None { 0 } else { 8 };
                                (layout.data_offset + h.commit + extra).min(n)
                            }
                            Err(_) => n,
                        };
                        let mut newest = 0u64;
                        if let Ok((_, evs)) = ringbuf::events(&page[..keep], &layout) {
                            let mut k = 0u64;
                            for e in evs.flatten() {
                                newest = newest.max(e.ts);
                                k += 1;
                            }
                            shared.events.fetch_add(k, Ordering::Relaxed);
                        }
                        // A CPU's later events are later than its last one.
                        c.known = c.known.max(newest);
                        if let Err(e) = c.spool.write_page(&page[..keep]) {
                            spool_failed(&mut cpus, k, e);
                            return;
                        }
                        shared.bytes.fetch_add(keep as u64, Ordering::Relaxed);
                        pages += 1;
                        if newest >= pass_start && !stopping {
                            break;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        emptied = true;
                        break;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        fail(io(format!("per_cpu/cpu{}/trace_pipe_raw", c.cpu), e));
                        return;
                    }
                }
            }
            if emptied {
                c.known = c.known.max(read_start.saturating_sub(LATE_NS));
            }
            busy |= pages >= busy_pages;
            // Events are lost only when a buffer fills: look at the counters after a busy
            // pass, about once a second, and at the end. Events dropped because the buffer
            // was full (our mode) or by nested writers are counted here; events overwritten
            // (overwrite mode) are counted by the page headers that follow them, and here
            // only at the end for what no header reported.
            if busy || stopping || pass.is_multiple_of(10) {
                if let Ok(text) = read_file(&c.stats) {
                    let s = crate::tracefs::CpuStats::parse(&text);
                    let mut lost = s.dropped.saturating_sub(c.base.dropped) + s.commit_overrun.saturating_sub(c.base.commit_overrun);
                    if stopping {
                        lost += s.overrun.saturating_sub(c.base.overrun).saturating_sub(c.header_missed);
                    }
                    if lost > c.reported_lost {
                        if let Err(e) = c.spool.write_lost(lost - c.reported_lost) {
                            spool_failed(&mut cpus, k, e);
                            return;
                        }
                        shared.lost.fetch_add(lost - c.reported_lost, Ordering::Relaxed);
                        c.reported_lost = lost;
                    }
                }
            }
        }
        // What the converter may read now.
        for k in 0..cpus.len() {
            match cpus[k].spool.flush() {
                Ok(end) => shared.marks.publish(k, end, cpus[k].known),
                Err(e) => {
                    spool_failed(&mut cpus, k, e);
                    return;
                }
            }
        }
        if stopping {
            shared.marks.finish();
            return;
        }
        shared.marks.wake();
        pass += 1;
        if !busy {
            wait_for_data(&cpus, poll);
        }
    }
}

/// Sleeps until a buffer is filled past `buffer_percent` (the kernel's poll wakes us) or
/// `timeout` has passed.
fn wait_for_data(cpus: &[CpuReader], timeout: Duration) {
    use std::os::fd::AsRawFd;
    let mut fds: Vec<libc::pollfd> = cpus.iter().map(|c| libc::pollfd { fd: c.pipe.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: fds is a valid array of pollfd for its length.
    let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if rc < 0 {
        std::thread::sleep(timeout);
    }
}

/// Stops and joins the reader thread when dropped (on error paths too), so that its files
/// are closed before the instance is removed. Tracing is turned off first: the reader's last
/// pass empties the buffers, and with tracing on, its own reads would fill them again.
struct ReaderGuard<'a> {
    instance: &'a Instance,
    shared: Arc<Shared>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl ReaderGuard<'_> {
    fn finish(&mut self) {
        if self.handle.is_some() {
            let _ = self.instance.tracing_on(false);
        }
        self.shared.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for ReaderGuard<'_> {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Joins the converter thread; when dropped before (an error path), stops it first.
struct ConverterGuard {
    shared: Arc<Shared>,
    handle: Option<std::thread::JoinHandle<Result<ConvertSummary>>>,
}

impl ConverterGuard {
    /// Waits for the conversion to end (after the reader's end) and returns what it wrote.
    fn join(&mut self) -> Result<ConvertSummary> {
        match self.handle.take().map(|h| h.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) | None => Err(io("converter thread", std::io::Error::other("the converter thread panicked"))),
        }
    }
}

impl Drop for ConverterGuard {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            self.shared.marks.abort();
            let _ = h.join();
        }
    }
}

/// Removes what a failed recording left in the output directory.
struct Cleanup {
    spool: PathBuf,
    trace: PathBuf,
    output: PathBuf,
    created_output: bool,
    armed: bool,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if self.armed {
            let _ = fs::remove_dir_all(&self.spool);
            let _ = fs::remove_dir_all(&self.trace);
            if self.created_output {
                let _ = fs::remove_dir(&self.output);
            }
        }
    }
}

/// With [`RecordOptions::probes`], where the command's probes write and on which clock
/// offset (the kernel trace's, so that both traces share one clock class).
fn probe_env(cmd: &mut std::process::Command, options: &RecordOptions, clock_offset_ns: i64) {
    if options.probes {
        cmd.env("TRACELENS_PROBE_DIR", options.output.join("ust"));
        cmd.env("TRACELENS_PROBE_CLOCK_OFFSET_NS", clock_offset_ns.to_string());
    }
}

enum Running {
    Child(Child),
    Pid(i32),
    System,
}

/// Records kernel events while `options.target` runs, then writes them as CTF to
/// `options.output/kernel`. `progress` is called about once a second while recording.
///
/// The kernel's tracing state is restored before this returns, whatever happens (our
/// instance is removed; the top-level buffer and other instances are never touched).
pub fn record(options: &RecordOptions, progress: &mut dyn FnMut(&Progress)) -> Result<Summary> {
    record_or_fail(options, progress).map_err(|e| if e.is_disk_full() && !matches!(e, Error::DiskFull(_)) { Error::DiskFull(Box::new(e)) } else { e })
}

fn record_or_fail(options: &RecordOptions, progress: &mut dyn FnMut(&Progress)) -> Result<Summary> {
    if let Target::Command(args) = &options.target {
        match args.first() {
            // Before anything is set up: a command that cannot run ends the recording at once.
            Some(program) => {
                crate::command::check_program(program)?;
            }
            None => return Err(Error::Target("no command given to record".into())),
        }
    }
    if let Target::Pid(pid) = options.target {
        if process_start(pid).is_none() {
            return Err(Error::Target(format!("no process {pid} to attach to")));
        }
    }
    if options.buffer_size_kb == 0 {
        return Err(Error::Events("the buffer size must not be 0".into()));
    }
    let trace_dir = options.output.join("kernel");
    if trace_dir.exists() {
        return Err(Error::Target(format!("{} already exists: choose another output directory", trace_dir.display())));
    }
    if options.probes {
        let ust = options.output.join("ust");
        if !matches!(options.target, Target::Command(_)) {
            return Err(Error::Target("probes are recorded from a command that `record` starts (its environment says where to write)".into()));
        }
        if ust.exists() {
            return Err(Error::Target(format!("{} already exists: choose another output directory", ust.display())));
        }
    }
    // Before anything is set up: a function that cannot be found ends the recording at once.
    let uprobes = options.uprobes.iter().map(crate::uprobe::resolve).collect::<Result<Vec<_>>>()?;
    let tracefs = Tracefs::open()?;
    if let Some(so) = &options.stacks {
        // `stacks`, and `jit` where the perf maps and jitdumps are moved at the end.
        for dir in [options.output.join("stacks"), options.output.join("jit")] {
            if dir.exists() {
                return Err(Error::Target(format!("{} already exists: choose another output directory", dir.display())));
            }
        }
        crate::stacks::check(so, &tracefs.path("events"))?;
    }
    let selected = resolve_events(&tracefs, &options.events)?;
    if selected.is_empty() {
        return Err(Error::Events("none of the selected events exists in this kernel".into()));
    }
    let removed_stale = tracefs.remove_stale()?;
    // Probes of recorders that are gone, then ours (removed after the instance, which
    // disables them, whatever happens).
    crate::uprobe::remove_stale(&tracefs)?;
    let uprobes = crate::uprobe::Uprobes::create(&tracefs, &uprobes)?;
    let selected: Vec<(String, Option<String>)> = selected.into_iter().chain(uprobes.selected()).collect();
    let created_output = !options.output.exists();
    fs::create_dir_all(&options.output).map_err(|e| io(&options.output, e))?;
    if let Some(free) = free_bytes(&options.output).filter(|&f| f < options.min_free) {
        if created_output {
            let _ = fs::remove_dir(&options.output);
        }
        return Err(Error::NoSpace(format!(
            "{}: only {} MiB free, and the recorder keeps {} MiB free on the output's file system (see --min-free)",
            options.output.display(),
            free >> 20,
            options.min_free >> 20
        )));
    }
    let spool_dir = options.output.join(".tracelens-spool");
    let _ = fs::remove_dir_all(&spool_dir);
    fs::create_dir_all(&spool_dir).map_err(|e| io(&spool_dir, e))?;
    // On an error, the spool and a partial trace go (and the output directory, if made here
    // and left empty).
    let mut cleanup = Cleanup { spool: spool_dir.clone(), trace: trace_dir.clone(), output: options.output.clone(), created_output, armed: true };

    let instance = Instance::create(&tracefs)?;
    let clocks = instance.read("trace_clock")?;
    if !clocks.split_whitespace().any(|c| c.trim_matches(|x| x == '[' || x == ']') == "mono") {
        return Err(Error::NoTracefs(format!("this kernel's tracefs has no `mono` trace clock (it has: {})", clocks.trim())));
    }
    instance.set_clock("mono")?;
    instance.set_buffer_size_kb(options.buffer_size_kb)?;
    instance.set_option("overwrite", false)?;
    // Wake the reader when a CPU's buffer is a quarter full (it also reads every poll
    // interval).
    let _ = instance.write("buffer_percent", "25");
    let _ = instance.set_option("record-tgid", true);
    let header = tracefs.path("events/header_page");
    let mut layout = PageLayout::parse(&read_file(&header)?, &header)?;
    if let Ok(kb) = instance.read("buffer_subbuf_size_kb") {
        if let Ok(kb) = kb.trim().parse::<usize>() {
            layout = layout.with_page_size(kb * 1024);
        }
    }
    let formats = read_formats(&tracefs, &selected)?;
    let schema = Schema::build(&formats);
    for (s, e) in &selected {
        instance.enable(s, e.as_deref())?;
    }
    for (s, e) in INTERNAL {
        if formats.iter().any(|f| f.system == *s && f.name == *e) {
            instance.enable(s, Some(e))?;
        }
    }

    let cpus = instance.cpus()?;
    let mut readers = Vec::with_capacity(cpus.len());
    for &cpu in &cpus {
        let path = instance.cpu_file(cpu, "trace_pipe_raw");
        let pipe = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&path).map_err(|e| io(&path, e))?;
        let spool = SegmentWriter::create(&spool_dir, cpu, SEGMENT_BYTES).map_err(|e| io(crate::spool::segment_path(&spool_dir, cpu, 0), e))?;
        let base = instance.stats(cpu).unwrap_or_default();
        readers.push(CpuReader { cpu, pipe, stats: instance.cpu_file(cpu, "stats"), spool, base, reported_lost: 0, header_missed: 0, known: 0 });
    }

    let own = Arc::new(Mutex::new(HashSet::from([gettid()])));
    let mono0 = clock_ns(libc::CLOCK_MONOTONIC);
    let real0 = clock_ns(libc::CLOCK_REALTIME);
    let statedump_ts = mono0.max(0) as u64;
    // The state dump is read before tracing starts (its thousands of reads of /proc would
    // otherwise fill the buffers, to be thrown away as the recorder's own events); a thread
    // born between the two is still named by `saved_tgids`/`saved_cmdlines` or its events.
    let dump = statedump::read(Path::new("/proc"));
    let started = Instant::now();
    instance.tracing_on(true)?;

    let shared = Arc::new(Shared { marks: Marks::new(cpus.len()), ..Shared::default() });
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let handle = {
        let shared = Arc::clone(&shared);
        let poll = options.poll_interval;
        let buffer_pages = (options.buffer_size_kb as usize * 1024) / layout.page_size.max(1);
        let busy_pages = (buffer_pages / 4).max(1);
        std::thread::Builder::new()
            .name("tracelens-reader".into())
            .spawn(move || {
                let _ = tid_tx.send(gettid());
                reader_loop(readers, layout, &shared, poll, busy_pages, buffer_pages)
            })
            .map_err(|e| io("reader thread", e))?
    };
    let mut reader = ReaderGuard { instance: &instance, shared: Arc::clone(&shared), handle: Some(handle) };
    if let Ok(t) = tid_rx.recv() {
        own.lock().unwrap_or_else(|p| p.into_inner()).insert(t);
    }

    let events_dir = tracefs.path("events");
    let mut sampler = None;
    let mut running = match (&options.target, &options.stacks) {
        (Target::Command(args), Some(so)) => {
            let mut cmd = std::process::Command::new(&args[0]);
            cmd.args(&args[1..]);
            probe_env(&mut cmd, options, real0 - mono0);
            let (child, s) = crate::stacks::Sampler::start_command(cmd, so, &events_dir, &spool_dir)?;
            sampler = Some(s);
            Running::Child(child)
        }
        (Target::Command(args), None) => {
            let mut cmd = std::process::Command::new(&args[0]);
            probe_env(&mut cmd, options, real0 - mono0);
            let child = cmd.args(&args[1..]).spawn().map_err(|e| crate::command::spawn_error(&args[0], &e))?;
            Running::Child(child)
        }
        (Target::Pid(p), so) => {
            sampler = so.as_ref().map(|so| crate::stacks::Sampler::start_pid(*p, so, &events_dir, &spool_dir)).transpose()?;
            Running::Pid(*p)
        }
        (Target::System, so) => {
            sampler = so.as_ref().map(|so| crate::stacks::Sampler::start_system(so, &events_dir, &spool_dir)).transpose()?;
            Running::System
        }
    };
    if let Some(s) = &sampler {
        own.lock().unwrap_or_else(|p| p.into_inner()).extend(s.own_tids());
    }

    // The converter starts once the recorder's own threads are all known (their events are
    // left out), and catches up with what the reader spooled meanwhile.
    let (hostname, kernel_release, kernel_version) = uname();
    let info = TraceInfo { uuid: random_uuid(), hostname, kernel_release, kernel_version, clock_offset_ns: real0 - mono0, cpus: cpus.len() as u32 };
    let job = live::Job {
        input: ConvertInput {
            layout,
            schema,
            statedump: dump,
            statedump_ts,
            own_tids: own.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            recorder: (gettid(), std::process::id() as i32),
            info: info.clone(),
            counts: HashMap::new(),
            fallback: saved_tasks(&tracefs),
            packet_size: options.packet_size,
            ns_inum: ns_inum(),
        },
        cpus: cpus.clone(),
        trace_dir: trace_dir.clone(),
        spool_dir: spool_dir.clone(),
        keep_spool: options.keep_spool,
        idle_backlog: options.idle_backlog,
        more_tasks: {
            let tracefs = tracefs.clone();
            Box::new(move || saved_tasks(&tracefs))
        },
    };
    let handle = {
        let shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("tracelens-convert".into())
            .spawn(move || {
                let r = live::run(job, &shared.marks, &shared.bytes);
                if r.is_err() {
                    shared.marks.failed.store(true, Ordering::Release);
                }
                r
            })
            .map_err(|e| io("converter thread", e))?
    };
    shared.marks.set_converter(handle.thread().clone());
    let mut converter = ConverterGuard { shared: Arc::clone(&shared), handle: Some(handle) };

    let snapshot = |shared: &Shared| {
        let bytes = shared.bytes.load(Ordering::Relaxed);
        Progress {
            elapsed: started.elapsed(),
            events: shared.events.load(Ordering::Relaxed),
            bytes,
            lost: shared.lost.load(Ordering::Relaxed),
            converted: shared.marks.converted.load(Ordering::Relaxed),
            spool_bytes: bytes.saturating_sub(shared.marks.read_bytes.load(Ordering::Relaxed)),
        }
    };
    let child_pid = match &running {
        Running::Child(c) => Some(c.id() as i32),
        _ => None,
    };
    let mut exit = None;
    let mut stopped = false;
    let mut cut_short = None;
    let mut next_report = Instant::now() + Duration::from_secs(1);
    let mut next_space_check = Instant::now();
    loop {
        if options.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst)) {
            stopped = true;
            break;
        }
        if let Some(cut) = shared.cut.lock().unwrap_or_else(|p| p.into_inner()).take() {
            cut_short = Some(cut);
            break;
        }
        let backlog = snapshot(&shared).spool_bytes;
        if options.max_spool > 0 && backlog > options.max_spool {
            cut_short = Some(CutShort::SpoolLimit { bytes: backlog, limit: options.max_spool });
            break;
        }
        if Instant::now() >= next_space_check {
            if let Some(free) = free_bytes(&options.output).filter(|&f| f < options.min_free) {
                cut_short = Some(CutShort::LowSpace { path: options.output.clone(), free, min_free: options.min_free });
                break;
            }
            next_space_check = Instant::now() + Duration::from_millis(200);
        }
        let done = match &mut running {
            Running::Child(c) => match c.try_wait() {
                Ok(Some(st)) => {
                    exit = Some(st);
                    true
                }
                Ok(None) => false,
                Err(_) => true,
            },
            Running::Pid(p) => process_start(*p).is_none(),
            Running::System => false,
        };
        if done || shared.marks.failed.load(Ordering::Acquire) || shared.error.lock().map(|g| g.is_some()).unwrap_or(true) {
            break;
        }
        if Instant::now() >= next_report {
            progress(&snapshot(&shared));
            next_report += Duration::from_secs(1);
        }
        std::thread::sleep(Duration::from_millis(50));
    }

    if let Running::Child(c) = &mut running {
        // Stopped by a signal (or by the caller): the command is stopped too. Cut short by a
        // limit or a failure, it runs on.
        if exit.is_none() && stopped {
            // Ended early (a signal): the command is ended too, as `perf record` does, while
            // still recording, so that its end is in the trace. A Ctrl-C at the terminal
            // reached it already: give it a moment to exit by itself first.
            let wait = |c: &mut Child, d: Duration| {
                let deadline = Instant::now() + d;
                while Instant::now() < deadline {
                    if let Ok(Some(st)) = c.try_wait() {
                        return Some(st);
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                None
            };
            exit = wait(c, Duration::from_millis(500));
            if exit.is_none() {
                // SAFETY: kill with the pid of the child we spawned and have not reaped.
                unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
                exit = wait(c, Duration::from_secs(2));
            }
        }
    }
    // Stop recording, drain, restore.
    let stacks_stopped = sampler.as_mut().map(|s| s.stop());
    // Tracing goes off, and the reader's last pass empties the buffers and tells the converter
    // that the spool is complete.
    reader.finish();
    drop(reader);
    let final_progress = snapshot(&shared);
    progress(&final_progress);
    let name = instance.name().to_string();
    instance.remove()?;
    // The kernel's state is restored: a second Ctrl-C may now simply end the process.
    crate::signals::release();
    if let Some(e) = shared.error.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(e);
    }
    let converted = converter.join()?;
    stacks_stopped.transpose()?;
    let stacks = match sampler {
        Some(s) => Some(s.finish(&options.output.join("stacks"), &info, Some(std::process::id() as i32))?),
        None => None,
    };
    // A command left to run on may have ended meanwhile.
    let running = match running {
        Running::Child(mut c) if exit.is_none() => match c.try_wait() {
            Ok(Some(st)) => {
                exit = Some(st);
                None
            }
            _ => Some(c),
        },
        _ => None,
    };
    cleanup.armed = false;
    uprobes.remove().map_err(|e| Error::Uprobe(format!("{e} (the trace in {} is complete; the next `tracelens record` removes them)", trace_dir.display())))?;
    let spool = if options.keep_spool {
        Some(spool_dir)
    } else {
        let _ = fs::remove_dir_all(&spool_dir);
        None
    };
    Ok(Summary {
        trace_dir,
        instance: name,
        removed_stale,
        cpus: cpus.len() as u32,
        progress: Progress { converted: converted.events, spool_bytes: 0, ..final_progress },
        convert: converted,
        child_pid,
        exit,
        running,
        stopped,
        cut_short,
        spool,
        stacks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tracefs-like directory with `events/sched/sched_switch/format` and a directory
    /// beside `events/` that a path in `-e` could reach.
    fn fake_tracefs(name: &str) -> (PathBuf, Tracefs) {
        let root = std::env::temp_dir().join(format!("tracelens-fake-tracefs-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("instances")).unwrap();
        fs::create_dir_all(root.join("events/sched/sched_switch")).unwrap();
        fs::write(root.join("events/sched/sched_switch/format"), "name: sched_switch\n").unwrap();
        fs::create_dir_all(root.join("outside/x")).unwrap();
        fs::write(root.join("outside/x/format"), "").unwrap();
        let t = Tracefs::at(&root).unwrap();
        (root, t)
    }

    #[test]
    fn event_items_are_names_never_paths() {
        let (root, t) = fake_tracefs("names");
        let ok = |s: &str| resolve_events(&t, &[s.to_string()]);
        // The group's members that exist here.
        assert_eq!(ok("sched").unwrap(), vec![("sched".to_string(), Some("sched_switch".to_string()))]);
        assert_eq!(ok("sched:sched_switch").unwrap(), vec![("sched".to_string(), Some("sched_switch".to_string()))]);
        assert_eq!(ok("sched:*").unwrap(), vec![("sched".to_string(), None)]);
        for bad in ["../outside", "../outside:x", "sched:../../outside/x", "sched/sched_switch", "..", "sched:.", "a b", "sched:sched_switch/"] {
            let e = ok(bad).expect_err(bad).to_string();
            assert!(e.contains(&format!("`{bad}` is not an event group or event name")), "{bad}: {e}");
        }
        let _ = fs::remove_dir_all(&root);
    }
}
