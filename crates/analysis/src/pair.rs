//! Two analyses in one reading: `(A, B)` is an [`Analysis`] whose state is both states, fed
//! the same chunks and items, merged and finished side by side. A view that combines two
//! reports (`threads` with the critical path's wait reasons) reads the trace once; each
//! analysis keeps its own invariant, so the pair is the same for any cut.

use std::sync::Arc;

use tracelens_ctf::EventView;

use crate::engine::{Analysis, Background, Chunk, Context};
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
    use crate::filter::Filter;
    use crate::{Engine, Options, Stats, Threads};

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
