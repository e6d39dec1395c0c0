//! The unwinder on a stack it can check without privileges: this test's own. The registers
//! and a copy of the stack are taken as a sample would take them, the maps from
//! `/proc/self/maps`; the unwound frames must name the functions of the call chain, in order.

#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

use tracelens_symbolize::{Mapping, ProcessMaps, Stop, Symbolizer};

fn exec_maps() -> (ProcessMaps, Vec<(u64, u64)>) {
    let text = std::fs::read_to_string("/proc/self/maps").unwrap();
    let mut pm = ProcessMaps::default();
    let mut all = Vec::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        let (a, b) = f[0].split_once('-').unwrap();
        let (a, b) = (u64::from_str_radix(a, 16).unwrap(), u64::from_str_radix(b, 16).unwrap());
        all.push((a, b));
        if f[1].contains('x') {
            let path = f.get(5).map(|s| s.to_string()).unwrap_or_default();
            pm.insert(Mapping { start: a, end: b, pgoff: u64::from_str_radix(f[2], 16).unwrap(), path, build_id: String::new() });
        }
    }
    (pm, all)
}

/// Registers (perf's x86_64 order for mask 0xff01ff) and a copy of the stack, here.
#[inline(never)]
fn sample_here() -> (Vec<u64>, Vec<u8>) {
    let (sp, bp, ip, bx, r12, r13, r14, r15): (u64, u64, u64, u64, u64, u64, u64, u64);
    // SAFETY: reads registers only.
    unsafe {
        std::arch::asm!(
            "mov {sp}, rsp", "mov {bp}, rbp", "lea {ip}, [rip]", "mov {bx}, rbx",
            "mov {r12}, r12", "mov {r13}, r13", "mov {r14}, r14", "mov {r15}, r15",
            sp = out(reg) sp, bp = out(reg) bp, ip = out(reg) ip, bx = out(reg) bx,
            r12 = out(reg) r12, r13 = out(reg) r13, r14 = out(reg) r14, r15 = out(reg) r15,
        );
    }
    let (_, ranges) = exec_maps();
    let end = ranges.iter().find(|(a, b)| sp >= *a && sp < *b).map(|r| r.1).unwrap();
    let len = ((end - sp) as usize).min(32 * 1024);
    // SAFETY: [sp, sp + len) is inside this thread's stack mapping, above the live frame.
    let stack = unsafe { std::slice::from_raw_parts(sp as *const u8, len) }.to_vec();
    // AX BX CX DX SI DI BP SP IP R8 R9 R10 R11 R12 R13 R14 R15
    let regs = vec![0, bx, 0, 0, 0, 0, bp, sp, ip, 0, 0, 0, 0, r12, r13, r14, r15];
    (regs, stack)
}

#[inline(never)]
fn level_two() -> (Vec<u64>, Vec<u8>) {
    let r = sample_here();
    std::hint::black_box(r)
}

#[inline(never)]
fn level_one() -> (Vec<u64>, Vec<u8>) {
    let r = level_two();
    std::hint::black_box(r)
}

#[test]
fn unwinds_its_own_stack() {
    let (regs, stack) = level_one();
    let (maps, _) = exec_maps();
    let mut sym = Symbolizer::new();
    sym.set_maps(1, maps);
    let (frames, stop) = sym.unwind_raw(1, &regs, 0xff01ff, &stack).expect("x86_64 mask");
    let names: Vec<String> = frames.iter().map(|f| f.symbol.function.clone().unwrap_or_else(|| "??".into())).collect();
    let pos = |n: &str| names.iter().position(|f| f.ends_with(n)).unwrap_or_else(|| panic!("no {n} in {names:?}"));
    let (a, b, c) = (pos("sample_here"), pos("level_two"), pos("level_one"));
    assert!(a < b && b < c, "{names:?}");
    // On past the test's own frames (the test harness, the thread start in libc).
    assert!(frames.len() > c + 2, "{names:?}");
    // Source lines come from this test's debug information.
    assert!(frames[b].symbol.file.as_deref().is_some_and(|f| f.ends_with("self_unwind.rs")), "{:?}", frames[b]);
    assert!(matches!(stop, Stop::End | Stop::StackCopy | Stop::NoInfo), "{stop:?}");
}
