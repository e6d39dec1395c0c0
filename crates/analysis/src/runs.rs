//! Merging sorted runs: the k-way merges of the analyses' pipelined merges.
//!
//! A chunk leaves what it could not resolve as a *run* of records sorted by [`EventKey`]
//! (usually already sorted: records come in stream order, see [`sort_run`]); a merge takes the
//! records of all its runs in key order up to a frontier. [`drain_runs_into`] does it with a
//! binary heap over the runs' heads (the analyses whose runs live across many merges);
//! [`LoserTree`] is Knuth's tournament of losers (*The Art of Computer Programming* vol. 3,
//! 5.4.1), fewer comparisons per record where runs are merged once and records are many (io's
//! facts).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::order::EventKey;

/// Sorts `v` by `key` (stably) unless it is sorted already (as a chunk's records, read in
/// stream order, nearly always are): no scratch buffer then.
pub(crate) fn sort_run<T, K: Ord>(v: &mut [T], key: impl Fn(&T) -> K) {
    if !v.windows(2).all(|w| key(&w[0]) <= key(&w[1])) {
        v.sort_by_key(key);
    }
}

/// Takes the items of `runs` (each sorted by `key`) in key order — on equal keys, the earlier
/// run first — while their keys are `before` the limit, passing each to `f`;
/// hands the runs left empty to `spare`.
pub(crate) fn drain_runs_into<T, K: Ord + Copy>(
    runs: &mut Vec<VecDeque<T>>,
    key: impl Fn(&T) -> K,
    before: impl Fn(&K) -> bool,
    mut f: impl FnMut(T),
    mut spare: impl FnMut(VecDeque<T>),
) {
    use std::collections::binary_heap::PeekMut;
    let mut heads: BinaryHeap<Reverse<(K, usize)>> = runs.iter().enumerate().filter_map(|(i, r)| r.front().map(|t| Reverse((key(t), i)))).collect();
    while let Some(mut top) = heads.peek_mut() {
        let Reverse((k, i)) = *top;
        if !before(&k) {
            break;
        }
        let Some(t) = runs[i].pop_front() else {
            PeekMut::pop(top);
            continue;
        };
        match runs[i].front() {
            Some(next) => *top = Reverse((key(next), i)),
            None => {
                PeekMut::pop(top);
            }
        }
        f(t);
    }
    runs.retain_mut(|r| {
        if r.is_empty() {
            spare(std::mem::take(r));
            false
        } else {
            true
        }
    });
}

/// A merge key's first component as a number: keys in order have it in order (so that most
/// comparisons of a merge are of two numbers).
pub(crate) trait Coarse {
    /// The number (ties are broken by the full key).
    fn coarse(&self) -> i64;
}

impl Coarse for EventKey {
    #[inline]
    fn coarse(&self) -> i64 {
        self.ns
    }
}

#[cfg(test)]
impl Coarse for u8 {
    #[inline]
    fn coarse(&self) -> i64 {
        i64::from(*self)
    }
}

/// Which of `k` sorted sources holds the smallest head — on equal heads, the first source —
/// as a tournament of losers (Knuth's replacement selection): after the winner's head changes,
/// one pass from its leaf to the root, ⌈log2 k⌉ comparisons (mostly of [`Coarse`] numbers),
/// finds the next winner. `io` merges its runs of facts with it (fewer instructions than a
/// binary heap there; the analyses whose runs are longer-lived keep [`drain_runs_into`]).
#[derive(Debug)]
pub(crate) struct LoserTree<K> {
    /// The head of each source (`None`: spent), then spent padding up to a power of two.
    heads: Vec<Option<K>>,
    /// The [`Coarse`] number of each head (`i64::MAX` when spent).
    coarse: Vec<i64>,
    /// Internal nodes (1..): the loser of the match played there; 0: the winner.
    nodes: Vec<usize>,
}

impl<K: Ord + Copy + Coarse> LoserTree<K> {
    /// The tournament of sources with these heads.
    pub(crate) fn new(mut heads: Vec<Option<K>>) -> LoserTree<K> {
        let m = heads.len().next_power_of_two();
        heads.resize(m, None);
        let coarse = heads.iter().map(|h| h.as_ref().map_or(i64::MAX, Coarse::coarse)).collect();
        let mut t = LoserTree { heads, coarse, nodes: vec![0; m] };
        // Winners of the subtrees, leaves at m..2m.
        let mut win: Vec<usize> = vec![0; 2 * m];
        for (i, w) in win.iter_mut().skip(m).enumerate() {
            *w = i;
        }
        for n in (1..m).rev() {
            let (a, b) = (win[2 * n], win[2 * n + 1]);
            let (w, l) = if t.less(b, a) { (b, a) } else { (a, b) };
            win[n] = w;
            t.nodes[n] = l;
        }
        t.nodes[0] = if m > 1 { win[1] } else { 0 };
        t
    }

    /// Whether source `a`'s head comes before source `b`'s (spent sources last).
    #[inline(always)]
    fn less(&self, a: usize, b: usize) -> bool {
        let (x, y) = (self.coarse[a], self.coarse[b]);
        if x != y {
            return x < y;
        }
        match (&self.heads[a], &self.heads[b]) {
            (Some(x), Some(y)) => match x.cmp(y) {
                std::cmp::Ordering::Less => true,
                std::cmp::Ordering::Equal => a < b,
                std::cmp::Ordering::Greater => false,
            },
            (Some(_), None) => true,
            _ => false,
        }
    }

    /// The source with the smallest head, unless all are spent.
    #[inline]
    pub(crate) fn winner(&self) -> Option<usize> {
        let w = self.nodes[0];
        self.heads[w].as_ref().map(|_| w)
    }

    /// Gives the winner its next head (`None`: spent) and plays its matches again.
    #[inline(always)]
    pub(crate) fn replace(&mut self, head: Option<K>) {
        let m = self.nodes.len();
        let mut w = self.nodes[0];
        self.coarse[w] = head.as_ref().map_or(i64::MAX, Coarse::coarse);
        self.heads[w] = head;
        let mut n = (m + w) / 2;
        while n > 0 {
            let l = self.nodes[n];
            if self.less(l, w) {
                self.nodes[n] = w;
                w = l;
            }
            n /= 2;
        }
        self.nodes[0] = w;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `drain_runs_into` takes items in key order, the earlier run first on equal keys, stops at
    /// the limit and keeps what is left, for any number of runs.
    #[test]
    fn runs_drain_in_key_order() {
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            seed >> 33
        };
        for k in 0..12usize {
            // (key, run, rank in run): keys repeat across and within runs.
            let mut runs: Vec<VecDeque<(u64, usize, usize)>> = (0..k)
                .map(|r| {
                    let n = (next() % 9) as usize;
                    let mut keys: Vec<u64> = (0..n).map(|_| next() % 20).collect();
                    keys.sort_unstable();
                    keys.into_iter().enumerate().map(|(i, key)| (key, r, i)).collect()
                })
                .collect();
            let mut want: Vec<(u64, usize, usize)> = runs.iter().flatten().copied().filter(|t| t.0 < 15).collect();
            want.sort_unstable();
            let left: usize = runs.iter().flatten().filter(|t| t.0 >= 15).count();
            let mut got = Vec::new();
            let mut spent = 0;
            drain_runs_into(&mut runs, |t| t.0, |key| *key < 15, |t| got.push(t), |_| spent += 1);
            assert_eq!(got, want, "{k} runs");
            assert_eq!(runs.iter().map(VecDeque::len).sum::<usize>(), left);
            assert!(runs.iter().all(|r| !r.is_empty()));
            assert_eq!(spent + runs.len(), k);
        }
    }

    #[test]
    fn loser_tree_picks_smallest_then_first() {
        let mut t = LoserTree::new(vec![Some(5u8), None, Some(3), Some(3), Some(9)]);
        let mut order = Vec::new();
        while let Some(w) = t.winner() {
            order.push(w);
            t.replace(None);
        }
        assert_eq!(order, [2, 3, 0, 4]);
        assert_eq!(LoserTree::<u8>::new(Vec::new()).winner(), None);
        assert_eq!(LoserTree::new(vec![Some(1u8)]).winner(), Some(0));
        // Merging sorted runs: key order, the earlier run first on equal keys.
        let mut seed = 11u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as u8
        };
        for k in 0..12usize {
            let runs: Vec<Vec<u8>> = (0..k)
                .map(|_| {
                    let mut v: Vec<u8> = (0..next() % 9).map(|_| next() % 20).collect();
                    v.sort_unstable();
                    v
                })
                .collect();
            let mut at = vec![0usize; k];
            let mut t = LoserTree::new(runs.iter().map(|r| r.first().copied()).collect());
            let mut got = Vec::new();
            while let Some(w) = t.winner() {
                got.push((runs[w][at[w]], w));
                at[w] += 1;
                t.replace(runs[w].get(at[w]).copied());
            }
            let mut want: Vec<(u8, usize)> = runs.iter().enumerate().flat_map(|(r, v)| v.iter().map(move |&x| (x, r))).collect();
            want.sort_unstable();
            assert_eq!(got, want, "{k} runs");
        }
    }
}
