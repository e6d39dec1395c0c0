//! Writes a CTF 2 trace (LTTng's kernel layout) of N events of one class whose payload is
//! eight unsigned 64-bit integers: fixed-length, variable-length (LEB128), or each behind an
//! optional field selected by a boolean: `cargo run --release --example ctf2_ints -- DIR
//! fixed|varlen|optional N`. The values are small and large alike (1 to 10 LEB128 bytes).
//! `BENCHMARKS.md` compares the decoding cost of the three (`count` example under callgrind).

use std::sync::Arc;

use tracelens_ctf::ir::{FieldPath, FieldType, NamedField, OptionalType, StructType};
use tracelens_ctf::lttng::{kernel_env, ClassDef, KernelTrace, Ty};
use tracelens_ctf::write::{EventValues, OwnedValue, TraceWriter, Version};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, kind, n] = &args[..] else {
        eprintln!("usage: ctf2_ints DIR fixed|varlen|optional N");
        std::process::exit(2);
    };
    let n: u64 = n.parse().expect("N: a number");
    let def = ClassDef { name: "ints".into(), fields: (0..8).map(|k| (format!("v{k}"), Ty::Int { bits: 64, signed: false, base: 10 })).collect() };
    let mut class = def.class(0);
    let Some(FieldType::Struct(fixed)) = class.payload.as_deref().cloned() else { unreachable!("a structure payload") };
    let payload = match kind.as_str() {
        "fixed" => fixed,
        "varlen" => StructType {
            fields: fixed
                .fields
                .into_iter()
                .map(|mut f| {
                    if let FieldType::Int(i) = &mut f.ty {
                        i.varlen = true;
                        i.align = 8;
                    }
                    f
                })
                .collect(),
            min_align: 8,
        },
        "optional" => {
            let mut fields = vec![NamedField { name: "present".into(), ty: FieldType::Bool(tracelens_ctf::ir::IntType::new(8, false, tracelens_ctf::ir::ByteOrder::Little)) }];
            fields.extend(fixed.fields.into_iter().map(|f| NamedField {
                name: f.name,
                ty: FieldType::Optional(OptionalType { ty: Box::new(f.ty), selector: FieldPath::Local(vec![Some("present".into())]), ranges: None }),
            }));
            StructType { fields, min_align: 8 }
        }
        other => panic!("unknown kind {other}: fixed, varlen or optional"),
    };
    class.payload = Some(Arc::new(FieldType::Struct(payload)));
    let trace = KernelTrace { uuid: [7; 16], env: kernel_env("bench", None, "ctf2_ints"), clock_offset_ns: 0, common_context: false, events: vec![class] }.class();
    let mut tw = TraceWriter::create_version(dir, &trace, Version::Ctf2).expect("create the trace");
    let mut s = tw.stream(0, "stream0").expect("a stream");
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for e in 0..n {
        let vals: Vec<u64> = (0..8)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // 7 to 64 significant bits: 1 to 10 LEB128 bytes.
                x >> (x % 58)
            })
            .collect();
        let v = match kind.as_str() {
            "optional" => OwnedValue::Struct(std::iter::once(OwnedValue::U(1)).chain(vals.iter().map(|&v| OwnedValue::Array(vec![OwnedValue::U(v)]))).collect()),
            _ => OwnedValue::Struct(vals.iter().map(|&v| OwnedValue::U(v)).collect()),
        };
        s.event(0, 1000 + e * 100, EventValues::payload(&v)).expect("write an event");
    }
    s.finish().expect("finish the stream");
}
