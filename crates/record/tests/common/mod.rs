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
