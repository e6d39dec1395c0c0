//! `tracelens executions` and `tracelens compare` without a recording (no root needed):
//!
//! * on a synthetic kernel trace, executions from `syscall_entry_read` to
//!   `syscall_exit_read` are those a direct pairing of babeltrace2's output gives (the
//!   thread of each event is the one last switched in on its CPU, as the trace has no thread
//!   context), with the same durations; the database is the same for any `-j` and chunk
//!   size; without stack samples the ECCTs are pseudo-frames only, with a warning;
//! * mistakes are one-line errors: a bad expression shows where, an empty group says so, a
//!   file that is not a database, one of another schema version, a function without uprobe
//!   events in the trace.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod common;
use common::{exe, Synth};

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("tracelens-compare-cli-{name}-{}", std::process::id()))
}

fn tl(args: &[&str], paths: &[&Path]) -> std::process::Output {
    Command::new(exe()).args(args).args(paths).output().unwrap()
}

/// Durations of `syscall_entry_read` → `syscall_exit_read` pairs from babeltrace2's text,
/// threads from the CPUs' last `sched_switch`, innermost pairing per thread.
fn read_calls_by_babeltrace2(trace: &Path) -> Option<Vec<i64>> {
    let out = Command::new("babeltrace2").arg("--clock-seconds").arg(trace).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut current: HashMap<i64, i64> = HashMap::new();
    let mut open: HashMap<i64, Vec<i64>> = HashMap::new();
    let mut durations = Vec::new();
    for l in text.lines() {
        let ts = &l[1..l.find(']').unwrap()];
        let (s, ns) = ts.split_once('.').unwrap();
        let t = s.parse::<i64>().unwrap() * 1_000_000_000 + ns.parse::<i64>().unwrap();
        let field = |name: &str| l.split(&format!("{name} = ")).nth(1).map(|v| v.split([',', ' ', '}']).next().unwrap().parse::<i64>().unwrap());
        let cpu = field("cpu_id").unwrap();
        if l.contains(" sched_switch: ") {
            current.insert(cpu, field("next_tid").unwrap());
        } else if l.contains(" syscall_entry_read: ") {
            if let Some(&tid) = current.get(&cpu).filter(|&&t| t != 0) {
                open.entry(tid).or_default().push(t);
            }
        } else if l.contains(" syscall_exit_read: ") {
            if let Some(&tid) = current.get(&cpu) {
                if let Some(b) = open.get_mut(&tid).and_then(|s| s.pop()) {
                    durations.push(t - b);
                }
            }
        }
    }
    durations.sort_unstable();
    Some(durations)
}

#[test]
fn read_calls_of_a_synthetic_trace_match_babeltrace2_and_any_cut() {
    let synth = Synth::new("exec-synth", &["--events", "120000", "--seed", "3"]);
    let db1 = tmp("j1.db");
    let out = tl(&["executions", "--begin-event", "syscall_entry_read", "--end-event", "syscall_exit_read", "--json", "-j", "1", "--chunk-size", "1", "-o"], &[&db1, &synth.0]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no stack samples in the trace: the ECCTs hold pseudo-frames only"), "{err}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let n = report["report"]["executions"].as_u64().unwrap();
    assert!(n > 1000, "{report}");
    let db2 = tmp("j2.db");
    let out = tl(&["executions", "--begin-event", "syscall_entry_read", "--end-event", "syscall_exit_read", "-j", "2", "-o"], &[&db2, &synth.0]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (a, b) = (tracelens_compare::db::open(&db1).unwrap(), tracelens_compare::db::open(&db2).unwrap());
    assert_eq!(a, b, "the same database for -j 1 with one packet per chunk and -j 2");
    let dur = a.column("duration_ns").unwrap();
    let mut ours: Vec<i64> = (0..a.len()).map(|i| a.columns[dur].int(i).unwrap()).collect();
    ours.sort_unstable();
    match read_calls_by_babeltrace2(&synth.0) {
        Some(theirs) => assert_eq!(ours, theirs, "the executions are babeltrace2's read calls"),
        None => eprintln!("babeltrace2 not available: pairing not checked against it"),
    }
    // Pseudo-frames only, and each ECCT sums to its duration.
    assert!(a.tree.frames.iter().all(|f| f.starts_with('[') && f.ends_with(']')), "{:?}", a.tree.frames);
    for i in 0..a.len() {
        let (nodes, ns) = a.ecct.of(i);
        let top: i64 = nodes.iter().zip(ns).filter(|(&k, _)| a.tree.parent[k as usize] == 0).map(|(_, &t)| t).sum();
        assert_eq!(Some(top), a.columns[dur].int(i));
    }
    // The dimensions of both events.
    assert!(a.column("begin.fd").is_some() && a.column("end.ret").is_some());
    let out = tl(&["compare", "--a", "end.ret>=4096", "--b", "duration>=p90", "--json"], &[&db1]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let c: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(c["a"]["count"].as_u64().unwrap() > 0 && c["b"]["count"].as_u64().unwrap() > 0);
    for f in [&db1, &db2] {
        let _ = std::fs::remove_file(f);
    }
}

/// A small synthetic database file.
fn small_db(name: &str) -> PathBuf {
    let p = tmp(name);
    let db = tracelens_compare::synthetic::generate(&tracelens_compare::synthetic::Shape { executions: 500, ..Default::default() });
    tracelens_compare::db::write(&p, &db).unwrap();
    p
}

fn one_line_error(out: &std::process::Output) -> String {
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

#[test]
fn mistakes_are_one_line_errors() {
    let db = small_db("errors.db");
    let e = one_line_error(&tl(&["compare", "--a", "duration<2ms && timer>1mx"], &[&db]));
    assert!(e.contains("bad expression `duration<2ms && timer>1mx`: at column 23: unknown time unit `mx`"), "{e}");
    let e = one_line_error(&tl(&["compare", "--b", "durration>p90"], &[&db]));
    assert!(e.contains("no metric `durration` (did you mean duration_ns?)"), "{e}");
    let e = one_line_error(&tl(&["compare", "--a", "duration>100s"], &[&db]));
    assert!(e.contains("group A (`duration>100s`) selects none of the 500 executions"), "{e}");
    let e = one_line_error(&tl(&["compare"], &[Path::new("/nonexistent/runs.db")]));
    assert!(e.contains("/nonexistent/runs.db") && e.contains("No such file"), "{e}");
    let not_db = tmp("notdb");
    std::fs::write(&not_db, vec![b'x'; 4096]).unwrap();
    let e = one_line_error(&tl(&["compare"], &[&not_db]));
    assert!(e.contains("not a tracelens executions database"), "{e}");
    // A database of another schema version.
    let v2 = small_db("v2.db");
    let c = rusqlite_update(&v2);
    assert!(c, "sqlite3 updated the schema version");
    let e = one_line_error(&tl(&["compare"], &[&v2]));
    assert!(e.contains("schema version 99") && e.contains("build it again with `tracelens executions`"), "{e}");
    // A function the trace has no uprobe events of.
    let synth = Synth::new("exec-nofn", &["--events", "2000"]);
    let out_db = tmp("nofn.db");
    let e = one_line_error(&tl(&["executions", "--function", "handle_request", "-o"], &[&out_db, &synth.0]));
    assert!(e.contains("no uprobe entry event for function `handle_request`") && e.contains("--uprobe BINARY:handle_request"), "{e}");
    assert!(!out_db.exists());
    let e = one_line_error(&tl(&["executions", "--begin-event", "nope_*", "--end-event", "syscall_exit_read", "-o"], &[&out_db, &synth.0]));
    assert!(e.contains("--begin-event `nope_*`: no event class"), "{e}");
    for f in [db, not_db, v2] {
        let _ = std::fs::remove_file(f);
    }
}

/// Sets the schema version of `db` to 99.
fn rusqlite_update(db: &Path) -> bool {
    let c = rusqlite::Connection::open(db).unwrap();
    c.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'", []).unwrap() == 1
}
