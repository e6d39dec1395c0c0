//! Two analyses in one reading: `(A, B)` is an [`Analysis`] whose state is both states, fed
//! the same chunks and items, merged and finished side by side. A view that combines two
//! reports (`threads` with the critical path's wait reasons) reads the trace once; each
//! analysis keeps its own invariant, so the pair is the same for any cut.

use std::sync::Arc;

use tracelens_ctf::EventView;

use crate::engine::{Analysis, Background, Chunk, Context};
use crate::kernel::{KEvent, KernelMap, Kinds};
use crate::DiscardedItems;

impl<A: Analysis, B: Analysis> Analysis for (A, B) {
    type State = (A::State, B::State);
    type Output = (A::Output, B::Output);

    fn new_state(&self, chunk: &Chunk) -> Self::State {
        (self.0.new_state(chunk), self.1.new_state(chunk))
    }

    fn on_event(&self, state: &mut Self::State, event: &EventView<'_, '_>, cx: &Context<'_, '_>) {
        self.0.on_event(&mut state.0, event, cx);
        self.1.on_event(&mut state.1, event, cx);
    }

    fn on_discarded(&self, state: &mut Self::State, items: &DiscardedItems, cx: &Context<'_, '_>) {
        self.0.on_discarded(&mut state.0, items, cx);
        self.1.on_discarded(&mut state.1, items, cx);
    }

    fn end_chunk(&self, state: &mut Self::State, cx: &Context<'_, '_>) {
        self.0.end_chunk(&mut state.0, cx);
        self.1.end_chunk(&mut state.1, cx);
    }

    fn merge(&self, earlier: Self::State, later: Self::State) -> Self::State {
        (self.0.merge(earlier.0, later.0), self.1.merge(earlier.1, later.1))
    }

    fn end_merges(&self, state: &mut Self::State) {
        self.0.end_merges(&mut state.0);
        self.1.end_merges(&mut state.1);
    }

    fn background(&self, state: &Self::State) -> Option<Arc<dyn Background>> {
        match (self.0.background(&state.0), self.1.background(&state.1)) {
            (Some(a), Some(b)) => Some(Arc::new(Both(a, b))),
            (a, b) => a.or(b),
        }
    }

    fn finish(&self, state: Self::State) -> Self::Output {
        (self.0.finish(state.0), self.1.finish(state.1))
    }
}

/// A kernel analysis that can be given its events decoded by someone else ([`DecodedOnce`]).
pub trait OnKernel: Analysis {
    /// The kinds it wants decoded in full ([`KernelMap::decode_only`]).
    fn kinds(&self) -> Kinds;

    /// The map it decodes the trace set's events with.
    fn kernel_map(&self) -> &KernelMap;

    /// [`Analysis::on_event`] for an event decoded as `decode_only` with
    /// [`kinds`](Self::kinds) gives it.
    fn on_kernel(&self, state: &mut Self::State, event: &KEvent<'_>, cx: &Context<'_, '_>);
}

/// Two kernel analyses in one reading, as the pair `(A, B)` is, with each event decoded once
/// for both (with the kinds either wants, narrowed for each to its own): `threads` and the
/// execution graph both decoded every scheduler event, 10% of `threads`' instructions.
pub struct DecodedOnce<A, B> {
    /// The analyses.
    pub pair: (A, B),
    kinds: Kinds,
    /// Whether each analysis wants fewer kinds than both (its events are then narrowed).
    narrow: (bool, bool),
}

impl<A: OnKernel, B: OnKernel> DecodedOnce<A, B> {
    /// `a` and `b` (reading the same trace set), the events decoded with `a`'s map.
    pub fn new(a: A, b: B) -> Self {
        let kinds = a.kinds().union(b.kinds());
        let narrow = (a.kinds() != kinds, b.kinds() != kinds);
        DecodedOnce { pair: (a, b), kinds, narrow }
    }
}

impl<A: OnKernel, B: OnKernel> Analysis for DecodedOnce<A, B> {
    type State = (A::State, B::State);
    type Output = (A::Output, B::Output);

    fn new_state(&self, chunk: &Chunk) -> Self::State {
        self.pair.new_state(chunk)
    }

    fn on_event(&self, state: &mut Self::State, event: &EventView<'_, '_>, cx: &Context<'_, '_>) {
        let Some(k) = self.pair.0.kernel_map().decode_only(event, cx, self.kinds) else { return };
        let narrowed = |narrow: bool, kinds: Kinds| if narrow { k.narrowed(kinds) } else { k };
        self.pair.0.on_kernel(&mut state.0, &narrowed(self.narrow.0, self.pair.0.kinds()), cx);
        self.pair.1.on_kernel(&mut state.1, &narrowed(self.narrow.1, self.pair.1.kinds()), cx);
    }

    fn on_discarded(&self, state: &mut Self::State, items: &DiscardedItems, cx: &Context<'_, '_>) {
        self.pair.on_discarded(state, items, cx);
    }

    fn end_chunk(&self, state: &mut Self::State, cx: &Context<'_, '_>) {
        self.pair.end_chunk(state, cx);
    }

    fn merge(&self, earlier: Self::State, later: Self::State) -> Self::State {
        self.pair.merge(earlier, later)
    }

    fn end_merges(&self, state: &mut Self::State) {
        self.pair.end_merges(state);
    }

    fn background(&self, state: &Self::State) -> Option<Arc<dyn Background>> {
        self.pair.background(state)
    }

    fn finish(&self, state: Self::State) -> Self::Output {
        self.pair.finish(state)
    }
}

/// The background work of both analyses of a pair.
struct Both(Arc<dyn Background>, Arc<dyn Background>);

impl Background for Both {
    fn assist(&self) -> bool {
        self.0.assist() || self.1.assist()
    }

    fn busy(&self) -> bool {
        self.0.busy() || self.1.busy()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::Filter;
    use crate::kernel::{Kind, What};
    use crate::{Engine, Options, Stats, Threads};

    /// Decodes each event in full and with `want`, and counts those where narrowing the full
    /// decoding to `want` does not give the other.
    struct Narrowing {
        map: KernelMap,
        want: Kinds,
    }

    impl Analysis for Narrowing {
        /// (events, of them decoded in full, differences)
        type State = (u64, u64, u64);
        type Output = (u64, u64, u64);

        fn on_event(&self, st: &mut Self::State, ev: &EventView<'_, '_>, cx: &Context<'_, '_>) {
            let (full, narrow) = (self.map.decode(ev, cx), self.map.decode_only(ev, cx, self.want));
            st.0 += 1;
            st.1 += u64::from(narrow.is_some_and(|k| k.kind != Kind::Other));
            st.2 += u64::from(full.map(|k| k.narrowed(self.want).kind) != narrow.map(|k| k.kind));
        }

        fn merge(&self, a: Self::State, b: Self::State) -> Self::State {
            (a.0 + b.0, a.1 + b.1, a.2 + b.2)
        }

        fn finish(&self, st: Self::State) -> Self::Output {
            st
        }
    }

    #[test]
    fn a_narrowed_event_is_the_event_decoded_narrow() {
        let (dir, set) = crate::testing::synth("narrow", 3);
        let sets = [Kinds::ALL, Kinds::NO_SYSCALLS, crate::thread_info::THREAD_KINDS, Kinds::of(&[What::SysExit, What::IrqEntry]), Kinds::of(&[])];
        for want in sets {
            let (events, decoded, differences) = Engine::new(&set, &Options { threads: 2, chunk_size: 1 }).run(&Narrowing { map: KernelMap::new(&set), want }).expect("run");
            assert!(events > 10_000, "{events}");
            assert_eq!(differences, 0, "{want:?}: {decoded} of {events} events decoded");
        }
        drop(set);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_pair_gives_what_each_gives_alone() {
        let (dir, set) = crate::testing::synth("pair", 5);
        let (threads, stats) = (Threads::new(&set, Filter::default()), Stats::new(&set));
        for (j, chunk_size) in [(1, u64::MAX), (3, 1)] {
            let engine = Engine::new(&set, &Options { threads: j, chunk_size });
            let (a, b) = engine.run(&(threads.clone(), Stats::new(&set))).expect("pair");
            assert!(a == engine.run(&threads).expect("threads"), "-j {j} --chunk-size {chunk_size}");
            assert!(b == engine.run(&stats).expect("stats"), "-j {j} --chunk-size {chunk_size}");
        }
        drop(set);
        let _ = std::fs::remove_dir_all(dir);
    }
}
