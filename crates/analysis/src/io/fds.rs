//! Descriptor tables and the openings of each descriptor: vectors indexed by descriptor
//! number where numbers are dense, maps where they are not.

use std::collections::hash_map::Entry as MapEntry;

use crate::id_map::IdMap;

use super::facts::FdType;
use super::names::NameId;

#[derive(Clone, Copy, Debug)]
pub(super) struct Fd {
    pub(super) filename: NameId,
    pub(super) kind: FdType,
    pub(super) cloexec: bool,
}

/// Values by descriptor number: the numbers from 0 up to a bound in a vector indexed by number
/// (processes use the lowest free numbers), the others (and negative ones) in a map. The bound
/// is a power of two that doubles while the vector stays at least a quarter full (or under
/// [`FD_VEC_MIN`]), so that tables of many descriptors — a server's sockets, a process that
/// opens files without closing them — stay vectors (descriptors opened one after the other
/// sit side by side), and a few high numbers do not make one long and empty.
#[derive(Clone, Debug)]
pub(super) struct FdMap<T> {
    /// Slots of the numbers below `bound`; no longer than the last one in use.
    pub(super) dense: Vec<Option<T>>,
    /// Numbers below it are in `dense`, the others in `other`.
    pub(super) bound: usize,
    /// Values in `dense`.
    pub(super) count: usize,
    pub(super) other: IdMap<i64, T>,
}

/// The bound of an [`FdMap`]'s vector may always reach this.
pub(super) const FD_VEC_MIN: usize = 1024;

impl<T> Default for FdMap<T> {
    fn default() -> Self {
        FdMap { dense: Vec::new(), bound: 0, count: 0, other: IdMap::default() }
    }
}

impl<T: Copy> FdMap<T> {
    /// The slot of `fd` in `dense`, if it has one (it is below the bound).
    #[inline]
    pub(super) fn slot(&self, fd: i64) -> Option<usize> {
        usize::try_from(fd).ok().filter(|&i| i < self.bound)
    }

    #[inline]
    pub(super) fn get(&self, fd: i64) -> Option<&T> {
        match self.slot(fd) {
            Some(i) => self.dense.get(i).and_then(Option::as_ref),
            None => self.other.get(&fd),
        }
    }

    #[inline]
    pub(super) fn get_mut(&mut self, fd: i64) -> Option<&mut T> {
        match self.slot(fd) {
            Some(i) => self.dense.get_mut(i).and_then(Option::as_mut),
            None => self.other.get_mut(&fd),
        }
    }

    /// Adds `v` as `fd` unless `fd` is there; whether it was added.
    #[inline]
    pub(super) fn add(&mut self, fd: i64, v: T) -> bool {
        if self.slot(fd).is_none() && !self.grow(fd) {
            return match self.other.entry(fd) {
                MapEntry::Vacant(e) => {
                    e.insert(v);
                    true
                }
                MapEntry::Occupied(_) => false,
            };
        }
        let Some(i) = self.slot(fd) else { return false };
        if self.dense.len() <= i {
            self.dense.resize(i + 1, None);
        }
        match self.dense.get_mut(i) {
            Some(slot @ None) => {
                *slot = Some(v);
                self.count += 1;
                true
            }
            _ => false,
        }
    }

    /// Raises the bound over `fd` if the vector stays full enough; whether it did.
    #[cold]
    pub(super) fn grow(&mut self, fd: i64) -> bool {
        let Ok(i) = usize::try_from(fd) else { return false };
        let bound = (i + 1).next_power_of_two();
        if bound > FD_VEC_MIN.max(4 * (self.count + self.other.len() + 1)) {
            return false;
        }
        self.bound = bound;
        // Numbers of the map now below the bound move to the vector.
        let moved: Vec<(i64, T)> = self.other.iter().filter(|(n, _)| self.slot(**n).is_some()).map(|(n, v)| (*n, *v)).collect();
        for (n, v) in moved {
            self.other.remove(&n);
            self.add(n, v);
        }
        true
    }

    #[inline]
    pub(super) fn remove(&mut self, fd: i64) {
        match self.slot(fd) {
            Some(i) => {
                if self.dense.get_mut(i).and_then(Option::take).is_some() {
                    self.count -= 1;
                    while self.dense.last().is_some_and(Option::is_none) {
                        self.dense.pop();
                    }
                }
            }
            None => {
                self.other.remove(&fd);
            }
        }
    }

    /// The numbers and values, in no particular order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (i64, &T)> {
        let dense = self.dense.iter().enumerate().filter_map(|(n, v)| v.as_ref().map(|v| (n as i64, v))).take(self.count);
        dense.chain(self.other.iter().map(|(n, v)| (*n, v)))
    }

    /// The numbers of the values `pick` picks, in increasing order.
    pub(super) fn numbers(&self, pick: impl Fn(&T) -> bool) -> Vec<i64> {
        let mut v: Vec<i64> = self.iter().filter(|(_, x)| pick(x)).map(|(n, _)| n).collect();
        if !self.other.is_empty() {
            v.sort_unstable();
        }
        v
    }
}

/// A process's descriptor table.
pub(super) type FdTable = FdMap<Fd>;

/// One opening of a descriptor (lttng-analyses' `FDStats`).
#[derive(Clone, Copy, Debug)]
pub(super) struct FdStats {
    pub(super) filename: NameId,
    pub(super) kind: FdType,
    pub(super) open_ts: i64,
    pub(super) close_ts: Option<i64>,
    pub(super) read: u64,
    pub(super) write: u64,
}

/// The openings of one descriptor number: the last one, and the bytes of the earlier ones
/// by name, in order of first appearance (the per-file tables add up openings by name, in
/// that order): the first name here, the others in the model's [`Pasts`].
#[derive(Clone, Copy, Debug)]
pub(super) struct FdList {
    pub(super) last: Option<FdStats>,
    /// The first earlier name with bytes ([`NO_NAME`]: none yet) and its bytes.
    pub(super) first: (NameId, u64, u64),
    /// 0: no other earlier name; else 1 + the index of the others in [`Pasts`].
    pub(super) past: u32,
}

/// No name (never given to a file name: the table would not fit in memory first).
pub(super) const NO_NAME: NameId = NameId::MAX;

impl Default for FdList {
    fn default() -> Self {
        FdList { last: None, first: (NO_NAME, 0, 0), past: 0 }
    }
}

/// The earlier openings of descriptors, by name (see [`FdList`]).
#[derive(Clone, Debug, Default)]
pub(super) struct Past {
    pub(super) list: Vec<(NameId, u64, u64)>,
    /// Where each name is in `list`, once it is long.
    pub(super) index: Option<IdMap<NameId, u32>>,
}

/// `Past::list` gets an index beyond this length.
pub(super) const PAST_SCAN: usize = 8;

/// Every [`FdList`]'s [`Past`].
pub(super) type Pasts = Vec<Past>;

impl FdList {
    pub(super) fn push(&mut self, s: FdStats, pasts: &mut Pasts) {
        let Some(old) = self.last.replace(s) else { return };
        if old.read == 0 && old.write == 0 {
            return;
        }
        if self.first.0 == NO_NAME || self.first.0 == old.filename {
            self.first = (old.filename, self.first.1 + old.read, self.first.2 + old.write);
            return;
        }
        if self.past == 0 {
            pasts.push(Past::default());
            self.past = pasts.len() as u32;
        }
        let Some(past) = pasts.get_mut(self.past as usize - 1) else { return };
        let at = match &past.index {
            Some(index) => index.get(&old.filename).map(|&i| i as usize),
            None => past.list.iter().position(|(n, _, _)| *n == old.filename),
        };
        match at.and_then(|i| past.list.get_mut(i)) {
            Some((_, r, w)) => {
                *r += old.read;
                *w += old.write;
            }
            None => {
                let n = past.list.len() as u32;
                if let Some(index) = &mut past.index {
                    index.insert(old.filename, n);
                } else if past.list.len() >= PAST_SCAN {
                    let mut index: IdMap<NameId, u32> = past.list.iter().enumerate().map(|(i, (n, _, _))| (*n, i as u32)).collect();
                    index.insert(old.filename, n);
                    past.index = Some(index);
                }
                past.list.push((old.filename, old.read, old.write));
            }
        }
    }

    /// The earlier openings by name (name, read, write), in order of first appearance.
    pub(super) fn past<'p>(&self, pasts: &'p Pasts) -> impl Iterator<Item = (NameId, u64, u64)> + 'p {
        let others = match self.past {
            0 => &[][..],
            i => pasts.get(i as usize - 1).map_or(&[][..], |p| &p.list[..]),
        };
        let first = (self.first.0 != NO_NAME).then_some(self.first);
        first.into_iter().chain(others.iter().copied())
    }

    /// Moves the earlier openings' names from `from` (the [`Pasts`] of the statistics the list
    /// was in) to `to`.
    pub(super) fn rehome(&mut self, from: &Pasts, to: &mut Pasts) {
        if self.past == 0 {
            return;
        }
        let list = from.get(self.past as usize - 1).map(|p| p.list.clone()).unwrap_or_default();
        let index = (list.len() > PAST_SCAN).then(|| list.iter().enumerate().map(|(i, (n, _, _))| (*n, i as u32)).collect());
        to.push(Past { list, index });
        self.past = to.len() as u32;
    }

    /// The current opening (`get_fd`): the last, unless closed.
    pub(super) fn current(&mut self) -> Option<&mut FdStats> {
        self.last.as_mut().filter(|s| s.close_ts.is_none())
    }

    /// The opening that covers `ts` (lttng-analyses looks it up by time for its tables).
    pub(super) fn at(&self, ts: i64) -> Option<&FdStats> {
        self.last.as_ref().filter(|s| s.open_ts <= ts && s.close_ts.is_none_or(|c| ts <= c))
    }
}

/// The [`FdList`]s of a thread's statistics, by descriptor number: kept in one vector (read
/// by the per-file tables), found through an [`FdMap`].
#[derive(Clone, Debug, Default)]
pub(super) struct FdLists {
    /// The index in `lists` of each descriptor number.
    pub(super) at: FdMap<u32>,
    pub(super) lists: Vec<(i64, FdList)>,
}

impl FdLists {
    #[inline]
    pub(super) fn get(&self, fd: i64) -> Option<&FdList> {
        let &i = self.at.get(fd)?;
        self.lists.get(i as usize).map(|(_, l)| l)
    }

    #[inline]
    pub(super) fn get_mut(&mut self, fd: i64) -> Option<&mut FdList> {
        let &i = self.at.get(fd)?;
        self.lists.get_mut(i as usize).map(|(_, l)| l)
    }

    /// The list of `fd`, created empty when missing.
    #[inline]
    pub(super) fn entry(&mut self, fd: i64) -> &mut FdList {
        let i = match self.at.get(fd) {
            Some(&i) => i as usize,
            None => {
                let n = self.lists.len();
                self.at.add(fd, n as u32);
                self.lists.push((fd, FdList::default()));
                n
            }
        };
        &mut self.lists[i].1
    }

    /// Adds the list of `fd` (not there yet).
    pub(super) fn insert(&mut self, fd: i64, list: FdList) {
        *self.entry(fd) = list;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `FdMap` answers like a map whatever the numbers (negative, small, large, dense or
    /// sparse), and lists numbers in increasing order.
    #[test]
    fn fd_map_is_a_map() {
        use std::collections::BTreeMap;
        let mut seed = 3u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as i64
        };
        for round in 0..40 {
            let mut m: FdMap<u32> = FdMap::default();
            let mut want: BTreeMap<i64, u32> = BTreeMap::new();
            for step in 0..3000u32 {
                let fd = match next() % 8 {
                    0 => -(next() % 5),
                    1 => 1 << (next() % 20),
                    2 => next() % 50_000,
                    _ => (step as i64) / 2 + next() % (8 << (round % 6)),
                };
                if next() % 3 == 0 {
                    m.remove(fd);
                    want.remove(&fd);
                } else {
                    let added = m.add(fd, step);
                    assert_eq!(added, !want.contains_key(&fd), "round {round} step {step} fd {fd}");
                    want.entry(fd).or_insert(step);
                }
                if step % 97 == 0 {
                    let mut probe = fd;
                    for _ in 0..20 {
                        assert_eq!(m.get(probe), want.get(&probe), "fd {probe}");
                        probe = next() % 70_000 - 10;
                    }
                    if let Some(v) = m.get_mut(fd) {
                        *v += 1;
                        if let Some(w) = want.get_mut(&fd) {
                            *w += 1;
                        }
                    }
                }
            }
            assert_eq!(m.numbers(|_| true), want.keys().copied().collect::<Vec<_>>());
            assert_eq!(m.numbers(|v| v % 2 == 0), want.iter().filter(|(_, v)| *v % 2 == 0).map(|(k, _)| *k).collect::<Vec<_>>());
            assert!(m.dense.len() <= m.bound && m.dense.last().is_none_or(Option::is_some));
            assert!(m.other.keys().all(|&n| m.slot(n).is_none()));
        }
    }
}
