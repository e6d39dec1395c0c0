//! Execution delimiters (the TraceCompare thesis, section 4.4.2, "Execution Delimiters
//! Events"): which events begin and end an execution, and what of them becomes dimensions.
//!
//! * [`Delimiter::Function`]: each call of a function, from its entry to its return on the
//!   same thread, as `tracelens record --uprobe BINARY:FUNCTION` records them: tracefs
//!   uprobe and uretprobe events named `FUNC_entry` and `FUNC_return`, FUNC the symbol's
//!   name with every character but letters, digits and `_` made `_`, cut at 56 characters.
//!   `perf probe`'s names (`FUNCTION` and `FUNCTION__return`) are recognized too.
//! * [`Delimiter::Events`]: from an event to another, named with `*` and `?` wildcards
//!   (several names or patterns separated by commas) —
//!   user-space probes, system calls (`syscall_exit_accept` to `syscall_entry_shutdown`, the
//!   thesis's Apache requests), any event — on the same thread, or, with a match field,
//!   between events whose field of that name has the same value, on any threads.
//!
//! Executions nest: a begin while an execution of the same thread (or value) is open starts
//! an inner one, and an end closes the innermost.

use tracelens_ctf::{EventView, Value};
use tracelens_trace::filter::glob_match;
use tracelens_trace::TraceSet;

use crate::{Error, Result};

/// How executions are delimited.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delimiter {
    /// Each call of this function (uprobe entry to return, same thread).
    Function(String),
    /// From a `begin` event to an `end` event (comma-separated name patterns), on the same
    /// thread, or between events with the same value of `match_field`.
    Events {
        /// Patterns of the events that begin an execution.
        begin: String,
        /// Patterns of the events that end one.
        end: String,
        /// The field whose values pair begins and ends (payload, then contexts).
        match_field: Option<String>,
    },
}

impl Delimiter {
    /// In words, as the database records it.
    pub fn describe(&self) -> String {
        match self {
            Delimiter::Function(f) => format!("function {f}"),
            Delimiter::Events { begin, end, match_field: None } => format!("events {begin} to {end} on one thread"),
            Delimiter::Events { begin, end, match_field: Some(m) } => format!("events {begin} to {end} with the same {m}"),
        }
    }
}

/// Role bits of an event class.
pub(crate) const BEGIN: u8 = 1;
/// See [`BEGIN`].
pub(crate) const END: u8 = 2;

/// What an event class is for the delimiter.
#[derive(Clone, Debug)]
pub(crate) struct ClassRole {
    /// [`BEGIN`], [`END`] or both.
    pub(crate) role: u8,
    /// Payload fields kept as dimensions: (field name, dimension index).
    pub(crate) dims: Vec<(String, u32)>,
}

/// Fields of uprobe events that say nothing of the call.
const PROBE_FIELDS: [&str; 3] = ["__probe_ip", "__probe_func", "__probe_ret_ip"];

/// The event name of a function's uprobes before `_entry` / `_return` (`tracelens record
/// --uprobe`'s convention).
fn uprobe_stem(function: &str) -> String {
    function.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).take(56).collect()
}

fn short(name: &str) -> &str {
    name.rsplit_once(':').map_or(name, |(_, e)| e)
}

/// Whether `name` matches one of the comma-separated patterns of `patterns`.
fn any_match(patterns: &str, name: &str) -> bool {
    patterns.split(',').any(|p| glob_match(p.trim().as_bytes(), name.as_bytes()))
}

/// An event class's role: (trace, stream class, event class id, role).
pub(crate) type Role = (usize, usize, u64, ClassRole);

/// The roles of the event classes of `set`, and the dimension names (`begin.FIELD`,
/// `end.FIELD`). An error says when no class begins or ends an execution.
pub(crate) fn roles(set: &TraceSet, d: &Delimiter) -> Result<(Vec<Role>, Vec<String>)> {
    let mut out = Vec::new();
    let mut dims: Vec<String> = Vec::new();
    let (mut any_begin, mut any_end) = (false, false);
    for (ti, t) in set.traces.iter().enumerate() {
        for (si, s) in t.class.streams.iter().enumerate() {
            for e in &s.events {
                let fields: Vec<&str> = match e.payload.as_deref().and_then(|p| p.as_struct()) {
                    Some(st) => st.fields.iter().map(|f| tracelens_ctf::ir::display_name(&f.name)).collect(),
                    None => Vec::new(),
                };
                let has = |f: &str| fields.contains(&f);
                let role = match d {
                    Delimiter::Function(f) => {
                        let (n, stem) = (short(&e.name), uprobe_stem(f));
                        if (n == format!("{stem}_entry") && has("__probe_ip")) || n == f {
                            BEGIN
                        } else if (n == format!("{stem}_return") && has("__probe_func")) || n == format!("{f}__return") {
                            END
                        } else {
                            0
                        }
                    }
                    Delimiter::Events { begin, end, .. } => {
                        let mut r = 0;
                        if any_match(begin, &e.name) {
                            r |= BEGIN;
                        }
                        if any_match(end, &e.name) {
                            r |= END;
                        }
                        r
                    }
                };
                if role == 0 {
                    continue;
                }
                let mut class_dims = Vec::new();
                for f in fields.iter().filter(|f| !PROBE_FIELDS.contains(f)) {
                    for (bit, side) in [(BEGIN, "begin"), (END, "end")] {
                        if role & bit != 0 {
                            let name = format!("{side}.{f}");
                            let i = match dims.iter().position(|x| *x == name) {
                                Some(i) => i,
                                None => {
                                    dims.push(name);
                                    dims.len() - 1
                                }
                            };
                            class_dims.push((f.to_string(), i as u32));
                        }
                    }
                }
                // Only the classes that could begin or end: checked per event for functions.
                any_begin |= role & BEGIN != 0;
                any_end |= role & END != 0;
                out.push((ti, si, e.id, ClassRole { role, dims: class_dims }));
            }
        }
    }
    match d {
        Delimiter::Function(f) if !any_begin || !any_end => Err(Error::NoDelimiter(format!(
            "no uprobe {} event for function `{f}` in the trace (record its calls with `tracelens record --uprobe BINARY:{f}`)",
            if any_begin { "return" } else { "entry" }
        ))),
        Delimiter::Events { begin, .. } if !any_begin => Err(Error::NoDelimiter(format!("--begin-event `{begin}`: no event class of the trace(s) has a matching name"))),
        Delimiter::Events { end, .. } if !any_end => Err(Error::NoDelimiter(format!("--end-event `{end}`: no event class of the trace(s) has a matching name"))),
        _ => Ok((out, dims)),
    }
}

/// The thread of an event, when its contexts give one (`tid`, `vtid`, perf's `perf_tid`).
pub(crate) fn event_tid(ev: &EventView<'_, '_>) -> Option<i64> {
    ["tid", "vtid", "perf_tid"].into_iter().find_map(|n| [ev.common_context, ev.context].into_iter().find_map(|s| s.get(n)).and_then(|f| f.as_i64()))
}

/// The process of an event, when its contexts give one.
pub(crate) fn event_pid(ev: &EventView<'_, '_>) -> Option<i64> {
    ["pid", "vpid", "perf_pid"].into_iter().find_map(|n| [ev.common_context, ev.context].into_iter().find_map(|s| s.get(n)).and_then(|f| f.as_i64()))
}

/// The value events are matched on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Matched {
    /// An integer field.
    Int(i128),
    /// A string or byte-array field.
    Bytes(Box<[u8]>),
}

/// The value of field `name` of `ev` (payload, then contexts), if it has one that matches.
pub(crate) fn matched(ev: &EventView<'_, '_>, name: &str) -> Option<Matched> {
    match ev.field(name)?.value {
        Value::Unsigned(u) => Some(Matched::Int(u.into())),
        Value::Signed(i) => Some(Matched::Int(i.into())),
        Value::Str(b) | Value::BigInt(b) => Some(Matched::Bytes(b.into())),
        _ => None,
    }
}

/// A dimension's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Dim {
    Int(i64),
    Text(Box<str>),
}

/// The dimensions of `ev` for its class.
pub(crate) fn dims_of(ev: &EventView<'_, '_>, role: &ClassRole, bit: u8) -> Vec<(u32, Dim)> {
    let side = if bit == BEGIN { 0 } else { 1 };
    let mut out = Vec::new();
    // Dimensions come in (begin, end) order per field when a class is both.
    let per_field = if role.role == BEGIN | END { 2 } else { 1 };
    for (k, (name, dim)) in role.dims.iter().enumerate() {
        if per_field == 2 && k % 2 != side {
            continue;
        }
        let Some(f) = ev.payload.get(name) else { continue };
        let v = match f.value {
            Value::Unsigned(u) => Dim::Int(u as i64),
            Value::Signed(i) => Dim::Int(i),
            Value::Str(b) => Dim::Text(String::from_utf8_lossy(tracelens_ctf::until_nul(b)).into()),
            _ => continue,
        };
        out.push((*dim, v));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions() {
        assert_eq!(Delimiter::Function("f".into()).describe(), "function f");
        let d = Delimiter::Events { begin: "a".into(), end: "b".into(), match_field: Some("id".into()) };
        assert_eq!(d.describe(), "events a to b with the same id");
    }

    #[test]
    fn pattern_lists() {
        assert!(any_match("usleep_entry,handle_*_entry", "handle_request_entry"));
        assert!(any_match("usleep_entry, handle_*_entry", "usleep_entry"));
        assert!(!any_match("usleep_entry,handle_*_entry", "irq_handler_entry"));
    }
}
