//! Lowering types: specifiers and declarators, integers, floats, enumerations, structures,
//! variants, typedefs and typealiases, with the nesting and size bounds.

use crate::ir::{ArrayType, Encoding, EnumMapping, EnumType, EnvValue, FieldType, FloatType, IntType, NamedField, SequenceType, StructType, VariantType};
use crate::tsdl::ast::{Attr, Declarator, Dim, Enumerator, Name, Spec, Stmt, Value};
use crate::tsdl::lexer::{is_keyword, is_type_keyword, Pos};
use crate::{Error, Result};

use super::Lowerer;
use super::attrs::{attr_once, base_of, bool_of, byte_order_of, encoding_of, int128_of, is_pow2, u32_of};
use super::refs::Frame;

/// Deepest type nesting accepted (structures, variants, arrays and sequences together).
pub(super) const MAX_TYPE_DEPTH: u32 = 192;

/// A lowered type and how deeply it nests.
#[derive(Clone, Debug)]
pub(super) struct Ty {
    pub(super) kind: TyKind,
    pub(super) depth: u32,
}

#[derive(Clone, Debug)]
pub(super) enum TyKind {
    /// A complete field type.
    Full(FieldType),
    /// A variant declared without a tag: usable only where a tag is then given.
    Untagged(Vec<NamedField>),
}

impl Ty {
    pub(super) fn leaf(t: FieldType) -> Ty {
        Ty { kind: TyKind::Full(t), depth: 1 }
    }
}

/// Number of nodes of a type (enumeration mappings included), or `None` above `limit`.
pub(super) fn count_nodes(t: &Ty, limit: u64) -> Option<u64> {
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
            FieldType::Optional(o) => stack.push(&o.ty),
            FieldType::BitMap(e) => n += e.mappings.len() as u64,
            FieldType::Int(_) | FieldType::Float(_) | FieldType::String(_) | FieldType::Bool(_) | FieldType::Blob(_) => {}
        }
        if n > limit {
            return None;
        }
    }
    Some(n)
}

pub(super) fn too_large(pos: Pos) -> Error {
    pos.err("metadata types too large (copies of named types exceed the size limit)")
}

/// Values `[min, max]` an integer container can hold.
pub(super) fn int_range(i: &IntType) -> (i128, i128) {
    let s = i.size.min(127);
    if i.signed {
        (-(1i128 << (s - 1)), (1i128 << (s - 1)) - 1)
    } else {
        (0, (1i128 << s) - 1)
    }
}

impl Lowerer {
    // -- types --------------------------------------------------------------------------------

    pub(super) fn check_depth(depth: u32, pos: Pos) -> Result<()> {
        if depth > MAX_TYPE_DEPTH {
            return Err(pos.err(format!("type nested deeper than {MAX_TYPE_DEPTH} levels")));
        }
        Ok(())
    }

    /// The type named by a specifier list (and nothing else).
    pub(super) fn specs_type(&mut self, specs: &[Spec], pos: Pos) -> Result<Ty> {
        self.specs_type_ptr(specs, 0, pos)
    }

    /// The type named by a specifier list followed by `ptr` pointer stars.
    pub(super) fn specs_type_ptr(&mut self, specs: &[Spec], ptr: u32, pos: Pos) -> Result<Ty> {
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
    pub(super) fn apply_dims(&self, ty: Ty, dims: &[Dim], pos: Pos) -> Result<Ty> {
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

    pub(super) fn int_type(&self, attrs: &[Attr], pos: Pos) -> Result<IntType> {
        let mut seen = 0u8;
        let mut size = None;
        let mut align = None;
        let mut t = IntType { align: 0, ..IntType::new(0, false, self.trace_bo) };
        for a in attrs {
            let v = &a.value;
            let name = a.name.text.as_str();
            attr_once(&mut seen, &["size", "align", "signed", "byte_order", "base", "encoding", "map"], a)?;
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

    pub(super) fn float_type(&self, attrs: &[Attr], pos: Pos) -> Result<FloatType> {
        let mut seen = 0u8;
        let (mut exp, mut mant, mut align) = (None, None, None);
        let mut bo = self.trace_bo;
        for a in attrs {
            let v = &a.value;
            let name = a.name.text.as_str();
            attr_once(&mut seen, &["exp_dig", "mant_dig", "align", "byte_order"], a)?;
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

    pub(super) fn enum_type(
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
    pub(super) fn body_frame(&mut self, body: &[Stmt], variant: bool) -> Result<Frame> {
        self.with_scope(|me| {
            me.frames.push(Frame::new(variant));
            let r = body.iter().try_for_each(|s| me.body_stmt(s));
            let fr = me.frames.pop();
            r?;
            fr.ok_or_else(|| Error::metadata(0, 0, "internal error: frame"))
        })
    }

    pub(super) fn spec_type(&mut self, spec: &Spec) -> Result<Ty> {
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
    pub(super) fn struct_type(
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
    pub(super) fn variant_type(
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
                    kind: TyKind::Full(FieldType::Variant(VariantType { tag: path, options, ranges: None })),
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
    pub(super) fn enum_spec_type(
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
    pub(super) fn type_only_decl(&mut self, specs: &[Spec], pos: Pos) -> Result<()> {
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

    pub(super) fn check_decl_name(name: &Name) -> Result<()> {
        if is_keyword(&name.text) {
            return Err(name.pos.err(format!("keyword `{}` used as a name", name.text)));
        }
        Ok(())
    }

    /// The type of the declarators without pointer stars (lowered once: lowering a structure
    /// body twice would define its name twice).
    pub(super) fn decl_base(&mut self, specs: &[Spec], decls: &[Declarator], pos: Pos) -> Result<Ty> {
        if decls.iter().all(|d| d.ptr > 0) {
            // Checked per declarator; a placeholder that is never used.
            return Ok(Ty::leaf(FieldType::String(Encoding::Utf8)));
        }
        self.specs_type(specs, pos)
    }

    pub(super) fn typedef(&mut self, specs: &[Spec], decls: &[Declarator], pos: Pos) -> Result<()> {
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

    pub(super) fn typealias(
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
    pub(super) fn field_decl(&mut self, specs: &[Spec], decls: &[Declarator], pos: Pos) -> Result<()> {
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
    pub(super) fn body_stmt(&mut self, s: &Stmt) -> Result<()> {
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
    pub(super) fn decl_stmt(&mut self, s: &Stmt) -> Result<()> {
        match s {
            Stmt::Decl { decls, .. } if !decls.is_empty() => {
                Err(decls[0].name.pos.err("field declaration outside of a structure"))
            }
            _ => self.body_stmt(s),
        }
    }
}
