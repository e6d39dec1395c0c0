//! The metrics of an execution: the fixed ones every database has, and the dimensions taken
//! from the payload of its begin and end events.

use serde::Serialize;

/// What a metric's values are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// A duration in nanoseconds.
    Ns,
    /// A time in nanoseconds from the trace clock's origin.
    Timestamp,
    /// A number of things.
    Count,
    /// A number of bytes.
    Bytes,
    /// An identifier (thread, process, trace, or a payload integer).
    Id,
    /// Text (a payload string).
    Text,
}

impl Unit {
    /// Its name in the database (`ns`, `timestamp`, `count`, `bytes`, `id`, `text`).
    pub fn name(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::Timestamp => "timestamp",
            Unit::Count => "count",
            Unit::Bytes => "bytes",
            Unit::Id => "id",
            Unit::Text => "text",
        }
    }

    /// The unit of `name` (as [`Unit::name`] writes it).
    pub fn parse(name: &str) -> Option<Unit> {
        [Unit::Ns, Unit::Timestamp, Unit::Count, Unit::Bytes, Unit::Id, Unit::Text].into_iter().find(|u| u.name() == name)
    }

    /// Whether values are times (durations or timestamps), written with time units in
    /// expressions and reports.
    pub fn is_time(self) -> bool {
        matches!(self, Unit::Ns | Unit::Timestamp)
    }
}

/// One metric: a column of the executions table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Metric {
    /// Its name (`duration_ns`, `begin.arg1`, ...).
    pub name: String,
    /// What its values are.
    pub unit: Unit,
    /// What it is, in words.
    pub description: String,
}

impl Metric {
    /// A metric.
    pub fn new(name: impl Into<String>, unit: Unit, description: impl Into<String>) -> Metric {
        Metric { name: name.into(), unit, description: description.into() }
    }

    /// Whether it holds text.
    pub fn is_text(&self) -> bool {
        self.unit == Unit::Text
    }
}

/// The fixed metrics, in their column order: (name, unit, description). Every database has
/// them first, then the dimensions.
pub const FIXED: [(&str, Unit, &str); 23] = [
    ("trace", Unit::Id, "the trace holding the begin event (an id in the traces table)"),
    ("tid", Unit::Id, "the thread of the begin event"),
    ("pid", Unit::Id, "the process of the begin event"),
    ("end_tid", Unit::Id, "the thread of the end event (its critical path is the execution's)"),
    ("depth", Unit::Count, "nesting: how many executions of the same kind were open on its thread (or match value) when it began"),
    ("begin_ns", Unit::Timestamp, "the begin event's time, ns from the clock's origin"),
    ("end_ns", Unit::Timestamp, "the end event's time"),
    ("duration_ns", Unit::Ns, "end_ns - begin_ns"),
    ("running_ns", Unit::Ns, "critical path: running on a CPU (any thread on the path)"),
    ("preempted_ns", Unit::Ns, "critical path: runnable, waiting for a CPU"),
    ("interrupted_ns", Unit::Ns, "critical path: on a CPU serving an interrupt"),
    ("timer_ns", Unit::Ns, "critical path: waiting for a timer"),
    ("block_device_ns", Unit::Ns, "critical path: waiting for a block device"),
    ("network_ns", Unit::Ns, "critical path: waiting for the network"),
    ("ipi_ns", Unit::Ns, "critical path: waiting for an inter-processor interrupt"),
    ("user_input_ns", Unit::Ns, "critical path: waiting for an input device"),
    ("blocked_ns", Unit::Ns, "critical path: waiting, for a reason the trace does not give"),
    ("unknown_ns", Unit::Ns, "critical path: not known from the trace"),
    ("cpu_ns", Unit::Ns, "CPU time of the begin event's thread between begin and end"),
    ("switches", Unit::Count, "times the begin event's thread was switched out between begin and end"),
    ("syscalls", Unit::Count, "system calls the begin event's thread entered between begin and end (not the `uretprobe` call a probed function returns through)"),
    ("read_bytes", Unit::Bytes, "bytes the begin event's thread read (read, pread64, readv, recv*...) between begin and end"),
    ("written_bytes", Unit::Bytes, "bytes the begin event's thread wrote (write, pwrite64, writev, send*...) between begin and end"),
];

/// Column of each fixed metric in [`FIXED`].
#[allow(missing_docs)]
pub mod col {
    pub const TRACE: usize = 0;
    pub const TID: usize = 1;
    pub const PID: usize = 2;
    pub const END_TID: usize = 3;
    pub const DEPTH: usize = 4;
    pub const BEGIN: usize = 5;
    pub const END: usize = 6;
    pub const DURATION: usize = 7;
    /// The first of the ten critical-path states, in `PathState::ALL` order.
    pub const STATES: usize = 8;
    pub const CPU: usize = 18;
    pub const SWITCHES: usize = 19;
    pub const SYSCALLS: usize = 20;
    pub const READ: usize = 21;
    pub const WRITTEN: usize = 22;
}

/// The fixed metrics as [`Metric`]s.
pub fn fixed() -> Vec<Metric> {
    FIXED.iter().map(|&(n, u, d)| Metric::new(n, u, d)).collect()
}

/// The value no execution has (a dimension its events lack): SQL `NULL`.
pub const MISSING: i64 = i64::MIN;

#[cfg(test)]
mod tests {
    use super::*;
    use tracelens_critical::PathState;

    #[test]
    fn state_columns_follow_the_path_states() {
        for (i, s) in PathState::ALL.iter().enumerate() {
            assert_eq!(FIXED[col::STATES + i].0, format!("{}_ns", s.name()));
        }
        assert_eq!(FIXED[col::CPU].0, "cpu_ns");
        assert_eq!(FIXED[col::WRITTEN].0, "written_bytes");
        for u in [Unit::Ns, Unit::Timestamp, Unit::Count, Unit::Bytes, Unit::Id, Unit::Text] {
            assert_eq!(Unit::parse(u.name()), Some(u));
        }
    }
}
