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

use std::io::{self, Write};

use tracelens_ctf::ir::DisplayBase;
use tracelens_ctf::{Field, Fields, Value};

use crate::json::write_json_str;
use crate::write::{write_escaped, write_i64, write_u64};

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
/// scope `scope`'s list.
#[derive(Clone, Copy, Debug)]
struct Op {
    lit_end: u32,
    scope: u8,
    at: u32,
    how: How,
}

/// What a printer writes for one event class, from where the program starts.
#[derive(Debug)]
pub(crate) struct LineProgram {
    /// The length of each scope's field list: an event whose lists differ is not of this
    /// shape (it is printed by the walk).
    lens: [u32; 4],
    /// Every literal, one after the other (the last one ends the line).
    lits: Box<[u8]>,
    ops: Box<[Op]>,
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
    /// [`How::Walk`].
    #[inline(never)]
    pub(crate) fn run<W: Write + ?Sized>(&self, out: &mut W, scopes: [Fields<'_, '_>; 4], mut walk: impl FnMut(&mut W, Fields<'_, '_>, usize, usize) -> io::Result<()>) -> io::Result<()> {
        let mut from = 0;
        for op in self.ops.iter() {
            let to = op.lit_end as usize;
            out.write_all(self.lits.get(from..to).unwrap_or_default())?;
            from = to;
            let scope = usize::from(op.scope) & 3;
            let fields = scopes[scope];
            // Always there: the list has the length the program was compiled for.
            let Some(f) = fields.list.get(op.at as usize) else { continue };
            match (op.how, f.value) {
                (How::Decimal, Value::Unsigned(u)) => write_u64(out, u)?,
                (How::Decimal, Value::Signed(s)) => write_i64(out, s)?,
                (How::Hex(size), v @ (Value::Unsigned(_) | Value::Signed(_))) => crate::text::write_int(out, v, size, DisplayBase::Hexadecimal)?,
                (How::TextStr, Value::Str(_)) => write_escaped(out, f.as_bytes().unwrap_or(b""))?,
                (How::JsonStr, Value::Str(_)) => write_json_str(out, f.as_bytes().unwrap_or(b""))?,
                _ => walk(out, fields, op.at as usize, scope)?,
            }
        }
        out.write_all(self.lits.get(from..).unwrap_or_default())
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
        self.ops.push(Op { lit_end: u32::try_from(self.lits.len()).ok()?, scope: u8::try_from(scope).ok()?, at: u32::try_from(at).ok()?, how });
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
        Some(LineProgram { lens, lits: self.lits.into_boxed_slice(), ops: self.ops.into_boxed_slice() })
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
