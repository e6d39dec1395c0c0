//! Writing a command's result to standard output.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;
#[cfg(target_os = "linux")]
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{bail, Context, Result};
use serde::Serialize;

/// Whether descriptor 1 was closed when the process started, noted by [`NOTE_STDOUT`].
#[cfg(target_os = "linux")]
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Rust's runtime reopens a closed standard output on `/dev/null` before `main` (its writes
/// would then vanish), so whether it was closed is noted earlier: the loader runs the functions
/// of `.init_array` before the runtime starts.
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static NOTE_STDOUT: extern "C" fn() = {
    extern "C" fn note() {
        // SAFETY: fcntl(F_GETFD) only asks about descriptor 1.
        if unsafe { libc::fcntl(libc::STDOUT_FILENO, libc::F_GETFD) } == -1 {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
        }
    }
    note
};

/// Fails when standard output was closed (`tracelens print TRACE >&-`): the result would go
/// nowhere and the command would seem to succeed. A pipe closed by its reader (`| head`) is
/// another matter: it shows as a broken pipe when written, which `main` takes as success.
/// `/dev/null`, however it was opened (a shell's `>/dev/null` opens it write-only, Python's
/// `subprocess.DEVNULL` read-write), is a place to write to.
pub fn check_stdout() -> Result<()> {
    if stdout_closed() {
        bail!("standard output is closed: nowhere to write the result");
    }
    Ok(())
}

#[cfg(target_os = "linux")]
fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// Elsewhere the runtime's reopening is told apart only by its read-write `/dev/null`.
#[cfg(not(target_os = "linux"))]
fn stdout_closed() -> bool {
    // SAFETY: fstat fills a plain-data struct for descriptor 1; fcntl(F_GETFL) only asks
    // about it.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(libc::STDOUT_FILENO, &mut st) != 0 {
            return true;
        }
        let flags = libc::fcntl(libc::STDOUT_FILENO, libc::F_GETFL);
        let dev_null = st.st_mode & libc::S_IFMT == libc::S_IFCHR && st.st_rdev == libc::makedev(1, 3);
        dev_null && flags != -1 && flags & libc::O_ACCMODE == libc::O_RDWR
    }
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
