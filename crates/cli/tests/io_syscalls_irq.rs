//! `tracelens io`, `syscalls` and `irq` as a user runs them: the same text whatever `-j` and
//! `--chunk-size` are, one JSON object with `--json`, filters.

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::{exe, fixture, Synth};

fn run(cmd: &str, trace: &Path, args: &[&str]) -> Output {
    Command::new(exe()).arg(cmd).arg(trace).args(args).output().expect("run tracelens")
}

fn stdout(out: &Output) -> String {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// The synthetic trace of these tests.
fn synth(tag: &str) -> Synth {
    Synth::new(&format!("kernel-{tag}"), &["--events", "40000", "--cpus", "4", "--threads", "12", "--seed", "3", "--packet-size", "4096"])
}

#[test]
fn same_output_for_any_jobs_and_chunk_size() {
    let t = synth("cut");
    for cmd in ["io", "syscalls", "irq"] {
        let serial = stdout(&run(cmd, &t.0, &["-j", "1", "--chunk-size", "1G"]));
        assert!(serial.starts_with("Timerange: ["), "{cmd}: {serial}");
        for args in [&["-j", "2", "--chunk-size", "1"][..], &["-j", "8", "--chunk-size", "8K"][..], &["--json"][..]] {
            let out = stdout(&run(cmd, &t.0, args));
            if args[0] == "--json" {
                assert_eq!(out.lines().count(), 1, "{cmd}: one JSON line");
                let v: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
                assert!(v["begin_ns"].as_i64().is_some() && v["end_ns"].as_i64().is_some(), "{cmd}: {v}");
            } else {
                assert_eq!(out, serial, "{cmd} {args:?}");
            }
        }
    }
}

#[test]
fn json_shapes() {
    let t = synth("json");
    let v: serde_json::Value = serde_json::from_str(&stdout(&run("syscalls", &t.0, &["--json"]))).unwrap();
    let total = v["total"].as_u64().unwrap();
    assert!(total > 1000);
    let per_thread: u64 = v["threads"].as_array().unwrap().iter().map(|t| t["total"].as_u64().unwrap()).sum();
    assert_eq!(per_thread, total);
    let calls: u64 = v["calls"].as_array().unwrap().iter().map(|c| c["count"].as_u64().unwrap()).sum();
    assert_eq!(calls, total);

    let v: serde_json::Value = serde_json::from_str(&stdout(&run("io", &t.0, &["--json", "--top", "3"]))).unwrap();
    for cat in ["open", "read", "write", "sync"] {
        assert!(v["latency"][cat]["count"].as_u64().is_some(), "{v}");
        assert!(v["top"][cat].as_array().unwrap().len() <= 3);
    }
    assert!(v["top"]["read"].as_array().unwrap().len() == 3);
    let read: u64 = v["processes"].as_array().unwrap().iter().map(|p| p["read"].as_u64().unwrap()).sum();
    assert!(read > 0);

    let v: serde_json::Value = serde_json::from_str(&stdout(&run("irq", &t.0, &["--json"]))).unwrap();
    assert_eq!(v["hard"][0]["name"], "eth0");
    assert_eq!(v["soft"][0]["name"], "NET_RX_SOFTIRQ");
}

/// `syscalls --json`: every `returns` object has `success`, also where no call succeeded
/// (there it is 0), and its keys add up to the count (README, issue 15).
#[test]
fn syscalls_returns_always_say_success() {
    let Some(trace) = fixture("tracecompass/bug446190") else { return };
    let v: serde_json::Value = serde_json::from_str(&stdout(&run("syscalls", &trace, &["--json"]))).unwrap();
    let mut rows = v["calls"].as_array().unwrap().clone();
    for t in v["threads"].as_array().unwrap() {
        rows.extend(t["calls"].as_array().unwrap().iter().cloned());
    }
    let mut never = 0;
    for row in &rows {
        let returns = row["returns"].as_object().unwrap();
        let success = returns.get("success").and_then(|s| s.as_u64()).unwrap_or_else(|| panic!("no success in {row}"));
        assert_eq!(returns.values().map(|n| n.as_u64().unwrap()).sum::<u64>(), row["count"].as_u64().unwrap(), "{row}");
        assert_eq!(success + row["errors"].as_u64().unwrap(), row["count"].as_u64().unwrap(), "{row}");
        never += usize::from(success == 0);
    }
    assert!(never > 0, "some calls never succeed on bug446190");
}

#[test]
fn filters_narrow_the_counts() {
    let t = synth("filters");
    let count = |args: &[&str]| -> u64 {
        let mut a = vec!["--json"];
        a.extend_from_slice(args);
        let v: serde_json::Value = serde_json::from_str(&stdout(&run("syscalls", &t.0, &a))).unwrap();
        v["total"].as_u64().unwrap()
    };
    let all = count(&[]);
    let cpus: u64 = (0..4).map(|c| count(&["--cpu", &c.to_string()])).sum();
    assert_eq!(cpus, all);
    assert!(count(&["--procname", "app0"]) < all);
    assert_eq!(count(&["--procname", "nobody"]), 0);
}
