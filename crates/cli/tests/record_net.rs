//! `tracelens io`'s network tables on a recording of a transfer of a known size:
//! `tests/data/net_transfer.c` sends COUNT UDP datagrams of SIZE bytes over the loopback
//! interface of a network namespace of its own, renamed so that no other traffic shares its
//! name, recorded with `record -e net,sched,syscalls,irq` (issue 15). On the loopback
//! interface, `net_dev_queue`'s `len` is the datagram plus its UDP (8), IPv4 (20) and
//! Ethernet (14) headers, `netif_receive_skb`'s the same without the Ethernet header; every
//! datagram is sent by the program's thread, in its `sendto`.
//!
//! Needs root and tracefs (skipped, with a message, without them), a C compiler, and network
//! namespaces (skipped when `unshare(CLONE_NEWNET)` is refused).

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{exe, recording_lock, recording_skip_reason};

const COUNT: u64 = 200;
const SIZE: u64 = 1000;
const IFNAME: &str = "tlnet0";

/// A directory under the build's temporary directory, removed on drop.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

#[test]
fn io_network_tables_count_a_known_transfer() {
    if let Some(why) = recording_skip_reason() {
        eprintln!("io network recording: skipped: {why}");
        return;
    }
    let _serial = recording_lock();
    let tmp = Scratch(Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("record-net-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&tmp.0);
    std::fs::create_dir_all(&tmp.0).unwrap();
    let bin = tmp.0.join("net_transfer");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/net_transfer.c");
    match Command::new("cc").args(["-O1", "-o"]).arg(&bin).arg(&src).status() {
        Ok(s) => assert!(s.success(), "cc failed on {}", src.display()),
        Err(e) => {
            eprintln!("io network recording: skipped: no C compiler (`cc`: {e})");
            return;
        }
    }
    // The program alone first: can it make its namespace here?
    let alone = Command::new(&bin).args([IFNAME, "1", "1"]).output().unwrap();
    if alone.status.code() == Some(77) {
        eprintln!("io network recording: skipped: {}", String::from_utf8_lossy(&alone.stderr).trim());
        return;
    }
    assert!(alone.status.success(), "net_transfer: {}", String::from_utf8_lossy(&alone.stderr));

    let rec = tmp.0.join("rec");
    let run = Command::new(exe())
        .args(["record", "-q", "-e", "net,sched,syscalls,irq", "-o"])
        .arg(&rec)
        .arg("--")
        .arg(&bin)
        .args([IFNAME, &COUNT.to_string(), &SIZE.to_string()])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let printed = String::from_utf8_lossy(&run.stdout);
    let field = |key: &str| -> u64 { printed.split_whitespace().find_map(|w| w.strip_prefix(key)).unwrap_or_else(|| panic!("no {key} in {printed}")).parse().unwrap() };
    let (pid, sent, received) = (field("pid=") as i64, field("sent="), field("received="));
    assert_eq!((sent, received), (COUNT * SIZE, COUNT * SIZE), "the program's own count");

    let json = |args: &[&str]| -> serde_json::Value {
        let o = Command::new(exe()).arg("io").arg(&rec).arg("--json").args(args).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let r = json(&[]);
    assert_eq!(r, json(&["-j", "3", "--chunk-size", "1"]), "io: -j 3, one packet per chunk");
    let net = &r["network"];
    assert_eq!(net["sent_event"], "net_dev_queue", "what `record -e net` records");
    assert_eq!(net["interrupts_traced"], true);
    let traffic = |v: &serde_json::Value| (v["bytes"].as_u64().unwrap(), v["packets"].as_u64().unwrap());
    let iface = net["interfaces"].as_array().unwrap().iter().find(|i| i["name"] == IFNAME).unwrap_or_else(|| panic!("no {IFNAME} in {net}"));
    assert_eq!(traffic(&iface["sent"]), (COUNT * (SIZE + 8 + 20 + 14), COUNT), "sent on {IFNAME}");
    assert_eq!(traffic(&iface["received"]), (COUNT * (SIZE + 8 + 20), COUNT), "received on {IFNAME}");

    // Every datagram is the program's: sent in its thread's context, on that interface only.
    let mine: Vec<&serde_json::Value> = net["threads"].as_array().unwrap().iter().filter(|t| t["interfaces"].as_array().unwrap().iter().any(|i| i["name"] == IFNAME)).collect();
    assert_eq!(mine.len(), 1, "one thread sent on {IFNAME}: {mine:?}");
    assert_eq!(mine[0]["tid"].as_i64(), Some(pid));
    assert_eq!(traffic(&mine[0]["sent"]), (COUNT * (SIZE + 42), COUNT));
    // What it wrote and read through its sockets: the payload.
    let p = r["processes"].as_array().unwrap().iter().find(|p| p["tid"].as_i64() == Some(pid)).expect("the program's I/O row");
    assert_eq!((p["net"]["write"].as_u64(), p["net"]["read"].as_u64()), (Some(sent), Some(received)));

    // The text tables.
    let o = Command::new(exe()).arg("io").arg(&rec).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("Network Sent Bytes (net_dev_queue)") && text.contains(&format!("{COUNT}  {IFNAME}")), "{text}");
}
