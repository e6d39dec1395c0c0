//! The progress line of the parallel commands (`stats` and the analyses): on a terminal, after
//! half a second, `tracelens: reading 42.0% (1.2 GiB of 2.9 GiB, 4 threads)` on standard
//! error, redrawn at most ten times a second and erased when the run ends; then the warnings
//! the reading found (files not read, packets that disagree with their index).

use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tracelens_analysis::{Analysis, Engine, Options};
use tracelens_trace::TraceSet;

use crate::timings::Timings;
use crate::units::human_bytes;

/// Runs `analysis` on the engine, with the progress line when standard error is a terminal;
/// its timings go to `timings`.
pub fn run<A: Analysis>(set: &TraceSet, options: &Options, analysis: &A, timings: &Timings) -> tracelens_analysis::Result<A::Output> {
    let started = Instant::now();
    let last = Mutex::new(started);
    let shown = AtomicBool::new(false);
    let mut engine = Engine::new(set, options);
    let threads = engine.threads();
    if io::stderr().is_terminal() {
        let (last, shown) = (&last, &shown);
        engine = engine.on_progress(move |p| {
            let now = Instant::now();
            if now.duration_since(started) < Duration::from_millis(500) {
                return;
            }
            let Ok(mut last) = last.try_lock() else { return };
            if now.duration_since(*last) < Duration::from_millis(100) {
                return;
            }
            *last = now;
            shown.store(true, Ordering::Relaxed);
            let pct = if p.bytes == 0 { 100.0 } else { 100.0 * p.bytes_done as f64 / p.bytes as f64 };
            let mut err = io::stderr().lock();
            let _ = write!(
                err,
                "\rtracelens: reading {pct:5.1}% ({} of {}, {threads} thread{})\x1b[K",
                human_bytes(p.bytes_done),
                human_bytes(p.bytes),
                if threads == 1 { "" } else { "s" }
            );
            let _ = err.flush();
        });
    }
    let result = engine.run(analysis);
    timings.engine(&engine.timings());
    if shown.load(Ordering::Relaxed) {
        let _ = write!(io::stderr().lock(), "\r\x1b[K");
    }
    crate::warnings::report(set);
    result
}
