//! tracefs event `format` files and `events/header_page`: where each field of an event
//! record lies, and how a ring-buffer page is laid out.
//!
//! ```text
//! name: sched_switch
//! ID: 372
//! format:
//!     field:unsigned short common_type;    offset:0;    size:2;    signed:0;
//!     ...
//!     field:char prev_comm[16];    offset:8;    size:16;    signed:0;
//!     field:__data_loc char[] name;    offset:12;    size:4;    signed:0;
//! print fmt: ...
//! ```

use std::path::Path;

use crate::error::{Error, Result};

/// How a field's bytes are laid out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldKind {
    /// An integer of `size` bytes (1, 2, 4 or 8).
    Int,
    /// A fixed array: `char comm[16]` (text when the element is `char`).
    Array {
        /// Number of elements.
        len: usize,
        /// Whether the elements are `char`s (a NUL-padded string).
        text: bool,
    },
    /// `__data_loc TYPE[] name`: a u32 whose low 16 bits are the data's offset from the start
    /// of the record and high 16 bits its length in bytes.
    DataLoc {
        /// Whether the elements are `char`s (a NUL-terminated string).
        text: bool,
    },
    /// `__rel_loc TYPE[] name`: like `__data_loc`, the offset counted from the end of the
    /// field.
    RelLoc {
        /// Whether the elements are `char`s.
        text: bool,
    },
    /// Anything else (a struct copied by value, a size we do not decode).
    Other,
}

/// One field of an event record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// The field's name.
    pub name: String,
    /// Its C type as the format file gives it, without the name (`const char *`,
    /// `unsigned int`, `char[16]` for arrays).
    pub ctype: String,
    /// Byte offset in the record (the record starts with the common fields).
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
    /// Whether the format file says signed.
    pub signed: bool,
    /// How its bytes are laid out.
    pub kind: FieldKind,
}

impl Field {
    /// The field's bytes in `record`, or None when the record is too short.
    pub fn raw<'r>(&self, record: &'r [u8]) -> Option<&'r [u8]> {
        record.get(self.offset..self.offset + self.size)
    }

    /// The field read as an integer (sign-extended when signed), or 0 when the record is too
    /// short or the field is not a plain integer of 1, 2, 4 or 8 bytes.
    pub fn int(&self, record: &[u8]) -> i64 {
        let Some(b) = self.raw(record) else { return 0 };
        match (b.len(), self.signed) {
            (1, true) => b[0] as i8 as i64,
            (1, false) => b[0] as i64,
            (2, true) => i16::from_ne_bytes([b[0], b[1]]) as i64,
            (2, false) => u16::from_ne_bytes([b[0], b[1]]) as i64,
            (4, true) => i32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as i64,
            (4, false) => u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as i64,
            (8, _) => i64::from_ne_bytes(b.try_into().expect("8 bytes")),
            _ => 0,
        }
    }

    /// The field read as an unsigned integer (zero-extended from its size).
    pub fn uint(&self, record: &[u8]) -> u64 {
        let v = self.int(record) as u64;
        match self.size {
            1 => v & 0xff,
            2 => v & 0xffff,
            4 => v & 0xffff_ffff,
            _ => v,
        }
    }

    /// The field's data: a fixed array's bytes, or what a `__data_loc`/`__rel_loc` points to.
    /// Text is cut at its first NUL. Empty when the record is too short.
    pub fn bytes<'r>(&self, record: &'r [u8]) -> &'r [u8] {
        let (data, text) = match self.kind {
            FieldKind::Array { text, .. } => (self.raw(record).unwrap_or(&[]), text),
            FieldKind::DataLoc { text } | FieldKind::RelLoc { text } => {
                let loc = self.uint(record) as u32;
                let (off, len) = ((loc & 0xffff) as usize, (loc >> 16) as usize);
                let start = if matches!(self.kind, FieldKind::RelLoc { .. }) { self.offset + self.size + off } else { off };
                (record.get(start..start + len).unwrap_or(&[]), text)
            }
            _ => (self.raw(record).unwrap_or(&[]), false),
        };
        if text {
            match data.iter().position(|&c| c == 0) {
                Some(n) => &data[..n],
                None => data,
            }
        } else {
            data
        }
    }

    /// Whether the field holds text (a `char` array or a `char[]` location).
    pub fn is_text(&self) -> bool {
        matches!(self.kind, FieldKind::Array { text: true, .. } | FieldKind::DataLoc { text: true } | FieldKind::RelLoc { text: true })
    }
}

/// An event's format: its id (the records' `common_type`) and fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventFormat {
    /// The subsystem (`sched`), from the directory the file is in.
    pub system: String,
    /// The event's name (`sched_switch`).
    pub name: String,
    /// Its id, as found in `common_type`.
    pub id: u16,
    /// The common fields (`common_type`, `common_flags`, `common_preempt_count`,
    /// `common_pid`).
    pub common: Vec<Field>,
    /// The event's own fields, in order.
    pub fields: Vec<Field>,
}

impl EventFormat {
    /// Parses the text of `events/SYSTEM/EVENT/format`. `path` labels errors.
    pub fn parse(system: &str, text: &str, path: &Path) -> Result<EventFormat> {
        let err = |line: usize, message: String| Error::Format { path: path.to_path_buf(), message: format!("line {}: {message}", line + 1) };
        let mut name = None;
        let mut id = None;
        let mut common = Vec::new();
        let mut fields = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let t = line.trim();
            if let Some(v) = t.strip_prefix("name:") {
                name = Some(v.trim().to_string());
            } else if let Some(v) = t.strip_prefix("ID:") {
                id = Some(v.trim().parse::<u16>().map_err(|_| err(n, format!("bad ID `{}`", v.trim())))?);
            } else if t.starts_with("field:") {
                let f = parse_field(t).map_err(|m| err(n, m))?;
                if f.name.starts_with("common_") {
                    common.push(f);
                } else {
                    fields.push(f);
                }
            } else if t.starts_with("print fmt:") {
                break;
            }
        }
        let name = name.ok_or_else(|| err(0, "no `name:` line".into()))?;
        let id = id.ok_or_else(|| err(0, "no `ID:` line".into()))?;
        Ok(EventFormat { system: system.to_string(), name, id, common, fields })
    }

    /// Reads and parses `events/SYSTEM/EVENT/format` under `events_dir`.
    pub fn read(events_dir: &Path, system: &str, event: &str) -> Result<EventFormat> {
        let path = events_dir.join(system).join(event).join("format");
        let text = crate::tracefs::read_file(&path)?;
        EventFormat::parse(system, &text, &path)
    }

    /// The field named `name` (own fields first, then common ones).
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().chain(&self.common).find(|f| f.name == name)
    }

    /// Index of the own field named `name`.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }
}

/// Parses `field:DECL;\toffset:N;\tsize:N;\tsigned:N;`.
fn parse_field(line: &str) -> std::result::Result<Field, String> {
    let mut decl = None;
    let mut offset = None;
    let mut size = None;
    let mut signed = false;
    for part in line.split(';') {
        let part = part.trim();
        if let Some(d) = part.strip_prefix("field:") {
            decl = Some(d.trim());
        } else if let Some(v) = part.strip_prefix("offset:") {
            offset = v.trim().parse::<usize>().ok();
        } else if let Some(v) = part.strip_prefix("size:") {
            size = v.trim().parse::<usize>().ok();
        } else if let Some(v) = part.strip_prefix("signed:") {
            signed = v.trim() == "1";
        }
    }
    let decl = decl.ok_or("no field declaration")?;
    let offset = offset.ok_or_else(|| format!("field `{decl}` has no offset"))?;
    let size = size.ok_or_else(|| format!("field `{decl}` has no size"))?;
    // Split `TYPE NAME[LEN]` at the name: the last identifier before an optional `[...]`.
    // (`__data_loc char[] name` has its brackets before the name, an array after it.)
    let (head, array) = match decl.rfind('[') {
        Some(i) if decl.ends_with(']') => (decl[..i].trim_end(), Some(&decl[i + 1..decl.len() - 1])),
        _ => (decl, None),
    };
    let name_start = head.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map(|i| i + 1).unwrap_or(0);
    let name = head[name_start..].to_string();
    if name.is_empty() {
        return Err(format!("no field name in `{decl}`"));
    }
    let ty = head[..name_start].trim().to_string();
    let kind = if let Some(rest) = ty.strip_prefix("__data_loc ") {
        FieldKind::DataLoc { text: rest.trim_end_matches("[]").trim() == "char" }
    } else if let Some(rest) = ty.strip_prefix("__rel_loc ") {
        FieldKind::RelLoc { text: rest.trim_end_matches("[]").trim() == "char" }
    } else if let Some(len) = array {
        let len: usize = len.trim().parse().unwrap_or(0);
        FieldKind::Array { len, text: ty == "char" || ty == "const char" }
    } else if matches!(size, 1 | 2 | 4 | 8) {
        FieldKind::Int
    } else {
        FieldKind::Other
    };
    let ctype = match array {
        Some(len) => format!("{ty}[{len}]"),
        None => ty,
    };
    Ok(Field { name, ctype, offset, size, signed, kind })
}

/// The ring-buffer page layout from `events/header_page`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageLayout {
    /// Offset of the page's u64 timestamp.
    pub timestamp_offset: usize,
    /// Offset of the `commit` word (data length plus missed-events flags).
    pub commit_offset: usize,
    /// Size of the `commit` word (8 on 64-bit kernels).
    pub commit_size: usize,
    /// Offset of the event data.
    pub data_offset: usize,
    /// The sub-buffer (page) size: data offset plus data size.
    pub page_size: usize,
}

impl Default for PageLayout {
    /// The x86_64 layout with 4 KiB pages.
    fn default() -> PageLayout {
        PageLayout { timestamp_offset: 0, commit_offset: 8, commit_size: 8, data_offset: 16, page_size: 4096 }
    }
}

impl PageLayout {
    /// Parses the text of `events/header_page`. `path` labels errors.
    pub fn parse(text: &str, path: &Path) -> Result<PageLayout> {
        let mut l = PageLayout::default();
        let mut data = None;
        for line in text.lines() {
            let t = line.trim();
            if !t.starts_with("field:") {
                continue;
            }
            let f = parse_field(t).map_err(|m| Error::Format { path: path.to_path_buf(), message: m })?;
            match f.name.as_str() {
                "timestamp" => l.timestamp_offset = f.offset,
                "commit" => {
                    l.commit_offset = f.offset;
                    l.commit_size = f.size;
                }
                "data" => data = Some((f.offset, f.size)),
                _ => {}
            }
        }
        let (off, size) = data.ok_or_else(|| Error::Format { path: path.to_path_buf(), message: "no `data` field".into() })?;
        if !matches!(l.commit_size, 4 | 8) || off < l.commit_offset + l.commit_size {
            return Err(Error::Format { path: path.to_path_buf(), message: format!("unexpected page header layout {l:?}") });
        }
        l.data_offset = off;
        l.page_size = off + size;
        Ok(l)
    }

    /// The layout for sub-buffers of `page_size` bytes (`buffer_subbuf_size_kb`), keeping
    /// the header offsets.
    pub fn with_page_size(mut self, page_size: usize) -> PageLayout {
        self.page_size = page_size;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWITCH: &str = "name: sched_switch
ID: 372
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;
\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;

print fmt: \"prev_comm=%s prev_pid=%d\", REC->prev_comm, REC->prev_pid
";

    #[test]
    fn parses_sched_switch() {
        let f = EventFormat::parse("sched", SWITCH, Path::new("x")).unwrap();
        assert_eq!(f.name, "sched_switch");
        assert_eq!(f.id, 372);
        assert_eq!(f.common.len(), 4);
        assert_eq!(f.fields.len(), 7);
        let c = &f.fields[0];
        assert_eq!((c.name.as_str(), c.ctype.as_str(), c.offset, c.size), ("prev_comm", "char[16]", 8, 16));
        assert_eq!(c.kind, FieldKind::Array { len: 16, text: true });
        let s = f.field("prev_state").unwrap();
        assert_eq!((s.ctype.as_str(), s.signed, &s.kind), ("long", true, &FieldKind::Int));
        assert_eq!(f.field("common_pid").unwrap().offset, 4);

        let mut rec = vec![0u8; 64];
        rec[8..12].copy_from_slice(b"bash");
        rec[24..28].copy_from_slice(&(-5i32).to_ne_bytes());
        assert_eq!(f.field("prev_comm").unwrap().bytes(&rec), b"bash");
        assert_eq!(f.field("prev_pid").unwrap().int(&rec), -5);
        assert_eq!(f.field("prev_pid").unwrap().uint(&rec), 0xffff_fffb);
        // A short record reads as zero/empty instead of panicking.
        assert_eq!(f.field("next_prio").unwrap().int(&rec[..10]), 0);
    }

    #[test]
    fn parses_pointers_data_loc_and_arrays() {
        let cases = [
            ("field:const char * filename;\toffset:24;\tsize:8;\tsigned:0;", "filename", "const char *", FieldKind::Int),
            ("field:const char *const * argv;\toffset:24;\tsize:8;\tsigned:0;", "argv", "const char *const *", FieldKind::Int),
            ("field:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;", "name", "__data_loc char[]", FieldKind::DataLoc { text: true }),
            ("field:__rel_loc char[] s;\toffset:12;\tsize:4;\tsigned:0;", "s", "__rel_loc char[]", FieldKind::RelLoc { text: true }),
            ("field:__data_loc u32[] ids;\toffset:12;\tsize:4;\tsigned:0;", "ids", "__data_loc u32[]", FieldKind::DataLoc { text: false }),
            ("field:unsigned long caller[8];\toffset:8;\tsize:64;\tsigned:0;", "caller", "unsigned long[8]", FieldKind::Array { len: 8, text: false }),
            ("field:struct foo bar;\toffset:8;\tsize:24;\tsigned:0;", "bar", "struct foo", FieldKind::Other),
            ("field:enum hrtimer_mode mode;\toffset:40;\tsize:4;\tsigned:0;", "mode", "enum hrtimer_mode", FieldKind::Int),
        ];
        for (line, name, ctype, kind) in cases {
            let f = parse_field(line).unwrap();
            assert_eq!((f.name.as_str(), f.ctype.as_str(), &f.kind), (name, ctype, &kind), "{line}");
        }
    }

    #[test]
    fn data_loc_strings() {
        let f = parse_field("field:__data_loc char[] name;\toffset:8;\tsize:4;\tsigned:0;").unwrap();
        let mut rec = vec![0u8; 24];
        let loc: u32 = (6 << 16) | 12;
        rec[8..12].copy_from_slice(&loc.to_ne_bytes());
        rec[12..18].copy_from_slice(b"eth0\0\0");
        assert_eq!(f.bytes(&rec), b"eth0");
        let r = parse_field("field:__rel_loc char[] name;\toffset:8;\tsize:4;\tsigned:0;").unwrap();
        let loc: u32 = (4 << 16) | 2;
        rec[8..12].copy_from_slice(&loc.to_ne_bytes());
        rec[14..18].copy_from_slice(b"lo\0\0");
        assert_eq!(r.bytes(&rec), b"lo");
        // Out of range: empty, no panic.
        rec[8..12].copy_from_slice(&((100u32 << 16) | 200).to_ne_bytes());
        assert_eq!(f.bytes(&rec), b"");
    }

    #[test]
    fn header_page() {
        let text = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;
";
        let l = PageLayout::parse(text, Path::new("header_page")).unwrap();
        assert_eq!(l, PageLayout::default());
        let text32 = text.replace("offset:8;\tsize:8", "offset:8;\tsize:4").replace("offset:16;\tsize:4080", "offset:12;\tsize:4084");
        let l = PageLayout::parse(&text32, Path::new("header_page")).unwrap();
        assert_eq!((l.commit_size, l.data_offset, l.page_size), (4, 12, 4096));
    }
}
