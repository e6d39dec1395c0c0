//! Pajé trace files (the generic format of the Pajé viewer, read by `pajeng`'s `pj_dump` and
//! ViTE; the 2005 multi-level toolkit paper exports its super-trace to it, section 2.3).
//!
//! The file opens with the definitions of the events it uses (`%EventDef` blocks), then
//! declares the types: a `Machine` container holding `Process` containers holding `Thread`
//! containers; a thread's `State` (running, preempted, waiting for CPU, blocked (S)... set
//! at each change, `unknown` in gaps) and `Syscall` (pushed at a call's entry, popped at its
//! exit) state types; a `Probe` event type. Then the containers are created at time 0 and the
//! states and events follow in time order. Times are seconds since the first event.

use std::collections::BTreeSet;
use std::io::Write;

use tracelens_analysis::{Arg, TimelineReport};

use crate::Result;

const HEADER: &str = "\
%EventDef PajeDefineContainerType 0
%       Alias string
%       Type string
%       Name string
%EndEventDef
%EventDef PajeDefineStateType 1
%       Alias string
%       Type string
%       Name string
%EndEventDef
%EventDef PajeDefineEventType 2
%       Alias string
%       Type string
%       Name string
%EndEventDef
%EventDef PajeDefineEntityValue 3
%       Alias string
%       Type string
%       Name string
%       Color color
%EndEventDef
%EventDef PajeCreateContainer 4
%       Time date
%       Alias string
%       Type string
%       Container string
%       Name string
%EndEventDef
%EventDef PajeDestroyContainer 5
%       Time date
%       Type string
%       Name string
%EndEventDef
%EventDef PajeSetState 6
%       Time date
%       Type string
%       Container string
%       Value string
%EndEventDef
%EventDef PajePushState 7
%       Time date
%       Type string
%       Container string
%       Value string
%EndEventDef
%EventDef PajePopState 8
%       Time date
%       Type string
%       Container string
%EndEventDef
%EventDef PajeNewEvent 9
%       Time date
%       Type string
%       Container string
%       Value string
%EndEventDef
0 CM 0 Machine
0 CP CM Process
0 CT CP Thread
1 ST CT State
1 SY CT Syscall
2 EP CT Probe
";

/// A Pajé string: quoted, with quotes and line breaks made harmless.
fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace(['"', '\n', '\r'], "'"))
}

/// A colour for a state name ("R G B", 0 to 1).
fn color(state: &str) -> &'static str {
    match state {
        "running" => "0.0 0.7 0.0",
        "preempted" => "0.9 0.6 0.0",
        "waiting for CPU" => "0.9 0.9 0.0",
        "unknown" => "0.8 0.8 0.8",
        s if s.starts_with("blocked") => "0.7 0.0 0.0",
        _ => "0.3 0.3 0.8",
    }
}

/// Writes `timeline` as a Pajé trace to `out`.
pub fn write_paje(timeline: &TimelineReport, mut out: impl Write) -> Result<()> {
    let origin = timeline.begin_ns.unwrap_or(0);
    let end = timeline.end_ns.unwrap_or(origin);
    let secs = |ns: i64| format!("{:.9}", (ns - origin) as f64 / 1e9);
    out.write_all(HEADER.as_bytes())?;
    // Entity values: every state and call name, each with an alias.
    let states: BTreeSet<&str> = timeline.threads.iter().flat_map(|t| t.states.iter().map(|s| s.state.as_str())).chain(["unknown"]).collect();
    let calls: BTreeSet<&str> = timeline.threads.iter().flat_map(|t| t.syscalls.iter().map(|c| c.name.as_str())).collect();
    let alias_of = |set: &BTreeSet<&str>, prefix: &str, name: &str| format!("{prefix}{}", set.iter().position(|x| *x == name).unwrap_or(0));
    for (i, s) in states.iter().enumerate() {
        writeln!(out, "3 V{i} ST {} \"{}\"", quote(s), color(s))?;
    }
    for (i, c) in calls.iter().enumerate() {
        writeln!(out, "3 Y{i} SY {} \"{}\"", quote(c), color(c))?;
    }
    writeln!(out, "4 {} m CM 0 \"machine\"", secs(origin))?;
    let mut procs = BTreeSet::new();
    for t in &timeline.threads {
        let pid = t.pid.unwrap_or(t.tid);
        if procs.insert(pid) {
            let name = timeline.threads.iter().find(|x| x.tid == pid).map_or(t.name.as_str(), |x| x.name.as_str());
            writeln!(out, "4 {} p{pid} CP m {}", secs(origin), quote(&format!("{name} ({pid})")))?;
        }
        writeln!(out, "4 {} t{} CT p{pid} {}", secs(origin), t.tid, quote(&format!("{} ({})", t.name, t.tid)))?;
    }
    // Everything else, in time order (stable: a thread's own order kept at equal times).
    let mut lines: Vec<(i64, u8, String)> = Vec::new();
    for t in &timeline.threads {
        let mut at = None;
        for s in &t.states {
            if at.is_some_and(|a| a < s.begin_ns) {
                lines.push((at.unwrap_or(0), 0, format!("ST t{} {}", t.tid, alias_of(&states, "V", "unknown"))));
            }
            lines.push((s.begin_ns, 1, format!("ST t{} {}", t.tid, alias_of(&states, "V", &s.state))));
            at = Some(s.end_ns);
        }
        if let Some(a) = at.filter(|&a| a < end) {
            lines.push((a, 0, format!("ST t{} {}", t.tid, alias_of(&states, "V", "unknown"))));
        }
        for c in &t.syscalls {
            lines.push((c.begin_ns, 2, format!("7 {{}} SY t{} {}", t.tid, alias_of(&calls, "Y", &c.name))));
            lines.push((c.end_ns, 0, format!("8 {{}} SY t{}", t.tid)));
        }
        for e in &t.events {
            let value = match e.args.first() {
                Some((_, Arg::Int(i))) => format!("{} {i}", e.name),
                Some((_, Arg::Text(s))) => format!("{} {s}", e.name),
                None => e.name.clone(),
            };
            lines.push((e.ns, 3, format!("9 {{}} EP t{} {}", t.tid, quote(&value))));
        }
    }
    lines.sort_by_key(|l| (l.0, l.1));
    for (ns, _, line) in lines {
        match line.strip_prefix("ST ") {
            Some(rest) => writeln!(out, "6 {} ST {rest}", secs(ns))?,
            None => writeln!(out, "{}", line.replacen("{}", &secs(ns), 1))?,
        }
    }
    for t in &timeline.threads {
        writeln!(out, "5 {} CT t{}", secs(end), t.tid)?;
    }
    writeln!(out, "5 {} CM m", secs(end))?;
    out.flush()?;
    Ok(())
}
