//! The crate's error type.

use std::path::PathBuf;

/// Everything that can go wrong while recording or converting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No tracefs mount was found and mounting one failed.
    #[error("tracefs is not available: {0}")]
    NoTracefs(String),
    /// tracefs is there but this process may not use it (not root, or locked down).
    #[error("{}: permission denied (recording kernel events needs root or CAP_SYS_ADMIN with a writable tracefs)", path.display())]
    NotPermitted {
        /// The file or directory that refused access.
        path: PathBuf,
    },
    /// A file or directory could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A tracefs event `format` file (or `header_page`) could not be understood.
    #[error("{}: {message}", path.display())]
    Format {
        /// The format file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A ring-buffer page is malformed.
    #[error("cpu {cpu}, page {page}, byte {offset}: {message}")]
    Page {
        /// The CPU whose buffer the page came from.
        cpu: u32,
        /// 0-based page number in that CPU's spool.
        page: u64,
        /// Byte offset in the page.
        offset: usize,
        /// What is wrong.
        message: String,
    },
    /// An event group or event name given to `-e` is unknown.
    #[error("{0}")]
    Events(String),
    /// The command to record could not be started, or the process to attach to is not there.
    #[error("{0}")]
    Target(String),
    /// The output's file system has less free space than the recorder keeps
    /// ([`RecordOptions::min_free`](crate::RecordOptions::min_free)).
    #[error("{0}")]
    NoSpace(String),
    /// User stacks cannot be sampled (`perf_event_open` not available or not permitted).
    #[error("{0}")]
    Stacks(String),
    /// A user-space probe (`--uprobe`) cannot be set.
    #[error("--uprobe: {0}")]
    Uprobe(String),
    /// Writing the CTF output failed.
    #[error(transparent)]
    Ctf(#[from] tracelens_ctf::Error),
    /// The disk holding the output filled before the trace was finished: the recording
    /// stopped, what it had written was removed, and the recorded command was left to run on.
    #[error("the disk is full ({0}): the recording stopped, its partial output was removed, and the command (if any) runs on")]
    DiskFull(Box<Error>),
}

impl Error {
    /// Whether this is a write that found the disk (or the user's quota) full.
    pub fn is_disk_full(&self) -> bool {
        let io = match self {
            Error::Io { source, .. } => source,
            Error::Ctf(tracelens_ctf::Error::Io { source, .. }) => source,
            Error::DiskFull(_) => return true,
            _ => return false,
        };
        crate::limits::is_disk_full(io)
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An [`Error::Io`] for `path`, or [`Error::NotPermitted`] when the OS said so.
pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
    let path = path.into();
    match source.kind() {
        std::io::ErrorKind::PermissionDenied => Error::NotPermitted { path },
        _ => Error::Io { path, source },
    }
}
