//! Opening the sampling events on the target's threads, and the reader thread that saves
//! their ring buffers to a spool while the target runs.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::jit::{JitFiles, JitSummary};
use super::maps::{read_maps, MapEntry};
use super::perf::{self, Attr, Ring};
use super::python::{PythonReader, PythonSummary};
use super::records;
use super::StackOptions;
use crate::error::{io as io_err, Error, Result};
use crate::format::EventFormat;

/// What an event id stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EvKind {
    /// The cpu-clock timer: an on-CPU sample.
    Clock,
    /// `sched:sched_switch` out of a traced thread: an off-CPU sample.
    Switch,
}

/// The registers sampled, as a `perf_regs` mask, for this architecture.
pub(crate) fn regs_mask() -> Option<u64> {
    if cfg!(target_arch = "x86_64") {
        // AX BX CX DX SI DI BP SP IP, R8..R15 (flags and segment registers left out).
        Some(0x1ff | (0xff << 16))
    } else if cfg!(target_arch = "aarch64") {
        // X0..X30, SP, PC.
        Some((1u64 << 33) - 1)
    } else {
        None
    }
}

/// Where the user stack pointer is among the sampled registers ([`regs_mask`]).
pub(crate) fn sp_index() -> Option<usize> {
    let bit = if cfg!(target_arch = "x86_64") {
        7
    } else if cfg!(target_arch = "aarch64") {
        31
    } else {
        return None;
    };
    Some((regs_mask()? & ((1u64 << bit) - 1)).count_ones() as usize)
}

/// Online CPUs (`/sys/devices/system/cpu/online`, e.g. `0-3,6`).
pub(crate) fn online_cpus() -> Vec<u32> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                    out.extend(a..=b);
                }
            }
            None => {
                if let Ok(a) = part.parse() {
                    out.push(a);
                }
            }
        }
    }
    if out.is_empty() {
        // SAFETY: sysconf has no preconditions.
        let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as u32;
        out.extend(0..n);
    }
    out
}

/// The `sched:sched_switch` tracepoint: its perf id, and where `prev_state` is in its raw
/// data.
#[derive(Clone, Debug)]
pub(crate) struct SwitchEvent {
    pub id: u64,
    pub prev_state: Option<(usize, usize)>,
}

pub(crate) fn switch_event(events_dir: &Path) -> Result<SwitchEvent> {
    let dir = events_dir.join("sched/sched_switch");
    let id_path = dir.join("id");
    let id = std::fs::read_to_string(&id_path)
        .map_err(|e| io_err(&id_path, e))?
        .trim()
        .parse::<u64>()
        .map_err(|_| Error::Stacks(format!("{}: not a tracepoint id", id_path.display())))?;
    let fmt = EventFormat::read(events_dir, "sched", "sched_switch").ok();
    let prev_state = fmt.as_ref().and_then(|f| f.field("prev_state")).map(|f| (f.offset, f.size));
    Ok(SwitchEvent { id, prev_state })
}

/// How the events are opened.
struct Plan<'a> {
    opts: &'a StackOptions,
    mask: u64,
    switch: Option<&'a SwitchEvent>,
    inherit: bool,
    enable_on_exec: bool,
    build_id: bool,
}

impl Plan<'_> {
    fn clock_attr(&self) -> Attr {
        let mut a = Attr::new(perf::PERF_TYPE_SOFTWARE, perf::PERF_COUNT_SW_CPU_CLOCK);
        a.sample_period = self.opts.period_ns.max(1);
        a.sample_type = records::ID_FIELDS | perf::SAMPLE_REGS_USER | perf::SAMPLE_STACK_USER;
        a.flags = perf::F_DISABLED
            | perf::F_EXCLUDE_HV
            | perf::F_MMAP
            | perf::F_MMAP2
            | perf::F_COMM
            | perf::F_COMM_EXEC
            | perf::F_TASK
            | perf::F_SAMPLE_ID_ALL
            | perf::F_USE_CLOCKID
            | perf::F_WATERMARK;
        self.common(&mut a);
        if self.build_id {
            a.flags |= perf::F_BUILD_ID;
        }
        a
    }

    fn switch_attr(&self, id: u64) -> Attr {
        let mut a = Attr::new(perf::PERF_TYPE_TRACEPOINT, id);
        a.sample_period = 1;
        a.sample_type = records::ID_FIELDS | perf::SAMPLE_RAW | perf::SAMPLE_REGS_USER | perf::SAMPLE_STACK_USER;
        a.flags = perf::F_DISABLED | perf::F_EXCLUDE_HV | perf::F_SAMPLE_ID_ALL | perf::F_USE_CLOCKID | perf::F_WATERMARK;
        self.common(&mut a);
        a
    }

    fn common(&self, a: &mut Attr) {
        if self.inherit {
            a.flags |= perf::F_INHERIT;
        }
        if self.enable_on_exec {
            a.flags |= perf::F_ENABLE_ON_EXEC;
        }
        a.sample_regs_user = self.mask;
        a.sample_stack_user = self.opts.stack_size;
        a.clockid = libc::CLOCK_MONOTONIC;
        if self.opts.python {
            // Python frames are read as soon as possible after their sample: wake the reader
            // at every sample.
            a.flags &= !perf::F_WATERMARK;
            a.wakeup_watermark = 1;
        } else {
            // Wake the reader when a buffer is a quarter full (it also reads every 100 ms).
            a.wakeup_watermark = ((data_pages(self.opts.buffer_kb) * page_size()) / 4) as u32;
        }
    }
}

/// The events of one recording: every fd (closed at the end), and per CPU the ring buffer
/// that all events of that CPU write to.
pub(crate) struct Opened {
    pub fds: Vec<OwnedFd>,
    pub rings: Vec<(u32, Ring, RawFd)>,
    pub kinds: HashMap<u64, EvKind>,
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize
}

/// Data pages for a ring of about `kb` KiB: a power of two, at least 8.
fn data_pages(kb: u64) -> usize {
    ((kb * 1024 / page_size() as u64).max(8) as usize).next_power_of_two()
}

/// Opens the events for `tasks` (thread ids, or -1 for every task) on every CPU.
fn open_all(tasks: &[i32], cpus: &[u32], plan: &mut Plan<'_>) -> Result<Opened> {
    let pages = data_pages(plan.opts.buffer_kb);
    let mut out = Opened { fds: Vec::new(), rings: Vec::new(), kinds: HashMap::new() };
    let mut opened_any_task = false;
    for &cpu in cpus {
        let mut primary: Option<usize> = None;
        for &task in tasks {
            // The timer.
            let mut attr = plan.clock_attr();
            let fd = match perf::open(&attr, task, cpu as i32) {
                Ok(fd) => fd,
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) && plan.build_id => {
                    // Kernels before 5.12 have no build ids in MMAP2 records: read them from
                    // the files instead.
                    plan.build_id = false;
                    attr = plan.clock_attr();
                    perf::open(&attr, task, cpu as i32).map_err(|e| Error::Stacks(perf::open_error("cpu-clock sampling", &e)))?
                }
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) && task > 0 => continue, // the thread ended
                Err(e) => return Err(Error::Stacks(perf::open_error("cpu-clock sampling", &e))),
            };
            opened_any_task = true;
            let clock_id = perf::id(&fd).map_err(|e| Error::Stacks(format!("perf event id: {e}")))?;
            out.kinds.insert(clock_id, EvKind::Clock);
            match primary {
                None => {
                    let ring = Ring::map(&fd, pages).map_err(|e| {
                        Error::Stacks(format!(
                            "cannot map a {} KiB perf ring buffer: {e} (try a smaller --stack-buffer, or raise kernel.perf_event_mlock_kb)",
                            pages * page_size() / 1024
                        ))
                    })?;
                    out.rings.push((cpu, ring, fd.as_raw_fd()));
                    primary = Some(out.fds.len());
                }
                Some(p) => perf::set_output(&fd, &out.fds[p]).map_err(|e| Error::Stacks(format!("perf ring buffer redirection: {e}")))?,
            }
            out.fds.push(fd);
            // The context switches out of the task.
            if let Some(sw) = plan.switch {
                let attr = plan.switch_attr(sw.id);
                let fd = match perf::open(&attr, task, cpu as i32) {
                    Ok(fd) => fd,
                    Err(e) if e.raw_os_error() == Some(libc::ESRCH) && task > 0 => continue,
                    Err(e) => return Err(Error::Stacks(perf::open_error("sched:sched_switch sampling (off-CPU stacks)", &e))),
                };
                let id = perf::id(&fd).map_err(|e| Error::Stacks(format!("perf event id: {e}")))?;
                out.kinds.insert(id, EvKind::Switch);
                let p = primary.expect("the timer event is opened first");
                perf::set_output(&fd, &out.fds[p]).map_err(|e| Error::Stacks(format!("perf ring buffer redirection: {e}")))?;
                out.fds.push(fd);
            }
        }
    }
    if !opened_any_task {
        return Err(Error::Target("the process to sample is gone".into()));
    }
    Ok(out)
}

/// Tries opening (and closing) a sampling event on this process: a clear error now rather
/// than after the kernel recording has been set up.
pub(crate) fn check(opts: &StackOptions, switch: Option<&SwitchEvent>) -> Result<()> {
    let Some(mask) = regs_mask() else {
        return Err(Error::Stacks(format!("user stacks are not supported on {} (x86_64 and aarch64 only)", std::env::consts::ARCH)));
    };
    if opts.stack_size == 0 || opts.stack_size > 65000 || opts.stack_size & 7 != 0 {
        return Err(Error::Stacks(format!("the stack copy size must be a multiple of 8 from 8 to 65000 bytes, not {}", opts.stack_size)));
    }
    if opts.period_ns < 10_000 {
        return Err(Error::Stacks("the sampling period must be at least 0.01 ms".into()));
    }
    let plan = Plan { opts, mask, switch, inherit: true, enable_on_exec: false, build_id: false };
    let fd = perf::open(&plan.clock_attr(), 0, -1).map_err(|e| Error::Stacks(perf::open_error("cpu-clock sampling", &e)))?;
    drop(fd);
    if let Some(sw) = switch {
        let fd = perf::open(&plan.switch_attr(sw.id), 0, -1).map_err(|e| Error::Stacks(perf::open_error("sched:sched_switch sampling (off-CPU stacks)", &e)))?;
        drop(fd);
    }
    Ok(())
}

/// A thread or process known at the start (attach and system-wide recordings).
#[derive(Clone, Debug)]
pub(crate) struct InitialTask {
    pub pid: i32,
    pub tid: i32,
    pub comm: Vec<u8>,
}

/// Counters shared with the reader thread.
#[derive(Default)]
pub(crate) struct Counters {
    pub stop: AtomicBool,
    pub samples: AtomicU64,
    pub lost: AtomicU64,
    pub bytes: AtomicU64,
    pub throttled: AtomicU64,
    pub error: Mutex<Option<Error>>,
}

/// What the reader thread leaves when it ends.
#[derive(Default)]
pub(crate) struct ReaderResults {
    pub python: Option<PythonSummary>,
    pub jit: JitSummary,
}

/// The sampler of a recording: events open, reader thread running.
pub struct Sampler {
    pub(crate) fds: Vec<OwnedFd>,
    pub(crate) kinds: HashMap<u64, EvKind>,
    pub(crate) counters: Arc<Counters>,
    handle: Option<JoinHandle<ReaderResults>>,
    /// The Python and JIT summaries, once the reader thread has ended.
    pub(crate) results: ReaderResults,
    pub(crate) reader_tid: i32,
    /// The thread that started the command (gone by now).
    pub(crate) spawner_tid: Option<i32>,
    pub(crate) spools: Vec<(u32, PathBuf)>,
    pub(crate) mask: u64,
    pub(crate) switch: Option<SwitchEvent>,
    pub(crate) start_ns: u64,
    pub(crate) initial_tasks: Vec<InitialTask>,
    pub(crate) initial_maps: Vec<(i32, Vec<MapEntry>)>,
    pub(crate) stopped: bool,
}

pub(crate) fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64)
}

fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

fn comm_of(pid: i32, tid: i32) -> Vec<u8> {
    std::fs::read(format!("/proc/{pid}/task/{tid}/comm")).map(|mut c| {
        while c.last() == Some(&b'\n') {
            c.pop();
        }
        c
    })
    .unwrap_or_default()
}

fn threads_of(pid: i32) -> Vec<i32> {
    let mut v: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect())
        .unwrap_or_default();
    v.sort_unstable();
    v
}

impl Sampler {
    fn start(opened: Opened, mask: u64, switch: Option<SwitchEvent>, spool_dir: &Path, python: bool) -> Result<Sampler> {
        let counters = Arc::new(Counters::default());
        let mut spools = Vec::new();
        let mut rings = Vec::new();
        for (cpu, ring, fd) in opened.rings {
            let path = spool_dir.join(format!("stacks-cpu{cpu}"));
            let f = File::create(&path).map_err(|e| io_err(&path, e))?;
            spools.push((cpu, path.clone()));
            rings.push(RingReader { ring, fd, spool: BufWriter::with_capacity(1 << 20, f), path });
        }
        let kinds = opened.kinds.clone();
        let nregs = mask.count_ones() as usize;
        let jit = JitFiles::new(spool_dir.join("jit"));
        let (tx, rx) = std::sync::mpsc::channel();
        let handle = {
            let counters = Arc::clone(&counters);
            let kinds = kinds.clone();
            std::thread::Builder::new()
                .name("tracelens-stacks".into())
                .spawn(move || {
                    let _ = tx.send(gettid());
                    if python {
                        realtime();
                    }
                    let mut extras = Extras { python: python.then(PythonReader::default), jit };
                    reader_loop(rings, &kinds, nregs, &counters, &mut extras);
                    extras.jit.save_all();
                    ReaderResults { python: extras.python.map(PythonReader::into_summary), jit: extras.jit.summary }
                })
                .map_err(|e| io_err("stack reader thread", e))?
        };
        let reader_tid = rx.recv().unwrap_or(0);
        Ok(Sampler {
            fds: opened.fds,
            kinds,
            counters,
            handle: Some(handle),
            results: ReaderResults::default(),
            reader_tid,
            spawner_tid: None,
            spools,
            mask,
            switch,
            start_ns: mono_ns(),
            initial_tasks: Vec::new(),
            initial_maps: Vec::new(),
            stopped: false,
        })
    }

    /// Runs `cmd` with sampling from its `exec` on: the child waits (before `exec`) until
    /// its events are open, with `inherit` so that its threads and children are sampled
    /// too, and `enable_on_exec` so that nothing of the recorder is.
    pub(crate) fn spawn(mut cmd: Command, opts: &StackOptions, switch: Option<SwitchEvent>, spool_dir: &Path) -> Result<(Child, Sampler)> {
        use std::os::unix::process::CommandExt;
        let mask = regs_mask().ok_or_else(|| Error::Stacks("user stacks are not supported on this architecture".into()))?;
        let program = cmd.get_program().to_string_lossy().into_owned();
        let (ready_r, ready_w) = pipe()?;
        let (go_r, go_w) = pipe()?;
        let (rr, rw, gr, gw) = (ready_r.as_raw_fd(), ready_w.as_raw_fd(), go_r.as_raw_fd(), go_w.as_raw_fd());
        // SAFETY: the hook only makes async-signal-safe system calls (close, getpid, write,
        // read) on descriptors that exist in the child, and allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                libc::close(rr);
                libc::close(gw);
                let pid = libc::getpid().to_ne_bytes();
                libc::write(rw, pid.as_ptr() as *const libc::c_void, 4);
                let mut go = 0u8;
                loop {
                    let n = libc::read(gr, &mut go as *mut u8 as *mut libc::c_void, 1);
                    if n < 0 && *libc::__errno_location() == libc::EINTR {
                        continue;
                    }
                    return if n == 1 && go == 1 { Ok(()) } else { Err(io::Error::from_raw_os_error(libc::ECANCELED)) };
                }
            });
        }
        // `spawn` returns only once the child has called exec: it runs on a thread of its
        // own while this one opens the events.
        let spawner = std::thread::Builder::new()
            .name("tracelens-spawn".into())
            .spawn(move || {
                let r = cmd.spawn();
                drop(ready_w);
                drop(go_r);
                (r, gettid())
            })
            .map_err(|e| io_err("spawner thread", e))?;
        let mut ready_r = File::from(ready_r);
        let mut b = [0u8; 4];
        let got = loop {
            match ready_r.read_exact(&mut b) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => break r.is_ok(),
            }
        };
        let mut go_w = File::from(go_w);
        let result = if got {
            let pid = i32::from_ne_bytes(b);
            let mut plan = Plan { opts, mask, switch: switch.as_ref(), inherit: true, enable_on_exec: true, build_id: true };
            online_cpus_open(&[pid], &mut plan).and_then(|o| Sampler::start(o, mask, switch.clone(), spool_dir, opts.python))
        } else {
            Err(Error::Target("the command could not be started".into()))
        };
        let _ = go_w.write_all(&[u8::from(result.is_ok())]);
        drop(go_w);
        let (child, spawner_tid) = spawner.join().map_err(|_| Error::Target("the spawner thread panicked".into()))?;
        match (result, child) {
            (Ok(mut s), Ok(c)) => {
                s.spawner_tid = Some(spawner_tid);
                Ok((c, s))
            }
            (Err(e), _) => Err(e),
            (Ok(_), Err(e)) => Err(crate::command::spawn_error(program.as_ref(), &e)),
        }
    }

    /// Samples the threads of running process `pid` (and the threads and children they
    /// create from now on).
    pub(crate) fn attach(pid: i32, opts: &StackOptions, switch: Option<SwitchEvent>, spool_dir: &Path) -> Result<Sampler> {
        let mask = regs_mask().ok_or_else(|| Error::Stacks("user stacks are not supported on this architecture".into()))?;
        let tids = threads_of(pid);
        if tids.is_empty() {
            return Err(Error::Target(format!("no process {pid} to attach to")));
        }
        let mut plan = Plan { opts, mask, switch: switch.as_ref(), inherit: true, enable_on_exec: false, build_id: true };
        let opened = online_cpus_open(&tids, &mut plan)?;
        let mut s = Sampler::start(opened, mask, switch, spool_dir, opts.python)?;
        s.initial_maps.push((pid, read_maps(pid)));
        s.initial_tasks = tids.iter().map(|&t| InitialTask { pid, tid: t, comm: comm_of(pid, t) }).collect();
        s.enable()?;
        Ok(s)
    }

    /// Samples every task of the system (this recorder's samples are dropped when written).
    pub(crate) fn system(opts: &StackOptions, switch: Option<SwitchEvent>, spool_dir: &Path) -> Result<Sampler> {
        let mask = regs_mask().ok_or_else(|| Error::Stacks("user stacks are not supported on this architecture".into()))?;
        let mut plan = Plan { opts, mask, switch: switch.as_ref(), inherit: false, enable_on_exec: false, build_id: true };
        let opened = online_cpus_open(&[-1], &mut plan)?;
        let mut s = Sampler::start(opened, mask, switch, spool_dir, opts.python)?;
        let me = std::process::id() as i32;
        let pids: Vec<i32> = std::fs::read_dir("/proc").map(|d| d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect()).unwrap_or_default();
        for pid in pids {
            if pid == me {
                continue;
            }
            let maps = read_maps(pid);
            if maps.is_empty() {
                continue; // kernel threads
            }
            for t in threads_of(pid) {
                s.initial_tasks.push(InitialTask { pid, tid: t, comm: comm_of(pid, t) });
            }
            s.initial_maps.push((pid, maps));
        }
        s.enable()?;
        Ok(s)
    }

    fn enable(&self) -> Result<()> {
        for fd in &self.fds {
            perf::enable(fd).map_err(|e| Error::Stacks(format!("cannot enable a perf event: {e}")))?;
        }
        Ok(())
    }

    /// Threads of the recorder that the sampler runs or ran (to leave out of the kernel
    /// trace).
    pub fn own_tids(&self) -> Vec<i32> {
        std::iter::once(self.reader_tid).chain(self.spawner_tid).filter(|&t| t > 0).collect()
    }

    /// (samples, lost) so far.
    pub fn counts(&self) -> (u64, u64) {
        (self.counters.samples.load(Ordering::Relaxed), self.counters.lost.load(Ordering::Relaxed))
    }

    /// Stops sampling, drains the buffers and ends the reader thread.
    pub(crate) fn stop(&mut self) -> Result<()> {
        if self.stopped {
            return Ok(());
        }
        self.stopped = true;
        for fd in &self.fds {
            let _ = perf::disable(fd);
        }
        self.counters.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            self.results = h.join().unwrap_or_default();
        }
        self.fds.clear();
        if let Some(e) = self.counters.error.lock().unwrap_or_else(|p| p.into_inner()).take() {
            return Err(e);
        }
        Ok(())
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

impl Extras {
    /// Follows the processes' maps, execs, forks and exits.
    fn observe(&mut self, ty: u32, misc: u16, rec: &[u8]) {
        match ty {
            perf::RECORD_MMAP2 => {
                if let Some(m) = records::mmap2(rec, misc) {
                    self.jit.on_mmap(m.pid, &m.filename);
                    if let Some(py) = self.python.as_mut() {
                        py.on_mmap(m.pid, &m.filename);
                    }
                }
            }
            perf::RECORD_COMM => {
                if let (Some((pid, _, _, true)), Some(py)) = (records::comm(rec, misc), self.python.as_mut()) {
                    py.forget(pid);
                }
            }
            perf::RECORD_FORK => {
                if let Some((pid, _, _, _)) = records::task(rec) {
                    self.jit.on_pid(pid);
                }
            }
            perf::RECORD_EXIT => {
                // The process's end (its main thread's).
                if let Some((pid, _, _, _)) = records::task(rec).filter(|t| t.0 == t.2) {
                    self.jit.on_exit(pid);
                    if let Some(py) = self.python.as_mut() {
                        py.forget(pid);
                    }
                }
            }
            _ => {}
        }
    }
}

fn online_cpus_open(tasks: &[i32], plan: &mut Plan<'_>) -> Result<Opened> {
    let mut opened = open_all(tasks, &online_cpus(), plan)?;
    opened.rings.sort_by_key(|(c, _, _)| *c);
    Ok(opened)
}

fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: fds is an array of two descriptors to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io_err("pipe", io::Error::last_os_error()));
    }
    // SAFETY: pipe2 returned two new descriptors that we own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

struct RingReader {
    ring: Ring,
    fd: RawFd,
    spool: BufWriter<File>,
    path: PathBuf,
}

/// Puts the calling thread in the real-time class (`SCHED_FIFO`, lowest priority) when
/// permitted: in `--python` mode the reader reads each sample's Python frames as soon as the
/// kernel wakes it, which a busy machine would otherwise delay by milliseconds. Its work is
/// bounded by the sampling rate (one wake-up and one stack walk per sample).
fn realtime() {
    let p = libc::sched_param { sched_priority: 1 };
    // SAFETY: sched_setscheduler on this thread (0) with a valid parameter; failing leaves
    // it as it was.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) };
}

/// The user stack pointer of sample `s` and the stack it copied from there.
fn user_stack<'a>(s: &records::Sample<'a>) -> Option<(u64, &'a [u8])> {
    let at = sp_index()? * 8;
    let sp = u64::from_ne_bytes(s.regs.get(at..at + 8)?.try_into().ok()?);
    (!s.stack.is_empty()).then_some((sp, s.stack))
}

/// What the reader thread does beside spooling: Python frames, JIT symbol files.
struct Extras {
    python: Option<PythonReader>,
    jit: JitFiles,
}

/// Saves every record of interest of every ring to its spool (samples with their stack copy
/// cut to what was filled, after their Python frames in `--python` mode), until told to
/// stop, then empties the rings a last time.
fn reader_loop(mut rings: Vec<RingReader>, kinds: &HashMap<u64, EvKind>, nregs: usize, c: &Counters, x: &mut Extras) {
    let mut scratch = Vec::with_capacity(1 << 16);
    let mut before = Vec::with_capacity(1 << 12);
    let fail = |e: Error| {
        let mut g = c.error.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_none() {
            *g = Some(e);
        }
    };
    // Waits in a row that timed out (--python mode).
    let mut quiet = 0u32;
    loop {
        let stopping = c.stop.load(Ordering::Acquire);
        let mut got = 0usize;
        for r in rings.iter_mut() {
            let mut err: Option<io::Error> = None;
            let spool = &mut r.spool;
            got += r.ring.drain(|rec| {
                if err.is_some() {
                    return;
                }
                let Some((ty, misc, _)) = records::header(rec) else { return };
                let res = match ty {
                    perf::RECORD_SAMPLE => {
                        let kind = records::u64_at(rec, 8).and_then(|id| kinds.get(&id)).copied();
                        match kind.and_then(|k| records::sample(rec, k == EvKind::Switch, nregs)) {
                            Some(s) => {
                                c.samples.fetch_add(1, Ordering::Relaxed);
                                x.jit.on_pid(s.ids.pid);
                                before.clear();
                                if let Some(py) = x.python.as_mut() {
                                    // A thread switched out has not run since if its stack
                                    // is still what the sample copied.
                                    let still = (kind == Some(EvKind::Switch)).then(|| user_stack(&s)).flatten();
                                    py.on_sample(s.ids.pid, s.ids.tid, s.ids.time, still, &mut before);
                                }
                                records::trim_sample(rec, &s, &mut scratch);
                                c.bytes.fetch_add((before.len() + scratch.len()) as u64, Ordering::Relaxed);
                                spool.write_all(&before).and_then(|()| spool.write_all(&scratch))
                            }
                            None => Ok(()),
                        }
                    }
                    perf::RECORD_LOST | perf::RECORD_LOST_SAMPLES => {
                        c.lost.fetch_add(records::lost(rec, ty).unwrap_or(0), Ordering::Relaxed);
                        spool.write_all(rec)
                    }
                    perf::RECORD_MMAP2 | perf::RECORD_COMM | perf::RECORD_FORK | perf::RECORD_EXIT => {
                        x.observe(ty, misc, rec);
                        spool.write_all(rec)
                    }
                    5 | 6 => {
                        // THROTTLE / UNTHROTTLE: the kernel lowered the sampling rate.
                        if ty == 5 {
                            c.throttled.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(())
                    }
                    _ => Ok(()),
                };
                if let Err(e) = res {
                    err = Some(e);
                }
            });
            if let Some(e) = err {
                fail(io_err(&r.path, e));
                c.stop.store(true, Ordering::Release);
                return;
            }
        }
        if stopping {
            break;
        }
        if got > 0 {
            quiet = 0;
        } else {
            let mut fds: Vec<libc::pollfd> = rings.iter().map(|r| libc::pollfd { fd: r.fd, events: libc::POLLIN, revents: 0 }).collect();
            // In --python mode the reader also wakes by itself, so that the frames of a
            // blocked thread are read before it runs again even where the kernel's wake-up
            // comes late (see `python.rs`): 1 ms after records came (a thread blocks after
            // running), twice as long after each wait that found none, 8 ms at most.
            let timeout = if x.python.is_some() { 1 << quiet.min(3) } else { 100 };
            // SAFETY: fds is a valid array of pollfd for its length.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
            if n == 0 {
                quiet = quiet.saturating_add(1);
            }
            // Once the sampled tasks are gone the descriptors stay readable (POLLHUP):
            // sleep instead of spinning.
            if n < 0 || fds.iter().any(|p| p.revents & (libc::POLLHUP | libc::POLLERR) != 0) {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    for r in rings.iter_mut() {
        if let Err(e) = r.spool.flush() {
            fail(io_err(&r.path, e));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stack_pointer_is_found_among_the_sampled_registers() {
        if cfg!(target_arch = "x86_64") {
            // AX BX CX DX SI DI BP, then SP.
            assert_eq!(sp_index(), Some(7));
        } else if cfg!(target_arch = "aarch64") {
            // X0..X30, then SP.
            assert_eq!(sp_index(), Some(31));
        }
    }
}
