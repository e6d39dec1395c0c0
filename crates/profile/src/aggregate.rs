//! Stacks counted by identity, and the per-function shares they give: a function's self
//! weight is that of the stacks it ends (innermost frame), its total weight that of the
//! stacks it is in (once per stack, however many times it recurses).

use std::collections::HashMap;

use tracelens_symbolize::FrameKind;

/// A function: (name, module).
pub(crate) type FunctionKey = (String, String);

/// Interned functions and weighted stacks.
#[derive(Clone, Debug, Default)]
pub(crate) struct Aggregate {
    ids: HashMap<FunctionKey, u32>,
    pub functions: Vec<FunctionKey>,
    /// Per function id, what kind of code it is.
    pub kinds: Vec<FrameKind>,
    /// Process names (the root of folded stacks).
    pub comms: Vec<String>,
    comm_ids: HashMap<String, u32>,
    /// (process name id, stack: function ids, innermost first) -> (samples, weight).
    pub stacks: HashMap<(u32, Vec<u32>), (u64, u64)>,
}

/// One function's sums.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Sums {
    pub self_samples: u64,
    pub total_samples: u64,
    pub self_weight: u64,
    pub total_weight: u64,
}

impl Aggregate {
    /// The id of a function.
    pub fn intern(&mut self, name: &str, module: &str, kind: FrameKind) -> u32 {
        let key = (name.to_string(), module.to_string());
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        let id = self.functions.len() as u32;
        self.functions.push(key.clone());
        self.kinds.push(kind);
        self.ids.insert(key, id);
        id
    }

    /// Counts one sample of `stack` (innermost first) of process `comm` with `weight`.
    pub fn add(&mut self, comm: &str, stack: Vec<u32>, weight: u64) {
        let c = match self.comm_ids.get(comm) {
            Some(&c) => c,
            None => {
                let c = self.comms.len() as u32;
                self.comms.push(comm.to_string());
                self.comm_ids.insert(comm.to_string(), c);
                c
            }
        };
        let e = self.stacks.entry((c, stack)).or_default();
        e.0 += 1;
        e.1 += weight;
    }

    /// Per-function sums, indexed by function id.
    pub fn sums(&self) -> Vec<Sums> {
        let mut out = vec![Sums::default(); self.functions.len()];
        let mut seen: Vec<u32> = Vec::new();
        for ((_, stack), &(n, w)) in &self.stacks {
            if let Some(&leaf) = stack.first() {
                out[leaf as usize].self_samples += n;
                out[leaf as usize].self_weight += w;
            }
            seen.clear();
            for &f in stack {
                if !seen.contains(&f) {
                    seen.push(f);
                    out[f as usize].total_samples += n;
                    out[f as usize].total_weight += w;
                }
            }
        }
        out
    }

    /// Samples and weight of all stacks.
    pub fn totals(&self) -> (u64, u64) {
        self.stacks.values().fold((0, 0), |a, &(n, w)| (a.0 + n, a.1 + w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn self_and_total() {
        let mut a = Aggregate::default();
        let n = FrameKind::Native;
        let (main, f, g) = (a.intern("main", "m", n), a.intern("f", "m", n), a.intern("g", "m", n));
        a.add("p", vec![g, f, main], 1);
        a.add("p", vec![g, f, main], 1);
        a.add("p", vec![f, main], 1);
        // Recursion counts once in total.
        a.add("q", vec![f, f, f, main], 1);
        let s = a.sums();
        assert_eq!((s[g as usize].self_samples, s[g as usize].total_samples), (2, 2));
        assert_eq!((s[f as usize].self_samples, s[f as usize].total_samples), (2, 4));
        assert_eq!((s[main as usize].self_samples, s[main as usize].total_samples), (0, 4));
        assert_eq!(a.totals(), (4, 4));
        assert_eq!(a.intern("f", "m", n), f);
        assert_ne!(a.intern("f", "other", n), f);
        assert_eq!(a.comms, ["p", "q"]);
    }

    proptest! {
        #[test]
        fn shares_are_consistent(stacks in prop::collection::vec((prop::collection::vec(0u32..6, 1..8), 1u64..100), 1..50)) {
            let mut a = Aggregate::default();
            for k in 0..6 {
                a.intern(&format!("f{k}"), "m", FrameKind::Python);
            }
            for (s, w) in &stacks {
                a.add("p", s.clone(), *w);
            }
            let sums = a.sums();
            let (n, w) = a.totals();
            prop_assert_eq!(sums.iter().map(|s| s.self_samples).sum::<u64>(), n);
            prop_assert_eq!(sums.iter().map(|s| s.self_weight).sum::<u64>(), w);
            for s in &sums {
                prop_assert!(s.self_samples <= s.total_samples && s.total_samples <= n);
                prop_assert!(s.self_weight <= s.total_weight && s.total_weight <= w);
            }
        }
    }
}
