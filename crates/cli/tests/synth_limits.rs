//! `tracelens synth` on requests a careless user makes (issue 16, items 3 and 4): huge values
//! are one-line errors with exit 1 (not an abort, not a full disk), and a trace is never
//! written into a directory that holds one (or anything) unless `--force`, which replaces the
//! trace and only a trace.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::exe;

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracelens-cli-synth-limits-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn synth(dir: &Path, args: &[&str]) -> Output {
    Command::new(exe()).args(["synth", "-o"]).arg(dir).args(args).output().unwrap()
}

fn one_line_error(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.starts_with("tracelens: error: ") && err.lines().count() == 1, "{err}");
    err
}

fn streams(dir: &Path) -> u64 {
    let o = Command::new(exe()).args(["stats", "--json"]).arg(dir).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["streams"].as_u64().or_else(|| v["streams"].as_array().map(|a| a.len() as u64)).unwrap()
}

#[test]
fn huge_values_are_refused_before_anything_is_written() {
    let dir = scratch("huge");
    for (args, want) in [
        (&["--threads", "1000000000"][..], "--threads must be between 1 and 100000"),
        (&["--packet-size", "1099511627776"], "--packet-size must be a multiple of 8 between 4096 and 67108864"),
        (&["--events", "18446744073709551615"], "GB would be written, and only"),
        (&["--cpus", "1024", "--packet-size", "16777216"], "for packets being built"),
    ] {
        let err = one_line_error(&synth(&dir, args));
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!dir.exists(), "{args:?}: the output directory was made");
    }
}

#[test]
fn a_trace_is_not_written_over_another_without_force() {
    let dir = scratch("mix");
    assert!(synth(&dir, &["--cpus", "4", "--seed", "7", "--events", "5000"]).status.success());
    let err = one_line_error(&synth(&dir, &["--cpus", "2", "--seed", "8", "--events", "5000"]));
    assert!(err.contains("not empty (it holds a CTF trace)") && err.contains("--force"), "{err}");
    assert_eq!(streams(&dir), 4, "the first trace changed");
    let o = synth(&dir, &["--cpus", "2", "--seed", "8", "--events", "5000", "--force"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(streams(&dir), 2, "streams of the replaced trace are left");
    let _ = std::fs::remove_dir_all(&dir);

    // An LTTng trace folder keeps its metadata.
    let Some(fixture) = Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces/babeltrace-conformance/succeed/trace-with-index")).filter(|p| p.is_dir()) else {
        return;
    };
    let dir = scratch("lttng");
    std::fs::create_dir_all(&dir).unwrap();
    for e in std::fs::read_dir(&fixture).unwrap().flatten().filter(|e| e.path().is_file()) {
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    let before = std::fs::read(dir.join("metadata")).unwrap();
    one_line_error(&synth(&dir, &["--events", "1000"]));
    assert_eq!(std::fs::read(dir.join("metadata")).unwrap(), before);
    // A folder that is not a trace is not emptied, even with --force.
    std::fs::remove_file(dir.join("metadata")).unwrap();
    let err = one_line_error(&synth(&dir, &["--events", "1000", "--force"]));
    assert!(err.contains("nothing was removed"), "{err}");
    assert!(std::fs::read_dir(&dir).unwrap().count() > 0);
    let _ = std::fs::remove_dir_all(&dir);
}
