//! Helpers shared by this crate's integration tests (each test file uses some of them).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use tracelens_record::tracefs::{Instance, Tracefs};

/// tracefs, when this process may record kernel events; `None`, with the reason printed for
/// `test`, when it may not (not root, no tracefs, or a read-only mount in a container).
pub fn tracefs_or_skip(test: &str) -> Option<Tracefs> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("{test}: skipped: recording kernel events needs root");
        return None;
    }
    // tracefs must be there and let us make an instance (a container may mount it read-only).
    match Tracefs::open().and_then(|t| Instance::create(&t).and_then(Instance::remove).map(|()| t)) {
        Ok(t) => Some(t),
        Err(e) => {
            eprintln!("{test}: skipped: {e}");
            None
        }
    }
}

/// Compiles the C program `source` into `dir/name` with `cc FLAGS`; `None` when there is no C
/// compiler or it fails.
pub fn compile_c(dir: &Path, name: &str, source: &str, flags: &[&str]) -> Option<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let bin = dir.join(name);
    match Command::new("cc").args(flags).arg("-o").arg(&bin).arg(&src).status() {
        Ok(s) if s.success() => Some(bin),
        _ => None,
    }
}

/// A fresh (removed) scratch path for test `name`.
pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracelens-record-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// What the top level's `set_event` holds now (our recordings never change it).
pub fn top_level_events(t: &Tracefs) -> String {
    std::fs::read_to_string(t.path("set_event")).unwrap_or_default()
}

/// No instance of this process (or of `also`, a recorder child) is left, and the top-level
/// event list is what it was before (`before`). Instances of other live recorders (another
/// test run on the same machine) are not ours to judge.
pub fn assert_clean(t: &Tracefs, before: &str, also: &[i32]) {
    let me = std::process::id() as i32;
    let ours: Vec<String> = t
        .instances()
        .unwrap()
        .into_iter()
        .filter(|n| tracelens_record::tracefs::instance_pid(n).is_some_and(|p| p == me || also.contains(&p)))
        .collect();
    assert!(ours.is_empty(), "instances left behind: {ours:?}");
    assert_eq!(top_level_events(t), before, "the top-level event list changed");
}
