//! The crate's error type: why a file a recording names was not used to unwind or symbolize.

use std::path::PathBuf;
use std::time::Duration;

/// Why a mapped file (or the vDSO) was not used. The frames in it keep their module name and
/// offset.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file could not be opened, examined or mapped.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// The path is not a regular file (a FIFO, a device, a directory, a socket): it is never
    /// opened or read.
    #[error("{}: not a regular file ({kind}): not read", path.display())]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is: "a FIFO", "a character device", ...
        kind: &'static str,
    },
    /// The mapping names no file (`[heap]`, an anonymous name).
    #[error("{name}: not a file")]
    NotAFile {
        /// The mapping's name.
        name: String,
    },
    /// The file's build id is not the one recorded: it changed since the recording.
    #[error("{}: build id {found} is not the recorded {recorded} (the file changed since the recording)", path.display())]
    BuildId {
        /// The file.
        path: PathBuf,
        /// Its build id (hex), or `none`.
        found: String,
        /// The recorded build id (hex).
        recorded: String,
    },
    /// The file is not an ELF file this crate reads.
    #[error("{}: not an ELF file we can read: {message}", path.display())]
    Elf {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        message: String,
    },
    /// Loading the file took longer than [`crate::Symbolizer::load_timeout`]: it was given up.
    #[error("{}: gave up loading it after {after:?} (see Symbolizer::load_timeout)", path.display())]
    TimedOut {
        /// The file.
        path: PathBuf,
        /// The time box.
        after: Duration,
    },
    /// The total time for loading files ([`crate::Symbolizer::load_budget`]) is spent: no
    /// more files are loaded (reported once).
    #[error("{}: not loaded: the time for loading symbol files is spent ({budget:?}, see Symbolizer::load_budget); later files are not loaded either", path.display())]
    BudgetSpent {
        /// The first file not loaded.
        path: PathBuf,
        /// The budget.
        budget: Duration,
    },
    /// A perf map or jitdump file is malformed (what could be read of it is used).
    #[error("{}: {message}", path.display())]
    Jit {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// This process's vDSO image could not be read.
    #[error("[vdso]: cannot read this process's vDSO")]
    Vdso,
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
