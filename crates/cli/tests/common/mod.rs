//! Helpers shared by the CLI's integration tests (each test file uses some of them).
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

/// Why kernel recording tests cannot run here (they need root and tracefs), if so.
pub fn recording_skip_reason() -> Option<&'static str> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("recording kernel events needs root");
    }
    if !std::path::Path::new("/sys/kernel/tracing/instances").is_dir() {
        return Some("no tracefs at /sys/kernel/tracing");
    }
    None
}

/// Held by a test while it records: recordings run one at a time (they record the whole
/// system, each other's work included).
pub fn recording_lock() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// A fresh scratch directory `PREFIX-NAME-PID` on the disk the build is on (a test that
/// needs a real disk, not tmpfs, uses it).
pub fn scratch(prefix: &str, name: &str) -> PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{prefix}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `tests/data/SOURCE` compiled with `cc` and `flags` into `TARGET_TMPDIR/bin/`, once per
/// test binary and source (written beside and renamed, so that a run never sees a partial
/// program and runs do not pile up copies); `None` without a C compiler.
pub fn compile(source: &str, flags: &[&str]) -> Option<PathBuf> {
    static BINS: std::sync::Mutex<Vec<(String, Option<PathBuf>)>> = std::sync::Mutex::new(Vec::new());
    let mut bins = BINS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, b)) = bins.iter().find(|(s, _)| s == source) {
        return b.clone();
    }
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(source);
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("bin");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(source.trim_end_matches(".c"));
    let part = dir.join(format!("{}.{}", source, std::process::id()));
    let ok = Command::new("cc").args(flags).arg("-o").arg(&part).arg(&src).status().is_ok_and(|s| s.success()) && std::fs::rename(&part, &out).is_ok();
    let b = ok.then_some(out);
    bins.push((source.to_string(), b.clone()));
    b
}

/// The `tracelens` binary under test.
pub fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_tracelens")
}

/// A synthetic trace in a temporary directory, removed on drop.
pub struct Synth(pub PathBuf);

impl Synth {
    /// `tracelens synth -o DIR ARGS...` into a fresh directory named after `tag`.
    pub fn new(tag: &str, args: &[&str]) -> Synth {
        let dir = std::env::temp_dir().join(format!("tracelens-cli-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let st = Command::new(exe()).args(["synth", "-o"]).arg(&dir).args(args).output().unwrap();
        assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
        Synth(dir)
    }
}

impl Drop for Synth {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `shared/` beside the repository.
pub fn shared() -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared")
}

/// Where the fixture traces are: `shared/traces`, or `$TRACELENS_TRACES`.
pub fn traces_root() -> PathBuf {
    std::env::var_os("TRACELENS_TRACES").map(PathBuf::from).unwrap_or_else(|| shared().join("traces"))
}

/// The fixture trace `rel` (under [`traces_root`]), or `None` with a message when it is
/// missing (a failure under CI).
pub fn fixture(rel: &str) -> Option<PathBuf> {
    let p = traces_root().join(rel);
    if p.exists() {
        return Some(p);
    }
    assert!(std::env::var_os("CI").is_none(), "CI must have the fixtures: {} is missing", p.display());
    eprintln!("skipped: fixture {} not found", p.display());
    None
}

/// The text of the reference output `rel` under `shared/reference`, else under this crate's
/// `tests/data` (references made for these tests, see its `lttng-analyses/README.md`), or
/// `None` with a message when neither has it (a failure under CI).
pub fn reference(rel: &str) -> Option<String> {
    let p = shared().join("reference").join(rel);
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(rel);
    match std::fs::read_to_string(&p).or_else(|_| std::fs::read_to_string(&here)) {
        Ok(t) => Some(t),
        Err(_) => {
            assert!(std::env::var_os("CI").is_none(), "CI must have the reference files: {} is missing", p.display());
            eprintln!("skipped: reference {} not found", p.display());
            None
        }
    }
}

/// Splits a printed line into text and string literals (`"..."`, babeltrace2 escapes).
pub fn segments(l: &[u8]) -> Vec<(bool, &[u8])> {
    let mut out = Vec::new();
    let (mut i, mut start) = (0, 0);
    while i < l.len() {
        if l[i] == b'"' {
            out.push((false, &l[start..i]));
            let s = i + 1;
            let mut j = s;
            while j < l.len() && l[j] != b'"' {
                j += if l[j] == b'\\' { 2 } else { 1 };
            }
            let j = j.min(l.len());
            out.push((true, &l[s..j]));
            i = j + 1;
            start = i.min(l.len());
        } else {
            i += 1;
        }
    }
    out.push((false, &l[start.min(l.len())..]));
    out
}

/// Whether `bt2` and `ours` differ only in string values that `ours` prints empty.
pub fn stale_string_variant(bt2: &[u8], ours: &[u8]) -> bool {
    let (a, b) = (segments(bt2), segments(ours));
    a.len() == b.len() && a.iter().zip(&b).all(|((sa, x), (sb, y))| sa == sb && (x == y || (*sa && y.is_empty())))
}

/// Pairs lines only in babeltrace2's output with lines only in ours that show babeltrace2's
/// stale-empty-string bug; returns the number of pairs and removes them.
pub fn pair_stale_strings(only_bt2: &mut Vec<&[u8]>, only_ours: &mut Vec<&[u8]>) -> usize {
    let mut pairs = 0;
    let mut i = 0;
    while i < only_ours.len() {
        let o = only_ours[i];
        if !o.windows(2).any(|w| w == b"\"\"") {
            i += 1;
            continue;
        }
        match only_bt2.iter().position(|b| stale_string_variant(b, o)) {
            Some(j) => {
                only_bt2.swap_remove(j);
                only_ours.swap_remove(i);
                pairs += 1;
            }
            None => i += 1,
        }
    }
    pairs
}

/// Lines present more often in `a` than in `b` and the other way round, with repetitions.
pub fn multiset_diff<'x>(a: &'x [u8], b: &'x [u8]) -> (Vec<&'x [u8]>, Vec<&'x [u8]>) {
    let mut counts: HashMap<&[u8], i64> = HashMap::new();
    for l in a.split(|&c| c == b'\n').filter(|l| !l.is_empty()) {
        *counts.entry(l).or_default() += 1;
    }
    for l in b.split(|&c| c == b'\n').filter(|l| !l.is_empty()) {
        *counts.entry(l).or_default() -= 1;
    }
    let (mut only_a, mut only_b) = (Vec::new(), Vec::new());
    // Keep the lines in the order of `a`/`b`, so examples are easy to look up.
    for l in a.split(|&c| c == b'\n') {
        if let Some(c) = counts.get_mut(l) {
            while *c > 0 {
                only_a.push(l);
                *c -= 1;
            }
        }
    }
    for l in b.split(|&c| c == b'\n') {
        if let Some(c) = counts.get_mut(l) {
            while *c < 0 {
                only_b.push(l);
                *c += 1;
            }
        }
    }
    (only_a, only_b)
}
