//! Converting while recording: the reader thread publishes, for each CPU, how far that CPU's
//! spool is written and up to when its events are known ([`Marks`]); the converter thread
//! ([`run`]) merges the spools up to the watermark (the least of the known times, see
//! [`crate::convert`]) and writes the CTF trace as the recording goes, deleting each spool
//! segment it has read. When the recording ends, what is left (the last reads, and any
//! backlog) is converted at once.
//!
//! The converter runs as `SCHED_IDLE`, so that the recorded workload (and the reader) win the
//! CPU from it; when it falls behind by more than [`Job::idle_backlog`] bytes of pages (the
//! CPUs are busy and the spool grows), it runs at normal priority until the backlog is under a
//! quarter of that, so that the spool stays bounded where the converter can keep up at all.
//! The final conversion runs at normal priority.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::thread::Thread;
use std::time::{Duration, Instant};

use crate::convert::{ConvertInput, ConvertSummary, Converter, Fallback, Merge};
use crate::error::{Error, Result};
use crate::ringbuf::{self, common_type};
use crate::spool::{Item, Position, SegmentReader};

/// Events released between two looks at the backlog and the abort flag.
const BATCH: u64 = 1 << 16;
/// Bytes of pages (per CPU at most) whose events are counted to number the event classes
/// before the trace is created (see [`crate::convert`]).
const SAMPLE_BYTES: u64 = 4 << 20;
/// How long the converter waits for [`SAMPLE_BYTES`] of pages in all.
const SAMPLE_WAIT: Duration = Duration::from_secs(1);

/// One CPU's published state.
#[derive(Default)]
struct Mark {
    /// The packed [`Position`] up to which the spool is flushed.
    end: AtomicU64,
    /// The time before which this CPU's events are all in the spool before `end`.
    known: AtomicU64,
}

/// What the reader and the converter threads share, without locks (a converter at idle
/// priority must never hold up the reader).
#[derive(Default)]
pub(crate) struct Marks {
    cpus: Vec<Mark>,
    done: AtomicBool,
    abort: AtomicBool,
    /// The converter failed: the recording should end.
    pub(crate) failed: AtomicBool,
    /// Events the converter has written.
    pub(crate) converted: AtomicU64,
    /// Bytes of pages the converter has read.
    pub(crate) read_bytes: AtomicU64,
    converter: OnceLock<Thread>,
}

impl Marks {
    /// Marks for `cpus` CPUs, nothing published.
    pub(crate) fn new(cpus: usize) -> Marks {
        Marks { cpus: (0..cpus).map(|_| Mark::default()).collect(), ..Marks::default() }
    }

    /// The `k`-th CPU's spool is flushed up to `end`, and every event of that CPU before
    /// `known` is in it. `known` must not go backwards.
    pub(crate) fn publish(&self, k: usize, end: Position, known: u64) {
        let m = &self.cpus[k];
        // The position first: a converter that sees the new time sees this position or a
        // later one.
        m.end.store(end.pack(), Ordering::Release);
        m.known.store(known, Ordering::Release);
    }

    /// (spool end, known time) of the `k`-th CPU, consistent as [`Marks::publish`] says.
    fn read(&self, k: usize) -> (Position, u64) {
        let m = &self.cpus[k];
        let known = m.known.load(Ordering::Acquire);
        (Position::unpack(m.end.load(Ordering::Acquire)), known)
    }

    /// Wakes the converter (after a publication).
    pub(crate) fn wake(&self) {
        if let Some(t) = self.converter.get() {
            t.unpark();
        }
    }

    /// The reader is done: everything is published.
    pub(crate) fn finish(&self) {
        self.done.store(true, Ordering::Release);
        self.wake();
    }

    /// The recording failed: the converter should stop without finishing.
    pub(crate) fn abort(&self) {
        self.abort.store(true, Ordering::Release);
        self.wake();
    }

    /// The converter thread, to wake.
    pub(crate) fn set_converter(&self, t: Thread) {
        let _ = self.converter.set(t);
    }
}

/// What the converter thread needs.
pub(crate) struct Job {
    /// The conversion's input (the converter adds its own thread to `own_tids`).
    pub input: ConvertInput,
    /// The CPUs, in stream order.
    pub cpus: Vec<u32>,
    /// Where the trace goes.
    pub trace_dir: PathBuf,
    /// The spool's directory.
    pub spool_dir: PathBuf,
    /// Keep spool segments once read.
    pub keep_spool: bool,
    /// Backlog (bytes of pages spooled and not converted yet) above which the converter runs
    /// at normal priority (see the module documentation).
    pub idle_backlog: u64,
    /// Reads more thread names and thread-group ids (tracefs `saved_cmdlines` and
    /// `saved_tgids`) when the conversion met threads it could not name.
    pub more_tasks: Box<dyn Fn() -> Fallback + Send>,
}

fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// Makes the calling thread `SCHED_IDLE` (`idle`) or normal again; false if not permitted.
fn set_idle(idle: bool) -> bool {
    let param = libc::sched_param { sched_priority: 0 };
    let policy = if idle { libc::SCHED_IDLE } else { libc::SCHED_OTHER };
    // SAFETY: param is a valid sched_param; pid 0 is the calling thread.
    unsafe { libc::sched_setscheduler(0, policy, &param) == 0 }
}

/// Counts the events per `common_type` in the first [`SAMPLE_BYTES`] of each CPU's spool,
/// once there are that many bytes in all, [`SAMPLE_WAIT`] has passed, or the recording is
/// over; None when aborted meanwhile.
fn sample(job: &Job, marks: &Marks, spooled: &AtomicU64) -> Result<Option<HashMap<u16, u64>>> {
    let start = Instant::now();
    while !marks.done.load(Ordering::Acquire) && spooled.load(Ordering::Relaxed) < SAMPLE_BYTES && start.elapsed() < SAMPLE_WAIT {
        if marks.abort.load(Ordering::Acquire) {
            return Ok(None);
        }
        std::thread::park_timeout(Duration::from_millis(50));
    }
    let mut counts: HashMap<u16, u64> = HashMap::new();
    let mut page = Vec::new();
    for (k, &cpu) in job.cpus.iter().enumerate() {
        let mut r = SegmentReader::new(&job.spool_dir, cpu, false);
        r.set_limit(marks.read(k).0);
        let mut bytes = 0u64;
        while bytes < SAMPLE_BYTES {
            match r.next_into(&mut page).map_err(|e| Error::Io { path: job.spool_dir.clone(), source: e })? {
                None => break,
                Some(Item::Lost(_)) => {}
                Some(Item::Page) => {
                    bytes += page.len() as u64;
                    if let Ok((_, evs)) = ringbuf::events(&page, &job.input.layout) {
                        for e in evs.flatten() {
                            *counts.entry(common_type(e.data)).or_insert(0) += 1;
                        }
                    }
                }
            }
        }
    }
    Ok(Some(counts))
}

/// The converter thread's work: converts the spools as the reader publishes them (see the
/// module documentation) until the reader is done, then the rest, and finishes the trace.
/// Returns early, with an empty summary, when aborted.
pub(crate) fn run(job: Job, marks: &Marks, spooled: &AtomicU64) -> Result<ConvertSummary> {
    let mut idle = job.idle_backlog > 0 && set_idle(true);
    let Some(counts) = sample(&job, marks, spooled)? else { return Ok(ConvertSummary::default()) };
    let mut input = job.input;
    input.own_tids.insert(gettid());
    input.counts = counts;
    let mut conv = Converter::create(&input, &job.cpus, &job.trace_dir)?;
    let sources = job.cpus.iter().map(|&c| (c, SegmentReader::new(&job.spool_dir, c, !job.keep_spool))).collect();
    let mut merge = Merge::new(input.layout, sources, input.statedump_ts);
    let mut next_names = Instant::now();
    loop {
        let done = marks.done.load(Ordering::Acquire);
        let mut watermark = u64::MAX;
        for k in 0..job.cpus.len() {
            let (end, known) = marks.read(k);
            merge.records_mut(k).set_limit(end);
            watermark = watermark.min(known);
        }
        if done {
            // Everything is in the spool: the rest, at once.
            watermark = u64::MAX;
            if idle {
                set_idle(false);
                idle = false;
            }
        }
        if conv.met_unnamed() && (done || Instant::now() >= next_names) {
            conv.add_fallback((job.more_tasks)());
            next_names = Instant::now() + Duration::from_secs(1);
        }
        loop {
            if marks.abort.load(Ordering::Acquire) {
                return Ok(ConvertSummary::default());
            }
            let n = merge.release(watermark, BATCH, &mut conv)?;
            let read = merge.bytes();
            marks.converted.store(conv.events(), Ordering::Relaxed);
            marks.read_bytes.store(read, Ordering::Relaxed);
            if !done {
                let backlog = spooled.load(Ordering::Relaxed).saturating_sub(read);
                if idle && backlog > job.idle_backlog {
                    idle = !set_idle(false);
                } else if !idle && backlog < job.idle_backlog / 4 {
                    idle = set_idle(true);
                }
            }
            if n < BATCH {
                break;
            }
        }
        if done {
            break;
        }
        std::thread::park_timeout(Duration::from_millis(500));
    }
    let read = merge.finish(&mut conv)?;
    conv.finish(read)
}
