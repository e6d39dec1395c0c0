//! `tracelens merge` round trips against babeltrace2: for fixture sets of several kinds (an
//! LTTng kernel + user-space session with discarded events, per-process user-space traces
//! with different clock offsets, a kernel trace with a trace of another clock frequency),
//! `babeltrace2 MERGED` prints exactly the lines `tracelens print INPUTS...` prints (as
//! multisets, without the time-since-previous column, which depends on how equal times are
//! ordered), and reports as many discarded events; `--offset` shifts one input's times by
//! exactly that much.
//!
//! The environment entries babeltrace2 prints (`hostname`, `procname`, `vpid`) are compared
//! too, except those the inputs disagree on (which the merged trace's single environment
//! cannot hold: `merge --json` lists them).
//!
//! Skipped, with a message, without the fixtures (`../shared/traces`) or babeltrace2.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{exe, multiset_diff, pair_stale_strings};

fn traces_root() -> PathBuf {
    std::env::var_os("TRACELENS_TRACES").map(PathBuf::from).unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces"))
}

fn have_babeltrace2() -> bool {
    Command::new("babeltrace2").arg("--version").output().is_ok_and(|o| o.status.success())
}

struct Out(PathBuf);

impl Drop for Out {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn out_dir(tag: &str) -> Out {
    let d = std::env::temp_dir().join(format!("tracelens-cli-merge-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    Out(d)
}

/// Standard output, and the total of `discarded N events` warnings on standard error.
fn output_and_discarded(cmd: &mut Command) -> (Vec<u8>, u64) {
    let o = cmd.env("TZ", "UTC").output().unwrap();
    assert!(o.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&o.stderr));
    let discarded = String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("WARNING: Tracer discarded ")?.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    (o.stdout, discarded)
}

/// Lines sorted, and the discarded total (see [`output_and_discarded`]).
fn lines_and_discarded(cmd: &mut Command) -> (Vec<String>, u64) {
    let (out, discarded) = output_and_discarded(cmd);
    let mut lines: Vec<String> = String::from_utf8_lossy(&out).lines().map(str::to_string).collect();
    lines.sort();
    (lines, discarded)
}

/// Merges `inputs` (fixture paths) with `extra` arguments; returns the output and the
/// environment keys the merge left out.
fn run_merge(tag: &str, inputs: &[PathBuf], extra: &[String]) -> (Out, Vec<String>) {
    let out = out_dir(tag);
    let o = Command::new(exe()).arg("merge").args(inputs).args(extra).arg("-q").arg("--json").arg("-o").arg(&out.0).output().unwrap();
    assert!(o.status.success(), "merge {inputs:?}: {}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let dropped = v["dropped_env"].as_array().unwrap().iter().map(|k| k.as_str().unwrap().to_string()).collect();
    (out, dropped)
}

/// `--fields` for both printers: babeltrace2's default trace fields that the merged trace
/// still has.
fn fields(dropped: &[String]) -> String {
    let kept: Vec<String> = ["hostname", "procname", "vpid"].iter().filter(|k| !dropped.iter().any(|d| d == *k)).map(|k| format!("trace:{k}")).collect();
    if kept.is_empty() {
        "loglevel".into()
    } else {
        kept.join(",")
    }
}

fn round_trip(tag: &str, inputs: &[PathBuf]) {
    let (out, dropped) = run_merge(tag, inputs, &[]);
    let f = format!("--fields={}", fields(&dropped));
    let (ours, ours_discarded) = output_and_discarded(Command::new(exe()).arg("print").arg("--no-delta").arg(&f).args(inputs));
    let (bt2, bt2_discarded) = output_and_discarded(Command::new("babeltrace2").arg("--no-delta").arg(&f).arg(&out.0));
    assert!(!ours.is_empty());
    let (mut only_bt2, mut only_ours) = multiset_diff(&bt2, &ours);
    // babeltrace2 2.0.4 prints an empty string field as a stale earlier value (see bt2_diff.rs).
    pair_stale_strings(&mut only_bt2, &mut only_ours);
    let show = |v: &[&[u8]]| v.iter().take(3).map(|l| String::from_utf8_lossy(l).into_owned()).collect::<Vec<_>>();
    assert!(only_bt2.is_empty() && only_ours.is_empty(), "{tag}: only babeltrace2 (merged): {:#?}\nonly tracelens print (inputs): {:#?}", show(&only_bt2), show(&only_ours));
    assert_eq!(ours_discarded, bt2_discarded, "{tag}: discarded events");
}

fn fixtures(paths: &[&str]) -> Option<Vec<PathBuf>> {
    let root = traces_root();
    if !root.is_dir() || !have_babeltrace2() {
        eprintln!("skipped: no fixtures at {} or no babeltrace2", root.display());
        return None;
    }
    Some(paths.iter().map(|p| root.join(p)).collect())
}

#[test]
fn kernel_and_user_space_session_with_discarded_events() {
    let Some(inputs) = fixtures(&["babeltrace-conformance/succeed/multi-domains"]) else { return };
    round_trip("multi-domains", &inputs);
}

#[test]
fn user_space_traces_of_different_clock_offsets() {
    let Some(inputs) = fixtures(&[
        "tracecompass/exp-subset/testTrace-17889-20140324-160652",
        "tracecompass/exp-subset/testTrace-17913-20140324-160652",
        "tracecompass/exp-subset/testTrace-17937-20140324-160652",
    ]) else {
        return;
    };
    round_trip("exp-subset", &inputs);
}

#[test]
fn traces_of_different_clock_frequencies() {
    // many-threads: 1 GHz; mpi_gather: 3.29 GHz with an offset in seconds and cycles.
    let Some(inputs) = fixtures(&["tracecompass/many-threads", "tracecompass/mpi_gather"]) else { return };
    round_trip("frequencies", &inputs);
}

#[test]
fn an_offset_shifts_one_input_by_exactly_that() {
    let Some(inputs) = fixtures(&["tracecompass/flipping-endianness"]) else { return };
    let arg = format!("--offset={}=-1.5ms", inputs[0].display());
    let (out, _) = run_merge("offset", &inputs, &[arg]);
    let secs = |lines: Vec<String>| -> Vec<(i128, String)> {
        lines
            .iter()
            .map(|l| {
                let (t, rest) = l.strip_prefix('[').unwrap().split_once(']').unwrap();
                let (s, ns) = t.split_once('.').unwrap();
                (s.parse::<i128>().unwrap() * 1_000_000_000 + ns.parse::<i128>().unwrap(), rest.to_string())
            })
            .collect()
    };
    let (ours, _) = lines_and_discarded(Command::new(exe()).args(["print", "--no-delta", "--clock-seconds"]).args(&inputs));
    let (bt2, _) = lines_and_discarded(Command::new("babeltrace2").args(["--no-delta", "--clock-seconds"]).arg(&out.0));
    let mut shifted: Vec<(i128, String)> = secs(ours).into_iter().map(|(t, r)| (t - 1_500_000, r)).collect();
    let mut got = secs(bt2);
    shifted.sort();
    got.sort();
    assert_eq!(shifted.len(), 14_310);
    assert!(shifted == got, "times not shifted by exactly -1.5 ms");
}

#[test]
fn refuses_a_non_empty_output_and_an_unknown_offset_trace() {
    let Some(inputs) = fixtures(&["tracecompass/flipping-endianness"]) else { return };
    let out = out_dir("refuse");
    std::fs::create_dir_all(&out.0).unwrap();
    std::fs::write(out.0.join("x"), b"x").unwrap();
    let o = Command::new(exe()).arg("merge").args(&inputs).arg("-o").arg(&out.0).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not an empty directory"), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.0.join("x").is_file(), "the existing output was touched");
    let o = Command::new(exe()).arg("merge").args(&inputs).args(["--offset", "elsewhere=5", "-o"]).arg(out.0.join("new")).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("--offset elsewhere: not one of the traces given"));
}
