//! Counts the events of each trace given on the command line: `cargo run --example count T...`.

use tracelens_ctf::{Item, Trace};

fn main() {
    for path in std::env::args().skip(1) {
        let trace = match Trace::open(&path) {
            Ok(t) => t,
            Err(e) => {
                println!("{path}: error: {e}");
                continue;
            }
        };
        let (mut events, mut discarded, mut lost) = (0u64, 0u64, 0u64);
        let mut err = None;
        'streams: for i in 0..trace.streams.len() {
            let mut c = trace.cursor(i);
            loop {
                match c.advance() {
                    Ok(Some(Item::Event)) => events += 1,
                    Ok(Some(Item::DiscardedEvents { count, .. })) => discarded += count,
                    Ok(Some(Item::DiscardedPackets { count, .. })) => lost += count,
                    Ok(None) => break,
                    Err(e) => {
                        err = Some(e);
                        break 'streams;
                    }
                }
            }
        }
        match err {
            None => println!("{path}: {events} events, {discarded} discarded, {lost} lost packets"),
            Some(e) => println!("{path}: {events} events then error: {e}"),
        }
    }
}
