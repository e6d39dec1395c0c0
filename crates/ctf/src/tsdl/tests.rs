//! Unit tests of TSDL lowering.

use super::parse;
use crate::ir::{ByteOrder, DisplayBase, EnvValue, FieldPath, FieldType, IntType, Scope};
use crate::Error;

fn payload_field<'a>(t: &'a crate::ir::TraceClass, ev: usize, field: &str) -> &'a FieldType {
    let p = t.streams[0].events[ev].payload.as_deref().and_then(FieldType::as_struct).unwrap();
    &p.fields.iter().find(|f| f.name == field).unwrap().ty
}

fn int(t: &FieldType) -> &IntType {
    match t {
        FieldType::Int(i) => i,
        other => panic!("not an integer: {other:?}"),
    }
}

fn err_at(text: &str) -> (u32, u32, String) {
    match parse(text) {
        Err(Error::Metadata { line, column, message }) => (line, column, message),
        r => panic!("expected a metadata error, got {r:?}"),
    }
}

const TRACE_LE: &str = "trace { major = 1; minor = 8; byte_order = le; };\n";

#[test]
fn byte_order_from_later_trace_block() {
    let t = parse(
        "typealias integer { size = 32; } := u32;
         typealias integer { size = 16; byte_order = le; } := le16;
         event { name = e; fields := struct { u32 a; le16 b; integer { size = 8; byte_order = native; } c; }; };
         trace { major = 1; minor = 8; byte_order = be; };",
    )
    .unwrap();
    assert_eq!(t.byte_order, ByteOrder::Big);
    assert_eq!(int(payload_field(&t, 0, "a")).byte_order, ByteOrder::Big);
    assert_eq!(int(payload_field(&t, 0, "b")).byte_order, ByteOrder::Little);
    assert_eq!(int(payload_field(&t, 0, "c")).byte_order, ByteOrder::Big);
    // The implicit stream class.
    assert_eq!(t.streams.len(), 1);
    assert_eq!(t.streams[0].id, 0);
}

#[test]
fn integer_attributes() {
    let t = parse(&format!(
        "{TRACE_LE} clock {{ name = mono; }};
         event {{ name = e; fields := struct {{
            integer {{ size = 27; signed = 1; base = x; map = clock.mono.value; }} a;
            integer {{ size = 64; align = 32; signed = true; base = 8; encoding = UTF8; }} b;
         }}; }};"
    ))
    .unwrap();
    let a = int(payload_field(&t, 0, "a"));
    assert_eq!((a.size, a.align, a.signed, a.base), (27, 1, true, DisplayBase::Hexadecimal));
    assert_eq!(a.mapped_clock.as_deref(), Some("mono"));
    let b = int(payload_field(&t, 0, "b"));
    assert_eq!((b.size, b.align, b.base), (64, 32, DisplayBase::Octal));
}

#[test]
fn scoping() {
    // A typealias inside a structure is not visible outside of it.
    let inner = "typealias integer { size = 8; } := t8;
        struct s { typealias integer { size = 16; } := t16; t16 a; t8 b; };";
    assert!(parse(&format!("{TRACE_LE}{inner}")).is_ok());
    let (line, col, msg) = err_at(&format!("{TRACE_LE}{inner}\nstruct u {{ t16 c; }};"));
    assert_eq!((line, col), (4, 12), "{msg}");
    // Shadowing in an inner scope is allowed, redefinition in the same scope is not.
    assert!(parse(&format!(
        "{TRACE_LE} typealias integer {{ size = 8; }} := t; struct s {{ typealias integer {{ size = 16; }} := t; t a; }};"
    ))
    .is_ok());
    assert!(parse(&format!(
        "{TRACE_LE} typealias integer {{ size = 8; }} := t; typealias integer {{ size = 16; }} := t;"
    ))
    .is_err());
    // Names declared in an event block stay there.
    let (_, _, msg) = err_at(&format!(
        "{TRACE_LE} event {{ name = a; typealias integer {{ size = 8; }} := t; fields := struct {{ t x; }}; }};
         event {{ name = b; id = 1; fields := struct {{ t x; }}; }};"
    ));
    assert!(msg.contains("unknown type"), "{msg}");
}

#[test]
fn enum_values() {
    let t = parse(&format!(
        "{TRACE_LE} typealias integer {{ size = 8; signed = true; }} := s8;
         event {{ name = e; fields := struct {{
            enum : s8 {{ A, B = -5, C, D = 10 ... 12, E, \"f g\" }} x;
         }}; }};"
    ))
    .unwrap();
    let FieldType::Enum(e) = payload_field(&t, 0, "x") else { panic!() };
    let got: Vec<(&str, i128, i128)> =
        e.mappings.iter().map(|m| (m.label.as_str(), m.lower, m.upper)).collect();
    assert_eq!(
        got,
        vec![
            ("A", 0, 0),
            ("B", -5, -5),
            ("C", -4, -4),
            ("D", 10, 12),
            ("E", 13, 13),
            ("f g", 14, 14)
        ]
    );
    // Out of range, implicitly too.
    assert!(parse(&format!(
        "{TRACE_LE} typealias integer {{ size = 8; }} := u8; enum e : u8 {{ A = 255, B }};"
    ))
    .is_err());
    assert!(parse(&format!(
        "{TRACE_LE} typealias integer {{ size = 8; }} := u8; enum e : u8 {{ A = -1 }};"
    ))
    .is_err());
    // Implicit `int` container.
    assert!(parse(&format!("{TRACE_LE} enum e {{ A }};")).is_err());
    assert!(parse(&format!(
        "{TRACE_LE} typealias integer {{ size = 32; signed = true; }} := int; enum e {{ A = -3 }};"
    ))
    .is_ok());
}

#[test]
fn clock_offsets_and_env() {
    let t = parse(&format!(
        "{TRACE_LE} clock {{ name = \"c\"; freq = 1000; offset_s = -10; offset = 0x20; precision = 3; absolute = TRUE;
            uuid = \"2a6422d0-6cee-11e0-8c08-cb07d7b3a564\"; description = \"d\"; }};
         clock {{ name = d; }};
         env {{ a = -3; b = \"x\\0y\"; }};"
    ))
    .unwrap();
    let c = t.clock("c").unwrap();
    assert_eq!((c.freq, c.offset_s, c.offset, c.precision, c.absolute), (1000, -10, 32, 3, true));
    assert_eq!(c.uuid.unwrap()[0], 0x2a);
    let d = t.clock("d").unwrap();
    assert_eq!((d.freq, d.offset_s, d.offset), (1_000_000_000, 0, 0));
    assert_eq!(t.env("a"), Some(&EnvValue::Int(-3)));
    assert_eq!(t.env("b"), Some(&EnvValue::Str("x".into())));
}

#[test]
fn sequences_variants_and_paths() {
    let t = parse(&format!(
        "{TRACE_LE} typealias integer {{ size = 8; }} := u8;
         stream {{ event.header := struct {{ enum : u8 {{ a, b }} id; variant <id> {{ u8 a; u8 b; }} v; }}; }};
         event {{ name = e; fields := struct {{
            u8 len;
            u8 s[len][2];
            u8 t[stream.event.header.id];
            variant <stream.event.header.id> {{ u8 a; string b; }} w;
            u8 arr[0x8000000000000000];
         }}; }};"
    ))
    .unwrap();
    let FieldType::Sequence(s) = payload_field(&t, 0, "s") else { panic!() };
    assert_eq!(s.length, FieldPath::Relative(vec!["len".into()]));
    assert!(matches!(&*s.element, FieldType::Array(a) if a.length == 2));
    let FieldType::Variant(v) = payload_field(&t, 0, "w") else { panic!() };
    assert_eq!(v.tag, FieldPath::Absolute(Scope::EventHeader, vec!["id".into()]));
    let FieldType::Array(a) = payload_field(&t, 0, "arr") else { panic!() };
    assert_eq!(a.length, 1 << 63);
    // A sequence length that is not an integer, a tag that is not an enumeration.
    assert!(parse(&format!(
        "{TRACE_LE} event {{ name = e; fields := struct {{ string l; string x[l]; }}; }};"
    ))
    .is_err());
    assert!(parse(&format!(
        "{TRACE_LE} event {{ name = e; fields := struct {{ string l; variant <l> {{ string a; }} x; }}; }};"
    ))
    .is_err());
}

#[test]
fn untagged_variant_used_with_tag() {
    let t = parse(&format!(
        "{TRACE_LE} typealias integer {{ size = 8; }} := u8;
         variant v {{ u8 a; string b; }};
         event {{ name = e; fields := struct {{ enum : u8 {{ a, b }} tag; variant v <tag> x; }}; }};"
    ))
    .unwrap();
    assert!(matches!(payload_field(&t, 0, "x"), FieldType::Variant(v) if v.options.len() == 2));
    assert!(parse(&format!(
        "{TRACE_LE} variant v {{ string a; }}; event {{ name = e; fields := struct {{ variant v x; }}; }};"
    ))
    .is_err());
}

#[test]
fn errors_have_positions() {
    let (line, col, _) = err_at("/* CTF 1.8 */\ntrace {\n\tmajor = 1x;\n};");
    assert_eq!((line, col), (3, 11));
    let (line, col, _) = err_at("trace { major = 1; minor = 8; byte_order = le; };\r\nstruct a { integer { size = 0; } x; };");
    assert_eq!((line, col), (2, 29));
    let (line, col, _) = err_at(&format!("{TRACE_LE}struct a {{ string trace; }};"));
    assert_eq!((line, col), (2, 19));
}

#[test]
fn hostile_nesting_is_bounded() {
    let deep = format!("{TRACE_LE}{}{}", "struct { ".repeat(100_000), "} x; ".repeat(100_000));
    assert!(parse(&deep).is_err());
    let ok = format!(
        "{TRACE_LE}struct s {{ {}string y; {}}};",
        "struct { ".repeat(120),
        "} x; ".repeat(120)
    );
    assert!(parse(&ok).is_ok());
    let dims = format!("{TRACE_LE}typedef string a{};", "[1]".repeat(100));
    assert!(parse(&dims).is_err());
    let mut chain = format!("{TRACE_LE}typedef string t0;");
    for i in 1..1000 {
        chain.push_str(&format!("typedef t{} t{i}[1];", i - 1));
    }
    assert!(parse(&chain).is_err());
    // Each typedef doubles the previous one: copies must stay bounded.
    let mut doubling = format!("{TRACE_LE}typedef string t0;");
    for i in 1..64 {
        doubling.push_str(&format!("typedef struct {{ t{0} a; t{0} b; }} t{i};", i - 1));
    }
    match parse(&doubling) {
        Err(Error::Metadata { message, .. }) => assert!(message.contains("too large"), "{message}"),
        r => panic!("unexpected {r:?}"),
    }
}
