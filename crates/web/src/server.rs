//! The HTTP server: the page's files and a small JSON API, on 127.0.0.1 unless told
//! otherwise.
//!
//! | request | answer |
//! |---|---|
//! | `GET /`, `GET /NAME.js`, `GET /style.css` | the page ([`crate::assets`]) |
//! | `GET /api/meta` | [`crate::model::Meta`] as JSON |
//! | `POST /api/view` with `{"a": {METRIC: [LO, HI]}, "b": {...}, "log": [METRIC]}` | [`crate::model::View`] as JSON |
//! | `POST /api/cube` with the same and `"group": "a"\|"b", "metric": METRIC` | the cube, little-endian f64 ([`Model::cube`]) |
//!
//! A request the API does not understand is a 4xx with `{"error": MESSAGE}`. Unless bound
//! with `allow_remote`, the server answers only peers on loopback, and only requests whose
//! `Host` is a loopback name (so that a web page elsewhere cannot reach it through DNS
//! rebinding).

use std::io::{Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::model::Model;
use crate::{Error, Result};

/// Largest request body read.
pub const MAX_BODY: usize = 1 << 20;

/// Where and for whom to serve.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// The address to listen on (port 0: any free port).
    pub addr: SocketAddr,
    /// Answer peers that are not on loopback (the address is not a loopback one).
    pub allow_remote: bool,
    /// Sizes the connections answered at once (16 per thread).
    pub threads: usize,
}

impl Default for ServerOptions {
    fn default() -> ServerOptions {
        ServerOptions { addr: SocketAddr::from(([127, 0, 0, 1], 0)), allow_remote: false, threads: 4 }
    }
}

/// An answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Content type.
    pub content_type: &'static str,
    /// Body.
    pub body: Vec<u8>,
}

impl Reply {
    fn json(status: u16, v: &impl serde::Serialize) -> Reply {
        match serde_json::to_vec(v) {
            Ok(body) => Reply { status, content_type: "application/json", body },
            Err(e) => Reply::error(500, &format!("cannot write JSON: {e}")),
        }
    }

    /// `{"error": message}` with `status`.
    pub fn error(status: u16, message: &str) -> Reply {
        let body = serde_json::json!({ "error": message }).to_string().into_bytes();
        Reply { status, content_type: "application/json", body }
    }
}

/// Whether `host` (a `Host` header) names this machine by a loopback name.
pub fn loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') { rest.split(']').next().unwrap_or("") } else { host.rsplit_once(':').map_or(host, |(h, _)| h) };
    name.eq_ignore_ascii_case("localhost") || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Answers one request (`path` without its query).
pub fn respond(model: &Model, method: &str, path: &str, body: &[u8]) -> Reply {
    match (method, path) {
        ("GET" | "HEAD", "/api/meta") => Reply::json(200, model.meta()),
        ("POST", "/api/view") => match model.parse(body) {
            Ok((req, None)) => match model.view_json(&req) {
                Ok(body) => Reply { status: 200, content_type: "application/json", body },
                Err(e) => Reply::error(500, &format!("cannot write JSON: {e}")),
            },
            Ok((_, Some(_))) => Reply::error(400, "group and metric are for /api/cube"),
            Err(e) => Reply::error(400, &e.to_string()),
        },
        ("POST", "/api/cube") => match model.parse(body) {
            Ok((req, Some((which, m)))) => Reply { status: 200, content_type: "application/octet-stream", body: model.cube(&req, which, m) },
            Ok((_, None)) => Reply::error(400, "a cube needs `group` (\"a\" or \"b\") and `metric`"),
            Err(e) => Reply::error(400, &e.to_string()),
        },
        (_, "/api/meta" | "/api/view" | "/api/cube") => Reply::error(405, &format!("{method} is not allowed on {path}")),
        ("GET" | "HEAD", p) => match crate::assets::get(p) {
            Some((ct, text)) => Reply { status: 200, content_type: ct, body: text.as_bytes().to_vec() },
            None => Reply::error(404, &format!("no {p} here")),
        },
        _ => Reply::error(405, &format!("{method} is not allowed on {path}")),
    }
}

/// The server, listening.
pub struct Server {
    listener: TcpListener,
    model: Arc<Model>,
    opts: ServerOptions,
    addr: SocketAddr,
}

impl Server {
    /// Listens on `opts.addr` for the page of `model`.
    pub fn bind(model: Model, opts: ServerOptions) -> Result<Server> {
        let listen = |e: std::io::Error| Error::Listen { addr: opts.addr.to_string(), message: e.to_string() };
        let listener = TcpListener::bind(opts.addr).map_err(listen)?;
        let addr = listener.local_addr().map_err(listen)?;
        Ok(Server { listener, model: Arc::new(model), opts, addr })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The page's URL.
    pub fn url(&self) -> String {
        let host = if self.addr.ip().is_unspecified() { IpAddr::from([127, 0, 0, 1]) } else { self.addr.ip() };
        format!("http://{}/", SocketAddr::new(host, self.addr.port()))
    }

    /// Answers requests until the process ends: one thread per connection (at most
    /// `threads` × 16 at once; more are answered 503), one request per connection.
    pub fn run(self) {
        let busy = Arc::new(AtomicUsize::new(0));
        let most = self.opts.threads.max(1) * 16;
        for conn in self.listener.incoming() {
            let Ok(mut stream) = conn else { continue };
            if busy.fetch_add(1, Ordering::SeqCst) >= most {
                busy.fetch_sub(1, Ordering::SeqCst);
                let _ = write_reply(&mut stream, &Reply::error(503, "too many connections; try again"), false);
                continue;
            }
            let (model, busy, allow_remote) = (self.model.clone(), busy.clone(), self.opts.allow_remote);
            std::thread::spawn(move || {
                serve_connection(&model, stream, allow_remote);
                busy.fetch_sub(1, Ordering::SeqCst);
            });
        }
    }
}

/// Largest request head (request line and headers).
const MAX_HEAD: usize = 16 << 10;

/// A request's head: method, path (without its query) and the headers we read.
struct Head {
    method: String,
    path: String,
    host: Option<String>,
    length: Option<usize>,
    chunked: bool,
}

fn parse_head(text: &str) -> std::result::Result<Head, String> {
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or_default();
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(format!("not an HTTP request line: {:?}", line.chars().take(80).collect::<String>()));
    };
    if !version.starts_with("HTTP/1.") || method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) || !target.starts_with('/') {
        return Err(format!("not an HTTP/1 request line: {:?}", line.chars().take(80).collect::<String>()));
    }
    let mut head = Head { method: method.to_string(), path: target.split(['?', '#']).next().unwrap_or("/").to_string(), host: None, length: None, chunked: false };
    for l in lines.filter(|l| !l.is_empty()) {
        let Some((name, value)) = l.split_once(':') else { return Err(format!("not a header: {:?}", l.chars().take(80).collect::<String>())) };
        let value = value.trim();
        if name.eq_ignore_ascii_case("host") {
            head.host = Some(value.to_string());
        } else if name.eq_ignore_ascii_case("content-length") {
            head.length = Some(value.parse().map_err(|_| format!("Content-Length {value:?} is not a number"))?);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            head.chunked = true;
        }
    }
    Ok(head)
}

/// Reads one request from `stream`, answers it and closes the connection.
fn serve_connection(model: &Model, mut stream: TcpStream, allow_remote: bool) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(20)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(60)));
    let peer = stream.peer_addr().map(|a| a.ip()).ok();
    // The head, up to the blank line.
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(k) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break Some(k);
        }
        if buf.len() > MAX_HEAD {
            break None;
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let reply = match end {
        None => Reply::error(431, &format!("request heads are at most {MAX_HEAD} bytes")),
        Some(k) => match std::str::from_utf8(&buf[..k]).map_err(|_| "the request head is not UTF-8".to_string()).and_then(parse_head) {
            Err(m) => Reply::error(400, &m),
            Ok(head) => answer(model, &mut stream, &head, buf[k + 4..].to_vec(), peer, allow_remote),
        },
    };
    let head_only = buf.starts_with(b"HEAD ");
    let _ = write_reply(&mut stream, &reply, head_only);
    if matches!(reply.status, 411 | 413 | 431) {
        // Refused before its body (or head) was read: closing with input unread would reset
        // the connection, and the client could lose the reply. Half-close, and read what it
        // still sends for a moment (bounded).
        let _ = stream.shutdown(Shutdown::Write);
        let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
        let mut drained = 0;
        while drained < 4 * MAX_BODY {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => drained += n,
            }
        }
    }
    let _ = stream.shutdown(Shutdown::Both);
}

fn answer(model: &Model, stream: &mut TcpStream, head: &Head, mut body: Vec<u8>, peer: Option<IpAddr>, allow_remote: bool) -> Reply {
    if !allow_remote && !peer.is_some_and(|ip| ip.to_canonical().is_loopback()) {
        return Reply::error(403, "tracelens serve answers only this machine (loopback); start it with --bind ADDRESS to serve others");
    }
    if !allow_remote && !head.host.as_deref().is_some_and(loopback_host) {
        return Reply::error(403, &format!("Host {} is not a loopback name (localhost, 127.0.0.1, [::1]); start tracelens serve with --bind ADDRESS to serve others", head.host.as_deref().unwrap_or("(none)")));
    }
    if head.chunked {
        return Reply::error(411, "send the body with a Content-Length");
    }
    let length = head.length.unwrap_or(0);
    if length > MAX_BODY {
        return Reply::error(413, &format!("request bodies are at most {MAX_BODY} bytes"));
    }
    if body.len() < length {
        let missing = length - body.len();
        let mut rest = Vec::with_capacity(missing);
        if let Err(e) = stream.take(missing as u64).read_to_end(&mut rest) {
            return Reply::error(400, &format!("cannot read the request body: {e}"));
        }
        body.extend_from_slice(&rest);
    }
    if body.len() < length {
        return Reply::error(400, &format!("the request body ended after {} of its {length} bytes", body.len()));
    }
    body.truncate(length);
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| respond(model, &head.method, &head.path, &body))).unwrap_or_else(|_| Reply::error(500, "internal error (a bug: please report it)"))
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        411 => "Length Required",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Internal Server Error",
    }
}

fn write_reply(stream: &mut TcpStream, r: &Reply, head_only: bool) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n\
         Content-Security-Policy: default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data:\r\n\r\n",
        r.status,
        reason(r.status),
        r.content_type,
        r.body.len()
    );
    let mut out = head.into_bytes();
    if !head_only {
        out.extend_from_slice(&r.body);
    }
    stream.write_all(&out)?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for h in ["localhost", "localhost:8080", "127.0.0.1:1", "127.3.2.1", "[::1]:80", "[::1]", "LOCALHOST"] {
            assert!(loopback_host(h), "{h}");
        }
        for h in ["example.com", "evil.localhost.example:80", "10.0.0.1:80", "[fe80::1]:80", ""] {
            assert!(!loopback_host(h), "{h}");
        }
    }

    #[test]
    fn request_heads() {
        let h = parse_head("POST /api/view?x=1 HTTP/1.1\r\nHost: localhost:1\r\ncontent-length: 12").unwrap();
        assert_eq!((h.method.as_str(), h.path.as_str(), h.host.as_deref(), h.length, h.chunked), ("POST", "/api/view", Some("localhost:1"), Some(12), false));
        for bad in ["", "GET", "GET / HTTP/1.1 x", "get / HTTP/1.1", "GET x HTTP/1.1", "GET / SPDY/3", "GET / HTTP/1.1\r\nno colon", "GET / HTTP/1.1\r\nContent-Length: -1"] {
            assert!(parse_head(bad).is_err(), "{bad:?}");
        }
    }
}
