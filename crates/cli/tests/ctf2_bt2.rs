//! CTF 2 exactness without a CTF 2 reference decoder: each `tracecompass/CTF2-7.0-NAME` trace
//! is the CTF 2 version of `babeltrace-conformance/succeed/NAME`, so `TZ=UTC tracelens print`
//! on it must print the same event lines (as multisets) as `TZ=UTC babeltrace2` 2.0.4 prints
//! on the CTF 1.8 one, the same discarded-event warnings (stream paths aside), and `stats`
//! must count the same events per name. The one legitimate difference is listed in
//! [`DIFFERENCES`], line by line, with the reason.
//!
//! `CTF2-vl-ints` has no CTF 1.8 twin (CTF 1.8 has no variable-length integers): it must
//! decode to the values of the yactfr case it comes from (`tests-iter-data/ctf-2/pass-vl-ints`).

mod common;

use std::process::Command;

use common::{exe, multiset_diff, traces_root};

const NAMES: [&str; 9] = [
    "barectf-event-before-packet",
    "debug-info",
    "ev-disc-no-ts-begin-end",
    "lttng-crash",
    "lttng-event-after-packet",
    "meta-variant-no-underscore",
    "smalltrace",
    "succeed1",
    "trace-with-index",
];

/// (trace, babeltrace2's line on the CTF 1.8 trace, ours on the CTF 2 one, why they differ).
const DIFFERENCES: [(&str, &str, &str, &str); 1] = [(
    "debug-info",
    "[14:09:41.350905867] (+0.000016635) raton lttng_ust_statedump:bin_info: { cpu_id = 0 }, { vpid = 9746, ip = 0x7F09B7D2922B }, { baddr = 0x7F09B7F98000, memsz = 2114208, path = \"/libhello-so\", is_pic = 1, has_build_id = 1, has_debug_link = 0 }",
    "[14:09:41.350905867] (+0.000016635) raton lttng_ust_statedump:bin_info: { cpu_id = 0 }, { vpid = 9746, ip = 0x7F09B7D2922B }, { baddr = 0x7F09B7F98000, memsz = 2114208, path = \"/libhello_so\", is_pic = 1, has_build_id = 1, has_debug_link = 0 }",
    "the CTF 2 stream file itself holds `/libhello_so` where the CTF 1.8 one holds `/libhello-so` (the bytes differ: the converted trace's data was regenerated)",
)];

fn have_bt2() -> bool {
    Command::new("babeltrace2").arg("--version").output().is_ok_and(|o| o.status.success())
}

fn run(cmd: &str, args: &[&std::path::Path]) -> (Vec<u8>, Vec<u8>) {
    let out = Command::new(cmd).args(args).env("TZ", "UTC").env_remove("BABELTRACE_TERM_COLOR").output().expect("run");
    (out.stdout, out.stderr)
}

/// `WARNING:` lines with the stream's path (which names a different directory) cut out.
fn warnings(stderr: &[u8], dir: &std::path::Path) -> Vec<String> {
    let dir = dir.canonicalize().unwrap_or(dir.to_path_buf()).to_string_lossy().into_owned();
    String::from_utf8_lossy(stderr).lines().filter(|l| l.starts_with("WARNING: ")).map(|l| l.replace(&dir, "TRACE")).collect()
}

#[test]
fn ctf2_traces_print_as_babeltrace2_prints_their_ctf1_twins() {
    let root = traces_root();
    if !root.join("tracecompass/CTF2-7.0-smalltrace").is_dir() || !have_bt2() {
        assert!(std::env::var_os("CI").is_none(), "CI must have the fixtures and babeltrace2");
        eprintln!("skipped: fixtures or babeltrace2 missing");
        return;
    }
    let mut failures = Vec::new();
    for name in NAMES {
        let ctf1 = root.join("babeltrace-conformance/succeed").join(name);
        let ctf2 = root.join("tracecompass").join(format!("CTF2-7.0-{name}"));
        let (bt2_out, bt2_err) = run("babeltrace2", &[&ctf1]);
        let (ours_out, ours_err) = run(exe(), &[std::path::Path::new("print"), &ctf2]);
        assert!(!bt2_out.is_empty(), "{name}: babeltrace2 printed nothing");
        let (mut only_bt2, mut only_ours) = multiset_diff(&bt2_out, &ours_out);
        for (trace, theirs, ours, _why) in DIFFERENCES {
            if trace != name {
                continue;
            }
            let a = only_bt2.iter().position(|l| *l == theirs.as_bytes());
            let b = only_ours.iter().position(|l| *l == ours.as_bytes());
            match (a, b) {
                (Some(a), Some(b)) => {
                    only_bt2.remove(a);
                    only_ours.remove(b);
                }
                _ => failures.push(format!("{name}: the listed difference is not there any more: {theirs}")),
            }
        }
        for l in &only_bt2 {
            failures.push(format!("{name}: babeltrace2 only: {}", String::from_utf8_lossy(l)));
        }
        for l in &only_ours {
            failures.push(format!("{name}: tracelens only: {}", String::from_utf8_lossy(l)));
        }
        let (w1, w2) = (warnings(&bt2_err, &ctf1), warnings(&ours_err, &ctf2));
        if w1 != w2 {
            failures.push(format!("{name}: discarded-item warnings differ:\n  babeltrace2: {w1:?}\n  tracelens:   {w2:?}"));
        }
        let lines = bt2_out.split(|&c| c == b'\n').filter(|l| !l.is_empty()).count();
        println!("{name}: {lines} event lines, {} differences listed", DIFFERENCES.iter().filter(|d| d.0 == name).count());
        // `stats` counts the same events per name on both versions.
        let stats = |dir: &std::path::Path| {
            let (out, _) = run(exe(), &[std::path::Path::new("stats"), std::path::Path::new("--json"), dir]);
            let v: serde_json::Value = serde_json::from_slice(&out).expect("stats --json");
            (v["events"].clone(), v["by_name"].clone(), v["discarded_events"].clone())
        };
        let (s1, s2) = (stats(&ctf1), stats(&ctf2));
        if s1 != s2 {
            failures.push(format!("{name}: stats differ: CTF 1.8 {s1:?}, CTF 2 {s2:?}"));
        }
    }
    assert!(failures.is_empty(), "{} differences:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn ctf2_vl_ints_decode_to_the_yactfr_values() {
    let root = traces_root();
    let trace = root.join("tracecompass/CTF2-vl-ints");
    let case = root.join("yactfr-tests/tests-iter-data/ctf-2/pass-vl-ints.streams");
    let (Ok(text), true) = (std::fs::read_to_string(&case), trace.is_dir()) else {
        assert!(std::env::var_os("CI").is_none(), "CI must have the fixtures");
        eprintln!("skipped: fixtures missing");
        return;
    };
    // The expected element sequence: lines like `   8   VLUI:vu1b:77`.
    let expected: Vec<String> = text
        .rsplit("\n---\n")
        .next()
        .unwrap()
        .lines()
        .filter_map(|l| {
            let l = l.trim_start_matches(|c: char| c == ' ' || c.is_ascii_digit()).trim();
            let rest = l.strip_prefix("VLUI:").or_else(|| l.strip_prefix("VLSI:"))?;
            let (name, value) = rest.split_once(':')?;
            Some(format!("{name} = {value}"))
        })
        .collect();
    assert_eq!(expected.len(), 25, "the yactfr case's values");
    let (out, err) = run(exe(), &[std::path::Path::new("print"), &trace]);
    let text = String::from_utf8_lossy(&out);
    assert!(err.is_empty(), "{}", String::from_utf8_lossy(&err));
    let line = text.lines().next().expect("one event");
    let want = format!("test: {{ {} }}", expected.join(", "));
    assert_eq!(line, want);
    assert_eq!(text.lines().count(), 1);
}

/// `synth --ctf 2` writes the same stream files as `synth --ctf 1` with JSON metadata, and
/// every command reads both alike: the same text, JSON and exports (the CTF 1.8 trace's output
/// is what the babeltrace2 and lttng-analyses comparisons check, so this carries their oracle
/// over to the CTF 2 reader).
#[test]
fn synth_ctf2_reads_as_its_ctf1_twin_in_every_command() {
    let base = std::env::temp_dir().join(format!("tracelens-ctf2-twins-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let synth = |version: &str| {
        let dir = base.join(format!("ctf{version}")).join("t");
        let out = Command::new(exe())
            .args(["synth", "--ctf", version, "--events", "20000", "--cpus", "3", "--threads", "9", "--seed", "7", "--packet-size", "8192", "-o"])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "synth --ctf {version}: {}", String::from_utf8_lossy(&out.stderr));
        dir
    };
    let (t1, t2) = (synth("1"), synth("2"));
    let m2 = std::fs::read(t2.join("metadata")).unwrap();
    assert_eq!(m2.first(), Some(&0x1E), "CTF 2 metadata starts with a record separator");
    assert!(std::fs::read(t1.join("metadata")).unwrap().starts_with(b"/* CTF 1.8"));
    for e in std::fs::read_dir(&t1).unwrap().flatten().filter(|e| e.path().is_file() && e.file_name() != "metadata") {
        let name = e.file_name();
        assert_eq!(std::fs::read(e.path()).unwrap(), std::fs::read(t2.join(&name)).unwrap(), "{name:?} differs");
    }
    let commands: &[&[&str]] = &[
        &["print"],
        &["print", "--format", "json"],
        &["stats", "--json"],
        &["cpu", "--json"],
        &["sched", "--json"],
        &["io", "--json"],
        &["syscalls", "--json"],
        &["threads", "--json"],
        &["irq", "--json"],
        &["latency", "--from", "syscall_entry_*", "--to", "syscall_exit_*", "--match", "tid", "--json"],
        &["critical-path", "--tid", "1000", "--json"],
    ];
    let run_on = |args: &[&str], dir: &std::path::Path| {
        let out = Command::new(exe()).args(args).arg(dir).env("TZ", "UTC").output().unwrap();
        assert!(out.status.success(), "{args:?} on {}: {}", dir.display(), String::from_utf8_lossy(&out.stderr));
        // The trace's own path is printed by some commands: name both alike.
        String::from_utf8_lossy(&out.stdout).replace(&dir.to_string_lossy().into_owned(), "TRACE")
    };
    for args in commands {
        let (a, b) = (run_on(args, &t1), run_on(args, &t2));
        assert!(a.len() > 40, "{args:?}: too little output: {a}");
        assert!(a == b, "{args:?}: CTF 1.8 and CTF 2 outputs differ");
    }
    // Writers fed from a CTF 2 trace: a merge and a Chrome export come out the same.
    for (args, file) in [(&["merge", "-o"][..], "merged"), (&["export", "--to", "chrome", "-o"][..], "chrome.json")] {
        let out = |dir: &std::path::Path| {
            let to = dir.parent().unwrap().join(file);
            let st = Command::new(exe()).args(args).arg(&to).arg(dir).output().unwrap();
            assert!(st.status.success(), "{args:?}: {}", String::from_utf8_lossy(&st.stderr));
            if to.is_dir() {
                run_on(&["print"], &to)
            } else {
                std::fs::read_to_string(&to).unwrap().replace(&dir.to_string_lossy().into_owned(), "TRACE")
            }
        };
        let (a, b) = (out(&t1), out(&t2));
        assert!(a.len() > 40 && a == b, "{args:?}: CTF 1.8 and CTF 2 outputs differ");
    }
    let _ = std::fs::remove_dir_all(&base);
}
