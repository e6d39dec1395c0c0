//! Where the time of a run goes: the CPU time spent reading chunks (work any number of threads
//! shares) and the time of what one thread does alone (listing chunks, the ordered merges,
//! `finish`). From the two, at one thread, the serial fraction `serial / (serial + parallel)`
//! bounds the speed-up on `n` threads (Amdahl): `1 / (s + (1 - s) / n)`.

use std::time::Instant;

/// The CPU time (user + system) the calling thread has used, in ns (0 where the system does
/// not say).
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec, which `ts` is, and reads nothing else.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64)
}

/// The wall time and the calling thread's CPU time of one phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Phase {
    /// Wall time, in ns.
    pub wall_ns: u64,
    /// CPU time of the thread(s) doing it, in ns.
    pub cpu_ns: u64,
}

impl Phase {
    /// Adds `o` to this phase.
    pub fn add(&mut self, o: Phase) {
        self.wall_ns = self.wall_ns.saturating_add(o.wall_ns);
        self.cpu_ns = self.cpu_ns.saturating_add(o.cpu_ns);
    }
}

/// Measures a phase on the calling thread: started by [`Stopwatch::start`], read by
/// [`Stopwatch::stop`].
#[derive(Clone, Copy, Debug)]
pub struct Stopwatch {
    wall: Instant,
    cpu: u64,
}

impl Stopwatch {
    /// Starts measuring.
    pub fn start() -> Stopwatch {
        Stopwatch { wall: Instant::now(), cpu: thread_cpu_ns() }
    }

    /// The wall and CPU time since [`start`](Self::start).
    pub fn stop(&self) -> Phase {
        let wall_ns = u64::try_from(self.wall.elapsed().as_nanos()).unwrap_or(u64::MAX);
        Phase { wall_ns, cpu_ns: thread_cpu_ns().saturating_sub(self.cpu) }
    }
}

/// Where the time of one [`Engine::run`](crate::Engine::run) went.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunTimings {
    /// Chunks read.
    pub chunks: usize,
    /// Worker threads.
    pub threads: usize,
    /// CPU time of the workers inside chunk work (reading a chunk into its state, `end_chunk`):
    /// what more threads share. Includes `background_cpu_ns`.
    pub parallel_cpu_ns: u64,
    /// CPU time of the workers in the analysis's background work (per-entity shards of a
    /// replay, see [`Analysis::background`](crate::Analysis::background)).
    pub background_cpu_ns: u64,
    /// Wall time of the whole run.
    pub wall_ns: u64,
    /// Wall time from the start of the run until every chunk was read: what comes after
    /// (`wall_ns - read_wall_ns`, the run's tail) is the merges, background work and `finish`
    /// left when no chunk is, which no added thread shortens.
    pub read_wall_ns: u64,
    /// The phases only one thread can do, in the order they run: `chunks` (cutting the packet
    /// index into chunks), `merge` (the ordered merges, one at a time, each overlapped with
    /// the reading of later chunks when there are several threads), `finish` (the state of
    /// every chunk turned into the output).
    pub serial: Vec<(&'static str, Phase)>,
}

impl RunTimings {
    /// The sum of the serial phases.
    pub fn serial(&self) -> Phase {
        let mut p = Phase::default();
        for (_, q) in &self.serial {
            p.add(*q);
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_cpu_time_goes_up_with_work() {
        let w = Stopwatch::start();
        let mut x = 0u64;
        while w.stop().cpu_ns < 2_000_000 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let p = w.stop();
        assert!(p.cpu_ns >= 2_000_000);
        // CPU time of one thread cannot run ahead of the wall clock (beyond the clocks'
        // granularity).
        assert!(p.wall_ns + 1_000_000 >= p.cpu_ns, "{p:?}");
    }
}
