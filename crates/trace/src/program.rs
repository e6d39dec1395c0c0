//! Line programs: the output of one event class's scopes, compiled once.
//!
//! Walking an event's fields to print them asks, for every field, whether it is shown, what
//! comes before it (`, NAME = ` in text, `,"NAME":` in JSON), what kind of node it is and how
//! it is displayed — and the answers are the same for every event of a class whose scopes
//! hold only structures and scalars (no variant, array, sequence or optional: then the decoded
//! list of fields has the same shape every time). For such a class, a printer walks the first
//! event once with a [`ProgramBuilder`] instead of a writer, keeping the bytes between fields
//! as literals and each shown scalar as an op that says where it is and how it is written;
//! later events of that class are printed by [`LineProgram::run`] over their field lists.
//! Fields the ops do not format themselves (enumerations, booleans, floats, other bases) go
//! back to the printer's own walk, so the output is the walk's, byte for byte.
//!
//! A line is written in place where the writer lends room for it ([`LineOut`]): literals in
//! fixed-size moves, digits where they go, and an op's value equal to the one it had in the
//! class's previous event (a thread's ids and name, a CPU's number, a call site: most
//! context fields) copied from what was written then ([`Memo`]) rather than formatted again.

use std::io::{self, Write};

use tracelens_ctf::ir::DisplayBase;
use tracelens_ctf::{Field, Fields, Value};

use crate::json::{put_json_plain, write_json_str};
use crate::text::hex_bits;
use crate::write::{put_decimal, put_escaped, put_hex_upper, write_escaped, write_i64, write_u64, LineOut};

/// How an op writes its field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum How {
    /// An integer in decimal.
    Decimal,
    /// An integer of this many bits in hexadecimal, as the text output writes it.
    Hex(u32),
    /// A string, escaped as the text output escapes it.
    TextStr,
    /// A string, as a JSON string.
    JsonStr,
    /// Whatever the printer's walk writes.
    Walk,
}

/// One field of a line: the literal bytes before it end at `lit_end`; the field is at `at` in
/// scope `scope`'s list; `memo` holds what it wrote last.
#[derive(Clone, Copy, Debug)]
struct Op {
    lit_end: u32,
    scope: u8,
    at: u32,
    how: How,
    memo: Memo,
}

/// Bytes past what a line writes that the in-place writing may overwrite (its literals go in
/// moves of this size), and zeros after the literals for those moves to read.
const SLACK: usize = 32;

/// The most bytes an integer op writes (`-` and 20 digits; `0x` and 16 digits).
const MAX_INT: usize = 21;

/// What an op wrote for the last value it was given, when that fits in [`SLACK`] bytes: the
/// fields of a class repeat from one event to the next (a thread's ids and name, a CPU's
/// number, a call site), and a repeated value is then copied in one move instead of being
/// formatted again.
#[derive(Clone, Copy, Debug)]
struct Memo {
    /// An integer's bits (a string's bytes are in `text`).
    key: u64,
    /// What the memo holds: [`Memo::NONE`], [`Memo::UNSIGNED`], [`Memo::SIGNED`] or
    /// [`Memo::STRING`].
    kind: u8,
    /// How many bytes of `text` were written.
    len: u8,
    text: [u8; SLACK],
}

impl Memo {
    const NONE: u8 = 0;
    const UNSIGNED: u8 = 1;
    const SIGNED: u8 = 2;
    const STRING: u8 = 3;
    const EMPTY: Memo = Memo { key: 0, kind: Memo::NONE, len: 0, text: [0; SLACK] };

    /// Puts the integer `key` of `kind` at the start of `dst` (at least [`SLACK`] bytes) as
    /// `write` does, from the memo when it holds that value; returns how many bytes.
    #[inline(always)]
    fn put_int(&mut self, dst: &mut [u8], key: u64, kind: u8, write: impl FnOnce(&mut [u8]) -> usize) -> usize {
        let dst = &mut dst[..SLACK];
        if self.key == key && self.kind == kind {
            dst.copy_from_slice(&self.text);
            return usize::from(self.len);
        }
        let n = write(dst);
        self.keep(dst, kind, n);
        self.key = key;
        n
    }

    /// Puts the string or text array `b` at the start of `dst` (at least [`SLACK`] and
    /// `4 * b.len() + 6` bytes) as [`put_escaped`] does, from the memo when it holds the same
    /// text (one written without escapes: `"`, the bytes before the first NUL, `"`); returns
    /// how many bytes.
    /// `write(dst)` puts the string (`None`: it cannot) and says how many bytes it wrote and
    /// read; text and JSON write a string without escapes alike.
    #[inline(always)]
    fn put_str(&mut self, dst: &mut [u8], b: &[u8], write: impl FnOnce(&mut [u8]) -> Option<(usize, usize)>) -> Option<usize> {
        let text = usize::from(self.len).wrapping_sub(2);
        if self.kind == Memo::STRING && b.len() >= text && same_bytes(&self.text[1..1 + text], &b[..text]) && b.get(text).is_none_or(|&c| c == 0) {
            dst[..SLACK].copy_from_slice(&self.text);
            return Some(text + 2);
        }
        let (written, read) = write(dst)?;
        if written == read + 2 {
            self.keep(&dst[..SLACK], Memo::STRING, written);
        }
        Some(written)
    }

    /// Keeps `dst`'s first `n` bytes as what a value of `kind` is written as.
    #[inline(always)]
    fn keep(&mut self, dst: &[u8], kind: u8, n: usize) {
        if n <= SLACK {
            self.text.copy_from_slice(&dst[..SLACK]);
            (self.kind, self.len) = (kind, n as u8);
        } else {
            self.kind = Memo::NONE;
        }
    }
}

/// Whether `a` and `b` hold the same bytes: by overlapping 8-byte (or 4-byte) words from
/// both ends when they are that long (a memo's strings are short, where a call to
/// `memcmp` costs more than the comparison).
#[inline(always)]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n < 8 {
        let half = |s: &[u8], at: usize| s.get(at..at + 4).and_then(|w| w.try_into().ok()).map(u32::from_ne_bytes);
        return match n {
            4.. => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
            _ => a.iter().zip(b).all(|(x, y)| x == y),
        };
    }
    let word = |s: &[u8], at: usize| s.get(at..at + 8).and_then(|w| w.try_into().ok()).map(u64::from_ne_bytes);
    let mut at = 0;
    while at + 8 < n {
        if word(a, at) != word(b, at) {
            return false;
        }
        at += 8;
    }
    word(a, n - 8) == word(b, n - 8)
}

/// What a printer writes for one event class, from where the program starts.
#[derive(Debug)]
pub(crate) struct LineProgram {
    /// The length of each scope's field list: an event whose lists differ is not of this
    /// shape (it is printed by the walk).
    lens: [u32; 4],
    /// Every literal, one after the other (the last one ends the line), then [`SLACK`] zeros.
    lits: Box<[u8]>,
    /// Where the literals end in `lits`.
    lits_len: usize,
    ops: Box<[Op]>,
    /// The room asked of a [`LineOut`] for a line: its literals, the most its integers
    /// write and [`SLACK`] (a string that does not fit in what is left goes through `Write`).
    room: usize,
}

impl LineProgram {
    /// Whether the event whose scopes are `scopes` is of this program's shape (an event of
    /// the class always is, unless the trace changes a class's layout under the same id).
    #[inline]
    pub(crate) fn fits(&self, scopes: [Fields<'_, '_>; 4]) -> bool {
        scopes.iter().zip(self.lens).all(|(f, n)| f.list.len() == n as usize)
    }

    /// Writes the line for the event whose scopes are `scopes` (one that
    /// [`fits`](Self::fits)); `walk(out, fields, at, scope)` writes the fields of
    /// [`How::Walk`]. What it can, it writes in place in the room `out` lends
    /// ([`LineOut::room`]); the rest (and all of it for a writer without room) through
    /// [`Write`], by [`LineProgram::step`].
    #[inline(never)]
    pub(crate) fn run<W: LineOut + ?Sized>(&mut self, out: &mut W, scopes: [Fields<'_, '_>; 4], mut walk: impl FnMut(&mut W, Fields<'_, '_>, usize, usize) -> io::Result<()>) -> io::Result<()> {
        // The next op, and where the literals written so far end.
        let (mut k, mut from) = (0, 0);
        let mut lends = true;
        while k <= self.ops.len() {
            if lends {
                match out.room(self.room)? {
                    Some(room) => {
                        let (n, next, lit) = self.fill(room, k, from, scopes);
                        out.filled(n);
                        (k, from) = (next, lit);
                        if k > self.ops.len() {
                            break;
                        }
                    }
                    None => lends = false,
                }
            }
            from = self.step(out, k, from, scopes, &mut walk)?;
            k += 1;
        }
        Ok(())
    }

    /// Writes op `k` through [`Write`] (the line's last literal for `k == ops.len()`), after
    /// the literals from `from` that come before it; returns where they end.
    fn step<W: Write + ?Sized>(&self, out: &mut W, k: usize, from: usize, scopes: [Fields<'_, '_>; 4], walk: &mut impl FnMut(&mut W, Fields<'_, '_>, usize, usize) -> io::Result<()>) -> io::Result<usize> {
        let Some(op) = self.ops.get(k) else {
            out.write_all(self.lits.get(from..self.lits_len).unwrap_or_default())?;
            return Ok(self.lits_len);
        };
        let to = op.lit_end as usize;
        out.write_all(self.lits.get(from..to).unwrap_or_default())?;
        let scope = usize::from(op.scope) & 3;
        let fields = scopes[scope];
        // Always there: the list has the length the program was compiled for.
        let Some(f) = fields.list.get(op.at as usize) else { return Ok(to) };
        match (op.how, f.value) {
            (How::Decimal, Value::Unsigned(u)) => write_u64(out, u)?,
            (How::Decimal, Value::Signed(s)) => write_i64(out, s)?,
            (How::Hex(size), v @ (Value::Unsigned(_) | Value::Signed(_))) => crate::text::write_int(out, v, size, DisplayBase::Hexadecimal)?,
            (How::TextStr, Value::Str(_)) => write_escaped(out, f.as_bytes().unwrap_or(b""))?,
            (How::JsonStr, Value::Str(_)) => write_json_str(out, f.as_bytes().unwrap_or(b""))?,
            _ => walk(out, fields, op.at as usize, scope)?,
        }
        Ok(to)
    }

    /// Writes in `room` the ops from `k` (after the literals from `from` that come before
    /// it) until one that goes through [`Write`] (a walk, a JSON string that needs escapes, a
    /// string longer than what is left of the room) or the line's end; returns the bytes
    /// written, the next op (`ops.len() + 1` at the end) and where the literals written end.
    ///
    /// `room` holds at least [`LineProgram::room`] bytes, and that stays true of what is left
    /// of it for what is left of the line: a literal takes its length, an integer at most
    /// [`MAX_INT`], and a string is written only where the room holds it as well.
    #[inline(always)]
    fn fill(&mut self, room: &mut [u8], mut k: usize, mut from: usize, scopes: [Fields<'_, '_>; 4]) -> (usize, usize, usize) {
        let mut pos = 0;
        loop {
            let to = self.ops.get(k).map_or(self.lits_len, |op| op.lit_end as usize);
            // The literal in moves of SLACK bytes: `lits` has SLACK zeros after its end and
            // the room SLACK bytes after what the line writes.
            let mut at = from;
            while at < to {
                room[pos + at - from..pos + at - from + SLACK].copy_from_slice(&self.lits[at..at + SLACK]);
                at += SLACK;
            }
            pos += to - from;
            from = to;
            let Some(op) = self.ops.get_mut(k) else { return (pos, k + 1, from) };
            if let Some(f) = scopes[usize::from(op.scope) & 3].list.get(op.at as usize) {
                let dst = &mut room[pos..];
                let memo = &mut op.memo;
                pos += match (op.how, f.value) {
                    (How::Decimal, Value::Unsigned(u)) => memo.put_int(dst, u, Memo::UNSIGNED, |d| put_decimal(d, u)),
                    (How::Decimal, Value::Signed(s)) => memo.put_int(dst, s as u64, Memo::SIGNED, |d| {
                        d[0] = b'-';
                        let minus = usize::from(s < 0);
                        minus + put_decimal(&mut d[minus..], s.unsigned_abs())
                    }),
                    (How::Hex(size), Value::Unsigned(u)) => memo.put_int(dst, u, Memo::UNSIGNED, |d| put_hex_upper(d, hex_bits(u, size))),
                    (How::Hex(size), Value::Signed(s)) => memo.put_int(dst, s as u64, Memo::SIGNED, |d| put_hex_upper(d, hex_bits(s as u64, size))),
                    // Strings stop at a NUL (which a text array may hold).
                    (How::TextStr, Value::Str(b)) if b.len() < dst.len().saturating_sub(self.room) / 4 => match memo.put_str(dst, b, |d| Some(put_escaped(d, b))) {
                        Some(n) => n,
                        None => break,
                    },
                    (How::JsonStr, Value::Str(b)) if b.len() < dst.len().saturating_sub(self.room) / 4 => match memo.put_str(dst, b, |d| put_json_plain(d, b)) {
                        Some(n) => n,
                        None => break,
                    },
                    _ => break,
                };
            }
            k += 1;
        }
        (pos, k, from)
    }
}

/// A program being compiled: a printer writes its literals to [`lits`](Self::lits) and
/// calls [`op`](Self::op) for each field.
pub(crate) struct ProgramBuilder {
    /// The literal bytes so far.
    pub(crate) lits: Vec<u8>,
    ops: Vec<Op>,
}

impl ProgramBuilder {
    /// A program whose line starts with `start`.
    pub(crate) fn new(start: &[u8]) -> ProgramBuilder {
        ProgramBuilder { lits: start.to_vec(), ops: Vec::new() }
    }

    /// Adds the field at `at` of scope `scope`, written as `how`.
    pub(crate) fn op(&mut self, how: How, scope: usize, at: usize) -> Option<()> {
        self.ops.push(Op { lit_end: u32::try_from(self.lits.len()).ok()?, scope: u8::try_from(scope).ok()?, at: u32::try_from(at).ok()?, how, memo: Memo::EMPTY });
        Some(())
    }

    /// Compiles the structure at `at` of `fields`: `open`, then for each member the bytes
    /// `label(lits, member, first)` puts before it (`Some(false)`: the member is hidden) and
    /// the member itself by `member(self, index)`, then `close`.
    pub(crate) fn structure(
        &mut self,
        fields: Fields<'_, '_>,
        at: usize,
        [open, close]: [&[u8]; 2],
        mut label: impl FnMut(&mut Vec<u8>, &Field<'_>, bool) -> Option<bool>,
        mut member: impl FnMut(&mut Self, usize) -> Option<()>,
    ) -> Option<()> {
        self.lits.extend_from_slice(open);
        let mut first = true;
        for (i, c) in fields.children(at) {
            if label(&mut self.lits, c, first)? {
                first = false;
                member(self, i)?;
            }
        }
        self.lits.extend_from_slice(close);
        Some(())
    }

    /// The program, for events whose scopes have the shape of `scopes`.
    pub(crate) fn finish(self, scopes: [Fields<'_, '_>; 4]) -> Option<LineProgram> {
        let mut lens = [0u32; 4];
        for (n, f) in lens.iter_mut().zip(scopes) {
            *n = u32::try_from(f.list.len()).ok()?;
        }
        let lits_len = self.lits.len();
        let room = lits_len + self.ops.len() * MAX_INT + SLACK;
        let mut lits = self.lits;
        lits.resize(lits_len + SLACK, 0);
        Some(LineProgram { lens, lits: lits.into_boxed_slice(), lits_len, ops: self.ops.into_boxed_slice(), room })
    }
}

/// An event class's [`LineProgram`], once its first event was seen.
#[derive(Debug, Default)]
pub(crate) enum Program {
    /// No event of the class printed yet.
    #[default]
    Unknown,
    /// The class's scopes can change shape: its events are printed by the walk.
    Walk,
    /// The class's program.
    Compiled(LineProgram),
}

/// The line programs of a printer's event classes, by trace, a group of the trace's streams
/// sharing their programs (the text printer's stream class plan; JSON's own stream, whose path
/// the line holds) and event class index.
#[derive(Debug, Default)]
pub(crate) struct Programs(Vec<Vec<Vec<Program>>>);

impl Programs {
    /// How many event classes have a program, and how many are printed by the walk.
    pub(crate) fn counts(&self) -> (usize, usize) {
        let all = self.0.iter().flatten().flatten();
        let compiled = all.clone().filter(|p| matches!(p, Program::Compiled(_))).count();
        (compiled, all.filter(|p| matches!(p, Program::Walk)).count())
    }

    /// The slot of event class `class` of group `plan` of trace `trace`.
    #[inline]
    pub(crate) fn slot(&mut self, trace: usize, plan: usize, class: usize) -> &mut Program {
        if trace < self.0.len() && plan < self.0[trace].len() && class < self.0[trace][plan].len() {
            return &mut self.0[trace][plan][class];
        }
        self.grow(trace, plan, class)
    }

    /// [`Programs::slot`] of a class not seen yet.
    #[cold]
    fn grow(&mut self, trace: usize, plan: usize, class: usize) -> &mut Program {
        if self.0.len() <= trace {
            self.0.resize_with(trace + 1, Vec::new);
        }
        let plans = &mut self.0[trace];
        if plans.len() <= plan {
            plans.resize_with(plan + 1, Vec::new);
        }
        let classes = &mut plans[plan];
        if classes.len() <= class {
            classes.resize_with(class + 1, Program::default);
        }
        &mut classes[class]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_bytes_is_slice_equality() {
        let base: Vec<u8> = (0..40u8).map(|i| i.wrapping_mul(37)).collect();
        for n in 0..=32 {
            let a = &base[..n];
            assert!(same_bytes(a, &base[..n]), "equal, {n} bytes");
            for at in 0..n {
                let mut b = a.to_vec();
                b[at] ^= 1;
                assert!(!same_bytes(a, &b), "{n} bytes, byte {at} differs");
            }
            assert!(!same_bytes(a, &base[..n + 1]), "lengths differ");
        }
    }
}
