//! The descriptor model, sharded by process (*Parallel trace analysis*, 2019, section 4.2: the
//! merge only resolves what chunks could not know and hands the records on).
//!
//! The model's state of a thread is touched only by the facts of the threads it is linked to:
//! a thread and its process (`fork` of a thread, a state dump record), the processes a thread
//! was counted under. Threads linked once stay in one *group* (a union-find over thread ids,
//! [`Router`]); every group's state lives in one shard of a [`Board`], which runs the group's
//! facts in key order on whichever worker is free. The merge (serial) only routes: it feeds
//! the links (forks, state dump records, few) to the router, and sends each fact below the
//! frontier to the shard of its thread's group *as of the fact's key* (a group joining another
//! moves to its shard at the key of the link: a [`Control::MoveOut`] there, a
//! [`Control::MoveIn`] in the new shard, and the facts after it go to the new shard). A `fork`
//! whose parent is in another group runs in two parts: the parent's shard sends a copy of its
//! table as a parcel ([`Control::ForkParent`]), the child's receives it
//! ([`Control::ForkChild`]). Parcels are sent and received at the same key, so a shard that
//! waits for one waits for a shard behind it (`shards.rs`).
//!
//! Statistics are ordered by the key of the fact that created them instead of a counter, so
//! each shard numbers them as the serial model would; the shards' latencies, longest calls and
//! statistics are combined at the end by exact, order-free merges.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::engine::Background;
use crate::filter::Filter;
use crate::id_map::IdMap;
use crate::kernel::Comm;
use crate::order::EventKey;
use crate::runs::sort_run;
use crate::shards::{shard_of, Board, Mail, Run, Runs, Shard};

use super::facts::{Fact, Fork, Link};
use super::fds::FdTable;
use super::model::{Conf, Model, Proc};
use super::report::thread_rows;
use super::IoShard;

/// What the shards of the model need from the analysis.
#[derive(Debug, Default)]
pub(super) struct ModelConf {
    pub(super) filter: Filter,
    pub(super) top: usize,
}

/// A step of a shard that is not a plain fact: the links, run where the router says.
#[derive(Debug)]
pub(crate) enum Control {
    /// A link (a `fork` within a group, a state dump record), run as it is.
    Link(Link),
    /// The parent's side of a `fork` into another group: sends the table as `parcel`.
    ForkParent { parent_pid: i64, parent_comm: Comm, parcel: u64 },
    /// The child's side: receives the table.
    ForkChild { fork: Fork, parcel: u64 },
    /// The states of `tids` leave for another shard, as `parcel`.
    MoveOut { tids: Vec<i64>, parcel: u64 },
    /// States come in.
    MoveIn { parcel: u64 },
}

/// What shards send each other.
#[derive(Debug)]
pub(crate) enum Parcel {
    Table(FdTable),
    Procs(Vec<(i64, Proc)>),
}

/// One shard of the model.
#[derive(Debug, Default)]
pub(crate) struct ModelShard {
    pub(super) model: Model,
    runs: Runs<(EventKey, Fact)>,
    controls: VecDeque<(EventKey, Control)>,
}

/// Work for a [`ModelShard`]: facts (runs sorted by key, and runs to sort) and controls below
/// `frontier`.
pub(crate) struct ModelWork {
    pub(super) runs: Vec<Run<(EventKey, Fact)>>,
    pub(super) unsorted: Vec<Run<(EventKey, Fact)>>,
    pub(super) controls: Vec<(EventKey, Control)>,
    pub(super) frontier: Option<i64>,
    pub(super) conf: Arc<ModelConf>,
    /// The last work: makes the threads' per-file rows after the facts.
    pub(super) rows: bool,
}

impl Shard for ModelShard {
    type Work = ModelWork;
    type Parcel = Parcel;

    fn apply(&mut self, work: &mut ModelWork, mail: &Mail<'_, Parcel>) -> Result<(), u64> {
        for r in work.runs.drain(..) {
            self.runs.add(r);
        }
        for r in work.unsorted.drain(..) {
            let mut v = r.items().to_vec();
            sort_run(&mut v, |(k, _)| *k);
            self.runs.add(Run::owned(v));
        }
        self.controls.extend(work.controls.drain(..));
        let conf = Conf { filter: &work.conf.filter, top: work.conf.top };
        let frontier = work.frontier;
        loop {
            let next = self.controls.front().map(|(k, _)| *k);
            let model = &mut self.model;
            self.runs.drain(|(k, _)| *k, |k| k.is_before(frontier) && next.is_none_or(|c| *k < c), |(k, f)| model.apply(*k, f, &conf));
            let Some((key, control)) = self.controls.front() else { break };
            control_step(&mut self.model, *key, control, mail, &conf)?;
            self.controls.pop_front();
        }
        if work.rows {
            for (_, p) in &mut self.model.procs.slab {
                if let Some(s) = p.stats.as_deref_mut() {
                    s.rows = Some(thread_rows(s));
                }
            }
        }
        Ok(())
    }
}

/// Runs one control; `Err(parcel)` while the parcel it needs has not come.
fn control_step(model: &mut Model, key: EventKey, control: &Control, mail: &Mail<'_, Parcel>, conf: &Conf<'_>) -> Result<(), u64> {
    match control {
        Control::Link(l) => model.apply_link(key, l, conf),
        &Control::ForkParent { parent_pid, parent_comm, parcel } => {
            let fds = model.fork_parent(parent_pid, parent_comm);
            mail.send(parcel, Parcel::Table(fds));
        }
        Control::ForkChild { fork, parcel } => {
            let Some(Parcel::Table(fds)) = mail.take(*parcel) else { return Err(*parcel) };
            model.fork_child(key, fork, fds, conf);
        }
        Control::MoveOut { tids, parcel } => {
            let procs = tids.iter().filter_map(|&t| model.procs.remove(t).map(|p| (t, p))).collect();
            mail.send(*parcel, Parcel::Procs(procs));
        }
        Control::MoveIn { parcel } => {
            let Some(Parcel::Procs(procs)) = mail.take(*parcel) else { return Err(*parcel) };
            for (t, p) in procs {
                model.procs.replace(t, p);
            }
        }
    }
    Ok(())
}

/// The thread ids a group holds and its shard.
#[derive(Debug)]
struct Group {
    tids: Vec<i64>,
    shard: u8,
}

/// The routes of a thread whose group changed shard: its first shard, then each change.
#[derive(Debug)]
struct History {
    first: u8,
    /// From each key on (after its link), the shard.
    changes: Vec<(EventKey, u8)>,
}

/// Which shard runs each thread's facts, as of each key (see the module comment). A thread
/// never linked is a group of its own, in [`shard_of`] its id.
#[derive(Debug, Default)]
pub(super) struct Router {
    /// Union-find parents of the threads ever linked.
    parent: IdMap<i64, i64>,
    /// The groups, by root.
    groups: IdMap<i64, Group>,
    /// Index + 1 in `histories` of the small thread ids with one (0: none).
    dense: Vec<u32>,
    /// Index in `histories` of the other ones.
    sparse: IdMap<i64, u32>,
    histories: Vec<History>,
    parcels: u64,
    /// The key of each change of shard (a group moving), in the order made.
    changes: Vec<EventKey>,
}

/// The routes of the threads after some changes: what a chunk routes its facts by before the
/// merge knows what links come before them; the merge takes them if no change came between
/// ([`Router::still_valid`]), and routes the facts again otherwise.
#[derive(Debug, Default)]
pub(super) struct Snapshot {
    /// 1 + the shard of the small thread ids with a history (0: none).
    dense: Vec<u8>,
    sparse: IdMap<i64, u8>,
    /// The changes it has.
    pub(super) version: usize,
    /// The last key of those.
    pub(super) last: Option<EventKey>,
}

impl Snapshot {
    /// The shard of thread `t`'s facts.
    #[inline]
    pub(super) fn route(&self, t: i64) -> usize {
        if (0..DENSE).contains(&t) {
            match self.dense.get(t as usize) {
                Some(&s) if s > 0 => (s - 1) as usize,
                _ => shard_of(t),
            }
        } else {
            self.sparse.get(&t).map_or(shard_of(t), |&s| s as usize)
        }
    }
}

/// Thread ids below this find their history through a vector.
const DENSE: i64 = 1 << 16;

impl Router {
    /// The root of `t`'s group.
    fn find(&mut self, t: i64) -> i64 {
        let mut r = t;
        while let Some(&p) = self.parent.get(&r) {
            if p == r {
                break;
            }
            r = p;
        }
        // Path compression.
        let mut c = t;
        while c != r {
            let Some(p) = self.parent.insert(c, r) else { break };
            c = p;
        }
        r
    }

    /// The shard of `t`'s group now (after every link given so far).
    fn shard_now(&mut self, t: i64) -> u8 {
        let r = self.find(t);
        self.groups.get(&r).map_or(shard_of(t) as u8, |g| g.shard)
    }

    fn history(&self, t: i64) -> Option<&History> {
        let i = if (0..DENSE).contains(&t) { (*self.dense.get(t as usize)?).checked_sub(1)? } else { *self.sparse.get(&t)? };
        self.histories.get(i as usize)
    }

    fn history_mut(&mut self, t: i64, first: u8) -> &mut History {
        let i = if (0..DENSE).contains(&t) {
            let at = t as usize;
            if self.dense.len() <= at {
                self.dense.resize(at + 1, 0);
            }
            if self.dense[at] == 0 {
                self.histories.push(History { first, changes: Vec::new() });
                self.dense[at] = self.histories.len() as u32;
            }
            self.dense[at] - 1
        } else {
            let n = self.histories.len() as u32;
            *self.sparse.entry(t).or_insert_with(|| n)
        };
        if i as usize == self.histories.len() {
            self.histories.push(History { first, changes: Vec::new() });
        }
        &mut self.histories[i as usize]
    }

    /// The shard of thread `t`'s fact at `key`.
    #[inline]
    pub(super) fn route(&self, t: i64, key: EventKey) -> usize {
        match self.history(t) {
            None => shard_of(t),
            Some(h) => {
                let at = h.changes.partition_point(|(k, _)| *k < key);
                (if at == 0 { h.first } else { h.changes[at - 1].1 }) as usize
            }
        }
    }

    /// The changes made so far.
    pub(super) fn version(&self) -> usize {
        self.changes.len()
    }

    /// The routes now.
    pub(super) fn snapshot(&self) -> Snapshot {
        let now = |h: &History| h.changes.last().map_or(h.first, |c| c.1);
        let mut dense = vec![0u8; self.dense.len()];
        for (t, &i) in self.dense.iter().enumerate() {
            if let Some(h) = i.checked_sub(1).and_then(|i| self.histories.get(i as usize)) {
                dense[t] = now(h) + 1;
            }
        }
        let sparse = self.sparse.iter().filter_map(|(&t, &i)| Some((t, now(self.histories.get(i as usize)?)))).collect();
        Snapshot { dense, sparse, version: self.changes.len(), last: self.changes.iter().max().copied() }
    }

    /// Whether facts with keys from `min` to `max`, routed by the snapshot `(version, last)`,
    /// went where [`route`](Self::route) sends them: no change of the snapshot is after `min`,
    /// none made since is before `max`.
    pub(super) fn still_valid(&self, version: usize, last: Option<EventKey>, min: EventKey, max: EventKey) -> bool {
        last.is_none_or(|l| l < min) && self.changes.get(version..).is_some_and(|c| c.iter().all(|k| *k > max))
    }

    fn parcel(&mut self) -> u64 {
        self.parcels += 1;
        self.parcels
    }

    /// Links `a` to `b` at `key`: their groups become one, in `b`'s shard unless `a`'s group
    /// is larger; the group that changes shard moves there (controls to `out`).
    fn link(&mut self, key: EventKey, a: i64, b: i64, out: &mut [Vec<(EventKey, Control)>]) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return;
        }
        let take = |groups: &mut IdMap<i64, Group>, r: i64| groups.remove(&r).unwrap_or(Group { tids: vec![r], shard: shard_of(r) as u8 });
        let ga = take(&mut self.groups, ra);
        let gb = take(&mut self.groups, rb);
        // `big` keeps its shard and root; `small` joins it.
        let ((rbig, mut big), small) = if ga.tids.len() > gb.tids.len() { ((ra, ga), gb) } else { ((rb, gb), ga) };
        let rsmall = if rbig == ra { rb } else { ra };
        self.parent.insert(rsmall, rbig);
        self.parent.entry(rbig).or_insert(rbig);
        if small.shard != big.shard {
            self.changes.push(key);
            let parcel = self.parcel();
            for &t in &small.tids {
                self.history_mut(t, small.shard).changes.push((key, big.shard));
            }
            out[small.shard as usize].push((key, Control::MoveOut { tids: small.tids.clone(), parcel }));
            out[big.shard as usize].push((key, Control::MoveIn { parcel }));
        }
        big.tids.extend(small.tids);
        self.groups.insert(rbig, big);
    }

    /// Routes a link (a `fork`, a state dump record of a process) at `key`: the groups it
    /// joins, and where it runs (controls to `out`).
    pub(super) fn add_link(&mut self, key: EventKey, link: &Link, out: &mut [Vec<(EventKey, Control)>]) {
        match *link {
            Link::Fork(fork) => {
                if fork.child_tid != fork.child_pid {
                    self.link(key, fork.child_tid, fork.child_pid, out);
                }
                let (sp, sc) = (self.shard_now(fork.parent_pid), self.shard_now(fork.child_tid));
                if sp == sc {
                    out[sc as usize].push((key, Control::Link(*link)));
                } else {
                    let parcel = self.parcel();
                    out[sp as usize].push((key, Control::ForkParent { parent_pid: fork.parent_pid, parent_comm: fork.parent_comm, parcel }));
                    out[sc as usize].push((key, Control::ForkChild { fork, parcel }));
                }
            }
            Link::StatedumpProcess { tid, pid, .. } => {
                if tid != pid {
                    self.link(key, tid, pid, out);
                }
                let s = self.shard_now(tid);
                out[s as usize].push((key, Control::Link(*link)));
            }
        }
    }
}

/// The thread whose group a (non-link) fact belongs to.
#[inline]
pub(super) fn owner(fact: &Fact) -> i64 {
    match *fact {
        Fact::Switch { tid, .. } | Fact::Exec { tid, .. } | Fact::Item { tid, .. } | Fact::Call { tid, .. } => tid,
        Fact::StatedumpFd { pid, .. } => pid,
    }
}

/// The two boards of an `io` run, as one piece of background work: the pairing of calls and
/// the model.
#[derive(Debug, Default)]
pub(super) struct Boards {
    pub(super) pairs: Board<IoShard>,
    pub(super) model: Board<ModelShard>,
}

impl Background for Boards {
    fn assist(&self) -> bool {
        self.pairs.assist() || self.model.assist()
    }

    fn busy(&self) -> bool {
        self.pairs.busy() || self.model.busy()
    }
}
