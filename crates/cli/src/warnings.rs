//! Warnings about what reading traces found that their events do not show (files not read,
//! streams shorter than their index, packets that disagree with their index): one line each
//! on standard error, after the output.

use std::io::Write;

use tracelens_trace::TraceSet;

/// Prints the warnings of `set` (ask after reading it: cursors add to them).
pub fn report(set: &TraceSet) {
    let warnings = set.warnings();
    if warnings.is_empty() {
        return;
    }
    let mut err = std::io::stderr().lock();
    for w in warnings {
        let _ = writeln!(err, "tracelens: warning: {w}");
    }
}

/// Prints, for the analyses, the streams whose time goes back from one packet to the next
/// ([`tracelens_analysis::packets_back`]).
pub fn report_packets_back(set: &TraceSet) {
    let mut err = std::io::stderr().lock();
    for b in tracelens_analysis::packets_back(set) {
        let ns = |t: Option<i64>| t.map_or_else(|| "?".to_string(), |t| t.to_string());
        let more = if b.count > 1 { format!(" (and {} more packets of the stream)", b.count - 1) } else { String::new() };
        let _ = writeln!(
            err,
            "tracelens: warning: {}: packet {}, byte {}: begins at {} ns, before the packet before it ends ({} ns){more}: the stream's time goes backwards, \
             and results around then may change with --chunk-size",
            b.path.display(),
            b.packet,
            b.offset,
            ns(b.begin_ns),
            ns(b.previous_end_ns)
        );
    }
}

/// Prints, for the analyses, an event earlier than the beginning of its chunk
/// ([`tracelens_analysis::Engine::reached_back`]).
pub fn report_reached_back(b: &tracelens_analysis::ReachedBack) {
    let _ = writeln!(
        std::io::stderr().lock(),
        "tracelens: warning: {}: packet {}: an event at {} ns comes before the beginning of the chunk of the trace that holds it ({} ns): \
         the stream's time goes backwards (or its packet disagrees with the index), and results around then may change with --chunk-size",
        b.path.display(),
        b.packet,
        b.ns,
        b.chunk_begin_ns
    );
}
