//! Fuzzes the executions database's blob decoders: column blobs (text or integers) and ECCT
//! chunks, over a small fixed tree.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&first, blob)) = data.split_first() else { return };
    let count = usize::from(first >> 1) % 64;
    let _ = tracelens_compare::db::decode_column(blob, first & 1 == 1, count);
    let parent = [u32::MAX, 0, 1, 1, 0, 4, 4, 2, 0, 8];
    let durations = vec![1_000_000i64; count];
    let _ = tracelens_compare::db::decode_ecct(blob, &durations, &parent, blob.len() / 2);
});
