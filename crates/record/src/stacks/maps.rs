//! Executable memory maps of processes (`/proc/PID/maps`) and GNU build ids of ELF files
//! (the `NT_GNU_BUILD_ID` note), recorded so that stacks are unwound and symbolized offline
//! against the right files.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// One executable mapping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MapEntry {
    pub start: u64,
    pub end: u64,
    pub pgoff: u64,
    pub prot: u32,
    pub maj: u32,
    pub min: u32,
    pub ino: u64,
    pub path: Vec<u8>,
}

/// Parses `/proc/PID/maps` text, keeping executable mappings.
pub(crate) fn parse_maps(text: &str) -> Vec<MapEntry> {
    let exec = tracelens_pystack::maps_lines(text).filter(|m| m.perms.contains('x'));
    exec.map(|m| {
        let mut prot = 0;
        for (c, bit) in [('r', libc::PROT_READ), ('w', libc::PROT_WRITE), ('x', libc::PROT_EXEC)] {
            if m.perms.contains(c) {
                prot |= bit as u32;
            }
        }
        MapEntry { start: m.start, end: m.end, pgoff: m.pgoff, prot, maj: m.dev.0, min: m.dev.1, ino: m.inode, path: m.path.as_bytes().to_vec() }
    })
    .collect()
}

/// The executable mappings of process `pid` now (empty when it is gone).
pub(crate) fn read_maps(pid: i32) -> Vec<MapEntry> {
    std::fs::read_to_string(format!("/proc/{pid}/maps")).map(|t| parse_maps(&t)).unwrap_or_default()
}

/// Reads `len` bytes at `off`, or None.
fn read_at(f: &File, off: u64, len: usize) -> Option<Vec<u8>> {
    if len > 1 << 20 {
        return None;
    }
    let mut b = vec![0u8; len];
    f.read_exact_at(&mut b, off).ok()?;
    Some(b)
}

/// Parses ELF notes in `data`; the GNU build id's bytes, if there.
fn build_id_in_notes(data: &[u8], little: bool) -> Option<Vec<u8>> {
    let rd = |b: &[u8], at: usize| -> Option<u32> {
        let w: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
        Some(if little { u32::from_le_bytes(w) } else { u32::from_be_bytes(w) })
    };
    let mut at = 0usize;
    while at + 12 <= data.len() {
        let namesz = rd(data, at)? as usize;
        let descsz = rd(data, at + 4)? as usize;
        let ty = rd(data, at + 8)?;
        let name_at = at + 12;
        let desc_at = name_at + namesz.div_ceil(4) * 4;
        let next = desc_at + descsz.div_ceil(4) * 4;
        if next > data.len() {
            return None;
        }
        if ty == 3 && namesz == 4 && &data[name_at..name_at + 4] == b"GNU\0" {
            return Some(data[desc_at..desc_at + descsz].to_vec());
        }
        at = next;
    }
    None
}

/// The GNU build id of the ELF file at `path` (from its `PT_NOTE` segments), if it has one.
pub(crate) fn build_id(path: &Path) -> Option<Vec<u8>> {
    let f = File::open(path).ok()?;
    let ident = read_at(&f, 0, 64)?;
    if &ident[..4] != b"\x7fELF" {
        return None;
    }
    let is64 = ident[4] == 2;
    let little = ident[5] == 1;
    let u16_ = |b: &[u8], at: usize| -> u64 {
        let w = [b[at], b[at + 1]];
        (if little { u16::from_le_bytes(w) } else { u16::from_be_bytes(w) }) as u64
    };
    let u32_ = |b: &[u8], at: usize| -> u64 {
        let w: [u8; 4] = b[at..at + 4].try_into().unwrap_or_default();
        (if little { u32::from_le_bytes(w) } else { u32::from_be_bytes(w) }) as u64
    };
    let u64_ = |b: &[u8], at: usize| -> u64 {
        let w: [u8; 8] = b[at..at + 8].try_into().unwrap_or_default();
        if little {
            u64::from_le_bytes(w)
        } else {
            u64::from_be_bytes(w)
        }
    };
    let (phoff, phentsize, phnum) = if is64 { (u64_(&ident, 32), u16_(&ident, 54), u16_(&ident, 56)) } else { (u32_(&ident, 28), u16_(&ident, 42), u16_(&ident, 44)) };
    if phnum == 0 || phnum > 4096 || phentsize < if is64 { 56 } else { 32 } {
        return None;
    }
    let phdrs = read_at(&f, phoff, (phentsize * phnum) as usize)?;
    for i in 0..phnum as usize {
        let p = &phdrs[i * phentsize as usize..];
        if u32_(p, 0) != 4 {
            continue; // PT_NOTE
        }
        let (off, size) = if is64 { (u64_(p, 8), u64_(p, 32)) } else { (u32_(p, 4), u32_(p, 16)) };
        if let Some(id) = read_at(&f, off, size as usize).and_then(|d| build_id_in_notes(&d, little)) {
            return Some(id);
        }
    }
    None
}

/// Build ids by path, each file read once.
#[derive(Default)]
pub(crate) struct BuildIds {
    cache: HashMap<Vec<u8>, Option<Vec<u8>>>,
}

impl BuildIds {
    pub(crate) fn get(&mut self, path: &[u8]) -> Option<Vec<u8>> {
        if path.first() != Some(&b'/') {
            return None; // [vdso], [stack], anonymous...
        }
        self.cache
            .entry(path.to_vec())
            .or_insert_with(|| {
                use std::os::unix::ffi::OsStrExt;
                build_id(Path::new(std::ffi::OsStr::from_bytes(path)))
            })
            .clone()
    }
}

/// Lower-case hex.
pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps() {
        let t = "55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1234 /usr/bin/prog\n\
                 55d0c0a01000-55d0c0a02000 r-xp 00001000 08:01 1234 /usr/bin/prog\n\
                 7ffd1b5fe000-7ffd1b600000 r-xp 00000000 00:00 0                          [vdso]\n\
                 7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n";
        let m = parse_maps(t);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].start, 0x55d0c0a01000);
        assert_eq!(m[0].pgoff, 0x1000);
        assert_eq!((m[0].maj, m[0].min, m[0].ino), (8, 1, 1234));
        assert_eq!(m[0].path, b"/usr/bin/prog");
        assert_eq!(m[1].path, b"[vdso]");
    }

    #[test]
    fn own_build_id() {
        // The test binary is linked by rustc with a build id on Linux (when the linker adds
        // one); either way the parser must not fail on it.
        let exe = std::env::current_exe().unwrap();
        let id = build_id(&exe);
        if let Some(id) = id {
            assert!(id.len() >= 8, "{}", hex(&id));
        }
        assert_eq!(build_id(Path::new("/nonexistent")), None);
    }
}
