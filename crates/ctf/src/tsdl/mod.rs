//! CTF 1.8 TSDL: lexer, parser and lowering to [`crate::ir`].

use crate::ir::TraceClass;
use crate::Result;

/// Parses TSDL text into a [`TraceClass`].
pub fn parse(text: &str) -> Result<TraceClass> {
    todo!()
}
