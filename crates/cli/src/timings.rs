//! `--timings`: where a parallel command's time went, as one JSON line on standard error after
//! the output:
//!
//! ```text
//! {"wall_ns":…,"chunks":…,"threads":…,"parallel_cpu_ns":…,"background_cpu_ns":…,"tail_ns":…,
//!  "serial_ns":…,"serial_cpu_ns":…,
//!  "serial_fraction":…,"phases":{"open":…,"chunks":…,"merge":…,"finish":…,"output":…}}
//! ```
//!
//! `parallel_cpu_ns` is the CPU time the workers spent reading chunks (what more threads
//! share), `background_cpu_ns` the part of it in an analysis's background work (per-entity
//! shards), `tail_ns` the wall time of the engine's runs after their last chunk was read (the
//! merges, background work and `finish` left then); `serial_ns` the wall time of what one thread does alone — the phases: `open` (trace
//! discovery, metadata, packet index), `chunks` (cutting the index into chunks), `merge` (the
//! ordered merges), `finish` (the merged state turned into the report), then a command's own
//! serial steps (`path` for `critical-path`) and `output` (rendering and writing). At `-j 1`,
//! `serial_fraction` = `serial_ns / (serial_ns + parallel_cpu_ns)` bounds the speed-up on `n`
//! threads (Amdahl's law). `serial_cpu_ns` is the CPU time of the same phases, steadier than
//! their wall time on a busy machine.

use std::io::Write;
use std::sync::Mutex;
use std::time::Instant;

use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};
use tracelens_analysis::{Phase, RunTimings, Stopwatch};

/// The timings of one command (a no-op unless `--timings` was given).
pub struct Timings {
    enabled: bool,
    started: Instant,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    chunks: usize,
    threads: usize,
    parallel_cpu_ns: u64,
    background_cpu_ns: u64,
    tail_ns: u64,
    phases: Vec<(&'static str, Phase)>,
}

impl Timings {
    /// Starts the clock; `enabled`: whether [`report`](Self::report) prints.
    pub fn new(enabled: bool) -> Timings {
        Timings { enabled, started: Instant::now(), inner: Mutex::new(Inner::default()) }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs `f` as the serial phase `name` (added to a phase of the same name).
    pub fn phase<T>(&self, name: &'static str, f: impl FnOnce() -> T) -> T {
        let watch = Stopwatch::start();
        let out = f();
        self.add(name, watch.stop());
        out
    }

    fn add(&self, name: &'static str, p: Phase) {
        let mut inner = self.inner();
        match inner.phases.iter_mut().find(|(n, _)| *n == name) {
            Some((_, q)) => q.add(p),
            None => inner.phases.push((name, p)),
        }
    }

    /// Adds an engine run's chunks, parallel CPU time and serial phases.
    pub fn engine(&self, run: &RunTimings) {
        {
            let mut inner = self.inner();
            inner.chunks += run.chunks;
            inner.threads = inner.threads.max(run.threads);
            inner.parallel_cpu_ns += run.parallel_cpu_ns;
            inner.background_cpu_ns += run.background_cpu_ns;
            inner.tail_ns += run.wall_ns.saturating_sub(run.read_wall_ns);
        }
        for (name, p) in &run.serial {
            self.add(name, *p);
        }
    }

    /// With `--timings`, writes the JSON line on standard error.
    pub fn report(&self) {
        if !self.enabled {
            return;
        }
        let line = Line { wall_ns: u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX), inner: &self.inner() };
        if let Ok(text) = serde_json::to_string(&line) {
            let _ = writeln!(std::io::stderr().lock(), "{text}");
        }
    }
}

/// The JSON line.
struct Line<'a> {
    wall_ns: u64,
    inner: &'a Inner,
}

impl Serialize for Line<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        /// Phase names and wall times, as an object in the order they ran.
        struct Phases<'a>(&'a [(&'static str, Phase)]);
        impl Serialize for Phases<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(Some(self.0.len()))?;
                for (name, p) in self.0 {
                    m.serialize_entry(name, &p.wall_ns)?;
                }
                m.end()
            }
        }
        let i = self.inner;
        let serial_ns: u64 = i.phases.iter().map(|(_, p)| p.wall_ns).sum();
        let serial_cpu_ns: u64 = i.phases.iter().map(|(_, p)| p.cpu_ns).sum();
        let total = serial_ns + i.parallel_cpu_ns;
        let fraction = if total == 0 { 0.0 } else { serial_ns as f64 / total as f64 };
        let mut st = s.serialize_struct("Timings", 10)?;
        st.serialize_field("wall_ns", &self.wall_ns)?;
        st.serialize_field("chunks", &i.chunks)?;
        st.serialize_field("threads", &i.threads)?;
        st.serialize_field("parallel_cpu_ns", &i.parallel_cpu_ns)?;
        st.serialize_field("background_cpu_ns", &i.background_cpu_ns)?;
        st.serialize_field("tail_ns", &i.tail_ns)?;
        st.serialize_field("serial_ns", &serial_ns)?;
        st.serialize_field("serial_cpu_ns", &serial_cpu_ns)?;
        st.serialize_field("serial_fraction", &fraction)?;
        st.serialize_field("phases", &Phases(&i.phases))?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_adds_up_the_phases() {
        let t = Timings::new(true);
        t.phase("open", || ());
        let mut run = RunTimings::default();
        run.chunks = 3;
        run.parallel_cpu_ns = 300;
        run.background_cpu_ns = 50;
        run.wall_ns = 500;
        run.read_wall_ns = 420;
        run.serial = vec![("merge", Phase { wall_ns: 100, cpu_ns: 90 })];
        t.engine(&run);
        t.phase("open", || ());
        let inner = t.inner();
        let v: serde_json::Value = serde_json::to_value(Line { wall_ns: 1000, inner: &inner }).unwrap();
        let open = v["phases"]["open"].as_u64().unwrap();
        assert_eq!(v["serial_ns"].as_u64(), Some(open + 100));
        assert_eq!(v["chunks"].as_u64(), Some(3));
        assert_eq!(v["parallel_cpu_ns"].as_u64(), Some(300));
        assert_eq!((v["background_cpu_ns"].as_u64(), v["tail_ns"].as_u64()), (Some(50), Some(80)));
        let keys: Vec<&String> = v["phases"].as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 2);
    }
}
