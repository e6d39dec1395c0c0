//! Shapes to IR ([`build_class`]) and generated values to [`OwnedValue`] trees.

use std::sync::Arc;

use tracelens_ctf::ir::*;
use tracelens_ctf::write::OwnedValue;

use crate::*;

struct Build {
    pub(crate) bo: ByteOrder,
}

pub(crate) fn other(bo: ByteOrder) -> ByteOrder {
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
            role: None,
            varlen: false,
            reversed: false,
        }
    }

    fn uint(&self, size: u32, align: u32) -> FieldType {
        FieldType::Int(IntType { size, align, signed: false, byte_order: self.bo, base: DisplayBase::Decimal, encoding: Encoding::None, mapped_clock: None, role: None, varlen: false, reversed: false })
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
            role: None,
            varlen: false,
            reversed: false,
        })
    }

    fn char_int(&self) -> FieldType {
        FieldType::Int(IntType { size: 8, align: 8, signed: false, byte_order: self.bo, base: DisplayBase::Decimal, encoding: Encoding::Utf8, mapped_clock: None, role: None, varlen: false, reversed: false })
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
                out.push(nf(name, FieldType::Variant(VariantType { tag: self.path(&tn, v.abs, prefix), options, ranges: None })));
            }
            G::DynBlob(l, local) => {
                let ln = format!("{name}_len");
                out.push(nf(&ln, FieldType::Int(self.int(l))));
                let length = if *local { FieldPath::Local(vec![Some(ln)]) } else { self.path(&ln, false, prefix) };
                out.push(nf(name, FieldType::Blob(BlobType { length: BlobLength::Dynamic(length), media_type: "application/octet-stream".into(), role: None })));
            }
            G::Opt(e, sel) => {
                let sn = format!("{name}_sel");
                let (sel_ty, ranges) = match sel {
                    None => (FieldType::Bool(self.int(&IntSpec { size: 8, align: 8, signed: false, swap: false, base: DisplayBase::Decimal })), None),
                    Some((s, r)) => (FieldType::Int(self.int(s)), Some(r.clone())),
                };
                out.push(nf(&sn, sel_ty));
                let selector = FieldPath::Local(vec![Some(sn)]);
                out.push(nf(name, FieldType::Optional(OptionalType { ty: Box::new(self.single(e)), selector, ranges })));
            }
            G::IVar(opts, tag, ranges, local) => {
                let tn = format!("{name}_tag");
                out.push(nf(&tn, FieldType::Int(self.int(tag))));
                let options = opts.iter().enumerate().map(|(k, o)| nf(&format!("o{k}"), self.single(o))).collect();
                let tag = if *local { FieldPath::Local(vec![Some(tn)]) } else { self.path(&tn, false, prefix) };
                out.push(nf(name, FieldType::Variant(VariantType { tag, options, ranges: Some(ranges.iter().map(|r| vec![*r]).collect()) })));
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
            G::Big(n) => FieldType::Int(IntType { size: n * 8, align: 8, signed: false, byte_order: self.bo, base: DisplayBase::Hexadecimal, encoding: Encoding::None, mapped_clock: None, role: None, varlen: false, reversed: false }),
            G::Seq(..) | G::TextSeq(..) | G::Var(..) | G::ExtSeq(_) | G::DynBlob(..) | G::Opt(..) | G::IVar(..) => FieldType::Struct(self.structure(std::slice::from_ref(g), 1, &None)),
            G::VarInt(signed, base) => FieldType::Int(IntType { varlen: true, align: 8, size: 64, base: *base, ..IntType::new(64, *signed, self.bo) }),
            G::Rev(s) => FieldType::Int(IntType { reversed: true, ..self.int(s) }),
            G::Bool(s) => FieldType::Bool(self.int(s)),
            G::BitMap(s, ranges) => FieldType::BitMap(EnumType {
                container: self.int(s),
                mappings: ranges.iter().enumerate().map(|(k, &(lower, upper))| EnumMapping { label: format!("F{k}"), lower, upper }).collect(),
            }),
            G::Blob(n) => FieldType::Blob(BlobType { length: BlobLength::Static(*n), media_type: "application/octet-stream".into(), role: None }),
            G::Wide(e) => FieldType::String(*e),
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
                container: IntType { size: id_size, align: id_align, signed: false, byte_order: self.bo, base: DisplayBase::Decimal, encoding: Encoding::None, mapped_clock: None, role: None, varlen: false, reversed: false },
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
                ranges: None,
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

pub(crate) fn build_class(spec: &Spec) -> TraceClass {
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
        (G::DynBlob(..), GV::B(b)) => {
            out.push(OwnedValue::U(b.len() as u64));
            out.push(OwnedValue::Bytes(b.clone()));
        }
        (G::Opt(e, _), GV::Opt(sel, x)) => {
            out.push(OwnedValue::U(*sel as u64));
            out.push(OwnedValue::Array(x.iter().map(|x| single_value(e, x)).collect()));
        }
        (G::IVar(opts, ..), GV::Var(k, tag, x)) => {
            out.push(OwnedValue::U(*tag as u64));
            out.push(OwnedValue::Variant(*k, Box::new(single_value(&opts[*k as usize], x))));
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
        (G::Seq(..) | G::TextSeq(..) | G::Var(..) | G::ExtSeq(_) | G::DynBlob(..) | G::Opt(..) | G::IVar(..), _) => struct_value(std::slice::from_ref(g), std::slice::from_ref(v)),
        (_, GV::U(u)) => OwnedValue::U(*u),
        (_, GV::I(i)) => OwnedValue::I(*i),
        (_, GV::F(f)) => OwnedValue::F(*f),
        (_, GV::S(s)) => OwnedValue::Str(s.clone()),
        (_, GV::B(b)) => OwnedValue::Bytes(b.clone()),
        (g, v) => panic!("value {v:?} does not match {g:?}"),
    }
}

pub(crate) fn root_value(g: &G, v: &GV) -> OwnedValue {
    match (g, v) {
        (G::Struct(ms, _), GV::Struct(vs)) => struct_value(ms, vs),
        _ => struct_value(std::slice::from_ref(g), std::slice::from_ref(v)),
    }
}
