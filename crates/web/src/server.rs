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

use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

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
    /// Threads answering requests.
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
            Ok((req, None)) => Reply::json(200, &model.view(&req)),
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
    http: Arc<tiny_http::Server>,
    model: Arc<Model>,
    opts: ServerOptions,
    addr: SocketAddr,
}

impl Server {
    /// Listens on `opts.addr` for the page of `model`.
    pub fn bind(model: Model, opts: ServerOptions) -> Result<Server> {
        let http = tiny_http::Server::http(opts.addr).map_err(|e| Error::Listen { addr: opts.addr.to_string(), message: e.to_string() })?;
        let addr = http.server_addr().to_ip().ok_or_else(|| Error::Listen { addr: opts.addr.to_string(), message: "not an IP address".into() })?;
        Ok(Server { http: Arc::new(http), model: Arc::new(model), opts, addr })
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

    /// Answers requests until the process ends.
    pub fn run(self) {
        let threads: Vec<_> = (0..self.opts.threads.max(1))
            .map(|_| {
                let (http, model, allow_remote) = (self.http.clone(), self.model.clone(), self.opts.allow_remote);
                std::thread::spawn(move || loop {
                    match http.recv() {
                        Ok(r) => handle(&model, r, allow_remote),
                        Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
                    }
                })
            })
            .collect();
        for t in threads {
            let _ = t.join();
        }
    }
}

fn handle(model: &Model, mut r: tiny_http::Request, allow_remote: bool) {
    let method = r.method().as_str().to_ascii_uppercase();
    let path = r.url().split('?').next().unwrap_or("/").to_string();
    let peer = r.remote_addr().map(|a| a.ip());
    let host = r.headers().iter().find(|h| h.field.equiv("Host")).map(|h| h.value.as_str().to_string());
    let length = r.body_length();
    let reply = if !allow_remote && !peer.is_some_and(|ip| ip.is_loopback() || ip.to_canonical().is_loopback()) {
        Reply::error(403, "tracelens serve answers only this machine (loopback); start it with --bind ADDRESS to serve others")
    } else if !allow_remote && !host.as_deref().is_some_and(loopback_host) {
        Reply::error(403, &format!("Host {} is not a loopback name (localhost, 127.0.0.1, [::1]); start tracelens serve with --bind ADDRESS to serve others", host.as_deref().unwrap_or("(none)")))
    } else if length.is_some_and(|n| n > MAX_BODY) {
        Reply::error(413, &format!("request bodies are at most {MAX_BODY} bytes"))
    } else {
        let mut body = Vec::new();
        match r.as_reader().take(MAX_BODY as u64 + 1).read_to_end(&mut body) {
            Err(e) => Reply::error(400, &format!("cannot read the request: {e}")),
            Ok(_) if body.len() > MAX_BODY => Reply::error(413, &format!("request bodies are at most {MAX_BODY} bytes")),
            Ok(_) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| respond(model, &method, &path, &body)))
                .unwrap_or_else(|_| Reply::error(500, "internal error (a bug: please report it)")),
        }
    };
    let header = |k: &str, v: &str| tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()).ok();
    let mut resp = tiny_http::Response::from_data(reply.body).with_status_code(reply.status);
    for h in [
        header("Content-Type", reply.content_type),
        header("Cache-Control", "no-store"),
        header("X-Content-Type-Options", "nosniff"),
        header("Content-Security-Policy", "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data:"),
    ]
    .into_iter()
    .flatten()
    {
        resp.add_header(h);
    }
    let _ = r.respond(resp);
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
}
