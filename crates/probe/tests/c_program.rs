//! A C program using the probes through `probe.h` and `libtracelens_probe.so`: exact
//! counts, values in each thread's order, one stream per thread, babeltrace2 agreeing; and
//! nothing written when `TRACELENS_PROBE_DIR` is unset.

mod common;

use std::process::Command;

use common::*;

#[test]
fn known_counts_read_back_by_tracelens_and_babeltrace2() {
    let tmp = TempDir::new("c");
    let Some(exe) = build_c("probed", &tmp.0) else { return };
    let out_dir = tmp.0.join("out");
    let run = Command::new(&exe).env("TRACELENS_PROBE_DIR", &out_dir).env("LD_LIBRARY_PATH", library_dir()).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("enabled=1 work=20000 worker_done=4 before_getpid=100 after_getpid=100"), "{stdout}");

    let r = read(&out_dir);
    assert_eq!(r.traces, 1);
    assert_eq!(r.discarded, 0);
    let c = counts(&r.events);
    let expect = [("after_getpid", 100), ("before_getpid", 100), ("main_done", 1), ("text", 1), ("work", 20000), ("worker_done", 4)];
    assert_eq!(c.into_iter().collect::<Vec<_>>(), expect.iter().map(|(n, k)| (n.to_string(), *k)).collect::<Vec<_>>());

    // Each worker's `work` values are 0..5000 in its own order, then its `worker_done`.
    let pid = r.events.iter().find(|e| e.name == "main_done").unwrap().vtid;
    let mut workers: Vec<i64> = r.events.iter().filter(|e| e.name == "work").map(|e| e.vtid).collect();
    workers.sort();
    workers.dedup();
    assert_eq!(workers.len(), 4);
    for w in workers {
        let mine: Vec<&Ev> = r.events.iter().filter(|e| e.vtid == w).collect();
        let values: Vec<String> = mine.iter().filter(|e| e.name == "work").map(|e| e.value.clone().unwrap()).collect();
        assert_eq!(values, (0..5000).map(|v| v.to_string()).collect::<Vec<_>>());
        assert_eq!(mine.last().unwrap().name, "worker_done");
        assert!(mine.last().unwrap().value.as_deref().unwrap().starts_with("worker "));
        assert!(mine.windows(2).all(|p| p[0].ns <= p[1].ns));
    }
    // The main thread: before/after pairs alternate in order, then the text (cut at 3 bytes).
    let main: Vec<&Ev> = r.events.iter().filter(|e| e.vtid == pid).collect();
    for (k, pair) in main[..200].chunks(2).enumerate() {
        assert_eq!((pair[0].name.as_str(), pair[0].value.as_deref()), ("before_getpid", Some(k.to_string().as_str())));
        assert_eq!((pair[1].name.as_str(), pair[1].value.as_deref()), ("after_getpid", Some(k.to_string().as_str())));
    }
    assert_eq!(main[200].value.as_deref(), Some("abc"));

    // One stream per thread.
    let trace_dir = std::fs::read_dir(&out_dir).unwrap().next().unwrap().unwrap().path();
    let streams = std::fs::read_dir(&trace_dir).unwrap().filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with("tid-")).count();
    assert_eq!(streams, 5);

    if let Some(lines) = babeltrace2(&out_dir) {
        assert_eq!(lines.len(), r.events.len());
        let work = lines.iter().filter(|l| l.contains(" work: ")).count();
        assert_eq!(work, 20000);
        assert!(lines.iter().any(|l| l.contains("text: { vpid = ") && l.contains("{ value = \"abc\" }")), "{:?}", lines.last());
    }
}

#[test]
fn without_the_directory_variable_nothing_is_written() {
    let tmp = TempDir::new("c-off");
    let Some(exe) = build_c("probed", &tmp.0) else { return };
    let run = Command::new(&exe).env_remove("TRACELENS_PROBE_DIR").env("LD_LIBRARY_PATH", library_dir()).current_dir(&tmp.0).output().unwrap();
    assert!(run.status.success());
    assert!(String::from_utf8_lossy(&run.stdout).contains("enabled=0"));
    let entries: Vec<_> = std::fs::read_dir(&tmp.0).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(entries, vec![std::ffi::OsString::from("probed")]);
}

#[test]
fn a_bad_setting_turns_probes_off_with_a_message() {
    let tmp = TempDir::new("c-bad");
    let Some(exe) = build_c("probed", &tmp.0) else { return };
    let run = Command::new(&exe)
        .env("TRACELENS_PROBE_DIR", tmp.0.join("out"))
        .env("TRACELENS_PROBE_BUFFER", "lots")
        .env("LD_LIBRARY_PATH", library_dir())
        .output()
        .unwrap();
    assert!(run.status.success());
    assert!(String::from_utf8_lossy(&run.stdout).contains("enabled=0"));
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("TRACELENS_PROBE_BUFFER=\"lots\": not a size"), "{err}");
}

#[test]
fn a_forked_child_writes_a_trace_of_its_own() {
    let tmp = TempDir::new("c-fork");
    let Some(exe) = build_c("forked", &tmp.0) else { return };
    let out_dir = tmp.0.join("out");
    let run = Command::new(&exe).env("TRACELENS_PROBE_DIR", &out_dir).env("LD_LIBRARY_PATH", library_dir()).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let mut traces: Vec<_> = std::fs::read_dir(&out_dir).unwrap().map(|e| e.unwrap().path()).collect();
    traces.sort();
    assert_eq!(traces.len(), 2, "{traces:?}");
    let mut per_trace: Vec<Vec<(String, usize)>> = traces.iter().map(|t| counts(&read(t).events).into_iter().collect()).collect();
    per_trace.sort();
    assert_eq!(per_trace, vec![vec![("child_event".to_string(), 20)], vec![("parent_after".to_string(), 30), ("parent_before".to_string(), 10)]]);
}
