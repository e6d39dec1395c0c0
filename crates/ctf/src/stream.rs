//! Data streams and the cursor that reads their events in order.
//!
//! A [`DataStream`] is one stream instance: usually one file, or several when LTTng rotated
//! tracefiles (`chan_0_0`, `chan_0_1`, ...), in which case the files' packets are concatenated
//! in time order. A [`Cursor`] walks its packets and events, rebuilding timestamps, and
//! reports discarded events (from `events_discarded`) and lost packets (from `packet_seq_num`).

use std::path::PathBuf;

use crate::decode::{fill_ints, fill_ints_window, next_clock, take, Decoder, Specials, WINDOW};
use crate::ir::TraceClass;
use crate::mmap::MappedFile;
use crate::packet::{read_packet, PacketEntry};
use crate::ir::ByteOrder;
use crate::layout::{EventLayout, NodeKind};
use crate::plan::StreamPlan;
use crate::value::{Field, Fields};
use crate::{Error, Result};

/// One file of a data stream.
#[derive(Debug)]
pub struct StreamFile {
    /// Its path.
    pub path: PathBuf,
    /// Its bytes.
    pub(crate) map: MappedFile,
}

impl StreamFile {
    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        self.map.bytes()
    }
}

/// One stream instance of a trace.
#[derive(Debug)]
pub struct DataStream {
    /// Files holding its packets.
    pub files: Vec<StreamFile>,
    /// Packets in order.
    pub packets: Vec<PacketEntry>,
    /// Index of the stream class's plan in [`crate::Trace::plans`].
    pub plan: usize,
    /// Stream class id.
    pub stream_class_id: u64,
    /// Stream instance id, when packet headers carry one.
    pub instance_id: Option<u64>,
    /// The UUID every packet must carry (a packet with another is an error): the metadata's,
    /// or — when it differs from this — the one all the trace's stream files carry, the
    /// metadata's being stale. `None` when the metadata has no UUID.
    pub uuid: Option<[u8; 16]>,
    /// Packets found to disagree with their index entry (see [`crate::Trace::warnings`]).
    pub(crate) repairs: crate::warning::IndexRepairs,
}

impl DataStream {
    /// The path of the first file (what tools name the stream by).
    pub fn path(&self) -> &std::path::Path {
        &self.files[0].path
    }

    /// The path of the file holding packet `packet` (the first file's when there is no such
    /// packet): where errors and warnings about the packet point.
    pub fn packet_path(&self, packet: usize) -> &std::path::Path {
        self.packets.get(packet).and_then(|p| self.files.get(p.file as usize)).map_or_else(|| self.path(), |f| &f.path)
    }

    /// Hands back the memory of packets `packets` (see [`MappedFile::release`]), one range per
    /// file: for readers that know when no cursor will read them again (a cursor hands back
    /// what it has read itself, unless told not to: [`Cursor::hold_pages`]).
    pub fn release_packets(&self, packets: std::ops::Range<usize>) {
        let Some(entries) = self.packets.get(packets) else { return };
        let mut run: Option<(u32, u64, u64)> = None;
        for p in entries {
            let end = p.offset.saturating_add(p.size);
            run = match run {
                Some((file, from, _)) if file == p.file => Some((file, from, end)),
                other => {
                    if let Some((file, from, to)) = other {
                        self.release_range(file, from, to);
                    }
                    Some((p.file, p.offset, end))
                }
            };
        }
        if let Some((file, from, to)) = run {
            self.release_range(file, from, to);
        }
    }

    /// Hands back the memory of bytes `from..to` of file `file` (nothing when empty).
    fn release_range(&self, file: u32, from: u64, to: u64) {
        if to > from {
            if let Some(f) = self.files.get(file as usize) {
                f.map.release(usize::try_from(from).unwrap_or(usize::MAX), usize::try_from(to).unwrap_or(usize::MAX));
            }
        }
    }
}

/// What a cursor produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item {
    /// An event: read it with [`Cursor::event`].
    Event,
    /// The tracer discarded `count` events between two packet times (clock cycles).
    DiscardedEvents {
        /// How many.
        count: u64,
        /// Start of the range (cycles), if known.
        begin: Option<u64>,
        /// End of the range (cycles), if known.
        end: Option<u64>,
    },
    /// `count` packets are missing (a `packet_seq_num` gap) between two packet times.
    DiscardedPackets {
        /// How many.
        count: u64,
        /// Start of the range (cycles), if known.
        begin: Option<u64>,
        /// End of the range (cycles), if known.
        end: Option<u64>,
    },
}

/// The event a cursor is on.
#[derive(Clone, Copy, Debug)]
pub struct EventView<'a, 'c> {
    /// The compiled event class.
    pub class: &'a EventLayout,
    /// Clock value in cycles (64-bit, rebuilt), if the stream has a clock.
    pub cycles: Option<u64>,
    /// Nanoseconds from the clock's origin, if the stream has a clock.
    pub ns: Option<i64>,
    /// `trace.packet.header`.
    pub packet_header: Fields<'a, 'c>,
    /// `stream.packet.context`.
    pub packet_context: Fields<'a, 'c>,
    /// `stream.event.header`.
    pub header: Fields<'a, 'c>,
    /// `stream.event.context`.
    pub common_context: Fields<'a, 'c>,
    /// `event.context`.
    pub context: Fields<'a, 'c>,
    /// `event.fields`.
    pub payload: Fields<'a, 'c>,
}

impl EventView<'_, '_> {
    /// The event class name.
    pub fn name(&self) -> &str {
        &self.class.class.name
    }

    /// Looks up a field by name in the payload, then the contexts, then the packet context.
    pub fn field(&self, name: &str) -> Option<&Field<'_>> {
        [self.payload, self.context, self.common_context, self.packet_context]
            .into_iter()
            .find_map(|s| s.get(name))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Before the packet at `packet`.
    PacketStart,
    /// Lost events/packets of the current packet still to report.
    PendingPackets,
    PendingEvents,
    /// Reading events of the current packet.
    Events,
    Done,
}

/// A time that goes backwards within one stream: an event earlier than the event before it,
/// than its packet's beginning or than the previous packet's end, or a packet beginning before
/// the previous one ended. babeltrace2 2.0 aborts on these; tracelens reports them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeAnomaly {
    /// 0-based packet number in the stream.
    pub packet: u64,
    /// The time that went backwards (clock cycles).
    pub cycles: u64,
    /// The latest time seen before it in the stream (clock cycles).
    pub floor: u64,
}

/// Reads the events of one [`DataStream`] in order. A clone reads on from the same place (for
/// parallel readers that hand a position over); both hand back the pages they read.
#[derive(Clone)]
pub struct Cursor<'a> {
    stream: &'a DataStream,
    trace: &'a TraceClass,
    decoder: Decoder<'a>,
    plans: &'a [StreamPlan],
    packet: usize,
    state: State,
    packet_fields: Vec<Field<'a>>,
    /// Ends of header and context in `packet_fields`.
    packet_split: usize,
    event_fields: Vec<Field<'a>>,
    /// Ends of each event scope in `event_fields`: header, common ctx, ctx, payload.
    split: [usize; 4],
    event: Option<&'a EventLayout>,
    prev_discarded: u64,
    prev_seq: Option<u64>,
    prev_end: Option<u64>,
    /// `timestamp_begin` and `timestamp_end` of the current packet, as its context says.
    times: (Option<u64>, Option<u64>),
    /// `timestamp_begin` and `timestamp_end` of the current packet as the stream's index
    /// gives them, a missing bound as the widest ([`Cursor::in_packet`]).
    index_times: (u64, u64),
    has_clock: bool,
    pending: (u64, u64),
    /// Clock value when the current event's header was decoded: the event's time (clock-mapped
    /// fields later in the event update the stream clock for the next events only, as in
    /// babeltrace2).
    event_clock: u64,
    /// Latest time seen in this stream (events, packet beginnings and ends), in cycles (0
    /// before any: no time is below it).
    floor: u64,
    /// How many times went backwards within this stream.
    pub anomalies: u64,
    /// One past the last packet to read.
    end_packet: usize,
    /// Per event class: the fields its body program outputs (values filled per event).
    templates: Vec<Option<Template<'a>>>,
    /// Per option of the event header's variant: the fields of the header (see
    /// `Decoder::run_header`).
    header_templates: Vec<Box<[Field<'a>]>>,
    /// Decode every event field by field (no compiled fast paths): for tests.
    generic_only: bool,
    /// For a 1 GHz clock with a non-negative offset: the offset in ns (an event's time in ns
    /// is this plus its cycles) and the cycle counts below which adding it cannot overflow (0
    /// for other clocks, or before the clock is known): an event's time in one comparison and
    /// one addition.
    ns_add: (i64, u64),
    /// The current event's header is in `header_templates[i]` (else in `event_fields`).
    header_buf: usize,
    /// The current event's body scopes are in `templates[k]` (else in `event_fields`).
    body_buf: usize,
    /// Pages read but not handed back yet: (file, from, to) byte offsets (see
    /// [`RELEASE_STEP`]).
    unreleased: (u32, u64, u64),
    /// Hand pages back once this many bytes are read ([`RELEASE_STEP`] unless set).
    release_step: u64,
    /// The first of them.
    pub first_anomaly: Option<TimeAnomaly>,
    /// Whether the last item returned is an event.
    on_event: bool,
    /// The stream's plan.
    plan: &'a StreamPlan,
    /// The fast path for LTTng compact/large headers, once the stream's clock is known.
    fast: Option<FastHeader>,
    /// Per event class id: what the fast path needs to read its events, once the slow path
    /// has read one (its body program and field buffers are ready). Everything that decides
    /// where the next event starts is in the entry itself, so that the chain of dependent
    /// loads from one event to the next stays short.
    fast_ids: Vec<FastEntry<'a>>,
}

/// An event class the fast path reads (see [`Cursor::fast_event`]).
#[derive(Clone, Copy)]
struct FastEntry<'a> {
    /// The class; `None` for an id the fast path does not take (yet).
    ev: Option<&'a EventLayout>,
    /// Its body program.
    body: Option<&'a crate::plan::Program>,
    /// For a body of integers and text arrays only: the integers, the text arrays (output
    /// index, byte offset, length), the run's alignment and size in bits, and the bytes its
    /// reads touch.
    ints: &'a [crate::plan::IntFill],
    ints_reach: usize,
    ints_first: u32,
    texts: &'a [(u32, u32, crate::plan::Fill)],
    align: u64,
    bits: u64,
    reach: usize,
    only_ints: bool,
    /// `only_ints`, and every read of the body (integers and text arrays) is within
    /// `WINDOW + 8` bytes of its start.
    windowed: bool,
    /// Not `only_ints`, but skipped by its length alone ([`crate::plan::Program::skippable`]):
    /// strings and variable-length integers between runs of leaves.
    skip_by_length: bool,
    /// Index of the class in the plan (and of its field buffer).
    k: usize,
}

impl FastEntry<'_> {
    const NONE: FastEntry<'static> = FastEntry { ev: None, body: None, ints: &[], ints_reach: 0, ints_first: u32::MAX, texts: &[], align: 1, bits: 0, reach: 0, only_ints: false, windowed: false, skip_by_length: false, k: 0 };
}

/// The fields a body program outputs (values filled per event), and how many belong to each
/// of its scopes (stream event context, event context, payload).
#[derive(Clone)]
struct Template<'a> {
    fields: Box<[Field<'a>]>,
    scope_lens: [u32; 3],
}

/// `Cursor::header_buf` / `body_buf` when the event's fields are in `event_fields`.
const NO_BUF: usize = usize::MAX;

/// A cursor hands the pages it has read back to the system (see [`MappedFile::release`]) once
/// they add up to this many bytes, and at its last packet: each hand-back flushes the TLB of
/// every CPU the process runs on (an interrupt to each in a parallel reader), so it is done
/// per few megabytes, not per packet.
const RELEASE_STEP: u64 = 4 << 20;

/// `Cursor::release_step` of a cursor that hands no page back ([`Cursor::hold_pages`]).
const HOLD: u64 = u64::MAX;

/// The tag of LTTng's extended event header option: 31 (compact header) or 65535 (large).
#[inline]
fn extended_tag(f: FastHeader) -> u32 {
    if f.large {
        65535
    } else {
        31
    }
}

/// LTTng's extended event header at bit `start` of `data` (its tag read already, the stream's
/// header having that option): the 32-bit id, the 64-bit timestamp (from the first byte after
/// the tag) and the header's size in bits; `None` when the header does not fit.
#[inline]
fn extended_header(f: FastHeader, data: &[u8], start: u64, limit: u64) -> Option<(u32, u64, u64)> {
    let at = (start / 8) as usize;
    let (x, bits) = if f.large { (at + 2, 112) } else { (at + 1, 104) };
    if start + bits > limit || x + 12 > data.len() {
        return None;
    }
    let (id, ts) = match f.byte_order {
        ByteOrder::Little => (u32::from_le_bytes(take(data, x)), u64::from_le_bytes(take(data, x + 4))),
        ByteOrder::Big => (u32::from_be_bytes(take(data, x)), u64::from_be_bytes(take(data, x + 4))),
    };
    Some((id, ts, bits))
}

/// What a skip checks of an event's time ([`Cursor::skip_event_before`]), in cycles: a time
/// before `ns`, within the packet's clock range, no earlier than the event before it (a time
/// going backwards is left to `advance`, which counts it), and mapped to ns in one addition.
struct SkipBounds {
    /// The packet's `timestamp_begin` in cycles, as the index gives it (0 without one).
    lo: u64,
    /// Times at or past this one are not skipped: the first in ns at or past `ns`, or past
    /// the packet's range, or beyond the one-addition mapping.
    below: u64,
    /// The offset of the mapping to ns (see `Cursor::ns_add`).
    ns_base: i64,
}

impl SkipBounds {
    /// The bounds of a skip before `ns` in a packet of clock range `(lo, hi)` (inclusive), for
    /// a cursor whose mapping to ns is `ns_add` (see `Cursor::ns_add`).
    fn new(ns: i64, (lo, hi): (u64, u64), ns_add: (i64, u64)) -> SkipBounds {
        // A time `c` below `ns_add.1` is `ns_add.0 + c` ns exactly, before `ns` when `c` is
        // below `ns - ns_add.0` (none is when that is not positive).
        let before_ns = u64::try_from(i128::from(ns) - i128::from(ns_add.0)).unwrap_or(0);
        SkipBounds { lo, below: ns_add.1.min(before_ns).min(hi.saturating_add(1)), ns_base: ns_add.0 }
    }

    /// The lowest time a skip passes after an event at `floor`.
    #[inline(always)]
    fn floor(&self, floor: u64) -> u64 {
        floor.max(self.lo)
    }

    /// Whether a skip passes an event at `clock` cycles, after one at `floor` (from
    /// [`SkipBounds::floor`]).
    #[inline(always)]
    fn passes(&self, clock: u64, floor: u64) -> bool {
        clock >= floor && clock < self.below
    }

    /// The time in ns of an event a skip passed.
    #[inline(always)]
    fn time(&self, clock: u64) -> i64 {
        self.ns_base.wrapping_add(clock as i64)
    }
}

/// The event id, the timestamp and the timestamp's size in bits of LTTng's compact event
/// header at the start of `word`: with `LARGE`, a 16-bit id then a 32-bit timestamp, else a
/// 5-bit id and a 27-bit timestamp in one 32-bit word; big-endian with `BIG`.
#[inline(always)]
fn compact_header<const LARGE: bool, const BIG: bool>(word: [u8; 8]) -> (u32, u64, u32) {
    match (LARGE, BIG) {
        (false, false) => {
            let w = u32::from_le_bytes(take(&word, 0));
            (w & 31, (w >> 5) as u64, 27)
        }
        (false, true) => {
            let w = u32::from_be_bytes(take(&word, 0));
            (w >> 27, (w & ((1 << 27) - 1)) as u64, 27)
        }
        (true, false) => (u16::from_le_bytes(take(&word, 0)) as u32, u32::from_le_bytes(take(&word, 2)) as u64, 32),
        (true, true) => (u16::from_be_bytes(take(&word, 0)) as u32, u32::from_be_bytes(take(&word, 2)) as u64, 32),
    }
}

/// What the fast path needs about an LTTng compact or large event header.
#[derive(Clone, Copy)]
struct FastHeader {
    large: bool,
    byte_order: ByteOrder,
    /// Alignment of the header, in bits.
    align: u64,
    /// The common option's index.
    option: usize,
    /// The extended option's index, when it has LTTng's layout (see
    /// [`crate::plan::LttngHeader::extended`]).
    extended: Option<usize>,
}

/// The pages read and not handed back yet, the packet being read included, are handed back
/// when a cursor is dropped before its last packet (a parallel reader that stops early): no
/// other reader may finish that packet after it, to hand them back. A cursor that holds its
/// pages ([`Cursor::hold_pages`]) leaves them to its reader.
impl Drop for Cursor<'_> {
    fn drop(&mut self) {
        if self.release_step == HOLD {
            return;
        }
        if self.packet < self.end_packet {
            if let Some(p) = self.stream.packets.get(self.packet) {
                let (file, from, to) = self.unreleased;
                self.unreleased = if file == p.file && to > from { (file, from.min(p.offset), to.max(p.offset + p.size)) } else {
                    self.release_pending();
                    (p.file, p.offset, p.offset + p.size)
                };
            }
        }
        self.release_pending();
    }
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `stream`.
    pub fn new(trace: &'a TraceClass, plans: &'a [StreamPlan], stream: &'a DataStream) -> Cursor<'a> {
        let plan = &plans[stream.plan];
        let has_clock = plan_has_clock(plan);
        Cursor {
            stream,
            trace,
            decoder: Decoder::new(plan),
            plans,
            packet: 0,
            state: State::PacketStart,
            packet_fields: Vec::new(),
            packet_split: 0,
            event_fields: Vec::with_capacity(64),
            split: [0; 4],
            event: None,
            prev_discarded: 0,
            prev_seq: None,
            prev_end: None,
            times: (None, None),
            index_times: (0, u64::MAX),
            has_clock,
            pending: (0, 0),
            event_clock: 0,
            floor: 0,
            anomalies: 0,
            first_anomaly: None,
            on_event: false,
            end_packet: stream.packets.len(),
            unreleased: (0, 0, 0),
            release_step: RELEASE_STEP,
            templates: Vec::new(),
            header_templates: Vec::new(),
            generic_only: false,
            header_buf: NO_BUF,
            body_buf: NO_BUF,
            ns_add: (0, 0),
            plan,
            fast: None,
            fast_ids: Vec::new(),
        }
    }

    /// Hands back the memory of everything up to `end` of a packet at `offset` of file
    /// `file` (already read), in steps of [`RELEASE_STEP`] and at the cursor's last packet.
    fn release_through(&mut self, in_file: u32, offset: u64, end: u64) {
        let (file, from, to) = self.unreleased;
        if file != in_file {
            self.release_pending();
            self.unreleased = (in_file, offset, end);
        } else {
            self.unreleased = (file, from.min(offset), end.max(to));
        }
        let (_, from, to) = self.unreleased;
        if self.release_step != HOLD && (to - from >= self.release_step || self.packet + 1 >= self.end_packet) {
            self.release_pending();
        }
    }

    /// Hands the pages read back to the system once `bytes` of them add up (at least a
    /// packet's: pages are handed back at packet ends), instead of `RELEASE_STEP`: a reader
    /// of many streams at once keeps their sum.
    pub fn set_release_step(&mut self, bytes: u64) {
        self.release_step = bytes.min(HOLD - 1);
    }

    /// Hands no page back, not even when dropped: for readers that hand them back themselves
    /// ([`DataStream::release_packets`]).
    pub fn hold_pages(&mut self) {
        self.release_step = HOLD;
    }

    /// Hands back the pages of [`unreleased`](Self::unreleased) (the last, partly read page
    /// is kept: it is handed back with the next range).
    fn release_pending(&mut self) {
        let (file, from, to) = self.unreleased;
        self.stream.release_range(file, from, to);
        let kept = to - to % 65536;
        self.unreleased = (file, kept, kept);
    }

    /// A cursor over the packets `packets` of `stream` only (a chunk, for parallel readers),
    /// starting in the state the stream is in after the packet before the range, as the packet
    /// index records it: discarded-event counter, sequence number, end time (the clock value
    /// when a packet has no `timestamp_begin`). Reading every chunk of a stream gives the same
    /// items as reading the whole stream.
    pub fn with_packets(trace: &'a TraceClass, plans: &'a [StreamPlan], stream: &'a DataStream, packets: std::ops::Range<usize>) -> Cursor<'a> {
        let mut c = Cursor::new(trace, plans, stream);
        c.end_packet = packets.end.min(stream.packets.len());
        c.packet = packets.start.min(c.end_packet);
        if let Some(first) = stream.packets.get(c.packet) {
            c.unreleased = (first.file, first.offset, first.offset);
        }
        if let Some(prev) = packets.start.checked_sub(1).and_then(|i| stream.packets.get(i)) {
            c.prev_discarded = prev.events_discarded.unwrap_or(0);
            c.prev_seq = prev.seq_num;
            c.prev_end = prev.end;
            if let Some(e) = prev.end {
                c.decoder.clock = e;
                c.floor = e;
            }
        }
        c
    }

    /// Decodes every event field by field, without the compiled fast paths (straight-line
    /// programs for fixed layouts, LTTng header shortcuts). Both must give the same events;
    /// tests use this to check it.
    pub fn set_generic_only(&mut self, on: bool) {
        self.generic_only = on;
    }

    /// The stream being read.
    pub fn stream(&self) -> &'a DataStream {
        self.stream
    }

    /// The clock class of this stream's timestamps, if any.
    pub fn clock_class(&self) -> Option<&'a crate::ir::ClockClass> {
        self.decoder.clock_class.and_then(|i| self.trace.clocks.get(i)).or_else(|| {
            if self.has_clock {
                self.trace.clocks.first()
            } else {
                None
            }
        })
    }

    /// Converts cycles of this stream's clock to nanoseconds from the origin.
    #[inline]
    pub fn cycles_to_ns(&self, cycles: u64) -> Option<i64> {
        let clock = self.clock_class()?;
        // A 1 GHz clock with a non-negative offset (LTTng's) is a plain addition.
        if clock.freq == 1_000_000_000 && clock.offset >= 0 && cycles < 1 << 62 {
            if let Some(ns) = clock.offset_s.checked_mul(1_000_000_000).and_then(|b| b.checked_add(clock.offset)).and_then(|b| b.checked_add(cycles as i64)) {
                return Some(ns);
            }
        }
        Some(clock.cycles_to_ns(cycles))
    }

    fn error(&self, bit_in_packet: u64, message: String) -> Error {
        let p = self.stream.packets.get(self.packet);
        Error::Stream {
            path: self.stream.packet_path(self.packet).to_path_buf(),
            packet: self.packet as u64,
            offset: p.map(|p| p.offset).unwrap_or(0) + bit_in_packet / 8,
            message,
        }
    }

    /// Advances to the next item. `Ok(None)` at the end of the stream.
    #[inline(always)]
    pub fn advance(&mut self) -> Result<Option<Item>> {
        if self.advance_event() {
            return Ok(Some(Item::Event));
        }
        self.advance_slow()
    }

    /// Advances to the next item when it is an event of the common case (see
    /// `Cursor::fast_event`): `true`, and the cursor is on it as after [`Cursor::advance`]
    /// returned [`Item::Event`]. Anything else returns `false` with nothing changed: the next
    /// [`Cursor::advance`] reads it.
    #[inline(always)]
    pub fn advance_event(&mut self) -> bool {
        self.state == State::Events && (self.fast_event() || self.fast_extended_event())
    }

    /// Reads events for as long as they are of the common case (see `Cursor::fast_event`),
    /// calling `f` with each and the index of its packet; returns at the first item that
    /// needs [`Cursor::advance`]. Alternating `burst` and `advance` reads the same items as
    /// `advance` alone, in a tighter loop.
    #[inline(always)]
    pub fn burst(&mut self, mut f: impl FnMut(&EventView<'a, '_>, usize)) {
        if self.state != State::Events {
            return;
        }
        // The header's description, read once for the whole loop.
        let Some(h) = self.fast else { return };
        while self.fast_event_as(h) {
            if let Some(ev) = self.event() {
                f(&ev, self.packet);
            }
        }
    }

    /// The index, in the stream's packets, of the packet being read (the number of packets
    /// after the last one).
    pub fn packet_index(&self) -> usize {
        self.packet
    }

    /// Reads the next event when it is the common case: inside the packet, an LTTng compact or
    /// large header of its common option, an event class with a body program that already ran
    /// once, and a body that fits. Anything else returns `false` with nothing changed, and
    /// [`Cursor::advance_slow`] takes it (it gives the same result: `fast_ids` only lists
    /// classes the slow path decoded with the same programs).
    #[inline(always)]
    fn fast_event(&mut self) -> bool {
        let Some(f) = self.fast else { return false };
        self.fast_event_as(f)
    }

    /// [`Cursor::fast_event`] with the stream's header description `f` (`self.fast`) passed
    /// in, so that a loop keeps it in registers.
    #[inline(always)]
    fn fast_event_as(&mut self, f: FastHeader) -> bool {
        let Some((tag, ts, ts_bits, body_start)) = self.fast_header(f) else { return false };
        // The extended header's tag has no entry: such events take `fast_extended_event`.
        let Some(&e) = self.fast_ids.get(tag as usize) else { return false };
        self.fast_body(e, (tag, tag, ts, ts_bits), body_start, self.decoder.pos, f.option, false)
    }

    /// The common option of the header `f` at the decoder's position: its tag, timestamp and
    /// the timestamp's size in bits, and where the event's body starts; `None` when the
    /// header would not fit in the packet.
    #[inline(always)]
    fn fast_header(&self, f: FastHeader) -> Option<(u32, u64, u32, u64)> {
        let (large, byte_order) = (f.large, f.byte_order);
        let d = &self.decoder;
        let start = (d.pos + f.align - 1) & !(f.align - 1);
        let bits = if large { 48 } else { 32 };
        if start + bits > d.limit {
            return None;
        }
        let at = (start / 8) as usize;
        if at + 8 > d.data.len() {
            return None;
        }
        let word = take::<8>(d.data, at);
        let (tag, ts, ts_bits) = match (large, byte_order) {
            (false, ByteOrder::Little) => compact_header::<false, false>(word),
            (false, ByteOrder::Big) => compact_header::<false, true>(word),
            (true, ByteOrder::Little) => compact_header::<true, false>(word),
            (true, ByteOrder::Big) => compact_header::<true, true>(word),
        };
        Some((tag, ts, ts_bits, start + bits))
    }

    /// Skips the next event without reading its fields when it is of the fast path's common
    /// case (see `Cursor::fast_event`) with a body of fixed size (integers and text arrays
    /// only) or one whose length is all that skipping it needs (strings and variable-length
    /// integers between such runs, no leaf storing a value or with a role: see
    /// [`crate::plan::Program::skippable`]), lies within its packet's time range, goes no
    /// earlier than the event before it (a time going backwards is counted by `advance`), and
    /// its time, in ns from the clock's origin, is before `ns`: returns that time, and the
    /// cursor is then on no event (the next item comes from [`Cursor::advance`]). Anything
    /// else returns `None` with nothing changed. Skipping and advancing leave the cursor in
    /// the same state (clock, time checks), so a reader may skip what another one formats
    /// several times faster than decoding it.
    #[inline]
    pub fn skip_event_before(&mut self, ns: i64) -> Option<i64> {
        self.skip_fixed(ns, 1).or_else(|| {
            let (f, bounds) = self.skip_context(ns)?;
            self.skip_one_by_length(f, &bounds)
        })
    }

    /// [`Cursor::skip_event_before`] for as long as it skips: returns the time of the last
    /// event skipped (`None`: none was).
    #[inline]
    pub fn skip_events_before(&mut self, ns: i64) -> Option<i64> {
        let mut last = self.skip_fixed_run(ns);
        // What the events skipped by their length check of the packet, read once (skipping
        // stays within the packet); the run of fixed-size ones reads its own, in its loop's
        // function.
        let Some((f, bounds)) = self.skip_context(ns) else { return last };
        while let Some(t) = self.skip_one_by_length(f, &bounds) {
            last = self.skip_fixed_run(ns).or(Some(t));
        }
        last
    }

    /// The events of fixed-size bodies before `ns`: the time of the last one (`None`:
    /// none). Its own function, so that the loop stays tight; an event skipped by its length
    /// ends it.
    #[inline(never)]
    fn skip_fixed_run(&mut self, ns: i64) -> Option<i64> {
        self.skip_fixed(ns, usize::MAX)
    }

    /// Skips up to `max` events of integers and text arrays only before `ns` (see
    /// [`Cursor::skip_event_before`]), with what it checks of the packet read once: the time
    /// of the last one (`None`: none).
    #[inline(always)]
    fn skip_fixed(&mut self, ns: i64, max: usize) -> Option<i64> {
        let (f, bounds) = self.skip_context(ns)?;
        match (f.large, f.byte_order) {
            (false, ByteOrder::Little) => self.skip_fixed_as::<false, false>(f.align, &bounds, max),
            (false, ByteOrder::Big) => self.skip_fixed_as::<false, true>(f.align, &bounds, max),
            (true, ByteOrder::Little) => self.skip_fixed_as::<true, false>(f.align, &bounds, max),
            (true, ByteOrder::Big) => self.skip_fixed_as::<true, true>(f.align, &bounds, max),
        }
    }

    /// [`Cursor::skip_fixed`] for one layout of the compact header ([`compact_header`]; the
    /// header aligned to `align` bits), with what each event changes (position, clock) held
    /// in locals and stored once at the end, and the time checks as two comparisons of cycles
    /// ([`SkipBounds`]): the loop carries no load of the cursor's fields from one event to the
    /// next.
    #[inline(always)]
    fn skip_fixed_as<const LARGE: bool, const BIG: bool>(&mut self, align: u64, bounds: &SkipBounds, max: usize) -> Option<i64> {
        let d = &self.decoder;
        let (data, limit, ids) = (d.data, d.limit, &self.fast_ids[..]);
        let bits = if LARGE { 48 } else { 32 };
        // The header's 8-byte read and its bits lie within the data and the packet's content.
        let last_start = limit.checked_sub(bits).zip((data.len() as u64).checked_sub(8)).map(|(a, b)| a.min(b * 8 + 7))?;
        let (mut pos, mut clock, mut floor) = (d.pos, d.clock, bounds.floor(self.floor));
        let mut skipped = 0;
        while skipped < max {
            let start = (pos + align - 1) & !(align - 1);
            if start > last_start {
                break;
            }
            let (tag, ts, ts_bits) = compact_header::<LARGE, BIG>(take(data, (start / 8) as usize));
            let Some(e) = ids.get(tag as usize) else { break };
            let end = ((start + bits + e.align - 1) & !(e.align - 1)) + e.bits;
            // `only_ints` is only set on the entry of a class (`ev` is then `Some`).
            if !e.only_ints || end > limit {
                break;
            }
            let c = next_clock(clock, ts, ts_bits);
            if !bounds.passes(c, floor) {
                break;
            }
            (pos, clock, floor) = (end, c, c);
            skipped += 1;
        }
        (skipped > 0).then(|| self.skipped_to(pos, clock, bounds))
    }

    /// [`Cursor::skip_event_before`] for an event whose body is skipped by its length alone.
    #[inline(never)]
    fn skip_one_by_length(&mut self, f: FastHeader, bounds: &SkipBounds) -> Option<i64> {
        let (tag, ts, ts_bits, body_start) = self.fast_header(f)?;
        let e = self.fast_ids.get(tag as usize)?;
        if !e.skip_by_length || e.ev.is_none() {
            return None;
        }
        let end = self.decoder.body_end(e.body?, body_start)?;
        let clock = next_clock(self.decoder.clock, ts, ts_bits);
        bounds.passes(clock, bounds.floor(self.floor)).then(|| self.skipped_to(end, clock, bounds))
    }

    /// Leaves the cursor after skipped events, the last of which ends at bit `pos` and is at
    /// `clock` cycles, as reading them would (on no event); returns that event's time in ns.
    #[inline(always)]
    fn skipped_to(&mut self, pos: u64, clock: u64, bounds: &SkipBounds) -> i64 {
        self.decoder.pos = pos;
        self.decoder.clock = clock;
        self.floor = clock;
        self.on_event = false;
        bounds.time(clock)
    }

    /// The fast path's header and what a skip before `ns` checks of the current packet, when
    /// the cursor reads events.
    #[inline(always)]
    fn skip_context(&self, ns: i64) -> Option<(FastHeader, SkipBounds)> {
        if self.state != State::Events {
            return None;
        }
        Some((self.fast?, SkipBounds::new(ns, self.index_times, self.ns_add)))
    }

    /// [`Cursor::fast_event`] for an event with LTTng's extended header (the id and the full
    /// timestamp after the tag: LTTng writes it for ids beyond the tag's range and after long
    /// gaps).
    #[inline(never)]
    fn fast_extended_event(&mut self) -> bool {
        let Some(f) = self.fast else { return false };
        let Some(option) = f.extended else { return false };
        let d = &self.decoder;
        let pos = d.pos;
        let start = (pos + f.align - 1) & !(f.align - 1);
        let at = (start / 8) as usize;
        let tag = match (f.large, f.byte_order, d.data.get(at..at + 2)) {
            (false, ByteOrder::Little, Some([b, _])) => u32::from(b & 31),
            (false, ByteOrder::Big, Some([b, _])) => u32::from(b >> 3),
            (true, ByteOrder::Little, Some(&[a, b])) => u32::from(u16::from_le_bytes([a, b])),
            (true, ByteOrder::Big, Some(&[a, b])) => u32::from(u16::from_be_bytes([a, b])),
            _ => return false,
        };
        if tag != extended_tag(f) {
            return false;
        }
        let Some((id, ts, bits)) = extended_header(f, d.data, start, d.limit) else { return false };
        let Some(&e) = self.fast_ids.get(id as usize) else { return false };
        self.fast_body(e, (tag, id, ts, 64), start + bits, pos, option, true)
    }

    /// The rest of [`Cursor::fast_event`]: the body of the class of `e` from `body_start`, the
    /// clock from the header's (tag, id, timestamp, timestamp bits), the header's fields (of
    /// `option`, the extended one or the common one); `pos` is where the event starts.
    #[inline(always)]
    fn fast_body(&mut self, e: FastEntry<'a>, header: (u32, u32, u64, u32), body_start: u64, pos: u64, option: usize, extended: bool) -> bool {
        let (tag, id, ts, ts_bits) = header;
        let d = &mut self.decoder;
        let (Some(ev), Some(Some(Template { fields: buf, .. }))) = (e.ev, self.templates.get_mut(e.k)) else { return false };
        let k = e.k;
        let event_clock = if e.only_ints {
            // One run of integers: read in place.
            let bstart = (body_start + e.align - 1) & !(e.align - 1);
            let base = (bstart / 8) as usize;
            if bstart + e.bits > d.limit {
                return false;
            }
            let bytes: &[u8] = if e.windowed {
                // Everything the body reads is in one fixed-size window: one bounds check.
                let Some(w) = d.data.get(base..).and_then(|b| b.first_chunk::<{ WINDOW + 8 }>()) else { return false };
                fill_ints_window(e.ints, e.ints_first, w, buf);
                w
            } else {
                let Some(bytes) = d.data.get(base..).filter(|b| b.len() >= e.reach) else { return false };
                fill_ints(e.ints, e.ints_reach, e.ints_first, bytes, buf);
                bytes
            };
            for &(i, o, fill) in e.texts {
                if let (crate::plan::Fill::Text(len), Some(x)) = (fill, buf.get_mut(i as usize)) {
                    x.value = crate::value::Value::Str(bytes.get(o as usize..(o + len) as usize).unwrap_or(&[]));
                }
            }
            d.update_clock(ts, ts_bits);
            d.pos = bstart + e.bits;
            d.clock
        } else {
            let Some(body) = e.body else { return false };
            let saved_clock = d.clock;
            d.update_clock(ts, ts_bits);
            let event_clock = d.clock;
            d.pos = body_start;
            if !d.run_body(body, buf) {
                d.pos = pos;
                d.clock = saved_clock;
                return false;
            }
            event_clock
        };
        let fields = self.header_templates.get_mut(option).map(|t| &mut t[..]);
        if extended {
            if let Some([_, tagf, _, _, idf, tsf, ..]) = fields {
                tagf.value = crate::value::Value::Unsigned(tag as u64);
                idf.value = crate::value::Value::Unsigned(id as u64);
                tsf.value = crate::value::Value::Unsigned(ts);
            }
        } else if let Some([_, idf, _, _, tsf, ..]) = fields {
            idf.value = crate::value::Value::Unsigned(id as u64);
            tsf.value = crate::value::Value::Unsigned(ts);
        }
        self.event_clock = event_clock;
        self.event = Some(ev);
        self.header_buf = option;
        self.body_buf = k;
        self.check_time(event_clock);
        self.on_event = true;
        true
    }

    /// [`Cursor::advance`] for everything but the fast path's common case.
    #[inline(never)]
    fn advance_slow(&mut self) -> Result<Option<Item>> {
        self.on_event = false;
        loop {
            match self.state {
                State::Done => return Ok(None),
                State::PacketStart => {
                    if self.packet >= self.end_packet {
                        self.state = State::Done;
                        return Ok(None);
                    }
                    self.enter_packet()?;
                }
                State::PendingPackets => {
                    self.state = State::Events;
                    let (entry_begin, entry_end) = self.times;
                    if self.pending.0 > 0 {
                        // Like babeltrace2: a time range only when packets have both times.
                        let timed = entry_begin.is_some() && entry_end.is_some();
                        let (begin, end) = if timed { (self.prev_end, entry_begin) } else { (None, None) };
                        return Ok(Some(Item::DiscardedPackets { count: self.pending.0, begin, end }));
                    }
                }
                State::PendingEvents => {
                    // Discarded events, then discarded packets, as babeltrace2 reports them.
                    self.state = State::PendingPackets;
                    let (entry_begin, entry_end) = self.times;
                    if self.pending.1 > 0 {
                        let timed = entry_begin.is_some() && entry_end.is_some();
                        let (begin, end) = if timed { (self.prev_end.or(entry_begin), entry_end) } else { (None, None) };
                        return Ok(Some(Item::DiscardedEvents { count: self.pending.1, begin, end }));
                    }
                }
                State::Events => {
                    if self.decoder.pos >= self.decoder.limit {
                        let entry = &self.stream.packets[self.packet];
                        let end = self.times.1;
                        self.prev_end = end.or(self.prev_end);
                        if let Some(e) = end {
                            self.check_time(e);
                        }
                        self.release_through(entry.file, entry.offset, entry.offset + self.decoder.data.len() as u64);
                        self.packet += 1;
                        self.state = State::PacketStart;
                        continue;
                    }
                    self.read_event()?;
                    self.on_event = true;
                    return Ok(Some(Item::Event));
                }
            }
        }
    }

    fn enter_packet(&mut self) -> Result<()> {
        let entry = &self.stream.packets[self.packet];
        self.index_times = (entry.begin.unwrap_or(0), entry.end.unwrap_or(u64::MAX));
        let file = &self.stream.files[entry.file as usize];
        let data = file.bytes();
        let mut slot = None;
        let (fresh, _) = read_packet(data, entry.offset, self.packet as u64, self.plans, self.stream.uuid, &mut self.packet_fields, &mut slot)
            .map_err(|e| Error::Stream { path: file.path.clone(), packet: e.packet, offset: e.offset, message: e.message })?;
        // An index entry (from LTTng's index) that disagrees with the packet: the packet's
        // header and context are trusted, as babeltrace2 does, and the mismatch is noted.
        let differs = |a: Option<u64>, b: Option<u64>| a.is_some() && a != b;
        if fresh.size != entry.size
            || fresh.content_bits != entry.content_bits
            || differs(entry.begin, fresh.begin)
            || differs(entry.end, fresh.end)
            || differs(entry.events_discarded, fresh.events_discarded)
            || differs(entry.seq_num, fresh.seq_num)
        {
            let opt = |v: Option<u64>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
            self.stream.repairs.note(self.packet, &file.path, entry.offset, || {
                format!(
                    "the index says {} bytes, {} content bits, times {}..{}, {} discarded, sequence {}; the packet says {} bytes, {} bits, times {}..{}, {} discarded, sequence {}",
                    entry.size,
                    entry.content_bits,
                    opt(entry.begin),
                    opt(entry.end),
                    opt(entry.events_discarded),
                    opt(entry.seq_num),
                    fresh.size,
                    fresh.content_bits,
                    opt(fresh.begin),
                    opt(fresh.end),
                    opt(fresh.events_discarded),
                    opt(fresh.seq_num)
                )
            });
        }
        self.times = (fresh.begin, fresh.end);
        // Re-decode into the cursor's own decoder so slots (e.g. sequence lengths in the
        // packet context) and the clock carry into this packet's events.
        let packet_bytes = &data[entry.offset as usize..(entry.offset + fresh.size) as usize];
        self.decoder.start_packet(packet_bytes, fresh.content_bits);
        self.decoder.specials = Specials::default();
        self.packet_fields.clear();
        let plan = &self.plans[self.stream.plan];
        if let Some(h) = plan.packet_header {
            self.decoder.decode(h, &mut self.packet_fields).map_err(|e| self.error(e.bit, e.message))?;
        }
        self.packet_split = self.packet_fields.len();
        if let Some(c) = plan.packet_context {
            self.decoder.decode(c, &mut self.packet_fields).map_err(|e| self.error(e.bit, e.message))?;
        }
        if let Some(b) = self.decoder.specials.packet_begin {
            self.decoder.clock = b;
            self.check_time(b);
        }
        // Lost packets and discarded events.
        let sp = self.decoder.specials;
        let lost_packets = match (self.prev_seq, sp.packet_seq_num) {
            (Some(p), Some(s)) if p.checked_add(1).is_some_and(|next| s > next) => s - p - 1,
            _ => 0,
        };
        if sp.packet_seq_num.is_some() {
            self.prev_seq = sp.packet_seq_num;
        }
        let lost_events = match sp.events_discarded {
            Some(d) if d > self.prev_discarded => {
                let n = d - self.prev_discarded;
                self.prev_discarded = d;
                n
            }
            Some(d) => {
                self.prev_discarded = d;
                0
            }
            None => 0,
        };
        self.pending = (lost_packets, lost_events);
        self.state = State::PendingEvents;
        if self.fast.is_none() && !self.generic_only && self.has_clock {
            let plan: &'a StreamPlan = self.plan;
            self.fast = plan.header.as_ref().and_then(|h| {
                let l = h.compact?;
                (self.decoder.clock_class == Some(l.clock) && h.root_align.is_power_of_two()).then_some(FastHeader {
                    large: l.large,
                    byte_order: l.byte_order,
                    align: h.root_align as u64,
                    option: l.option as usize,
                    extended: l.extended.map(|o| o as usize),
                })
            });
        }
        Ok(())
    }

    fn read_event(&mut self) -> Result<()> {
        let plan: &'a StreamPlan = &self.plans[self.stream.plan];
        let start = self.decoder.pos;
        self.event_fields.clear();
        self.header_buf = NO_BUF;
        self.body_buf = NO_BUF;
        self.decoder.specials.event_id = None;
        self.decoder.specials.timestamp_seen = false;
        if let Some(h) = plan.event_header {
            let fast = match &plan.header {
                Some(hp) if !self.generic_only => {
                    if self.header_templates.is_empty() {
                        self.header_templates = self.decoder.header_templates(hp);
                    }
                    self.decoder.run_header(hp, &mut self.header_templates)
                }
                _ => None,
            };
            match fast {
                Some(option) => self.header_buf = option,
                None => {
                    self.decoder.decode(h, &mut self.event_fields).map_err(|e| self.error(e.bit, format!("event header: {}", e.message)))?;
                }
            }
        }
        self.split[0] = self.event_fields.len();
        self.event_clock = self.decoder.clock;
        if self.ns_add.1 == 0 && self.has_clock {
            let base = self.clock_class().and_then(|c| {
                (c.freq == 1_000_000_000 && c.offset >= 0).then(|| c.offset_s.checked_mul(1_000_000_000).and_then(|b| b.checked_add(c.offset))).flatten()
            });
            if let Some(b) = base {
                self.ns_add = (b, (i64::MAX.abs_diff(b).min(1 << 62)));
            }
        }
        let id = self.decoder.specials.event_id.unwrap_or(0);
        let Some(ev) = plan.event(id) else {
            return Err(self.error(start, format!("unknown event class id {id} in stream class {}", plan.stream_class_id)));
        };
        if let Some(body) = plan.body(ev).filter(|_| !self.generic_only) {
            let k = ev.index as usize;
            if self.templates.len() <= k {
                self.templates.resize(plan.events.len().max(k + 1), None);
            }
            let decoder = &self.decoder;
            let buf = &mut self.templates[k].get_or_insert_with(|| Template { fields: decoder.template(body), scope_lens: body.scope_lens }).fields;
            // The class's buffer holds its compounds and nodes already: only the values
            // change from one event to the next.
            if self.decoder.run_body(body, buf) {
                self.body_buf = k;
                if let Some(f) = self.fast.filter(|f| self.header_buf == f.option || Some(self.header_buf) == f.extended) {
                    // The next events of this class can take the fast path (any id the table
                    // holds when the extended header is known, else the compact ones).
                    let max = match f.extended {
                        Some(_) => 1 << 16,
                        None if f.large => 65535,
                        None => 31,
                    };
                    if id < max && id < (1 << 16) && (f.extended.is_none() || id != u64::from(extended_tag(f))) {
                        if self.fast_ids.len() <= id as usize {
                            self.fast_ids.resize(id as usize + 1, FastEntry::NONE);
                        }
                        let seg = body.segments.first().filter(|_| body.only_ints);
                        // Bytes from the body's start that its reads touch.
                        let reach = seg.map_or(0, |s| {
                            let texts = s.rest.iter().map(|&(_, o, f)| o as usize + if let crate::plan::Fill::Text(n) = f { n as usize } else { 0 });
                            texts.chain([s.ints_reach as usize]).max().unwrap_or(0)
                        });
                        self.fast_ids[id as usize] = FastEntry {
                            ev: Some(ev),
                            body: Some(body),
                            ints: seg.map_or(&[][..], |s| &s.ints[..]),
                            ints_reach: seg.map_or(0, |s| s.ints_reach as usize),
                            ints_first: seg.map_or(u32::MAX, |s| s.ints_first),
                            texts: seg.map_or(&[][..], |s| &s.rest[..]),
                            align: seg.map_or(1, |s| s.align as u64),
                            bits: seg.map_or(0, |s| s.bits),
                            reach,
                            only_ints: seg.is_some(),
                            windowed: seg.is_some() && reach < WINDOW + 8,
                            skip_by_length: seg.is_none() && body.skippable(),
                            k,
                        };
                    }
                }
                return self.finish_event(start, ev);
            }
        }
        if let Some(c) = plan.event_context {
            self.decoder.decode(c, &mut self.event_fields).map_err(|e| self.error(e.bit, format!("stream event context: {}", e.message)))?;
        }
        self.split[1] = self.event_fields.len();
        if let Some(c) = ev.context {
            self.decoder.decode(c, &mut self.event_fields).map_err(|e| self.error(e.bit, format!("event context of `{}`: {}", ev.class.name, e.message)))?;
        }
        self.split[2] = self.event_fields.len();
        if let Some(p) = ev.payload {
            self.decoder.decode(p, &mut self.event_fields).map_err(|e| self.error(e.bit, format!("payload of `{}`: {}", ev.class.name, e.message)))?;
        }
        self.split[3] = self.event_fields.len();
        self.finish_event(start, ev)
    }

    #[inline]
    fn finish_event(&mut self, start: u64, ev: &'a EventLayout) -> Result<()> {
        if self.decoder.pos == start {
            return Err(self.error(start, "an event record of size 0: decoding makes no progress".into()));
        }
        self.event = Some(ev);
        if self.has_clock {
            self.check_time(self.event_clock);
        }
        Ok(())
    }

    /// Counts a time earlier than the latest one seen in this stream.
    #[inline(always)]
    fn check_time(&mut self, cycles: u64) {
        if cycles < self.floor {
            self.time_anomaly(cycles);
        } else {
            self.floor = cycles;
        }
    }

    #[cold]
    #[inline(never)]
    fn time_anomaly(&mut self, cycles: u64) {
        self.anomalies += 1;
        if self.first_anomaly.is_none() {
            self.first_anomaly = Some(TimeAnomaly { packet: self.packet as u64, cycles, floor: self.floor });
        }
    }

    /// The current packet's entry.
    pub fn packet(&self) -> Option<&'a PacketEntry> {
        self.stream.packets.get(self.packet)
    }

    /// The event the cursor is on (after [`Cursor::advance`] returned [`Item::Event`]).
    ///
    /// Inlined, and without a panic path: a caller that reads a few scopes pays for those only.
    #[inline(always)]
    pub fn event(&self) -> Option<EventView<'a, '_>> {
        let class = self.event?;
        let cycles = self.has_clock.then_some(self.event_clock);
        let f = &self.event_fields[..];
        let p = &self.packet_fields[..];
        let cut = |list: &'_ [Field<'a>], from: usize, to: usize| -> usize { to.min(list.len()).max(from.min(list.len())) };
        let header: &[Field<'a>] = match self.header_templates.get(self.header_buf) {
            Some(b) => &b[..],
            None => f.get(..self.split[0]).unwrap_or(&[]),
        };
        let body = self.templates.get(self.body_buf).and_then(|b| b.as_ref());
        let [common_context, context, payload] = match body {
            Some(Template { fields: buf, scope_lens }) => {
                let [a, b, c] = scope_lens.map(|n| n as usize);
                let (x, rest) = buf.split_at(a.min(buf.len()));
                let (y, rest) = rest.split_at(b.min(rest.len()));
                [x, y, rest.get(..c).unwrap_or(rest)]
            }
            _ => {
                let [s0, s1, s2, s3] = self.split;
                let (a, b) = (cut(f, 0, s0), cut(f, s0, s1));
                let (c, d) = (cut(f, b, s2), cut(f, s2, s3));
                [f.get(a..b).unwrap_or(&[]), f.get(b..c).unwrap_or(&[]), f.get(c..d).unwrap_or(&[])]
            }
        };
        let (packet_header, packet_context) = p.split_at(self.packet_split.min(p.len()));
        Some(EventView {
            class,
            cycles,
            ns: if self.event_clock < self.ns_add.1 {
                // `ns_add.1` is 0 unless the stream has a clock (`cycles` is `Some`).
                Some(self.ns_add.0 + self.event_clock as i64)
            } else {
                cycles.and_then(|c| self.cycles_to_ns(c))
            },
            packet_header: Fields { list: packet_header },
            packet_context: Fields { list: packet_context },
            header: Fields { list: header },
            common_context: Fields { list: common_context },
            context: Fields { list: context },
            payload: Fields { list: payload },
        })
    }

    /// The current clock value in nanoseconds from the clock's origin ([`Cursor::clock`]
    /// through [`Cursor::cycles_to_ns`], in one comparison and one addition for LTTng's
    /// clocks): an event's time on an event.
    #[inline(always)]
    pub fn clock_ns(&self) -> Option<i64> {
        let c = self.cycles();
        // `ns_add.1` is 0 unless the stream has a clock.
        if c < self.ns_add.1 {
            Some(self.ns_add.0 + c as i64)
        } else {
            self.clock().and_then(|c| self.cycles_to_ns(c))
        }
    }

    /// Whether the current clock value (an event's time on an event) lies within the time
    /// range the stream's index gives the current packet (`timestamp_begin` to
    /// `timestamp_end`): true when the stream has no clock or the index lacks a bound.
    #[inline(always)]
    pub fn in_packet(&self) -> bool {
        let c = self.cycles();
        !self.has_clock || (self.index_times.0 <= c && c <= self.index_times.1)
    }

    /// The current clock value in cycles, if the stream has a clock.
    pub fn clock(&self) -> Option<u64> {
        self.has_clock.then_some(self.cycles())
    }

    /// The current clock value in cycles, whether or not the stream has a clock: an event's
    /// time on an event, else the stream clock's.
    #[inline(always)]
    fn cycles(&self) -> u64 {
        if self.on_event { self.event_clock } else { self.decoder.clock }
    }
}

/// Whether any integer of the stream-level scopes is mapped to a clock.
fn plan_has_clock(plan: &StreamPlan) -> bool {
    let mut stack: Vec<u32> = [plan.packet_context, plan.event_header].into_iter().flatten().collect();
    let mut seen = 0usize;
    while let Some(id) = stack.pop() {
        seen += 1;
        if seen > 100_000 {
            break;
        }
        match &plan.node(id).kind {
            NodeKind::Int(i) if i.clock.is_some() => return true,
            NodeKind::Struct { fields } => stack.extend(fields),
            NodeKind::Variant { options, .. } => stack.extend(options),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::SkipBounds;
    use proptest::prelude::*;

    proptest! {
        // Cheap cases, and a pass needs every bound on the right side of the clock.
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// A skip's two comparisons of cycles ([`SkipBounds`]) decide as the checks they
        /// stand for, taken one by one: cycles below the one-addition mapping's limit, a time
        /// in ns before `ns`, no earlier than the event before, within the packet's range;
        /// and give the time that one addition gives.
        #[test]
        fn skip_bounds_decide_as_each_check(
            clock in prop_oneof![0..100u64, any::<u64>()],
            // Each bound near the clock (an offset of -2 to 2), or anywhere.
            near in prop::array::uniform5(prop_oneof![7 => (-2..=2i64).prop_map(Some), 1 => Just(None)]),
            far in prop::array::uniform5(any::<u64>()),
            base in prop_oneof![0..50i64, Just(i64::MAX - 20)],
        ) {
            let at = |i: usize| near[i].map_or(far[i], |d| clock.saturating_add_signed(d));
            let (floor, lo, limit) = (at(0), at(1), at(3));
            let hi = if far[2] % 4 == 0 { u64::MAX } else { at(2) };
            let ns = near[4].map_or(far[4] as i64, |d| base.wrapping_add(clock as i64).saturating_add(d));
            // The mapping's limit keeps `base + clock` within i64 (see `Cursor::ns_add`).
            let limit = limit.min((i64::MAX - base) as u64);
            let t = base.wrapping_add(clock as i64);
            let each = !(clock >= limit || t >= ns || clock < floor || clock < lo || clock > hi);
            let b = SkipBounds::new(ns, (lo, hi), (base, limit));
            prop_assert_eq!(b.passes(clock, b.floor(floor)), each);
            if each {
                prop_assert_eq!(b.time(clock), t);
            }
        }
    }
}
