//! Differential test against babeltrace2: for every fixture trace that `babeltrace2` reads
//! successfully, `TZ=UTC tracelens print T` must print the same lines as `TZ=UTC babeltrace2 T`
//! (compared as multisets: events with equal timestamps may come out in another order), and
//! the same `WARNING: Tracer discarded ...` lines on standard error.
//!
//! One babeltrace2 2.0.4 bug is recognized rather than reproduced: an empty string field
//! prints as a stale earlier value (babeltrace2 recycles field objects and "clears" a string
//! by setting its length to 0 without terminating it). A babeltrace2 line that differs from a
//! tracelens line only in string values that tracelens prints as `""` is counted apart, not
//! as a difference.
//!
//! The fixtures are in `../shared/traces` beside the repository (or `$TRACELENS_TRACES`). The test skips itself,
//! with a message, when they or `babeltrace2` are missing. `TRACELENS_BT2_FILTER=SUBSTRING`
//! restricts it to traces whose path contains SUBSTRING.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Instant;

use common::{multiset_diff, pair_stale_strings, traces_root};

const BT2_TIMEOUT_S: u32 = 20;
const OURS_TIMEOUT_S: u32 = 120;

/// Folders holding several traces that babeltrace2 reads together.
const MULTI_TRACE: [&str; 3] = [
    "babeltrace-conformance/succeed/multi-domains",
    "babeltrace-conformance/succeed/session-rotation",
    "tracecompass/cyg-profile",
];

fn find_traces(dir: &Path, out: &mut Vec<PathBuf>) {
    if dir.join("metadata").is_file() {
        out.push(dir.to_path_buf());
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut subs: Vec<PathBuf> = rd.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())).map(|e| e.path()).collect();
    subs.sort();
    for s in subs {
        find_traces(&s, out);
    }
}

struct Run {
    rc: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    secs: f64,
}

fn run(cmd: &str, args: &[&str], timeout_s: u32) -> Run {
    let start = Instant::now();
    let out = Command::new("timeout")
        .arg("-s")
        .arg("KILL")
        .arg(timeout_s.to_string())
        .arg(cmd)
        .args(args)
        .env("TZ", "UTC")
        .env_remove("BABELTRACE_TERM_COLOR")
        .stdin(Stdio::null())
        .output()
        .expect("cannot run `timeout`");
    Run { rc: out.status.code(), stdout: out.stdout, stderr: out.stderr, secs: start.elapsed().as_secs_f64() }
}

fn warnings(stderr: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for l in stderr.split(|&c| c == b'\n') {
        if l.starts_with(b"WARNING: ") {
            out.extend_from_slice(l);
            out.push(b'\n');
        }
    }
    out
}

fn clip(l: &[u8]) -> String {
    let s = String::from_utf8_lossy(l);
    if s.chars().count() > 300 {
        format!("{}...", s.chars().take(300).collect::<String>())
    } else {
        s.into_owned()
    }
}

enum Outcome {
    Skipped(String),
    Same { lines: usize, bt2_s: f64, ours_s: f64, stale: usize },
    Differs(String),
}

fn compare(ours: &str, root: &Path, path: &Path) -> Outcome {
    let p = path.to_string_lossy();
    let bt2 = run("babeltrace2", &[&p], BT2_TIMEOUT_S);
    if bt2.rc != Some(0) {
        return Outcome::Skipped(format!("babeltrace2 exit status {:?}", bt2.rc));
    }
    let mine = run(ours, &["print", &p], OURS_TIMEOUT_S);
    let rel = path.strip_prefix(root).unwrap_or(path).display().to_string();
    let mut report = String::new();
    if mine.rc != Some(0) {
        report += &format!("  exit status {:?} (babeltrace2: 0); stderr: {}\n", mine.rc, clip(mine.stderr.split(|&c| c == b'\n').next().unwrap_or(b"")));
    }
    let mut stale = 0;
    for (what, a, b) in [("stdout", bt2.stdout.clone(), mine.stdout.clone()), ("WARNING lines (stderr)", warnings(&bt2.stderr), warnings(&mine.stderr))] {
        let (mut only_bt2, mut only_ours) = multiset_diff(&a, &b);
        stale += pair_stale_strings(&mut only_bt2, &mut only_ours);
        if only_bt2.len() + only_ours.len() == 0 {
            continue;
        }
        report += &format!("  {what}: {} line(s) only in babeltrace2, {} only in tracelens\n", only_bt2.len(), only_ours.len());
        for l in only_bt2.iter().take(3) {
            report += &format!("    bt2 > {}\n", clip(l));
        }
        for l in only_ours.iter().take(3) {
            report += &format!("    ours> {}\n", clip(l));
        }
    }
    if report.is_empty() {
        Outcome::Same { lines: bt2.stdout.iter().filter(|&&c| c == b'\n').count(), bt2_s: bt2.secs, ours_s: mine.secs, stale }
    } else {
        Outcome::Differs(format!("{rel}\n{report}"))
    }
}

#[test]
fn same_output_as_babeltrace2() {
    let root = traces_root();
    if !root.is_dir() {
        assert!(std::env::var_os("CI").is_none(), "CI must have the fixture traces at {}", root.display());
        eprintln!("SKIPPED: no fixture traces at {} (set TRACELENS_TRACES)", root.display());
        return;
    }
    if Command::new("babeltrace2").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().map(|s| !s.success()).unwrap_or(true) {
        assert!(std::env::var_os("CI").is_none(), "CI must have babeltrace2 installed (.ci/run installs it)");
        eprintln!("SKIPPED: `babeltrace2` is not installed (apt-get install babeltrace2)");
        return;
    }
    let ours = env!("CARGO_BIN_EXE_tracelens");

    let mut dirs = Vec::new();
    find_traces(&root, &mut dirs);
    // babeltrace2 emits events forever on `event-empty` and hangs on
    // `less-than-1-byte-packet-size`; every trace there is invalid anyway.
    let never = root.join("ctf-testsuite/regression/stream/fail");
    dirs.retain(|d| !d.starts_with(&never));
    // The CTF test suite's metadata `fail` cases must be rejected (their verdicts are checked in
    // crates/ctf/tests/metadata_conformance.rs); babeltrace2 2.0.4 accepts 17 of them.
    let must_fail = root.join("ctf-testsuite/regression/metadata/fail");
    dirs.retain(|d| !d.starts_with(&must_fail));
    for m in MULTI_TRACE {
        let d = root.join(m);
        if d.is_dir() {
            dirs.push(d);
        }
    }
    if let Ok(f) = std::env::var("TRACELENS_BT2_FILTER") {
        dirs.retain(|d| d.to_string_lossy().contains(&f));
    }

    let queue = Mutex::new(dirs.clone());
    let results = Mutex::new(Vec::new());
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let Some(d) = queue.lock().unwrap().pop() else { break };
                let o = compare(ours, &root, &d);
                results.lock().unwrap().push((d, o));
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by(|a, b| a.0.cmp(&b.0));

    let (mut same, mut skipped, mut lines, mut stale_total) = (0, 0, 0usize, 0usize);
    let (mut bt2_total, mut ours_total) = (0.0, 0.0);
    let mut failures = Vec::new();
    for (d, o) in &results {
        match o {
            Outcome::Skipped(why) => {
                skipped += 1;
                let _ = (d, why);
            }
            Outcome::Same { lines: n, bt2_s, ours_s, stale } => {
                same += 1;
                if *stale > 0 {
                    stale_total += stale;
                    eprintln!("  {}: {stale} line(s) differ only by babeltrace2's stale-empty-string bug", d.strip_prefix(&root).unwrap_or(d).display());
                }
                lines += n;
                bt2_total += bt2_s;
                ours_total += ours_s;
                if *bt2_s > 0.5 || *ours_s > 0.5 {
                    eprintln!("  {:>8} lines  bt2 {:6.2}s  tracelens {:6.2}s  {}", n, bt2_s, ours_s, d.strip_prefix(&root).unwrap_or(d).display());
                }
            }
            Outcome::Differs(r) => failures.push(r.clone()),
        }
    }
    eprintln!(
        "bt2_diff: {} traces: {same} identical ({lines} lines, {stale_total} of them differing only by babeltrace2's stale-empty-string bug; babeltrace2 {bt2_total:.1}s, tracelens {ours_total:.1}s), {} different, {skipped} skipped (babeltrace2 fails on them); {:.1}s",
        results.len(),
        failures.len(),
        started.elapsed().as_secs_f64()
    );
    if !failures.is_empty() {
        panic!("{} trace(s) print differently from babeltrace2:\n{}", failures.len(), failures.join(""));
    }
}
