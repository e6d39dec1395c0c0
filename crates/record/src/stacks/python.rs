//! Python stacks (`tracelens record --python`): at each stack sample of a CPython process,
//! the sampled thread's Python frames are read from outside (crate `tracelens-pystack`) and
//! written just before the sample, with the sample's time, so that the symbolizer puts them
//! in place of the native evaluation frames of the same sample.
//!
//! The reader thread reads them as soon as the kernel has written the sample (the events
//! wake it at every sample in this mode, and it wakes by itself 1 to 8 ms after the last
//! records where that wake-up comes late): the frames are those of the moment the reader
//! runs, `lag_ns` after the sample. For a thread switched out (off-CPU or preempted) that is
//! the stack it blocked in, as long as it has not run since: the sample's copy of its stack,
//! still in its memory once the frames are read, shows that it has not (frames read after it
//! ran are left out and counted). For a running thread the frames may have moved on in the
//! meantime (see `docs/python-stacks.md`).
//!
//! The events, `tracelens_python_code` and `tracelens_python_stack`, are defined with the
//! other stack events in [`tracelens_ctf::lttng::stacks`].

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tracelens_ctf::write::{EventValues, OwnedValue, StreamWriter};
use tracelens_pystack::{Code, Frame, Interpreter, Memory};

use super::events::{ID_PYTHON_CODE, ID_PYTHON_STACK};
use crate::error::Result;

/// Spool record types (ours; perf's own stay below 64).
pub(crate) const RECORD_CODE: u32 = 0x7001;
pub(crate) const RECORD_STACK: u32 = 0x7002;
/// Frames kept per stack (the record's size is a 16-bit field).
const MAX_FRAMES: usize = 2048;
/// Bytes of a name or file kept.
const MAX_TEXT: usize = 2000;
/// Walks of a stack tried when one fails.
const READ_TRIES: usize = 3;
/// Bytes of a switched-out thread's stack compared with the sample's copy.
const STILL_BYTES: usize = 512;

/// Whether the `copy` of the stack at `sp` that a switch-out sample took is still in the
/// thread's memory: the frames of the functions it was in are unchanged, as a thread that
/// returned from the blocking call (or ran on from where it was preempted) overwrites them.
fn unchanged(mem: &impl Memory, sp: u64, copy: &[u8], scratch: &mut Vec<u8>) -> bool {
    let n = copy.len().min(STILL_BYTES);
    scratch.clear();
    scratch.resize(n, 0);
    mem.read(sp, scratch).is_ok() && scratch[..] == copy[..n]
}

/// What reading Python stacks found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PythonSummary {
    /// Samples with Python frames.
    pub stacks: u64,
    /// Code objects written.
    pub codes: u64,
    /// Python processes found: (pid, CPython version).
    pub processes: Vec<(i32, String)>,
    /// Stacks that could not be read (the thread moved on while being read, or the process
    /// ended), and the first reason.
    pub failed: u64,
    /// The first reason a stack or a process could not be read.
    pub first_error: Option<String>,
    /// Stacks of threads switched out (blocked or preempted) that were read only after
    /// the thread had run again: left out, as they may not be where it was switched out.
    pub stale: u64,
    /// Median and largest delay between a sample and the reading of its Python frames, in
    /// nanoseconds.
    pub lag_ns: (u64, u64),
}

/// The reader thread's Python state.
#[derive(Default)]
pub(crate) struct PythonReader {
    /// Per process: its interpreter, or None when it is not (yet) CPython.
    procs: HashMap<i32, Option<Interpreter>>,
    written: HashSet<u64>,
    frames: Vec<Frame>,
    /// Scratch for [`unchanged`].
    check: Vec<u8>,
    lags: Vec<u64>,
    pub summary: PythonSummary,
}

fn put_header(out: &mut Vec<u8>, ty: u32, time: u64, pid: i32, tid: i32) -> usize {
    let at = out.len();
    out.extend_from_slice(&ty.to_ne_bytes());
    out.extend_from_slice(&0u16.to_ne_bytes());
    out.extend_from_slice(&0u16.to_ne_bytes()); // size, set by `finish`
    out.extend_from_slice(&time.to_ne_bytes());
    out.extend_from_slice(&(pid as u32).to_ne_bytes());
    out.extend_from_slice(&(tid as u32).to_ne_bytes());
    at
}

fn finish(out: &mut Vec<u8>, at: usize) {
    while !(out.len() - at).is_multiple_of(8) {
        out.push(0);
    }
    let size = (out.len() - at) as u16;
    out[at + 6..at + 8].copy_from_slice(&size.to_ne_bytes());
}

fn cut(s: &str) -> &[u8] {
    let mut n = s.len().min(MAX_TEXT);
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    &s.as_bytes()[..n]
}

impl PythonReader {
    /// A new executable mapping of `pid`: a CPython file makes the process worth another look.
    pub(crate) fn on_mmap(&mut self, pid: i32, filename: &[u8]) {
        if tracelens_pystack::looks_like_python(filename) && matches!(self.procs.get(&pid), Some(None)) {
            self.procs.remove(&pid);
        }
    }

    /// `pid` ran `exec` (another program) or exited (its id may be reused).
    pub(crate) fn forget(&mut self, pid: i32) {
        self.procs.remove(&pid);
    }

    /// Reads the Python frames of thread `tid` of `pid`, sampled at `time`, and appends the
    /// records to write before the sample to `out`. `still`, for a thread the sample
    /// switched out: its user stack pointer and the stack the sample copied from there,
    /// which are still the same if it has not run since (then the frames read are those it
    /// blocked or was preempted in; else they are left out, counted as `stale`).
    pub(crate) fn on_sample(&mut self, pid: i32, tid: i32, time: u64, still: Option<(u64, &[u8])>, out: &mut Vec<u8>) {
        let py = self.procs.entry(pid).or_insert_with(|| match Interpreter::attach(pid) {
            Ok(Some(py)) => {
                self.summary.processes.push((pid, py.image().version.to_string()));
                Some(py)
            }
            Ok(None) => None,
            Err(e) => {
                self.summary.first_error.get_or_insert_with(|| e.to_string());
                None
            }
        });
        let Some(py) = py else { return };
        let now = super::sampler::mono_ns();
        // A running thread's frames change under the reader: a walk that fails on a
        // changed chain is retried.
        let mut read = py.stack(tid, &mut self.frames);
        for _ in 1..READ_TRIES {
            if read.is_ok() {
                break;
            }
            read = py.stack(tid, &mut self.frames);
        }
        if let Err(e) = read {
            self.summary.failed += 1;
            self.summary.first_error.get_or_insert_with(|| e.to_string());
            return;
        }
        if self.frames.is_empty() {
            return;
        }
        if let Some((sp, copy)) = still {
            if !unchanged(py.memory(), sp, copy, &mut self.check) {
                self.summary.stale += 1;
                return;
            }
        }
        self.frames.truncate(MAX_FRAMES);
        for fr in &self.frames {
            if self.written.insert(fr.code.id) {
                write_code(out, time, pid, tid, &fr.code);
                self.summary.codes += 1;
            }
        }
        let lag = now.saturating_sub(time);
        self.lags.push(lag);
        let at = put_header(out, RECORD_STACK, time, pid, tid);
        out.extend_from_slice(&lag.to_ne_bytes());
        out.extend_from_slice(&(self.frames.len() as u32).to_ne_bytes());
        out.extend_from_slice(&0u32.to_ne_bytes());
        for fr in &self.frames {
            out.extend_from_slice(&fr.code.id.to_ne_bytes());
            out.extend_from_slice(&fr.line.unwrap_or(0).to_ne_bytes());
            out.extend_from_slice(&u32::from(fr.entry).to_ne_bytes());
        }
        finish(out, at);
        self.summary.stacks += 1;
    }

    /// The summary, with the lag statistics.
    pub(crate) fn into_summary(mut self) -> PythonSummary {
        self.lags.sort_unstable();
        if let (Some(&max), false) = (self.lags.last(), self.lags.is_empty()) {
            self.summary.lag_ns = (self.lags[self.lags.len() / 2], max);
        }
        self.summary
    }
}

/// `s` without NUL characters (U+FFFD in their place).
fn no_nul(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains('\0') {
        std::borrow::Cow::Owned(s.replace('\0', "\u{fffd}"))
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

fn write_code(out: &mut Vec<u8>, time: u64, pid: i32, tid: i32, code: &Arc<Code>) {
    let at = put_header(out, RECORD_CODE, time, pid, tid);
    // A trace's strings end at a NUL byte: none may be inside (tracelens-pystack reads
    // none; this keeps a recording from failing if one came).
    let (name, file) = (no_nul(&code.name), no_nul(&code.file));
    let (name, file) = (cut(&name), cut(&file));
    out.extend_from_slice(&code.id.to_ne_bytes());
    out.extend_from_slice(&code.first_line.to_ne_bytes());
    out.extend_from_slice(&(name.len() as u16).to_ne_bytes());
    out.extend_from_slice(&(file.len() as u16).to_ne_bytes());
    out.extend_from_slice(name);
    out.extend_from_slice(file);
    finish(out, at);
}

/// (time, pid, tid) of one of our records.
pub(crate) fn ids(rec: &[u8]) -> Option<(u64, i32, i32)> {
    let time = u64::from_ne_bytes(rec.get(8..16)?.try_into().ok()?);
    let pid = i32::from_ne_bytes(rec.get(16..20)?.try_into().ok()?);
    let tid = i32::from_ne_bytes(rec.get(20..24)?.try_into().ok()?);
    Some((time, pid, tid))
}

fn text(b: &[u8]) -> OwnedValue {
    OwnedValue::Str(String::from_utf8_lossy(b).into_owned())
}

/// Writes one of our records as its event, with common context `cx`.
pub(crate) fn write_event(s: &mut StreamWriter<std::io::BufWriter<std::fs::File>>, ty: u32, rec: &[u8], time: u64, cx: &OwnedValue) -> Result<()> {
    let body = &rec[24.min(rec.len())..];
    let u32_at = |at: usize| body.get(at..at + 4).map(|b| u32::from_ne_bytes(b.try_into().expect("4 bytes")));
    let u64_at = |at: usize| body.get(at..at + 8).map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes")));
    if ty == RECORD_CODE {
        let (Some(id), Some(first), Some(lens)) = (u64_at(0), u32_at(8), u32_at(12)) else { return Ok(()) };
        let (nl, fl) = ((lens & 0xffff) as usize, (lens >> 16) as usize);
        let (Some(name), Some(file)) = (body.get(16..16 + nl), body.get(16 + nl..16 + nl + fl)) else { return Ok(()) };
        let payload = OwnedValue::structure([OwnedValue::U(id), OwnedValue::U(first.into()), text(name), text(file)]);
        s.event(ID_PYTHON_CODE, time, EventValues::payload(&payload).with_common_context(cx))?;
    } else {
        let (Some(lag), Some(n)) = (u64_at(0), u32_at(8)) else { return Ok(()) };
        let n = (n as usize).min(MAX_FRAMES).min(body.len().saturating_sub(16) / 16);
        let (mut codes, mut lines, mut entries) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
        for k in 0..n {
            let at = 16 + k * 16;
            codes.push(OwnedValue::U(u64_at(at).unwrap_or(0)));
            lines.push(OwnedValue::U(u32_at(at + 8).unwrap_or(0).into()));
            entries.push(OwnedValue::U(u32_at(at + 12).unwrap_or(0).min(1).into()));
        }
        let payload = OwnedValue::structure([OwnedValue::U(lag), OwnedValue::U(n as u64), OwnedValue::Array(codes), OwnedValue::Array(lines), OwnedValue::Array(entries)]);
        s.event(ID_PYTHON_STACK, time, EventValues::payload(&payload).with_common_context(cx))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_their_ids() {
        let mut out = Vec::new();
        let code = Arc::new(Code { id: 7, name: "f".repeat(3000), file: "/x.py".into(), first_line: 3 });
        write_code(&mut out, 99, 10, 11, &code);
        assert_eq!(out.len() % 8, 0);
        assert_eq!(u16::from_ne_bytes([out[6], out[7]]) as usize, out.len());
        assert_eq!(ids(&out), Some((99, 10, 11)));
        // Names are cut at MAX_TEXT bytes.
        assert!(out.len() < MAX_TEXT + 64);
        // No NUL byte reaches the trace.
        out.clear();
        write_code(&mut out, 99, 10, 11, &Arc::new(Code { id: 8, name: "\0f".into(), file: "/x\0.py".into(), first_line: 3 }));
        let lens = u32::from_ne_bytes(out[24 + 12..24 + 16].try_into().unwrap()) as usize;
        let text = &out[24 + 16..24 + 16 + (lens & 0xffff) + (lens >> 16)];
        assert_eq!(String::from_utf8_lossy(text), "\u{fffd}f/x\u{fffd}.py");
    }

    #[test]
    fn a_stack_overwritten_since_the_sample_is_seen() {
        let copy: Vec<u8> = (0..2000u32).map(|i| (i * 7) as u8).collect();
        let mut mem = tracelens_pystack::Bytes { base: 0x7000, data: copy.clone() };
        let mut scratch = Vec::new();
        assert!(unchanged(&mem, 0x7000, &copy, &mut scratch));
        // Only the first STILL_BYTES are compared; a short copy compares what it has.
        mem.data[STILL_BYTES + 10] ^= 1;
        assert!(unchanged(&mem, 0x7000, &copy, &mut scratch));
        assert!(unchanged(&mem, 0x7000, &copy[..16], &mut scratch));
        // A return address or a local overwritten: the thread ran.
        mem.data[100] ^= 1;
        assert!(!unchanged(&mem, 0x7000, &copy, &mut scratch));
        // Memory that is gone (the thread or process ended).
        assert!(!unchanged(&mem, 0x9000, &copy, &mut scratch));
    }
}
