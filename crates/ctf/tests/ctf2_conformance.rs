//! CTF 2 metadata conformance on yactfr's test vectors (`yactfr-tests/tests-metadata-text/ctf-2`):
//! every `pass-*` case (13, plus the 139 auto-translated CTF 1 cases) must parse, every
//! `fail-*` case (220) must be rejected with a one-line error naming the fragment and the JSON
//! path. yactfr's packetized metadata stream cases (`tests-metadata-stream`) are judged in
//! `metadata_conformance.rs`; the Trace Compass CTF 2 traces in the CLI's `ctf2_bt2.rs`.

use std::path::{Path, PathBuf};

use tracelens_ctf::{parse_metadata, Error};

mod common;
use common::fixtures;

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir).map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.is_file()).collect()).unwrap_or_default();
    out.sort();
    out
}

/// A vector's metadata input: fail vectors are `---`, the input, `---`, the expected error.
fn input(text: &str, must_pass: bool) -> String {
    if must_pass {
        return text.to_string();
    }
    let body = text.strip_prefix("---\n").unwrap_or(text);
    body.split("\n---\n").next().unwrap_or("").to_string()
}

#[test]
fn yactfr_metadata_text_ctf2() {
    let Some(root) = fixtures() else { return };
    let base = root.join("yactfr-tests/tests-metadata-text/ctf-2");
    let (mut pass, mut fail, mut translated) = (0, 0, 0);
    let mut wrong = Vec::new();
    let cases = files(&base).into_iter().map(|f| (f, false)).chain(files(&base.join("auto-translated")).into_iter().map(|f| (f, true)));
    for (f, auto) in cases {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let must_pass = name.starts_with("pass-");
        assert!(must_pass || name.starts_with("fail-"), "{name}: neither pass nor fail");
        let text = std::fs::read_to_string(&f).unwrap();
        let r = parse_metadata(input(&text, must_pass).as_bytes());
        match (must_pass, auto) {
            (true, true) => translated += 1,
            (true, false) => pass += 1,
            (false, _) => fail += 1,
        }
        match (r, must_pass) {
            (Ok(t), true) => assert_eq!(t.major, 2, "{name}"),
            (Err(e), false) => {
                let msg = e.to_string();
                // yactfr's message is a chain of "In object property `NAME`:" lines: the last
                // property it names must be on our JSON path (the same place is blamed).
                let expected = text.rsplit("\n---\n").next().unwrap_or("");
                let last_prop = expected.lines().filter_map(|l| l.split("In object property `").nth(1)).filter_map(|r| r.split('`').next()).next_back();
                if let (Some(prop), Error::Ctf2 { path, .. }) = (last_prop, &e) {
                    if !path.split('/').any(|seg| seg == prop) {
                        wrong.push(format!("{name}: blames {path}, yactfr blames property `{prop}`: {msg}"));
                    }
                }
                assert!(matches!(e, Error::Ctf2 { fragment, .. } if fragment > 0), "{name}: not a CTF 2 fragment error: {msg}");
                assert!(!msg.contains('\n'), "{name}: the error is not one line: {msg}");
                println!("{name}: {msg}");
            }
            (Ok(_), false) => wrong.push(format!("{name}: accepted")),
            (Err(e), true) => wrong.push(format!("{name}: rejected: {e}")),
        }
    }
    println!("yactfr ctf-2 metadata: {pass} pass + {translated} auto-translated pass + {fail} fail cases, {} wrong", wrong.len());
    assert_eq!((pass, translated, fail), (13, 139, 220), "case counts");
    assert!(wrong.is_empty(), "{} wrong verdicts:\n{}", wrong.len(), wrong.join("\n"));
}
