//! Memory-mapped input files: the one place with `unsafe` in this crate.

use std::fs::File;
use std::path::Path;

use crate::{Error, Result};

/// A read-only view of a whole file: memory-mapped when it is not empty.
#[derive(Debug)]
pub struct MappedFile {
    map: Option<memmap2::Mmap>,
    owned: Vec<u8>,
}

impl MappedFile {
    /// Maps `path` read-only.
    ///
    /// # Safety (of the mapping)
    ///
    /// The map is sound only while nobody truncates or rewrites the file; trace files are
    /// written once and then only read. A file truncated by another process while mapped makes
    /// reads past its new end raise SIGBUS, as with every mmap-based reader (ripgrep documents
    /// the same caveat).
    pub fn open(path: &Path) -> Result<MappedFile> {
        let io = |source| Error::Io { path: path.to_path_buf(), source };
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        if len == 0 {
            return Ok(MappedFile { map: None, owned: Vec::new() });
        }
        // SAFETY: see the method's documentation: the file is read-only input that is not
        // modified while the trace is open.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        Ok(MappedFile { map: Some(map), owned: Vec::new() })
    }

    /// Bytes already in memory (tests, fuzzing, generated traces).
    pub fn from_vec(bytes: Vec<u8>) -> MappedFile {
        MappedFile { map: None, owned: bytes }
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        match &self.map {
            Some(m) => m,
            None => &self.owned,
        }
    }
}
