//! Converting the stack spools to a CTF trace (`OUTPUT/stacks`): one stream per CPU, the
//! kernel trace's LTTng layout and `monotonic` clock (same offset, so the two merge exactly),
//! events named in [`super::events`].

use std::collections::HashMap;
use std::path::Path;

use tracelens_ctf::ir::{EnvValue, TraceClass};
use tracelens_ctf::lttng::{common_context_value, set_env, stacks};
use tracelens_ctf::write::{EventValues, OwnedValue, StreamOptions, TraceWriter};
use tracelens_ctf::MappedFile;

use super::events::*;
use super::maps::{hex, BuildIds};
use super::perf;
use super::records;
use super::sampler::{EvKind, Sampler};
use crate::error::{Error, Result};
use crate::metadata::TraceInfo;

/// What the stack trace holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StacksSummary {
    /// The trace directory (`OUTPUT/stacks`).
    pub trace_dir: std::path::PathBuf,
    /// Timer (on-CPU) samples written.
    pub on_cpu: u64,
    /// Samples at a context switch out of a thread that blocked (off-CPU).
    pub off_cpu: u64,
    /// Samples at a context switch out of a thread that was preempted.
    pub preempted: u64,
    /// Samples the kernel could not write (buffers full).
    pub lost: u64,
    /// Memory-map events written (initial maps and new executable mappings).
    pub mmaps: u64,
    /// Samples without user registers (kernel threads, exiting tasks), left out.
    pub no_user: u64,
    /// Times the kernel throttled sampling (too many samples per second for
    /// `kernel.perf_event_max_sample_rate`, which it may lower by itself).
    pub throttled: u64,
    /// Bytes of the trace's stream files.
    pub bytes: u64,
}

/// The trace class: the kernel recording's layout, with our events.
pub(crate) fn stacks_class(info: &TraceInfo) -> TraceClass {
    let mut t = info.kernel_trace("tracelens record --stacks", stacks::event_classes());
    set_env(&mut t.env, "domain", EnvValue::Str("tracelens-stacks".into()));
    set_env(&mut t.env, "tracer_name", EnvValue::Str("tracelens".into()));
    t.class()
}

/// Thread names over time, from the initial tasks, COMM and FORK records.
#[derive(Default)]
struct Comms {
    by_tid: HashMap<i32, Vec<(u64, Vec<u8>)>>,
}

impl Comms {
    fn at(&self, tid: i32, time: u64) -> &[u8] {
        let Some(v) = self.by_tid.get(&tid) else { return b"" };
        let k = v.partition_point(|(t, _)| *t <= time);
        match k {
            0 => &v[0].1,
            k => &v[k - 1].1,
        }
    }

    fn set(&mut self, tid: i32, time: u64, comm: Vec<u8>) {
        self.by_tid.entry(tid).or_default().push((time, comm));
    }
}

/// A string value without NUL bytes.
fn text(b: &[u8]) -> OwnedValue {
    let b: Vec<u8> = b.iter().copied().filter(|&c| c != 0).collect();
    match String::from_utf8(b) {
        Ok(s) => OwnedValue::Str(s),
        Err(e) => OwnedValue::Bytes(e.into_bytes()),
    }
}

/// One spooled record: (time, spool index, offset, length).
type Entry = (u64, usize, usize, usize);

/// Writes the sampler's spools to `dir` as a CTF trace.
pub(crate) fn write(sampler: &Sampler, dir: &Path, info: &TraceInfo, drop_pid: Option<i32>) -> Result<StacksSummary> {
    let result = write_inner(sampler, dir, info, drop_pid);
    if result.is_err() {
        let _ = std::fs::remove_dir_all(dir);
    }
    result
}

fn write_inner(sampler: &Sampler, dir: &Path, info: &TraceInfo, drop_pid: Option<i32>) -> Result<StacksSummary> {
    let nregs = sampler.mask.count_ones() as usize;
    let kinds = &sampler.kinds;
    // The spools, mapped (they are ours and no longer written: the reader thread has ended).
    let mut spools = Vec::with_capacity(sampler.spools.len());
    for (cpu, path) in &sampler.spools {
        spools.push((*cpu, MappedFile::open(path)?));
    }
    let data = |k: usize| -> &[u8] { spools[k].1.bytes() };

    // Index every record, and replay thread names in time order.
    let mut index: Vec<Vec<Entry>> = Vec::with_capacity(spools.len());
    let mut names: Vec<(u64, i32, Option<i32>, Vec<u8>)> = Vec::new(); // (time, tid, parent tid, comm)
    for k in 0..spools.len() {
        let d = data(k);
        let mut entries: Vec<Entry> = Vec::new();
        let mut at = 0usize;
        while at + 8 <= d.len() {
            let Some((ty, misc, size)) = records::header(&d[at..]) else { break };
            if size < 8 || at + size > d.len() {
                break;
            }
            let rec = &d[at..at + size];
            let time = match ty {
                perf::RECORD_SAMPLE => records::u64_at(rec, 24).unwrap_or(0),
                _ => records::trailer(rec).map(|i| i.time).unwrap_or(0),
            };
            match ty {
                perf::RECORD_COMM => {
                    if let Some((_, tid, comm, _)) = records::comm(rec, misc) {
                        names.push((time, tid, None, comm));
                    }
                }
                perf::RECORD_FORK => {
                    if let Some((_, _, tid, ptid)) = records::task(rec) {
                        names.push((time, tid, Some(ptid), Vec::new()));
                    }
                }
                _ => {}
            }
            entries.push((time, k, at, size));
            at += size;
        }
        entries.sort_by_key(|e| e.0);
        index.push(entries);
    }
    let mut comms = Comms::default();
    for t in &sampler.initial_tasks {
        comms.set(t.tid, 0, t.comm.clone());
    }
    names.sort_by_key(|n| n.0);
    for (time, tid, parent, comm) in names {
        let c = match parent {
            Some(p) => comms.at(p, time).to_vec(),
            None => comm,
        };
        comms.set(tid, time, c);
    }

    let class = stacks_class(info);
    let mut trace = TraceWriter::create(dir, &class)?;
    let opts = StreamOptions { packet_size: 256 * 1024, ..StreamOptions::default() };
    let mut sum = StacksSummary {
        trace_dir: dir.to_path_buf(),
        throttled: sampler.counters.throttled.load(std::sync::atomic::Ordering::Relaxed),
        ..StacksSummary::default()
    };
    let mut build_ids = BuildIds::default();
    let switch_state = sampler.switch.as_ref().and_then(|s| s.prev_state);
    let first_time = index.iter().filter_map(|v| v.first().map(|e| e.0)).min().unwrap_or(sampler.start_ns);
    let initial_ts = sampler.start_ns.min(first_time);

    for (k, entries) in index.iter().enumerate() {
        let cpu = spools[k].0;
        let mut s = trace.stream_with(0, &format!("stacks_{cpu}"), &opts)?;
        s.set_packet_context(tracelens_ctf::lttng::CPU_ID, OwnedValue::U(cpu.into()))?;
        if k == 0 {
            // The processes' names and executable maps when sampling began.
            for t in &sampler.initial_tasks {
                let payload = OwnedValue::structure([text(&t.comm), OwnedValue::U(0)]);
                let cx = common_context_value(t.tid, t.pid, &t.comm);
                s.event(ID_COMM, initial_ts, EventValues::payload(&payload).with_common_context(&cx))?;
            }
            for (pid, maps) in &sampler.initial_maps {
                let comm = comms.at(*pid, initial_ts).to_vec();
                let cx = common_context_value(*pid, *pid, &comm);
                for m in maps {
                    let bid = build_ids.get(&m.path).map(|b| hex(&b)).unwrap_or_default();
                    let payload = OwnedValue::structure([
                        OwnedValue::U(m.start),
                        OwnedValue::U(m.end - m.start),
                        OwnedValue::U(m.pgoff),
                        OwnedValue::U(m.prot.into()),
                        OwnedValue::U(m.maj.into()),
                        OwnedValue::U(m.min.into()),
                        OwnedValue::U(m.ino),
                        OwnedValue::Str(bid),
                        text(&m.path),
                    ]);
                    s.event(ID_MMAP, initial_ts, EventValues::payload(&payload).with_common_context(&cx))?;
                    sum.mmaps += 1;
                }
            }
        }
        let d = data(k);
        let mut last = 0u64;
        for &(time, _, at, size) in entries {
            let rec = &d[at..at + size];
            let Some((ty, misc, _)) = records::header(rec) else { continue };
            let time = time.max(last);
            last = time;
            match ty {
                perf::RECORD_SAMPLE => {
                    let Some(kind) = records::u64_at(rec, 8).and_then(|id| kinds.get(&id)).copied() else { continue };
                    let Some(smp) = records::sample(rec, kind == EvKind::Switch, nregs) else { continue };
                    if drop_pid == Some(smp.ids.pid) {
                        continue;
                    }
                    if smp.abi == perf::REGS_ABI_NONE || smp.regs.is_empty() {
                        sum.no_user += 1;
                        continue;
                    }
                    let kv = match kind {
                        EvKind::Clock => {
                            sum.on_cpu += 1;
                            0
                        }
                        EvKind::Switch => {
                            let state = switch_state
                                .and_then(|(o, n)| smp.raw.get(o..o + n))
                                .map(|b| b.iter().rev().fold(0u64, |a, &c| (a << 8) | c as u64))
                                .unwrap_or(1);
                            if state & 0xff == 0 {
                                sum.preempted += 1;
                                2
                            } else {
                                sum.off_cpu += 1;
                                1
                            }
                        }
                    };
                    let regs: Vec<OwnedValue> = smp.regs.chunks_exact(8).map(|c| OwnedValue::U(u64::from_ne_bytes(c.try_into().expect("8 bytes")))).collect();
                    let payload = OwnedValue::structure([
                        OwnedValue::U(kv),
                        OwnedValue::U(smp.abi),
                        OwnedValue::U(sampler.mask),
                        OwnedValue::U(regs.len() as u64),
                        OwnedValue::Array(regs),
                        OwnedValue::U(smp.stack.len() as u64),
                        OwnedValue::Bytes(smp.stack.to_vec()),
                    ]);
                    let cx = common_context_value(smp.ids.tid, smp.ids.pid, comms.at(smp.ids.tid, time));
                    s.event(ID_SAMPLE, time, EventValues::payload(&payload).with_common_context(&cx))?;
                }
                perf::RECORD_MMAP2 => {
                    let Some(m) = records::mmap2(rec, misc) else { continue };
                    if drop_pid == Some(m.pid) {
                        continue;
                    }
                    let bid = if m.build_id.is_empty() { build_ids.get(&m.filename).map(|b| hex(&b)).unwrap_or_default() } else { hex(&m.build_id) };
                    let payload = OwnedValue::structure([
                        OwnedValue::U(m.start),
                        OwnedValue::U(m.len),
                        OwnedValue::U(m.pgoff),
                        OwnedValue::U(m.prot.into()),
                        OwnedValue::U(m.maj.into()),
                        OwnedValue::U(m.min.into()),
                        OwnedValue::U(m.ino),
                        OwnedValue::Str(bid),
                        text(&m.filename),
                    ]);
                    let cx = common_context_value(m.tid, m.pid, comms.at(m.tid, time));
                    s.event(ID_MMAP, time, EventValues::payload(&payload).with_common_context(&cx))?;
                    sum.mmaps += 1;
                }
                perf::RECORD_COMM => {
                    let Some((pid, tid, comm, exec)) = records::comm(rec, misc) else { continue };
                    if drop_pid == Some(pid) {
                        continue;
                    }
                    let payload = OwnedValue::structure([text(&comm), OwnedValue::U(exec.into())]);
                    let cx = common_context_value(tid, pid, &comm);
                    s.event(ID_COMM, time, EventValues::payload(&payload).with_common_context(&cx))?;
                }
                perf::RECORD_FORK | perf::RECORD_EXIT => {
                    let Some((pid, ppid, tid, ptid)) = records::task(rec) else { continue };
                    if drop_pid == Some(pid) {
                        continue;
                    }
                    if ty == perf::RECORD_FORK {
                        let payload = OwnedValue::structure([OwnedValue::I(pid.into()), OwnedValue::I(tid.into()), OwnedValue::I(ppid.into()), OwnedValue::I(ptid.into())]);
                        let cx = common_context_value(ptid, ppid, comms.at(ptid, time));
                        s.event(ID_FORK, time, EventValues::payload(&payload).with_common_context(&cx))?;
                    } else {
                        let payload = OwnedValue::structure([OwnedValue::I(ppid.into())]);
                        let cx = common_context_value(tid, pid, comms.at(tid, time));
                        s.event(ID_EXIT, time, EventValues::payload(&payload).with_common_context(&cx))?;
                    }
                }
                perf::RECORD_LOST | perf::RECORD_LOST_SAMPLES => {
                    let n = records::lost(rec, ty).unwrap_or(0);
                    if n > 0 {
                        sum.lost += n;
                        s.discard(n)?;
                    }
                }
                _ => {}
            }
        }
        let done = s.finish()?;
        sum.bytes += done.bytes;
    }
    if sum.on_cpu + sum.off_cpu + sum.preempted == 0 && sum.mmaps == 0 && spools.is_empty() {
        return Err(Error::Stacks("no stack sampling buffer was open".into()));
    }
    Ok(sum)
}
