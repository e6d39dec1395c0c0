//! Discarded-items records: what a packet says the tracer lost, as the printers and the
//! analyses take it.

use tracelens_ctf::{Cursor, Item};

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

impl DiscardedItems {
    /// The record that `item`, the item `cursor` just read, is (`None` for an event): its
    /// times in ns, and whether its count is exact.
    pub fn of(cursor: &Cursor<'_>, item: Item) -> Option<DiscardedItems> {
        let (kind, count, begin, end) = match item {
            Item::Event => return None,
            Item::DiscardedEvents { count, begin, end } => (Discarded::Events, count, begin, end),
            Item::DiscardedPackets { count, begin, end } => (Discarded::Packets, count, begin, end),
        };
        let first_packet = match (cursor.packet(), cursor.stream().packets.first()) {
            (Some(p), Some(f)) => std::ptr::eq(p, f),
            _ => false,
        };
        let to_ns = |c: Option<u64>| c.and_then(|c| cursor.cycles_to_ns(c));
        Some(DiscardedItems { kind, count, exact: !(first_packet && kind == Discarded::Events), begin_ns: to_ns(begin), end_ns: to_ns(end) })
    }
}
