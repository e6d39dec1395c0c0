//! Field references: the frames of the structures and variants being lowered (what a relative
//! path can see), the dynamic scopes known so far, and the static checks of sequence lengths
//! and variant tags (a path that leads nowhere, or to a field of the wrong type, is rejected
//! where that can be told before reading data).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::Result;
use crate::ir::{FieldPath, FieldType, NamedField, Scope};
use crate::tsdl::ast::Name;
use crate::tsdl::lexer::is_keyword;

use super::Lowerer;
use super::attrs::path_key;

/// Frames with more fields than this get a name index (keeps duplicate checks linear).
pub(super) const INDEX_THRESHOLD: usize = 24;

/// Fields of a structure (or options of a variant) being lowered, visible to relative field
/// references written inside it.
pub(super) struct Frame {
    pub(super) fields: Vec<NamedField>,
    pub(super) index: Option<HashMap<String, usize>>,
    pub(super) variant: bool,
    pub(super) max_depth: u32,
    /// Names of the fields whose declaration is being lowered (their type may be the next
    /// frame, a structure in progress).
    pub(super) pending: Vec<String>,
}

impl Frame {
    pub(super) fn new(variant: bool) -> Frame {
        Frame { fields: Vec::new(), index: None, variant, max_depth: 0, pending: Vec::new() }
    }

    pub(super) fn find(&self, name: &str) -> Option<&FieldType> {
        match &self.index {
            Some(ix) => ix.get(name).and_then(|&i| self.fields.get(i)).map(|f| &f.ty),
            None => self.fields.iter().find(|f| f.name == name).map(|f| &f.ty),
        }
    }

    pub(super) fn push(&mut self, name: &Name, ty: FieldType, depth: u32) -> Result<()> {
        if self.find(&name.text).is_some() {
            let what = if self.variant { "option" } else { "field" };
            return Err(name.pos.err(format!("duplicate {what} name `{}`", name.text)));
        }
        if let Some(ix) = &mut self.index {
            ix.insert(name.text.clone(), self.fields.len());
        } else if self.fields.len() >= INDEX_THRESHOLD {
            let mut ix: HashMap<String, usize> =
                self.fields.iter().enumerate().map(|(i, f)| (f.name.clone(), i)).collect();
            ix.insert(name.text.clone(), self.fields.len());
            self.index = Some(ix);
        }
        self.max_depth = self.max_depth.max(depth);
        self.fields.push(NamedField { name: name.text.clone(), ty });
        Ok(())
    }
}

/// The dynamic scope whose root type is being lowered, and what is known of earlier ones.
#[derive(Clone, Default)]
pub(super) struct DynCtx {
    /// The scope being lowered, if any.
    pub(super) current: Option<Scope>,
    /// Index in `frames` of the current scope's root structure.
    pub(super) root_frame: usize,
    /// Earlier scopes: their root type, or `None` when known to be absent.
    pub(super) prev: Vec<(Scope, Option<Arc<FieldType>>)>,
    /// Whether `prev` lists every earlier scope (so a reference found nowhere is an error).
    pub(super) complete: bool,
}

/// What a field reference leads to, as far as can be told statically.
pub(super) enum Lookup<'x> {
    /// The field's type; several when the path goes through variants (each option).
    Found(Vec<&'x FieldType>),
    NotFound,
    Unknown,
}

/// Most types a reference through variants may lead to before the check gives up.
pub(super) const MAX_WALK: usize = 4096;

/// Follows `rest` from `ty`. A variant is transparent: the path goes on in each option.
/// Returns `None` when some branch has no such field; `Some(false)` when the walk gave up.
pub(super) fn walk<'x>(ty: &'x FieldType, rest: &[String], out: &mut Vec<&'x FieldType>) -> Option<bool> {
    if out.len() > MAX_WALK {
        return Some(false);
    }
    match (ty, rest.split_first()) {
        (FieldType::Variant(v), _) => {
            if v.options.is_empty() {
                return None;
            }
            let mut complete = true;
            for o in &v.options {
                complete &= walk(&o.ty, rest, out)?;
            }
            Some(complete)
        }
        (_, None) => {
            out.push(ty);
            Some(true)
        }
        (FieldType::Struct(s), Some((first, tail))) => {
            let f = s.fields.iter().find(|f| &f.name == first)?;
            walk(&f.ty, tail, out)
        }
        _ => None,
    }
}

pub(super) fn walk_lookup<'x>(ty: &'x FieldType, rest: &[String]) -> Lookup<'x> {
    let mut out = Vec::new();
    match walk(ty, rest, &mut out) {
        None => Lookup::NotFound,
        Some(false) => Lookup::Unknown,
        Some(true) => Lookup::Found(out),
    }
}

/// A field path as written in a sequence length or a variant tag.
pub(super) fn field_path(names: &[Name]) -> Result<FieldPath> {
    let texts: Vec<&str> = names.iter().map(|n| n.text.as_str()).collect();
    let (scope, skip) = match texts.as_slice() {
        ["trace", "packet", "header", ..] => (Some(Scope::PacketHeader), 3),
        ["stream", "packet", "context", ..] => (Some(Scope::PacketContext), 3),
        ["stream", "event", "header", ..] => (Some(Scope::EventHeader), 3),
        ["stream", "event", "context", ..] => (Some(Scope::EventCommonContext), 3),
        ["event", "context", ..] => (Some(Scope::EventSpecificContext), 2),
        ["event", "fields", ..] => (Some(Scope::EventPayload), 2),
        _ => (None, 0),
    };
    let rest = &names[skip.min(names.len())..];
    let Some(first) = rest.first() else {
        let pos = names.last().map(|n| n.pos).unwrap_or_default();
        return Err(pos.err("field path names no field"));
    };
    if scope.is_none() && matches!(first.text.as_str(), "trace" | "stream" | "event") {
        return Err(first
            .pos
            .err(format!("invalid dynamic scope in field path `{}`", path_key(names))));
    }
    for n in rest {
        if is_keyword(&n.text) {
            return Err(n.pos.err(format!("keyword `{}` used as a field name", n.text)));
        }
    }
    let rest: Vec<String> = rest.iter().map(|n| n.text.clone()).collect();
    Ok(match scope {
        Some(s) => FieldPath::Absolute(s, rest),
        None => FieldPath::Relative(rest),
    })
}

impl Lowerer {
    // -- field references ---------------------------------------------------------------------

    /// Follows `comps` from frame `i`: a completed field, or one being declared whose structure
    /// is the next frame; a variant frame is transparent (each option, including the one being
    /// built). `None` when some branch has no such field.
    pub(super) fn frame_walk<'x>(
        &'x self,
        i: usize,
        comps: &[String],
        out: &mut Vec<&'x FieldType>,
    ) -> Option<bool> {
        let fr = self.frames.get(i)?;
        if fr.variant {
            // Inside the option being built, the path refers to that option.
            if !fr.pending.is_empty() {
                return self.frame_walk(i + 1, comps, out);
            }
            let mut complete = true;
            for o in &fr.fields {
                complete &= walk(&o.ty, comps, out)?;
            }
            return Some(complete);
        }
        let (first, rest) = comps.split_first()?;
        if let Some(t) = fr.find(first) {
            return walk(t, rest, out);
        }
        if fr.pending.iter().any(|p| p == first) {
            return self.frame_walk(i + 1, rest, out);
        }
        None
    }

    /// [`Self::frame_walk`] as a [`Lookup`].
    pub(super) fn lookup_in_frame(&self, i: usize, names: &[String]) -> Lookup<'_> {
        let mut out = Vec::new();
        match self.frame_walk(i, names, &mut out) {
            None => Lookup::NotFound,
            Some(false) => Lookup::Unknown,
            Some(true) => Lookup::Found(out),
        }
    }

    pub(super) fn resolve(&self, path: &FieldPath) -> Lookup<'_> {
        match path {
            FieldPath::Relative(names) => {
                let Some(first) = names.first() else { return Lookup::NotFound };
                for (i, fr) in self.frames.iter().enumerate().rev() {
                    if fr.variant {
                        continue;
                    }
                    if fr.find(first).is_some() || fr.pending.iter().any(|p| p == first) {
                        return self.lookup_in_frame(i, names);
                    }
                }
                if self.ctx.current.is_some() {
                    for (_, root) in self.ctx.prev.iter().rev() {
                        if let Some(FieldType::Struct(s)) = root.as_deref() {
                            if let Some(f) = s.fields.iter().find(|f| &f.name == first) {
                                return walk_lookup(&f.ty, &names[1..]);
                            }
                        }
                    }
                    if !self.ctx.complete {
                        return Lookup::Unknown;
                    }
                }
                Lookup::NotFound
            }
            // CTF 2 only (TSDL has no such path).
            FieldPath::Local(_) => Lookup::NotFound,
            FieldPath::Absolute(scope, names) => {
                let Some((first, rest)) = names.split_first() else { return Lookup::NotFound };
                if self.ctx.current == Some(*scope) {
                    if self.frames.get(self.ctx.root_frame).is_none() {
                        return Lookup::Unknown;
                    }
                    return self.lookup_in_frame(self.ctx.root_frame, names);
                }
                if self.ctx.current.is_some() {
                    if let Some((_, root)) = self.ctx.prev.iter().find(|(s, _)| s == scope) {
                        return match root.as_deref() {
                            Some(FieldType::Struct(s)) => {
                                match s.fields.iter().find(|f| &f.name == first) {
                                    Some(f) => walk_lookup(&f.ty, rest),
                                    None => Lookup::NotFound,
                                }
                            }
                            Some(_) => Lookup::Unknown,
                            None if self.ctx.complete => Lookup::NotFound,
                            None => Lookup::Unknown,
                        };
                    }
                }
                Lookup::Unknown
            }
        }
    }

    pub(super) fn sequence_length(&self, names: &[Name]) -> Result<FieldPath> {
        let path = field_path(names)?;
        let pos = names.first().map(|n| n.pos).unwrap_or_default();
        match self.resolve(&path) {
            Lookup::Found(tys) => {
                if tys.iter().all(|t| matches!(t, FieldType::Int(_) | FieldType::Enum(_))) {
                    Ok(path)
                } else {
                    Err(pos.err(format!("sequence length `{path}` is not an integer field")))
                }
            }
            Lookup::Unknown => Ok(path),
            Lookup::NotFound => Err(pos.err(format!("sequence length field `{path}` not found"))),
        }
    }

    pub(super) fn variant_tag(&self, names: &[Name], options: &[NamedField]) -> Result<FieldPath> {
        let path = field_path(names)?;
        let pos = names.first().map(|n| n.pos).unwrap_or_default();
        let tys = match self.resolve(&path) {
            Lookup::Found(tys) => tys,
            Lookup::Unknown => return Ok(path),
            Lookup::NotFound => {
                return Err(pos.err(format!("variant tag field `{path}` not found")))
            }
        };
        if tys.len() > 1 {
            return Err(pos.err(format!(
                "variant tag `{path}` refers to more than one field (through a variant)"
            )));
        }
        let mut labels: HashSet<&str> = HashSet::new();
        let mut stripped: HashSet<&str> = HashSet::new();
        for t in &tys {
            let FieldType::Enum(e) = t else {
                return Err(pos.err(format!("variant tag `{path}` is not an enumeration field")));
            };
            for m in &e.mappings {
                labels.insert(m.label.as_str());
                if let Some(l) = m.label.strip_prefix('_') {
                    stripped.insert(l);
                }
            }
        }
        let any = options.is_empty()
            || options.iter().any(|o| {
                labels.contains(o.name.as_str())
                    || stripped.contains(o.name.as_str())
                    || o.name.strip_prefix('_').is_some_and(|s| labels.contains(s))
            });
        if !any {
            return Err(
                pos.err(format!("no option of the variant matches a label of its tag `{path}`"))
            );
        }
        Ok(path)
    }
}
