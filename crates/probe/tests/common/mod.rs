//! Shared by the probe tests (and `tracelens record --probes`'s, which include this file):
//! building the C test programs against the header and the shared library, and reading a
//! probe trace back.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use tracelens_ctf::Item;
use tracelens_trace::TraceSet;

/// A temporary directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("tracelens-probe-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The directory holding `libtracelens_probe.so` built with these tests.
pub fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    for d in [deps, deps.parent().unwrap()] {
        if d.join("libtracelens_probe.so").is_file() {
            return d.to_path_buf();
        }
    }
    panic!("libtracelens_probe.so not found beside {}", exe.display());
}

/// The probe crate's directory (from its tests or from another crate's).
fn probe_crate() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    if here.join("include/tracelens/probe.h").is_file() {
        here.to_path_buf()
    } else {
        here.join("../probe")
    }
}

/// Compiles `tests/c/NAME.c` into `out`; `None` (with a note) when there is no C compiler.
pub fn build_c(name: &str, out: &Path) -> Option<PathBuf> {
    let manifest = probe_crate();
    let src = manifest.join("tests/c").join(format!("{name}.c"));
    let exe = out.join(name);
    let status = Command::new("cc")
        .arg("-O2")
        .arg("-I")
        .arg(manifest.join("include"))
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .arg("-L")
        .arg(library_dir())
        .arg("-ltracelens_probe")
        .arg("-lpthread")
        .status();
    match status {
        Ok(s) if s.success() => Some(exe),
        Ok(s) => panic!("cc failed on {}: {s}", src.display()),
        Err(e) => {
            eprintln!("skipped: no C compiler (`cc`: {e})");
            None
        }
    }
}

/// One event as the tests look at it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ev {
    pub ns: i64,
    pub name: String,
    pub vtid: i64,
    pub value: Option<String>,
}

/// What a trace holds: its events in time order and the discarded-event total.
pub struct Read {
    pub events: Vec<Ev>,
    pub discarded: u64,
    pub traces: usize,
}

pub fn read(dir: &Path) -> Read {
    let set = TraceSet::open(&[dir]).unwrap();
    let mut m = set.merger();
    let mut events = Vec::new();
    let mut discarded = 0;
    while let Some((_, item)) = m.next().unwrap() {
        match item {
            Item::Event => {
                let ev = m.event().unwrap();
                let value = ev.payload.get("value").map(|f| f.as_u64().map(|v| v.to_string()).or_else(|| f.as_str().map(|s| s.into_owned())).unwrap());
                let vtid = ev.field("vtid").and_then(|f| f.as_i64()).unwrap_or(-1);
                events.push(Ev { ns: ev.ns.unwrap(), name: ev.name().to_string(), vtid, value });
            }
            Item::DiscardedEvents { count, .. } => discarded += count,
            Item::DiscardedPackets { count, .. } => panic!("{count} packets lost"),
        }
    }
    Read { events, discarded, traces: set.traces.len() }
}

/// Events per name.
pub fn counts(events: &[Ev]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for e in events {
        *m.entry(e.name.clone()).or_insert(0) += 1;
    }
    m
}

/// `babeltrace2 DIR`'s event lines, or `None` when it is not installed.
pub fn babeltrace2(dir: &Path) -> Option<Vec<String>> {
    let out = Command::new("babeltrace2").arg(dir).output().ok()?;
    assert!(out.status.success(), "babeltrace2 {}: {}", dir.display(), String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect())
}
