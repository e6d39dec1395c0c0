//! The stream writer: [`StreamWriter`] encodes events into packets of one data stream (and
//! its LTTng index), filling in the fields readers find by their role (see the
//! [`crate::write`] documentation for what it fills in, how packets are cut and how values
//! are checked).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use super::encode::{fits_unsigned, mask, Enc, EventError};
use super::header::choose_combo;
use super::index::IndexWriter;
use super::plan::WritePlan;
use super::OwnedValue;
use crate::ir::TraceClass;
use crate::layout::{EventLayout, NodeId, Role};
use crate::packet::IdxEntry;
use crate::{Error, Result};

/// How a [`StreamWriter`] cuts and indexes packets.
#[derive(Clone, Debug)]
pub struct StreamOptions {
    /// Packet size in bytes (a multiple of 8 is usual; LTTng uses pages). Events go into a
    /// packet while they fit; an event larger than an empty packet gets a larger packet of
    /// its own. Ignored when the packet context has neither `packet_size` nor
    /// `content_size` (the stream is then one packet). Default 4096.
    pub packet_size: u64,
    /// Write an LTTng index (`index/NAME.idx`, format 1.1) beside the stream file
    /// ([`TraceWriter`](super::TraceWriter) only: [`StreamWriter::new`] takes the index sink
    /// itself). Default true.
    pub index: bool,
    /// The `stream_instance_id` to write. By default [`TraceWriter`](super::TraceWriter)
    /// numbers its streams 0, 1, 2, ... (readers take two files with the same stream class and
    /// instance id to be one stream split in tracefiles); [`StreamWriter::new`] uses 0.
    pub instance_id: Option<u64>,
    /// Encode every event field by field through the types, never by the fast paths (bodies
    /// of whole bytes, flattened headers). The output is the same either way; this is how the
    /// tests check that. Default false.
    pub general_only: bool,
    /// Every packet is [`packet_size`](Self::packet_size) bytes, also the last one and those
    /// closed early (discarded events, [`StreamWriter::flush_packet`]), as LTTng writes its
    /// sub-buffers; otherwise those end at their content (rounded up to a byte). Only where the
    /// packet context has both `packet_size` and `content_size`. Default false.
    pub fixed_size: bool,
}

impl Default for StreamOptions {
    fn default() -> StreamOptions {
        StreamOptions { packet_size: 4096, index: true, instance_id: None, general_only: false, fixed_size: false }
    }
}

/// The values of one event's scopes, each a structure value ([`OwnedValue::Struct`]).
///
/// A scope the stream or event class declares needs a value, except the event header: its
/// `id` and `timestamp` fields are filled in, and other members are zero or empty unless
/// `header` is given (values given for `id` and `timestamp` are ignored). Leave `header` out
/// for headers with variants chosen by `id` (LTTng's): the writer chooses their option.
#[derive(Clone, Copy, Debug, Default)]
pub struct EventValues<'v> {
    /// `stream.event.header` members other than `id` and `timestamp` (optional).
    pub header: Option<&'v OwnedValue>,
    /// `stream.event.context`.
    pub common_context: Option<&'v OwnedValue>,
    /// `event.context`.
    pub context: Option<&'v OwnedValue>,
    /// `event.fields`.
    pub payload: Option<&'v OwnedValue>,
}

impl<'v> EventValues<'v> {
    /// Only a payload.
    pub fn payload(payload: &'v OwnedValue) -> EventValues<'v> {
        EventValues { payload: Some(payload), ..EventValues::default() }
    }

    /// These values with `stream.event.context` set.
    pub fn with_common_context(self, value: &'v OwnedValue) -> EventValues<'v> {
        EventValues { common_context: Some(value), ..self }
    }

    /// These values with `event.context` set.
    pub fn with_context(self, value: &'v OwnedValue) -> EventValues<'v> {
        EventValues { context: Some(value), ..self }
    }

    /// These values with the event header's other members set.
    pub fn with_header(self, value: &'v OwnedValue) -> EventValues<'v> {
        EventValues { header: Some(value), ..self }
    }
}

/// What a finished [`StreamWriter`] wrote, and its sinks.
#[derive(Debug)]
pub struct Finished<W> {
    /// Events written.
    pub events: u64,
    /// Packets written.
    pub packets: u64,
    /// Discarded events recorded.
    pub discarded: u64,
    /// Bytes of the stream.
    pub bytes: u64,
    /// The stream sink, flushed.
    pub out: W,
    /// The index sink, flushed, if any.
    pub index: Option<W>,
}

/// Writes the packets of one data stream (see the [`crate::write`] documentation for what
/// it fills in, how packets are cut and how values are checked).
///
/// Call [`StreamWriter::finish`] at the end: it closes the last packet.
pub struct StreamWriter<W: Write> {
    plan: Arc<WritePlan>,
    enc: Enc,
    name: PathBuf,
    out: W,
    index: Option<IndexWriter<W>>,
    packet_bits: u64,
    open: bool,
    /// First and last event times of the open packet.
    packet_begin: u64,
    packet_end: u64,
    events_in_packet: u64,
    /// Last event time of the stream.
    last_ts: u64,
    offset: u64,
    seq: u64,
    discarded: u64,
    /// The discarded-event total carried by the last packet written.
    discarded_written: u64,
    /// Caller values of the packet header's and context's top-level members.
    ph_values: Vec<Option<OwnedValue>>,
    pc_values: Vec<Option<OwnedValue>>,
    events: u64,
    packets: u64,
    failed: bool,
    /// [`StreamOptions::general_only`].
    general_only: bool,
    /// [`StreamOptions::fixed_size`].
    fixed_size: bool,
}

impl<W: Write> std::fmt::Debug for StreamWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamWriter")
            .field("name", &self.name)
            .field("stream_class_id", &self.plan.stream_class_id)
            .field("events", &self.events)
            .field("packets", &self.packets)
            .finish_non_exhaustive()
    }
}

impl<W: Write> StreamWriter<W> {
    /// A writer of a stream of class `stream_class_id` of `trace` into `out` (and its LTTng
    /// index into `index`, when given). `name` labels errors (and is the file's path when
    /// [`TraceWriter`](super::TraceWriter) opens it). The index's header is written at once.
    pub fn new(trace: &TraceClass, stream_class_id: u64, name: impl Into<PathBuf>, out: W, index: Option<W>, options: &StreamOptions) -> Result<StreamWriter<W>> {
        let name = name.into();
        let plan = WritePlan::compile(trace, stream_class_id).map_err(|message| Error::Write { path: name.clone(), message })?;
        StreamWriter::with_plan(Arc::new(plan), name, out, index, options)
    }

    pub(super) fn with_plan(plan: Arc<WritePlan>, name: PathBuf, out: W, index: Option<W>, options: &StreamOptions) -> Result<StreamWriter<W>> {
        let werr = |message: String| Error::Write { path: name.clone(), message };
        if options.packet_size == 0 {
            return Err(werr("the packet size must not be 0".into()));
        }
        let packet_bits = options.packet_size.checked_mul(8).ok_or_else(|| werr("the packet size is too large".into()))?;
        if !plan.single_packet() && !fits_unsigned(packet_bits, plan.size_field_bits) {
            return Err(werr(format!(
                "packets of {} bytes do not fit the packet context's {}-bit size fields",
                options.packet_size, plan.size_field_bits
            )));
        }
        let index = match index.map(IndexWriter::new) {
            Some(Err(source)) => return Err(Error::Io { path: name.clone(), source }),
            Some(Ok(ix)) => Some(ix),
            None => None,
        };
        let mut enc = Enc::new(&plan);
        enc.instance_id = options.instance_id.unwrap_or(0);
        let ph = plan.members(plan.packet_header).len();
        let pc = plan.members(plan.packet_context).len();
        Ok(StreamWriter {
            plan,
            enc,
            name,
            out,
            index,
            packet_bits,
            open: false,
            packet_begin: 0,
            packet_end: 0,
            events_in_packet: 0,
            last_ts: 0,
            offset: 0,
            seq: 0,
            discarded: 0,
            discarded_written: 0,
            ph_values: vec![None; ph],
            pc_values: vec![None; pc],
            events: 0,
            packets: 0,
            failed: false,
            general_only: options.general_only,
            fixed_size: options.fixed_size,
        })
    }

    fn error(&self, message: String) -> Error {
        Error::Write { path: self.name.clone(), message }
    }

    fn io(&mut self, source: std::io::Error) -> Error {
        self.failed = true;
        Error::Io { path: self.name.clone(), source }
    }

    /// The stream class id.
    pub fn stream_class_id(&self) -> u64 {
        self.plan.stream_class_id
    }

    /// The `stream_instance_id` this writer writes.
    pub fn instance_id(&self) -> u64 {
        self.enc.instance_id
    }

    /// Events written so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Packets closed so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Sets the value of the packet header's top-level member `name` (raw or display name)
    /// for the packets opened from now on. Values set for `magic`, `uuid`, `stream_id` and
    /// `stream_instance_id` are ignored (the writer fills those in).
    pub fn set_packet_header(&mut self, name: &str, value: OwnedValue) -> Result<()> {
        let root = self.plan.packet_header;
        self.set_member(root, true, name, value)
    }

    /// Sets the value of the packet context's top-level member `name` (raw or display name,
    /// e.g. `cpu_id`) for the packets opened from now on (the open packet keeps its values).
    /// Values set for the members the writer fills in are ignored.
    pub fn set_packet_context(&mut self, name: &str, value: OwnedValue) -> Result<()> {
        let root = self.plan.packet_context;
        self.set_member(root, false, name, value)
    }

    fn set_member(&mut self, root: Option<NodeId>, header: bool, name: &str, value: OwnedValue) -> Result<()> {
        let scope = if header { "packet header" } else { "packet context" };
        let plan = Arc::clone(&self.plan);
        let members = plan.members(root);
        let Some(k) = members.iter().position(|&m| plan.node(m).raw_name == name || plan.node(m).name() == name) else {
            return Err(self.error(format!("the {scope} has no member `{name}`")));
        };
        let vals = if header { &mut self.ph_values } else { &mut self.pc_values };
        let old = vals[k].replace(value);
        // Check the values now, on a scratch encoder, so that errors come from this call.
        let mut scratch = Enc::new(&plan);
        scratch.instance_id = self.enc.instance_id;
        if let Err(m) = packet_fields(&plan, &mut scratch, &self.ph_values, &self.pc_values) {
            let vals = if header { &mut self.ph_values } else { &mut self.pc_values };
            vals[k] = old;
            return Err(self.error(m));
        }
        Ok(())
    }

    fn open_packet(&mut self, ts: u64) -> Result<()> {
        let plan = Arc::clone(&self.plan);
        let e = &mut self.enc;
        e.buf.clear();
        e.last_bo = None;
        e.patches.clear();
        e.begin_written = None;
        e.begin = ts;
        e.seq = self.seq;
        e.discarded = self.discarded;
        let saved_clock = e.clock;
        if let Err(m) = packet_fields(&plan, e, &self.ph_values, &self.pc_values) {
            e.clock = saved_clock;
            e.buf.clear();
            return Err(self.error(m));
        }
        if let Some(b) = e.begin_written {
            e.clock = b;
        }
        self.open = true;
        self.packet_begin = ts;
        self.packet_end = ts;
        self.events_in_packet = 0;
        Ok(())
    }

    fn close_packet(&mut self) -> Result<()> {
        self.close_packet_sized(true)
    }

    /// Closes the open packet at its content size (rounded up to a byte) rather than at the
    /// stream's packet size (unless [`StreamOptions::fixed_size`]): for packets closed before
    /// they are full (discarded events, an explicit flush, the end), so that they are not
    /// padded.
    fn close_packet_short(&mut self) -> Result<()> {
        self.close_packet_sized(self.fixed_size)
    }

    fn close_packet_sized(&mut self, full: bool) -> Result<()> {
        if !self.open {
            return Ok(());
        }
        let plan = Arc::clone(&self.plan);
        if plan.single_packet() && self.packets > 0 {
            return Err(self.error(
                "the packet context has neither `packet_size` nor `content_size`, so a stream of this class is a single packet".into(),
            ));
        }
        let content = self.enc.buf.position();
        let packet_bits = if plan.has_packet_size && plan.has_content_size {
            if full {
                self.packet_bits.max(content.div_ceil(8) * 8)
            } else {
                content.div_ceil(8) * 8
            }
        } else if plan.has_content_size {
            content.div_ceil(8) * 8
        } else {
            if !content.is_multiple_of(8) {
                return Err(self.error(format!(
                    "the packet's content ends in the middle of a byte (bit {content}) and the packet context has no `content_size` to say so"
                )));
            }
            content
        };
        let end = self.packet_end;
        for k in 0..self.enc.patches.len() {
            let p = self.enc.patches[k];
            let v = match p.role {
                Role::PacketEnd => end & mask(p.size),
                Role::ContentSize => content,
                _ => packet_bits,
            };
            if !fits_unsigned(v, p.size) {
                return Err(self.error(format!("a packet of {v} bits does not fit the packet context's {}-bit size field", p.size)));
            }
            self.enc.buf.patch_uint(p.bit, v, p.size, p.bo);
        }
        if packet_bits == 0 {
            // Nothing to write (no packet header, context or events): readers skip an empty
            // file, and an index entry of 0 bits would be invalid.
            self.open = false;
            return Ok(());
        }
        self.enc.buf.pad_to(packet_bits);
        let bytes = (packet_bits / 8) as usize;
        if let Err(e) = self.out.write_all(&self.enc.buf.bytes()[..bytes]) {
            return Err(self.io(e));
        }
        if let Some(ix) = self.index.as_mut() {
            let entry = IdxEntry {
                offset: self.offset,
                packet_size: packet_bits,
                content_size: content,
                begin: self.enc.begin_written.unwrap_or(self.packet_begin),
                end,
                events_discarded: self.discarded,
                stream_id: plan.stream_class_id,
                stream_instance_id: Some(self.enc.instance_id),
                seq_num: Some(self.seq),
            };
            if let Err(e) = ix.entry(&entry) {
                return Err(self.io(e));
            }
        }
        self.offset += bytes as u64;
        self.seq += 1;
        self.packets += 1;
        self.discarded_written = self.enc.discarded;
        self.open = false;
        Ok(())
    }

    /// Appends an event of class `class_id` at `timestamp` (clock cycles) with `values`.
    ///
    /// On error (values that do not match their types, an id or a timestamp the event header
    /// cannot encode) nothing is written and the stream stays usable.
    pub fn event(&mut self, class_id: u64, timestamp: u64, values: EventValues<'_>) -> Result<()> {
        if self.failed {
            return Err(self.error("an earlier write failed".into()));
        }
        let plan = Arc::clone(&self.plan);
        let Some(ev) = plan.event(class_id) else {
            return Err(self.error(format!("stream class {} has no event class {class_id}", plan.stream_class_id)));
        };
        let what = |scope: &str| format!("event `{}` (class id {class_id}) at {timestamp}: {scope}", ev.class.name);
        for (declared, given, scope) in [
            (plan.event_context.is_some(), values.common_context.is_some(), "stream event context"),
            (ev.context.is_some(), values.context.is_some(), "event context"),
            (ev.payload.is_some(), values.payload.is_some(), "payload"),
        ] {
            if declared && !given {
                return Err(self.error(format!("{}: no value given", what(scope))));
            }
            if given && !declared {
                return Err(self.error(format!("{}: a value was given, but the metadata declares none", what(scope))));
            }
        }
        if values.header.is_some() && plan.event_header.is_none() {
            return Err(self.error(format!("{}: a value was given, but the metadata declares none", what("event header"))));
        }
        let limit = if plan.single_packet() { u64::MAX } else { self.packet_bits };
        for _attempt in 0..3 {
            if !self.open {
                self.open_packet(timestamp)?;
            }
            let mark = self.enc.mark();
            match self.encode_event(&plan, ev, class_id, timestamp, &values, mark.bit) {
                Ok(()) => {
                    if self.enc.buf.position() > limit && self.events_in_packet > 0 {
                        self.enc.rollback(mark);
                        self.close_packet()?;
                        continue;
                    }
                    self.events_in_packet += 1;
                    self.events += 1;
                    self.packet_end = self.packet_end.max(timestamp);
                    self.last_ts = timestamp;
                    return Ok(());
                }
                Err(EventError::Time(_)) if self.events_in_packet > 0 && plan.has_begin && !plan.single_packet() => {
                    // A new packet's `timestamp_begin` resets the clock.
                    self.enc.rollback(mark);
                    self.close_packet()?;
                }
                Err(EventError::Time(m)) | Err(EventError::Other(m)) => {
                    self.enc.rollback(mark);
                    return Err(self.error(format!("event `{}` (class id {class_id}) at {timestamp}: {m}", ev.class.name)));
                }
            }
        }
        Err(self.error(format!("event `{}` (class id {class_id}) at {timestamp}: cannot be placed in a packet", ev.class.name)))
    }

    /// Encodes one event after the mark at `start`. Unless `general_only`, the header goes
    /// through [`Enc::put_header`] and the scopes whose types are simple (see [`simple_nodes`])
    /// through [`Enc::put_simple`]; a scope either declines is rolled back and written by
    /// [`Enc::put`], which says what is wrong with it.
    fn encode_event(&mut self, plan: &WritePlan, ev: &EventLayout, class_id: u64, ts: u64, values: &EventValues<'_>, start: u64) -> Result<(), EventError> {
        let fast = !self.general_only;
        let e = &mut self.enc;
        let body = |e: &mut Enc, root: NodeId, v: Option<&OwnedValue>, scope: &str| -> Result<(), EventError> {
            if fast && plan.simple[root as usize] {
                let mark = e.mark();
                if e.put_simple(plan, root, v) {
                    return Ok(());
                }
                e.rollback(mark);
            }
            e.put(plan, root, v).map_err(|x| EventError::Other(x.render(scope)))
        };
        e.ts = ts;
        e.class_id = class_id;
        e.last_id = None;
        if let Some(h) = plan.event_header {
            let combo = choose_combo(plan, e, class_id, ts)?;
            let steps = plan.header_steps.get(combo).and_then(Option::as_deref).filter(|_| fast && values.header.is_none());
            let mark = e.mark();
            if !steps.is_some_and(|steps| e.put_header(plan, steps)) {
                e.rollback(mark);
                e.put(plan, h, values.header).map_err(|x| EventError::Other(x.render("event header")))?;
            }
            let c = &plan.combos[combo];
            if c.ts.iter().any(|t| t.1) && e.clock != ts {
                return Err(EventError::Time(format!(
                    "the event header encodes the timestamp as {} (other clock-mapped header fields?)",
                    e.clock
                )));
            }
            if e.last_id.unwrap_or(0) != class_id {
                return Err(EventError::Other(format!(
                    "the event header encodes event class id {} instead",
                    e.last_id.unwrap_or(0)
                )));
            }
        } else if class_id != 0 {
            return Err(EventError::Other(
                "the stream class has no event header: readers take every event to be of class 0".into(),
            ));
        }
        if let Some(c) = plan.event_context {
            body(e, c, values.common_context, "stream event context")?;
        }
        if let Some(c) = ev.context {
            body(e, c, values.context, "event context")?;
        }
        if let Some(p) = ev.payload {
            body(e, p, values.payload, "payload")?;
        }
        if e.buf.position() == start {
            return Err(EventError::Other("the event encodes to 0 bits, which readers cannot tell from the end of a packet".into()));
        }
        Ok(())
    }

    /// Records that the tracer discarded `count` events here: the open packet is closed, and
    /// the next packet's `events_discarded` (a running total) carries them, so readers report
    /// them between the events written before and after this call. Fails when the packet
    /// context has no `events_discarded` member.
    pub fn discard(&mut self, count: u64) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        if !self.plan.has_discarded {
            return Err(self.error("the packet context has no `events_discarded` member to record discarded events".into()));
        }
        self.close_packet_short()?;
        self.discarded = self.discarded.saturating_add(count);
        Ok(())
    }

    /// Closes the open packet, if any (the next event opens a new one).
    pub fn flush_packet(&mut self) -> Result<()> {
        self.close_packet_short()
    }

    /// Closes the open packet, if any, and flushes the sinks, so that a reader of the files
    /// (or a crash) sees every event written so far.
    pub fn flush(&mut self) -> Result<()> {
        self.close_packet_short()?;
        self.flush_sinks()
    }

    fn flush_sinks(&mut self) -> Result<()> {
        if let Err(e) = self.out.flush() {
            return Err(self.io(e));
        }
        if let Some(Err(e)) = self.index.as_mut().map(|ix| ix.out.flush()) {
            return Err(self.io(e));
        }
        Ok(())
    }

    /// Goes on writing with the event classes of `class` (a tracer that learns event classes
    /// while it runs, after [`TraceWriter::set_class`](super::TraceWriter::set_class)). The
    /// stream class must keep its packet header and context, event header and common context
    /// exactly; the open packet stays open.
    pub fn set_class(&mut self, class: &TraceClass) -> Result<()> {
        let id = self.plan.stream_class_id;
        let plan = WritePlan::compile(class, id).map_err(|m| self.error(m))?;
        if !plan.same_stream_scopes(&self.plan) || plan.uuid != self.plan.uuid {
            return Err(self.error(format!("the new class changes stream class {id}'s packet or event header or context")));
        }
        self.enc.follow(&plan);
        self.plan = Arc::new(plan);
        Ok(())
    }

    /// Closes the last packet (writing an empty one if discarded events are still to be
    /// reported), flushes the sinks and returns them.
    ///
    /// A stream without any packet gets one empty packet (timestamps 0): babeltrace2 2.0
    /// rejects an empty stream file.
    pub fn finish(mut self) -> Result<Finished<W>> {
        self.close_packet_short()?;
        if self.discarded > self.discarded_written || self.packets == 0 {
            self.open_packet(self.last_ts)?;
            self.close_packet_short()?;
        }
        self.flush_sinks()?;
        Ok(Finished {
            events: self.events,
            packets: self.packets,
            discarded: self.discarded,
            bytes: self.offset,
            out: self.out,
            index: self.index.map(|ix| ix.out),
        })
    }
}

/// Encodes the packet header and context with `enc`.
fn packet_fields(plan: &WritePlan, enc: &mut Enc, ph: &[Option<OwnedValue>], pc: &[Option<OwnedValue>]) -> Result<(), String> {
    if let Some(h) = plan.packet_header {
        enc.put_members(plan, h, ph).map_err(|e| e.render("packet header"))?;
    }
    if let Some(c) = plan.packet_context {
        enc.put_members(plan, c, pc).map_err(|e| e.render("packet context"))?;
    }
    Ok(())
}

