//! Per-entity shards of a replay, run in parallel with the reading of chunks.
//!
//! An analysis whose answer depends on the order of events across streams replays records in
//! the one time order (`replay.rs`, the tracker's pairing, `sched`'s wake-ups, `io`'s
//! descriptor tables). That order matters only among the records of one entity — a thread,
//! or a process and its threads: the records of two threads never meet. So instead of one
//! replay in the ordered chain of merges (serial: the chain runs one merge at a time), each
//! entity belongs to one of [`SHARDS`] shards, and each shard replays its own records, in key
//! order, on whichever worker is free (*Parallel trace analysis*, 2019, section 4.2: the merge
//! resolves what chunks could not know; here it only hands the records on).
//!
//! The pieces:
//!
//! * [`Parts`]: a chunk's records, split by shard at the end of the chunk (in parallel, one
//!   counting pass), in one buffer shared by the shards that read it;
//! * [`Runs`]: what a shard has been handed and not replayed yet, as sorted runs (slices of
//!   [`Parts`]), taken in key order up to a limit;
//! * [`Board`]: the shards' states and queues of work. A merge of the chain *posts* work to a
//!   shard; the engine's workers run it ([`crate::Background`]) before reading more chunks, so
//!   what is kept stays about a chunk's worth per thread, and once every chunk is read, until
//!   none is left. Work of one shard runs in the order it was posted, one item at a time;
//!   shards run in parallel. A shard's work may wait for a *parcel* another shard sends it
//!   (`io`: a process forked in another shard gets its parent's descriptor table as it was at
//!   the fork); parcels are sent at a key and received at the same key, so the shard that
//!   waits always waits for one that is behind it in time, and the replay cannot deadlock.
//!
//! The replay of each shard sees its records in the serial order, and what shards produce is
//! combined by exact, order-free merges (sums, minima by key, top lists by a total order), so
//! the output is the same as a serial replay's for any number of threads and any cut.

use std::collections::VecDeque;
use std::ops::Range;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::engine::{Background, Pool};
use crate::id_map::IdMap;
use crate::order::EventKey;
use crate::runs::LoserTree;

/// Number of shards: enough for a few per worker on a 16-core machine, few enough that a
/// chunk's split and a merge's posts stay cheap.
pub(crate) const SHARDS: usize = 64;

/// The shard of entity `id` (a thread or process id): a multiplicative hash, so that ids that
/// follow each other spread over the shards.
#[inline]
pub(crate) fn shard_of(id: i64) -> usize {
    ((id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A chunk's records, grouped by shard (each group in the order the records came).
#[derive(Debug)]
pub(crate) struct Parts<T> {
    items: Vec<T>,
    /// Group `s` is `items[bounds[s]..bounds[s + 1]]`.
    bounds: Vec<u32>,
    /// Where the buffer goes when the last shard is done with it.
    pool: Option<Arc<Pool<T>>>,
}

impl<T> Drop for Parts<T> {
    fn drop(&mut self) {
        if let Some(p) = &self.pool {
            p.give(std::mem::take(&mut self.items));
        }
    }
}

impl<T: Copy> Parts<T> {
    /// Groups `items` by `shard` (stable: a counting sort), in a buffer from `pool`; `items`
    /// goes back to `pool`.
    pub(crate) fn split(items: Vec<T>, shard: impl Fn(&T) -> usize, pool: &Arc<Pool<T>>) -> Arc<Parts<T>> {
        let ids: Vec<u8> = items.iter().map(|t| shard(t) as u8).collect();
        let parts = Parts::gather(&items, &ids, pool);
        pool.give(items);
        parts
    }

    /// Groups `items` by shard, `ids[i]` being the shard of `items[i]` (stable: a counting
    /// sort), in a buffer from `pool` (back there when the last shard is done with it).
    pub(crate) fn gather(items: &[T], ids: &[u8], pool: &Arc<Pool<T>>) -> Arc<Parts<T>> {
        let mut bounds = vec![0u32; SHARDS + 1];
        for &s in ids {
            bounds[s as usize + 1] += 1;
        }
        for s in 0..SHARDS {
            bounds[s + 1] += bounds[s];
        }
        let mut at: Vec<u32> = bounds[..SHARDS].to_vec();
        let mut out = pool.take(items.len());
        if let Some(&first) = items.first() {
            out.resize(items.len(), first);
        }
        for (t, &s) in items.iter().zip(ids) {
            out[at[s as usize] as usize] = *t;
            at[s as usize] += 1;
        }
        Arc::new(Parts { items: out, bounds, pool: Some(pool.clone()) })
    }

    /// The records in `range`.
    pub(crate) fn slice(&self, range: Range<usize>) -> &[T] {
        self.items.get(range).unwrap_or_default()
    }

    /// The non-empty groups: shard and range.
    pub(crate) fn groups(&self) -> impl Iterator<Item = (usize, Range<usize>)> + '_ {
        self.bounds.windows(2).enumerate().filter(|(_, w)| w[0] < w[1]).map(|(s, w)| (s, w[0] as usize..w[1] as usize))
    }
}

/// A sorted run of records: a slice of a [`Parts`] (or a small vector of its own), with a
/// cursor.
#[derive(Debug)]
pub(crate) struct Run<T> {
    parts: Arc<Parts<T>>,
    range: Range<usize>,
}

impl<T> Run<T> {
    /// Group `range` of `parts`.
    pub(crate) fn new(parts: Arc<Parts<T>>, range: Range<usize>) -> Run<T> {
        Run { parts, range }
    }

    /// A run of its own.
    pub(crate) fn owned(items: Vec<T>) -> Run<T> {
        let n = items.len();
        Run { parts: Arc::new(Parts { items, bounds: Vec::new(), pool: None }), range: 0..n }
    }

    /// The records not taken yet.
    pub(crate) fn items(&self) -> &[T] {
        self.parts.items.get(self.range.clone()).unwrap_or_default()
    }

    #[inline]
    fn head(&self) -> Option<&T> {
        self.parts.items.get(self.range.start).filter(|_| self.range.start < self.range.end)
    }
}

/// What a shard has not replayed yet, as runs sorted by key.
#[derive(Debug)]
pub(crate) struct Runs<T> {
    runs: Vec<Run<T>>,
}

impl<T> Default for Runs<T> {
    fn default() -> Self {
        Runs { runs: Vec::new() }
    }
}

impl<T> Runs<T> {
    /// Adds a run (sorted by the key `drain` is given).
    pub(crate) fn add(&mut self, run: Run<T>) {
        if run.head().is_some() {
            self.runs.push(run);
        }
    }

    /// Takes the records in key order — on equal keys, the run added first first — while
    /// `before` their key, passing each to `f`. Runs used up are dropped (their buffer goes
    /// back to its pool with the last).
    pub(crate) fn drain(&mut self, key: impl Fn(&T) -> EventKey, before: impl Fn(&EventKey) -> bool, mut f: impl FnMut(&T)) {
        match self.runs.len() {
            0 => {}
            1 => {
                let run = &mut self.runs[0];
                while let Some(t) = run.head() {
                    if !before(&key(t)) {
                        break;
                    }
                    f(t);
                    run.range.start += 1;
                }
            }
            _ => {
                let head = |r: &Run<T>| r.head().map(&key).filter(|k| before(k));
                let mut tree = LoserTree::new(self.runs.iter().map(head).collect());
                while let Some(i) = tree.winner() {
                    let run = &mut self.runs[i];
                    if let Some(t) = run.head() {
                        f(t);
                    }
                    run.range.start += 1;
                    tree.replace(head(run));
                }
            }
        }
        self.runs.retain(|r| r.head().is_some());
    }

    /// Whether nothing is left.
    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }
}

/// Records a run of chunks has not handed to the shards yet: chunks' records split by shard,
/// and loose ones (sorted by key) that a merge completed.
#[derive(Debug)]
pub(crate) struct Outbox<T> {
    parts: Vec<Arc<Parts<T>>>,
    loose: Vec<T>,
}

impl<T> Default for Outbox<T> {
    fn default() -> Self {
        Outbox { parts: Vec::new(), loose: Vec::new() }
    }
}

impl<T> Clone for Outbox<T> {
    fn clone(&self) -> Self {
        // Only the empty outboxes of fresh states are cloned.
        Outbox { parts: self.parts.clone(), loose: Vec::new() }
    }
}

impl<T> Outbox<T> {
    /// Adds one loose record.
    pub(crate) fn add(&mut self, t: T) {
        self.loose.push(t);
    }

    /// Takes `later`'s records after these.
    pub(crate) fn append(&mut self, later: &mut Outbox<T>) {
        self.parts.append(&mut later.parts);
        self.loose.append(&mut later.loose);
    }
}

impl<T: Copy> Outbox<T> {
    /// Adds a chunk's records, split by shard (`items` sorted by key; the buffers come from and
    /// go back to `pool`).
    pub(crate) fn add_chunk(&mut self, items: Vec<T>, shard: impl Fn(&T) -> usize, pool: &Arc<Pool<T>>) {
        if items.is_empty() {
            pool.give(items);
        } else {
            self.parts.push(Parts::split(items, shard, pool));
        }
    }

    /// Everything, as runs by shard (the loose records sorted by `key`).
    pub(crate) fn take(&mut self, shard: impl Fn(&T) -> usize, key: impl Fn(&T) -> EventKey) -> Vec<Vec<Run<T>>> {
        let mut runs: Vec<Vec<Run<T>>> = (0..SHARDS).map(|_| Vec::new()).collect();
        for p in self.parts.drain(..) {
            for (s, range) in p.groups() {
                runs[s].push(Run::new(p.clone(), range));
            }
        }
        if !self.loose.is_empty() {
            self.loose.sort_by_key(&key);
            let mut loose: Vec<Vec<T>> = (0..SHARDS).map(|_| Vec::new()).collect();
            for t in self.loose.drain(..) {
                loose[shard(&t)].push(t);
            }
            for (s, v) in loose.into_iter().enumerate() {
                if !v.is_empty() {
                    runs[s].push(Run::owned(v));
                }
            }
        }
        runs
    }
}

/// What a merge hands to the shards: runs of records by shard, and how far the shards may
/// replay them ([`Limit`]); `None` when it has nothing to hand out.
pub(crate) type HandOut<T> = Option<(Vec<Vec<Run<T>>>, Limit)>;

/// Up to where a shard may replay: records whose time is before `ns` and whose key is before
/// `key` (`None`: no bound of that kind).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Limit {
    /// The frontier: the start of the next chunk in time order.
    pub(crate) ns: Option<i64>,
    /// The first record still waiting for something only a later merge knows.
    pub(crate) key: Option<EventKey>,
}

impl Limit {
    /// No bound: the end of the trace.
    pub(crate) const END: Limit = Limit { ns: None, key: None };

    /// Whether a record at `k` is within the limit.
    #[inline]
    pub(crate) fn admits(&self, k: &EventKey) -> bool {
        k.is_before(self.ns) && self.key.is_none_or(|w| *k < w)
    }
}

/// The state of one shard of a replay and the work it takes.
pub(crate) trait Shard: Send + Default + 'static {
    /// A unit of work.
    type Work: Send + 'static;
    /// What a shard may send another.
    type Parcel: Send + 'static;

    /// Runs `work`; `Err(parcel)` when it needs that parcel first (the work is kept and run
    /// again once it is there).
    fn apply(&mut self, work: &mut Self::Work, mail: &Mail<'_, Self::Parcel>) -> Result<(), u64>;
}

/// What a shard's work can do with parcels (sched, syscalls and threads shard by entities that
/// never hand state to one another; io's model sends descriptor tables, copied by `fork` into
/// the child's shard, and the states of threads whose group moves to another shard).
pub(crate) struct Mail<'b, P> {
    post: &'b dyn Fn(u64, P),
    take: &'b dyn Fn(u64) -> Option<P>,
}

impl<P> Mail<'_, P> {
    /// Sends parcel `id`.
    pub(crate) fn send(&self, id: u64, parcel: P) {
        (self.post)(id, parcel);
    }

    /// Takes parcel `id`, if it was sent.
    pub(crate) fn take(&self, id: u64) -> Option<P> {
        (self.take)(id)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    /// Nothing queued, nobody on it.
    Idle,
    /// In the ready list.
    Scheduled,
    /// A worker is on it.
    Running,
    /// Its next work waits for a parcel.
    Waiting,
}

struct Queue<W> {
    work: VecDeque<W>,
    status: Status,
}

struct Slot<S: Shard> {
    queue: Mutex<Queue<S::Work>>,
    state: Mutex<S>,
}

struct Mailbox<P> {
    parcels: IdMap<u64, P>,
    /// The shard waiting for each parcel not sent yet.
    waiting: IdMap<u64, usize>,
}

/// The shards of one run's replay: their states, their queues of work, the parcels between
/// them. Shared (`Arc`) by the states of the chain that post to it and the workers that run
/// it.
pub(crate) struct Board<S: Shard> {
    slots: Vec<Slot<S>>,
    /// Shards handed records so far (a bit each).
    used: AtomicU64,
    ready: Mutex<VecDeque<usize>>,
    /// Work posted and not done yet.
    pending: AtomicUsize,
    mail: Mutex<Mailbox<S::Parcel>>,
    /// A work panicked: it will never be done (see [`Board::panicked`]).
    panicked: AtomicBool,
}

impl<S: Shard> std::fmt::Debug for Board<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Board({} shards, {} pending)", self.slots.len(), self.pending.load(Ordering::Relaxed))
    }
}

impl<S: Shard> Default for Board<S> {
    fn default() -> Self {
        Board::new()
    }
}

impl<S: Shard> Board<S> {
    /// [`SHARDS`] empty shards.
    pub(crate) fn new() -> Board<S> {
        Board {
            slots: (0..SHARDS).map(|_| Slot { queue: Mutex::new(Queue { work: VecDeque::new(), status: Status::Idle }), state: Mutex::new(S::default()) }).collect(),
            used: AtomicU64::new(0),
            ready: Mutex::new(VecDeque::new()),
            pending: AtomicUsize::new(0),
            mail: Mutex::new(Mailbox { parcels: IdMap::default(), waiting: IdMap::default() }),
            panicked: AtomicBool::new(false),
        }
    }

    /// Whether a work panicked (on whichever thread ran it): whoever waits for the board's
    /// work to be done must stop waiting, as that work will never be.
    pub(crate) fn panicked(&self) -> bool {
        self.panicked.load(Ordering::Relaxed)
    }

    /// Queues `work` for shard `s` (after the work posted to it before).
    pub(crate) fn post(&self, s: usize, work: S::Work) {
        self.pending.fetch_add(1, Ordering::AcqRel);
        let mut q = lock(&self.slots[s].queue);
        q.work.push_back(work);
        if q.status == Status::Idle {
            q.status = Status::Scheduled;
            drop(q);
            lock(&self.ready).push_back(s);
        }
    }

    /// Hands each shard `s` its new runs (`runs[s]`) as the work `make(s, runs)`, and every
    /// shard handed runs before the work of going further (`make` of no runs).
    pub(crate) fn post_runs<T>(&self, runs: Vec<Vec<Run<T>>>, mut make: impl FnMut(usize, Vec<Run<T>>) -> S::Work) {
        for (s, runs) in runs.into_iter().enumerate() {
            if !runs.is_empty() {
                self.used.fetch_or(1 << s, Ordering::Relaxed);
            }
            if self.used.load(Ordering::Relaxed) & (1 << s) != 0 {
                self.post(s, make(s, runs));
            }
        }
    }

    fn send(&self, id: u64, parcel: S::Parcel) {
        let mut mail = lock(&self.mail);
        mail.parcels.insert(id, parcel);
        if let Some(s) = mail.waiting.remove(&id) {
            let mut q = lock(&self.slots[s].queue);
            if q.status == Status::Waiting {
                q.status = Status::Scheduled;
                drop(q);
                lock(&self.ready).push_back(s);
            }
        }
    }

    fn take(&self, id: u64) -> Option<S::Parcel> {
        lock(&self.mail).parcels.remove(&id)
    }

    /// Runs shard `s`'s queue until it is empty or waits for a parcel.
    fn run(&self, s: usize) {
        let slot = &self.slots[s];
        let mut state = lock(&slot.state);
        let post = |id: u64, p: S::Parcel| self.send(id, p);
        let take = |id: u64| self.take(id);
        let mail = Mail { post: &post, take: &take };
        loop {
            let mut work = {
                let mut q = lock(&slot.queue);
                match q.work.pop_front() {
                    Some(w) => {
                        q.status = Status::Running;
                        w
                    }
                    None => {
                        q.status = Status::Idle;
                        return;
                    }
                }
            };
            let applied = catch_unwind(AssertUnwindSafe(|| state.apply(&mut work, &mail))).unwrap_or_else(|panic| {
                self.panicked.store(true, Ordering::Relaxed);
                resume_unwind(panic)
            });
            match applied {
                Ok(()) => {
                    self.pending.fetch_sub(1, Ordering::AcqRel);
                }
                Err(id) => {
                    // Parks the work unless the parcel came in the meantime (the mailbox's
                    // lock before the queue's, as `send` takes them).
                    let mut m = lock(&self.mail);
                    let mut q = lock(&slot.queue);
                    q.work.push_front(work);
                    if !m.parcels.contains_key(&id) {
                        q.status = Status::Waiting;
                        m.waiting.insert(id, s);
                        return;
                    }
                }
            }
        }
    }

    /// Runs every queued work on the calling thread (what is left when no worker ran it: the
    /// end of a run outside the engine).
    pub(crate) fn drain(&self) {
        while self.assist() {}
        debug_assert_eq!(self.pending.load(Ordering::Acquire), 0, "a shard waits for a parcel never sent");
    }

    /// The shards' states, once every work is done.
    pub(crate) fn into_states(self) -> Vec<S> {
        self.slots.into_iter().map(|s| s.state.into_inner().unwrap_or_else(PoisonError::into_inner)).collect()
    }

    /// [`into_states`](Self::into_states) of a shared board, after [`drain`](Self::drain):
    /// takes the states out when other handles remain (the engine's).
    pub(crate) fn take_states(self: Arc<Self>) -> Vec<S> {
        self.drain();
        match Arc::try_unwrap(self) {
            Ok(b) => b.into_states(),
            Err(shared) => shared.states(),
        }
    }

    /// The shards' states, taken out after [`drain`](Self::drain) (fresh ones stay).
    pub(crate) fn states(&self) -> Vec<S> {
        self.drain();
        self.slots.iter().map(|s| std::mem::take(&mut *lock(&s.state))).collect()
    }
}

impl<S: Shard> Background for Board<S> {
    fn assist(&self) -> bool {
        let Some(s) = lock(&self.ready).pop_front() else { return false };
        self.run(s);
        true
    }

    fn busy(&self) -> bool {
        self.pending.load(Ordering::Acquire) > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shard that adds numbers in order, and forwards its sum at a step as a parcel.
    #[derive(Default)]
    struct Sum {
        seen: Vec<u64>,
    }

    enum Job {
        Add(u64),
        Send(u64),
        Receive(u64),
    }

    impl Shard for Sum {
        type Work = Job;
        type Parcel = u64;
        fn apply(&mut self, work: &mut Job, mail: &Mail<'_, u64>) -> Result<(), u64> {
            match *work {
                Job::Add(n) => self.seen.push(n),
                Job::Send(id) => mail.send(id, self.seen.iter().sum()),
                Job::Receive(id) => self.seen.push(1000 + mail.take(id).ok_or(id)?),
            }
            Ok(())
        }
    }

    /// A work that panics leaves the board busy for ever, and says so: whoever waits for it
    /// (io's last pairing) stops waiting.
    #[test]
    fn a_work_that_panics_is_reported() {
        #[derive(Default)]
        struct Panics;
        impl Shard for Panics {
            type Work = ();
            type Parcel = ();
            fn apply(&mut self, _: &mut (), _: &Mail<'_, ()>) -> Result<(), u64> {
                panic!("the work panics")
            }
        }
        let board: Arc<Board<Panics>> = Arc::new(Board::new());
        board.post(3, ());
        assert!(!board.panicked());
        let b = board.clone();
        assert!(std::thread::spawn(move || b.assist()).join().is_err());
        assert!(board.panicked() && board.busy());
    }

    #[test]
    fn shards_run_in_post_order_and_wait_for_parcels() {
        let board: Arc<Board<Sum>> = Arc::new(Board::new());
        // Shard 1 waits for shard 0's sum, posted before shard 0 has the numbers.
        board.post(1, Job::Add(5));
        board.post(1, Job::Receive(7));
        board.post(1, Job::Add(6));
        board.post(0, Job::Add(1));
        board.post(0, Job::Add(2));
        // Run shard 1 first: it parks on the parcel.
        while let Some(s) = { lock(&board.ready).pop_front() } {
            board.run(s);
            if s == 1 {
                break;
            }
        }
        assert!(board.busy());
        board.post(0, Job::Send(7));
        let workers: Vec<_> = (0..3)
            .map(|_| {
                let b = board.clone();
                std::thread::spawn(move || while b.busy() {
                    if !b.assist() {
                        std::thread::yield_now();
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        let states = board.take_states();
        assert_eq!(states[0].seen, [1, 2]);
        assert_eq!(states[1].seen, [5, 1003, 6]);
    }

    #[test]
    fn parts_group_by_shard_in_order() {
        let pool = Arc::new(Pool::new());
        let items: Vec<(i64, u32)> = (0..1000).map(|i| ((i * 7919) % 97, i as u32)).collect();
        let parts = Parts::split(items.clone(), |t| shard_of(t.0), &pool);
        let mut n = 0;
        for (s, r) in parts.groups() {
            let g = &parts.items[r];
            n += g.len();
            assert!(g.iter().all(|t| shard_of(t.0) == s));
            assert!(g.windows(2).all(|w| w[0].1 < w[1].1), "stable");
        }
        assert_eq!(n, items.len());
    }

    #[test]
    fn runs_drain_in_key_order_up_to_the_limit() {
        let key = |n: u64| EventKey { ns: (n / 3) as i64, stream: n % 3, pos: n };
        let mut runs = Runs::default();
        runs.add(Run::owned(vec![key(0), key(4), key(9), key(12)]));
        runs.add(Run::owned(vec![key(1), key(2), key(10)]));
        runs.add(Run::owned(Vec::new()));
        let mut got = Vec::new();
        let limit = Limit { ns: Some(3), key: None };
        runs.drain(|k| *k, |k| limit.admits(k), |k| got.push(k.pos));
        assert_eq!(got, [0, 1, 2, 4]);
        runs.drain(|k| *k, |k| Limit::END.admits(k), |k| got.push(k.pos));
        assert_eq!(got, [0, 1, 2, 4, 9, 10, 12]);
        assert!(runs.is_empty());
    }
}
