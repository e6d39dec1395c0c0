//! The page's files, embedded in the binary: our own HTML, CSS and JavaScript modules (no
//! build step, no third-party code).

/// `(path, content type, text)` of every file the server serves.
pub const FILES: [(&str, &str, &str); 9] = [
    ("/", "text/html; charset=utf-8", include_str!("assets/index.html")),
    ("/style.css", "text/css; charset=utf-8", include_str!("assets/style.css")),
    ("/format.js", JS, include_str!("assets/format.js")),
    ("/state.js", JS, include_str!("assets/state.js")),
    ("/hist.js", JS, include_str!("assets/hist.js")),
    ("/flame.js", JS, include_str!("assets/flame.js")),
    ("/groups.js", JS, include_str!("assets/groups.js")),
    ("/local.js", JS, include_str!("assets/local.js")),
    ("/app.js", JS, include_str!("assets/app.js")),
];

const JS: &str = "text/javascript; charset=utf-8";

/// The file served at `path` (`/index.html` is `/`): its content type and text.
pub fn get(path: &str) -> Option<(&'static str, &'static str)> {
    let path = if path == "/index.html" { "/" } else { path };
    FILES.iter().find(|f| f.0 == path).map(|f| (f.1, f.2))
}

/// The modules in dependency order (each imports only earlier ones, as `tl/NAME.js`).
pub fn modules() -> impl Iterator<Item = (&'static str, &'static str)> {
    FILES.iter().filter(|f| f.0.ends_with(".js")).map(|f| (f.0, f.2))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Modules import only earlier modules, as `tl/NAME.js` (the import map of the page
    /// and of the self-contained file says where they are).
    #[test]
    fn modules_import_earlier_modules_only() {
        let mut seen: Vec<&str> = Vec::new();
        for (path, text) in modules() {
            for line in text.lines().filter(|l| l.starts_with("import ")) {
                let from = line.split('\'').nth(1).unwrap_or_default();
                let target = from.strip_prefix("tl").unwrap_or("not tl/");
                assert!(seen.contains(&target), "{path}: {line}: not an earlier module");
            }
            seen.push(path);
        }
        assert!(get("/app.js").is_some() && get("/index.html").is_some() && get("/x").is_none());
    }
}
