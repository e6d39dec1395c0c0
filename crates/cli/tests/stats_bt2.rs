//! Oracle test: `tracelens stats --json` counts the same events per event name, the same lost
//! packets and the same discarded events as babeltrace2 prints, on fixtures babeltrace2 reads
//! and on a synthetic trace with many small packets (run on 2 threads, one packet per chunk).
//!
//! babeltrace2's event name is read from each printed line (the token before the first `: {`
//! after the time, delta and trace fields); its discarded-items counts from its
//! `WARNING: Tracer discarded N events|packets` lines. Skips itself, with a message, when
//! babeltrace2 or the fixtures are missing (but not under CI).

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use common::traces_root;

const FIXTURES: [&str; 11] = [
    "tracecompass/many-threads",
    "tracecompass/bug446190",
    "tracecompass/uneven-streams",
    "babeltrace-conformance/succeed/lttng-tracefile-rotation/kernel",
    "babeltrace-conformance/succeed/multi-domains",
    "babeltrace-conformance/extra/packet-seq-num/2-lost-before-last",
    "babeltrace-conformance/extra/packet-seq-num/2-streams-lost-in-1",
    "babeltrace-conformance/extra/packet-seq-num/2-streams-lost-in-2",
    "babeltrace-conformance/extra/packet-seq-num/7-lost-between-2-with-index",
    "babeltrace-conformance/extra/packet-seq-num/no-lost-not-starting-at-0",
    "generated/lttng-ust-2.13-libc-wrapper",
];

/// What babeltrace2 says about a trace.
#[derive(Debug, Default)]
struct Bt2 {
    by_name: BTreeMap<String, u64>,
    discarded_events: u64,
    lost_packets: u64,
    /// Whether a "may have discarded" warning (no count) was printed.
    uncounted: bool,
}

/// The event name of a `babeltrace2` text line: `[TIME] (+DELTA) [HOST ...] NAME: { ...`.
fn event_name(line: &str) -> Option<&str> {
    let rest = line.strip_prefix('[')?;
    let rest = &rest[rest.find("] ")? + 2..];
    let rest = match rest.strip_prefix("(+") {
        Some(r) => &r[r.find(") ")? + 2..],
        None => rest,
    };
    let head = match rest.find(": {") {
        Some(i) => &rest[..i],
        None => rest.trim_end().strip_suffix(':')?,
    };
    head.rsplit(' ').next()
}

fn bt2(trace: &Path) -> Option<Bt2> {
    let out = match Command::new("timeout").args(["-s", "KILL", "120", "babeltrace2"]).arg(trace).env("TZ", "UTC").stdin(Stdio::null()).output() {
        Ok(o) if o.status.code() != Some(127) => o,
        _ => return None,
    };
    assert!(out.status.success(), "babeltrace2 {}: {}", trace.display(), String::from_utf8_lossy(&out.stderr));
    let mut r = Bt2::default();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let name = event_name(line).unwrap_or_else(|| panic!("cannot read babeltrace2's line: {line}"));
        *r.by_name.entry(name.to_string()).or_default() += 1;
    }
    for line in String::from_utf8_lossy(&out.stderr).lines() {
        if let Some(rest) = line.strip_prefix("WARNING: Tracer discarded ") {
            let mut w = rest.split(' ');
            let n: u64 = w.next().and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{line}"));
            match w.next() {
                Some("event" | "events") => r.discarded_events += n,
                Some("packet" | "packets") => r.lost_packets += n,
                _ => panic!("unexpected warning: {line}"),
            }
        } else if line.contains("may have discarded") {
            r.uncounted = true;
        }
    }
    Some(r)
}

fn ours(trace: &Path) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_tracelens")).arg("stats").arg(trace).args(["--json", "-j", "2", "--chunk-size", "1"]).output().unwrap();
    assert!(out.status.success(), "tracelens stats {}: {}", trace.display(), String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn compare(trace: &Path) -> bool {
    let Some(theirs) = bt2(trace) else {
        assert!(std::env::var_os("CI").is_none(), "CI must have babeltrace2");
        eprintln!("skipped the babeltrace2 comparison: babeltrace2 not installed");
        return false;
    };
    let v = ours(trace);
    let by_name: BTreeMap<String, u64> = v["by_name"].as_object().unwrap().iter().map(|(k, n)| (k.clone(), n.as_u64().unwrap())).collect();
    assert_eq!(by_name, theirs.by_name, "{}: events per name", trace.display());
    assert_eq!(v["events"].as_u64().unwrap(), theirs.by_name.values().sum::<u64>());
    assert_eq!(v["lost_packets"].as_u64().unwrap(), theirs.lost_packets, "{}: lost packets", trace.display());
    if !theirs.uncounted {
        assert_eq!(v["discarded_events"].as_u64().unwrap(), theirs.discarded_events, "{}: discarded events", trace.display());
    }
    eprintln!("{}: {} events in {} names, {} discarded, {} lost packets: as babeltrace2", trace.display(), v["events"], by_name.len(), v["discarded_events"], v["lost_packets"]);
    true
}

#[test]
fn event_names_are_read_from_babeltrace2_lines() {
    assert_eq!(event_name("[19:16:26.828130745] (+0.000055901) joraj-alpa sample_component:message: { cpu_id = 0 }, { message = \"Hello World\" }"), Some("sample_component:message"));
    assert_eq!(event_name("[10:15:09.000000010] (+?.?????????) dummy_event: { dummy_value = 0 }"), Some("dummy_event"));
    assert_eq!(event_name("[10:15:09.000000010] host proc:(12) my_event:"), Some("my_event"));
    assert_eq!(event_name("not an event"), None);
}

#[test]
fn stats_counts_events_like_babeltrace2_on_fixtures() {
    let root = traces_root();
    if !root.exists() {
        assert!(std::env::var_os("CI").is_none(), "CI must have the fixtures in {}", root.display());
        eprintln!("skipped: no fixtures in {}", root.display());
        return;
    }
    for rel in FIXTURES {
        let p = root.join(rel);
        assert!(p.exists(), "{} is missing", p.display());
        if !compare(&p) {
            return;
        }
    }
}

#[test]
fn stats_counts_events_like_babeltrace2_on_a_synth_trace() {
    let exe = env!("CARGO_BIN_EXE_tracelens");
    let dir = std::env::temp_dir().join(format!("tracelens-stats-bt2-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let st = Command::new(exe)
        .args(["synth", "-o"])
        .arg(&dir)
        .args(["--events", "40000", "--cpus", "4", "--threads", "12", "--seed", "17", "--packet-size", "4096"])
        .output()
        .unwrap();
    assert!(st.status.success());
    compare(&dir);
    let _ = std::fs::remove_dir_all(&dir);
}
