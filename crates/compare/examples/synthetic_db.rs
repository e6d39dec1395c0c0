//! Writes a synthetic executions database (`tracelens_compare::synthetic`), for benchmarks
//! and demonstrations of `tracelens compare`:
//!
//! ```sh
//! cargo run --release -p tracelens-compare --example synthetic_db -- /tmp/1m.db 1000000
//! tracelens compare /tmp/1m.db --a 'duration<=p50' --b 'duration>=p90'
//! ```

use tracelens_compare::synthetic::{generate, Shape};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(out), n) = (args.get(1), args.get(2).and_then(|n| n.parse().ok()).unwrap_or(1_000_000)) else {
        eprintln!("usage: synthetic_db OUT.db [EXECUTIONS]");
        std::process::exit(2);
    };
    let db = generate(&Shape { executions: n, ..Shape::default() });
    if let Err(e) = tracelens_compare::db::write(std::path::Path::new(out), &db) {
        eprintln!("synthetic_db: {e}");
        std::process::exit(1);
    }
    let s = db.summary();
    println!("{out}: {} executions, {} metrics, {} nodes, {} pairs", s.executions, s.metrics, s.nodes, s.pairs);
}
