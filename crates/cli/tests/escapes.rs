//! Issue 16, item 7: names from a trace (threads, files, IRQ handlers, stream files) never
//! reach the terminal raw. A synthetic trace whose thread `app0`, file `/etc/hosts`, IRQ
//! handler `eth0` and stream file carry `ESC ] 0 ; ... BEL` (a terminal's "set the window
//! title" sequence) is read by every command with a text report (`threads` and
//! `critical-path` too): the text has the escapes
//! `print` writes (`\e`, `\a`), never the bytes; the JSON has them as JSON escapes.

use std::path::Path;
use std::process::Command;

mod common;
use common::{exe, Synth};

/// Replaces every `from` in `bytes` by `to` (of the same length); how many.
fn replace(bytes: &mut [u8], from: &[u8], to: &[u8]) -> usize {
    assert_eq!(from.len(), to.len());
    let mut n = 0;
    let mut i = 0;
    while i + from.len() <= bytes.len() {
        if &bytes[i..i + from.len()] == from {
            bytes[i..i + from.len()].copy_from_slice(to);
            n += 1;
            i += from.len();
        } else {
            i += 1;
        }
    }
    n
}

/// The synthetic trace with the names made hostile (in place: same lengths).
fn hostile(dir: &Path) {
    let mut seen = [0; 3];
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if !p.file_name().unwrap().to_string_lossy().starts_with("channel") {
            continue;
        }
        let mut b = std::fs::read(&p).unwrap();
        seen[0] += replace(&mut b, b"app0", b"\x1b]0\x07");
        seen[1] += replace(&mut b, b"/etc/hosts", b"/\x1b]0;x\x07sts");
        seen[2] += replace(&mut b, b"eth0", b"\x1b]0\x07");
        std::fs::write(&p, b).unwrap();
    }
    assert!(seen.iter().all(|&n| n > 0), "the synthetic trace names app0, /etc/hosts and eth0: {seen:?}");
    std::fs::rename(dir.join("channel0_0"), dir.join("channel0_0\x1b]0;\x07")).unwrap();
    // The index names the stream files: read the packets from the streams instead.
    std::fs::remove_dir_all(dir.join("index")).unwrap();
}

#[test]
fn issue16_control_characters_from_the_trace_are_escaped_in_every_text_report() {
    let t = Synth::new("escapes", &["--events", "20000", "--cpus", "2", "--threads", "8", "--packet-size", "4096"]);
    hostile(&t.0);
    // app0 is thread 1000 of the synthetic trace.
    let commands: [&[&str]; 8] = [&["stats"], &["cpu"], &["sched"], &["io"], &["syscalls"], &["irq"], &["threads"], &["critical-path", "--tid", "1000"]];
    for args in commands {
        let cmd = args[0];
        for json in [false, true] {
            let out = Command::new(exe()).args(args).arg(&t.0).args(json.then_some("--json")).output().unwrap();
            assert!(out.status.success(), "{cmd}: {}", String::from_utf8_lossy(&out.stderr));
            let raw = out.stdout.iter().filter(|&&b| b == 0x1b || b == 0x07).count();
            assert_eq!(raw, 0, "{cmd} (json: {json}) writes {raw} raw ESC/BEL bytes");
            let text = String::from_utf8(out.stdout).unwrap();
            if json {
                let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{cmd} --json: {e}"));
                assert!(v.to_string().contains("\\u001b]0"), "{cmd} --json has the name, escaped");
            } else {
                assert!(text.contains("\\e]0"), "{cmd} prints the name with `\\e`:\n{text}");
            }
        }
    }
}
