//! The consumer thread: every few milliseconds (or when a ring passes half full) it reads the
//! rings' heads, takes a clock sample, and writes what each ring holds as CTF events through
//! `tracelens_ctf::write`, one stream per thread; lost-event markers become discarded-event
//! counts; new event classes rewrite the metadata; exited threads' streams are closed. At
//! exit it drains everything and finishes every stream.

use std::collections::HashSet;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracelens_ctf::write::{EventValues, OwnedValue, StreamOptions, StreamWriter, TraceWriter};

use crate::clock::{self, Calibration};
use crate::layout::{self, Info, Kind};
use crate::ring::{Ring, MARKER};
use crate::state::{self, REGISTRY};
use crate::{Error, Result};

/// How long the consumer sleeps when nothing wakes it.
const PERIOD: Duration = Duration::from_millis(20);
/// How often written events are flushed to the files.
const FLUSH_EVERY: Duration = Duration::from_secs(1);
/// Default ring size per thread.
const DEFAULT_RING: usize = 1 << 20;

/// The environment variables that configure the probes.
pub mod env {
    /// The directory to write into (a trace `PROCNAME-PID` per process is made in it); unset
    /// or empty: probes are off.
    pub const DIR: &str = "TRACELENS_PROBE_DIR";
    /// Buffer size per thread in bytes (suffixes K, M; rounded up to a power of two, at least
    /// 512). Default 1M.
    pub const BUFFER: &str = "TRACELENS_PROBE_BUFFER";
    /// `tsc` or `monotonic`: how probes read the time (default: the time-stamp counter where
    /// it is invariant, see the `clock` notes in the crate documentation).
    pub const CLOCK: &str = "TRACELENS_PROBE_CLOCK";
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC in ns, for the trace's clock offset (`tracelens
    /// record --probes` passes its kernel trace's, so both traces share one clock class).
    pub const CLOCK_OFFSET: &str = "TRACELENS_PROBE_CLOCK_OFFSET_NS";
    /// The clock class UUID to write (32 hex digits), for a kernel trace whose clock has one.
    pub const CLOCK_UUID: &str = "TRACELENS_PROBE_CLOCK_UUID";
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn bad(name: &'static str, value: &str, why: &str) -> Error {
    Error::Env { name, value: value.to_string(), why: why.to_string() }
}

/// A size in bytes with an optional K/M/G suffix.
fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (num, mul) = match s.char_indices().last()? {
        (i, 'k' | 'K') => (&s[..i], 1 << 10),
        (i, 'm' | 'M') => (&s[..i], 1 << 20),
        (i, 'g' | 'G') => (&s[..i], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<usize>().ok()?.checked_mul(mul)
}

/// Parses 32 hex digits (dashes allowed) into a UUID.
fn parse_uuid(s: &str) -> Option<[u8; 16]> {
    let hex: Vec<u8> = s.bytes().filter(|&b| b != b'-').collect();
    if hex.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (k, pair) in hex.chunks(2).enumerate() {
        out[k] = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(out)
}

fn random_uuid() -> [u8; 16] {
    let mut b = [0u8; 16];
    let ok = File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b)).is_ok();
    if !ok {
        let t = clock::clock_ns(libc::CLOCK_REALTIME) as u128 ^ ((std::process::id() as u128) << 64);
        b = t.to_le_bytes();
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    b
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|s| s.trim().to_string()).unwrap_or_default()
}

fn procname() -> String {
    std::fs::read_to_string("/proc/self/comm").map(|s| s.trim().to_string()).unwrap_or_else(|_| "process".into())
}

/// A new directory `base/NAME` (`NAME-2`, ... when taken).
fn fresh_dir(base: &Path, name: &str) -> Result<PathBuf> {
    std::fs::create_dir_all(base).map_err(|source| Error::Io { path: base.to_path_buf(), source })?;
    for n in 1u32.. {
        let dir = if n == 1 { base.join(name) } else { base.join(format!("{name}-{n}")) };
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(source) => return Err(Error::Io { path: dir, source }),
        }
    }
    unreachable!("u32 ran out of directory names")
}

/// Decides from the environment whether probes write; if so, creates the process's trace and
/// starts the consumer thread. `Ok(false)`: off.
pub(crate) fn start() -> Result<bool> {
    let Some(base) = var(env::DIR) else { return Ok(false) };
    let ring_bytes = match var(env::BUFFER) {
        Some(v) => parse_size(&v).filter(|&b| b > 0).ok_or_else(|| bad(env::BUFFER, &v, "not a size (bytes, with an optional K, M or G)"))?,
        None => DEFAULT_RING,
    };
    let clock_setting = var(env::CLOCK);
    if let Some(c) = &clock_setting {
        if c != "tsc" && c != "monotonic" {
            return Err(bad(env::CLOCK, c, "expected `tsc` or `monotonic`"));
        }
    }
    let tsc = clock::counter_usable(clock_setting.as_deref());
    let clock_offset_ns = match var(env::CLOCK_OFFSET) {
        Some(v) => v.trim().parse::<i64>().map_err(|_| bad(env::CLOCK_OFFSET, &v, "not an integer"))?,
        None => clock::clock_ns(libc::CLOCK_REALTIME) as i64 - clock::monotonic_ns() as i64,
    };
    let clock_uuid = match var(env::CLOCK_UUID) {
        Some(v) => Some(parse_uuid(&v).ok_or_else(|| bad(env::CLOCK_UUID, &v, "not a UUID (32 hex digits)"))?),
        None => None,
    };
    let pid = std::process::id() as i32;
    let procname = procname();
    let info = Info { uuid: random_uuid(), hostname: hostname(), procname: procname.clone(), pid, clock_offset_ns, clock_uuid };
    let dir = fresh_dir(Path::new(&base), &format!("{procname}-{pid}"))?;
    let classes = REGISTRY.with(|r| r.classes.clone());
    let writer = TraceWriter::create(&dir, &layout::trace_class(&info, &classes))?;
    let first = if tsc { clock::sample() } else { (0, 0) };
    let kinds = classes.iter().map(|c| c.1).collect();
    let mut out = Output { writer, info, kinds, streams: Vec::new(), names: HashSet::new(), cal: Calibration::new(first), tsc, pid, scratch: Vec::new() };
    REGISTRY.with(|r| {
        r.ring_bytes = ring_bytes;
        r.tsc = tsc;
        r.stop = false;
    });
    let handle = std::thread::Builder::new()
        .name("tracelens-probe".into())
        .spawn(move || {
            if let Err(e) = out.run() {
                eprintln!("tracelens-probe: {e}; probes are off from now");
                state::tl_probe_state.store(state::OFF, Ordering::Release);
            }
        })
        .map_err(|source| Error::Io { path: "consumer thread".into(), source })?;
    state::set_consumer(handle.thread().clone(), handle);
    state::install_handlers();
    Ok(true)
}

/// One thread's stream.
struct Stream {
    ring: Arc<Ring>,
    writer: StreamWriter<BufWriter<File>>,
    /// Drops reported so far (as discarded events).
    reported: u64,
    last_ns: u64,
    context: OwnedValue,
    dirty: bool,
}

/// The consumer's side of the trace.
struct Output {
    writer: TraceWriter,
    info: Info,
    /// The kind of each event class in the metadata.
    kinds: Vec<Kind>,
    streams: Vec<Stream>,
    names: HashSet<String>,
    cal: Calibration,
    tsc: bool,
    pid: i32,
    scratch: Vec<u8>,
}

impl Output {
    fn run(&mut self) -> Result<()> {
        let mut last_flush = Instant::now();
        let mut u64_payload = OwnedValue::Struct(vec![OwnedValue::U(0)]);
        let mut str_payload = OwnedValue::Struct(vec![OwnedValue::Str(String::new())]);
        loop {
            let flush_ticket = state::FLUSH_ASKED.load(Ordering::Acquire);
            let (new_rings, stop) = REGISTRY.with(|r| (std::mem::take(&mut r.new_rings), r.stop));
            for ring in new_rings {
                self.open(ring)?;
            }
            self.drain(stop, &mut u64_payload, &mut str_payload)?;
            let flush_now = flush_ticket > state::FLUSH_DONE.load(Ordering::Acquire);
            if stop || flush_now || last_flush.elapsed() >= FLUSH_EVERY {
                for s in self.streams.iter_mut().filter(|s| s.dirty) {
                    s.writer.flush()?;
                    s.dirty = false;
                }
                last_flush = Instant::now();
                state::FLUSH_DONE.fetch_max(flush_ticket, Ordering::AcqRel);
            }
            if stop {
                for s in std::mem::take(&mut self.streams) {
                    close(s)?;
                }
                return Ok(());
            }
            std::thread::park_timeout(PERIOD);
        }
    }

    fn set_classes(&mut self, classes: &[(String, Kind)]) -> Result<()> {
        self.writer.set_class(&layout::trace_class(&self.info, classes))?;
        for s in &mut self.streams {
            s.writer.set_class(self.writer.class())?;
        }
        self.kinds = classes.iter().map(|c| c.1).collect();
        Ok(())
    }

    fn open(&mut self, ring: Arc<Ring>) -> Result<()> {
        let mut name = format!("tid-{}", ring.tid);
        let mut n = 1;
        while !self.names.insert(name.clone()) {
            n += 1;
            name = format!("tid-{}-{n}", ring.tid);
        }
        let options = StreamOptions { packet_size: 64 * 1024, ..StreamOptions::default() };
        let writer = self.writer.stream_with(0, &name, &options)?;
        let context = OwnedValue::Struct(vec![OwnedValue::I(self.pid.into()), OwnedValue::I(ring.tid.into())]);
        self.streams.push(Stream { ring, writer, reported: 0, last_ns: 0, context, dirty: false });
        Ok(())
    }

    /// Writes what every ring holds; at `stop`, everything, and the drops never marked.
    fn drain(&mut self, stop: bool, u64_payload: &mut OwnedValue, str_payload: &mut OwnedValue) -> Result<()> {
        // Whether each thread had exited, then its head: all it will ever write when it had.
        let heads: Vec<(bool, u64)> = self.streams.iter().map(|s| (s.ring.exited.load(Ordering::Acquire) || stop, s.ring.head())).collect();
        // A probe registers its class before it publishes a record of it: read after the
        // heads, the registry knows every class the records up to them use.
        let known = self.kinds.len();
        if let Some(classes) = REGISTRY.with(|r| (r.classes.len() > known).then(|| r.classes.clone())) {
            self.set_classes(&classes)?;
        }
        if self.tsc {
            self.cal.add(clock::sample());
        }
        let mut finished = Vec::new();
        for (k, (done, head)) in heads.into_iter().enumerate() {
            let s = &mut self.streams[k];
            let mut pos = s.ring.tail();
            while pos < head {
                let rec = s.ring.record(pos);
                pos += rec.words;
                s.dirty = true;
                if rec.id == MARKER {
                    s.writer.discard(rec.first - s.reported)?;
                    s.reported = rec.first;
                    continue;
                }
                let ns = if self.tsc { self.cal.to_ns(rec.first) } else { rec.first };
                // A thread's times never go backwards in its stream (the counter may read a
                // little behind after a migration between CPUs).
                let ns = ns.max(s.last_ns);
                s.last_ns = ns;
                let values = EventValues { common_context: Some(&s.context), ..EventValues::default() };
                let start = pos - rec.words;
                match self.kinds.get(rec.id as usize) {
                    Some(Kind::Empty) => s.writer.event(rec.id.into(), ns, values)?,
                    Some(Kind::U64) => {
                        set_u64(u64_payload, s.ring.word(start + 2));
                        s.writer.event(rec.id.into(), ns, EventValues { payload: Some(u64_payload), ..values })?;
                    }
                    Some(Kind::Str) => {
                        s.ring.payload(start, rec.len, &mut self.scratch);
                        set_text(str_payload, &self.scratch);
                        s.writer.event(rec.id.into(), ns, EventValues { payload: Some(str_payload), ..values })?;
                    }
                    None => return Err(Error::Corrupt { tid: s.ring.tid, at: start, id: rec.id }),
                }
            }
            s.ring.release(pos);
            if done {
                finished.push(k);
            }
        }
        for k in finished.into_iter().rev() {
            close(self.streams.swap_remove(k))?;
        }
        Ok(())
    }
}

fn set_u64(payload: &mut OwnedValue, v: u64) {
    if let OwnedValue::Struct(f) = payload {
        f[0] = OwnedValue::U(v);
    }
}

/// Sets the payload's string, reusing its allocation (raw bytes when not UTF-8; NUL bytes,
/// which a CTF string cannot hold, end it).
fn set_text(payload: &mut OwnedValue, bytes: &[u8]) {
    let bytes = &bytes[..bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len())];
    if let OwnedValue::Struct(f) = payload {
        match (std::str::from_utf8(bytes), &mut f[0]) {
            (Ok(text), OwnedValue::Str(s)) => {
                s.clear();
                s.push_str(text);
            }
            (Ok(text), slot) => *slot = OwnedValue::Str(text.to_string()),
            (Err(_), slot) => *slot = OwnedValue::Bytes(bytes.to_vec()),
        }
    }
}

/// Closes a stream: the drops never marked in its ring become a last discarded count.
fn close(mut s: Stream) -> Result<()> {
    let dropped = s.ring.dropped();
    if dropped > s.reported {
        s.writer.discard(dropped - s.reported)?;
    }
    s.writer.finish()?;
    Ok(())
}
