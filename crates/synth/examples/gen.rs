//! `cargo run --release -p tracelens-synth --example gen -- DIR EVENTS [CPUS THREADS]`
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let mut o = tracelens_synth::Options { events: a[2].parse().unwrap(), ..Default::default() };
    if a.len() > 4 {
        o.cpus = a[3].parse().unwrap();
        o.threads = a[4].parse().unwrap();
    }
    let s = tracelens_synth::generate(std::path::Path::new(&a[1]), &o).unwrap();
    println!("{s:?}");
}
