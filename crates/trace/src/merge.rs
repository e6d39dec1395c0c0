//! Merging traces into one: the "super-trace" of the 2005 multi-level toolkit paper
//! (section 2.2), as one CTF trace whose metadata holds the stream classes of every input
//! and which holds every input stream. It is a CTF 1.8 trace, or a CTF 2 one when any input
//! is CTF 2.
//!
//! * Clocks: every input event's time becomes nanoseconds since its clock's origin (offsets
//!   included, as `tracelens print` and babeltrace2 compute them), plus the input's
//!   [`MergeInput::offset_ns`]; the output has one 1 GHz clock whose offset is the earliest
//!   input clock origin, so the merged trace prints the same times whatever the inputs'
//!   frequencies and offsets were. Event header timestamps and packet begin/end times are
//!   written on it; other clock-mapped fields keep their raw values, as plain integers.
//! * Stream classes: input stream class *s* of trace *i* becomes one output stream class with
//!   the same packet context, event header, event context and event classes (ids kept).
//! * Streams: every input stream instance becomes one output stream, its events and its
//!   discarded-event counts written in its order (streams are independent, so they are
//!   written in parallel). Packet context members other than the writer's own (`cpu_id`...)
//!   keep their values. Lost packets (`packet_seq_num` gaps) cannot be written as such: they
//!   are counted in the [`MergeSummary`].
//! * Environment: one per trace in CTF 1.8, so the output keeps the entries every input has
//!   with the same value; the others (a kernel trace's `domain` and a user-space one's, two
//!   processes' `procname`, a `hostname` one input lacks) are left out and listed in the
//!   summary. Printers that
//!   show those entries (babeltrace2's `trace:hostname`, `trace:procname`, `trace:vpid`) show
//!   them only where they were common.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rayon::prelude::*;
use tracelens_ctf::ir::{ClockClass, EnvValue, EventClass, FieldType, NamedField, StreamClass, StructType, TraceClass, VariantType};
use tracelens_ctf::write::{EventValues, OwnedValue, StreamOptions, StreamWriter, TraceWriter, Version};
use tracelens_ctf::{Item, Trace};

use crate::set::discover;
use crate::{Error, Result};

/// One path to merge (a trace, or a folder holding several) and the time shift of its
/// traces.
#[derive(Clone, Debug)]
pub struct MergeInput {
    /// A trace directory or a folder of traces.
    pub path: PathBuf,
    /// Nanoseconds added to every time of its traces (for a trace recorded on another
    /// machine's clock). Default 0.
    pub offset_ns: i64,
}

impl MergeInput {
    /// `path` with no time shift.
    pub fn new(path: impl Into<PathBuf>) -> MergeInput {
        MergeInput { path: path.into(), offset_ns: 0 }
    }
}

/// How [`merge`] writes.
#[derive(Clone, Debug)]
pub struct MergeOptions {
    /// Output packet size in bytes. Default 256 KiB.
    pub packet_size: u64,
    /// Streams written at once. Default: the number of CPUs (rayon's pool).
    pub jobs: Option<usize>,
}

impl Default for MergeOptions {
    fn default() -> MergeOptions {
        MergeOptions { packet_size: 256 * 1024, jobs: None }
    }
}

/// What [`merge`] wrote.
#[derive(Clone, Debug)]
pub struct MergeSummary {
    /// The output trace directory.
    pub output: PathBuf,
    /// Input traces.
    pub traces: usize,
    /// Stream classes (one per input stream class).
    pub stream_classes: usize,
    /// Streams written (one per input stream instance).
    pub streams: usize,
    /// Events written.
    pub events: u64,
    /// Discarded events carried over (CTF discarded-event counts).
    pub discarded_events: u64,
    /// Packets the inputs lost (`packet_seq_num` gaps), which the output cannot carry.
    pub lost_packets: u64,
    /// Bytes of stream data written.
    pub bytes: u64,
    /// The output clock.
    pub clock: ClockClass,
    /// Environment entries left out because the inputs disagree on them.
    pub dropped_env: Vec<String>,
}

/// The name the output clock gets when the inputs' clocks have different names.
pub const MERGED_CLOCK: &str = "merged";

/// Merges the traces under `inputs` into one CTF trace in `out` (which must not exist, or be
/// an empty directory). `progress` is called with the running count of events written.
pub fn merge(inputs: &[MergeInput], out: &Path, options: &MergeOptions, progress: &(dyn Fn(u64) + Sync)) -> Result<MergeSummary> {
    if inputs.is_empty() {
        return Err(Error::Invalid("nothing to merge: no input trace".into()));
    }
    let mut traces = Vec::new();
    for input in inputs {
        for dir in discover(&input.path)? {
            traces.push((Trace::open(&dir)?, input.offset_ns));
        }
    }
    check_output(out, &traces)?;
    let (class, dropped_env) = merged_class(&traces)?;
    let clock = class.clocks[0].clone();
    let base = clock.cycles_to_ns_exact(0);
    let made_out = !out.exists();
    let result = write_all(&traces, &class, base, out, options, progress);
    if result.is_err() && made_out {
        let _ = std::fs::remove_dir_all(out);
    }
    let (events, discarded_events, lost_packets, bytes, streams) = result?;
    Ok(MergeSummary {
        output: out.to_path_buf(),
        traces: traces.len(),
        stream_classes: class.streams.len(),
        streams,
        events,
        discarded_events,
        lost_packets,
        bytes,
        clock,
        dropped_env,
    })
}

fn check_output(out: &Path, traces: &[(Trace, i64)]) -> Result<()> {
    if out.exists() {
        let empty = std::fs::read_dir(out).map(|mut d| d.next().is_none()).unwrap_or(false);
        if !empty {
            return Err(Error::Invalid(format!("{}: exists and is not an empty directory: choose another output", out.display())));
        }
    }
    let abs = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let out_abs = abs(out);
    for (t, _) in traces {
        if out_abs.starts_with(abs(&t.dir)) {
            return Err(Error::Invalid(format!("{}: the output would be inside input trace {}", out.display(), t.dir.display())));
        }
    }
    Ok(())
}

/// The output trace class and the environment keys left out.
fn merged_class(traces: &[(Trace, i64)]) -> Result<(TraceClass, Vec<String>)> {
    let mut base: Option<i64> = None;
    let mut names = Vec::new();
    let mut absolute = false;
    for (t, offset) in traces {
        let lttng = matches!(t.class.env("tracer_name"), Some(EnvValue::Str(s)) if s.starts_with("lttng"));
        for c in &t.class.clocks {
            let origin = c.cycles_to_ns_exact(0).saturating_add(*offset);
            base = Some(base.map_or(origin, |b| b.min(origin)));
            names.push(c.name.clone());
            absolute |= c.absolute || lttng;
        }
    }
    let base = base.unwrap_or(0);
    names.dedup();
    let clock_name = if names.len() == 1 { names.remove(0) } else { MERGED_CLOCK.to_string() };
    let clock = ClockClass {
        name: clock_name.clone(),
        description: Some(format!("tracelens merge of {} trace(s), in ns", traces.len())),
        freq: 1_000_000_000,
        offset_s: base.div_euclid(1_000_000_000),
        offset: base.rem_euclid(1_000_000_000),
        precision: 0,
        absolute,
        uuid: None,
    };

    // Environment: the entries every input has, with one value.
    let mut env: Vec<(String, EnvValue)> = Vec::new();
    let mut dropped: Vec<String> = Vec::new();
    for (t, _) in traces {
        for (k, v) in &t.class.env {
            if env.iter().any(|(ek, _)| ek == k) || dropped.contains(k) {
                continue;
            }
            if traces.iter().all(|(o, _)| o.class.env(k) == Some(v)) {
                env.push((k.clone(), v.clone()));
            } else {
                dropped.push(k.clone());
            }
        }
    }

    let mut streams = Vec::new();
    let mut callsites = Vec::new();
    for (t, _) in traces {
        for s in &t.class.streams {
            streams.push(StreamClass {
                id: streams.len() as u64,
                packet_context: s.packet_context.as_deref().map(|ty| Arc::new(retime(ty, &clock_name, &["timestamp_begin", "timestamp_end"]))),
                event_header: s.event_header.as_deref().map(|ty| Arc::new(retime(ty, &clock_name, &["timestamp"]))),
                event_context: s.event_context.as_deref().map(|ty| Arc::new(retime(ty, &clock_name, &[]))),
                events: s
                    .events
                    .iter()
                    .map(|e| EventClass {
                        context: e.context.as_deref().map(|ty| Arc::new(retime(ty, &clock_name, &[]))),
                        payload: e.payload.as_deref().map(|ty| Arc::new(retime(ty, &clock_name, &[]))),
                        ..e.clone()
                    })
                    .collect(),
            });
        }
        for c in &t.class.callsites {
            if !callsites.contains(c) {
                callsites.push(c.clone());
            }
        }
    }
    let u = |size| {
        FieldType::Int(tracelens_ctf::ir::IntType { align: 8, ..tracelens_ctf::ir::IntType::new(size, false, tracelens_ctf::ir::ByteOrder::Little) })
    };
    let field = |name: &str, ty| NamedField { name: name.into(), ty };
    let header = FieldType::Struct(StructType {
        fields: vec![
            field("magic", u(32)),
            field("uuid", FieldType::Array(tracelens_ctf::ir::ArrayType { element: Box::new(u(8)), length: 16 })),
            field("stream_id", u(32)),
            field("stream_instance_id", u(64)),
        ],
        min_align: 8,
    });
    // CTF 2 inputs may use classes CTF 1.8 cannot say (selector ranges, BLOBs...): the output
    // is CTF 2 when any input is.
    let ctf2 = traces.iter().any(|(t, _)| t.class.major >= 2);
    let class = TraceClass {
        major: if ctf2 { 2 } else { 1 },
        minor: if ctf2 { 0 } else { 8 },
        uuid: Some(random_uuid()),
        byte_order: tracelens_ctf::ir::ByteOrder::Little,
        packet_header: Some(Arc::new(header)),
        env,
        clocks: vec![clock],
        streams,
        callsites,
    };
    Ok((class, dropped))
}

/// `ty` with its clock-mapped integers mapped to `clock` where their name is in `keep` (the
/// writer's own time fields), and plain elsewhere.
fn retime(ty: &FieldType, clock: &str, keep: &[&str]) -> FieldType {
    fn walk(ty: &FieldType, name: &str, clock: &str, keep: &[&str]) -> FieldType {
        let remap = |mapped: &Option<String>| mapped.as_ref().and_then(|_| keep.contains(&tracelens_ctf::ir::display_name(name)).then(|| clock.to_string()));
        match ty {
            FieldType::Int(i) => FieldType::Int(tracelens_ctf::ir::IntType { mapped_clock: remap(&i.mapped_clock), ..i.clone() }),
            FieldType::Enum(e) => {
                let mut e = e.clone();
                e.container.mapped_clock = remap(&e.container.mapped_clock);
                FieldType::Enum(e)
            }
            FieldType::Struct(s) => FieldType::Struct(StructType {
                fields: s.fields.iter().map(|f| NamedField { name: f.name.clone(), ty: walk(&f.ty, &f.name, clock, keep) }).collect(),
                min_align: s.min_align,
            }),
            FieldType::Variant(v) => FieldType::Variant(VariantType {
                tag: v.tag.clone(),
                options: v.options.iter().map(|f| NamedField { name: f.name.clone(), ty: walk(&f.ty, &f.name, clock, keep) }).collect(),
                ranges: v.ranges.clone(),
            }),
            FieldType::Array(a) => {
                let mut a = a.clone();
                *a.element = walk(&a.element, "", clock, keep);
                FieldType::Array(a)
            }
            FieldType::Sequence(s) => {
                let mut s = s.clone();
                *s.element = walk(&s.element, "", clock, keep);
                FieldType::Sequence(s)
            }
            _ => ty.clone(),
        }
    }
    walk(ty, "", clock, keep)
}

/// Whether the writer fills the whole event header by itself: it holds only `id` and
/// `timestamp` integers (or enumerations), in structures and variants.
fn header_is_writers(ty: &FieldType, name: &str) -> bool {
    let role = matches!(tracelens_ctf::ir::display_name(name), "id" | "timestamp");
    match ty {
        FieldType::Int(_) | FieldType::Enum(_) => role,
        FieldType::Struct(s) => s.fields.iter().all(|f| header_is_writers(&f.ty, &f.name)),
        FieldType::Variant(v) => v.options.iter().all(|f| header_is_writers(&f.ty, &f.name)),
        _ => false,
    }
}

/// The packet context members the writer fills in.
const WRITERS_CONTEXT: [&str; 6] = ["timestamp_begin", "timestamp_end", "content_size", "packet_size", "packet_seq_num", "events_discarded"];

type Totals = (u64, u64, u64, u64, usize);

fn write_all(traces: &[(Trace, i64)], class: &TraceClass, base: i64, out: &Path, options: &MergeOptions, progress: &(dyn Fn(u64) + Sync)) -> Result<Totals> {
    let version = if class.major >= 2 { Version::Ctf2 } else { Version::Ctf1 };
    let mut tw = TraceWriter::create_version(out, class, version)?;
    let mut jobs = Vec::new();
    let mut first_class = 0u64;
    let mut names = std::collections::HashSet::new();
    for (ti, (t, offset)) in traces.iter().enumerate() {
        let label = t.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "trace".into());
        for (si, s) in t.streams.iter().enumerate() {
            let file = s.path().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| format!("stream{si}"));
            let mut name = format!("{ti}-{label}-{file}").replace(['/', '\\'], "_");
            let mut n = 1;
            while name.ends_with(".idx") || !names.insert(name.clone()) {
                n += 1;
                name = format!("{ti}-{label}-{file}-{n}");
            }
            let class_id = first_class + s.plan as u64;
            let opts = StreamOptions { packet_size: options.packet_size, ..StreamOptions::default() };
            let writer = tw.stream_with(class_id, &name, &opts)?;
            jobs.push((t, si, *offset, writer));
        }
        first_class += t.class.streams.len() as u64;
    }
    let streams = jobs.len();
    let done = AtomicU64::new(0);
    let run = || -> Result<Vec<(u64, u64, u64, u64)>> { jobs.into_par_iter().map(|(t, si, offset, w)| copy_stream(t, si, offset, base, w, &done, progress)).collect() };
    let totals = match options.jobs {
        Some(n) => rayon::ThreadPoolBuilder::new().num_threads(n.max(1)).build().map_err(|e| Error::Invalid(format!("cannot start {n} threads: {e}")))?.install(run)?,
        None => run()?,
    };
    let mut t = (0, 0, 0, 0, streams);
    for (e, d, l, b) in totals {
        t.0 += e;
        t.1 += d;
        t.2 += l;
        t.3 += b;
    }
    Ok(t)
}

/// Copies stream `si` of `t` into `w`: (events, discarded events, lost packets, bytes).
fn copy_stream(
    t: &Trace,
    si: usize,
    offset: i64,
    base: i64,
    mut w: StreamWriter<std::io::BufWriter<std::fs::File>>,
    done: &AtomicU64,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(u64, u64, u64, u64)> {
    let mut cursor = t.cursor(si);
    let plan = &t.plans[t.streams[si].plan];
    let stream_class = &t.class.streams[t.streams[si].plan];
    let header_by_writer = stream_class.event_header.as_deref().is_none_or(|h| header_is_writers(h, ""));
    let (mut events, mut lost_packets) = (0u64, 0u64);
    let mut last_ts = 0u64;
    let mut packet = usize::MAX;
    let mut context: Vec<(String, OwnedValue)> = Vec::new();
    let path = t.streams[si].path().to_path_buf();
    let mut unreported = 0u64;
    while let Some(item) = cursor.advance()? {
        match item {
            Item::Event => {
                let Some(ev) = cursor.event() else { continue };
                let ts = match ev.ns {
                    Some(ns) => {
                        let t = ns.saturating_add(offset).saturating_sub(base);
                        u64::try_from(t).map_err(|_| Error::Invalid(format!("{}: an event at {ns} ns is before the merged clock's origin", path.display())))?
                    }
                    None => last_ts,
                };
                last_ts = ts;
                if cursor.packet_index() != packet {
                    packet = cursor.packet_index();
                    let members: Vec<(String, OwnedValue)> = ev
                        .packet_context
                        .children(0)
                        .filter(|(_, f)| !WRITERS_CONTEXT.contains(&f.name()))
                        .filter_map(|(i, f)| OwnedValue::from_field_at(ev.packet_context.list, i, plan).map(|v| (f.node.raw_name.to_string(), v)))
                        .collect();
                    if members != context {
                        w.flush_packet()?;
                        for (name, v) in &members {
                            w.set_packet_context(name, v.clone())?;
                        }
                        context = members;
                    }
                }
                let header = if header_by_writer { None } else { OwnedValue::from_fields(ev.header, plan) };
                let common = OwnedValue::from_fields(ev.common_context, plan);
                let ctx = OwnedValue::from_fields(ev.context, plan);
                let payload = OwnedValue::from_fields(ev.payload, plan);
                let values = EventValues { header: header.as_ref(), common_context: common.as_ref(), context: ctx.as_ref(), payload: payload.as_ref() };
                w.event(ev.class.class.id, ts, values)?;
                events += 1;
                unreported += 1;
                if unreported == 4096 {
                    progress(done.fetch_add(unreported, Ordering::Relaxed) + unreported);
                    unreported = 0;
                }
            }
            Item::DiscardedEvents { count, .. } => w.discard(count)?,
            Item::DiscardedPackets { count, .. } => lost_packets += count,
        }
    }
    progress(done.fetch_add(unreported, Ordering::Relaxed) + unreported);
    let f = w.finish()?;
    Ok((events, f.discarded, lost_packets, f.bytes))
}

fn random_uuid() -> [u8; 16] {
    use std::io::Read;
    let mut b = [0u8; 16];
    if std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b)).is_err() {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0) ^ ((std::process::id() as u128) << 64);
        b = t.to_le_bytes();
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracelens_ctf::ir::{ByteOrder, IntType};

    fn int(mapped: bool) -> FieldType {
        FieldType::Int(IntType { mapped_clock: mapped.then(|| "monotonic".into()), ..IntType::new(64, false, ByteOrder::Little) })
    }

    fn st(fields: Vec<(&str, FieldType)>) -> FieldType {
        FieldType::Struct(StructType { fields: fields.into_iter().map(|(n, ty)| NamedField { name: n.into(), ty }).collect(), min_align: 1 })
    }

    fn mapped(ty: &FieldType, name: &str) -> Option<String> {
        let FieldType::Struct(s) = ty else { return None };
        let f = s.fields.iter().find(|f| f.name == name)?;
        match &f.ty {
            FieldType::Int(i) => i.mapped_clock.clone(),
            _ => None,
        }
    }

    #[test]
    fn retime_keeps_the_writers_time_fields_and_unmaps_the_others() {
        let ty = st(vec![("timestamp_begin", int(true)), ("_timestamp_end", int(true)), ("other", int(true)), ("plain", int(false))]);
        let r = retime(&ty, "merged", &["timestamp_begin", "timestamp_end"]);
        assert_eq!(mapped(&r, "timestamp_begin").as_deref(), Some("merged"));
        assert_eq!(mapped(&r, "_timestamp_end").as_deref(), Some("merged"));
        assert_eq!(mapped(&r, "other"), None);
        assert_eq!(mapped(&r, "plain"), None);
    }

    #[test]
    fn headers_of_ids_and_timestamps_are_the_writers() {
        assert!(header_is_writers(&st(vec![("id", int(false)), ("timestamp", int(true))]), ""));
        assert!(!header_is_writers(&st(vec![("id", int(false)), ("seq", int(false))]), ""));
    }
}
