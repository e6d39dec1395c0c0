//! Writing a command's result to standard output.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use serde::Serialize;

/// Fails when standard output was closed (`tracelens print TRACE >&-`): the result would go
/// nowhere and the command would seem to succeed. A pipe closed by its reader (`| head`) is
/// another matter: it shows as a broken pipe when written, which `main` takes as success.
///
/// Rust's runtime reopens a closed standard output on `/dev/null`, read-write, before `main`
/// (its writes would then vanish); a shell's `>/dev/null` opens it write-only. So standard
/// output that is `/dev/null` opened read-write is taken as closed.
pub fn check_stdout() -> Result<()> {
    // SAFETY: fstat fills a plain-data struct for descriptor 1; fcntl(F_GETFL) only asks
    // about it.
    let (st, flags) = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(libc::STDOUT_FILENO, &mut st) != 0 {
            bail!("standard output is closed: nowhere to write the result");
        }
        (st, libc::fcntl(libc::STDOUT_FILENO, libc::F_GETFL))
    };
    let dev_null = st.st_mode & libc::S_IFMT == libc::S_IFCHR && st.st_rdev == libc::makedev(1, 3);
    if dev_null && flags != -1 && flags & libc::O_ACCMODE == libc::O_RDWR {
        bail!("standard output is closed: nowhere to write the result");
    }
    Ok(())
}

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
