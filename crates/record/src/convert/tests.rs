//! Conversion tests: pages built in memory, converted, read back.

use super::*;
use crate::format::EventFormat;
use crate::ringbuf::build::{record, PageBuilder};
use crate::ringbuf::Missed;
use crate::statedump::ThreadState;
use tracelens_ctf::{Item, Trace};

const COMMON: &str = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;
";

fn fmt(system: &str, name: &str, id: u16, fields: &[(&str, usize, usize, bool)]) -> EventFormat {
    let mut t = format!("name: {name}\nID: {id}\nformat:\n{COMMON}\n");
    for (decl, off, size, signed) in fields {
        t += &format!("\tfield:{decl};\toffset:{off};\tsize:{size};\tsigned:{};\n", *signed as u8);
    }
    t += "\nprint fmt: \"\"\n";
    EventFormat::parse(system, &t, Path::new(name)).unwrap()
}

fn formats() -> Vec<EventFormat> {
    vec![
        fmt(
            "sched",
            "sched_switch",
            10,
            &[
                ("char prev_comm[16]", 8, 16, false),
                ("pid_t prev_pid", 24, 4, true),
                ("int prev_prio", 28, 4, true),
                ("long prev_state", 32, 8, true),
                ("char next_comm[16]", 40, 16, false),
                ("pid_t next_pid", 56, 4, true),
                ("int next_prio", 60, 4, true),
            ],
        ),
        fmt("syscalls", "sys_enter_read", 20, &[("int __syscall_nr", 8, 4, true), ("unsigned int fd", 16, 8, false), ("char * buf", 24, 8, false), ("size_t count", 32, 8, false)]),
        fmt("syscalls", "sys_exit_read", 21, &[("int __syscall_nr", 8, 4, true), ("long ret", 16, 8, true)]),
        fmt("syscalls", "sys_enter_write", 22, &[("int __syscall_nr", 8, 4, true), ("unsigned int fd", 16, 8, false), ("const char * buf", 24, 8, false), ("size_t count", 32, 8, false)]),
        fmt("syscalls", "sys_enter_openat", 24, &[("int __syscall_nr", 8, 4, true), ("int dfd", 16, 8, false), ("const char * filename", 24, 8, false), ("int flags", 32, 8, false), ("umode_t mode", 40, 8, false)]),
        fmt("task", "task_newtask", 30, &[("pid_t pid", 8, 4, true), ("char comm[16]", 12, 16, false), ("u64 clone_flags", 32, 8, false), ("short oom_score_adj", 40, 2, true)]),
        fmt("irq", "irq_handler_entry", 40, &[("int irq", 8, 4, true), ("__data_loc char[] name", 12, 4, false)]),
        fmt("kmem", "mm_page_alloc", 50, &[("unsigned long pfn", 8, 8, false), ("unsigned int order", 16, 4, false), ("char tag[6]", 20, 6, false)]),
    ]
}

fn comm(s: &str) -> [u8; 16] {
    comm16(s.as_bytes())
}

fn switch(prev: (&str, i32), next: (&str, i32)) -> Vec<u8> {
    let mut p = vec![0u8; 56];
    p[0..16].copy_from_slice(&comm(prev.0));
    p[16..20].copy_from_slice(&prev.1.to_ne_bytes());
    p[20..24].copy_from_slice(&120i32.to_ne_bytes());
    p[24..32].copy_from_slice(&1i64.to_ne_bytes());
    p[32..48].copy_from_slice(&comm(next.0));
    p[48..52].copy_from_slice(&next.1.to_ne_bytes());
    p[52..56].copy_from_slice(&100i32.to_ne_bytes());
    record(10, 0, prev.1, &p)
}

fn args(nr: i32, vals: &[u64]) -> Vec<u8> {
    let mut p = vec![0u8; 8];
    p[0..4].copy_from_slice(&nr.to_ne_bytes());
    for v in vals {
        p.extend_from_slice(&v.to_ne_bytes());
    }
    p
}

fn spool_of(pages: Vec<Part>) -> Vec<u8> {
    let mut out = Vec::new();
    for p in pages {
        match p {
            Part::Page(b) => spool::write_page(&mut out, &b).unwrap(),
            Part::Lost(n) => spool::write_lost(&mut out, n).unwrap(),
        }
    }
    out
}

use super::merge::tests::{Fed, Part};

#[test]
fn converts_pages_to_lttng_ctf() {
    let l = PageLayout::default();
    const OWN: i32 = 999;
    // CPU 0: thread 100 makes thread 102 (CLONE_THREAD), switches to it; 102 reads;
    // the recorder's own thread writes (dropped) and takes an interrupt (kept).
    let mut p0 = PageBuilder::new(l, 1_000);
    let mut nt = vec![0u8; 34];
    nt[0..4].copy_from_slice(&102i32.to_ne_bytes());
    nt[4..20].copy_from_slice(&comm("main"));
    nt[24..32].copy_from_slice(&(0x0001_0000u64 | 0x100).to_ne_bytes());
    p0.event(1_010, &record(30, 0, 100, &nt), false);
    p0.event(1_020, &switch(("main", 100), ("main", 102)), false);
    p0.event(1_030, &record(20, 0, 102, &args(0, &[3, 0xdead_0000, 64])), false);
    p0.event(1_070, &record(22, 0, OWN, &args(1, &[1, 0x10, 1])), false);
    let mut irq = vec![0u8; 8];
    irq[0..4].copy_from_slice(&7i32.to_ne_bytes());
    irq[4..8].copy_from_slice(&(((4u32) << 16) | 16).to_ne_bytes());
    irq.extend_from_slice(b"eth0");
    p0.event(1_080, &record(40, 0x08, OWN, &irq), false);
    let page0 = p0.finish(Missed::None, true);
    // CPU 1: 100 writes; 102 (known as a thread of 100 by then) returns from its read;
    // 12 events lost; a thread unknown to everyone opens a file; an event of another
    // kind.
    let mut p1 = PageBuilder::new(l, 1_000);
    p1.event(1_040, &record(22, 0, 100, &args(1, &[1, 0xbeef, 3])), false);
    // 102 migrated: its read returns on CPU 1.
    p1.event(1_045, &record(21, 0, 102, &args(0, &[5])), false);
    let page1 = p1.finish(Missed::None, false);
    let mut p2 = PageBuilder::new(l, 1_050);
    p2.event(1_055, &record(24, 0, 555, &args(257, &[(-100i64) as u64, 0x1234, 0o100, 0o644])), false);
    let mut pa = Vec::new();
    pa.extend_from_slice(&42u64.to_ne_bytes());
    pa.extend_from_slice(&3u32.to_ne_bytes());
    pa.extend_from_slice(b"hi\0\0\0\0");
    p2.event(1_056, &record(50, 0, 555, &pa), true);
    let page2 = p2.finish(Missed::None, true);

    let schema = Schema::build(&formats());
    let mut counts = HashMap::new();
    counts.insert(22u16, 100u64); // the most frequent: syscall_entry_write gets id 0
    let input = ConvertInput {
        layout: l,
        schema,
        statedump: Statedump {
            threads: vec![ThreadState { tid: 100, pid: 100, ppid: 1, name: b"main".to_vec(), kind: 0, status: 5, cpu: 0 }],
            fds: vec![crate::statedump::FdState { pid: 100, fd: 0, flags: 0o2, fmode: 3, filename: b"/dev/pts/0".to_vec() }],
        },
        statedump_ts: 900,
        own_tids: HashSet::from([OWN]),
        recorder: (OWN, OWN),
        info: TraceInfo { uuid: [7; 16], hostname: "box".into(), kernel_release: "6.1".into(), kernel_version: "#1".into(), clock_offset_ns: 1_700_000_000_000_000_000, cpus: 2 },
        counts,
        fallback: HashMap::new(),
        packet_size: 4096,
        ns_inum: 4026531836,
    };
    let dir = std::env::temp_dir().join(format!("tracelens-record-convert-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let s0 = spool_of(vec![Part::Page(page0)]);
    let s1 = spool_of(vec![Part::Page(page1), Part::Lost(12), Part::Page(page2)]);
    let cpus = vec![CpuInput { cpu: 0, spool: &s0[..] }, CpuInput { cpu: 1, spool: &s1[..] }];
    let s = convert(&input, cpus, &dir).unwrap();
    assert_eq!(s.first_problem, None);
    assert_eq!(s.own_dropped, 1);
    assert_eq!(s.discarded, 12);
    // 4 statedump events + switch, read entry, irq (cpu 0) + write, read exit, openat,
    // page alloc (cpu 1).
    assert_eq!(s.events, 4 + 3 + 4);

    let trace = Trace::open(&dir).unwrap();
    // The counted class first, then the hot ones (sched_switch, irq_handler_entry,
    // syscall_entry_read...), then the state dump and the rest in the schema's order.
    let id_of = |name: &str| trace.class.stream(0).unwrap().events.iter().find(|e| e.name == name).map(|e| e.id);
    assert_eq!(id_of("syscall_entry_write"), Some(0));
    assert_eq!(id_of("sched_switch"), Some(1));
    assert_eq!(id_of("lttng_statedump_start"), Some(6));
    let mut seen = Vec::new();
    for i in 0..trace.streams.len() {
        let mut c = trace.cursor(i);
        while let Some(item) = c.advance().unwrap() {
            if item != Item::Event {
                continue;
            }
            let ev = c.event().unwrap();
            let ctx = |n: &str| ev.common_context.get(n).unwrap();
            let p = |n: &str| ev.payload.get(n).unwrap_or_else(|| panic!("{} has no {n}", ev.name()));
            let line = match ev.name() {
                "sched_switch" => format!("switch {} {} {}", p("prev_tid").as_i64().unwrap(), p("next_tid").as_i64().unwrap(), p("next_prio").as_i64().unwrap()),
                "syscall_entry_read" => format!("read {} {:x}", p("fd").as_i64().unwrap(), p("buf").as_u64().unwrap()),
                "syscall_exit_read" => format!("read-exit {} {:x}", p("ret").as_i64().unwrap(), p("buf").as_u64().unwrap()),
                "syscall_entry_write" => format!("write {} {}", p("fd").as_i64().unwrap(), p("count").as_i64().unwrap()),
                "syscall_entry_openat" => format!("openat {} {:?} {:o}", p("dfd").as_i64().unwrap(), p("filename").as_str().unwrap(), p("mode").as_i64().unwrap()),
                "irq_handler_entry" => format!("irq {} {}", p("irq").as_i64().unwrap(), p("name").as_str().unwrap()),
                "mm_page_alloc" => format!("page {} {}", p("pfn").as_u64().unwrap(), p("tag").as_str().unwrap()),
                n => n.to_string(),
            };
            seen.push(format!(
                "{} cpu{} {} [{} {} {}]",
                ev.ns.unwrap() - 1_700_000_000_000_000_000,
                i,
                line,
                ctx("tid").as_i64().unwrap(),
                ctx("pid").as_i64().unwrap(),
                ctx("procname").as_str().unwrap()
            ));
        }
    }
    let want = [
        "900 cpu0 lttng_statedump_start [999 999 ]",
        "900 cpu0 lttng_statedump_process_state [999 999 ]",
        "900 cpu0 lttng_statedump_file_descriptor [999 999 ]",
        "900 cpu0 lttng_statedump_end [999 999 ]",
        "1020 cpu0 switch 100 102 0 [100 100 main]",
        "1030 cpu0 read 3 dead0000 [102 100 main]",
        "1080 cpu0 irq 7 eth0 [999 999 ]",
        "1040 cpu1 write 1 3 [100 100 main]",
        "1045 cpu1 read-exit 5 dead0000 [102 100 main]",
        "1055 cpu1 openat -100 \"\" 644 [555 555 ]",
        "1056 cpu1 page 42 hi [555 555 ]",
    ];
    assert_eq!(seen, want);
    // babeltrace2, when installed, reads the same events, and the discarded ones.
    if let Ok(o) = std::process::Command::new("babeltrace2").arg(&dir).output() {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(o.stdout.iter().filter(|&&b| b == b'\n').count(), want.len());
        assert!(String::from_utf8_lossy(&o.stderr).contains("discarded 12 events"), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn small_input(formats: &[EventFormat]) -> ConvertInput {
    ConvertInput {
        layout: PageLayout::default(),
        schema: Schema::build(formats),
        statedump: Statedump::default(),
        statedump_ts: 900,
        own_tids: HashSet::new(),
        recorder: (999, 999),
        info: TraceInfo { uuid: [1; 16], hostname: "box".into(), kernel_release: "6.1".into(), kernel_version: "#1".into(), clock_offset_ns: 0, cpus: 1 },
        counts: HashMap::new(),
        fallback: HashMap::new(),
        packet_size: 4096,
        ns_inum: 0,
    }
}

/// What each stream of the trace in `dir` holds, in order: `NS NAME` for an event,
/// `discarded N` for discarded events.
fn read_back(dir: &Path) -> Vec<Vec<String>> {
    let trace = Trace::open(dir).unwrap();
    (0..trace.streams.len())
        .map(|i| {
            let mut c = trace.cursor(i);
            let mut out = Vec::new();
            while let Some(item) = c.advance().unwrap() {
                match item {
                    Item::Event => {
                        let ev = c.event().unwrap();
                        out.push(format!("{} {}", ev.ns.unwrap(), ev.name()));
                    }
                    Item::DiscardedEvents { count, .. } => out.push(format!("discarded {count}")),
                    _ => {}
                }
            }
            out
        })
        .collect()
}

#[test]
fn unrecorded_switches_and_missed_pages_are_discarded_events() {
    let mut f = formats();
    f.push(fmt("sched", "sched_process_exec", 60, &[("__data_loc char[] filename", 8, 4, false), ("pid_t pid", 12, 4, true), ("pid_t old_pid", 16, 4, true)]));
    let input = small_input(&f);
    let l = PageLayout::default();
    // CPU 0: 1 -> 2; 2 -> 3 is not recorded (a hidden thread 2); 3 -> 4: one discarded
    // event before it. Then 4 -> 5 and thread 5 (not the leader) runs execve and
    // becomes 7: 7 -> 1 is no gap. Then 1 -> 8; events lost (a stats count); 9 -> 1
    // is explained by them: no more discarded.
    let mut p = PageBuilder::new(l, 1_000);
    p.event(1_010, &switch(("a", 1), ("b", 2)), false);
    p.event(1_020, &switch(("c", 3), ("d", 4)), false);
    p.event(1_030, &switch(("d", 4), ("e", 5)), false);
    let mut ex = vec![0u8; 12];
    ex[0..4].copy_from_slice(&((4u32 << 16) | 12).to_ne_bytes());
    ex[4..8].copy_from_slice(&7i32.to_ne_bytes());
    ex[8..12].copy_from_slice(&5i32.to_ne_bytes());
    ex.extend_from_slice(b"/x\0\0");
    p.event(1_040, &record(60, 0, 7, &ex), false);
    p.event(1_050, &switch(("e", 7), ("a", 1)), false);
    p.event(1_060, &switch(("a", 1), ("h", 8)), false);
    let page_a = p.finish(Missed::None, true);
    let mut p = PageBuilder::new(l, 1_065);
    p.event(1_070, &switch(("i", 9), ("a", 1)), false);
    let page_b = p.finish(Missed::None, true);
    // A page whose header says 5 events were lost before it; then 1 -> 2 is explained.
    let mut p = PageBuilder::new(l, 1_075);
    p.event(1_080, &switch(("b", 2), ("c", 3)), false);
    p.event(1_090, &switch(("c", 3), ("a", 1)), false);
    let page_c = p.finish(Missed::Count(5), true);
    let spool = spool_of(vec![Part::Page(page_a), Part::Lost(3), Part::Page(page_b), Part::Page(page_c)]);
    let dir = std::env::temp_dir().join(format!("tracelens-record-gaps-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let s = convert(&input, vec![CpuInput { cpu: 0, spool: &spool[..] }], &dir).unwrap();
    assert_eq!(s.first_problem, None);
    assert_eq!((s.unrecorded_switches, s.unrecorded_switch_tids.clone()), (1, vec![2]));
    assert_eq!(s.discarded, 1 + 3 + 5);
    let streams = read_back(&dir);
    let evs: Vec<&str> = streams[0].iter().map(String::as_str).filter(|e| !e.contains("statedump")).collect();
    assert_eq!(
        evs,
        [
            "1010 sched_switch",
            "discarded 1",
            "1020 sched_switch",
            "1030 sched_switch",
            "1040 sched_process_exec",
            "1050 sched_switch",
            "1060 sched_switch",
            "discarded 3",
            "1070 sched_switch",
            "discarded 5",
            "1080 sched_switch",
            "1090 sched_switch",
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ids_by_sample_count_then_hot_list_then_schema_order() {
    let schema = Schema::build(&formats());
    let name_ids = |counts: &HashMap<u16, u64>| {
        let ids = class_ids(&schema, counts);
        let mut v: Vec<(u64, &str)> = ids.iter().zip(&schema.classes).map(|(&id, c)| (id, c.name.as_str())).collect();
        v.sort();
        v.into_iter().map(|(_, n)| n).collect::<Vec<_>>()
    };
    // Nothing counted: the hot classes the schema has, in HOT_CLASSES order, then the
    // state dump and the rest in the schema's order.
    assert_eq!(
        name_ids(&HashMap::new()),
        [
            "sched_switch",
            "irq_handler_entry",
            "syscall_entry_read",
            "syscall_exit_read",
            "syscall_entry_write",
            "syscall_entry_openat",
            "lttng_statedump_start",
            "lttng_statedump_end",
            "lttng_statedump_process_state",
            "lttng_statedump_file_descriptor",
            "mm_page_alloc",
        ]
    );
    // Counted classes first, most frequent first (ties: hot order); task_newtask (30)
    // is no class; unknown types count for nothing.
    let counts = HashMap::from([(50u16, 7u64), (22, 100), (10, 7), (30, 1000), (999, 5000)]);
    assert_eq!(
        name_ids(&counts),
        [
            "syscall_entry_write",
            "sched_switch",
            "mm_page_alloc",
            "irq_handler_entry",
            "syscall_entry_read",
            "syscall_exit_read",
            "syscall_entry_openat",
            "lttng_statedump_start",
            "lttng_statedump_end",
            "lttng_statedump_process_state",
            "lttng_statedump_file_descriptor",
        ]
    );
    // Ids are 0..n, each once.
    let mut ids = class_ids(&schema, &counts);
    ids.sort_unstable();
    assert_eq!(ids, (0..schema.classes.len() as u64).collect::<Vec<_>>());
}

#[test]
fn hot_classes_fit_the_compact_header() {
    assert!(HOT_CLASSES.len() <= 31, "only ids 0 to 30 have the compact header");
    let unique: HashSet<&str> = HOT_CLASSES.iter().copied().collect();
    assert_eq!(unique.len(), HOT_CLASSES.len());
    let names: HashSet<&str> = lttng::SPECS.iter().map(|s| s.lttng()).collect();
    for h in HOT_CLASSES {
        assert!(names.contains(h) || h.starts_with("syscall_entry_") || h.starts_with("syscall_exit_"), "{h} is no class the schema makes");
    }
}

#[test]
fn released_in_steps_or_at_once_the_trace_is_the_same() {
    let l = PageLayout::default();
    let input = small_input(&formats());
    let mut p = PageBuilder::new(l, 1_000);
    p.event(1_010, &switch(("a", 1), ("b", 2)), false);
    p.event(1_030, &record(20, 0, 2, &args(0, &[3, 0xdead_0000, 64])), false);
    let a0 = p.finish(Missed::None, true);
    let mut p = PageBuilder::new(l, 1_040);
    p.event(1_050, &record(21, 0, 2, &args(0, &[5])), false);
    p.event(1_060, &switch(("b", 2), ("a", 1)), false);
    let a1 = p.finish(Missed::None, true);
    let mut p = PageBuilder::new(l, 1_000);
    p.event(1_020, &record(22, 0, 7, &args(1, &[1, 0x10, 1])), false);
    p.event(1_045, &switch(("c", 7), ("d", 8)), false);
    let b0 = p.finish(Missed::None, true);
    let cpu0 = vec![Part::Page(a0.clone()), Part::Lost(4), Part::Page(a1.clone())];
    let cpu1 = vec![Part::Page(b0.clone())];

    let at_once = std::env::temp_dir().join(format!("tracelens-record-at-once-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&at_once);
    let (s0, s1) = (spool_of(vec![Part::Page(a0), Part::Lost(4), Part::Page(a1)]), spool_of(vec![Part::Page(b0)]));
    let whole = convert(&input, vec![CpuInput { cpu: 0, spool: &s0[..] }, CpuInput { cpu: 1, spool: &s1[..] }], &at_once).unwrap();

    let stepped = std::env::temp_dir().join(format!("tracelens-record-stepped-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&stepped);
    let mut conv = Converter::create(&input, &[0, 1], &stepped).unwrap();
    let mut merge = Merge::new(l, vec![(0, Fed { parts: cpu0, next: 0, limit: 0 }), (1, Fed { parts: cpu1, next: 0, limit: 0 })], input.statedump_ts);
    // (CPU 0 records, CPU 1 records, watermark, events then out in all)
    for (l0, l1, w, out) in [(1, 0, 1_015, 1), (1, 1, 1_015, 1), (1, 1, 1_035, 3), (3, 1, 1_055, 5), (3, 1, u64::MAX, 6)] {
        merge.records_mut(0).limit = l0;
        merge.records_mut(1).limit = l1;
        merge.release(w, u64::MAX, &mut conv).unwrap();
        assert_eq!(conv.events(), 2 + out, "after the watermark {w}");
    }
    let read = merge.finish(&mut conv).unwrap();
    let stepwise = conv.finish(read).unwrap();
    assert_eq!(stepwise, whole);
    assert_eq!(whole.discarded, 4);
    assert_eq!(read_back(&stepped), read_back(&at_once));
    let _ = std::fs::remove_dir_all(&at_once);
    let _ = std::fs::remove_dir_all(&stepped);
}

