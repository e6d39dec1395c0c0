//! The packet index of a stream file: where each packet starts, how big it is, and what its
//! context says (timestamps, discarded-event counter, sequence number).
//!
//! Packets come from LTTng's `index/<file>.idx` when that file is present and agrees with the
//! stream file; otherwise (or when it is invalid) they are found by walking the packet headers
//! and contexts (`packet_size`, `content_size`).

use std::path::Path;

use crate::decode::{Decoder, Specials};
use crate::plan::StreamPlan;
use crate::value::Field;

/// CTF's packet magic number.
pub const PACKET_MAGIC: u64 = 0xC1FC_1FC1;

/// One packet of a stream file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PacketEntry {
    /// Index of the file in its stream's file list.
    pub file: u32,
    /// Byte offset of the packet in its file.
    pub offset: u64,
    /// Packet size in bytes (what to skip to reach the next packet).
    pub size: u64,
    /// Content size in bits (where events stop).
    pub content_bits: u64,
    /// Bit offset, from the packet start, of the first event (after header and context).
    pub events_bits: u64,
    /// Stream class id.
    pub stream_class_id: u64,
    /// Stream instance id from the packet header.
    pub stream_instance_id: Option<u64>,
    /// `timestamp_begin`, in clock cycles.
    pub begin: Option<u64>,
    /// `timestamp_end`, in clock cycles.
    pub end: Option<u64>,
    /// Discarded-event counter (cumulative for the stream).
    pub events_discarded: Option<u64>,
    /// Packet sequence number.
    pub seq_num: Option<u64>,
}

/// Why a packet could not be indexed: a byte offset in the file and a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexError {
    /// 0-based packet number.
    pub packet: u64,
    /// Byte offset in the file.
    pub offset: u64,
    /// What is wrong.
    pub message: String,
}

/// Reads the packet header and context of the packet at `offset` of `data` (the whole file)
/// and returns its entry. `plans` are the trace's stream classes; `pick` maps a stream id to
/// the index of its plan. `fields` receives the decoded header and context values.
pub(crate) fn read_packet<'a>(
    data: &'a [u8],
    offset: u64,
    packet: u64,
    plans: &'a [StreamPlan],
    trace_uuid: Option<[u8; 16]>,
    fields: &mut Vec<Field<'a>>,
    decoder_slot: &mut Option<Decoder<'a>>,
) -> Result<(PacketEntry, usize), IndexError> {
    let fail = |bit: u64, message: String| IndexError { packet, offset: offset + bit / 8, message };
    let rest = &data[offset as usize..];
    let remaining_bits = rest.len() as u64 * 8;
    let Some(first) = plans.first() else {
        return Err(fail(0, "the metadata declares no stream class".into()));
    };
    // Decode the (trace-level) header once with any plan to learn the stream class.
    let mut probe = Decoder::new(first);
    probe.start_packet(rest, remaining_bits);
    let mut scratch = Vec::new();
    if let Some(h) = first.packet_header {
        probe.decode(h, &mut scratch).map_err(|e| fail(e.bit, format!("packet header: {}", e.message)))?;
    }
    let sid = probe.specials.stream_id.unwrap_or(0);
    let plan_index = plans
        .iter()
        .position(|p| p.stream_class_id == sid)
        .or_else(|| (plans.len() == 1 && probe.specials.stream_id.is_none()).then_some(0))
        .ok_or_else(|| fail(0, format!("packet header names stream class {sid}, which the metadata does not declare")))?;
    let plan = &plans[plan_index];
    let dec = match decoder_slot {
        Some(d) if std::ptr::eq(d.plan(), plan) => d,
        _ => decoder_slot.insert(Decoder::new(plan)),
    };
    dec.start_packet(rest, remaining_bits);
    dec.specials = Specials::default();
    fields.clear();
    if let Some(h) = plan.packet_header {
        dec.decode(h, fields).map_err(|e| fail(e.bit, format!("packet header: {}", e.message)))?;
    }
    let sp = dec.specials;
    if let Some(magic) = sp.magic {
        if magic != PACKET_MAGIC {
            return Err(fail(0, format!("bad packet magic {magic:#x} (expected {PACKET_MAGIC:#x})")));
        }
    }
    if let (Some(at), Some(want)) = (sp.uuid_at, trace_uuid) {
        let at = (at / 8) as usize;
        if let Some(got) = rest.get(at..at + 16).and_then(|b| <[u8; 16]>::try_from(b).ok()).filter(|got| *got != want) {
            let (got, want) = (crate::ir::uuid_string(&got), crate::ir::uuid_string(&want));
            return Err(fail(at as u64 * 8, format!("packet UUID {got} is not the trace's {want} (a stream file of another trace?)")));
        }
    }
    if let Some(c) = plan.packet_context {
        dec.decode(c, fields).map_err(|e| fail(e.bit, format!("packet context: {}", e.message)))?;
    }
    let sp = dec.specials;
    let events_bits = dec.pos;
    let packet_bits = match (sp.packet_size, sp.content_size) {
        (Some(p), _) => p,
        (None, Some(c)) => c.div_ceil(8).saturating_mul(8),
        (None, None) => remaining_bits,
    };
    let content_bits = sp.content_size.unwrap_or(packet_bits);
    if packet_bits == 0 || packet_bits % 8 != 0 {
        return Err(fail(0, format!("packet size {packet_bits} bits is not a positive whole number of bytes")));
    }
    if packet_bits > remaining_bits {
        return Err(fail(0, format!("packet size {} bytes runs past the end of the file ({} bytes left)", packet_bits / 8, remaining_bits / 8)));
    }
    if content_bits > packet_bits {
        return Err(fail(0, format!("content size {content_bits} bits is larger than the packet size {packet_bits} bits")));
    }
    if content_bits < events_bits {
        return Err(fail(0, format!("content size {content_bits} bits is smaller than the packet header and context ({events_bits} bits)")));
    }
    let entry = PacketEntry {
        file: 0,
        offset,
        size: packet_bits / 8,
        content_bits,
        events_bits,
        stream_class_id: plan.stream_class_id,
        stream_instance_id: sp.stream_instance_id,
        begin: sp.packet_begin,
        end: sp.packet_end,
        events_discarded: sp.events_discarded,
        seq_num: sp.packet_seq_num,
    };
    Ok((entry, plan_index))
}

/// The UUID in the header of the packet at the start of `data` (a stream file), if the packet
/// header has one.
pub(crate) fn first_uuid(data: &[u8], plans: &[StreamPlan]) -> Option<[u8; 16]> {
    let plan = plans.first()?;
    let header = plan.packet_header?;
    let mut dec = Decoder::new(plan);
    dec.start_packet(data, data.len() as u64 * 8);
    dec.decode(header, &mut Vec::new()).ok()?;
    let at = (dec.specials.uuid_at? / 8) as usize;
    data.get(at..at + 16)?.try_into().ok()
}

/// The UUID every packet of a trace must carry, given the metadata's and the one in the first
/// packet of each stream file: the metadata's, unless no file carries it and they all carry
/// one other UUID — the metadata's is then stale, and the files' is the trace's (babeltrace2
/// reads such traces, e.g. babeltrace's own `intersection` test traces; babeltrace 1 rejects
/// them). Files that disagree with it are reported (a stream file of another trace).
pub(crate) fn packets_uuid(metadata: Option<[u8; 16]>, files: impl IntoIterator<Item = Option<[u8; 16]>>) -> Option<[u8; 16]> {
    let metadata = metadata?;
    let mut seen = None;
    for u in files.into_iter().flatten() {
        if u == metadata || seen.is_some_and(|s| s != u) {
            return Some(metadata);
        }
        seen = Some(u);
    }
    Some(seen.unwrap_or(metadata))
}

/// Indexes every packet of a stream file by walking headers. Returns the entries and the
/// index of the plan (stream class) of the file's packets.
/// `release(start, end)` is called as the walk moves on, so the caller can drop pages it read.
pub(crate) fn walk(
    data: &[u8],
    plans: &[StreamPlan],
    trace_uuid: Option<[u8; 16]>,
    release: &mut dyn FnMut(usize, usize),
) -> Result<(Vec<PacketEntry>, Option<usize>), IndexError> {
    let mut released = 0u64;
    let mut out = Vec::new();
    let mut offset = 0u64;
    let mut plan_index = None;
    let mut fields = Vec::new();
    let mut dec = None;
    while offset < data.len() as u64 {
        let packet = out.len() as u64;
        let (entry, pi) = read_packet(data, offset, packet, plans, trace_uuid, &mut fields, &mut dec)?;
        if *plan_index.get_or_insert(pi) != pi {
            return Err(IndexError { packet, offset, message: "packets of one file belong to different stream classes".into() });
        }
        offset += entry.size;
        out.push(entry);
        if offset - released >= 8 << 20 {
            release(released as usize, offset as usize);
            released = offset;
        }
    }
    release(released as usize, offset as usize);
    Ok((out, plan_index))
}

/// An entry of an LTTng packet index file (`index/NAME.idx`), all values big-endian.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdxEntry {
    /// Byte offset of the packet.
    pub offset: u64,
    /// Packet size in bits.
    pub packet_size: u64,
    /// Content size in bits.
    pub content_size: u64,
    /// `timestamp_begin`.
    pub begin: u64,
    /// `timestamp_end`.
    pub end: u64,
    /// Discarded-event counter.
    pub events_discarded: u64,
    /// Stream class id.
    pub stream_id: u64,
    /// Stream instance id (index format 1.1).
    pub stream_instance_id: Option<u64>,
    /// Packet sequence number (index format 1.1).
    pub seq_num: Option<u64>,
}

/// Magic number of LTTng index files.
pub const IDX_MAGIC: u32 = 0xC1F1_DCC1;

/// Why [`read_idx`] gave no entries.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdxProblem {
    /// There is no index file (or it cannot be read).
    Absent,
    /// Not an index of a format this reader knows (magic number, version): ignored quietly,
    /// as babeltrace does.
    Unknown,
    /// The index contradicts itself or its stream file: what is wrong.
    Inconsistent(String),
    /// The stream file ends before the packets the index lists.
    Short {
        /// Packets listed.
        listed_packets: u64,
        /// Bytes of packets listed.
        listed_bytes: u64,
    },
}

/// Parses an LTTng index file and checks it against a stream file of `file_len` bytes: the
/// entries must be whole, follow each other without gaps, and cover the file exactly. When
/// they do not, says why (the caller then walks the stream instead).
pub fn read_idx(path: &Path, file_len: u64) -> Result<Vec<IdxEntry>, IdxProblem> {
    let bytes = std::fs::read(path).map_err(|_| IdxProblem::Absent)?;
    let be32 = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    let be64 = |at: usize| {
        bytes.get(at..at + 8).map(|b| {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            u64::from_be_bytes(a)
        })
    };
    if be32(0) != Some(IDX_MAGIC) {
        return Err(IdxProblem::Unknown);
    }
    let (Some(major), Some(entry_len)) = (be32(4), be32(12)) else { return Err(IdxProblem::Unknown) };
    let entry_len = entry_len as usize;
    if major != 1 || entry_len < 56 {
        return Err(IdxProblem::Unknown);
    }
    if (bytes.len() - 16) % entry_len != 0 {
        return Err(IdxProblem::Inconsistent(format!("the index ends inside entry {}", (bytes.len() - 16) / entry_len)));
    }
    let word = |at: usize| be64(at).unwrap_or(0);
    let mut out = Vec::with_capacity((bytes.len() - 16) / entry_len);
    let mut expect = 0u64;
    for (n, at) in (16..bytes.len()).step_by(entry_len).enumerate() {
        let e = IdxEntry {
            offset: word(at),
            packet_size: word(at + 8),
            content_size: word(at + 16),
            begin: word(at + 24),
            end: word(at + 32),
            events_discarded: word(at + 40),
            stream_id: word(at + 48),
            stream_instance_id: (entry_len >= 64).then(|| word(at + 56)),
            seq_num: (entry_len >= 72).then(|| word(at + 64)),
        };
        let bad = if e.offset != expect {
            Some(format!("entry {n} is at byte {} of the stream, not {expect} where entry {} ends", e.offset, n.saturating_sub(1)))
        } else if e.packet_size == 0 || !e.packet_size.is_multiple_of(8) {
            Some(format!("entry {n} has a packet size of {} bits", e.packet_size))
        } else if e.content_size > e.packet_size {
            Some(format!("entry {n} has a content size ({} bits) larger than its packet size ({} bits)", e.content_size, e.packet_size))
        } else {
            None
        };
        if let Some(why) = bad {
            return Err(IdxProblem::Inconsistent(why));
        }
        expect = expect.saturating_add(e.packet_size / 8);
        out.push(e);
    }
    if expect > file_len {
        return Err(IdxProblem::Short { listed_packets: out.len() as u64, listed_bytes: expect });
    }
    if expect < file_len {
        return Err(IdxProblem::Inconsistent(format!("it lists {expect} bytes of packets, the stream file has {file_len}")));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::packets_uuid;

    #[test]
    fn packets_carry_the_metadatas_uuid_unless_every_file_agrees_on_another() {
        let (m, a, b) = (Some([1; 16]), Some([2; 16]), Some([3; 16]));
        assert_eq!(packets_uuid(m, [m, a]), m, "a file of another trace beside the trace's own");
        assert_eq!(packets_uuid(m, [a, None, a]), a, "a stale metadata UUID");
        assert_eq!(packets_uuid(m, [a, b]), m, "files of two other traces");
        assert_eq!(packets_uuid(m, [None]), m);
        assert_eq!(packets_uuid(None, [a]), None, "no UUID to check");
    }
}
