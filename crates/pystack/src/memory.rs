//! Reading another process's memory: `process_vm_readv(2)`, which copies from the target's
//! address space without stopping it and fails cleanly (EFAULT) on an unmapped address. The
//! one module of this crate with `unsafe` code.
//!
//! # Safety
//!
//! `process_vm_readv` writes only into the local buffer it is given (whose pointer and length
//! come from a live `&mut [u8]`) and never touches the target's memory; a racing target
//! changes the bytes read, never this process's memory.

use crate::error::{Error, Result};

/// Memory a stack walk reads (a live process, or bytes laid out by a test).
pub trait Memory {
    /// Fills `buf` with the bytes at `addr`, or fails without a partial result.
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<()>;

    /// A little-endian `u64` at `addr`.
    fn u64_at(&self, addr: u64) -> Result<u64> {
        let mut b = [0u8; 8];
        self.read(addr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// Fills `buf` from `addr` as far as the memory there is readable, page by page: the
    /// number of bytes read (the first page that cannot be read ends it), or the error of
    /// the first page when none can be. For a structure whose size is not known, which a
    /// fixed-size read may run past the end of its mapping with.
    fn read_prefix(&self, addr: u64, buf: &mut [u8]) -> Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            let at = addr.wrapping_add(done as u64);
            let n = ((PAGE - at % PAGE) as usize).min(buf.len() - done);
            match self.read(at, &mut buf[done..done + n]) {
                Ok(()) => done += n,
                Err(e) if done == 0 => return Err(e),
                Err(_) => break,
            }
        }
        Ok(done)
    }
}

/// The page size that [`Memory::read_prefix`] steps by (the smallest one of x86_64 and
/// aarch64: a larger page is read in several steps).
const PAGE: u64 = 4096;

/// The memory of process `pid`, read with `process_vm_readv`.
#[derive(Clone, Copy, Debug)]
pub struct ProcessMemory {
    /// The process.
    pub pid: i32,
}

impl Memory for ProcessMemory {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
        let remote = libc::iovec { iov_base: addr as usize as *mut libc::c_void, iov_len: buf.len() };
        // SAFETY: `local` describes `buf`, a live exclusive buffer of that length; the remote
        // range is only read by the kernel (see the module documentation).
        let n = unsafe { libc::process_vm_readv(self.pid, &local, 1, &remote, 1, 0) };
        if n < 0 {
            return Err(Error::Read { pid: self.pid, addr, len: buf.len(), source: std::io::Error::last_os_error() });
        }
        if n as usize != buf.len() {
            return Err(Error::Read { pid: self.pid, addr, len: buf.len(), source: std::io::Error::from_raw_os_error(libc::EFAULT) });
        }
        Ok(())
    }
}

/// Bytes at a base address (tests).
#[derive(Clone, Debug, Default)]
pub struct Bytes {
    /// Address of `data[0]`.
    pub base: u64,
    /// The memory.
    pub data: Vec<u8>,
}

impl Memory for Bytes {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
        let fault = || Error::Read { pid: 0, addr, len: buf.len(), source: std::io::Error::from_raw_os_error(libc::EFAULT) };
        let off = addr.checked_sub(self.base).ok_or_else(fault)? as usize;
        let src = self.data.get(off..off.checked_add(buf.len()).ok_or_else(fault)?).ok_or_else(fault)?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_memory() {
        let value: u64 = 0x1122_3344_5566_7788;
        let m = ProcessMemory { pid: std::process::id() as i32 };
        assert_eq!(m.u64_at(&value as *const u64 as u64).unwrap(), value);
        assert!(m.u64_at(8).is_err());
        let b = Bytes { base: 0x1000, data: vec![1, 2, 3, 4, 5, 6, 7, 8, 9] };
        assert_eq!(b.u64_at(0x1001).unwrap(), 0x0908070605040302);
        assert!(b.u64_at(0x1002).is_err());
        assert!(b.u64_at(0xfff).is_err());
    }

    #[test]
    fn prefix_up_to_the_first_unreadable_page() {
        // Two readable pages from 0x1000; the struct starts 0x1c0 before their end.
        let b = Bytes { base: 0x1000, data: (0..0x2000u32).map(|i| i as u8).collect() };
        let mut buf = vec![0u8; 0x1000];
        assert!(b.read(0x2e40, &mut buf).is_err());
        assert_eq!(b.read_prefix(0x2e40, &mut buf).unwrap(), 0x1c0);
        assert_eq!(&buf[..4], &[0x40, 0x41, 0x42, 0x43]);
        assert_eq!(b.read_prefix(0x1000, &mut buf).unwrap(), 0x1000);
        assert!(b.read_prefix(0x3000, &mut buf).is_err());
        assert_eq!(b.read_prefix(0x1000, &mut []).unwrap(), 0);
        let m = ProcessMemory { pid: std::process::id() as i32 };
        let local = [7u64, 8];
        let mut two = [0u8; 16];
        assert_eq!(m.read_prefix(local.as_ptr() as u64, &mut two).unwrap(), 16);
        assert_eq!(u64::from_le_bytes(two[8..].try_into().unwrap()), 8);
    }
}
