//! The top-level blocks: `trace`, `env`, `clock`, `callsite`, `stream` and `event`, and the
//! roots of their dynamic scopes.

use std::collections::HashSet;
use std::sync::Arc;

use crate::Result;
use crate::ir::{Callsite, ClockClass, EnvValue, EventClass, FieldType, Scope, StreamClass};
use crate::tsdl::ast::{Dim, Name, Spec, Stmt, Value};
use crate::tsdl::lexer::Pos;

use super::Lowerer;
use super::attrs::{bool_of, byte_order_of, check_dup, name_of, parse_uuid, path_key, sint_of, str_of, uint_of};
use super::refs::DynCtx;
use super::types::TyKind;

pub(super) struct PendingEvent {
    pub(super) class: EventClass,
    pub(super) stream_id: Option<u64>,
    pub(super) pos: Pos,
}

/// What a block does with a scope type (`key := type;`): the key, the type's specifiers and
/// dimensions, and where it is.
type ScopeFn<'a> = dyn FnMut(&mut Lowerer, &str, &[Spec], &[Dim], Pos) -> Result<()> + 'a;

impl Lowerer {
    /// The root type of a dynamic scope (`packet.header := struct { ... };`).
    pub(super) fn scope_root(
        &mut self,
        specs: &[Spec],
        dims: &[Dim],
        pos: Pos,
        ctx: DynCtx,
    ) -> Result<Arc<FieldType>> {
        let saved =
            std::mem::replace(&mut self.ctx, DynCtx { root_frame: self.frames.len(), ..ctx });
        let r = self.specs_type(specs, pos).and_then(|t| self.apply_dims(t, dims, pos));
        self.ctx = saved;
        match r?.kind {
            TyKind::Full(t @ FieldType::Struct(_)) => Ok(Arc::new(t)),
            _ => Err(pos.err("a dynamic scope's type must be a structure")),
        }
    }

    // -- blocks -------------------------------------------------------------------------------

    /// Lowers the statements of a block in a type scope of its own: each attribute assignment
    /// (`key = value;`, every key once) goes to `assign`, each scope type (`key := type;`, once
    /// each) to `scope` — in a block without any, one is an error naming the block (`what`) —
    /// and declarations are lowered as types.
    fn block_body(
        &mut self,
        body: &[Stmt],
        what: &str,
        assign: &mut dyn FnMut(&mut Lowerer, &str, &Value) -> Result<()>,
        mut scope: Option<&mut ScopeFn<'_>>,
    ) -> Result<()> {
        let mut seen = HashSet::new();
        self.with_scope(|me| {
            for s in body {
                match s {
                    Stmt::Assign { lhs, value } => {
                        let key = path_key(lhs);
                        check_dup(&mut seen, key.clone(), lhs[0].pos)?;
                        assign(me, &key, value)?;
                    }
                    Stmt::TypeAssign { lhs, specs, dims, pos } => {
                        let Some(scope) = scope.as_mut() else {
                            return Err(lhs[0].pos.err(format!("type assignment in {what} block")));
                        };
                        let key = path_key(lhs);
                        check_dup(&mut seen, key.clone(), lhs[0].pos)?;
                        scope(me, &key, specs, dims, *pos)?;
                    }
                    other => me.decl_stmt(other)?,
                }
            }
            Ok(())
        })
    }

    pub(super) fn trace_block(&mut self, kind: &Name, body: &[Stmt]) -> Result<()> {
        if self.trace_seen {
            return Err(kind.pos.err("duplicate trace block"));
        }
        self.trace_seen = true;
        self.trace_pos = kind.pos;
        let (mut major, mut minor, mut bo) = (None, None, None);
        self.block_body(
            body,
            "trace",
            &mut |me, key, value| {
                match key {
                    "major" => major = Some((uint_of(value, "major")?, value.pos())),
                    "minor" => minor = Some((uint_of(value, "minor")?, value.pos())),
                    "uuid" => me.uuid = Some(parse_uuid(str_of(value, "uuid")?, value.pos())?),
                    "byte_order" => {
                        byte_order_of(value)?;
                        bo = Some(());
                    }
                    _ => {}
                }
                Ok(())
            },
            Some(&mut |me, key, specs, dims, pos| {
                if key == "packet.header" {
                    let ctx = DynCtx { current: Some(Scope::PacketHeader), complete: true, ..DynCtx::default() };
                    me.packet_header = Some(me.scope_root(specs, dims, pos, ctx)?);
                } else {
                    me.scope_root(specs, dims, pos, DynCtx::default())?;
                }
                Ok(())
            }),
        )?;
        let Some((major, mpos)) = major else {
            return Err(kind.pos.err("trace block without `major`"));
        };
        let Some((minor, npos)) = minor else {
            return Err(kind.pos.err("trace block without `minor`"));
        };
        if bo.is_none() {
            return Err(kind.pos.err("trace block without `byte_order`"));
        }
        if major != 1 {
            return Err(mpos.err(format!("unsupported CTF major version {major} (expecting 1)")));
        }
        if minor != 8 {
            return Err(npos.err(format!("unsupported CTF minor version {minor} (expecting 8)")));
        }
        self.major = major;
        self.minor = minor;
        Ok(())
    }

    pub(super) fn env_block(&mut self, kind: &Name, body: &[Stmt]) -> Result<()> {
        if self.env_seen {
            return Err(kind.pos.err("duplicate env block"));
        }
        self.env_seen = true;
        let mut seen = HashSet::new();
        for s in body {
            match s {
                Stmt::Assign { lhs, value } => {
                    let key = path_key(lhs);
                    check_dup(&mut seen, key.clone(), lhs[0].pos)?;
                    let v = match value {
                        Value::Int { .. } => EnvValue::Int(sint_of(value, "environment value")?),
                        Value::Str(s, _) => {
                            // C string semantics: an escaped NUL ends the value.
                            let s = s.split('\0').next().unwrap_or("");
                            EnvValue::Str(s.to_string())
                        }
                        _ => {
                            return Err(value
                                .pos()
                                .err("environment value must be an integer or a string"))
                        }
                    };
                    self.env.push((key, v));
                }
                Stmt::TypeAssign { lhs, .. } => {
                    return Err(lhs[0].pos.err("type assignment in env block"))
                }
                other => self.with_scope(|me| me.decl_stmt(other))?,
            }
        }
        Ok(())
    }

    pub(super) fn clock_block(&mut self, kind: &Name, body: &[Stmt]) -> Result<()> {
        let mut c = ClockClass::default();
        let mut named = false;
        self.block_body(
            body,
            "clock",
            &mut |_, key, value| {
                match key {
                    "name" => {
                        c.name = name_of(value, "clock name")?;
                        named = true;
                    }
                    "uuid" => c.uuid = Some(parse_uuid(str_of(value, "uuid")?, value.pos())?),
                    "description" => c.description = Some(str_of(value, "description")?.to_string()),
                    "freq" => {
                        c.freq = uint_of(value, "freq")?;
                        if c.freq == 0 {
                            return Err(value.pos().err("clock frequency must not be 0"));
                        }
                    }
                    "precision" => c.precision = uint_of(value, "precision")?,
                    "offset_s" => c.offset_s = sint_of(value, "offset_s")?,
                    "offset" => c.offset = sint_of(value, "offset")?,
                    "absolute" => c.absolute = bool_of(value, "absolute")?,
                    _ => {}
                }
                Ok(())
            },
            None,
        )?;
        if !named {
            return Err(kind.pos.err("clock block without `name`"));
        }
        if self.clocks.iter().any(|k| k.name == c.name) {
            return Err(kind.pos.err(format!("duplicate clock `{}`", c.name)));
        }
        self.clocks.push(c);
        Ok(())
    }

    pub(super) fn callsite_block(&mut self, body: &[Stmt]) -> Result<()> {
        let mut c = Callsite { name: String::new(), func: String::new(), ip: 0, file: String::new(), line: 0 };
        self.block_body(
            body,
            "callsite",
            &mut |_, key, value| {
                match key {
                    "name" => c.name = name_of(value, "name")?,
                    "func" => c.func = name_of(value, "func")?,
                    "file" => c.file = name_of(value, "file")?,
                    "ip" => c.ip = uint_of(value, "ip")?,
                    "line" => c.line = uint_of(value, "line")?,
                    _ => {}
                }
                Ok(())
            },
            None,
        )?;
        self.callsites.push(c);
        Ok(())
    }

    pub(super) fn stream_block(&mut self, kind: &Name, body: &[Stmt]) -> Result<()> {
        let mut id = None;
        let mut sc = StreamClass { id: 0, packet_context: None, event_header: None, event_context: None, events: Vec::new() };
        // Which scopes this block defines, to know when earlier ones are all known.
        let present: Vec<String> = body
            .iter()
            .filter_map(|s| match s {
                Stmt::TypeAssign { lhs, .. } => Some(path_key(lhs)),
                _ => None,
            })
            .collect();
        let trace_seen = self.trace_seen;
        let ph = self.packet_header.clone();
        self.block_body(
            body,
            "stream",
            &mut |_, key, value| {
                if key == "id" {
                    id = Some(uint_of(value, "stream id")?);
                }
                Ok(())
            },
            Some(&mut |me, key, specs, dims, pos| {
                let mut prev = vec![(Scope::PacketHeader, ph.clone())];
                let mut complete = trace_seen;
                let order = [
                    ("packet.context", Scope::PacketContext),
                    ("event.header", Scope::EventHeader),
                    ("event.context", Scope::EventCommonContext),
                ];
                let Some(ix) = order.iter().position(|(k, _)| *k == key) else {
                    me.scope_root(specs, dims, pos, DynCtx::default())?;
                    return Ok(());
                };
                for (k, scope) in &order[..ix] {
                    let root = match scope {
                        Scope::PacketContext => sc.packet_context.clone(),
                        Scope::EventHeader => sc.event_header.clone(),
                        _ => sc.event_context.clone(),
                    };
                    if root.is_none() && present.iter().any(|p| p == k) {
                        complete = false;
                    }
                    prev.push((*scope, root));
                }
                let ctx = DynCtx { current: Some(order[ix].1), root_frame: 0, prev, complete };
                let root = Some(me.scope_root(specs, dims, pos, ctx)?);
                match order[ix].1 {
                    Scope::PacketContext => sc.packet_context = root,
                    Scope::EventHeader => sc.event_header = root,
                    _ => sc.event_context = root,
                }
                Ok(())
            }),
        )?;
        sc.id = id.unwrap_or(0);
        if self.streams.iter().any(|s| s.id == sc.id) {
            return Err(kind.pos.err(format!("duplicate stream id {}", sc.id)));
        }
        self.streams.push(sc);
        Ok(())
    }

    pub(super) fn event_block(&mut self, kind: &Name, body: &[Stmt]) -> Result<()> {
        let (mut name, mut loglevel, mut model_emf_uri) = (None, None, None);
        let (mut context, mut payload) = (None, None);
        let mut id = None;
        let mut stream_id = None;
        // Pre-scan for `stream_id` to know the stream's scopes while lowering the types.
        for s in body {
            if let Stmt::Assign { lhs, value } = s {
                if path_key(lhs) == "stream_id" {
                    stream_id = Some(uint_of(value, "stream_id")?);
                }
            }
        }
        let has_context = body
            .iter()
            .any(|s| matches!(s, Stmt::TypeAssign { lhs, .. } if path_key(lhs) == "context"));
        let stream = match stream_id {
            Some(sid) => self.streams.iter().find(|s| s.id == sid),
            None if self.streams.len() == 1 => self.streams.first(),
            None => None,
        };
        let mut base_prev = vec![(Scope::PacketHeader, self.packet_header.clone())];
        // Without any stream block, the event's stream class is an implicit one without scopes.
        let base_complete = self.trace_seen && (stream.is_some() || !self.has_stream_blocks);
        let (pc, eh, ec) = match stream {
            Some(sc) => {
                (sc.packet_context.clone(), sc.event_header.clone(), sc.event_context.clone())
            }
            None => (None, None, None),
        };
        base_prev.push((Scope::PacketContext, pc));
        base_prev.push((Scope::EventHeader, eh));
        base_prev.push((Scope::EventCommonContext, ec));
        self.block_body(
            body,
            "event",
            &mut |_, key, value| {
                match key {
                    "name" => name = Some(name_of(value, "event name")?),
                    "id" => id = Some(uint_of(value, "event id")?),
                    "stream_id" => {}
                    "loglevel" => loglevel = Some(sint_of(value, "loglevel")?),
                    "model.emf.uri" => model_emf_uri = Some(str_of(value, "model.emf.uri")?.to_string()),
                    _ => {}
                }
                Ok(())
            },
            Some(&mut |me, key, specs, dims, pos| {
                match key {
                    "context" => {
                        let ctx = DynCtx {
                            current: Some(Scope::EventSpecificContext),
                            root_frame: 0,
                            prev: base_prev.clone(),
                            complete: base_complete,
                        };
                        context = Some(me.scope_root(specs, dims, pos, ctx)?);
                    }
                    "fields" => {
                        let mut prev = base_prev.clone();
                        prev.push((Scope::EventSpecificContext, context.clone()));
                        let complete = base_complete && (context.is_some() || !has_context);
                        let ctx = DynCtx { current: Some(Scope::EventPayload), root_frame: 0, prev, complete };
                        payload = Some(me.scope_root(specs, dims, pos, ctx)?);
                    }
                    _ => {
                        me.scope_root(specs, dims, pos, DynCtx::default())?;
                    }
                }
                Ok(())
            }),
        )?;
        let Some(name) = name else {
            return Err(kind.pos.err("event block without `name`"));
        };
        let class = EventClass { id: id.unwrap_or(0), name, loglevel, model_emf_uri, context, payload };
        self.events.push(PendingEvent { class, stream_id, pos: kind.pos });
        Ok(())
    }
}
