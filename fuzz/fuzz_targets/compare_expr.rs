//! Fuzzes the `compare --a/--b` expressions: parsed against a small synthetic database, and
//! evaluated when they parse.
#![no_main]

use std::sync::OnceLock;

use tracelens_compare::synthetic::{generate, Shape};
use tracelens_compare::{Executions, Expr};

fn db() -> &'static Executions {
    static DB: OnceLock<Executions> = OnceLock::new();
    DB.get_or_init(|| generate(&Shape { executions: 200, ..Shape::default() }))
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(e) = Expr::parse(text, db()) {
        let _ = e.select(db());
    }
});
