//! A growable buffer written at bit granularity, in either byte order.

use crate::ir::ByteOrder;

/// Bytes written field by field, honouring CTF alignment and bit packing.
#[derive(Clone, Debug, Default)]
pub struct BitWriter {
    buf: Vec<u8>,
    bit: u64,
}

impl BitWriter {
    /// An empty buffer.
    pub fn new() -> BitWriter {
        BitWriter::default()
    }

    /// Current position in bits.
    pub fn position(&self) -> u64 {
        self.bit
    }

    /// The bytes written so far (the last byte may be partial).
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Mutable access to written bytes (to patch sizes in place).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    /// Empties the buffer, keeping its capacity.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.bit = 0;
    }

    fn ensure(&mut self, bits: u64) {
        let need = bits.div_ceil(8) as usize;
        if self.buf.len() < need {
            self.buf.resize(need, 0);
        }
    }

    /// Pads with zero bits up to a multiple of `align` bits.
    pub fn align(&mut self, align: u32) {
        let a = align.max(1) as u64;
        self.bit = (self.bit + a - 1) & !(a - 1);
        self.ensure(self.bit);
    }

    /// Pads with zero bytes up to `bits` (a byte multiple) from the start.
    pub fn pad_to(&mut self, bits: u64) {
        if bits > self.bit {
            self.bit = bits;
            self.ensure(bits);
        }
    }

    /// Writes the low `size` bits (1..=64) of `v`.
    pub fn uint(&mut self, v: u64, size: u32, bo: ByteOrder) {
        debug_assert!((1..=64).contains(&size));
        let v = if size == 64 { v } else { v & ((1u64 << size) - 1) };
        if self.bit % 8 == 0 && size % 8 == 0 {
            let n = (size / 8) as usize;
            let at = (self.bit / 8) as usize;
            self.ensure(self.bit + size as u64);
            match bo {
                ByteOrder::Little => self.buf[at..at + n].copy_from_slice(&v.to_le_bytes()[..n]),
                ByteOrder::Big => self.buf[at..at + n].copy_from_slice(&v.to_be_bytes()[8 - n..]),
            }
            self.bit += size as u64;
            return;
        }
        self.ensure(self.bit + size as u64);
        for k in 0..size as u64 {
            let b = match bo {
                ByteOrder::Little => (v >> k) & 1,
                ByteOrder::Big => (v >> (size as u64 - 1 - k)) & 1,
            };
            let pos = self.bit + k;
            let byte = (pos / 8) as usize;
            let shift = match bo {
                ByteOrder::Little => pos % 8,
                ByteOrder::Big => 7 - pos % 8,
            };
            self.buf[byte] = (self.buf[byte] & !(1 << shift)) | ((b as u8) << shift);
        }
        self.bit += size as u64;
    }

    /// Writes raw bytes at a byte-aligned position.
    pub fn bytes_aligned(&mut self, b: &[u8]) {
        self.align(8);
        let at = (self.bit / 8) as usize;
        self.ensure(self.bit + b.len() as u64 * 8);
        self.buf[at..at + b.len()].copy_from_slice(b);
        self.bit += b.len() as u64 * 8;
    }

    /// Writes a NUL-terminated string.
    pub fn string(&mut self, s: &[u8]) {
        self.bytes_aligned(s);
        self.bytes_aligned(&[0]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bits::read_uint;

    #[test]
    fn writes_what_the_reader_reads() {
        for bo in [ByteOrder::Little, ByteOrder::Big] {
            let mut w = BitWriter::new();
            let fields: [(u64, u32); 7] = [(5, 3), (0x1abc, 13), (0xff, 8), (1, 1), (0xdead_beef, 32), (u64::MAX, 64), (0x3_ffff, 27)];
            let mut at = Vec::new();
            for (v, size) in fields {
                at.push(w.position());
                w.uint(v, size, bo);
            }
            for ((v, size), pos) in fields.iter().zip(at) {
                let mask = if *size == 64 { u64::MAX } else { (1 << size) - 1 };
                assert_eq!(read_uint(w.bytes(), pos, *size, bo), v & mask, "{bo:?} {size}");
            }
        }
    }
}
