//! Writing LTTng packet index files (`index/NAME.idx`, format 1.1: a 16-byte header, then one
//! 72-byte big-endian entry per packet), the files [`crate::read_idx`] reads.

use std::io::Write;

use crate::packet::{IdxEntry, IDX_MAGIC};

/// Size of an index entry of format 1.1, in bytes.
const ENTRY_LEN: u32 = 72;

/// An index sink: the header is written when it is created, then one entry per packet.
#[derive(Debug)]
pub(super) struct IndexWriter<W: Write> {
    pub out: W,
}

impl<W: Write> IndexWriter<W> {
    /// Writes the index header to `out`.
    pub fn new(mut out: W) -> std::io::Result<IndexWriter<W>> {
        let mut head = [0u8; 16];
        head[0..4].copy_from_slice(&IDX_MAGIC.to_be_bytes());
        head[4..8].copy_from_slice(&1u32.to_be_bytes());
        head[8..12].copy_from_slice(&1u32.to_be_bytes());
        head[12..16].copy_from_slice(&ENTRY_LEN.to_be_bytes());
        out.write_all(&head)?;
        Ok(IndexWriter { out })
    }

    /// Appends the entry of one packet (sizes in bits, as the entry holds them).
    pub fn entry(&mut self, e: &IdxEntry) -> std::io::Result<()> {
        let values = [
            e.offset,
            e.packet_size,
            e.content_size,
            e.begin,
            e.end,
            e.events_discarded,
            e.stream_id,
            e.stream_instance_id.unwrap_or(0),
            e.seq_num.unwrap_or(0),
        ];
        let mut raw = [0u8; ENTRY_LEN as usize];
        for (k, v) in values.iter().enumerate() {
            raw[k * 8..k * 8 + 8].copy_from_slice(&v.to_be_bytes());
        }
        self.out.write_all(&raw)
    }
}
