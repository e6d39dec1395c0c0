//! One ELF file loaded for unwinding and symbolization: its loadable segments (file offsets
//! to virtual addresses), its call-frame information (`.eh_frame`, else `.debug_frame`), its
//! symbol tables, and its DWARF line information (from the file, or a separate debug file
//! found by build id or `.gnu_debuglink`), loaded on first use.

use std::borrow::Cow;
use std::cell::OnceCell;

use crate::error::Error;
use crate::mapped::Arena;
use std::path::{Path, PathBuf};

use gimli::{BaseAddresses, CieOrFde, DebugFrame, EhFrame, FrameDescriptionEntry, RunTimeEndian, UnwindSection};
use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SymbolKind};

/// The byte slices every parsed structure borrows: they live as long as the module (see
/// [`crate::mapped`]).
pub(crate) type Slice = gimli::EndianSlice<'static, RunTimeEndian>;

/// A loadable segment: file bytes `[offset, offset + filesz)` are at `vaddr`.
#[derive(Clone, Copy, Debug)]
struct Segment {
    offset: u64,
    filesz: u64,
    vaddr: u64,
}

/// Which section an FDE comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Src {
    Eh,
    Debug,
}

/// A function symbol.
#[derive(Clone, Debug)]
struct Sym {
    addr: u64,
    size: u64,
    name: String,
}

/// What symbolizing one address in a module gives.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Symbol {
    /// The function (demangled), if known.
    pub function: Option<String>,
    /// Bytes from the function's start (when known from the symbol table).
    pub offset: Option<u64>,
    /// Source file, when debug information exists.
    pub file: Option<String>,
    /// Source line, when debug information exists.
    pub line: Option<u32>,
}

pub(crate) struct Module {
    /// The file's bytes.
    data: &'static [u8],
    segments: Vec<Segment>,
    eh_frame: Option<(EhFrame<Slice>, BaseAddresses)>,
    debug_frame: Option<(DebugFrame<Slice>, BaseAddresses)>,
    fdes: Vec<(u64, u64, Src, FrameDescriptionEntry<Slice>)>,
    symbols: Vec<Sym>,
    endian: RunTimeEndian,
    /// The bytes of the file with the DWARF lines (this file or a separate debug file), parsed
    /// lazily.
    lines_data: Option<&'static [u8]>,
    lines: OnceCell<Option<addr2line::Context<Slice>>>,
    /// Problems met loading it that did not stop it from loading (a separate debug file that
    /// was not used).
    pub notes: Vec<Error>,
    // Declared last: dropped after everything that borrows from it.
    arena: Arena,
}

/// Demangles Rust and C++ symbol names; others are returned as they are.
pub fn demangle(name: &str) -> String {
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        return format!("{d:#}");
    }
    if name.starts_with("_Z") {
        if let Ok(s) = cpp_demangle::Symbol::new(name) {
            if let Ok(d) = s.demangle(&cpp_demangle::DemangleOptions::default()) {
                return d;
            }
        }
    }
    name.to_string()
}

fn read_build_id(file: &object::File<'_>) -> Option<Vec<u8>> {
    file.build_id().ok().flatten().map(|b| b.to_vec())
}

/// Where a separate debug file of `path` (with `build_id`) is, if any.
fn find_debug_file(path: &Path, build_id: Option<&[u8]>, file: &object::File<'_>) -> Option<PathBuf> {
    if let Some(id) = build_id.filter(|b| b.len() > 1) {
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let p = PathBuf::from(format!("/usr/lib/debug/.build-id/{}/{}.debug", &hex[..2], &hex[2..]));
        if p.is_file() {
            return Some(p);
        }
    }
    if let Ok(Some((name, _crc))) = file.gnu_debuglink() {
        let name = String::from_utf8_lossy(name).into_owned();
        let dir = path.parent().unwrap_or(Path::new("/"));
        for cand in [dir.join(&name), dir.join(".debug").join(&name), Path::new("/usr/lib/debug").join(dir.strip_prefix("/").unwrap_or(dir)).join(&name)] {
            if cand.is_file() && cand != path {
                return Some(cand);
            }
        }
    }
    None
}

fn collect_symbols(file: &object::File<'_>, out: &mut Vec<Sym>) {
    for s in file.symbols().chain(file.dynamic_symbols()) {
        if s.kind() != SymbolKind::Text || !s.is_definition() || s.address() == 0 {
            continue;
        }
        let Ok(name) = s.name() else { continue };
        if name.is_empty() {
            continue;
        }
        out.push(Sym { addr: s.address(), size: s.size(), name: name.to_string() });
    }
}

/// A build id in hex.
fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

impl Module {
    /// Loads the ELF file at `path` (a regular file only), if its build id is `recorded` (hex;
    /// empty: not known, not checked).
    pub(crate) fn open(path: &Path, recorded: &str) -> Result<Module, Error> {
        let arena = Arena::default();
        let data = arena.map_file(path)?;
        Module::parse(path.to_path_buf(), data, arena, true, recorded)
    }

    /// Loads an ELF image from memory (the vDSO).
    pub(crate) fn from_bytes(name: &str, bytes: Vec<u8>) -> Result<Module, Error> {
        let arena = Arena::default();
        let data = arena.keep(bytes);
        Module::parse(PathBuf::from(name), data, arena, false, "")
    }

    fn parse(path: PathBuf, data: &'static [u8], arena: Arena, on_disk: bool, recorded: &str) -> Result<Module, Error> {
        let file = object::File::parse(data).map_err(|e| Error::Elf { path: path.clone(), message: e.to_string() })?;
        let build_id = read_build_id(&file);
        // Nothing else of a file is trusted before its build id.
        if !recorded.is_empty() {
            let found = build_id.as_deref().map(hex).unwrap_or_else(|| "none".into());
            if found != recorded {
                return Err(Error::BuildId { path, found, recorded: recorded.to_string() });
            }
        }
        let endian = if file.is_little_endian() { RunTimeEndian::Little } else { RunTimeEndian::Big };
        let mut segments = Vec::new();
        for s in file.segments() {
            let (offset, filesz) = s.file_range();
            segments.push(Segment { offset, filesz, vaddr: s.address() });
        }
        let section_bytes = |name: &str| -> Option<(&'static [u8], u64)> {
            let s = file.section_by_name(name)?;
            let addr = s.address();
            match s.uncompressed_data().ok()? {
                Cow::Borrowed(b) => Some((b, addr)),
                Cow::Owned(v) => Some((arena.keep(v), addr)),
            }
        };
        let text_addr = file.section_by_name(".text").map(|s| s.address()).unwrap_or(0);
        let got_addr = file.section_by_name(".got").map(|s| s.address()).unwrap_or(0);
        let eh_frame = section_bytes(".eh_frame").filter(|(b, _)| !b.is_empty()).map(|(b, addr)| {
            let mut eh = EhFrame::new(b, endian);
            eh.set_address_size(if file.is_64() { 8 } else { 4 });
            (eh, BaseAddresses::default().set_eh_frame(addr).set_text(text_addr).set_got(got_addr))
        });
        let debug_frame = section_bytes(".debug_frame").filter(|(b, _)| !b.is_empty()).map(|(b, _)| {
            let mut df = DebugFrame::new(b, endian);
            df.set_address_size(if file.is_64() { 8 } else { 4 });
            (df, BaseAddresses::default().set_text(text_addr))
        });
        let mut fdes = Vec::new();
        if let Some((eh, bases)) = &eh_frame {
            let mut entries = eh.entries(bases);
            while let Ok(Some(e)) = entries.next() {
                if let CieOrFde::Fde(p) = e {
                    if let Ok(fde) = p.parse(EhFrame::cie_from_offset) {
                        fdes.push((fde.initial_address(), fde.initial_address().wrapping_add(fde.len()), Src::Eh, fde));
                    }
                }
            }
        }
        if let Some((df, bases)) = &debug_frame {
            let mut entries = df.entries(bases);
            while let Ok(Some(e)) = entries.next() {
                if let CieOrFde::Fde(p) = e {
                    if let Ok(fde) = p.parse(DebugFrame::cie_from_offset) {
                        fdes.push((fde.initial_address(), fde.initial_address().wrapping_add(fde.len()), Src::Debug, fde));
                    }
                }
            }
        }
        // .eh_frame first for an address both describe.
        fdes.sort_by_key(|f| (f.0, f.2 == Src::Debug));
        let mut symbols = Vec::new();
        collect_symbols(&file, &mut symbols);
        let has_lines = file.section_by_name(".debug_line").is_some_and(|s| s.size() > 0);
        let mut notes = Vec::new();
        let mut lines_data = has_lines.then_some(data);
        if !has_lines && on_disk {
            if let Some(df) = find_debug_file(&path, build_id.as_deref(), &file) {
                // The separate file: a regular file of the same build id only. Its full symbol
                // table helps a stripped binary, its DWARF gives the lines.
                match arena.map_file(&df).and_then(|d| {
                    let o = object::File::parse(d).map_err(|e| Error::Elf { path: df.clone(), message: e.to_string() })?;
                    match (build_id.as_deref(), read_build_id(&o)) {
                        (Some(want), Some(have)) if want != &have[..] => Err(Error::BuildId { path: df.clone(), found: hex(&have), recorded: hex(want) }),
                        _ => Ok((d, o)),
                    }
                }) {
                    Ok((d, o)) => {
                        collect_symbols(&o, &mut symbols);
                        lines_data = Some(d);
                    }
                    Err(e) => notes.push(e),
                }
            }
        }
        symbols.sort_by(|a, b| a.addr.cmp(&b.addr).then(b.size.cmp(&a.size)));
        symbols.dedup_by_key(|s| s.addr);
        Ok(Module {
            data,
            segments,
            eh_frame,
            debug_frame,
            fdes,
            symbols,
            endian,
            lines_data,
            lines: OnceCell::new(),
            notes,
            arena,
        })
    }

    /// The virtual address (as in the file's symbols and CFI) of file offset `off`.
    pub(crate) fn vaddr_of_offset(&self, off: u64) -> Option<u64> {
        self.segments.iter().find(|s| off >= s.offset && off < s.offset + s.filesz.max(1)).map(|s| off - s.offset + s.vaddr)
    }

    /// The address of the symbol `name` (raw, mangled; of any type: assembler labels such as
    /// CPython's `_Py_trampoline_func_start` have none), if the file defines it. Reads the
    /// symbol tables again: for rare lookups.
    pub(crate) fn symbol_address(&self, name: &str) -> Option<u64> {
        let file = object::File::parse(self.data).ok()?;
        let found = file.dynamic_symbols().chain(file.symbols()).find(|s| !s.is_undefined() && s.name() == Ok(name)).map(|s| s.address());
        found
    }

    /// The file's bytes at virtual addresses `[vaddr, vaddr + len)`, when the file holds them.
    pub(crate) fn bytes_at(&self, vaddr: u64, len: u64) -> Option<&[u8]> {
        let end = vaddr.checked_add(len)?;
        let s = self.segments.iter().find(|s| vaddr >= s.vaddr && end <= s.vaddr + s.filesz)?;
        let off = (vaddr - s.vaddr + s.offset) as usize;
        self.data.get(off..off.checked_add(len as usize)?)
    }

    /// Unwind row for `vaddr`: calls `f` with it (the row borrows `ctx`).
    pub(crate) fn with_row<T>(
        &self,
        vaddr: u64,
        ctx: &mut gimli::UnwindContext<usize>,
        f: impl FnOnce(&gimli::UnwindTableRow<usize>) -> T,
    ) -> Option<T> {
        let k = self.fdes.partition_point(|e| e.0 <= vaddr);
        // Nested or overlapping entries are rare; look back a few.
        for e in self.fdes[..k].iter().rev().take(4) {
            if vaddr < e.0 || vaddr >= e.1 {
                continue;
            }
            let row = match e.2 {
                Src::Eh => {
                    let (s, b) = self.eh_frame.as_ref()?;
                    e.3.unwind_info_for_address(s, b, ctx, vaddr).ok()
                }
                Src::Debug => {
                    let (s, b) = self.debug_frame.as_ref()?;
                    e.3.unwind_info_for_address(s, b, ctx, vaddr).ok()
                }
            };
            if let Some(row) = row {
                return Some(f(row));
            }
        }
        None
    }

    fn line_context(&self) -> Option<&addr2line::Context<Slice>> {
        self.lines
            .get_or_init(|| {
                let file = object::File::parse(self.lines_data?).ok()?;
                let endian = self.endian;
                let dwarf = gimli::Dwarf::load(|id| -> Result<Slice, gimli::Error> {
                    let b: &'static [u8] = match file.section_by_name(id.name()).and_then(|s| s.uncompressed_data().ok()) {
                        Some(Cow::Borrowed(b)) => b,
                        Some(Cow::Owned(v)) => self.arena.keep(v),
                        None => &[],
                    };
                    Ok(gimli::EndianSlice::new(b, endian))
                })
                .ok()?;
                addr2line::Context::from_dwarf(dwarf).ok()
            })
            .as_ref()
    }

    /// Function, offset and source line of `vaddr`.
    pub(crate) fn symbolize(&self, vaddr: u64) -> Symbol {
        let mut out = Symbol::default();
        let k = self.symbols.partition_point(|s| s.addr <= vaddr);
        if k > 0 {
            let s = &self.symbols[k - 1];
            if s.size == 0 || vaddr < s.addr + s.size {
                out.function = Some(demangle(&s.name));
                out.offset = Some(vaddr - s.addr);
            }
        }
        if let Some(cx) = self.line_context() {
            if let Ok(Some(loc)) = cx.find_location(vaddr) {
                out.file = loc.file.map(str::to_string);
                out.line = loc.line;
            }
            if out.function.is_none() {
                if let Ok(mut frames) = cx.find_frames(vaddr).skip_all_loads() {
                    let mut last = None;
                    while let Ok(Some(f)) = frames.next() {
                        if let Some(func) = f.function {
                            last = func.demangle().ok().map(|c| c.into_owned());
                        }
                    }
                    out.function = last;
                }
            }
        }
        out
    }
}
