//! What `io` reports: per-thread and per-file bytes, latencies and the longest calls.

use std::cmp::Reverse;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use crate::durations::Durations;
use crate::id_map::IdMap;

use super::model::Stats;
use super::names::{NameId, NameTable};
use super::net::NetUsage;
use super::CATEGORIES;

/// Read and written bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Rw {
    /// Bytes read.
    pub read: u64,
    /// Bytes written.
    pub write: u64,
}

/// One row of the per-process tables; serialized with the totals: `{"tid", "pid", "comm",
/// "read", "write", "disk": Rw, "net": Rw, "unknown": Rw}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessIo {
    /// Thread id (rows are per thread, as lttng-iousagetop's).
    pub tid: i64,
    /// Its process, when known.
    pub pid: Option<i64>,
    /// Its name.
    pub comm: String,
    /// To and from files opened by `open`/`openat`.
    pub disk: Rw,
    /// To and from sockets.
    pub net: Rw,
    /// To and from other descriptors.
    pub unknown: Rw,
}

impl ProcessIo {
    /// All bytes.
    pub fn total(&self) -> Rw {
        Rw { read: self.disk.read + self.net.read + self.unknown.read, write: self.disk.write + self.net.write + self.unknown.write }
    }
}

impl Serialize for ProcessIo {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let total = self.total();
        let mut st = s.serialize_struct("ProcessIo", 8)?;
        st.serialize_field("tid", &self.tid)?;
        st.serialize_field("pid", &self.pid)?;
        st.serialize_field("comm", &self.comm)?;
        st.serialize_field("read", &total.read)?;
        st.serialize_field("write", &total.write)?;
        st.serialize_field("disk", &self.disk)?;
        st.serialize_field("net", &self.net)?;
        st.serialize_field("unknown", &self.unknown)?;
        st.end()
    }
}

/// One row of the per-file tables; serialized as `{"path", "read", "write"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileIo {
    /// The path (`unknown`, `socket`, `pipe...` and `anon_inode...` are followed by the name of
    /// the process that holds them).
    pub path: String,
    /// Bytes.
    #[serde(flatten)]
    pub bytes: Rw,
}

/// One of the longest calls; serialized with its duration: `{"begin_ns", "end_ns",
/// "duration_ns", "syscall", "size", "comm", "tid", "fd", "path"}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlowCall {
    /// Entry time (ns from the clock's origin).
    pub begin_ns: i64,
    /// Exit time.
    pub end_ns: i64,
    /// The system call.
    pub syscall: String,
    /// Bytes read or written (reads and writes that succeeded).
    pub size: Option<u64>,
    /// The thread's name.
    pub comm: String,
    /// The thread.
    pub tid: i64,
    /// The descriptor.
    pub fd: Option<i64>,
    /// Its file, when known.
    pub path: Option<String>,
}

impl SlowCall {
    /// Duration in ns.
    pub fn duration_ns(&self) -> i64 {
        self.end_ns - self.begin_ns
    }
}

impl Serialize for SlowCall {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("SlowCall", 9)?;
        st.serialize_field("begin_ns", &self.begin_ns)?;
        st.serialize_field("end_ns", &self.end_ns)?;
        st.serialize_field("duration_ns", &self.duration_ns())?;
        st.serialize_field("syscall", &self.syscall)?;
        st.serialize_field("size", &self.size)?;
        st.serialize_field("comm", &self.comm)?;
        st.serialize_field("tid", &self.tid)?;
        st.serialize_field("fd", &self.fd)?;
        st.serialize_field("path", &self.path)?;
        st.end()
    }
}

/// The result of `io`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IoReport {
    /// First and last kernel event times read (ns from the clock's origin).
    pub begin_ns: Option<i64>,
    /// See `begin_ns`.
    pub end_ns: Option<i64>,
    /// Per thread with I/O, in order of first I/O (lttng-analyses' order among equals).
    pub processes: Vec<ProcessIo>,
    /// Per file name with bytes read or written.
    pub files: Vec<FileIo>,
    /// Latencies of open, read, write and sync calls ([`CATEGORIES`]).
    pub latency: [Durations; 4],
    /// The longest calls of each category, longest first.
    pub top: [Vec<SlowCall>; 4],
    /// Network usage: per interface, and per thread what it sent.
    pub network: NetUsage,
}

/// Names of files whose per-file rows are per holder (`unknown (bash)`).
pub(super) const GENERIC_NAMES: [&str; 4] = ["pipe", "socket", "anon_inode", "unknown"];

/// A thread's openings with bytes, added up by name, in order of first appearance when
/// openings are listed by descriptor number, earlier openings first (what the per-file rows
/// add up per thread).
pub(super) fn thread_rows(s: &Stats) -> Vec<(NameId, Rw)> {
    let mut order: Vec<(NameId, Rw)> = Vec::new();
    let mut at: IdMap<NameId, usize> = IdMap::default();
    let mut fds: Vec<usize> = (0..s.fds.lists.len()).collect();
    fds.sort_unstable_by_key(|&i| s.fds.lists.get(i).map_or(0, |(fd, _)| *fd));
    for &i in &fds {
        let Some((_, list)) = s.fds.lists.get(i) else { continue };
        let openings = list.past(&s.pasts).chain(list.last.iter().map(|l| (l.filename, l.read, l.write)));
        for (name, r, w) in openings {
            if r == 0 && w == 0 {
                continue;
            }
            let j = *at.entry(name).or_insert_with(|| {
                order.push((name, Rw::default()));
                order.len() - 1
            });
            if let Some((_, rw)) = order.get_mut(j) {
                rw.read += r;
                rw.write += w;
            }
        }
    }
    order
}

/// The per-file rows: every opening of every descriptor of every thread's statistics (`stats`,
/// in creation order), added up by path. Rows come in order of first appearance: threads in
/// order, and within a thread, names in order of their first opening ([`thread_rows`], made
/// by the model's shards when they could). A name is a path, except for the generic ones,
/// followed by the holder's name.
pub(super) fn file_rows(stats: &[(i64, &Stats)], names: &NameTable) -> Vec<FileIo> {
    let mut files: Vec<FileIo> = Vec::new();
    // Per name: the row of its path (ordinary names).
    let mut row_of: Vec<u32> = vec![u32::MAX; names.names.len()];
    let mut generic_rows: IdMap<String, usize> = IdMap::default();
    for (_, s) in stats {
        let made;
        let order = match &s.rows {
            Some(rows) => rows,
            None => {
                made = thread_rows(s);
                &made
            }
        };
        for &(name, rw) in order {
            let text = names.name(name);
            let row = if GENERIC_NAMES.iter().any(|g| text.starts_with(g)) {
                let path = format!("{text} ({})", s.comm);
                *generic_rows.entry(path).or_insert_with_key(|path| {
                    files.push(FileIo { path: path.clone(), bytes: Rw::default() });
                    files.len() - 1
                })
            } else {
                match row_of.get_mut(name as usize) {
                    Some(r) if *r != u32::MAX => *r as usize,
                    Some(r) => {
                        *r = files.len() as u32;
                        files.push(FileIo { path: text.to_string(), bytes: Rw::default() });
                        files.len() - 1
                    }
                    None => continue,
                }
            };
            if let Some(f) = files.get_mut(row) {
                f.bytes.read += rw.read;
                f.bytes.write += rw.write;
            }
        }
    }
    files
}

impl IoReport {
    /// Processes by bytes read (or written), most first; ties in lttng-analyses' order.
    pub fn processes_by(&self, write: bool) -> Vec<&ProcessIo> {
        let mut v: Vec<&ProcessIo> = self.processes.iter().filter(|p| if write { p.total().write > 0 } else { p.total().read > 0 }).collect();
        v.sort_by_key(|p| Reverse(if write { p.total().write } else { p.total().read }));
        v
    }

    /// Files by bytes read (or written), most first.
    pub fn files_by(&self, write: bool) -> Vec<&FileIo> {
        let mut v: Vec<&FileIo> = self.files.iter().filter(|f| if write { f.bytes.write > 0 } else { f.bytes.read > 0 }).collect();
        v.sort_by_key(|f| Reverse(if write { f.bytes.write } else { f.bytes.read }));
        v
    }
}

/// `{"begin_ns", "end_ns", "processes": [ProcessIo], "files": [FileIo], "latency": {"open":
/// Durations, "read": ..., "write": ..., "sync": ...}, "top": {"open": [SlowCall], ...},
/// "network": NetUsage}`.
impl Serialize for IoReport {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        /// `[T; 4]` as an object keyed by [`CATEGORIES`].
        struct ByCategory<'a, T>(&'a [T; 4]);
        impl<T: Serialize> Serialize for ByCategory<'_, T> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_map(CATEGORIES.iter().zip(self.0.iter()))
            }
        }
        let mut st = s.serialize_struct("IoReport", 7)?;
        st.serialize_field("begin_ns", &self.begin_ns)?;
        st.serialize_field("end_ns", &self.end_ns)?;
        st.serialize_field("processes", &self.processes)?;
        st.serialize_field("files", &self.files)?;
        st.serialize_field("latency", &ByCategory(&self.latency))?;
        st.serialize_field("top", &ByCategory(&self.top))?;
        st.serialize_field("network", &self.network)?;
        st.end()
    }
}
