//! The progress line of the parallel commands (`stats` and the analyses): on a terminal, after
//! half a second, `tracelens: reading 42.0% (1.2 GiB of 2.9 GiB, 4 threads)` on standard
//! error, redrawn at most ten times a second and erased when the run ends; then the warnings
//! the reading found (files not read, packets that disagree with their index, streams whose
//! time goes back from one packet to the next).

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
    let line = Line::new();
    let mut engine = Engine::new(set, options);
    let threads = engine.threads();
    if line.on {
        let line = &line;
        engine = engine.on_progress(move |p| {
            line.show(|| {
                let pct = if p.bytes == 0 { 100.0 } else { 100.0 * p.bytes_done as f64 / p.bytes as f64 };
                format!("reading {pct:5.1}% ({} of {}, {threads} thread{})", human_bytes(p.bytes_done), human_bytes(p.bytes), if threads == 1 { "" } else { "s" })
            })
        });
    }
    let result = engine.run(analysis);
    timings.engine(&engine.timings());
    line.clear();
    crate::warnings::report(set);
    crate::warnings::report_packets_back(set);
    if let Some(back) = engine.reached_back() {
        crate::warnings::report_reached_back(&back);
    }
    result
}

/// A progress line of free text on standard error (when it is a terminal): shown after half
/// a second, redrawn at most ten times a second, erased by [`Line::clear`].
pub struct Line {
    started: Instant,
    last: Mutex<Instant>,
    shown: AtomicBool,
    on: bool,
}

impl Line {
    /// A line, drawn only when standard error is a terminal.
    pub fn new() -> Line {
        let now = Instant::now();
        Line { started: now, last: Mutex::new(now), shown: AtomicBool::new(false), on: io::stderr().is_terminal() }
    }

    /// Draws `text()` unless the last draw is too recent (callable from several threads).
    pub fn show(&self, text: impl FnOnce() -> String) {
        if !self.on {
            return;
        }
        let now = Instant::now();
        if now.duration_since(self.started) < Duration::from_millis(500) {
            return;
        }
        let Ok(mut last) = self.last.try_lock() else { return };
        if now.duration_since(*last) < Duration::from_millis(100) {
            return;
        }
        *last = now;
        self.shown.store(true, Ordering::Relaxed);
        let mut err = io::stderr().lock();
        let _ = write!(err, "\rtracelens: {}\x1b[K", text());
        let _ = err.flush();
    }

    /// Erases the line if it was drawn.
    pub fn clear(&self) {
        if self.shown.load(Ordering::Relaxed) {
            let _ = write!(io::stderr().lock(), "\r\x1b[K");
        }
    }
}
