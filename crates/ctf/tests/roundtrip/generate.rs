//! Random trace shapes (metadata and events) for the round-trip property test, and their
//! proptest strategies.

use proptest::prelude::*;
use tracelens_ctf::ir::*;


#[derive(Clone, Debug)]
pub(crate) struct IntSpec {
    pub(crate) size: u32,
    pub(crate) align: u32,
    pub(crate) signed: bool,
    /// Byte order opposite to the trace's (only byte-sized, byte-aligned integers: readers
    /// cannot change byte order within a byte).
    pub(crate) swap: bool,
    pub(crate) base: DisplayBase,
}

#[derive(Clone, Debug)]
pub(crate) enum G {
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
    // CTF 2 only:
    /// A variable-length (LEB128) integer: signed, display base.
    VarInt(bool, DisplayBase),
    /// A fixed-length integer in the bit order opposite to its byte order's.
    Rev(IntSpec),
    /// A fixed-length boolean of this shape (unsigned).
    Bool(IntSpec),
    /// A bit map of this shape (unsigned) with flags over these bit ranges.
    BitMap(IntSpec, Vec<(i128, i128)>),
    /// A static-length BLOB of this many bytes.
    Blob(u64),
    /// A dynamic-length BLOB and its length field (`local`: a relative CTF 2 location).
    DynBlob(IntSpec, bool),
    /// A null-terminated UTF-16 or UTF-32 string.
    Wide(Encoding),
    /// An optional and its selector: a boolean, or an integer with the ranges that enable it.
    Opt(Box<G>, Option<(IntSpec, Vec<(i128, i128)>)>),
    /// A variant with a plain integer selector (no mappings) and explicit option ranges
    /// (`local`: a relative CTF 2 location).
    IVar(Vec<G>, IntSpec, Vec<(i128, i128)>, bool),
}

#[derive(Clone, Debug)]
pub(crate) struct VarSpec {
    pub(crate) opts: Vec<G>,
    /// The tag's container.
    pub(crate) tag: IntSpec,
    /// The range of each option.
    pub(crate) ranges: Vec<(i128, i128)>,
    /// A second range for option 0.
    pub(crate) extra: Option<(i128, i128)>,
    /// Tag referred to by an absolute path when possible.
    pub(crate) abs: bool,
    /// How names are written (0: `oK` options and labels; 1: `oK` options and `_oK` labels,
    /// which readers match with the underscore removed; 2: `_oK` options and labels).
    pub(crate) naming: u8,
}

#[derive(Clone, Debug)]
pub(crate) enum GV {
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
    /// Selector value, the field when present.
    Opt(i64, Option<Box<GV>>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Header {
    None,
    Compact,
    Large,
    Simple64,
    Simple32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pc {
    Begin,
    End,
    Content(u32),
    Packet(u32),
    Discarded(u32),
    Seq,
    Cpu,
}

#[derive(Clone, Debug)]
pub(crate) struct EventSpec {
    pub(crate) id: u64,
    pub(crate) loglevel: Option<i64>,
    pub(crate) context: Option<G>,
    pub(crate) payload: Option<G>,
}

#[derive(Clone, Debug)]
pub(crate) struct StreamSpec {
    pub(crate) id: u64,
    /// `None`: no packet context at all.
    pub(crate) pc: Option<Vec<Pc>>,
    pub(crate) header: Header,
    pub(crate) common: Option<G>,
    /// The stream event context ends with `clen`, the length of the payloads' `ExtSeq`s.
    pub(crate) clen: bool,
    /// The header's variant refers to its tag as `stream.event.header.id`.
    pub(crate) abs_tag: bool,
    pub(crate) events: Vec<EventSpec>,
    pub(crate) instances: usize,
}

impl StreamSpec {
    pub(crate) fn has(&self, m: fn(&Pc) -> bool) -> bool {
        self.pc.as_ref().is_some_and(|pc| pc.iter().any(m))
    }
    pub(crate) fn single_packet(&self) -> bool {
        !self.has(|p| matches!(p, Pc::Content(_) | Pc::Packet(_)))
    }
    fn discards(&self) -> bool {
        self.has(|p| matches!(p, Pc::Discarded(_))) && !self.single_packet()
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Spec {
    pub(crate) big_endian: bool,
    pub(crate) uuid: Option<[u8; 16]>,
    pub(crate) clock: ClockClass,
    pub(crate) magic: bool,
    pub(crate) ph_uuid: bool,
    pub(crate) sid_size: Option<u32>,
    pub(crate) instance: bool,
    pub(crate) no_packet_header: bool,
    /// The packet header ends with a `domain_id` set by the caller.
    pub(crate) domain: bool,
    pub(crate) streams: Vec<StreamSpec>,
    pub(crate) callsite: bool,
}

#[derive(Clone, Debug)]
pub(crate) enum Op {
    Event { class: usize, delta: u64, common: Option<GV>, context: Option<GV>, payload: Option<GV> },
    Discard(u64),
}

#[derive(Clone, Debug)]
pub(crate) struct Case {
    pub(crate) spec: Spec,
    /// Per stream class, per instance, the operations.
    pub(crate) ops: Vec<Vec<Vec<Op>>>,
    pub(crate) start: u64,
    pub(crate) packet_size: u64,
    /// Written as CTF 2.
    pub(crate) ctf2: bool,
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

/// CTF 2's own leaves (and the CTF 1.8 ones).
fn leaf2() -> BoxedStrategy<G> {
    let uint = || int_spec().prop_map(|mut i| {
        i.signed = false;
        i
    });
    prop_oneof![
        6 => leaf(),
        2 => (any::<bool>(), 0usize..4).prop_map(|(s, b)| G::VarInt(s, BASES[b])),
        1 => int_spec().prop_map(|mut i| {
            i.swap = false;
            G::Rev(i)
        }),
        1 => uint().prop_map(G::Bool),
        1 => (uint(), prop::collection::vec((0i128..64, 0i128..3), 1..4)).prop_map(|(i, r)| {
            let ranges = r.into_iter().map(|(lo, w)| (lo % i.size as i128, (lo % i.size as i128 + w).min(i.size as i128 - 1))).collect();
            G::BitMap(i, ranges)
        }),
        1 => (0u64..6).prop_map(G::Blob),
        1 => (small_uint(), any::<bool>()).prop_map(|(l, local)| G::DynBlob(l, local)),
        1 => prop::sample::select(vec![Encoding::Utf16Be, Encoding::Utf16Le, Encoding::Utf32Be, Encoding::Utf32Le]).prop_map(G::Wide),
    ]
    .boxed()
}

fn gtype() -> BoxedStrategy<G> {
    gtype_from(leaf(), false)
}

fn gtype_from(leaves: BoxedStrategy<G>, ctf2: bool) -> BoxedStrategy<G> {
    leaves
        .prop_recursive(3, 24, 4, move |inner| {
            let ctf2_only = if ctf2 {
                prop_oneof![
                    (inner.clone(), prop::option::of((small_uint(), prop::collection::vec((0i128..40, 0i128..5), 1..3))))
                        .prop_map(|(e, sel)| G::Opt(Box::new(e), sel.map(|(s, r)| (s, r.into_iter().map(|(lo, w)| (lo, lo + w)).collect())))),
                    (prop::collection::vec(inner.clone(), 1..4), small_uint(), prop::collection::vec((0i128..3, 0i128..3), 4), any::<bool>()).prop_map(|(opts, tag, widths, local)| {
                        let mut at = 0i128;
                        let ranges = (0..opts.len()).map(|k| {
                            let (gap, w) = widths[k];
                            let r = (at + gap, at + gap + w);
                            at = r.1 + 1;
                            r
                        }).collect();
                        G::IVar(opts, tag, ranges, local)
                    }),
                ]
                .boxed()
            } else {
                inner.clone()
            };
            let w2 = if ctf2 { 2 } else { 0 };
            prop_oneof![
                w2 => ctf2_only,
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
fn scope_root(ctf2: bool) -> BoxedStrategy<G> {
    let members = if ctf2 { gtype_from(leaf2(), true) } else { gtype() };
    (prop::collection::vec(members, 0..5), prop::sample::select(vec![1u32, 1, 8, 32])).prop_map(|(m, a)| G::Struct(m, a)).boxed()
}

fn opt_root(p: f64, ctf2: bool) -> BoxedStrategy<Option<G>> {
    prop::option::weighted(p, scope_root(ctf2)).boxed()
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

fn stream_spec(ctf2: bool) -> impl Strategy<Value = StreamSpec> {
    (
        pc_strategy(),
        header_strategy(),
        opt_root(0.3, ctf2),
        prop::collection::vec((opt_root(0.3, ctf2), opt_root(0.85, ctf2), prop::option::of(0i64..15), prop::bool::weighted(0.25)), 1..4),
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

fn spec_strategy(ctf2: bool) -> impl Strategy<Value = Spec> {
    (
        any::<bool>(),
        prop::option::of(any::<[u8; 16]>()),
        (prop::sample::select(vec![1_000_000_000u64, 1_000_000, 2_500_000_000]), 0i64..2_000_000_000, 0i64..1000, any::<bool>()),
        any::<[bool; 6]>(),
        prop::sample::select(vec![8u32, 16, 32, 64]),
        prop::collection::vec(stream_spec(ctf2), 1..=3),
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

pub(crate) fn value(g: &G) -> BoxedStrategy<GV> {
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
        G::VarInt(..) | G::Rev(_) | G::Bool(_) | G::BitMap(..) | G::Blob(_) | G::DynBlob(..) | G::Wide(_) | G::Opt(..) | G::IVar(..) => ctf2_value(g),
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

fn ctf2_value(g: &G) -> BoxedStrategy<GV> {
    match g {
        G::VarInt(true, _) => prop_oneof![any::<i64>(), -200i64..200, Just(i64::MIN), Just(i64::MAX)].prop_map(GV::I).boxed(),
        G::VarInt(false, _) => prop_oneof![any::<u64>(), 0u64..300, Just(u64::MAX)].prop_map(GV::U).boxed(),
        G::Rev(s) | G::BitMap(s, _) => int_value(s),
        G::Bool(s) => prop_oneof![3 => 0u64..2, 1 => int_value(s).prop_map(|v| if let GV::U(u) = v { u } else { 0 })].prop_map(GV::U).boxed(),
        G::Blob(n) => prop::collection::vec(any::<u8>(), *n as usize).prop_map(GV::B).boxed(),
        G::DynBlob(..) => prop::collection::vec(any::<u8>(), 0..5).prop_map(GV::B).boxed(),
        G::Wide(e) => {
            let e = *e;
            "[ -~éü日本😀]{0,6}".prop_map(move |s| GV::B(units(&s, e))).boxed()
        }
        G::Opt(inner, sel) => {
            let inner = (**inner).clone();
            match sel.clone() {
                None => (any::<bool>(), value(&inner)).prop_map(|(on, v)| GV::Opt(on as i64, on.then(|| Box::new(v)))).boxed(),
                Some((s, ranges)) => (int_value(&s), value(&inner))
                    .prop_map(move |(sv, v)| {
                        let x = if let GV::U(u) = sv { u as i64 } else { 0 };
                        let on = ranges.iter().any(|&(lo, hi)| lo <= x as i128 && x as i128 <= hi);
                        GV::Opt(x, on.then(|| Box::new(v)))
                    })
                    .boxed(),
            }
        }
        G::IVar(opts, _, ranges, _) => {
            let (opts, ranges) = (opts.clone(), ranges.clone());
            (0..opts.len())
                .prop_flat_map(move |k| {
                    let (lo, hi) = ranges[k];
                    (Just(k as u32), (lo as i64)..=(hi as i64), value(&opts[k]))
                })
                .prop_map(|(k, tag, v)| GV::Var(k, tag, Box::new(v)))
                .boxed()
        }
        _ => unreachable!("not a CTF 2 shape"),
    }
}

/// `s` in the code units of `e`.
pub(crate) fn units(s: &str, e: Encoding) -> Vec<u8> {
    match e {
        Encoding::Utf16Be => s.encode_utf16().flat_map(u16::to_be_bytes).collect(),
        Encoding::Utf16Le => s.encode_utf16().flat_map(u16::to_le_bytes).collect(),
        Encoding::Utf32Be => s.chars().flat_map(|c| (c as u32).to_be_bytes()).collect(),
        _ => s.chars().flat_map(|c| (c as u32).to_le_bytes()).collect(),
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
            G::Opt(e, _) => fix(e),
            G::IVar(opts, ..) => opts.iter_mut().for_each(fix),
            G::Str(_) | G::StrNe(_) | G::Text(_) | G::Big(_) | G::ExtSeq(_) => {}
            G::VarInt(..) | G::Rev(_) | G::Bool(_) | G::BitMap(..) | G::Blob(_) | G::DynBlob(..) | G::Wide(_) => {}
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

pub(crate) fn case_strategy(bt2: bool) -> impl Strategy<Value = Case> {
    case_strategy_of(bt2, false)
}

/// Cases with CTF 2's field classes too, written as CTF 2.
pub(crate) fn case_strategy_ctf2() -> impl Strategy<Value = Case> {
    case_strategy_of(false, true)
}

/// Makes a spec CTF 2 can say: integers wider than 64 bits become BLOBs.
fn for_ctf2(mut spec: Spec) -> Spec {
    fn fix(g: &mut G) {
        match g {
            G::Big(n) => *g = G::Blob(*n as u64),
            G::Struct(ms, _) => ms.iter_mut().for_each(fix),
            G::Array(e, _) | G::Seq(e, ..) | G::Opt(e, _) => fix(e),
            G::Var(v) => v.opts.iter_mut().for_each(fix),
            G::IVar(opts, ..) => opts.iter_mut().for_each(fix),
            _ => {}
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

fn case_strategy_of(bt2: bool, ctf2: bool) -> impl Strategy<Value = Case> {
    (spec_strategy(ctf2), 0u8..3)
        .prop_map(|(s, k)| if k == 0 { byte_aligned(s) } else { s })
        .prop_map(move |s| if ctf2 { for_ctf2(s) } else { s })
        .prop_map(move |s| if bt2 { for_babeltrace2(s) } else { s })
        .prop_flat_map(move |spec| {
        let ops: Vec<BoxedStrategy<Vec<Vec<Op>>>> =
            spec.streams.iter().map(|s| prop::collection::vec(ops_strategy(s), s.instances).boxed()).collect();
        (Just(spec), ops, 0u64..(1 << 40), prop::sample::select(vec![96u64, 128, 200, 256, 1024, 4096]))
            .prop_map(move |(spec, ops, start, packet_size)| Case { spec, ops, start, packet_size, ctf2 })
    })
}
