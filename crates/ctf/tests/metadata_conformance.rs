//! Metadata conformance: every TSDL case of the shared fixture traces must get the right
//! verdict (parse or fail). Fixtures live in `../../../shared/traces` from this crate; without
//! them the tests print why they are skipped and pass.

use std::path::{Path, PathBuf};

use tracelens_ctf::parse_metadata;

mod common;
use common::fixtures;

/// Every `metadata` file under `dir`, sorted.
fn metadata_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "metadata") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Sub-directories of `dir` (each one case), sorted.
fn cases(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect())
        .unwrap_or_default();
    out.sort();
    out
}

/// CTF 2 metadata (JSON text sequence): not TSDL, out of scope here.
fn is_ctf2(bytes: &[u8]) -> bool {
    bytes.first() == Some(&0x1E)
}

struct Tally {
    name: &'static str,
    total: usize,
    wrong: Vec<String>,
}

impl Tally {
    fn new(name: &'static str) -> Tally {
        Tally { name, total: 0, wrong: Vec::new() }
    }

    fn check(&mut self, root: &Path, file: &Path, must_pass: bool) {
        self.total += 1;
        let rel = file.strip_prefix(root).unwrap_or(file).display().to_string();
        let bytes = match std::fs::read(file) {
            Ok(b) => b,
            Err(e) => {
                self.wrong.push(format!("{rel}: cannot read: {e}"));
                return;
            }
        };
        match (parse_metadata(&bytes), must_pass) {
            (Ok(_), true) | (Err(_), false) => {}
            (Err(e), true) => self.wrong.push(format!("{rel}: rejected: {e}")),
            (Ok(_), false) => self.wrong.push(format!("{rel}: accepted")),
        }
    }

    fn report(&self) -> bool {
        println!("{}: {}/{} right", self.name, self.total - self.wrong.len(), self.total);
        for w in &self.wrong {
            println!("  WRONG {w}");
        }
        self.wrong.is_empty()
    }
}

fn finish(tallies: &[Tally]) {
    let mut ok = true;
    for t in tallies {
        ok &= t.report();
    }
    let wrong: Vec<&String> = tallies.iter().flat_map(|t| &t.wrong).collect();
    assert!(
        ok,
        "{} wrong verdicts:\n{}",
        wrong.len(),
        wrong.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn ctf_testsuite_metadata() {
    let Some(root) = fixtures() else { return };
    let base = root.join("ctf-testsuite/regression/metadata");
    let mut pass = Tally::new("ctf-testsuite metadata/pass");
    for case in cases(&base.join("pass")) {
        pass.check(&root, &case.join("metadata"), true);
    }
    let mut fail = Tally::new("ctf-testsuite metadata/fail");
    for case in cases(&base.join("fail")) {
        fail.check(&root, &case.join("metadata"), false);
    }
    assert_eq!(pass.total, 53, "metadata/pass case count");
    assert_eq!(fail.total, 78, "metadata/fail case count");
    finish(&[pass, fail]);
}

/// `babeltrace-conformance/fail` cases that fail in their stream data, which is the decoder's
/// business: their verdict here is only reported. (`fail1` and `smalltrace` also declare
/// version 0.1 in their trace block, which this parser rejects.)
const BT_FAIL_IN_DATA: &[&str] =
    &["fail1", "smalltrace", "invalid-packet-size", "valid-events-then-invalid-events"];

#[test]
fn babeltrace_conformance_metadata() {
    let Some(root) = fixtures() else { return };
    let base = root.join("babeltrace-conformance");
    let mut succeed = Tally::new("babeltrace-conformance succeed");
    for f in metadata_files(&base.join("succeed")) {
        succeed.check(&root, &f, true);
    }
    let mut fail = Tally::new("babeltrace-conformance fail (metadata)");
    for case in cases(&base.join("fail")) {
        let name = case.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let in_data = BT_FAIL_IN_DATA.contains(&name.as_str());
        for f in metadata_files(&case) {
            if in_data {
                let rel = f.strip_prefix(&root).unwrap_or(&f).display().to_string();
                match std::fs::read(&f).map(|b| parse_metadata(&b)) {
                    Ok(Ok(_)) => println!("  (data failure case) {rel}: metadata parses"),
                    Ok(Err(e)) => println!("  (data failure case) {rel}: metadata rejected: {e}"),
                    Err(e) => println!("  (data failure case) {rel}: cannot read: {e}"),
                }
            } else {
                fail.check(&root, &f, false);
            }
        }
    }
    for f in metadata_files(&base.join("extra")) {
        succeed.check(&root, &f, true);
    }
    assert!(succeed.total >= 30, "too few succeed cases found");
    assert_eq!(fail.total, 7, "metadata-only fail case count");
    finish(&[succeed, fail]);
}

#[test]
fn tracecompass_metadata() {
    let Some(root) = fixtures() else { return };
    let mut t = Tally::new("tracecompass (CTF 1.8)");
    let mut skipped = 0;
    for f in metadata_files(&root.join("tracecompass")) {
        if std::fs::read(&f).is_ok_and(|b| is_ctf2(&b)) {
            skipped += 1;
            continue;
        }
        t.check(&root, &f, true);
    }
    println!("tracecompass: {skipped} CTF 2 metadata files skipped");
    assert!(t.total >= 40, "too few tracecompass cases found");
    finish(&[t]);
}

#[test]
fn other_fixture_metadata_parses() {
    let Some(root) = fixtures() else { return };
    let mut t = Tally::new("ctf-testsuite stream + generated (metadata must parse)");
    for f in metadata_files(&root.join("ctf-testsuite/regression/stream")) {
        t.check(&root, &f, true);
    }
    for f in metadata_files(&root.join("generated")) {
        t.check(&root, &f, true);
    }
    finish(&[t]);
}

/// yactfr's TSDL vectors: reported, not asserted (yactfr is stricter than the CTF 1.8
/// conformance suite on a few points, e.g. unknown attributes).
#[test]
fn yactfr_metadata_text_score() {
    let Some(root) = fixtures() else { return };
    let dir = root.join("yactfr-tests/tests-metadata-text/ctf-1");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        eprintln!("skipped: {} not found", dir.display());
        return;
    };
    let mut files: Vec<PathBuf> = rd.flatten().map(|e| e.path()).filter(|p| p.is_file()).collect();
    files.sort();
    let (mut right, mut total) = (0, 0);
    let mut wrong = Vec::new();
    for f in files {
        let name = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let must_pass = if name.starts_with("pass-") {
            true
        } else if name.starts_with("fail-") {
            false
        } else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(&f) else { continue };
        // Fail vectors: `---`, the input, `---`, the expected error. Pass vectors: the input.
        let input = if must_pass {
            text.clone()
        } else {
            let mut parts = text.split("\n---\n");
            let first = parts.next().unwrap_or("");
            let first = first.strip_prefix("---\n").unwrap_or(first);
            first.to_string()
        };
        total += 1;
        match (parse_metadata(input.as_bytes()), must_pass) {
            (Ok(_), true) | (Err(_), false) => right += 1,
            (Ok(_), false) => wrong.push(format!("{name}: accepted")),
            (Err(e), true) => wrong.push(format!("{name}: rejected: {e}")),
        }
    }
    println!("yactfr tests-metadata-text/ctf-1: {right}/{total} right");
    for w in &wrong {
        println!("  yactfr WRONG {w}");
    }
}

/// The biggest metadata must parse quickly (timed in release builds only).
#[test]
fn big_kernel_metadata_is_fast() {
    let Some(root) = fixtures() else { return };
    let f = root.join("tracecompass/metadata-only/kernel_vm/metadata");
    let Ok(bytes) = std::fs::read(&f) else { return };
    let t = parse_metadata(&bytes).expect("kernel_vm metadata parses");
    // Best of a few runs (the first one also pays for page faults of a fresh process).
    let mut took = std::time::Duration::MAX;
    for _ in 0..3 {
        let start = std::time::Instant::now();
        let _ = parse_metadata(&bytes);
        took = took.min(start.elapsed());
    }
    let events: usize = t.streams.iter().map(|s| s.events.len()).sum();
    println!("kernel_vm: {} bytes, {events} event classes, parsed in {took:?}", bytes.len());
    assert!(events > 100);
    if !cfg!(debug_assertions) {
        assert!(took.as_millis() < 100, "kernel_vm metadata took {took:?}");
    }
}

/// yactfr's metadata stream vectors (`tests-metadata-stream`): packetized metadata, valid
/// (`pass-*`, 6) or cut short at each header field or with a wrong one (`fail-*`, 24). Their
/// text is not always TSDL (`/* CTF 1.8 */ ...`): only the packet layer is judged, as yactfr
/// judges it — the text must come out, or the stream be rejected (an empty stream has no text).
#[test]
fn yactfr_metadata_streams() {
    let Some(root) = fixtures() else { return };
    let dir = root.join("yactfr-tests/tests-metadata-stream");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).map(|rd| rd.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    files.sort();
    let mut t = Tally::new("yactfr tests-metadata-stream");
    let mut texts = std::collections::HashMap::new();
    for f in &files {
        let name = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let must_pass = name.starts_with("pass-");
        t.total += 1;
        let bytes = std::fs::read(f).unwrap();
        let got = tracelens_ctf::unpacketize(&bytes).and_then(|m| if m.text.trim().is_empty() { Err(tracelens_ctf::Error::metadata(1, 1, "no metadata text")) } else { Ok(m) });
        match (got, must_pass) {
            (Ok(m), true) => {
                texts.insert(name, m.text);
            }
            (Err(_), false) => {}
            (Ok(_), false) => t.wrong.push(format!("{name}: accepted")),
            (Err(e), true) => t.wrong.push(format!("{name}: rejected: {e}")),
        }
    }
    assert_eq!(t.total, 30, "case count");
    // The same text in both byte orders.
    assert_eq!(texts.get("pass-with-signature"), texts.get("pass-with-signature-be"));
    finish(&[t]);
}
