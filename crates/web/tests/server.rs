//! The server over real sockets: it answers the page and the API, refuses peers that are not
//! on loopback and Host names that are not loopback ones (unless bound for others), and
//! survives malformed requests (bad JSON, huge ranges, unknown metrics, oversized bodies,
//! garbage that is not HTTP) with a 4xx and a message, answering the next request as before.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::time::Duration;

use tracelens_compare::synthetic::{generate, Shape};
use tracelens_web::{Model, Server, ServerOptions};

fn start(addr: SocketAddr, allow_remote: bool) -> SocketAddr {
    let db = generate(&Shape { executions: 500, ..Shape::default() });
    let server = Server::bind(Model::new(db, "t.db"), ServerOptions { addr, allow_remote, threads: 2 }).unwrap();
    let a = server.addr();
    std::thread::spawn(move || server.run());
    a
}

/// Sends `raw` to `to` from `from`'s address; (status, body).
fn send(to: SocketAddr, raw: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(to).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(raw).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|x| x.1.to_string()).unwrap_or_default();
    (status, body)
}

fn post(to: SocketAddr, path: &str, body: &str) -> (u16, String) {
    send(to, format!("POST {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).as_bytes())
}

fn get(to: SocketAddr, path: &str, host: &str) -> (u16, String) {
    send(to, format!("GET {path} HTTP/1.0\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes())
}

fn error(body: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"));
    v["error"].as_str().unwrap_or_else(|| panic!("no error message: {body}")).to_string()
}

#[test]
fn malformed_requests_are_4xx_with_a_message_and_the_server_goes_on() {
    let s = start("127.0.0.1:0".parse().unwrap(), false);
    let ok = || {
        let (st, body) = post(s, "/api/view", r#"{"b": {"duration_ns": [0, 1000000000]}}"#);
        assert_eq!(st, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        v["b"]["count"].as_u64().unwrap()
    };
    let before = ok();
    for (path, body, status, says) in [
        ("/api/view", "{\"a\": ", 400, "not JSON"),
        ("/api/view", "\u{0}\u{ff}garbage", 400, "not JSON"),
        ("/api/view", r#"{"a": {"no_such_metric": [1, 2]}}"#, 400, "unknown metric `no_such_metric`"),
        ("/api/view", r#"{"a": {"duration_ns": [5, 1]}}"#, 400, "empty"),
        ("/api/view", r#"{"a": {"duration_ns": [1]}}"#, 400, "not [LO, HI]"),
        ("/api/view", r#"{"log": ["nope"]}"#, 400, "unknown metric `nope`"),
        ("/api/cube", r#"{"group": "b"}"#, 400, "both `group` and `metric`"),
        ("/api/cube", r#"{"group": "z", "metric": "duration_ns"}"#, 400, "not \"a\" or \"b\""),
        ("/api/cube", r#"{}"#, 400, "needs `group`"),
        ("/api/nothing", "{}", 405, "not allowed"),
    ] {
        let (st, b) = post(s, path, body);
        assert_eq!(st, status, "{path} {body}: {b}");
        assert!(error(&b).contains(says), "{path} {body}: {b}");
    }
    // Huge ranges are every execution (clamped), not an error.
    let (st, b) = post(s, "/api/view", r#"{"a": {"duration_ns": [-1e308, 1e308]}, "b": {"timer_ns": [-9223372036854775808, 9223372036854775807]}}"#);
    assert_eq!(st, 200, "{b}");
    let v: serde_json::Value = serde_json::from_str(&b).unwrap();
    assert_eq!((v["a"]["count"].as_u64(), v["b"]["count"].as_u64()), (Some(500), Some(500)));
    // An oversized body.
    let big = format!("{{\"a\": {{}}, \"pad\": \"{}\"}}", "x".repeat(2 << 20));
    let (st, b) = post(s, "/api/view", &big);
    assert_eq!(st, 413, "{b}");
    // Not HTTP at all, a path that does not exist, a method that is not allowed.
    let _ = send(s, b"\x16\x03\x01\x02\x00garbage\r\n\r\n");
    let (st, b) = get(s, "/etc/passwd", "127.0.0.1");
    assert_eq!(st, 404, "{b}");
    let (st, _) = send(s, b"DELETE /api/meta HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    assert_eq!(st, 405);
    let (st, b) = get(s, "/", "localhost");
    assert!(st == 200 && b.contains("<script type=\"importmap\">"), "{st}");
    let (st, b) = get(s, "/api/meta", "[::1]:9");
    assert_eq!(st, 200, "{b}");
    assert_eq!(ok(), before, "the server answers as before");
}

#[test]
fn hosts_that_are_not_loopback_names_are_refused() {
    let s = start("127.0.0.1:0".parse().unwrap(), false);
    for host in ["evil.example", "evil.example:8470", "10.1.2.3"] {
        let (st, b) = get(s, "/api/meta", host);
        assert_eq!(st, 403, "{host}: {b}");
        assert!(error(&b).contains("not a loopback name"), "{b}");
    }
    let (st, b) = send(s, b"GET / HTTP/1.0\r\n\r\n");
    assert_eq!(st, 403, "no Host: {b}");
}

/// This machine's address on its default route, if it has one (no packet is sent).
fn outward_address() -> Option<IpAddr> {
    let u = UdpSocket::bind("0.0.0.0:0").ok()?;
    u.connect("192.0.2.1:9").ok()?;
    let ip = u.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[test]
fn peers_not_on_loopback_are_refused_unless_bound_for_them() {
    let Some(ip) = outward_address() else {
        eprintln!("skipped: this machine has no address but loopback");
        return;
    };
    // Listening on every address, but for loopback peers only.
    let s = start("0.0.0.0:0".parse().unwrap(), false);
    let (st, b) = get(SocketAddr::new(ip, s.port()), "/api/meta", "127.0.0.1");
    assert_eq!(st, 403, "a peer at {ip}: {b}");
    assert!(error(&b).contains("answers only this machine"), "{b}");
    let (st, _) = get(SocketAddr::new([127, 0, 0, 1].into(), s.port()), "/api/meta", "127.0.0.1");
    assert_eq!(st, 200);
    // Bound for others: any peer, any Host.
    let s = start("0.0.0.0:0".parse().unwrap(), true);
    let (st, b) = get(SocketAddr::new(ip, s.port()), "/api/meta", &format!("{ip}:{}", s.port()));
    assert_eq!(st, 200, "{b}");
}
