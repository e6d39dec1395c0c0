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
//! * Just-in-time compiled code is named from the perf map (`perf-PID.map`) and jitdump
//!   (`jit-PID.dump`) files that `tracelens record` saves into `OUTPUT/jit/` (see
//!   [`Symbolizer::add_jit_dir`]): JavaScript functions of `node --perf-basic-prof`, Python
//!   functions of `python3.12 -X perf` (whose trampolines have neither frame pointer nor
//!   call-frame information: they are unwound from their instructions). Other JIT code is
//!   unwound by its frame pointers (V8 keeps them).
//! * Python frames read by `tracelens record --python` take the place of the native frames
//!   of CPython's evaluation loop that ran them ([`FrameKind::Python`]).
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
mod frameless;
pub mod jit;
mod mapped;
mod module;
mod python;
mod ranges;
pub mod unwind;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use tracelens_ctf::{EventView, Fields, Value};

pub use error::{Error, Result};
pub use module::{demangle, Symbol};
use module::Module;
pub use unwind::{Arch, Stop};
pub use jit::JitSymbols;
use ranges::Ranges;
use python::PendingStack;
use unwind::Code;

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
    maps: Ranges<Mapping>,
}

impl ProcessMaps {
    /// Adds a mapping, replacing those it overlaps.
    pub fn insert(&mut self, m: Mapping) {
        self.maps.insert(m.start, m.end, m);
    }

    /// The mapping holding `addr`.
    pub fn find(&self, addr: u64) -> Option<&Mapping> {
        self.maps.find(addr)
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

/// What kind of code a frame runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum FrameKind {
    /// Machine code of a mapped file (or unknown code).
    #[default]
    Native,
    /// Just-in-time compiled code named by a perf map or jitdump file.
    Jit,
    /// A Python function: read from the interpreter (`record --python`), or named by
    /// CPython's perf trampolines (`-X perf`).
    Python,
}

impl FrameKind {
    /// `native`, `jit`, `python`.
    pub fn as_str(self) -> &'static str {
        match self {
            FrameKind::Native => "native",
            FrameKind::Jit => "jit",
            FrameKind::Python => "python",
        }
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
    /// What kind of code it is.
    pub kind: FrameKind,
}

impl Frame {
    /// `function+0xOFF (file:line) [module]`, with what is known; Python and JIT frames
    /// end in `[python]` and `[jit]`.
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
        if self.kind != FrameKind::Native {
            s += &format!(" [{}]", self.kind.as_str());
        } else if let Some(m) = &self.module {
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
    /// Parent of each process seen forking (a child runs its parent's JIT code).
    parents: HashMap<i64, i64>,
    /// Directories of perf maps and jitdumps.
    jit_dirs: Vec<PathBuf>,
    jit: HashMap<i64, Option<Rc<JitSymbols>>>,
    /// CPython's trampoline code (`_Py_trampoline_func_start`), per process.
    trampolines: HashMap<i64, Option<Rc<[u8]>>>,
    /// Python code objects (`record --python`) by (process, id): (name, file).
    py_codes: HashMap<(i64, u64), (Rc<str>, Rc<str>)>,
    /// The Python frames waiting for their sample, by thread.
    py_pending: HashMap<i64, PendingStack>,
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

/// Perf maps and jitdumps larger than this are not read.
const MAX_JIT_FILE: u64 = 1 << 30;

/// The regular file `path`, mapped (see [`mapped::map_regular`]), if not larger than
/// [`MAX_JIT_FILE`].
fn map_capped(path: &Path) -> Result<tracelens_ctf::MappedFile> {
    let map = mapped::map_regular(path)?;
    if map.bytes().len() as u64 > MAX_JIT_FILE {
        return Err(Error::Jit { path: path.to_path_buf(), message: format!("larger than {} MiB: not read", MAX_JIT_FILE >> 20) });
    }
    Ok(map)
}

fn string(f: Fields<'_, '_>, name: &str) -> String {
    f.get(name).and_then(|x| x.as_str()).map(|s| s.into_owned()).unwrap_or_default()
}

impl Symbolizer {
    /// A symbolizer knowing no process yet.
    pub fn new() -> Symbolizer {
        Symbolizer {
            procs: HashMap::new(),
            parents: HashMap::new(),
            jit_dirs: Vec::new(),
            jit: HashMap::new(),
            trampolines: HashMap::new(),
            py_codes: HashMap::new(),
            py_pending: HashMap::new(),
            modules: HashMap::new(),
            ctx: Box::new(gimli::UnwindContext::new()),
            max_frames: 256,
            load_timeout: Duration::from_secs(10),
            load_budget: Duration::from_secs(60),
            load_spent: Duration::ZERO,
            problems: Vec::new(),
        }
    }

    /// Looks for the perf maps and jitdumps of JIT-compiled code (`perf-PID.map`,
    /// `jit-PID.dump`) in `dir` too (call before the first stack).
    pub fn add_jit_dir(&mut self, dir: impl Into<PathBuf>) {
        let dir = dir.into();
        if !self.jit_dirs.contains(&dir) {
            self.jit_dirs.push(dir);
            self.jit.clear();
        }
    }

    /// A symbolizer for the traces in `trace_dirs`, with the `jit/` folders where `tracelens
    /// record` puts their perf maps and jitdumps (`OUTPUT/jit` for `OUTPUT/stacks`), when
    /// they exist.
    pub fn for_traces<'a>(trace_dirs: impl IntoIterator<Item = &'a Path>) -> Symbolizer {
        let mut sym = Symbolizer::new();
        for t in trace_dirs {
            for d in [Some(t.join("jit")), t.parent().map(|p| p.join("jit"))].into_iter().flatten() {
                if d.is_dir() {
                    sym.add_jit_dir(d);
                }
            }
        }
        sym
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
                self.parents.insert(child, parent);
            }
        } else if name == events::COMM && uint(ev.payload, "exec") == Some(1) {
            if let Some(pid) = int(ev.common_context, "pid") {
                // The maps of the new program follow.
                self.procs.insert(pid, ProcessMaps::default());
                self.parents.remove(&pid);
            }
        } else if name == events::PYTHON_CODE {
            let (Some(pid), Some(id)) = (int(ev.common_context, "pid"), uint(ev.payload, "id")) else { return };
            self.py_codes.insert((pid, id), (string(ev.payload, "name").into(), string(ev.payload, "file").into()));
        } else if name == events::PYTHON_STACK {
            let (Some(pid), Some(tid)) = (int(ev.common_context, "pid"), int(ev.common_context, "tid")) else { return };
            let p = ev.payload;
            let seq = |name: &str| -> Vec<u64> {
                match p.children(0).find(|(_, f)| f.name() == name) {
                    Some((i, _)) => p.children(i).filter_map(|(_, f)| f.as_u64()).collect(),
                    None => Vec::new(),
                }
            };
            let (codes, lines, entries) = (seq("codes"), seq("lines"), seq("entries"));
            let frames = codes.iter().enumerate().map(|(k, &c)| (c, lines.get(k).copied().unwrap_or(0) as u32, entries.get(k).is_some_and(|&e| e != 0))).collect();
            self.py_pending.insert(tid, PendingStack { ns: ev.ns, pid, frames });
        }
    }

    /// The JIT code of process `pid` (or of the parent it was forked from): its perf maps and
    /// jitdumps, read once.
    fn jit_symbols(&mut self, pid: i64) -> Option<Rc<JitSymbols>> {
        let mut p = pid;
        for _ in 0..8 {
            if let Some(j) = self.jit_of(p) {
                return Some(j);
            }
            p = *self.parents.get(&p)?;
        }
        None
    }

    fn jit_of(&mut self, pid: i64) -> Option<Rc<JitSymbols>> {
        if let Some(j) = self.jit.get(&pid) {
            return j.clone();
        }
        let mut syms = JitSymbols::default();
        let mut any = false;
        for dir in self.jit_dirs.clone() {
            for name in [format!("perf-{pid}.map"), format!("jit-{pid}.dump")] {
                let path = dir.join(&name);
                if !path.exists() {
                    continue;
                }
                let parsed = map_capped(&path).and_then(|map| {
                    let b = map.bytes();
                    if name.ends_with(".map") {
                        let bad = syms.add_perf_map(b);
                        if bad > 0 {
                            return Err(Error::Jit { path: path.clone(), message: format!("{bad} line(s) that are not `START SIZE NAME` skipped") });
                        }
                        Ok(())
                    } else {
                        syms.add_jitdump(b).map_err(|message| Error::Jit { path: path.clone(), message })
                    }
                });
                any = true;
                if let Err(e) = parsed {
                    self.problems.push(e);
                }
            }
        }
        let r = (any && !syms.is_empty()).then(|| Rc::new(syms));
        self.jit.insert(pid, r.clone());
        r
    }

    /// CPython's perf trampoline code in process `pid` (`_Py_trampoline_func_start` of the
    /// mapped `python3.X` or `libpython3.X.so`), which each `py::` region is a copy of.
    fn trampoline(&mut self, pid: i64) -> Option<Rc<[u8]>> {
        if let Some(t) = self.trampolines.get(&pid) {
            return t.clone();
        }
        let maps: Vec<Mapping> = self.procs.get(&pid).map(|m| m.maps.values().cloned().collect()).unwrap_or_default();
        let mut found = None;
        for m in maps.iter().filter(|m| Path::new(&m.path).file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("python") || n.starts_with("libpython"))) {
            let Some(md) = self.module(m) else { continue };
            if let (Some(a), Some(b)) = (md.symbol_address("_Py_trampoline_func_start"), md.symbol_address("_Py_trampoline_func_end")) {
                if b > a && b - a <= 64 {
                    found = md.bytes_at(a, b - a).map(Rc::from);
                    break;
                }
            }
        }
        self.trampolines.insert(pid, found.clone());
        found
    }

    fn module(&mut self, m: &Mapping) -> Option<Rc<Module>> {
        let key = (m.path.clone(), m.build_id.clone());
        if let Some(x) = self.modules.get(&key) {
            return x.clone();
        }
        let loaded = if m.path == "[vdso]" {
            mapped::own_vdso().ok_or(Error::Vdso).and_then(|b| Module::from_bytes("[vdso]", b))
        } else if m.path.starts_with('/') && !m.path.starts_with("/memfd:") && !m.path.starts_with("//anon") {
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
            let mut find = |ip: u64, depth: usize| -> Option<Code> {
                // A caller's address is its return address: look up the call before it.
                let probe = if depth == 0 { ip } else { ip.wrapping_sub(1) };
                if let Some(m) = maps.find(probe).cloned() {
                    if let Some(md) = self.module(&m) {
                        let va = md.vaddr_of_offset(probe - m.start + m.pgoff)?;
                        return Some(Code::Cfi(md, va));
                    }
                }
                let jit = self.jit_symbols(pid)?;
                let code = jit.find(probe)?;
                if std::ptr::eq(arch, &unwind::X86_64) && jit::split_name(&code.raw).python {
                    let bytes = code.bytes.clone().or_else(|| self.trampoline(pid))?;
                    let height = frameless::x86_64_height(&bytes, (ip - code.start) as usize)?;
                    return Some(Code::Frameless(height + 8));
                }
                None
            };
            unwind::unwind(arch, regs, mask, stack, max, &mut find, &mut ctx)
        };
        self.ctx = ctx;
        let mut frames = Vec::with_capacity(ips.len());
        for (i, &ip) in ips.iter().enumerate() {
            let probe = if i == 0 { ip } else { ip.wrapping_sub(1) };
            frames.push(self.frame_at(pid, &maps, ip, probe, i > 0));
        }
        Some((frames, stop))
    }

    /// The frame of instruction pointer `ip` (`probe`: the address looked up).
    fn frame_at(&mut self, pid: i64, maps: &ProcessMaps, ip: u64, probe: u64, caller: bool) -> Frame {
        let mut f = Frame { address: ip, module: None, module_offset: 0, symbol: Symbol::default(), kind: FrameKind::Native };
        let mapping = maps.find(probe).cloned();
        if let Some(m) = &mapping {
            f.module = Some(m.path.clone());
            f.module_offset = probe - m.start + m.pgoff;
            if let Some(md) = self.module(m) {
                if let Some(va) = md.vaddr_of_offset(f.module_offset) {
                    f.symbol = md.symbolize(va);
                    if caller {
                        // Offsets of callers are given for the return address.
                        f.symbol.offset = f.symbol.offset.map(|o| o + 1);
                    }
                }
                return f;
            }
        }
        if let Some(code) = self.jit_symbols(pid).as_ref().and_then(|j| j.find(probe)) {
            let name = jit::split_name(&code.raw);
            f.kind = if name.python { FrameKind::Python } else { FrameKind::Jit };
            f.symbol.offset = Some(probe - code.start + u64::from(caller));
            f.symbol.function = Some(name.function);
            f.symbol.file = name.file;
            f.symbol.line = name.line;
            if let Some((line, file)) = code.line_of(probe) {
                f.symbol.line = Some(line);
                f.symbol.file = Some(file.to_string());
            }
            f.module = f.symbol.file.clone().or_else(|| Some("[jit]".into()));
            f.module_offset = 0;
        }
        f
    }

    /// The unwound stack of a `tracelens_stack_sample` event (with its Python frames, when a
    /// `tracelens_python_stack` event of the same thread and time came before it); None for
    /// other events.
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
        let (mut frames, stop) = self.unwind_raw(pid, &regs, mask, stack)?;
        if let Some(py) = self.py_pending.remove(&tid).filter(|p| p.ns == ev.ns && p.pid == pid) {
            let mut pyf = Vec::with_capacity(py.frames.len());
            let mut entries = Vec::with_capacity(py.frames.len());
            for &(id, line, entry) in &py.frames {
                let (name, file) = self.py_codes.get(&(pid, id)).cloned().unwrap_or_else(|| ("??".into(), "".into()));
                pyf.push(python::frame(&name, &file, line));
                entries.push(entry);
            }
            frames = python::interleave(frames, stop == Stop::End, pyf, &entries);
        }
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
            kind: FrameKind::Native,
        };
        assert_eq!(f.describe(), "block_here+0x1b (prog.c:8) [prog]");
        let g = Frame { address: 0x1234, module: Some("/lib/x.so".into()), module_offset: 0x34, symbol: Symbol::default(), kind: FrameKind::Native };
        assert_eq!(g.describe(), "?? [x.so+0x34]");
        let p = python::frame("Worker.run", "/srv/app.py", 12);
        assert_eq!(p.describe(), "Worker.run (/srv/app.py:12) [python]");
    }
}
