//! Timestamps: CLOCK_MONOTONIC, the clock `tracelens record` gives the kernel's tracefs
//! (`trace_clock=mono`), read as cheaply as possible.
//!
//! Reading CLOCK_MONOTONIC through the vDSO costs about 20 ns on the machine the costs in
//! `BENCHMARKS.md` were measured on; the time-stamp counter (`rdtsc`) about 9 ns. So where the
//! counter is invariant (x86-64 with `constant_tsc` and `nonstop_tsc`: one rate on every CPU,
//! through idle states) a probe stores the raw counter, and the consumer thread converts it:
//! it samples (counter, CLOCK_MONOTONIC) pairs at every drain, after it has read the buffers'
//! heads, so that every event it converts lies between two samples, and interpolates
//! linearly between them (never extrapolating from a short segment). Each sample is the best
//! of a few `rdtsc; clock_gettime; rdtsc` triples (the narrowest bracket, its midpoint), so a
//! converted time is within about half a `clock_gettime` (~10 ns) of the kernel's clock, and
//! NTP's slewing of CLOCK_MONOTONIC is followed segment by segment. Elsewhere (or with
//! `TRACELENS_PROBE_CLOCK=monotonic`) probes call `clock_gettime` and store nanoseconds.

use std::collections::VecDeque;

/// Nanoseconds of CLOCK_MONOTONIC.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

pub(crate) fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec to write.
    unsafe { libc::clock_gettime(clock, &mut t) };
    (t.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(t.tv_nsec as u64)
}

/// The time-stamp counter.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn counter() -> u64 {
    // SAFETY: rdtsc has no preconditions on x86-64.
    #[allow(unused_unsafe)]
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
}

/// Without a usable counter, CLOCK_MONOTONIC itself.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn counter() -> u64 {
    monotonic_ns()
}

/// The time of a probe in the unit of its buffer: counter ticks when `tsc`, else ns.
#[inline(always)]
pub(crate) fn now(tsc: bool) -> u64 {
    if tsc {
        counter()
    } else {
        monotonic_ns()
    }
}

/// Whether probes can time events with the counter: an x86-64 CPU whose counter runs at one
/// rate everywhere and always (`constant_tsc` and `nonstop_tsc` in `/proc/cpuinfo`), unless
/// `TRACELENS_PROBE_CLOCK` says otherwise (`monotonic` or `tsc`).
pub(crate) fn counter_usable(setting: Option<&str>) -> bool {
    match setting {
        Some("monotonic") => return false,
        Some("tsc") => return cfg!(target_arch = "x86_64"),
        _ => {}
    }
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else { return false };
    let Some(flags) = info.lines().find(|l| l.starts_with("flags")) else { return false };
    let has = |f: &str| flags.split_whitespace().any(|x| x == f);
    has("constant_tsc") && has("nonstop_tsc")
}

/// One (counter, CLOCK_MONOTONIC ns) pair: the best of five brackets.
pub(crate) fn sample() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..5 {
        let a = counter();
        let ns = monotonic_ns();
        let b = counter();
        let width = b.wrapping_sub(a);
        if width < best.0 {
            best = (width, a + width / 2, ns);
        }
    }
    (best.1, best.2)
}

/// How many samples the conversion keeps: older events than the oldest kept are converted
/// with the slope of the whole run (they can only come from a thread stopped between taking
/// its timestamp and publishing its event for that long).
const KEPT: usize = 4096;

/// Counter to CLOCK_MONOTONIC conversion from samples taken as the run goes.
#[derive(Debug)]
pub(crate) struct Calibration {
    first: (u64, u64),
    samples: VecDeque<(u64, u64)>,
}

impl Calibration {
    /// A conversion starting with `first`, taken before any event.
    pub(crate) fn new(first: (u64, u64)) -> Calibration {
        Calibration { first, samples: VecDeque::from([first]) }
    }

    /// Adds a sample (taken after the heads of the buffers about to be drained were read).
    pub(crate) fn add(&mut self, s: (u64, u64)) {
        let &(lc, ln) = self.samples.back().unwrap_or(&self.first);
        if s.0 <= lc || s.1 < ln {
            return;
        }
        if self.samples.len() == KEPT {
            self.samples.pop_front();
        }
        self.samples.push_back(s);
    }

    /// The CLOCK_MONOTONIC time of counter value `c`.
    pub(crate) fn to_ns(&self, c: u64) -> u64 {
        let n = self.samples.len();
        let last = self.samples[n - 1];
        if n >= 2 && c >= self.samples[0].0 && c <= last.0 {
            // The segment holding c: the first sample at or after it, and the one before.
            let i = self.samples.partition_point(|s| s.0 < c).max(1);
            return interpolate(self.samples[i - 1], self.samples[i], c);
        }
        // Outside the samples: the slope of the whole run from the nearest end.
        let base = if c > last.0 { last } else { self.samples[0] };
        if last.0 > self.first.0 {
            extrapolate(self.first, last, base, c)
        } else {
            base.1
        }
    }
}

fn interpolate(a: (u64, u64), b: (u64, u64), c: u64) -> u64 {
    let span = (b.0 - a.0) as u128;
    if span == 0 {
        return a.1;
    }
    a.1 + (((c - a.0) as u128 * (b.1 - a.1) as u128 + span / 2) / span) as u64
}

/// `base` moved to `c` at the slope of `from` to `to`.
fn extrapolate(from: (u64, u64), to: (u64, u64), base: (u64, u64), c: u64) -> u64 {
    let (dc, dn) = ((to.0 - from.0) as i128, (to.1 - from.1) as i128);
    let delta = (c as i128 - base.0 as i128) * dn / dc;
    (base.1 as i128 + delta).max(0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolates_between_samples_and_follows_slope_changes() {
        let mut c = Calibration::new((1000, 5_000));
        c.add((3000, 6_000)); // 2 ticks per ns
        c.add((4000, 7_000)); // 1 tick per ns
        assert_eq!(c.to_ns(1000), 5_000);
        assert_eq!(c.to_ns(2000), 5_500);
        assert_eq!(c.to_ns(3000), 6_000);
        assert_eq!(c.to_ns(3500), 6_500);
        assert_eq!(c.to_ns(4000), 7_000);
        // Beyond the last sample: the whole run's slope (3000 ticks for 2000 ns).
        assert_eq!(c.to_ns(7000), 9_000);
        // Before the first: the same slope, never below 0.
        assert_eq!(c.to_ns(400), 4_600);
        assert_eq!(c.to_ns(0), 4_334);
    }

    #[test]
    fn samples_going_backwards_are_ignored() {
        let mut c = Calibration::new((1000, 5_000));
        c.add((900, 6_000));
        c.add((2000, 4_000));
        assert_eq!(c.samples.len(), 1);
        assert_eq!(c.to_ns(1000), 5_000);
    }

    #[test]
    fn the_counter_tracks_the_monotonic_clock() {
        if !counter_usable(None) {
            return;
        }
        let first = sample();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let before = counter();
        let ns = monotonic_ns();
        let after = counter();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut c = Calibration::new(first);
        c.add(sample());
        // The clock was read between the two counter readings (however long a loaded
        // machine kept this thread off the CPU in between); the conversion may be off by the
        // samples' own error and NTP's slewing over the 40 ms between them (well under 20 µs).
        let (lo, hi) = (c.to_ns(before), c.to_ns(after));
        assert!(lo <= ns + 20_000 && ns <= hi + 20_000, "clock {ns} not within converted [{lo}, {hi}]");
    }
}
