//! Chrome trace-event JSON (the format of `chrome://tracing`, Perfetto's UI and Speedscope):
//! one JSON object `{"traceEvents": [...], "stackFrames": {...}, "displayTimeUnit": "ns"}`.
//!
//! * Each thread is a track (`pid` its process, `tid` itself), named by `M` metadata events.
//! * Its scheduling states are complete events (`ph: "X"`, category `sched`): `running`
//!   (with the CPU), `preempted`, `waiting for CPU`, `blocked (S)`..., back to back.
//! * Its system calls are complete events (category `syscall`) nested in them: a call that
//!   spans several states (a `read` that blocks) is cut at the state boundaries, each piece
//!   inside its state, so that events on a track are strictly nested, as the format requires
//!   of complete events.
//! * Probe events are thread-scoped instant events (`ph: "i"`, `s: "t"`, category `probe`)
//!   with their fields as `args`; stack samples are instant events (category `stack`) whose
//!   `sf` names their innermost frame in `stackFrames` (each frame names its `parent`).
//! * Times (`ts`, `dur`) are microseconds, with nanosecond decimals, from the first event.

use std::collections::HashMap;
use std::io::Write;

use serde::Serialize;
use serde_json::{Map, Value};
use tracelens_analysis::{Arg, TimelineReport};

use crate::samples::Sample;
use crate::Result;

#[derive(Serialize)]
struct Event<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    cat: &'a str,
    ph: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ts: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    pid: i64,
    tid: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sf: Option<String>,
    #[serde(skip_serializing_if = "Map::is_empty")]
    args: Map<String, Value>,
}

impl<'a> Event<'a> {
    fn new(name: &'a str, cat: &'a str, ph: &'static str, pid: i64, tid: i64) -> Event<'a> {
        Event { name, cat, ph, ts: None, dur: None, pid, tid, s: None, sf: None, args: Map::new() }
    }
}

#[derive(Serialize)]
struct Frame<'a> {
    name: &'a str,
    category: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent: Option<String>,
}

/// Writes events separated by commas.
struct Events<W: Write> {
    out: W,
    first: bool,
}

impl<W: Write> Events<W> {
    fn push(&mut self, e: &Event<'_>) -> Result<()> {
        if !self.first {
            self.out.write_all(b",\n")?;
        }
        self.first = false;
        serde_json::to_writer(&mut self.out, e).map_err(std::io::Error::from)?;
        Ok(())
    }
}

fn arg(v: &Arg) -> Value {
    match v {
        Arg::Int(i) => Value::from(*i),
        Arg::Text(s) => Value::from(s.as_str()),
    }
}

/// Writes `timeline` and `samples` as Chrome trace-event JSON to `out`.
pub fn write_chrome(timeline: &TimelineReport, samples: &[Sample], out: impl Write) -> Result<()> {
    let origin = timeline.begin_ns.into_iter().chain(samples.first().map(|s| s.ns)).min().unwrap_or(0);
    let us = |ns: i64| (ns - origin) as f64 / 1000.0;
    let mut w = Events { out, first: true };
    w.out.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
    let mut named_pids = std::collections::HashSet::new();
    for t in &timeline.threads {
        let pid = t.pid.unwrap_or(t.tid);
        if named_pids.insert(pid) {
            let mut m = Event::new("process_name", "", "M", pid, pid);
            let pname = timeline.threads.iter().find(|x| x.tid == pid).map_or(t.name.as_str(), |x| x.name.as_str());
            m.args.insert("name".into(), Value::from(format!("{pname} ({pid})")));
            w.push(&m)?;
        }
        let mut m = Event::new("thread_name", "", "M", pid, t.tid);
        m.args.insert("name".into(), Value::from(format!("{} ({})", t.name, t.tid)));
        w.push(&m)?;
        for s in &t.states {
            let mut e = Event::new(&s.state, "sched", "X", pid, t.tid);
            e.ts = Some(us(s.begin_ns));
            e.dur = Some((s.end_ns - s.begin_ns) as f64 / 1000.0);
            if let Some(cpu) = s.cpu {
                e.args.insert("cpu".into(), Value::from(cpu));
            }
            w.push(&e)?;
        }
        // State boundaries: each system call is cut there.
        let mut cuts: Vec<i64> = t.states.iter().flat_map(|s| [s.begin_ns, s.end_ns]).collect();
        cuts.dedup();
        for c in &t.syscalls {
            let inside = &cuts[cuts.partition_point(|&x| x <= c.begin_ns)..cuts.partition_point(|&x| x < c.end_ns)];
            let mut from = c.begin_ns;
            for &to in inside.iter().chain(std::iter::once(&c.end_ns)) {
                let mut e = Event::new(&c.name, "syscall", "X", pid, t.tid);
                e.ts = Some(us(from));
                e.dur = Some((to - from) as f64 / 1000.0);
                if from != c.begin_ns || to != c.end_ns {
                    e.args.insert("whole_call_us".into(), Value::from((c.end_ns - c.begin_ns) as f64 / 1000.0));
                }
                w.push(&e)?;
                from = to;
            }
        }
        for i in &t.events {
            let mut e = Event::new(&i.name, "probe", "i", pid, t.tid);
            e.ts = Some(us(i.ns));
            e.s = Some("t");
            for (k, v) in &i.args {
                e.args.insert(k.clone(), arg(v));
            }
            w.push(&e)?;
        }
    }
    // Stack frames: one node per distinct (parent, name).
    let mut ids: HashMap<(Option<usize>, &str), usize> = HashMap::new();
    let mut frames: Vec<(Option<usize>, &str)> = Vec::new();
    for s in samples {
        let mut parent = None;
        for f in &s.frames {
            let id = *ids.entry((parent, f.as_str())).or_insert_with(|| {
                frames.push((parent, f.as_str()));
                frames.len() - 1
            });
            parent = Some(id);
        }
        let mut e = Event::new("stack sample", "stack", "i", s.pid, s.tid);
        e.ts = Some(us(s.ns));
        e.s = Some("t");
        e.sf = parent.map(|p| p.to_string());
        e.args.insert("kind".into(), Value::from(s.kind.as_str()));
        w.push(&e)?;
    }
    let mut out = w.out;
    out.write_all(b"\n],\"stackFrames\":{")?;
    for (id, (parent, name)) in frames.iter().enumerate() {
        if id > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut out, &id.to_string()).map_err(std::io::Error::from)?;
        out.write_all(b":")?;
        serde_json::to_writer(&mut out, &Frame { name, category: "stack", parent: parent.map(|p| p.to_string()) }).map_err(std::io::Error::from)?;
    }
    out.write_all(b"}}\n")?;
    out.flush()?;
    Ok(())
}
