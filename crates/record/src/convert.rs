//! From spooled ring-buffer pages to CTF: the CPUs' events are merged in time order (so that
//! the thread tables — names, thread-group ids, pending system calls — are exact at each
//! event), converted with the [`Schema`], and written each into its CPU's stream
//! (`channel0_N`), after the state dump.
//!
//! # Converting while recording
//!
//! [`Merge`] takes each CPU's spool records from a [`Records`] source and releases the
//! events, in time order, only up to a *watermark*: a time before which every CPU's events
//! are known. The recorder publishes, for each CPU, how far its spool is written and up to
//! when that CPU's events are known — the time of a read that found the buffer empty (the
//! trace clock is `CLOCK_MONOTONIC`), else the time of the last event read, since a CPU's
//! later events are later — and the watermark is the least of these. An event past it waits
//! (in the spool, not in memory: a source holds one page) until the watermark passes it; at
//! the end the watermark is lifted and everything left is released. [`Converter`] turns the
//! released events into CTF as they come, so the conversion runs while recording and the
//! trace is finished almost as soon as the recording ends. [`convert`] does the same at once
//! for spools already complete.
//!
//! # Event ids
//!
//! Event ids are fixed in the metadata, written when the trace is created, before the first
//! event is converted: long before the recording's end, so the ids cannot follow how often
//! each event occurs in the whole recording. LTTng's compact event header (4 bytes instead of
//! 13) holds only ids 0 to 30, and they should go to the most frequent events. [`class_ids`]
//! orders the classes by
//!
//! 1. how often they occur in a sample taken before the trace is created
//!    ([`ConvertInput::counts`]: while recording, the converter waits for the first 4 MiB of
//!    pages, or one second, and counts their events; a short recording is counted whole, and
//!    so numbered exactly by frequency), most frequent first;
//! 2. then, for the classes the sample did not show (or showed equally often), the fixed
//!    order of [`HOT_CLASSES`]: the events that usually dominate a kernel trace (context
//!    switches and wake-ups, interrupt and soft-interrupt entry and exit, timer expiry, the
//!    system calls of I/O, waiting and memory mapping);
//! 3. then the schema's order (the state dump first, then the recorded events in the order
//!    they were selected, system calls by name).
//!
//! A workload whose hot events change after its first second keeps the ids of its first
//! second; the hot list still gives the usual suspects compact headers.
//!
//! # Lost events
//!
//! Events the kernel lost are written as CTF discarded-event counts where they were lost:
//! the counts the recorder read from `per_cpu/cpuN/stats` (spool [`spool::Item::Lost`]
//! records), the counts a page header carries (`RB_MISSED_EVENTS`), and context switches
//! the kernel did not record. The last are found from the switches themselves: on one CPU,
//! each `sched_switch` switches out the thread the previous one switched in, so a switch
//! whose `prev_tid` is another thread follows at least one unrecorded switch (counted as one
//! discarded event, unless lost events were already reported in between). Some kernels
//! record no event at all while certain threads run outside interrupts (on the VM these
//! recordings were developed on: every thread of pid 1 and the idle thread of CPU 1), so
//! their switch-outs are never in the buffer; the thread that runs next is then switched in
//! with no event, and without this check its CPU time would silently go to the hidden
//! thread.

use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::hash::BuildHasherDefault;
use std::fs::File;
use std::io::{BufRead, BufWriter};
use std::path::Path;

use tracelens_ctf::write::{EventValues, OwnedValue, StreamOptions, StreamWriter, TraceWriter};

use crate::error::{Error, Result};
use crate::format::PageLayout;
use crate::lttng::{self, Conv, RSrc, Role, Schema, Ty};
use crate::metadata::{trace_class, TraceInfo};
use crate::ringbuf::{self, common_flags, common_pid, common_type};
use crate::spool::{self, Records};
use crate::statedump::Statedump;

const CLONE_THREAD: u64 = 0x0001_0000;
/// `common_flags` bits: hard interrupt, soft interrupt, NMI.
const IRQ_CONTEXT: u8 = 0x08 | 0x10 | 0x40;
/// No system call pending (see `Tables::syscalls`).
const NO_SYSCALL: i64 = i64::MIN;

/// Thread-group ids and names by thread id, known from outside the recorded events (tracefs
/// `saved_tgids` and `saved_cmdlines`).
pub type Fallback = HashMap<i32, (Option<i32>, Vec<u8>)>;

/// One CPU's spool.
pub struct CpuInput<R> {
    /// The CPU number.
    pub cpu: u32,
    /// Its spool.
    pub spool: R,
}

/// Everything the conversion needs besides the spools.
#[derive(Clone, Debug)]
pub struct ConvertInput {
    /// The ring-buffer page layout.
    pub layout: PageLayout,
    /// The event mapping.
    pub schema: Schema,
    /// The state dump, written first in the first CPU's stream.
    pub statedump: Statedump,
    /// The time of the state dump (before any recorded event).
    pub statedump_ts: u64,
    /// The recorder's own threads: their events are dropped, except context switches and
    /// events in interrupt context, so that the CPU timeline stays whole.
    pub own_tids: HashSet<i32>,
    /// The recorder's thread and process ids (the state dump's context).
    pub recorder: (i32, i32),
    /// Machine and clock facts for the metadata.
    pub info: TraceInfo,
    /// Events counted per `common_type` before the trace is created (the first pages of the
    /// recording, or all of it): the most frequent classes get the smallest ids (see the
    /// module documentation).
    pub counts: HashMap<u16, u64>,
    /// Thread-group ids and names known from elsewhere (tracefs `saved_tgids` and
    /// `saved_cmdlines`), for threads the state dump and the events do not describe.
    pub fallback: Fallback,
    /// CTF packet size in bytes.
    pub packet_size: u64,
    /// The pid namespace's inode number (for `sched_process_fork`).
    pub ns_inum: u32,
}

/// What a conversion wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConvertSummary {
    /// Events written (state dump included).
    pub events: u64,
    /// Events of the recorder's own threads left out.
    pub own_dropped: u64,
    /// Events counted as discarded (lost by the kernel), [`Self::unrecorded_switches`]
    /// included.
    pub discarded: u64,
    /// Context switches the kernel did not record, as the switch chains show them (see the
    /// module documentation): counted in [`Self::discarded`] too.
    pub unrecorded_switches: u64,
    /// The threads switched in before an unrecorded switch (never seen switched out there),
    /// ascending, without repeats; 0 is an idle thread.
    pub unrecorded_switch_tids: Vec<i32>,
    /// Bytes of stream data written.
    pub bytes: u64,
    /// Pages read.
    pub pages: u64,
    /// Pages with a malformed part (their readable events are kept).
    pub bad_pages: u64,
    /// Events whose type has no conversion, or that could not be written.
    pub skipped: u64,
    /// Events converted after a later event of another CPU: the kernel made them readable
    /// after the watermark had passed them (their writer was held up between taking the time
    /// and committing the event). They are in their CPU's order, but the thread tables at
    /// them may be missing a change made on another CPU just before.
    pub late: u64,
    /// The first problem met, if any (a malformed page, an event that could not be written).
    pub first_problem: Option<String>,
}

struct Task {
    tgid: Option<i32>,
    comm: [u8; 16],
}

/// A hasher for the converter's per-event lookups by thread id or event type (keys spread
/// enough already): one multiplication instead of SipHash.
#[derive(Default)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_i32(&mut self, i: i32) {
        self.0 = (i as u32 as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// A map by thread id with [`IdHasher`].
type TidMap<V> = HashMap<i32, V, BuildHasherDefault<IdHasher>>;

fn comm16(b: &[u8]) -> [u8; 16] {
    let mut c = [0u8; 16];
    let n = b.iter().position(|&x| x == 0).unwrap_or(b.len()).min(15);
    c[..n].copy_from_slice(&b[..n]);
    c
}

/// `swapper/CPU`, the idle threads' name.
fn swapper(cpu: u32) -> [u8; 16] {
    use std::io::Write;
    let mut c = [0u8; 16];
    // 15 bytes hold "swapper/" and 7 digits; a longer number is cut.
    let _ = write!(&mut c[..15], "swapper/{cpu}");
    c
}

fn trim_nul(c: &[u8]) -> &[u8] {
    &c[..c.iter().position(|&x| x == 0).unwrap_or(c.len())]
}

/// The converter's view of threads.
struct Tables {
    tasks: TidMap<Task>,
    fallback: TidMap<(Option<i32>, Vec<u8>)>,
    /// System call entries: thread -> (entry id, argument values); [`NO_SYSCALL`] once the
    /// exit is seen (the entry is kept, so that its argument vector is reused).
    syscalls: TidMap<(i64, Vec<u64>)>,
    ns_inum: u32,
    /// A thread was met that neither the events, the state dump nor the fallback name.
    unnamed: Cell<bool>,
}

impl Tables {
    fn tgid(&self, tid: i32) -> i32 {
        if tid == 0 {
            return 0;
        }
        self.tasks.get(&tid).and_then(|t| t.tgid).or_else(|| self.fallback.get(&tid).and_then(|f| f.0)).unwrap_or(tid)
    }

    fn comm(&self, tid: i32, cpu: u32) -> [u8; 16] {
        if tid == 0 {
            return swapper(cpu);
        }
        match self.tasks.get(&tid) {
            Some(t) => t.comm,
            None => match self.fallback.get(&tid) {
                Some(f) => comm16(&f.1),
                None => {
                    self.unnamed.set(true);
                    [0; 16]
                }
            },
        }
    }

    fn set_comm(&mut self, tid: i32, comm: &[u8]) {
        let c = comm16(comm);
        self.tasks.entry(tid).and_modify(|t| t.comm = c).or_insert(Task { tgid: None, comm: c });
    }
}

/// Shapes a raw value for an integer field.
fn int_value(ty: Ty, v: i64) -> OwnedValue {
    match ty {
        Ty::Int { bits, signed: true, .. } if bits < 64 => {
            let s = 64 - bits as u32;
            OwnedValue::I((v << s) >> s)
        }
        Ty::Int { signed: true, .. } => OwnedValue::I(v),
        Ty::Int { bits, .. } if bits < 64 => OwnedValue::U(v as u64 & ((1u64 << bits) - 1)),
        _ => OwnedValue::U(v as u64),
    }
}

/// Sets `slot` to the text `b` for a text field of type `ty` (fixed-size arrays are cut or
/// padded with NUL bytes), reusing its buffer.
fn set_text(slot: &mut OwnedValue, ty: Ty, b: &[u8]) {
    if !matches!(slot, OwnedValue::Bytes(_)) {
        *slot = OwnedValue::Bytes(Vec::new());
    }
    if let OwnedValue::Bytes(v) = slot {
        v.clear();
        v.extend_from_slice(trim_nul(b));
        let fixed = match ty {
            Ty::Comm => Some(16),
            Ty::Text(n) => Some(n as usize),
            _ => None,
        };
        if let Some(n) = fixed {
            v.truncate(n);
            v.resize(n, 0);
        }
    }
}

fn text_value(ty: Ty, b: &[u8]) -> OwnedValue {
    let mut v = OwnedValue::Bytes(Vec::new());
    set_text(&mut v, ty, b);
    v
}

/// Sets `slot` to a sequence of the given 32-bit integers, reusing its buffer.
fn set_seq(slot: &mut OwnedValue, items: &[i64]) {
    if !matches!(slot, OwnedValue::Array(_)) {
        *slot = OwnedValue::Array(Vec::new());
    }
    if let OwnedValue::Array(v) = slot {
        v.clear();
        v.extend(items.iter().map(|&i| OwnedValue::I(i)));
    }
}

fn is_text(ty: Ty) -> bool {
    matches!(ty, Ty::Comm | Ty::Text(_) | Ty::Str)
}

struct EventCtx<'a> {
    rec: &'a [u8],
    tid: i32,
    tables: &'a Tables,
    /// For a system call exit: the entry it closes.
    exit_of: Option<i64>,
}

/// Sets `slot` to the value of an output field of type `ty` taken from `src`.
fn set_value(slot: &mut OwnedValue, ty: Ty, src: &RSrc, cx: &EventCtx<'_>) {
    let rec = cx.rec;
    match src {
        RSrc::Field(f) if is_text(ty) => set_text(slot, ty, if f.is_text() { f.bytes(rec) } else { b"" }),
        RSrc::Field(f) => *slot = int_value(ty, f.int(rec)),
        RSrc::Prio(f) => *slot = int_value(ty, f.int(rec) - 100),
        RSrc::Tgid(f) => *slot = int_value(ty, cx.tables.tgid(f.int(rec) as i32) as i64),
        RSrc::Tid => *slot = int_value(ty, cx.tid as i64),
        RSrc::NsInum => *slot = int_value(ty, cx.tables.ns_inum as i64),
        RSrc::Rwbs(f) => *slot = int_value(ty, lttng::rwbs_mask(f.bytes(rec)) as i64),
        RSrc::Vtids(f) => match ty {
            Ty::SeqI32 => set_seq(slot, &[f.int(rec) as i32 as i64]),
            _ => *slot = OwnedValue::U(1),
        },
        RSrc::EntryArg(k) => {
            let v = match cx.tables.syscalls.get(&cx.tid) {
                Some((nr, args)) if Some(*nr) == cx.exit_of => args.get(*k).copied().unwrap_or(0),
                _ => 0,
            };
            *slot = int_value(ty, v as i64);
        }
        RSrc::Zero => match ty {
            Ty::SeqI32 => set_seq(slot, &[]),
            t if is_text(t) => set_text(slot, t, b""),
            t => *slot = int_value(t, 0),
        },
    }
}

/// Sets the `{tid, pid, procname}` context value `ctx` for thread `tid` on `cpu`.
fn set_context(ctx: &mut OwnedValue, tables: &Tables, tid: i32, cpu: u32) {
    if let OwnedValue::Struct(v) = ctx {
        if let [OwnedValue::I(t), OwnedValue::I(p), OwnedValue::Bytes(name)] = &mut v[..] {
            *t = tid as i64;
            *p = tables.tgid(tid) as i64;
            name.clear();
            name.extend_from_slice(&tables.comm(tid, cpu));
            return;
        }
    }
    *ctx = OwnedValue::Struct(vec![OwnedValue::I(tid as i64), OwnedValue::I(tables.tgid(tid) as i64), OwnedValue::Bytes(tables.comm(tid, cpu).to_vec())]);
}

/// Receives the events a [`Merge`] releases, in time order.
pub trait Sink {
    /// `count` events were lost on the `k`-th CPU here (before its next event).
    fn lost(&mut self, k: usize, count: u64) -> Result<()>;
    /// The next event: on the `k`-th CPU, at `ts`, its record (common fields first).
    fn event(&mut self, k: usize, ts: u64, rec: &[u8]) -> Result<()>;
}

/// One CPU's events, a page at a time.
struct Source<F> {
    cpu: u32,
    records: F,
    page: Vec<u8>,
    /// (time, start, end) of the current page's events.
    events: Vec<(u64, usize, usize)>,
    next: usize,
    pending_lost: u64,
    /// The time of the last event released: later ones are released at this time or after.
    floor: u64,
    pages: u64,
    bad_pages: u64,
    bytes: u64,
    problem: Option<String>,
}

impl<F: Records> Source<F> {
    /// Makes `events[next]` the next event, reading pages as needed. False when there is
    /// none (yet).
    fn fill(&mut self, layout: &PageLayout) -> Result<bool> {
        while self.next >= self.events.len() {
            self.events.clear();
            self.next = 0;
            let item = self.records.next_record(&mut self.page).map_err(|e| Error::Io { path: format!("spool of cpu {}", self.cpu).into(), source: e })?;
            match item {
                None => return Ok(false),
                Some(spool::Item::Lost(n)) => self.pending_lost += n,
                Some(spool::Item::Page) => {
                    self.pages += 1;
                    self.bytes += self.page.len() as u64;
                    match ringbuf::events(&self.page, layout) {
                        Err(e) => self.bad(e.offset, &e.message),
                        Ok((h, it)) => {
                            // Events lost before this page (overwrite mode): a stored count,
                            // else at least one.
                            self.pending_lost += match h.missed {
                                ringbuf::Missed::None => 0,
                                ringbuf::Missed::Unknown => 1,
                                ringbuf::Missed::Count(n) => n.max(1),
                            };
                            for ev in it {
                                match ev {
                                    Ok(ev) => {
                                        let start = ev.data.as_ptr() as usize - self.page.as_ptr() as usize;
                                        self.events.push((ev.ts, start, start + ev.data.len()));
                                    }
                                    Err(e) => {
                                        self.bad(e.offset, &e.message);
                                        break;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        Ok(true)
    }

    /// The time of the next event, as it will be released.
    fn head(&self) -> u64 {
        self.events[self.next].0.max(self.floor)
    }

    fn bad(&mut self, offset: usize, message: &str) {
        self.bad_pages += 1;
        if self.problem.is_none() {
            self.problem = Some(format!("cpu {}, page {}, byte {offset}: {message}", self.cpu, self.pages - 1));
        }
    }
}

/// What a [`Merge`] read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MergeStats {
    /// Pages read.
    pub pages: u64,
    /// Pages with a malformed part.
    pub bad_pages: u64,
    /// Bytes of pages read.
    pub bytes: u64,
    /// Events released after a later event of another CPU (see [`ConvertSummary::late`]).
    pub late: u64,
    /// The first malformed page, if any.
    pub first_problem: Option<String>,
}

/// The CPUs' events merged in time order and released up to a watermark (see the module
/// documentation). A CPU's events keep their order; one that is earlier than an event of its
/// CPU already released (the kernel wrote it late) is released at that event's time.
pub struct Merge<F> {
    layout: PageLayout,
    sources: Vec<Source<F>>,
    /// (time of the next event, source) of the sources whose next event is read.
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    queued: Vec<bool>,
    /// The time of the last event released, and how many were released before it.
    last: u64,
    late: u64,
}

impl<F: Records> Merge<F> {
    /// A merge of the CPUs' spools `sources` (CPU number, records), whose events are all at or
    /// after `floor` (earlier ones are released at `floor`).
    pub fn new(layout: PageLayout, sources: Vec<(u32, F)>, floor: u64) -> Merge<F> {
        let sources: Vec<Source<F>> = sources
            .into_iter()
            .map(|(cpu, records)| Source {
                cpu,
                records,
                page: Vec::new(),
                events: Vec::new(),
                next: 0,
                pending_lost: 0,
                floor,
                pages: 0,
                bad_pages: 0,
                bytes: 0,
                problem: None,
            })
            .collect();
        let queued = vec![false; sources.len()];
        Merge { layout, sources, heap: BinaryHeap::new(), queued, last: 0, late: 0 }
    }

    /// The records of the `k`-th source (to move its limit, say).
    pub fn records_mut(&mut self, k: usize) -> &mut F {
        &mut self.sources[k].records
    }

    /// Bytes of pages read so far.
    pub fn bytes(&self) -> u64 {
        self.sources.iter().map(|s| s.bytes).sum()
    }

    /// Releases to `sink`, in time order, the events there are whose time is at or before
    /// `watermark`, at most `budget` of them; returns how many. The caller promises that
    /// every event not readable yet is at or after the watermark.
    pub fn release(&mut self, watermark: u64, budget: u64, sink: &mut impl Sink) -> Result<u64> {
        for k in 0..self.sources.len() {
            if !self.queued[k] && self.sources[k].fill(&self.layout)? {
                self.heap.push(Reverse((self.sources[k].head(), k)));
                self.queued[k] = true;
            }
        }
        let mut n = 0;
        while n < budget {
            let Some(&Reverse((ts, k))) = self.heap.peek() else { break };
            if ts > watermark {
                break;
            }
            self.heap.pop();
            self.queued[k] = false;
            let s = &mut self.sources[k];
            let (_, start, end) = s.events[s.next];
            s.next += 1;
            s.floor = ts;
            if s.pending_lost > 0 {
                sink.lost(k, s.pending_lost)?;
                s.pending_lost = 0;
            }
            sink.event(k, ts, &s.page[start..end])?;
            n += 1;
            if ts < self.last {
                self.late += 1;
            }
            self.last = self.last.max(ts);
            if s.fill(&self.layout)? {
                self.heap.push(Reverse((s.head(), k)));
                self.queued[k] = true;
            }
        }
        Ok(n)
    }

    /// Ends the merge: events lost after each CPU's last event go to `sink`.
    pub fn finish(self, sink: &mut impl Sink) -> Result<MergeStats> {
        let mut st = MergeStats { late: self.late, ..MergeStats::default() };
        for (k, s) in self.sources.into_iter().enumerate() {
            if s.pending_lost > 0 {
                sink.lost(k, s.pending_lost)?;
            }
            st.pages += s.pages;
            st.bad_pages += s.bad_pages;
            st.bytes += s.bytes;
            if st.first_problem.is_none() {
                st.first_problem = s.problem;
            }
        }
        Ok(st)
    }
}

/// Writes released events as CTF (see the module documentation): one stream per CPU, the
/// state dump first.
pub struct Converter<'a> {
    input: &'a ConvertInput,
    cpus: Vec<u32>,
    ids: Vec<u64>,
    writers: Vec<StreamWriter<BufWriter<File>>>,
    tables: Tables,
    summary: ConvertSummary,
    /// Per CPU: the thread the last context switch switched in, and whether lost events
    /// were reported since (they explain a broken switch chain).
    running: Vec<Option<i32>>,
    lost_since_switch: Vec<bool>,
    unrecorded_tids: HashSet<i32>,
    /// Per class: its payload, updated in place for each event.
    payloads: Vec<OwnedValue>,
    /// [`ConvertInput::own_tids`], for lookups by event.
    own_tids: TidMap<()>,
    /// The schema's conversions, by `common_type`.
    by_type: Vec<Option<&'a Conv>>,
    /// The `{tid, pid, procname}` context, updated in place for each event.
    ctx: OwnedValue,
}

fn blank(ty: Ty) -> OwnedValue {
    match ty {
        Ty::SeqI32 => OwnedValue::Array(Vec::new()),
        t if is_text(t) => text_value(t, b""),
        t => int_value(t, 0),
    }
}

impl<'a> Converter<'a> {
    /// Creates the trace in `dir` (`metadata`, `channel0_N` and `index/` for each of `cpus`,
    /// in this order) and writes the state dump.
    pub fn create(input: &'a ConvertInput, cpus: &[u32], dir: &Path) -> Result<Converter<'a>> {
        let schema = &input.schema;
        let ids = class_ids(schema, &input.counts);
        let mut info = input.info.clone();
        info.cpus = cpus.len() as u32;
        let class = trace_class(&info, &schema.classes, &ids);
        let mut trace = TraceWriter::create(dir, &class)?;
        let mut writers = Vec::with_capacity(cpus.len());
        for &cpu in cpus {
            let opts = StreamOptions { packet_size: input.packet_size, index: true, instance_id: Some(cpu as u64), ..StreamOptions::default() };
            let mut w = trace.stream_with(0, &format!("channel0_{cpu}"), &opts)?;
            w.set_packet_context("cpu_id", OwnedValue::U(cpu as u64))?;
            writers.push(w);
        }
        let mut tables = Tables {
            tasks: TidMap::default(),
            fallback: input.fallback.iter().map(|(&k, v)| (k, v.clone())).collect(),
            syscalls: TidMap::default(),
            ns_inum: input.ns_inum,
            unnamed: Cell::new(false),
        };
        for t in &input.statedump.threads {
            tables.tasks.insert(t.tid, Task { tgid: Some(t.pid), comm: comm16(&t.name) });
        }
        let mut by_type = vec![None; schema.by_type.keys().map(|&t| t as usize + 1).max().unwrap_or(0)];
        for (&t, conv) in &schema.by_type {
            by_type[t as usize] = Some(conv);
        }
        let mut summary = ConvertSummary::default();
        // The state dump, first in the first stream.
        if let Some(w) = writers.first_mut() {
            summary.events += write_statedump(w, input, &ids, &tables)?;
        }
        Ok(Converter {
            input,
            cpus: cpus.to_vec(),
            ids,
            writers,
            tables,
            summary,
            running: vec![None; cpus.len()],
            lost_since_switch: vec![false; cpus.len()],
            unrecorded_tids: HashSet::new(),
            payloads: schema.classes.iter().map(|c| OwnedValue::Struct(c.fields.iter().map(|(_, ty)| blank(*ty)).collect())).collect(),
            own_tids: input.own_tids.iter().map(|&t| (t, ())).collect(),
            by_type,
            ctx: OwnedValue::Struct(Vec::new()),
        })
    }

    /// Events written so far (state dump included).
    pub fn events(&self) -> u64 {
        self.summary.events
    }

    /// Whether an event of a thread without a name was written since the last
    /// [`Converter::add_fallback`] (or the start).
    pub fn met_unnamed(&self) -> bool {
        self.tables.unnamed.get()
    }

    /// Adds to (or updates) the thread-group ids and names known from elsewhere (see
    /// [`ConvertInput::fallback`]), for the events still to come.
    pub fn add_fallback(&mut self, more: Fallback) {
        self.tables.fallback.extend(more);
        self.tables.unnamed.set(false);
    }

    /// Finishes the streams; `read` is what the merge read.
    pub fn finish(mut self, read: MergeStats) -> Result<ConvertSummary> {
        let mut summary = std::mem::take(&mut self.summary);
        summary.unrecorded_switch_tids = self.unrecorded_tids.into_iter().collect();
        summary.unrecorded_switch_tids.sort_unstable();
        summary.pages += read.pages;
        summary.bad_pages += read.bad_pages;
        summary.late += read.late;
        if summary.first_problem.is_none() {
            summary.first_problem = read.first_problem;
        }
        for w in self.writers {
            summary.bytes += w.finish()?.bytes;
        }
        Ok(summary)
    }
}

impl Sink for Converter<'_> {
    fn lost(&mut self, k: usize, count: u64) -> Result<()> {
        self.writers[k].discard(count)?;
        self.summary.discarded += count;
        self.lost_since_switch[k] = true;
        Ok(())
    }

    fn event(&mut self, k: usize, ts: u64, rec: &[u8]) -> Result<()> {
        let input = self.input;
        let schema = &input.schema;
        let cpu = self.cpus[k];
        let tid = common_pid(rec);
        let tables = &mut self.tables;
        match self.by_type.get(common_type(rec) as usize).copied().flatten() {
            None => self.summary.skipped += 1,
            Some(Conv::NewTask { pid, clone_flags, comm }) => {
                let child = pid.int(rec) as i32;
                let tgid = if clone_flags.uint(rec) & CLONE_THREAD != 0 { tables.tgid(tid) } else { child };
                tables.tasks.insert(child, Task { tgid: Some(tgid), comm: comm16(comm.bytes(rec)) });
            }
            Some(Conv::Rename { pid, newcomm }) => {
                let t = pid.int(rec) as i32;
                tables.set_comm(t, newcomm.bytes(rec));
            }
            Some(Conv::Write { class, fields, role }) => {
                let own = self.own_tids.contains_key(&tid) && Some(*class) != schema.switch_class && common_flags(rec) & IRQ_CONTEXT == 0;
                // Table updates that the event's own context depends on.
                match role {
                    Role::Switch { prev, next } => {
                        let (p, n) = (prev.0.int(rec) as i32, next.0.int(rec) as i32);
                        tables.set_comm(p, prev.1.bytes(rec));
                        tables.set_comm(n, next.1.bytes(rec));
                        match self.running[k] {
                            Some(r) if r != p && !self.lost_since_switch[k] => {
                                // The switch out of `r` (and any after it) is not in the
                                // buffer: reported before this switch.
                                self.writers[k].discard(1)?;
                                self.summary.discarded += 1;
                                self.summary.unrecorded_switches += 1;
                                self.unrecorded_tids.insert(r);
                            }
                            _ => {}
                        }
                        self.running[k] = Some(n);
                        self.lost_since_switch[k] = false;
                    }
                    Role::Exec { pid, old_pid } => {
                        let old = old_pid.int(rec) as i32;
                        if self.running[k] == Some(old) {
                            self.running[k] = Some(pid.int(rec) as i32);
                        }
                    }
                    Role::Fork { child } => {
                        let c = child.0.int(rec) as i32;
                        tables.set_comm(c, child.1.bytes(rec));
                    }
                    _ => {}
                }
                if own {
                    self.summary.own_dropped += 1;
                } else {
                    let exit_of = match role {
                        Role::SyscallExit { nr } => Some(*nr),
                        _ => None,
                    };
                    let cx = EventCtx { rec, tid, tables, exit_of };
                    if let OwnedValue::Struct(slots) = &mut self.payloads[*class] {
                        for (slot, (ty, src)) in slots.iter_mut().zip(fields) {
                            set_value(slot, *ty, src, &cx);
                        }
                    }
                    set_context(&mut self.ctx, tables, tid, cpu);
                    let values = EventValues { header: None, common_context: Some(&self.ctx), context: None, payload: Some(&self.payloads[*class]) };
                    match self.writers[k].event(self.ids[*class], ts, values) {
                        Ok(()) => self.summary.events += 1,
                        Err(e) => {
                            self.summary.skipped += 1;
                            if self.summary.first_problem.is_none() {
                                self.summary.first_problem = Some(e.to_string());
                            }
                        }
                    }
                }
                match role {
                    Role::SyscallEntry { nr, args } => {
                        let e = tables.syscalls.entry(tid).or_insert((NO_SYSCALL, Vec::new()));
                        e.0 = *nr;
                        e.1.clear();
                        e.1.extend(args.iter().map(|a| a.int(rec) as u64));
                    }
                    Role::SyscallExit { nr } => {
                        if let Some(e) = tables.syscalls.get_mut(&tid).filter(|e| e.0 == *nr) {
                            e.0 = NO_SYSCALL;
                        }
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

/// Converts complete spools to a CTF trace in `dir` (`metadata`, `channel0_N`, `index/`).
pub fn convert<R: BufRead>(input: &ConvertInput, cpus: Vec<CpuInput<R>>, dir: &Path) -> Result<ConvertSummary> {
    let numbers: Vec<u32> = cpus.iter().map(|c| c.cpu).collect();
    let mut conv = Converter::create(input, &numbers, dir)?;
    let mut merge = Merge::new(input.layout, cpus.into_iter().map(|c| (c.cpu, spool::Reader::new(c.spool))).collect(), input.statedump_ts);
    merge.release(u64::MAX, u64::MAX, &mut conv)?;
    let read = merge.finish(&mut conv)?;
    conv.finish(read)
}

/// Classes that are usually the most frequent in a kernel trace, most frequent first, by
/// LTTng name: they get the first event ids, and so LTTng's compact event header (see the
/// module documentation).
pub const HOT_CLASSES: &[&str] = &[
    "sched_switch",
    "sched_waking",
    "sched_wakeup",
    "irq_softirq_entry",
    "irq_softirq_exit",
    "irq_softirq_raise",
    "irq_handler_entry",
    "irq_handler_exit",
    "timer_hrtimer_expire_entry",
    "timer_hrtimer_expire_exit",
    "syscall_entry_read",
    "syscall_exit_read",
    "syscall_entry_write",
    "syscall_exit_write",
    "syscall_entry_futex",
    "syscall_exit_futex",
    "syscall_entry_ppoll",
    "syscall_exit_ppoll",
    "syscall_entry_epoll_wait",
    "syscall_exit_epoll_wait",
    "syscall_entry_openat",
    "syscall_exit_openat",
    "syscall_entry_close",
    "syscall_exit_close",
    "syscall_entry_newfstatat",
    "syscall_exit_newfstatat",
    "syscall_entry_ioctl",
    "syscall_exit_ioctl",
    "syscall_entry_mmap",
    "syscall_exit_mmap",
    "sched_migrate_task",
];

/// Event ids, by index in `schema.classes`: classes by how often `counts` (per
/// `common_type`) has them, most frequent first, then in the order of [`HOT_CLASSES`], then
/// in the schema's order (see the module documentation).
pub fn class_ids(schema: &Schema, counts: &HashMap<u16, u64>) -> Vec<u64> {
    let mut count = vec![0u64; schema.classes.len()];
    for (ty, conv) in &schema.by_type {
        if let Conv::Write { class, .. } = conv {
            count[*class] += counts.get(ty).copied().unwrap_or(0);
        }
    }
    let mut hot = vec![usize::MAX; schema.classes.len()];
    for (rank, h) in HOT_CLASSES.iter().enumerate() {
        if let Some(k) = schema.classes.iter().position(|c| c.name == *h) {
            hot[k] = hot[k].min(rank);
        }
    }
    let mut order: Vec<usize> = (0..schema.classes.len()).collect();
    order.sort_by_key(|&k| (Reverse(count[k]), hot[k], k));
    let mut ids = vec![0u64; schema.classes.len()];
    for (rank, k) in order.into_iter().enumerate() {
        ids[k] = rank as u64;
    }
    ids
}

fn write_statedump<W: std::io::Write>(w: &mut StreamWriter<W>, input: &ConvertInput, ids: &[u64], tables: &Tables) -> Result<u64> {
    let ts = input.statedump_ts;
    let (tid, pid) = input.recorder;
    let ctx = OwnedValue::Struct(vec![OwnedValue::I(tid as i64), OwnedValue::I(pid as i64), OwnedValue::Bytes(tables.comm(tid, 0).to_vec())]);
    let empty = OwnedValue::Struct(Vec::new());
    let ev = |w: &mut StreamWriter<W>, class: usize, p: &OwnedValue| {
        w.event(ids[class], ts, EventValues { header: None, common_context: Some(&ctx), context: None, payload: Some(p) })
    };
    let mut n = 0;
    ev(w, lttng::STATEDUMP_START, &empty)?;
    n += 1;
    for t in &input.statedump.threads {
        let i = |v: i32| OwnedValue::I(v as i64);
        let p = OwnedValue::Struct(vec![
            i(t.tid),
            i(t.tid),
            i(t.pid),
            i(t.pid),
            i(t.ppid),
            i(t.ppid),
            text_value(Ty::Comm, &t.name),
            i(t.kind),
            i(5),
            i(1),
            i(t.status),
            i(t.cpu),
        ]);
        ev(w, lttng::STATEDUMP_PROCESS, &p)?;
        n += 1;
    }
    for f in &input.statedump.fds {
        let p = OwnedValue::Struct(vec![
            OwnedValue::I(f.pid as i64),
            OwnedValue::I(f.fd as i64),
            OwnedValue::U(f.flags as u64),
            OwnedValue::U(f.fmode as u64),
            OwnedValue::Bytes(trim_nul(&f.filename).to_vec()),
        ]);
        ev(w, lttng::STATEDUMP_FD, &p)?;
        n += 1;
    }
    ev(w, lttng::STATEDUMP_END, &empty)?;
    Ok(n + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::EventFormat;
    use crate::ringbuf::build::{record, PageBuilder};
    use crate::ringbuf::Missed;
    use crate::statedump::ThreadState;
    use tracelens_ctf::{Item, Trace};

    const COMMON: &str = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;
";

    fn fmt(system: &str, name: &str, id: u16, fields: &[(&str, usize, usize, bool)]) -> EventFormat {
        let mut t = format!("name: {name}\nID: {id}\nformat:\n{COMMON}\n");
        for (decl, off, size, signed) in fields {
            t += &format!("\tfield:{decl};\toffset:{off};\tsize:{size};\tsigned:{};\n", *signed as u8);
        }
        t += "\nprint fmt: \"\"\n";
        EventFormat::parse(system, &t, Path::new(name)).unwrap()
    }

    fn formats() -> Vec<EventFormat> {
        vec![
            fmt(
                "sched",
                "sched_switch",
                10,
                &[
                    ("char prev_comm[16]", 8, 16, false),
                    ("pid_t prev_pid", 24, 4, true),
                    ("int prev_prio", 28, 4, true),
                    ("long prev_state", 32, 8, true),
                    ("char next_comm[16]", 40, 16, false),
                    ("pid_t next_pid", 56, 4, true),
                    ("int next_prio", 60, 4, true),
                ],
            ),
            fmt("syscalls", "sys_enter_read", 20, &[("int __syscall_nr", 8, 4, true), ("unsigned int fd", 16, 8, false), ("char * buf", 24, 8, false), ("size_t count", 32, 8, false)]),
            fmt("syscalls", "sys_exit_read", 21, &[("int __syscall_nr", 8, 4, true), ("long ret", 16, 8, true)]),
            fmt("syscalls", "sys_enter_write", 22, &[("int __syscall_nr", 8, 4, true), ("unsigned int fd", 16, 8, false), ("const char * buf", 24, 8, false), ("size_t count", 32, 8, false)]),
            fmt("syscalls", "sys_enter_openat", 24, &[("int __syscall_nr", 8, 4, true), ("int dfd", 16, 8, false), ("const char * filename", 24, 8, false), ("int flags", 32, 8, false), ("umode_t mode", 40, 8, false)]),
            fmt("task", "task_newtask", 30, &[("pid_t pid", 8, 4, true), ("char comm[16]", 12, 16, false), ("u64 clone_flags", 32, 8, false), ("short oom_score_adj", 40, 2, true)]),
            fmt("irq", "irq_handler_entry", 40, &[("int irq", 8, 4, true), ("__data_loc char[] name", 12, 4, false)]),
            fmt("kmem", "mm_page_alloc", 50, &[("unsigned long pfn", 8, 8, false), ("unsigned int order", 16, 4, false), ("char tag[6]", 20, 6, false)]),
        ]
    }

    fn comm(s: &str) -> [u8; 16] {
        comm16(s.as_bytes())
    }

    fn switch(prev: (&str, i32), next: (&str, i32)) -> Vec<u8> {
        let mut p = vec![0u8; 56];
        p[0..16].copy_from_slice(&comm(prev.0));
        p[16..20].copy_from_slice(&prev.1.to_ne_bytes());
        p[20..24].copy_from_slice(&120i32.to_ne_bytes());
        p[24..32].copy_from_slice(&1i64.to_ne_bytes());
        p[32..48].copy_from_slice(&comm(next.0));
        p[48..52].copy_from_slice(&next.1.to_ne_bytes());
        p[52..56].copy_from_slice(&100i32.to_ne_bytes());
        record(10, 0, prev.1, &p)
    }

    fn args(nr: i32, vals: &[u64]) -> Vec<u8> {
        let mut p = vec![0u8; 8];
        p[0..4].copy_from_slice(&nr.to_ne_bytes());
        for v in vals {
            p.extend_from_slice(&v.to_ne_bytes());
        }
        p
    }

    fn spool_of(pages: Vec<spool_part::Part>) -> Vec<u8> {
        let mut out = Vec::new();
        for p in pages {
            match p {
                spool_part::Part::Page(b) => spool::write_page(&mut out, &b).unwrap(),
                spool_part::Part::Lost(n) => spool::write_lost(&mut out, n).unwrap(),
            }
        }
        out
    }

    mod spool_part {
        #[derive(Clone)]
        pub enum Part {
            Page(Vec<u8>),
            Lost(u64),
        }
    }
    use spool_part::Part;

    #[test]
    fn converts_pages_to_lttng_ctf() {
        let l = PageLayout::default();
        const OWN: i32 = 999;
        // CPU 0: thread 100 makes thread 102 (CLONE_THREAD), switches to it; 102 reads;
        // the recorder's own thread writes (dropped) and takes an interrupt (kept).
        let mut p0 = PageBuilder::new(l, 1_000);
        let mut nt = vec![0u8; 34];
        nt[0..4].copy_from_slice(&102i32.to_ne_bytes());
        nt[4..20].copy_from_slice(&comm("main"));
        nt[24..32].copy_from_slice(&(0x0001_0000u64 | 0x100).to_ne_bytes());
        p0.event(1_010, &record(30, 0, 100, &nt), false);
        p0.event(1_020, &switch(("main", 100), ("main", 102)), false);
        p0.event(1_030, &record(20, 0, 102, &args(0, &[3, 0xdead_0000, 64])), false);
        p0.event(1_070, &record(22, 0, OWN, &args(1, &[1, 0x10, 1])), false);
        let mut irq = vec![0u8; 8];
        irq[0..4].copy_from_slice(&7i32.to_ne_bytes());
        irq[4..8].copy_from_slice(&(((4u32) << 16) | 16).to_ne_bytes());
        irq.extend_from_slice(b"eth0");
        p0.event(1_080, &record(40, 0x08, OWN, &irq), false);
        let page0 = p0.finish(Missed::None, true);
        // CPU 1: 100 writes; 102 (known as a thread of 100 by then) returns from its read;
        // 12 events lost; a thread unknown to everyone opens a file; an event of another
        // kind.
        let mut p1 = PageBuilder::new(l, 1_000);
        p1.event(1_040, &record(22, 0, 100, &args(1, &[1, 0xbeef, 3])), false);
        // 102 migrated: its read returns on CPU 1.
        p1.event(1_045, &record(21, 0, 102, &args(0, &[5])), false);
        let page1 = p1.finish(Missed::None, false);
        let mut p2 = PageBuilder::new(l, 1_050);
        p2.event(1_055, &record(24, 0, 555, &args(257, &[(-100i64) as u64, 0x1234, 0o100, 0o644])), false);
        let mut pa = Vec::new();
        pa.extend_from_slice(&42u64.to_ne_bytes());
        pa.extend_from_slice(&3u32.to_ne_bytes());
        pa.extend_from_slice(b"hi\0\0\0\0");
        p2.event(1_056, &record(50, 0, 555, &pa), true);
        let page2 = p2.finish(Missed::None, true);

        let schema = Schema::build(&formats());
        let mut counts = HashMap::new();
        counts.insert(22u16, 100u64); // the most frequent: syscall_entry_write gets id 0
        let input = ConvertInput {
            layout: l,
            schema,
            statedump: Statedump {
                threads: vec![ThreadState { tid: 100, pid: 100, ppid: 1, name: b"main".to_vec(), kind: 0, status: 5, cpu: 0 }],
                fds: vec![crate::statedump::FdState { pid: 100, fd: 0, flags: 0o2, fmode: 3, filename: b"/dev/pts/0".to_vec() }],
            },
            statedump_ts: 900,
            own_tids: HashSet::from([OWN]),
            recorder: (OWN, OWN),
            info: TraceInfo { uuid: [7; 16], hostname: "box".into(), kernel_release: "6.1".into(), kernel_version: "#1".into(), clock_offset_ns: 1_700_000_000_000_000_000, cpus: 2 },
            counts,
            fallback: HashMap::new(),
            packet_size: 4096,
            ns_inum: 4026531836,
        };
        let dir = std::env::temp_dir().join(format!("tracelens-record-convert-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let s0 = spool_of(vec![Part::Page(page0)]);
        let s1 = spool_of(vec![Part::Page(page1), Part::Lost(12), Part::Page(page2)]);
        let cpus = vec![CpuInput { cpu: 0, spool: &s0[..] }, CpuInput { cpu: 1, spool: &s1[..] }];
        let s = convert(&input, cpus, &dir).unwrap();
        assert_eq!(s.first_problem, None);
        assert_eq!(s.own_dropped, 1);
        assert_eq!(s.discarded, 12);
        // 4 statedump events + switch, read entry, irq (cpu 0) + write, read exit, openat,
        // page alloc (cpu 1).
        assert_eq!(s.events, 4 + 3 + 4);

        let trace = Trace::open(&dir).unwrap();
        // The counted class first, then the hot ones (sched_switch, irq_handler_entry,
        // syscall_entry_read...), then the state dump and the rest in the schema's order.
        let id_of = |name: &str| trace.class.stream(0).unwrap().events.iter().find(|e| e.name == name).map(|e| e.id);
        assert_eq!(id_of("syscall_entry_write"), Some(0));
        assert_eq!(id_of("sched_switch"), Some(1));
        assert_eq!(id_of("lttng_statedump_start"), Some(6));
        let mut seen = Vec::new();
        for i in 0..trace.streams.len() {
            let mut c = trace.cursor(i);
            while let Some(item) = c.advance().unwrap() {
                if item != Item::Event {
                    continue;
                }
                let ev = c.event().unwrap();
                let ctx = |n: &str| ev.common_context.get(n).unwrap();
                let p = |n: &str| ev.payload.get(n).unwrap_or_else(|| panic!("{} has no {n}", ev.name()));
                let line = match ev.name() {
                    "sched_switch" => format!("switch {} {} {}", p("prev_tid").as_i64().unwrap(), p("next_tid").as_i64().unwrap(), p("next_prio").as_i64().unwrap()),
                    "syscall_entry_read" => format!("read {} {:x}", p("fd").as_i64().unwrap(), p("buf").as_u64().unwrap()),
                    "syscall_exit_read" => format!("read-exit {} {:x}", p("ret").as_i64().unwrap(), p("buf").as_u64().unwrap()),
                    "syscall_entry_write" => format!("write {} {}", p("fd").as_i64().unwrap(), p("count").as_i64().unwrap()),
                    "syscall_entry_openat" => format!("openat {} {:?} {:o}", p("dfd").as_i64().unwrap(), p("filename").as_str().unwrap(), p("mode").as_i64().unwrap()),
                    "irq_handler_entry" => format!("irq {} {}", p("irq").as_i64().unwrap(), p("name").as_str().unwrap()),
                    "mm_page_alloc" => format!("page {} {}", p("pfn").as_u64().unwrap(), p("tag").as_str().unwrap()),
                    n => n.to_string(),
                };
                seen.push(format!(
                    "{} cpu{} {} [{} {} {}]",
                    ev.ns.unwrap() - 1_700_000_000_000_000_000,
                    i,
                    line,
                    ctx("tid").as_i64().unwrap(),
                    ctx("pid").as_i64().unwrap(),
                    ctx("procname").as_str().unwrap()
                ));
            }
        }
        let want = [
            "900 cpu0 lttng_statedump_start [999 999 ]",
            "900 cpu0 lttng_statedump_process_state [999 999 ]",
            "900 cpu0 lttng_statedump_file_descriptor [999 999 ]",
            "900 cpu0 lttng_statedump_end [999 999 ]",
            "1020 cpu0 switch 100 102 0 [100 100 main]",
            "1030 cpu0 read 3 dead0000 [102 100 main]",
            "1080 cpu0 irq 7 eth0 [999 999 ]",
            "1040 cpu1 write 1 3 [100 100 main]",
            "1045 cpu1 read-exit 5 dead0000 [102 100 main]",
            "1055 cpu1 openat -100 \"\" 644 [555 555 ]",
            "1056 cpu1 page 42 hi [555 555 ]",
        ];
        assert_eq!(seen, want);
        // babeltrace2, when installed, reads the same events, and the discarded ones.
        if let Ok(o) = std::process::Command::new("babeltrace2").arg(&dir).output() {
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            assert_eq!(o.stdout.iter().filter(|&&b| b == b'\n').count(), want.len());
            assert!(String::from_utf8_lossy(&o.stderr).contains("discarded 12 events"), "{}", String::from_utf8_lossy(&o.stderr));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn small_input(formats: &[EventFormat]) -> ConvertInput {
        ConvertInput {
            layout: PageLayout::default(),
            schema: Schema::build(formats),
            statedump: Statedump::default(),
            statedump_ts: 900,
            own_tids: HashSet::new(),
            recorder: (999, 999),
            info: TraceInfo { uuid: [1; 16], hostname: "box".into(), kernel_release: "6.1".into(), kernel_version: "#1".into(), clock_offset_ns: 0, cpus: 1 },
            counts: HashMap::new(),
            fallback: HashMap::new(),
            packet_size: 4096,
            ns_inum: 0,
        }
    }

    /// What each stream of the trace in `dir` holds, in order: `NS NAME` for an event,
    /// `discarded N` for discarded events.
    fn read_back(dir: &Path) -> Vec<Vec<String>> {
        let trace = Trace::open(dir).unwrap();
        (0..trace.streams.len())
            .map(|i| {
                let mut c = trace.cursor(i);
                let mut out = Vec::new();
                while let Some(item) = c.advance().unwrap() {
                    match item {
                        Item::Event => {
                            let ev = c.event().unwrap();
                            out.push(format!("{} {}", ev.ns.unwrap(), ev.name()));
                        }
                        Item::DiscardedEvents { count, .. } => out.push(format!("discarded {count}")),
                        _ => {}
                    }
                }
                out
            })
            .collect()
    }

    #[test]
    fn unrecorded_switches_and_missed_pages_are_discarded_events() {
        let mut f = formats();
        f.push(fmt("sched", "sched_process_exec", 60, &[("__data_loc char[] filename", 8, 4, false), ("pid_t pid", 12, 4, true), ("pid_t old_pid", 16, 4, true)]));
        let input = small_input(&f);
        let l = PageLayout::default();
        // CPU 0: 1 -> 2; 2 -> 3 is not recorded (a hidden thread 2); 3 -> 4: one discarded
        // event before it. Then 4 -> 5 and thread 5 (not the leader) runs execve and
        // becomes 7: 7 -> 1 is no gap. Then 1 -> 8; events lost (a stats count); 9 -> 1
        // is explained by them: no more discarded.
        let mut p = PageBuilder::new(l, 1_000);
        p.event(1_010, &switch(("a", 1), ("b", 2)), false);
        p.event(1_020, &switch(("c", 3), ("d", 4)), false);
        p.event(1_030, &switch(("d", 4), ("e", 5)), false);
        let mut ex = vec![0u8; 12];
        ex[0..4].copy_from_slice(&((4u32 << 16) | 12).to_ne_bytes());
        ex[4..8].copy_from_slice(&7i32.to_ne_bytes());
        ex[8..12].copy_from_slice(&5i32.to_ne_bytes());
        ex.extend_from_slice(b"/x\0\0");
        p.event(1_040, &record(60, 0, 7, &ex), false);
        p.event(1_050, &switch(("e", 7), ("a", 1)), false);
        p.event(1_060, &switch(("a", 1), ("h", 8)), false);
        let page_a = p.finish(Missed::None, true);
        let mut p = PageBuilder::new(l, 1_065);
        p.event(1_070, &switch(("i", 9), ("a", 1)), false);
        let page_b = p.finish(Missed::None, true);
        // A page whose header says 5 events were lost before it; then 1 -> 2 is explained.
        let mut p = PageBuilder::new(l, 1_075);
        p.event(1_080, &switch(("b", 2), ("c", 3)), false);
        p.event(1_090, &switch(("c", 3), ("a", 1)), false);
        let page_c = p.finish(Missed::Count(5), true);
        let spool = spool_of(vec![Part::Page(page_a), Part::Lost(3), Part::Page(page_b), Part::Page(page_c)]);
        let dir = std::env::temp_dir().join(format!("tracelens-record-gaps-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let s = convert(&input, vec![CpuInput { cpu: 0, spool: &spool[..] }], &dir).unwrap();
        assert_eq!(s.first_problem, None);
        assert_eq!((s.unrecorded_switches, s.unrecorded_switch_tids.clone()), (1, vec![2]));
        assert_eq!(s.discarded, 1 + 3 + 5);
        let streams = read_back(&dir);
        let evs: Vec<&str> = streams[0].iter().map(String::as_str).filter(|e| !e.contains("statedump")).collect();
        assert_eq!(
            evs,
            [
                "1010 sched_switch",
                "discarded 1",
                "1020 sched_switch",
                "1030 sched_switch",
                "1040 sched_process_exec",
                "1050 sched_switch",
                "1060 sched_switch",
                "discarded 3",
                "1070 sched_switch",
                "discarded 5",
                "1080 sched_switch",
                "1090 sched_switch",
            ]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn ids_by_sample_count_then_hot_list_then_schema_order() {
        let schema = Schema::build(&formats());
        let name_ids = |counts: &HashMap<u16, u64>| {
            let ids = class_ids(&schema, counts);
            let mut v: Vec<(u64, &str)> = ids.iter().zip(&schema.classes).map(|(&id, c)| (id, c.name.as_str())).collect();
            v.sort();
            v.into_iter().map(|(_, n)| n).collect::<Vec<_>>()
        };
        // Nothing counted: the hot classes the schema has, in HOT_CLASSES order, then the
        // state dump and the rest in the schema's order.
        assert_eq!(
            name_ids(&HashMap::new()),
            [
                "sched_switch",
                "irq_handler_entry",
                "syscall_entry_read",
                "syscall_exit_read",
                "syscall_entry_write",
                "syscall_entry_openat",
                "lttng_statedump_start",
                "lttng_statedump_end",
                "lttng_statedump_process_state",
                "lttng_statedump_file_descriptor",
                "mm_page_alloc",
            ]
        );
        // Counted classes first, most frequent first (ties: hot order); task_newtask (30)
        // is no class; unknown types count for nothing.
        let counts = HashMap::from([(50u16, 7u64), (22, 100), (10, 7), (30, 1000), (999, 5000)]);
        assert_eq!(
            name_ids(&counts),
            [
                "syscall_entry_write",
                "sched_switch",
                "mm_page_alloc",
                "irq_handler_entry",
                "syscall_entry_read",
                "syscall_exit_read",
                "syscall_entry_openat",
                "lttng_statedump_start",
                "lttng_statedump_end",
                "lttng_statedump_process_state",
                "lttng_statedump_file_descriptor",
            ]
        );
        // Ids are 0..n, each once.
        let mut ids = class_ids(&schema, &counts);
        ids.sort_unstable();
        assert_eq!(ids, (0..schema.classes.len() as u64).collect::<Vec<_>>());
    }

    #[test]
    fn hot_classes_fit_the_compact_header() {
        assert!(HOT_CLASSES.len() <= 31, "only ids 0 to 30 have the compact header");
        let unique: HashSet<&str> = HOT_CLASSES.iter().copied().collect();
        assert_eq!(unique.len(), HOT_CLASSES.len());
        let names: HashSet<&str> = lttng::SPECS.iter().map(|s| s.lttng).collect();
        for h in HOT_CLASSES {
            assert!(names.contains(h) || h.starts_with("syscall_entry_") || h.starts_with("syscall_exit_"), "{h} is no class the schema makes");
        }
    }

    /// A spool in memory, readable up to `limit` records (what the recorder has published).
    struct Fed {
        parts: Vec<Part>,
        next: usize,
        limit: usize,
    }

    impl Records for Fed {
        fn next_record(&mut self, page: &mut Vec<u8>) -> std::io::Result<Option<spool::Item>> {
            if self.next >= self.limit.min(self.parts.len()) {
                return Ok(None);
            }
            self.next += 1;
            Ok(Some(match &self.parts[self.next - 1] {
                Part::Page(b) => {
                    page.clear();
                    page.extend_from_slice(b);
                    spool::Item::Page
                }
                Part::Lost(n) => spool::Item::Lost(*n),
            }))
        }
    }

    /// What a merge released: (source, time, event number) and, per source, events (`E n`)
    /// and lost counts (`L n`) in the order they came.
    #[derive(Default)]
    struct Log {
        events: Vec<(usize, u64, i32)>,
        per_source: HashMap<usize, Vec<String>>,
    }

    impl Sink for Log {
        fn lost(&mut self, k: usize, count: u64) -> Result<()> {
            self.per_source.entry(k).or_default().push(format!("L {count}"));
            Ok(())
        }

        fn event(&mut self, k: usize, ts: u64, rec: &[u8]) -> Result<()> {
            let n = common_pid(rec);
            self.events.push((k, ts, n));
            self.per_source.entry(k).or_default().push(format!("E {n}"));
            Ok(())
        }
    }

    /// One CPU's spool: events at the given times (ascending), numbered `base + i`, in pages
    /// of the given sizes, with lost counts after some pages.
    fn cpu_spool(times: &[u64], base: i32, pages: &[(usize, u64)]) -> (Vec<Part>, Vec<u64>, Vec<String>) {
        let l = PageLayout::default();
        let (mut parts, mut first_ts, mut expect) = (Vec::new(), Vec::new(), Vec::new());
        let mut pending = 0;
        let mut i = 0;
        for &(size, lost) in pages.iter().cycle() {
            if i >= times.len() {
                break;
            }
            let end = (i + size.max(1)).min(times.len());
            let mut p = PageBuilder::new(l, times[i]);
            for (j, &t) in times.iter().enumerate().take(end).skip(i) {
                p.event(t, &record(1, 0, base + j as i32, &[0; 4]), false);
                if pending > 0 {
                    expect.push(format!("L {pending}"));
                    pending = 0;
                }
                expect.push(format!("E {}", base + j as i32));
            }
            parts.push(Part::Page(p.finish(Missed::None, true)));
            first_ts.push(times[i]);
            if lost > 0 {
                parts.push(Part::Lost(lost));
                first_ts.push(times.get(end).copied().unwrap_or(u64::MAX));
                pending += lost;
            }
            i = end;
        }
        if pending > 0 {
            expect.push(format!("L {pending}"));
        }
        (parts, first_ts, expect)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]

        /// Events come out in time order, never past the watermark of the moment, all of
        /// them by the end, each CPU's in its own order with its lost counts in place,
        /// whatever the order in which the CPUs' pages arrive.
        #[test]
        fn watermark_merge_releases_in_time_order(
            cpus in proptest::collection::vec(
                (proptest::collection::vec(0u64..40, 0..60), proptest::collection::vec((1usize..8, proptest::prop_oneof![3 => proptest::strategy::Just(0u64), 1 => 1u64..5]), 1..6)),
                1..5,
            ),
            steps in proptest::collection::vec((0usize..4, 0usize..4, 0u64..100), 0..40),
        ) {
            let mut spools = Vec::new();
            let mut all = 0;
            for (c, (gaps, pages)) in cpus.iter().enumerate() {
                let mut t = 1_000;
                let times: Vec<u64> = gaps.iter().map(|g| { t += g; t }).collect();
                all += times.len();
                spools.push(cpu_spool(&times, c as i32 * 1000, pages));
            }
            let mut merge = Merge::new(
                PageLayout::default(),
                spools.iter().enumerate().map(|(c, s)| (c as u32, Fed { parts: s.0.clone(), next: 0, limit: 0 })).collect(),
                0,
            );
            let mut log = Log::default();
            let mut known = vec![0u64; spools.len()];
            let mut limits = vec![0usize; spools.len()];
            let mut last = 0;
            for &(c, n, slack) in &steps {
                let c = c % spools.len();
                limits[c] = (limits[c] + n).min(spools[c].0.len());
                merge.records_mut(c).limit = limits[c];
                // The CPU's known time: up to the first event not published yet.
                let first_unpublished = spools[c].1.get(limits[c]).copied().unwrap_or(u64::MAX);
                let last_published = if limits[c] == 0 { 0 } else { spools[c].1[limits[c] - 1] };
                known[c] = known[c].max(first_unpublished.min(last_published.saturating_add(slack)));
                let watermark = known.iter().copied().min().unwrap_or(0);
                let before = log.events.len();
                merge.release(watermark, u64::MAX, &mut log).unwrap();
                for &(_, ts, _) in &log.events[before..] {
                    proptest::prop_assert!(ts <= watermark, "{ts} released past the watermark {watermark}");
                    proptest::prop_assert!(ts >= last, "{ts} after {last}");
                    last = ts;
                }
                // Everything published at or before the watermark is out.
                let released: HashSet<i32> = log.events.iter().map(|e| e.2).collect();
                for (k, s) in spools.iter().enumerate() {
                    for part in &s.0[..limits[k]] {
                        if let Part::Page(p) = part {
                            let (_, evs) = ringbuf::events(p, &PageLayout::default()).unwrap();
                            for e in evs.flatten() {
                                proptest::prop_assert!(e.ts > watermark || released.contains(&common_pid(e.data)), "an event at {} is held back from the watermark {watermark}", e.ts);
                            }
                        }
                    }
                }
            }
            // The end: everything published, the watermark lifted.
            for (c, s) in spools.iter().enumerate() {
                merge.records_mut(c).limit = s.0.len();
            }
            merge.release(u64::MAX, u64::MAX, &mut log).unwrap();
            merge.finish(&mut log).unwrap();
            proptest::prop_assert_eq!(log.events.len(), all);
            for w in log.events.windows(2) {
                proptest::prop_assert!(w[0].1 <= w[1].1);
            }
            for (c, s) in spools.iter().enumerate() {
                let got = log.per_source.remove(&c).unwrap_or_default();
                proptest::prop_assert_eq!(&got, &s.2);
            }
        }
    }

    #[test]
    fn released_in_steps_or_at_once_the_trace_is_the_same() {
        let l = PageLayout::default();
        let input = small_input(&formats());
        let mut p = PageBuilder::new(l, 1_000);
        p.event(1_010, &switch(("a", 1), ("b", 2)), false);
        p.event(1_030, &record(20, 0, 2, &args(0, &[3, 0xdead_0000, 64])), false);
        let a0 = p.finish(Missed::None, true);
        let mut p = PageBuilder::new(l, 1_040);
        p.event(1_050, &record(21, 0, 2, &args(0, &[5])), false);
        p.event(1_060, &switch(("b", 2), ("a", 1)), false);
        let a1 = p.finish(Missed::None, true);
        let mut p = PageBuilder::new(l, 1_000);
        p.event(1_020, &record(22, 0, 7, &args(1, &[1, 0x10, 1])), false);
        p.event(1_045, &switch(("c", 7), ("d", 8)), false);
        let b0 = p.finish(Missed::None, true);
        let cpu0 = vec![Part::Page(a0.clone()), Part::Lost(4), Part::Page(a1.clone())];
        let cpu1 = vec![Part::Page(b0.clone())];

        let at_once = std::env::temp_dir().join(format!("tracelens-record-at-once-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&at_once);
        let (s0, s1) = (spool_of(vec![Part::Page(a0), Part::Lost(4), Part::Page(a1)]), spool_of(vec![Part::Page(b0)]));
        let whole = convert(&input, vec![CpuInput { cpu: 0, spool: &s0[..] }, CpuInput { cpu: 1, spool: &s1[..] }], &at_once).unwrap();

        let stepped = std::env::temp_dir().join(format!("tracelens-record-stepped-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&stepped);
        let mut conv = Converter::create(&input, &[0, 1], &stepped).unwrap();
        let mut merge = Merge::new(l, vec![(0, Fed { parts: cpu0, next: 0, limit: 0 }), (1, Fed { parts: cpu1, next: 0, limit: 0 })], input.statedump_ts);
        // (CPU 0 records, CPU 1 records, watermark, events then out in all)
        for (l0, l1, w, out) in [(1, 0, 1_015, 1), (1, 1, 1_015, 1), (1, 1, 1_035, 3), (3, 1, 1_055, 5), (3, 1, u64::MAX, 6)] {
            merge.records_mut(0).limit = l0;
            merge.records_mut(1).limit = l1;
            merge.release(w, u64::MAX, &mut conv).unwrap();
            assert_eq!(conv.events(), 2 + out, "after the watermark {w}");
        }
        let read = merge.finish(&mut conv).unwrap();
        let stepwise = conv.finish(read).unwrap();
        assert_eq!(stepwise, whole);
        assert_eq!(whole.discarded, 4);
        assert_eq!(read_back(&stepped), read_back(&at_once));
        let _ = std::fs::remove_dir_all(&at_once);
        let _ = std::fs::remove_dir_all(&stepped);
    }

    #[test]
    fn late_events_are_kept_in_their_cpus_order_and_counted() {
        let l = PageLayout::default();
        let page = |ts: &[(u64, i32)]| {
            let mut p = PageBuilder::new(l, ts[0].0);
            for &(t, n) in ts {
                p.event(t, &record(1, 0, n, &[0; 4]), false);
            }
            Part::Page(p.finish(Missed::None, true))
        };
        let cpu0 = vec![page(&[(1_010, 1), (1_030, 2)])];
        // CPU 1's event at 1_020 (and one at 1_015 behind it in its buffer, on the next
        // page) show up only after the watermark 1_030 was released.
        let cpu1 = vec![page(&[(1_005, 10)]), page(&[(1_020, 11)]), page(&[(1_015, 12), (1_040, 13)])];
        let mut merge = Merge::new(l, vec![(0, Fed { parts: cpu0, next: 0, limit: 1 }), (1, Fed { parts: cpu1, next: 0, limit: 1 })], 0);
        let mut log = Log::default();
        merge.release(1_030, u64::MAX, &mut log).unwrap();
        merge.records_mut(1).limit = 3;
        merge.release(u64::MAX, u64::MAX, &mut log).unwrap();
        let st = merge.finish(&mut log).unwrap();
        let got: Vec<(u64, i32)> = log.events.iter().map(|e| (e.1, e.2)).collect();
        assert_eq!(got, [(1_005, 10), (1_010, 1), (1_030, 2), (1_020, 11), (1_020, 12), (1_040, 13)]);
        assert_eq!(st.late, 2);
    }
}
