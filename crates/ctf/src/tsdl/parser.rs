//! TSDL parser: tokens to the syntax tree of [`super::ast`]. Purely syntactic; names are
//! resolved and values checked when lowering.

use super::ast::{Attr, Declarator, Dim, Enumerator, Name, Spec, Stmt, Value};
use super::lexer::{is_keyword, is_type_keyword, Pos, Tok, Token, P};
use crate::Result;

/// Deepest nesting of bodies (structures, variants, blocks, enum containers) accepted.
pub(crate) const MAX_NESTING: u32 = 128;

/// Most dimensions on one declarator (`x[1][2]...`).
const MAX_DIMS: usize = 64;

/// Where a statement list is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    /// The top level of the metadata.
    Top,
    /// The body of `trace`, `stream`, `event`, `clock`, `env`, `callsite`.
    Block,
    /// The body of a structure or variant.
    Body,
}

const BLOCK_KINDS: &[&str] = &["trace", "stream", "event", "clock", "env", "callsite"];

struct Parser<'a> {
    toks: Vec<Token<'a>>,
    i: usize,
    depth: u32,
}

impl<'a> Parser<'a> {
    fn tok(&self) -> &Tok<'a> {
        self.tok_at(0)
    }

    fn tok_at(&self, k: usize) -> &Tok<'a> {
        match self.toks.get(self.i + k).or_else(|| self.toks.last()) {
            Some(t) => &t.tok,
            None => &Tok::Eof,
        }
    }

    fn pos(&self) -> Pos {
        self.toks.get(self.i).or_else(|| self.toks.last()).map(|t| t.pos).unwrap_or_default()
    }

    /// Consumes the current token.
    fn bump(&mut self) -> Token<'a> {
        let pos = self.pos();
        match self.toks.get_mut(self.i) {
            Some(t) if t.tok != Tok::Eof => {
                self.i += 1;
                std::mem::replace(t, Token { tok: Tok::Eof, pos })
            }
            _ => Token { tok: Tok::Eof, pos },
        }
    }

    fn is_punct(&self, p: P) -> bool {
        *self.tok() == Tok::Punct(p)
    }

    fn is_ident(&self, s: &str) -> bool {
        *self.tok() == Tok::Ident(s)
    }

    fn unexpected(&self, expected: &str) -> crate::Error {
        self.pos().err(format!("expected {expected}, found {}", self.tok().describe()))
    }

    fn expect(&mut self, p: P) -> Result<Pos> {
        if self.is_punct(p) {
            Ok(self.bump().pos)
        } else {
            Err(self.unexpected(&format!("`{}`", p.text())))
        }
    }

    fn eat(&mut self, p: P) -> bool {
        if self.is_punct(p) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn ident(&mut self, what: &str) -> Result<Name> {
        match *self.tok() {
            Tok::Ident(s) => {
                let pos = self.bump().pos;
                Ok(Name { text: s.to_string(), pos })
            }
            _ => Err(self.unexpected(what)),
        }
    }

    fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(self.pos().err(format!("nesting deeper than {MAX_NESTING} levels")));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Statements until `}` (not consumed) or, at top level, the end.
    fn stmts(&mut self, ctx: Ctx) -> Result<Vec<Stmt>> {
        let mut out = Vec::new();
        loop {
            match self.tok() {
                Tok::Eof if ctx == Ctx::Top => return Ok(out),
                Tok::Eof => return Err(self.unexpected("`}`")),
                Tok::Punct(P::RBrace) if ctx != Ctx::Top => return Ok(out),
                // Empty statements.
                Tok::Punct(P::Semi) => {
                    self.bump();
                }
                _ => out.push(self.stmt(ctx)?),
            }
        }
    }

    /// `a.b.c` followed by `=` or `:=`?
    fn at_assignment(&self) -> bool {
        let mut k = 0;
        loop {
            if !matches!(self.tok_at(k), Tok::Ident(_)) {
                return false;
            }
            match self.tok_at(k + 1) {
                Tok::Punct(P::Dot) => k += 2,
                Tok::Punct(P::Assign | P::TypeAssign) => return true,
                _ => return false,
            }
        }
    }

    fn stmt(&mut self, ctx: Ctx) -> Result<Stmt> {
        if self.is_ident("typealias") {
            return self.typealias();
        }
        if self.is_ident("typedef") {
            return self.typedef();
        }
        if ctx == Ctx::Top {
            if let Tok::Ident(kind) = *self.tok() {
                if BLOCK_KINDS.contains(&kind) && *self.tok_at(1) == Tok::Punct(P::LBrace) {
                    return self.block();
                }
            }
        }
        if ctx == Ctx::Block && self.at_assignment() {
            return self.assignment();
        }
        self.decl()
    }

    #[inline(never)]
    fn typedef(&mut self) -> Result<Stmt> {
        let pos = self.bump().pos;
        let specs = self.specs()?;
        if specs.is_empty() {
            return Err(self.unexpected("a type"));
        }
        let (specs, decls) = self.declarators(specs)?;
        if decls.is_empty() {
            return Err(self.unexpected("a type name"));
        }
        self.expect(P::Semi)?;
        Ok(Stmt::Typedef { specs, decls, pos })
    }

    #[inline(never)]
    fn block(&mut self) -> Result<Stmt> {
        let kind = self.ident("block")?;
        self.bump(); // `{`
        self.enter()?;
        let body = self.stmts(Ctx::Block)?;
        self.leave();
        self.expect(P::RBrace)?;
        self.expect(P::Semi)?;
        Ok(Stmt::Block { kind, body })
    }

    #[inline(never)]
    fn assignment(&mut self) -> Result<Stmt> {
        let lhs = self.path()?;
        if self.eat(P::Assign) {
            let value = self.value()?;
            self.expect(P::Semi)?;
            return Ok(Stmt::Assign { lhs, value });
        }
        let pos = self.expect(P::TypeAssign)?;
        let specs = self.specs()?;
        if specs.is_empty() {
            return Err(self.unexpected("a type"));
        }
        let dims = self.dims()?;
        self.expect(P::Semi)?;
        Ok(Stmt::TypeAssign { lhs, specs, dims, pos })
    }

    #[inline(never)]
    fn decl(&mut self) -> Result<Stmt> {
        let pos = self.pos();
        let specs = self.specs()?;
        if specs.is_empty() {
            return Err(self.unexpected("a declaration"));
        }
        let (specs, decls) = self.declarators(specs)?;
        self.expect(P::Semi)?;
        Ok(Stmt::Decl { specs, decls, pos })
    }

    /// `typealias specs [dims] := words [dims];`
    #[inline(never)]
    fn typealias(&mut self) -> Result<Stmt> {
        let pos = self.bump().pos;
        let specs = self.specs()?;
        if specs.is_empty() {
            return Err(self.unexpected("a type"));
        }
        let dims = self.dims()?;
        self.expect(P::TypeAssign)?;
        let mut alias = Vec::new();
        loop {
            match self.tok() {
                Tok::Ident(_) => alias.push(self.ident("type name")?),
                // Pointer types (`void *`): the stars are part of the name.
                Tok::Punct(P::Star) if !alias.is_empty() => {
                    let pos = self.bump().pos;
                    alias.push(Name { text: "*".to_string(), pos });
                }
                _ => break,
            }
        }
        if alias.is_empty() {
            return Err(self.unexpected("a type name"));
        }
        let alias_dims = self.dims()?;
        self.expect(P::Semi)?;
        Ok(Stmt::Typealias { specs, dims, alias, alias_dims, pos })
    }

    /// After a specifier list: the declarators. The last word of the list is the first
    /// declarator's name when the next token ends a declarator (`uint32_t x;`).
    fn declarators(&mut self, mut specs: Vec<Spec>) -> Result<(Vec<Spec>, Vec<Declarator>)> {
        let mut decls = Vec::new();
        let ptr = self.stars();
        let first = if ptr > 0 || matches!(self.tok(), Tok::Ident(_)) {
            Some(self.ident("name")?)
        } else if specs.len() >= 2
            && matches!(self.tok(), Tok::Punct(P::Semi | P::Comma | P::LBracket))
            && matches!(specs.last(), Some(Spec::Word(_)))
        {
            match specs.pop() {
                Some(Spec::Word(n)) => Some(n),
                _ => None,
            }
        } else {
            None
        };
        let Some(first) = first else {
            if self.is_punct(P::LBracket) || self.is_punct(P::Comma) {
                return Err(self.unexpected("a name"));
            }
            return Ok((specs, decls));
        };
        let dims = self.dims()?;
        decls.push(Declarator { name: first, dims, ptr });
        while self.eat(P::Comma) {
            let ptr = self.stars();
            let name = self.ident("a name")?;
            let dims = self.dims()?;
            decls.push(Declarator { name, dims, ptr });
        }
        Ok((specs, decls))
    }

    /// Pointer stars before a declarator's name.
    fn stars(&mut self) -> u32 {
        let mut n = 0;
        while self.eat(P::Star) {
            n += 1;
        }
        n
    }

    /// `[len][path]...`
    fn dims(&mut self) -> Result<Vec<Dim>> {
        let mut dims = Vec::new();
        while self.is_punct(P::LBracket) {
            if dims.len() >= MAX_DIMS {
                return Err(self.pos().err(format!("more than {MAX_DIMS} array dimensions")));
            }
            self.bump();
            let pos = self.pos();
            let dim = match self.tok() {
                Tok::Int(v) => {
                    let v = *v;
                    self.bump();
                    Dim::Len { neg: false, mag: v, pos }
                }
                Tok::Punct(p @ (P::Minus | P::Plus)) => {
                    let neg = *p == P::Minus;
                    self.bump();
                    match *self.tok() {
                        Tok::Int(v) => {
                            self.bump();
                            Dim::Len { neg, mag: v, pos }
                        }
                        _ => return Err(self.unexpected("an integer")),
                    }
                }
                Tok::Ident(_) => Dim::Path(self.path()?),
                _ => return Err(self.unexpected("an array length or a field path")),
            };
            self.expect(P::RBracket)?;
            dims.push(dim);
        }
        Ok(dims)
    }

    /// `a.b.c` (identifiers or keywords).
    fn path(&mut self) -> Result<Vec<Name>> {
        let mut p = vec![self.ident("a name")?];
        while self.eat(P::Dot) {
            p.push(self.ident("a name")?);
        }
        Ok(p)
    }

    /// A unary expression: `[+|-] int`, string, character, or a path.
    fn value(&mut self) -> Result<Value> {
        let pos = self.pos();
        match self.tok() {
            Tok::Int(v) => {
                let v = *v;
                self.bump();
                Ok(Value::Int { neg: false, mag: v, pos })
            }
            Tok::Punct(p @ (P::Minus | P::Plus)) => {
                let neg = *p == P::Minus;
                self.bump();
                match *self.tok() {
                    Tok::Int(v) => {
                        self.bump();
                        Ok(Value::Int { neg, mag: v, pos })
                    }
                    _ => Err(self.unexpected("an integer")),
                }
            }
            Tok::Str(_) => match self.bump().tok {
                Tok::Str(s) => Ok(Value::Str(s, pos)),
                _ => Err(pos.err("expected a string")),
            },
            Tok::Char(_) => {
                self.bump();
                Ok(Value::Char(pos))
            }
            Tok::Ident(_) => Ok(Value::Path(self.path()?)),
            _ => Err(self.unexpected("a value")),
        }
    }

    /// `{ name = value; ... }`
    fn attrs(&mut self) -> Result<Vec<Attr>> {
        self.expect(P::LBrace)?;
        let mut out = Vec::new();
        while !self.is_punct(P::RBrace) {
            if self.eat(P::Semi) {
                continue;
            }
            let name = self.ident("an attribute name")?;
            self.expect(P::Assign)?;
            let value = self.value()?;
            self.expect(P::Semi)?;
            out.push(Attr { name, value });
        }
        self.bump();
        Ok(out)
    }

    /// A structure or variant body `{ ... }`.
    fn body(&mut self) -> Result<Vec<Stmt>> {
        self.expect(P::LBrace)?;
        self.enter()?;
        let body = self.stmts(Ctx::Body)?;
        self.leave();
        self.expect(P::RBrace)?;
        Ok(body)
    }

    /// An optional name after `struct`/`variant`/`enum`.
    fn opt_name(&mut self) -> Result<Option<Name>> {
        match *self.tok() {
            Tok::Ident(s) if !is_keyword(s) => Ok(Some(self.ident("a name")?)),
            _ => Ok(None),
        }
    }

    /// A list of type specifiers (possibly empty).
    fn specs(&mut self) -> Result<Vec<Spec>> {
        let mut out = Vec::new();
        loop {
            let Tok::Ident(w) = *self.tok() else { return Ok(out) };
            let spec = match w {
                "struct" => self.struct_spec()?,
                "variant" => self.variant_spec()?,
                "enum" => self.enum_spec()?,
                "integer" | "floating_point" | "string" => self.basic_spec(w)?,
                _ if !is_keyword(w) || is_type_keyword(w) => Spec::Word(self.ident("a type name")?),
                _ => return Ok(out),
            };
            out.push(spec);
        }
    }

    #[inline(never)]
    fn basic_spec(&mut self, w: &str) -> Result<Spec> {
        let pos = self.bump().pos;
        Ok(match w {
            "integer" => Spec::Integer(self.attrs()?, pos),
            "floating_point" => Spec::Float(self.attrs()?, pos),
            _ => {
                Spec::String(if self.is_punct(P::LBrace) { self.attrs()? } else { Vec::new() }, pos)
            }
        })
    }

    #[inline(never)]
    fn struct_spec(&mut self) -> Result<Spec> {
        let pos = self.bump().pos;
        let name = self.opt_name()?;
        let body = if self.is_punct(P::LBrace) { Some(self.body()?) } else { None };
        if name.is_none() && body.is_none() {
            return Err(self.unexpected("a structure name or body"));
        }
        let align = if self.is_ident("align") {
            self.bump();
            self.expect(P::LParen)?;
            let v = self.value()?;
            self.expect(P::RParen)?;
            Some(v)
        } else {
            None
        };
        Ok(Spec::Struct { name, body, align, pos })
    }

    #[inline(never)]
    fn variant_spec(&mut self) -> Result<Spec> {
        let pos = self.bump().pos;
        let name = self.opt_name()?;
        let tag = if self.eat(P::Lt) {
            let p = self.path()?;
            self.expect(P::Gt)?;
            Some(p)
        } else {
            None
        };
        let body = if self.is_punct(P::LBrace) { Some(self.body()?) } else { None };
        if name.is_none() && body.is_none() {
            return Err(self.unexpected("a variant name or body"));
        }
        Ok(Spec::Variant { name, tag, body, pos })
    }

    #[inline(never)]
    fn enum_spec(&mut self) -> Result<Spec> {
        let pos = self.bump().pos;
        let name = self.opt_name()?;
        let container = if self.eat(P::Colon) {
            self.enter()?;
            let c = self.specs()?;
            self.leave();
            if c.is_empty() {
                return Err(self.unexpected("an integer type"));
            }
            Some(c)
        } else {
            None
        };
        let body = if self.is_punct(P::LBrace) { Some(self.enumerators()?) } else { None };
        if name.is_none() && body.is_none() {
            return Err(self.unexpected("an enumeration name or body"));
        }
        Ok(Spec::Enum { name, container, body, pos })
    }

    /// `{ A, B = 2, C = 3 ... 5, "d" }`
    fn enumerators(&mut self) -> Result<Vec<Enumerator>> {
        self.expect(P::LBrace)?;
        let mut out = Vec::new();
        while !self.is_punct(P::RBrace) {
            let pos = self.pos();
            let label = match self.bump().tok {
                Tok::Ident(s) => s.to_string(),
                Tok::Str(s) => s,
                t => return Err(pos.err(format!("expected an enumerator, found {}", t.describe()))),
            };
            let value = if self.eat(P::Assign) {
                let lo = self.value()?;
                let hi = if self.eat(P::Ellipsis) { Some(self.value()?) } else { None };
                Some((lo, hi))
            } else {
                None
            };
            out.push(Enumerator { label, pos, value });
            if !self.eat(P::Comma) {
                break;
            }
        }
        self.expect(P::RBrace)?;
        Ok(out)
    }
}

/// Parses tokens (ending with [`Tok::Eof`]) into top-level statements.
pub(crate) fn parse(toks: Vec<Token<'_>>) -> Result<Vec<Stmt>> {
    let mut p = Parser { toks, i: 0, depth: 0 };
    p.stmts(Ctx::Top)
}
