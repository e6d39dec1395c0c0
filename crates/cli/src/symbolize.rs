//! `tracelens print --symbolize`: the unwound, symbolized stack of each stack-sample event,
//! after the event (text: one indented line per frame; JSON: a `frames` member).

use std::io::{self, Write};

use tracelens_ctf::EventView;
use tracelens_symbolize::{Stack, Symbolizer};
use tracelens_trace::json::write_json_str;

use crate::table::esc;

/// The symbolizer of a `print` run.
pub struct Stacks {
    sym: Symbolizer,
    json_line: Vec<u8>,
}

impl Stacks {
    /// A symbolizer for the traces of `set` (their JIT symbol files included).
    pub fn new(set: &tracelens_trace::TraceSet) -> Stacks {
        Stacks { sym: Symbolizer::for_traces(set.traces.iter().map(|t| t.dir.as_path())), json_line: Vec::new() }
    }

    /// Follows maps, forks and execs: call for every event, before any filter.
    pub fn observe(&mut self, ev: &EventView<'_, '_>) {
        self.sym.observe(ev);
    }

    /// The stack of `ev` when it is a stack sample.
    pub fn stack(&mut self, ev: &EventView<'_, '_>) -> Option<Stack> {
        self.sym.stack(ev)
    }

    /// Text: one line per frame, `    #N  0xADDRESS function+0xOFF (file:line) [module]`,
    /// then why the walk stopped when it is not at the outermost frame.
    pub fn write_text(&self, out: &mut impl Write, stack: &Stack) -> io::Result<()> {
        for (i, f) in stack.frames.iter().enumerate() {
            if f.kind == tracelens_symbolize::FrameKind::Python && f.address == 0 {
                // Read from the interpreter: no machine address.
                writeln!(out, "    #{i:<2} {:18} {}", "", esc(&f.describe()))?;
            } else {
                writeln!(out, "    #{i:<2} {:#018x} {}", f.address, esc(&f.describe()))?;
            }
        }
        if stack.stop != tracelens_symbolize::Stop::End {
            writeln!(out, "    (stopped: {})", stack.stop.describe())?;
        }
        Ok(())
    }

    /// JSON: the event line as `write` writes it, with `"frames": [...]` added.
    pub fn write_json(&mut self, out: &mut impl Write, stack: &Stack, write: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> io::Result<()> {
        let mut line = std::mem::take(&mut self.json_line);
        line.clear();
        write(&mut line)?;
        if line.ends_with(b"}\n") {
            line.truncate(line.len() - 2);
            line.extend_from_slice(b",\"frames\":[");
            for (i, f) in stack.frames.iter().enumerate() {
                if i > 0 {
                    line.push(b',');
                }
                write!(line, "{{\"address\":{},\"kind\":\"{}\"", f.address, f.kind.as_str())?;
                let s = &f.symbol;
                for (k, v) in [("function", s.function.as_deref()), ("file", s.file.as_deref()), ("module", f.module.as_deref())] {
                    if let Some(v) = v {
                        write!(line, ",\"{k}\":")?;
                        write_json_str(&mut line, v.as_bytes())?;
                    }
                }
                if let Some(o) = s.offset {
                    write!(line, ",\"offset\":{o}")?;
                }
                if let Some(l) = s.line {
                    write!(line, ",\"line\":{l}")?;
                }
                line.push(b'}');
            }
            writeln!(line, "],\"unwind_stop\":\"{}\"}}", stack.stop.describe())?;
        }
        let r = out.write_all(&line);
        self.json_line = line;
        r
    }

    /// Problems met (missing files, changed build ids, files that are not regular files,
    /// loads given up), for a warning at the end.
    pub fn problems(&self) -> &[tracelens_symbolize::Error] {
        &self.sym.problems
    }
}
