//! The converter's view of threads: names and thread-group ids by thread id (from the state
//! dump, the events and tracefs), and the pending system call of each.

use std::cell::Cell;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// A thread's thread-group id (when known) and name.
pub(super) struct Task {
    pub(super) tgid: Option<i32>,
    pub(super) comm: [u8; 16],
}

/// A hasher for the converter's per-event lookups by thread id or event type (keys spread
/// enough already): one multiplication instead of SipHash.
#[derive(Default)]
pub(super) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_i32(&mut self, i: i32) {
        self.0 = (i as u32 as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// A map by thread id with [`IdHasher`].
pub(super) type TidMap<V> = HashMap<i32, V, BuildHasherDefault<IdHasher>>;

pub(super) fn comm16(b: &[u8]) -> [u8; 16] {
    let mut c = [0u8; 16];
    let n = b.iter().position(|&x| x == 0).unwrap_or(b.len()).min(15);
    c[..n].copy_from_slice(&b[..n]);
    c
}

/// `swapper/CPU`, the idle threads' name.
pub(super) fn swapper(cpu: u32) -> [u8; 16] {
    use std::io::Write;
    let mut c = [0u8; 16];
    // 15 bytes hold "swapper/" and 7 digits; a longer number is cut.
    let _ = write!(&mut c[..15], "swapper/{cpu}");
    c
}

/// The converter's view of threads.
pub(super) struct Tables {
    pub(super) tasks: TidMap<Task>,
    pub(super) fallback: TidMap<(Option<i32>, Vec<u8>)>,
    /// System call entries: thread -> (entry id, argument values); [`NO_SYSCALL`] once the
    /// exit is seen (the entry is kept, so that its argument vector is reused).
    pub(super) syscalls: TidMap<(i64, Vec<u64>)>,
    pub(super) ns_inum: u32,
    /// A thread was met that neither the events, the state dump nor the fallback name.
    pub(super) unnamed: Cell<bool>,
}

impl Tables {
    pub(super) fn tgid(&self, tid: i32) -> i32 {
        if tid == 0 {
            return 0;
        }
        self.tasks.get(&tid).and_then(|t| t.tgid).or_else(|| self.fallback.get(&tid).and_then(|f| f.0)).unwrap_or(tid)
    }

    pub(super) fn comm(&self, tid: i32, cpu: u32) -> [u8; 16] {
        if tid == 0 {
            return swapper(cpu);
        }
        match self.tasks.get(&tid) {
            Some(t) => t.comm,
            None => match self.fallback.get(&tid) {
                Some(f) => comm16(&f.1),
                None => {
                    self.unnamed.set(true);
                    [0; 16]
                }
            },
        }
    }

    pub(super) fn set_comm(&mut self, tid: i32, comm: &[u8]) {
        let c = comm16(comm);
        self.tasks.entry(tid).and_modify(|t| t.comm = c).or_insert(Task { tgid: None, comm: c });
    }
}
