//! `tracelens serve` and `compare --html` in a real browser: the tests of
//! `crates/web/tests/browser/page.test.mjs` (Debian's chromium driven by playwright-core,
//! under `node --test`, with `modules.test.mjs`, the page's modules that need no browser) against a database built here from a recording of the TraceCompare
//! case study `sleep` (`tests/data/compare_cases.c`: an occasional sleep, the culprit
//! `maybe_sleep > ... > [timer]`), recorded with `record --stacks --uprobe` as
//! `compare_cases.rs` does. Where recording cannot be done (no root, tracefs or C compiler),
//! a synthetic database stands in, with a note.
//!
//! Skipped, with the reason, without node, chromium or the npm packages (`npm ci` in
//! `crates/web/tests/browser`), unless TRACELENS_BROWSER_TESTS=required (as `.ci/run` sets):
//! then their absence fails.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{exe, recording_lock, recording_skip_reason};

fn browser_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../web/tests/browser")
}

fn chromium() -> PathBuf {
    std::env::var_os("CHROMIUM").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"))
}

fn skip_reason() -> Option<String> {
    if Command::new("node").arg("--version").output().is_err() {
        return Some("no node (apt install nodejs npm)".into());
    }
    if !chromium().is_file() {
        return Some(format!("no browser at {} (apt install chromium, or set CHROMIUM)", chromium().display()));
    }
    if !browser_dir().join("node_modules/playwright-core/package.json").is_file() {
        return Some(format!("no playwright-core (npm ci in {})", browser_dir().display()));
    }
    None
}

/// The sleep case recorded and made a database in `dir`, or why not.
fn recorded(dir: &Path) -> Result<PathBuf, String> {
    if let Some(why) = recording_skip_reason() {
        return Err(why.to_string());
    }
    let bin = common::compile("compare_cases.c", &["-O1", "-g", "-fno-omit-frame-pointer", "-pthread"]).ok_or("no C compiler (cc)")?;
    let _g = recording_lock();
    let (rec, db) = (dir.join("rec"), dir.join("runs.db"));
    let probe = format!("{}:handle_request", bin.display());
    let out = Command::new(exe()).args(["record", "-q", "--stacks", "--uprobe", &probe, "-o"]).arg(&rec).arg("--").arg(&bin).arg("sleep").arg(dir).output().unwrap();
    assert!(out.status.success(), "record: {}", String::from_utf8_lossy(&out.stderr));
    let out = Command::new(exe()).args(["executions", "--function", "handle_request", "-o"]).arg(&db).arg(&rec).output().unwrap();
    assert!(out.status.success(), "executions: {}", String::from_utf8_lossy(&out.stderr));
    Ok(db)
}

#[test]
fn the_page_in_a_real_browser() {
    if let Some(why) = skip_reason() {
        assert!(std::env::var("TRACELENS_BROWSER_TESTS").as_deref() != Ok("required"), "the browser tests are required: {why}");
        eprintln!("the_page_in_a_real_browser: skipped: {why}");
        return;
    }
    let dir = common::scratch("web", "browser");
    let (db, expect) = match recorded(&dir) {
        Ok(db) => (db, "maybe_sleep,[timer]"),
        Err(why) => {
            eprintln!("the_page_in_a_real_browser: recording skipped ({why}): the page tested on a synthetic database instead");
            let db = dir.join("synthetic.db");
            let executions = tracelens_compare::synthetic::generate(&tracelens_compare::synthetic::Shape { executions: 5000, ..Default::default() });
            tracelens_compare::db::write(&db, &executions).unwrap();
            (db, "")
        }
    };
    let out = Command::new("node")
        .args(["--test", "--test-reporter=spec", "modules.test.mjs", "page.test.mjs"])
        .current_dir(browser_dir())
        .env("TRACELENS_BIN", exe())
        .env("TRACELENS_DB", &db)
        .env("TRACELENS_EXPECT", expect)
        .env("CHROMIUM", chromium())
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the browser tests failed:\n{text}");
    assert!(text.contains("pass 11") && text.contains("fail 0"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
