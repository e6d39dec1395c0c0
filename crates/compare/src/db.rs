//! The executions database: one SQLite file (schema in `docs/executions-db.md`).
//!
//! Two views of the same executions are stored:
//!
//! * for SQL, the `executions` table: one row per execution, one column per metric;
//! * for fast loading, the column store: each metric's values as one blob in the `metrics`
//!   table, and every execution's ECCT — its (node, inclusive ns) pairs against the union
//!   tree of `nodes` and `frames`, stored once — in blobs of [`CHUNK`] executions in `ecct`.
//!   `tracelens compare` reads only these: a few dozen rows, whatever the number of
//!   executions.
//!
//! A file that is not SQLite, not an executions database, of another schema version, or
//! whose blobs do not decode is an [`Error`] naming the file and the place, never a panic.

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OpenFlags, OptionalExtension};

use crate::ecct::{Tree, NONE};
use crate::metrics::{Metric, Unit, MISSING};
use crate::table::{Executions, Pairs, Values, NO_TEXT};
use crate::varint::{put_i64, put_u64, Reader};
use crate::{Error, Result};

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: u32 = 1;

/// `meta.format` of an executions database.
pub const FORMAT: &str = "tracelens executions";

/// Executions per row of the `ecct` table.
pub const CHUNK: usize = 65_536;

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
    let mut cols = String::new();
    for m in &db.metrics {
        cols.push_str(&format!(", {} {}", quoted(&m.name), if m.is_text() { "TEXT" } else { "INTEGER" }));
    }
    tx.execute_batch(&format!(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
         CREATE TABLE traces (id INTEGER PRIMARY KEY, path TEXT NOT NULL);
         CREATE TABLE metrics (position INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, unit TEXT NOT NULL, description TEXT NOT NULL, data BLOB NOT NULL);
         CREATE TABLE executions (id INTEGER PRIMARY KEY{cols});
         CREATE TABLE frames (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
         CREATE TABLE nodes (id INTEGER PRIMARY KEY, parent INTEGER, frame INTEGER);
         CREATE TABLE ecct (first INTEGER PRIMARY KEY, count INTEGER NOT NULL, data BLOB NOT NULL);"
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
        let marks: Vec<String> = (1..=db.metrics.len() + 1).map(|i| format!("?{i}")).collect();
        let mut st = tx.prepare(&format!("INSERT INTO executions VALUES ({})", marks.join(", "))).map_err(&e)?;
        let mut row: Vec<rusqlite::types::Value> = Vec::with_capacity(db.metrics.len() + 1);
        for i in 0..n {
            row.clear();
            row.push((i as i64).into());
            for v in &db.columns {
                row.push(match v {
                    Values::Int(x) if x[i] == MISSING => rusqlite::types::Value::Null,
                    Values::Int(x) => x[i].into(),
                    Values::Text { codes, dict } => match dict.get(codes[i] as usize) {
                        Some(s) => s.clone().into(),
                        None => rusqlite::types::Value::Null,
                    },
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
        let mut st = tx.prepare("INSERT INTO ecct VALUES (?1, ?2, ?3)").map_err(&e)?;
        let mut first = 0;
        while first < n {
            let count = CHUNK.min(n - first);
            st.execute(params![first as i64, count as i64, encode_pairs(&db.ecct, first, count)]).map_err(&e)?;
            first += count;
        }
    }
    tx.commit().map_err(&e)?;
    Ok(())
}

/// A column blob: integers as zigzag varints of the difference from the previous value
/// (wrapping; [`MISSING`] is a value like any other); text as the dictionary (count, then
/// length and UTF-8 bytes of each string) and one varint per execution, 0 for none, else
/// the string's index plus one.
pub(crate) fn encode_column(v: &Values) -> Vec<u8> {
    let mut out = Vec::new();
    match v {
        Values::Int(x) => {
            let mut prev = 0i64;
            for &y in x {
                put_i64(&mut out, y.wrapping_sub(prev));
                prev = y;
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

/// An `ecct` blob: per execution, the number of pairs, then per pair the node's difference
/// from the previous node of the execution (from 0 for the first) and the inclusive ns.
pub(crate) fn encode_pairs(p: &Pairs, first: usize, count: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in first..first + count {
        let (nodes, ns) = p.of(i);
        put_u64(&mut out, nodes.len() as u64);
        let mut prev = 0u32;
        for (&n, &t) in nodes.iter().zip(ns) {
            put_u64(&mut out, u64::from(n - prev));
            put_u64(&mut out, t as u64);
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
    let mut metrics = Vec::new();
    let mut columns = Vec::new();
    {
        let mut st = c.prepare("SELECT name, unit, description, data FROM metrics ORDER BY position").map_err(&e)?;
        let mut rows = st.query([]).map_err(&e)?;
        while let Some(r) = rows.next().map_err(&e)? {
            let name: String = r.get(0).map_err(&e)?;
            let unit: String = r.get(1).map_err(&e)?;
            let unit = Unit::parse(&unit).ok_or_else(|| corrupt(format!("metric {name}"), 0, &format!("unknown unit `{unit}`")))?;
            let blob = r.get_ref(3).map_err(&e)?.as_blob().map_err(|_| corrupt(format!("metric {name}"), 0, "data is not a blob"))?;
            let values = decode_column(blob, unit == Unit::Text, count).map_err(|(at, msg)| corrupt(format!("metric {name}"), at, &msg))?;
            metrics.push(Metric { name, unit, description: r.get(2).map_err(&e)? });
            columns.push(values);
        }
    }
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
    let mut ecct = Pairs { offsets: Vec::with_capacity(count + 1), nodes: Vec::new(), ns: Vec::new() };
    ecct.offsets.push(0);
    {
        let mut st = c.prepare("SELECT first, count, data FROM ecct ORDER BY first").map_err(&e)?;
        let mut rows = st.query([]).map_err(&e)?;
        while let Some(r) = rows.next().map_err(&e)? {
            let first: i64 = r.get(0).map_err(&e)?;
            let n: i64 = r.get(1).map_err(&e)?;
            let what = || format!("ecct chunk at execution {first}");
            if first != ecct.len() as i64 || n < 0 || ecct.len() + n as usize > count {
                return Err(corrupt(what(), 0, &format!("chunks must follow each other: {n} executions from {first}, {} read, {count} in all", ecct.len())));
            }
            let blob = r.get_ref(2).map_err(&e)?.as_blob().map_err(|_| corrupt(what(), 0, "data is not a blob"))?;
            decode_pairs(blob, n as usize, tree.len(), &mut ecct).map_err(|(at, msg)| corrupt(what(), at, &msg))?;
        }
    }
    if ecct.len() != count {
        return Err(corrupt("ecct".into(), 0, &format!("{} executions' ECCTs for {count} executions", ecct.len())));
    }
    let db = Executions { metrics, columns, tree, ecct, traces, delimiter };
    db.check_lengths().map_err(|m| corrupt("metrics".into(), 0, &m))?;
    Ok(db)
}

/// Decodes a column blob of `count` values.
pub(crate) fn decode_column(blob: &[u8], text: bool, count: usize) -> Result<Values, (usize, String)> {
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
        let mut v = Vec::with_capacity(count.min(blob.len()));
        let mut prev = 0i64;
        for _ in 0..count {
            prev = prev.wrapping_add(r.i64().map_err(trunc)?);
            v.push(prev);
        }
        Values::Int(v)
    };
    if !r.is_empty() {
        return Err((r.at, format!("{} bytes after the {count} values", blob.len() - r.at)));
    }
    Ok(out)
}

/// Decodes an `ecct` blob of `count` executions into `out`; nodes must exist in a tree of
/// `nodes` nodes and increase within an execution, times must be positive.
pub(crate) fn decode_pairs(blob: &[u8], count: usize, nodes: usize, out: &mut Pairs) -> Result<(), (usize, String)> {
    let mut r = Reader::new(blob);
    let trunc = |t: crate::varint::Truncated| (t.offset, "truncated value".to_string());
    for _ in 0..count {
        let k = r.u64().map_err(trunc)?;
        if k > (blob.len() - r.at) as u64 {
            return Err((r.at, format!("{k} pairs cannot fit in what is left of the blob")));
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
            let ns = r.u64().map_err(trunc)?;
            if ns == 0 || ns > i64::MAX as u64 {
                return Err((at, format!("time {ns} ns out of range")));
            }
            out.nodes.push(node as u32);
            out.ns.push(ns as i64);
        }
        out.offsets.push(out.nodes.len() as u64);
    }
    if !r.is_empty() {
        return Err((r.at, format!("{} bytes after the {count} executions", blob.len() - r.at)));
    }
    Ok(())
}

/// The path of a database file as the traces table writes it (absolute when possible).
pub fn trace_path(p: &Path) -> String {
    std::fs::canonicalize(p).unwrap_or_else(|_| PathBuf::from(p)).display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ecct::TreeBuilder;
    use crate::metrics::fixed;

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
        // The row view has the same values, NULL where missing.
        let c = Connection::open(&p).unwrap();
        let (n, arg, name): (i64, Option<i64>, Option<String>) =
            c.query_row("SELECT count(*), (SELECT \"begin.arg1\" FROM executions WHERE id = 2), (SELECT \"end.name\" FROM executions WHERE id = 1) FROM executions", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap();
        assert_eq!((n, arg, name.as_deref()), (5, None, Some("é\"y")));
        let d: i64 = c.query_row("SELECT duration_ns FROM executions WHERE id = 3", [], |r| r.get(0)).unwrap();
        assert_eq!(d, 3000);
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
        c.execute("UPDATE ecct SET data = ?1", [vec![1u8, 0x09, 0x85]]).unwrap();
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
        fn decoding_garbage_never_panics(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64), n in 0usize..8, text: bool) {
            let _ = decode_column(&b, text, n);
            let mut p = Pairs::default();
            let _ = decode_pairs(&b, n, 10, &mut p);
        }
    }
}
