//! The writer allocates nothing per event once its buffers have grown.

use std::sync::atomic::{AtomicU64, Ordering};

use tracelens_ctf::write::{EventValues, OwnedValue, StreamOptions, StreamWriter};

use crate::*;

struct CountingAlloc;

thread_local! {
    static COUNTING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        if COUNTING.with(|c| c.get()) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        std::alloc::System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        std::alloc::System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        if COUNTING.with(|c| c.get()) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        std::alloc::System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

#[test]
fn no_allocation_per_event() {
    let class = small_class();
    let mut w = StreamWriter::new(&class, 0, "sink", std::io::sink(), Some(std::io::sink()), &StreamOptions { packet_size: 4096, ..StreamOptions::default() }).expect("writer");
    w.set_packet_context("cpu_id", OwnedValue::U(1)).expect("cpu_id");
    let ctx = OwnedValue::structure([OwnedValue::I(1)]);
    let payloads: Vec<(u64, OwnedValue)> = (0..64).map(|k| if k % 2 == 0 { (1, simple_payload(k)) } else { (40, dynamic_payload(k)) }).collect();
    let mut ts = 0;
    let mut write = |w: &mut StreamWriter<std::io::Sink>, n: usize| {
        for k in 0..n {
            let (id, p) = &payloads[k % payloads.len()];
            ts += if k % 100 == 99 { 1 << 30 } else { 500 };
            w.event(*id, ts, EventValues::payload(p).with_common_context(&ctx)).expect("event");
            if k % 1000 == 999 {
                w.discard(2).expect("discard");
            }
        }
    };
    write(&mut w, 1000); // buffers grow to the packet size
    let n = 200_000;
    COUNTING.with(|c| c.set(true));
    let started = std::time::Instant::now();
    write(&mut w, n);
    let secs = started.elapsed().as_secs_f64();
    COUNTING.with(|c| c.set(false));
    let allocations = ALLOCATIONS.load(Ordering::Relaxed);
    let f = w.finish().expect("finish");
    eprintln!("no_allocation_per_event: {n} events in {secs:.3}s ({:.1} M events/s, {} packets), {allocations} allocations", n as f64 / secs / 1e6, f.packets);
    assert_eq!(allocations, 0, "the writer allocated while writing events");
}
