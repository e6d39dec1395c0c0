//! The file names of an `io` run, numbered as chunks meet them.

use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::id_map::{IdHasher, IdMap};

/// A file name, numbered in the model's [`FileNames`].
pub(super) type NameId = u32;
/// The empty name.
pub(super) const EMPTY_NAME: NameId = 0;
/// `unknown`.
pub(super) const UNKNOWN_NAME: NameId = 1;
/// `socket`.
pub(super) const SOCKET_NAME: NameId = 2;

/// The file names of an analysis, numbered as chunks meet them: facts, descriptor tables and
/// statistics hold plain numbers (copied, compared and freed for nothing). Shared by the
/// workers: a chunk numbers each name it meets once (see [`NameCache`]); the numbers only
/// name files, so the order in which chunks get them does not matter.
#[derive(Debug)]
pub(super) struct FileNames {
    pub(super) table: Mutex<NameTable>,
}

/// The numbered names: [`EMPTY_NAME`], [`UNKNOWN_NAME`] and [`SOCKET_NAME`] first. Found by
/// a hash of their text that the caller computes once ([`name_hash`]): a map from hashes to
/// the first name with that hash, a list for the (improbable) others.
#[derive(Debug, Default)]
pub(super) struct NameTable {
    pub(super) names: Vec<Box<str>>,
    pub(super) ids: IdMap<u64, NameId>,
    pub(super) collisions: Vec<(u64, NameId)>,
}

/// The hash of a name's bytes (or text) that [`NameTable`] and [`NameCache`] go by.
#[inline]
pub(super) fn name_hash(bytes: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = IdHasher::default();
    h.write(bytes);
    h.finish()
}

impl NameTable {
    /// The number of `name`, whose [`name_hash`] is `hash`.
    pub(super) fn id(&mut self, name: &str, hash: u64) -> NameId {
        let same = |i: NameId| self.names.get(i as usize).is_some_and(|n| **n == *name);
        let first = self.ids.get(&hash).copied();
        if let Some(i) = first.filter(|&i| same(i)) {
            return i;
        }
        if let Some(&(_, i)) = self.collisions.iter().find(|&&(h, i)| h == hash && same(i)) {
            return i;
        }
        let i = self.names.len() as NameId;
        self.names.push(name.into());
        match first {
            None => {
                self.ids.insert(hash, i);
            }
            Some(_) => self.collisions.push((hash, i)),
        }
        i
    }

    pub(super) fn name(&self, id: NameId) -> &str {
        self.names.get(id as usize).map_or("", |s| s)
    }
}

impl Default for FileNames {
    fn default() -> Self {
        let mut t = NameTable::default();
        for s in ["", "unknown", "socket"] {
            t.id(s, name_hash(s.as_bytes()));
        }
        FileNames { table: Mutex::new(t) }
    }
}

impl FileNames {
    pub(super) fn lock(&self) -> MutexGuard<'_, NameTable> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The number of `name` (bytes from the trace, invalid UTF-8 replaced), whose bytes have
    /// the [`name_hash`] `hash`.
    pub(super) fn id(&self, name: &[u8], hash: u64) -> NameId {
        let text = String::from_utf8_lossy(name);
        let hash = match &text {
            std::borrow::Cow::Borrowed(_) => hash,
            std::borrow::Cow::Owned(t) => name_hash(t.as_bytes()),
        };
        self.lock().id(&text, hash)
    }
}

/// A chunk's numbers of the names it met (bytes kept end to end in one buffer), so that
/// repeated opens of a name do not go to the shared [`FileNames`].
#[derive(Debug, Default)]
pub(super) struct NameCache {
    /// By [`name_hash`]: the number, and where the bytes are in `bytes`.
    pub(super) ids: IdMap<u64, (NameId, u32, u32)>,
    pub(super) bytes: Vec<u8>,
}

/// Bytes of names a [`NameCache`] keeps at most.
pub(super) const NAME_CACHE_BYTES: usize = 1 << 20;

impl NameCache {
    #[inline]
    pub(super) fn id(&mut self, names: &FileNames, name: &[u8]) -> NameId {
        let hash = name_hash(name);
        if let Some(&(i, at, len)) = self.ids.get(&hash) {
            if self.bytes.get(at as usize..at as usize + len as usize) == Some(name) {
                return i;
            }
        }
        let i = names.id(name, hash);
        if self.bytes.len() + name.len() <= NAME_CACHE_BYTES {
            self.ids.insert(hash, (i, self.bytes.len() as u32, name.len() as u32));
            self.bytes.extend_from_slice(name);
        }
        i
    }
}
