//! babeltrace2 as the oracle: it reads what the writer wrote, and `tracelens print` prints
//! the same lines.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::ffi::OsStr;
use std::process::{Command, Stdio};

use tracelens_ctf::write::{EventValues, OwnedValue, TraceWriter};
use tracelens_ctf::parse_tsdl;

use crate::*;

fn have_babeltrace2() -> bool {
    let ok = Command::new("babeltrace2").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIPPED: `babeltrace2` is not installed (apt-get install babeltrace2)");
    }
    ok
}

fn run_utc(cmd: &Path, args: &[&OsStr]) -> std::process::Output {
    Command::new(cmd).args(args).env("TZ", "UTC").env_remove("BABELTRACE_TERM_COLOR").stdin(Stdio::null()).output().expect("run")
}

/// Sums the counts of babeltrace2's `WARNING: Tracer discarded N events` lines.
fn discarded_in_warnings(stderr: &str) -> u64 {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("WARNING: Tracer discarded "))
        .filter_map(|l| l.split(' ').next()?.parse::<u64>().ok())
        .sum()
}

#[test]
fn babeltrace2_reads_written_trace() {
    let dir = temp_dir("bt2-small");
    let (events, discarded) = write_small(&dir, 300);
    assert_eq!(events, 600);
    // Our reader first.
    let got = read_back(&dir, &|_| true).expect("tracelens reads it");
    assert_eq!(got.values().flatten().filter(|s| matches!(s, Seen::Event { .. })).count() as u64, events);
    let d: u64 = got.values().flatten().map(|s| if let Seen::Discarded(n) = s { *n } else { 0 }).sum();
    assert_eq!(d, discarded);
    if !have_babeltrace2() {
        return;
    }
    let out = run_utc(Path::new("babeltrace2"), &[dir.as_os_str()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "babeltrace2 failed on {}:\n{stderr}", dir.display());
    let lines = out.stdout.split(|&c| c == b'\n').filter(|l| !l.is_empty()).count() as u64;
    assert_eq!(lines, events, "babeltrace2 prints {lines} events, {events} were written ({})", dir.display());
    assert!(!stderr.contains("ERROR"), "babeltrace2 reports errors:\n{stderr}");
    assert_eq!(discarded_in_warnings(&stderr), discarded, "babeltrace2's discarded-event warnings:\n{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `tracelens` binary, if built: `$TRACELENS_BIN`, else `target/{release,debug}/tracelens`.
fn tracelens_bin() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TRACELENS_BIN") {
        return Some(PathBuf::from(p));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let profiles = if cfg!(debug_assertions) { ["debug", "release"] } else { ["release", "debug"] };
    profiles.iter().map(|p| target.join(p).join("tracelens")).find(|p| p.is_file())
}

/// A printed line without its `(+delta)`: which of several events with the same timestamp
/// comes first (and so the deltas) may differ between readers.
fn without_delta(l: &str) -> String {
    match (l.find("] (+"), l.find(") ")) {
        (Some(a), Some(b)) if b > a => format!("{}]{}", &l[..a], &l[b + 1..]),
        _ => l.to_string(),
    }
}

/// Splits a printed line into text and string literals.
fn segments(l: &str) -> Vec<(bool, &str)> {
    let b = l.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut start) = (0, 0);
    while i < b.len() {
        if b[i] == b'"' {
            out.push((false, &l[start..i]));
            let s = i + 1;
            let mut j = s;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let j = j.min(b.len());
            out.push((true, &l[s..j]));
            i = j + 1;
            start = i.min(b.len());
        } else {
            i += 1;
        }
    }
    out.push((false, &l[start.min(b.len())..]));
    out
}

/// Lines only in `bt2` and only in `ours` (multisets), less the pairs that differ only in
/// strings `ours` prints empty (babeltrace2 2.0 prints a stale earlier value for an empty
/// text sequence or array); returns the number of such pairs too.
fn line_diff(bt2: &str, ours: &str) -> (Vec<String>, Vec<String>, usize) {
    let mut counts: BTreeMap<String, i64> = BTreeMap::new();
    for l in bt2.lines().filter(|l| !l.is_empty()) {
        *counts.entry(without_delta(l)).or_default() += 1;
    }
    for l in ours.lines().filter(|l| !l.is_empty()) {
        *counts.entry(without_delta(l)).or_default() -= 1;
    }
    let (mut only_bt2, mut only_ours) = (Vec::new(), Vec::new());
    for (l, c) in counts {
        for _ in 0..c.max(0) {
            only_bt2.push(l.clone());
        }
        for _ in 0..(-c).max(0) {
            only_ours.push(l.clone());
        }
    }
    let stale = |b: &str, o: &str| {
        let (x, y) = (segments(b), segments(o));
        x.len() == y.len() && x.iter().zip(&y).all(|((sa, a), (sb, b))| sa == sb && (a == b || (*sa && b.is_empty())))
    };
    let mut pairs = 0;
    let mut i = 0;
    while i < only_ours.len() {
        match only_bt2.iter().position(|b| stale(b, &only_ours[i])) {
            Some(j) => {
                only_bt2.swap_remove(j);
                only_ours.swap_remove(i);
                pairs += 1;
            }
            None => i += 1,
        }
    }
    (only_bt2, only_ours, pairs)
}

fn warning_lines(stderr: &[u8]) -> String {
    String::from_utf8_lossy(stderr).lines().filter(|l| l.starts_with("WARNING: ")).map(|l| format!("{l}\n")).collect()
}

/// The `tracelens` binary when babeltrace2 is installed too (the pair the print comparisons
/// need); `None`, with the reason printed, otherwise.
pub(crate) fn print_oracle() -> Option<PathBuf> {
    if !have_babeltrace2() {
        return None;
    }
    let bin = tracelens_bin();
    if bin.is_none() {
        eprintln!("SKIPPED: no `tracelens` binary (build it: cargo build --release -p tracelens, or set TRACELENS_BIN)");
    }
    bin
}

/// Whether `tracelens print` (the binary `bin`) and babeltrace2 print the trace in `dir` the
/// same (stdout and WARNING lines, as multisets): `Ok` with the number of lines babeltrace2
/// prints and the number of line pairs that differ only by babeltrace2's stale-empty-string
/// bug, or what differs.
pub(crate) fn print_difference(bin: &Path, dir: &Path) -> Result<(usize, usize), String> {
    let bt2 = run_utc(Path::new("babeltrace2"), &[dir.as_os_str()]);
    if !bt2.status.success() {
        return Err(format!("babeltrace2 fails:\n{}", String::from_utf8_lossy(&bt2.stderr)));
    }
    let ours = run_utc(bin, &[OsStr::new("print"), dir.as_os_str()]);
    if !ours.status.success() {
        return Err(format!("tracelens print fails:\n{}", String::from_utf8_lossy(&ours.stderr)));
    }
    let mut report = String::new();
    let mut stale_total = 0;
    for (what, a, b) in [
        ("stdout", String::from_utf8_lossy(&bt2.stdout).into_owned(), String::from_utf8_lossy(&ours.stdout).into_owned()),
        ("WARNING lines", warning_lines(&bt2.stderr), warning_lines(&ours.stderr)),
    ] {
        let (only_bt2, only_ours, stale) = line_diff(&a, &b);
        stale_total += stale;
        if only_bt2.len() + only_ours.len() > 0 {
            report += &format!("  {what}: {} line(s) only in babeltrace2, {} only in tracelens\n", only_bt2.len(), only_ours.len());
            for l in only_bt2.iter().take(3) {
                report += &format!("    bt2 > {l}\n");
            }
            for l in only_ours.iter().take(3) {
                report += &format!("    ours> {l}\n");
            }
        }
    }
    if report.is_empty() {
        Ok((bt2.stdout.iter().filter(|&&c| c == b'\n').count(), stale_total))
    } else {
        Err(report)
    }
}

#[test]
fn print_matches_babeltrace2() {
    let Some(bin) = print_oracle() else { return };
    let n: usize = std::env::var("TRACELENS_PRINT_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(30);
    let mut dirs = Vec::new();
    let small = temp_dir("print-small");
    write_small(&small, 120);
    dirs.push(small);
    for case in generated_cases(n, 7, true) {
        let dir = temp_dir("print");
        write_case(&case, &build_class(&case.spec), &dir, false).expect("write");
        dirs.push(dir);
    }
    let (mut lines, mut stale_total) = (0, 0);
    let mut failures = Vec::new();
    for dir in &dirs {
        match print_difference(&bin, dir) {
            Ok((n, stale)) => {
                lines += n;
                stale_total += stale;
            }
            Err(report) => failures.push(format!("{}\n{report}", dir.display())),
        }
    }
    eprintln!(
        "print_matches_babeltrace2: {} traces, {lines} lines ({stale_total} differing only by babeltrace2's stale-empty-string bug), {} different; tracelens binary {}",
        dirs.len(),
        failures.len(),
        bin.display()
    );
    assert!(failures.is_empty(), "{} trace(s) print differently:\n{}", failures.len(), failures.join("\n"));
}

/// Without `timestamp_begin` in the packet context, babeltrace2 prints discarded events with
/// "(unknown time range)" (a discarded-events message has times only when packets have both
/// `timestamp_begin` and `timestamp_end`); `tracelens print` prints a time range.
#[test]
fn print_matches_babeltrace2_without_timestamp_begin() {
    if !have_babeltrace2() {
        return;
    }
    let Some(bin) = tracelens_bin() else { return };
    let text = r#"/* CTF 1.8 */
trace { major = 1; minor = 8; byte_order = le; packet.header := struct { integer { size = 32; align = 8; signed = false; } magic; integer { size = 64; align = 8; signed = false; } stream_instance_id; }; };
clock { name = monotonic; };
stream {
	packet.context := struct {
		integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } timestamp_end;
		integer { size = 64; align = 8; signed = false; } content_size;
		integer { size = 64; align = 8; signed = false; } packet_size;
		integer { size = 64; align = 8; signed = false; } events_discarded;
	};
	event.header := struct { integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } timestamp; };
};
event { name = "ev"; fields := struct { integer { size = 8; align = 8; signed = false; } x; }; };
"#;
    let dir = temp_dir("no-begin");
    let mut tw = TraceWriter::create(&dir, &parse_tsdl(text).expect("parses")).expect("create");
    let mut w = tw.stream(0, "s").expect("stream");
    w.event(0, 10, EventValues::payload(&OwnedValue::structure([OwnedValue::U(1)]))).expect("event");
    w.discard(3).expect("discard");
    w.event(0, 20, EventValues::payload(&OwnedValue::structure([OwnedValue::U(2)]))).expect("event");
    w.finish().expect("finish");
    let bt2 = run_utc(Path::new("babeltrace2"), &[dir.as_os_str()]);
    let ours = run_utc(&bin, &[OsStr::new("print"), dir.as_os_str()]);
    assert_eq!(warning_lines(&ours.stderr), warning_lines(&bt2.stderr));
}
