//! Recording Linux kernel events through a tracefs instance of our own, written as CTF in
//! LTTng's kernel layout, so that the analyses read our recordings and LTTng's with one code
//! path.
//!
//! [`record`] sets up an instance `tracelens-<pid>` (never the top-level buffer) with
//! `trace_clock=mono`, enables the selected events, starts the target, and saves each CPU's
//! raw ring-buffer pages (`per_cpu/cpuN/trace_pipe_raw`) to a spool while it runs, which a
//! converter thread turns into CTF as it grows: one CTF stream per CPU, LTTng's event and
//! field names ([`lttng`]), `{tid, pid, procname}` in every event's context, a state dump of
//! threads and open files at the start, lost events as CTF discarded-event counts. The
//! recorder's own threads are left out. When the target ends (or on [`RecordOptions::stop`],
//! e.g. Ctrl-C through [`stop_on_signals`]) it restores the kernel's tracing state and
//! converts the last pages.
//!
//! ```no_run
//! use tracelens_record::{record, RecordOptions, Target};
//! let opts = RecordOptions::new("/tmp/rec", Target::Command(vec!["ls".into()]));
//! let summary = record(&opts, &mut |p| eprintln!("{} events", p.events))?;
//! println!("{} events in {}", summary.convert.events, summary.trace_dir.display());
//! # Ok::<(), tracelens_record::Error>(())
//! ```
//!
//! The pieces are public for tools and tests: [`tracefs`] (instances, stale-instance
//! removal), [`format`](mod@format) (event `format` files, `header_page`), [`ringbuf`] (page parsing),
//! [`spool`] (the segmented spool), [`convert`](mod@convert) (the watermark merge, pages to
//! CTF).
#![deny(missing_docs)]

mod command;
pub mod convert;
mod error;
pub mod format;
mod limits;
mod live;
pub mod lttng;
mod metadata;
pub mod ringbuf;
mod session;
mod signals;
pub mod spool;
pub mod stacks;
pub mod statedump;
pub mod tracefs;
pub mod uprobe;

pub use command::check_program;
pub use error::{Error, Result};
pub use limits::CutShort;
pub use metadata::{payload_type, trace_class, TraceInfo};
pub use session::{record, resolve_events, Progress, RecordOptions, Summary, Target};
pub use signals::{last_signal, stop_on_signals};
