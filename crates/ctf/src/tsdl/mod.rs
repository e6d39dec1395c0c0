//! CTF 1.8 TSDL: lexer, parser and lowering to [`crate::ir`].
//!
//! Every error is an [`crate::Error::Metadata`] with the 1-based line and column of the
//! offending token. Nesting is bounded (hostile input cannot exhaust the stack) and nothing is
//! allocated in proportion to a declared array length.

mod ast;
mod lexer;
mod lower;
mod parser;

use crate::ir::{ByteOrder, TraceClass};
use crate::{Error, Result};

/// Parses TSDL text into a [`TraceClass`].
///
/// A trace whose `byte_order` is `native` is taken as little-endian (use
/// [`crate::parse_metadata`] on packetized metadata to get the packets' byte order instead).
pub fn parse(text: &str) -> Result<TraceClass> {
    parse_with_native(text, ByteOrder::Little)
}

/// Parses TSDL text; `native` is what a trace `byte_order = native` means.
pub(crate) fn parse_with_native(text: &str, native: ByteOrder) -> Result<TraceClass> {
    check_version_header(text)?;
    let toks = lexer::tokenize(text)?;
    let end = toks.last().map(|t| t.pos).unwrap_or_default();
    let stmts = parser::parse(toks)?;
    // Named types are copied where used: bound the copies by the text size.
    let budget = (1u64 << 18).max(64 * text.len() as u64);
    lower::lower(&stmts, native, end, budget)
}

/// A text starting with `/* CTF` must announce version 1.8 (`/* CTF 1.8 */`).
fn check_version_header(text: &str) -> Result<()> {
    let lead = text.len() - text.trim_start().len();
    let rest = &text[lead..];
    let Some(after) = rest.strip_prefix("/* CTF") else { return Ok(()) };
    // Position of the version (after the leading whitespace lines).
    let before = &text[..lead];
    let line = 1 + before.matches('\n').count() as u32;
    let col = 1 + before.rsplit('\n').next().map(|s| s.chars().count()).unwrap_or(0) as u32 + 6;
    let err = || Error::metadata(line, col, "metadata must start with `/* CTF 1.8`");
    let after = after.trim_start_matches([' ', '\t']);
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let n = digits(after);
    let (major, after) = after.split_at(n);
    let after = after.strip_prefix('.').ok_or_else(err)?;
    let m = digits(after);
    let (minor, after) = after.split_at(m);
    if major != "1" || minor != "8" {
        return Err(err());
    }
    match after.chars().next() {
        None => Ok(()),
        Some(c) if c.is_whitespace() || c == '*' => Ok(()),
        Some(_) => Err(err()),
    }
}

#[cfg(test)]
mod tests;
