//! `tracelens compare --html FILE`: the page as one self-contained file. The style sheet is
//! inlined, the modules become `data:` URLs of the page's import map, and the data the page
//! would ask the server for (the database summary and the view of the two groups) is inlined
//! as JSON.
//!
//! So that the file brushes as the served page does, it also holds what the server computes
//! views and cubes from (`local.js` does it in the page): per execution, the value of every
//! metric shown, its (node, ns) pairs, its duration, thread, begin and trace, and whether the
//! groups' expressions select it; with every metric's bin edges on both axes. These columns
//! are little-endian arrays, each at an offset that is a multiple of 8, gzip-compressed and
//! base64-encoded ([`Columns`] says where each is); the page inflates them with the
//! browser's `DecompressionStream`. A database of more than [`MAX_BRUSHED`] executions is
//! written without them: the file then shows the comparison without brushing.

use std::io::Write;

use flate2::write::GzEncoder;
use serde::Serialize;
use tracelens_compare::metrics::col;
use tracelens_compare::{Selection, Values};

use crate::model::{edges, Meta, Model, Request, Scale, View};
use crate::Result;

const STYLE_LINK: &str = r#"<link rel="stylesheet" href="/style.css">"#;
const IMPORT_MAP: &str = r#"<script type="importmap">{"imports": {"tl/": "/"}}</script>"#;

/// Most executions whose columns a file holds (about 180 bytes each in the file, gzip and
/// base64 included, with 18 metrics and 22 (node, ns) pairs an execution: 54 MB for 300,000,
/// which chromium opens in 1.4 s; see BENCHMARKS.md): beyond, the file does not brush.
pub const MAX_BRUSHED: usize = 300_000;

#[derive(Serialize)]
struct Inlined<'a> {
    meta: &'a Meta,
    view: &'a View,
    /// The groups' expressions.
    labels: [&'a str; 2],
    /// Where the columns are, when the file has them.
    columns: Option<Columns>,
}

/// Where each column is in the inflated bytes, and what the page needs with them.
#[derive(Debug, Serialize)]
pub struct Columns {
    /// Executions.
    pub n: usize,
    /// `(name, type, offset, length)`: `type` is `f64`, `u32` or `u8`; offset in bytes, length
    /// in elements. `value.M` (f64, NaN without a value): metric M's values; `offsets` (u32,
    /// n + 1), `nodes` (u32) and `ns` (f64): the (node, ns) pairs of execution i are
    /// `offsets[i]..offsets[i + 1]`; `duration`, `tid`, `begin` (f64, NaN without);
    /// `trace` (u32, an index in `traces`, `u32::MAX` without); `groups` (u8: bit 0 set
    /// when A's expression selects the execution, bit 1 for B's).
    pub sections: Vec<(String, &'static str, usize, usize)>,
    /// Per metric, its bin edges on a linear and on a log axis (as the server bins).
    pub edges: Vec<[Vec<i64>; 2]>,
    /// The traces' paths.
    pub traces: Vec<String>,
}

/// The columns being written.
struct Blob {
    bytes: Vec<u8>,
    sections: Vec<(String, &'static str, usize, usize)>,
}

impl Blob {
    fn push(&mut self, name: &str, kind: &'static str, len: usize, put: impl FnOnce(&mut Vec<u8>)) {
        while !self.bytes.len().is_multiple_of(8) {
            self.bytes.push(0);
        }
        self.sections.push((name.to_string(), kind, self.bytes.len(), len));
        put(&mut self.bytes);
    }

    fn f64s(&mut self, name: &str, v: impl ExactSizeIterator<Item = f64>) {
        let len = v.len();
        self.push(name, "f64", len, |b| v.for_each(|x| b.extend_from_slice(&x.to_le_bytes())));
    }

    fn u32s(&mut self, name: &str, v: impl ExactSizeIterator<Item = u32>) {
        let len = v.len();
        self.push(name, "u32", len, |b| v.for_each(|x| b.extend_from_slice(&x.to_le_bytes())));
    }
}

/// An integer column as f64, NaN where missing.
fn floats(v: Option<&Values>, n: usize) -> impl ExactSizeIterator<Item = f64> + '_ {
    (0..n).map(move |i| v.and_then(|v| v.int(i)).map_or(f64::NAN, |x| x as f64))
}

/// The columns of `model` with the selections `a` and `b`, gzip-compressed.
fn columns(model: &Model, a: &Selection, b: &Selection) -> Result<(Columns, Vec<u8>)> {
    let db = model.db();
    let n = db.len();
    let mut blob = Blob { bytes: Vec::new(), sections: Vec::new() };
    for (m, info) in model.meta().metrics.iter().enumerate() {
        blob.f64s(&format!("value.{m}"), floats(db.columns.get(info.column), n));
    }
    let pairs = &db.ecct;
    let base = pairs.offsets.first().copied().unwrap_or(0);
    let to_u32 = |x: u64| u32::try_from(x - base).map_err(|_| std::io::Error::other("more than 2^32 (node, ns) pairs: too many for a file"));
    let offsets: Vec<u32> = (0..=n).map(|i| to_u32(pairs.offsets.get(i).copied().unwrap_or(base))).collect::<std::io::Result<_>>()?;
    let (lo, hi) = (offsets[0] as usize, offsets[n] as usize);
    blob.u32s("offsets", offsets.into_iter());
    blob.u32s("nodes", pairs.nodes[base as usize + lo..base as usize + hi].iter().copied());
    blob.f64s("ns", pairs.ns[base as usize + lo..base as usize + hi].iter().map(|&t| t as f64));
    blob.f64s("duration", floats(db.columns.get(col::DURATION), n));
    blob.f64s("tid", floats(db.columns.get(col::TID), n));
    blob.f64s("begin", floats(db.columns.get(col::BEGIN), n));
    let trace = db.columns.get(col::TRACE);
    blob.u32s("trace", (0..n).map(|i| trace.and_then(|v| v.int(i)).and_then(|t| u32::try_from(t).ok()).unwrap_or(u32::MAX)));
    blob.push("groups", "u8", n, |bytes| bytes.extend((0..n).map(|i| u8::from(a.contains(i)) | (u8::from(b.contains(i)) << 1))));
    let edges = model.meta().metrics.iter().map(|m| [edges(m.min, m.max, Scale::Linear), edges(m.min, m.max, Scale::Log)]).collect();
    let mut gz = GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&blob.bytes)?;
    Ok((Columns { n, sections: blob.sections, edges, traces: db.traces.clone() }, gz.finish()?))
}

fn base64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16) | (u32::from(*c.get(1).unwrap_or(&0)) << 8) | u32::from(*c.get(2).unwrap_or(&0));
        for k in 0..4 {
            if k <= c.len() {
                s.push(T[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

/// Writes the page of `model` comparing the executions `a` and `b` select (with their
/// expressions as labels) to `out`; with the columns that let it brush unless the database
/// has more than [`MAX_BRUSHED`] executions. Returns whether the page brushes.
pub fn write(out: &mut dyn Write, model: &Model, a: (&str, &Selection), b: (&str, &Selection)) -> Result<bool> {
    let view = model.view_of(&Request::default(), a.1, b.1);
    let (columns, gz) = if model.db().len() <= MAX_BRUSHED {
        let (c, gz) = columns(model, a.1, b.1)?;
        (Some(c), Some(gz))
    } else {
        (None, None)
    };
    let brushes = columns.is_some();
    let data = serde_json::to_string(&Inlined { meta: model.meta(), view: &view, labels: [a.0, b.0], columns }).map_err(std::io::Error::from)?;
    let (_, _, index) = crate::assets::FILES[0];
    let (_, _, style) = crate::assets::FILES[1];
    let imports: Vec<String> = crate::assets::modules().map(|(p, text)| format!("\"tl{p}\": \"data:text/javascript;base64,{}\"", base64(text.as_bytes()))).collect();
    let mut scripts = format!("<script type=\"importmap\">{{\"imports\": {{{}}}}}</script>\n<script id=\"tl-data\" type=\"application/json\">{}</script>", imports.join(", "), data.replace("</", "<\\/"));
    if let Some(gz) = gz {
        scripts.push_str(&format!("\n<script id=\"tl-columns\" type=\"application/gzip;base64\">{}</script>", base64(&gz)));
    }
    let page = index.replace(STYLE_LINK, &format!("<style>\n{style}</style>")).replace(IMPORT_MAP, &scripts);
    out.write_all(page.as_bytes())?;
    Ok(brushes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_of_known_strings() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn the_page_holds_its_data_and_modules() {
        let (_, _, index) = crate::assets::FILES[0];
        assert!(index.contains(STYLE_LINK) && index.contains(IMPORT_MAP));
        let db = tracelens_compare::synthetic::generate(&tracelens_compare::synthetic::Shape { executions: 200, ..Default::default() });
        let m = Model::new(db, "x.db");
        let (a, b) = (Selection::from_fn(200, |i| i % 2 == 0), Selection::from_fn(200, |i| i % 2 == 1));
        let mut out = Vec::new();
        assert!(write(&mut out, &m, ("even", &a), ("odd", &b)).unwrap(), "200 executions: the file brushes");
        let s = String::from_utf8(out).unwrap();
        assert!(!s.contains(STYLE_LINK) && !s.contains("\"tl/\": \"/\""));
        assert!(s.contains("\"tl/app.js\": \"data:text/javascript;base64,"));
        let json = s.split("<script id=\"tl-data\" type=\"application/json\">").nth(1).unwrap().split("</script>").next().unwrap();
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(v["view"]["a"]["count"], 100);
        assert_eq!(v["labels"][1], "odd");
        assert!(!s.contains("src=\"/") && !s.contains("href=\"/"), "nothing is fetched");
        // The columns: inflated, each section where `columns` says, with the values written.
        let text = s.split("<script id=\"tl-columns\" type=\"application/gzip;base64\">").nth(1).unwrap().split("</script>").next().unwrap();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&unbase64(text)[..]), &mut bytes).unwrap();
        let sections = v["columns"]["sections"].as_array().unwrap();
        let at = |name: &str| sections.iter().find(|x| x[0] == name).map(|x| (x[2].as_u64().unwrap() as usize, x[3].as_u64().unwrap() as usize)).unwrap();
        let f64_at = |off: usize, i: usize| f64::from_le_bytes(bytes[off + 8 * i..off + 8 * i + 8].try_into().unwrap());
        let (off, len) = at("duration");
        assert_eq!(len, 200);
        assert!(sections.iter().all(|x| x[2].as_u64().unwrap().is_multiple_of(8)));
        for i in [0, 7, 199] {
            assert_eq!(f64_at(off, i), m.db().columns[col::DURATION].int(i).unwrap() as f64);
        }
        let (off, len) = at("groups");
        assert_eq!((bytes[off], bytes[off + 1], len), (1, 2, 200));
        let (off, len) = at("offsets");
        let last = u32::from_le_bytes(bytes[off + 4 * 200..off + 4 * 201].try_into().unwrap());
        assert_eq!((len, last as usize), (201, m.db().ecct.nodes.len()));
        assert_eq!(v["columns"]["edges"][0][0], serde_json::json!(edges(m.meta().metrics[0].min, m.meta().metrics[0].max, Scale::Linear)));
    }

    fn unbase64(s: &str) -> Vec<u8> {
        const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let digits: Vec<u32> = s.bytes().filter(|&c| c != b'=').map(|c| T.iter().position(|&t| t == c).unwrap() as u32).collect();
        let mut out = Vec::new();
        for c in digits.chunks(4) {
            let n = c.iter().enumerate().fold(0u32, |n, (k, &d)| n | d << (18 - 6 * k));
            out.extend_from_slice(&n.to_be_bytes()[1..c.len()]);
        }
        out
    }
}
