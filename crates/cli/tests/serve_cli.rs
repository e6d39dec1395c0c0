//! `tracelens serve` through the binary: it prints its URL and answers there; a file that is
//! not a database and a port already taken are one-line errors (exit 1); `--bind` with an
//! address that is not loopback warns that others can read the database.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

mod common;
use common::exe;

struct Serving(Child, String);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(db: &std::path::Path, extra: &[&str]) -> Serving {
    let mut child = Command::new(exe()).arg("serve").arg(db).args(["--port", "0"]).args(extra).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.split_whitespace().find(|w| w.starts_with("http://")).unwrap_or_else(|| panic!("no URL in {line:?}")).to_string();
    Serving(child, url)
}

fn database(tag: &str) -> std::path::PathBuf {
    let dir = common::scratch("serve", tag);
    let db = dir.join("runs.db");
    let e = tracelens_compare::synthetic::generate(&tracelens_compare::synthetic::Shape { executions: 300, ..Default::default() });
    tracelens_compare::db::write(&db, &e).unwrap();
    db
}

#[test]
fn serve_prints_its_url_and_answers_there() {
    let db = database("url");
    let s = serve(&db, &[]);
    let addr = s.1.trim_start_matches("http://").trim_end_matches('/');
    assert!(addr.starts_with("127.0.0.1:"), "{}", s.1);
    let mut c = TcpStream::connect(addr).unwrap();
    c.write_all(format!("GET /api/meta HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes()).unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    let v: serde_json::Value = serde_json::from_str(out.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(v["executions"], 300);
    assert_eq!(v["title"], "runs.db");
    drop(s);
    let _ = std::fs::remove_dir_all(db.parent().unwrap());
}

#[test]
fn errors_are_one_line() {
    let db = database("errors");
    let not_db = db.with_file_name("not.db");
    std::fs::write(&not_db, "hello").unwrap();
    let o = Command::new(exe()).arg("serve").arg(&not_db).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.lines().count() == 1 && err.contains("not a tracelens executions database"), "{err}");
    let s = serve(&db, &[]);
    let port = s.1.rsplit(':').next().unwrap().trim_end_matches('/').to_string();
    let o = Command::new(exe()).arg("serve").arg(&db).args(["--port", &port]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.lines().count() == 1 && err.contains(&format!("is port {port} taken? (--port 0 picks a free one)")), "{err}");
    drop(s);
    let _ = std::fs::remove_dir_all(db.parent().unwrap());
}

#[test]
fn bound_for_others_it_warns() {
    let db = database("bind");
    let mut s = serve(&db, &["--bind", "0.0.0.0"]);
    let _ = s.0.kill();
    let mut err = String::new();
    s.0.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(err.contains("warning: serving") && err.contains("to any machine that reaches it"), "{err}");
    drop(s);
    let _ = std::fs::remove_dir_all(db.parent().unwrap());
}
