//! The `perf_event_open` interface: the attribute structure, the system call, and the
//! memory-mapped ring buffer of records.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::Ordering;

use crate::mmap::RingMap;

pub(crate) const PERF_TYPE_SOFTWARE: u32 = 1;
pub(crate) const PERF_TYPE_TRACEPOINT: u32 = 2;
pub(crate) const PERF_COUNT_SW_CPU_CLOCK: u64 = 0;

pub(crate) const SAMPLE_TID: u64 = 1 << 1;
pub(crate) const SAMPLE_TIME: u64 = 1 << 2;
pub(crate) const SAMPLE_CPU: u64 = 1 << 7;
pub(crate) const SAMPLE_RAW: u64 = 1 << 10;
pub(crate) const SAMPLE_REGS_USER: u64 = 1 << 12;
pub(crate) const SAMPLE_STACK_USER: u64 = 1 << 13;
pub(crate) const SAMPLE_IDENTIFIER: u64 = 1 << 16;

// Bits of the attribute's flag word.
pub(crate) const F_DISABLED: u64 = 1 << 0;
pub(crate) const F_INHERIT: u64 = 1 << 1;
pub(crate) const F_EXCLUDE_HV: u64 = 1 << 6;
pub(crate) const F_MMAP: u64 = 1 << 8;
pub(crate) const F_COMM: u64 = 1 << 9;
pub(crate) const F_ENABLE_ON_EXEC: u64 = 1 << 12;
pub(crate) const F_TASK: u64 = 1 << 13;
pub(crate) const F_WATERMARK: u64 = 1 << 14;
pub(crate) const F_SAMPLE_ID_ALL: u64 = 1 << 18;
pub(crate) const F_MMAP2: u64 = 1 << 23;
pub(crate) const F_COMM_EXEC: u64 = 1 << 24;
pub(crate) const F_USE_CLOCKID: u64 = 1 << 25;
pub(crate) const F_BUILD_ID: u64 = 1 << 34;

pub(crate) const RECORD_LOST: u32 = 2;
pub(crate) const RECORD_COMM: u32 = 3;
pub(crate) const RECORD_EXIT: u32 = 4;
pub(crate) const RECORD_FORK: u32 = 7;
pub(crate) const RECORD_SAMPLE: u32 = 9;
pub(crate) const RECORD_MMAP2: u32 = 10;
pub(crate) const RECORD_LOST_SAMPLES: u32 = 13;

pub(crate) const MISC_COMM_EXEC: u16 = 1 << 13;
pub(crate) const MISC_MMAP_BUILD_ID: u16 = 1 << 14;

pub(crate) const REGS_ABI_NONE: u64 = 0;

const IOC_ENABLE: libc::c_ulong = 0x2400;
const IOC_DISABLE: libc::c_ulong = 0x2401;
const IOC_SET_OUTPUT: libc::c_ulong = 0x2405;
const IOC_ID: libc::c_ulong = 0x8008_2407;

/// `struct perf_event_attr` up to `sig_data` (PERF_ATTR_SIZE_VER7, 128 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Attr {
    pub type_: u32,
    pub size: u32,
    pub config: u64,
    pub sample_period: u64,
    pub sample_type: u64,
    pub read_format: u64,
    pub flags: u64,
    pub wakeup_watermark: u32,
    pub bp_type: u32,
    pub config1: u64,
    pub config2: u64,
    pub branch_sample_type: u64,
    pub sample_regs_user: u64,
    pub sample_stack_user: u32,
    pub clockid: i32,
    pub sample_regs_intr: u64,
    pub aux_watermark: u32,
    pub sample_max_stack: u16,
    pub reserved_2: u16,
    pub aux_sample_size: u32,
    pub reserved_3: u32,
    pub sig_data: u64,
}

const _: () = assert!(std::mem::size_of::<Attr>() == 128);

impl Attr {
    pub(crate) fn new(type_: u32, config: u64) -> Attr {
        Attr { type_, size: std::mem::size_of::<Attr>() as u32, config, ..Attr::default() }
    }
}

/// `perf_event_open(attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC)`.
pub(crate) fn open(attr: &Attr, pid: i32, cpu: i32) -> io::Result<OwnedFd> {
    const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
    // SAFETY: attr points to a valid, fully initialised perf_event_attr of the size it says.
    let fd = unsafe { libc::syscall(libc::SYS_perf_event_open, attr as *const Attr, pid, cpu, -1 as libc::c_int, PERF_FLAG_FD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the system call returned a new file descriptor that we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

fn ioctl(fd: &OwnedFd, req: libc::c_ulong, arg: libc::c_ulong) -> io::Result<()> {
    // SAFETY: the perf ioctls used here take an integer argument (or, for ID, a pointer
    // given as one by the caller).
    if unsafe { libc::ioctl(fd.as_raw_fd(), req as _, arg) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub(crate) fn enable(fd: &OwnedFd) -> io::Result<()> {
    ioctl(fd, IOC_ENABLE, 0)
}

pub(crate) fn disable(fd: &OwnedFd) -> io::Result<()> {
    ioctl(fd, IOC_DISABLE, 0)
}

/// Sends the records of `fd` to the ring buffer of `to` (same CPU).
pub(crate) fn set_output(fd: &OwnedFd, to: &OwnedFd) -> io::Result<()> {
    ioctl(fd, IOC_SET_OUTPUT, to.as_raw_fd() as libc::c_ulong)
}

/// The event's id, as written in its records' `IDENTIFIER`.
pub(crate) fn id(fd: &OwnedFd) -> io::Result<u64> {
    let mut id = 0u64;
    ioctl(fd, IOC_ID, &mut id as *mut u64 as libc::c_ulong)?;
    Ok(id)
}

/// One event's memory-mapped ring buffer: a control page and 2^n data pages.
pub(crate) struct Ring {
    map: RingMap,
    data_offset: usize,
    data_size: usize,
    tail: u64,
    /// A record that wraps around the end of the buffer, copied whole.
    scratch: Vec<u8>,
}

/// Offsets in the control page (`struct perf_event_mmap_page`).
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;
const DATA_OFFSET: usize = 1040;
const DATA_SIZE: usize = 1048;

impl Ring {
    /// Maps `data_pages` (a power of two) data pages of `fd`'s buffer.
    pub(crate) fn map(fd: &OwnedFd, data_pages: usize) -> io::Result<Ring> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        let map = RingMap::map(fd, (data_pages + 1) * page)?;
        // data_offset/data_size are zero on kernels before 4.1, where the data starts at the
        // next page.
        let (off, size) = (map.read_u64(DATA_OFFSET), map.read_u64(DATA_SIZE));
        let (data_offset, data_size) = if off == 0 || size == 0 { (page, data_pages * page) } else { (off as usize, size as usize) };
        let tail = map.atomic_u64(DATA_TAIL).load(Ordering::Acquire);
        Ok(Ring { map, data_offset, data_size, tail, scratch: Vec::new() })
    }

    /// Calls `f` with each complete record now in the buffer (header included), then frees
    /// their space. Returns the number of records.
    pub(crate) fn drain(&mut self, mut f: impl FnMut(&[u8])) -> usize {
        let head = self.map.atomic_u64(DATA_HEAD).load(Ordering::Acquire);
        let data = self.map.bytes(self.data_offset, self.data_size);
        let mask = self.data_size as u64 - 1;
        let mut n = 0;
        while self.tail + 8 <= head {
            let at = (self.tail & mask) as usize;
            let mut hdr = [0u8; 8];
            copy_wrapped(data, at, &mut hdr);
            let size = u16::from_ne_bytes([hdr[6], hdr[7]]) as u64;
            if size < 8 || self.tail + size > head {
                if size < 8 {
                    // A corrupt header: drop everything up to head.
                    self.tail = head;
                }
                break;
            }
            let size = size as usize;
            if at + size <= data.len() {
                f(&data[at..at + size]);
            } else {
                self.scratch.resize(size, 0);
                copy_wrapped(data, at, &mut self.scratch);
                f(&self.scratch);
            }
            self.tail += size as u64;
            n += 1;
        }
        self.map.atomic_u64(DATA_TAIL).store(self.tail, Ordering::Release);
        n
    }
}

fn copy_wrapped(data: &[u8], at: usize, out: &mut [u8]) {
    let first = (data.len() - at).min(out.len());
    out[..first].copy_from_slice(&data[at..at + first]);
    let rest = out.len() - first;
    out[first..].copy_from_slice(&data[..rest]);
}

/// The `perf_event_paranoid` setting, for messages.
pub(crate) fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").ok()?.trim().parse().ok()
}

/// A message for a failed `perf_event_open` of `what`.
pub(crate) fn open_error(what: &str, e: &io::Error) -> String {
    let code = e.raw_os_error().unwrap_or(0);
    match code {
        libc::EACCES | libc::EPERM => {
            let p = paranoid().map(|p| format!("kernel.perf_event_paranoid is {p}; ")).unwrap_or_default();
            format!(
                "perf_event_open ({what}) is not permitted: {e} ({p}user stacks need root or CAP_PERFMON (CAP_SYS_ADMIN before Linux 5.8), \
                 or perf_event_paranoid <= 1 for a process of your own)"
            )
        }
        libc::ENOSYS => format!("perf_event_open ({what}) is not available: this kernel has no perf events (CONFIG_PERF_EVENTS)"),
        libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP => {
            format!("perf_event_open ({what}) is not available: {e} (the kernel or the virtual machine does not offer this event)")
        }
        libc::EMFILE | libc::ENFILE => format!("perf_event_open ({what}): {e} (one event per thread and CPU is needed: raise `ulimit -n`)"),
        libc::ESRCH => format!("perf_event_open ({what}): the process or thread is gone"),
        _ => format!("perf_event_open ({what}) failed: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_to_do() {
        let m = open_error("cpu-clock sampling", &io::Error::from_raw_os_error(libc::EACCES));
        assert!(m.contains("not permitted") && m.contains("CAP_PERFMON"), "{m}");
        let m = open_error("cpu-clock sampling", &io::Error::from_raw_os_error(libc::ENOSYS));
        assert!(m.contains("not available") && m.contains("CONFIG_PERF_EVENTS"), "{m}");
        let m = open_error("cpu-clock sampling", &io::Error::from_raw_os_error(libc::ENOENT));
        assert!(m.contains("not available"), "{m}");
        let m = open_error("x", &io::Error::from_raw_os_error(libc::EMFILE));
        assert!(m.contains("ulimit -n"), "{m}");
    }

    #[test]
    fn attr_layout() {
        let a = Attr::new(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK);
        assert_eq!(a.size, 128);
        // sample_regs_user is at byte 80 and clockid at 92 in the kernel's structure.
        let base = &a as *const Attr as usize;
        assert_eq!(&a.sample_regs_user as *const u64 as usize - base, 80);
        assert_eq!(&a.clockid as *const i32 as usize - base, 92);
        assert_eq!(&a.wakeup_watermark as *const u32 as usize - base, 48);
    }
}
