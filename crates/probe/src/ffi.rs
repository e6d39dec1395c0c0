//! The C interface (`include/tracelens/probe.h`): the header's macros test
//! [`tl_probe_state`](crate::tl_probe_state) inline and call these functions only when probes
//! may be on.

use std::ffi::{c_char, c_int, CStr};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::layout::Kind;
use crate::state;

/// A C probe site: `static struct tl_probe_site` made by each `TL_PROBE*` macro.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct tl_probe_site {
    /// The event name (a NUL-terminated C string that lives as long as the program).
    pub name: *const c_char,
    /// Class id + 1 (0: not registered yet); written by the library.
    pub id: AtomicU32,
    /// Zero.
    pub reserved: u32,
}

/// The class of `site` for `kind`, registered on first use.
///
/// # Safety
/// `site` points to a live `tl_probe_site` whose `name` is a NUL-terminated string.
#[inline(always)]
unsafe fn class(site: *const tl_probe_site, kind: Kind) -> u32 {
    let id = (*site).id.load(Ordering::Relaxed);
    if id != 0 {
        return id - 1;
    }
    register(site, kind)
}

#[cold]
#[inline(never)]
unsafe fn register(site: *const tl_probe_site, kind: Kind) -> u32 {
    let name = if (*site).name.is_null() { "unnamed".into() } else { CStr::from_ptr((*site).name).to_string_lossy() };
    let id = state::register(&name, kind);
    (*site).id.store(id + 1, Ordering::Relaxed);
    id
}

/// `TL_PROBE(name)`: an event with no fields.
///
/// # Safety
/// `site` points to a live `tl_probe_site` whose `name` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn tl_probe_emit(site: *const tl_probe_site) {
    if state::enabled() {
        let class = class(site, Kind::Empty);
        state::with_ring(|r| r.push_empty(class));
    }
}

/// `TL_PROBE_U64(name, value)`: an event with an unsigned 64-bit `value`.
///
/// # Safety
/// As [`tl_probe_emit`].
#[no_mangle]
pub unsafe extern "C" fn tl_probe_emit_u64(site: *const tl_probe_site, value: u64) {
    if state::enabled() {
        let class = class(site, Kind::U64);
        state::with_ring(|r| r.push_u64(class, value));
    }
}

/// `TL_PROBE_STR(name, text)`: an event with a string `value` (NULL: empty).
///
/// # Safety
/// As [`tl_probe_emit`]; `text` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn tl_probe_emit_str(site: *const tl_probe_site, text: *const c_char) {
    if state::enabled() {
        let bytes = if text.is_null() { &[][..] } else { CStr::from_ptr(text).to_bytes() };
        let class = class(site, Kind::Str);
        state::with_ring(|r| r.push_bytes(class, bytes));
    }
}

/// `TL_PROBE_STRN(name, text, len)`: an event with the string `value` of `len` bytes at
/// `text` (cut at a NUL byte).
///
/// # Safety
/// As [`tl_probe_emit`]; `text` points to `len` readable bytes (or `len` is 0).
#[no_mangle]
pub unsafe extern "C" fn tl_probe_emit_strn(site: *const tl_probe_site, text: *const c_char, len: usize) {
    if state::enabled() {
        let bytes = if text.is_null() || len == 0 { &[][..] } else { std::slice::from_raw_parts(text.cast::<u8>(), len) };
        let class = class(site, Kind::Str);
        state::with_ring(|r| r.push_bytes(class, bytes));
    }
}

/// Whether probes write (deciding from the environment on the first call): 1 or 0.
#[no_mangle]
pub extern "C" fn tl_probe_enabled() -> c_int {
    state::enabled().into()
}

/// Writes every event probed so far to the trace files and waits for it (see
/// [`crate::flush`]).
#[no_mangle]
pub extern "C" fn tl_probe_flush() {
    state::flush()
}
