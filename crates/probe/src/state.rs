//! Process-wide state: whether probes write (decided once from `TRACELENS_PROBE_DIR`), the
//! registry of event classes and of the threads' rings, each thread's ring pointer, and what
//! happens at thread exit, process exit and fork.
//!
//! * The probe's test of [`tl_probe_state`] is one relaxed load and a branch. The decision is
//!   taken when the library is loaded (an ELF constructor), or by the first probe where that
//!   did not run.
//! * A thread's first probe creates its ring and registers it (the one lock a thread takes);
//!   a thread-local guard marks the ring exited when the thread ends, and the consumer then
//!   drains it and closes its stream.
//! * At exit (an `atexit` handler) probes are turned off, and the consumer drains every ring,
//!   writes the last packets and the metadata, and is joined, so a short program loses
//!   nothing. A process that ends without running `atexit` handlers (`_exit`, a fatal signal)
//!   keeps what the consumer had written (it flushes its files every second).
//! * A child of `fork` starts afresh at its first probe, with a trace of its own (the
//!   registry lock is taken around `fork`, so the child's copy is consistent).

use std::cell::{Cell, UnsafeCell};
use std::ptr;
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{JoinHandle, Thread};
use std::time::Duration;

use crate::layout::Kind;
use crate::ring::Ring;

/// Not decided yet: the next probe reads the environment.
pub(crate) const UNKNOWN: i32 = 0;
/// Probes do nothing.
pub(crate) const OFF: i32 = 1;
/// Probes write.
pub(crate) const ON: i32 = 2;
/// A thread is deciding.
const DECIDING: i32 = 3;

/// Whether probes write: 0 not decided yet, 1 off, 2 on (C's `TL_PROBE*` macros test it
/// inline).
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static tl_probe_state: AtomicI32 = AtomicI32::new(UNKNOWN);

/// Whether probes write now (deciding from the environment on the first call).
#[inline(always)]
pub fn enabled() -> bool {
    match tl_probe_state.load(Ordering::Relaxed) {
        ON => true,
        OFF => false,
        _ => decide(),
    }
}

/// Decides at load time (an ELF constructor), so that the first probe does not pay for
/// creating the trace and starting the consumer; the first probe decides where this did not
/// run.
#[used]
#[link_section = ".init_array"]
static DECIDE_AT_LOAD: extern "C" fn() = decide_at_load;

extern "C" fn decide_at_load() {
    enabled();
}

#[cold]
#[inline(never)]
fn decide() -> bool {
    loop {
        match tl_probe_state.compare_exchange(UNKNOWN, DECIDING, Ordering::Acquire, Ordering::Acquire) {
            Ok(_) => {
                let on = match crate::consumer::start() {
                    Ok(on) => on,
                    Err(e) => {
                        eprintln!("tracelens-probe: {e}; probes are off");
                        false
                    }
                };
                tl_probe_state.store(if on { ON } else { OFF }, Ordering::Release);
                return on;
            }
            Err(ON) => return true,
            Err(OFF) => return false,
            Err(_) => std::thread::sleep(Duration::from_micros(50)),
        }
    }
}

/// A lock that stays usable across `fork` (a pthread mutex, taken in the `pthread_atfork`
/// prepare handler and released on both sides).
pub(crate) struct ForkLock<T> {
    mutex: UnsafeCell<libc::pthread_mutex_t>,
    data: UnsafeCell<T>,
}

// SAFETY: the data is only reached through `lock`, which holds the mutex.
unsafe impl<T: Send> Sync for ForkLock<T> {}

impl<T> ForkLock<T> {
    const fn new(data: T) -> ForkLock<T> {
        ForkLock { mutex: UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER), data: UnsafeCell::new(data) }
    }

    /// Runs `f` with the lock held.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        // SAFETY: a statically initialized mutex; the data is only touched while it is held.
        unsafe {
            libc::pthread_mutex_lock(self.mutex.get());
            let r = f(&mut *self.data.get());
            libc::pthread_mutex_unlock(self.mutex.get());
            r
        }
    }
}

/// What the probes and the consumer share.
pub(crate) struct Registry {
    /// Event classes: (name, kind), indexed by class id.
    pub(crate) classes: Vec<(String, Kind)>,
    /// Rings created since the consumer last looked.
    pub(crate) new_rings: Vec<Arc<Ring>>,
    /// Per-thread ring size in bytes.
    pub(crate) ring_bytes: usize,
    /// Rings time events with the counter.
    pub(crate) tsc: bool,
    /// The consumer thread, while it runs.
    pub(crate) consumer: Option<JoinHandle<()>>,
    /// Set at exit: the consumer drains everything and ends.
    pub(crate) stop: bool,
}

pub(crate) static REGISTRY: ForkLock<Registry> =
    ForkLock::new(Registry { classes: Vec::new(), new_rings: Vec::new(), ring_bytes: 1 << 20, tsc: false, consumer: None, stop: false });

/// The consumer thread's handle, to wake it (null when none runs).
static CONSUMER: AtomicPtr<Thread> = AtomicPtr::new(ptr::null_mut());

/// Flush requests and completions (see [`flush`]).
pub(crate) static FLUSH_ASKED: AtomicU64 = AtomicU64::new(0);
pub(crate) static FLUSH_DONE: AtomicU64 = AtomicU64::new(0);

/// Publishes the consumer thread (after it was spawned).
pub(crate) fn set_consumer(t: Thread, handle: JoinHandle<()>) {
    // A handle published before a fork is left as it is (never freed: see `wake_consumer`).
    CONSUMER.store(Box::into_raw(Box::new(t)), Ordering::Release);
    REGISTRY.with(|r| r.consumer = Some(handle));
}

/// Wakes the consumer thread (cheap when it is awake: no system call).
pub(crate) fn wake_consumer() {
    let t = CONSUMER.load(Ordering::Acquire);
    if !t.is_null() {
        // SAFETY: published handles are never freed (a fork's orphan is leaked).
        unsafe { (*t).unpark() };
    }
}

/// Asks the consumer to write everything probed so far to the trace files, and waits until
/// it has (at most about a second). Does nothing when probes are off.
pub fn flush() {
    if tl_probe_state.load(Ordering::Acquire) != ON {
        return;
    }
    let ticket = FLUSH_ASKED.fetch_add(1, Ordering::AcqRel) + 1;
    wake_consumer();
    for _ in 0..1000 {
        if FLUSH_DONE.load(Ordering::Acquire) >= ticket || tl_probe_state.load(Ordering::Acquire) != ON {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The `atexit` handler: probes off, the consumer drains everything and is joined.
pub(crate) extern "C" fn at_exit() {
    if tl_probe_state.swap(OFF, Ordering::AcqRel) != ON {
        return;
    }
    let handle = REGISTRY.with(|r| {
        r.stop = true;
        r.consumer.take()
    });
    wake_consumer();
    if let Some(h) = handle {
        let _ = h.join();
    }
}

extern "C" fn before_fork() {
    // SAFETY: taken here and released in both handlers below, by the forking thread.
    unsafe { libc::pthread_mutex_lock(REGISTRY.mutex.get()) };
}

extern "C" fn after_fork_parent() {
    // SAFETY: taken in `before_fork` by this thread.
    unsafe { libc::pthread_mutex_unlock(REGISTRY.mutex.get()) };
}

extern "C" fn after_fork_child() {
    // SAFETY: the registry is consistent (its lock was held across the fork) and this is the
    // child's only thread. The parent's rings, consumer and writers are left as they are
    // (their memory is a copy, never used again); the classes are kept, so that probe sites
    // keep their ids.
    unsafe {
        let r = &mut *REGISTRY.data.get();
        std::mem::forget(std::mem::take(&mut r.new_rings));
        std::mem::forget(r.consumer.take());
        r.stop = false;
        libc::pthread_mutex_unlock(REGISTRY.mutex.get());
    }
    CONSUMER.store(ptr::null_mut(), Ordering::Release);
    RING.with(|c| c.set(ptr::null()));
    let _ = OWNER.try_with(|o| std::mem::forget(o.ring.take()));
    if tl_probe_state.load(Ordering::Relaxed) == ON {
        tl_probe_state.store(UNKNOWN, Ordering::Release);
    }
}

/// Registers the exit and fork handlers (once per process image).
pub(crate) fn install_handlers() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: the handlers are `extern "C"` functions that live as long as the process.
        unsafe {
            libc::atexit(at_exit);
            libc::pthread_atfork(Some(before_fork), Some(after_fork_parent), Some(after_fork_child));
        }
    });
}

thread_local! {
    /// This thread's ring (null before its first probe).
    static RING: Cell<*const Ring> = const { Cell::new(ptr::null()) };
    /// Owns this thread's ring, and marks it exited when the thread ends.
    static OWNER: Owner = const { Owner { ring: Cell::new(None) } };
}

struct Owner {
    ring: Cell<Option<Arc<Ring>>>,
}

impl Drop for Owner {
    fn drop(&mut self) {
        if let Some(r) = self.ring.take() {
            RING.with(|c| c.set(ptr::null()));
            r.exited.store(true, std::sync::atomic::Ordering::Release);
            wake_consumer();
        }
    }
}

/// Runs `f` on this thread's ring, creating it at the thread's first probe.
#[inline(always)]
pub(crate) fn with_ring(f: impl FnOnce(&Ring)) {
    let mut r = RING.with(|c| c.get());
    if r.is_null() {
        r = attach();
        if r.is_null() {
            return;
        }
    }
    // SAFETY: a published ring lives as long as its owner (or the registry, for a thread
    // past its thread-local destructors) holds it, and only this thread produces into it.
    f(unsafe { &*r })
}

#[cold]
#[inline(never)]
fn attach() -> *const Ring {
    if tl_probe_state.load(Ordering::Acquire) != ON {
        return ptr::null();
    }
    let tid = gettid();
    let ring = REGISTRY.with(|reg| {
        if reg.stop {
            return None;
        }
        let ring = Arc::new(Ring::new(reg.ring_bytes, tid, reg.tsc));
        reg.new_rings.push(Arc::clone(&ring));
        Some(ring)
    });
    let Some(ring) = ring else { return ptr::null() };
    let p = Arc::as_ptr(&ring);
    // Past its thread-local destructors a thread keeps its ring in the registry only (it is
    // then closed at exit).
    let _ = OWNER.try_with(|o| o.ring.set(Some(Arc::clone(&ring))));
    RING.with(|c| c.set(p));
    wake_consumer();
    p
}

/// The class id of (`name`, `kind`), registering it on first use.
pub(crate) fn register(name: &str, kind: Kind) -> u32 {
    REGISTRY.with(|r| match r.classes.iter().position(|(n, k)| n == name && *k == kind) {
        Some(i) => i as u32,
        None => {
            r.classes.push((name.to_string(), kind));
            (r.classes.len() - 1) as u32
        }
    })
}

pub(crate) fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}
