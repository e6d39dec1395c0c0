//! One per-CPU stream of the synth trace (`channel0_CPU` and its `index/channel0_CPU.idx`),
//! written through [`tracelens_ctf::write`]: LTTng packets all of one size, compact event
//! headers (extended when the id is above 30 or the time since the previous event does not
//! fit 27 bits), the CPU in each packet context.

use std::fs::File;
use std::io::BufWriter;

use tracelens_ctf::lttng::CPU_ID;
use tracelens_ctf::write::{EventValues, OwnedValue, StreamOptions, TraceWriter};

use crate::schema::EVENTS;
use crate::Error;

/// A field value to encode.
#[derive(Clone, Copy, Debug)]
pub enum V<'s> {
    /// An integer (any integer kind).
    I(i64),
    /// A string or task name.
    S(&'s str),
}

/// One stream file being written.
pub struct StreamWriter {
    out: tracelens_ctf::write::StreamWriter<BufWriter<File>>,
    /// Per class: its payload, updated in place for each event (no allocation per event).
    payloads: Vec<OwnedValue>,
    last_ts: u64,
}

impl StreamWriter {
    /// Opens `channel0_CPU` (and its index) in `trace`, with packets of `packet_bytes`.
    pub fn create(trace: &mut TraceWriter, cpu: u32, packet_bytes: u64) -> Result<StreamWriter, Error> {
        let opts = StreamOptions { packet_size: packet_bytes, instance_id: Some(cpu.into()), fixed_size: true, ..StreamOptions::default() };
        let mut out = trace.stream_with(0, &format!("channel0_{cpu}"), &opts)?;
        out.set_packet_context(CPU_ID, OwnedValue::U(cpu.into()))?;
        let payloads = EVENTS.iter().map(|d| tracelens_ctf::lttng::ClassDef::from(d).blank_payload()).collect();
        Ok(StreamWriter { out, payloads, last_ts: 0 })
    }

    /// Appends an event of class `id` at time `ts` (cycles = ns; an earlier time than the
    /// stream's last is moved up to it) with `values` in the class's field order.
    pub fn event(&mut self, id: u32, ts: u64, values: &[V<'_>]) -> Result<(), Error> {
        let ts = ts.max(self.last_ts);
        let fields = EVENTS[id as usize].fields;
        debug_assert_eq!(fields.len(), values.len(), "{}", EVENTS[id as usize].name);
        let payload = &mut self.payloads[id as usize];
        if let OwnedValue::Struct(slots) = payload {
            for ((slot, (_, ty)), v) in slots.iter_mut().zip(fields).zip(values) {
                match v {
                    V::I(x) => *slot = ty.int_value(*x),
                    V::S(s) if ty.is_text() => ty.set_text(slot, s.as_bytes()),
                    V::S(_) => *slot = ty.int_value(0),
                }
            }
        }
        self.out.event(id.into(), ts, EventValues::payload(payload))?;
        self.last_ts = ts;
        Ok(())
    }

    /// Writes the last packet and flushes both files: (events, bytes) written.
    pub fn finish(self) -> Result<(u64, u64), Error> {
        let f = self.out.finish()?;
        Ok((f.events, f.bytes))
    }
}
