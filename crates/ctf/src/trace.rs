//! Opening one CTF trace directory: its metadata, its stream files (memory-mapped), their
//! packet indexes, and stream instances grouped across rotated tracefiles.

use std::path::{Path, PathBuf};

use crate::ir::TraceClass;
use crate::metadata::{unpacketize, MetadataText};
use crate::mmap::{file_kind, MappedFile};
use crate::packet::{first_uuid, packets_uuid, read_idx, read_packet, walk, IdxProblem, PacketEntry};
use crate::plan::StreamPlan;
use crate::stream::{Cursor, DataStream, StreamFile};
use crate::warning::{IndexRepairs, Warning};
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
    /// What opening it found (files not read, streams shorter than their index).
    opened: Vec<Warning>,
}

impl Trace {
    /// Opens the trace in `dir` (a directory holding a `metadata` file).
    ///
    /// Every other entry of `dir` is a stream file, except hidden ones, `*.idx` files and the
    /// `index/` directory; symbolic links are followed. An entry that is not a regular file
    /// (a directory, a FIFO, a device, a link to one, a broken link) is not read, and a
    /// [`Warning`] says so ([`Trace::warnings`]).
    pub fn open(dir: impl AsRef<Path>) -> Result<Trace> {
        let dir = dir.as_ref().to_path_buf();
        let meta_path = dir.join("metadata");
        let meta_bytes = MappedFile::open(&meta_path)?.bytes().to_vec();

        let mut opened = Vec::new();
        let mut names: Vec<PathBuf> = Vec::new();
        for e in std::fs::read_dir(&dir).map_err(|source| Error::Io { path: dir.clone(), source })? {
            let e = e.map_err(|source| Error::Io { path: dir.clone(), source })?;
            let path = e.path();
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name == "metadata" || name.starts_with('.') || name.ends_with(".idx") {
                continue;
            }
            // Follows links: a link to a stream file is one.
            match std::fs::metadata(&path) {
                Ok(m) if m.is_file() => names.push(path),
                Ok(m) if m.is_dir() && name == "index" => {}
                Ok(m) => opened.push(Warning::SkippedFile { path, reason: format!("not a regular file ({})", file_kind(m.file_type())) }),
                Err(err) => opened.push(Warning::SkippedFile { path, reason: format!("cannot be examined: {err}") }),
            }
        }
        names.sort();

        let mut files = Vec::with_capacity(names.len());
        for path in names {
            let map = MappedFile::open(&path)?;
            files.push(StreamFile { path, map });
        }
        let mut trace = Trace::build(dir, &meta_bytes, files)?;
        opened.append(&mut trace.opened);
        trace.opened = opened;
        Ok(trace)
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
        if class.streams.is_empty() && !stream_files.is_empty() {
            // Packets with a header (and nothing else): an empty stream class reads them.
            class.streams.push(crate::ir::StreamClass { id: 0, packet_context: None, event_header: None, event_context: None, events: Vec::new() });
        }
        let plans: Vec<StreamPlan> = class.streams.iter().map(|s| StreamPlan::compile(&class, s)).collect();
        let uuid = packets_uuid(class.uuid, stream_files.iter().map(|f| first_uuid(f.bytes(), &plans)));
        // Index every file, then group files of one stream instance.
        let mut files: Vec<(StreamFile, Vec<PacketEntry>, usize)> = Vec::new();
        let mut opened = Vec::new();
        for file in stream_files {
            let path = file.path.clone();
            file.map.sequential();
            let data = file.bytes();
            let idx_path = dir.join("index").join(format!("{}.idx", path.file_name().and_then(|n| n.to_str()).unwrap_or("")));
            let idx = if dir.as_os_str().is_empty() { Err(IdxProblem::Absent) } else { read_idx(&idx_path, data.len() as u64) };
            let short = |packets: u64| match &idx {
                Err(IdxProblem::Short { listed_packets, listed_bytes }) => Some(Warning::ShortStream {
                    path: path.clone(),
                    listed_packets: *listed_packets,
                    listed_bytes: *listed_bytes,
                    packets,
                    bytes: data.len() as u64,
                }),
                _ => None,
            };
            if data.is_empty() {
                opened.extend(short(0));
                continue;
            }
            let from_index = match &idx {
                Ok(entries) => match from_idx(entries, data, &plans, uuid) {
                    Ok(v) => Some(v),
                    Err(why) => {
                        opened.push(Warning::IndexIgnored { index: idx_path.clone(), reason: why });
                        None
                    }
                },
                Err(IdxProblem::Inconsistent(why)) => {
                    opened.push(Warning::IndexIgnored { index: idx_path.clone(), reason: why.clone() });
                    None
                }
                Err(_) => None,
            };
            let (packets, plan) = match from_index {
                Some(v) => v,
                None => {
                    let (packets, plan) = walk(data, &plans, uuid, &mut |a, b| file.map.release(a, b)).map_err(|e| Error::Stream {
                        path: path.clone(),
                        packet: e.packet,
                        offset: e.offset,
                        message: e.message,
                    })?;
                    opened.extend(short(packets.len() as u64));
                    match plan {
                        Some(p) => (packets, p),
                        None => continue,
                    }
                }
            };
            files.push((file, packets, plan));
        }
        let streams = group(files, &plans, uuid);
        Ok(Trace { dir, class, metadata, plans, streams, opened })
    }

    /// What reading this trace found that its events do not show: stream files not read or
    /// shorter than their index says (found when it was opened), and packets whose header
    /// disagrees with their index entry (found by the cursors that read them: ask after
    /// reading).
    pub fn warnings(&self) -> Vec<Warning> {
        let mut out = self.opened.clone();
        out.extend(self.streams.iter().filter_map(|s| s.repairs.warning()));
        out
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
        e @ Error::Ctf2 { .. } => Error::Trace { path: path.to_path_buf(), message: e.to_string() },
        other => other,
    }
}

/// Builds packet entries from a valid LTTng index; checks that the first packet's header
/// agrees (the others are checked as they are read, see [`crate::Cursor`]), else says how it
/// does not.
fn from_idx(idx: &[crate::packet::IdxEntry], data: &[u8], plans: &[StreamPlan], uuid: Option<[u8; 16]>) -> Result<(Vec<PacketEntry>, usize), String> {
    let Some(first) = idx.first() else { return Err("it lists no packet".into()) };
    let mut fields = Vec::new();
    let mut dec = None;
    let (probe, plan) = read_packet(data, first.offset, 0, plans, uuid, &mut fields, &mut dec).map_err(|e| format!("its first packet cannot be read: {}", e.message))?;
    if probe.size * 8 != first.packet_size || probe.content_bits != first.content_size {
        return Err(format!(
            "its first entry says {} bytes / {} content bits, the packet header says {} bytes / {} bits",
            first.packet_size / 8,
            first.content_size,
            probe.size,
            probe.content_bits
        ));
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
    Ok((out, plan))
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
            None => streams.push(DataStream { files: vec![file], packets, plan, stream_class_id: sid, instance_id: instance, uuid, repairs: IndexRepairs::default() }),
        }
    }
    streams.sort_by(|a, b| a.path().cmp(b.path()));
    for s in &mut streams {
        s.repairs = IndexRepairs::new(s.packets.len());
    }
    streams
}
