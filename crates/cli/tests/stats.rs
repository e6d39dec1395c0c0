//! `tracelens stats` as a user runs it: text and JSON output, options, errors; and the same
//! output whatever `-j` and `--chunk-size` are.

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::{exe, Synth};

fn run(args: &[&str], trace: &Path) -> Output {
    Command::new(exe()).arg("stats").arg(trace).args(args).output().expect("run tracelens")
}

/// The synthetic trace of these tests, with `extra` synth options.
fn synth(tag: &str, extra: &[&str]) -> Synth {
    let mut args = vec!["--events", "30000", "--cpus", "3", "--threads", "9", "--seed", "5", "--packet-size", "4096"];
    args.extend_from_slice(extra);
    Synth::new(&format!("stats-{tag}"), &args)
}

fn json(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert_eq!(text.lines().count(), 1, "one JSON line");
    serde_json::from_str(&text).expect("valid JSON")
}

#[test]
fn json_report_has_every_field_and_adds_up() {
    let t = synth("json", &[]);
    let v = json(&run(&["--json"], &t.0));
    for k in ["events", "by_name", "by_stream", "discarded_events", "lost_packets", "begin_ns", "end_ns", "span_ns", "packets", "bytes", "traces", "streams"] {
        assert!(v.get(k).is_some(), "missing {k}: {v}");
    }
    let events = v["events"].as_u64().unwrap();
    assert!(events >= 30_000);
    let sum = |k: &str| v[k].as_object().unwrap().values().map(|n| n.as_u64().unwrap()).sum::<u64>();
    assert_eq!(sum("by_name"), events);
    assert_eq!(sum("by_stream"), events);
    assert_eq!(v["by_stream"].as_object().unwrap().len(), 3);
    assert_eq!((v["traces"].as_u64(), v["streams"].as_u64()), (Some(1), Some(3)));
    assert_eq!(v["span_ns"].as_i64().unwrap(), v["end_ns"].as_i64().unwrap() - v["begin_ns"].as_i64().unwrap());
    let bytes: u64 = std::fs::read_dir(&t.0).unwrap().flatten().filter(|e| e.file_name().to_string_lossy().starts_with("channel")).map(|e| e.metadata().unwrap().len()).sum();
    assert_eq!(v["bytes"].as_u64(), Some(bytes), "every byte of the stream files is read");
    assert_eq!(v["packets"].as_u64(), Some(bytes / 4096));
    // Most frequent first, in the text (serde_json's map sorts keys when parsing).
    let text = String::from_utf8(run(&["--json"], &t.0).stdout).unwrap();
    let names = &text[text.find("\"by_name\":{").unwrap() + 11..];
    let names = &names[..names.find('}').unwrap()];
    let counts: Vec<u64> = names.split(',').map(|kv| kv.rsplit(':').next().unwrap().parse().unwrap()).collect();
    assert_eq!(counts.len(), v["by_name"].as_object().unwrap().len());
    assert!(counts.windows(2).all(|w| w[0] >= w[1]), "{counts:?}");
}

#[test]
fn output_is_the_same_for_any_jobs_and_chunk_size() {
    let t = synth("same", &[]);
    for fmt in [&["--json"][..], &[][..]] {
        let serial = run(&[fmt, &["-j", "1", "--chunk-size", "1G"]].concat(), &t.0);
        assert!(serial.status.success());
        for (j, cs) in [("2", "1"), ("8", "4096"), ("2", "100000"), ("3", "64M"), ("1", "1")] {
            let other = run(&[fmt, &["-j", j, "--chunk-size", cs]].concat(), &t.0);
            assert!(other.stdout == serial.stdout, "-j {j} --chunk-size {cs} {fmt:?}: output differs");
        }
        // Default -j and chunk size.
        assert!(run(fmt, &t.0).stdout == serial.stdout);
    }
}

#[test]
fn text_report_shows_totals_span_and_tables() {
    let t = synth("text", &[]);
    let out = run(&[], &t.0);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let v = json(&run(&["--json"], &t.0));
    let events = v["events"].as_u64().unwrap();
    for needle in ["Traces:     1 (3 streams,", "Events:     ", "Time span:  ", "  begin:    ", " UTC (", "Lost:       none", "Events by name (", "Events by stream (3 streams):", "channel0_0"] {
        assert!(text.contains(needle), "no `{needle}` in:\n{text}");
    }
    let with_commas = |n: u64| {
        let s = n.to_string();
        s.chars().enumerate().flat_map(|(i, c)| ((i > 0 && matches!((s.len() - i) % 3, 0)).then_some(',')).into_iter().chain([c])).collect::<String>()
    };
    assert!(text.contains(&format!("Events:     {}\n", with_commas(events))), "{text}");
    // The most frequent name is the first row of the name table.
    let by_name = v["by_name"].as_object().unwrap();
    let (top, _) = by_name.iter().max_by(|a, b| a.1.as_u64().cmp(&b.1.as_u64()).then_with(|| b.0.cmp(a.0))).unwrap();
    let after = text.split("Events by name").nth(1).unwrap();
    let first_row = after.lines().nth(2).unwrap();
    assert!(first_row.ends_with(&format!("  {top}")), "{first_row}");
    assert!(out.stderr.is_empty(), "no progress when stderr is not a terminal");
}

#[test]
fn help_has_examples() {
    let out = Command::new(exe()).args(["stats", "--help"]).output().unwrap();
    assert!(out.status.success());
    let h = String::from_utf8(out.stdout).unwrap();
    for needle in ["Examples:", "--json", "--jobs", "--chunk-size", "tracelens stats TRACE -j 4"] {
        assert!(h.contains(needle), "no `{needle}` in --help");
    }
    let top = Command::new(exe()).arg("--help").output().unwrap();
    let top = String::from_utf8(top.stdout).unwrap();
    assert!(top.contains("stats"));
    // The top-level help describes the whole tool, not one command.
    for needle in ["Record", "kernel events", "babeltrace2", "lttng-analyses", "record", "cpu", "synth"] {
        assert!(top.contains(needle), "no `{needle}` in tracelens --help:\n{top}");
    }
}

fn one_line_error(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr.clone()).unwrap();
    assert!(err.starts_with("tracelens: error: "), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

#[test]
fn bad_input_is_one_line_and_exit_1() {
    let err = one_line_error(&run(&[], Path::new("/nonexistent/tracelens-trace")));
    assert!(err.contains("/nonexistent/tracelens-trace"), "{err}");
    let t = synth("bad", &[]);
    for args in [&["-j", "0"][..], &["--chunk-size", "0"], &["--chunk-size", "12Q"], &["--bogus"]] {
        one_line_error(&run(args, &t.0));
    }
    let err = one_line_error(&Command::new(exe()).arg("stats").output().unwrap());
    assert!(err.contains("TRACE"), "{err}");
}

#[test]
fn a_corrupted_stream_is_reported_with_its_file() {
    let t = synth("corrupt", &[]);
    let file = t.0.join("channel0_1");
    // Packet 3: keep its header and context, make every event header name class 0xFFFFFFFF.
    let trace = tracelens_ctf::Trace::open(&t.0).unwrap();
    let stream = trace.streams.iter().find(|s| s.path() == file).unwrap();
    let p = stream.packets[3].clone();
    let events_at = match p.events_bits {
        0 => {
            // Packets listed from the index do not record where events start: walk them.
            std::fs::remove_dir_all(t.0.join("index")).unwrap();
            let walked = tracelens_ctf::Trace::open(&t.0).unwrap();
            walked.streams.iter().find(|s| s.path() == file).unwrap().packets[3].events_bits
        }
        b => b,
    };
    drop(trace);
    let mut bytes = std::fs::read(&file).unwrap();
    for b in &mut bytes[(p.offset + events_at / 8) as usize..(p.offset + p.content_bits / 8) as usize] {
        *b = 0xFF;
    }
    std::fs::write(&file, bytes).unwrap();
    for j in ["1", "2"] {
        let err = one_line_error(&run(&["-j", j, "--chunk-size", "1"], &t.0));
        assert!(err.contains("channel0_1: packet 3, byte "), "{err}");
    }
}
