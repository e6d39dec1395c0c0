//! Files a recording names that the symbolizer must not trust (issue 16, item 2): a crafted
//! trace's `tracelens_mmap` events may name a FIFO (opening it blocks), a device (reading it
//! never ends or has effects), a directory, or a file whose build id is not the recorded one.
//! Each is refused with a problem naming it, promptly, and its frames keep the module name
//! and offset only. The same holds for the perf maps and jitdumps of `DIR/jit`.

#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

use std::path::{Path, PathBuf};
use std::time::Duration;

use tracelens_symbolize::{Mapping, ProcessMaps, Symbolizer};

const PID: i64 = 4242;
const BASE: u64 = 0x40_0000;
/// perf's x86_64 registers AX..IP (0-8) and R8..R15 (16-23).
const MASK: u64 = 0xff01ff;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracelens-symbolize-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Unwinds a one-frame sample whose instruction pointer is in a mapping of `path` (with
/// `build_id` recorded), on a thread of its own: a symbolizer that blocks fails the test after
/// a minute instead of hanging it. Returns the frame's description and the problems noted.
fn symbolize_in(path: &Path, build_id: &str, tune: impl FnOnce(&mut Symbolizer) + Send + 'static) -> (String, Vec<String>) {
    let mapping = Mapping { start: BASE, end: BASE + 0x10_0000, pgoff: 0, path: path.display().to_string(), build_id: build_id.into() };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sym = Symbolizer::new();
        tune(&mut sym);
        let mut maps = ProcessMaps::default();
        maps.insert(mapping);
        sym.set_maps(PID, maps);
        let mut regs = vec![0u64; 17];
        regs[7] = 0x7fff_0000; // sp
        regs[8] = BASE + 0x1234; // ip
        let (frames, _) = sym.unwind_raw(PID, &regs, MASK, &[0u8; 64]).expect("x86_64 registers");
        let problems = sym.problems.iter().map(|p| p.to_string()).collect();
        let _ = tx.send((frames[0].describe(), problems));
    });
    rx.recv_timeout(Duration::from_secs(60)).expect("the symbolizer did not return within a minute")
}

#[test]
fn a_fifo_is_not_opened() {
    let d = scratch("fifo");
    let fifo = d.join("lib.so");
    let c = std::ffi::CString::new(fifo.display().to_string()).unwrap();
    // SAFETY: c is a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let (frame, problems) = symbolize_in(&fifo, "", |_| {});
    assert_eq!(frame, "?? [lib.so+0x1234]");
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains(&fifo.display().to_string()) && problems[0].contains("not a regular file (a FIFO)"), "{problems:?}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn devices_directories_and_links_to_them_are_not_read() {
    let d = scratch("special");
    let link = d.join("zero.so");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    for (path, kind) in [(PathBuf::from("/dev/zero"), "a character device"), (link, "a character device"), (d.clone(), "a directory")] {
        let (frame, problems) = symbolize_in(&path, "", |_| {});
        assert!(frame.starts_with("?? ["), "{frame}");
        assert!(problems.len() == 1 && problems[0].contains(&format!("not a regular file ({kind})")), "{}: {problems:?}", path.display());
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_file_whose_build_id_is_not_the_recorded_one_is_not_trusted() {
    // This test's own executable: an ELF file with a build id (when the linker gave it one).
    let exe = std::env::current_exe().unwrap();
    let (frame, problems) = symbolize_in(&exe, "00112233445566778899aabbccddeeff00112233", |_| {});
    assert!(frame.starts_with("?? ["), "{frame}");
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("is not the recorded 00112233445566778899aabbccddeeff00112233"), "{problems:?}");
}

#[test]
fn loading_is_time_boxed() {
    let exe = std::env::current_exe().unwrap();
    // No time left for loading files: none is loaded, and that is said once.
    let (frame, problems) = symbolize_in(&exe, "", |s| s.load_budget = Duration::ZERO);
    assert!(frame.starts_with("?? ["), "{frame}");
    assert!(problems.len() == 1 && problems[0].contains("time for loading symbol files is spent"), "{problems:?}");
    // A load that takes longer than its time box (none here: the test's executable takes
    // milliseconds to parse) is given up.
    let (frame, problems) = symbolize_in(&exe, "", |s| s.load_timeout = Duration::ZERO);
    assert!(frame.starts_with("?? ["), "{frame}");
    assert!(problems.len() == 1 && problems[0].contains("gave up loading it after"), "{problems:?}");
    // With time, the same file loads.
    let (_, problems) = symbolize_in(&exe, "", |_| {});
    assert!(problems.is_empty(), "{problems:?}");
}

#[test]
fn jit_symbol_files_that_are_not_regular_files_are_not_read() {
    // A frame in anonymous memory is looked up in the perf map and jitdump of its process:
    // here a FIFO and a link to a device.
    let d = scratch("jit");
    let map = d.join(format!("perf-{PID}.map"));
    let c = std::ffi::CString::new(map.display().to_string()).unwrap();
    // SAFETY: c is a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let dump = d.join(format!("jit-{PID}.dump"));
    std::os::unix::fs::symlink("/dev/zero", &dump).unwrap();
    let dir = d.clone();
    let (frame, problems) = symbolize_in(Path::new("//anon"), "", move |s| s.add_jit_dir(dir));
    assert!(frame.starts_with("?? ["), "{frame}");
    assert_eq!(problems.len(), 2, "{problems:?}");
    for (path, kind) in [(map, "a FIFO"), (dump, "a character device")] {
        assert!(problems.iter().any(|p| p.contains(&path.display().to_string()) && p.contains(&format!("not a regular file ({kind})"))), "{}: {problems:?}", path.display());
    }
    let _ = std::fs::remove_dir_all(&d);
}
