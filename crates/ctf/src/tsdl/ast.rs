//! The TSDL syntax tree, as written (before name resolution and checks).

use super::lexer::Pos;

/// A name and where it is written.
#[derive(Clone, Debug)]
pub(crate) struct Name {
    pub text: String,
    pub pos: Pos,
}

/// The right-hand side of `name = value;` (a C unary expression).
#[derive(Clone, Debug)]
pub(crate) enum Value {
    /// An integer literal with an optional sign: the value is `-mag` when `neg`.
    Int { neg: bool, mag: u64, pos: Pos },
    /// A string literal.
    Str(String, Pos),
    /// A character literal.
    Char(Pos),
    /// Dot-separated identifiers/keywords (`le`, `true`, `clock.monotonic.value`).
    Path(Vec<Name>),
}

impl Value {
    pub fn pos(&self) -> Pos {
        match self {
            Value::Int { pos, .. } | Value::Str(_, pos) | Value::Char(pos) => *pos,
            Value::Path(p) => p.first().map(|n| n.pos).unwrap_or_default(),
        }
    }
}

/// `name = value;` inside `integer { }`, `floating_point { }`, `string { }`.
#[derive(Clone, Debug)]
pub(crate) struct Attr {
    pub name: Name,
    pub value: Value,
}

/// One enumerator: `LABEL`, `LABEL = v` or `LABEL = lo ... hi`.
#[derive(Clone, Debug)]
pub(crate) struct Enumerator {
    pub label: String,
    pub pos: Pos,
    pub value: Option<(Value, Option<Value>)>,
}

/// A type specifier.
#[derive(Clone, Debug)]
pub(crate) enum Spec {
    /// An identifier or type keyword: part of a type name (`uint32_t`, `unsigned`, `long`).
    Word(Name),
    /// `integer { ... }`
    Integer(Vec<Attr>, Pos),
    /// `floating_point { ... }`
    Float(Vec<Attr>, Pos),
    /// `string` or `string { ... }`
    String(Vec<Attr>, Pos),
    /// `struct [name] [{ ... }] [align(N)]`
    Struct { name: Option<Name>, body: Option<Vec<Stmt>>, align: Option<Value>, pos: Pos },
    /// `variant [name] [<tag>] [{ ... }]`
    Variant { name: Option<Name>, tag: Option<Vec<Name>>, body: Option<Vec<Stmt>>, pos: Pos },
    /// `enum [name] [: container] [{ ... }]`
    Enum {
        name: Option<Name>,
        container: Option<Vec<Spec>>,
        body: Option<Vec<Enumerator>>,
        pos: Pos,
    },
}

impl Spec {
    pub fn pos(&self) -> Pos {
        match self {
            Spec::Word(n) => n.pos,
            Spec::Integer(_, p) | Spec::Float(_, p) | Spec::String(_, p) => *p,
            Spec::Struct { pos, .. } | Spec::Variant { pos, .. } | Spec::Enum { pos, .. } => *pos,
        }
    }
}

/// What is between `[` and `]` after a declarator.
#[derive(Clone, Debug)]
pub(crate) enum Dim {
    /// An integer literal (possibly negative, which is an error later).
    Len { neg: bool, mag: u64, pos: Pos },
    /// A field path: a sequence.
    Path(Vec<Name>),
}

/// `*name[dim][dim]...`
#[derive(Clone, Debug)]
pub(crate) struct Declarator {
    pub name: Name,
    pub dims: Vec<Dim>,
    /// Pointer stars before the name: the type is the one named `TYPE *` (by a typealias).
    pub ptr: u32,
}

/// A statement: at top level, in a block (`trace { }`, ...) or in a structure/variant body.
#[derive(Clone, Debug)]
pub(crate) enum Stmt {
    /// `typealias specs [dims] := name words [dims];`
    Typealias { specs: Vec<Spec>, dims: Vec<Dim>, alias: Vec<Name>, alias_dims: Vec<Dim>, pos: Pos },
    /// `typedef specs declarators;`
    Typedef { specs: Vec<Spec>, decls: Vec<Declarator>, pos: Pos },
    /// `specs [declarators];` (fields in a structure body; type definitions anywhere)
    Decl { specs: Vec<Spec>, decls: Vec<Declarator>, pos: Pos },
    /// `trace { ... };` and the other blocks
    Block { kind: Name, body: Vec<Stmt> },
    /// `a.b = value;`
    Assign { lhs: Vec<Name>, value: Value },
    /// `a.b := specs [dims];`
    TypeAssign { lhs: Vec<Name>, specs: Vec<Spec>, dims: Vec<Dim>, pos: Pos },
}
