//! The executions database: one SQLite file (schema in `docs/executions-db.md`).
//!
//! The executions are stored column by column: each metric's values as one blob in the
//! `metrics` table, and every execution's ECCT — its (node, inclusive ns) pairs against the
//! union tree of `nodes` and `frames`, stored once — in blobs of [`CHUNK`] executions in
//! `ecct`. Loading is then a few dozen rows, whatever the number of executions (a row per
//! execution is ten times slower to read back in SQLite), and the blobs' varints make the
//! file a few percent of the trace. For SQL, the `executions` table lists each execution's
//! trace, thread, begin time and duration ([`ROW_VIEW`]).
//!
//! A file that is not SQLite, not an executions database, of another schema version, or
//! whose blobs do not decode is an [`Error`] naming the file and the place, never a panic.

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};

use crate::ecct::{Tree, NONE};
use crate::metrics::{Metric, Unit};
use crate::table::{Executions, Pairs, Values, NO_TEXT};
use crate::varint::{put_i64, put_u64, Reader};
use crate::{Error, Result};

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: u32 = 1;

/// `meta.format` of an executions database.
pub const FORMAT: &str = "tracelens executions";

/// Executions per row of the `ecct` table.
pub const CHUNK: usize = 65_536;

/// The metrics the `executions` table has, for SQL (all of them are in the column store).
pub const ROW_VIEW: [&str; 4] = ["trace", "tid", "begin_ns", "duration_ns"];

fn sql(path: &Path) -> impl Fn(rusqlite::Error) -> Error + '_ {
    move |source| Error::Sqlite { path: path.to_path_buf(), source }
}

/// A column name quoted for SQL (`"begin.arg1"`).
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Writes `db` to `path` (replacing a file there): written to a temporary file beside it,
/// then renamed, so that a failure leaves no half-written database.
pub fn write(path: &Path, db: &Executions) -> Result<()> {
    db.check_lengths().map_err(|e| Error::Invalid(format!("cannot write {}: {e}", path.display())))?;
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "executions.db".into());
    let tmp = path.with_file_name(format!(".{file_name}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let r = write_to(&tmp, db);
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
        return r;
    }
    std::fs::rename(&tmp, path).map_err(|source| {
        let _ = std::fs::remove_file(&tmp);
        Error::Io { path: path.to_path_buf(), source }
    })
}

fn write_to(path: &Path, db: &Executions) -> Result<()> {
    let e = sql(path);
    let mut c = Connection::open(path).map_err(&e)?;
    c.execute_batch("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA page_size = 8192;").map_err(&e)?;
    let tx = c.transaction().map_err(&e)?;
    let row_view: Vec<usize> = ROW_VIEW.iter().filter_map(|n| db.column(n)).collect();
    let mut cols = String::new();
    for &c in &row_view {
        cols.push_str(&format!(", {} INTEGER", quoted(&db.metrics[c].name)));
    }
    tx.execute_batch(&format!(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
         CREATE TABLE traces (id INTEGER PRIMARY KEY, path TEXT NOT NULL);
         CREATE TABLE metrics (position INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, unit TEXT NOT NULL, description TEXT NOT NULL, data BLOB NOT NULL);
         CREATE TABLE executions (id INTEGER PRIMARY KEY{cols});
         CREATE TABLE frames (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
         CREATE TABLE nodes (id INTEGER PRIMARY KEY, parent INTEGER, frame INTEGER);
         CREATE TABLE ecct (first INTEGER PRIMARY KEY, count INTEGER NOT NULL, pairs INTEGER NOT NULL, data BLOB NOT NULL);"
    ))
    .map_err(&e)?;
    let n = db.len();
    let meta = [
        ("format", FORMAT.to_string()),
        ("schema_version", SCHEMA_VERSION.to_string()),
        ("writer", format!("tracelens {}", env!("CARGO_PKG_VERSION"))),
        ("delimiter", db.delimiter.clone()),
        ("executions", n.to_string()),
    ];
    {
        let mut st = tx.prepare("INSERT INTO meta VALUES (?1, ?2)").map_err(&e)?;
        for (k, v) in &meta {
            st.execute(params![k, v]).map_err(&e)?;
        }
        let mut st = tx.prepare("INSERT INTO traces VALUES (?1, ?2)").map_err(&e)?;
        for (i, t) in db.traces.iter().enumerate() {
            st.execute(params![i as i64, t]).map_err(&e)?;
        }
        let mut st = tx.prepare("INSERT INTO metrics VALUES (?1, ?2, ?3, ?4, ?5)").map_err(&e)?;
        for (i, (m, v)) in db.metrics.iter().zip(&db.columns).enumerate() {
            st.execute(params![i as i64, m.name, m.unit.name(), m.description, encode_column(v)]).map_err(&e)?;
        }
        // The row view, for SQL.
        let marks: Vec<String> = (1..=row_view.len() + 1).map(|i| format!("?{i}")).collect();
        let mut st = tx.prepare(&format!("INSERT INTO executions VALUES ({})", marks.join(", "))).map_err(&e)?;
        let mut row: Vec<rusqlite::types::Value> = Vec::with_capacity(row_view.len() + 1);
        for i in 0..n {
            row.clear();
            row.push((i as i64).into());
            for &c in &row_view {
                row.push(match db.columns[c].int(i) {
                    Some(x) => x.into(),
                    None => rusqlite::types::Value::Null,
                });
            }
            st.execute(rusqlite::params_from_iter(row.iter())).map_err(&e)?;
        }
        let mut st = tx.prepare("INSERT INTO frames VALUES (?1, ?2)").map_err(&e)?;
        for (i, f) in db.tree.frames.iter().enumerate() {
            st.execute(params![i as i64, f]).map_err(&e)?;
        }
        let mut st = tx.prepare("INSERT INTO nodes VALUES (?1, ?2, ?3)").map_err(&e)?;
        let opt = |x: u32| (x != NONE).then_some(i64::from(x));
        for i in 0..db.tree.len() {
            st.execute(params![i as i64, opt(db.tree.parent[i]), opt(db.tree.frame[i])]).map_err(&e)?;
        }
        let mut st = tx.prepare("INSERT INTO ecct VALUES (?1, ?2, ?3, ?4)").map_err(&e)?;
        let durations = durations(db).map_err(|m| Error::Invalid(format!("cannot write {}: {m}", path.display())))?;
        let mut scratch = Scratch::new(db.tree.len());
        let mut first = 0;
        while first < n {
            let count = CHUNK.min(n - first);
            let blob = encode_pairs(&db.ecct, first, count, &db.tree.parent, durations, &mut scratch);
            let pairs = db.ecct.offsets[first + count] - db.ecct.offsets[first];
            st.execute(params![first as i64, count as i64, pairs as i64, blob]).map_err(&e)?;
            first += count;
        }
    }
    tx.commit().map_err(&e)?;
    Ok(())
}

/// A column blob. Integers: the difference from the previous value (wrapping; from 0 for the
/// first; [`MISSING`] is a value like any other), as varints: the zigzag code of a
/// difference that is not 0, or 0 then `n` for `n` differences of 0 (the same value again). Text: the dictionary (count, then length and UTF-8 bytes of
/// each string) and one varint per execution, 0 for none, else the string's index plus one.
pub(crate) fn encode_column(v: &Values) -> Vec<u8> {
    let mut out = Vec::new();
    match v {
        Values::Int(x) => {
            let (mut prev, mut same) = (0i64, 0u64);
            for &y in x {
                let d = y.wrapping_sub(prev);
                prev = y;
                if d == 0 {
                    same += 1;
                    continue;
                }
                if same > 0 {
                    put_u64(&mut out, 0);
                    put_u64(&mut out, same);
                    same = 0;
                }
                put_i64(&mut out, d);
            }
            if same > 0 {
                put_u64(&mut out, 0);
                put_u64(&mut out, same);
            }
        }
        Values::Text { codes, dict } => {
            put_u64(&mut out, dict.len() as u64);
            for s in dict {
                put_u64(&mut out, s.len() as u64);
                out.extend_from_slice(s.as_bytes());
            }
            for &c in codes {
                put_u64(&mut out, if c == NO_TEXT { 0 } else { u64::from(c) + 1 });
            }
        }
    }
    out
}

/// The `duration_ns` column: each execution's root time.
fn durations(db: &Executions) -> Result<&[i64], String> {
    match db.column("duration_ns").map(|c| &db.columns[c]) {
        Some(Values::Int(v)) => Ok(v),
        _ => Err("no integer duration_ns metric".into()),
    }
}

/// Per node of the tree, the value it has in the execution being coded (`gen` marks which
/// nodes have one: no clearing between executions).
pub(crate) struct Scratch {
    gen: u32,
    stamp: Vec<u32>,
    value: Vec<i64>,
}

impl Scratch {
    pub(crate) fn new(nodes: usize) -> Scratch {
        Scratch { gen: 0, stamp: vec![0; nodes], value: vec![0; nodes] }
    }

    fn next(&mut self) {
        self.gen = self.gen.wrapping_add(1);
        if self.gen == 0 {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.gen = 1;
        }
    }

    fn set(&mut self, node: u32, v: i64) {
        if let Some(s) = self.stamp.get_mut(node as usize) {
            *s = self.gen;
            self.value[node as usize] = v;
        }
    }

    /// The value of `parent` in this execution: the duration for the root, 0 when absent.
    fn parent(&self, parent: u32, duration: i64) -> i64 {
        if parent == crate::ecct::ROOT {
            return duration;
        }
        match self.stamp.get(parent as usize) {
            Some(&s) if s == self.gen => self.value[parent as usize],
            _ => 0,
        }
    }
}

/// An `ecct` blob: per execution, the number of pairs, then per pair the node's difference
/// from the previous node of the execution (from 0 for the first), and its inclusive ns as a
/// signed varint of the parent's inclusive ns minus it (the parent's is the execution's
/// duration for the root, 0 when the execution lacks the parent): a node that is all its
/// parent's time, as along a stack's outer frames, takes one byte.
pub(crate) fn encode_pairs(p: &Pairs, first: usize, count: usize, parent: &[u32], durations: &[i64], scratch: &mut Scratch) -> Vec<u8> {
    let mut out = Vec::new();
    for i in first..first + count {
        scratch.next();
        let (nodes, ns) = p.of(i);
        put_u64(&mut out, nodes.len() as u64);
        let mut prev = 0u32;
        for (&n, &t) in nodes.iter().zip(ns) {
            put_u64(&mut out, u64::from(n - prev));
            let up = scratch.parent(parent.get(n as usize).copied().unwrap_or(NONE), durations.get(i).copied().unwrap_or(0));
            put_i64(&mut out, up.wrapping_sub(t));
            scratch.set(n, t);
            prev = n;
        }
    }
    out
}

/// Opens the database at `path` and loads it.
pub fn open(path: &Path) -> Result<Executions> {
    let not_db = |why: &str| Error::NotADatabase { path: path.to_path_buf(), why: why.to_string() };
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Err(not_db("not a regular file")),
        Err(source) => return Err(Error::Io { path: path.to_path_buf(), source }),
    }
    let e = sql(path);
    let c = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX).map_err(&e)?;
    let has_meta: Option<i64> = match c.query_row("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'", [], |r| r.get(0)).optional() {
        Ok(x) => x,
        Err(rusqlite::Error::SqliteFailure(f, _)) if f.code == rusqlite::ErrorCode::NotADatabase => return Err(not_db("not an SQLite file")),
        Err(err) => return Err(e(err)),
    };
    if has_meta.is_none() {
        return Err(not_db("an SQLite file without a meta table"));
    }
    let meta = |key: &str| -> Result<Option<String>> { c.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0)).optional().map_err(&e) };
    if meta("format")?.as_deref() != Some(FORMAT) {
        return Err(not_db("its meta table has no format `tracelens executions`"));
    }
    let version = meta("schema_version")?.unwrap_or_default();
    if version != SCHEMA_VERSION.to_string() {
        return Err(Error::Version { path: path.to_path_buf(), found: version, writer: meta("writer")?.unwrap_or_else(|| "unknown".into()), expected: SCHEMA_VERSION });
    }
    let count: usize = meta("executions")?.and_then(|s| s.parse().ok()).ok_or_else(|| not_db("meta has no execution count"))?;
    let delimiter = meta("delimiter")?.unwrap_or_default();
    let corrupt = |what: String, offset: usize, message: &str| Error::Corrupt { path: path.to_path_buf(), what, offset, message: message.to_string() };

    let traces: Vec<String> = {
        let mut st = c.prepare("SELECT path FROM traces ORDER BY id").map_err(&e)?;
        let rows = st.query_map([], |r| r.get(0)).map_err(&e)?;
        rows.collect::<rusqlite::Result<_>>().map_err(&e)?
    };
    // Columns are decoded in parallel.
    let mut rows: Vec<(Metric, Vec<u8>)> = Vec::new();
    {
        let mut st = c.prepare("SELECT name, unit, description, data FROM metrics ORDER BY position").map_err(&e)?;
        let mut q = st.query([]).map_err(&e)?;
        while let Some(r) = q.next().map_err(&e)? {
            let name: String = r.get(0).map_err(&e)?;
            let unit: String = r.get(1).map_err(&e)?;
            let unit = Unit::parse(&unit).ok_or_else(|| corrupt(format!("metric {name}"), 0, &format!("unknown unit `{unit}`")))?;
            let blob = r.get_ref(3).map_err(&e)?.as_blob().map_err(|_| corrupt(format!("metric {name}"), 0, "data is not a blob"))?.to_vec();
            rows.push((Metric { name, unit, description: r.get(2).map_err(&e)? }, blob));
        }
    }
    let decoded: Vec<Result<Values>> = rows
        .par_iter()
        .map(|(m, blob)| decode_column(blob, m.unit == Unit::Text, count).map_err(|(at, msg)| corrupt(format!("metric {}", m.name), at, &msg)))
        .collect();
    let columns = decoded.into_iter().collect::<Result<Vec<Values>>>()?;
    let metrics: Vec<Metric> = rows.into_iter().map(|(m, _)| m).collect();
    let frames: Vec<String> = {
        let mut st = c.prepare("SELECT name FROM frames ORDER BY id").map_err(&e)?;
        let rows = st.query_map([], |r| r.get(0)).map_err(&e)?;
        rows.collect::<rusqlite::Result<_>>().map_err(&e)?
    };
    let mut tree = Tree { frames, parent: Vec::new(), frame: Vec::new() };
    {
        let mut st = c.prepare("SELECT id, parent, frame FROM nodes ORDER BY id").map_err(&e)?;
        let mut rows = st.query([]).map_err(&e)?;
        while let Some(r) = rows.next().map_err(&e)? {
            let id: i64 = r.get(0).map_err(&e)?;
            if id != tree.parent.len() as i64 {
                return Err(corrupt("nodes".into(), 0, &format!("node ids are not 0, 1, 2...: {id} after {}", tree.parent.len())));
            }
            let get = |i: usize| -> Result<u32> {
                let v: Option<i64> = r.get(i).map_err(&e)?;
                v.map_or(Ok(NONE), |v| u32::try_from(v).map_err(|_| corrupt(format!("node {id}"), 0, &format!("{v} is not a node or frame id"))))
            };
            tree.parent.push(get(1)?);
            tree.frame.push(get(2)?);
        }
    }
    tree.check().map_err(|(n, msg)| corrupt(format!("node {n}"), 0, &msg))?;
    let dur = match metrics.iter().position(|m| m.name == "duration_ns").map(|c| &columns[c]) {
        Some(Values::Int(v)) => v.as_slice(),
        _ => return Err(corrupt("metrics".into(), 0, "no integer duration_ns metric")),
    };
    // The chunks: they follow each other, and their pairs (two bytes at least each) fit in
    // the file.
    let mut chunks: Vec<(usize, usize, usize)> = Vec::new();
    let (mut executions, mut total) = (0usize, 0usize);
    let most = std::fs::metadata(path).map(|m| m.len() as usize / 2).unwrap_or(0);
    {
        let mut st = c.prepare("SELECT first, count, pairs FROM ecct ORDER BY first").map_err(&e)?;
        let mut q = st.query([]).map_err(&e)?;
        while let Some(r) = q.next().map_err(&e)? {
            let (first, n, pairs): (i64, i64, i64) = (r.get(0).map_err(&e)?, r.get(1).map_err(&e)?, r.get(2).map_err(&e)?);
            if first != executions as i64 || n < 0 || executions + n as usize > count || pairs < 0 || total + pairs as usize > most {
                return Err(corrupt(
                    format!("ecct chunk at execution {first}"),
                    0,
                    &format!("chunks must follow each other and fit in the file: {n} executions and {pairs} pairs from {first}, {executions} read, {count} in all"),
                ));
            }
            chunks.push((first as usize, n as usize, total));
            executions += n as usize;
            total += pairs as usize;
        }
    }
    if executions != count {
        return Err(corrupt("ecct".into(), 0, &format!("{executions} executions' ECCTs for {count} executions")));
    }
    // Every pair decoded in place, chunks in parallel (each with a connection of its own).
    let mut ecct = Pairs { offsets: vec![0; count + 1], nodes: vec![0; total], ns: vec![0; total] };
    let mut parts = Vec::with_capacity(chunks.len());
    {
        let (mut nodes, mut ns, mut offsets) = (&mut ecct.nodes[..], &mut ecct.ns[..], &mut ecct.offsets[1..]);
        for (k, &(first, n, base)) in chunks.iter().enumerate() {
            let pairs = chunks.get(k + 1).map_or(total, |c| c.2) - base;
            let (a, rest) = std::mem::take(&mut nodes).split_at_mut(pairs);
            nodes = rest;
            let (b, rest) = std::mem::take(&mut ns).split_at_mut(pairs);
            ns = rest;
            let (o, rest) = std::mem::take(&mut offsets).split_at_mut(n);
            offsets = rest;
            parts.push((first, n, base, a, b, o));
        }
    }
    let parent = &tree.parent;
    let results: Vec<Result<()>> = parts
        .into_par_iter()
        .map(|(first, n, base, nodes, ns, offsets)| {
            let what = || format!("ecct chunk at execution {first}");
            let c = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX).map_err(&e)?;
            let blob: Vec<u8> = c.query_row("SELECT data FROM ecct WHERE first = ?1", [first as i64], |r| r.get(0)).map_err(|_| corrupt(what(), 0, "data is not a blob"))?;
            let mut scratch = Scratch::new(parent.len());
            decode_pairs(&blob, &dur[first..first + n], parent, &mut scratch, base as u64, Slices { offsets, nodes, ns }).map_err(|(at, msg)| corrupt(what(), at, &msg))
        })
        .collect();
    results.into_iter().collect::<Result<Vec<()>>>()?;
    let db = Executions { metrics, columns, tree, ecct, traces, delimiter };
    db.check_lengths().map_err(|m| corrupt("metrics".into(), 0, &m))?;
    Ok(db)
}

/// Decodes a column blob of `count` values (text when `text`): the values, or the byte
/// offset and what is wrong there.
pub fn decode_column(blob: &[u8], text: bool, count: usize) -> Result<Values, (usize, String)> {
    let mut r = Reader::new(blob);
    let trunc = |t: crate::varint::Truncated| (t.offset, "truncated value".to_string());
    let out = if text {
        let n = r.u64().map_err(trunc)? as usize;
        let mut dict = Vec::with_capacity(n.min(blob.len()));
        for _ in 0..n {
            let len = r.u64().map_err(trunc)? as usize;
            let at = r.at;
            let b = r.bytes(len).map_err(trunc)?;
            dict.push(String::from_utf8(b.to_vec()).map_err(|_| (at, "text that is not UTF-8".to_string()))?);
        }
        let mut codes = Vec::with_capacity(count.min(blob.len()));
        for _ in 0..count {
            let at = r.at;
            let c = r.u64().map_err(trunc)?;
            codes.push(match c {
                0 => NO_TEXT,
                c if c <= dict.len() as u64 => (c - 1) as u32,
                c => return Err((at, format!("text code {c} beyond the dictionary of {}", dict.len()))),
            });
        }
        Values::Text { codes, dict }
    } else {
        let mut v = Vec::with_capacity(count.min(blob.len().saturating_mul(64)));
        let mut prev = 0i64;
        while v.len() < count {
            let d = r.i64().map_err(trunc)?;
            if d == 0 {
                let at = r.at;
                let n = r.u64().map_err(trunc)?;
                if n == 0 || n > (count - v.len()) as u64 {
                    return Err((at, format!("a run of {n} values where {} are left", count - v.len())));
                }
                v.extend(std::iter::repeat_n(prev, n as usize));
            } else {
                prev = prev.wrapping_add(d);
                v.push(prev);
            }
        }
        Values::Int(v)
    };
    if !r.is_empty() {
        return Err((r.at, format!("{} bytes after the {count} values", blob.len() - r.at)));
    }
    Ok(out)
}

/// Where a chunk's pairs go: `offsets` (one per execution: the end of its pairs), `nodes` and
/// `ns` (exactly the chunk's pairs).
pub(crate) struct Slices<'a> {
    pub(crate) offsets: &'a mut [u64],
    pub(crate) nodes: &'a mut [u32],
    pub(crate) ns: &'a mut [i64],
}

/// Decodes an `ecct` blob of the executions of these `durations` into `out`, whose pairs
/// start at `base` of the whole; nodes must exist in the tree of these `parent`s and increase
/// within an execution, times must be positive, and the pairs must fill `out` exactly.
pub(crate) fn decode_pairs(blob: &[u8], durations: &[i64], parent: &[u32], scratch: &mut Scratch, base: u64, out: Slices<'_>) -> Result<(), (usize, String)> {
    let mut r = Reader::new(blob);
    let nodes = parent.len();
    let room = out.nodes.len();
    let trunc = |t: crate::varint::Truncated| (t.offset, "truncated value".to_string());
    let mut at_pair = 0usize;
    for (i, &duration) in durations.iter().enumerate() {
        scratch.next();
        let k = r.u64().map_err(trunc)?;
        if k > (room - at_pair) as u64 {
            return Err((r.at, format!("{k} pairs where the row says {} are left", room - at_pair)));
        }
        let mut node = 0u64;
        for j in 0..k {
            let at = r.at;
            let d = r.u64().map_err(trunc)?;
            if d == 0 && j > 0 {
                return Err((at, "nodes of an execution must increase".into()));
            }
            node = node.saturating_add(d);
            if node == 0 || node >= nodes as u64 {
                return Err((at, format!("node {node} is not in the tree of {nodes} nodes (or is the root)")));
            }
            let at = r.at;
            let up = scratch.parent(parent[node as usize], duration);
            let ns = up.wrapping_sub(r.i64().map_err(trunc)?);
            if ns <= 0 {
                return Err((at, format!("time {ns} ns out of range")));
            }
            scratch.set(node as u32, ns);
            out.nodes[at_pair] = node as u32;
            out.ns[at_pair] = ns;
            at_pair += 1;
        }
        out.offsets[i] = base + at_pair as u64;
    }
    if at_pair != room {
        return Err((r.at, format!("{at_pair} pairs where the row says {room}")));
    }
    if !r.is_empty() {
        return Err((r.at, format!("{} bytes after the {} executions", blob.len() - r.at, durations.len())));
    }
    Ok(())
}

/// Decodes an `ecct` blob of the executions of these `durations` holding `pairs` pairs, over
/// a tree of these `parent`s: their pairs, or the byte offset and what is wrong there.
pub fn decode_ecct(blob: &[u8], durations: &[i64], parent: &[u32], pairs: usize) -> Result<Pairs, (usize, String)> {
    if pairs > blob.len() / 2 {
        return Err((0, format!("{pairs} pairs cannot fit in {} bytes", blob.len())));
    }
    let mut p = Pairs { offsets: vec![0; durations.len() + 1], nodes: vec![0; pairs], ns: vec![0; pairs] };
    let mut scratch = Scratch::new(parent.len());
    decode_pairs(blob, durations, parent, &mut scratch, 0, Slices { offsets: &mut p.offsets[1..], nodes: &mut p.nodes, ns: &mut p.ns })?;
    Ok(p)
}

/// The path of a database file as the traces table writes it (absolute when possible).
pub fn trace_path(p: &Path) -> String {
    std::fs::canonicalize(p).unwrap_or_else(|_| PathBuf::from(p)).display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ecct::TreeBuilder;
    use crate::metrics::{fixed, MISSING};

    fn sample() -> Executions {
        let mut m = fixed();
        m.push(Metric::new("begin.arg1", Unit::Id, "payload field arg1 of the begin event"));
        m.push(Metric::new("end.name", Unit::Text, "payload field name of the end event"));
        let mut db = Executions::with_metrics(m);
        let mut tb = TreeBuilder::default();
        let a = tb.path(&["main", "work"]);
        let b = tb.path(&["main", "[timer]"]);
        db.tree = tb.finish();
        for i in 0..5i64 {
            for (k, c) in db.columns.iter_mut().enumerate() {
                match c {
                    Values::Int(v) => v.push(if k == 23 && i == 2 { MISSING } else { i * 1000 + k as i64 - 7 }),
                    Values::Text { codes, dict } => {
                        if dict.is_empty() {
                            dict.push("x".into());
                            dict.push("é\"y".into());
                        }
                        codes.push(if i == 3 { NO_TEXT } else { (i % 2) as u32 });
                    }
                }
            }
            let pairs = if i == 4 { vec![] } else { vec![(1, 100 + i), (a, 60), (b, 40 + i)] };
            db.ecct.push(&pairs);
        }
        db.traces = vec!["/tmp/x/kernel".into()];
        db.delimiter = "function work".into();
        db
    }

    fn tmp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("tracelens-compare-db-{name}-{}", std::process::id()))
    }

    #[test]
    fn write_then_read_round_trips() {
        let db = sample();
        let p = tmp("rt.db");
        write(&p, &db).unwrap();
        let back = open(&p).unwrap();
        assert_eq!(back, db);
        // The row view has the same values.
        let c = Connection::open(&p).unwrap();
        let (n, d, t): (i64, i64, i64) = c.query_row("SELECT count(*), (SELECT duration_ns FROM executions WHERE id = 3), (SELECT tid FROM executions WHERE id = 4) FROM executions", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap();
        assert_eq!((n, d, t), (5, 3000, 4000 + 1 - 7));
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn foreign_files_are_errors() {
        let p = tmp("notdb");
        std::fs::write(&p, b"this is not sqlite at all, just some text that is long enough for a header....").unwrap();
        let err = open(&p).unwrap_err().to_string();
        assert!(err.contains("not a tracelens executions database") && err.contains("not an SQLite file"), "{err}");
        let err = open(&tmp("missing")).unwrap_err().to_string();
        assert!(err.contains("No such file"), "{err}");
        // Another SQLite database.
        let _ = std::fs::remove_file(&p);
        Connection::open(&p).unwrap().execute_batch("CREATE TABLE t (x)").unwrap();
        let err = open(&p).unwrap_err().to_string();
        assert!(err.contains("without a meta table"), "{err}");
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn another_schema_version_is_a_clear_error() {
        let p = tmp("v2.db");
        write(&p, &sample()).unwrap();
        Connection::open(&p).unwrap().execute_batch("UPDATE meta SET value = '2' WHERE key = 'schema_version'; UPDATE meta SET value = 'tracelens 9.0' WHERE key = 'writer'").unwrap();
        let err = open(&p).unwrap_err().to_string();
        assert!(err.contains("schema version 2 (written by tracelens 9.0)") && err.contains("reads version 1"), "{err}");
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn damaged_blobs_are_errors_with_offsets() {
        let p = tmp("bad.db");
        write(&p, &sample()).unwrap();
        let c = Connection::open(&p).unwrap();
        c.execute("UPDATE ecct SET data = ?1", [vec![1u8, 0x09, 0x02]]).unwrap();
        let err = open(&p).unwrap_err().to_string();
        assert!(err.contains("ecct chunk at execution 0") && err.contains("node 9 is not in the tree"), "{err}");
        c.execute("UPDATE ecct SET data = ?1", [vec![1u8, 0x01]]).unwrap();
        let err = open(&p).unwrap_err().to_string();
        assert!(err.contains("truncated value (at byte 2)"), "{err}");
        write(&p, &sample()).unwrap();
        let c = Connection::open(&p).unwrap();
        c.execute("UPDATE metrics SET data = x'0102' WHERE name = 'tid'", []).unwrap();
        let err = open(&p).unwrap_err().to_string();
        assert!(err.contains("metric tid: truncated value"), "{err}");
        c.execute("UPDATE nodes SET parent = 7 WHERE id = 2", []).unwrap();
        let _ = std::fs::remove_file(&p);
    }

    proptest::proptest! {
        #[test]
        fn int_columns_round_trip(v in proptest::collection::vec(proptest::prop_oneof![proptest::prelude::Just(0i64), proptest::prelude::Just(MISSING), proptest::prelude::any::<i64>(), 0i64..3], 0..200)) {
            let col = Values::Int(v.clone());
            proptest::prop_assert_eq!(decode_column(&encode_column(&col), false, v.len()).unwrap(), col);
        }

        #[test]
        fn decoding_garbage_never_panics(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64), n in 0usize..8, text: bool) {
            let _ = decode_column(&b, text, n);
            let parent = [NONE, 0, 1, 1, 0, 4, 4, 2, 0, 8];
            let (mut o, mut nodes, mut ns) = (vec![0u64; n], vec![0u32; 6], vec![0i64; 6]);
            let _ = decode_pairs(&b, &vec![5; n], &parent, &mut Scratch::new(10), 0, Slices { offsets: &mut o, nodes: &mut nodes, ns: &mut ns });
        }
    }
}
