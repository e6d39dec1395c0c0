//! The Python stacks of blocked threads of every CPython found here (pyenv's 3.8 to 3.13,
//! the system's python3), read from outside, against what the interpreter itself says
//! (`sys._getframe` names, files and lines, printed by the program before it blocks).

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use tracelens_pystack::{Interpreter, Version};

/// Every CPython interpreter to test: (version, path).
fn pythons() -> Vec<(Version, PathBuf)> {
    let mut out = Vec::new();
    let home = std::env::var("HOME").unwrap_or_default();
    let root = PathBuf::from(home).join(".pyenv/versions");
    for minor in 8..=13u8 {
        let Ok(dirs) = std::fs::read_dir(&root) else { break };
        let mut found: Vec<PathBuf> = dirs
            .filter_map(|d| d.ok().map(|d| d.path()))
            .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&format!("3.{minor}."))))
            .map(|p| p.join(format!("bin/python3.{minor}")))
            .filter(|p| p.exists())
            .collect();
        found.sort();
        if let Some(p) = found.pop() {
            out.push((Version { major: 3, minor }, p));
        }
    }
    for minor in 8..=13u8 {
        let p = PathBuf::from(format!("/usr/bin/python3.{minor}"));
        if p.exists() {
            out.push((Version { major: 3, minor }, p));
        }
    }
    out
}

#[derive(Debug, PartialEq)]
struct Seen {
    tid: i32,
    frames: Vec<(String, String, u32)>,
}

fn parse(line: &str) -> Seen {
    let v: serde_json::Value = serde_json::from_str(line).expect("a JSON report");
    let frames = v["frames"]
        .as_array()
        .expect("frames")
        .iter()
        .map(|f| (f[0].as_str().expect("name").to_string(), f[1].as_str().expect("file").to_string(), f[2].as_u64().expect("line") as u32))
        .collect();
    Seen { tid: v["tid"].as_i64().expect("tid") as i32, frames }
}

/// The test script `name` and the interpreters to run it with (none, said, when there is
/// none here).
fn script_and_pythons(name: &str) -> (PathBuf, Vec<(Version, PathBuf)>) {
    let p = pythons();
    for minor in 8..=13u8 {
        if !p.iter().any(|(v, _)| v.minor == minor) {
            eprintln!("{name}: CPython 3.{minor} skipped: not installed (pyenv or /usr/bin)");
        }
    }
    for (_, exe) in &p {
        eprintln!("{name} with {}", exe.display());
    }
    (PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py").join(name), p)
}

/// What the reader sees of process `pid`'s threads, for a failure message: every thread
/// state with the thread id read from it (or why it could not be) and its current frame,
/// the pthread thread-id offset used (3.8-3.10) and the process's threads by the kernel.
fn threads_seen(py: &mut Interpreter, pid: i32) -> String {
    let states = match py.thread_states() {
        Ok(v) => v
            .iter()
            .map(|t| {
                let tid = t.tid.as_ref().map_or_else(|e| format!("unread ({e})"), |t| t.to_string());
                let frame = t.frame.as_ref().map_or_else(|e| format!("unread ({e})"), |f| format!("{f:#x}"));
                format!("tstate {:#x} (interpreter {:#x}): thread {tid}, frame {frame}", t.addr, t.interpreter)
            })
            .collect::<Vec<_>>()
            .join("; "),
        Err(e) => format!("thread list unreadable: {e}"),
    };
    let mut tasks: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task")).map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect()).unwrap_or_default();
    tasks.sort();
    format!("\nthread states: {states}\npthread tid offset: {:?}\ntasks: {tasks:?}", py.pthread_tid_offset())
}

/// The interpreters' threads are looked up in memory whose layout the environment moves:
/// with every `LD_LIBRARY_PATH` directory the dynamic linker's startup allocations grow,
/// and the main thread's C library structure moves towards the end of its mapping
/// (`cargo test --workspace` adds the build-script output directories of the crates that
/// link native code; with two of them, 3,520 bytes were left to the end, and a fixed
/// 4 KiB read of it failed in 4 processes of 10). Each interpreter runs with the
/// environment as it is and with four more directories (the same 3,520 bytes here).
const ENVIRONMENTS: [usize; 2] = [0, 4];

fn library_path(extra: usize) -> String {
    let mut dirs: Vec<String> = (0..extra).map(|i| format!("/nonexistent/tracelens-pystack-test/build/dir-{i}-0123456789abcdef/out")).collect();
    dirs.extend(std::env::var("LD_LIBRARY_PATH").ok().filter(|p| !p.is_empty()));
    dirs.join(":")
}

#[test]
fn blocked_threads_of_every_version() {
    let (script, pythons) = script_and_pythons("blocked.py");
    for (version, exe) in pythons {
        for extra in ENVIRONMENTS {
            let mut child = Command::new(&exe).arg(&script).env("LD_LIBRARY_PATH", library_path(extra)).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("start python");
            let pid = child.id() as i32;
            let what = format!("{} (pid {pid}, {extra} more library directories)", exe.display());
            let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
            let seen: Vec<Seen> = (0..2).map(|_| parse(&lines.next().expect("a report").expect("a line"))).collect();
            let mut py = Interpreter::attach(pid).expect("attach").unwrap_or_else(|| panic!("{what}: no CPython found"));
            assert_eq!(py.image().version, version, "{what}");
            for s in &seen {
                let mut frames = Vec::new();
                // Each thread reported its frames just before it blocks on the same line:
                // while it is still on its way (returning from the report), its stack is
                // the reported one under a few more frames; read again until it is there.
                let mut tries = 0;
                let got = loop {
                    tries += 1;
                    py.stack(s.tid, &mut frames).unwrap_or_else(|e| panic!("{what}: thread {}: {e}{}", s.tid, threads_seen(&mut py, pid)));
                    let got: Vec<(String, String, u32)> = frames.iter().map(|f| (f.code.name.clone(), f.code.file.clone(), f.line.unwrap_or(0))).collect();
                    if tries < 2000 && got.len() > s.frames.len() && got.ends_with(&s.frames) {
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        continue;
                    }
                    break got;
                };
                if got != s.frames {
                    let diag = threads_seen(&mut py, pid);
                    assert_eq!(got, s.frames, "{what}: thread {}{diag}", s.tid);
                }
                // Entry frames: every frame up to 3.10; from 3.11 the outermost frame of
                // each C-level evaluation (the thread's run() called by the threading
                // module's C code, the lambda called by map(), the generator resumed by the
                // for loop, and each outermost frame).
                let entries: Vec<&str> = frames.iter().filter(|f| f.entry).map(|f| f.code.name.as_str()).collect();
                if version.minor <= 10 {
                    assert_eq!(entries.len(), frames.len(), "{what}");
                } else {
                    assert_eq!(frames.last().map(|f| f.entry), Some(true), "{what}: outermost frame is an entry: {entries:?}");
                    if got[0].0 == "generator" {
                        assert!(entries.contains(&"through_c.<locals>.<lambda>"), "{what}: {entries:?}");
                    }
                }
            }
            // A thread without Python code (none here has that id) has an empty stack.
            let mut frames = Vec::new();
            py.stack(i32::MAX, &mut frames).unwrap_or_else(|e| panic!("{what}: an unknown thread: {e}{}", threads_seen(&mut py, pid)));
            assert!(frames.is_empty());
            child.stdin.as_mut().expect("stdin").write_all(b"go\n").expect("release");
            assert!(child.wait().expect("wait").success());
        }
    }
}

/// Every instruction range of every code object of a few standard-library modules: our line
/// for its first instruction is the interpreter's own (`co_lines()`, `dis.findlinestarts()`).
#[test]
fn line_tables_agree_with_the_interpreter() {
    let (script, pythons) = script_and_pythons("linetables.py");
    for (version, exe) in pythons {
        let out = Command::new(&exe).arg(&script).output().expect("run python");
        assert!(out.status.success(), "{}: {}", exe.display(), String::from_utf8_lossy(&out.stderr));
        let layout = tracelens_pystack::Layout::of(version).expect("a known version");
        let (mut codes, mut ranges) = (0, 0);
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("JSON");
            let first = v["first"].as_u64().expect("first") as u32;
            let hex = v["table"].as_str().expect("table");
            let table: Vec<u8> = (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex")).collect();
            codes += 1;
            for r in v["ranges"].as_array().expect("ranges") {
                let (start, end) = (r[0].as_u64().expect("start") as u32, r[1].as_u64().expect("end") as u32);
                let want = r[2].as_u64().map(|l| l as u32);
                let units = layout.line_table() == tracelens_pystack::LineTable::Locations;
                for at in [start, end.saturating_sub(2).max(start)] {
                    let off = if units { at / 2 } else { at };
                    let got = tracelens_pystack::line_of(layout.line_table(), &table, first, off);
                    assert_eq!(got, want, "{}: code at line {first}, byte {at}", exe.display());
                }
                ranges += 1;
            }
        }
        assert!(codes > 100 && ranges > 1000, "{}: {codes} code objects, {ranges} ranges", exe.display());
    }
}
