//! Walking the Python frames of one thread of a live interpreter from outside: its thread
//! state (found by thread id in every interpreter's thread list), then the frame chain from
//! the current frame outwards, each frame's code object (name, file, line table, checked to be
//! a code object by its type) and the line of the instruction it is at.
//!
//! The program runs on while it is read: a frame may return under the reader. Every pointer
//! followed is checked (the code object's type, a bounded chain), so a race gives a shorter or
//! an error result, never a wrong name for a code object.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::image::Image;
use crate::layout::{FrameModel, Layout, LineTable, BYTES_DATA, OB_SIZE, OB_TYPE, OWNED_BY_CSTACK, OWNED_BY_GENERATOR, UNICODE_STATE};
use crate::lines::line_of;
use crate::memory::{Memory, ProcessMemory};

/// A code object: a Python function, class body or module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Code {
    /// Unique in this process (the recorder) for the code object's life: a new id when the
    /// address is reused by another code object.
    pub id: u64,
    /// The qualified name (`Class.method`; 3.11 and later) or the name.
    pub name: String,
    /// `co_filename`.
    pub file: String,
    /// `co_firstlineno`.
    pub first_line: u32,
}

/// One Python frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Its code.
    pub code: Arc<Code>,
    /// The line running, when the line table gives one.
    pub line: Option<u32>,
    /// The outermost Python frame of one C-level evaluation (`_PyEval_EvalFrameDefault`
    /// call): the frames from one entry (exclusive) to the next (inclusive), innermost first,
    /// are those that one native evaluation frame runs.
    pub entry: bool,
}

/// One thread state of an interpreter (see [`Interpreter::thread_states`]).
#[derive(Debug)]
pub struct ThreadState {
    /// The interpreter (`PyInterpreterState`) it belongs to.
    pub interpreter: u64,
    /// Its address (`PyThreadState`).
    pub addr: u64,
    /// The kernel thread id read from it, or why it could not be.
    pub tid: Result<i32>,
    /// Its current frame pointer (`frame`, `cframe` or `current_frame`, by version), or why
    /// it could not be read.
    pub frame: Result<u64>,
}

static NEXT_CODE_ID: AtomicU64 = AtomicU64::new(1);

struct CachedCode {
    /// (name, qualname, filename, linetable, first line): a code object at the same address
    /// with other values is another one.
    key: [u64; 5],
    code: Arc<Code>,
    table: Vec<u8>,
    first_traceable: u32,
}

/// Frames followed at most (a loop in a damaged or racing chain ends there).
const MAX_FRAMES: usize = 4096;
/// Threads and interpreters followed at most.
const MAX_THREADS: usize = 65536;
/// Characters of a name or file kept.
const MAX_CHARS: u64 = 4096;
/// Bytes of a line table read at most.
const MAX_TABLE: u64 = 1 << 20;
/// How long a thread without a Python thread state is not looked for again (while the
/// thread lists have not changed).
const NEGATIVE_FOR: Duration = Duration::from_millis(20);

/// The interpreter of one process, read from outside (see the module documentation).
pub struct Interpreter<M: Memory = ProcessMemory> {
    mem: M,
    pid: i32,
    image: Image,
    layout: &'static Layout,
    threads: HashMap<i32, u64>,
    /// Threads not found in the thread lists: when, and the lists' heads then.
    not_python: HashMap<i32, (Instant, [u64; 2])>,
    codes: HashMap<u64, CachedCode>,
    /// Offset of the thread id in glibc's `struct pthread` (3.8-3.10, which keep only the
    /// `pthread_t`); found from the main thread, whose id is the process id (looked for
    /// again at each use until found).
    pthread_tid: Option<u64>,
}

impl Interpreter<ProcessMemory> {
    /// The interpreter of process `pid`, if it runs CPython (see [`crate::find`]).
    pub fn attach(pid: i32) -> Result<Option<Interpreter<ProcessMemory>>> {
        match crate::image::find(pid)? {
            Some(image) => Interpreter::new(ProcessMemory { pid }, pid, image).map(Some),
            None => Ok(None),
        }
    }
}

fn u64_in(b: &[u8], at: u64) -> u64 {
    b.get(at as usize..at as usize + 8).map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes"))).unwrap_or(0)
}

/// See [`Interpreter::find_pthread_tid`]: the offset of `pid` in `main`, the main thread's
/// `struct pthread`.
fn pthread_tid_offset(main: &[u8], pid: i32) -> Option<u64> {
    let alone = main.chunks_exact(8).position(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")) == pid as u32 as u64).map(|i| i as u64 * 8);
    alone.or_else(|| main.chunks_exact(4).position(|w| i32::from_le_bytes(w.try_into().expect("4 bytes")) == pid).map(|i| i as u64 * 4))
}

fn i32_in(b: &[u8], at: u64) -> i32 {
    b.get(at as usize..at as usize + 4).map(|s| i32::from_le_bytes(s.try_into().expect("4 bytes"))).unwrap_or(0)
}

impl<M: Memory> Interpreter<M> {
    /// Reads the interpreter of `image` in process `pid` through `mem`.
    pub fn new(mem: M, pid: i32, image: Image) -> Result<Interpreter<M>> {
        let layout = Layout::of(image.version).ok_or_else(|| Error::Unsupported { path: image.path.clone(), version: image.version })?;
        Ok(Interpreter { mem, pid, image, layout, threads: HashMap::new(), not_python: HashMap::new(), codes: HashMap::new(), pthread_tid: None })
    }

    /// The interpreter's file, version and addresses.
    pub fn image(&self) -> &Image {
        &self.image
    }

    /// The memory it reads.
    pub fn memory(&self) -> &M {
        &self.mem
    }

    /// The process.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The Python frames of thread `tid`, innermost first, into `out` (cleared first). Empty
    /// when the thread runs no Python code (not a Python thread, or the interpreter is not
    /// initialized yet).
    pub fn stack(&mut self, tid: i32, out: &mut Vec<Frame>) -> Result<()> {
        out.clear();
        let Some(tstate) = self.tstate_of(tid)? else { return Ok(()) };
        let l = self.layout;
        let mut frame = self.mem.u64_at(tstate + l.tstate_frame)?;
        if let Some(cf) = l.cframe_current_frame {
            frame = if frame == 0 { 0 } else { self.mem.u64_at(frame + cf)? };
        }
        let mut buf = [0u8; 128];
        let buf = &mut buf[..l.frame_size];
        let mut group_start = 0;
        for _ in 0..MAX_FRAMES {
            if frame == 0 {
                return Ok(());
            }
            self.mem.read(frame, buf)?;
            let back = u64_in(buf, l.frame_back);
            let owner = l.frame_owner.map(|o| buf[o as usize]);
            if owner == Some(OWNED_BY_CSTACK) {
                // The shim frame of a C-level evaluation (3.12 and later): the frame before
                // it is its entry.
                if out.len() > group_start {
                    if let Some(last) = out.last_mut() {
                        last.entry = true;
                    }
                }
                group_start = out.len();
                frame = back;
                continue;
            }
            let code_ptr = u64_in(buf, l.frame_code);
            let Some(code) = self.code(code_ptr)? else {
                // 3.13 frames may run something else than a code object.
                frame = back;
                continue;
            };
            let (line, complete) = match l.model {
                FrameModel::Objects => {
                    let lasti = i32_in(buf, l.frame_instr);
                    let line = if lasti < 0 {
                        Some(code.code.first_line)
                    } else {
                        let off = if l.lines == LineTable::Pep626 { lasti as u32 * 2 } else { lasti as u32 };
                        line_of(l.lines, &code.table, code.code.first_line, off)
                    };
                    (line, true)
                }
                FrameModel::Interpreter => {
                    let start = code_ptr + l.code_adaptive.unwrap_or(0);
                    let instr = u64_in(buf, l.frame_instr);
                    let units = (instr as i64).wrapping_sub(start as i64) / 2;
                    // A frame is complete once its first traceable instruction has run
                    // (CPython's `_PyFrame_IsIncomplete`); generators' always are.
                    let complete = owner == Some(OWNED_BY_GENERATOR) || units >= code.first_traceable as i64;
                    let line = if (0..u32::MAX as i64).contains(&units) { line_of(l.lines, &code.table, code.code.first_line, units as u32) } else { None };
                    (line, complete)
                }
            };
            if complete {
                let entry = match (l.model, l.frame_is_entry) {
                    (FrameModel::Objects, _) => true,
                    (_, Some(e)) => buf[e as usize] != 0,
                    _ => false,
                };
                out.push(Frame { code: Arc::clone(&code.code), line, entry });
            }
            frame = back;
        }
        Err(Error::Inconsistent { pid: self.pid, what: "a frame chain longer than 4096 frames (a loop?)", addr: frame })
    }

    /// The thread state of `tid`, from the cache when it still belongs to it. A thread
    /// whose id could not be read from some thread state is not said to be absent: the
    /// error is returned instead (never an empty stack for a thread that may be there).
    fn tstate_of(&mut self, tid: i32) -> Result<Option<u64>> {
        if let Some(&ts) = self.threads.get(&tid) {
            if self.thread_id_of(ts).ok() == Some(tid) {
                return Ok(Some(ts));
            }
            self.threads.remove(&tid);
        }
        let l = self.layout;
        let interp = self.mem.u64_at(self.image.runtime + l.runtime_interpreters_head)?;
        // A new interpreter or thread state goes first in its list: while the heads are
        // those of the last miss, the thread is still not there.
        let heads = [interp, if interp == 0 { 0 } else { self.mem.u64_at(interp + l.interp_tstate_head)? }];
        if self.not_python.get(&tid).is_some_and(|(t, h)| t.elapsed() < NEGATIVE_FOR && *h == heads) {
            return Ok(None);
        }
        let mut unread = None;
        for (_, ts) in self.thread_list(interp)? {
            match self.thread_id_of(ts) {
                Ok(t) => {
                    self.threads.insert(t, ts);
                    if t == tid {
                        self.not_python.remove(&tid);
                        return Ok(Some(ts));
                    }
                }
                Err(e) => {
                    unread.get_or_insert(e);
                }
            }
        }
        if let Some(e) = unread {
            return Err(e);
        }
        self.not_python.insert(tid, (Instant::now(), heads));
        Ok(None)
    }

    /// Every thread state of every interpreter, with the thread id read from it (or why
    /// it could not be) and its current frame: what [`Interpreter::stack`] looks threads
    /// up in, for a message that says why a thread was not found.
    pub fn thread_states(&mut self) -> Result<Vec<ThreadState>> {
        let first = self.mem.u64_at(self.image.runtime + self.layout.runtime_interpreters_head)?;
        let list = self.thread_list(first)?;
        Ok(list
            .into_iter()
            .map(|(interpreter, addr)| ThreadState { interpreter, addr, tid: self.thread_id_of(addr), frame: self.mem.u64_at(addr + self.layout.tstate_frame) })
            .collect())
    }

    /// (interpreter, thread state) of every thread state of the interpreters from `interp`
    /// on (at most [`MAX_THREADS`]).
    fn thread_list(&self, mut interp: u64) -> Result<Vec<(u64, u64)>> {
        let l = self.layout;
        let mut out = Vec::new();
        while interp != 0 && out.len() < MAX_THREADS {
            let mut ts = self.mem.u64_at(interp + l.interp_tstate_head)?;
            while ts != 0 && out.len() < MAX_THREADS {
                out.push((interp, ts));
                ts = self.mem.u64_at(ts + l.tstate_next)?;
            }
            interp = self.mem.u64_at(interp + l.interp_next)?;
        }
        Ok(out)
    }

    /// The offset of the kernel thread id in the C library's thread structure that thread
    /// ids are read with (3.8-3.10; see [`Interpreter::thread_states`]), once found.
    pub fn pthread_tid_offset(&self) -> Option<u64> {
        self.pthread_tid
    }

    /// The kernel thread id of thread state `ts`.
    fn thread_id_of(&mut self, ts: u64) -> Result<i32> {
        let l = self.layout;
        if let Some(off) = l.tstate_native_thread_id {
            return Ok(self.mem.u64_at(ts + off)? as i32);
        }
        let pthread = self.mem.u64_at(ts + l.tstate_thread_id)?;
        let off = match self.pthread_tid {
            Some(off) => off,
            None => {
                let off = self.find_pthread_tid()?;
                self.pthread_tid = Some(off);
                off
            }
        };
        let mut b = [0u8; 4];
        self.mem.read(pthread + off, &mut b)?;
        Ok(i32::from_le_bytes(b))
    }

    /// The offset of the kernel thread id in the C library's thread structure: in the main
    /// thread's, the first 8-byte-aligned word that holds the process id alone (glibc's `int
    /// tid` is followed by an unused, zero `int`), else the first 4-byte word that holds it.
    /// The structure begins with pointers (`tcb`, `dtv`, `self`) whose upper halves, 0x7fXX
    /// on x86_64, equal a process id in 0x7f00-0x7fff now and then: preferring a word
    /// that is not half of a pointer keeps them from being taken for the thread id. An
    /// error (looked for again at the next use) until the runtime is initialized.
    ///
    /// Up to 4 KiB of the structure are searched, as far as they are readable: the main
    /// thread's structure is where the dynamic linker's startup allocations left it, which
    /// the environment moves (every `LD_LIBRARY_PATH` directory is one); 3,520 bytes
    /// before the end of its mapping under `cargo test --workspace`, where the page after
    /// it was unmapped in 4 processes of 10, and a 4 KiB read failed there.
    fn find_pthread_tid(&self) -> Result<u64> {
        let at = self.image.runtime + self.layout.runtime_main_thread;
        let main = self.mem.u64_at(at)?;
        if main == 0 {
            return Err(Error::Inconsistent { pid: self.pid, what: "the runtime's main thread is not set (not initialized yet)", addr: at });
        }
        let mut b = vec![0u8; 0x1000];
        let len = self.mem.read_prefix(main, &mut b)?;
        pthread_tid_offset(&b[..len], self.pid).ok_or(Error::NoThreadId { pid: self.pid, addr: main, len })
    }

    /// The code object at `ptr` (None when it is not one).
    fn code(&mut self, ptr: u64) -> Result<Option<&CachedCode>> {
        if ptr == 0 {
            return Ok(None);
        }
        let l = self.layout;
        let mut head = [0u8; 256];
        let head = &mut head[..l.code_size];
        self.mem.read(ptr, head)?;
        if u64_in(head, OB_TYPE) != self.image.code_type {
            return Ok(None);
        }
        let name = u64_in(head, l.code_name);
        let qualname = l.code_qualname.map(|o| u64_in(head, o)).unwrap_or(0);
        let filename = u64_in(head, l.code_filename);
        let table = u64_in(head, l.code_linetable);
        let first_line = i32_in(head, l.code_firstlineno).max(0) as u32;
        let key = [name, qualname, filename, table, first_line as u64];
        if self.codes.get(&ptr).is_none_or(|c| c.key != key) {
            let shown = if qualname != 0 { qualname } else { name };
            let code = Code {
                id: NEXT_CODE_ID.fetch_add(1, Ordering::Relaxed),
                name: self.string(shown)?,
                file: self.string(filename)?,
                first_line,
            };
            let table = self.bytes(table)?;
            let first_traceable = l.code_firsttraceable.map(|o| i32_in(head, o).max(0) as u32).unwrap_or(0);
            self.codes.insert(ptr, CachedCode { key, code: Arc::new(code), table, first_traceable });
        }
        Ok(self.codes.get(&ptr))
    }

    /// A `str` object's text (compact strings; others are `?`).
    fn string(&self, ptr: u64) -> Result<String> {
        if ptr == 0 {
            return Ok(String::new());
        }
        let mut head = [0u8; 40];
        self.mem.read(ptr, &mut head)?;
        let len = u64_in(&head, OB_SIZE).min(MAX_CHARS);
        let state = u32::from_le_bytes(head[UNICODE_STATE as usize..UNICODE_STATE as usize + 4].try_into().expect("4 bytes"));
        let kind = (state >> 2) & 7;
        let compact = state & (1 << 5) != 0;
        let ascii = state & (1 << 6) != 0;
        if !compact || !matches!(kind, 1 | 2 | 4) {
            return Ok("?".into());
        }
        let at = ptr + if ascii { self.layout.unicode_ascii_data } else { self.layout.unicode_compact_data };
        let mut data = vec![0u8; (len * kind as u64) as usize];
        self.mem.read(at, &mut data)?;
        // Names and file names hold no NUL character: one is a string read while it was
        // freed or built (the walk is tried again), never a name to show.
        if data.chunks_exact(kind as usize).any(|c| c.iter().all(|&b| b == 0)) {
            return Err(Error::Inconsistent { pid: self.pid, what: "a name with a NUL character (a string freed or built while read)", addr: ptr });
        }
        Ok(match kind {
            1 => data.iter().map(|&c| c as char).collect(),
            2 => char::decode_utf16(data.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]))).map(|c| c.unwrap_or('\u{fffd}')).collect(),
            _ => data.chunks_exact(4).map(|c| char::from_u32(u32::from_le_bytes(c.try_into().expect("4 bytes"))).unwrap_or('\u{fffd}')).collect(),
        })
    }

    /// A `bytes` object's content.
    fn bytes(&self, ptr: u64) -> Result<Vec<u8>> {
        if ptr == 0 {
            return Ok(Vec::new());
        }
        let len = self.mem.u64_at(ptr + OB_SIZE)?;
        if len > MAX_TABLE {
            return Err(Error::Inconsistent { pid: self.pid, what: "a line table larger than 1 MiB", addr: ptr });
        }
        let mut data = vec![0u8; len as usize];
        self.mem.read(ptr + BYTES_DATA, &mut data)?;
        Ok(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Version;

    /// The head of glibc 2.36's `struct pthread` of a main thread (x86_64): `tcb`, `dtv` and
    /// `self` pointers, the stack and pointer guards, the thread list, then `tid` at 0x2d0.
    fn main_pthread(pid: i32) -> Vec<u8> {
        let mut b = vec![0u8; 0x1000];
        let put = |b: &mut Vec<u8>, at: usize, v: u64| b[at..at + 8].copy_from_slice(&v.to_le_bytes());
        let base = 0x7f9d_7f06_cb80u64;
        put(&mut b, 0x0, base);
        put(&mut b, 0x8, base + 0x970);
        put(&mut b, 0x10, base);
        put(&mut b, 0x28, 0xd43d_5cab_01d7_1500);
        put(&mut b, 0x30, 0xc064_d71f_8494_609f);
        put(&mut b, 0x2c0, 0x7f9d_7f19_70d8);
        put(&mut b, 0x2c8, 0x7f9d_7f19_70d8);
        b[0x2d0..0x2d4].copy_from_slice(&pid.to_le_bytes());
        put(&mut b, 0x2d8, 0x7f9d_7f06_ce60);
        b
    }

    #[test]
    fn a_name_with_a_nul_character_is_not_read_as_one() {
        let image = Image { path: "libpython3.11.so".into(), version: Version { major: 3, minor: 11 }, runtime: 0, code_type: 0 };
        let layout = Layout::of(image.version).expect("3.11");
        let (base, data_at) = (0x1000u64, layout.unicode_ascii_data as usize);
        let mut data = vec![0u8; data_at + 8];
        data[OB_SIZE as usize..OB_SIZE as usize + 8].copy_from_slice(&3u64.to_le_bytes());
        // Compact ASCII, one byte per character.
        data[UNICODE_STATE as usize..UNICODE_STATE as usize + 4].copy_from_slice(&((1u32 << 2) | (1 << 5) | (1 << 6)).to_le_bytes());
        data[data_at..data_at + 3].copy_from_slice(b"run");
        let mut py = Interpreter::new(crate::memory::Bytes { base, data: data.clone() }, 7, image.clone()).expect("a layout");
        assert_eq!(py.string(base).expect("a name"), "run");
        data[data_at + 1] = 0;
        py = Interpreter::new(crate::memory::Bytes { base, data }, 7, image).expect("a layout");
        assert!(py.string(base).is_err());
    }

    /// A 3.8 process in `Bytes`: `_PyRuntime` at the base, one interpreter with the main
    /// thread's state and a worker's (no frames), the worker's `struct pthread`, and the main
    /// thread's, which ends the memory 3,520 bytes after its start (where the CI's
    /// environment put it; the 4 KiB after it are not all readable).
    fn process_38(pid: i32) -> Interpreter<crate::memory::Bytes> {
        let base = 0x10_0000u64;
        let image = Image { path: "libpython3.8.so".into(), version: Version { major: 3, minor: 8 }, runtime: base, code_type: 0 };
        let l = Layout::of(image.version).expect("3.8");
        let (interp, main_ts, worker_ts, worker_pt) = (base + 0x100, base + 0x200, base + 0x400, base + 0x1000);
        let main_pt = base + 0x3000 - 0xdc0;
        let mut data = vec![0u8; 0x3000];
        let mut put = |at: u64, v: u64| data[(at - base) as usize..(at - base) as usize + 8].copy_from_slice(&v.to_le_bytes());
        put(base + l.runtime_interpreters_head, interp);
        put(base + l.runtime_main_thread, main_pt);
        put(interp + l.interp_tstate_head, worker_ts);
        put(worker_ts + l.tstate_next, main_ts);
        put(worker_ts + l.tstate_thread_id, worker_pt);
        put(main_ts + l.tstate_thread_id, main_pt);
        put(worker_pt + 0x2d0, pid as u64 + 1);
        let main = main_pthread(pid);
        data[(main_pt - base) as usize..].copy_from_slice(&main[..0xdc0]);
        Interpreter::new(crate::memory::Bytes { base, data }, pid, image).expect("a layout")
    }

    #[test]
    fn threads_found_where_the_main_pthread_ends_its_mapping() {
        let mut py = process_38(4242);
        let mut frames = Vec::new();
        for tid in [4242, 4243, 4244] {
            py.stack(tid, &mut frames).expect("thread ids read");
            assert!(frames.is_empty());
        }
        assert_eq!(py.pthread_tid_offset(), Some(0x2d0));
        let tids: Vec<i32> = py.thread_states().expect("the list").iter().map(|t| *t.tid.as_ref().expect("an id")).collect();
        assert_eq!(tids, [4243, 4242]);
        assert_eq!(py.tstate_of(4243).expect("found").map(|ts| ts & 0xfff), Some(0x400));
        assert_eq!(py.tstate_of(4244).expect("read"), None);
    }

    #[test]
    fn thread_ids_that_cannot_be_read_are_an_error_not_an_empty_stack() {
        // The process id is nowhere in the main thread's structure.
        let mut py = process_38(4242);
        py.pid = 4100;
        let mut frames = Vec::new();
        let e = py.stack(4242, &mut frames).expect_err("no thread id offset");
        assert!(matches!(e, Error::NoThreadId { pid: 4100, len: 0xdc0, .. }), "{e}");
        assert!(e.to_string().contains("3520 readable bytes"), "{e}");
        assert!(py.thread_states().expect("the list").iter().all(|t| t.tid.is_err()));
    }

    #[test]
    fn thread_id_is_not_taken_from_half_a_pointer() {
        assert_eq!(pthread_tid_offset(&main_pthread(13162), 13162), Some(0x2d0));
        // A process id equal to the upper half of the pointers (0x7f9d).
        assert_eq!(pthread_tid_offset(&main_pthread(0x7f9d), 0x7f9d), Some(0x2d0));
        // A C library whose id has a non-zero neighbour: the first word that holds it.
        let mut b = main_pthread(4242);
        b[0x2d4] = 1;
        assert_eq!(pthread_tid_offset(&b, 4242), Some(0x2d0));
        assert_eq!(pthread_tid_offset(&b, 4243), None);
    }
}
