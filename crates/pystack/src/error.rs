//! The crate's error type.

use std::path::PathBuf;

use crate::layout::Version;

/// Why a Python stack could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The process's memory could not be read there (it is gone, the address is not mapped,
    /// or reading is not permitted).
    #[error("process {pid}: cannot read {len} bytes at {addr:#x}: {source}")]
    Read {
        /// The process.
        pid: i32,
        /// The address.
        addr: u64,
        /// Bytes wanted.
        len: usize,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// A file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// The interpreter's file is not an ELF file with the symbols needed.
    #[error("{}: {message}", path.display())]
    Elf {
        /// The file.
        path: PathBuf,
        /// What is missing or wrong.
        message: String,
    },
    /// A CPython version whose layout this crate does not know.
    #[error("{}: CPython {version} is not supported (3.8 to 3.13 are)", path.display())]
    Unsupported {
        /// The interpreter's file.
        path: PathBuf,
        /// Its version.
        version: Version,
    },
    /// The kernel thread id was not found in the main thread's C library thread structure
    /// (3.8-3.10 keep only the `pthread_t` of each thread; the id is read from there).
    #[error("process {pid}: its id is not in the first {len} readable bytes of the main thread's pthread structure at {addr:#x} (not glibc?), so its threads cannot be told apart")]
    NoThreadId {
        /// The process.
        pid: i32,
        /// The structure's address.
        addr: u64,
        /// Bytes searched.
        len: usize,
    },
    /// The interpreter's structures are not what they should be (a race with the running
    /// program, or a build with another layout).
    #[error("process {pid}: {what} at {addr:#x}")]
    Inconsistent {
        /// The process.
        pid: i32,
        /// What was wrong.
        what: &'static str,
        /// Where.
        addr: u64,
    },
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
