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

    /// Pads with zero bits up to a multiple of `align` bits, a multiple of 8 (so the position
    /// ends on a byte boundary).
    #[inline]
    pub fn align_bytes(&mut self, align: u32) {
        debug_assert!(align.is_multiple_of(8) && align > 0);
        let a = align as u64;
        let bit = (self.bit + a - 1) & !(a - 1);
        if bit != self.bit {
            self.bit = bit;
            self.buf.resize((bit / 8) as usize, 0);
        }
    }

    /// Appends the low `n` (1..=8) bytes of `v` in byte order `bo`, at a byte-aligned position.
    #[inline]
    pub fn push_uint(&mut self, v: u64, n: usize, bo: ByteOrder) {
        debug_assert!(self.bit.is_multiple_of(8) && self.buf.len() as u64 == self.bit / 8 && (1..=8).contains(&n));
        match bo {
            ByteOrder::Little => self.buf.extend_from_slice(&v.to_le_bytes()[..n]),
            ByteOrder::Big => self.buf.extend_from_slice(&v.to_be_bytes()[8 - n..]),
        }
        self.bit += 8 * n as u64;
    }

    /// Appends bytes at a byte-aligned position.
    #[inline]
    pub fn push_bytes(&mut self, b: &[u8]) {
        debug_assert!(self.bit.is_multiple_of(8) && self.buf.len() as u64 == self.bit / 8);
        self.buf.extend_from_slice(b);
        self.bit += 8 * b.len() as u64;
    }

    /// Appends `n` zero bytes at a byte-aligned position.
    #[inline]
    pub fn push_zeros(&mut self, n: usize) {
        debug_assert!(self.bit.is_multiple_of(8) && self.buf.len() as u64 == self.bit / 8);
        self.buf.resize(self.buf.len() + n, 0);
        self.bit += 8 * n as u64;
    }

    /// Writes the low `size` bits (1..=64) of `v`.
    pub fn uint(&mut self, v: u64, size: u32, bo: ByteOrder) {
        debug_assert!((1..=64).contains(&size));
        let v = if size == 64 { v } else { v & ((1u64 << size) - 1) };
        if self.bit.is_multiple_of(8) && size.is_multiple_of(8) {
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
        // Read-modify-write the bytes the field touches, the mirror of `bits::read_bits`.
        let first = (self.bit / 8) as usize;
        let shift = (self.bit % 8) as u32;
        let nbytes = (shift + size).div_ceil(8) as usize;
        let bytes = &mut self.buf[first..first + nbytes];
        if bo == ByteOrder::Little && shift + size <= 64 {
            // Fits one 64-bit word (LTTng's 5-bit id and 27-bit timestamp): one read-modify-write.
            let mut word = [0u8; 8];
            word[..nbytes].copy_from_slice(bytes);
            let acc = u64::from_le_bytes(word);
            let m = if size == 64 { u64::MAX } else { (1u64 << size) - 1 };
            let acc = (acc & !(m << shift)) | (v << shift);
            bytes.copy_from_slice(&acc.to_le_bytes()[..nbytes]);
            self.bit += size as u64;
            return;
        }
        let mask = if size == 64 { u64::MAX as u128 } else { (1u128 << size) - 1 };
        match bo {
            ByteOrder::Little => {
                let mut acc: u128 = 0;
                for (i, b) in bytes.iter().enumerate() {
                    acc |= (*b as u128) << (8 * i);
                }
                acc = (acc & !(mask << shift)) | ((v as u128) << shift);
                for (i, b) in bytes.iter_mut().enumerate() {
                    *b = (acc >> (8 * i)) as u8;
                }
            }
            ByteOrder::Big => {
                let mut acc: u128 = 0;
                for b in bytes.iter() {
                    acc = (acc << 8) | *b as u128;
                }
                let low = nbytes as u32 * 8 - shift - size;
                acc = (acc & !(mask << low)) | ((v as u128) << low);
                for (i, b) in bytes.iter_mut().enumerate() {
                    *b = (acc >> (8 * (nbytes - 1 - i))) as u8;
                }
            }
        }
        self.bit += size as u64;
    }

    /// Overwrites the `size` bits (1..=64) at bit offset `bit` — a field written earlier —
    /// with the low bits of `v`; the position does not change (to patch sizes and times).
    pub fn patch_uint(&mut self, bit: u64, v: u64, size: u32, bo: ByteOrder) {
        let saved = self.bit;
        self.bit = bit;
        self.uint(v, size, bo);
        self.bit = saved.max(self.bit);
    }

    /// Moves the position back to `bit` (at most the current position), dropping every byte
    /// after the one holding it. Bits of that last byte written after `bit` are kept: a caller
    /// rolling back saves and restores that byte (see [`BitWriter::byte_at`]).
    pub fn truncate(&mut self, bit: u64) {
        if bit < self.bit {
            self.bit = bit;
            self.buf.truncate(bit.div_ceil(8) as usize);
        }
    }

    /// The byte holding bit `bit` (0 past the end).
    pub fn byte_at(&self, bit: u64) -> u8 {
        self.buf.get((bit / 8) as usize).copied().unwrap_or(0)
    }

    /// Overwrites the byte holding bit `bit`, if it was written.
    pub fn set_byte_at(&mut self, bit: u64, byte: u8) {
        if let Some(b) = self.buf.get_mut((bit / 8) as usize) {
            *b = byte;
        }
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
