//! Opening one CTF trace directory: its metadata, its stream files (memory-mapped), their
//! packet indexes, and stream instances grouped across rotated tracefiles.

use std::path::{Path, PathBuf};

use crate::ir::TraceClass;
use crate::metadata::{unpacketize, MetadataText};
use crate::mmap::MappedFile;
use crate::packet::{first_uuid, packets_uuid, read_idx, read_packet, walk, PacketEntry};
use crate::plan::StreamPlan;
use crate::stream::{Cursor, DataStream, StreamFile};
use crate::{Error, Result};

/// One open CTF trace.
#[derive(Debug)]
pub struct Trace {
    /// The trace directory.
    pub dir: PathBuf,
    /// The metadata.
    pub class: TraceClass,
    /// The metadata text.
    pub metadata: MetadataText,
    /// One compiled plan per stream class, in `class.streams` order.
    pub plans: Vec<StreamPlan>,
    /// Stream instances.
    pub streams: Vec<DataStream>,
}

impl Trace {
    /// Opens the trace in `dir` (a directory holding a `metadata` file).
    pub fn open(dir: impl AsRef<Path>) -> Result<Trace> {
        let dir = dir.as_ref().to_path_buf();
        let meta_path = dir.join("metadata");
        let meta_bytes = std::fs::read(&meta_path).map_err(|source| Error::Io { path: meta_path.clone(), source })?;

        let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(|source| Error::Io { path: dir.clone(), source })?
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false))
            .map(|e| e.path())
            .filter(|p| {
                let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                n != "metadata" && !n.starts_with('.') && !n.ends_with(".idx")
            })
            .collect();
        names.sort();

        let mut files = Vec::with_capacity(names.len());
        for path in names {
            let map = MappedFile::open(&path)?;
            files.push(StreamFile { path, map });
        }
        Trace::build(dir, &meta_bytes, files)
    }

    /// Builds a trace from metadata bytes and stream contents already in memory (for tests,
    /// fuzzing and generated traces). `streams` are (name, bytes) pairs; names only label errors.
    pub fn from_memory(metadata: &[u8], streams: Vec<(PathBuf, Vec<u8>)>) -> Result<Trace> {
        let files = streams.into_iter().map(|(path, bytes)| StreamFile { path, map: MappedFile::from_vec(bytes) }).collect();
        Trace::build(PathBuf::new(), metadata, files)
    }

    fn build(dir: PathBuf, meta_bytes: &[u8], stream_files: Vec<StreamFile>) -> Result<Trace> {
        let meta_path = dir.join("metadata");
        let metadata = unpacketize(meta_bytes).map_err(|e| with_path(e, &meta_path))?;
        let mut class = metadata.parse().map_err(|e| with_path(e, &meta_path))?;
        if class.clocks.is_empty() {
            // Like babeltrace2: timestamps that name no clock count nanoseconds of an implicit
            // 1 GHz clock (it is only used when such fields exist).
            class.clocks.push(crate::ir::ClockClass { name: "default".into(), ..Default::default() });
        }
        let plans: Vec<StreamPlan> = class.streams.iter().map(|s| StreamPlan::compile(&class, s)).collect();
        let uuid = packets_uuid(class.uuid, stream_files.iter().map(|f| first_uuid(f.bytes(), &plans)));
        // Index every file, then group files of one stream instance.
        let mut files: Vec<(StreamFile, Vec<PacketEntry>, usize)> = Vec::new();
        for file in stream_files {
            let path = file.path.clone();
            file.map.sequential();
            let data = file.bytes();
            if data.is_empty() {
                continue;
            }
            let idx_path = dir.join("index").join(format!("{}.idx", path.file_name().and_then(|n| n.to_str()).unwrap_or("")));
            let (packets, plan) = match read_idx(&idx_path, data.len() as u64).and_then(|idx| from_idx(&idx, data, &plans, uuid)) {
                Some(v) => v,
                None => {
                    let (packets, plan) = walk(data, &plans, uuid, &mut |a, b| file.map.release(a, b)).map_err(|e| Error::Stream {
                        path: path.clone(),
                        packet: e.packet,
                        offset: e.offset,
                        message: e.message,
                    })?;
                    match plan {
                        Some(p) => (packets, p),
                        None => continue,
                    }
                }
            };
            files.push((file, packets, plan));
        }
        let streams = group(files, &plans, uuid);
        Ok(Trace { dir, class, metadata, plans, streams })
    }

    /// A cursor over the events of stream `i`.
    pub fn cursor(&self, i: usize) -> Cursor<'_> {
        Cursor::new(&self.class, &self.plans, &self.streams[i])
    }

    /// The trace's name as babeltrace2 shows it (the `trace_name` env entry, else empty).
    pub fn hostname(&self) -> Option<&str> {
        match self.class.env("hostname") {
            Some(crate::ir::EnvValue::Str(s)) => Some(s),
            _ => None,
        }
    }
}

fn with_path(e: Error, path: &Path) -> Error {
    match e {
        Error::Metadata { line, column, message } => Error::Trace {
            path: path.to_path_buf(),
            message: format!("line {line}, column {column}: {message}"),
        },
        Error::MetadataPacket { offset, message } => Error::Trace {
            path: path.to_path_buf(),
            message: format!("byte {offset}: {message}"),
        },
        other => other,
    }
}

/// Builds packet entries from a valid LTTng index; checks the first packet's header agrees.
fn from_idx(idx: &[crate::packet::IdxEntry], data: &[u8], plans: &[StreamPlan], uuid: Option<[u8; 16]>) -> Option<(Vec<PacketEntry>, usize)> {
    let first = idx.first()?;
    let mut fields = Vec::new();
    let mut dec = None;
    let (probe, plan) = read_packet(data, first.offset, 0, plans, uuid, &mut fields, &mut dec).ok()?;
    if probe.size * 8 != first.packet_size || probe.content_bits != first.content_size {
        return None;
    }
    let sid = plans[plan].stream_class_id;
    let out = idx
        .iter()
        .map(|e| PacketEntry {
            file: 0,
            offset: e.offset,
            size: e.packet_size / 8,
            content_bits: e.content_size,
            events_bits: 0,
            stream_class_id: sid,
            stream_instance_id: e.stream_instance_id.filter(|_| probe.stream_instance_id.is_some()).or(probe.stream_instance_id),
            begin: probe.begin.map(|_| e.begin),
            end: probe.end.map(|_| e.end),
            events_discarded: probe.events_discarded.map(|_| e.events_discarded),
            seq_num: e.seq_num.filter(|_| probe.seq_num.is_some()),
        })
        .collect();
    Some((out, plan))
}

/// Groups files of one stream instance (same stream class and instance id) into one stream,
/// files ordered by their first packet's begin time.
fn group(files: Vec<(StreamFile, Vec<PacketEntry>, usize)>, plans: &[StreamPlan], uuid: Option<[u8; 16]>) -> Vec<DataStream> {
    let mut streams: Vec<DataStream> = Vec::new();
    let mut sorted: Vec<_> = files.into_iter().collect();
    sorted.sort_by_key(|(_, p, _)| p.first().and_then(|e| e.begin).unwrap_or(0));
    for (file, mut packets, plan) in sorted {
        let sid = plans[plan].stream_class_id;
        let instance = packets.first().and_then(|p| p.stream_instance_id);
        let existing = instance.and_then(|inst| {
            streams.iter_mut().find(|s| s.plan == plan && s.instance_id == Some(inst))
        });
        match existing {
            Some(s) => {
                let fi = s.files.len() as u32;
                for p in &mut packets {
                    p.file = fi;
                }
                s.files.push(file);
                s.packets.extend(packets);
            }
            None => streams.push(DataStream { files: vec![file], packets, plan, stream_class_id: sid, instance_id: instance, uuid }),
        }
    }
    streams.sort_by(|a, b| a.path().cmp(b.path()));
    streams
}
