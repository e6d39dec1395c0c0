//! What `print -j N` pays to start readers inside packets, alone and on one thread, so that
//! instruction counts (callgrind) compare builds: for every time chunk of TRACE
//! ([`TimeChunks`] for two threads: 1 MiB of events each, smaller in the last 4 MiB), a
//! merger started at the chunk's first packets skips to the chunk's beginning
//! ([`Merger::skip_before`]). Prints the chunks, and the bytes of lead skipped
//! ([`TimeChunks::lead`]), for the cost of a skipped byte.
//!
//!     cargo build --release --example skip_chunks
//!     valgrind --tool=callgrind target/release/examples/skip_chunks TRACE
use tracelens_trace::{chunks::TimeChunks, Merger, TraceSet};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: skip_chunks TRACE")?;
    let set = TraceSet::open(&[path])?;
    let chunks = TimeChunks::new(&set, 1 << 20, 2).ok_or("no chunks: a trace without times")?;
    let (mut whole, mut lead) = (0, 0);
    for k in 0..chunks.len() {
        lead += chunks.lead(k);
        let Some(begin) = chunks.chunk(k).begin_ns else { continue };
        let packets: Vec<_> = chunks.first_packets(k).into_iter().map(|p| p..usize::MAX).collect();
        let mut merger = Merger::with_packets(&set, &packets);
        whole += usize::from(merger.skip_before(begin)?);
    }
    println!("{} chunks, {whole} skipped to their beginning, {lead} bytes of lead (estimated)", chunks.len());
    Ok(())
}
