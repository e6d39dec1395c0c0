//! Helpers shared by this crate's integration tests.

use std::path::{Path, PathBuf};

/// The shared fixture traces (`../shared/traces` beside the repository); `None`, with a printed
/// reason, when they are missing — never under CI, which must have them.
pub fn fixtures() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces");
    if p.is_dir() {
        Some(p)
    } else {
        assert!(std::env::var_os("CI").is_none(), "CI must have the shared fixtures at {}", p.display());
        eprintln!("skipped: shared fixtures not found at {}", p.display());
        None
    }
}
