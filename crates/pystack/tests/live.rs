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

#[test]
#[ignore = "flaky: in clean-clone CI runs on an idle machine (twice, each time the first interpreter tested, 3.8) the worker thread was not found (no frames) while the main thread was; 0 failures in 630 runs here (idle, loaded, taskset, cold page cache); the pthread thread-id offset was 0x2d0 in 300 of 300 processes checked; issue 20 stays open for it (run with --ignored)"]
fn blocked_threads_of_every_version() {
    let (script, pythons) = script_and_pythons("blocked.py");
    for (version, exe) in pythons {
        let mut child = Command::new(&exe).arg(&script).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("start python");
        let pid = child.id() as i32;
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let seen: Vec<Seen> = (0..2).map(|_| parse(&lines.next().expect("a report").expect("a line"))).collect();
        // Both threads are now blocked where they reported (or about to block on the same
        // line): give them a moment to get there.
        std::thread::sleep(std::time::Duration::from_millis(200));
        let mut py = Interpreter::attach(pid).expect("attach").unwrap_or_else(|| panic!("{}: no CPython found", exe.display()));
        assert_eq!(py.image().version, version, "{}", exe.display());
        for s in &seen {
            let mut frames = Vec::new();
            py.stack(s.tid, &mut frames).unwrap_or_else(|e| panic!("{}: {e}", exe.display()));
            let got: Vec<(String, String, u32)> = frames.iter().map(|f| (f.code.name.clone(), f.code.file.clone(), f.line.unwrap_or(0))).collect();
            assert_eq!(got, s.frames, "{} thread {}", exe.display(), s.tid);
            // Entry frames: every frame up to 3.10; from 3.11 the outermost frame of each
            // C-level evaluation (the thread's run() called by the threading module's C
            // code, the lambda called by map(), the generator resumed by the for loop, and
            // each outermost frame).
            let entries: Vec<&str> = frames.iter().filter(|f| f.entry).map(|f| f.code.name.as_str()).collect();
            if version.minor <= 10 {
                assert_eq!(entries.len(), frames.len(), "{}", exe.display());
            } else {
                assert_eq!(frames.last().map(|f| f.entry), Some(true), "{}: outermost frame is an entry: {entries:?}", exe.display());
                if got[0].0 == "generator" {
                    assert!(entries.contains(&"through_c.<locals>.<lambda>"), "{}: {entries:?}", exe.display());
                }
            }
        }
        // A thread without Python code (none here has that id) has an empty stack.
        let mut frames = Vec::new();
        py.stack(i32::MAX, &mut frames).expect("unknown thread");
        assert!(frames.is_empty());
        child.stdin.as_mut().expect("stdin").write_all(b"go\n").expect("release");
        assert!(child.wait().expect("wait").success());
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
