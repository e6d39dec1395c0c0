//! Probe buffers under contention: many threads, tiny buffers. Every event emitted is either
//! written or counted as discarded, in its own stream, at the place it was lost: the gaps in
//! each thread's sequence of values are exactly the discarded counts reported there.
//!
//! The test runs itself again as the probed process (`TL_PROBE_CHILD` set), with probes on.

use std::process::Command;

use tracelens_ctf::{Item, Trace};

mod common;
use common::TempDir;

const THREADS: u64 = 16;
const EVENTS: u64 = 20_000;

fn child() {
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            std::thread::spawn(move || {
                for i in 0..EVENTS {
                    if t % 2 == 0 {
                        tracelens_probe::probe!(tick, i);
                    } else {
                        tracelens_probe::probe!(tock, format!("{i}"));
                    }
                    // Pauses let the consumer drain mid-run, so that drops are also followed
                    // by records (marked in the ring), not only left at the end.
                    if i % 1000 == 999 {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn discarded_plus_written_equals_emitted() {
    if std::env::var_os("TL_PROBE_CHILD").is_some() {
        child();
        return;
    }
    let tmp = TempDir::new("contention");
    let out = tmp.0.join("out");
    let run = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "discarded_plus_written_equals_emitted", "--nocapture", "--test-threads=1"])
        .env("TL_PROBE_CHILD", "1")
        .env("TRACELENS_PROBE_DIR", &out)
        .env("TRACELENS_PROBE_BUFFER", "512")
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));

    let dir = std::fs::read_dir(&out).unwrap().next().unwrap().unwrap().path();
    let trace = Trace::open(&dir).unwrap();
    let (mut written, mut discarded, mut threads, mut marked) = (0u64, 0u64, 0u64, 0u64);
    for i in 0..trace.streams.len() {
        let mut c = trace.cursor(i);
        // The next value this thread emitted: everything before it is accounted for.
        let mut next = 0u64;
        let mut pending = 0u64;
        let mut events = 0u64;
        while let Some(item) = c.advance().unwrap() {
            match item {
                Item::Event => {
                    let ev = c.event().unwrap();
                    let f = ev.payload.get("value").unwrap();
                    let v = f.as_u64().unwrap_or_else(|| f.as_str().unwrap().parse().unwrap());
                    assert_eq!(v, next + pending, "stream {i}: value {v} after {next} with {pending} discarded between");
                    marked += (pending > 0) as u64;
                    next = v + 1;
                    pending = 0;
                    events += 1;
                }
                Item::DiscardedEvents { count, .. } => pending += count,
                Item::DiscardedPackets { .. } => panic!("lost packets"),
            }
        }
        if events == 0 && pending == 0 {
            continue; // a thread of the test harness with no probe
        }
        assert_eq!(next + pending, EVENTS, "stream {i}: {events} written + discarded != {EVENTS}");
        written += events;
        discarded += EVENTS - events;
        threads += 1;
    }
    assert_eq!(threads, THREADS);
    assert_eq!(written + discarded, THREADS * EVENTS);
    assert!(discarded > 0, "tiny buffers should have overflowed");
    assert!(written > 0);
    assert!(marked > 0, "no drop was followed by a record");

    // babeltrace2 counts the same events and discarded events.
    if let Ok(bt) = Command::new("babeltrace2").arg(&dir).output() {
        assert!(bt.status.success(), "{}", String::from_utf8_lossy(&bt.stderr));
        let lines = String::from_utf8_lossy(&bt.stdout).lines().count() as u64;
        assert_eq!(lines, written);
        let warn = String::from_utf8_lossy(&bt.stderr);
        let lost: u64 = warn
            .lines()
            .filter_map(|l| l.split("discarded ").nth(1).and_then(|r| r.split_whitespace().next()).and_then(|n| n.parse::<u64>().ok()))
            .sum();
        assert_eq!(lost, discarded, "{warn}");
    }
}
