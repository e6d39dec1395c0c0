//! Recording Linux kernel events through a tracefs instance of our own, written as CTF in
//! LTTng's kernel layout, so that the analyses read our recordings and LTTng's with one code
//! path.
//!
//! * **In:** what to record ([`RecordOptions`]: a command to start, a process to attach to,
//!   or the whole system; event groups; user stacks). From the kernel: each CPU's raw
//!   ring-buffer pages (`per_cpu/cpuN/trace_pipe_raw` of an instance `tracelens-<pid>`, never
//!   the top-level buffer, with `trace_clock=mono`), the events' `format` files, `/proc` for the
//!   state dump of threads and open files, and `perf_event_open` samples for stacks.
//! * **Through:** pages are saved to a spool while the target runs; a converter thread merges
//!   the CPUs' events in time order up to a watermark ([`convert::merge`]) and maps them to
//!   LTTng's event and field names ([`lttng`]) — `{tid, pid, procname}` in every event's
//!   context, lost events as CTF discarded-event counts, the recorder's own threads left out.
//! * **Out:** a CTF trace directory written with `tracelens_ctf::write` in the layout declared
//!   once in `tracelens_ctf::lttng`: `metadata`, one stream per CPU (`channel0_N`) and its
//!   LTTng index, and with stacks a second trace `OUTPUT/stacks` ([`stacks`]); a [`Summary`] of
//!   what was recorded, lost and converted. When the target ends (or on
//!   [`RecordOptions::stop`], e.g. Ctrl-C through [`stop_on_signals`]) the kernel's tracing
//!   state is restored and the last pages are converted.
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
mod mmap;
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
pub use metadata::{trace_class, TraceInfo};
pub use session::{record, resolve_events, Progress, RecordOptions, Summary, Target};
pub use signals::{last_signal, stop_on_signals};
