//! TSDL tokenizer: C-like tokens with 1-based line/column positions.
//!
//! Comments (`/* */`, `//`) and whitespace (CR and LF included, so CRLF text works) are skipped.
//! Integer literals are decimal, hexadecimal (`0x`), octal (leading `0`) or binary (`0b`), with
//! optional `u`/`l` suffixes; their value must fit in 64 bits. String literals are decoded (C
//! escapes); character literals become their code point.

use crate::{Error, Result};

/// A position in the TSDL text (1-based).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Pos {
    pub line: u32,
    pub col: u32,
}

impl Pos {
    /// A metadata error at this position.
    pub fn err(self, msg: impl Into<String>) -> Error {
        Error::metadata(self.line, self.col, msg)
    }
}

/// Punctuation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum P {
    LBrace,
    RBrace,
    LParen,
    RParen,
    LBracket,
    RBracket,
    Semi,
    Comma,
    Colon,
    TypeAssign,
    Assign,
    Dot,
    Ellipsis,
    Lt,
    Gt,
    Plus,
    Minus,
    Star,
    Arrow,
}

impl P {
    pub fn text(self) -> &'static str {
        match self {
            P::LBrace => "{",
            P::RBrace => "}",
            P::LParen => "(",
            P::RParen => ")",
            P::LBracket => "[",
            P::RBracket => "]",
            P::Semi => ";",
            P::Comma => ",",
            P::Colon => ":",
            P::TypeAssign => ":=",
            P::Assign => "=",
            P::Dot => ".",
            P::Ellipsis => "...",
            P::Lt => "<",
            P::Gt => ">",
            P::Plus => "+",
            P::Minus => "-",
            P::Star => "*",
            P::Arrow => "->",
        }
    }
}

/// A token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tok<'a> {
    /// Identifier or keyword.
    Ident(&'a str),
    /// Integer literal (always non-negative; a leading `-` is a separate token).
    Int(u64),
    /// Decoded string literal.
    Str(String),
    /// Character literal.
    Char(u32),
    /// Punctuation.
    Punct(P),
    /// End of text.
    Eof,
}

impl Tok<'_> {
    /// A short description for error messages.
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Int(v) => format!("integer `{v}`"),
            Tok::Str(_) => "string literal".to_string(),
            Tok::Char(_) => "character literal".to_string(),
            Tok::Punct(p) => format!("`{}`", p.text()),
            Tok::Eof => "end of metadata".to_string(),
        }
    }
}

/// A token and where it starts.
#[derive(Clone, Debug)]
pub(crate) struct Token<'a> {
    pub tok: Tok<'a>,
    pub pos: Pos,
}

/// The TSDL keywords (identifiers that cannot name fields or typedefs).
pub(crate) const KEYWORDS: &[&str] = &[
    "align",
    "callsite",
    "const",
    "char",
    "clock",
    "double",
    "enum",
    "env",
    "event",
    "floating_point",
    "float",
    "integer",
    "int",
    "long",
    "short",
    "signed",
    "stream",
    "string",
    "struct",
    "trace",
    "typealias",
    "typedef",
    "unsigned",
    "variant",
    "void",
    "_Bool",
    "_Complex",
    "_Imaginary",
];

/// Keywords that may be part of a C type name (`unsigned long`, `int`, ...), and so may be the
/// name declared by a `typealias`.
pub(crate) const TYPE_KEYWORDS: &[&str] = &[
    "const",
    "char",
    "double",
    "float",
    "int",
    "long",
    "short",
    "signed",
    "unsigned",
    "void",
    "_Bool",
    "_Complex",
    "_Imaginary",
];

pub(crate) fn is_keyword(s: &str) -> bool {
    KEYWORDS.contains(&s)
}

pub(crate) fn is_type_keyword(s: &str) -> bool {
    TYPE_KEYWORDS.contains(&s)
}

struct Lexer<'a> {
    text: &'a str,
    bytes: &'a [u8],
    i: usize,
    line: u32,
    col: u32,
}

impl<'a> Lexer<'a> {
    fn pos(&self) -> Pos {
        Pos { line: self.line, col: self.col }
    }

    fn peek(&self, k: usize) -> u8 {
        self.bytes.get(self.i + k).copied().unwrap_or(0)
    }

    fn at_end(&self) -> bool {
        self.i >= self.bytes.len()
    }

    /// Advances one byte, tracking line and column (continuation bytes of UTF-8 sequences do
    /// not count as columns).
    fn bump(&mut self) -> u8 {
        let b = self.peek(0);
        self.i += 1;
        if b == b'\n' {
            self.line = self.line.saturating_add(1);
            self.col = 1;
        } else if b & 0xC0 != 0x80 {
            self.col = self.col.saturating_add(1);
        }
        b
    }

    fn skip_trivia(&mut self) -> Result<()> {
        loop {
            if self.at_end() {
                return Ok(());
            }
            let b = self.peek(0);
            match b {
                b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C => {
                    self.bump();
                }
                b'/' if self.peek(1) == b'*' => {
                    let start = self.pos();
                    self.bump();
                    self.bump();
                    loop {
                        if self.at_end() {
                            return Err(start.err("unterminated comment"));
                        }
                        if self.peek(0) == 0 {
                            return Err(self.pos().err("NUL character in metadata"));
                        }
                        if self.peek(0) == b'*' && self.peek(1) == b'/' {
                            self.bump();
                            self.bump();
                            break;
                        }
                        self.bump();
                    }
                }
                b'/' if self.peek(1) == b'/' => {
                    while !self.at_end() && self.peek(0) != b'\n' {
                        if self.peek(0) == 0 {
                            return Err(self.pos().err("NUL character in metadata"));
                        }
                        self.bump();
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn number(&mut self, start: Pos) -> Result<Tok<'a>> {
        let (radix, skip) = match (self.peek(0), self.peek(1)) {
            (b'0', b'x' | b'X') => (16, 2),
            (b'0', b'b' | b'B') if self.peek(2).is_ascii_digit() => (2, 2),
            (b'0', b'0'..=b'9') => (8, 1),
            _ => (10, 0),
        };
        for _ in 0..skip {
            self.bump();
        }
        let mut value: u64 = 0;
        let mut digits = 0usize;
        let mut overflow = false;
        while !self.at_end() {
            let c = self.peek(0);
            let d = match c {
                b'0'..=b'9' => u32::from(c - b'0'),
                b'a'..=b'f' if radix == 16 => u32::from(c - b'a' + 10),
                b'A'..=b'F' if radix == 16 => u32::from(c - b'A' + 10),
                _ => break,
            };
            if d >= radix {
                return Err(self
                    .pos()
                    .err(format!("invalid digit `{}` in integer literal", c as char)));
            }
            match value.checked_mul(u64::from(radix)).and_then(|v| v.checked_add(u64::from(d))) {
                Some(v) => value = v,
                None => overflow = true,
            }
            digits += 1;
            self.bump();
        }
        if digits == 0 && skip == 2 {
            return Err(start.err("incomplete integer literal"));
        }
        // Suffixes: any mix of up to three u/U/l/L.
        let mut suffix = 0;
        while matches!(self.peek(0), b'u' | b'U' | b'l' | b'L') && suffix < 3 {
            self.bump();
            suffix += 1;
        }
        let c = self.peek(0);
        if !self.at_end() && (c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80) {
            return Err(self.pos().err("invalid integer literal"));
        }
        if overflow {
            return Err(start.err("integer literal does not fit in 64 bits"));
        }
        Ok(Tok::Int(value))
    }

    /// Decodes one escape sequence after the backslash, appending the bytes to `out`.
    fn escape(&mut self, out: &mut Vec<u8>) -> Result<()> {
        let pos = self.pos();
        if self.at_end() {
            return Err(pos.err("unterminated escape sequence"));
        }
        let c = self.bump();
        match c {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'a' => out.push(0x07),
            b'b' => out.push(0x08),
            b'f' => out.push(0x0C),
            b'v' => out.push(0x0B),
            b'e' => out.push(0x1B),
            b'\\' | b'"' | b'\'' | b'?' => out.push(c),
            b'0'..=b'7' => {
                let mut v = u32::from(c - b'0');
                let mut n = 1;
                while n < 3 && matches!(self.peek(0), b'0'..=b'7') {
                    v = v * 8 + u32::from(self.bump() - b'0');
                    n += 1;
                }
                if v > 0xFF {
                    return Err(pos.err("octal escape sequence out of range"));
                }
                out.push(v as u8);
            }
            b'x' => {
                let mut v: u32 = 0;
                let mut n = 0;
                while let Some(d) = (self.peek(0) as char).to_digit(16) {
                    if self.at_end() || v * 16 + d > 0xFF {
                        break;
                    }
                    v = v * 16 + d;
                    n += 1;
                    self.bump();
                }
                if n == 0 {
                    return Err(pos.err("`\\x` escape sequence without hexadecimal digits"));
                }
                out.push(v as u8);
            }
            0 => return Err(pos.err("NUL character in metadata")),
            // Unknown escape: the character itself (as C compilers do, with a warning).
            _ => out.push(c),
        }
        Ok(())
    }

    fn string(&mut self, start: Pos) -> Result<Tok<'a>> {
        self.bump(); // opening quote
        let mut out = Vec::new();
        loop {
            if self.at_end() {
                return Err(start.err("unterminated string literal"));
            }
            let pos = self.pos();
            let c = self.bump();
            match c {
                b'"' => break,
                b'\\' => self.escape(&mut out)?,
                0 => return Err(pos.err("NUL character in metadata")),
                _ => out.push(c),
            }
        }
        Ok(Tok::Str(String::from_utf8_lossy(&out).into_owned()))
    }

    fn char_lit(&mut self, start: Pos) -> Result<Tok<'a>> {
        self.bump(); // opening quote
        let mut out = Vec::new();
        loop {
            if self.at_end() {
                return Err(start.err("unterminated character literal"));
            }
            let pos = self.pos();
            let c = self.bump();
            match c {
                b'\'' => break,
                b'\\' => self.escape(&mut out)?,
                b'\n' => return Err(pos.err("newline in character literal")),
                0 => return Err(pos.err("NUL character in metadata")),
                _ => out.push(c),
            }
        }
        let s = String::from_utf8_lossy(&out);
        let mut chars = s.chars();
        match (chars.next(), chars.next()) {
            (Some(ch), None) => Ok(Tok::Char(ch as u32)),
            (None, _) if out.len() == 1 => Ok(Tok::Char(u32::from(out[0]))),
            _ => Err(start.err("a character literal must hold exactly one character")),
        }
    }

    fn next(&mut self) -> Result<Token<'a>> {
        self.skip_trivia()?;
        let pos = self.pos();
        if self.at_end() {
            return Ok(Token { tok: Tok::Eof, pos });
        }
        let c = self.peek(0);
        let tok = match c {
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                let s = self.i;
                while matches!(self.peek(0), b'a'..=b'z' | b'A'..=b'Z' | b'_' | b'0'..=b'9') {
                    self.bump();
                }
                // ASCII only, so slicing on these boundaries is valid.
                Tok::Ident(&self.text[s..self.i])
            }
            b'0'..=b'9' => self.number(pos)?,
            b'"' => self.string(pos)?,
            b'\'' => self.char_lit(pos)?,
            _ => {
                let (p, n) = match (c, self.peek(1), self.peek(2)) {
                    (b'.', b'.', b'.') => (P::Ellipsis, 3),
                    (b':', b'=', _) => (P::TypeAssign, 2),
                    (b'-', b'>', _) => (P::Arrow, 2),
                    (b'{', _, _) => (P::LBrace, 1),
                    (b'}', _, _) => (P::RBrace, 1),
                    (b'(', _, _) => (P::LParen, 1),
                    (b')', _, _) => (P::RParen, 1),
                    (b'[', _, _) => (P::LBracket, 1),
                    (b']', _, _) => (P::RBracket, 1),
                    (b';', _, _) => (P::Semi, 1),
                    (b',', _, _) => (P::Comma, 1),
                    (b':', _, _) => (P::Colon, 1),
                    (b'=', _, _) => (P::Assign, 1),
                    (b'.', _, _) => (P::Dot, 1),
                    (b'<', _, _) => (P::Lt, 1),
                    (b'>', _, _) => (P::Gt, 1),
                    (b'+', _, _) => (P::Plus, 1),
                    (b'-', _, _) => (P::Minus, 1),
                    (b'*', _, _) => (P::Star, 1),
                    (0, _, _) => return Err(pos.err("NUL character in metadata")),
                    _ => {
                        let ch = self.text[self.i..].chars().next().unwrap_or('?');
                        return Err(
                            pos.err(format!("unexpected character `{}`", ch.escape_default()))
                        );
                    }
                };
                for _ in 0..n {
                    self.bump();
                }
                Tok::Punct(p)
            }
        };
        Ok(Token { tok, pos })
    }
}

/// Splits TSDL text into tokens; the last one is [`Tok::Eof`].
pub(crate) fn tokenize(text: &str) -> Result<Vec<Token<'_>>> {
    let mut lx = Lexer { text, bytes: text.as_bytes(), i: 0, line: 1, col: 1 };
    // A rough guess (one token per 5 bytes) avoids most reallocations.
    let mut out = Vec::with_capacity(text.len() / 5 + 1);
    loop {
        let t = lx.next()?;
        let eof = t.tok == Tok::Eof;
        out.push(t);
        if eof {
            return Ok(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok<'_>> {
        tokenize(s).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn integer_literals() {
        assert_eq!(
            toks("0 12 0x1F 0X10 017 0b101 42u 7UL 8ull 0xFFFFFFFFFFFFFFFFULL"),
            vec![
                Tok::Int(0),
                Tok::Int(12),
                Tok::Int(31),
                Tok::Int(16),
                Tok::Int(15),
                Tok::Int(5),
                Tok::Int(42),
                Tok::Int(7),
                Tok::Int(8),
                Tok::Int(u64::MAX),
                Tok::Eof
            ]
        );
        assert!(tokenize("1x").is_err());
        assert!(tokenize("09").is_err());
        assert!(tokenize("0x").is_err());
        assert!(tokenize("18446744073709551616").is_err());
    }

    #[test]
    fn string_and_char_literals() {
        assert_eq!(
            toks(r#""a\"b\n\x41\101\0431\x0231" 'x' '\n'"#),
            vec![
                Tok::Str("a\"b\nAA#1#1".to_string()),
                Tok::Char('x' as u32),
                Tok::Char(10),
                Tok::Eof
            ]
        );
        assert!(tokenize("\"abc").is_err());
        assert_eq!(toks(r#""\q""#), vec![Tok::Str("q".into()), Tok::Eof]);
    }

    #[test]
    fn comments_and_punctuation() {
        assert_eq!(
            toks("a /* x\n y */ := // c\n b...c; d->e"),
            vec![
                Tok::Ident("a"),
                Tok::Punct(P::TypeAssign),
                Tok::Ident("b"),
                Tok::Punct(P::Ellipsis),
                Tok::Ident("c"),
                Tok::Punct(P::Semi),
                Tok::Ident("d"),
                Tok::Punct(P::Arrow),
                Tok::Ident("e"),
                Tok::Eof
            ]
        );
        assert!(tokenize("/* open").is_err());
        assert!(tokenize("a \0 b").is_err());
        assert!(tokenize("a @").is_err());
    }

    #[test]
    fn positions_with_crlf() {
        let t = tokenize("a\r\n  b\r\n\r\n\tc").unwrap();
        assert_eq!(t[0].pos, Pos { line: 1, col: 1 });
        assert_eq!(t[1].pos, Pos { line: 2, col: 3 });
        assert_eq!(t[2].pos, Pos { line: 4, col: 2 });
        let err = tokenize("x\r\n  1z").unwrap_err();
        match err {
            Error::Metadata { line, column, .. } => assert_eq!((line, column), (2, 4)),
            e => panic!("unexpected {e:?}"),
        }
    }
}
