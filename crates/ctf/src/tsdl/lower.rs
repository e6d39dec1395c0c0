//! Lowering: the TSDL syntax tree to [`crate::ir`], with name resolution (lexically scoped type
//! names), attribute checks, and the checks on field references that can be done statically.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::ast::{Attr, Declarator, Dim, Enumerator, Name, Spec, Stmt, Value};
use super::lexer::{is_keyword, is_type_keyword, Pos};
use crate::ir::{
    ArrayType, ByteOrder, Callsite, ClockClass, DisplayBase, Encoding, EnumMapping, EnumType,
    EnvValue, EventClass, FieldPath, FieldType, FloatType, IntType, NamedField, Scope,
    SequenceType, StreamClass, StructType, TraceClass, VariantType,
};
use crate::{Error, Result};

/// Deepest type nesting accepted (structures, variants, arrays and sequences together).
const MAX_TYPE_DEPTH: u32 = 192;

/// Frames with more fields than this get a name index (keeps duplicate checks linear).
const INDEX_THRESHOLD: usize = 24;

/// A lowered type and how deeply it nests.
#[derive(Clone, Debug)]
struct Ty {
    kind: TyKind,
    depth: u32,
}

#[derive(Clone, Debug)]
enum TyKind {
    /// A complete field type.
    Full(FieldType),
    /// A variant declared without a tag: usable only where a tag is then given.
    Untagged(Vec<NamedField>),
}

impl Ty {
    fn leaf(t: FieldType) -> Ty {
        Ty { kind: TyKind::Full(t), depth: 1 }
    }
}

/// Fields of a structure (or options of a variant) being lowered, visible to relative field
/// references written inside it.
struct Frame {
    fields: Vec<NamedField>,
    index: Option<HashMap<String, usize>>,
    variant: bool,
    max_depth: u32,
    /// Names of the fields whose declaration is being lowered (their type may be the next
    /// frame, a structure in progress).
    pending: Vec<String>,
}

impl Frame {
    fn new(variant: bool) -> Frame {
        Frame { fields: Vec::new(), index: None, variant, max_depth: 0, pending: Vec::new() }
    }

    fn find(&self, name: &str) -> Option<&FieldType> {
        match &self.index {
            Some(ix) => ix.get(name).and_then(|&i| self.fields.get(i)).map(|f| &f.ty),
            None => self.fields.iter().find(|f| f.name == name).map(|f| &f.ty),
        }
    }

    fn push(&mut self, name: &Name, ty: FieldType, depth: u32) -> Result<()> {
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
struct DynCtx {
    /// The scope being lowered, if any.
    current: Option<Scope>,
    /// Index in `frames` of the current scope's root structure.
    root_frame: usize,
    /// Earlier scopes: their root type, or `None` when known to be absent.
    prev: Vec<(Scope, Option<Arc<FieldType>>)>,
    /// Whether `prev` lists every earlier scope (so a reference found nowhere is an error).
    complete: bool,
}

/// What a field reference leads to, as far as can be told statically.
enum Lookup<'x> {
    /// The field's type; several when the path goes through variants (each option).
    Found(Vec<&'x FieldType>),
    NotFound,
    Unknown,
}

/// Most types a reference through variants may lead to before the check gives up.
const MAX_WALK: usize = 4096;

/// Follows `rest` from `ty`. A variant is transparent: the path goes on in each option.
/// Returns `None` when some branch has no such field; `Some(false)` when the walk gave up.
fn walk<'x>(ty: &'x FieldType, rest: &[String], out: &mut Vec<&'x FieldType>) -> Option<bool> {
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

fn walk_lookup<'x>(ty: &'x FieldType, rest: &[String]) -> Lookup<'x> {
    let mut out = Vec::new();
    match walk(ty, rest, &mut out) {
        None => Lookup::NotFound,
        Some(false) => Lookup::Unknown,
        Some(true) => Lookup::Found(out),
    }
}

/// Number of nodes of a type (enumeration mappings included), or `None` above `limit`.
fn count_nodes(t: &Ty, limit: u64) -> Option<u64> {
    let mut n: u64 = 0;
    let mut stack: Vec<&FieldType> = Vec::new();
    match &t.kind {
        TyKind::Full(f) => stack.push(f),
        TyKind::Untagged(o) => stack.extend(o.iter().map(|f| &f.ty)),
    }
    while let Some(f) = stack.pop() {
        n += 1;
        match f {
            FieldType::Struct(s) => stack.extend(s.fields.iter().map(|f| &f.ty)),
            FieldType::Variant(v) => stack.extend(v.options.iter().map(|f| &f.ty)),
            FieldType::Array(a) => stack.push(&a.element),
            FieldType::Sequence(q) => stack.push(&q.element),
            FieldType::Enum(e) => n += e.mappings.len() as u64,
            FieldType::Int(_) | FieldType::Float(_) | FieldType::String(_) => {}
        }
        if n > limit {
            return None;
        }
    }
    Some(n)
}

fn too_large(pos: Pos) -> Error {
    pos.err("metadata types too large (copies of named types exceed the size limit)")
}

fn is_pow2(v: u64) -> bool {
    v != 0 && v & (v - 1) == 0
}

fn parse_uuid(s: &str, pos: Pos) -> Result<[u8; 16]> {
    let b = s.as_bytes();
    let bad = || pos.err(format!("invalid UUID `{}`", s.escape_default()));
    if b.len() != 36 {
        return Err(bad());
    }
    let mut out = [0u8; 16];
    let mut n = 0;
    let mut i = 0;
    while i < 36 {
        if matches!(i, 8 | 13 | 18 | 23) {
            if b[i] != b'-' {
                return Err(bad());
            }
            i += 1;
            continue;
        }
        let hi = (b[i] as char).to_digit(16).ok_or_else(bad)?;
        let lo = (b[i + 1] as char).to_digit(16).ok_or_else(bad)?;
        out[n] = (hi * 16 + lo) as u8;
        n += 1;
        i += 2;
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Attribute values

fn int_of(v: &Value, what: &str) -> Result<(bool, u64)> {
    match v {
        Value::Int { neg, mag, .. } => Ok((*neg && *mag != 0, *mag)),
        _ => Err(v.pos().err(format!("{what} must be an integer literal"))),
    }
}

fn uint_of(v: &Value, what: &str) -> Result<u64> {
    match int_of(v, what)? {
        (false, m) => Ok(m),
        (true, _) => Err(v.pos().err(format!("{what} must not be negative"))),
    }
}

fn sint_of(v: &Value, what: &str) -> Result<i64> {
    let (neg, mag) = int_of(v, what)?;
    let x = if neg { -(mag as i128) } else { mag as i128 };
    i64::try_from(x).map_err(|_| v.pos().err(format!("{what} does not fit in 64 signed bits")))
}

fn int128_of(v: &Value, what: &str) -> Result<i128> {
    let (neg, mag) = int_of(v, what)?;
    Ok(if neg { -(mag as i128) } else { mag as i128 })
}

fn u32_of(v: &Value, what: &str) -> Result<u32> {
    let x = uint_of(v, what)?;
    u32::try_from(x).map_err(|_| v.pos().err(format!("{what} is too large")))
}

/// A one-word identifier value (`le`, `true`, `hex`).
fn word_of<'v>(v: &'v Value, what: &str) -> Result<&'v str> {
    match v {
        Value::Path(p) if p.len() == 1 => Ok(&p[0].text),
        _ => Err(v.pos().err(format!("{what} must be an identifier"))),
    }
}

fn str_of<'v>(v: &'v Value, what: &str) -> Result<&'v str> {
    match v {
        Value::Str(s, _) => Ok(s),
        _ => Err(v.pos().err(format!("{what} must be a string literal"))),
    }
}

/// A name given as an identifier, a dotted path or a string (`name = foo;`, `name = "foo";`).
fn name_of(v: &Value, what: &str) -> Result<String> {
    match v {
        Value::Str(s, _) => Ok(s.clone()),
        Value::Path(p) => Ok(p.iter().map(|n| n.text.as_str()).collect::<Vec<_>>().join(".")),
        _ => Err(v.pos().err(format!("{what} must be an identifier or a string"))),
    }
}

fn bool_of(v: &Value, what: &str) -> Result<bool> {
    match v {
        Value::Int { neg: false, mag: 0, .. } => Ok(false),
        Value::Int { neg: false, mag: 1, .. } => Ok(true),
        Value::Path(p) if p.len() == 1 => match p[0].text.as_str() {
            "true" | "TRUE" => Ok(true),
            "false" | "FALSE" => Ok(false),
            _ => Err(v.pos().err(format!("{what} must be true or false"))),
        },
        _ => Err(v.pos().err(format!("{what} must be true or false"))),
    }
}

/// `Some(order)`, or `None` for `native`.
fn byte_order_of(v: &Value) -> Result<Option<ByteOrder>> {
    match word_of(v, "byte_order")? {
        "native" => Ok(None),
        "be" | "network" | "big_endian" => Ok(Some(ByteOrder::Big)),
        "le" | "little_endian" => Ok(Some(ByteOrder::Little)),
        w => Err(v.pos().err(format!("invalid byte order `{w}`"))),
    }
}

fn encoding_of(v: &Value) -> Result<Encoding> {
    let w = word_of(v, "encoding")?;
    match w.to_ascii_lowercase().as_str() {
        "none" => Ok(Encoding::None),
        "utf8" => Ok(Encoding::Utf8),
        "ascii" => Ok(Encoding::Ascii),
        _ => Err(v.pos().err(format!("invalid encoding `{w}`"))),
    }
}

fn base_of(v: &Value) -> Result<DisplayBase> {
    match v {
        Value::Int { neg: false, mag, .. } => match mag {
            2 => Ok(DisplayBase::Binary),
            8 => Ok(DisplayBase::Octal),
            10 => Ok(DisplayBase::Decimal),
            16 => Ok(DisplayBase::Hexadecimal),
            _ => Err(v.pos().err(format!("invalid base {mag}"))),
        },
        Value::Path(p) if p.len() == 1 => match p[0].text.as_str() {
            "decimal" | "dec" | "d" | "i" | "u" => Ok(DisplayBase::Decimal),
            "hexadecimal" | "hex" | "x" | "X" | "p" | "pointer" => Ok(DisplayBase::Hexadecimal),
            "octal" | "oct" | "o" => Ok(DisplayBase::Octal),
            "binary" | "bin" | "b" => Ok(DisplayBase::Binary),
            w => Err(v.pos().err(format!("invalid base `{w}`"))),
        },
        _ => Err(v.pos().err("base must be an integer or an identifier")),
    }
}

/// Rejects a second occurrence of an attribute in one block or type.
fn check_dup(seen: &mut HashSet<String>, key: String, pos: Pos) -> Result<()> {
    if !seen.insert(key.clone()) {
        return Err(pos.err(format!("duplicate attribute `{key}`")));
    }
    Ok(())
}

fn path_key(lhs: &[Name]) -> String {
    lhs.iter().map(|n| n.text.as_str()).collect::<Vec<_>>().join(".")
}

/// A field path as written in a sequence length or a variant tag.
fn field_path(names: &[Name]) -> Result<FieldPath> {
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

/// Values `[min, max]` an integer container can hold.
fn int_range(i: &IntType) -> (i128, i128) {
    let s = i.size.min(127);
    if i.signed {
        (-(1i128 << (s - 1)), (1i128 << (s - 1)) - 1)
    } else {
        (0, (1i128 << s) - 1)
    }
}

// ---------------------------------------------------------------------------------------------

struct PendingEvent {
    class: EventClass,
    stream_id: Option<u64>,
    pos: Pos,
}

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

    // -- field references ---------------------------------------------------------------------

    /// Follows `comps` from frame `i`: a completed field, or one being declared whose structure
    /// is the next frame; a variant frame is transparent (each option, including the one being
    /// built). `None` when some branch has no such field.
    fn frame_walk<'x>(
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
    fn lookup_in_frame(&self, i: usize, names: &[String]) -> Lookup<'_> {
        let mut out = Vec::new();
        match self.frame_walk(i, names, &mut out) {
            None => Lookup::NotFound,
            Some(false) => Lookup::Unknown,
            Some(true) => Lookup::Found(out),
        }
    }

    fn resolve(&self, path: &FieldPath) -> Lookup<'_> {
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

    fn sequence_length(&self, names: &[Name]) -> Result<FieldPath> {
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

    fn variant_tag(&self, names: &[Name], options: &[NamedField]) -> Result<FieldPath> {
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

    // -- types --------------------------------------------------------------------------------

    fn check_depth(depth: u32, pos: Pos) -> Result<()> {
        if depth > MAX_TYPE_DEPTH {
            return Err(pos.err(format!("type nested deeper than {MAX_TYPE_DEPTH} levels")));
        }
        Ok(())
    }

    /// The type named by a specifier list (and nothing else).
    fn specs_type(&mut self, specs: &[Spec], pos: Pos) -> Result<Ty> {
        self.specs_type_ptr(specs, 0, pos)
    }

    /// The type named by a specifier list followed by `ptr` pointer stars.
    fn specs_type_ptr(&mut self, specs: &[Spec], ptr: u32, pos: Pos) -> Result<Ty> {
        let mut words: Vec<&Name> = Vec::new();
        let mut compound: Option<&Spec> = None;
        for s in specs {
            match s {
                Spec::Word(n) if n.text == "const" => {}
                Spec::Word(n) => {
                    if compound.is_some() {
                        return Err(n.pos.err(format!("unexpected `{}` after a type", n.text)));
                    }
                    words.push(n);
                }
                other => {
                    if compound.is_some() || !words.is_empty() {
                        return Err(other.pos().err("more than one type in a declaration"));
                    }
                    compound = Some(other);
                }
            }
        }
        if let Some(c) = compound {
            if ptr > 0 {
                return Err(c.pos().err("pointer to a type without a name"));
            }
            return self.spec_type(c);
        }
        let Some(first) = words.first() else { return Err(pos.err("missing type")) };
        let mut key = if words.len() == 1 {
            first.text.clone()
        } else {
            words.iter().map(|n| n.text.as_str()).collect::<Vec<_>>().join(" ")
        };
        for _ in 0..ptr {
            key.push_str(" *");
        }
        match self.lookup_take(&key, first.pos)? {
            Some(t) => Ok(t),
            None => Err(first.pos.err(format!("unknown type `{key}`"))),
        }
    }

    /// Wraps `ty` in arrays/sequences for `dims` (`x[a][b]`: array a of array b).
    fn apply_dims(&self, ty: Ty, dims: &[Dim], pos: Pos) -> Result<Ty> {
        if dims.is_empty() {
            return Ok(ty);
        }
        let TyKind::Full(mut t) = ty.kind else {
            return Err(pos.err("an array or sequence of a variant needs the variant's tag"));
        };
        let mut depth = ty.depth;
        for d in dims.iter().rev() {
            depth += 1;
            Self::check_depth(depth, pos)?;
            t = match d {
                Dim::Len { neg: true, mag, pos } if *mag != 0 => {
                    return Err(pos.err("negative array length"));
                }
                Dim::Len { mag, .. } => {
                    FieldType::Array(ArrayType { element: Box::new(t), length: *mag })
                }
                Dim::Path(names) if names.len() == 2 && names[0].text == "env" => {
                    let key = &names[1];
                    let length = match self.env.iter().find(|(k, _)| *k == key.text) {
                        Some((_, EnvValue::Int(v))) => u64::try_from(*v).map_err(|_| {
                            key.pos.err(format!("environment entry `{}` is negative", key.text))
                        })?,
                        Some(_) => {
                            return Err(key.pos.err(format!(
                                "environment entry `{}` is not an integer",
                                key.text
                            )))
                        }
                        None => {
                            return Err(key
                                .pos
                                .err(format!("unknown environment entry `{}`", key.text)))
                        }
                    };
                    FieldType::Array(ArrayType { element: Box::new(t), length })
                }
                Dim::Path(names) => {
                    let length = self.sequence_length(names)?;
                    FieldType::Sequence(SequenceType { element: Box::new(t), length })
                }
            };
        }
        Ok(Ty { kind: TyKind::Full(t), depth })
    }

    fn int_type(&self, attrs: &[Attr], pos: Pos) -> Result<IntType> {
        let mut seen = 0u8;
        let mut size = None;
        let mut align = None;
        let mut t = IntType {
            size: 0,
            align: 0,
            signed: false,
            byte_order: self.trace_bo,
            base: DisplayBase::Decimal,
            encoding: Encoding::None,
            mapped_clock: None,
        };
        for a in attrs {
            let v = &a.value;
            let name = a.name.text.as_str();
            let bit = match name {
                "size" => 1,
                "align" => 2,
                "signed" => 4,
                "byte_order" => 8,
                "base" => 16,
                "encoding" => 32,
                "map" => 64,
                _ => 0,
            };
            if seen & bit != 0 {
                return Err(a.name.pos.err(format!("duplicate attribute `{name}`")));
            }
            seen |= bit;
            match name {
                "size" => {
                    let s = u32_of(v, "integer size")?;
                    if s == 0 {
                        return Err(v.pos().err("integer size must be at least 1"));
                    }
                    size = Some(s);
                }
                "align" => {
                    let s = u32_of(v, "integer alignment")?;
                    if !is_pow2(u64::from(s)) {
                        return Err(v.pos().err("integer alignment must be a power of two"));
                    }
                    align = Some(s);
                }
                "signed" => t.signed = bool_of(v, "signed")?,
                "byte_order" => t.byte_order = byte_order_of(v)?.unwrap_or(self.trace_bo),
                "base" => t.base = base_of(v)?,
                "encoding" => t.encoding = encoding_of(v)?,
                "map" => {
                    let name = match v {
                        Value::Path(p)
                            if p.len() == 3 && p[0].text == "clock" && p[2].text == "value" =>
                        {
                            p[1].text.clone()
                        }
                        _ => return Err(v.pos().err("map must be `clock.NAME.value`")),
                    };
                    t.mapped_clock = Some(name);
                }
                _ => {}
            }
        }
        let Some(size) = size else { return Err(pos.err("integer type without `size`")) };
        t.size = size;
        t.align = align.unwrap_or(if size % 8 == 0 { 8 } else { 1 });
        Ok(t)
    }

    fn float_type(&self, attrs: &[Attr], pos: Pos) -> Result<FloatType> {
        let mut seen = 0u8;
        let (mut exp, mut mant, mut align) = (None, None, None);
        let mut bo = self.trace_bo;
        for a in attrs {
            let v = &a.value;
            let name = a.name.text.as_str();
            let bit = match name {
                "exp_dig" => 1,
                "mant_dig" => 2,
                "align" => 4,
                "byte_order" => 8,
                _ => 0,
            };
            if seen & bit != 0 {
                return Err(a.name.pos.err(format!("duplicate attribute `{name}`")));
            }
            seen |= bit;
            match name {
                "exp_dig" => exp = Some((u32_of(v, "exp_dig")?, v.pos())),
                "mant_dig" => mant = Some((u32_of(v, "mant_dig")?, v.pos())),
                "align" => {
                    let s = u32_of(v, "alignment")?;
                    if !is_pow2(u64::from(s)) {
                        return Err(v.pos().err("alignment must be a power of two"));
                    }
                    align = Some(s);
                }
                "byte_order" => bo = byte_order_of(v)?.unwrap_or(self.trace_bo),
                _ => {}
            }
        }
        let Some((exp_dig, epos)) = exp else {
            return Err(pos.err("floating point type without `exp_dig`"));
        };
        let Some((mant_dig, _)) = mant else {
            return Err(pos.err("floating point type without `mant_dig`"));
        };
        if !matches!((exp_dig, mant_dig), (8, 24) | (11, 53)) {
            return Err(epos.err(format!(
                "unsupported floating point type (exp_dig {exp_dig}, mant_dig {mant_dig}): only 8/24 \
                 (binary32) and 11/53 (binary64) are supported"
            )));
        }
        let size = exp_dig + mant_dig;
        Ok(FloatType {
            exp_dig,
            mant_dig,
            align: align.unwrap_or(if size % 8 == 0 { 8 } else { 1 }),
            byte_order: bo,
        })
    }

    fn enum_type(
        &mut self,
        container: Option<&[Spec]>,
        body: &[Enumerator],
        pos: Pos,
    ) -> Result<EnumType> {
        let cont = match container {
            Some(specs) => {
                let cpos = specs.first().map(Spec::pos).unwrap_or(pos);
                match self.specs_type(specs, cpos)?.kind {
                    TyKind::Full(FieldType::Int(i)) => i,
                    _ => return Err(cpos.err("an enumeration's container must be an integer type")),
                }
            }
            None => match self.lookup("int").map(|t| &t.kind) {
                Some(TyKind::Full(FieldType::Int(i))) => i.clone(),
                Some(_) => {
                    return Err(
                        pos.err("implicit enumeration container `int` is not an integer type")
                    )
                }
                None => {
                    return Err(
                        pos.err("enumeration without container type, and `int` is not defined")
                    )
                }
            },
        };
        if body.is_empty() {
            return Err(pos.err("enumeration without any entry"));
        }
        let (min, max) = int_range(&cont);
        let mut next: i128 = 0;
        let mut mappings = Vec::with_capacity(body.len());
        for e in body {
            let (lo, hi) = match &e.value {
                None => (next, next),
                Some((lo, hi)) => {
                    let l = int128_of(lo, "enumerator value")?;
                    let h = match hi {
                        Some(h) => int128_of(h, "enumerator value")?,
                        None => l,
                    };
                    if h < l {
                        let p = hi.as_ref().map(Value::pos).unwrap_or(e.pos);
                        return Err(p.err("enumerator range upper bound below its lower bound"));
                    }
                    (l, h)
                }
            };
            if lo < min || hi > max {
                let p = e.value.as_ref().map(|(l, _)| l.pos()).unwrap_or(e.pos);
                return Err(p.err(format!(
                    "value of enumerator `{}` out of the range of its {}-bit {} container",
                    e.label,
                    cont.size,
                    if cont.signed { "signed" } else { "unsigned" }
                )));
            }
            next = hi + 1;
            mappings.push(EnumMapping { label: e.label.clone(), lower: lo, upper: hi });
        }
        Ok(EnumType { container: cont, mappings })
    }

    /// Lowers a body's statements into a new frame; returns the frame.
    #[inline(never)]
    fn body_frame(&mut self, body: &[Stmt], variant: bool) -> Result<Frame> {
        self.with_scope(|me| {
            me.frames.push(Frame::new(variant));
            let r = body.iter().try_for_each(|s| me.body_stmt(s));
            let fr = me.frames.pop();
            r?;
            fr.ok_or_else(|| Error::metadata(0, 0, "internal error: frame"))
        })
    }

    fn spec_type(&mut self, spec: &Spec) -> Result<Ty> {
        match spec {
            Spec::Word(n) => self.specs_type(std::slice::from_ref(spec), n.pos),
            Spec::Integer(attrs, pos) => Ok(Ty::leaf(FieldType::Int(self.int_type(attrs, *pos)?))),
            Spec::Float(attrs, pos) => {
                Ok(Ty::leaf(FieldType::Float(self.float_type(attrs, *pos)?)))
            }
            Spec::String(attrs, _) => {
                let mut enc = Encoding::Utf8;
                let mut seen = false;
                for a in attrs {
                    if a.name.text == "encoding" {
                        if seen {
                            return Err(a.name.pos.err("duplicate attribute `encoding`"));
                        }
                        seen = true;
                        enc = encoding_of(&a.value)?;
                    }
                }
                Ok(Ty::leaf(FieldType::String(enc)))
            }
            Spec::Struct { name, body, align, pos } => {
                self.struct_type(name.as_ref(), body.as_deref(), align.as_ref(), *pos)
            }
            Spec::Variant { name, tag, body, pos } => {
                self.variant_type(name.as_ref(), tag.as_deref(), body.as_deref(), *pos)
            }
            Spec::Enum { name, container, body, pos } => {
                self.enum_spec_type(name.as_ref(), container.as_deref(), body.as_deref(), *pos)
            }
        }
    }

    #[inline(never)]
    fn struct_type(
        &mut self,
        name: Option<&Name>,
        body: Option<&[Stmt]>,
        align: Option<&Value>,
        pos: Pos,
    ) -> Result<Ty> {
        let min_align = match align {
            None => 1,
            Some(v) => {
                let a = u32_of(v, "structure alignment")?;
                if !is_pow2(u64::from(a)) {
                    return Err(v.pos().err("structure alignment must be a power of two"));
                }
                a
            }
        };
        let Some(body) = body else {
            let Some(name) = name else { return Err(pos.err("structure without name or body")) };
            let key = format!("struct {}", name.text);
            let Some(mut t) = self.lookup_take(&key, name.pos)? else {
                return Err(name.pos.err(format!("unknown structure `{}`", name.text)));
            };
            if let TyKind::Full(FieldType::Struct(s)) = &mut t.kind {
                s.min_align = s.min_align.max(min_align);
            }
            return Ok(t);
        };
        let fr = self.body_frame(body, false)?;
        let depth = fr.max_depth + 1;
        Self::check_depth(depth, pos)?;
        let t = Ty {
            kind: TyKind::Full(FieldType::Struct(StructType { fields: fr.fields, min_align })),
            depth,
        };
        if let Some(name) = name {
            let copy = self.take(&t, name.pos)?;
            self.register(format!("struct {}", name.text), copy, name.pos)?;
        }
        Ok(t)
    }

    #[inline(never)]
    fn variant_type(
        &mut self,
        name: Option<&Name>,
        tag: Option<&[Name]>,
        body: Option<&[Stmt]>,
        pos: Pos,
    ) -> Result<Ty> {
        let base = match body {
            Some(body) => {
                let fr = self.body_frame(body, true)?;
                if fr.fields.is_empty() {
                    // Report a bad tag first: it is the more specific error.
                    if let Some(tag) = tag {
                        self.variant_tag(tag, &[])?;
                    }
                    return Err(pos.err("variant without any option"));
                }
                let depth = fr.max_depth + 1;
                Self::check_depth(depth, pos)?;
                Ty { kind: TyKind::Untagged(fr.fields), depth }
            }
            None => {
                let Some(name) = name else { return Err(pos.err("variant without name or body")) };
                match self.lookup_take(&format!("variant {}", name.text), name.pos)? {
                    Some(t) => t,
                    None => return Err(name.pos.err(format!("unknown variant `{}`", name.text))),
                }
            }
        };
        let t = match tag {
            None => base,
            Some(tag) => {
                let options = match base.kind {
                    TyKind::Untagged(o) => o,
                    TyKind::Full(FieldType::Variant(v)) => v.options,
                    TyKind::Full(_) => return Err(pos.err("internal error: variant")),
                };
                if tag.is_empty() {
                    return Err(pos.err("empty variant tag"));
                }
                let path = self.variant_tag(tag, &options)?;
                Ty {
                    kind: TyKind::Full(FieldType::Variant(VariantType { tag: path, options })),
                    depth: base.depth,
                }
            }
        };
        if let (Some(name), Some(_)) = (name, body) {
            // A later `variant name <tag>` may give (or replace) the tag.
            let copy = self.take(&t, name.pos)?;
            self.register(format!("variant {}", name.text), copy, name.pos)?;
        }
        Ok(t)
    }

    #[inline(never)]
    fn enum_spec_type(
        &mut self,
        name: Option<&Name>,
        container: Option<&[Spec]>,
        body: Option<&[Enumerator]>,
        pos: Pos,
    ) -> Result<Ty> {
        let Some(body) = body else {
            let Some(name) = name else { return Err(pos.err("enumeration without name or body")) };
            return match self.lookup_take(&format!("enum {}", name.text), name.pos)? {
                Some(t) => Ok(t),
                None => Err(name.pos.err(format!("unknown enumeration `{}`", name.text))),
            };
        };
        let e = self.enum_type(container, body, pos)?;
        let t = Ty::leaf(FieldType::Enum(e));
        if let Some(name) = name {
            let copy = self.take(&t, name.pos)?;
            self.register(format!("enum {}", name.text), copy, name.pos)?;
        }
        Ok(t)
    }

    /// A declaration without declarators: only defines the named structures, variants and
    /// enumerations it contains.
    fn type_only_decl(&mut self, specs: &[Spec], pos: Pos) -> Result<()> {
        let mut any = false;
        for s in specs {
            match s {
                Spec::Word(n) if n.text == "const" => {}
                Spec::Word(n) => {
                    return Err(n.pos.err(format!("declaration of `{}` declares nothing", n.text)))
                }
                // An anonymous variant without declarator has no instance: no tag to resolve.
                Spec::Variant { name: None, body: Some(body), pos, .. } => {
                    self.variant_type(None, None, Some(body), *pos)?;
                    any = true;
                }
                _ => {
                    self.spec_type(s)?;
                    any = true;
                }
            }
        }
        if !any {
            return Err(pos.err("declaration declares nothing"));
        }
        Ok(())
    }

    fn check_decl_name(name: &Name) -> Result<()> {
        if is_keyword(&name.text) {
            return Err(name.pos.err(format!("keyword `{}` used as a name", name.text)));
        }
        Ok(())
    }

    /// The type of the declarators without pointer stars (lowered once: lowering a structure
    /// body twice would define its name twice).
    fn decl_base(&mut self, specs: &[Spec], decls: &[Declarator], pos: Pos) -> Result<Ty> {
        if decls.iter().all(|d| d.ptr > 0) {
            // Checked per declarator; a placeholder that is never used.
            return Ok(Ty::leaf(FieldType::String(Encoding::Utf8)));
        }
        self.specs_type(specs, pos)
    }

    fn typedef(&mut self, specs: &[Spec], decls: &[Declarator], pos: Pos) -> Result<()> {
        let base = self.decl_base(specs, decls, pos)?;
        for d in decls {
            Self::check_decl_name(&d.name)?;
            let b = if d.ptr > 0 {
                self.specs_type_ptr(specs, d.ptr, pos)?
            } else {
                self.take(&base, d.name.pos)?
            };
            let t = self.apply_dims(b, &d.dims, d.name.pos)?;
            self.register(d.name.text.clone(), t, d.name.pos)?;
        }
        Ok(())
    }

    fn typealias(
        &mut self,
        specs: &[Spec],
        dims: &[Dim],
        alias: &[Name],
        alias_dims: &[Dim],
        pos: Pos,
    ) -> Result<()> {
        for w in alias {
            if is_keyword(&w.text) && !is_type_keyword(&w.text) {
                return Err(w.pos.err(format!("keyword `{}` cannot name a type", w.text)));
            }
        }
        let base = self.specs_type(specs, pos)?;
        let t = self.apply_dims(base, dims, pos)?;
        let apos = alias.first().map(|n| n.pos).unwrap_or(pos);
        let t = self.apply_dims(t, alias_dims, apos)?;
        let key = alias.iter().map(|n| n.text.as_str()).collect::<Vec<_>>().join(" ");
        self.register(key, t, apos)
    }

    /// Fields (or variant options) declared in a body.
    #[inline(never)]
    fn field_decl(&mut self, specs: &[Spec], decls: &[Declarator], pos: Pos) -> Result<()> {
        if decls.is_empty() {
            return self.type_only_decl(specs, pos);
        }
        for d in decls {
            Self::check_decl_name(&d.name)?;
        }
        if let Some(fr) = self.frames.last_mut() {
            fr.pending = decls.iter().map(|d| d.name.text.clone()).collect();
        }
        let base = self.decl_base(specs, decls, pos);
        if let Some(fr) = self.frames.last_mut() {
            fr.pending.clear();
        }
        let base = base?;
        for d in decls {
            let b = if d.ptr > 0 {
                self.specs_type_ptr(specs, d.ptr, pos)?
            } else {
                self.take(&base, d.name.pos)?
            };
            let t = self.apply_dims(b, &d.dims, d.name.pos)?;
            let TyKind::Full(ft) = t.kind else {
                return Err(d.name.pos.err(format!("variant field `{}` has no tag", d.name.text)));
            };
            let Some(fr) = self.frames.last_mut() else {
                return Err(d.name.pos.err("field declaration outside of a structure"));
            };
            fr.push(&d.name, ft, t.depth)?;
        }
        Ok(())
    }

    /// A statement inside a structure or variant body.
    fn body_stmt(&mut self, s: &Stmt) -> Result<()> {
        match s {
            Stmt::Typealias { specs, dims, alias, alias_dims, pos } => {
                self.typealias(specs, dims, alias, alias_dims, *pos)
            }
            Stmt::Typedef { specs, decls, pos } => self.typedef(specs, decls, *pos),
            Stmt::Decl { specs, decls, pos } => self.field_decl(specs, decls, *pos),
            Stmt::Block { kind, .. } => Err(kind.pos.err("block inside a type body")),
            Stmt::Assign { lhs, .. } | Stmt::TypeAssign { lhs, .. } => {
                let pos = lhs.first().map(|n| n.pos).unwrap_or_default();
                Err(pos.err("assignment inside a type body"))
            }
        }
    }

    /// A type declaration at top level or in a block (no fields there).
    fn decl_stmt(&mut self, s: &Stmt) -> Result<()> {
        match s {
            Stmt::Decl { decls, .. } if !decls.is_empty() => {
                Err(decls[0].name.pos.err("field declaration outside of a structure"))
            }
            _ => self.body_stmt(s),
        }
    }

    /// The root type of a dynamic scope (`packet.header := struct { ... };`).
    fn scope_root(
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

    fn trace_block(&mut self, kind: &Name, body: &[Stmt]) -> Result<()> {
        if self.trace_seen {
            return Err(kind.pos.err("duplicate trace block"));
        }
        self.trace_seen = true;
        self.trace_pos = kind.pos;
        let mut seen = HashSet::new();
        let (mut major, mut minor, mut bo) = (None, None, None);
        self.with_scope(|me| {
            for s in body {
                match s {
                    Stmt::Assign { lhs, value } => {
                        let key = path_key(lhs);
                        check_dup(&mut seen, key.clone(), lhs[0].pos)?;
                        match key.as_str() {
                            "major" => major = Some((uint_of(value, "major")?, value.pos())),
                            "minor" => minor = Some((uint_of(value, "minor")?, value.pos())),
                            "uuid" => {
                                me.uuid = Some(parse_uuid(str_of(value, "uuid")?, value.pos())?)
                            }
                            "byte_order" => {
                                byte_order_of(value)?;
                                bo = Some(());
                            }
                            _ => {}
                        }
                    }
                    Stmt::TypeAssign { lhs, specs, dims, pos } => {
                        let key = path_key(lhs);
                        check_dup(&mut seen, key.clone(), lhs[0].pos)?;
                        let ctx = DynCtx {
                            current: Some(Scope::PacketHeader),
                            complete: true,
                            ..DynCtx::default()
                        };
                        if key == "packet.header" {
                            me.packet_header = Some(me.scope_root(specs, dims, *pos, ctx)?);
                        } else {
                            me.scope_root(specs, dims, *pos, DynCtx::default())?;
                        }
                    }
                    other => me.decl_stmt(other)?,
                }
            }
            Ok(())
        })?;
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

    fn env_block(&mut self, kind: &Name, body: &[Stmt]) -> Result<()> {
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

    fn clock_block(&mut self, kind: &Name, body: &[Stmt]) -> Result<()> {
        let mut seen = HashSet::new();
        let mut c = ClockClass::default();
        let mut named = false;
        self.with_scope(|me| {
            for s in body {
                match s {
                    Stmt::Assign { lhs, value } => {
                        let key = path_key(lhs);
                        check_dup(&mut seen, key.clone(), lhs[0].pos)?;
                        match key.as_str() {
                            "name" => {
                                c.name = name_of(value, "clock name")?;
                                named = true;
                            }
                            "uuid" => {
                                c.uuid = Some(parse_uuid(str_of(value, "uuid")?, value.pos())?)
                            }
                            "description" => {
                                c.description = Some(str_of(value, "description")?.to_string())
                            }
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
                    }
                    Stmt::TypeAssign { lhs, .. } => {
                        return Err(lhs[0].pos.err("type assignment in clock block"))
                    }
                    other => me.decl_stmt(other)?,
                }
            }
            Ok(())
        })?;
        if !named {
            return Err(kind.pos.err("clock block without `name`"));
        }
        if self.clocks.iter().any(|k| k.name == c.name) {
            return Err(kind.pos.err(format!("duplicate clock `{}`", c.name)));
        }
        self.clocks.push(c);
        Ok(())
    }

    fn callsite_block(&mut self, body: &[Stmt]) -> Result<()> {
        let mut seen = HashSet::new();
        let mut c = Callsite {
            name: String::new(),
            func: String::new(),
            ip: 0,
            file: String::new(),
            line: 0,
        };
        self.with_scope(|me| {
            for s in body {
                match s {
                    Stmt::Assign { lhs, value } => {
                        let key = path_key(lhs);
                        check_dup(&mut seen, key.clone(), lhs[0].pos)?;
                        match key.as_str() {
                            "name" => c.name = name_of(value, "name")?,
                            "func" => c.func = name_of(value, "func")?,
                            "file" => c.file = name_of(value, "file")?,
                            "ip" => c.ip = uint_of(value, "ip")?,
                            "line" => c.line = uint_of(value, "line")?,
                            _ => {}
                        }
                    }
                    Stmt::TypeAssign { lhs, .. } => {
                        return Err(lhs[0].pos.err("type assignment in callsite block"))
                    }
                    other => me.decl_stmt(other)?,
                }
            }
            Ok(())
        })?;
        self.callsites.push(c);
        Ok(())
    }

    fn stream_block(&mut self, kind: &Name, body: &[Stmt]) -> Result<()> {
        let mut seen = HashSet::new();
        let mut id = None;
        let mut sc = StreamClass {
            id: 0,
            packet_context: None,
            event_header: None,
            event_context: None,
            events: Vec::new(),
        };
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
        self.with_scope(|me| {
            for s in body {
                match s {
                    Stmt::Assign { lhs, value } => {
                        let key = path_key(lhs);
                        check_dup(&mut seen, key.clone(), lhs[0].pos)?;
                        if key == "id" {
                            id = Some(uint_of(value, "stream id")?);
                        }
                    }
                    Stmt::TypeAssign { lhs, specs, dims, pos } => {
                        let key = path_key(lhs);
                        check_dup(&mut seen, key.clone(), lhs[0].pos)?;
                        let mut prev = vec![(Scope::PacketHeader, ph.clone())];
                        let mut complete = trace_seen;
                        let order = [
                            ("packet.context", Scope::PacketContext),
                            ("event.header", Scope::EventHeader),
                            ("event.context", Scope::EventCommonContext),
                        ];
                        let Some(ix) = order.iter().position(|(k, _)| *k == key) else {
                            me.scope_root(specs, dims, *pos, DynCtx::default())?;
                            continue;
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
                        let ctx =
                            DynCtx { current: Some(order[ix].1), root_frame: 0, prev, complete };
                        let root = Some(me.scope_root(specs, dims, *pos, ctx)?);
                        match order[ix].1 {
                            Scope::PacketContext => sc.packet_context = root,
                            Scope::EventHeader => sc.event_header = root,
                            _ => sc.event_context = root,
                        }
                    }
                    other => me.decl_stmt(other)?,
                }
            }
            Ok(())
        })?;
        sc.id = id.unwrap_or(0);
        if self.streams.iter().any(|s| s.id == sc.id) {
            return Err(kind.pos.err(format!("duplicate stream id {}", sc.id)));
        }
        self.streams.push(sc);
        Ok(())
    }

    fn event_block(&mut self, kind: &Name, body: &[Stmt]) -> Result<()> {
        let mut seen = HashSet::new();
        let mut ev = EventClass {
            id: 0,
            name: String::new(),
            loglevel: None,
            model_emf_uri: None,
            context: None,
            payload: None,
        };
        let mut id = None;
        let mut stream_id = None;
        let mut named = false;
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
        self.with_scope(|me| {
            for s in body {
                match s {
                    Stmt::Assign { lhs, value } => {
                        let key = path_key(lhs);
                        check_dup(&mut seen, key.clone(), lhs[0].pos)?;
                        match key.as_str() {
                            "name" => {
                                ev.name = name_of(value, "event name")?;
                                named = true;
                            }
                            "id" => id = Some(uint_of(value, "event id")?),
                            "stream_id" => {}
                            "loglevel" => ev.loglevel = Some(sint_of(value, "loglevel")?),
                            "model.emf.uri" => {
                                ev.model_emf_uri = Some(str_of(value, "model.emf.uri")?.to_string())
                            }
                            _ => {}
                        }
                    }
                    Stmt::TypeAssign { lhs, specs, dims, pos } => {
                        let key = path_key(lhs);
                        check_dup(&mut seen, key.clone(), lhs[0].pos)?;
                        match key.as_str() {
                            "context" => {
                                let ctx = DynCtx {
                                    current: Some(Scope::EventSpecificContext),
                                    root_frame: 0,
                                    prev: base_prev.clone(),
                                    complete: base_complete,
                                };
                                ev.context = Some(me.scope_root(specs, dims, *pos, ctx)?);
                            }
                            "fields" => {
                                let mut prev = base_prev.clone();
                                prev.push((Scope::EventSpecificContext, ev.context.clone()));
                                let complete =
                                    base_complete && (ev.context.is_some() || !has_context);
                                let ctx = DynCtx {
                                    current: Some(Scope::EventPayload),
                                    root_frame: 0,
                                    prev,
                                    complete,
                                };
                                ev.payload = Some(me.scope_root(specs, dims, *pos, ctx)?);
                            }
                            _ => {
                                me.scope_root(specs, dims, *pos, DynCtx::default())?;
                            }
                        }
                    }
                    other => me.decl_stmt(other)?,
                }
            }
            Ok(())
        })?;
        if !named {
            return Err(kind.pos.err("event block without `name`"));
        }
        ev.id = id.unwrap_or(0);
        self.events.push(PendingEvent { class: ev, stream_id, pos: kind.pos });
        Ok(())
    }

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
                FieldType::Float(_) | FieldType::String(_) => None,
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
