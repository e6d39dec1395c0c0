//! User-space function probes: `tracelens record --uprobe BINARY:FUNCTION` records the entry
//! and the return of each call of FUNCTION through tracefs uprobes and uretprobes, with no
//! change to the program (the TraceCompare thesis's execution delimiters, without probes in
//! the source).
//!
//! * The function is found in the ELF symbol tables (`.symtab`, then `.dynsym`) of BINARY (a
//!   path, or a program name looked up in `PATH`): its address becomes a file offset through
//!   the loadable segment that holds it, which is what tracefs wants, so position-independent
//!   executables and shared libraries work as well as fixed-address executables. A symbol
//!   that is not there is an [`Error::Uprobe`] naming the file, with the closest names.
//! * The probes are dynamic events of a group of our own, `tracelens_<pid>`, written to
//!   `uprobe_events` (appended to, never truncated: other tools' probes stay), enabled in the
//!   recorder's instance only: `FUNC_entry {__probe_ip, arg1..arg6}` (the first six integer
//!   arguments, x86-64 and AArch64) and `FUNC_return {__probe_func, __probe_ret_ip, ret}`,
//!   where FUNC is the symbol's name with every character but letters, digits and `_` made
//!   `_`, cut at 56 characters (event names are at most 64); `tracelens executions
//!   --function FUNCTION` reads them. (The kernel cannot store the name itself in uprobe
//!   events: their immediate strings are read as user memory.)
//! * A uretprobe works by replacing the function's return address with a kernel trampoline
//!   while the call runs: in a stack sampled inside a probed function, the caller's frame is
//!   the trampoline (in no file the process mapped); frame pointers lead on past it.
//! * They are removed when the recording ends — after the instance, which disables them — on
//!   errors too ([`Uprobes`] removes them when dropped). A recorder killed with SIGKILL leaves
//!   them: the next recording removes the groups of recorders that are gone
//!   ([`remove_stale`]).

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};

use crate::error::{io, Error, Result};
use crate::tracefs::{is_stale, owner_pid, read_file, Tracefs};

/// The prefix of our probe groups: `tracelens_<pid>` (`tracelens_<pid>_<n>` for the second and
/// later recordings of one process).
pub const GROUP_PREFIX: &str = "tracelens_";

/// Recordings of this process that defined probes so far.
static GROUP_SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// A function to probe, as given: `BINARY:FUNCTION`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UprobeSpec {
    /// The executable or library (a path, or a program name looked up in `PATH`).
    pub binary: PathBuf,
    /// The function's symbol name.
    pub function: String,
}

impl UprobeSpec {
    /// Parses `BINARY:FUNCTION` (split at the last `:`).
    pub fn parse(s: &str) -> Result<UprobeSpec> {
        match s.rsplit_once(':') {
            Some((b, f)) if !b.is_empty() && !f.is_empty() => Ok(UprobeSpec { binary: b.into(), function: f.into() }),
            _ => Err(Error::Uprobe(format!("`{s}`: expected BINARY:FUNCTION (e.g. ./server:handle_request or /usr/lib/x86_64-linux-gnu/libc.so.6:malloc)"))),
        }
    }
}

/// A probe resolved to a place in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// What was asked.
    pub spec: UprobeSpec,
    /// The file, absolute and without symbolic links.
    pub path: PathBuf,
    /// The function's offset in the file.
    pub offset: u64,
}

/// Finds `binary` (a path, or a name looked up in `PATH`).
fn find_binary(binary: &Path) -> Result<PathBuf> {
    // A path (or a file of that name here), else a program in PATH.
    let candidate = if binary.components().count() > 1 || binary.is_absolute() || binary.exists() {
        Some(binary.to_path_buf())
    } else {
        std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join(binary)).find(|c| c.is_file()))
    };
    let Some(c) = candidate else {
        return Err(Error::Uprobe(format!("{}: no such file, and no program of that name in PATH", binary.display())));
    };
    let abs = fs::canonicalize(&c).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::Uprobe(format!("{}: no such file", c.display())),
        _ => Error::Uprobe(format!("{}: {e}", c.display())),
    })?;
    if !abs.is_file() {
        return Err(Error::Uprobe(format!("{}: not a regular file", abs.display())));
    }
    Ok(abs)
}

/// Resolves `spec`: the file and the function's offset in it.
pub fn resolve(spec: &UprobeSpec) -> Result<Resolved> {
    let path = find_binary(&spec.binary)?;
    let data = fs::read(&path).map_err(|e| io(&path, e))?;
    let file = object::File::parse(&*data).map_err(|e| Error::Uprobe(format!("{}: not an ELF file ({e})", path.display())))?;
    let mut found: Vec<u64> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for sym in file.symbols().chain(file.dynamic_symbols()) {
        if sym.kind() != SymbolKind::Text || !sym.is_definition() || sym.address() == 0 {
            continue;
        }
        let Ok(name) = sym.name() else { continue };
        // Versioned dynamic names: `malloc@@GLIBC_2.2.5`.
        let base = name.split('@').next().unwrap_or(name);
        if base == spec.function {
            if !found.contains(&sym.address()) {
                found.push(sym.address());
            }
        } else if names.len() < 100_000 {
            names.push(base.to_string());
        }
    }
    let addr = match found.as_slice() {
        [a] => *a,
        [] => {
            let f = spec.function.to_lowercase();
            let mut close: Vec<&String> = names.iter().filter(|n| n.to_lowercase().contains(&f)).collect();
            close.sort();
            close.dedup();
            let hint = if close.is_empty() {
                if file.symbols().next().is_none() { " (the file has no .symtab: stripped?)".to_string() } else { String::new() }
            } else {
                format!(" (names containing it: {})", close.iter().take(5).map(|s| s.as_str()).collect::<Vec<_>>().join(", "))
            };
            return Err(Error::Uprobe(format!("{}: no function `{}` in its symbol tables{hint}", path.display(), spec.function)));
        }
        many => {
            let list: Vec<String> = many.iter().map(|a| format!("{a:#x}")).collect();
            return Err(Error::Uprobe(format!("{}: {} functions are named `{}` (at {}): cannot tell which to probe", path.display(), many.len(), spec.function, list.join(", "))));
        }
    };
    let offset = file
        .segments()
        .find_map(|s| {
            let (off, size) = s.file_range();
            (addr >= s.address() && addr < s.address() + size.min(s.size())).then(|| addr - s.address() + off)
        })
        .ok_or_else(|| Error::Uprobe(format!("{}: function `{}` at {addr:#x} is in no loadable segment", path.display(), spec.function)))?;
    Ok(Resolved { spec: spec.clone(), path, offset })
}

/// The argument registers of this architecture, for `arg1`..`arg6`.
fn arg_registers() -> &'static [&'static str] {
    if cfg!(target_arch = "x86_64") {
        &["%di", "%si", "%dx", "%cx", "%r8", "%r9"]
    } else if cfg!(target_arch = "aarch64") {
        &["%x0", "%x1", "%x2", "%x3", "%x4", "%x5"]
    } else {
        &[]
    }
}

/// The event name of a function's probes, before `_entry` / `_return`: the symbol's name with
/// every character but letters, digits and `_` made `_`, cut at 56 characters.
pub fn event_stem(function: &str) -> String {
    function.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).take(56).collect()
}

/// Our probes, removed when dropped.
#[derive(Debug)]
pub struct Uprobes {
    control: PathBuf,
    group: String,
    events: Vec<String>,
    removed: bool,
}

/// Appends `line` to `uprobe_events`.
fn append(control: &Path, line: &str) -> std::io::Result<()> {
    let mut f = OpenOptions::new().append(true).open(control)?;
    f.write_all(line.as_bytes())
}

/// The last line of the kernel's `error_log`, if it says something.
fn error_log(tracefs: &Tracefs) -> String {
    read_file(&tracefs.path("error_log")).ok().and_then(|t| t.lines().rev().find(|l| !l.trim().is_empty()).map(|l| format!(" (error_log: {})", l.trim()))).unwrap_or_default()
}

impl Uprobes {
    /// Defines the entry and return events of each probe in a group of our own (nothing
    /// when `probes` is empty).
    pub fn create(tracefs: &Tracefs, probes: &[Resolved]) -> Result<Uprobes> {
        let control = tracefs.path("uprobe_events");
        let mut u = Uprobes { control, group: String::new(), events: Vec::new(), removed: false };
        if probes.is_empty() {
            return Ok(u);
        }
        u.group = match GROUP_SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed) {
            0 => format!("{GROUP_PREFIX}{}", std::process::id()),
            n => format!("{GROUP_PREFIX}{}_{n}", std::process::id()),
        };
        if !u.control.exists() {
            return Err(Error::Uprobe(format!("{}: this kernel has no uprobes (CONFIG_UPROBE_EVENTS)", u.control.display())));
        }
        let args: String = arg_registers().iter().enumerate().map(|(i, r)| format!(" arg{}={r}:s64", i + 1)).collect();
        for (i, p) in probes.iter().enumerate() {
            let stem = event_stem(&p.spec.function);
            if let Some(q) = probes[..i].iter().find(|q| event_stem(&q.spec.function) == stem) {
                if q.spec.function == p.spec.function {
                    return Err(Error::Uprobe(format!("`{}` is given twice", p.spec.function)));
                }
                return Err(Error::Uprobe(format!("`{}` and `{}` would have the same event name `{stem}_entry`", q.spec.function, p.spec.function)));
            }
            let place = format!("{}:{:#x}", p.path.display(), p.offset);
            if place.contains(char::is_whitespace) {
                return Err(Error::Uprobe(format!("{}: tracefs cannot probe a file whose path has spaces", p.path.display())));
            }
            for (kind, suffix, extra) in [("p", "entry", args.as_str()), ("r", "return", " ret=$retval:s64")] {
                let name = format!("{stem}_{suffix}");
                let line = format!("{kind}:{}/{name} {place}{extra}\n", u.group);
                append(&u.control, &line).map_err(|e| Error::Uprobe(format!("cannot define the uprobe `{}` on {place}: {e}{}", p.spec.function, error_log(tracefs))))?;
                u.events.push(name);
            }
        }
        Ok(u)
    }

    /// The (group, event) pairs to enable.
    pub fn selected(&self) -> Vec<(String, Option<String>)> {
        self.events.iter().map(|e| (self.group.clone(), Some(e.clone()))).collect()
    }

    /// Removes the events now (they must be disabled in every instance: remove the
    /// recorder's instance first).
    pub fn remove(mut self) -> Result<()> {
        self.removed = true;
        remove_events(&self.control, &self.group, &self.events)
    }
}

impl Drop for Uprobes {
    fn drop(&mut self) {
        if !self.removed {
            let _ = remove_events(&self.control, &self.group, &self.events);
        }
    }
}

fn remove_events(control: &Path, group: &str, events: &[String]) -> Result<()> {
    let mut first_err = None;
    for e in events {
        let line = format!("-:{group}/{e}\n");
        let mut last = Ok(());
        // Busy while a reader of the instance still closes its files.
        for _ in 0..20 {
            last = append(control, &line);
            if last.is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        if let Err(err) = last {
            first_err.get_or_insert(Error::Uprobe(format!("cannot remove the uprobe {group}/{e}: {err}")));
        }
    }
    first_err.map_or(Ok(()), Err)
}

/// Removes the uprobe groups `tracelens_<pid>` of recorders that are gone (no process
/// `<pid>`, or one started after the group was made). Returns the groups removed.
pub fn remove_stale(tracefs: &Tracefs) -> Result<Vec<String>> {
    let control = tracefs.path("uprobe_events");
    let Ok(text) = read_file(&control) else { return Ok(Vec::new()) };
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for l in text.lines() {
        // `p:GROUP/EVENT PLACE ...`, `r:...`, `r5:...`
        let Some(def) = l.split_whitespace().next() else { continue };
        let Some((_, name)) = def.split_once(':') else { continue };
        let Some((group, event)) = name.split_once('/') else { continue };
        let Some(pid) = group_pid(group) else { continue };
        if !is_stale(pid, &tracefs.path("events").join(group)) {
            continue;
        }
        match groups.iter_mut().find(|g| g.0 == group) {
            Some(g) => g.1.push(event.to_string()),
            None => groups.push((group.to_string(), vec![event.to_string()])),
        }
    }
    let mut removed = Vec::new();
    for (g, events) in groups {
        if remove_events(&control, &g, &events).is_ok() {
            removed.push(g);
        }
    }
    Ok(removed)
}

/// The recorder's pid in a group name `tracelens_<pid>` or `tracelens_<pid>_<n>`.
fn group_pid(group: &str) -> Option<i32> {
    owner_pid(group, GROUP_PREFIX, '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_names() {
        assert_eq!(group_pid("tracelens_123"), Some(123));
        assert_eq!(group_pid("tracelens_123_2"), Some(123));
        assert_eq!(group_pid("tracelens_"), None);
        assert_eq!(group_pid("tracelens_12x"), None);
        assert_eq!(group_pid("uprobes"), None);
    }

    #[test]
    fn specs() {
        assert_eq!(UprobeSpec::parse("./srv:handle").unwrap(), UprobeSpec { binary: "./srv".into(), function: "handle".into() });
        assert_eq!(UprobeSpec::parse("/a:b/srv:f").unwrap().binary, PathBuf::from("/a:b/srv"));
        for bad in ["srv", ":f", "srv:", ""] {
            let e = UprobeSpec::parse(bad).unwrap_err().to_string();
            assert!(e.contains("expected BINARY:FUNCTION"), "{e}");
        }
    }

    #[test]
    fn event_names() {
        assert_eq!(event_stem("handle_request"), "handle_request");
        assert_eq!(event_stem("_ZN3foo3barEv"), "_ZN3foo3barEv");
        assert_eq!(event_stem("foo.cold"), "foo_cold");
        assert_eq!(event_stem(&"x".repeat(100)).len(), 56);
    }

    #[test]
    fn resolves_functions_of_this_test_binary() {
        // This test's own executable is a PIE with a symbol table.
        let exe = std::env::current_exe().unwrap();
        let spec = UprobeSpec { binary: exe.clone(), function: "main".into() };
        let r = resolve(&spec).unwrap();
        assert!(r.offset > 0);
        assert_eq!(r.path, fs::canonicalize(&exe).unwrap());
        let missing = UprobeSpec { binary: exe, function: "no_such_function_here".into() };
        let e = resolve(&missing).unwrap_err().to_string();
        assert!(e.contains("no function `no_such_function_here` in its symbol tables"), "{e}");
        let e = resolve(&UprobeSpec { binary: "/nonexistent/x".into(), function: "f".into() }).unwrap_err().to_string();
        assert!(e.contains("no such file"), "{e}");
        let e = resolve(&UprobeSpec { binary: "/etc/hostname".into(), function: "f".into() }).unwrap_err().to_string();
        assert!(e.contains("not an ELF file"), "{e}");
    }
}
