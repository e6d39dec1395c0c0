//! From spooled ring-buffer pages to CTF: the CPUs' events are merged in time order (so that
//! the thread tables — names, thread-group ids, pending system calls — are exact at each
//! event), converted with the [`Schema`], and written each into its CPU's stream
//! (`channel0_N`), after the state dump.
//!
//! # Converting while recording
//!
//! The CPUs' events are released in time order up to a watermark by the [`Merge`]
//! ([`merge`](mod@merge): how the watermark is known, what happens to late events);
//! [`Converter`] turns the released events into CTF as they come, so the conversion runs
//! while recording and the trace is finished almost as soon as the recording ends.
//! [`convert`] does the same at once for spools already complete.
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
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufWriter};
use std::path::Path;

use tracelens_ctf::lttng::{common_context_value, set_common_context};
use tracelens_ctf::write::{EventValues, OwnedValue, StreamOptions, StreamWriter, TraceWriter};

use crate::error::Result;
use crate::format::PageLayout;
use crate::lttng::{self, ClassDef, Conv, RSrc, Role, Schema, Ty};
use crate::metadata::{trace_class, TraceInfo};
use crate::ringbuf::{common_flags, common_pid, common_type};
use crate::spool;
use crate::statedump::Statedump;

pub mod merge;
mod threads;

pub use merge::{Merge, MergeStats, Sink};
use threads::{comm16, Task, Tables, TidMap};

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
        RSrc::Field(f) if ty.is_text() => ty.set_text(slot, if f.is_text() { f.bytes(rec) } else { b"" }),
        RSrc::Field(f) => *slot = ty.int_value(f.int(rec)),
        RSrc::Prio(f) => *slot = ty.int_value(f.int(rec) - 100),
        RSrc::Tgid(f) => *slot = ty.int_value(cx.tables.tgid(f.int(rec) as i32) as i64),
        RSrc::Tid => *slot = ty.int_value(cx.tid as i64),
        RSrc::NsInum => *slot = ty.int_value(cx.tables.ns_inum as i64),
        RSrc::Rwbs(f) => *slot = ty.int_value(lttng::rwbs_mask(f.bytes(rec)) as i64),
        RSrc::Vtids(f) => match ty {
            Ty::SeqI32 => Ty::set_seq(slot, &[f.int(rec) as i32 as i64]),
            _ => *slot = OwnedValue::U(1),
        },
        RSrc::EntryArg(k) => {
            let v = match cx.tables.syscalls.get(&cx.tid) {
                Some((nr, args)) if Some(*nr) == cx.exit_of => args.get(*k).copied().unwrap_or(0),
                _ => 0,
            };
            *slot = ty.int_value(v as i64);
        }
        RSrc::Zero => match ty {
            Ty::SeqI32 => Ty::set_seq(slot, &[]),
            t if t.is_text() => t.set_text(slot, b""),
            t => *slot = t.int_value(0),
        },
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
            w.set_packet_context(tracelens_ctf::lttng::CPU_ID, OwnedValue::U(cpu as u64))?;
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
            payloads: schema.classes.iter().map(ClassDef::blank_payload).collect(),
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
                    set_common_context(&mut self.ctx, tid, tables.tgid(tid), &tables.comm(tid, cpu));
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
    let ctx = common_context_value(tid, pid, &tables.comm(tid, 0));
    let empty = OwnedValue::Struct(Vec::new());
    let ev = |w: &mut StreamWriter<W>, class: usize, p: &OwnedValue| {
        w.event(ids[class], ts, EventValues { header: None, common_context: Some(&ctx), context: None, payload: Some(p) })
    };
    let text = |ty: Ty, b: &[u8]| {
        let mut v = OwnedValue::Bytes(Vec::new());
        ty.set_text(&mut v, b);
        v
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
            text(Ty::Comm, &t.name),
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
            text(Ty::Str, &f.filename),
        ]);
        ev(w, lttng::STATEDUMP_FD, &p)?;
        n += 1;
    }
    ev(w, lttng::STATEDUMP_END, &empty)?;
    Ok(n + 1)
}

#[cfg(test)]
mod tests;
