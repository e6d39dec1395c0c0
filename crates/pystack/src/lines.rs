//! Line numbers from CPython's three line-table formats (`Objects/lnotab_notes.txt` of each
//! version describes its own).

use crate::layout::LineTable;

/// The source line of the instruction at `offset` of a code object whose first line is
/// `first_line` and whose table is `table` in format `format`. `offset` is in bytes for
/// [`LineTable::Lnotab`] and [`LineTable::Pep626`], in code units (2 bytes) for
/// [`LineTable::Locations`]. None where the table gives the instruction no line (or the
/// offset is outside it).
pub fn line_of(format: LineTable, table: &[u8], first_line: u32, offset: u32) -> Option<u32> {
    match format {
        LineTable::Lnotab => Some(lnotab(table, first_line, offset)),
        LineTable::Pep626 => pep626(table, first_line, offset),
        LineTable::Locations => locations(table, first_line, offset),
    }
}

/// 3.8, 3.9: pairs of (unsigned byte increment, signed line increment); the line of `addr`
/// is the first line plus the line increments of every pair whose address is not past it.
fn lnotab(table: &[u8], first_line: u32, addr: u32) -> u32 {
    let mut line = first_line as i64;
    let mut at = 0u32;
    for pair in table.chunks_exact(2) {
        at += pair[0] as u32;
        if at > addr {
            break;
        }
        line += pair[1] as i8 as i64;
    }
    line.clamp(0, u32::MAX as i64) as u32
}

/// 3.10: pairs of (unsigned byte span, signed line delta, -128 for "no line"); each pair
/// covers `[start, start + span)` bytes.
fn pep626(table: &[u8], first_line: u32, addr: u32) -> Option<u32> {
    let mut line = first_line as i64;
    let mut start = 0u32;
    for pair in table.chunks_exact(2) {
        let end = start + pair[0] as u32;
        let delta = pair[1] as i8;
        let here = if delta == -128 {
            None
        } else {
            line += delta as i64;
            Some(line)
        };
        if start <= addr && addr < end {
            return here.map(|l| l.clamp(0, u32::MAX as i64) as u32);
        }
        start = end;
    }
    None
}

/// A little reader of the location table's varints.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn byte(&mut self) -> Option<u8> {
        let v = *self.b.get(self.at)?;
        self.at += 1;
        Some(v)
    }

    /// 6 bits a byte, least significant first, bit 6 set when more follow.
    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let b = self.byte()?;
            v |= ((b & 63) as u64) << shift.min(63);
            shift += 6;
            if b & 64 == 0 {
                return Some(v);
            }
        }
    }

    fn svarint(&mut self) -> Option<i64> {
        let v = self.varint()?;
        Some(if v & 1 != 0 { -((v >> 1) as i64) } else { (v >> 1) as i64 })
    }
}

/// 3.11 and later: entries of `1CCCCLLL` (code, length - 1 in code units), then per code:
/// 15 no location; 14 long form (line delta svarint, end line, column, end column varints);
/// 13 no column (line delta svarint); 10-12 one line (delta = code - 10, two column bytes);
/// 0-9 short form (same line, one column byte).
fn locations(table: &[u8], first_line: u32, addr: u32) -> Option<u32> {
    let mut c = Cursor { b: table, at: 0 };
    let mut line = first_line as i64;
    let mut start = 0u32;
    while let Some(first) = c.byte() {
        if first & 0x80 == 0 {
            return None; // not the start of an entry: a damaged table
        }
        let code = (first >> 3) & 15;
        let len = (first & 7) as u32 + 1;
        let here = match code {
            15 => None,
            14 => {
                line += c.svarint()?;
                c.varint()?;
                c.varint()?;
                c.varint()?;
                Some(line)
            }
            13 => {
                line += c.svarint()?;
                Some(line)
            }
            10..=12 => {
                line += (code - 10) as i64;
                c.byte()?;
                c.byte()?;
                Some(line)
            }
            _ => {
                c.byte()?;
                Some(line)
            }
        };
        if start <= addr && addr < start + len {
            return here.map(|l| l.clamp(0, u32::MAX as i64) as u32);
        }
        start += len;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lnotab_pairs() {
        // Lines 10 (bytes 0-5), 11 (6-13), 13 (14-), a negative step back to 12 at 20.
        let t = [6, 1, 8, 2, 6, 0xff];
        assert_eq!(line_of(LineTable::Lnotab, &t, 10, 0), Some(10));
        assert_eq!(line_of(LineTable::Lnotab, &t, 10, 5), Some(10));
        assert_eq!(line_of(LineTable::Lnotab, &t, 10, 6), Some(11));
        assert_eq!(line_of(LineTable::Lnotab, &t, 10, 14), Some(13));
        assert_eq!(line_of(LineTable::Lnotab, &t, 10, 20), Some(12));
        assert_eq!(line_of(LineTable::Lnotab, &[], 7, 100), Some(7));
    }

    #[test]
    fn pep626_pairs() {
        // [0,4) line 3; [4,10) no line; [10,12) line 5.
        let t = [4, 2, 6, 0x80, 2, 2];
        assert_eq!(line_of(LineTable::Pep626, &t, 1, 0), Some(3));
        assert_eq!(line_of(LineTable::Pep626, &t, 1, 4), None);
        assert_eq!(line_of(LineTable::Pep626, &t, 1, 11), Some(5));
        assert_eq!(line_of(LineTable::Pep626, &t, 1, 12), None);
    }

    #[test]
    fn location_entries() {
        let t = [
            0x80 | (13 << 3), // no column, 1 unit, delta +1 (svarint 2)
            2,
            0x80 | (11 << 3) | 1, // one line, delta +1, 2 units
            0,
            4,
            0x80 | (15 << 3), // no location, 1 unit
            0x80 | (14 << 3) | 2, // long form, delta -2 (svarint 5), 3 units
            5,
            0,
            1,
            1,
            0x80 | (3 << 3), // short form, same line
            9,
        ];
        assert_eq!(line_of(LineTable::Locations, &t, 10, 0), Some(11));
        assert_eq!(line_of(LineTable::Locations, &t, 10, 1), Some(12));
        assert_eq!(line_of(LineTable::Locations, &t, 10, 2), Some(12));
        assert_eq!(line_of(LineTable::Locations, &t, 10, 3), None);
        assert_eq!(line_of(LineTable::Locations, &t, 10, 4), Some(10));
        assert_eq!(line_of(LineTable::Locations, &t, 10, 6), Some(10));
        assert_eq!(line_of(LineTable::Locations, &t, 10, 7), Some(10));
        assert_eq!(line_of(LineTable::Locations, &t, 10, 8), None);
        // Damaged tables end the search.
        assert_eq!(line_of(LineTable::Locations, &[0x01, 0x02], 1, 0), None);
        assert_eq!(line_of(LineTable::Locations, &[0x80 | (14 << 3)], 1, 0), None);
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_any_offset(table in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64), first in 0u32..100000, off in 0u32..400) {
            for f in [LineTable::Lnotab, LineTable::Pep626, LineTable::Locations] {
                let _ = line_of(f, &table, first, off);
            }
        }
    }
}
