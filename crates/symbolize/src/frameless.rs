//! Unwinding through code that has neither call-frame information nor a frame pointer,
//! from its instructions: the stack height at a point of a short piece of x86_64 code
//! (pushes, pops, `sub`/`add` of the stack pointer, calls, `endbr64`, no-ops). It covers
//! CPython's perf trampolines (`python3.12 -X perf`: `sub $8,%rsp; call *%rcx; add $8,%rsp;
//! ret`, copied once per Python function into anonymous memory), whose caller would otherwise
//! be lost: the interpreter is not built with frame pointers.

/// Bytes pushed below the return address after the instructions of `code[..upto]` have run;
/// None when an instruction is not one of those understood (or `upto` is not on an
/// instruction boundary).
pub(crate) fn x86_64_height(code: &[u8], upto: usize) -> Option<u64> {
    let mut at = 0usize;
    let mut h: i64 = 0;
    while at < upto {
        let b = |k: usize| code.get(at + k).copied();
        let (len, delta): (usize, i64) = match (b(0)?, b(1), b(2)) {
            (0x50..=0x57, _, _) => (1, 8),
            (0x58..=0x5f, _, _) => (1, -8),
            (0x41, Some(0x50..=0x57), _) => (2, 8),
            (0x41, Some(0x58..=0x5f), _) => (2, -8),
            (0x48, Some(0x83), Some(0xec)) => (4, b(3)? as i8 as i64),
            (0x48, Some(0x83), Some(0xc4)) => (4, -(b(3)? as i8 as i64)),
            (0x48, Some(0x81), Some(0xec | 0xc4)) => {
                let v = i32::from_le_bytes([b(3)?, b(4)?, b(5)?, b(6)?]) as i64;
                (7, if b(2) == Some(0xec) { v } else { -v })
            }
            (0x48, Some(0x89), Some(0xe5)) | (0x48, Some(0x8b), Some(0xec)) => (3, 0), // mov %rsp,%rbp
            (0xff, Some(0xd0..=0xd7), _) => (2, 0),                                   // call *%reg
            (0x41, Some(0xff), Some(0xd0..=0xd7)) => (3, 0),
            (0xe8, _, _) => (5, 0), // call rel32
            (0xff, Some(0x15), _) => (6, 0),
            (0xf3, Some(0x0f), Some(0x1e)) if b(3) == Some(0xfa) => (4, 0), // endbr64
            (0x90, _, _) => (1, 0),
            (0x66, Some(0x90), _) => (2, 0),
            (0x0f, Some(0x1f), Some(0x00)) => (3, 0),
            (0x0f, Some(0x1f), Some(0x40)) => (4, 0),
            (0x0f, Some(0x1f), Some(0x44)) => (5, 0),
            _ => return None,
        };
        h += delta;
        at += len;
    }
    (at == upto && h >= 0).then_some(h as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpython_trampoline() {
        // CPython 3.12/3.13 `_Py_trampoline_func_start` on x86_64.
        let t = [0x48, 0x83, 0xec, 0x08, 0xff, 0xd1, 0x48, 0x83, 0xc4, 0x08, 0xc3];
        assert_eq!(x86_64_height(&t, 0), Some(0));
        assert_eq!(x86_64_height(&t, 4), Some(8));
        assert_eq!(x86_64_height(&t, 6), Some(8), "at the return address of the call");
        assert_eq!(x86_64_height(&t, 10), Some(0));
        assert_eq!(x86_64_height(&t, 5), None, "inside an instruction");
        // push %rbp; mov %rsp,%rbp; call *%rcx; pop %rbp; ret
        let fp = [0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0xc3];
        assert_eq!(x86_64_height(&fp, 6), Some(8));
        assert_eq!(x86_64_height(&[0xcc], 1), None);
    }
}
