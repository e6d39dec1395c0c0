//! Fuzzes stream decoding: the input is TSDL metadata, a NUL byte, then one stream file's bytes.
//! Seed the corpus with fixture traces (`metadata` + `\0` + a stream file).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let (meta, rest) = data.split_at(split);
    let stream = rest.get(1..).unwrap_or(&[]).to_vec();
    let Ok(trace) = tracelens_ctf::Trace::from_memory(meta, vec![("stream".into(), stream)]) else { return };
    for i in 0..trace.streams.len() {
        let mut c = trace.cursor(i);
        while let Ok(Some(_)) = c.advance() {
            let _ = c.event();
        }
    }
});
