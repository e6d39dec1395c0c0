//! Enhanced calling context trees (the TraceCompare thesis, 2015, section 4.4.1).
//!
//! An ECCT is a calling context tree — one node per call stack, annotated with the time spent
//! in it — enhanced so that every nanosecond of an execution is in it: off-CPU waits push a
//! pseudo-frame named by their reason (`[timer]`, `[block device]`, `[preempted]`...), and a
//! wait for another thread hangs that thread's stacks under `[thread NAME]`, recursively
//! (`generate.rs` makes them from critical paths).
//!
//! The database keeps one [`Tree`], the union of every execution's ECCT (the thesis's
//! "generic ECCT"), and per execution the inclusive nanoseconds of each node it has. While an
//! execution is made its ECCT is a [`LocalEcct`] of self times; [`LocalEcct::into_pairs`]
//! adds it to the union through a [`TreeBuilder`].

use std::collections::HashMap;

use serde::Serialize;
use tracelens_analysis::kernel::IdMap;

/// The pseudo-frames of waits and of other threads.
pub mod pseudo {
    /// Running, where no stack sample tells in which function.
    pub const RUNNING: &str = "[running]";
    /// Runnable, waiting for a CPU (another thread ran there).
    pub const PREEMPTED: &str = "[preempted]";
    /// On a CPU that served an interrupt.
    pub const INTERRUPTED: &str = "[interrupted]";
    /// Waiting for a timer.
    pub const TIMER: &str = "[timer]";
    /// Waiting for a block device.
    pub const BLOCK_DEVICE: &str = "[block device]";
    /// Waiting for the network.
    pub const NETWORK: &str = "[network]";
    /// Waiting for an inter-processor interrupt.
    pub const IPI: &str = "[ipi]";
    /// Waiting for an input device.
    pub const USER_INPUT: &str = "[user input]";
    /// Waiting, for a reason the trace does not give.
    pub const BLOCKED: &str = "[blocked]";
    /// Not known from the trace.
    pub const UNKNOWN: &str = "[unknown]";

    /// The frame of a thread waited for: `[thread NAME]`.
    pub fn thread(name: &str) -> String {
        format!("[thread {name}]")
    }
}

/// The root node's id (it has no frame: it stands for the whole execution).
pub const ROOT: u32 = 0;

/// "None" in [`Tree::parent`] and [`Tree::frame`] (the root's).
pub const NONE: u32 = u32::MAX;

/// Frame names numbered once.
#[derive(Clone, Debug, Default)]
pub struct Frames {
    names: Vec<String>,
    ids: HashMap<String, u32>,
}

impl Frames {
    /// The id of `name`, numbered now if new.
    pub fn id(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.ids.get(name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), i);
        i
    }

    /// The id of `name` if numbered.
    pub fn get(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }

    /// The name of frame `id`.
    pub fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("", String::as_str)
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The names, by id.
    pub fn into_names(self) -> Vec<String> {
        self.names
    }
}

/// The union ECCT: every calling context of every execution, once. Node [`ROOT`] is the
/// execution itself; a node's parent always has a smaller id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Tree {
    /// Frame names, by frame id.
    pub frames: Vec<String>,
    /// Per node, its parent ([`NONE`] for the root).
    pub parent: Vec<u32>,
    /// Per node, its frame ([`NONE`] for the root).
    pub frame: Vec<u32>,
}

impl Default for Tree {
    fn default() -> Tree {
        Tree { frames: Vec::new(), parent: vec![NONE], frame: vec![NONE] }
    }
}

impl Tree {
    /// Number of nodes (the root included).
    pub fn len(&self) -> usize {
        self.parent.len()
    }

    /// Whether it has only the root.
    pub fn is_empty(&self) -> bool {
        self.parent.len() <= 1
    }

    /// The frame name of `node` (empty for the root).
    pub fn frame_name(&self, node: u32) -> &str {
        match self.frame.get(node as usize) {
            Some(&f) if f != NONE => self.frames.get(f as usize).map_or("", String::as_str),
            _ => "",
        }
    }

    /// The frames from the root's child down to `node` (empty for the root).
    pub fn path(&self, node: u32) -> Vec<&str> {
        let mut out = Vec::new();
        let mut n = node;
        while n != ROOT && (n as usize) < self.parent.len() {
            out.push(self.frame_name(n));
            n = self.parent[n as usize];
        }
        out.reverse();
        out
    }

    /// The depth of `node` (0 for the root).
    pub fn depth(&self, node: u32) -> usize {
        let mut d = 0;
        let mut n = node;
        while n != ROOT && (n as usize) < self.parent.len() {
            d += 1;
            n = self.parent[n as usize];
        }
        d
    }

    /// Each node's children, in id order.
    pub fn children(&self) -> Vec<Vec<u32>> {
        let mut c = vec![Vec::new(); self.len()];
        for (n, &p) in self.parent.iter().enumerate().skip(1) {
            if let Some(list) = c.get_mut(p as usize) {
                list.push(n as u32);
            }
        }
        c
    }

    /// Checks what a database read must hold: every node but the root has an earlier parent
    /// and a frame that exists. Returns the first node that does not.
    pub fn check(&self) -> Result<(), (u32, String)> {
        if self.parent.len() != self.frame.len() || self.parent.first() != Some(&NONE) {
            return Err((0, "node 0 must be the root (no parent, no frame)".into()));
        }
        for n in 1..self.parent.len() {
            let (p, f) = (self.parent[n], self.frame[n]);
            if p as usize >= n {
                return Err((n as u32, format!("parent {p} is not an earlier node")));
            }
            if f as usize >= self.frames.len() {
                return Err((n as u32, format!("frame {f} does not exist ({} frames)", self.frames.len())));
            }
        }
        Ok(())
    }
}

/// A tree's nodes as they are made: per node its parent and frame, each (parent, frame)
/// child numbered once; node [`ROOT`] first.
#[derive(Clone, Debug)]
struct Nodes {
    parent: Vec<u32>,
    frame: Vec<u32>,
    children: IdMap<(u32, u32), u32>,
}

impl Default for Nodes {
    fn default() -> Nodes {
        Nodes { parent: vec![NONE], frame: vec![NONE], children: IdMap::default() }
    }
}

impl Nodes {
    /// The child of `parent` with frame `frame`, and whether it was made now.
    fn child(&mut self, parent: u32, frame: u32) -> (u32, bool) {
        let next = self.parent.len() as u32;
        let id = *self.children.entry((parent, frame)).or_insert(next);
        if id == next {
            self.parent.push(parent);
            self.frame.push(frame);
        }
        (id, id == next)
    }
}

/// Builds the union [`Tree`], numbering each (parent, frame) child once.
#[derive(Debug)]
pub struct TreeBuilder {
    /// The frame names.
    pub frames: Frames,
    nodes: Nodes,
}

impl Default for TreeBuilder {
    fn default() -> TreeBuilder {
        TreeBuilder::new(Frames::default())
    }
}

impl TreeBuilder {
    /// A tree of the root only, over `frames`.
    pub fn new(frames: Frames) -> TreeBuilder {
        TreeBuilder { frames, nodes: Nodes::default() }
    }

    /// The child of `parent` with frame `frame`, made if new.
    pub fn child(&mut self, parent: u32, frame: u32) -> u32 {
        self.nodes.child(parent, frame).0
    }

    /// The node of `path` (frame names from the root's child down), made if new.
    pub fn path(&mut self, path: &[&str]) -> u32 {
        let mut n = ROOT;
        for f in path {
            let id = self.frames.id(f);
            n = self.child(n, id);
        }
        n
    }

    /// Number of nodes so far.
    pub fn len(&self) -> usize {
        self.nodes.parent.len()
    }

    /// Whether it has only the root.
    pub fn is_empty(&self) -> bool {
        self.len() <= 1
    }

    /// The tree.
    pub fn finish(self) -> Tree {
        Tree { frames: self.frames.into_names(), parent: self.nodes.parent, frame: self.nodes.frame }
    }
}

/// One execution's ECCT while it is made: a small tree of self times, its frames ids of a
/// shared [`Frames`].
#[derive(Clone, Debug)]
pub struct LocalEcct {
    nodes: Nodes,
    ns: Vec<i64>,
}

impl Default for LocalEcct {
    fn default() -> LocalEcct {
        LocalEcct { nodes: Nodes::default(), ns: vec![0] }
    }
}

impl LocalEcct {
    /// The child of `node` with frame `frame`, made if new.
    pub fn child(&mut self, node: u32, frame: u32) -> u32 {
        let (id, new) = self.nodes.child(node, frame);
        if new {
            self.ns.push(0);
        }
        id
    }

    /// The node below `node` along `frames` (outermost first).
    pub fn descend(&mut self, node: u32, frames: &[u32]) -> u32 {
        frames.iter().fold(node, |n, &f| self.child(n, f))
    }

    /// The frames its nodes have (the root's excluded).
    pub fn frames(&self) -> &[u32] {
        &self.nodes.frame[1..]
    }

    /// Adds `ns` of self time to `node`.
    pub fn add(&mut self, node: u32, ns: i64) {
        if let Some(x) = self.ns.get_mut(node as usize) {
            *x += ns;
        }
    }

    /// The sum of self times (the execution's duration once made).
    pub fn total(&self) -> i64 {
        self.ns.iter().sum()
    }

    /// Self time and frame path of each node with time, for tests: (frame ids, ns).
    pub fn self_times(&self) -> Vec<(Vec<u32>, i64)> {
        let mut out = Vec::new();
        let (parent, frame) = (&self.nodes.parent, &self.nodes.frame);
        for n in 0..parent.len() {
            if self.ns[n] == 0 {
                continue;
            }
            let mut path = Vec::new();
            let mut m = n as u32;
            while m != ROOT {
                path.push(frame[m as usize]);
                m = parent[m as usize];
            }
            path.reverse();
            out.push((path, self.ns[n]));
        }
        out
    }

    /// Adds its nodes to the union tree and returns (union node, inclusive ns) of each node
    /// but the root whose inclusive time is not zero, by union node.
    pub fn into_pairs(self, tree: &mut TreeBuilder) -> Vec<(u32, i64)> {
        self.into_pairs_with(tree, |f| f)
    }

    /// [`into_pairs`](Self::into_pairs), its frame ids turned into the tree's by `frame`.
    pub fn into_pairs_with(self, tree: &mut TreeBuilder, mut frame: impl FnMut(u32) -> u32) -> Vec<(u32, i64)> {
        let (parent, frames) = (&self.nodes.parent, &self.nodes.frame);
        let n = parent.len();
        // Inclusive times: children come after their parent.
        let mut incl = self.ns;
        for i in (1..n).rev() {
            let p = parent[i] as usize;
            incl[p] += incl[i];
        }
        let mut map = vec![ROOT; n];
        let mut out = Vec::with_capacity(n.saturating_sub(1));
        for i in 1..n {
            let u = tree.child(map[parent[i] as usize], frame(frames[i]));
            map[i] = u;
            if incl[i] != 0 {
                out.push((u, incl[i]));
            }
        }
        out.sort_unstable_by_key(|p| p.0);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_trees_merge_into_the_union_with_inclusive_times() {
        let mut frames = Frames::default();
        let (main, work, timer) = (frames.id("main"), frames.id("work"), frames.id(pseudo::TIMER));
        let mut tb = TreeBuilder::new(frames);
        let mut a = LocalEcct::default();
        let w = a.descend(ROOT, &[main, work]);
        a.add(w, 30);
        let t = a.child(w, timer);
        a.add(t, 70);
        let m = a.child(ROOT, main);
        a.add(m, 5);
        assert_eq!(a.total(), 105);
        let pa = a.into_pairs(&mut tb);
        assert_eq!(pa, vec![(1, 105), (2, 100), (3, 70)]);
        let mut b = LocalEcct::default();
        let t = b.descend(ROOT, &[main, timer]);
        b.add(t, 9);
        let pb = b.into_pairs(&mut tb);
        assert_eq!(pb, vec![(1, 9), (4, 9)]);
        let tree = tb.finish();
        assert_eq!(tree.path(3), vec!["main", "work", "[timer]"]);
        assert_eq!(tree.path(4), vec!["main", "[timer]"]);
        assert_eq!(tree.depth(3), 3);
        assert_eq!(tree.children()[1], vec![2, 4]);
        assert!(tree.check().is_ok());
    }

    #[test]
    fn check_finds_bad_nodes() {
        let t = Tree { frames: vec!["a".into()], parent: vec![NONE, 0, 5], frame: vec![NONE, 0, 0] };
        assert_eq!(t.check().unwrap_err().0, 2);
        let t = Tree { frames: vec!["a".into()], parent: vec![NONE, 0], frame: vec![NONE, 3] };
        assert_eq!(t.check().unwrap_err().0, 1);
    }
}
