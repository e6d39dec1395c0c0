//! Address ranges that do not overlap, each with a value: a later range replaces the ones it
//! overlaps (a new mapping over old ones, JIT code over freed code).

use std::collections::BTreeMap;

/// Non-overlapping `[start, end)` ranges with values, by start.
#[derive(Clone, Debug)]
pub(crate) struct Ranges<T> {
    by_start: BTreeMap<u64, (u64, T)>,
}

impl<T> Default for Ranges<T> {
    fn default() -> Self {
        Ranges { by_start: BTreeMap::new() }
    }
}

impl<T> Ranges<T> {
    /// Adds `[start, end)`, removing the ranges it overlaps; an empty range is ignored.
    pub fn insert(&mut self, start: u64, end: u64, value: T) {
        if end <= start {
            return;
        }
        // Sorted and disjoint: the overlapped ones are the last ones starting before `end`.
        let gone: Vec<u64> = self.by_start.range(..end).rev().take_while(|(_, (e, _))| *e > start).map(|(&k, _)| k).collect();
        for k in gone {
            self.by_start.remove(&k);
        }
        self.by_start.insert(start, (end, value));
    }

    /// The value of the range holding `addr`.
    pub fn find(&self, addr: u64) -> Option<&T> {
        self.by_start.range(..=addr).next_back().filter(|(_, (end, _))| addr < *end).map(|(_, (_, v))| v)
    }

    /// Removes the range starting at `start`.
    pub fn remove(&mut self, start: u64) -> Option<T> {
        self.by_start.remove(&start).map(|(_, v)| v)
    }

    /// The values, by start.
    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.by_start.values().map(|(_, v)| v)
    }

    /// Number of ranges.
    pub fn len(&self) -> usize {
        self.by_start.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.by_start.is_empty()
    }
}
