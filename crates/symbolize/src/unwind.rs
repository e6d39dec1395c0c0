//! Walking a sampled user stack: DWARF call-frame information where the code has it, frame
//! pointers where it does not, reading memory only from the stack copy.

use std::rc::Rc;

use gimli::{CfaRule, Register, RegisterRule, UnwindContext};

use crate::module::Module;

/// Register conventions of one architecture (perf's register numbers to DWARF's).
#[derive(Debug)]
pub struct Arch {
    /// Name, for messages.
    pub name: &'static str,
    /// Registers tracked, in DWARF numbering (plus the instruction pointer's slot).
    nregs: usize,
    /// Slot of the instruction pointer.
    ip: usize,
    /// DWARF number of the stack pointer.
    sp: u16,
    /// DWARF number of the frame pointer.
    fp: u16,
    /// DWARF return-address column.
    ra: u16,
    /// Whether the return address is in a register at a function's entry (aarch64's x30)
    /// rather than on the stack.
    ra_in_register: bool,
    /// Registers a callee preserves: their caller's values are found through the CFI.
    callee_saved: &'static [u16],
    /// perf register number to slot.
    slot_of_perf: fn(u32) -> Option<usize>,
}

/// x86_64: perf's AX BX CX DX SI DI BP SP IP ... R8..R15; DWARF's rax rdx rcx rbx rsi rdi rbp
/// rsp r8..r15, return address 16.
pub static X86_64: Arch = Arch {
    name: "x86_64",
    nregs: 17,
    ip: 16,
    sp: 7,
    fp: 6,
    ra: 16,
    ra_in_register: false,
    callee_saved: &[3, 6, 12, 13, 14, 15],
    slot_of_perf: |p| match p {
        0 => Some(0),
        1 => Some(3),
        2 => Some(2),
        3 => Some(1),
        4 => Some(4),
        5 => Some(5),
        6 => Some(6),
        7 => Some(7),
        8 => Some(16),
        16..=23 => Some(p as usize - 8),
        _ => None,
    },
};

/// aarch64: perf's X0..X30, SP, PC; DWARF's x0..x30, sp 31 (the PC in slot 32).
pub static AARCH64: Arch = Arch {
    name: "aarch64",
    nregs: 33,
    ip: 32,
    sp: 31,
    fp: 29,
    ra: 30,
    ra_in_register: true,
    callee_saved: &[19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30],
    slot_of_perf: |p| if p <= 32 { Some(p as usize) } else { None },
};

impl Arch {
    /// The architecture whose perf register mask `mask` is (as the recorder writes it).
    pub fn for_mask(mask: u64) -> Option<&'static Arch> {
        match mask {
            0xff01ff => Some(&X86_64),
            m if m == (1u64 << 33) - 1 => Some(&AARCH64),
            _ => None,
        }
    }
}

/// Why the walk stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// At the outermost frame (the return address is undefined, as at `_start`, or 0).
    End,
    /// The next frame's data is beyond the stack copy.
    StackCopy,
    /// No unwind information and no usable frame pointer.
    NoInfo,
    /// The stack pointer did not move up (a loop or corrupt data).
    NoProgress,
    /// The frame limit.
    Limit,
}

impl Stop {
    /// Words for it.
    pub fn describe(self) -> &'static str {
        match self {
            Stop::End => "outermost frame",
            Stop::StackCopy => "the stack copy ends here",
            Stop::NoInfo => "no unwind information here",
            Stop::NoProgress => "the stack pointer did not move up",
            Stop::Limit => "frame limit",
        }
    }
}

struct Mem<'a> {
    base: u64,
    data: &'a [u8],
}

impl Mem<'_> {
    fn read(&self, addr: u64) -> Option<u64> {
        let off = addr.checked_sub(self.base)? as usize;
        let b = self.data.get(off..off.checked_add(8)?)?;
        Some(u64::from_le_bytes(b.try_into().ok()?))
    }
}

/// How to find a frame's caller at an instruction.
pub(crate) enum Code {
    /// By the call-frame information of a module (at this virtual address in it), else the
    /// frame pointer.
    Cfi(Rc<Module>, u64),
    /// Code without either whose stack height is known (see [`crate::frameless`]): the
    /// caller's stack pointer is this many bytes above the current one, and the return
    /// address is just below it.
    Frameless(u64),
}

/// Code lookups, by instruction pointer and frame depth (0: the sampled frame, whose
/// instruction pointer is not a return address); None: unknown code (frame pointer).
pub(crate) type Find<'f> = dyn FnMut(u64, usize) -> Option<Code> + 'f;

/// Unwinds: the instruction pointers of the frames, innermost first (each caller's is its
/// return address), and why the walk stopped.
///
/// `regs` are the sampled registers in perf's order for `mask` (set bits, ascending); `stack`
/// is the copy of the stack from the sampled stack pointer up.
pub(crate) fn unwind(arch: &Arch, regs: &[u64], mask: u64, stack: &[u8], max: usize, find: &mut Find<'_>, ctx: &mut UnwindContext<usize>) -> (Vec<u64>, Stop) {
    let mut cur: Vec<Option<u64>> = vec![None; arch.nregs];
    let mut k = 0;
    for bit in 0..64u32 {
        if mask & (1 << bit) != 0 {
            if let (Some(slot), Some(&v)) = ((arch.slot_of_perf)(bit), regs.get(k)) {
                cur[slot] = Some(v);
            }
            k += 1;
        }
    }
    let Some(sp0) = cur[arch.sp as usize] else { return (Vec::new(), Stop::NoInfo) };
    let mem = Mem { base: sp0, data: stack };
    let mut frames = Vec::new();
    let Some(mut ip) = cur[arch.ip] else { return (frames, Stop::NoInfo) };
    for depth in 0..max {
        frames.push(ip);
        if ip == 0 {
            frames.pop();
            return (frames, Stop::End);
        }
        let sp = cur[arch.sp as usize].unwrap_or(0);
        let step = match find(ip, depth) {
            Some(Code::Cfi(m, va)) => m.with_row(va, ctx, |row| cfi_step(arch, row, &cur, &mem, depth)),
            Some(Code::Frameless(cfa)) => Some(frameless_step(arch, &cur, &mem, cfa)),
            None => None,
        };
        let next = match step {
            Some(Some(n)) => n,
            Some(None) => return (frames, Stop::StackCopy),
            None => match fp_step(arch, &cur, &mem) {
                Some(n) => n,
                None => return (frames, Stop::NoInfo),
            },
        };
        let Some(next_ip) = next[arch.ip] else { return (frames, Stop::End) };
        let next_sp = next[arch.sp as usize].unwrap_or(0);
        if next_sp <= sp && depth > 0 || next_sp < sp {
            return (frames, Stop::NoProgress);
        }
        if next_ip == 0 {
            return (frames, Stop::End);
        }
        cur = next;
        ip = next_ip;
    }
    (frames, Stop::Limit)
}

/// The caller's registers from a CFI row: None when a value needed is outside the copy (the
/// outer `Option` of the caller is None when there is no row).
fn cfi_step(arch: &Arch, row: &gimli::UnwindTableRow<usize>, cur: &[Option<u64>], mem: &Mem<'_>, depth: usize) -> Option<Vec<Option<u64>>> {
    let cfa = match row.cfa() {
        CfaRule::RegisterAndOffset { register, offset } => {
            let r = cur.get(register.0 as usize).copied().flatten()?;
            r.wrapping_add(*offset as u64)
        }
        CfaRule::Expression(_) => return None,
    };
    let mut next: Vec<Option<u64>> = vec![None; arch.nregs];
    let rule_value = |reg: u16, rule: RegisterRule<usize>| -> Option<Option<u64>> {
        Some(match rule {
            RegisterRule::Undefined | RegisterRule::SameValue => cur.get(reg as usize).copied().flatten(),
            RegisterRule::Offset(n) => Some(mem.read(cfa.wrapping_add(n as u64))?),
            RegisterRule::ValOffset(n) => Some(cfa.wrapping_add(n as u64)),
            RegisterRule::Register(r) => cur.get(r.0 as usize).copied().flatten(),
            _ => None,
        })
    };
    for &r in arch.callee_saved {
        if r == arch.ra {
            continue;
        }
        next[r as usize] = rule_value(r, row.register(Register(r)))?;
    }
    let ra_rule = row.register(Register(arch.ra));
    let ra = match ra_rule {
        RegisterRule::Undefined if arch.ra_in_register && depth == 0 => cur[arch.ra as usize],
        RegisterRule::Undefined => None,
        rule => rule_value(arch.ra, rule)?,
    };
    if arch.ra_in_register {
        next[arch.ra as usize] = ra;
    }
    next[arch.ip] = ra;
    next[arch.sp as usize] = Some(cfa);
    Some(next)
}

/// The caller's registers past a frame of known stack height: the registers the code does not
/// touch are the caller's.
fn frameless_step(arch: &Arch, cur: &[Option<u64>], mem: &Mem<'_>, cfa_offset: u64) -> Option<Vec<Option<u64>>> {
    let cfa = cur[arch.sp as usize]?.checked_add(cfa_offset)?;
    let ra = mem.read(cfa.checked_sub(8)?)?;
    let mut next = cur.to_vec();
    next[arch.sp as usize] = Some(cfa);
    next[arch.ip] = Some(ra);
    Some(next)
}

/// The caller's registers by the frame-pointer chain: `[fp]` is the caller's frame pointer,
/// `[fp + 8]` the return address.
fn fp_step(arch: &Arch, cur: &[Option<u64>], mem: &Mem<'_>) -> Option<Vec<Option<u64>>> {
    let fp = cur[arch.fp as usize]?;
    let sp = cur[arch.sp as usize]?;
    if fp < sp || fp % 8 != 0 {
        return None;
    }
    let ra = mem.read(fp.checked_add(8)?)?;
    let caller_fp = mem.read(fp)?;
    let mut next: Vec<Option<u64>> = vec![None; arch.nregs];
    next[arch.fp as usize] = Some(caller_fp);
    next[arch.sp as usize] = Some(fp + 16);
    next[arch.ip] = Some(ra);
    Some(next)
}
