//! Stopping on SIGINT, SIGTERM and SIGHUP: the handler only sets a flag, which the
//! recording loop polls; the loop then stops cleanly and restores the kernel's state.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, OnceLock};

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
static LAST: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only async-signal-safe work: atomics.
    LAST.store(sig, Ordering::SeqCst);
    if let Some(f) = FLAG.get() {
        f.store(true, Ordering::SeqCst);
    }
}

/// Installs handlers for SIGINT, SIGTERM and SIGHUP that set the returned flag (the same
/// flag on every call). Pass it as [`RecordOptions::stop`](crate::RecordOptions::stop).
pub fn stop_on_signals() -> std::io::Result<Arc<AtomicBool>> {
    let flag = FLAG.get_or_init(|| Arc::new(AtomicBool::new(false))).clone();
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: a zeroed sigaction is valid; the handler only touches atomics; the
        // pointer casts are how libc expects a plain handler.
        let rc = unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(flag)
}

/// The last signal the handlers caught (0 if none).
pub fn last_signal() -> i32 {
    LAST.load(Ordering::SeqCst)
}

/// Puts back the default action of SIGINT, SIGTERM and SIGHUP if [`stop_on_signals`]
/// installed handlers (so that a second Ctrl-C ends a long conversion once the kernel's
/// state is restored).
pub(crate) fn release() {
    if FLAG.get().is_none() {
        return;
    }
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: restoring the default disposition has no preconditions.
        unsafe { libc::signal(sig, libc::SIG_DFL) };
    }
}
