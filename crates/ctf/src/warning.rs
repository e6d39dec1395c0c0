//! What a reader met that did not stop it but that its user must know: files of a trace
//! directory that were not read, stream files shorter than their index says, index entries
//! that disagree with the packets they describe. Data is never lost silently: every file
//! skipped and every packet missing is in a [`Warning`] ([`crate::Trace::warnings`]).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Something about a trace that its events do not show.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Warning {
    /// An entry of the trace directory that could be a stream file was not read: it is not
    /// a regular file (a directory, a FIFO, a device, a socket, a link to one of them), or it
    /// cannot be examined (a broken link, a link loop).
    SkippedFile {
        /// The entry.
        path: PathBuf,
        /// What it is, or why it cannot be examined.
        reason: String,
    },
    /// A stream file ends before the packets its LTTng index lists: the packets it holds are
    /// read, the others are missing.
    ShortStream {
        /// The stream file.
        path: PathBuf,
        /// Packets the index lists.
        listed_packets: u64,
        /// Bytes the index lists.
        listed_bytes: u64,
        /// Packets the file holds.
        packets: u64,
        /// Bytes the file holds.
        bytes: u64,
    },
    /// An LTTng index was not used because it disagrees with its stream file; the packets
    /// were found from their own headers instead (nothing is lost).
    IndexIgnored {
        /// The index file.
        index: PathBuf,
        /// How it disagrees.
        reason: String,
    },
    /// Packets whose header and context disagree with their index entries: they were read as
    /// their headers say (as babeltrace2 does).
    IndexMismatch {
        /// The stream file (of the first such packet).
        path: PathBuf,
        /// How many packets.
        packets: u64,
        /// The first one: its number in the stream.
        first_packet: u64,
        /// Its byte offset in the file.
        offset: u64,
        /// What the index and the packet say.
        detail: String,
    },
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::SkippedFile { path, reason } => write!(f, "{}: {reason}: not read as a stream file", path.display()),
            Warning::ShortStream { path, listed_packets, listed_bytes, packets, bytes } => write!(
                f,
                "{}: the file has {bytes} bytes ({packets} packets) but its index lists {listed_bytes} bytes ({listed_packets} packets): \
                 {} packets are missing (the file was cut short)",
                path.display(),
                listed_packets.saturating_sub(*packets)
            ),
            Warning::IndexIgnored { index, reason } => {
                write!(f, "{}: {reason}: not used (the packets were found from their headers)", index.display())
            }
            Warning::IndexMismatch { path, packets, first_packet, offset, detail } => write!(
                f,
                "{}: {packets} packet{} disagree{} with the index (read as the packet headers say); first: packet {first_packet}, byte {offset}: {detail}",
                path.display(),
                if *packets == 1 { "" } else { "s" },
                if *packets == 1 { "s" } else { "" },
            ),
        }
    }
}

/// The index mismatches found in one stream by the cursors that read it (any number, on any
/// threads), each packet counted once.
#[derive(Debug, Default)]
pub(crate) struct IndexRepairs {
    /// One bit per packet of the stream.
    seen: Box<[AtomicU64]>,
    count: AtomicU64,
    /// The first packet (lowest number) found, with its file, offset and detail.
    first: Mutex<Option<(u64, PathBuf, u64, String)>>,
}

impl IndexRepairs {
    /// Room for a stream of `packets` packets.
    pub(crate) fn new(packets: usize) -> IndexRepairs {
        IndexRepairs { seen: (0..packets.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(), ..IndexRepairs::default() }
    }

    /// Packet `packet` (at `offset` of `path`) disagrees with its index entry: `detail`.
    pub(crate) fn note(&self, packet: usize, path: &std::path::Path, offset: u64, detail: impl FnOnce() -> String) {
        let Some(word) = self.seen.get(packet / 64) else { return };
        let bit = 1u64 << (packet % 64);
        if word.fetch_or(bit, Ordering::Relaxed) & bit != 0 {
            return;
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        let mut first = self.first.lock().unwrap_or_else(|p| p.into_inner());
        if first.as_ref().is_none_or(|f| f.0 > packet as u64) {
            *first = Some((packet as u64, path.to_path_buf(), offset, detail()));
        }
    }

    /// The warning, when a mismatch was found.
    pub(crate) fn warning(&self) -> Option<Warning> {
        let first = self.first.lock().unwrap_or_else(|p| p.into_inner());
        let (first_packet, path, offset, detail) = first.clone()?;
        Some(Warning::IndexMismatch { path, packets: self.count.load(Ordering::Relaxed), first_packet, offset, detail })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repairs_count_each_packet_once_and_keep_the_first() {
        let r = IndexRepairs::new(130);
        assert_eq!(r.warning(), None);
        r.note(129, "s".as_ref(), 900, || "late".into());
        r.note(70, "s".as_ref(), 700, || "early".into());
        r.note(129, "s".as_ref(), 900, || unreachable!("counted once"));
        r.note(500, "s".as_ref(), 0, || unreachable!("not a packet of the stream"));
        let w = r.warning().unwrap();
        assert_eq!(w, Warning::IndexMismatch { path: "s".into(), packets: 2, first_packet: 70, offset: 700, detail: "early".into() });
        assert_eq!(w.to_string(), "s: 2 packets disagree with the index (read as the packet headers say); first: packet 70, byte 700: early");
    }
}
