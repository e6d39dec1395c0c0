//! Lowering: the TSDL syntax tree to [`crate::ir`], with name resolution (lexically scoped type
//! names), attribute checks, and the checks on field references that can be done statically.
//!
//! One [`Lowerer`] walks the statements; its work is split by concept: `types` (type
//! specifiers, integers, floats, enumerations, structures, variants, typedefs), `refs` (the
//! frames of fields being declared and the static checks of sequence lengths and variant tags),
//! `attrs` (attribute values), `blocks` (the trace, env, clock, callsite, stream and event
//! blocks). This file holds the lowerer's state, its type-name scopes, and the checks made once
//! every block is read.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::ast::Stmt;
use super::lexer::Pos;
use crate::ir::{ByteOrder, Callsite, ClockClass, EnvValue, FieldType, StreamClass, TraceClass};
use crate::Result;

mod attrs;
mod blocks;
mod refs;
mod types;

use attrs::byte_order_of;
use blocks::PendingEvent;
use refs::{DynCtx, Frame};
use types::{count_nodes, too_large, Ty};

/// The state of lowering one metadata text: the type names in scope, the fields being
/// declared, and the trace class read so far.
struct Lowerer {
    trace_bo: ByteOrder,
    scopes: Vec<HashMap<String, Ty>>,
    frames: Vec<Frame>,
    ctx: DynCtx,
    trace_seen: bool,
    major: u64,
    minor: u64,
    uuid: Option<[u8; 16]>,
    packet_header: Option<Arc<FieldType>>,
    env: Vec<(String, EnvValue)>,
    clocks: Vec<ClockClass>,
    streams: Vec<StreamClass>,
    events: Vec<PendingEvent>,
    callsites: Vec<Callsite>,
    /// Type nodes that may still be copied from named types, and how many were.
    budget: u64,
    spent: u64,
    /// Where the trace block starts (for whole-trace errors).
    trace_pos: Pos,
    /// Whether an `env` block was seen.
    env_seen: bool,
    /// Whether the metadata has any `stream` block.
    has_stream_blocks: bool,
}

impl Lowerer {
    // -- type names ---------------------------------------------------------------------------

    fn lookup(&self, key: &str) -> Option<&Ty> {
        self.scopes.iter().rev().find_map(|s| s.get(key))
    }

    fn register(&mut self, key: String, ty: Ty, pos: Pos) -> Result<()> {
        let Some(scope) = self.scopes.last_mut() else {
            return Err(pos.err("internal error: no scope"));
        };
        if scope.contains_key(&key) {
            return Err(pos.err(format!("`{key}` is already defined in this scope")));
        }
        scope.insert(key, ty);
        Ok(())
    }

    /// Copies a type, charging its size to the budget (types copied from typedefs can grow
    /// exponentially with the text; the budget bounds the memory used).
    fn take(&mut self, t: &Ty, pos: Pos) -> Result<Ty> {
        let left = self.budget.saturating_sub(self.spent);
        let n = count_nodes(t, left).ok_or_else(|| too_large(pos))?;
        self.spent += n;
        Ok(t.clone())
    }

    /// Looks a named type up and copies it (charged like [`Self::take`]).
    fn lookup_take(&mut self, key: &str, pos: Pos) -> Result<Option<Ty>> {
        let left = self.budget.saturating_sub(self.spent);
        let Some(t) = self.lookup(key) else { return Ok(None) };
        let n = count_nodes(t, left).ok_or_else(|| too_large(pos))?;
        let t = t.clone();
        self.spent += n;
        Ok(Some(t))
    }

    fn with_scope<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.scopes.push(HashMap::new());
        let r = f(self);
        self.scopes.pop();
        r
    }

    // -- statements, and the checks once all are read ----------------------------------------

    fn top(&mut self, stmts: &[Stmt]) -> Result<()> {
        for s in stmts {
            match s {
                Stmt::Block { kind, body } => match kind.text.as_str() {
                    "trace" => self.trace_block(kind, body)?,
                    "env" => self.env_block(kind, body)?,
                    "clock" => self.clock_block(kind, body)?,
                    "stream" => self.stream_block(kind, body)?,
                    "event" => self.event_block(kind, body)?,
                    "callsite" => self.callsite_block(body)?,
                    other => return Err(kind.pos.err(format!("unknown block `{other}`"))),
                },
                other => self.decl_stmt(other)?,
            }
        }
        Ok(())
    }

    /// Fields with a special meaning to readers must have a usable type.
    fn check_roles(&self) -> Result<()> {
        let ph = self.packet_header.as_deref().and_then(FieldType::as_struct);
        if let Some(ph) = ph {
            for (i, f) in ph.fields.iter().enumerate() {
                if let (FieldType::Int(t), "magic") = (&f.ty, f.name.as_str()) {
                    if !t.signed && (t.size != 32 || i != 0) {
                        return Err(self.trace_pos.err(
                            "packet header `magic` must be the first field and a 32-bit integer",
                        ));
                    }
                }
            }
        }
        if self.streams.len() > 1
            && !ph.is_some_and(|h| h.fields.iter().any(|f| f.name == "stream_id"))
        {
            return Err(self
                .trace_pos
                .err("several stream classes but no `stream_id` field in the packet header"));
        }
        Ok(())
    }

    /// Every integer of a dynamic scope mapped to a clock names an existing clock.
    fn check_mapped_clocks(&self) -> Result<()> {
        let mut roots: Vec<&FieldType> = Vec::new();
        roots.extend(self.packet_header.as_deref());
        for s in &self.streams {
            roots.extend(s.packet_context.as_deref());
            roots.extend(s.event_header.as_deref());
            roots.extend(s.event_context.as_deref());
        }
        for e in &self.events {
            roots.extend(e.class.context.as_deref());
            roots.extend(e.class.payload.as_deref());
        }
        while let Some(t) = roots.pop() {
            let clock = match t {
                FieldType::Int(i) => i.mapped_clock.as_ref(),
                FieldType::Enum(e) => e.container.mapped_clock.as_ref(),
                FieldType::Struct(s) => {
                    roots.extend(s.fields.iter().map(|f| &f.ty));
                    None
                }
                FieldType::Variant(v) => {
                    roots.extend(v.options.iter().map(|f| &f.ty));
                    None
                }
                FieldType::Array(a) => {
                    roots.push(&a.element);
                    None
                }
                FieldType::Sequence(q) => {
                    roots.push(&q.element);
                    None
                }
                FieldType::Optional(o) => {
                    roots.push(&o.ty);
                    None
                }
                FieldType::Bool(i) => i.mapped_clock.as_ref(),
                FieldType::BitMap(e) => e.container.mapped_clock.as_ref(),
                FieldType::Float(_) | FieldType::String(_) | FieldType::Blob(_) => None,
            };
            if let Some(c) = clock {
                if !self.clocks.iter().any(|k| &k.name == c) {
                    return Err(self
                        .trace_pos
                        .err(format!("integer mapped to unknown clock `{c}`")));
                }
            }
        }
        Ok(())
    }

    fn finish(mut self, end: Pos) -> Result<TraceClass> {
        if !self.trace_seen {
            return Err(end.err("metadata without a trace block"));
        }
        self.check_roles()?;
        self.check_mapped_clocks()?;
        if self.streams.is_empty() && !self.events.is_empty() {
            self.streams.push(StreamClass {
                id: 0,
                packet_context: None,
                event_header: None,
                event_context: None,
                events: Vec::new(),
            });
        }
        let mut ids: Vec<HashSet<u64>> = vec![HashSet::new(); self.streams.len()];
        for ev in std::mem::take(&mut self.events) {
            let ix = match ev.stream_id {
                Some(sid) => match self.streams.iter().position(|s| s.id == sid) {
                    Some(ix) => ix,
                    None => {
                        return Err(ev.pos.err(format!(
                            "event `{}` refers to unknown stream {sid}",
                            ev.class.name
                        )))
                    }
                },
                None if self.streams.len() == 1 => 0,
                None => {
                    return Err(ev.pos.err(format!(
                        "event `{}` has no stream_id but there are several stream classes",
                        ev.class.name
                    )))
                }
            };
            if !ids[ix].insert(ev.class.id) {
                return Err(ev.pos.err(format!(
                    "duplicate event id {} in stream {}",
                    ev.class.id, self.streams[ix].id
                )));
            }
            self.streams[ix].events.push(ev.class);
        }
        Ok(TraceClass {
            major: self.major,
            minor: self.minor,
            uuid: self.uuid,
            byte_order: self.trace_bo,
            packet_header: self.packet_header,
            env: self.env,
            clocks: self.clocks,
            streams: self.streams,
            callsites: self.callsites,
        })
    }
}

/// The trace's byte order, read ahead of lowering (types declared before the trace block
/// still use it for `native`). `native` itself means `fallback`.
fn prescan_byte_order(stmts: &[Stmt], fallback: ByteOrder) -> Result<ByteOrder> {
    for s in stmts {
        if let Stmt::Block { kind, body } = s {
            if kind.text != "trace" {
                continue;
            }
            for b in body {
                if let Stmt::Assign { lhs, value } = b {
                    if lhs.len() == 1 && lhs[0].text == "byte_order" {
                        return Ok(byte_order_of(value)?.unwrap_or(fallback));
                    }
                }
            }
            return Ok(fallback);
        }
    }
    Ok(fallback)
}

/// Lowers parsed statements. `native` is the byte order `native` means in the trace block
/// (the packetized metadata's byte order when known); `end` is where the text ends.
///
/// `budget` bounds the type nodes copied from named types (see [`Lowerer::take`]).
pub(crate) fn lower(
    stmts: &[Stmt],
    native: ByteOrder,
    end: Pos,
    budget: u64,
) -> Result<TraceClass> {
    let trace_bo = prescan_byte_order(stmts, native)?;
    let mut l = Lowerer {
        trace_bo,
        scopes: vec![HashMap::new()],
        frames: Vec::new(),
        ctx: DynCtx::default(),
        trace_seen: false,
        major: 1,
        minor: 8,
        uuid: None,
        packet_header: None,
        env: Vec::new(),
        clocks: Vec::new(),
        streams: Vec::new(),
        events: Vec::new(),
        callsites: Vec::new(),
        env_seen: false,
        trace_pos: Pos { line: 1, col: 1 },
        budget,
        spent: 0,
        has_stream_blocks: stmts
            .iter()
            .any(|s| matches!(s, Stmt::Block { kind, .. } if kind.text == "stream")),
    };
    l.top(stmts)?;
    l.finish(end)
}

