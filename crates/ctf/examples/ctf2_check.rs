//! Parses metadata files given as arguments and prints the verdict (development aid).
fn main() {
    for a in std::env::args().skip(1) {
        let bytes = std::fs::read(&a).unwrap();
        match tracelens_ctf::parse_metadata(&bytes) {
            Ok(t) => println!("OK {a}: {} streams, {} clocks", t.streams.len(), t.clocks.len()),
            Err(e) => println!("ERR {a}: {e}"),
        }
    }
}
