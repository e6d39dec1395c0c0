//! Checks of exported files against their formats' rules, shared by the export tests and
//! `tracelens`'s recording tests (which include this file).
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// What a Chrome trace-event file holds, once checked.
#[derive(Debug, Default)]
pub struct Chrome {
    /// Complete events per (pid, tid) and name.
    pub complete: BTreeMap<(i64, i64), BTreeMap<String, usize>>,
    /// Instant events by category.
    pub instants: BTreeMap<String, usize>,
    /// Thread names by (pid, tid).
    pub thread_names: BTreeMap<(i64, i64), String>,
    /// Instant events whose `sf` names a stack frame.
    pub with_stacks: usize,
}

/// A complete event on a track: begin and end (ns), name.
type Span = (i64, i64, String);

fn int(v: &Value, what: &str) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("{what}: not an integer: {v}"))
}

/// Microseconds (a JSON number) as integer nanoseconds.
fn ns(v: &Value, what: &str) -> i64 {
    let x = v.as_f64().unwrap_or_else(|| panic!("{what}: not a number: {v}"));
    assert!(x.is_finite() && x >= 0.0, "{what}: {x} is not a time");
    (x * 1000.0).round() as i64
}

/// Checks a Chrome trace-event JSON object against the format's rules — every event has a
/// known phase (`X`, `i`, `M`), a name, integer `pid` and `tid`; complete events a `ts` and a
/// `dur` of microseconds, not negative; instant events a scope; metadata events name a
/// process or thread; `sf` names a frame of `stackFrames`, whose `parent`s exist — and that
/// the complete events of each thread are strictly nested (each one ends before the next one
/// on the track starts, or inside the one enclosing it). Panics on the first broken rule.
pub fn check_chrome(bytes: &[u8]) -> Chrome {
    let v: Value = serde_json::from_slice(bytes).expect("the file is JSON");
    let obj = v.as_object().expect("a JSON object");
    if let Some(u) = obj.get("displayTimeUnit") {
        assert!(matches!(u.as_str(), Some("ns" | "ms")), "displayTimeUnit {u}");
    }
    let frames = obj.get("stackFrames").map(|f| f.as_object().expect("stackFrames is an object").clone()).unwrap_or_default();
    for (id, f) in &frames {
        assert!(f["name"].is_string(), "frame {id} has no name");
        if let Some(p) = f.get("parent") {
            assert!(frames.contains_key(p.as_str().expect("parent is a string id")), "frame {id}: parent {p} is not a frame");
        }
    }
    let events = obj["traceEvents"].as_array().expect("traceEvents is an array");
    let mut out = Chrome::default();
    let mut spans: HashMap<(i64, i64), Vec<Span>> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        let what = format!("event {i}");
        let name = e["name"].as_str().unwrap_or_else(|| panic!("{what}: no name"));
        assert!(!name.is_empty(), "{what}: empty name");
        let (pid, tid) = (int(&e["pid"], &what), int(&e["tid"], &what));
        match e["ph"].as_str() {
            Some("X") => {
                let (ts, dur) = (ns(&e["ts"], &what), ns(&e["dur"], &what));
                spans.entry((pid, tid)).or_default().push((ts, ts + dur, name.to_string()));
                *out.complete.entry((pid, tid)).or_default().entry(name.to_string()).or_default() += 1;
            }
            Some("i") => {
                ns(&e["ts"], &what);
                assert!(matches!(e["s"].as_str(), Some("t" | "p" | "g")), "{what}: instant scope {}", e["s"]);
                if let Some(sf) = e.get("sf") {
                    assert!(frames.contains_key(sf.as_str().expect("sf is a string id")), "{what}: sf {sf} is not a frame");
                    out.with_stacks += 1;
                }
                *out.instants.entry(e["cat"].as_str().unwrap_or("").to_string()).or_default() += 1;
            }
            Some("M") => {
                assert!(matches!(name, "process_name" | "thread_name"), "{what}: metadata {name}");
                let n = e["args"]["name"].as_str().unwrap_or_else(|| panic!("{what}: no args.name"));
                if name == "thread_name" {
                    out.thread_names.insert((pid, tid), n.to_string());
                }
            }
            other => panic!("{what}: phase {other:?}"),
        }
    }
    for ((pid, tid), mut v) in spans {
        v.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut open: Vec<Span> = Vec::new();
        for s in v {
            while open.last().is_some_and(|o| o.1 <= s.0) {
                open.pop();
            }
            if let Some(o) = open.last() {
                assert!(s.1 <= o.1, "track {pid}/{tid}: `{}` [{}, {}] overlaps `{}` [{}, {}] without nesting", s.2, s.0, s.1, o.2, o.0, o.1);
            }
            open.push(s);
        }
    }
    out
}

/// `pj_dump FILE`'s lines, or `None` when pajeng is not installed. Panics when it fails or
/// complains.
pub fn pj_dump(file: &Path) -> Option<Vec<String>> {
    let o = Command::new("pj_dump").arg(file).output().ok()?;
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.trim().is_empty(), "pj_dump {}: {}", file.display(), err);
    Some(String::from_utf8_lossy(&o.stdout).lines().map(str::to_string).collect())
}

/// The fixture traces, or `None` with a note when they are missing.
pub fn fixture(rel: &str) -> Option<PathBuf> {
    let root = std::env::var_os("TRACELENS_TRACES").map(PathBuf::from).unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces"));
    let p = root.join(rel);
    if !p.exists() {
        eprintln!("skipped: {} not found", p.display());
        return None;
    }
    Some(p)
}
