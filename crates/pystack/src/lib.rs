//! Reading the Python call stack of a thread of a running CPython (3.8 to 3.13) from another
//! process: function (qualified) names, files and lines, without any code in the target.
//!
//! `tracelens record --python` uses it at each stack sample: [`Interpreter::attach`] finds
//! CPython in the process (the mapped `python3.X` or `libpython3.X.so` that defines
//! `_PyRuntime`), and [`Interpreter::stack`] follows the thread's frame chain with
//! `process_vm_readv(2)`, using the version's struct layout ([`Layout`]) and decoding its
//! line table ([`line_of`]). Each frame says whether it is the outermost Python frame of one
//! C-level evaluation (`_PyEval_EvalFrameDefault` call), so that a symbolizer can put the
//! Python frames in place of the native evaluation frames of the same sample.
//!
//! Why from outside rather than by a module loaded into the program (the approach of the
//! 2015 paper's PyPerf, section "Architecture"): see `docs/python-stacks.md`.
//!
//! ```no_run
//! let pid = 1234;
//! if let Some(mut py) = tracelens_pystack::Interpreter::attach(pid)? {
//!     let mut frames = Vec::new();
//!     py.stack(pid, &mut frames)?; // the main thread
//!     for f in &frames {
//!         println!("{} ({}:{})", f.code.name, f.code.file, f.line.unwrap_or(0));
//!     }
//! }
//! # Ok::<(), tracelens_pystack::Error>(())
//! ```

#![deny(missing_docs)]

mod error;
mod image;
mod layout;
mod lines;
mod maps;
mod memory;
mod walk;

pub use error::{Error, Result};
pub use image::{find, find_in, looks_like_python, python_mappings, version_from_name, FileMapping, Image};
pub use layout::{Layout, LineTable, Version};
pub use lines::line_of;
pub use maps::{maps_lines, MapsLine};
pub use memory::{Bytes, Memory, ProcessMemory};
pub use walk::{Code, Frame, Interpreter, ThreadState};
