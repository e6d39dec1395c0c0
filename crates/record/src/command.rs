//! Checking that the command to record can be started before anything is set up, and saying
//! why it could not be when starting it fails: a recorder whose command never runs must end at
//! once, with one line naming the command and the reason.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Finds `program` as `execvp` would (a path when it holds a `/`, else the first match in
/// `PATH`) and checks that it is an executable regular file, so that a command that cannot
/// run is reported before tracing is set up. Returns the file found.
pub fn check_program(program: &OsStr) -> Result<PathBuf> {
    let shown = program.to_string_lossy();
    let fail = |why: &str| Error::Target(format!("cannot run `{shown}`: {why}"));
    if program.is_empty() {
        return Err(fail("empty command name"));
    }
    if program.as_bytes().contains(&b'/') {
        let path = PathBuf::from(program);
        return match executable(&path) {
            Ok(()) => Ok(path),
            Err(why) => Err(fail(&why)),
        };
    }
    let search: OsString = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    let mut first_problem = None;
    for dir in std::env::split_paths(&search) {
        let dir = if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir };
        let path = dir.join(program);
        match executable(&path) {
            Ok(()) => return Ok(path),
            Err(why) if path.exists() => {
                first_problem.get_or_insert(format!("{}: {why}", path.display()));
            }
            Err(_) => {}
        }
    }
    Err(fail(&first_problem.unwrap_or_else(|| "command not found in PATH".into())))
}

/// Why `path` cannot be executed, if it cannot.
fn executable(path: &Path) -> std::result::Result<(), String> {
    let meta = std::fs::metadata(path).map_err(|e| os_message(&e))?;
    if meta.is_dir() {
        return Err("is a directory".into());
    }
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err("permission denied (not executable)".into());
    }
    Ok(())
}

/// The error of a failed `spawn` of `program`, with its cause named: a script whose
/// interpreter is missing fails with "no such file" although the script is there.
pub(crate) fn spawn_error(program: &OsStr, e: &std::io::Error) -> Error {
    let shown = program.to_string_lossy();
    let mut why = os_message(e);
    if e.kind() == std::io::ErrorKind::NotFound {
        if let Some(interp) = check_program(program).ok().and_then(|p| interpreter(&p)) {
            why = format!("its interpreter `{interp}` (named on its #! line): {why}");
        }
    }
    Error::Target(format!("cannot run `{shown}`: {why}"))
}

/// The interpreter named on the `#!` line of script `path`.
fn interpreter(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(path).and_then(|mut f| f.read(&mut head)).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|&b| b == b'\n').next()?;
    let word = line.split(|b| b.is_ascii_whitespace()).find(|w| !w.is_empty())?;
    Some(String::from_utf8_lossy(word).into_owned())
}

/// An OS error as a lower-case phrase without the `(os error N)` tail.
fn os_message(e: &std::io::Error) -> String {
    let s = e.to_string();
    let s = s.split(" (os error").next().unwrap_or(&s).to_string();
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_lowercase().chain(c).collect(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tracelens-command-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn programs_that_cannot_run_are_named_with_the_reason() {
        let e = check_program(OsStr::new("/nonexistent/cmd")).unwrap_err().to_string();
        assert_eq!(e, "cannot run `/nonexistent/cmd`: no such file or directory");
        let e = check_program(OsStr::new("/")).unwrap_err().to_string();
        assert_eq!(e, "cannot run `/`: is a directory");
        let e = check_program(OsStr::new("/dev/null")).unwrap_err().to_string();
        assert_eq!(e, "cannot run `/dev/null`: not a regular file");
        let e = check_program(OsStr::new("tracelens-no-such-program-anywhere")).unwrap_err().to_string();
        assert_eq!(e, "cannot run `tracelens-no-such-program-anywhere`: command not found in PATH");
        let d = scratch("modes");
        let plain = d.join("plain");
        std::fs::write(&plain, "#!/bin/sh\n").unwrap();
        let e = check_program(plain.as_os_str()).unwrap_err().to_string();
        assert!(e.ends_with("permission denied (not executable)"), "{e}");
        assert!(check_program(OsStr::new("sh")).unwrap().is_absolute());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_missing_interpreter_is_named() {
        let d = scratch("interp");
        let script = d.join("script");
        std::fs::write(&script, "#!/nonexistent/interpreter -x\necho hi\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(check_program(script.as_os_str()).is_ok(), "the script itself is fine");
        let err = std::process::Command::new(&script).spawn().unwrap_err();
        let e = spawn_error(script.as_os_str(), &err).to_string();
        assert!(e.contains("its interpreter `/nonexistent/interpreter`") && e.contains("no such file"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
