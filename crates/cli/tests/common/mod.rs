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
