//! Offline unwinding and symbolization of the user stacks that `tracelens record --stacks`
//! samples (see `tracelens_record::stacks`).
//!
//! A [`Symbolizer`] follows a recording's events in time order: `tracelens_mmap`,
//! `tracelens_fork` and `tracelens_comm` (at an `exec`) keep each process's executable
//! mappings; for a `tracelens_stack_sample` it unwinds the stack copy from the sampled
//! registers and names each frame.
//!
//! * Unwinding uses the DWARF call-frame information of the mapped files
//!   (`.eh_frame`, else `.debug_frame`), and the frame-pointer chain where there is none. It
//!   reads memory only from the stack copy, so it stops where the copy ends.
//! * Symbolization gives `function+offset` from the ELF symbol tables (`.symtab`, `.dynsym`,
//!   and the symbol table of a separate debug file), demangled (Rust, C++), and
//!   `file:line` from the DWARF line tables (the file's own, or a separate debug file found
//!   by build id under `/usr/lib/debug/.build-id/`, or by `.gnu_debuglink`).
//! * A recording is untrusted input: only regular files are opened (never a FIFO, a device or
//!   a directory a crafted `tracelens_mmap` event may name), a file whose build id is not the
//!   recorded one (rebuilt since) is not used (its frames show the module name and offset
//!   only), and loading files is time-boxed: each one by [`Symbolizer::load_timeout`], all of
//!   them by [`Symbolizer::load_budget`]. Files not used are listed in
//!   [`Symbolizer::problems`]. The `[vdso]` is read from this process (the same kernel's vDSO
//!   when symbolizing on the recording machine).
//!
//! ```no_run
//! # fn demo(ev: &tracelens_ctf::EventView<'_, '_>) {
//! let mut sym = tracelens_symbolize::Symbolizer::new();
//! // for each event of the recording, in time order:
//! sym.observe(ev);
//! if let Some(stack) = sym.stack(ev) {
//!     for f in &stack.frames {
//!         println!("{:#x} {}", f.address, f.describe());
//!     }
//! }
//! # }
//! ```

#![deny(missing_docs)]

mod error;
mod mapped;
mod module;
pub mod unwind;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use tracelens_ctf::{EventView, Fields, Value};

pub use error::{Error, Result};
pub use module::{demangle, Symbol};
use module::Module;
pub use unwind::{Arch, Stop};

/// Event and field names written by the recorder (defined with the stack trace's layout in
/// [`tracelens_ctf::lttng::stacks`]).
pub use tracelens_ctf::lttng::stacks as events;

/// One executable mapping of a process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// File offset of `start`.
    pub pgoff: u64,
    /// The file (or `[vdso]`, ...).
    pub path: String,
    /// The build id recorded (hex), empty when unknown.
    pub build_id: String,
}

/// The executable mappings of one process.
#[derive(Clone, Debug, Default)]
pub struct ProcessMaps {
    maps: BTreeMap<u64, Mapping>,
}

impl ProcessMaps {
    /// Adds a mapping, replacing those it overlaps.
    pub fn insert(&mut self, m: Mapping) {
        let gone: Vec<u64> = self.maps.range(..m.end).filter(|(_, o)| o.end > m.start).map(|(&k, _)| k).collect();
        for k in gone {
            self.maps.remove(&k);
        }
        self.maps.insert(m.start, m);
    }

    /// The mapping holding `addr`.
    pub fn find(&self, addr: u64) -> Option<&Mapping> {
        self.maps.range(..=addr).next_back().map(|(_, m)| m).filter(|m| addr < m.end)
    }

    /// Number of mappings.
    pub fn len(&self) -> usize {
        self.maps.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.maps.is_empty()
    }
}

/// One frame of an unwound stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The instruction pointer (the sampled one, then return addresses).
    pub address: u64,
    /// The mapped file holding it, if any.
    pub module: Option<String>,
    /// Offset of the address in the module's file.
    pub module_offset: u64,
    /// Function, offset, source line.
    pub symbol: Symbol,
}

impl Frame {
    /// `function+0xOFF (file:line) [module]`, with what is known.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        match (&self.symbol.function, self.symbol.offset) {
            (Some(f), Some(o)) => s += &format!("{f}+{o:#x}"),
            (Some(f), None) => s += f,
            (None, _) => s += "??",
        }
        if let Some(file) = &self.symbol.file {
            s += &format!(" ({file}");
            if let Some(l) = self.symbol.line {
                s += &format!(":{l}");
            }
            s += ")";
        }
        if let Some(m) = &self.module {
            let name = Path::new(m).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| m.clone());
            if self.symbol.function.is_some() {
                s += &format!(" [{name}]");
            } else {
                s += &format!(" [{name}+{:#x}]", self.module_offset);
            }
        }
        s
    }
}

/// An unwound, symbolized stack sample.
#[derive(Clone, Debug)]
pub struct Stack {
    /// `on_cpu`, `off_cpu` or `preempted`.
    pub kind: String,
    /// Process id.
    pub pid: i64,
    /// Thread id.
    pub tid: i64,
    /// Innermost first.
    pub frames: Vec<Frame>,
    /// Why the walk stopped.
    pub stop: Stop,
}

/// Follows a recording's maps and unwinds its stack samples (see the crate documentation).
pub struct Symbolizer {
    procs: HashMap<i64, ProcessMaps>,
    modules: HashMap<(String, String), Option<Rc<Module>>>,
    ctx: Box<gimli::UnwindContext<usize>>,
    /// Frames at most per stack. Default 256.
    pub max_frames: usize,
    /// The longest one file may take to load (open, map, parse its tables): a file that takes
    /// longer is given up ([`Error::TimedOut`]), its frames unnamed. Default 10 s.
    pub load_timeout: Duration,
    /// The longest all files together may take to load: once spent, no more files are
    /// loaded ([`Error::BudgetSpent`]). Default 60 s.
    pub load_budget: Duration,
    /// Time spent loading files so far.
    load_spent: Duration,
    /// Problems met (a file missing or not a regular file, a build id that differs, a load
    /// given up), once each.
    pub problems: Vec<Error>,
}

impl Default for Symbolizer {
    fn default() -> Self {
        Symbolizer::new()
    }
}

fn int(f: Fields<'_, '_>, name: &str) -> Option<i64> {
    f.get(name).and_then(|x| x.as_i64())
}

fn uint(f: Fields<'_, '_>, name: &str) -> Option<u64> {
    f.get(name).and_then(|x| x.as_u64())
}

fn string(f: Fields<'_, '_>, name: &str) -> String {
    f.get(name).and_then(|x| x.as_str()).map(|s| s.into_owned()).unwrap_or_default()
}

impl Symbolizer {
    /// A symbolizer knowing no process yet.
    pub fn new() -> Symbolizer {
        Symbolizer {
            procs: HashMap::new(),
            modules: HashMap::new(),
            ctx: Box::new(gimli::UnwindContext::new()),
            max_frames: 256,
            load_timeout: Duration::from_secs(10),
            load_budget: Duration::from_secs(60),
            load_spent: Duration::ZERO,
            problems: Vec::new(),
        }
    }

    /// The maps of process `pid` (for tools and tests).
    pub fn maps(&self, pid: i64) -> Option<&ProcessMaps> {
        self.procs.get(&pid)
    }

    /// Sets the maps of process `pid` (for tools and tests that do not replay a trace).
    pub fn set_maps(&mut self, pid: i64, maps: ProcessMaps) {
        self.procs.insert(pid, maps);
    }

    /// Takes note of a maps, fork or exec event (any other event is ignored). Call it for
    /// every event of the recording, in time order, filtered or not.
    pub fn observe(&mut self, ev: &EventView<'_, '_>) {
        let name = ev.name();
        if name == events::MMAP {
            let Some(pid) = int(ev.common_context, "pid") else { return };
            let (Some(start), Some(len)) = (uint(ev.payload, "start"), uint(ev.payload, "len")) else { return };
            let m = Mapping {
                start,
                end: start.saturating_add(len),
                pgoff: uint(ev.payload, "pgoff").unwrap_or(0),
                path: string(ev.payload, "filename"),
                build_id: string(ev.payload, "build_id"),
            };
            self.procs.entry(pid).or_default().insert(m);
        } else if name == events::FORK {
            let (Some(child), Some(parent)) = (int(ev.payload, "child_pid"), int(ev.payload, "parent_pid")) else { return };
            if child != parent {
                let maps = self.procs.get(&parent).cloned().unwrap_or_default();
                self.procs.insert(child, maps);
            }
        } else if name == events::COMM && uint(ev.payload, "exec") == Some(1) {
            if let Some(pid) = int(ev.common_context, "pid") {
                // The maps of the new program follow.
                self.procs.insert(pid, ProcessMaps::default());
            }
        }
    }

    fn module(&mut self, m: &Mapping) -> Option<Rc<Module>> {
        let key = (m.path.clone(), m.build_id.clone());
        if let Some(x) = self.modules.get(&key) {
            return x.clone();
        }
        let loaded = if m.path == "[vdso]" {
            mapped::own_vdso().ok_or(Error::Vdso).and_then(|b| Module::from_bytes("[vdso]", b))
        } else if m.path.starts_with('/') && !m.path.starts_with("/memfd:") {
            self.load(PathBuf::from(&m.path), m.build_id.clone())
        } else {
            // Anonymous memory ([heap], JIT code): nothing to read, nothing to report.
            Err(Error::NotAFile { name: m.path.clone() })
        };
        let r = match loaded {
            Ok(mut md) => {
                self.problems.append(&mut md.notes);
                Some(Rc::new(md))
            }
            Err(Error::NotAFile { .. }) => None,
            // Said once: later files are skipped quietly.
            Err(Error::BudgetSpent { .. }) if self.problems.iter().any(|p| matches!(p, Error::BudgetSpent { .. })) => None,
            Err(e) => {
                self.problems.push(e);
                None
            }
        };
        self.modules.insert(key, r.clone());
        r
    }

    /// Loads the file at `path` (of recorded build id `build_id`) on a thread of its own, for
    /// at most [`Symbolizer::load_timeout`] and what is left of [`Symbolizer::load_budget`].
    /// A load given up goes on in the background, its result dropped.
    fn load(&mut self, path: PathBuf, build_id: String) -> Result<Module> {
        let left = self.load_budget.saturating_sub(self.load_spent);
        if left.is_zero() {
            return Err(Error::BudgetSpent { path, budget: self.load_budget });
        }
        let limit = self.load_timeout.min(left);
        let started = Instant::now();
        let (tx, rx) = std::sync::mpsc::channel();
        let p = path.clone();
        let spawned = std::thread::Builder::new().name("tracelens-symbol-load".into()).spawn(move || {
            let _ = tx.send(Module::open(&p, &build_id));
        });
        let r = match spawned {
            // A result that came later than the limit is given up too, even when it was
            // already there to receive (a load done while this thread was not running).
            Ok(_) => match rx.recv_timeout(limit) {
                Ok(r) if started.elapsed() <= limit => r,
                _ => Err(Error::TimedOut { path, after: limit }),
            },
            Err(source) => Err(Error::Io { path, source }),
        };
        self.load_spent += started.elapsed();
        r
    }

    /// Unwinds and symbolizes raw sample data for process `pid`: `regs` in perf's order for
    /// `mask`, `stack` copied from the sampled stack pointer up.
    pub fn unwind_raw(&mut self, pid: i64, regs: &[u64], mask: u64, stack: &[u8]) -> Option<(Vec<Frame>, Stop)> {
        let arch = Arch::for_mask(mask)?;
        let maps = self.procs.get(&pid).cloned().unwrap_or_default();
        let mut ctx = std::mem::replace(&mut self.ctx, Box::new(gimli::UnwindContext::new()));
        let max = self.max_frames;
        let (ips, stop) = {
            let mut find = |addr: u64| -> Option<(Rc<Module>, u64)> {
                let m = maps.find(addr)?.clone();
                let md = self.module(&m)?;
                let va = md.vaddr_of_offset(addr - m.start + m.pgoff)?;
                Some((md, va))
            };
            unwind::unwind(arch, regs, mask, stack, max, &mut find, &mut ctx)
        };
        self.ctx = ctx;
        let mut frames = Vec::with_capacity(ips.len());
        for (i, &ip) in ips.iter().enumerate() {
            // A caller's address is its return address: look up the call before it.
            let probe = if i == 0 { ip } else { ip.wrapping_sub(1) };
            let mut f = Frame { address: ip, module: None, module_offset: 0, symbol: Symbol::default() };
            if let Some(m) = maps.find(probe).cloned() {
                f.module = Some(m.path.clone());
                f.module_offset = probe - m.start + m.pgoff;
                if let Some(md) = self.module(&m) {
                    if let Some(va) = md.vaddr_of_offset(f.module_offset) {
                        f.symbol = md.symbolize(va);
                        if i > 0 {
                            // Offsets of callers are given for the return address.
                            f.symbol.offset = f.symbol.offset.map(|o| o + 1);
                        }
                    }
                }
            }
            frames.push(f);
        }
        Some((frames, stop))
    }

    /// The unwound stack of a `tracelens_stack_sample` event; None for other events.
    pub fn stack(&mut self, ev: &EventView<'_, '_>) -> Option<Stack> {
        if ev.name() != events::SAMPLE {
            return None;
        }
        let p = ev.payload;
        let pid = int(ev.common_context, "pid").unwrap_or(-1);
        let tid = int(ev.common_context, "tid").unwrap_or(-1);
        let kind = uint(p, "kind").and_then(|k| events::KINDS.get(k as usize)).map(|s| s.to_string()).unwrap_or_default();
        let mask = uint(p, "regs_mask")?;
        let (ri, _) = p.children(0).find(|(_, f)| f.name() == "regs")?;
        let regs: Vec<u64> = p.children(ri).filter_map(|(_, f)| f.as_u64()).collect();
        let stack: &[u8] = match p.get("stack").map(|f| f.value) {
            Some(Value::Str(b)) => b,
            _ => &[],
        };
        let (frames, stop) = self.unwind_raw(pid, &regs, mask, stack)?;
        Some(Stack { kind, pid, tid, frames, stop })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_replace_overlaps() {
        let m = |s: u64, e: u64, p: &str| Mapping { start: s, end: e, pgoff: 0, path: p.into(), build_id: String::new() };
        let mut pm = ProcessMaps::default();
        pm.insert(m(0x1000, 0x3000, "a"));
        pm.insert(m(0x5000, 0x6000, "b"));
        assert_eq!(pm.find(0x2fff).unwrap().path, "a");
        assert!(pm.find(0x3000).is_none());
        pm.insert(m(0x2000, 0x5800, "c"));
        assert_eq!(pm.len(), 1);
        assert_eq!(pm.find(0x1000), None);
        assert_eq!(pm.find(0x5000).unwrap().path, "c");
    }

    #[test]
    fn names() {
        assert_eq!(demangle("_ZN3foo3barE"), "foo::bar");
        assert_eq!(demangle("_ZN4core3ptr13drop_in_place17h0123456789abcdefE"), "core::ptr::drop_in_place");
        assert_eq!(demangle("main"), "main");
    }

    #[test]
    fn describe() {
        let f = Frame {
            address: 0x1234,
            module: Some("/usr/bin/prog".into()),
            module_offset: 0x234,
            symbol: Symbol { function: Some("block_here".into()), offset: Some(0x1b), file: Some("prog.c".into()), line: Some(8) },
        };
        assert_eq!(f.describe(), "block_here+0x1b (prog.c:8) [prog]");
        let g = Frame { address: 0x1234, module: Some("/lib/x.so".into()), module_offset: 0x34, symbol: Symbol::default() };
        assert_eq!(g.describe(), "?? [x.so+0x34]");
    }
}
