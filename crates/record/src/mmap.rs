//! Memory mappings: the one module of this crate that maps memory and reads it through raw
//! pointers. (Files, such as the stack sampler's spools, are mapped read-only through
//! [`tracelens_ctf::MappedFile`], the CTF reader's documented mapping.)
//!
//! [`RingMap`] is a perf event's ring buffer (`perf_event_open(2)`, "mmap layout"): one
//! control page, then 2^n data pages, shared with the kernel, which writes records and
//! `data_head`; the reader writes `data_tail` to free space.
//!
//! # Safety
//!
//! The mapping lives as long as the [`RingMap`], which unmaps it when dropped; every access is
//! checked against the mapped length. The kernel writes the data area and `data_head`
//! concurrently: the control words are read as atomics (or volatile reads), and the data area
//! only below the `data_head` read with acquire ordering, which the kernel does not touch until
//! `data_tail` passes it.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::AtomicU64;

/// A perf event's ring buffer, mapped shared (read-write) from its file descriptor.
pub(crate) struct RingMap {
    base: *mut u8,
    len: usize,
}

// SAFETY: the mapping is owned by the RingMap and accessed only through it (the kernel's
// concurrent writes are to memory it shares with every thread alike).
unsafe impl Send for RingMap {}

impl RingMap {
    /// Maps `len` bytes (a control page and a power of two of data pages) of `fd`'s buffer.
    pub(crate) fn map(fd: &OwnedFd, len: usize) -> io::Result<RingMap> {
        // SAFETY: a fresh shared mapping of the perf fd; the kernel checks the size.
        let base = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd.as_raw_fd(), 0) };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(RingMap { base: base as *mut u8, len })
    }

    /// The u64 at byte `offset` of the control page, read once (volatile).
    pub(crate) fn read_u64(&self, offset: usize) -> u64 {
        assert!(offset.is_multiple_of(8) && offset + 8 <= self.len, "control word {offset} outside the map");
        // SAFETY: in bounds and aligned (checked above; the map is page-aligned).
        unsafe { std::ptr::read_volatile(self.base.add(offset) as *const u64) }
    }

    /// The u64 at byte `offset` of the control page as an atomic (`data_head`, `data_tail`).
    pub(crate) fn atomic_u64(&self, offset: usize) -> &AtomicU64 {
        assert!(offset.is_multiple_of(8) && offset + 8 <= self.len, "control word {offset} outside the map");
        // SAFETY: in bounds and aligned (checked above); the word lives as long as the map.
        unsafe { &*(self.base.add(offset) as *const AtomicU64) }
    }

    /// The `size` bytes at `offset` (the data area).
    pub(crate) fn bytes(&self, offset: usize, size: usize) -> &[u8] {
        assert!(offset.checked_add(size).is_some_and(|end| end <= self.len), "data area {offset}+{size} outside the map");
        // SAFETY: in bounds (checked above); see the module's safety section for the
        // kernel's concurrent writes.
        unsafe { std::slice::from_raw_parts(self.base.add(offset), size) }
    }
}

impl Drop for RingMap {
    fn drop(&mut self) {
        // SAFETY: base/len are the mapping made in `map`, unmapped once.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}
