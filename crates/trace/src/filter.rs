//! Event filters: event-name globs, thread/process/CPU ids, and a time range given in
//! babeltrace2's formats.
//!
//! ```
//! use tracelens_trace::filter::{Filter, TimeBound};
//! let mut f = Filter::default();
//! f.add_event_glob("sched_*");
//! f.begin = Some(TimeBound::parse("1571771741.5").unwrap());
//! assert!(f.name_matches("sched_switch"));
//! ```

use tracelens_ctf::{EventView, Fields};

use crate::{Error, Result};

/// A time bound as babeltrace2's `--begin`/`--end` (its trimmer) accepts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeBound {
    /// `YYYY-MM-DD HH:MM[:SS[.NANO]]`, `YYYY-MM-DD` or `[-]SEC[.NANO]`: nanoseconds from the
    /// origin (dates are converted with the local time zone, or UTC when asked).
    Ns(i64),
    /// `HH:MM[:SS[.NANO]]`: a time of day on the date of the first event (local time, or UTC).
    TimeOfDay {
        /// Hour.
        hour: u32,
        /// Minute.
        minute: u32,
        /// Second.
        second: u32,
        /// Nanoseconds.
        ns: u32,
        /// Interpret in UTC instead of local time.
        gmt: bool,
    },
}

/// Splits `s` at the first `sep`.
fn take_digits(s: &str, n: usize) -> Option<(u32, &str)> {
    let d = s.get(..n)?;
    if !d.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((d.parse().ok()?, &s[n..]))
}

/// `[.NANO]` (1 to 9 digits, scaled: `.5` is 500000000 ns); `s` starts after the seconds.
fn nanos(s: &str) -> Option<u32> {
    if s.is_empty() {
        return Some(0);
    }
    let d = s.strip_prefix('.')?;
    if d.is_empty() || d.len() > 9 || !d.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let v: u32 = d.parse().ok()?;
    Some(v * 10u32.pow(9 - d.len() as u32))
}

/// `YYYY-MM-DD` and the rest of `s`.
fn date(s: &str) -> Option<(i32, u32, u32, &str)> {
    let (y, r) = take_digits(s, 4)?;
    let r = r.strip_prefix('-')?;
    let (mo, r) = take_digits(r, 2)?;
    let r = r.strip_prefix('-')?;
    let (d, r) = take_digits(r, 2)?;
    Some((y as i32, mo, d, r))
}

/// `HH:MM[:SS[.NANO]]`.
fn time_of_day(s: &str) -> Option<(u32, u32, u32, u32)> {
    let (h, r) = take_digits(s, 2)?;
    let r = r.strip_prefix(':')?;
    let (m, r) = take_digits(r, 2)?;
    if r.is_empty() {
        return Some((h, m, 0, 0));
    }
    let r = r.strip_prefix(':')?;
    let (sec, r) = take_digits(r, 2)?;
    Some((h, m, sec, nanos(r)?))
}

/// Seconds since the epoch of a broken-down time (local time unless `gmt`), like `mktime` /
/// `timegm` with `tm_isdst = -1`.
pub fn make_time(year: i32, month: u32, day: u32, hour: u32, minute: u32, second: u32, gmt: bool) -> Option<i64> {
    // SAFETY: `tm` is plain old data; mktime/timegm read and normalize it.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    tm.tm_year = year - 1900;
    tm.tm_mon = month as i32 - 1;
    tm.tm_mday = day as i32;
    tm.tm_hour = hour as i32;
    tm.tm_min = minute as i32;
    tm.tm_sec = second as i32;
    tm.tm_isdst = -1;
    let t = unsafe {
        if gmt {
            libc::timegm(&mut tm)
        } else {
            libc::mktime(&mut tm)
        }
    };
    (t >= 0).then_some(t as i64)
}

impl TimeBound {
    /// Parses `YYYY-MM-DD HH:MM[:SS[.NANO]]`, `YYYY-MM-DD`, `HH:MM[:SS[.NANO]]` (local time)
    /// or `[-]SEC[.NANO]` (seconds from the clock's origin).
    pub fn parse(s: &str) -> Result<TimeBound> {
        TimeBound::parse_tz(s, false)
    }

    /// Like [`TimeBound::parse`]; dates and times of day are in UTC when `gmt`.
    pub fn parse_tz(s: &str, gmt: bool) -> Result<TimeBound> {
        let bad = || {
            Error::Invalid(format!(
                "invalid time `{s}`: expected `YYYY-MM-DD HH:MM[:SS[.NANO]]`, `YYYY-MM-DD`, `HH:MM[:SS[.NANO]]` or `[-]SECONDS[.NANO]`"
            ))
        };
        // YYYY-MM-DD[ HH:MM[:SS[.NANO]]]
        if let Some((y, mo, d, rest)) = date(s) {
            let (h, mi, sec, ns) = if rest.is_empty() {
                (0, 0, 0, 0)
            } else {
                time_of_day(rest.strip_prefix(' ').ok_or_else(bad)?).ok_or_else(bad)?
            };
            let t = make_time(y, mo, d, h, mi, sec, gmt).ok_or_else(bad)?;
            return Ok(TimeBound::Ns(t.saturating_mul(1_000_000_000).saturating_add(ns as i64)));
        }
        if let Some((hour, minute, second, ns)) = time_of_day(s) {
            return Ok(TimeBound::TimeOfDay { hour, minute, second, ns, gmt });
        }
        // [-]SEC[.NANO]
        let (neg, body) = match s.strip_prefix('-') {
            Some(b) => (true, b),
            None => (false, s),
        };
        let digits = body.bytes().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 {
            return Err(bad());
        }
        let secs: i64 = body[..digits].parse().map_err(|_| bad())?;
        let ns = nanos(&body[digits..]).ok_or_else(bad)?;
        let v = secs.checked_mul(1_000_000_000).and_then(|v| v.checked_add(ns as i64)).ok_or_else(bad)?;
        Ok(TimeBound::Ns(if neg { -v } else { v }))
    }

    /// Whether `begin` is after `end` whatever the date of the first event: both in
    /// nanoseconds, or both times of day in the same zone. Such a range keeps nothing, and is
    /// an error (babeltrace2 refuses it too); a range of the two forms mixed is known only
    /// once resolved ([`Filter::empty_range`]).
    pub fn inverted(begin: &TimeBound, end: &TimeBound) -> bool {
        match (*begin, *end) {
            (TimeBound::Ns(b), TimeBound::Ns(e)) => b > e,
            (
                TimeBound::TimeOfDay { hour: h1, minute: m1, second: s1, ns: n1, gmt: g1 },
                TimeBound::TimeOfDay { hour: h2, minute: m2, second: s2, ns: n2, gmt: g2 },
            ) => g1 == g2 && (h1, m1, s1, n1) > (h2, m2, s2, n2),
            _ => false,
        }
    }

    /// The bound in nanoseconds from the origin; a time of day takes its date from
    /// `first_ns` (the first event's time).
    pub fn resolve(&self, first_ns: i64) -> Option<i64> {
        match *self {
            TimeBound::Ns(ns) => Some(ns),
            TimeBound::TimeOfDay { hour, minute, second, ns, gmt } => {
                let (y, mo, d, ..) = crate::write::broken_down(first_ns.div_euclid(1_000_000_000), gmt)?;
                let t = make_time(y, mo, d, hour, minute, second, gmt)?;
                Some(t.saturating_mul(1_000_000_000).saturating_add(ns as i64))
            }
        }
    }
}

/// Matches `name` against a glob where `*` matches any run of characters and `?` one
/// character (byte-wise; no allocation).
pub fn glob_match(pattern: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        if p < pattern.len() && (pattern[p] == b'?' || pattern[p] == name[n]) {
            p += 1;
            n += 1;
        } else if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, n));
            p += 1;
        } else if let Some((sp, sn)) = star {
            p = sp + 1;
            n = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    while p < pattern.len() && pattern[p] == b'*' {
        p += 1;
    }
    p == pattern.len()
}

/// Which events to keep. An empty filter keeps everything.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// Event-name globs; an event is kept when it matches any (or when there is none).
    pub events: Vec<String>,
    /// Keep events whose thread id is this: context field `tid` or `vtid`, or `perf_tid`.
    pub tid: Option<i64>,
    /// Keep events whose process id is this: context field `pid` or `vpid`, or `perf_pid`,
    /// or the trace's `vpid` environment entry.
    pub pid: Option<i64>,
    /// Keep events whose CPU is this: (packet) context field `cpu_id` or `cpu`, or `perf_cpu`.
    pub cpu: Option<i64>,
    /// Drop events before this time (inclusive bound).
    pub begin: Option<TimeBound>,
    /// Drop events after this time (inclusive bound).
    pub end: Option<TimeBound>,
    resolved: Option<(Option<i64>, Option<i64>)>,
}

/// Context field names holding a thread id.
pub const TID_FIELDS: [&str; 2] = ["tid", "vtid"];
/// Context field names holding a process id.
pub const PID_FIELDS: [&str; 2] = ["pid", "vpid"];
/// Context (or packet context) field names holding a CPU number.
pub const CPU_FIELDS: [&str; 2] = ["cpu_id", "cpu"];

/// The id an event was recorded for: first a context field named one of `names` (the stream
/// event context, then the event context, then — when `packet` — the packet context), then a
/// field named `perf` in any scope (perf's CTF converter puts `perf_tid`, `perf_pid` and
/// `perf_cpu` in the payload). Payload fields with the plain names are not used: in kernel
/// events they usually name another task (`sched_wakeup`'s `tid` is the woken thread).
fn lookup(ev: &EventView<'_, '_>, names: &[&str], packet: bool, perf: &str) -> Option<i64> {
    let scopes: [Fields<'_, '_>; 3] = [ev.common_context, ev.context, if packet { ev.packet_context } else { Fields::EMPTY }];
    for s in scopes {
        if s.is_empty() {
            continue;
        }
        for n in names {
            if let Some(v) = s.get(n).and_then(|f| f.as_i64()) {
                return Some(v);
            }
        }
    }
    for s in [ev.payload, ev.common_context, ev.context, ev.packet_context] {
        if let Some(v) = s.get(perf).and_then(|f| f.as_i64()) {
            return Some(v);
        }
    }
    None
}

impl Filter {
    /// Adds an event-name glob.
    pub fn add_event_glob(&mut self, glob: impl Into<String>) {
        self.events.push(glob.into());
    }

    /// Whether the filter keeps everything.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty() && self.tid.is_none() && self.pid.is_none() && self.cpu.is_none() && self.begin.is_none() && self.end.is_none()
    }

    /// Whether an event named `name` passes the name globs.
    pub fn name_matches(&self, name: &str) -> bool {
        self.events.is_empty() || self.events.iter().any(|g| glob_match(g.as_bytes(), name.as_bytes()))
    }

    /// Resolves time-of-day bounds against the first timestamp seen; call with the time of
    /// the first item (later calls do nothing).
    pub fn observe_first_time(&mut self, ns: i64) {
        if self.resolved.is_none() {
            self.resolved = Some((self.begin.and_then(|b| b.resolve(ns)), self.end.and_then(|e| e.resolve(ns))));
        }
    }

    /// Whether the time bounds, resolved, keep nothing (the beginning is after the end).
    pub fn empty_range(&self) -> bool {
        matches!(self.bounds(), (Some(b), Some(e)) if b > e)
    }

    fn bounds(&self) -> (Option<i64>, Option<i64>) {
        match self.resolved {
            Some(r) => r,
            None => (
                match self.begin {
                    Some(TimeBound::Ns(n)) => Some(n),
                    _ => None,
                },
                match self.end {
                    Some(TimeBound::Ns(n)) => Some(n),
                    _ => None,
                },
            ),
        }
    }

    /// Whether a time is inside `[begin, end]`. Items without a time pass.
    pub fn time_matches(&self, ns: Option<i64>) -> bool {
        let Some(ns) = ns else { return true };
        let (b, e) = self.bounds();
        !matches!(b, Some(b) if ns < b) && !matches!(e, Some(e) if ns > e)
    }

    /// Whether the range `[begin, end]` (either end unknown) meets `[begin, end]` of the filter.
    pub fn range_matches(&self, begin: Option<i64>, end: Option<i64>) -> bool {
        let (b, e) = self.bounds();
        let after_begin = match (b, end.or(begin)) {
            (Some(b), Some(t)) => t >= b,
            _ => true,
        };
        let before_end = match (e, begin.or(end)) {
            (Some(e), Some(t)) => t <= e,
            _ => true,
        };
        after_begin && before_end
    }

    /// Whether every bound is past: after the end bound nothing more can match (the merge is
    /// in time order).
    pub fn past_end(&self, ns: i64) -> bool {
        matches!(self.bounds().1, Some(e) if ns > e)
    }

    /// Whether every event passes (no criterion is set): a reader may skip
    /// [`Filter::matches`] and the time bounds then.
    pub fn keeps_all(&self) -> bool {
        self.events.is_empty() && self.tid.is_none() && self.pid.is_none() && self.cpu.is_none() && self.begin.is_none() && self.end.is_none()
    }

    /// Whether `ev` passes every criterion; `trace_vpid` is the trace's `vpid` environment
    /// entry (LTTng per-process user space traces), used for `pid` when the event has no
    /// process id field.
    pub fn matches(&self, ev: &EventView<'_, '_>, trace_vpid: Option<i64>) -> bool {
        if !self.time_matches(ev.ns) || !self.name_matches(ev.name()) {
            return false;
        }
        if let Some(w) = self.tid {
            if lookup(ev, &TID_FIELDS, false, "perf_tid") != Some(w) {
                return false;
            }
        }
        if let Some(w) = self.pid {
            if lookup(ev, &PID_FIELDS, false, "perf_pid").or(trace_vpid) != Some(w) {
                return false;
            }
        }
        if let Some(w) = self.cpu {
            if lookup(ev, &CPU_FIELDS, true, "perf_cpu") != Some(w) {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match(b"sched_*", b"sched_switch"));
        assert!(glob_match(b"*switch", b"sched_switch"));
        assert!(glob_match(b"s?hed*", b"sched_switch"));
        assert!(glob_match(b"*", b""));
        assert!(!glob_match(b"sched_?", b"sched_switch"));
        assert!(glob_match(b"a*b*c", b"axxbyybzc"));
        assert!(!glob_match(b"a*b*c", b"axxbyyb"));
        assert!(glob_match(b"lttng_ust_libc:*", b"lttng_ust_libc:malloc"));
    }

    #[test]
    fn times() {
        assert_eq!(TimeBound::parse("12").unwrap(), TimeBound::Ns(12_000_000_000));
        assert_eq!(TimeBound::parse("-1.5").unwrap(), TimeBound::Ns(-1_500_000_000));
        assert_eq!(TimeBound::parse("1.000000001").unwrap(), TimeBound::Ns(1_000_000_001));
        assert!(TimeBound::parse("1.0000000001").is_err());
        assert!(TimeBound::parse("abc").is_err());
        assert_eq!(
            TimeBound::parse("10:15:09.5").unwrap(),
            TimeBound::TimeOfDay { hour: 10, minute: 15, second: 9, ns: 500_000_000, gmt: false }
        );
        assert_eq!(TimeBound::parse("10:15").unwrap(), TimeBound::TimeOfDay { hour: 10, minute: 15, second: 0, ns: 0, gmt: false });
        assert_eq!(TimeBound::parse_tz("1970-01-02 00:00:01.25", true).unwrap(), TimeBound::Ns(86_401_250_000_000));
        assert_eq!(TimeBound::parse_tz("1970-01-02", true).unwrap(), TimeBound::Ns(86_400_000_000_000));
        let tod = TimeBound::parse_tz("01:00", true).unwrap();
        assert_eq!(tod.resolve(86_400_000_000_123), Some(86_400_000_000_000 + 3_600_000_000_000));
    }

    #[test]
    fn ranges() {
        let mut f = Filter { begin: Some(TimeBound::Ns(10)), end: Some(TimeBound::Ns(20)), ..Default::default() };
        f.observe_first_time(0);
        assert!(f.time_matches(Some(10)) && f.time_matches(Some(20)) && !f.time_matches(Some(21)));
        assert!(f.time_matches(None));
        assert!(f.range_matches(Some(5), Some(12)));
        assert!(!f.range_matches(Some(21), Some(30)));
        assert!(f.range_matches(None, None));
    }
}
