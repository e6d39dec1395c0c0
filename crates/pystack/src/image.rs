//! Finding CPython in a process: the mapped file that defines `_PyRuntime` (the `python3.X`
//! executable, or `libpython3.X.so` when the executable links to it), its version, and where
//! `_PyRuntime` and `PyCode_Type` are in the process.

use std::fs::File;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol};

use crate::error::{Error, Result};
use crate::layout::Version;
use crate::maps::maps_lines;

/// The CPython runtime of one process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// The file that defines `_PyRuntime`.
    pub path: PathBuf,
    /// Its version.
    pub version: Version,
    /// Address of `_PyRuntime` in the process.
    pub runtime: u64,
    /// Address of `PyCode_Type` in the process (to check that a pointer is a code object).
    pub code_type: u64,
}

/// A file mapping of a process (`/proc/PID/maps`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileMapping {
    /// First address.
    pub start: u64,
    /// File offset of `start`.
    pub pgoff: u64,
    /// The file.
    pub path: PathBuf,
}

/// The CPython version in a file name: `python3.11`, `libpython3.12.so.1.0`,
/// `libpython3.9d.so`.
pub fn version_from_name(path: &Path) -> Option<Version> {
    let name = path.file_name()?.to_str()?;
    let rest = name.strip_prefix("lib").unwrap_or(name).strip_prefix("python")?;
    let (major, tail) = rest.split_once('.')?;
    let digits: String = tail.chars().take_while(|c| c.is_ascii_digit()).collect();
    Some(Version { major: major.parse().ok()?, minor: digits.parse().ok()? })
}

/// Whether `path` may be a CPython interpreter or library (by its name).
pub fn looks_like_python(path: &[u8]) -> bool {
    let name = path.rsplit(|&c| c == b'/').next().unwrap_or(path);
    name.starts_with(b"python") || name.starts_with(b"libpython")
}

/// The file mappings of `pid` whose file name looks like CPython's, lowest address first.
pub fn python_mappings(pid: i32) -> Result<Vec<FileMapping>> {
    let path = PathBuf::from(format!("/proc/{pid}/maps"));
    let text = std::fs::read_to_string(&path).map_err(|source| Error::Io { path, source })?;
    Ok(parse_maps(&text).into_iter().filter(|m| looks_like_python(m.path.as_os_str().as_encoded_bytes())).collect())
}

fn parse_maps(text: &str) -> Vec<FileMapping> {
    maps_lines(text).filter(|m| m.path.starts_with('/')).map(|m| FileMapping { start: m.start, pgoff: m.pgoff, path: PathBuf::from(m.path) }).collect()
}

/// What the interpreter's file says.
struct Symbols {
    runtime: u64,
    code_type: u64,
    /// Lowest `PT_LOAD` virtual address, page-aligned down.
    base_vaddr: u64,
    /// `Py_Version` (3.11 and later), when the file name has no version.
    hex_version: Option<u64>,
}

fn read_symbols(path: &Path) -> Result<Symbols> {
    let f = File::open(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
    let meta = f.metadata().map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
    if !meta.is_file() {
        return Err(Error::Elf { path: path.to_path_buf(), message: "not a regular file".into() });
    }
    let cache = object::ReadCache::new(f);
    let file = object::File::parse(&cache).map_err(|e| Error::Elf { path: path.to_path_buf(), message: e.to_string() })?;
    let (mut runtime, mut code_type, mut version_at) = (None, None, None);
    for s in file.dynamic_symbols().chain(file.symbols()) {
        match s.name() {
            Ok("_PyRuntime") => runtime = runtime.or(Some(s.address())),
            Ok("PyCode_Type") => code_type = code_type.or(Some(s.address())),
            Ok("Py_Version") => version_at = version_at.or(Some(s.address())),
            _ => {}
        }
        if runtime.is_some() && code_type.is_some() && version_at.is_some() {
            break;
        }
    }
    let missing = |name: &str| Error::Elf { path: path.to_path_buf(), message: format!("no `{name}` symbol (not CPython, or stripped of its dynamic symbols)") };
    let runtime = runtime.ok_or_else(|| missing("_PyRuntime"))?;
    let code_type = code_type.ok_or_else(|| missing("PyCode_Type"))?;
    let base_vaddr = file.segments().map(|s| s.address()).min().unwrap_or(0) & !0xfff;
    let hex_version = version_at.and_then(|addr| {
        let sec = file.sections().find(|s| s.address() <= addr && addr + 8 <= s.address() + s.size())?;
        let data = sec.data().ok()?;
        let at = (addr - sec.address()) as usize;
        Some(u64::from_le_bytes(data.get(at..at + 8)?.try_into().ok()?))
    });
    Ok(Symbols { runtime, code_type, base_vaddr, hex_version })
}

/// The file as this process can open it: its path, else through `/proc/PID/root` (a process
/// in another mount namespace).
fn reachable(pid: i32, path: &Path) -> PathBuf {
    if path.exists() {
        return path.to_path_buf();
    }
    let rel = path.strip_prefix("/").unwrap_or(path);
    Path::new(&format!("/proc/{pid}/root")).join(rel)
}

/// CPython in process `pid`, from its current mappings: None when no mapped file looks like
/// CPython (not a Python process, or not yet: an executable that loads `libpython` has not
/// done so before its dynamic linker ran).
pub fn find(pid: i32) -> Result<Option<Image>> {
    let maps = python_mappings(pid)?;
    find_in(pid, &maps)
}

/// CPython among the file mappings `maps` of process `pid` (see [`find`]).
pub fn find_in(pid: i32, maps: &[FileMapping]) -> Result<Option<Image>> {
    let mut first_error = None;
    let mut seen: Vec<&Path> = Vec::new();
    for m in maps {
        if seen.contains(&m.path.as_path()) {
            continue;
        }
        seen.push(&m.path);
        let path = reachable(pid, &m.path);
        let syms = match read_symbols(&path) {
            Ok(s) => s,
            // The python executable that links to libpython has no `_PyRuntime`: go on.
            Err(e) => {
                first_error.get_or_insert(e);
                continue;
            }
        };
        let Some(low) = maps.iter().filter(|x| x.path == m.path).min_by_key(|x| x.start) else { continue };
        let bias = low.start.wrapping_sub(low.pgoff).wrapping_sub(syms.base_vaddr);
        let version = version_from_name(&m.path)
            .or_else(|| syms.hex_version.map(|v| Version { major: (v >> 24) as u8, minor: (v >> 16) as u8 }))
            .ok_or_else(|| Error::Elf { path: m.path.clone(), message: "cannot tell the CPython version (no version in the file name, no `Py_Version`)".into() })?;
        return Ok(Some(Image { path: m.path.clone(), version, runtime: syms.runtime.wrapping_add(bias), code_type: syms.code_type.wrapping_add(bias) }));
    }
    match first_error {
        // An executable that links to libpython has no `_PyRuntime` (libpython may not be
        // mapped yet): not an error.
        Some(Error::Elf { .. }) | None => Ok(None),
        Some(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let v = |s: &str| version_from_name(Path::new(s)).map(|v| (v.major, v.minor));
        assert_eq!(v("/usr/bin/python3.11"), Some((3, 11)));
        assert_eq!(v("/x/lib/libpython3.12.so.1.0"), Some((3, 12)));
        assert_eq!(v("libpython3.9d.so"), Some((3, 9)));
        assert_eq!(v("/usr/bin/python3"), None);
        assert_eq!(v("/usr/bin/pythonista"), None);
        assert!(looks_like_python(b"/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0"));
        assert!(!looks_like_python(b"/usr/lib/libc.so.6"));
    }

    #[test]
    fn maps_lines() {
        let t = "55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1234 /usr/bin/python3.11\n\
                 55d0c0a01000-55d0c0a02000 r-xp 00001000 08:01 1234 /usr/bin/python3.11\n\
                 7ffd1b5fe000-7ffd1b600000 r-xp 00000000 00:00 0                          [vdso]\n";
        let m = parse_maps(t);
        assert_eq!(m.len(), 2);
        assert_eq!(m[1].pgoff, 0x1000);
        assert_eq!(m[0].path, Path::new("/usr/bin/python3.11"));
    }
}
