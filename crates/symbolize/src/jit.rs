//! Symbols of just-in-time compiled code, from the files the runtimes write for profilers
//! and that `tracelens record` saves into `OUTPUT/jit/`:
//!
//! * **perf maps** (`perf-PID.map`): one line per code region, `START SIZE NAME` (hex
//!   address and size), written by `node --perf-basic-prof`, `python3.12 -X perf`, Java's
//!   perf-map-agent, and others;
//! * **jitdump** (`jit-PID.dump`, Linux perf's `jitdump-specification.txt`): code loads
//!   and moves with their names and code bytes, and source lines (`CODE_DEBUG_INFO`),
//!   written by `node --perf-prof` and `python3.13 -X perf_jit`.
//!
//! The files say nothing of time: where a later region overlaps earlier ones (code freed and
//! its memory reused), the later one wins, as in `perf report`.
//!
//! Names are split into function, file and line where the runtime's format says them:
//! CPython's `py::QUALNAME:FILE` (a Python function's trampoline), V8's `JS:*name
//! FILE:LINE:COLUMN` (with its tier marker `*`, `~`, `^`, `+`, and the older `LazyCompile:`
//! and `Function:` prefixes).

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::ranges::Ranges;

/// One region of compiled code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JitCode {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// The name as the runtime wrote it.
    pub raw: Rc<str>,
    /// The code bytes (jitdump, when short: trampolines), for frames without a frame pointer.
    pub bytes: Option<Rc<[u8]>>,
    /// Source lines (jitdump debug info): (address, line, file), sorted by address.
    pub lines: Vec<(u64, u32, Rc<str>)>,
}

/// What a JIT name says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct JitName {
    pub function: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    /// A CPython perf trampoline (`py::`): the frame of a Python function.
    pub python: bool,
}

/// Splits a runtime's name (see the module documentation).
pub(crate) fn split_name(raw: &str) -> JitName {
    if let Some(rest) = raw.strip_prefix("py::") {
        let (func, file) = rest.split_once(':').unwrap_or((rest, ""));
        return JitName { function: func.to_string(), file: (!file.is_empty()).then(|| file.to_string()), line: None, python: true };
    }
    let v8 = ["JS:", "LazyCompile:", "Function:", "Script:"].iter().find_map(|p| raw.strip_prefix(p));
    if let Some(rest) = v8 {
        let rest = rest.strip_prefix(['*', '~', '^', '+']).unwrap_or(rest);
        let (name, loc) = match rest.rsplit_once(' ') {
            Some((n, l)) if l.contains(':') || l.starts_with('/') => (n, Some(l)),
            _ => (rest, None),
        };
        let mut out = JitName { function: if name.is_empty() { "(anonymous)".into() } else { name.to_string() }, ..JitName::default() };
        if let Some(loc) = loc {
            // FILE:LINE:COLUMN, FILE:LINE, or FILE (which may hold colons: `file:///x.js`).
            let mut file = loc;
            let mut nums = Vec::new();
            while nums.len() < 2 {
                match file.rsplit_once(':') {
                    Some((head, tail)) if !head.is_empty() && tail.parse::<u32>().is_ok() => {
                        nums.push(tail);
                        file = head;
                    }
                    _ => break,
                }
            }
            out.file = Some(file.to_string());
            out.line = nums.last().and_then(|l| l.parse().ok());
        }
        return out;
    }
    JitName { function: raw.to_string(), ..JitName::default() }
}

/// The compiled code of one process.
#[derive(Clone, Debug, Default)]
pub struct JitSymbols {
    regions: Ranges<JitCode>,
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).ok()
}

impl JitSymbols {
    /// Adds a region, replacing those it overlaps.
    pub fn insert(&mut self, c: JitCode) {
        self.regions.insert(c.start, c.end, c);
    }

    /// The region holding `addr`.
    pub fn find(&self, addr: u64) -> Option<&JitCode> {
        self.regions.find(addr)
    }

    /// Number of regions.
    pub fn len(&self) -> usize {
        self.regions.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.regions.is_empty()
    }

    /// Adds the regions of a perf map's text; lines that are not `START SIZE NAME` are
    /// skipped, and counted in the result.
    pub fn add_perf_map(&mut self, text: &[u8]) -> usize {
        let mut bad = 0;
        for line in text.split(|&c| c == b'\n') {
            let line = String::from_utf8_lossy(line);
            let line = line.trim_end_matches('\r');
            if line.is_empty() {
                continue;
            }
            let mut it = line.splitn(3, ' ');
            match (it.next().and_then(hex), it.next().and_then(hex), it.next()) {
                (Some(start), Some(size), Some(name)) if size > 0 => {
                    self.insert(JitCode { start, end: start.saturating_add(size), raw: name.into(), bytes: None, lines: Vec::new() })
                }
                _ => bad += 1,
            }
        }
        bad
    }

    /// Adds the regions of a jitdump file; an error says where it is malformed (the regions
    /// before it are kept).
    pub fn add_jitdump(&mut self, b: &[u8]) -> Result<(), String> {
        const MAGIC: u32 = 0x4A69_5444;
        let u32_at = |at: usize| b.get(at..at + 4).map(|s| u32::from_le_bytes(s.try_into().expect("4 bytes")));
        let u64_at = |at: usize| b.get(at..at + 8).map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes")));
        match u32_at(0) {
            Some(MAGIC) => {}
            Some(m) if m.swap_bytes() == MAGIC => return Err("a big-endian jitdump (not read)".into()),
            _ => return Err("not a jitdump file (bad magic)".into()),
        }
        let header = u32_at(8).ok_or("truncated header")? as usize;
        let mut at = header.max(40);
        let mut pending: BTreeMap<u64, Vec<(u64, u32, Rc<str>)>> = BTreeMap::new();
        let cstr = |at: usize, end: usize| -> Option<(String, usize)> {
            let s = b.get(at..end)?;
            let n = s.iter().position(|&c| c == 0)?;
            Some((String::from_utf8_lossy(&s[..n]).into_owned(), at + n + 1))
        };
        while at + 16 <= b.len() {
            let (Some(id), Some(size)) = (u32_at(at), u32_at(at + 4)) else { break };
            let size = size as usize;
            if size < 16 || at + size > b.len() {
                // The writer may have been killed in the middle of a record.
                return if at + size > b.len() && size >= 16 { Ok(()) } else { Err(format!("byte {at}: record of {size} bytes")) };
            }
            let end = at + size;
            let body = at + 16;
            match id {
                0 => {
                    // CODE_LOAD: pid, tid, vma, code_addr, code_size, code_index, name, code.
                    let (Some(addr), Some(len)) = (u64_at(body + 16), u64_at(body + 24)) else { return Err(format!("byte {at}: short code load")) };
                    let (name, code_at) = cstr(body + 40, end).ok_or_else(|| format!("byte {at}: code load without a name"))?;
                    let bytes = (len <= 64).then(|| b.get(code_at..code_at + len as usize)).flatten().map(Rc::from);
                    let lines = pending.remove(&addr).unwrap_or_default();
                    self.insert(JitCode { start: addr, end: addr.saturating_add(len), raw: name.into(), bytes, lines });
                }
                1 => {
                    // CODE_MOVE: pid, tid, vma, old_code_addr, new_code_addr, code_size.
                    let (Some(old), Some(new), Some(len)) = (u64_at(body + 16), u64_at(body + 24), u64_at(body + 32)) else { return Err(format!("byte {at}: short code move")) };
                    if let Some(mut c) = self.find(old).filter(|c| c.start == old).cloned() {
                        let delta = new.wrapping_sub(old);
                        c.start = new;
                        c.end = new.saturating_add(len);
                        c.lines.iter_mut().for_each(|l| l.0 = l.0.wrapping_add(delta));
                        self.regions.remove(old);
                        self.insert(c);
                    }
                }
                2 => {
                    // CODE_DEBUG_INFO: code_addr, nr_entry, then {addr, lineno, discrim, name}.
                    let (Some(addr), Some(n)) = (u64_at(body), u64_at(body + 8)) else { return Err(format!("byte {at}: short debug info")) };
                    let mut p = body + 16;
                    let mut lines: Vec<(u64, u32, Rc<str>)> = Vec::new();
                    for _ in 0..n.min(1 << 20) {
                        let (Some(a), Some(line)) = (u64_at(p), u32_at(p + 8)) else { break };
                        let Some((file, next)) = cstr(p + 16, end) else { break };
                        // V8 writes "\xff" for "the same file as before".
                        let file: Rc<str> = match lines.last() {
                            Some(l) if file == "\u{fffd}" => Rc::clone(&l.2),
                            _ => file.into(),
                        };
                        lines.push((a, line, file));
                        p = next;
                    }
                    lines.sort_by_key(|l| l.0);
                    pending.insert(addr, lines);
                }
                _ => {}
            }
            at = end;
        }
        Ok(())
    }
}

impl JitCode {
    /// The source line of `addr` from the debug info, if any.
    pub fn line_of(&self, addr: u64) -> Option<(u32, &str)> {
        let k = self.lines.partition_point(|l| l.0 <= addr);
        self.lines.get(k.checked_sub(1)?).map(|l| (l.1, &*l.2))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let n = split_name("py::Worker.run:/srv/app.py");
        assert_eq!((n.function.as_str(), n.file.as_deref(), n.python), ("Worker.run", Some("/srv/app.py"), true));
        let n = split_name("JS:*leaf /tmp/jitx/hot.js:1:14");
        assert_eq!((n.function.as_str(), n.file.as_deref(), n.line), ("leaf", Some("/tmp/jitx/hot.js"), Some(1)));
        let n = split_name("LazyCompile:~foo.bar file:///x/y.js:12");
        assert_eq!((n.function.as_str(), n.file.as_deref(), n.line), ("foo.bar", Some("file:///x/y.js"), Some(12)));
        let n = split_name("JS:~ /tmp/x.js:3:1");
        assert_eq!(n.function, "(anonymous)");
        assert_eq!(split_name("Builtin:ArrayPrototypePush").function, "Builtin:ArrayPrototypePush");
        assert_eq!(split_name("Lcom/foo/Bar;::run").function, "Lcom/foo/Bar;::run");
    }

    #[test]
    fn perf_map_later_regions_win() {
        let mut j = JitSymbols::default();
        let bad = j.add_perf_map(b"1000 100 first\n1080 100 second\nnot a line\n2000 0 empty\n3000 10 py::f:/a.py\r\n");
        assert_eq!(bad, 2);
        assert!(j.find(0x1000).is_none(), "overlapped by a later region");
        assert_eq!(&*j.find(0x1100).unwrap().raw, "second");
        assert!(j.find(0x1180).is_none());
        assert_eq!(&*j.find(0x3009).unwrap().raw, "py::f:/a.py");
        assert_eq!(j.len(), 2);
    }

    fn record(id: u32, body: &[u8]) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&id.to_le_bytes());
        r.extend_from_slice(&((16 + body.len()) as u32).to_le_bytes());
        r.extend_from_slice(&0u64.to_le_bytes());
        r.extend_from_slice(body);
        r
    }

    #[test]
    fn jitdump_loads_moves_and_lines() {
        let mut d = Vec::new();
        d.extend_from_slice(&0x4A69_5444u32.to_le_bytes());
        d.extend_from_slice(&1u32.to_le_bytes());
        d.extend_from_slice(&40u32.to_le_bytes());
        d.resize(40, 0);
        // Debug info for code at 0x5000: line 7 from 0x5000, line 9 from 0x5008.
        let mut di = Vec::new();
        di.extend_from_slice(&0x5000u64.to_le_bytes());
        di.extend_from_slice(&2u64.to_le_bytes());
        for (a, l, f) in [(0x5000u64, 7u32, &b"/x.js\0"[..]), (0x5008, 9, &b"\xff\0"[..])] {
            di.extend_from_slice(&a.to_le_bytes());
            di.extend_from_slice(&l.to_le_bytes());
            di.extend_from_slice(&0u32.to_le_bytes());
            di.extend_from_slice(f);
        }
        d.extend(record(2, &di));
        let load = |addr: u64, name: &[u8], code: &[u8]| {
            let mut b = Vec::new();
            b.extend_from_slice(&[0u8; 16]);
            b.extend_from_slice(&addr.to_le_bytes());
            b.extend_from_slice(&(code.len() as u64).to_le_bytes());
            b.extend_from_slice(&0u64.to_le_bytes());
            b.extend_from_slice(name);
            b.extend_from_slice(code);
            record(0, &b)
        };
        d.extend(load(0x5000, b"JS:*f /x.js:7:1\0", &[0x90; 16]));
        d.extend(load(0x6000, b"py::g:/y.py\0", &[0x48, 0x83, 0xec, 0x08, 0xff, 0xd1, 0x48, 0x83, 0xc4, 0x08, 0xc3]));
        // Move 0x6000 to 0x7000.
        let mut mv = vec![0u8; 16];
        for v in [0x6000u64, 0x7000, 11, 0] {
            mv.extend_from_slice(&v.to_le_bytes());
        }
        d.extend(record(1, &mv));
        // A record cut short at the end (the writer was killed) is not an error.
        d.extend(&record(0, &[0u8; 40])[..30]);
        let mut j = JitSymbols::default();
        j.add_jitdump(&d).unwrap();
        let f = j.find(0x500a).unwrap();
        assert_eq!(&*f.raw, "JS:*f /x.js:7:1");
        assert_eq!(f.line_of(0x5004), Some((7, "/x.js")));
        assert_eq!(f.line_of(0x500a), Some((9, "/x.js")));
        assert!(j.find(0x6000).is_none());
        let g = j.find(0x7005).unwrap();
        assert_eq!(g.bytes.as_deref().map(|b| b.len()), Some(11));
        assert!(JitSymbols::default().add_jitdump(b"nope").is_err());
        let mut bad = d[..40].to_vec();
        bad.extend(record(0, &[0u8; 4]));
        assert!(j.add_jitdump(&bad).is_err());
    }
}
