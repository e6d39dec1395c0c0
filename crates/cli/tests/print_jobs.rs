//! `tracelens print -j N` prints what `print -j 1` prints, byte for byte — standard output,
//! the `WARNING: Tracer discarded ...` lines on standard error, the exit status — for text and
//! JSON, on fixture traces (several streams, several traces, discarded events, lost packets,
//! times outside their packets, a decoding error) and on synthetic traces cut into chunks of
//! many sizes. `TRACELENS_PRINT_CHUNKS` makes `print` say how many chunks it wrote in parallel,
//! so that each test also checks which path it took.

mod common;

use std::path::Path;
use std::process::Command;

use common::{exe, fixture, Synth};
use proptest::prelude::*;

struct Printed {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    /// (chunks, chunks written in parallel), when the parallel path ran.
    chunks: Option<(usize, usize)>,
    /// Readers that workers took over from other workers.
    taken_over: usize,
    /// Of those, the ones taken over in the chunk the worker's own reader stood at.
    caught_up: usize,
}

fn print(trace: &Path, args: &[&str]) -> Printed {
    let out = Command::new(exe()).arg("print").args(args).arg(trace).env("TZ", "UTC").env("TRACELENS_PRINT_CHUNKS", "1").output().unwrap();
    let (mut chunks, mut taken_over, mut caught_up) = (None, 0, 0);
    let mut stderr = Vec::new();
    for line in out.stderr.split_inclusive(|&b| b == b'\n') {
        let text = String::from_utf8_lossy(line);
        if let Some(rest) = text.strip_prefix("tracelens: print: ") {
            let n: Vec<usize> = rest.split(|c: char| !c.is_ascii_digit()).filter_map(|w| w.parse().ok()).collect();
            chunks = Some((n[0], n[1]));
            (taken_over, caught_up) = (n[2], n[3]);
        } else {
            stderr.extend_from_slice(line);
        }
    }
    Printed { code: out.status.code(), stdout: out.stdout, stderr, chunks, taken_over, caught_up }
}

/// Prints `trace` with `-j 1` and with each of `parallel`, in both formats, and checks that
/// the outputs are equal; returns the chunk counts of the parallel runs (text).
fn same_as_serial(trace: &Path, parallel: &[&[&str]]) -> Vec<Option<(usize, usize)>> {
    let mut seen = Vec::new();
    for format in ["text", "json"] {
        let serial = print(trace, &["-j", "1", "--format", format]);
        assert_eq!(serial.chunks, None, "-j 1 is serial");
        for args in parallel {
            let args: Vec<&str> = args.iter().copied().chain(["--format", format]).collect();
            let p = print(trace, &args);
            let what = format!("{} {}", trace.display(), args.join(" "));
            assert_eq!(p.code, serial.code, "{what}: exit status");
            assert!(p.stdout == serial.stdout, "{what}: standard output differs from -j 1's");
            assert_eq!(String::from_utf8_lossy(&p.stderr), String::from_utf8_lossy(&serial.stderr), "{what}: standard error");
            if format == "text" {
                seen.push(p.chunks);
            }
        }
    }
    seen
}

/// Chunks of the default size, of a byte (an event or less: they begin and end inside
/// packets), and of about a packet.
const CUTS: [&[&str]; 4] = [&["-j", "2"], &["-j", "2", "--chunk-size", "1"], &["-j", "3", "--chunk-size", "1"], &["-j", "4", "--chunk-size", "2K"]];

#[test]
fn fixtures_print_the_same_in_parallel() {
    // (trace, whether it is cut into several chunks and every chunk is written in parallel)
    let cases = [
        ("babeltrace-conformance/extra/packet-seq-num/2-streams-lost-in-1", true),
        ("babeltrace-conformance/extra/packet-seq-num/2-streams-lost-in-2", true),
        ("babeltrace-conformance/extra/packet-seq-num/7-lost-between-2-with-index", true),
        ("babeltrace-conformance/extra/intersection/3eventsintersect", true),
        ("babeltrace-conformance/succeed/multi-domains", true),
        ("babeltrace-conformance/succeed/session-rotation", true),
        ("tracecompass/many-threads", true),
        ("tracecompass/ctfwriter_JF8nq3", true),
        ("tracecompass/cyg-profile", true),
        // Events before their packet's beginning: the serial reading prints these.
        ("babeltrace-conformance/succeed/barectf-event-before-packet", false),
        ("babeltrace-conformance/succeed/lttng-event-after-packet", false),
        // Discarded events, times going backwards.
        ("tracecompass/hello-lost", false),
    ];
    for (rel, parallel) in cases {
        let Some(trace) = fixture(rel) else { continue };
        let chunks = same_as_serial(&trace, &CUTS);
        let one_packet_chunks = chunks[1];
        if parallel {
            let (n, written) = one_packet_chunks.unwrap_or_else(|| panic!("{rel}: not cut into time chunks"));
            assert!(n > 1 && written == n, "{rel}: {written} of {n} chunks written in parallel");
        } else {
            assert!(one_packet_chunks.is_none_or(|(n, written)| written < n), "{rel}: printed in parallel: {one_packet_chunks:?}");
        }
    }
}

#[test]
fn a_decoding_error_mid_trace_ends_the_output_where_the_serial_run_does() {
    let s = Synth::new("print-jobs-error", &["--events", "20000", "--cpus", "3", "--threads", "9", "--seed", "3", "--packet-size", "8192"]);
    // An unknown event id in the middle packet of the second stream.
    let path = s.0.join("channel0_1");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() / 8192 / 2 * 8192 + 300;
    bytes[at..at + 24].fill(0xff);
    std::fs::write(&path, bytes).unwrap();
    let chunks = same_as_serial(&s.0, &[&["-j", "2", "--chunk-size", "8K"], &["-j", "3", "--chunk-size", "1"]]);
    for c in chunks {
        let (n, written) = c.expect("cut into chunks");
        assert!(written > 0 && written < n, "the chunks before the error are written in parallel, the rest serially: {written} of {n}");
    }
    let serial = print(&s.0, &["-j", "1"]);
    assert_eq!(serial.code, Some(1));
    assert!(String::from_utf8_lossy(&serial.stderr).contains("unknown event class id"), "{}", String::from_utf8_lossy(&serial.stderr));
}

/// A worker starting a chunk takes over a copy of the reader of the worker formatting the
/// chunk before, instead of skipping the chunks of every other worker (with 4 threads) or the
/// whole of the other worker's chunk from its own reader standing at its beginning (with 2):
/// the output is the serial one, in both formats, and readers were taken over, with 2 threads
/// from the chunk the worker's own reader stood at. (Whether one is taken over depends on where
/// the other workers are; with hundreds of chunks of large packets, some always are: the runs
/// are repeated until one takes over.)
#[test]
fn workers_take_over_each_others_readers_and_print_the_same() {
    let s = Synth::new("print-jobs-relay", &["--events", "30000", "--cpus", "3", "--threads", "9", "--seed", "5", "--packet-size", "262144"]);
    let (mut taken, mut caught_up) = (0, 0);
    for _ in 0..5 {
        for format in ["text", "json"] {
            let serial = print(&s.0, &["-j", "1", "--format", format]);
            for jobs in ["4", "2"] {
                let p = print(&s.0, &["-j", jobs, "--chunk-size", "2K", "--format", format]);
                assert!(p.stdout == serial.stdout, "-j {jobs} {format}: standard output differs from -j 1's");
                assert_eq!(String::from_utf8_lossy(&p.stderr), String::from_utf8_lossy(&serial.stderr));
                let (n, written) = p.chunks.expect("cut into chunks");
                assert!(n > 100 && written == n, "{written} of {n} chunks written in parallel");
                assert!(p.caught_up <= p.taken_over);
                if jobs == "4" {
                    taken += p.taken_over;
                } else {
                    caught_up += p.caught_up;
                }
            }
        }
        if taken > 0 && caught_up > 0 {
            break;
        }
    }
    assert!(taken > 0, "no reader taken over at -j 4 in 10 runs");
    assert!(caught_up > 0, "no reader taken over at -j 2 in the chunk the worker's own stood at, in 10 runs");
}

/// Peak resident set (KiB) of `print ARGS trace` to /dev/null, from the kernel's account of
/// that one child (`wait4`), with `env` added.
#[allow(clippy::zombie_processes)] // reaped by `wait4`, which std's `Child::wait` cannot give the usage of
fn print_peak_rss_kib(trace: &Path, args: &[&str], env: &[(&str, &str)]) -> i64 {
    let child = Command::new(exe()).arg("print").args(args).arg(trace).envs(env.iter().copied()).stdout(std::process::Stdio::null()).spawn().unwrap();
    let pid = child.id() as libc::pid_t;
    let (mut status, mut usage) = (0, unsafe { std::mem::zeroed::<libc::rusage>() });
    // SAFETY: `status` and `usage` are valid to write; `pid` is this test's own child, not
    // waited for yet (`child` is dropped without waiting).
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4");
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "print {args:?} failed: {status}");
    usage.ru_maxrss
}

/// The chunk readers keep the pages they read mapped and the writer hands back those of the
/// chunks no reader needs any more: at least half the trace's pages are gone from the
/// resident set by the end, against a run that keeps every page (`TRACELENS_KEEP_PAGES=1`).
#[test]
fn chunk_readers_pages_go_back_as_chunks_are_written() {
    let s = Synth::new("print-jobs-pages", &["--events", "4000000", "--cpus", "8", "--threads", "64", "--seed", "5"]);
    let trace_kib = (stream_bytes(&s.0) / 1024) as i64;
    assert!(trace_kib > 60 << 10, "the trace is {trace_kib} KiB");
    let args = ["-j", "3", "--chunk-size", "256K"];
    let released = print_peak_rss_kib(&s.0, &args, &[]);
    let kept = print_peak_rss_kib(&s.0, &args, &[("TRACELENS_KEEP_PAGES", "1")]);
    assert!(kept > trace_kib * 3 / 4, "with every page kept: {kept} KiB for a trace of {trace_kib} KiB");
    // What the binary, the buffers and the pages not yet behind every reader take is in both.
    assert!(kept - released > trace_kib / 2, "{released} KiB for a trace of {trace_kib} KiB, {kept} KiB with every page kept: less than half the trace went back");
}

/// Bytes of a trace's stream files.
fn stream_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir).unwrap().flatten().filter(|e| e.file_name().to_string_lossy().starts_with("channel")).map(|e| e.metadata().unwrap().len()).sum()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    /// Any trace shape (up to 12 streams), chunk size (down to chunks of a few events, which
    /// begin and end inside packets) and thread count gives -j 1's output.
    #[test]
    fn synth_traces_print_the_same_in_parallel(
        seed in 0u64..1000,
        cpus in 1u32..13,
        events in 500u32..12_000,
        packet_kib in 4u32..17,
        chunk in prop::sample::select(vec!["1", "300", "1K", "5K", "64K", "4M"]),
        jobs in 2u32..5,
    ) {
        let (seed, cpus, events, packet) = (seed.to_string(), cpus.to_string(), events.to_string(), (packet_kib * 1024).to_string());
        let s = Synth::new(&format!("print-jobs-{seed}"), &["--events", &events, "--cpus", &cpus, "--threads", "7", "--seed", &seed, "--packet-size", &packet]);
        let jobs = jobs.to_string();
        let chunks = same_as_serial(&s.0, &[&["-j", &jobs, "--chunk-size", chunk]]);
        if let Some((n, written)) = chunks[0] {
            prop_assert_eq!(n, written, "every chunk of a synthetic trace is written in parallel");
            if chunk == "1" || chunk == "300" {
                // Far more chunks than packets: they begin and end inside packets.
                let packets = stream_bytes(&s.0) / (packet_kib as u64 * 1024);
                prop_assert!(n as u64 > 4 * packets, "{} chunks for {} packets", n, packets);
            }
        }
    }
}
