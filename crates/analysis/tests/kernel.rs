//! The kernel mapping layer on the three naming styles: LTTng 2.x (many-threads), older LTTng
//! (bug446190: `sys_*` / `exit_syscall`) and perf's CTF converter (perf-taskset2), with counts
//! from babeltrace2 2.0.4; and the fixed-position field reads checked against by-name lookups.

mod common;

use std::collections::BTreeMap;

use common::fixture;
use tracelens_analysis::kernel::{syscall_name, text, CpuThreads, KernelMap, Kind};
use tracelens_analysis::{Analysis, Context, Engine, Options};
use tracelens_ctf::EventView;
use tracelens_trace::TraceSet;

/// Counts decoded kinds and checks every field read against a by-name lookup.
struct Census<'m> {
    map: &'m KernelMap,
}

#[derive(Default, Debug)]
struct Counts {
    kinds: BTreeMap<String, u64>,
    not_kernel: u64,
    with_tid: u64,
    cpus: BTreeMap<u32, u64>,
    mismatches: Vec<String>,
    syscalls: BTreeMap<String, u64>,
    unnamed_exits: u64,
}

fn kind_name(k: &Kind<'_>) -> String {
    let s = format!("{k:?}");
    s.split([' ', '{']).next().unwrap_or("").to_string()
}

impl Analysis for Census<'_> {
    type State = Counts;
    type Output = Counts;

    fn on_event(&self, st: &mut Counts, ev: &EventView<'_, '_>, cx: &Context<'_, '_>) {
        let Some(k) = self.map.decode(ev, cx) else {
            st.not_kernel += 1;
            return;
        };
        *st.kinds.entry(kind_name(&k.kind)).or_default() += 1;
        *st.cpus.entry(k.cpu).or_default() += 1;
        st.with_tid += k.tid.is_some() as u64;
        let by_name_i = |names: &[&str]| names.iter().find_map(|n| ev.payload.get(n)).and_then(|f| f.as_i64());
        let by_name_s = |n: &str| ev.payload.get(n).and_then(|f| f.as_bytes()).unwrap_or(&[]);
        let mut check = |what: &str, ok: bool| {
            if !ok && st.mismatches.len() < 10 {
                st.mismatches.push(format!("{} {what}", ev.name()));
            }
        };
        match k.kind {
            Kind::SchedSwitch { prev_tid, prev_comm, prev_prio, prev_state, next_tid, next_comm, next_prio } => {
                check("prev_tid", Some(prev_tid) == by_name_i(&["prev_tid", "prev_pid"]));
                check("next_tid", Some(next_tid) == by_name_i(&["next_tid", "next_pid"]));
                check("prev_prio", Some(prev_prio) == by_name_i(&["prev_prio"]));
                check("next_prio", Some(next_prio) == by_name_i(&["next_prio"]));
                check("prev_state", Some(prev_state) == by_name_i(&["prev_state"]));
                check("prev_comm", prev_comm == by_name_s("prev_comm"));
                check("next_comm", next_comm == by_name_s("next_comm"));
            }
            Kind::SchedWaking { tid, comm, prio, target_cpu } | Kind::SchedWakeup { tid, comm, prio, target_cpu } => {
                check("tid", Some(tid) == by_name_i(&["tid", "pid"]));
                check("comm", comm == by_name_s("comm"));
                check("prio", Some(prio) == by_name_i(&["prio"]));
                check("target_cpu", target_cpu.map(i64::from) == by_name_i(&["target_cpu"]));
            }
            Kind::ProcessFork { parent_tid, child_tid, child_comm, .. } => {
                check("parent_tid", Some(parent_tid) == by_name_i(&["parent_tid", "parent_pid"]));
                check("child_tid", Some(child_tid) == by_name_i(&["child_tid", "child_pid"]));
                check("child_comm", child_comm == by_name_s("child_comm"));
            }
            Kind::SyscallEntry { name, .. } => {
                *st.syscalls.entry(name.to_string()).or_default() += 1;
            }
            Kind::SyscallExit { name, ret, .. } => {
                check("ret", Some(ret) == by_name_i(&["ret"]));
                st.unnamed_exits += name.is_none() as u64;
            }
            Kind::StatedumpProcess { tid, name, .. } => {
                check("tid", Some(tid) == by_name_i(&["tid"]));
                check("name", name == by_name_s("name"));
            }
            _ => {}
        }
    }

    fn merge(&self, mut a: Counts, b: Counts) -> Counts {
        for (k, v) in b.kinds {
            *a.kinds.entry(k).or_default() += v;
        }
        for (k, v) in b.cpus {
            *a.cpus.entry(k).or_default() += v;
        }
        for (k, v) in b.syscalls {
            *a.syscalls.entry(k).or_default() += v;
        }
        a.not_kernel += b.not_kernel;
        a.with_tid += b.with_tid;
        a.unnamed_exits += b.unnamed_exits;
        a.mismatches.extend(b.mismatches);
        a
    }

    fn finish(&self, s: Counts) -> Counts {
        s
    }
}

fn census(set: &TraceSet) -> Counts {
    let map = KernelMap::new(set);
    let c = Engine::new(set, &Options { threads: 2, chunk_size: 1 }).run(&Census { map: &map }).expect("run");
    assert!(c.mismatches.is_empty(), "{:?}", c.mismatches);
    c
}

fn n(c: &Counts, kind: &str) -> u64 {
    c.kinds.get(kind).copied().unwrap_or(0)
}

#[test]
fn lttng_modern_many_threads() {
    let Some(set) = fixture("tracecompass/many-threads") else { return };
    let c = census(&set);
    assert_eq!(c.not_kernel, 0);
    assert_eq!(n(&c, "SchedSwitch"), 28325);
    assert_eq!(n(&c, "SchedWaking"), 6743);
    assert_eq!(n(&c, "SchedWakeup"), 6743);
    assert_eq!(n(&c, "ProcessFork"), 8003);
    assert_eq!(n(&c, "ProcessExit"), 8003);
    assert_eq!(n(&c, "ProcessFree"), 7639);
    assert_eq!(n(&c, "SoftirqRaise"), 6042);
    assert_eq!(n(&c, "SoftirqEntry"), 6042);
    assert_eq!(n(&c, "SoftirqExit"), 6042);
    assert_eq!(n(&c, "IrqHandlerEntry"), 153);
    assert_eq!(n(&c, "StatedumpProcess"), 581);
    assert_eq!(n(&c, "SyscallEntry"), 78085);
    assert_eq!(n(&c, "SyscallExit"), 78086);
    assert_eq!(c.unnamed_exits, 0);
    assert_eq!(c.syscalls.get("open"), Some(&8192));
    assert_eq!(c.syscalls.get("newfstat"), Some(&134));
    assert_eq!(c.syscalls.get("unknown"), Some(&6));
    assert_eq!(c.with_tid, 0, "many-threads has no tid context");
}

#[test]
fn lttng_old_bug446190() {
    let Some(set) = fixture("tracecompass/bug446190") else { return };
    let c = census(&set);
    assert_eq!(n(&c, "SchedSwitch"), 1052);
    assert_eq!(n(&c, "SchedWakeup"), 566);
    assert_eq!(n(&c, "SchedMigrate"), 34);
    assert_eq!(n(&c, "IrqHandlerEntry"), 1357);
    assert_eq!(n(&c, "IrqHandlerExit"), 1357);
    assert_eq!(n(&c, "SoftirqEntry"), 893);
    assert_eq!(n(&c, "HrtimerExpireEntry"), 287);
    assert_eq!(n(&c, "StatedumpFd"), 618);
    assert_eq!(n(&c, "StatedumpProcess"), 204);
    assert_eq!(n(&c, "ProcessFree"), 17);
    assert_eq!(n(&c, "SyscallEntry"), 1817);
    assert_eq!(n(&c, "SyscallExit"), 1811);
    assert_eq!(c.unnamed_exits, 1811, "exit_syscall does not name its call");
    assert_eq!(c.syscalls.get("ioctl"), Some(&340));
    assert_eq!(c.syscalls.get("arm_fadvise64_64"), Some(&88));
    assert_eq!(c.cpus.len(), 4);
}

#[test]
fn perf_taskset2() {
    let Some(set) = fixture("tracecompass/perf-taskset2") else { return };
    let c = census(&set);
    assert_eq!(c.not_kernel, 0);
    assert_eq!(n(&c, "SchedSwitch"), 562);
    assert_eq!(n(&c, "SchedWakeup"), 346);
    assert_eq!(n(&c, "SchedMigrate"), 4);
    assert_eq!(n(&c, "ProcessExec"), 2);
    assert_eq!(n(&c, "ProcessExit"), 1);
    assert_eq!(n(&c, "Other"), 585, "sched_stat_runtime");
    let total: u64 = c.kinds.values().sum();
    assert_eq!(c.with_tid, total, "perf_tid on every event");
    assert!(c.cpus.contains_key(&0) && c.cpus.contains_key(&3), "{:?}", c.cpus);
}

#[test]
fn user_space_traces_have_no_kernel_events() {
    let Some(set) = fixture("generated/lttng-ust-2.13-libc-wrapper") else { return };
    let map = KernelMap::new(&set);
    assert!(!map.has_kernel_events());
    let c = Engine::new(&set, &Options::default()).run(&Census { map: &map }).expect("run");
    assert!(c.kinds.is_empty());
}

#[test]
fn synth_traces_decode() {
    let dir = std::env::temp_dir().join(format!("tracelens-kernel-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    tracelens_synth::generate(&dir, &tracelens_synth::Options { cpus: 3, threads: 8, events: 20_000, seed: 7, packet_size: 4096 }).unwrap();
    let set = TraceSet::open(&[&dir]).unwrap();
    let c = census(&set);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(n(&c, "SchedSwitch") > 100);
    assert!(n(&c, "SyscallEntry") > 100);
    assert_eq!(c.cpus.len(), 3);
}

#[test]
fn syscall_table() {
    assert_eq!(syscall_name(0), Some("read"));
    assert_eq!(syscall_name(5), Some("newfstat"));
    assert_eq!(syscall_name(56), Some("clone"));
    assert_eq!(syscall_name(202), Some("futex"));
    assert_eq!(syscall_name(231), Some("exit_group"));
    assert_eq!(syscall_name(257), Some("openat"));
    assert_eq!(syscall_name(334), Some("rseq"));
    assert_eq!(syscall_name(335), None);
    assert_eq!(syscall_name(435), Some("clone3"));
    assert_eq!(syscall_name(-1), None);
    assert_eq!(text(b"ab"), "ab");
    assert_eq!(CpuThreads::default().get(3), None);
}
