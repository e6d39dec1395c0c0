//! The analysis commands' text output against lttng-analyses' on the many-threads fixture
//! (`shared/reference/lttng-analyses/many-threads`): lttng-iousagetop, lttng-iolatencystats,
//! lttng-iolatencytop and lttng-irqstats print the same rows (the numbers themselves are
//! checked against the reports in `crates/analysis/tests`).

use std::process::Command;

mod common;
use common::{exe, fixture, reference};

/// `tracelens CMD many-threads ARGS...`'s standard output, or `None` without the fixture and
/// the reference file `file`.
fn ours_and_reference(cmd: &str, args: &[&str], file: &str) -> Option<(String, String)> {
    let trace = fixture("tracecompass/many-threads")?;
    let text = reference(&format!("lttng-analyses/many-threads/{file}"))?;
    let out = Command::new(exe()).arg(cmd).arg(&trace).args(["-j", "2", "--chunk-size", "1M"]).args(args).output().expect("run tracelens");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    Some((String::from_utf8(out.stdout).expect("UTF-8"), text))
}

/// Splits `text` into its sections: title line → lines until the next blank line.
fn sections(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut cur: Option<(String, Vec<String>)> = None;
    for line in text.lines() {
        if line.trim().is_empty() {
            out.extend(cur.take());
            continue;
        }
        if line.starts_with("Per-") || line.starts_with("Top ") {
            out.extend(cur.take());
        }
        match &mut cur {
            None => cur = Some((line.trim_end().to_string(), Vec::new())),
            Some((_, rows)) => rows.push(line.trim_end().to_string()),
        }
    }
    out.extend(cur);
    out
}

/// The rows of the section whose title starts with `title`, without rulers (`#...`) and
/// column headers (`Total ...`, tracelens prints them on their own line).
fn rows(secs: &[(String, Vec<String>)], title: &str) -> Vec<String> {
    let rows = secs.iter().find(|(t, _)| t.starts_with(title)).map(|(_, rows)| rows.clone()).unwrap_or_else(|| panic!("no section {title}"));
    rows.into_iter().filter(|r| !r.starts_with('#') && !r.starts_with("Total")).collect()
}

/// lttng's "145.70 KiB" / "0   B" from whitespace-separated tokens.
fn size_tokens(t: &[&str]) -> String {
    format!("{} {}", t[0], t[1])
}

fn norm_size(s: String) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn io_matches_lttng_iousagetop() {
    let Some((ours, text)) = ours_and_reference("io", &["--limit", "10"], "iousagetop.txt") else { return };
    let (theirs, ours) = (sections(&text), sections(&ours));
    // (total, process, disk, net, unknown) of a per-process row.
    let process_row = |row: &String| {
        let t: Vec<&str> = row.trim_start_matches('█').split_whitespace().collect();
        let n = t.len();
        (norm_size(size_tokens(&t[..2])), t[2..n - 6].join(" "), size_tokens(&t[n - 6..]), size_tokens(&t[n - 4..]), size_tokens(&t[n - 2..]))
    };
    for title in ["Per-process I/O Read", "Per-process I/O Write"] {
        let want = rows(&theirs, title);
        assert_eq!(want.len(), 10);
        let got = rows(&ours, title);
        assert_eq!(got.len(), 10, "{title}");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(process_row(g), process_row(w), "{title} row {i}");
        }
    }
    // (size, path) of a per-file row.
    let file_row = |row: &String| {
        let t: Vec<&str> = row.trim_start_matches('█').split_whitespace().collect();
        (norm_size(size_tokens(&t[..2])), t[2..].join(" "))
    };
    for title in ["Per-file I/O Read", "Per-file I/O Write"] {
        let want = rows(&theirs, title);
        assert_eq!(want.len(), 10);
        // Rows with equal sizes may come in another order: compare as sets per size.
        let mut want: Vec<(String, String)> = want.iter().map(file_row).collect();
        let mut got: Vec<(String, String)> = rows(&ours, title).iter().map(file_row).collect();
        want.sort();
        got.sort();
        assert_eq!(got, want, "{title}");
    }
}

#[test]
fn io_matches_lttng_iolatencystats() {
    let Some((ours, text)) = ours_and_reference("io", &[], "iolatencystats.txt") else { return };
    // Per category: count, min, average, max, stdev.
    let stats = |text: &str| -> Vec<Vec<String>> {
        text.lines()
            .map(|line| line.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .filter(|t| matches!(t.first().map(String::as_str), Some("Open" | "Read" | "Write" | "Sync")) && t.len() >= 6)
            .map(|t| t[..6].to_vec())
            .collect()
    };
    let want = stats(&text);
    assert_eq!(want.len(), 4);
    assert_eq!(stats(&ours), want);
}

#[test]
fn io_matches_lttng_iolatencytop() {
    // lttng-iolatencytop prints one row more than its limit (10): ask for 11.
    let Some((ours, text)) = ours_and_reference("io", &["--top", "11"], "iolatencytop.txt") else { return };
    let (theirs, ours) = (sections(&text), sections(&ours));
    // (begin, end, name, duration, size, process, tid, file) of a row.
    let call_row = |row: &&String| {
        let (range, rest) = row.split_once(']').unwrap();
        let (b, e) = range.trim_start_matches('[').split_once(", ").unwrap();
        let t: Vec<&str> = rest.split_whitespace().collect();
        let (size, rest) = if t[2] == "N/A" { ("N/A".to_string(), &t[3..]) } else { (format!("{} {}", t[2], t[3]), &t[4..]) };
        (b.to_string(), e.to_string(), t[0].to_string(), t[1].to_string(), norm_size(size), rest[0].to_string(), rest[1].to_string(), rest[2..].join(" "))
    };
    for cat in ["open", "read", "write", "sync"] {
        let title = format!("Top system call latencies {cat} (usec)");
        let calls = |secs: &[(String, Vec<String>)]| -> Vec<_> {
            let rows = &secs.iter().find(|(t, _)| *t == title).unwrap_or_else(|| panic!("no section {title}")).1;
            rows.iter().filter(|r| r.starts_with('[')).map(|r| call_row(&r)).collect()
        };
        let want = calls(&theirs);
        assert_eq!(want.len(), 11, "{title}");
        assert_eq!(calls(&ours), want, "{title}");
    }
}

#[test]
fn irq_rows_are_printed_as_lttng_irqstats_prints_them() {
    let Some((ours, text)) = ours_and_reference("irq", &[], "irqstats.txt") else { return };
    let lines: Vec<&str> = text.lines().filter(|l| l.contains(": <")).collect();
    assert_eq!(lines.len(), 3, "the reference has three hard IRQ lines");
    for line in lines {
        assert!(ours.lines().any(|l| l == line), "missing line {line:?} in\n{ours}");
    }
}
