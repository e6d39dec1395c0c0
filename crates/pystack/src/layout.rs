//! Where CPython keeps what a stack walk reads, per minor version (3.8 to 3.13, 64-bit
//! release builds): offsets into `_PyRuntimeState`, `PyInterpreterState`, `PyThreadState`,
//! the frames, code objects, `bytes` and `str` objects.
//!
//! The numbers are `offsetof` values compiled against each version's own headers
//! (`Py_BUILD_CORE`, `internal/pycore_*.h`) on x86_64 (`bench/python-offsets.c` prints
//! them); aarch64 has the same LP64 layout. These structures are private to CPython and may
//! change between minor versions, never within one (the stable ABI of a release series keeps
//! its build's struct layouts).

/// A CPython version, major and minor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// Always 3.
    pub major: u8,
    /// 8 to 13 are read.
    pub minor: u8,
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// How a version keeps its frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FrameModel {
    /// 3.8 to 3.10: `PyFrameObject`s linked by `f_back`, one C-level evaluation each;
    /// `f_lasti` is a byte offset (3.8, 3.9: lines in `co_lnotab`) or an instruction index
    /// (3.10: lines in the PEP 626 `co_linetable`).
    Objects,
    /// 3.11 and later: `_PyInterpreterFrame`s linked by `previous`, with the instruction
    /// pointer, several frames per C-level evaluation; lines in the location table.
    Interpreter,
}

/// Line-number table formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineTable {
    /// 3.8, 3.9: `co_lnotab`, (byte increment, signed line increment) pairs.
    Lnotab,
    /// 3.10: PEP 626 `co_linetable`, (byte span, signed line delta or -128) pairs.
    Pep626,
    /// 3.11 and later: the location table (varint entries in code units).
    Locations,
}

/// What a stack walk reads, for one version (offsets in bytes).
#[derive(Clone, Debug)]
pub struct Layout {
    pub(crate) version: Version,
    pub(crate) model: FrameModel,
    pub(crate) lines: LineTable,
    /// `_PyRuntimeState.interpreters.head`.
    pub(crate) runtime_interpreters_head: u64,
    /// `_PyRuntimeState.main_thread` (a `pthread_t`).
    pub(crate) runtime_main_thread: u64,
    /// `PyInterpreterState.next`.
    pub(crate) interp_next: u64,
    /// `PyInterpreterState.tstate_head` (`threads.head` from 3.11).
    pub(crate) interp_tstate_head: u64,
    /// `PyThreadState.next`.
    pub(crate) tstate_next: u64,
    /// `PyThreadState.thread_id` (a `pthread_t`).
    pub(crate) tstate_thread_id: u64,
    /// `PyThreadState.native_thread_id` (3.11 and later).
    pub(crate) tstate_native_thread_id: Option<u64>,
    /// The current frame: `tstate->frame` (3.8-3.10), `tstate->cframe` then
    /// `cframe->current_frame` (3.11, 3.12), `tstate->current_frame` (3.13).
    pub(crate) tstate_frame: u64,
    /// `_PyCFrame.current_frame`, when the frame is reached through `tstate->cframe`.
    pub(crate) cframe_current_frame: Option<u64>,
    /// The caller: `f_back` or `previous`.
    pub(crate) frame_back: u64,
    /// The code object: `f_code`, `f_executable` (3.13).
    pub(crate) frame_code: u64,
    /// `f_lasti` (an `int`, 3.8-3.10), `prev_instr` (3.11, 3.12: the instruction that
    /// runs or ran last), `instr_ptr` (3.13: the instruction that runs); CPython gives the
    /// line of the instruction either points at.
    pub(crate) frame_instr: u64,
    /// `_PyInterpreterFrame.owner` (3.11 and later).
    pub(crate) frame_owner: Option<u64>,
    /// `_PyInterpreterFrame.is_entry` (3.11 only).
    pub(crate) frame_is_entry: Option<u64>,
    /// Bytes of a frame to read (enough for every field above).
    pub(crate) frame_size: usize,
    /// `co_name`, `co_qualname` (3.11 and later), `co_filename`, `co_firstlineno` (int),
    /// `co_lnotab` or `co_linetable` (bytes), `co_code_adaptive` (3.11 and later), and
    /// `_co_firsttraceable` (int, 3.11 and later).
    pub(crate) code_name: u64,
    pub(crate) code_qualname: Option<u64>,
    pub(crate) code_filename: u64,
    pub(crate) code_firstlineno: u64,
    pub(crate) code_linetable: u64,
    pub(crate) code_adaptive: Option<u64>,
    pub(crate) code_firsttraceable: Option<u64>,
    /// Bytes of a code object's head to read.
    pub(crate) code_size: usize,
    /// Where a compact ASCII `str`'s characters start (`sizeof(PyASCIIObject)`), and those
    /// of other compact strings (`sizeof(PyCompactUnicodeObject)`).
    pub(crate) unicode_ascii_data: u64,
    pub(crate) unicode_compact_data: u64,
}

/// `FRAME_OWNED_BY_GENERATOR`.
pub(crate) const OWNED_BY_GENERATOR: u8 = 1;
/// `FRAME_OWNED_BY_CSTACK` (3.12 and later): the shim frame that each C-level evaluation
/// pushes first.
pub(crate) const OWNED_BY_CSTACK: u8 = 3;
/// `PyVarObject.ob_size` (a `bytes`' or `str`'s length), `PyObject.ob_type`,
/// `PyBytesObject.ob_sval`, `PyASCIIObject.state`: the same in every version read.
pub(crate) const OB_SIZE: u64 = 16;
pub(crate) const OB_TYPE: u64 = 8;
pub(crate) const BYTES_DATA: u64 = 32;
pub(crate) const UNICODE_STATE: u64 = 32;

const fn objects(minor: u8, lasti: u64, linetable: u64, lines: LineTable) -> Layout {
    Layout {
        version: Version { major: 3, minor },
        model: FrameModel::Objects,
        lines,
        runtime_interpreters_head: 32,
        runtime_main_thread: 72,
        interp_next: 0,
        interp_tstate_head: 8,
        tstate_next: 8,
        tstate_thread_id: 176,
        tstate_native_thread_id: None,
        tstate_frame: 24,
        cframe_current_frame: None,
        frame_back: 24,
        frame_code: 32,
        frame_instr: lasti,
        frame_owner: None,
        frame_is_entry: None,
        frame_size: 112,
        code_name: 112,
        code_qualname: None,
        code_filename: 104,
        code_firstlineno: 40,
        code_linetable: linetable,
        code_adaptive: None,
        code_firsttraceable: None,
        code_size: 128,
        unicode_ascii_data: 48,
        unicode_compact_data: 72,
    }
}

static LAYOUTS: [Layout; 6] = [
    objects(8, 104, 120, LineTable::Lnotab),
    objects(9, 104, 120, LineTable::Lnotab),
    objects(10, 96, 120, LineTable::Pep626),
    Layout {
        version: Version { major: 3, minor: 11 },
        model: FrameModel::Interpreter,
        lines: LineTable::Locations,
        runtime_interpreters_head: 40,
        runtime_main_thread: 80,
        interp_next: 0,
        interp_tstate_head: 16,
        tstate_next: 8,
        tstate_thread_id: 152,
        tstate_native_thread_id: Some(160),
        tstate_frame: 56,
        cframe_current_frame: Some(8),
        frame_back: 48,
        frame_code: 32,
        frame_instr: 56,
        frame_owner: Some(69),
        frame_is_entry: Some(68),
        frame_size: 72,
        code_name: 120,
        code_qualname: Some(128),
        code_filename: 112,
        code_firstlineno: 72,
        code_linetable: 136,
        code_adaptive: Some(184),
        code_firsttraceable: Some(168),
        code_size: 176,
        unicode_ascii_data: 48,
        unicode_compact_data: 72,
    },
    Layout {
        version: Version { major: 3, minor: 12 },
        model: FrameModel::Interpreter,
        lines: LineTable::Locations,
        runtime_interpreters_head: 40,
        runtime_main_thread: 64,
        interp_next: 0,
        interp_tstate_head: 72,
        tstate_next: 8,
        tstate_thread_id: 136,
        tstate_native_thread_id: Some(144),
        tstate_frame: 56,
        cframe_current_frame: Some(0),
        frame_back: 8,
        frame_code: 0,
        frame_instr: 56,
        frame_owner: Some(70),
        frame_is_entry: None,
        frame_size: 72,
        code_name: 120,
        code_qualname: Some(128),
        code_filename: 112,
        code_firstlineno: 68,
        code_linetable: 136,
        code_adaptive: Some(192),
        code_firsttraceable: Some(176),
        code_size: 184,
        unicode_ascii_data: 40,
        unicode_compact_data: 56,
    },
    Layout {
        version: Version { major: 3, minor: 13 },
        model: FrameModel::Interpreter,
        lines: LineTable::Locations,
        runtime_interpreters_head: 632,
        runtime_main_thread: 656,
        interp_next: 7264,
        interp_tstate_head: 7344,
        tstate_next: 8,
        tstate_thread_id: 152,
        tstate_native_thread_id: Some(160),
        tstate_frame: 72,
        cframe_current_frame: None,
        frame_back: 8,
        frame_code: 0,
        frame_instr: 56,
        frame_owner: Some(70),
        frame_is_entry: None,
        frame_size: 72,
        code_name: 120,
        code_qualname: Some(128),
        code_filename: 112,
        code_firstlineno: 68,
        code_linetable: 136,
        code_adaptive: Some(200),
        code_firsttraceable: Some(184),
        code_size: 192,
        unicode_ascii_data: 40,
        unicode_compact_data: 56,
    },
];

impl Layout {
    /// The layout of `version`, if it is one this crate reads.
    pub fn of(version: Version) -> Option<&'static Layout> {
        LAYOUTS.iter().find(|l| l.version == version)
    }

    /// Every version read.
    pub fn versions() -> impl Iterator<Item = Version> {
        LAYOUTS.iter().map(|l| l.version)
    }

    /// The version.
    pub fn version(&self) -> Version {
        self.version
    }

    /// Its line-number table format.
    pub fn line_table(&self) -> LineTable {
        self.lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cover_their_fields() {
        for l in &LAYOUTS {
            let frame_fields = [Some(l.frame_back), Some(l.frame_code), Some(l.frame_instr), l.frame_owner, l.frame_is_entry];
            for off in frame_fields.into_iter().flatten() {
                assert!((off as usize) + 8 <= l.frame_size || l.frame_owner == Some(off) || l.frame_is_entry == Some(off), "{}: frame field {off}", l.version);
            }
            let code_fields = [Some(l.code_name), l.code_qualname, Some(l.code_filename), Some(l.code_firstlineno), Some(l.code_linetable), l.code_firsttraceable];
            for off in code_fields.into_iter().flatten() {
                assert!((off as usize) + 8 <= l.code_size, "{}: code field {off}", l.version);
            }
            if let Some(a) = l.code_adaptive {
                assert!(a as usize >= l.code_size, "{}: the code starts after the head read", l.version);
            }
        }
        assert_eq!(Layout::versions().count(), 6);
        assert!(Layout::of(Version { major: 3, minor: 7 }).is_none());
    }
}
