//! Fuzzes CPython line-table decoding (tables read from a traced process's memory): the
//! first byte picks the format, the next eight the first line and the offset, the rest is
//! the table.
#![no_main]

use tracelens_pystack::{line_of, LineTable};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if data.len() < 9 {
        return;
    }
    let format = [LineTable::Lnotab, LineTable::Pep626, LineTable::Locations][data[0] as usize % 3];
    let first = u32::from_le_bytes([data[1], data[2], data[3], data[4]]);
    let offset = u32::from_le_bytes([data[5], data[6], data[7], data[8]]);
    let _ = line_of(format, &data[9..], first, offset);
});
