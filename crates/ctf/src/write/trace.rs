//! [`TraceWriter`]: a trace directory's `metadata`, and the [`StreamWriter`]s of its data
//! streams, all laid out from the trace class as readers will parse it back.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::plan::WritePlan;
use super::stream::{StreamOptions, StreamWriter};
use crate::ir::TraceClass;
use crate::{Error, Result};

/// Writes a trace directory: its `metadata` (TSDL from the [`TraceClass`]), and data streams
/// through the [`StreamWriter`]s it hands out.
#[derive(Debug)]
pub struct TraceWriter {
    dir: PathBuf,
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
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|source| Error::Io { path: dir.clone(), source })?;
        let meta = dir.join("metadata");
        let (text, parsed) = tsdl_of(class, &meta)?;
        std::fs::write(&meta, text).map_err(|source| Error::Io { path: meta.clone(), source })?;
        Ok(TraceWriter { dir, class: parsed, plans: Vec::new(), next_instance: 0 })
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
        let (text, parsed) = tsdl_of(class, &meta)?;
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


/// The TSDL text of `class` and the class readers parse back from it (`meta` labels errors).
fn tsdl_of(class: &TraceClass, meta: &Path) -> Result<(String, TraceClass)> {
    let text = super::to_tsdl(class);
    let parsed = crate::tsdl::parse(&text).map_err(|e| Error::Write {
        path: meta.to_path_buf(),
        message: format!("the TSDL written for this trace class does not parse back: {e}"),
    })?;
    Ok((text, parsed))
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
