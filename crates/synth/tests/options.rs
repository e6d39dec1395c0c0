//! Requests a generator must refuse or handle (issue 16, items 3 and 4): values that would
//! exhaust memory or the disk are errors saying the range before anything is written; the
//! size estimate is not below what is written; a trace is never written over another one's
//! files (they would be read with it), and replacing a trace removes only a trace.

use std::path::{Path, PathBuf};

use tracelens_ctf::Trace;
use tracelens_synth::{check_space, generate, prepare_output, Options};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracelens-synth-opts-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn opts(cpus: u32, seed: u64) -> Options {
    Options { cpus, threads: 8, events: 5_000, seed, packet_size: 4096 }
}

#[test]
fn values_out_of_range_are_errors_before_anything_is_written() {
    let dir = scratch("range");
    let cases = [
        (Options { threads: 1_000_000_000, ..Options::default() }, "--threads must be between 1 and 100000 (got 1000000000)"),
        (Options { threads: 0, ..Options::default() }, "--threads must be between 1 and 100000"),
        (Options { packet_size: 1 << 40, ..Options::default() }, "--packet-size must be a multiple of 8 between 4096 and 67108864"),
        (Options { packet_size: 4097, ..Options::default() }, "--packet-size must be a multiple of 8"),
        (Options { cpus: 0, ..Options::default() }, "--cpus must be between 1 and 1024"),
        (Options { cpus: 64, packet_size: 64 << 20, ..Options::default() }, "needs 4096 MiB for packets being built"),
        (Options { events: u64::MAX, ..Options::default() }, "GB would be written, and only"),
    ];
    for (o, want) in cases {
        let e = generate(&dir, &o).unwrap_err().to_string();
        assert!(e.contains(want), "{o:?}: {e}");
        assert!(!dir.exists(), "{o:?}: the output directory was made");
    }
    assert!(check_space(&dir, &Options { events: u64::MAX, ..Options::default() }).is_err());
    assert!(check_space(&dir, &Options::default()).is_ok());
}

#[test]
fn the_size_estimate_is_not_below_what_is_written() {
    for o in [opts(1, 1), opts(4, 2), Options { cpus: 3, threads: 500, events: 50_000, seed: 3, packet_size: 64 << 10 }] {
        let dir = scratch("estimate");
        generate(&dir, &o).unwrap();
        let mut written = 0;
        for d in [dir.clone(), dir.join("index")] {
            written += std::fs::read_dir(&d).unwrap().flatten().filter_map(|e| e.metadata().ok()).filter(|m| m.is_file()).map(|m| m.len()).sum::<u64>();
        }
        let est = o.estimated_bytes();
        assert!(est >= written && est < 2 * written + o.cpus as u64 * o.packet_size, "{o:?}: estimated {est}, wrote {written}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

fn streams(dir: &Path) -> usize {
    Trace::open(dir).unwrap().streams.len()
}

#[test]
fn a_trace_is_never_written_over_another() {
    let dir = scratch("over");
    prepare_output(&dir, false).unwrap();
    generate(&dir, &opts(4, 7)).unwrap();
    // Not empty: refused, the first trace untouched.
    let e = prepare_output(&dir, false).unwrap_err().to_string();
    assert!(e.contains("not empty (it holds a CTF trace)") && e.contains("--force"), "{e}");
    // generate alone refuses the older trace's extra stream files.
    let e = generate(&dir, &opts(2, 8)).unwrap_err().to_string();
    assert!(e.contains("channel0_2") && e.contains("would be read as part of the new trace"), "{e}");
    assert_eq!(streams(&dir), 4);
    // Replaced: only the new trace's two streams.
    prepare_output(&dir, true).unwrap();
    generate(&dir, &opts(2, 8)).unwrap();
    assert_eq!(streams(&dir), 2);
    assert_eq!(std::fs::read_dir(dir.join("index")).unwrap().count(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn replacing_removes_a_trace_and_nothing_else() {
    // A folder that is not a trace, and a trace with a foreign file: refused, nothing removed.
    let dir = scratch("foreign");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    let e = prepare_output(&dir, true).unwrap_err().to_string();
    assert!(e.contains("holds no CTF trace") && e.contains("nothing was removed"), "{e}");
    assert!(dir.join("notes.txt").exists());
    std::fs::remove_file(dir.join("notes.txt")).unwrap();
    generate(&dir, &opts(2, 1)).unwrap();
    std::fs::create_dir(dir.join("photos")).unwrap();
    let e = prepare_output(&dir, true).unwrap_err().to_string();
    assert!(e.contains("photos is not part of a CTF trace"), "{e}");
    assert_eq!(streams(&dir), 2, "the trace was removed although the folder was refused");
    let _ = std::fs::remove_dir_all(&dir);
}
