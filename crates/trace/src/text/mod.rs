//! babeltrace2's `sink.text.pretty` output, byte for byte (babeltrace2 2.0.4 with its default
//! options unless [`TextOptions`] says otherwise):
//!
//! ```text
//! [19:15:41.344453871] (+0.000005019) host:proc:(1234) name: { pkt ctx }, { stream ev ctx }, { ev ctx }, { payload }
//! ```
//!
//! What babeltrace2 shows of a trace is its *trace IR*, which `src.ctf.fs` derives from the CTF
//! metadata; [`Layout`] reproduces that derivation once per stream class:
//!
//! * the packet header and the event header are never shown;
//! * an integer is hidden when it is mapped to a clock (explicitly, or implicitly like the
//!   packet context's `timestamp_begin`/`timestamp_end`), or when it is a direct member of the
//!   packet context named `timestamp_begin`, `timestamp_end`, `content_size`, `packet_size`,
//!   `events_discarded` or `packet_seq_num` — unless a shown sequence or variant uses it as
//!   its length or tag;
//! * a structure none of whose members is shown is hidden (an originally empty structure is
//!   shown as `{ }`); an array is hidden when its element is; a variant is shown when one of its
//!   options is, and then all its options are;
//! * a scope is printed (as `{ ... }`, separated by `, `) only when its root structure is shown.
//!
//! Events of a stream without a clock have no `[time] (+delta)` prefix. The delta of the first
//! event printed is `+?.?????????`. Times are local time (`TZ`), from the clock's nanoseconds
//! from origin.
//!
//! Discarded events and packets become babeltrace2's `WARNING: Tracer discarded ...` lines,
//! which babeltrace2 2.0.4 writes to **standard error**; [`TextPrinter::write_discarded`] writes
//! them to whatever it is given.
//!
//! Events with equal timestamps come out in babeltrace2's order when the merger is given
//! [`Layout::tie_break_ranks`] (see [`crate::Merger::set_tie_break`]); this matters for which
//! event is first (the one without a delta).
//!
//! Deliberately not reproduced: babeltrace2 2.0.4 prints an empty string field as a stale
//! earlier value of that field (it recycles field objects and clears a string by setting its
//! length to 0 without terminating it); tracelens prints `""`.

use std::io::{self, Write};

use tracelens_ctf::ir::DisplayBase;
use tracelens_ctf::plan::NodeKind;
use tracelens_ctf::{EventView, Field, Fields, Value};

use crate::program::{How, Program, ProgramBuilder, Programs};
use crate::set::{Source, TraceSet};
use crate::write::{broken_down, nine_digits, put_decimal, write_escaped, write_g, write_hex_upper, write_i64, write_octal, write_u64, write_u64_pad, write_uuid, LineOut, StackBuf};

mod options;

// The text output's parts, under the paths the crate has always given them.
pub use crate::discarded::{Discarded, DiscardedItems};
pub use crate::layout::{absolute, trace_names, Layout, PlanLayout, StreamLayout, TraceLayout};
pub use crate::write::{escape_controls, init_timezone};
pub use options::TextOptions;

const LOG_LEVELS: [&str; 15] = [
    "TRACE_EMERG",
    "TRACE_ALERT",
    "TRACE_CRIT",
    "TRACE_ERR",
    "TRACE_WARNING",
    "TRACE_NOTICE",
    "TRACE_INFO",
    "TRACE_DEBUG_SYSTEM",
    "TRACE_DEBUG_PROGRAM",
    "TRACE_DEBUG_PROCESS",
    "TRACE_DEBUG_MODULE",
    "TRACE_DEBUG_UNIT",
    "TRACE_DEBUG_FUNCTION",
    "TRACE_DEBUG_LINE",
    "TRACE_DEBUG",
];

/// A broken-down time: (year, month, day), hour, minute, second.
struct LocalTime {
    date: (i32, u32, u32),
    h: u32,
    m: u32,
    s: u32,
}

/// Cache of the last broken-down minute, to call `localtime_r` about once a minute.
#[derive(Clone, Copy, Debug)]
struct MinuteCache {
    start: i64,
    gmt: bool,
    date: (i32, u32, u32),
    hm: (u32, u32),
}

/// Formats events like babeltrace2's `sink.text.pretty`. Keeps the state babeltrace2 keeps
/// between events (the previous timestamp for the delta).
pub struct TextPrinter {
    opts: TextOptions,
    layout: Layout,
    st: State,
}

/// What babeltrace2 remembers between lines.
#[derive(Default)]
struct State {
    last_ns: Option<i64>,
    delta_ns: Option<i64>,
    last_cycles: Option<u64>,
    delta_cycles: Option<u64>,
    negative_warned: bool,
    minute: Option<MinuteCache>,
    /// The second last printed in the fast path, whether in UTC, and its `[HH:MM:SS.`.
    second: Option<(i64, bool, [u8; 16])>,
    /// Warnings are not printed but noted in `warned`.
    quiet: bool,
    warned: bool,
    /// [`trace_fields`]'s bytes of each trace, once made.
    heads: Vec<Option<Box<[u8]>>>,
    /// The line programs of event classes.
    programs: Programs,
    /// Print every event by the walk (no line programs).
    walk_only: bool,
}

/// The names of the four scopes a line shows, in order (with `--names scope`).
const SCOPES: [&str; 4] = ["stream.packet.context", "stream.event.context", "event.context", "event.fields"];

/// The room [`put_stamp`] writes in.
const STAMP_ROOM: usize = 64;

/// Puts the common line start `[HH:MM:SS.NNNNNNNNN] (+S.NNNNNNNNN) ` at the start of `b`
/// (which has [`STAMP_ROOM`] bytes): `head` is `[HH:MM:SS.` of `ns`, `delta` the delta
/// column when it is shown (`Some(None)`: no previous event); returns how many bytes.
#[inline]
fn put_stamp(b: &mut [u8], head: &[u8; 16], ns: i64, delta: Option<Option<i64>>) -> usize {
    let b = &mut b[..STAMP_ROOM];
    b[..16].copy_from_slice(head);
    nine_digits(&mut b[10..], (ns % 1_000_000_000) as u32);
    b[19..21].copy_from_slice(b"] ");
    let mut n = 21;
    if let Some(delta) = delta {
        b[n] = b'(';
        n += 1;
        match delta {
            None => {
                b[n..n + UNKNOWN_DELTA.len()].copy_from_slice(UNKNOWN_DELTA);
                n += UNKNOWN_DELTA.len();
            }
            Some(d) => {
                let d = d as u64;
                b[n] = b'+';
                n += 1;
                n += put_decimal(&mut b[n..], d / 1_000_000_000);
                b[n] = b'.';
                nine_digits(&mut b[n + 1..], (d % 1_000_000_000) as u32);
                n += 10;
            }
        }
        b[n..n + 2].copy_from_slice(b") ");
        n += 2;
    }
    n
}

/// What the `(+delta)` column shows for the first event printed (no previous event).
pub const UNKNOWN_DELTA: &[u8] = b"+?.?????????";

/// Writes a time difference the way the `(+delta)` column does: `+SECONDS.NANOSECONDS`.
pub fn write_delta_ns(out: &mut impl Write, d: i64) -> io::Result<()> {
    let d = d as u64;
    out.write_all(b"+")?;
    write_u64(out, d / 1_000_000_000)?;
    out.write_all(b".")?;
    write_u64_pad(out, d % 1_000_000_000, 9)
}

/// Per-event printing context for fields.
struct FieldCx<'a> {
    pl: &'a PlanLayout,
    names: bool,
}

impl TextPrinter {
    /// A printer for the traces of `set`, named `names` (see [`trace_names`]).
    pub fn new(set: &TraceSet, names: &[String], opts: TextOptions) -> TextPrinter {
        init_timezone();
        TextPrinter::with_layout(Layout::new(set, names), opts)
    }

    /// A printer over a computed [`Layout`].
    pub fn with_layout(layout: Layout, opts: TextOptions) -> TextPrinter {
        TextPrinter { opts, layout, st: State::default() }
    }

    /// The layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Forgets the previous event: the next one printed gets [`UNKNOWN_DELTA`], as the first
    /// of a trace does (for a printer that starts again in the middle of the events).
    pub fn restart(&mut self) {
        let st = &mut self.st;
        (st.last_ns, st.delta_ns, st.last_cycles, st.delta_cycles) = (None, None, None, None);
    }

    /// With `quiet`, the warnings babeltrace2 prints on standard error while formatting (a
    /// negative time, a time without a local time) are not printed, only noted: see
    /// [`TextPrinter::warned`].
    pub fn set_quiet(&mut self, quiet: bool) {
        self.st.quiet = quiet;
    }

    /// Whether lines show the `(+delta)` column in nanoseconds (and so [`UNKNOWN_DELTA`] on
    /// the first event).
    pub fn shows_delta(&self) -> bool {
        self.opts.delta && !self.opts.clock_cycles
    }

    /// Whether events of a class whose fields always have the same shape are printed by the
    /// class's line program (the default), compiled from its first event, instead of walking
    /// their fields one by one. Both write the same bytes (tests compare them); this is for
    /// tests and measurements.
    pub fn set_line_programs(&mut self, on: bool) {
        self.st.walk_only = !on;
    }

    /// How many event classes seen so far have a line program, and how many are printed by
    /// walking their fields (see [`TextPrinter::set_line_programs`]).
    pub fn line_programs(&self) -> (usize, usize) {
        self.st.programs.counts()
    }

    /// Whether a warning was due since [`TextPrinter::set_quiet`] (printed or not).
    pub fn warned(&self) -> bool {
        self.st.warned
    }

    /// Writes one event line (newline included).
    pub fn write_event(&mut self, out: &mut impl LineOut, src: Source, ev: &EventView<'_, '_>) -> io::Result<()> {
        let TextPrinter { opts, layout, st } = self;
        st.event(out, opts, layout, src, ev)
    }

    /// Writes babeltrace2's warning line about discarded events or packets of stream `src`
    /// (`WARNING: Tracer discarded N events between [T1] and [T2] in trace ...`).
    pub fn write_discarded(&mut self, out: &mut impl Write, src: Source, d: &DiscardedItems) -> io::Result<()> {
        // Build the line first: a warning printed while formatting its times (negative time)
        // must come before it, as with babeltrace2.
        let mut line = Vec::with_capacity(256);
        let TextPrinter { opts, layout, st } = self;
        st.discarded(&mut line, opts, layout, src, d)?;
        out.write_all(&line)
    }
}

impl State {
    fn event(&mut self, out: &mut impl LineOut, opts: &TextOptions, layout: &Layout, src: Source, ev: &EventView<'_, '_>) -> io::Result<()> {
        let Some(tl) = layout.traces.get(src.trace) else { return Ok(()) };
        let Some(sl) = tl.streams.get(src.stream) else { return Ok(()) };
        let Some(pl) = tl.plans.get(sl.plan) else { return Ok(()) };
        let pn = opts.names_header;
        let mut start_line = true;

        // Timestamp and delta: the common case (`[HH:MM:SS.NNNNNNNNN] (+S.NNNNNNNNN) `) made
        // in the room the writer lends (else on the stack) and written at once.
        let fast = ev.ns.filter(|&ns| ns >= 0 && !pn && !opts.clock_cycles && !opts.clock_seconds && !opts.clock_date);
        if let Some((ns, head)) = fast.and_then(|ns| Some((ns, self.second_of(opts, ns / 1_000_000_000)?))) {
            if let Some(last) = self.last_ns {
                self.delta_ns = Some(ns.wrapping_sub(last));
            }
            self.last_ns = Some(ns);
            let delta = opts.delta.then_some(self.delta_ns);
            match out.room(STAMP_ROOM)? {
                Some(room) => {
                    let n = put_stamp(room, &head, ns, delta);
                    out.filled(n);
                }
                None => {
                    let mut b = [0u8; STAMP_ROOM];
                    let n = put_stamp(&mut b, &head, ns, delta);
                    out.write_all(&b[..n])?;
                }
            }
        } else if let Some(ns) = ev.ns {
            out.write_all(if pn { b"timestamp = " } else { b"[" })?;
            if opts.clock_cycles {
                let cycles = ev.cycles.unwrap_or(0);
                write_u64_pad(out, cycles, 20)?;
                if let Some(last) = self.last_cycles {
                    self.delta_cycles = Some(cycles.wrapping_sub(last));
                }
                self.last_cycles = Some(cycles);
            } else {
                if let Some(last) = self.last_ns {
                    self.delta_ns = Some(ns.wrapping_sub(last));
                }
                self.last_ns = Some(ns);
                self.wall(out, opts, ns)?;
            }
            if !pn {
                out.write_all(b"] ")?;
            }
            if opts.delta {
                out.write_all(if pn { b", delta = " } else { b"(" })?;
                if opts.clock_cycles {
                    match self.delta_cycles {
                        None => out.write_all(b"+????????????")?,
                        Some(d) => {
                            out.write_all(b"+")?;
                            write_u64_pad(out, d, 12)?;
                        }
                    }
                } else {
                    match self.delta_ns {
                        None => out.write_all(UNKNOWN_DELTA)?,
                        Some(d) => write_delta_ns(out, d)?,
                    }
                }
                if !pn {
                    out.write_all(b") ")?;
                }
            }
            start_line = !pn;
        }

        // Trace name and environment: the same bytes for every event of a trace unless the
        // header's field names, log levels or EMF URIs are shown (made once per trace then).
        let class = &ev.class.class;
        let head = if !pn && !opts.field_loglevel && !opts.field_emf {
            if self.heads.len() <= src.trace {
                self.heads.resize(src.trace + 1, None);
            }
            Some(match &mut self.heads[src.trace] {
                Some(h) => &**h,
                slot => {
                    let mut h = Vec::new();
                    trace_fields(&mut h, opts, tl, class, start_line)?;
                    slot.insert(h.into_boxed_slice())
                }
            })
        } else {
            None
        };
        // The rest: by the class's line program (made from its first event, and starting with
        // the trace's head when it is the same for every event) when it has one.
        let (nc, np, ns) = (opts.names_context, opts.names_payload, opts.names_scope);
        let names = [nc, nc, nc, np];
        let scopes = [ev.packet_context, ev.common_context, ev.context, ev.payload];
        let mut cx = FieldCx { pl, names: nc };
        let program = self.programs.slot(src.trace, sl.plan, ev.class.index());
        if self.walk_only {
            *program = Program::Walk;
        }
        if let Program::Unknown = program {
            let mut b = ProgramBuilder::new(head.unwrap_or_default());
            class_name(&mut b.lits, class, pn)?;
            *program = match compile(&mut b, pl, names, ns, scopes).and_then(|()| b.finish(scopes)) {
                Some(p) => Program::Compiled(p),
                None => Program::Walk,
            };
        }
        if let Program::Compiled(p) = program {
            if p.fits(scopes) {
                if head.is_none() {
                    trace_fields(out, opts, tl, class, start_line)?;
                }
                return p.run(out, scopes, |out, fields, at, scope| {
                    cx.names = names[scope];
                    write_field(out, &mut cx, fields, at)
                });
            }
        }
        match head {
            Some(h) => out.write_all(h)?,
            None => trace_fields(out, opts, tl, class, start_line)?,
        }
        class_name(out, class, pn)?;
        let mut start_line = true;
        for (k, fields) in scopes.into_iter().enumerate() {
            cx.names = names[k];
            scope(out, &mut cx, fields, SCOPES[k], ns, &mut start_line)?;
        }
        out.write_all(b"\n")
    }

    /// Writes a time as babeltrace2 does (`HH:MM:SS.NNNNNNNNN`, or per the clock options).
    fn wall(&mut self, out: &mut impl Write, opts: &TextOptions, ns: i64) -> io::Result<()> {
        const NS: i64 = 1_000_000_000;
        let (sec, nsec) = (ns / NS, ns % NS);
        let (neg, sec_abs, nsec_abs): (bool, u64, u64) = if sec >= 0 && nsec >= 0 {
            (false, sec as u64, nsec as u64)
        } else if sec > 0 && nsec < 0 {
            (false, (sec - 1) as u64, (NS + nsec) as u64)
        } else if sec == 0 && nsec < 0 {
            (true, 0, (-nsec) as u64)
        } else if sec < 0 && nsec > 0 {
            (true, (-(sec + 1)) as u64, (NS - nsec) as u64)
        } else if sec < 0 && nsec == 0 {
            (true, sec.unsigned_abs(), 0)
        } else {
            (true, sec.unsigned_abs(), nsec.unsigned_abs())
        };
        if !opts.clock_seconds {
            let fallback = if neg && !self.negative_warned {
                self.negative_warned = true;
                self.warn("[warning] Fallback to [sec.ns] to print negative time value. Use --clock-seconds.");
                true
            } else {
                false
            };
            if !fallback {
                if let Some(LocalTime { date, h, m, s }) = self.minute_of(opts, sec_abs as i64) {
                    if opts.clock_date {
                        let mut b = StackBuf::<32>::new();
                        let _ = std::fmt::Write::write_fmt(&mut b, format_args!("{}-{:02}-{:02} ", date.0, date.1, date.2));
                        out.write_all(b.bytes())?;
                    }
                    let hms = [
                        b'0' + (h / 10) as u8,
                        b'0' + (h % 10) as u8,
                        b':',
                        b'0' + (m / 10) as u8,
                        b'0' + (m % 10) as u8,
                        b':',
                        b'0' + (s / 10) as u8,
                        b'0' + (s % 10) as u8,
                        b'.',
                    ];
                    out.write_all(&hms)?;
                    return write_u64_pad(out, nsec_abs, 9);
                }
                self.warn("[warning] Unable to get localtime.");
            }
        }
        if neg {
            out.write_all(b"-")?;
        }
        write_u64(out, sec_abs)?;
        out.write_all(b".")?;
        write_u64_pad(out, nsec_abs, 9)
    }

    fn warn(&mut self, line: &str) {
        self.warned = true;
        if !self.quiet {
            eprintln!("{line}");
        }
    }

    /// `[HH:MM:SS.` of `secs`, local or UTC, made once a second.
    #[inline]
    fn second_of(&mut self, opts: &TextOptions, secs: i64) -> Option<[u8; 16]> {
        let gmt = opts.clock_gmt;
        match self.second {
            Some((at, g, head)) if at == secs && g == gmt => Some(head),
            _ => {
                let LocalTime { h, m, s, .. } = self.minute_of(opts, secs)?;
                let mut head = [0u8; 16];
                head[..10].copy_from_slice(&[b'[', b'0' + (h / 10) as u8, b'0' + (h % 10) as u8, b':', b'0' + (m / 10) as u8, b'0' + (m % 10) as u8, b':', b'0' + (s / 10) as u8, b'0' + (s % 10) as u8, b'.']);
                self.second = Some((secs, gmt, head));
                Some(head)
            }
        }
    }

    /// Local (or UTC) date, hour, minute and second of `secs`, with a one-minute cache.
    fn minute_of(&mut self, opts: &TextOptions, secs: i64) -> Option<LocalTime> {
        let gmt = opts.clock_gmt;
        if let Some(c) = self.minute {
            if c.gmt == gmt && secs >= c.start && secs < c.start + 60 {
                return Some(LocalTime { date: c.date, h: c.hm.0, m: c.hm.1, s: (secs - c.start) as u32 });
            }
        }
        let (y, mo, d, h, mi, s) = broken_down(secs, gmt)?;
        if s < 60 {
            self.minute = Some(MinuteCache { start: secs - s as i64, gmt, date: (y, mo, d), hm: (h, mi) });
        }
        Some(LocalTime { date: (y, mo, d), h, m: mi, s })
    }

}

impl State {

    fn discarded(&mut self, out: &mut impl Write, opts: &TextOptions, layout: &Layout, src: Source, d: &DiscardedItems) -> io::Result<()> {
        let (kind, count, begin_ns, end_ns) = (d.kind, d.exact.then_some(d.count), d.begin_ns, d.end_ns);
        let Some(tl) = layout.traces.get(src.trace) else { return Ok(()) };
        let Some(sl) = tl.streams.get(src.stream) else { return Ok(()) };
        let elem: &[u8] = match kind {
            Discarded::Events => b"event",
            Discarded::Packets => b"packet",
        };
        match count {
            None => {
                out.write_all(b"WARNING: Tracer may have discarded ")?;
                out.write_all(elem)?;
                out.write_all(b"s")?;
            }
            Some(count) => {
                out.write_all(b"WARNING: Tracer discarded ")?;
                write_u64(out, count)?;
                out.write_all(b" ")?;
                out.write_all(elem)?;
                if count != 1 {
                    out.write_all(b"s")?;
                }
            }
        }
        out.write_all(b" ")?;
        match (begin_ns, end_ns) {
            (Some(b), Some(e)) => {
                out.write_all(b"between [")?;
                self.wall(out, opts, b)?;
                out.write_all(b"] and [")?;
                self.wall(out, opts, e)?;
                out.write_all(b"]")?;
            }
            _ => out.write_all(b"(unknown time range)")?,
        }
        out.write_all(b" in trace \"")?;
        out.write_all(tl.name.as_bytes())?;
        out.write_all(b"\" ")?;
        match &tl.uuid {
            Some(u) => {
                out.write_all(b"(UUID: ")?;
                write_uuid(out, u)?;
                out.write_all(b") ")?;
            }
            None => out.write_all(b"(no UUID) ")?,
        }
        out.write_all(b"within stream \"")?;
        out.write_all(sl.path.as_bytes())?;
        out.write_all(b"\" (stream class ID: ")?;
        write_u64(out, sl.class_id)?;
        out.write_all(b", stream ID: ")?;
        write_u64(out, sl.id)?;
        out.write_all(b").\n")
    }
}

/// Compiles the scopes of the event whose scopes are `scopes` into `b`, as [`scope`] writes
/// them; `None` when the event's class can change shape (see [`crate::program`]).
fn compile(b: &mut ProgramBuilder, pl: &PlanLayout, names: [bool; 4], names_scope: bool, scopes: [Fields<'_, '_>; 4]) -> Option<()> {
    let mut start_line = true;
    for (k, fields) in scopes.into_iter().enumerate() {
        if scope_prefix(&mut b.lits, pl, fields, SCOPES[k], names_scope, &mut start_line).ok()? {
            compile_field(b, pl, names[k], fields, k, 0)?;
        }
    }
    b.lits.push(b'\n');
    Some(())
}

/// Compiles the field at `at` of scope `scope` (`fields`) and its descendants as
/// [`write_field`] writes them; `None` when a field's shape can change between events.
fn compile_field(b: &mut ProgramBuilder, pl: &PlanLayout, names: bool, fields: Fields<'_, '_>, scope: usize, at: usize) -> Option<()> {
    let f = fields.list.get(at)?;
    let how = match f.value {
        Value::Compound { .. } => {
            let NodeKind::Struct { .. } = &f.node.kind else { return None };
            let label = |lits: &mut Vec<u8>, c: &Field<'_>, first| member_label(lits, pl, names, c, first).ok();
            return b.structure(fields, at, [b"{", b" }"], label, |b, i| compile_field(b, pl, names, fields, scope, i));
        }
        Value::Unsigned(_) | Value::Signed(_) => match &f.node.kind {
            NodeKind::Int(int) if !int.boolean && int.enumeration.is_none() => match int.base {
                DisplayBase::Decimal => How::Decimal,
                DisplayBase::Hexadecimal => How::Hex(int.size),
                _ => How::Walk,
            },
            _ => How::Walk,
        },
        Value::Str(_) if !matches!(f.node.kind, NodeKind::Blob { .. } | NodeKind::WideString(_)) => How::TextStr,
        _ => How::Walk,
    };
    b.op(how, scope, at)
}

/// Writes the event's name (`<unknown>` when it has none) and what follows it.
fn class_name<W: Write + ?Sized>(out: &mut W, class: &tracelens_ctf::ir::EventClass, names_header: bool) -> io::Result<()> {
    out.write_all(if class.name.is_empty() { b"<unknown>" } else { class.name.as_bytes() })?;
    out.write_all(if names_header { b", " } else { b": " })
}

/// Writes the event header's trace part (`--fields`): trace name, hostname, domain, process
/// name, VPID, log level and EMF URI of `class`, then what comes before the event name.
fn trace_fields<W: Write>(out: &mut W, opts: &TextOptions, tl: &TraceLayout, class: &tracelens_ctf::ir::EventClass, start_line: bool) -> io::Result<()> {
    let pn = opts.names_header;
    let mut dom_print = false;
    if opts.field_trace {
        if !start_line {
            out.write_all(b", ")?;
        }
        if pn {
            out.write_all(b"trace = ")?;
        }
        out.write_all(tl.name.as_bytes())?;
        if pn {
            out.write_all(b", ")?;
        }
    }
    if opts.field_hostname {
        if let Some(h) = &tl.hostname {
            if !start_line {
                out.write_all(b", ")?;
            }
            if pn {
                out.write_all(b"trace:hostname = ")?;
            }
            out.write_all(h.as_bytes())?;
            dom_print = true;
        }
    }
    let mut dom_field = |out: &mut dyn Write, label: &[u8], body: &dyn Fn(&mut dyn Write) -> io::Result<()>| -> io::Result<()> {
        if !start_line {
            out.write_all(b", ")?;
        }
        if pn {
            out.write_all(label)?;
        } else if dom_print {
            out.write_all(b":")?;
        }
        body(out)?;
        dom_print = true;
        Ok(())
    };
    if opts.field_domain {
        if let Some(d) = &tl.domain {
            dom_field(out, b"trace:domain = ", &|o| o.write_all(d.as_bytes()))?;
        }
    }
    if opts.field_procname {
        if let Some(p) = &tl.procname {
            dom_field(out, b"trace:procname = ", &|o| o.write_all(p.as_bytes()))?;
        }
    }
    if opts.field_vpid {
        if let Some(v) = tl.vpid {
            dom_field(out, b"trace:vpid = ", &|o| {
                o.write_all(b"(")?;
                write_i64(o, v)?;
                o.write_all(b")")
            })?;
        }
    }
    if opts.field_loglevel {
        if let Some(l) = class.loglevel.filter(|l| (0..15).contains(l)) {
            dom_field(out, b"loglevel = ", &|o| {
                o.write_all(LOG_LEVELS[l as usize].as_bytes())?;
                o.write_all(b" (")?;
                write_i64(o, l)?;
                o.write_all(b")")
            })?;
        }
    }
    if opts.field_emf {
        if let Some(u) = class.model_emf_uri.as_deref().filter(|u| !u.is_empty()) {
            dom_field(out, b"model.emf.uri = ", &|o| o.write_all(u.as_bytes()))?;
        }
    }
    if dom_print && !pn {
        out.write_all(b" ")?;
    }
    if !start_line {
        out.write_all(b", ")?;
    }
    if pn {
        out.write_all(b"name = ")?;
    }
    Ok(())
}

fn scope<W: Write + ?Sized>(out: &mut W, cx: &mut FieldCx<'_>, fields: Fields<'_, '_>, scope: &str, names_scope: bool, start_line: &mut bool) -> io::Result<()> {
    if scope_prefix(out, cx.pl, fields, scope, names_scope, start_line)? {
        write_field(out, cx, fields, 0)?;
    }
    Ok(())
}

/// Writes what comes before a scope's root structure (`, ` unless it starts the line, and its
/// name with `names_scope`); `false` when the scope is not shown (nothing written).
fn scope_prefix<W: Write + ?Sized>(out: &mut W, pl: &PlanLayout, fields: Fields<'_, '_>, scope: &str, names_scope: bool, start_line: &mut bool) -> io::Result<bool> {
    let Some(root) = fields.root() else { return Ok(false) };
    if !pl.is_visible(root.node) {
        return Ok(false);
    }
    if !*start_line {
        out.write_all(b", ")?;
    }
    *start_line = false;
    if names_scope {
        out.write_all(scope.as_bytes())?;
        out.write_all(b" = ")?;
    }
    Ok(true)
}

/// Writes what comes before member `c` of a structure, `, NAME = ` in one write (without its
/// comma when `first`; without its name unless `names`); `false` when `c` is hidden (nothing
/// written).
#[inline]
fn member_label<W: Write + ?Sized>(out: &mut W, pl: &PlanLayout, names: bool, c: &Field<'_>, first: bool) -> io::Result<bool> {
    let Some(label) = pl.member(c.node) else { return Ok(false) };
    let skip = usize::from(first);
    match label.filter(|_| names) {
        Some(l) => out.write_all(&l[skip..])?,
        None => {
            out.write_all(&b", "[skip..])?;
            if names {
                out.write_all(c.node.name().as_bytes())?;
                out.write_all(b" = ")?;
            }
        }
    }
    Ok(true)
}

/// Writes the field at `at` of `fields` and its descendants.
fn write_field<W: Write + ?Sized>(out: &mut W, cx: &mut FieldCx<'_>, fields: Fields<'_, '_>, at: usize) -> io::Result<()> {
    let f = &fields.list[at];
    let (pl, names) = (cx.pl, cx.names);
    match f.value {
        Value::Compound { .. } => match &f.node.kind {
            NodeKind::Struct { .. } => {
                out.write_all(b"{")?;
                let mut first = true;
                for (i, c) in fields.children(at) {
                    if member_label(out, pl, names, c, first)? {
                        first = false;
                        write_field(out, cx, fields, i)?;
                    }
                }
                out.write_all(b" }")
            }
            NodeKind::Variant { .. } => {
                out.write_all(b"{ ")?;
                if let Some((i, _)) = fields.children(at).next() {
                    write_field(out, cx, fields, i)?;
                }
                out.write_all(b" }")
            }
            // A CTF 2 optional: its field, or `<none>`.
            NodeKind::Optional { .. } => match fields.children(at).next() {
                Some((i, _)) => write_field(out, cx, fields, i),
                None => out.write_all(b"<none>"),
            },
            _ => {
                out.write_all(b"[")?;
                for (n, (i, _)) in fields.children(at).enumerate() {
                    out.write_all(if n == 0 { b" " } else { b", " })?;
                    if names {
                        out.write_all(b"[")?;
                        write_u64(out, n as u64)?;
                        out.write_all(b"] = ")?;
                    }
                    write_field(out, cx, fields, i)?;
                }
                out.write_all(b" ]")
            }
        },
        Value::Unsigned(_) | Value::Signed(_) => {
            let NodeKind::Int(int) = &f.node.kind else {
                return write_int(out, f.value, 64, DisplayBase::Decimal);
            };
            if int.boolean {
                return out.write_all(if f.as_u64() == Some(0) { b"false" } else { b"true" });
            }
            match &int.enumeration {
                None => write_int(out, f.value, int.size, int.base),
                Some(e) => {
                    out.write_all(b"( ")?;
                    let v: i128 = match f.value {
                        Value::Unsigned(u) => u as i128,
                        Value::Signed(s) => s as i128,
                        _ => 0,
                    };
                    let mut n = 0;
                    match pl.label_groups(f.node) {
                        Some(groups) => {
                            for g in groups {
                                if g.ranges.iter().any(|&(lo, hi)| lo <= v && v <= hi) {
                                    if n > 0 {
                                        out.write_all(b", ")?;
                                    }
                                    n += 1;
                                    write_escaped(out, g.label.as_bytes())?;
                                }
                            }
                        }
                        None => {
                            for m in &e.mappings {
                                if m.lower <= v && v <= m.upper {
                                    if n > 0 {
                                        out.write_all(b", ")?;
                                    }
                                    n += 1;
                                    write_escaped(out, m.label.as_bytes())?;
                                }
                            }
                        }
                    }
                    if n == 0 {
                        out.write_all(b"<unknown>")?;
                    }
                    out.write_all(b" : container = ")?;
                    write_int(out, f.value, int.size, int.base)?;
                    out.write_all(b" )")
                }
            }
        }
        Value::Float(v) => write_g(out, v),
        Value::Str(b) => match &f.node.kind {
            // A CTF 2 BLOB: its bytes in hexadecimal.
            NodeKind::Blob { .. } => {
                out.write_all(b"[")?;
                for x in b {
                    write!(out, " {x:02x}")?;
                }
                out.write_all(b" ]")
            }
            NodeKind::WideString(_) => write_escaped(out, f.as_str().unwrap_or_default().as_bytes()),
            _ => write_escaped(out, f.as_bytes().unwrap_or(b"")),
        },
        Value::BigInt(bytes) => {
            out.write_all(b"0x")?;
            let mut any = false;
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            for &b in bytes {
                if !any && b == 0 {
                    continue;
                }
                if !any && b < 16 {
                    out.write_all(&[HEX[b as usize]])?;
                } else {
                    out.write_all(&[HEX[(b >> 4) as usize], HEX[(b & 15) as usize]])?;
                }
                any = true;
            }
            if !any {
                out.write_all(b"0")?;
            }
            Ok(())
        }
    }
}

/// Writes an integer of `size` bits in `base` exactly like babeltrace2's `print_integer`.
pub(crate) fn write_int<W: Write + ?Sized>(out: &mut W, value: Value<'_>, size: u32, base: DisplayBase) -> io::Result<()> {
    let (mut u, signed) = match value {
        Value::Unsigned(u) => (u, false),
        Value::Signed(s) => (s as u64, true),
        _ => (0, false),
    };
    let len = size.clamp(1, 64);
    match base {
        DisplayBase::Binary => {
            out.write_all(b"0b")?;
            let mut buf = [0u8; 64];
            for (bit, slot) in buf[..len as usize].iter_mut().enumerate() {
                let shift = len - 1 - bit as u32;
                *slot = if (u >> shift) & 1 == 1 { b'1' } else { b'0' };
            }
            out.write_all(&buf[..len as usize])
        }
        DisplayBase::Octal => {
            if signed && len < 64 {
                let rounded = ((len - 1) / 3 + 1) * 3;
                if rounded < 64 {
                    u &= (1u64 << rounded) - 1;
                }
            }
            out.write_all(b"0")?;
            if u == 0 {
                return out.write_all(b"0");
            }
            write_octal(out, u)
        }
        DisplayBase::Decimal => {
            if signed {
                write_i64(out, u as i64)
            } else {
                write_u64(out, u)
            }
        }
        DisplayBase::Hexadecimal => write_hex_upper(out, hex_bits(u, len)),
    }
}

/// The bits of an integer of `size` bits (its 64-bit value `u`) that the text output writes in
/// hexadecimal: those of its size rounded up to whole digits.
#[inline]
pub(crate) fn hex_bits(u: u64, size: u32) -> u64 {
    let len = size.clamp(1, 64);
    if len < 64 {
        let rounded = (len + 3) & !3;
        // babeltrace2 computes `(1 << rounded) - 1`; for rounded == 64 the shift count wraps
        // on x86-64, which gives a mask of 0.
        let mask = if rounded >= 64 { 0 } else { (1u64 << rounded) - 1 };
        return u & mask;
    }
    u
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write::tests::written as s;

    #[test]
    fn ints() {
        assert_eq!(s(|o| write_int(o, Value::Unsigned(0x32), 32, DisplayBase::Hexadecimal)), "0x32");
        assert_eq!(s(|o| write_int(o, Value::Signed(-1), 8, DisplayBase::Hexadecimal)), "0xFF");
        assert_eq!(s(|o| write_int(o, Value::Signed(-1), 64, DisplayBase::Hexadecimal)), "0xFFFFFFFFFFFFFFFF");
        assert_eq!(s(|o| write_int(o, Value::Signed(-1), 8, DisplayBase::Octal)), "0777");
        assert_eq!(s(|o| write_int(o, Value::Unsigned(0), 8, DisplayBase::Octal)), "00");
        assert_eq!(s(|o| write_int(o, Value::Unsigned(5), 4, DisplayBase::Binary)), "0b0101");
        assert_eq!(s(|o| write_int(o, Value::Signed(-5), 32, DisplayBase::Decimal)), "-5");
        assert_eq!(s(|o| write_int(o, Value::Unsigned(u64::MAX), 64, DisplayBase::Decimal)), "18446744073709551615");
    }
}
