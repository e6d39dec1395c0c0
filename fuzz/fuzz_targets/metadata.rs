//! Fuzzes the metadata reader: plain and packetized TSDL bytes to a trace class.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = tracelens_ctf::parse_metadata(data);
});
