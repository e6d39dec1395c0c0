//! Parsing the perf records we ask for (`sample_type` IDENTIFIER | TID | TIME | CPU
//! [| RAW] | REGS_USER | STACK_USER, `sample_id_all` with the same id fields), and trimming a
//! sample's stack copy to the bytes the kernel filled.

use super::perf::*;

/// The id fields every record carries (at the start of a sample, at the end of the others).
pub(crate) const ID_FIELDS: u64 = SAMPLE_IDENTIFIER | SAMPLE_TID | SAMPLE_TIME | SAMPLE_CPU;
/// `sample_id_all` trailer size: pid/tid, time, cpu/res, identifier.
const TRAILER: usize = 32;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

pub(crate) fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

pub(crate) fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The record header: (type, misc, size).
pub(crate) fn header(rec: &[u8]) -> Option<(u32, u16, usize)> {
    Some((u32_at(rec, 0)?, u16_at(rec, 4)?, u16_at(rec, 6)? as usize))
}

/// The ids of a record that is not a sample, from its `sample_id_all` trailer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Ids {
    pub pid: i32,
    pub tid: i32,
    pub time: u64,
    pub cpu: u32,
    pub id: u64,
}

pub(crate) fn trailer(rec: &[u8]) -> Option<Ids> {
    let at = rec.len().checked_sub(TRAILER)?;
    if at < 8 {
        return None;
    }
    Some(Ids {
        pid: u32_at(rec, at)? as i32,
        tid: u32_at(rec, at + 4)? as i32,
        time: u64_at(rec, at + 8)?,
        cpu: u32_at(rec, at + 16)?,
        id: u64_at(rec, at + 24)?,
    })
}

/// A sample, borrowed from its record.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sample<'a> {
    pub ids: Ids,
    /// The tracepoint's raw data (switch samples).
    pub raw: &'a [u8],
    /// `PERF_SAMPLE_REGS_ABI_*`; 0 when the task had no user registers (a kernel thread).
    pub abi: u64,
    /// The registers of the mask, 8 bytes each.
    pub regs: &'a [u8],
    /// The stack copy, from the user stack pointer up.
    pub stack: &'a [u8],
    /// Byte offset of the stack `size` field in the record (for trimming).
    stack_field: usize,
}

/// Parses a sample record; `raw` when the event samples RAW, `nregs` registers in the mask.
pub(crate) fn sample(rec: &[u8], raw: bool, nregs: usize) -> Option<Sample<'_>> {
    let mut at = 8;
    let id = u64_at(rec, at)?;
    let pid = u32_at(rec, at + 8)? as i32;
    let tid = u32_at(rec, at + 12)? as i32;
    let time = u64_at(rec, at + 16)?;
    let cpu = u32_at(rec, at + 24)?;
    at += 32;
    let mut raw_data: &[u8] = &[];
    if raw {
        let n = u32_at(rec, at)? as usize;
        raw_data = rec.get(at + 4..at + 4 + n)?;
        at += 4 + n;
    }
    let abi = u64_at(rec, at)?;
    at += 8;
    let mut regs: &[u8] = &[];
    if abi != REGS_ABI_NONE {
        regs = rec.get(at..at + 8 * nregs)?;
        at += 8 * nregs;
    }
    let stack_field = at;
    let size = u64_at(rec, at)? as usize;
    at += 8;
    let mut stack: &[u8] = &[];
    if size != 0 {
        let dyn_size = u64_at(rec, at + size)? as usize;
        stack = rec.get(at..at + dyn_size.min(size))?;
    }
    Some(Sample { ids: Ids { pid, tid, time, cpu, id }, raw: raw_data, abi, regs, stack, stack_field })
}

/// Writes `rec` (a sample) to `out` with its stack copy cut to the bytes filled (the kernel
/// reserves the full requested size in every record).
pub(crate) fn trim_sample(rec: &[u8], s: &Sample<'_>, out: &mut Vec<u8>) {
    out.clear();
    let filled = s.stack.len();
    if s.stack_field + 8 > rec.len() || u64_at(rec, s.stack_field) == Some(0) {
        out.extend_from_slice(rec);
        return;
    }
    let padded = filled.div_ceil(8) * 8;
    out.extend_from_slice(&rec[..s.stack_field]);
    out.extend_from_slice(&(padded as u64).to_ne_bytes());
    out.extend_from_slice(s.stack);
    out.resize(out.len() + (padded - filled), 0);
    out.extend_from_slice(&(filled as u64).to_ne_bytes());
    let size = out.len() as u16;
    out[6..8].copy_from_slice(&size.to_ne_bytes());
}

/// `PERF_RECORD_MMAP2`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mmap {
    pub pid: i32,
    pub tid: i32,
    pub start: u64,
    pub len: u64,
    pub pgoff: u64,
    pub maj: u32,
    pub min: u32,
    pub ino: u64,
    pub build_id: Vec<u8>,
    pub prot: u32,
    pub flags: u32,
    pub filename: Vec<u8>,
}

pub(crate) fn mmap2(rec: &[u8], misc: u16) -> Option<Mmap> {
    let end = rec.len().checked_sub(TRAILER)?;
    let mut m = Mmap {
        pid: u32_at(rec, 8)? as i32,
        tid: u32_at(rec, 12)? as i32,
        start: u64_at(rec, 16)?,
        len: u64_at(rec, 24)?,
        pgoff: u64_at(rec, 32)?,
        maj: 0,
        min: 0,
        ino: 0,
        build_id: Vec::new(),
        prot: u32_at(rec, 64)?,
        flags: u32_at(rec, 68)?,
        filename: Vec::new(),
    };
    if misc & MISC_MMAP_BUILD_ID != 0 {
        let n = (*rec.get(40)? as usize).min(20);
        m.build_id = rec.get(44..44 + n)?.to_vec();
    } else {
        m.maj = u32_at(rec, 40)?;
        m.min = u32_at(rec, 44)?;
        m.ino = u64_at(rec, 48)?;
    }
    let name = rec.get(72..end)?;
    m.filename = name[..name.iter().position(|&c| c == 0).unwrap_or(name.len())].to_vec();
    Some(m)
}

/// `PERF_RECORD_COMM`: (pid, tid, comm, exec).
pub(crate) fn comm(rec: &[u8], misc: u16) -> Option<(i32, i32, Vec<u8>, bool)> {
    let end = rec.len().checked_sub(TRAILER)?;
    let name = rec.get(16..end)?;
    let name = name[..name.iter().position(|&c| c == 0).unwrap_or(name.len())].to_vec();
    Some((u32_at(rec, 8)? as i32, u32_at(rec, 12)? as i32, name, misc & MISC_COMM_EXEC != 0))
}

/// `PERF_RECORD_FORK` / `PERF_RECORD_EXIT`: (pid, ppid, tid, ptid).
pub(crate) fn task(rec: &[u8]) -> Option<(i32, i32, i32, i32)> {
    Some((u32_at(rec, 8)? as i32, u32_at(rec, 12)? as i32, u32_at(rec, 16)? as i32, u32_at(rec, 20)? as i32))
}

/// `PERF_RECORD_LOST` (id, count) and `PERF_RECORD_LOST_SAMPLES` (count): the count.
pub(crate) fn lost(rec: &[u8], ty: u32) -> Option<u64> {
    match ty {
        RECORD_LOST => u64_at(rec, 16),
        RECORD_LOST_SAMPLES => u64_at(rec, 8),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(ty: u32, misc: u16, body: &[u8]) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&ty.to_ne_bytes());
        r.extend_from_slice(&misc.to_ne_bytes());
        r.extend_from_slice(&((8 + body.len()) as u16).to_ne_bytes());
        r.extend_from_slice(body);
        r
    }

    fn sample_record(raw: Option<&[u8]>, regs: &[u64], stack_size: usize, filled: usize) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&77u64.to_ne_bytes()); // identifier
        b.extend_from_slice(&10u32.to_ne_bytes()); // pid
        b.extend_from_slice(&11u32.to_ne_bytes()); // tid
        b.extend_from_slice(&123456u64.to_ne_bytes()); // time
        b.extend_from_slice(&1u32.to_ne_bytes()); // cpu
        b.extend_from_slice(&0u32.to_ne_bytes());
        if let Some(r) = raw {
            b.extend_from_slice(&(r.len() as u32).to_ne_bytes());
            b.extend_from_slice(r);
        }
        b.extend_from_slice(&2u64.to_ne_bytes()); // abi 64
        for r in regs {
            b.extend_from_slice(&r.to_ne_bytes());
        }
        b.extend_from_slice(&(stack_size as u64).to_ne_bytes());
        for i in 0..stack_size {
            b.push(if i < filled { i as u8 } else { 0xee });
        }
        b.extend_from_slice(&(filled as u64).to_ne_bytes());
        rec(RECORD_SAMPLE, 0, &b)
    }

    #[test]
    fn samples_parse_and_trim() {
        let r = sample_record(Some(&[1, 2, 3, 4]), &[5, 6, 7], 64, 20);
        let s = sample(&r, true, 3).unwrap();
        assert_eq!((s.ids.id, s.ids.pid, s.ids.tid, s.ids.time, s.ids.cpu), (77, 10, 11, 123456, 1));
        assert_eq!(s.raw, &[1, 2, 3, 4]);
        assert_eq!(s.regs.len(), 24);
        assert_eq!(s.stack, &(0..20).collect::<Vec<u8>>()[..]);
        let mut out = Vec::new();
        trim_sample(&r, &s, &mut out);
        assert!(out.len() < r.len());
        assert_eq!(header(&out).unwrap().2, out.len());
        let t = sample(&out, true, 3).unwrap();
        assert_eq!(t.stack, s.stack);
        assert_eq!(t.regs, s.regs);
        assert_eq!(t.ids, s.ids);
    }

    #[test]
    fn side_band() {
        let mut b = Vec::new();
        b.extend_from_slice(&5u32.to_ne_bytes());
        b.extend_from_slice(&6u32.to_ne_bytes());
        b.extend_from_slice(b"prog\0\0\0\0");
        // trailer
        b.extend_from_slice(&5u32.to_ne_bytes());
        b.extend_from_slice(&6u32.to_ne_bytes());
        b.extend_from_slice(&999u64.to_ne_bytes());
        b.extend_from_slice(&3u32.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        b.extend_from_slice(&42u64.to_ne_bytes());
        let r = rec(RECORD_COMM, MISC_COMM_EXEC, &b);
        assert_eq!(comm(&r, MISC_COMM_EXEC), Some((5, 6, b"prog".to_vec(), true)));
        assert_eq!(trailer(&r), Some(Ids { pid: 5, tid: 6, time: 999, cpu: 3, id: 42 }));
    }
}
