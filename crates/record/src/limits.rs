//! What keeps a recording from filling a disk: a limit on the spool (pages saved and not
//! converted yet, see [`crate::spool`]) and a reserve of free space on the output's file
//! system. When either is reached, or a write finds the disk full, the recording stops early
//! ([`CutShort`]): tracing is turned off, what was saved is converted, and the recorded command
//! runs on.

use std::fmt;
use std::path::PathBuf;

/// Why a recording stopped before its target ended.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CutShort {
    /// The spool held more pages not converted yet than
    /// [`RecordOptions::max_spool`](crate::RecordOptions::max_spool) allows: the converter
    /// could not keep up with the event rate.
    SpoolLimit {
        /// Bytes of pages waiting when the recording stopped.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The output's file system had less free space than
    /// [`RecordOptions::min_free`](crate::RecordOptions::min_free).
    LowSpace {
        /// The output directory.
        path: PathBuf,
        /// Bytes free when the recording stopped.
        free: u64,
        /// The reserve.
        min_free: u64,
    },
    /// Writing the spool failed because the disk is full (or a quota is reached).
    DiskFull {
        /// The file that could not be written.
        path: PathBuf,
        /// The system's message.
        message: String,
    },
}

impl fmt::Display for CutShort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CutShort::SpoolLimit { bytes, limit } => write!(
                f,
                "the spool reached {} of pages not converted yet (limit {}): the converter cannot keep up with this event rate \
                 (record fewer events with -e, or raise --max-spool)",
                mib(*bytes),
                mib(*limit)
            ),
            CutShort::LowSpace { path, free, min_free } => write!(
                f,
                "only {} left on the file system of {} (the recorder keeps {} free, see --min-free)",
                mib(*free),
                path.display(),
                mib(*min_free)
            ),
            CutShort::DiskFull { path, message } => write!(f, "the disk is full: {}: {message}", path.display()),
        }
    }
}

/// `bytes` in MiB, one decimal.
fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// Whether `e` says that the disk (or the user's quota) is full.
pub(crate) fn is_disk_full(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_limit_and_the_option() {
        let s = CutShort::SpoolLimit { bytes: 3 << 20, limit: 2 << 20 }.to_string();
        assert!(s.contains("3.0 MiB") && s.contains("limit 2.0 MiB") && s.contains("--max-spool"), "{s}");
        let s = CutShort::LowSpace { path: "/mnt/x".into(), free: 1 << 20, min_free: 256 << 20 }.to_string();
        assert!(s.contains("/mnt/x") && s.contains("1.0 MiB left") && s.contains("--min-free"), "{s}");
        assert!(is_disk_full(&std::io::Error::from_raw_os_error(libc::ENOSPC)));
        assert!(!is_disk_full(&std::io::Error::from_raw_os_error(libc::EIO)));
    }
}
