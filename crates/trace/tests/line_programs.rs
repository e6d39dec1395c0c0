//! The printers' line programs (compiled per event class from its first event) write exactly
//! what walking each event's fields writes, the walk being the output checked against
//! babeltrace2: every fixture trace is printed both ways, text (with several `--names` and
//! `--fields` settings) and JSON, and the bytes compared. The programs write in place (in the
//! room a buffered writer lends, values repeated from the class's previous event copied from
//! what was written then), the walk through `io::Write`.

use std::io::Write;
use std::path::{Path, PathBuf};

use tracelens_ctf::Item;
use tracelens_trace::json::JsonPrinter;
use tracelens_trace::text::{trace_names, TextOptions, TextPrinter};
use tracelens_trace::{LineOut, OutBuf, TraceSet};

fn traces_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces")
}

/// Every directory under `dir` that holds a `metadata` file.
fn trace_dirs(dir: &Path, out: &mut Vec<PathBuf>) {
    if dir.join("metadata").is_file() {
        out.push(dir.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut subs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    subs.sort();
    for s in subs {
        trace_dirs(&s, out);
    }
}

/// One of the two printers, with or without line programs.
enum Printer {
    Text(TextPrinter),
    Json(JsonPrinter),
}

impl Printer {
    fn make(set: &TraceSet, dir: &Path, text: Option<&TextOptions>, programs: bool) -> Printer {
        match text {
            Some(opts) => {
                let mut p = TextPrinter::new(set, &trace_names(set, &[dir.to_path_buf()]), opts.clone());
                p.set_quiet(true);
                p.set_line_programs(programs);
                Printer::Text(p)
            }
            None => {
                let mut p = JsonPrinter::new(set);
                p.set_line_programs(programs);
                Printer::Json(p)
            }
        }
    }

    /// Prints every event of `set` (up to its first error), in time order: to a vector (which
    /// lends no room: every piece is written through `io::Write`), or `in_place` through an
    /// `OutBuf` of 4 KiB (which lends its room, passed on when full, and lends none for a
    /// line longer than it).
    fn print(&mut self, set: &TraceSet, in_place: bool) -> Vec<u8> {
        let mut vec = Vec::new();
        let mut buffered = OutBuf::with_capacity(4096, Vec::new());
        let mut out: &mut dyn LineOut = if in_place { &mut buffered } else { &mut vec };
        let mut merger = set.merger();
        while let Ok(Some((src, item))) = merger.next() {
            if item != Item::Event {
                continue;
            }
            let Some(ev) = merger.event() else { continue };
            let r = match self {
                Printer::Text(p) => p.write_event(&mut out, src, &ev),
                Printer::Json(p) => p.write_event(&mut out, src, &ev),
            };
            r.expect("writing to a vector");
        }
        if in_place {
            buffered.flush().expect("writing to a vector");
            return std::mem::take(buffered.get_mut());
        }
        vec
    }

    fn line_programs(&self) -> (usize, usize) {
        match self {
            Printer::Text(p) => p.line_programs(),
            Printer::Json(p) => p.line_programs(),
        }
    }
}

#[test]
fn line_programs_print_what_the_walk_prints() {
    let mut dirs = Vec::new();
    trace_dirs(&traces_root(), &mut dirs);
    if dirs.is_empty() {
        assert!(std::env::var_os("CI").is_none(), "CI must have the fixtures under {}", traces_root().display());
        eprintln!("skipped: no fixtures under {}", traces_root().display());
        return;
    }
    let mut settings: Vec<Option<TextOptions>> = vec![None, Some(TextOptions::default())];
    for (names, fields) in [("all", "all"), ("none", "trace,loglevel"), ("scope,payload", "emf,trace:hostname")] {
        let mut o = TextOptions::default();
        o.set_names(names).unwrap();
        o.set_fields(fields).unwrap();
        settings.push(Some(o));
    }
    let (mut traces, mut compiled, mut walked, mut bytes) = (0, 0, 0, 0);
    for dir in &dirs {
        let Ok(set) = TraceSet::open(&[dir]) else { continue };
        traces += 1;
        for opts in &settings {
            let mut with = Printer::make(&set, dir, opts.as_ref(), true);
            let mut without = Printer::make(&set, dir, opts.as_ref(), false);
            let (a, b) = (with.print(&set, true), without.print(&set, false));
            let what = if opts.is_some() { "text" } else { "JSON" };
            if a != b {
                let line = a.split(|&c| c == b'\n').zip(b.split(|&c| c == b'\n')).position(|(x, y)| x != y).unwrap_or(0);
                panic!("{}: {what} with line programs differs from the walk at line {}", dir.display(), line + 1);
            }
            let (c, w) = with.line_programs();
            assert_eq!(without.line_programs().0, 0, "{}: no programs when they are off", dir.display());
            compiled += c;
            walked += w;
            bytes += a.len();
        }
    }
    eprintln!("{traces} traces, {bytes} bytes printed each way; {compiled} programs, {walked} classes walked");
    // Both paths ran: classes of a fixed shape and classes with variants or sequences.
    assert!(traces > 100 && compiled > 100 && walked > 10, "{traces} traces, {compiled} programs, {walked} walked");
}
