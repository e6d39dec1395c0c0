//! The time span an analysis read: the first and last event times in its range, which become
//! a report's `begin_ns` and `end_ns`. Merged as a minimum and a maximum, so it does not depend
//! on the cut.

use crate::filter::Filter;

/// The first and last times seen (`None` before any).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Span {
    /// The earliest time seen.
    pub(crate) begin: Option<i64>,
    /// The latest time seen.
    pub(crate) end: Option<i64>,
}

impl Span {
    /// Takes in a time.
    #[inline]
    pub(crate) fn see(&mut self, ns: i64) {
        self.begin = Some(self.begin.map_or(ns, |b| b.min(ns)));
        self.end = Some(self.end.map_or(ns, |e| e.max(ns)));
    }

    /// Takes in the time of an event a kernel analysis read, when `filter` keeps it; whether
    /// the analysis goes on with the event: not after the end of the range (lttng-analyses
    /// stops reading there), but before its beginning (what is pending then still counts).
    #[inline]
    pub(crate) fn read(&mut self, filter: &Filter, ns: i64) -> bool {
        if filter.end_ns.is_some_and(|e| ns > e) {
            return false;
        }
        if filter.time(ns) {
            self.see(ns);
        }
        true
    }

    /// Takes in another span.
    pub(crate) fn merge(&mut self, o: Span) {
        self.begin = earliest(self.begin, o.begin);
        self.end = latest(self.end, o.end);
    }
}

/// The earlier of two optional times.
pub(crate) fn earliest(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

/// The later of two optional times.
pub(crate) fn latest(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}
