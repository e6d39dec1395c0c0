//! [`TraceWriter`]: a trace directory's `metadata`, and the [`StreamWriter`]s of its data
//! streams, all laid out from the trace class as readers will parse it back.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::plan::WritePlan;
use super::stream::{StreamOptions, StreamWriter};
use crate::ir::{FieldType, TraceClass};
use crate::{Error, Result};

/// Which CTF version a [`TraceWriter`] writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Version {
    /// CTF 1.8: TSDL metadata (what babeltrace2 2.0 reads). The default.
    #[default]
    Ctf1,
    /// CTF 2: JSON fragment metadata (CTF2-SPEC-2.0), the same data streams.
    Ctf2,
}

/// Writes a trace directory: its `metadata` (TSDL, or CTF 2 JSON, from the [`TraceClass`]),
/// and data streams through the [`StreamWriter`]s it hands out.
#[derive(Debug)]
pub struct TraceWriter {
    dir: PathBuf,
    version: Version,
    class: TraceClass,
    plans: Vec<(u64, Arc<WritePlan>)>,
    next_instance: u64,
}

impl TraceWriter {
    /// Creates `dir` (and parents) and writes `dir/metadata` from `class`.
    ///
    /// The metadata text is parsed back, and streams are laid out from what was parsed, so
    /// that the data always agrees with what readers will parse; a class that does not
    /// survive the trip is an error.
    pub fn create(dir: impl AsRef<Path>, class: &TraceClass) -> Result<TraceWriter> {
        TraceWriter::create_version(dir, class, Version::Ctf1)
    }

    /// [`TraceWriter::create`] writing the metadata of CTF `version`: for CTF 2, JSON
    /// fragments (a class made for CTF 1.8 gets explicit roles and locations, see
    /// `write::to_ctf2`); the data streams are the same bytes either way.
    pub fn create_version(dir: impl AsRef<Path>, class: &TraceClass, version: Version) -> Result<TraceWriter> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|source| Error::Io { path: dir.clone(), source })?;
        let meta = dir.join("metadata");
        let (text, parsed) = metadata_of(class, &meta, version)?;
        std::fs::write(&meta, text).map_err(|source| Error::Io { path: meta.clone(), source })?;
        Ok(TraceWriter { dir, version, class: parsed, plans: Vec::new(), next_instance: 0 })
    }

    /// The CTF version written.
    pub fn version(&self) -> Version {
        self.version
    }

    /// The trace directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The trace class as readers will parse it from the `metadata` written.
    pub fn class(&self) -> &TraceClass {
        &self.class
    }

    /// Rewrites `metadata` for `class`, the current class with event classes added (and the
    /// environment possibly changed): streams opened from now on use it, and open
    /// [`StreamWriter`]s follow with [`StreamWriter::set_class`]. The file is replaced
    /// atomically (written beside, then renamed), so a reader never sees half of it.
    pub fn set_class(&mut self, class: &TraceClass) -> Result<()> {
        let meta = self.dir.join("metadata");
        let (text, parsed) = metadata_of(class, &meta, self.version)?;
        if let Some(why) = growth_error(&self.class, &parsed) {
            return Err(Error::Write { path: meta, message: format!("the new trace class does not only add event classes: {why}") });
        }
        let tmp = self.dir.join(".metadata.tmp");
        std::fs::write(&tmp, text).map_err(|source| Error::Io { path: tmp.clone(), source })?;
        std::fs::rename(&tmp, &meta).map_err(|source| Error::Io { path: meta.clone(), source })?;
        self.class = parsed;
        self.plans.clear();
        Ok(())
    }

    /// Opens the stream file `dir/name` (and its index `dir/index/name.idx`) for a stream of
    /// class `stream_class_id`, with default [`StreamOptions`].
    pub fn stream(&mut self, stream_class_id: u64, name: &str) -> Result<StreamWriter<BufWriter<File>>> {
        self.stream_with(stream_class_id, name, &StreamOptions::default())
    }

    /// Opens the stream file `dir/name` for a stream of class `stream_class_id`, with
    /// `options`.
    pub fn stream_with(&mut self, stream_class_id: u64, name: &str, options: &StreamOptions) -> Result<StreamWriter<BufWriter<File>>> {
        let path = self.dir.join(name);
        if name.is_empty() || name == "metadata" || name.contains('/') || name.starts_with('.') || name.ends_with(".idx") {
            return Err(Error::Write { path, message: format!("`{name}` cannot name a stream file (readers would skip or misread it)") });
        }
        let plan = match self.plans.iter().find(|(id, _)| *id == stream_class_id) {
            Some((_, p)) => Arc::clone(p),
            None => {
                let p = Arc::new(WritePlan::compile(&self.class, stream_class_id).map_err(|message| Error::Write { path: path.clone(), message })?);
                self.plans.push((stream_class_id, Arc::clone(&p)));
                p
            }
        };
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |source| Error::Io { path: p, source }
        };
        let out = BufWriter::with_capacity(1 << 16, File::create(&path).map_err(io(&path))?);
        let index = if options.index {
            let idx_dir = self.dir.join("index");
            std::fs::create_dir_all(&idx_dir).map_err(io(&idx_dir))?;
            let idx_path = idx_dir.join(format!("{name}.idx"));
            Some(BufWriter::new(File::create(&idx_path).map_err(io(&idx_path))?))
        } else {
            None
        };
        let mut opts = options.clone();
        if opts.instance_id.is_none() {
            opts.instance_id = Some(self.next_instance);
            self.next_instance += 1;
        }
        StreamWriter::with_plan(plan, path, out, index, &opts)
    }
}


/// The metadata text of `class` in `version` and the class readers parse back from it
/// (`meta` labels errors).
fn metadata_of(class: &TraceClass, meta: &Path, version: Version) -> Result<(String, TraceClass)> {
    let fail = |message: String| Error::Write { path: meta.to_path_buf(), message };
    match version {
        Version::Ctf1 => {
            if let Some(why) = ctf2_only(class) {
                return Err(fail(format!("this trace class needs CTF 2: {why}")));
            }
            let text = super::to_tsdl(class);
            let parsed = crate::tsdl::parse(&text).map_err(|e| fail(format!("the TSDL written for this trace class does not parse back: {e}")))?;
            Ok((text, parsed))
        }
        Version::Ctf2 => {
            let text = super::to_ctf2(class).map_err(|why| fail(format!("this trace class cannot be written as CTF 2: {why}")))?;
            let parsed = crate::ctf2::parse(&text).map_err(|e| fail(format!("the CTF 2 metadata written for this trace class does not parse back: {e}")))?;
            Ok((text, parsed))
        }
    }
}

/// What in `class` only CTF 2 can say, if anything.
fn ctf2_only(class: &TraceClass) -> Option<String> {
    use crate::ir::{Encoding, FieldPath};
    fn walk(t: &FieldType, depth: usize) -> Option<String> {
        if depth > 256 {
            return None;
        }
        let int = |i: &crate::ir::IntType| -> Option<String> {
            if i.varlen {
                Some("a variable-length integer".into())
            } else if i.reversed {
                Some("a bit order opposite to the byte order's".into())
            } else {
                None
            }
        };
        match t {
            FieldType::Int(i) => int(i),
            FieldType::Enum(e) => int(&e.container),
            FieldType::Bool(_) => Some("a boolean".into()),
            FieldType::BitMap(_) => Some("a bit map".into()),
            FieldType::Blob(_) => Some("a BLOB".into()),
            FieldType::Optional(_) => Some("an optional field".into()),
            FieldType::String(e) if e.unit() > 1 => Some(format!("a {e:?} string")),
            FieldType::String(_) | FieldType::Float(_) => None,
            FieldType::Struct(s) => s.fields.iter().find_map(|f| walk(&f.ty, depth + 1)),
            FieldType::Variant(v) if v.ranges.is_some() => Some("a variant with selector ranges".into()),
            FieldType::Variant(v) if matches!(v.tag, FieldPath::Local(_)) => Some("a relative field location".into()),
            FieldType::Variant(v) => v.options.iter().find_map(|f| walk(&f.ty, depth + 1)),
            FieldType::Array(a) if matches!(&*a.element, FieldType::Int(i) if i.encoding != Encoding::None && i.encoding.unit() > 1) => Some("a UTF-16 or UTF-32 string".into()),
            FieldType::Array(a) => walk(&a.element, depth + 1),
            FieldType::Sequence(q) if matches!(q.length, FieldPath::Local(_)) => Some("a relative field location".into()),
            FieldType::Sequence(q) => walk(&q.element, depth + 1),
        }
    }
    let mut roots: Vec<&FieldType> = class.packet_header.as_deref().into_iter().collect();
    for s in &class.streams {
        roots.extend(s.packet_context.as_deref());
        roots.extend(s.event_header.as_deref());
        roots.extend(s.event_context.as_deref());
        for e in &s.events {
            roots.extend(e.context.as_deref());
            roots.extend(e.payload.as_deref());
        }
    }
    roots.into_iter().find_map(|t| walk(t, 0))
}

/// Why `new` is not `old` with event classes added (and its environment possibly changed).
fn growth_error(old: &TraceClass, new: &TraceClass) -> Option<String> {
    if (old.major, old.minor, old.uuid, old.byte_order) != (new.major, new.minor, new.uuid, new.byte_order)
        || old.packet_header != new.packet_header
        || old.clocks != new.clocks
    {
        return Some("the trace block, packet header or clocks differ".into());
    }
    if old.streams.len() != new.streams.len() {
        return Some("the stream classes differ".into());
    }
    for (a, b) in old.streams.iter().zip(&new.streams) {
        if (a.id, &a.packet_context, &a.event_header, &a.event_context) != (b.id, &b.packet_context, &b.event_header, &b.event_context) {
            return Some(format!("stream class {} changes", a.id));
        }
        if let Some(e) = a.events.iter().find(|e| !b.events.contains(e)) {
            return Some(format!("event class {} (`{}`) of stream class {} changes or goes", e.id, e.name, a.id));
        }
    }
    None
}
