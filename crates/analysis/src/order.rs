//! The one total order of events across chunks, which every analysis uses to say "earlier" or
//! "last" in a way that does not depend on how the trace was cut.
//!
//! Events are ordered by time, then by stream, then by position in the stream. A chunk is a
//! run of consecutive packets of one stream, so the position of an event is its packet and its
//! rank among the events counted in that packet: an [`EventCounter`] in each chunk state hands
//! out those [`EventKey`]s. Two events of different streams at the same time are ordered by
//! stream, whichever chunks read them; the keys are the same values for every cut (section 4.2
//! of *Parallel trace analysis*, 2019, needs an order that merges can agree on).
//!
//! The merges of an analysis resolve, up to a *frontier* (the start time of the next chunk in
//! time order: no later chunk holds an earlier event), what the earlier chunks could not;
//! [`EventKey::is_before`] says whether a key is there.

use crate::engine::Context;

/// Where an event stands in the time order of the whole trace set, ties between equal times
/// broken by stream and position in the stream: the same for every way of cutting the trace
/// into chunks. Made by an [`EventCounter`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventKey {
    /// Time in ns.
    pub ns: i64,
    /// Trace index << 32 | stream index.
    pub stream: u64,
    /// Packet index << 32 | number of the event among those counted in its packet.
    pub pos: u64,
}

impl EventKey {
    /// Whether the event is before `frontier` (every event is with `None`: the end of the
    /// trace).
    #[inline]
    pub fn is_before(&self, frontier: Option<i64>) -> bool {
        frontier.is_none_or(|f| self.ns < f)
    }
}

/// Numbers the events an analysis counts within their packet, to make [`EventKey`]s. Keep one
/// in each chunk state and call [`key`](EventCounter::key) for the same kinds of events in
/// every chunk (e.g. for every decoded kernel event): since chunks are cut at packet
/// boundaries, the keys then do not depend on the cut.
#[derive(Clone, Debug, Default)]
pub struct EventCounter {
    /// 1 + the packet of the last key (0: none yet).
    packet: usize,
    /// Its stream, as in [`EventKey::stream`].
    stream: u64,
    n: u32,
}

impl EventCounter {
    /// The key of the event at `ns` that `cx`'s cursor is on.
    #[inline]
    pub fn key(&mut self, ns: i64, cx: &Context<'_, '_>) -> EventKey {
        let packet = cx.packet;
        if packet.wrapping_add(1) != self.packet {
            self.packet = packet.wrapping_add(1);
            self.stream = stream_of(cx);
            self.n = 0;
        }
        let pos = (packet as u64) << 32 | self.n as u64;
        self.n = self.n.wrapping_add(1);
        EventKey { ns, stream: self.stream, pos }
    }
}

/// The [`EventKey::stream`] of the events `cx` reads.
#[inline]
fn stream_of(cx: &Context<'_, '_>) -> u64 {
    (cx.chunk.trace as u64) << 32 | cx.chunk.stream as u64
}

/// A CPU of one stream: what an analysis keeps per CPU it keeps per stream and CPU (the
/// chunks of one stream are merged in stream order; two traces of a set both have a CPU 0).
/// One number: [`Chunk::set_stream`](crate::Chunk::set_stream) << 32 | CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamCpu(pub u64);

impl StreamCpu {
    /// The CPU `cpu` of the stream `cx` reads.
    #[inline]
    pub fn new(cx: &Context<'_, '_>, cpu: u32) -> StreamCpu {
        StreamCpu(u64::from(cx.chunk.set_stream) << 32 | u64::from(cpu))
    }
}
