//! Helpers shared by the CLI's integration tests (each test file uses some of them).
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

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

/// The text of the reference output `rel` under `shared/reference`, or `None` with a message
/// when it is missing (a failure under CI).
pub fn reference(rel: &str) -> Option<String> {
    let p = shared().join("reference").join(rel);
    match std::fs::read_to_string(&p) {
        Ok(t) => Some(t),
        Err(_) => {
            assert!(std::env::var_os("CI").is_none(), "CI must have the reference files: {} is missing", p.display());
            eprintln!("skipped: reference {} not found", p.display());
            None
        }
    }
}
