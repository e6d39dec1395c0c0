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
