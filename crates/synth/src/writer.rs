//! Writes one per-CPU stream of the synth layout: LTTng packets of a fixed size with compact
//! event headers (extended when the id is above 30 or the time since the previous event does
//! not fit 27 bits), and an LTTng `index/*.idx` file beside it.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use tracelens_ctf::ir::ByteOrder;
use tracelens_ctf::write::BitWriter;
use tracelens_ctf::{IDX_MAGIC, PACKET_MAGIC};

use crate::schema::{Kind, EVENTS};

const LE: ByteOrder = ByteOrder::Little;
/// Bits of the packet header and context (header 32+128+32+64, context 6*64+32).
const HEADER_BITS: u64 = 256 + 416;

/// A field value to encode.
#[derive(Clone, Copy, Debug)]
pub enum V<'s> {
    /// An integer (any integer kind).
    I(i64),
    /// A string or task name.
    S(&'s str),
}

/// One stream file being written.
pub struct StreamWriter {
    out: BufWriter<File>,
    idx: BufWriter<File>,
    packet_bytes: u64,
    cpu: u32,
    uuid: [u8; 16],
    buf: BitWriter,
    event: BitWriter,
    seq: u64,
    offset: u64,
    begin: u64,
    last_ts: u64,
    open: bool,
    /// Events written so far.
    pub events: u64,
}

impl StreamWriter {
    /// Creates `dir/channel0_CPU` and `dir/index/channel0_CPU.idx`.
    pub fn create(dir: &Path, cpu: u32, uuid: [u8; 16], packet_bytes: u64) -> std::io::Result<StreamWriter> {
        let name = format!("channel0_{cpu}");
        let out = BufWriter::with_capacity(1 << 20, File::create(dir.join(&name))?);
        let mut idx = BufWriter::new(File::create(dir.join("index").join(format!("{name}.idx")))?);
        idx.write_all(&IDX_MAGIC.to_be_bytes())?;
        idx.write_all(&1u32.to_be_bytes())?;
        idx.write_all(&1u32.to_be_bytes())?;
        idx.write_all(&72u32.to_be_bytes())?;
        Ok(StreamWriter {
            out,
            idx,
            packet_bytes,
            cpu,
            uuid,
            buf: BitWriter::new(),
            event: BitWriter::new(),
            seq: 0,
            offset: 0,
            begin: 0,
            last_ts: 0,
            open: false,
            events: 0,
        })
    }

    fn open_packet(&mut self, ts: u64) {
        self.buf.clear();
        self.buf.uint(PACKET_MAGIC, 32, LE);
        self.buf.bytes_aligned(&self.uuid);
        self.buf.uint(0, 32, LE); // stream_id
        self.buf.uint(self.cpu as u64, 64, LE); // stream_instance_id
        self.buf.uint(ts, 64, LE); // timestamp_begin
        self.buf.uint(0, 64, LE); // timestamp_end (patched)
        self.buf.uint(0, 64, LE); // content_size (patched)
        self.buf.uint(self.packet_bytes * 8, 64, LE);
        self.buf.uint(self.seq, 64, LE);
        self.buf.uint(0, 64, LE); // events_discarded
        self.buf.uint(self.cpu as u64, 32, LE);
        debug_assert_eq!(self.buf.position(), HEADER_BITS);
        self.begin = ts;
        self.last_ts = ts;
        self.open = true;
    }

    fn close_packet(&mut self) -> std::io::Result<()> {
        if !self.open {
            return Ok(());
        }
        let content = self.buf.position();
        let end = self.last_ts;
        let b = self.buf.bytes_mut();
        b[40..48].copy_from_slice(&end.to_le_bytes());
        b[48..56].copy_from_slice(&content.to_le_bytes());
        self.buf.pad_to(self.packet_bytes * 8);
        self.out.write_all(self.buf.bytes())?;
        for v in [self.offset, self.packet_bytes * 8, content, self.begin, end, 0, 0, self.cpu as u64, self.seq] {
            self.idx.write_all(&v.to_be_bytes())?;
        }
        self.offset += self.packet_bytes;
        self.seq += 1;
        self.open = false;
        Ok(())
    }

    /// Appends an event of class `id` at time `ts` (cycles = ns) with `values` in the class's
    /// field order.
    pub fn event(&mut self, id: u32, ts: u64, values: &[V<'_>]) -> std::io::Result<()> {
        let ts = ts.max(self.last_ts);
        let fields = EVENTS[id as usize].1;
        debug_assert_eq!(fields.len(), values.len(), "{}", EVENTS[id as usize].0);
        // Encode the payload once, aligned as it will be in the packet (all fields are
        // byte-aligned, so its layout does not depend on where it lands).
        self.event.clear();
        for ((_, kind), v) in fields.iter().zip(values) {
            match (kind, v) {
                (Kind::I32 | Kind::U32, V::I(x)) => self.event.uint(*x as u64, 32, LE),
                (Kind::U16, V::I(x)) => self.event.uint(*x as u64, 16, LE),
                (Kind::I64 | Kind::U64 | Kind::Hex64, V::I(x)) => self.event.uint(*x as u64, 64, LE),
                (Kind::Comm, V::S(s)) => {
                    let mut c = [0u8; 16];
                    let n = s.len().min(15);
                    c[..n].copy_from_slice(&s.as_bytes()[..n]);
                    self.event.bytes_aligned(&c);
                }
                (Kind::Str, V::S(s)) => self.event.string(s.as_bytes()),
                _ => self.event.uint(0, 32, LE),
            }
        }
        let compact = id < 31 && ts - self.last_ts < (1 << 27);
        let header_bits: u64 = if compact { 32 } else { 8 + 32 + 64 };
        let need = 8 + header_bits + self.event.position() + 64;
        if self.open && self.buf.position() + need > self.packet_bytes * 8 {
            self.close_packet()?;
        }
        if !self.open {
            self.open_packet(ts);
        }
        let compact = id < 31 && ts - self.last_ts < (1 << 27);
        self.buf.align(8);
        if compact {
            self.buf.uint(id as u64, 5, LE);
            self.buf.uint(ts & ((1 << 27) - 1), 27, LE);
        } else {
            self.buf.uint(31, 5, LE);
            self.buf.align(8);
            self.buf.uint(id as u64, 32, LE);
            self.buf.uint(ts, 64, LE);
        }
        self.buf.bytes_aligned(self.event.bytes());
        self.last_ts = ts;
        self.events += 1;
        Ok(())
    }

    /// Writes the last packet and flushes both files.
    pub fn finish(mut self) -> std::io::Result<u64> {
        self.close_packet()?;
        self.out.flush()?;
        self.idx.flush()?;
        Ok(self.events)
    }
}
