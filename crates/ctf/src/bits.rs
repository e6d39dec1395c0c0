//! Reading integers at arbitrary bit offsets in either byte order.
//!
//! CTF packs fields at bit granularity: a little-endian field starts at the least significant
//! unread bit of the current byte, a big-endian one at the most significant. Byte-aligned
//! fields of 8/16/32/64 bits take a fast path; everything else goes through [`read_bits`].

use crate::ir::ByteOrder;

/// Reads `size` (1..=64) bits at bit offset `bit` of `data`. The caller checks bounds:
/// `bit + size <= data.len() * 8`.
#[inline]
pub fn read_uint(data: &[u8], bit: u64, size: u32, bo: ByteOrder) -> u64 {
    if bit.is_multiple_of(8) {
        let at = (bit / 8) as usize;
        match (size, bo) {
            (8, _) => return data[at] as u64,
            (16, ByteOrder::Little) => return u16::from_le_bytes([data[at], data[at + 1]]) as u64,
            (16, ByteOrder::Big) => return u16::from_be_bytes([data[at], data[at + 1]]) as u64,
            (32, ByteOrder::Little) => return u32::from_le_bytes(arr4(data, at)) as u64,
            (32, ByteOrder::Big) => return u32::from_be_bytes(arr4(data, at)) as u64,
            (64, ByteOrder::Little) => return u64::from_le_bytes(arr8(data, at)),
            (64, ByteOrder::Big) => return u64::from_be_bytes(arr8(data, at)),
            _ => {}
        }
    }
    read_bits(data, bit, size, bo)
}

#[inline]
fn arr4(data: &[u8], at: usize) -> [u8; 4] {
    let mut a = [0u8; 4];
    a.copy_from_slice(&data[at..at + 4]);
    a
}

#[inline]
fn arr8(data: &[u8], at: usize) -> [u8; 8] {
    let mut a = [0u8; 8];
    a.copy_from_slice(&data[at..at + 8]);
    a
}

/// The slow path of [`read_uint`]: any offset, any size up to 64 bits.
#[inline]
pub fn read_bits(data: &[u8], bit: u64, size: u32, bo: ByteOrder) -> u64 {
    debug_assert!((1..=64).contains(&size));
    let first = (bit / 8) as usize;
    let shift = (bit % 8) as u32;
    // Common case: the field fits in one unaligned 8-byte load.
    if shift + size <= 64 {
        if let Some(b) = data.get(first..first + 8) {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            let mask = if size == 64 { u64::MAX } else { (1u64 << size) - 1 };
            return match bo {
                ByteOrder::Little => (u64::from_le_bytes(a) >> shift) & mask,
                ByteOrder::Big => (u64::from_be_bytes(a) >> (64 - shift - size)) & mask,
            };
        }
    }
    read_bits_bytewise(data, first, shift, size, bo)
}

#[cold]
fn read_bits_bytewise(data: &[u8], first: usize, shift: u32, size: u32, bo: ByteOrder) -> u64 {
    let nbytes = (shift + size).div_ceil(8) as usize;
    let mut acc: u128 = 0;
    match bo {
        ByteOrder::Little => {
            for (i, b) in data[first..first + nbytes].iter().enumerate() {
                acc |= (*b as u128) << (8 * i);
            }
            acc >>= shift;
        }
        ByteOrder::Big => {
            for b in &data[first..first + nbytes] {
                acc = (acc << 8) | *b as u128;
            }
            let total = nbytes as u32 * 8;
            acc >>= total - shift - size;
        }
    }
    let mask = if size == 64 { u64::MAX } else { (1u64 << size) - 1 };
    acc as u64 & mask
}

/// Sign-extends the low `size` bits of `v`.
#[inline]
pub fn sign_extend(v: u64, size: u32) -> i64 {
    if size >= 64 {
        v as i64
    } else {
        let s = 64 - size;
        ((v << s) as i64) >> s
    }
}

/// Rounds `bit` up to a multiple of `align` (a power of two, in bits).
#[inline]
pub fn align_up(bit: u64, align: u32) -> u64 {
    let a = align.max(1) as u64;
    (bit + a - 1) & !(a - 1)
}

/// The index of the first NUL byte of `bytes`, eight bytes at a time.
#[inline(always)]
pub(crate) fn nul_at(bytes: &[u8]) -> Option<usize> {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut i = 0;
    while let Some(chunk) = bytes.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        // The lowest byte flagged here is exactly the first zero byte (borrows only propagate
        // upwards from a zero byte).
        let z = w.wrapping_sub(LOW) & !w & HIGH;
        if z != 0 {
            return Some(i + (z.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    bytes.get(i..)?.iter().position(|&c| c == 0).map(|n| i + n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn aligned_fast_path_matches_slow_path() {
        let data: Vec<u8> = (0..16u8).map(|i| i.wrapping_mul(37).wrapping_add(11)).collect();
        for bo in [ByteOrder::Little, ByteOrder::Big] {
            for size in [8, 16, 32, 64] {
                for byte in 0..4u64 {
                    assert_eq!(read_uint(&data, byte * 8, size, bo), read_bits(&data, byte * 8, size, bo));
                }
            }
        }
    }

    #[test]
    fn unaligned_load_matches_bytewise() {
        let data: Vec<u8> = (0..24u8).map(|i| i.wrapping_mul(151).wrapping_add(7)).collect();
        for bo in [ByteOrder::Little, ByteOrder::Big] {
            for bit in 0..64u64 {
                for size in 1..=64u32 {
                    let fast = read_bits(&data, bit, size, bo);
                    let slow = read_bits_bytewise(&data, (bit / 8) as usize, (bit % 8) as u32, size, bo);
                    assert_eq!(fast, slow, "{bo:?} bit {bit} size {size}");
                }
            }
        }
    }

    #[test]
    fn little_endian_bitfields() {
        // 0b1010_1100: low 3 bits = 0b100, next 5 bits = 0b10101.
        let data = [0b1010_1100u8, 0xff];
        assert_eq!(read_bits(&data, 0, 3, ByteOrder::Little), 0b100);
        assert_eq!(read_bits(&data, 3, 5, ByteOrder::Little), 0b10101);
        assert_eq!(read_bits(&data, 6, 4, ByteOrder::Little), 0b1110);
    }

    #[test]
    fn big_endian_bitfields() {
        let data = [0b1010_1100u8, 0b0111_0000];
        assert_eq!(read_bits(&data, 0, 3, ByteOrder::Big), 0b101);
        assert_eq!(read_bits(&data, 3, 5, ByteOrder::Big), 0b01100);
        assert_eq!(read_bits(&data, 6, 4, ByteOrder::Big), 0b0001);
    }

    #[test]
    fn sign_extension_and_alignment() {
        assert_eq!(sign_extend(0b111, 3), -1);
        assert_eq!(sign_extend(0b011, 3), 3);
        assert_eq!(sign_extend(u64::MAX, 64), -1);
        assert_eq!(align_up(9, 8), 16);
        assert_eq!(align_up(16, 8), 16);
        assert_eq!(align_up(5, 1), 5);
    }

    #[test]
    fn nul_at_finds_the_first_nul() {
        assert_eq!(nul_at(b""), None);
        assert_eq!(nul_at(b"abc"), None);
        assert_eq!(nul_at(b"\0"), Some(0));
        assert_eq!(nul_at(b"swapper/0\0app\0"), Some(9));
        // A 0x01 byte after a NUL must not hide it (the borrow of the SWAR test).
        assert_eq!(nul_at(b"abcdefg\0\x01bc"), Some(7));
        assert_eq!(nul_at(&[0x80, 0x01, 0x00, 0xff, 0, 0, 0, 0, 0]), Some(2));
    }

    proptest! {
        #[test]
        fn nul_at_is_position(bytes in proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(0x80u8), any::<u8>()], 0..40)) {
            prop_assert_eq!(nul_at(&bytes), bytes.iter().position(|&c| c == 0));
        }
    }
}
