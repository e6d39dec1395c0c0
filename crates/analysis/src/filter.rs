//! Filters shared by the kernel analyses (`cpu`, `sched`, `syscalls`, `io`, `irq`): a time
//! range, thread ids, process names and CPUs, with lttng-analyses' meaning:
//!
//! * `begin_ns` / `end_ns` (inclusive) cut the trace: events outside are not read at all, and
//!   the analysed time range runs from the first to the last event inside.
//! * `tids` / `procnames` select threads (a thread matches when its id is listed and its
//!   name — the name the event gives, e.g. `next_comm` when it is switched in — is listed;
//!   an empty list matches everything).
//! * `cpus` selects the CPUs whose events count.
//!
//! An empty [`Filter`] (the default) keeps everything.

/// What the analyses keep (see the [module docs](self)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// Events before this time (ns from the clock's origin) are not read.
    pub begin_ns: Option<i64>,
    /// Events after this time are not read.
    pub end_ns: Option<i64>,
    /// Threads to keep (empty: all).
    pub tids: Vec<i64>,
    /// Thread names (`comm`) to keep, exactly (empty: all).
    pub procnames: Vec<String>,
    /// CPUs to keep (empty: all).
    pub cpus: Vec<u32>,
}

impl Filter {
    /// Whether the filter keeps everything.
    pub fn is_empty(&self) -> bool {
        self.begin_ns.is_none() && self.end_ns.is_none() && !self.has_process_filter() && self.cpus.is_empty()
    }

    /// Whether threads are selected (by id or name).
    pub fn has_process_filter(&self) -> bool {
        !self.tids.is_empty() || !self.procnames.is_empty()
    }

    /// Whether an event at `ns` is inside the time range.
    #[inline]
    pub fn time(&self, ns: i64) -> bool {
        !matches!(self.begin_ns, Some(b) if ns < b) && !matches!(self.end_ns, Some(e) if ns > e)
    }

    /// Whether events of `cpu` count.
    #[inline]
    pub fn cpu(&self, cpu: u32) -> bool {
        self.cpus.is_empty() || self.cpus.contains(&cpu)
    }

    /// Whether thread `tid` is selected by id.
    #[inline]
    pub fn tid(&self, tid: i64) -> bool {
        self.tids.is_empty() || self.tids.contains(&tid)
    }

    /// Whether a thread named `comm` is selected by name.
    #[inline]
    pub fn procname(&self, comm: &[u8]) -> bool {
        self.procnames.is_empty() || self.procnames.iter().any(|p| p.as_bytes() == comm)
    }

    /// Whether thread `tid`, named `comm`, is selected.
    #[inline]
    pub fn process(&self, tid: i64, comm: &[u8]) -> bool {
        self.tid(tid) && self.procname(comm)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_keeps_everything() {
        let f = Filter::default();
        assert!(f.is_empty());
        assert!(f.time(i64::MIN) && f.time(i64::MAX));
        assert!(f.cpu(7) && f.process(12, b"x"));
    }

    #[test]
    fn selects() {
        let f = Filter { begin_ns: Some(10), end_ns: Some(20), tids: vec![5], procnames: vec!["bash".into()], cpus: vec![1] };
        assert!(!f.is_empty());
        assert!(f.time(10) && f.time(20) && !f.time(9) && !f.time(21));
        assert!(f.cpu(1) && !f.cpu(0));
        assert!(f.process(5, b"bash") && !f.process(5, b"sh") && !f.process(6, b"bash"));
    }
}
