//! Round trips through the CTF writer and the reader.
//!
//! * `roundtrip_random_traces` (proptest): random metadata (trace byte order; packet header
//!   with or without magic, UUID, stream id and instance id; packet contexts made of the
//!   well-known members in random order and sizes, or none; LTTng compact and large event
//!   headers, simple `{id; timestamp}` headers of 64 and 32 bits, or none; 1-3 stream classes;
//!   payloads and contexts of random integers (1-64 bits, random alignment, signedness, byte
//!   order, base), enumerations, floats, strings, structures with a minimum alignment,
//!   arrays, text arrays and sequences, sequences with their length field, variants with their
//!   enumeration tag, nested up to depth 3) and random events (and discarded events) written
//!   with `TraceWriter`, read back with `Trace::open`, and checked: (a) the TSDL the writer
//!   emits parses back to the same trace class; (b) every stream gives back the events
//!   written, in order (class, timestamp, each scope's value tree, the packet context's
//!   `cpu_id`); (c) discarded-event counts come back where they were recorded.
//! * Writer unit checks: header choice (compact vs. extended), errors on mismatched values
//!   leave the stream usable, oversized events, single-packet streams.
//! * `babeltrace2_reads_written_trace`: babeltrace2 (when installed) reads a fixed trace with
//!   no error and the same event count.
//! * `print_matches_babeltrace2`: for a few generated traces, `tracelens print` and
//!   `babeltrace2` print the same multiset of lines (TZ=UTC), when both are available.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::ffi::OsStr;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use tracelens_ctf::ir::*;
use tracelens_ctf::write::{to_tsdl, EventValues, OwnedValue, StreamOptions, StreamWriter, TraceWriter};
use tracelens_ctf::{parse_tsdl, Item, Trace};

// ---------------------------------------------------------------------------------------------
// Generated shapes

#[derive(Clone, Debug)]
struct IntSpec {
    size: u32,
    align: u32,
    signed: bool,
    /// Byte order opposite to the trace's (only byte-sized, byte-aligned integers: readers
    /// cannot change byte order within a byte).
    swap: bool,
    base: DisplayBase,
}

#[derive(Clone, Debug)]
enum G {
    Int(IntSpec),
    /// An enumeration with labels `L0`, `L1`, ... over these ranges.
    Enum(IntSpec, Vec<(i128, i128)>),
    Float { double: bool, align: u32, swap: bool },
    Str(Encoding),
    /// A string that is never empty (babeltrace2 2.0 prints an empty string field as a stale
    /// earlier value).
    StrNe(Encoding),
    /// `char name[n]` (8-bit UTF-8 integers, byte-aligned: read as text).
    Text(u64),
    /// A text sequence and its length field.
    TextSeq(IntSpec, bool),
    Struct(Vec<G>, u32),
    Array(Box<G>, u64),
    /// A sequence and its length field (`abs`: referred to by an absolute path when possible;
    /// `enum`: the length field is an enumeration).
    Seq(Box<G>, IntSpec, bool, bool),
    /// A variant and its enumeration tag.
    Var(Box<VarSpec>),
    /// An integer of this many bytes (more than 8: read as raw bytes).
    Big(u32),
    /// A sequence (of 16-bit integers) whose length is the stream event context's `clen`
    /// (`abs`: referred to as `stream.event.context.clen`); only at a payload's top level.
    ExtSeq(bool),
}

#[derive(Clone, Debug)]
struct VarSpec {
    opts: Vec<G>,
    /// The tag's container.
    tag: IntSpec,
    /// The range of each option.
    ranges: Vec<(i128, i128)>,
    /// A second range for option 0.
    extra: Option<(i128, i128)>,
    /// Tag referred to by an absolute path when possible.
    abs: bool,
    /// How names are written (0: `oK` options and labels; 1: `oK` options and `_oK` labels,
    /// which readers match with the underscore removed; 2: `_oK` options and labels).
    naming: u8,
}

#[derive(Clone, Debug)]
enum GV {
    U(u64),
    I(i64),
    F(f64),
    S(String),
    B(Vec<u8>),
    Struct(Vec<GV>),
    Array(Vec<GV>),
    Seq(Vec<GV>),
    /// Option index, tag value, option value.
    Var(u32, i64, Box<GV>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Header {
    None,
    Compact,
    Large,
    Simple64,
    Simple32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pc {
    Begin,
    End,
    Content(u32),
    Packet(u32),
    Discarded(u32),
    Seq,
    Cpu,
}

#[derive(Clone, Debug)]
struct EventSpec {
    id: u64,
    loglevel: Option<i64>,
    context: Option<G>,
    payload: Option<G>,
}

#[derive(Clone, Debug)]
struct StreamSpec {
    id: u64,
    /// `None`: no packet context at all.
    pc: Option<Vec<Pc>>,
    header: Header,
    common: Option<G>,
    /// The stream event context ends with `clen`, the length of the payloads' `ExtSeq`s.
    clen: bool,
    /// The header's variant refers to its tag as `stream.event.header.id`.
    abs_tag: bool,
    events: Vec<EventSpec>,
    instances: usize,
}

impl StreamSpec {
    fn has(&self, m: fn(&Pc) -> bool) -> bool {
        self.pc.as_ref().is_some_and(|pc| pc.iter().any(m))
    }
    fn single_packet(&self) -> bool {
        !self.has(|p| matches!(p, Pc::Content(_) | Pc::Packet(_)))
    }
    fn discards(&self) -> bool {
        self.has(|p| matches!(p, Pc::Discarded(_))) && !self.single_packet()
    }
}

#[derive(Clone, Debug)]
struct Spec {
    big_endian: bool,
    uuid: Option<[u8; 16]>,
    clock: ClockClass,
    magic: bool,
    ph_uuid: bool,
    sid_size: Option<u32>,
    instance: bool,
    no_packet_header: bool,
    /// The packet header ends with a `domain_id` set by the caller.
    domain: bool,
    streams: Vec<StreamSpec>,
    callsite: bool,
}

#[derive(Clone, Debug)]
enum Op {
    Event { class: usize, delta: u64, common: Option<GV>, context: Option<GV>, payload: Option<GV> },
    Discard(u64),
}

#[derive(Clone, Debug)]
struct Case {
    spec: Spec,
    /// Per stream class, per instance, the operations.
    ops: Vec<Vec<Vec<Op>>>,
    start: u64,
    packet_size: u64,
}

// ---------------------------------------------------------------------------------------------
// Strategies

const BASES: [DisplayBase; 4] = [DisplayBase::Binary, DisplayBase::Octal, DisplayBase::Decimal, DisplayBase::Hexadecimal];

fn int_spec() -> impl Strategy<Value = IntSpec> {
    let size = prop_oneof![1u32..=64, prop::sample::select(vec![1u32, 3, 8, 16, 27, 31, 32, 33, 63, 64])];
    (size, any::<bool>(), 0u8..4, 0usize..5, 0usize..4).prop_map(|(size, signed, swap, a, b)| {
        let byte = size % 8 == 0;
        let swap = swap == 0 && byte;
        let align = if byte { [1, 8, 16, 32, 64][a] } else { [1, 1, 8, 32, 1][a] };
        let align = if swap { align.max(8).min(if size >= 32 { 64 } else { 16 }) } else { align };
        IntSpec { size, align, signed, swap, base: BASES[b] }
    })
}

/// Unsigned, 5..16 bits (sequence lengths and variant tags).
fn small_uint() -> impl Strategy<Value = IntSpec> {
    (5u32..=16, prop::sample::select(vec![1u32, 1, 8, 16]), 0usize..4).prop_map(|(size, align, b)| IntSpec { size, align, signed: false, swap: false, base: BASES[b] })
}

/// 5..16 bits, signed or not (variant tags).
fn tag_int() -> impl Strategy<Value = IntSpec> {
    (small_uint(), any::<bool>()).prop_map(|(mut i, signed)| {
        i.signed = signed;
        i
    })
}

fn int_range(s: &IntSpec) -> (i128, i128) {
    if s.signed {
        (-(1i128 << (s.size - 1)), (1i128 << (s.size - 1)) - 1)
    } else {
        (0, (1i128 << s.size) - 1)
    }
}

fn leaf() -> BoxedStrategy<G> {
    prop_oneof![
        5 => int_spec().prop_map(G::Int),
        2 => (int_spec(), prop::collection::vec((any::<u64>(), 0u64..4), 1..4)).prop_map(|(c, seeds)| {
            let (lo, hi) = int_range(&c);
            let span = (hi - lo + 1) as u128;
            let ranges = seeds.iter().map(|&(s, w)| {
                let l = lo + (s as u128 % span) as i128;
                (l, (l + w as i128).min(hi))
            }).collect();
            G::Enum(c, ranges)
        }),
        2 => (any::<bool>(), prop::sample::select(vec![1u32, 8, 32, 64]), 0u8..3).prop_map(|(double, align, sw)| {
            let swap = sw == 0;
            G::Float { double, align: if swap { align.max(8) } else { align }, swap }
        }),
        2 => prop_oneof![Just(Encoding::Utf8), Just(Encoding::Ascii)].prop_map(G::Str),
        1 => (0u64..6).prop_map(G::Text),
        1 => (small_uint(), any::<bool>()).prop_map(|(l, abs)| G::TextSeq(l, abs)),
        1 => prop::sample::select(vec![9u32, 16]).prop_map(G::Big),
    ]
    .boxed()
}

fn gtype() -> BoxedStrategy<G> {
    leaf()
        .prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                2 => (prop::collection::vec(inner.clone(), 0..4), prop::sample::select(vec![1u32, 1, 8, 16, 64])).prop_map(|(m, a)| G::Struct(m, a)),
                1 => (inner.clone(), 0u64..4).prop_map(|(e, n)| G::Array(Box::new(e), n)),
                1 => (inner.clone(), small_uint(), any::<bool>(), prop::bool::weighted(0.2)).prop_map(|(e, l, abs, en)| G::Seq(Box::new(e), l, abs, en)),
                1 => (prop::collection::vec(inner, 1..4), tag_int(), prop::collection::vec((0i128..3, 0i128..3), 4), any::<bool>(), 0u8..3, prop::bool::weighted(0.3))
                    .prop_map(|(opts, tag, widths, abs, naming, two)| {
                        let mut at = if tag.signed { -4i128 } else { 0 };
                        let mut next = |k: usize| {
                            let (gap, w) = widths[k];
                            let r = (at + gap, at + gap + w);
                            at = r.1 + 1;
                            r
                        };
                        let ranges = (0..opts.len()).map(&mut next).collect();
                        let extra = two.then(|| next(3));
                        G::Var(Box::new(VarSpec { opts, tag, ranges, extra, abs, naming }))
                    }),
            ]
        })
        .boxed()
}

/// A scope root: a structure of 0-4 members.
fn scope_root() -> BoxedStrategy<G> {
    (prop::collection::vec(gtype(), 0..5), prop::sample::select(vec![1u32, 1, 8, 32])).prop_map(|(m, a)| G::Struct(m, a)).boxed()
}

fn opt_root(p: f64) -> BoxedStrategy<Option<G>> {
    prop::option::weighted(p, scope_root()).boxed()
}

fn pc_strategy() -> BoxedStrategy<Option<Vec<Pc>>> {
    let members = (
        any::<[bool; 5]>(),
        prop::sample::select(vec![0u8, 0, 0, 1, 2]),
        prop::sample::select(vec![32u32, 64]),
        prop::sample::select(vec![32u32, 64]),
        any::<u64>(),
    )
        .prop_map(|(flags, sizes, size_bits, disc_bits, shuffle)| {
            let mut v = Vec::new();
            if flags[0] {
                v.push(Pc::Begin);
            }
            if flags[1] {
                v.push(Pc::End);
            }
            match sizes {
                0 => {
                    v.push(Pc::Content(size_bits));
                    v.push(Pc::Packet(size_bits));
                }
                1 => v.push(Pc::Content(size_bits)),
                _ => {}
            }
            if flags[2] {
                v.push(Pc::Discarded(disc_bits));
            }
            if flags[3] {
                v.push(Pc::Seq);
            }
            if flags[4] {
                v.push(Pc::Cpu);
            }
            // Shuffle (deterministically from the drawn number).
            let mut s = shuffle | 1;
            for i in (1..v.len()).rev() {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                v.swap(i, (s % (i as u64 + 1)) as usize);
            }
            v
        });
    prop::option::weighted(0.9, members).boxed()
}

fn header_strategy() -> impl Strategy<Value = Header> {
    prop::sample::select(vec![Header::Compact, Header::Compact, Header::Large, Header::Simple64, Header::Simple32, Header::None])
}

fn stream_spec() -> impl Strategy<Value = StreamSpec> {
    (
        pc_strategy(),
        header_strategy(),
        opt_root(0.3),
        prop::collection::vec((opt_root(0.3), opt_root(0.85), prop::option::of(0i64..15), prop::bool::weighted(0.25)), 1..4),
        prop::collection::vec(any::<u64>(), 4),
        1usize..=2,
        any::<[bool; 3]>(),
    )
        .prop_map(|(pc, header, common, evs, pool, instances, flags)| {
            let range = match header {
                Header::None => 1,
                Header::Compact => 40,
                Header::Large => 70_000,
                Header::Simple64 => 1 << 20,
                Header::Simple32 => 1 << 16,
            };
            let mut events: Vec<EventSpec> = Vec::new();
            let clen = flags[0] && flags[1];
            for (k, (context, mut payload, loglevel, ext)) in evs.into_iter().enumerate() {
                if header == Header::None && k > 0 {
                    break;
                }
                let mut id = pool[k] % range;
                while events.iter().any(|e| e.id == id) {
                    id = (id + 1) % range;
                }
                if clen && ext {
                    let mut members = match payload.take() {
                        Some(G::Struct(m, _)) => m,
                        _ => Vec::new(),
                    };
                    let at = (pool[k] >> 32) as usize % (members.len() + 1);
                    members.insert(at, G::ExtSeq(flags[2]));
                    payload = Some(G::Struct(members, 1));
                }
                events.push(EventSpec { id, loglevel, context, payload });
            }
            let common = if clen { Some(common.unwrap_or(G::Struct(Vec::new(), 1))) } else { common };
            let abs_tag = flags[1] && flags[2];
            let mut s = StreamSpec { id: 0, pc, header, common, clen, abs_tag, events, instances };
            // An event must take at least one bit, and a single-packet stream must end on a
            // byte: give payloads a first integer / a last string.
            let single = s.single_packet();
            for e in &mut s.events {
                if header == Header::None || single {
                    let mut members = match e.payload.take() {
                        Some(G::Struct(m, _)) => m,
                        _ => Vec::new(),
                    };
                    if header == Header::None {
                        members.insert(0, G::Int(IntSpec { size: 8, align: 8, signed: false, swap: false, base: DisplayBase::Decimal }));
                    }
                    if single {
                        members.push(G::Str(Encoding::Utf8));
                    }
                    e.payload = Some(G::Struct(members, 1));
                }
            }
            s
        })
}

fn spec_strategy() -> impl Strategy<Value = Spec> {
    (
        any::<bool>(),
        prop::option::of(any::<[u8; 16]>()),
        (prop::sample::select(vec![1_000_000_000u64, 1_000_000, 2_500_000_000]), 0i64..2_000_000_000, 0i64..1000, any::<bool>()),
        any::<[bool; 6]>(),
        prop::sample::select(vec![8u32, 16, 32, 64]),
        prop::collection::vec(stream_spec(), 1..=3),
        any::<[u8; 3]>(),
    )
        .prop_map(|(big_endian, uuid, (freq, offset_s, offset, absolute), flags, sid_size, mut streams, ids)| {
            let mut used = Vec::new();
            for (k, s) in streams.iter_mut().enumerate() {
                let mut id = if flags[4] { k as u64 } else { ids[k % 3] as u64 };
                while used.contains(&id) {
                    id = (id + 1) % 256;
                }
                used.push(id);
                s.id = id;
            }
            let clock = ClockClass {
                name: "monotonic".into(),
                freq,
                offset_s,
                offset,
                precision: 0,
                absolute,
                description: flags[3].then(|| "Monotonic \"clock\"".to_string()),
                uuid: if flags[3] { uuid } else { None },
            };
            let multi = streams.len() > 1;
            let sid_size = (multi || flags[2]).then_some(sid_size);
            if sid_size.is_none() {
                // Without `stream_id` in the packet header, a stream class id means nothing
                // (babeltrace2 rejects one).
                streams[0].id = 0;
            }
            Spec {
                big_endian,
                uuid,
                clock,
                magic: flags[0],
                ph_uuid: flags[1] && uuid.is_some(),
                sid_size,
                instance: flags[2] || flags[3],
                no_packet_header: !multi && !flags[0] && !flags[1] && !flags[2] && !flags[5],
                domain: flags[5],
                streams,
                callsite: flags[3] && flags[4],
            }
        })
}

fn int_value(s: &IntSpec) -> BoxedStrategy<GV> {
    let (lo, hi) = int_range(s);
    if s.signed {
        let (lo, hi) = (lo as i64, hi as i64);
        prop_oneof![1 => Just(lo), 1 => Just(hi), 1 => Just(0i64), 1 => -3i64..3, 4 => lo..=hi].prop_map(move |v| GV::I(v.clamp(lo, hi))).boxed()
    } else {
        let hi = hi as u64;
        prop_oneof![1 => Just(0u64), 1 => Just(hi), 1 => 0u64..3, 4 => 0..=hi].prop_map(move |v| GV::U(v.min(hi))).boxed()
    }
}

fn text_bytes(n: usize) -> BoxedStrategy<Vec<u8>> {
    prop::collection::vec(prop_oneof![8 => 32u8..127, 1 => Just(0u8)], n).boxed()
}

fn value(g: &G) -> BoxedStrategy<GV> {
    match g {
        G::Int(s) => int_value(s),
        G::Enum(s, _) => int_value(s),
        G::Float { double: false, .. } => prop_oneof![
            4 => any::<u32>().prop_map(|b| f32::from_bits(b) as f64),
            1 => prop::sample::select(vec![0.0f64, -0.0, 1.5, f64::INFINITY, f64::NEG_INFINITY, f32::MIN_POSITIVE as f64 / 2.0]),
        ]
        .prop_map(GV::F)
        .boxed(),
        G::Float { double: true, .. } => prop_oneof![
            4 => any::<u64>().prop_map(f64::from_bits),
            1 => prop::sample::select(vec![0.0f64, -0.0, 1.5, f64::INFINITY, f64::MAX, f64::MIN_POSITIVE / 4.0]),
        ]
        .prop_map(GV::F)
        .boxed(),
        G::Str(Encoding::Ascii) => "[ -~]{0,8}".prop_map(GV::S).boxed(),
        G::Str(_) => "[ -~éü日本]{0,8}".prop_map(GV::S).boxed(),
        G::StrNe(_) => "[ -~éü日本]{1,8}".prop_map(GV::S).boxed(),
        G::Text(n) => text_bytes(*n as usize).prop_map(GV::B).boxed(),
        G::TextSeq(..) => (0usize..5).prop_flat_map(text_bytes).prop_map(GV::B).boxed(),
        G::Struct(members, _) => members.iter().map(value).collect::<Vec<_>>().prop_map(GV::Struct).boxed(),
        G::Array(e, n) => prop::collection::vec(value(e), *n as usize).prop_map(GV::Array).boxed(),
        G::Seq(e, ..) => prop::collection::vec(value(e), 0..4).prop_map(GV::Seq).boxed(),
        G::ExtSeq(_) => prop::collection::vec((-5i64..5).prop_map(GV::I), 0..4).prop_map(GV::Seq).boxed(),
        G::Big(n) => prop::collection::vec(any::<u8>(), *n as usize).prop_map(GV::B).boxed(),
        G::Var(v) => {
            let v = v.clone();
            (0..v.opts.len())
                .prop_flat_map(move |k| {
                    let (lo, hi) = v.ranges[k];
                    let tag = match v.extra {
                        Some((elo, ehi)) if k == 0 => prop_oneof![(lo as i64)..=(hi as i64), (elo as i64)..=(ehi as i64)].boxed(),
                        _ => ((lo as i64)..=(hi as i64)).boxed(),
                    };
                    (Just(k as u32), tag, value(&v.opts[k]))
                })
                .prop_map(|(k, tag, v)| GV::Var(k, tag, Box::new(v)))
                .boxed()
        }
    }
}

fn opt_value(g: &Option<G>) -> BoxedStrategy<Option<GV>> {
    match g {
        Some(g) => value(g).prop_map(Some).boxed(),
        None => Just(None).boxed(),
    }
}

fn delta_strategy() -> BoxedStrategy<u64> {
    prop_oneof![8 => 0u64..50, 2 => 0u64..(1 << 28), 1 => (1u64 << 26)..(1u64 << 34)].boxed()
}

fn ops_strategy(s: &StreamSpec) -> BoxedStrategy<Vec<Op>> {
    let evs = s.events.clone();
    let common = s.common.clone();
    let ev_op = (0..evs.len())
        .prop_flat_map(move |k| {
            let e = &evs[k];
            (Just(k), delta_strategy(), opt_value(&common), opt_value(&e.context), opt_value(&e.payload))
        })
        .prop_map(|(class, delta, common, context, payload)| Op::Event { class, delta, common, context, payload });
    if s.discards() {
        prop::collection::vec(prop_oneof![8 => ev_op, 1 => (1u64..5).prop_map(Op::Discard)], 0..14).boxed()
    } else {
        prop::collection::vec(ev_op, 0..14).boxed()
    }
}

/// Makes a spec readable by babeltrace2 2.0, which rejects or asserts on: variant tags
/// given as absolute paths (its grammar takes one identifier), integers wider than 64 bits,
/// sequence lengths that are enumerations, relative references to another scope's fields
/// (it looks in the current scope only), enumeration labels that match
/// their variant options only without a leading underscore, sequence lengths or variant
/// tags inside array elements or variant options, sequences and variants in an event context
/// (`event.context`: an assertion fails), streams with a clock mixed with streams
/// without (its muxer fails), empty strings (printed as a stale earlier value), and a
/// `content_size` without `packet_size` when the content
/// does not end on a byte (it then looks for the next packet a byte early).
fn for_babeltrace2(mut spec: Spec) -> Spec {
    fn fix(g: &mut G, nested: bool) {
        match g {
            G::Str(e) => *g = G::StrNe(*e),
            G::Seq(..) | G::TextSeq(..) | G::Var(..) | G::Big(_) if nested => {
                *g = G::Int(IntSpec { size: 16, align: 8, signed: true, swap: false, base: DisplayBase::Decimal });
            }
            G::Big(_) => *g = G::Int(IntSpec { size: 64, align: 8, signed: false, swap: false, base: DisplayBase::Hexadecimal }),
            G::Var(v) => {
                v.abs = false;
                if v.naming == 1 {
                    v.naming = 2;
                }
                v.opts.iter_mut().for_each(|o| fix(o, true));
            }
            G::Seq(e, _, _, en) => {
                *en = false;
                fix(e, true)
            }
            G::Array(e, _) => fix(e, true),
            G::ExtSeq(abs) => *abs = true,
            G::Struct(ms, _) => ms.iter_mut().for_each(|m| fix(m, nested)),
            _ => {}
        }
    }
    // Known difference of the reader (reported): it takes `stream_instance_id` from an LTTng
    // index even when packet headers have no such field, and prints it as the stream ID.
    spec.instance = true;
    spec.no_packet_header = false;
    for s in &mut spec.streams {
        s.abs_tag = false;
        if s.header == Header::None {
            s.header = Header::Simple64;
        }
        // Known differences of `tracelens print` (reported, see
        // `print_matches_babeltrace2_without_timestamp_begin`): without `timestamp_begin` and
        // `timestamp_end`, babeltrace2 gives discarded events no time range, and without
        // `timestamp_begin` it numbers streams itself instead of using `stream_instance_id`.
        let pc = s.pc.get_or_insert_with(Vec::new);
        for (k, m) in [Pc::Begin, Pc::End].into_iter().enumerate() {
            if !pc.contains(&m) {
                pc.insert(k.min(pc.len()), m);
            }
        }
        if let Some(pc) = &mut s.pc {
            if let (Some(at), false) = (pc.iter().position(|p| matches!(p, Pc::Content(_))), pc.iter().any(|p| matches!(p, Pc::Packet(_)))) {
                pc.insert(at + 1, Pc::Packet(64));
            }
        }
        s.common.iter_mut().for_each(|g| fix(g, false));
        for e in &mut s.events {
            if let Some(G::Struct(ms, _)) = &mut e.context {
                ms.iter_mut().for_each(|m| fix(m, true));
            }
            e.payload.iter_mut().for_each(|g| fix(g, false));
        }
    }
    spec
}

/// Makes the event scopes' integers whole bytes at byte-aligned positions (sizes rounded up
/// to 8, 16, 32 or 64 bits, alignments at least 8), floats 64-bit integers and structures
/// byte-aligned: the shapes the writer's byte-aligned fast path takes whole (it declines
/// variants, which stay), so that the property test compares it with the general encoder.
fn byte_aligned(mut spec: Spec) -> Spec {
    fn int(i: &mut IntSpec) {
        i.size = match i.size {
            0..=8 => 8,
            9..=16 => 16,
            17..=32 => 32,
            _ => 64,
        };
        i.align = i.align.max(8);
    }
    fn fix(g: &mut G) {
        match g {
            G::Int(i) | G::Enum(i, _) | G::TextSeq(i, _) => int(i),
            G::Float { .. } => *g = G::Int(IntSpec { size: 64, align: 8, signed: true, swap: false, base: DisplayBase::Decimal }),
            G::Seq(e, len, _, _) => {
                int(len);
                fix(e);
            }
            G::Struct(ms, a) => {
                *a = (*a).max(8);
                ms.iter_mut().for_each(fix);
            }
            G::Array(e, _) => fix(e),
            G::Var(v) => v.opts.iter_mut().for_each(fix),
            G::Str(_) | G::StrNe(_) | G::Text(_) | G::Big(_) | G::ExtSeq(_) => {}
        }
    }
    for s in &mut spec.streams {
        s.common.iter_mut().for_each(fix);
        for e in &mut s.events {
            e.context.iter_mut().chain(e.payload.iter_mut()).for_each(fix);
        }
    }
    spec
}

fn case_strategy(bt2: bool) -> impl Strategy<Value = Case> {
    (spec_strategy(), 0u8..3)
        .prop_map(|(s, k)| if k == 0 { byte_aligned(s) } else { s })
        .prop_map(move |s| if bt2 { for_babeltrace2(s) } else { s })
        .prop_flat_map(|spec| {
        let ops: Vec<BoxedStrategy<Vec<Vec<Op>>>> =
            spec.streams.iter().map(|s| prop::collection::vec(ops_strategy(s), s.instances).boxed()).collect();
        (Just(spec), ops, 0u64..(1 << 40), prop::sample::select(vec![96u64, 128, 200, 256, 1024, 4096]))
            .prop_map(|(spec, ops, start, packet_size)| Case { spec, ops, start, packet_size })
    })
}

// ---------------------------------------------------------------------------------------------
// Shapes to IR and values to OwnedValue

struct Build {
    bo: ByteOrder,
}

fn other(bo: ByteOrder) -> ByteOrder {
    match bo {
        ByteOrder::Little => ByteOrder::Big,
        ByteOrder::Big => ByteOrder::Little,
    }
}

type Prefix = Option<(Scope, Vec<String>)>;

/// Whether to generate absolute references (`event.fields.s.len`) into structures of the scope
/// being declared. Off: the reader's plan compiler cannot resolve them (see
/// `reader_resolves_absolute_paths_into_enclosing_structures`).
const NESTED_ABSOLUTE_PATHS: bool = false;

impl Build {
    fn int(&self, s: &IntSpec) -> IntType {
        IntType {
            size: s.size,
            align: s.align,
            signed: s.signed,
            byte_order: if s.swap { other(self.bo) } else { self.bo },
            base: s.base,
            encoding: Encoding::None,
            mapped_clock: None,
        }
    }

    fn uint(&self, size: u32, align: u32) -> FieldType {
        FieldType::Int(IntType { size, align, signed: false, byte_order: self.bo, base: DisplayBase::Decimal, encoding: Encoding::None, mapped_clock: None })
    }

    fn clock_int(&self, size: u32, align: u32) -> FieldType {
        FieldType::Int(IntType {
            size,
            align,
            signed: false,
            byte_order: self.bo,
            base: DisplayBase::Decimal,
            encoding: Encoding::None,
            mapped_clock: Some("monotonic".into()),
        })
    }

    fn char_int(&self) -> FieldType {
        FieldType::Int(IntType { size: 8, align: 8, signed: false, byte_order: self.bo, base: DisplayBase::Decimal, encoding: Encoding::Utf8, mapped_clock: None })
    }

    fn path(&self, name: &str, abs: bool, prefix: &Prefix) -> FieldPath {
        match prefix {
            Some((scope, names)) if abs && (NESTED_ABSOLUTE_PATHS || names.is_empty()) => {
                let mut n = names.clone();
                n.push(name.to_string());
                FieldPath::Absolute(*scope, n)
            }
            _ => FieldPath::Relative(vec![name.to_string()]),
        }
    }

    fn members(&self, name: &str, g: &G, prefix: &Prefix, out: &mut Vec<NamedField>) {
        let nf = |name: &str, ty: FieldType| NamedField { name: name.to_string(), ty };
        match g {
            G::Seq(e, l, abs, en) => {
                let ln = format!("{name}_len");
                let len_ty = if *en {
                    FieldType::Enum(EnumType { container: self.int(l), mappings: vec![EnumMapping { label: "few".into(), lower: 0, upper: 3 }] })
                } else {
                    FieldType::Int(self.int(l))
                };
                out.push(nf(&ln, len_ty));
                out.push(nf(name, FieldType::Sequence(SequenceType { element: Box::new(self.single(e)), length: self.path(&ln, *abs, prefix) })));
            }
            G::TextSeq(l, abs) => {
                let ln = format!("{name}_len");
                out.push(nf(&ln, FieldType::Int(self.int(l))));
                out.push(nf(name, FieldType::Sequence(SequenceType { element: Box::new(self.char_int()), length: self.path(&ln, *abs, prefix) })));
            }
            G::Var(v) => {
                let tn = format!("{name}_tag");
                let label = |k: usize| if v.naming > 0 { format!("_o{k}") } else { format!("o{k}") };
                let mut mappings: Vec<EnumMapping> = v.ranges.iter().enumerate().map(|(k, &(lower, upper))| EnumMapping { label: label(k), lower, upper }).collect();
                if let Some((lower, upper)) = v.extra {
                    mappings.push(EnumMapping { label: label(0), lower, upper });
                }
                out.push(nf(&tn, FieldType::Enum(EnumType { container: self.int(&v.tag), mappings })));
                let options = v.opts.iter().enumerate().map(|(k, o)| nf(&if v.naming == 2 { format!("_o{k}") } else { format!("o{k}") }, self.single(o))).collect();
                out.push(nf(name, FieldType::Variant(VariantType { tag: self.path(&tn, v.abs, prefix), options })));
            }
            G::ExtSeq(abs) => {
                let length = if *abs {
                    FieldPath::Absolute(Scope::EventCommonContext, vec!["clen".into()])
                } else {
                    FieldPath::Relative(vec!["clen".into()])
                };
                let element = Box::new(FieldType::Int(self.int(&IntSpec { size: 16, align: 8, signed: true, swap: false, base: DisplayBase::Decimal })));
                out.push(nf(name, FieldType::Sequence(SequenceType { element, length })));
            }
            G::Struct(ms, a) => {
                let inner = prefix.as_ref().map(|(s, n)| {
                    let mut n = n.clone();
                    n.push(name.to_string());
                    (*s, n)
                });
                out.push(nf(name, FieldType::Struct(self.structure(ms, *a, &inner))));
            }
            _ => out.push(nf(name, self.single(g))),
        }
    }

    fn structure(&self, ms: &[G], min_align: u32, prefix: &Prefix) -> StructType {
        let mut fields = Vec::new();
        for (k, m) in ms.iter().enumerate() {
            self.members(&format!("f{k}"), m, prefix, &mut fields);
        }
        StructType { fields, min_align }
    }

    fn single(&self, g: &G) -> FieldType {
        match g {
            G::Int(s) => FieldType::Int(self.int(s)),
            G::Enum(s, ranges) => FieldType::Enum(EnumType {
                container: self.int(s),
                mappings: ranges.iter().enumerate().map(|(k, &(lower, upper))| EnumMapping { label: format!("L{k}"), lower, upper }).collect(),
            }),
            G::Float { double, align, swap } => FieldType::Float(FloatType {
                exp_dig: if *double { 11 } else { 8 },
                mant_dig: if *double { 53 } else { 24 },
                align: *align,
                byte_order: if *swap { other(self.bo) } else { self.bo },
            }),
            G::Str(e) | G::StrNe(e) => FieldType::String(*e),
            G::Text(n) => FieldType::Array(ArrayType { element: Box::new(self.char_int()), length: *n }),
            G::Struct(ms, a) => FieldType::Struct(self.structure(ms, *a, &None)),
            G::Array(e, n) => FieldType::Array(ArrayType { element: Box::new(self.single(e)), length: *n }),
            G::Big(n) => FieldType::Int(IntType { size: n * 8, align: 8, signed: false, byte_order: self.bo, base: DisplayBase::Hexadecimal, encoding: Encoding::None, mapped_clock: None }),
            G::Seq(..) | G::TextSeq(..) | G::Var(..) | G::ExtSeq(_) => FieldType::Struct(self.structure(std::slice::from_ref(g), 1, &None)),
        }
    }

    fn root(&self, g: &G, scope: Scope) -> Arc<FieldType> {
        match g {
            G::Struct(ms, a) => Arc::new(FieldType::Struct(self.structure(ms, *a, &Some((scope, Vec::new()))))),
            other => Arc::new(FieldType::Struct(self.structure(std::slice::from_ref(other), 1, &Some((scope, Vec::new()))))),
        }
    }

    fn header(&self, h: Header, abs_tag: bool) -> Option<Arc<FieldType>> {
        let nf = |name: &str, ty: FieldType| NamedField { name: name.to_string(), ty };
        let st = |fields: Vec<NamedField>, min_align: u32| FieldType::Struct(StructType { fields, min_align });
        let lttng = |id_size: u32, id_align: u32, ts_size: u32, ts_align: u32| {
            let max = (1i128 << id_size) - 1;
            let id = FieldType::Enum(EnumType {
                container: IntType { size: id_size, align: id_align, signed: false, byte_order: self.bo, base: DisplayBase::Decimal, encoding: Encoding::None, mapped_clock: None },
                mappings: vec![
                    EnumMapping { label: "compact".into(), lower: 0, upper: max - 1 },
                    EnumMapping { label: "extended".into(), lower: max, upper: max },
                ],
            });
            let v = FieldType::Variant(VariantType {
                tag: if abs_tag { FieldPath::Absolute(Scope::EventHeader, vec!["id".into()]) } else { FieldPath::Relative(vec!["id".into()]) },
                options: vec![
                    nf("compact", st(vec![nf("timestamp", self.clock_int(ts_size, ts_align))], 1)),
                    nf("extended", st(vec![nf("id", self.uint(32, 8)), nf("timestamp", self.clock_int(64, 8))], 1)),
                ],
            });
            st(vec![nf("id", id), nf("v", v)], 8)
        };
        let t = match h {
            Header::None => return None,
            Header::Compact => lttng(5, 1, 27, 1),
            Header::Large => lttng(16, 8, 32, 8),
            Header::Simple64 => st(vec![nf("id", self.uint(32, 8)), nf("timestamp", self.clock_int(64, 8))], 1),
            Header::Simple32 => st(vec![nf("id", self.uint(16, 8)), nf("timestamp", self.clock_int(32, 8))], 1),
        };
        Some(Arc::new(t))
    }

    fn packet_context(&self, pc: &[Pc]) -> Arc<FieldType> {
        let nf = |name: &str, ty: FieldType| NamedField { name: name.to_string(), ty };
        let fields = pc
            .iter()
            .map(|m| match m {
                Pc::Begin => nf("timestamp_begin", self.clock_int(64, 8)),
                Pc::End => nf("timestamp_end", self.clock_int(64, 8)),
                Pc::Content(s) => nf("content_size", self.uint(*s, 8)),
                Pc::Packet(s) => nf("packet_size", self.uint(*s, 8)),
                Pc::Discarded(s) => nf("events_discarded", self.uint(*s, 8)),
                Pc::Seq => nf("packet_seq_num", self.uint(64, 8)),
                Pc::Cpu => nf("cpu_id", self.uint(32, 8)),
            })
            .collect();
        Arc::new(FieldType::Struct(StructType { fields, min_align: 1 }))
    }
}

fn build_class(spec: &Spec) -> TraceClass {
    let bo = if spec.big_endian { ByteOrder::Big } else { ByteOrder::Little };
    let b = Build { bo };
    let nf = |name: &str, ty: FieldType| NamedField { name: name.to_string(), ty };
    let mut ph = Vec::new();
    if spec.magic {
        ph.push(nf("magic", b.uint(32, 8)));
    }
    if spec.ph_uuid {
        ph.push(nf("uuid", FieldType::Array(ArrayType { element: Box::new(b.uint(8, 8)), length: 16 })));
    }
    if let Some(s) = spec.sid_size {
        ph.push(nf("stream_id", b.uint(s, 8)));
    }
    if spec.instance {
        ph.push(nf("stream_instance_id", b.uint(64, 8)));
    }
    if spec.domain {
        ph.push(nf("domain_id", b.uint(32, 8)));
    }
    let packet_header = (!spec.no_packet_header).then(|| Arc::new(FieldType::Struct(StructType { fields: ph, min_align: 8 })));
    let streams = spec
        .streams
        .iter()
        .map(|s| StreamClass {
            id: s.id,
            packet_context: s.pc.as_ref().map(|pc| b.packet_context(pc)),
            event_header: b.header(s.header, s.abs_tag),
            event_context: s.common.as_ref().map(|g| {
                let root = b.root(g, Scope::EventCommonContext);
                match (&*root, s.clen) {
                    (FieldType::Struct(st), true) => {
                        let mut st = st.clone();
                        st.fields.push(nf("clen", b.uint(8, 8)));
                        Arc::new(FieldType::Struct(st))
                    }
                    _ => root,
                }
            }),
            events: s
                .events
                .iter()
                .map(|e| EventClass {
                    id: e.id,
                    name: format!("ev{}_{}", s.id, e.id),
                    loglevel: e.loglevel,
                    model_emf_uri: None,
                    context: e.context.as_ref().map(|g| b.root(g, Scope::EventSpecificContext)),
                    payload: e.payload.as_ref().map(|g| b.root(g, Scope::EventPayload)),
                })
                .collect(),
        })
        .collect();
    TraceClass {
        major: 1,
        minor: 8,
        uuid: spec.uuid,
        byte_order: bo,
        packet_header,
        env: vec![("hostname".into(), EnvValue::Str("roundtrip".into())), ("tracer_major".into(), EnvValue::Int(2))],
        clocks: vec![spec.clock.clone()],
        streams,
        callsites: if spec.callsite {
            vec![Callsite { name: "ev0_0".into(), func: "main".into(), ip: 0x40_1000, file: "a \"b\".c".into(), line: 12 }]
        } else {
            Vec::new()
        },
    }
}

/// The values of the members `g` expands to.
fn push_values(g: &G, v: &GV, out: &mut Vec<OwnedValue>) {
    match (g, v) {
        (G::Seq(e, ..), GV::Seq(items)) => {
            out.push(OwnedValue::U(items.len() as u64));
            out.push(OwnedValue::Array(items.iter().map(|x| single_value(e, x)).collect()));
        }
        (G::TextSeq(..), GV::B(b)) => {
            out.push(OwnedValue::U(b.len() as u64));
            out.push(OwnedValue::Bytes(b.clone()));
        }
        (G::Var(v), GV::Var(k, tag, x)) => {
            out.push(if v.tag.signed { OwnedValue::I(*tag) } else { OwnedValue::U(*tag as u64) });
            out.push(OwnedValue::Variant(*k, Box::new(single_value(&v.opts[*k as usize], x))));
        }
        (G::ExtSeq(_), GV::Seq(items)) => out.push(OwnedValue::Array(items.iter().map(|x| single_value(&G::Int(IntSpec { size: 16, align: 8, signed: true, swap: false, base: DisplayBase::Decimal }), x)).collect())),
        _ => out.push(single_value(g, v)),
    }
}

fn struct_value(ms: &[G], vs: &[GV]) -> OwnedValue {
    let mut out = Vec::new();
    for (g, v) in ms.iter().zip(vs) {
        push_values(g, v, &mut out);
    }
    OwnedValue::Struct(out)
}

fn single_value(g: &G, v: &GV) -> OwnedValue {
    match (g, v) {
        (G::Struct(ms, _), GV::Struct(vs)) => struct_value(ms, vs),
        (G::Array(e, _), GV::Array(items)) => OwnedValue::Array(items.iter().map(|x| single_value(e, x)).collect()),
        (G::Seq(..) | G::TextSeq(..) | G::Var(..) | G::ExtSeq(_), _) => struct_value(std::slice::from_ref(g), std::slice::from_ref(v)),
        (_, GV::U(u)) => OwnedValue::U(*u),
        (_, GV::I(i)) => OwnedValue::I(*i),
        (_, GV::F(f)) => OwnedValue::F(*f),
        (_, GV::S(s)) => OwnedValue::Str(s.clone()),
        (_, GV::B(b)) => OwnedValue::Bytes(b.clone()),
        (g, v) => panic!("value {v:?} does not match {g:?}"),
    }
}

fn root_value(g: &G, v: &GV) -> OwnedValue {
    match (g, v) {
        (G::Struct(ms, _), GV::Struct(vs)) => struct_value(ms, vs),
        _ => struct_value(std::slice::from_ref(g), std::slice::from_ref(v)),
    }
}

// ---------------------------------------------------------------------------------------------
// Writing and reading back

#[derive(Clone, Debug, PartialEq)]
enum Seen {
    Event { id: u64, ts: Option<u64>, common: Option<OwnedValue>, context: Option<OwnedValue>, payload: Option<OwnedValue>, cpu: Option<u64>, domain: Option<u64> },
    Discarded(u64),
}

/// A scratch directory, removed when dropped (also when the test fails).
struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_dir(tag: &str) -> TempDir {
    static N: AtomicU64 = AtomicU64::new(0);
    let d = std::env::temp_dir().join(format!("tracelens-{tag}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    let _ = std::fs::remove_dir_all(&d);
    TempDir(d)
}

/// Writes `case` into `dir`; returns what each stream file must read back as.
fn write_case(case: &Case, class: &TraceClass, dir: &Path, general_only: bool) -> Result<BTreeMap<String, Vec<Seen>>, String> {
    let mut tw = TraceWriter::create(dir, class).map_err(|e| e.to_string())?;
    let mut expected = BTreeMap::new();
    for (si, s) in case.spec.streams.iter().enumerate() {
        let has_ts = s.header != Header::None;
        let has_cpu = s.has(|p| *p == Pc::Cpu);
        for (k, ops) in case.ops[si].iter().enumerate() {
            let name = format!("s{}_{k}", s.id);
            let opts = StreamOptions { packet_size: case.packet_size, index: k == 0, instance_id: None, general_only };
            let mut w = tw.stream_with(s.id, &name, &opts).map_err(|e| e.to_string())?;
            if has_cpu {
                w.set_packet_context("cpu_id", OwnedValue::U(k as u64 + 7)).map_err(|e| e.to_string())?;
            }
            if case.spec.domain {
                w.set_packet_header("domain_id", OwnedValue::U(k as u64 + 100)).map_err(|e| e.to_string())?;
            }
            // Without `timestamp_begin` (or new packets to carry it), 32-bit header timestamps must
            // stay within 2^32 of each other, from 0.
            let narrow = s.header == Header::Simple32 && (!s.has(|p| *p == Pc::Begin) || s.single_packet());
            let mut ts = if narrow { case.start % (1 << 31) } else { case.start };
            let mut exp = Vec::new();
            for op in ops {
                match op {
                    Op::Event { class, delta, common, context, payload } => {
                        let e = &s.events[*class];
                        let mut delta = *delta;
                        if narrow {
                            delta %= 1 << 31;
                        }
                        ts += delta;
                        let mut common = common.as_ref().map(|v| root_value(s.common.as_ref().expect("common"), v));
                        if let (Some(OwnedValue::Struct(m)), true) = (&mut common, s.clen) {
                            // `clen`: the length of the payload's `ExtSeq`s (all the same).
                            let n = match (&e.payload, payload) {
                                (Some(G::Struct(gs, _)), Some(GV::Struct(vs))) => gs.iter().zip(vs).find_map(|(g, v)| match (g, v) {
                                    (G::ExtSeq(_), GV::Seq(items)) => Some(items.len() as u64),
                                    _ => None,
                                }),
                                _ => None,
                            };
                            m.push(OwnedValue::U(n.unwrap_or(0)));
                        }
                        let context = context.as_ref().map(|v| root_value(e.context.as_ref().expect("context"), v));
                        let payload = payload.as_ref().map(|v| root_value(e.payload.as_ref().expect("payload"), v));
                        let values = EventValues { header: None, common_context: common.as_ref(), context: context.as_ref(), payload: payload.as_ref() };
                        w.event(e.id, ts, values).map_err(|err| format!("{err}\n(header {:?}, packet context {:?}, start {}, ops {ops:?})", s.header, s.pc, case.start))?;
                        exp.push(Seen::Event { id: e.id, ts: has_ts.then_some(ts), common, context, payload, cpu: has_cpu.then_some(k as u64 + 7), domain: case.spec.domain.then_some(k as u64 + 100) });
                    }
                    Op::Discard(n) => {
                        w.discard(*n).map_err(|e| e.to_string())?;
                        match exp.last_mut() {
                            Some(Seen::Discarded(m)) => *m += n,
                            _ => exp.push(Seen::Discarded(*n)),
                        }
                    }
                }
            }
            let f = w.finish().map_err(|e| e.to_string())?;
            for (k, v) in [1, f.packets, f.events, f.discarded, f.bytes].into_iter().enumerate() {
                STATS[k].fetch_add(v, Ordering::Relaxed);
            }
            expected.insert(name, exp);
        }
    }
    Ok(expected)
}

/// Reads every stream of the trace in `dir` back.
fn read_back(dir: &Path, has_ts: &dyn Fn(u64) -> bool) -> Result<BTreeMap<String, Vec<Seen>>, String> {
    let trace = Trace::open(dir).map_err(|e| e.to_string())?;
    let mut out = BTreeMap::new();
    for i in 0..trace.streams.len() {
        let ds = &trace.streams[i];
        if ds.files.len() != 1 {
            return Err(format!("stream {i} groups {} files", ds.files.len()));
        }
        let name = ds.path().file_name().and_then(|n| n.to_str()).unwrap_or("").to_string();
        let plan = &trace.plans[ds.plan];
        let ts_ok = has_ts(ds.stream_class_id);
        let mut cur = trace.cursor(i);
        let mut got = Vec::new();
        while let Some(item) = cur.advance().map_err(|e| e.to_string())? {
            match item {
                Item::Event => {
                    let ev = cur.event().ok_or("no event")?;
                    got.push(Seen::Event {
                        id: ev.class.class.id,
                        ts: if ts_ok { ev.cycles } else { None },
                        common: OwnedValue::from_fields(ev.common_context, plan),
                        context: OwnedValue::from_fields(ev.context, plan),
                        payload: OwnedValue::from_fields(ev.payload, plan),
                        cpu: ev.packet_context.get("cpu_id").and_then(|f| f.as_u64()),
                        domain: ev.packet_header.get("domain_id").and_then(|f| f.as_u64()),
                    });
                }
                Item::DiscardedEvents { count, .. } => got.push(Seen::Discarded(count)),
                Item::DiscardedPackets { count, .. } => return Err(format!("{name}: {count} lost packets reported")),
            }
        }
        if out.insert(name.clone(), got).is_some() {
            return Err(format!("two streams named {name}"));
        }
    }
    Ok(out)
}

fn check_case(case: &Case) -> Result<(), TestCaseError> {
    let class = build_class(&case.spec);
    // (a) The TSDL round trip.
    let text = to_tsdl(&class);
    let parsed = parse_tsdl(&text).map_err(|e| TestCaseError::fail(format!("to_tsdl output does not parse: {e}\n{text}")))?;
    if parsed != class {
        return Err(TestCaseError::fail(format!("TSDL round trip changed the class\nTSDL:\n{text}\nwritten: {class:#?}\nparsed: {parsed:#?}")));
    }
    // (b), (c)
    let dir = temp_dir("roundtrip");
    let expected = write_case(case, &class, &dir, false).map_err(|e| TestCaseError::fail(format!("writing {}: {e}", dir.display())))?;
    // (d) The writer's fast paths write the same bytes as its general encoder.
    let general = temp_dir("roundtrip-general");
    write_case(case, &class, &general, true).map_err(|e| TestCaseError::fail(format!("writing {}: {e}", general.display())))?;
    if let Some(diff) = first_difference(&dir, &general) {
        return Err(TestCaseError::fail(format!("the fast paths and the general encoder differ: {diff}")));
    }
    let _ = std::fs::remove_dir_all(&general);
    let has_ts = |sid: u64| case.spec.streams.iter().any(|s| s.id == sid && s.header != Header::None);
    let got = read_back(&dir, &has_ts).map_err(|e| TestCaseError::fail(format!("reading {}: {e}", dir.display())))?;
    for (name, exp) in &expected {
        let g = got.get(name).map(Vec::as_slice).unwrap_or(&[]);
        if g != exp.as_slice() {
            let at = g.iter().zip(exp).position(|(a, b)| a != b).unwrap_or(g.len().min(exp.len()));
            return Err(TestCaseError::fail(format!(
                "{}/{name}: item {at} differs ({} read, {} written)\nread:    {:?}\nwritten: {:?}",
                dir.display(),
                g.len(),
                exp.len(),
                g.get(at),
                exp.get(at)
            )));
        }
    }
    if let Some(extra) = got.keys().find(|k| !expected.contains_key(*k)) {
        return Err(TestCaseError::fail(format!("unexpected stream {extra}")));
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// The first file (recursively, by relative path) whose bytes differ between two directories.
fn first_difference(a: &Path, b: &Path) -> Option<String> {
    fn files(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                files(root, &p, out);
            } else if let (Ok(rel), Ok(bytes)) = (p.strip_prefix(root), std::fs::read(&p)) {
                out.insert(rel.to_path_buf(), bytes);
            }
        }
    }
    let (mut fa, mut fb) = (BTreeMap::new(), BTreeMap::new());
    files(a, a, &mut fa);
    files(b, b, &mut fb);
    if fa.keys().ne(fb.keys()) {
        return Some(format!("files {:?} vs {:?}", fa.keys().collect::<Vec<_>>(), fb.keys().collect::<Vec<_>>()));
    }
    fa.iter().zip(&fb).find(|((_, x), (_, y))| x != y).map(|((name, x), (_, y))| {
        let at = x.iter().zip(y.iter()).position(|(p, q)| p != q).unwrap_or(x.len().min(y.len()));
        format!("{} at byte {at} ({} vs {} bytes)", name.display(), x.len(), y.len())
    })
}

/// What the property test wrote, over all cases.
static STATS: [AtomicU64; 5] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];

#[test]
fn roundtrip_random_traces() {
    // PROPTEST_CASES (default 256) sets the number of cases.
    let config = Config { failure_persistence: None, ..Config::default() };
    let cases = config.cases;
    let started = std::time::Instant::now();
    let mut runner = TestRunner::new(config);
    if let Err(e) = runner.run(&case_strategy(false), |case| check_case(&case)) {
        panic!("{e}");
    }
    let s: Vec<u64> = STATS.iter().map(|a| a.load(Ordering::Relaxed)).collect();
    eprintln!(
        "roundtrip_random_traces: {cases} cases in {:.2}s: {} streams, {} packets, {} events, {} discarded events, {} bytes",
        started.elapsed().as_secs_f64(),
        s[0],
        s[1],
        s[2],
        s[3],
        s[4]
    );
    assert!(s[2] > cases as u64 && s[1] > cases as u64, "the cases wrote too little to test anything");
}

// ---------------------------------------------------------------------------------------------
// Fixed cases

/// TSDL of a small trace in LTTng's layout, with most field kinds.
const SMALL_TSDL: &str = r#"/* CTF 1.8 */
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
trace {
	major = 1; minor = 8;
	uuid = "2a6422d0-6cee-11e0-8c08-cb07d7b3a564";
	byte_order = le;
	packet.header := struct { uint32_t magic; uint8_t uuid[16]; uint32_t stream_id; uint64_t stream_instance_id; };
};
env { hostname = "writer-test"; domain = "ust"; tracer_name = "lttng-ust"; tracer_major = 2; tracer_minor = 13; };
clock { name = "monotonic"; uuid = "2a6422d0-6cee-11e0-8c08-cb07d7b3a564"; freq = 1000000000; offset_s = 1600000000; offset = 0; precision = 0; absolute = true; };
typealias integer { size = 27; align = 1; signed = false; map = clock.monotonic.value; } := uint27_clock_monotonic_t;
typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := uint64_clock_monotonic_t;
stream {
	id = 0;
	event.header := struct {
		enum : integer { size = 5; align = 1; signed = false; } { compact = 0 ... 30, extended = 31 } id;
		variant <id> {
			struct { uint27_clock_monotonic_t timestamp; } compact;
			struct { uint32_t id; uint64_clock_monotonic_t timestamp; } extended;
		} v;
	} align(8);
	packet.context := struct {
		uint64_clock_monotonic_t timestamp_begin;
		uint64_clock_monotonic_t timestamp_end;
		uint64_t content_size;
		uint64_t packet_size;
		uint64_t packet_seq_num;
		uint64_t events_discarded;
		uint32_t cpu_id;
	};
	event.context := struct { integer { size = 32; align = 8; signed = true; } _vtid; };
};
event {
	name = "app:simple"; id = 1; stream_id = 0; loglevel = 13;
	fields := struct {
		integer { size = 32; align = 8; signed = true; } _intfield;
		integer { size = 16; align = 8; signed = false; base = 16; } _hexfield;
		string _strfield;
		floating_point { exp_dig = 8; mant_dig = 24; align = 32; } _floatfield;
		floating_point { exp_dig = 11; mant_dig = 53; align = 64; } _doublefield;
		enum : integer { size = 8; align = 8; signed = false; } { ZERO = 0, ONE = 1, MANY = 2 ... 100 } _enumfield;
		integer { size = 8; align = 8; signed = false; encoding = UTF8; } _chars[6];
	};
};
event {
	name = "app:dynamic"; id = 40; stream_id = 0;
	fields := struct {
		uint32_t _seqfield_length;
		integer { size = 16; align = 8; signed = true; } _seqfield[_seqfield_length];
		enum : integer { size = 8; align = 8; signed = false; } { _num = 0, _text = 1 } _tag;
		variant <_tag> { integer { size = 64; align = 8; signed = true; } _num; string _text; } _var;
		integer { size = 3; align = 1; signed = false; } _bits;
		integer { size = 13; align = 1; signed = true; } _more_bits;
	};
};
"#;

fn small_class() -> TraceClass {
    parse_tsdl(SMALL_TSDL).expect("SMALL_TSDL parses")
}

fn simple_payload(k: i64) -> OwnedValue {
    OwnedValue::structure([
        OwnedValue::I(-k),
        OwnedValue::U(0xbeef),
        OwnedValue::from(format!("event {k}")),
        OwnedValue::F(1.5),
        OwnedValue::F(-2.25e-3),
        OwnedValue::U(k as u64 % 4),
        OwnedValue::Bytes(b"abc\0\0\0".to_vec()),
    ])
}

fn dynamic_payload(k: i64) -> OwnedValue {
    let n = (k % 4) as usize;
    let var = if k % 2 == 0 { OwnedValue::variant(0, OwnedValue::I(-k * 1000)) } else { OwnedValue::variant(1, OwnedValue::from("text")) };
    OwnedValue::structure([
        OwnedValue::U(n as u64),
        OwnedValue::Array((0..n).map(|i| OwnedValue::I(i as i64 - 2)).collect()),
        OwnedValue::U((k % 2) as u64),
        var,
        OwnedValue::U(5),
        OwnedValue::I(-4000),
    ])
}

/// Writes the small trace: two CPUs, `n` events each (ids 1 and 40 alternating, timestamps
/// with gaps that need the extended header), some discarded events.
fn write_small(dir: &Path, n: i64) -> (u64, u64) {
    let class = small_class();
    let mut tw = TraceWriter::create(dir, &class).expect("create");
    let mut total = (0, 0);
    for cpu in 0..2u64 {
        let mut w = tw.stream_with(0, &format!("chan_{cpu}"), &StreamOptions { packet_size: 512, ..StreamOptions::default() }).expect("stream");
        w.set_packet_context("cpu_id", OwnedValue::U(cpu)).expect("cpu_id");
        let mut ts = 1_000 + cpu * 7;
        for k in 0..n {
            ts += if k % 17 == 16 { 1 << 28 } else { 1_000 + (k as u64 % 5) * 333 };
            let ctx = OwnedValue::structure([OwnedValue::I(100 + cpu as i64)]);
            let (id, payload) = if k % 2 == 0 { (1, simple_payload(k)) } else { (40, dynamic_payload(k)) };
            w.event(id, ts, EventValues::payload(&payload).with_common_context(&ctx)).expect("event");
            if k % 29 == 28 {
                w.discard(3).expect("discard");
            }
        }
        let f = w.finish().expect("finish");
        total.0 += f.events;
        total.1 += f.discarded;
    }
    (total.0, total.1)
}

/// The plan compiler resolves an absolute path into the scope being compiled only through
/// the root structure's completed members, so a sequence whose length is referred to as
/// `event.fields.s.len` from inside `s` cannot be decoded (babeltrace2 reads it).
#[test]
fn reader_resolves_absolute_paths_into_enclosing_structures() {
    let text = r#"/* CTF 1.8 */
trace { major = 1; minor = 8; byte_order = le; };
stream { event.header := struct { integer { size = 32; align = 8; signed = false; } id; }; };
event {
	name = "ev";
	fields := struct {
		struct {
			integer { size = 8; align = 8; signed = false; } len;
			integer { size = 8; align = 8; signed = false; } seq[event.fields.s.len];
		} s;
	};
};
"#;
    let class = parse_tsdl(text).expect("parses");
    let dir = temp_dir("nested-absolute");
    let mut tw = TraceWriter::create(&dir, &class).expect("create");
    let mut w = tw.stream(0, "stream").expect("stream");
    let payload = OwnedValue::structure([OwnedValue::structure([OwnedValue::U(2), OwnedValue::Array(vec![OwnedValue::U(7), OwnedValue::U(9)])])]);
    w.event(0, 0, EventValues::payload(&payload)).expect("event");
    w.finish().expect("finish");
    eprintln!("trace in {}", dir.display());
    let trace = Trace::open(&dir).expect("open");
    let mut cur = trace.cursor(0);
    assert_eq!(cur.advance().expect("decodes"), Some(Item::Event));
    let ev = cur.event().expect("event");
    assert_eq!(OwnedValue::from_fields(ev.payload, &trace.plans[0]), Some(payload));
}

/// Generated cases from a fixed seed.
fn generated_cases(n: usize, seed: u8, bt2: bool) -> Vec<Case> {
    use proptest::test_runner::{RngAlgorithm, TestRng};
    let mut runner = TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]));
    let strategy = case_strategy(bt2);
    (0..n).map(|_| strategy.new_tree(&mut runner).expect("generate").current()).collect()
}

#[test]
#[ignore = "writes generated traces under /tmp/tracelens-gen-* for manual inspection"]
fn keep_generated_traces() {
    let n: usize = std::env::var("GEN_TRACES").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    for (k, case) in generated_cases(n, 1, true).iter().enumerate() {
        let dir = std::env::temp_dir().join(format!("tracelens-gen-{k}"));
        let _ = std::fs::remove_dir_all(&dir);
        let class = build_class(&case.spec);
        write_case(case, &class, &dir, false).expect("write");
    }
}

// ---------------------------------------------------------------------------------------------
// babeltrace2

fn have_babeltrace2() -> bool {
    let ok = Command::new("babeltrace2").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIPPED: `babeltrace2` is not installed (apt-get install babeltrace2)");
    }
    ok
}

fn run_utc(cmd: &Path, args: &[&OsStr]) -> std::process::Output {
    Command::new(cmd).args(args).env("TZ", "UTC").env_remove("BABELTRACE_TERM_COLOR").stdin(Stdio::null()).output().expect("run")
}

/// Sums the counts of babeltrace2's `WARNING: Tracer discarded N events` lines.
fn discarded_in_warnings(stderr: &str) -> u64 {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("WARNING: Tracer discarded "))
        .filter_map(|l| l.split(' ').next()?.parse::<u64>().ok())
        .sum()
}

#[test]
fn babeltrace2_reads_written_trace() {
    let dir = temp_dir("bt2-small");
    let (events, discarded) = write_small(&dir, 300);
    assert_eq!(events, 600);
    // Our reader first.
    let got = read_back(&dir, &|_| true).expect("tracelens reads it");
    assert_eq!(got.values().flatten().filter(|s| matches!(s, Seen::Event { .. })).count() as u64, events);
    let d: u64 = got.values().flatten().map(|s| if let Seen::Discarded(n) = s { *n } else { 0 }).sum();
    assert_eq!(d, discarded);
    if !have_babeltrace2() {
        return;
    }
    let out = run_utc(Path::new("babeltrace2"), &[dir.as_os_str()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "babeltrace2 failed on {}:\n{stderr}", dir.display());
    let lines = out.stdout.split(|&c| c == b'\n').filter(|l| !l.is_empty()).count() as u64;
    assert_eq!(lines, events, "babeltrace2 prints {lines} events, {events} were written ({})", dir.display());
    assert!(!stderr.contains("ERROR"), "babeltrace2 reports errors:\n{stderr}");
    assert_eq!(discarded_in_warnings(&stderr), discarded, "babeltrace2's discarded-event warnings:\n{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `tracelens` binary, if built: `$TRACELENS_BIN`, else `target/{release,debug}/tracelens`.
fn tracelens_bin() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TRACELENS_BIN") {
        return Some(PathBuf::from(p));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let profiles = if cfg!(debug_assertions) { ["debug", "release"] } else { ["release", "debug"] };
    profiles.iter().map(|p| target.join(p).join("tracelens")).find(|p| p.is_file())
}

/// A printed line without its `(+delta)`: which of several events with the same timestamp
/// comes first (and so the deltas) may differ between readers.
fn without_delta(l: &str) -> String {
    match (l.find("] (+"), l.find(") ")) {
        (Some(a), Some(b)) if b > a => format!("{}]{}", &l[..a], &l[b + 1..]),
        _ => l.to_string(),
    }
}

/// Splits a printed line into text and string literals.
fn segments(l: &str) -> Vec<(bool, &str)> {
    let b = l.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut start) = (0, 0);
    while i < b.len() {
        if b[i] == b'"' {
            out.push((false, &l[start..i]));
            let s = i + 1;
            let mut j = s;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let j = j.min(b.len());
            out.push((true, &l[s..j]));
            i = j + 1;
            start = i.min(b.len());
        } else {
            i += 1;
        }
    }
    out.push((false, &l[start.min(b.len())..]));
    out
}

/// Lines only in `bt2` and only in `ours` (multisets), less the pairs that differ only in
/// strings `ours` prints empty (babeltrace2 2.0 prints a stale earlier value for an empty
/// text sequence or array); returns the number of such pairs too.
fn line_diff(bt2: &str, ours: &str) -> (Vec<String>, Vec<String>, usize) {
    let mut counts: BTreeMap<String, i64> = BTreeMap::new();
    for l in bt2.lines().filter(|l| !l.is_empty()) {
        *counts.entry(without_delta(l)).or_default() += 1;
    }
    for l in ours.lines().filter(|l| !l.is_empty()) {
        *counts.entry(without_delta(l)).or_default() -= 1;
    }
    let (mut only_bt2, mut only_ours) = (Vec::new(), Vec::new());
    for (l, c) in counts {
        for _ in 0..c.max(0) {
            only_bt2.push(l.clone());
        }
        for _ in 0..(-c).max(0) {
            only_ours.push(l.clone());
        }
    }
    let stale = |b: &str, o: &str| {
        let (x, y) = (segments(b), segments(o));
        x.len() == y.len() && x.iter().zip(&y).all(|((sa, a), (sb, b))| sa == sb && (a == b || (*sa && b.is_empty())))
    };
    let mut pairs = 0;
    let mut i = 0;
    while i < only_ours.len() {
        match only_bt2.iter().position(|b| stale(b, &only_ours[i])) {
            Some(j) => {
                only_bt2.swap_remove(j);
                only_ours.swap_remove(i);
                pairs += 1;
            }
            None => i += 1,
        }
    }
    (only_bt2, only_ours, pairs)
}

fn warning_lines(stderr: &[u8]) -> String {
    String::from_utf8_lossy(stderr).lines().filter(|l| l.starts_with("WARNING: ")).map(|l| format!("{l}\n")).collect()
}

#[test]
fn print_matches_babeltrace2() {
    if !have_babeltrace2() {
        return;
    }
    let Some(bin) = tracelens_bin() else {
        eprintln!("SKIPPED: no `tracelens` binary (build it: cargo build --release -p tracelens, or set TRACELENS_BIN)");
        return;
    };
    let n: usize = std::env::var("TRACELENS_PRINT_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(30);
    let mut dirs = Vec::new();
    let small = temp_dir("print-small");
    write_small(&small, 120);
    dirs.push(small);
    for case in generated_cases(n, 7, true) {
        let dir = temp_dir("print");
        write_case(&case, &build_class(&case.spec), &dir, false).expect("write");
        dirs.push(dir);
    }
    let (mut lines, mut stale_total) = (0, 0);
    let mut failures = Vec::new();
    for dir in &dirs {
        let bt2 = run_utc(Path::new("babeltrace2"), &[dir.as_os_str()]);
        if !bt2.status.success() {
            failures.push(format!("{}: babeltrace2 fails:\n{}", dir.display(), String::from_utf8_lossy(&bt2.stderr)));
            continue;
        }
        let ours = run_utc(&bin, &[OsStr::new("print"), dir.as_os_str()]);
        if !ours.status.success() {
            failures.push(format!("{}: tracelens print fails:\n{}", dir.display(), String::from_utf8_lossy(&ours.stderr)));
            continue;
        }
        let mut report = String::new();
        for (what, a, b) in [
            ("stdout", String::from_utf8_lossy(&bt2.stdout).into_owned(), String::from_utf8_lossy(&ours.stdout).into_owned()),
            ("WARNING lines", warning_lines(&bt2.stderr), warning_lines(&ours.stderr)),
        ] {
            let (only_bt2, only_ours, stale) = line_diff(&a, &b);
            stale_total += stale;
            if only_bt2.len() + only_ours.len() > 0 {
                report += &format!("  {what}: {} line(s) only in babeltrace2, {} only in tracelens\n", only_bt2.len(), only_ours.len());
                for l in only_bt2.iter().take(3) {
                    report += &format!("    bt2 > {l}\n");
                }
                for l in only_ours.iter().take(3) {
                    report += &format!("    ours> {l}\n");
                }
            }
        }
        lines += bt2.stdout.iter().filter(|&&c| c == b'\n').count();
        if report.is_empty() {
            let _ = std::fs::remove_dir_all(dir);
        } else {
            failures.push(format!("{}\n{report}", dir.display()));
        }
    }
    eprintln!(
        "print_matches_babeltrace2: {} traces, {lines} lines ({stale_total} differing only by babeltrace2's stale-empty-string bug), {} different; tracelens binary {}",
        dirs.len(),
        failures.len(),
        bin.display()
    );
    assert!(failures.is_empty(), "{} trace(s) print differently:\n{}", failures.len(), failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// Reader divergences found with the writer (ignored until fixed; see each test's comment)

/// `trace.rs` `from_idx` takes `stream_instance_id` from an LTTng index even when the packet
/// headers have no `stream_instance_id`, so two streams of one class whose indexes say the
/// same instance id (LTTng writes 0) are merged as if they were rotated tracefiles of one
/// stream (and `tracelens print` shows that id as the stream ID, where babeltrace2 numbers the
/// streams).
#[test]
fn reader_ignores_index_instance_id_without_header_field() {
    let text = r#"/* CTF 1.8 */
trace { major = 1; minor = 8; byte_order = le; packet.header := struct { integer { size = 32; align = 8; signed = false; } magic; }; };
clock { name = monotonic; };
stream {
	packet.context := struct {
		integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } timestamp_begin;
		integer { size = 64; align = 8; signed = false; } content_size;
		integer { size = 64; align = 8; signed = false; } packet_size;
	};
	event.header := struct { integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } timestamp; };
};
event { name = "ev"; fields := struct { integer { size = 8; align = 8; signed = false; } x; }; };
"#;
    let dir = temp_dir("idx-instance");
    let mut tw = TraceWriter::create(&dir, &parse_tsdl(text).expect("parses")).expect("create");
    for (k, name) in ["a", "b"].iter().enumerate() {
        let mut w = tw.stream_with(0, name, &StreamOptions { instance_id: Some(0), ..StreamOptions::default() }).expect("stream");
        w.event(0, 10 + k as u64, EventValues::payload(&OwnedValue::structure([OwnedValue::U(k as u64)]))).expect("event");
        w.finish().expect("finish");
    }
    let trace = Trace::open(&dir).expect("open");
    assert_eq!(trace.streams.len(), 2, "two stream files without instance ids are two streams");
    assert!(trace.streams.iter().all(|s| s.instance_id.is_none()));
}

/// The reader never checks a packet's UUID against the trace's: `Role::Uuid` (plan.rs) is
/// given to an integer named `uuid`, but the UUID is an array and its elements have no name,
/// so `Specials::uuid_at` is never set and the check in `packet.rs` `read_packet` never runs
/// (babeltrace2 2.0 does not check either).
#[test]
#[ignore = "reader gap: plan.rs Role::Uuid never matches the uuid array"]
fn reader_checks_packet_uuid() {
    let class = small_class();
    let mut other = class.clone();
    other.uuid = Some([7; 16]);
    let dir = temp_dir("uuid");
    TraceWriter::create(&dir, &class).expect("create");
    // Packets written for a trace class with another UUID.
    let out = std::fs::File::create(dir.join("chan_0")).expect("file");
    let mut w = StreamWriter::new(&other, 0, dir.join("chan_0"), std::io::BufWriter::new(out), None, &StreamOptions::default()).expect("writer");
    let ctx = OwnedValue::structure([OwnedValue::I(1)]);
    w.event(1, 5, EventValues { common_context: Some(&ctx), payload: Some(&simple_payload(1)), ..EventValues::default() }).expect("event");
    w.finish().expect("finish");
    let r = Trace::open(&dir).and_then(|t| {
        let mut c = t.cursor(0);
        while c.advance()?.is_some() {}
        Ok(())
    });
    assert!(r.is_err(), "a packet whose UUID differs from the trace's must be rejected");
}

/// Without `timestamp_begin` in the packet context, babeltrace2 prints discarded events with
/// "(unknown time range)" (a discarded-events message has times only when packets have both
/// `timestamp_begin` and `timestamp_end`); `tracelens print` prints a time range.
#[test]
fn print_matches_babeltrace2_without_timestamp_begin() {
    if !have_babeltrace2() {
        return;
    }
    let Some(bin) = tracelens_bin() else { return };
    let text = r#"/* CTF 1.8 */
trace { major = 1; minor = 8; byte_order = le; packet.header := struct { integer { size = 32; align = 8; signed = false; } magic; integer { size = 64; align = 8; signed = false; } stream_instance_id; }; };
clock { name = monotonic; };
stream {
	packet.context := struct {
		integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } timestamp_end;
		integer { size = 64; align = 8; signed = false; } content_size;
		integer { size = 64; align = 8; signed = false; } packet_size;
		integer { size = 64; align = 8; signed = false; } events_discarded;
	};
	event.header := struct { integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } timestamp; };
};
event { name = "ev"; fields := struct { integer { size = 8; align = 8; signed = false; } x; }; };
"#;
    let dir = temp_dir("no-begin");
    let mut tw = TraceWriter::create(&dir, &parse_tsdl(text).expect("parses")).expect("create");
    let mut w = tw.stream(0, "s").expect("stream");
    w.event(0, 10, EventValues::payload(&OwnedValue::structure([OwnedValue::U(1)]))).expect("event");
    w.discard(3).expect("discard");
    w.event(0, 20, EventValues::payload(&OwnedValue::structure([OwnedValue::U(2)]))).expect("event");
    w.finish().expect("finish");
    let bt2 = run_utc(Path::new("babeltrace2"), &[dir.as_os_str()]);
    let ours = run_utc(&bin, &[OsStr::new("print"), dir.as_os_str()]);
    assert_eq!(warning_lines(&ours.stderr), warning_lines(&bt2.stderr));
}

// ---------------------------------------------------------------------------------------------
// Writer behaviour

/// A stream class with an LTTng compact header and a one-byte payload.
fn compact_class(packet_context: &str) -> TraceClass {
    let text = format!(
        r#"/* CTF 1.8 */
trace {{ major = 1; minor = 8; byte_order = be; packet.header := struct {{ integer {{ size = 32; align = 8; signed = false; }} magic; integer {{ size = 32; align = 8; signed = false; }} stream_id; }}; }};
clock {{ name = monotonic; }};
stream {{
	id = 0;
	{packet_context}
	event.header := struct {{
		enum : integer {{ size = 5; align = 1; signed = false; }} {{ compact = 0 ... 30, extended = 31 }} id;
		variant <id> {{
			struct {{ integer {{ size = 27; align = 1; signed = false; map = clock.monotonic.value; }} timestamp; }} compact;
			struct {{ integer {{ size = 32; align = 8; signed = false; }} id; integer {{ size = 64; align = 8; signed = false; map = clock.monotonic.value; }} timestamp; }} extended;
		}} v;
	}} align(8);
}};
event {{ name = "a"; id = 3; stream_id = 0; fields := struct {{ integer {{ size = 8; align = 8; signed = false; }} x; }}; }};
event {{ name = "b"; id = 77; stream_id = 0; fields := struct {{ integer {{ size = 8; align = 8; signed = false; }} x; }}; }};
"#
    );
    parse_tsdl(&text).expect("parses")
}

const LTTNG_PC: &str = "packet.context := struct { integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } timestamp_begin; integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } timestamp_end; integer { size = 64; align = 8; signed = false; } content_size; integer { size = 64; align = 8; signed = false; } packet_size; integer { size = 64; align = 8; signed = false; } packet_seq_num; integer { size = 64; align = 8; signed = false; } events_discarded; };";

fn mem_writer(class: &TraceClass, packet_size: u64) -> StreamWriter<Vec<u8>> {
    StreamWriter::new(class, 0, "mem", Vec::new(), Some(Vec::new()), &StreamOptions { packet_size, ..StreamOptions::default() }).expect("writer")
}

fn byte(x: u64) -> OwnedValue {
    OwnedValue::structure([OwnedValue::U(x)])
}

/// Reads an in-memory stream back: (class id, cycles, payload) of each event.
fn read_mem(class: &TraceClass, bytes: Vec<u8>) -> Vec<(u64, Option<u64>, Option<OwnedValue>)> {
    let trace = Trace::from_memory(to_tsdl(class).as_bytes(), vec![(PathBuf::from("mem"), bytes)]).expect("open");
    let mut cur = trace.cursor(0);
    let mut out = Vec::new();
    while let Some(item) = cur.advance().expect("decode") {
        if item == Item::Event {
            let ev = cur.event().expect("event");
            out.push((ev.class.class.id, ev.cycles, OwnedValue::from_fields(ev.payload, &trace.plans[0])));
        }
    }
    out
}

#[test]
fn compact_header_when_it_fits() {
    let class = compact_class(LTTNG_PC);
    let mut w = mem_writer(&class, 4096);
    // Compact: 4-byte header + 1-byte payload; extended: 13-byte header (5 bits, aligned
    // 32-bit id, 64-bit timestamp) + 1.
    let events = [(3, 100), (3, 200), (77, 300), (3, (1 << 27) + 299), (3, (1 << 27) + 400), (3, (1 << 40) + 1)];
    for (k, &(id, ts)) in events.iter().enumerate() {
        w.event(id, ts, EventValues::payload(&byte(k as u64))).expect("event");
    }
    let f = w.finish().expect("finish");
    let trace = Trace::from_memory(to_tsdl(&class).as_bytes(), vec![(PathBuf::from("mem"), f.out.clone())]).expect("open");
    let p = &trace.streams[0].packets[0];
    // Event sizes: compact 5, compact 5, extended 14 (id 77), compact 5 (delta 2^27 - 1),
    // compact 5, extended 14 (delta beyond 27 bits).
    assert_eq!(p.content_bits - p.events_bits, 8 * (5 + 5 + 14 + 5 + 5 + 14));
    let got = read_mem(&class, f.out);
    let want: Vec<_> = events.iter().enumerate().map(|(k, &(id, ts))| (id, Some(ts), Some(byte(k as u64)))).collect();
    assert_eq!(got, want);
}

#[test]
fn packets_close_at_the_packet_size() {
    let class = compact_class(LTTNG_PC);
    let mut w = mem_writer(&class, 128);
    for k in 0..100u64 {
        w.event(3, 1000 + k * 10, EventValues::payload(&byte(k))).expect("event");
    }
    let f = w.finish().expect("finish");
    // 56 bytes of header and context, then 5-byte events: 14 per packet.
    assert_eq!(f.packets, 100u64.div_ceil(14));
    // Full packets are padded to 128 bytes; the last one (2 events) ends at its content.
    assert_eq!(f.out.len() as u64, (f.packets - 1) * 128 + 56 + 5 * (100 - 14 * (f.packets - 1)));
    let index = f.index.clone().expect("index");
    assert_eq!(index.len() as u64, 16 + 72 * f.packets);
    let got = read_mem(&class, f.out);
    assert_eq!(got.len(), 100);
    assert!(got.iter().enumerate().all(|(k, e)| e.1 == Some(1000 + k as u64 * 10)));
}

#[test]
fn packets_closed_early_are_not_padded() {
    let class = compact_class(LTTNG_PC);
    let mut w = mem_writer(&class, 4096);
    w.event(3, 1000, EventValues::payload(&byte(1))).expect("event");
    w.discard(5).expect("discard");
    w.event(3, 2000, EventValues::payload(&byte(2))).expect("event");
    w.flush_packet().expect("flush");
    w.event(3, 3000, EventValues::payload(&byte(3))).expect("event");
    let f = w.finish().expect("finish");
    assert_eq!(f.packets, 3);
    assert_eq!(f.out.len(), 3 * (56 + 5));
    let trace = Trace::from_memory(to_tsdl(&class).as_bytes(), vec![(PathBuf::from("mem"), f.out.clone())]).expect("open");
    let discarded: Vec<_> = trace.streams[0].packets.iter().map(|p| p.events_discarded).collect();
    assert_eq!(discarded, [Some(0), Some(5), Some(5)]);
    assert_eq!(read_mem(&class, f.out).len(), 3);
}

#[test]
fn oversized_event_gets_its_own_packet() {
    let text = format!(
        "/* CTF 1.8 */\ntrace {{ major = 1; minor = 8; byte_order = le; }};\nclock {{ name = monotonic; }};\nstream {{ {LTTNG_PC} event.header := struct {{ integer {{ size = 64; align = 8; signed = false; map = clock.monotonic.value; }} timestamp; }}; }};\nevent {{ name = \"s\"; fields := struct {{ string text; }}; }};\n"
    );
    let class = parse_tsdl(&text).expect("parses");
    let mut w = mem_writer(&class, 100);
    let long = "x".repeat(500);
    for (k, t) in ["a", long.as_str(), "b"].iter().enumerate() {
        w.event(0, k as u64, EventValues::payload(&OwnedValue::structure([OwnedValue::from(*t)]))).expect("event");
    }
    let f = w.finish().expect("finish");
    assert_eq!(f.packets, 3);
    let got = read_mem(&class, f.out);
    assert_eq!(got.iter().map(|e| e.2.clone()).collect::<Vec<_>>(), ["a", long.as_str(), "b"].iter().map(|t| Some(OwnedValue::structure([OwnedValue::from(*t)]))).collect::<Vec<_>>());
}

#[test]
fn mismatched_values_are_errors_and_leave_the_stream_usable() {
    let class = small_class();
    let mut w = mem_writer(&class, 512);
    let ctx = OwnedValue::structure([OwnedValue::I(5)]);
    let values = |p: &'static OwnedValue| EventValues { common_context: Some(&ctx), payload: Some(p), ..EventValues::default() };
    let ok = Box::leak(Box::new(dynamic_payload(3)));
    w.event(40, 10, values(ok)).expect("good event");
    let cases: Vec<(u64, OwnedValue, &str)> = vec![
        // An integer that does not fit.
        (1, { let mut p = simple_payload(1); if let OwnedValue::Struct(m) = &mut p { m[1] = OwnedValue::U(70_000); } p }, "`_hexfield`: 70000 does not fit an unsigned 16-bit integer"),
        // A string where an integer goes.
        (1, { let mut p = simple_payload(1); if let OwnedValue::Struct(m) = &mut p { m[0] = OwnedValue::from("x"); } p }, "`_intfield`: expected a signed 32-bit integer, got the string \"x\""),
        // A sequence longer than its length field says.
        (40, { let mut p = dynamic_payload(2); if let OwnedValue::Struct(m) = &mut p { m[0] = OwnedValue::U(1); } p }, "the sequence has 2 elements, but its length field `_seqfield_length` is 1"),
        // A variant option its tag does not select.
        (40, { let mut p = dynamic_payload(2); if let OwnedValue::Struct(m) = &mut p { m[3] = OwnedValue::variant(1, OwnedValue::from("t")); } p }, "option `_text` given, but the variant's tag `_tag` is 0, which selects option `_num`"),
        // Too few members.
        (1, OwnedValue::structure([OwnedValue::I(1)]), "the structure has 7 members, but 1 values were given"),
        // A NUL in a string.
        (1, { let mut p = simple_payload(1); if let OwnedValue::Struct(m) = &mut p { m[2] = OwnedValue::from("a\0b"); } p }, "a string cannot hold a NUL byte"),
        // A text array longer than the array.
        (1, { let mut p = simple_payload(1); if let OwnedValue::Struct(m) = &mut p { m[6] = OwnedValue::from("1234567"); } p }, "the string has 7 bytes, more than the array's 6"),
        // An unknown event class.
        (2, simple_payload(1), "stream class 0 has no event class 2"),
    ];
    for (id, payload, want) in &cases {
        let e = w.event(*id, 20, EventValues { common_context: Some(&ctx), payload: Some(payload), ..EventValues::default() }).expect_err(want);
        let msg = e.to_string();
        assert!(matches!(e, tracelens_ctf::Error::Write { .. }), "{msg}");
        assert!(msg.contains(want), "error `{msg}` does not say `{want}`");
    }
    let e = w.event(1, 20, EventValues::payload(&simple_payload(1))).expect_err("missing context");
    assert!(e.to_string().contains("stream event context: no value given"), "{e}");
    w.event(1, 30, values(Box::leak(Box::new(simple_payload(4))))).expect("good event after errors");
    let f = w.finish().expect("finish");
    let got = read_mem(&class, f.out);
    assert_eq!(got, vec![(40, Some(10), Some(dynamic_payload(3))), (1, Some(30), Some(simple_payload(4)))]);
}

#[test]
fn discards_at_the_start_and_the_end() {
    let class = compact_class(LTTNG_PC);
    let mut w = mem_writer(&class, 4096);
    w.discard(2).expect("discard");
    w.event(3, 5, EventValues::payload(&byte(1))).expect("event");
    w.discard(4).expect("discard");
    w.discard(1).expect("discard");
    w.event(3, 6, EventValues::payload(&byte(2))).expect("event");
    w.discard(9).expect("discard");
    let f = w.finish().expect("finish");
    assert_eq!((f.events, f.packets, f.discarded), (2, 3, 16));
    let trace = Trace::from_memory(to_tsdl(&class).as_bytes(), vec![(PathBuf::from("mem"), f.out)]).expect("open");
    let mut cur = trace.cursor(0);
    let mut items = Vec::new();
    while let Some(item) = cur.advance().expect("decode") {
        items.push(match item {
            Item::DiscardedEvents { count, .. } => format!("d{count}"),
            other => format!("{other:?}"),
        });
    }
    assert_eq!(items, ["d2", "Event", "d5", "Event", "d9"]);
    // Without `events_discarded`, recording discarded events is an error.
    let plain = compact_class("");
    let mut w = mem_writer(&plain, 4096);
    assert!(w.discard(1).is_err());
}

#[test]
fn single_packet_stream_without_packet_context() {
    let class = compact_class("");
    let mut w = mem_writer(&class, 64);
    for k in 0..50 {
        w.event(if k % 3 == 0 { 77 } else { 3 }, 7 * k, EventValues::payload(&byte(k))).expect("event");
    }
    let f = w.finish().expect("finish");
    assert_eq!(f.packets, 1);
    let got = read_mem(&class, f.out);
    assert_eq!(got.len(), 50);
    assert!(got.iter().enumerate().all(|(k, e)| e.1 == Some(7 * k as u64) && e.2 == Some(byte(k as u64))));
}

#[test]
fn timestamp_begin_restarts_narrow_timestamps() {
    // A 32-bit header timestamp cannot jump 2^32 ahead; a new packet (whose
    // `timestamp_begin` resets the clock) can.
    let text = format!(
        "/* CTF 1.8 */\ntrace {{ major = 1; minor = 8; byte_order = le; }};\nclock {{ name = monotonic; }};\nstream {{ {LTTNG_PC} event.header := struct {{ integer {{ size = 32; align = 8; signed = false; map = clock.monotonic.value; }} timestamp; }}; }};\nevent {{ name = \"e\"; fields := struct {{ integer {{ size = 8; align = 8; signed = false; }} x; }}; }};\n"
    );
    let class = parse_tsdl(&text).expect("parses");
    let mut w = mem_writer(&class, 4096);
    let times = [5u64, 6, 1 << 33, (1 << 33) + 1, 1 << 40];
    for (k, &t) in times.iter().enumerate() {
        w.event(0, t, EventValues::payload(&byte(k as u64))).expect("event");
    }
    let f = w.finish().expect("finish");
    assert_eq!(f.packets, 3);
    let got: Vec<_> = read_mem(&class, f.out).into_iter().map(|e| e.1.expect("time")).collect();
    assert_eq!(got, times);
}

#[test]
fn owned_value_equality() {
    assert_eq!(OwnedValue::F(f64::NAN), OwnedValue::F(-f64::NAN));
    assert_ne!(OwnedValue::F(0.0), OwnedValue::F(-0.0));
    assert_ne!(OwnedValue::U(1), OwnedValue::I(1));
    assert_eq!(OwnedValue::from(3u32).as_i64(), Some(3));
    assert_eq!(OwnedValue::I(-1).as_u64(), None);
}

// ---------------------------------------------------------------------------------------------
// No allocation per event

struct CountingAlloc;

thread_local! {
    static COUNTING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        if COUNTING.with(|c| c.get()) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        std::alloc::System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        std::alloc::System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        if COUNTING.with(|c| c.get()) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        std::alloc::System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

#[test]
fn no_allocation_per_event() {
    let class = small_class();
    let mut w = StreamWriter::new(&class, 0, "sink", std::io::sink(), Some(std::io::sink()), &StreamOptions { packet_size: 4096, ..StreamOptions::default() }).expect("writer");
    w.set_packet_context("cpu_id", OwnedValue::U(1)).expect("cpu_id");
    let ctx = OwnedValue::structure([OwnedValue::I(1)]);
    let payloads: Vec<(u64, OwnedValue)> = (0..64).map(|k| if k % 2 == 0 { (1, simple_payload(k)) } else { (40, dynamic_payload(k)) }).collect();
    let mut ts = 0;
    let mut write = |w: &mut StreamWriter<std::io::Sink>, n: usize| {
        for k in 0..n {
            let (id, p) = &payloads[k % payloads.len()];
            ts += if k % 100 == 99 { 1 << 30 } else { 500 };
            w.event(*id, ts, EventValues::payload(p).with_common_context(&ctx)).expect("event");
            if k % 1000 == 999 {
                w.discard(2).expect("discard");
            }
        }
    };
    write(&mut w, 1000); // buffers grow to the packet size
    let n = 200_000;
    COUNTING.with(|c| c.set(true));
    let started = std::time::Instant::now();
    write(&mut w, n);
    let secs = started.elapsed().as_secs_f64();
    COUNTING.with(|c| c.set(false));
    let allocations = ALLOCATIONS.load(Ordering::Relaxed);
    let f = w.finish().expect("finish");
    eprintln!("no_allocation_per_event: {n} events in {secs:.3}s ({:.1} M events/s, {} packets), {allocations} allocations", n as f64 / secs / 1e6, f.packets);
    assert_eq!(allocations, 0, "the writer allocated while writing events");
}
