//! User-space probes for Rust and C programs: events a program emits at places of its
//! choosing, cheap enough to leave in production code, written as a CTF trace that
//! `tracelens` and babeltrace2 read, on the clock of `tracelens record`'s kernel trace (the
//! FUT half of the 2005 multi-level toolkit paper, sections 2.2–3).
//!
//! ```no_run
//! use tracelens_probe::probe;
//! for request in 0..3u64 {
//!     probe!(request_begin, request);   // event `request_begin { value = 0 }`
//!     probe!(parse);                    // event `parse`, no fields
//!     probe!(route, "/index.html");     // event `route { value = "/index.html" }`
//! }
//! ```
//!
//! C programs include `crates/probe/include/tracelens/probe.h` and link with
//! `-ltracelens_probe` (the `cdylib` of this crate, `target/release/libtracelens_probe.so`):
//! `TL_PROBE(name)`, `TL_PROBE_U64(name, value)`, `TL_PROBE_STR(name, text)`.
//!
//! How it works:
//!
//! * Probes write only when `TRACELENS_PROBE_DIR` names a directory (`tracelens record
//!   --probes` sets it), read once when the program starts; otherwise a probe is a relaxed
//!   load and a branch ([`enabled`]), and its arguments are not evaluated.
//! * A forked child writes a trace of its own from its first probe.
//! * Each thread writes into a ring of its own ([`ring`](mod@ring): no lock, no system call per
//!   event), with the time-stamp counter where it is invariant, converted to CLOCK_MONOTONIC
//!   by the consumer ([`clock`](mod@clock)).
//! * A consumer thread writes the rings as one CTF trace per process,
//!   `$TRACELENS_PROBE_DIR/PROCNAME-PID/`, one stream per thread (`tid-TID`), through
//!   `tracelens_ctf::write`; the metadata declares one event class per probe name and kind
//!   ([`layout`](mod@layout)), rewritten as new probes fire. A full ring drops events, counted as
//!   CTF discarded events where they were lost; the program never waits.
//! * At exit (`atexit`) everything left is written; a thread's stream is closed when it
//!   exits. [`flush`] writes everything now (before an `_exit` or an `abort`, say).
//!
//! The environment variables are listed in [`env`](mod@env).
#![deny(missing_docs)]

pub mod clock;
mod consumer;
mod error;
mod ffi;
pub mod layout;
pub mod ring;
mod state;

use std::sync::atomic::{AtomicU32, Ordering};

pub use consumer::env;
pub use error::{Error, Result};
pub use ffi::tl_probe_site;
pub use layout::Kind;
pub use state::{enabled, flush, tl_probe_state};

/// A probe's place in the program: its event name, and the event class id it got at its
/// first event. Made by [`probe!`] as a `static`.
#[derive(Debug)]
pub struct Site {
    name: &'static str,
    /// Class id + 1 (0: not registered yet).
    id: AtomicU32,
}

impl Site {
    /// A site for events named `name`.
    pub const fn new(name: &'static str) -> Site {
        Site { name, id: AtomicU32::new(0) }
    }

    /// The event name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    #[inline(always)]
    fn class(&self, kind: Kind) -> u32 {
        let id = self.id.load(Ordering::Relaxed);
        if id != 0 {
            id - 1
        } else {
            self.register(kind)
        }
    }

    #[cold]
    #[inline(never)]
    fn register(&self, kind: Kind) -> u32 {
        let id = state::register(self.name, kind);
        self.id.store(id + 1, Ordering::Relaxed);
        id
    }

    /// Emits an event with no fields. Call after [`enabled`] said yes ([`probe!`] does).
    #[inline(always)]
    pub fn record(&self) {
        let class = self.class(Kind::Empty);
        // SAFETY: `with_ring` hands out this thread's own ring.
        state::with_ring(|r| unsafe { r.push_empty(class) });
    }

    /// Emits an event with a 64-bit `value`. Call after [`enabled`] said yes.
    #[inline(always)]
    pub fn record_u64(&self, value: u64) {
        let class = self.class(Kind::U64);
        // SAFETY: as in `record`.
        state::with_ring(|r| unsafe { r.push_u64(class, value) });
    }

    /// Emits an event with a string `value` (cut at [`ring::MAX_TEXT`] bytes, or at a NUL
    /// byte). Call after [`enabled`] said yes.
    #[inline]
    pub fn record_text(&self, text: &[u8]) {
        let class = self.class(Kind::Str);
        // SAFETY: as in `record`.
        state::with_ring(|r| unsafe { r.push_bytes(class, text) });
    }
}

/// A value a probe can carry: unsigned integers (as `value: uint64`) and text (as `value:
/// string`).
pub trait ProbeValue {
    /// Emits an event of `site` carrying this value.
    fn record(self, site: &Site);
}

macro_rules! unsigned {
    ($($t:ty),*) => {$(
        impl ProbeValue for $t {
            #[inline(always)]
            fn record(self, site: &Site) {
                site.record_u64(self as u64)
            }
        }
    )*};
}
unsigned!(u8, u16, u32, u64, usize);

impl ProbeValue for &str {
    #[inline]
    fn record(self, site: &Site) {
        site.record_text(self.as_bytes())
    }
}

impl ProbeValue for &String {
    #[inline]
    fn record(self, site: &Site) {
        site.record_text(self.as_bytes())
    }
}

impl ProbeValue for String {
    #[inline]
    fn record(self, site: &Site) {
        site.record_text(self.as_bytes())
    }
}

/// Emits a probe event named after the identifier: `probe!(name)` with no fields,
/// `probe!(name, value)` with one field `value` (an unsigned integer or text, see
/// [`ProbeValue`]). The value is evaluated only when probes are on.
#[macro_export]
macro_rules! probe {
    ($name:ident) => {{
        static SITE: $crate::Site = $crate::Site::new(stringify!($name));
        if $crate::enabled() {
            SITE.record();
        }
    }};
    ($name:ident, $value:expr) => {{
        static SITE: $crate::Site = $crate::Site::new(stringify!($name));
        if $crate::enabled() {
            $crate::ProbeValue::record($value, &SITE);
        }
    }};
}
