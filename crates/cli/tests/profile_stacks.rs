//! Stacks of interpreted and JIT-compiled code, recorded by `tracelens record` and read by
//! `tracelens profile` and `print --symbolize` (issue 20):
//!
//! * `node --perf-basic-prof`: the hot JavaScript function is named from the perf map saved
//!   in DIR/jit, with its JavaScript callers in order (unwound by frame pointers);
//! * `python3.12` and `python3.13 -X perf` (and `-X perf_jit`, a jitdump): the hot Python
//!   function is named from CPython's trampolines, with its Python callers in order
//!   (trampolines unwound from their instructions);
//! * `record --python` on every CPython 3.8-3.13 here: Python functions, files and lines in
//!   the stacks, callers in order, in place of the interpreter's evaluation loop;
//! * accuracy (the 2015 paper's Table 1 design): ten Python functions taking 50, 20, 15, 5,
//!   5, 1, 1, 1, 1, 1 % of the CPU; the profile's shares are within 1.5 percentage points RMS
//!   of the CPU time the program measured in each function itself;
//! * `--off-cpu`: the time blocked in two known Python functions, against the program's own
//!   clock;
//! * a Python file name holding terminal escapes reaches `profile`'s and `print
//!   --symbolize`'s text escaped, never raw.
//!
//! Needs root, tracefs and perf_event_open (skipped with a message without them), and node or
//! the CPython versions (each part skipped, with a message, when its interpreter is absent).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod common;
use common::exe;

/// Recordings run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("recording needs root".into());
    }
    let events = Path::new("/sys/kernel/tracing/events");
    if !events.is_dir() {
        return Some("no tracefs at /sys/kernel/tracing".into());
    }
    tracelens_record::stacks::check(&tracelens_record::stacks::StackOptions::default(), events).err().map(|e| e.to_string())
}

/// Holds the one-recording-at-a-time lock, or None (said) when recording is not possible here.
fn start() -> Option<std::sync::MutexGuard<'static, ()>> {
    let g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    match skip_reason() {
        Some(why) => {
            eprintln!("skipped: {why}");
            None
        }
        None => Some(g),
    }
}

fn program(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/programs").join(name)
}

/// A recording directory and the command's working directory (node writes logs there),
/// removed on drop, and what `record` reported (its standard error: Python frames read,
/// and the first reason one could not be).
struct Rec(PathBuf, PathBuf, String);

impl Drop for Rec {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
        let _ = std::fs::remove_dir_all(&self.1);
    }
}

/// `tracelens record -q -o DIR -e sched FLAGS -- CMD...`; the command's standard output.
fn record(tag: &str, flags: &[&str], cmd: &[&str]) -> (Rec, String) {
    record_env(tag, flags, cmd, &[])
}

/// [`record`] with more environment variables.
fn record_env(tag: &str, flags: &[&str], cmd: &[&str], env: &[(&str, String)]) -> (Rec, String) {
    let dir = std::env::temp_dir().join(format!("tracelens-profile-{tag}-{}", std::process::id()));
    let cwd = dir.with_extension("cwd");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&cwd);
    std::fs::create_dir_all(&cwd).expect("a working directory");
    let out = Command::new(exe()).args(["record", "-q", "-e", "sched", "-o"]).arg(&dir).args(flags).arg("--").args(cmd).envs(env.iter().map(|(k, v)| (k, v))).current_dir(&cwd).output().expect("run tracelens record");
    assert!(out.status.success(), "record {cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    (Rec(dir, cwd, String::from_utf8_lossy(&out.stderr).into_owned()), String::from_utf8_lossy(&out.stdout).into_owned())
}

fn profile(dir: &Path, flags: &[&str]) -> Value {
    let out = Command::new(exe()).arg("profile").arg(dir).arg("--json").args(flags).output().expect("run tracelens profile");
    assert!(out.status.success(), "profile: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("profile JSON")
}

/// The row of function `name` whose module ends with `module`.
fn row<'a>(p: &'a Value, name: &str, module: &str) -> Option<&'a Value> {
    p["functions"].as_array()?.iter().find(|f| f["name"] == name && f["module"].as_str().is_some_and(|m| m.ends_with(module)))
}

/// One frame of a symbolized stack: (function, kind, file, line).
type F = (String, String, String, u64);

/// The on-CPU stacks of a recording, innermost first, as `print --symbolize --format json`
/// gives them.
fn stacks(dir: &Path) -> Vec<Vec<F>> {
    let out = Command::new(exe()).arg("print").arg(dir).args(["--symbolize", "--format", "json", "--event", "tracelens_stack_sample"]).output().expect("run tracelens print");
    assert!(out.status.success(), "print: {}", String::from_utf8_lossy(&out.stderr));
    let mut v = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let e: Value = serde_json::from_str(line).expect("JSON line");
        if !line.contains("\"on_cpu\"") {
            continue;
        }
        let frames = e["frames"].as_array().map(|fs| {
            fs.iter()
                .map(|f| {
                    let s = |k: &str| f[k].as_str().unwrap_or("").to_string();
                    (s("function"), s("kind"), s("file"), f["line"].as_u64().unwrap_or(0))
                })
                .collect()
        });
        v.extend(frames);
    }
    v
}

/// Share of the stacks whose innermost frame of `kind` is `leaf`, that have `callers` as the
/// next frames of that kind, in order (and how many such stacks there are).
fn callers_in_order(stacks: &[Vec<F>], kind: &str, leaf: &str, callers: &[&str]) -> (usize, f64) {
    let mut with_leaf = 0;
    let mut ordered = 0;
    for s in stacks {
        let names: Vec<&str> = s.iter().filter(|f| f.1 == kind).map(|f| f.0.as_str()).collect();
        if names.first() != Some(&leaf) {
            continue;
        }
        with_leaf += 1;
        if names.len() > callers.len() && names[1..=callers.len()] == *callers {
            ordered += 1;
        }
    }
    (with_leaf, if with_leaf == 0 { 0.0 } else { ordered as f64 / with_leaf as f64 })
}

/// Checks that `leaf` (in a module ending with `module`) is a `kind` function on the stack in
/// more than `min_pct` % of the samples (`self_pct` when `own`, else `total_pct`), and that
/// more than 90% of the stacks where it is the innermost `kind` frame have `callers` next, in
/// order.
fn hot_with_callers(dir: &Path, what: &str, kind: &str, (leaf, module): (&str, &str), own: bool, min_pct: f64, callers: &[&str]) {
    let p = profile(dir, &[]);
    let r = row(&p, leaf, module).unwrap_or_else(|| panic!("{what}: {leaf} not in the profile: {p}"));
    assert_eq!(r["kind"], kind, "{what}");
    let pct = r[if own { "self_pct" } else { "total_pct" }].as_f64().unwrap();
    assert!(pct > min_pct, "{what}: {r}");
    let (n, ordered) = callers_in_order(&stacks(dir), kind, leaf, callers);
    assert!(n > 100 && ordered > 0.9, "{what}: {n} stacks in {leaf}, {:.0}% with {callers:?} as its callers", ordered * 100.0);
}

/// The newest pyenv CPython 3.`minor`, else the system's.
fn cpython(minor: u8) -> Option<PathBuf> {
    let root = PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".pyenv/versions");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&root)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&format!("3.{minor}.")))).collect())
        .unwrap_or_default();
    found.sort();
    found.pop().map(|p| p.join(format!("bin/python3.{minor}"))).filter(|p| p.exists()).or_else(|| Some(PathBuf::from(format!("/usr/bin/python3.{minor}"))).filter(|p| p.exists()))
}

/// [`start`], and CPython 3.`minor` (None, said, when it is not here).
fn start_with_cpython(minor: u8) -> Option<(std::sync::MutexGuard<'static, ()>, PathBuf)> {
    let serial = start()?;
    let Some(python) = cpython(minor) else {
        eprintln!("skipped: no CPython 3.{minor}");
        return None;
    };
    Some((serial, python))
}

#[test]
fn node_functions_named_from_the_perf_map() {
    let Some(_serial) = start() else { return };
    if Command::new("node").arg("--version").output().is_err() {
        eprintln!("skipped: no node");
        return;
    }
    let js = program("hot.js");
    // Interpreted callers get a code copy of their own (named in the perf map); inlining is
    // off so that the callers stay frames.
    let (rec, _) = record("node", &["--stacks"], &["node", "--perf-basic-prof", "--interpreted-frames-native-stack", "--no-turbo-inlining", js.to_str().unwrap(), "1000"]);
    assert!(std::fs::read_dir(rec.0.join("jit")).expect("DIR/jit").flatten().any(|e| e.file_name().to_string_lossy().starts_with("perf-")));
    hot_with_callers(&rec.0, "node", "jit", ("leaf", "hot.js"), true, 40.0, &["middle", "outer"]);
}

#[test]
fn python_functions_named_from_perf_trampolines() {
    let Some(_serial) = start() else { return };
    let py = program("hot.py");
    for (minor, mode) in [(12, "perf"), (13, "perf"), (13, "perf_jit")] {
        let Some(exe_path) = cpython(minor) else {
            eprintln!("skipped: no CPython 3.{minor}");
            continue;
        };
        let (rec, _) = record(&format!("py3{minor}-{mode}"), &["--stacks"], &[exe_path.to_str().unwrap(), "-X", mode, py.to_str().unwrap(), "1"]);
        hot_with_callers(&rec.0, &format!("3.{minor} -X {mode}"), "python", ("leaf", "hot.py"), false, 60.0, &["middle", "outer", "<module>"]);
    }
}

#[test]
fn python_frames_of_every_version() {
    let Some(_serial) = start() else { return };
    let py = program("hot.py");
    let src = std::fs::read_to_string(&py).unwrap();
    // The lines of each function's body, from the source.
    let lines_of = |def: &str| -> std::ops::RangeInclusive<u64> {
        let start = src.lines().position(|l| l.starts_with(def)).expect("def") as u64 + 1;
        let len = src.lines().skip(start as usize).take_while(|l| l.starts_with(' ') || l.is_empty()).count() as u64;
        start..=start + len
    };
    let mut tested = 0;
    for minor in 8..=13u8 {
        let Some(exe_path) = cpython(minor) else {
            eprintln!("skipped: no CPython 3.{minor}");
            continue;
        };
        // Four more library directories move the main thread's C library structure, which
        // 3.8-3.10's thread ids are read from, to 3,520 bytes before the end of its mapping
        // (as `cargo test --workspace`'s two build-script directories do): a recording
        // there once had no Python frame at all (see tracelens-pystack's live test).
        let mut dirs: Vec<String> = (0..4).map(|i| format!("/nonexistent/tracelens-profile-test/build/dir-{i}-0123456789abcdef/out")).collect();
        dirs.extend(std::env::var("LD_LIBRARY_PATH").ok().filter(|p| !p.is_empty()));
        let env = [("LD_LIBRARY_PATH", dirs.join(":"))];
        let (rec, _) = record_env(&format!("python3{minor}"), &["--python"], &[exe_path.to_str().unwrap(), py.to_str().unwrap(), "0.7"], &env);
        let what = format!("3.{minor} (record said: {})", rec.2.trim());
        hot_with_callers(&rec.0, &what, "python", ("leaf", "hot.py"), false, 60.0, &["middle", "outer", "<module>"]);
        // The evaluation loop is replaced by the Python frames it runs.
        let p = profile(&rec.0, &[]);
        let eval = row(&p, "_PyEval_EvalFrameDefault", "").map(|r| r["total_pct"].as_f64().unwrap()).unwrap_or(0.0);
        assert!(eval < 10.0, "{what}: the evaluation loop is still in {eval}% of the stacks");
        let st = stacks(&rec.0);
        // Files and lines: every frame of these functions is in hot.py, on a line of its body.
        for (func, def) in [("leaf", "def leaf"), ("middle", "def middle"), ("outer", "def outer")] {
            let range = lines_of(def);
            let frames: Vec<&F> = st.iter().flatten().filter(|f| f.1 == "python" && f.0 == func).collect();
            assert!(!frames.is_empty(), "{what}: no {func} frame");
            let bad: Vec<&&F> = frames.iter().filter(|f| !f.2.ends_with("hot.py") || !range.contains(&f.3)).collect();
            assert!(bad.len() * 100 <= frames.len(), "{what}: {func} frames outside {range:?} of hot.py: {:?}", &bad[..bad.len().min(5)]);
        }
        tested += 1;
    }
    if tested == 0 {
        eprintln!("skipped: no CPython 3.8-3.13");
    }
}

/// The Python-level share of each of `names`: samples with the function on the stack, as a
/// percentage of those with any of them (each is a leaf at the Python level).
fn shares(p: &Value, names: &[String]) -> Vec<f64> {
    let n: Vec<f64> = names.iter().map(|f| row(p, f, "shares.py").map(|r| r["samples"].as_f64().unwrap()).unwrap_or(0.0)).collect();
    let sum: f64 = n.iter().sum();
    n.iter().map(|x| 100.0 * x / sum.max(1.0)).collect()
}

#[test]
fn python_shares_match_the_programs_own_measure() {
    let Some((_serial, python)) = start_with_cpython(11) else { return };
    let (rec, stdout) = record("shares", &["--python"], &[python.to_str().unwrap(), program("shares.py").to_str().unwrap(), "4", "2000"]);
    let oracle: Value = serde_json::from_str(stdout.trim()).expect("the program's JSON");
    let names: Vec<String> = (0..10).map(|k| format!("f{k}")).collect();
    let got = shares(&profile(&rec.0, &[]), &names);
    let want: Vec<f64> = names.iter().map(|n| oracle["measured_pct"][n].as_f64().unwrap()).collect();
    let rms = (got.iter().zip(&want).map(|(g, w)| (g - w) * (g - w)).sum::<f64>() / 10.0).sqrt();
    // About 4,000 samples: sampling alone gives about 0.4 points RMS.
    eprintln!("RMS {rms:.2} points: profile {got:.2?}, program {want:.2?}");
    assert!(rms < 1.5, "RMS {rms:.2} points: profile {got:.1?}, program {want:.1?}");
}

#[test]
fn off_cpu_time_in_python_functions() {
    let Some((_serial, python)) = start_with_cpython(11) else { return };
    let (rec, stdout) = record("offcpu", &["--python"], &[python.to_str().unwrap(), program("blocking.py").to_str().unwrap()]);
    let oracle: Value = serde_json::from_str(stdout.trim()).expect("the program's JSON");
    let p = profile(&rec.0, &["--off-cpu"]);
    assert_eq!(p["mode"], "off_cpu");
    for (func, key) in [("sleepy", "sleepy_ns"), ("waiter", "waiter_ns")] {
        let r = row(&p, func, "blocking.py").unwrap_or_else(|| panic!("{func} not in the off-CPU profile: {p}"));
        let got = r["total_ns"].as_f64().unwrap();
        let want = oracle[key].as_f64().unwrap();
        // The program's clock includes the few microseconds around each blocking.
        assert!((got - want).abs() < 0.1 * want, "{func}: blocked {:.1} ms in the profile, {:.1} ms by the program's clock", got / 1e6, want / 1e6);
    }
    // Without the kernel trace there is nothing to weigh blockings with.
    let out = Command::new(exe()).arg("profile").arg(rec.0.join("stacks")).arg("--off-cpu").output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("sched_switch"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn names_from_the_program_are_escaped_in_text_reports() {
    let Some((_serial, python)) = start_with_cpython(11) else { return };
    // hot.py under a file name holding a terminal's "set the window title" sequence: the
    // Python frames name it, and it must not reach the terminal raw (issue 16, item 7).
    let dir = std::env::temp_dir().join(format!("tracelens-escape-script-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("hot\x1b]0\x07.py");
    std::fs::copy(program("hot.py"), &script).unwrap();
    let (rec, _) = record("escape", &["--python"], &[python.to_str().unwrap(), script.to_str().unwrap(), "0.5"]);
    for args in [&["profile"][..], &["print", "--symbolize"]] {
        let out = Command::new(exe()).args(args).arg(&rec.0).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let raw = out.stdout.iter().filter(|&&b| b == 0x1b || b == 0x07).count();
        assert_eq!(raw, 0, "{args:?} writes {raw} raw ESC/BEL bytes");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("hot\\e]0\\a.py"), "{args:?} names the file, escaped:\n{}", &text[..text.len().min(4000)]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
