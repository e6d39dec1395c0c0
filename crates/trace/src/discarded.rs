//! Discarded-items records: what a packet says the tracer lost, as the printers and the
//! analyses take it.

/// Which discarded items a warning is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Discarded {
    /// Events (`events_discarded` went up).
    Events,
    /// Packets (`packet_seq_num` skipped).
    Packets,
}

/// A discarded-items record, as the printers take it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiscardedItems {
    /// Events or packets.
    pub kind: Discarded,
    /// How many.
    pub count: u64,
    /// Whether `count` can be trusted: babeltrace2 does not trust the discarded-events counter
    /// of a stream's first packet (it may count events lost before this recording started)
    /// and says "may have discarded events" without a count.
    pub exact: bool,
    /// Start of the time range (ns from origin), when the stream's packets have both begin
    /// and end times.
    pub begin_ns: Option<i64>,
    /// End of the time range (ns from origin).
    pub end_ns: Option<i64>,
}
