//! Python frames recorded by `tracelens record --python` (`tracelens_python_code` and
//! `tracelens_python_stack` events, just before the sample they belong to), put in place of
//! the native frames of CPython's evaluation loop of the same sample.
//!
//! Each native `_PyEval_EvalFrameDefault` frame runs a group of Python frames: one frame up
//! to 3.10, from 3.11 the frames from one entry frame inwards (Python-to-Python calls do not
//! recurse in C). The recorder marks each group's outermost frame; groups and evaluation
//! frames are matched from the outermost end when the native stack was unwound to its end
//! (the Python frames were read a little after the sample: if they moved, they moved at the
//! inner end), else from the innermost end (the native stack copy ended first).

use crate::{Frame, FrameKind, Symbol};

/// CPython's evaluation loop: the native frame that runs Python frames.
pub(crate) const EVAL_LOOP: &str = "_PyEval_EvalFrameDefault";

/// The frames of one recorded Python stack, innermost first, before their codes are named.
#[derive(Clone, Debug, Default)]
pub(crate) struct PendingStack {
    /// The time of the sample it belongs to.
    pub ns: Option<i64>,
    pub pid: i64,
    /// (code id, line (0: none), outermost of its group).
    pub frames: Vec<(u64, u32, bool)>,
}

/// A Python frame for code `name` in `file`.
pub(crate) fn frame(name: &str, file: &str, line: u32) -> Frame {
    Frame {
        address: 0,
        module: Some(file.to_string()),
        module_offset: 0,
        symbol: Symbol { function: Some(name.to_string()), offset: None, file: Some(file.to_string()), line: (line != 0).then_some(line) },
        kind: FrameKind::Python,
    }
}

/// `native` (innermost first; `complete` when unwound to the outermost frame) with the
/// Python frames `python` (innermost first, `entries[i]` when frame i is the outermost of its
/// group) in place of the evaluation-loop frames (see the module documentation).
pub(crate) fn interleave(native: Vec<Frame>, complete: bool, python: Vec<Frame>, entries: &[bool]) -> Vec<Frame> {
    let mut groups: Vec<Vec<Frame>> = vec![Vec::new()];
    for (f, &e) in python.into_iter().zip(entries.iter().chain(std::iter::repeat(&false))) {
        groups.last_mut().expect("one group").push(f);
        if e {
            groups.push(Vec::new());
        }
    }
    if groups.last().is_some_and(|g| g.is_empty()) {
        groups.pop();
    }
    let evals: Vec<usize> = native.iter().enumerate().filter(|(_, f)| f.kind == FrameKind::Native && f.symbol.function.as_deref() == Some(EVAL_LOOP)).map(|(i, _)| i).collect();
    // For each native index, the Python frames that replace it.
    let mut at: Vec<Option<Vec<Frame>>> = vec![None; native.len()];
    let mut tail: Vec<Frame> = Vec::new();
    if evals.is_empty() {
        tail = groups.into_iter().flatten().collect();
    } else if complete {
        // Outermost group to outermost evaluation frame; extra inner groups go with the
        // innermost evaluation frame that has a group.
        let mut gs = groups.into_iter().rev();
        let mut paired = evals.iter().rev().peekable();
        let mut last = None;
        while let Some(&i) = paired.next() {
            let Some(g) = gs.next() else { break };
            at[i] = Some(g);
            last = Some(i);
            if paired.peek().is_none() {
                break;
            }
        }
        if let Some(i) = last {
            let mut inner: Vec<Frame> = gs.rev().flatten().collect();
            let slot = at[i].get_or_insert_with(Vec::new);
            inner.append(slot);
            *slot = inner;
        }
    } else {
        let mut gs = groups.into_iter();
        for &i in &evals {
            match gs.next() {
                Some(g) => at[i] = Some(g),
                None => break,
            }
        }
        tail = gs.flatten().collect();
    }
    let mut out = Vec::with_capacity(native.len() + tail.len());
    for (f, py) in native.into_iter().zip(at) {
        match py {
            Some(g) => out.extend(g),
            None => out.push(f),
        }
    }
    out.extend(tail);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn native(name: &str) -> Frame {
        Frame { address: 1, module: Some("/lib/libpython3.11.so".into()), module_offset: 0, symbol: Symbol { function: Some(name.into()), ..Symbol::default() }, kind: FrameKind::Native }
    }

    fn names(v: &[Frame]) -> Vec<&str> {
        v.iter().map(|f| f.symbol.function.as_deref().unwrap_or("?")).collect()
    }

    #[test]
    fn groups_replace_evaluation_frames() {
        // main -> [eval: <module>, f] -> map (C) -> [eval: lambda, g] -> sleep (C)
        let n = vec![native("sleep"), native(EVAL_LOOP), native("map_next"), native(EVAL_LOOP), native("main")];
        let py = vec![frame("g", "a.py", 3), frame("<lambda>", "a.py", 2), frame("f", "a.py", 5), frame("<module>", "a.py", 9)];
        let entries = [false, true, false, true];
        let out = interleave(n.clone(), true, py.clone(), &entries);
        assert_eq!(names(&out), ["sleep", "g", "<lambda>", "map_next", "f", "<module>", "main"]);
        assert_eq!(out[1].kind, FrameKind::Python);
        // The same from the inner end when the native stack was cut.
        let cut = n[..2].to_vec();
        assert_eq!(names(&interleave(cut, false, py.clone(), &entries)), ["sleep", "g", "<lambda>", "f", "<module>"]);
        // More groups than evaluation frames in a complete stack (the Python stack moved
        // deeper before it was read): the extra inner groups go with the innermost one.
        let one = vec![native("sleep"), native(EVAL_LOOP), native("main")];
        assert_eq!(names(&interleave(one, true, py.clone(), &entries)), ["sleep", "g", "<lambda>", "f", "<module>", "main"]);
        // No evaluation frame known: the Python frames go outermost.
        assert_eq!(names(&interleave(vec![native("x")], true, py, &entries)), ["x", "g", "<lambda>", "f", "<module>"]);
        // No Python frames: unchanged.
        assert_eq!(names(&interleave(n, true, Vec::new(), &[])), ["sleep", EVAL_LOOP, "map_next", EVAL_LOOP, "main"]);
    }
}
