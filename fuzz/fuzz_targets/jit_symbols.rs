//! Fuzzes the readers of JIT symbol files (perf maps, jitdumps), which the traced programs
//! write: the same bytes read as both, then looked up.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut j = tracelens_symbolize::JitSymbols::default();
    j.add_perf_map(data);
    let _ = j.add_jitdump(data);
    for addr in [0u64, 1, 0x1000, u64::MAX] {
        if let Some(c) = j.find(addr) {
            let _ = c.line_of(addr);
        }
    }
});
