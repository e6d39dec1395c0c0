//! `tracelens compare --html FILE`: the page as one self-contained file. The style sheet is
//! inlined, the modules become `data:` URLs of the page's import map, and the data the page
//! would ask the server for (the database summary and the view of the two groups) is inlined
//! as JSON. Without a server there is no brushing; the flame graph (zoom, search, tooltips),
//! the histograms and the samples are the same.

use std::io::Write;

use serde::Serialize;
use tracelens_compare::Selection;

use crate::model::{Meta, Model, Request, View};
use crate::Result;

const STYLE_LINK: &str = r#"<link rel="stylesheet" href="/style.css">"#;
const IMPORT_MAP: &str = r#"<script type="importmap">{"imports": {"tl/": "/"}}</script>"#;

#[derive(Serialize)]
struct Inlined<'a> {
    meta: &'a Meta,
    view: &'a View,
    /// The groups' expressions.
    labels: [&'a str; 2],
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
/// expressions as labels) to `out`.
pub fn write(out: &mut dyn Write, model: &Model, a: (&str, &Selection), b: (&str, &Selection)) -> Result<()> {
    let view = model.view_of(&Request::default(), a.1, b.1);
    let data = serde_json::to_string(&Inlined { meta: model.meta(), view: &view, labels: [a.0, b.0] }).map_err(std::io::Error::from)?;
    let (_, _, index) = crate::assets::FILES[0];
    let (_, _, style) = crate::assets::FILES[1];
    let imports: Vec<String> = crate::assets::modules().map(|(p, text)| format!("\"tl{p}\": \"data:text/javascript;base64,{}\"", base64(text.as_bytes()))).collect();
    let page = index
        .replace(STYLE_LINK, &format!("<style>\n{style}</style>"))
        .replace(IMPORT_MAP, &format!("<script type=\"importmap\">{{\"imports\": {{{}}}}}</script>\n<script id=\"tl-data\" type=\"application/json\">{}</script>", imports.join(", "), data.replace("</", "<\\/")));
    out.write_all(page.as_bytes())?;
    Ok(())
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
        write(&mut out, &m, ("even", &a), ("odd", &b)).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(!s.contains(STYLE_LINK) && !s.contains("\"tl/\": \"/\""));
        assert!(s.contains("\"tl/app.js\": \"data:text/javascript;base64,"));
        let json = s.split("<script id=\"tl-data\" type=\"application/json\">").nth(1).unwrap().split("</script>").next().unwrap();
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(v["view"]["a"]["count"], 100);
        assert_eq!(v["labels"][1], "odd");
        assert!(!s.contains("src=\"/") && !s.contains("href=\"/"), "nothing is fetched");
    }
}
