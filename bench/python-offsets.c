/* Prints the offsets of the CPython structures a stack walk reads (the numbers of
 * crates/pystack/src/layout.rs), compiled against one version's own headers:
 *
 *   V=3.11.7; M=${V%.*}; INC=~/.pyenv/versions/$V/include/python$M
 *   cc -I$INC -I$INC/internal bench/python-offsets.c -o /tmp/off && /tmp/off
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_frame.h"
#endif
#if PY_VERSION_HEX >= 0x03090000
#include "internal/pycore_runtime.h"
#else
#include "internal/pycore_pystate.h"
#endif
#if PY_VERSION_HEX < 0x030B0000
#include "frameobject.h"
#endif
#if PY_VERSION_HEX >= 0x03090000
#include "internal/pycore_interp.h"
#endif
#define P(name, expr) printf("%s=%zu\n", name, (size_t)(expr))
int main(void) {
  P("runtime.interpreters_head", offsetof(_PyRuntimeState, interpreters.head));
  P("runtime.main_thread", offsetof(_PyRuntimeState, main_thread));
  P("interp.next", offsetof(PyInterpreterState, next));
#if PY_VERSION_HEX >= 0x030B0000
  P("interp.tstate_head", offsetof(PyInterpreterState, threads.head));
#else
  P("interp.tstate_head", offsetof(PyInterpreterState, tstate_head));
#endif
  P("tstate.next", offsetof(PyThreadState, next));
  P("tstate.thread_id", offsetof(PyThreadState, thread_id));
#if PY_VERSION_HEX >= 0x030B0000
  P("tstate.native_thread_id", offsetof(PyThreadState, native_thread_id));
#endif
#if PY_VERSION_HEX >= 0x030D0000
  P("tstate.current_frame", offsetof(PyThreadState, current_frame));
  P("frame.executable", offsetof(_PyInterpreterFrame, f_executable));
  P("frame.instr_ptr", offsetof(_PyInterpreterFrame, instr_ptr));
#elif PY_VERSION_HEX >= 0x030B0000
  P("tstate.cframe", offsetof(PyThreadState, cframe));
  P("cframe.current_frame", offsetof(_PyCFrame, current_frame));
  P("frame.executable", offsetof(_PyInterpreterFrame, f_code));
  P("frame.prev_instr", offsetof(_PyInterpreterFrame, prev_instr));
#else
  P("tstate.frame", offsetof(PyThreadState, frame));
  P("frame.back", offsetof(PyFrameObject, f_back));
  P("frame.code", offsetof(PyFrameObject, f_code));
  P("frame.lasti", offsetof(PyFrameObject, f_lasti));
#endif
#if PY_VERSION_HEX >= 0x030B0000
  P("frame.previous", offsetof(_PyInterpreterFrame, previous));
  P("frame.owner", offsetof(_PyInterpreterFrame, owner));
  P("code.qualname", offsetof(PyCodeObject, co_qualname));
  P("code.code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
#endif
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
  P("frame.is_entry", offsetof(_PyInterpreterFrame, is_entry));
#endif
#if PY_VERSION_HEX >= 0x030B0000
  P("code.firsttraceable", offsetof(PyCodeObject, _co_firsttraceable));
#endif
  P("code.name", offsetof(PyCodeObject, co_name));
  P("code.filename", offsetof(PyCodeObject, co_filename));
  P("code.firstlineno", offsetof(PyCodeObject, co_firstlineno));
#if PY_VERSION_HEX >= 0x030A0000
  P("code.linetable", offsetof(PyCodeObject, co_linetable));
#else
  P("code.lnotab", offsetof(PyCodeObject, co_lnotab));
#endif
  P("bytes.size", offsetof(PyVarObject, ob_size));
  P("bytes.sval", offsetof(PyBytesObject, ob_sval));
  P("unicode.state", offsetof(PyASCIIObject, state));
  P("unicode.ascii_data", sizeof(PyASCIIObject));
  P("unicode.compact_data", sizeof(PyCompactUnicodeObject));
  P("object.type", offsetof(PyObject, ob_type));
  return 0;
}
