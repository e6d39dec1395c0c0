//! Fuzzes stream decoding: the input is TSDL metadata, a NUL byte, then one stream file's bytes.
//! Seed the corpus with fixture traces (`metadata` + `\0` + a stream file). Each stream is
//! read twice: item by item, then with skips (one event, or a run) between the items read.
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
        let mut c = trace.cursor(i);
        for round in 0u64.. {
            let _ = match round % 3 {
                0 => c.skip_events_before(i64::MAX),
                1 => c.skip_event_before(i64::MAX),
                _ => None,
            };
            let Ok(Some(_)) = c.advance() else { break };
            let _ = c.event();
        }
    }
});
