//! yactfr's CTF 2 data vectors (`yactfr-tests/tests-iter-data/ctf-2`, 25 cases, and 68
//! auto-translated from its CTF 1 ones): each holds metadata (a JSON array of fragments), a
//! data stream written in Normand notation, and the element sequence yactfr decodes from it
//! (with bit offsets). The data is assembled with Normand (`pip install normand`), decoded
//! with tracelens, and compared:
//!
//! * `pass-*` cases: the same number of event records, and in each the same leaf values of the
//!   event record common context, specific context and payload, in order (integers, booleans,
//!   bit maps, floating point numbers, strings and BLOBs as their bytes). yactfr's sequence is
//!   finer than our events (structure, array, variant and optional boundaries, raw data
//!   chunks, bit offsets): the leaf values are what both say.
//! * `fail-*` cases: decoding stops with an error (yactfr's last line is its error), after the
//!   events yactfr decoded before it.

use std::path::{Path, PathBuf};
use std::process::Command;

use tracelens_ctf::plan::NodeKind;
use tracelens_ctf::{Field, Fields, Item, Trace, Value};

mod common;
use common::fixtures;

/// A leaf value as both sides can say it.
#[derive(Clone, Debug, PartialEq)]
enum Leaf {
    Int(String),
    Float(f64),
    Bytes(Vec<u8>),
}

impl Leaf {
    fn same(&self, other: &Leaf) -> bool {
        match (self, other) {
            // yactfr prints 6 significant digits.
            (Leaf::Float(a), Leaf::Float(b)) => a == b || (a - b).abs() <= 1e-5 * a.abs().max(b.abs()).max(1e-30) || (a.is_nan() && b.is_nan()),
            _ => self == other,
        }
    }
}

/// yactfr's raw data text (`meow$00`: `$XX` escapes a byte) as bytes.
fn raw(text: &str) -> Vec<u8> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' && i + 2 < b.len() + 1 {
            if let Ok(x) = u8::from_str_radix(&text[i + 1..(i + 3).min(text.len())], 16) {
                out.push(x);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// One packet of the expected sequence: its first bit in the data, its data stream class id
/// (`DSI:T<id>`), and its event records' leaves.
#[derive(Debug, Default)]
struct Packet {
    bit: u64,
    class: Option<String>,
    events: Vec<Vec<Leaf>>,
}

/// The expected sequence: its packets; and the error it ends with, if any.
fn expected(seq: &str) -> (Vec<Packet>, Option<String>) {
    let mut packets: Vec<Packet> = Vec::new();
    // Scope of the current event record (SC:N), and the string/BLOB being read.
    let mut scope: Option<u32> = None;
    let mut depth_in_scope = 0i32;
    let mut text: Option<(String, Vec<u8>)> = None;
    let mut error = None;
    for line in seq.lines() {
        let offset: Option<u64> = line.split_whitespace().next().and_then(|o| o.parse().ok());
        let l = line.trim_start().trim_start_matches(|c: char| c.is_ascii_digit()).trim();
        if l.is_empty() {
            continue;
        }
        // A packet starts at the top level (no indentation after the offset).
        if l == "P {" && line.trim_start().trim_start_matches(|c: char| c.is_ascii_digit()).starts_with(" P {") {
            packets.push(Packet { bit: offset.unwrap_or(0), ..Packet::default() });
            continue;
        }
        if let Some(id) = l.strip_prefix("DSI:T") {
            if let Some(p) = packets.last_mut() {
                p.class = Some(id.split(':').next().unwrap_or("").to_string());
            }
            continue;
        }
        let events = match packets.last_mut() {
            Some(p) => &mut p.events,
            None => continue,
        };
        let is_elem = l.split([':', ' ']).next().is_some_and(|k| k.chars().all(|c| c.is_ascii_uppercase()) && !k.is_empty()) || l == "}";
        if !is_elem {
            error = Some(l.to_string());
            continue;
        }
        if l.starts_with("ER {") {
            events.push(Vec::new());
            continue;
        }
        if let Some(n) = l.strip_prefix("SC:").and_then(|r| r.strip_suffix(" {")) {
            scope = n.parse().ok();
            depth_in_scope = 0;
            continue;
        }
        let Some(sc) = scope else { continue };
        if l == "}" {
            if let Some((kind, bytes)) = text.take() {
                let mut bytes = bytes;
                if kind == "NTS" {
                    // Without its terminator (one code unit of zeros).
                    let unit = if bytes.len() >= 4 && bytes.ends_with(&[0, 0, 0, 0]) && bytes.len() % 4 == 0 && is_wide(&bytes, 4) {
                        4
                    } else if bytes.len() >= 2 && bytes.ends_with(&[0, 0]) && bytes.len() % 2 == 0 && is_wide(&bytes, 2) {
                        2
                    } else {
                        1
                    };
                    bytes.truncate(bytes.len().saturating_sub(unit));
                }
                if sc >= 3 {
                    if let Some(e) = events.last_mut() {
                        e.push(Leaf::Bytes(bytes));
                    }
                }
                continue;
            }
            depth_in_scope -= 1;
            if depth_in_scope < 0 {
                scope = None;
            }
            continue;
        }
        if l.ends_with(" {") {
            let kind = l.split(':').next().unwrap_or("").trim_end_matches(" {");
            if matches!(kind, "NTS" | "SLS" | "DLS" | "SLB" | "DLB") {
                text = Some((kind.to_string(), Vec::new()));
            } else {
                depth_in_scope += 1;
            }
            continue;
        }
        if let Some(r) = l.strip_prefix("RD:") {
            let (_, data) = r.split_once(':').unwrap_or(("", ""));
            if let Some((kind, bytes)) = &mut text {
                if kind.ends_with('B') {
                    // BLOB data is in hexadecimal.
                    bytes.extend((0..data.len() / 2).filter_map(|i| u8::from_str_radix(&data[2 * i..2 * i + 2], 16).ok()));
                } else {
                    bytes.extend(raw(data));
                }
            }
            continue;
        }
        if sc < 3 {
            continue;
        }
        let parts: Vec<&str> = l.split(':').collect();
        let kind = parts[0];
        let leaf = match kind {
            "FLUI" | "FLSI" | "VLUI" | "VLSI" | "FLBA" | "FLB" | "FLUE" | "FLSE" => parts.last().map(|v| Leaf::Int(v.to_string())),
            // `FLBM:[name:]value:flags`
            "FLBM" => parts.get(parts.len().saturating_sub(2)).map(|v| Leaf::Int(v.to_string())),
            "FLFPN" => parts.last().and_then(|v| v.parse().ok()).map(Leaf::Float),
            _ => None,
        };
        if let (Some(leaf), Some(e)) = (leaf, events.last_mut()) {
            e.push(leaf);
        }
    }
    (packets, error)
}

/// Whether `bytes` looks like `unit`-byte code units (every unit but the last has a zero
/// byte somewhere, as ASCII text in UTF-16 or UTF-32 does).
fn is_wide(bytes: &[u8], unit: usize) -> bool {
    bytes.chunks(unit).all(|c| c.contains(&0))
}

/// Our leaves of one scope, in order.
fn leaves(fields: Fields<'_, '_>, out: &mut Vec<Leaf>) {
    for f in fields.list {
        if let Some(l) = leaf(f) {
            out.push(l);
        }
    }
}

fn leaf(f: &Field<'_>) -> Option<Leaf> {
    Some(match (f.value, &f.node.kind) {
        (Value::Unsigned(u), NodeKind::Int(i)) if i.boolean => Leaf::Int(if u == 0 { "false" } else { "true" }.into()),
        (Value::Unsigned(u), _) => Leaf::Int(u.to_string()),
        (Value::Signed(s), _) => Leaf::Int(s.to_string()),
        (Value::Float(x), _) => Leaf::Float(x),
        (Value::Str(b), NodeKind::String) => Leaf::Bytes(tracelens_ctf::until_nul(b).to_vec()),
        (Value::Str(b), _) => Leaf::Bytes(b.to_vec()),
        (Value::BigInt(b), _) => Leaf::Bytes(b.to_vec()),
        (Value::Compound { .. }, _) => return None,
    })
}

/// Assembles Normand text into bytes.
fn normand(text: &str) -> Result<Vec<u8>, String> {
    let dir = std::env::temp_dir().join(format!("tracelens-normand-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let input = dir.join("in.normand");
    std::fs::write(&input, text).map_err(|e| e.to_string())?;
    let out = Command::new("normand").arg(&input).output().map_err(|e| format!("normand: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(out.stdout)
}

fn cases(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir).map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "streams")).collect()).unwrap_or_default();
    out.sort();
    out
}

/// Decodes the case's stream files: events' leaves (file by file), then the error that
/// stopped it, if any.
fn decode(metadata: &[u8], files: Vec<(PathBuf, Vec<u8>)>) -> (Vec<Vec<Leaf>>, Option<String>) {
    let trace = match Trace::from_memory(metadata, files) {
        Ok(t) => t,
        Err(e) => return (Vec::new(), Some(e.to_string())),
    };
    let mut events = Vec::new();
    for i in 0..trace.streams.len() {
        let mut c = trace.cursor(i);
        loop {
            match c.advance() {
                Ok(Some(Item::Event)) => {
                    let ev = c.event().expect("event");
                    let mut l = Vec::new();
                    for s in [ev.common_context, ev.context, ev.payload] {
                        leaves(s, &mut l);
                    }
                    events.push(l);
                }
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => return (events, Some(e.to_string())),
            }
        }
    }
    (events, None)
}

/// Cases where tracelens rejects what yactfr reads, as babeltrace2 does: (case, (what the
/// error says, why)).
const DEVIATIONS: [(&str, (&str, &str)); 1] =
    [("pass-dt-aliases.streams", ("bad packet magic", "its data holds c1 fc 1f c1, read as a little-endian magic number 0xC11FFCC1, which yactfr does not check"))];

#[test]
fn yactfr_iter_data_ctf2() {
    let Some(root) = fixtures() else { return };
    if Command::new("normand").arg("--version").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "CI must have normand (pip install normand)");
        eprintln!("skipped: normand not installed (pip install normand)");
        return;
    }
    let base = root.join("yactfr-tests/tests-iter-data/ctf-2");
    let files: Vec<PathBuf> = cases(&base).into_iter().chain(cases(&base.join("auto-translated"))).collect();
    let (mut pass, mut fail) = (0, 0);
    let mut wrong = Vec::new();
    for f in &files {
        let name = f.strip_prefix(&base).unwrap_or(f).display().to_string();
        let text = std::fs::read_to_string(f).unwrap();
        let body = text.strip_prefix("---\n").unwrap_or(&text);
        let parts: Vec<&str> = body.splitn(3, "\n---\n").collect();
        let [meta, data, seq] = parts[..] else { panic!("{name}: not three parts") };
        let fragments: Vec<serde_json::Value> = serde_json::from_str(meta).unwrap_or_else(|e| panic!("{name}: metadata: {e}"));
        let mut metadata = Vec::new();
        for fr in fragments {
            metadata.push(0x1E);
            metadata.extend(serde_json::to_vec(&fr).unwrap());
            metadata.push(b'\n');
        }
        let bytes = normand(data).unwrap_or_else(|e| panic!("{name}: normand: {e}"));
        let (packets, want_error) = expected(seq);
        // yactfr reads packets of several data stream classes in one data stream; a CTF data
        // stream has one class (babeltrace2 and tracelens reject the mix): the packets of each
        // class go to a stream file of their own, read in order.
        let mut classes: Vec<Option<String>> = Vec::new();
        for p in &packets {
            if !classes.contains(&p.class) {
                classes.push(p.class.clone());
            }
        }
        let mut files: Vec<(PathBuf, Vec<u8>)> = classes.iter().enumerate().map(|(k, _)| (PathBuf::from(format!("stream{k}")), Vec::new())).collect();
        let mut want = Vec::new();
        if classes.len() <= 1 {
            files = vec![(PathBuf::from("stream0"), bytes)];
            want.extend(packets.into_iter().flat_map(|p| p.events));
        } else {
            for (k, c) in classes.iter().enumerate() {
                for (i, p) in packets.iter().enumerate() {
                    if &p.class == c {
                        let from = (p.bit / 8) as usize;
                        let to = packets.get(i + 1).map_or(bytes.len(), |q| (q.bit / 8) as usize);
                        files[k].1.extend_from_slice(&bytes[from.min(bytes.len())..to.min(bytes.len())]);
                        want.extend(p.events.iter().cloned());
                    }
                }
            }
        }
        let (got, got_error) = decode(&metadata, files);
        let must_pass = name.rsplit('/').next().unwrap_or("").starts_with("pass-");
        if must_pass {
            pass += 1;
        } else {
            fail += 1;
        }
        if let Some((_, why)) = DEVIATIONS.iter().find(|(n, _)| *n == name) {
            match &got_error {
                Some(e) if e.contains(why.0) => {
                    println!("{name}: known deviation ({}): {e}", why.1);
                    continue;
                }
                other => {
                    wrong.push(format!("{name}: listed as a deviation ({}), but tracelens gives {other:?}", why.1));
                    continue;
                }
            }
        }
        if must_pass {
            if let Some(e) = got_error {
                wrong.push(format!("{name}: error: {e}"));
                continue;
            }
        } else {
            match (got_error, want_error) {
                (Some(_), _) => {}
                (None, w) => wrong.push(format!("{name}: decoded without error (yactfr: {w:?})")),
            }
        }
        // The events both decoded (for a failing case, yactfr may report its error before or
        // after decoding the event it is in).
        let n = if must_pass { want.len().max(got.len()) } else { want.len().min(got.len()).saturating_sub(1) };
        if must_pass && want.len() != got.len() {
            wrong.push(format!("{name}: {} event records, yactfr {}", got.len(), want.len()));
            continue;
        }
        for k in 0..n {
            let (a, b) = (&got[k], &want[k]);
            if a.len() != b.len() || a.iter().zip(b).any(|(x, y)| !x.same(y)) {
                wrong.push(format!("{name}: event {k}: ours {a:?}, yactfr {b:?}"));
                break;
            }
        }
    }
    println!("yactfr tests-iter-data/ctf-2: {pass} pass and {fail} fail cases, {} wrong", wrong.len());
    assert!(wrong.is_empty(), "{} wrong:\n{}", wrong.len(), wrong.join("\n"));
    assert_eq!(pass + fail, 93, "case count");
}
