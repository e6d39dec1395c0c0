//! Writing a command's result to standard output.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde::Serialize;

/// Runs `write` on a buffered standard output and flushes it. A closed pipe comes back as an
/// error that `main` turns into success.
pub fn to_stdout(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<ExitCode> {
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    write(&mut out).and_then(|()| out.flush()).context("cannot write the output")?;
    Ok(ExitCode::SUCCESS)
}

/// Writes `value` as one line of JSON.
pub fn json_line(out: &mut dyn Write, value: &impl Serialize) -> io::Result<()> {
    serde_json::to_writer(&mut *out, value).map_err(io::Error::from)?;
    out.write_all(b"\n")
}
