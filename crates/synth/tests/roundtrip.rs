//! A synth trace reads back with the event count the generator reports, through our reader
//! and through babeltrace2 (when installed), and is the same for the same seed (metadata,
//! streams and LTTng indexes, which are valid).

use std::path::PathBuf;
use std::process::Command;

use tracelens_ctf::{Item, Trace};
use tracelens_synth::{generate, Options};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracelens-synth-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn count(dir: &std::path::Path) -> (u64, Vec<(String, u64)>) {
    let trace = Trace::open(dir).expect("synth trace opens");
    let mut n = 0;
    let mut by_name = std::collections::BTreeMap::new();
    for i in 0..trace.streams.len() {
        let mut c = trace.cursor(i);
        let mut last = None;
        while let Some(item) = c.advance().expect("synth trace decodes") {
            if item == Item::Event {
                n += 1;
                let ev = c.event().unwrap();
                *by_name.entry(ev.name().to_string()).or_insert(0u64) += 1;
                // Timestamps never go backwards within a stream.
                assert!(last <= ev.ns, "timestamps go backwards in stream {i}");
                last = ev.ns;
            }
        }
    }
    (n, by_name.into_iter().collect())
}

#[test]
fn synth_reads_back_and_is_deterministic() {
    let a = scratch("a");
    let b = scratch("b");
    let opts = Options { cpus: 3, threads: 7, events: 20_000, seed: 42, packet_size: 16 * 1024 };
    let sa = generate(&a, &opts).unwrap();
    let sb = generate(&b, &opts).unwrap();
    assert_eq!(sa, sb);
    let mut files = vec!["metadata".to_string()];
    for cpu in 0..3 {
        files.push(format!("channel0_{cpu}"));
        files.push(format!("index/channel0_{cpu}.idx"));
    }
    for f in &files {
        assert_eq!(std::fs::read(a.join(f)).unwrap(), std::fs::read(b.join(f)).unwrap(), "{f} differs for one seed");
    }
    // The LTTng indexes are valid for their streams (readers use them instead of walking).
    for cpu in 0..3 {
        let len = std::fs::metadata(a.join(format!("channel0_{cpu}"))).unwrap().len();
        let idx = tracelens_ctf::read_idx(&a.join(format!("index/channel0_{cpu}.idx")), len).expect("a valid index");
        assert!(idx.len() > 1 && idx.iter().all(|e| e.stream_instance_id == Some(cpu)), "{idx:?}");
    }
    let (n, names) = count(&a);
    assert_eq!(n, sa.events);
    for must in ["sched_switch", "sched_waking", "syscall_entry_read", "syscall_exit_read", "irq_handler_entry", "lttng_statedump_process_state"] {
        assert!(names.iter().any(|(k, v)| k == must && *v > 0), "no {must} in {names:?}");
    }
    // babeltrace2 is the oracle for "valid CTF": same count, no error.
    match Command::new("babeltrace2").arg(&a).output() {
        Ok(out) => {
            assert!(out.status.success(), "babeltrace2 failed: {}", String::from_utf8_lossy(&out.stderr));
            let lines = out.stdout.iter().filter(|&&c| c == b'\n').count() as u64;
            assert_eq!(lines, n, "babeltrace2 counts {lines} events");
        }
        Err(_) => eprintln!("babeltrace2 not installed: skipped the babeltrace2 check"),
    }
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}

/// A stream file left over from another trace (another seed, more CPUs) in a trace's directory
/// is reported, with the file and packet, instead of being read as part of the trace.
#[test]
fn stream_file_of_another_trace_is_reported() {
    let a = scratch("other-a");
    let b = scratch("other-b");
    generate(&a, &Options { cpus: 4, seed: 7, events: 5_000, ..Options::default() }).unwrap();
    generate(&b, &Options { cpus: 2, seed: 8, events: 5_000, ..Options::default() }).unwrap();
    std::fs::copy(a.join("channel0_2"), b.join("channel0_2")).unwrap();
    match Trace::open(&b) {
        Err(tracelens_ctf::Error::Stream { path, packet, message, .. }) => {
            assert_eq!(path, b.join("channel0_2"));
            assert_eq!(packet, 0);
            assert!(message.contains("UUID"), "{message}");
        }
        other => panic!("expected the leftover stream file to be reported, got {other:?}"),
    }
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}
