//! The one parallel pass over the kernel trace (and user-space probe traces) that a database
//! is built from: the execution graph (`tracelens-critical`), and, replayed in the trace's
//! one time order (`Replay` of the analysis floor), the delimiters paired into executions
//! with the system calls and bytes of their threads, and the block requests with the threads
//! that issued them (the TraceCompare thesis, section 4.4.3: the builder reads the events in
//! order, keeps pending executions, and closes each at its end event).

use std::collections::HashMap;
use std::sync::Arc;

use tracelens_analysis::kernel::{IdMap, KernelMap, Kind};
use tracelens_analysis::{Analysis, Background, Chunk, Context, DiscardedItems, EventCounter, EventKey, OnKernel, Replay, StreamCpu};
use tracelens_critical::{ExecutionGraph, GraphAnalysis, GraphState};
use tracelens_ctf::EventView;
use tracelens_trace::TraceSet;

use crate::delimit::{dims_of, event_pid, event_tid, matched, roles, ClassRole, Delimiter, Dim, Matched, BEGIN, END};
use crate::Result;

/// A block request: issued by a thread (when in one's context), completed later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// `block_rq_issue`, ns.
    pub issue_ns: i64,
    /// `block_rq_complete`, ns.
    pub complete_ns: i64,
    /// The thread it was issued from, if known.
    pub tid: Option<i64>,
}

/// An execution as the pass finds it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Raw {
    pub(crate) begin_ns: i64,
    pub(crate) end_ns: Option<i64>,
    pub(crate) tid: i64,
    pub(crate) pid: i64,
    pub(crate) end_tid: i64,
    pub(crate) trace: u32,
    pub(crate) depth: u32,
    pub(crate) dims: Vec<(u32, Dim)>,
    pub(crate) syscalls: i64,
    pub(crate) read: i64,
    pub(crate) written: i64,
}

/// What the pass found.
pub(crate) struct Collected {
    pub(crate) graph: ExecutionGraph,
    /// Finished executions, by begin time.
    pub(crate) executions: Vec<Raw>,
    /// Block requests, by issue time.
    pub(crate) requests: Vec<Request>,
    /// Executions begun and never ended.
    pub(crate) unfinished: u64,
    /// End events without an open execution.
    pub(crate) unmatched_ends: u64,
    /// Begin and end events without the match field, or without a thread.
    pub(crate) without_key: u64,
}

/// A record replayed in time order.
#[derive(Clone, Debug)]
enum Rec {
    Delim { role: u8, tid: Option<i64>, pid: Option<i64>, cpu: Option<StreamCpu>, value: Option<Matched>, trace: u32, dims: Box<[(u32, Dim)]>, begin_dims: bool },
    Switch { cpu: StreamCpu, next: i64 },
    SysEntry { tid: Option<i64>, cpu: StreamCpu },
    SysExit { tid: Option<i64>, cpu: StreamCpu, read: i64, written: i64 },
    Issue { dev: u64, sector: u64, tid: Option<i64>, cpu: StreamCpu },
    Complete { dev: u64, sector: u64 },
}

/// Where open executions wait for their end.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum OpenKey {
    Thread(i64),
    Value(Matched),
}

/// The fold over the records.
#[derive(Debug, Default)]
struct Fold {
    current: HashMap<StreamCpu, i64>,
    open: HashMap<OpenKey, Vec<usize>>,
    /// Open executions by their begin thread.
    by_thread: IdMap<i64, Vec<usize>>,
    execs: Vec<Raw>,
    finished: Vec<bool>,
    issued: HashMap<(u64, u64), (i64, Option<i64>)>,
    requests: Vec<Request>,
    unmatched_ends: u64,
    without_key: u64,
}

impl Fold {
    fn thread(&self, tid: Option<i64>, cpu: Option<StreamCpu>) -> Option<i64> {
        tid.or_else(|| cpu.and_then(|c| self.current.get(&c).copied())).filter(|&t| t != 0)
    }

    fn apply(&mut self, key: EventKey, r: Rec, matching: bool) {
        match r {
            Rec::Switch { cpu, next } => {
                self.current.insert(cpu, next);
            }
            Rec::SysEntry { tid, cpu } => {
                if let Some(t) = self.thread(tid, Some(cpu)) {
                    if let Some(list) = self.by_thread.get(&t) {
                        for &i in list {
                            self.execs[i].syscalls += 1;
                        }
                    }
                }
            }
            Rec::SysExit { tid, cpu, read, written } => {
                if read == 0 && written == 0 {
                    return;
                }
                if let Some(t) = self.thread(tid, Some(cpu)) {
                    if let Some(list) = self.by_thread.get(&t) {
                        for &i in list {
                            self.execs[i].read += read;
                            self.execs[i].written += written;
                        }
                    }
                }
            }
            Rec::Issue { dev, sector, tid, cpu } => {
                let t = self.thread(tid, Some(cpu));
                self.issued.insert((dev, sector), (key.ns, t));
            }
            Rec::Complete { dev, sector } => {
                if let Some((issue_ns, tid)) = self.issued.remove(&(dev, sector)) {
                    self.requests.push(Request { issue_ns, complete_ns: key.ns, tid });
                }
            }
            Rec::Delim { role, tid, pid, cpu, value, trace, dims, begin_dims } => {
                let tid = self.thread(tid, cpu);
                let open_key = if matching {
                    match value {
                        Some(v) => OpenKey::Value(v),
                        None => {
                            self.without_key += 1;
                            return;
                        }
                    }
                } else {
                    match tid {
                        Some(t) => OpenKey::Thread(t),
                        None => {
                            self.without_key += 1;
                            return;
                        }
                    }
                };
                // An event that both ends and begins closes first.
                if role & END != 0 {
                    match self.open.get_mut(&open_key).and_then(|s| s.pop()) {
                        Some(i) => {
                            let e = &mut self.execs[i];
                            e.end_ns = Some(key.ns);
                            e.end_tid = tid.unwrap_or(e.tid);
                            if !begin_dims {
                                e.dims.extend(dims.iter().cloned());
                            }
                            self.finished[i] = true;
                            let t = e.tid;
                            if let Some(list) = self.by_thread.get_mut(&t) {
                                list.retain(|&x| x != i);
                                if list.is_empty() {
                                    self.by_thread.remove(&t);
                                }
                            }
                        }
                        None => self.unmatched_ends += 1,
                    }
                }
                if role & BEGIN != 0 {
                    let Some(t) = tid else {
                        self.without_key += 1;
                        return;
                    };
                    let stack = self.open.entry(open_key).or_default();
                    let i = self.execs.len();
                    self.execs.push(Raw {
                        begin_ns: key.ns,
                        end_ns: None,
                        tid: t,
                        pid: pid.unwrap_or(-1),
                        end_tid: t,
                        trace,
                        depth: stack.len() as u32,
                        dims: if begin_dims { dims.into_vec() } else { Vec::new() },
                        syscalls: 0,
                        read: 0,
                        written: 0,
                    });
                    self.finished.push(false);
                    stack.push(i);
                    self.by_thread.entry(t).or_default().push(i);
                }
            }
        }
    }
}

/// The state of a run of chunks.
#[derive(Default)]
pub(crate) struct CollectState {
    graph: GraphState,
    replay: Replay<Rec>,
    fold: Fold,
    counter: EventCounter,
}

/// The analysis (see the module docs).
pub(crate) struct Collect {
    graph: GraphAnalysis,
    map: KernelMap,
    roles: IdMap<u64, ClassRole>,
    matching: Option<String>,
    begin_ns: Option<i64>,
    end_ns: Option<i64>,
}

fn class_key(trace: usize, plan: usize, id: u64) -> u64 {
    (trace as u64) << 48 | (plan as u64) << 32 | (id & 0xffff_ffff)
}

/// Which system calls read or write bytes (their return value).
fn rw(name: &str) -> (bool, bool) {
    match name {
        "read" | "pread64" | "readv" | "preadv" | "preadv2" | "recvfrom" | "recvmsg" | "recv" => (true, false),
        "write" | "pwrite64" | "writev" | "pwritev" | "pwritev2" | "sendto" | "sendmsg" | "send" | "sendfile" | "sendfile64" => (false, true),
        _ => (false, false),
    }
}

impl Collect {
    /// The pass over `set` for `d`; returns it with the dimension names.
    pub(crate) fn new(set: &TraceSet, d: &Delimiter, begin_ns: Option<i64>, end_ns: Option<i64>) -> Result<(Collect, Vec<String>)> {
        let (list, dims) = roles(set, d)?;
        let mut map = IdMap::default();
        for (t, p, id, r) in list {
            map.insert(class_key(t, p, id), r);
        }
        let matching = match d {
            Delimiter::Function(_) => None,
            Delimiter::Events { match_field, .. } => match_field.clone(),
        };
        Ok((Collect { graph: GraphAnalysis::new(set), map: KernelMap::new(set), roles: map, matching, begin_ns, end_ns }, dims))
    }

    fn delimiter(&self, st: &mut CollectState, ev: &EventView<'_, '_>, cx: &Context<'_, '_>, role: &ClassRole) {
        let Some(ns) = ev.ns else { return };
        if self.begin_ns.is_some_and(|b| ns < b) || self.end_ns.is_some_and(|e| ns > e) {
            return;
        }
        let value = self.matching.as_deref().and_then(|m| matched(ev, m));
        let tid = event_tid(ev);
        let cpu = if tid.is_none() { self.map.decode(ev, cx).map(|k| StreamCpu::new(cx, k.cpu)) } else { None };
        let key = st.counter.key(ns, cx);
        // A class both begins and ends: its dimensions go with the begin.
        let bit = if role.role & BEGIN != 0 { BEGIN } else { END };
        let dims = dims_of(ev, role, bit).into_boxed_slice();
        st.replay.push(key, Rec::Delim { role: role.role, tid, pid: event_pid(ev), cpu, value, trace: cx.chunk.trace as u32, dims, begin_dims: bit == BEGIN });
    }
}

impl Analysis for Collect {
    type State = CollectState;
    type Output = Collected;

    fn new_state(&self, chunk: &Chunk) -> CollectState {
        CollectState { graph: self.graph.new_state(chunk), replay: Replay::new(chunk), ..CollectState::default() }
    }

    fn on_event(&self, st: &mut CollectState, ev: &EventView<'_, '_>, cx: &Context<'_, '_>) {
        // Decoded once, for the graph too.
        let k = self.map.decode(ev, cx);
        if let Some(k) = &k {
            self.graph.on_kernel(&mut st.graph, &k.narrowed(self.graph.kinds()), cx);
        }
        if let Some(role) = self.roles.get(&class_key(cx.chunk.trace, cx.stream.plan, ev.class.class.id)) {
            self.delimiter(st, ev, cx, role);
            return;
        }
        let Some(k) = k else { return };
        let cpu = StreamCpu::new(cx, k.cpu);
        let rec = match k.kind {
            Kind::SchedSwitch { next_tid, .. } => Rec::Switch { cpu, next: next_tid },
            // The return of a function probed with a uretprobe goes through the kernel's
            // `uretprobe` system call (x86-64, Linux 6.11 on): the probe's, not the program's.
            Kind::SyscallEntry { name: "uretprobe", .. } => return,
            Kind::SyscallEntry { .. } => Rec::SysEntry { tid: k.tid, cpu },
            Kind::SyscallExit { name, ret, .. } => {
                let (r, w) = rw(name.unwrap_or(""));
                if ret <= 0 || !(r || w) {
                    return;
                }
                Rec::SysExit { tid: k.tid, cpu, read: if r { ret } else { 0 }, written: if w { ret } else { 0 } }
            }
            Kind::BlockRqIssue { dev, sector, tid, .. } => Rec::Issue { dev, sector, tid: k.tid.or(tid), cpu },
            Kind::BlockRqComplete { dev, sector, .. } => Rec::Complete { dev, sector },
            _ => return,
        };
        let key = st.counter.key(k.ns, cx);
        st.replay.push(key, rec);
    }

    fn on_discarded(&self, st: &mut CollectState, items: &DiscardedItems, cx: &Context<'_, '_>) {
        self.graph.on_discarded(&mut st.graph, items, cx);
    }

    fn end_chunk(&self, st: &mut CollectState, cx: &Context<'_, '_>) {
        self.graph.end_chunk(&mut st.graph, cx);
        st.replay.end_chunk();
    }

    fn merge(&self, mut a: CollectState, b: CollectState) -> CollectState {
        a.graph = self.graph.merge(a.graph, b.graph);
        let fold = &mut a.fold;
        let matching = self.matching.is_some();
        a.replay.merge(b.replay, |k, r| fold.apply(k, r, matching));
        a
    }

    fn end_merges(&self, st: &mut CollectState) {
        self.graph.end_merges(&mut st.graph);
    }

    fn background(&self, st: &CollectState) -> Option<Arc<dyn Background>> {
        self.graph.background(&st.graph)
    }

    fn finish(&self, st: CollectState) -> Collected {
        let graph = self.graph.finish(st.graph);
        let mut fold = st.fold;
        let matching = self.matching.is_some();
        st.replay.finish(|k, r| fold.apply(k, r, matching));
        let unfinished = fold.finished.iter().filter(|f| !**f).count() as u64;
        let mut executions: Vec<Raw> = fold.execs.into_iter().zip(fold.finished).filter(|(_, f)| *f).map(|(e, _)| e).collect();
        executions.sort_by_key(|e| (e.begin_ns, e.tid, std::cmp::Reverse(e.end_ns)));
        let mut requests = fold.requests;
        requests.sort_by_key(|r| (r.issue_ns, r.complete_ns));
        Collected { graph, executions, requests, unfinished, unmatched_ends: fold.unmatched_ends, without_key: fold.without_key }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_and_write_calls() {
        assert_eq!(rw("pread64"), (true, false));
        assert_eq!(rw("sendmsg"), (false, true));
        assert_eq!(rw("fsync"), (false, false));
    }

    fn key(ns: i64) -> EventKey {
        EventKey { ns, stream: 0, pos: ns as u64 }
    }

    fn delim(role: u8, tid: i64, value: Option<i128>) -> Rec {
        Rec::Delim { role, tid: Some(tid), pid: Some(tid), cpu: None, value: value.map(Matched::Int), trace: 0, dims: Box::new([]), begin_dims: role & BEGIN != 0 }
    }

    /// (begin, end, tid, end_tid, depth, syscalls, read bytes) of an execution.
    type Summary = (i64, Option<i64>, i64, i64, u32, i64, i64);

    /// The finished executions.
    fn finished(f: &Fold) -> Vec<Summary> {
        f.execs.iter().zip(&f.finished).filter(|e| *e.1).map(|(e, _)| (e.begin_ns, e.end_ns, e.tid, e.end_tid, e.depth, e.syscalls, e.read)).collect()
    }

    #[test]
    fn executions_nest_and_an_end_closes_the_innermost() {
        let mut f = Fold::default();
        let cpu = StreamCpu(0);
        for (ns, r) in [
            (10, delim(BEGIN, 5, None)),
            (20, delim(BEGIN, 5, None)),
            (25, Rec::SysEntry { tid: Some(5), cpu }),
            (26, Rec::SysExit { tid: Some(5), cpu, read: 100, written: 0 }),
            (27, Rec::SysEntry { tid: Some(6), cpu }),
            (30, delim(END, 5, None)),
            (35, Rec::SysEntry { tid: Some(5), cpu }),
            (40, delim(END, 5, None)),
            (50, delim(END, 5, None)),
            (60, delim(BEGIN, 5, None)),
        ] {
            f.apply(key(ns), r, false);
        }
        // The inner call [20, 30] has the system call made in it; the outer one both.
        assert_eq!(finished(&f), vec![(10, Some(40), 5, 5, 0, 2, 100), (20, Some(30), 5, 5, 1, 1, 100)]);
        assert_eq!(f.unmatched_ends, 1);
        assert_eq!(f.finished.iter().filter(|d| !**d).count(), 1, "the begin at 60 is unfinished");
    }

    #[test]
    fn a_match_field_pairs_across_threads() {
        let mut f = Fold::default();
        for (ns, r) in [(10, delim(BEGIN, 5, Some(1))), (15, delim(BEGIN, 5, Some(2))), (20, delim(END, 6, Some(1))), (25, delim(BEGIN, 7, None)), (30, delim(END, 7, Some(2)))] {
            f.apply(key(ns), r, true);
        }
        assert_eq!(finished(&f), vec![(10, Some(20), 5, 6, 0, 0, 0), (15, Some(30), 5, 7, 0, 0, 0)]);
        assert_eq!(f.without_key, 1, "a begin without the field");
    }
}
