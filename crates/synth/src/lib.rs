//! Synthetic LTTng-kernel-layout CTF traces from a small scheduler simulation: kernel traces
//! of any size for tests and benchmarks.
//!
//! * **In:** [`Options`] (CPUs, threads, events, seed, packet size).
//! * **Through:** threads run on CPUs, make system calls (some blocking: they switch out
//!   inside the call and are woken later, possibly onto another CPU), get preempted, and
//!   receive interrupts; every event is consistent with who runs where. Descriptors follow
//!   the kernel's rules: the threads of a process share its table, `openat` returns the
//!   lowest free number, and `close` closes the last descriptor the thread opened that is
//!   still open (so numbers stay as low as the descriptors open at a time, instead of one new
//!   number per `openat`).
//! * **Out:** a CTF trace directory written through `tracelens_ctf::write` in LTTng's kernel
//!   layout (`tracelens_ctf::lttng`, with the event classes of [`EVENTS`]): `metadata`, one
//!   stream per CPU (`channel0_N`) and its LTTng index; a [`Summary`]. The output is the same,
//!   byte for byte, for the same options.
#![deny(missing_docs)]

mod schema;
mod writer;

use std::path::Path;

pub use schema::{id as event_id, trace_class, EVENTS};
pub use tracelens_ctf::write::Version;
use tracelens_ctf::write::TraceWriter;
use writer::{StreamWriter, V};

/// What to generate.
#[derive(Clone, Debug)]
pub struct Options {
    /// Number of CPUs (one stream each). Default 4.
    pub cpus: u32,
    /// Number of user threads (besides one idle thread per CPU). Default 16.
    pub threads: u32,
    /// Approximate number of events to write (the prologue and final events come on top).
    /// Default 100 000.
    pub events: u64,
    /// Random seed. Default 1.
    pub seed: u64,
    /// Packet size in bytes. Default 256 KiB.
    pub packet_size: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options { cpus: 4, threads: 16, events: 100_000, seed: 1, packet_size: 256 * 1024 }
    }
}

/// The most CPUs.
pub const MAX_CPUS: u32 = 1024;
/// The most threads: their ids stay below Linux's largest pid.
pub const MAX_THREADS: u32 = 100_000;
/// The largest packet.
pub const MAX_PACKET_SIZE: u64 = 64 << 20;
/// The most memory for packets being built (one per CPU at a time).
pub const MAX_PACKET_MEMORY: u64 = 2 << 30;

impl Options {
    /// Checks that the options make a trace this generator can write: CPUs, threads and
    /// packet size in range, packets of all CPUs in memory at once under
    /// [`MAX_PACKET_MEMORY`]. (Whether the output fits on its disk is checked by
    /// [`generate`].)
    pub fn check(&self) -> Result<(), Error> {
        let fail = |m: String| Err(Error::Options(m));
        if self.cpus == 0 || self.cpus > MAX_CPUS {
            return fail(format!("--cpus must be between 1 and {MAX_CPUS} (got {})", self.cpus));
        }
        if self.threads == 0 || self.threads > MAX_THREADS {
            return fail(format!("--threads must be between 1 and {MAX_THREADS} (got {})", self.threads));
        }
        if self.packet_size < 4096 || self.packet_size > MAX_PACKET_SIZE || !self.packet_size.is_multiple_of(8) {
            return fail(format!(
                "--packet-size must be a multiple of 8 between 4096 and {} bytes (64 MiB) (got {})",
                MAX_PACKET_SIZE, self.packet_size
            ));
        }
        if self.packet_size * self.cpus as u64 > MAX_PACKET_MEMORY {
            return fail(format!(
                "--cpus {} x --packet-size {} needs {} MiB for packets being built, more than {} MiB: use smaller packets or fewer CPUs",
                self.cpus,
                self.packet_size,
                (self.packet_size * self.cpus as u64) >> 20,
                MAX_PACKET_MEMORY >> 20
            ));
        }
        Ok(())
    }

    /// About how many bytes [`generate`] writes with these options, a little more rather than
    /// less: about 24 bytes an event, a state dump of the threads, and the last, padded,
    /// packet of each CPU.
    pub fn estimated_bytes(&self) -> u64 {
        self.events
            .saturating_mul(24)
            .saturating_add((self.threads as u64).saturating_mul(160))
            .saturating_add((self.cpus as u64).saturating_mul(self.packet_size))
            .saturating_add(64 << 10)
    }
}

/// Makes `dir` ready for a new trace: creates it when it is not there; an empty directory is
/// used as it is. A directory that is not empty is refused, unless `replace` is set and it
/// holds a CTF trace and nothing else (`metadata`, stream files, `index/*.idx`): the trace is
/// then removed, so that no file of it is read with the new one.
pub fn prepare_output(dir: &Path, replace: bool) -> Result<(), Error> {
    let io = |p: &Path| {
        let path = p.display().to_string();
        move |source| Error::Io { path: path.clone(), source }
    };
    let entries: Vec<std::fs::DirEntry> = match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return std::fs::create_dir_all(dir).map_err(io(dir)),
        Err(e) => return Err(io(dir)(e)),
        Ok(rd) => rd.collect::<Result<_, _>>().map_err(io(dir))?,
    };
    if entries.is_empty() {
        return Ok(());
    }
    let is_trace = dir.join("metadata").is_file();
    if !replace {
        let what = if is_trace { "a CTF trace".to_string() } else { format!("{} entries", entries.len()) };
        return Err(Error::Output {
            path: dir.display().to_string(),
            message: format!("not empty (it holds {what}): choose an empty or new directory, or --force to replace the trace in it"),
        });
    }
    // Only a trace is replaced: its metadata, stream files and index.
    let mut files = Vec::new();
    for e in &entries {
        let p = e.path();
        let t = e.file_type().map_err(io(&p))?;
        let name = e.file_name();
        if t.is_file() && !name.to_string_lossy().starts_with('.') {
            files.push(p);
        } else if t.is_dir() && name == "index" {
            for i in std::fs::read_dir(&p).map_err(io(&p))? {
                let i = i.map_err(io(&p))?;
                let ip = i.path();
                if !(i.file_type().map_err(io(&ip))?.is_file() && ip.extension().is_some_and(|x| x == "idx")) {
                    return Err(not_a_trace(dir, &ip));
                }
                files.push(ip);
            }
        } else {
            return Err(not_a_trace(dir, &p));
        }
    }
    if !is_trace {
        return Err(Error::Output { path: dir.display().to_string(), message: "holds no CTF trace (no metadata file): --force replaces a trace only, nothing was removed".into() });
    }
    for f in files {
        std::fs::remove_file(&f).map_err(io(&f))?;
    }
    let index = dir.join("index");
    if index.is_dir() {
        std::fs::remove_dir(&index).map_err(io(&index))?;
    }
    Ok(())
}

/// Checks that the trace of `opts` ([`Options::estimated_bytes`]) fits in the space left on
/// the disk of `dir` (or of its nearest existing parent).
pub fn check_space(dir: &Path, opts: &Options) -> Result<(), Error> {
    let need = opts.estimated_bytes();
    let existing = dir.ancestors().find(|a| a.is_dir()).unwrap_or(Path::new("."));
    match tracelens_ctf::free_space(existing) {
        Some(free) if free < need => Err(Error::Output {
            path: dir.display().to_string(),
            message: format!("about {:.1} GB would be written, and only {:.1} GB are free there", need as f64 / 1e9, free as f64 / 1e9),
        }),
        _ => Ok(()),
    }
}

fn not_a_trace(dir: &Path, p: &Path) -> Error {
    Error::Output {
        path: dir.display().to_string(),
        message: format!("{} is not part of a CTF trace: --force replaces a trace only, nothing was removed", p.display()),
    }
}

/// The files of a trace of `cpus` CPUs: files of `dir` that are not among them would be read
/// as part of it; the first found is returned.
fn foreign_file(dir: &Path, cpus: u32) -> Option<std::path::PathBuf> {
    let ours = |name: &str, suffix: &str| {
        name.strip_prefix("channel0_").and_then(|n| n.strip_suffix(suffix)).and_then(|n| n.parse::<u32>().ok()).is_some_and(|n| n < cpus)
    };
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name == "metadata" || ours(&name, "") {
            continue;
        }
        if name == "index" {
            for i in std::fs::read_dir(e.path()).ok()?.flatten() {
                if !ours(&i.file_name().to_string_lossy(), ".idx") {
                    return Some(i.path());
                }
            }
            continue;
        }
        return Some(e.path());
    }
    None
}

/// Errors while generating.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Writing the output failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The options make no trace.
    #[error("{0}")]
    Options(String),
    /// The output directory cannot take the trace (not empty, not a trace to replace, too
    /// little free space).
    #[error("{path}: {message}")]
    Output {
        /// The directory.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The CTF writer failed (an I/O error, or a value the layout cannot hold).
    #[error(transparent)]
    Write(#[from] tracelens_ctf::Error),
}

/// What was generated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Events written.
    pub events: u64,
    /// Bytes written (stream files).
    pub bytes: u64,
}

/// xorshift64*: small, fast, deterministic.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Runnable, waiting for a CPU.
    Ready,
    /// On a CPU.
    Running(u32),
    /// On a CPU, inside the system call `nr` (an index into SYSCALLS) entered at that time.
    InSyscall(u32, usize),
    /// Blocked inside system call `nr`, until the given time.
    Blocked(usize, u64),
}

struct Thread {
    tid: i32,
    pid: i32,
    comm: String,
    prio: i32,
    state: State,
    /// The process's index in [`Sim::tables`].
    process: usize,
    /// The descriptor its reads, writes and closes use: the last it opened that is still open
    /// (`held`), else the last it used.
    fd: u32,
    held: bool,
    /// The other descriptors it opened that are still open, oldest first.
    opened: Vec<u32>,
    /// A system call to return from when next switched in (woken while blocked in it).
    resume: Option<usize>,
}

/// (name, blocking?, typical duration ns)
const SYSCALLS: &[(&str, bool, u64)] = &[
    ("read", true, 40_000),
    ("write", false, 6_000),
    ("openat", false, 9_000),
    ("close", false, 1_500),
    ("futex", true, 120_000),
    ("getpid", false, 400),
];

/// Writes a synthetic trace into `dir` (created if needed). Files of `dir` that would be
/// read as part of the trace and are not written by this call (stream files of another
/// trace, say) are an error: see [`prepare_output`]. So is an output that would not fit in
/// the space left on the disk ([`Options::estimated_bytes`]).
pub fn generate(dir: &Path, opts: &Options) -> Result<Summary, Error> {
    generate_version(dir, opts, Version::Ctf1)
}

/// [`generate`] with the metadata of CTF `version` (CTF 2: JSON fragments): the stream files
/// are the same bytes for both.
pub fn generate_version(dir: &Path, opts: &Options, version: Version) -> Result<Summary, Error> {
    opts.check()?;
    if let Some(f) = foreign_file(dir, opts.cpus) {
        return Err(Error::Output {
            path: dir.display().to_string(),
            message: format!("{} would be read as part of the new trace: use an empty directory (tracelens synth --force replaces a trace)", f.display()),
        });
    }
    check_space(dir, opts)?;
    let mut rng = Rng(opts.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut uuid = [0u8; 16];
    for b in uuid.iter_mut() {
        *b = rng.next() as u8;
    }
    let class = trace_class(uuid, "synth", opts.cpus);
    let mut trace = TraceWriter::create_version(dir, &class, version)?;
    let mut streams = Vec::with_capacity(opts.cpus as usize);
    for cpu in 0..opts.cpus {
        streams.push(StreamWriter::create(&mut trace, cpu, opts.packet_size)?);
    }
    let mut sim = Sim::new(opts, rng);
    sim.run(&mut streams, opts.events)?;
    let (mut events, mut bytes) = (0, 0);
    for s in streams {
        let (e, b) = s.finish()?;
        events += e;
        bytes += b;
    }
    Ok(Summary { events, bytes })
}

struct Sim {
    rng: Rng,
    now: u64,
    threads: Vec<Thread>,
    /// Index of the thread on each CPU (None: idle).
    on_cpu: Vec<Option<usize>>,
    cpus: u32,
    /// Each process's descriptor table.
    tables: Vec<FdTable>,
}

/// The descriptor numbers of a process: what `openat` hands out and `close` gives back.
struct FdTable {
    /// Numbers below it were handed out (0, 1 and 2 are the state dump's).
    next: u32,
    /// Numbers below `next` given back, lowest first out.
    free: std::collections::BinaryHeap<std::cmp::Reverse<u32>>,
}

impl FdTable {
    /// The lowest free number.
    fn open(&mut self) -> u32 {
        match self.free.pop() {
            Some(std::cmp::Reverse(n)) => n,
            None => {
                self.next += 1;
                self.next - 1
            }
        }
    }

    fn close(&mut self, fd: u32) {
        self.free.push(std::cmp::Reverse(fd));
    }
}

type W = Vec<StreamWriter>;

impl Sim {
    fn new(opts: &Options, rng: Rng) -> Sim {
        let mut threads = Vec::new();
        let procs = opts.threads.div_ceil(4).max(1);
        for i in 0..opts.threads {
            let p = i % procs;
            let pid = 1000 + p as i32 * 100;
            let tid = if i < procs { pid } else { pid + (i / procs) as i32 };
            threads.push(Thread { tid, pid, comm: format!("app{p}"), prio: 20, state: State::Ready, process: p as usize, fd: 3, held: false, opened: Vec::new(), resume: None });
        }
        let tables = (0..procs).map(|_| FdTable { next: 3, free: Default::default() }).collect();
        Sim { rng, now: 1_000_000, threads, on_cpu: vec![None; opts.cpus as usize], cpus: opts.cpus, tables }
    }

    fn tick(&mut self, max: u64) -> u64 {
        self.now += 100 + self.rng.below(max);
        self.now
    }

    fn run(&mut self, w: &mut W, target: u64) -> Result<(), Error> {
        // Prologue: a state dump of every process and its open files.
        let t = self.tick(1000);
        w[0].event(event_id("lttng_statedump_start"), t, &[])?;
        for i in 0..self.threads.len() {
            let (tid, pid) = (self.threads[i].tid, self.threads[i].pid);
            let t = self.tick(500);
            let comm = self.threads[i].comm.clone();
            w[0].event(
                event_id("lttng_statedump_process_state"),
                t,
                &[V::I(tid as i64), V::I(tid as i64), V::I(pid as i64), V::I(pid as i64), V::I(1), V::I(1), V::S(&comm), V::I(0), V::I(5), V::I(0), V::I(2), V::I(0)],
            )?;
            if tid == pid {
                for (fd, name) in [(0, "/dev/null"), (1, "/dev/pts/0"), (2, "/dev/pts/0")] {
                    let t = self.tick(300);
                    w[0].event(event_id("lttng_statedump_file_descriptor"), t, &[V::I(pid as i64), V::I(fd), V::I(0), V::I(0), V::S(name)])?;
                }
            }
        }
        let t = self.tick(1000);
        w[0].event(event_id("lttng_statedump_end"), t, &[])?;

        let mut written: u64 = 0;
        while written < target {
            let cpu = self.rng.below(self.cpus as u64) as u32;
            written += self.step(w, cpu)?;
            // Wake threads whose blocking call is over.
            if self.rng.below(4) == 0 {
                written += self.wake_due(w, cpu)?;
            }
        }
        Ok(())
    }

    fn comm_of(&self, cpu: u32) -> (String, i32, i32) {
        match self.on_cpu[cpu as usize] {
            Some(i) => (self.threads[i].comm.clone(), self.threads[i].tid, self.threads[i].prio),
            None => (format!("swapper/{cpu}"), 0, 20),
        }
    }

    /// Switches `cpu` from its current thread to `next` (None: idle). `prev_state` 0 means the
    /// previous thread stays runnable (preempted), 1 that it blocks.
    fn switch(&mut self, w: &mut W, cpu: u32, next: Option<usize>, prev_state: i64) -> Result<u64, Error> {
        let (pc, pt, pp) = self.comm_of(cpu);
        if let Some(prev) = self.on_cpu[cpu as usize] {
            if prev_state == 0 {
                self.threads[prev].state = State::Ready;
            }
        }
        self.on_cpu[cpu as usize] = next;
        let (nc, nt, np) = self.comm_of(cpu);
        if let Some(n) = next {
            self.threads[n].state = match self.threads[n].resume.take() {
                Some(nr) => State::InSyscall(cpu, nr),
                None => State::Running(cpu),
            };
        }
        let t = self.tick(3_000);
        w[cpu as usize].event(
            event_id("sched_switch"),
            t,
            &[V::S(&pc), V::I(pt as i64), V::I(pp as i64), V::I(prev_state), V::S(&nc), V::I(nt as i64), V::I(np as i64)],
        )?;
        Ok(1)
    }

    fn step(&mut self, w: &mut W, cpu: u32) -> Result<u64, Error> {
        let r = self.rng.below(100);
        if r < 3 {
            // A device interrupt, with a softirq raised and run.
            let t = self.tick(2_000);
            let c = cpu as usize;
            w[c].event(event_id("irq_handler_entry"), t, &[V::I(18), V::S("eth0")])?;
            let t = self.tick(1_000);
            w[c].event(event_id("softirq_raise"), t, &[V::I(3)])?;
            let t = self.tick(3_000);
            w[c].event(event_id("irq_handler_exit"), t, &[V::I(18), V::I(1)])?;
            let t = self.tick(1_000);
            w[c].event(event_id("softirq_entry"), t, &[V::I(3)])?;
            let t = self.tick(8_000);
            w[c].event(event_id("softirq_exit"), t, &[V::I(3)])?;
            return Ok(5);
        }
        match self.on_cpu[cpu as usize] {
            None => {
                // Idle CPU: pick a ready thread, maybe migrating it here.
                let ready: Vec<usize> = (0..self.threads.len()).filter(|&i| self.threads[i].state == State::Ready).collect();
                if ready.is_empty() {
                    let t = self.tick(20_000);
                    let _ = t;
                    return Ok(0);
                }
                let pick = ready[self.rng.below(ready.len() as u64) as usize];
                self.switch(w, cpu, Some(pick), 0)
            }
            Some(i) => match self.threads[i].state {
                State::Running(_) => {
                    if r < 10 {
                        // Preempted by another ready thread, or yields to idle.
                        let ready: Vec<usize> = (0..self.threads.len()).filter(|&j| self.threads[j].state == State::Ready).collect();
                        let next = if ready.is_empty() { None } else { Some(ready[self.rng.below(ready.len() as u64) as usize]) };
                        return self.switch(w, cpu, next, 0);
                    }
                    let nr = self.rng.below(SYSCALLS.len() as u64) as usize;
                    self.threads[i].state = State::InSyscall(cpu, nr);
                    let t = self.tick(SYSCALLS[nr].2 / 4 + 1);
                    let fd = self.threads[i].fd;
                    let c = cpu as usize;
                    match SYSCALLS[nr].0 {
                        "read" => w[c].event(event_id("syscall_entry_read"), t, &[V::I(fd as i64), V::I(0x7f00_0000_1000), V::I(4096)])?,
                        "write" => w[c].event(event_id("syscall_entry_write"), t, &[V::I(fd as i64), V::I(0x7f00_0000_2000), V::I(512)])?,
                        "openat" => w[c].event(event_id("syscall_entry_openat"), t, &[V::I(-100), V::S("/etc/hosts"), V::I(0), V::I(0)])?,
                        "close" => w[c].event(event_id("syscall_entry_close"), t, &[V::I(fd as i64)])?,
                        "futex" => w[c].event(event_id("syscall_entry_futex"), t, &[V::I(0x7f00_0000_3000), V::I(0), V::I(1), V::I(0), V::I(0), V::I(0)])?,
                        _ => w[c].event(event_id("syscall_entry_getpid"), t, &[])?,
                    }
                    let mut n = 1;
                    if SYSCALLS[nr].1 && self.rng.below(2) == 0 {
                        // Block inside the call: switch out, to be woken later.
                        let until = self.now + SYSCALLS[nr].2 + self.rng.below(SYSCALLS[nr].2);
                        self.threads[i].state = State::Blocked(nr, until);
                        let ready: Vec<usize> = (0..self.threads.len()).filter(|&j| self.threads[j].state == State::Ready).collect();
                        let next = if ready.is_empty() { None } else { Some(ready[self.rng.below(ready.len() as u64) as usize]) };
                        n += self.switch(w, cpu, next, 1)?;
                    }
                    Ok(n)
                }
                State::InSyscall(_, nr) => {
                    let dur = SYSCALLS[nr].2;
                    self.exit_syscall(w, cpu, i, nr, dur)
                }
                _ => Ok(0),
            },
        }
    }

    fn exit_syscall(&mut self, w: &mut W, cpu: u32, i: usize, nr: usize, dur: u64) -> Result<u64, Error> {
        let t = self.tick(dur / 2 + 1);
        let c = cpu as usize;
        let fd = self.threads[i].fd;
        match SYSCALLS[nr].0 {
            "read" => w[c].event(event_id("syscall_exit_read"), t, &[V::I(4096), V::I(0x7f00_0000_1000)])?,
            "write" => w[c].event(event_id("syscall_exit_write"), t, &[V::I(512)])?,
            "openat" => {
                let th = &mut self.threads[i];
                let new = self.tables[th.process].open();
                if th.held {
                    th.opened.push(fd);
                }
                (th.fd, th.held) = (new, true);
                w[c].event(event_id("syscall_exit_openat"), t, &[V::I(new as i64)])?
            }
            "close" => {
                let th = &mut self.threads[i];
                if th.held {
                    self.tables[th.process].close(fd);
                    match th.opened.pop() {
                        Some(n) => th.fd = n,
                        None => th.held = false,
                    }
                }
                w[c].event(event_id("syscall_exit_close"), t, &[V::I(0)])?
            }
            "futex" => w[c].event(event_id("syscall_exit_futex"), t, &[V::I(0), V::I(0x7f00_0000_3000), V::I(0)])?,
            _ => w[c].event(event_id("syscall_exit_getpid"), t, &[V::I(self.threads[i].pid as i64)])?,
        }
        self.threads[i].state = State::Running(cpu);
        Ok(1)
    }

    /// Wakes one blocked thread whose time has come: sched_waking on the waker's CPU, then the
    /// thread runs on the target CPU (maybe another one: a migration) and returns from its call.
    fn wake_due(&mut self, w: &mut W, waker_cpu: u32) -> Result<u64, Error> {
        let now = self.now;
        let Some(i) = (0..self.threads.len()).find(|&i| matches!(self.threads[i].state, State::Blocked(_, until) if until <= now)) else {
            return Ok(0);
        };
        let State::Blocked(nr, _) = self.threads[i].state else { return Ok(0) };
        let target = self.rng.below(self.cpus as u64) as u32;
        let (comm, tid, prio) = (self.threads[i].comm.clone(), self.threads[i].tid, self.threads[i].prio);
        let t = self.tick(1_000);
        w[waker_cpu as usize].event(event_id("sched_waking"), t, &[V::S(&comm), V::I(tid as i64), V::I(prio as i64), V::I(target as i64)])?;
        let t = self.tick(1_000);
        w[target as usize].event(event_id("sched_wakeup"), t, &[V::S(&comm), V::I(tid as i64), V::I(prio as i64), V::I(target as i64)])?;
        // Runnable again; it returns from its call once it gets a CPU.
        self.threads[i].state = State::Ready;
        self.threads[i].resume = Some(nr);
        let mut n = 2;
        if self.on_cpu[target as usize].is_none() {
            n += self.switch(w, target, Some(i), 0)?;
            n += self.exit_syscall(w, target, i, nr, 2_000)?;
        }
        Ok(n)
    }
}
