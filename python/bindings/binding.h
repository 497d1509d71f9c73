// Shared pieces of the profkit._C binding: status -> exception mapping, the
// owning Result wrapper, and zero-copy column views. Each bind_*() function
// registers one concern's functions on the module (see module.cpp).
#pragma once

#include <pybind11/pybind11.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "profkit/profkit.h"

namespace profkit_py {

namespace py = pybind11;

// Sets the Python exception that matches `status`, carrying pk_last_error()
// (for plain CPython functions, which then return nullptr). `path`: the file
// the failed call was given, for an OSError's filename (nullptr: none).
void set_status_error(pk_status status, const char* path = nullptr);

// Raises that exception (for pybind11 functions).
[[noreturn]] void raise_status(pk_status status, const char* path = nullptr);

inline void check(pk_status status, const char* path = nullptr) {
  if (status != PK_OK) raise_status(status, path);
}

// A path for the C ABI. C strings end at the first NUL, so a Python path
// holding one would name another file: refuse it, as open() does.
inline const char* path_arg(const std::string& path) {
  if (path.find('\0') != std::string::npos) {
    throw py::value_error("embedded null byte in path " + py::repr(py::bytes(path)).cast<std::string>() +
                          ": no file name can hold one");
  }
  return path.c_str();
}

// Text for the C ABI (a name, a metadata key or value). C strings end at the
// first NUL, so the engine would silently keep only what comes before one:
// refuse it instead, naming what was passed (as RecordEvent's names do).
inline const char* text_arg(const std::string& text, const char* what) {
  if (text.find('\0') != std::string::npos) {
    throw py::value_error(std::string(what) + " " + py::repr(py::str(text)).cast<std::string>() +
                          " contains a NUL character, where the C engine's text would end: remove it");
  }
  return text.c_str();
}

// `text` (a str) with each lone surrogate replaced by U+FFFD: a new
// reference, or nullptr with an exception set (out of memory).
//
// Why: a lone surrogate has no UTF-8 form, and Python makes them of bytes
// that are not UTF-8 (os.fsdecode, os.listdir, sys.argv: surrogateescape),
// so a name built from a file name can hold one. Recording must not fail the
// program over a name, and U+FFFD is what the engine's exports show for
// bytes from C that are not UTF-8: a name is recorded whatever it holds
// (only a NUL is refused: the engine's C strings would end there, silently
// losing the rest). Cold: callers come here only when UTF-8 fails.
inline PyObject* without_surrogates(PyObject* text) {
  Py_UCS4* chars = PyUnicode_AsUCS4Copy(text);
  if (chars == nullptr) return nullptr;
  const Py_ssize_t length = PyUnicode_GET_LENGTH(text);
  for (Py_ssize_t i = 0; i < length; ++i) {
    if (chars[i] >= 0xD800 && chars[i] <= 0xDFFF) chars[i] = 0xFFFD;
  }
  PyObject* clean = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, chars, length);
  PyMem_Free(chars);
  return clean;
}

// The UTF-8 of the str `text`, each lone surrogate as U+FFFD
// (without_surrogates), and its length in *size. Valid while *holder lives:
// a new reference to `text`, or to its cleaned copy, for the caller to
// release. nullptr with an exception set when `text` is no str or memory
// runs out (*holder untouched).
inline const char* utf8_replacing_surrogates(PyObject* text, Py_ssize_t* size, PyObject** holder) {
  const char* utf8 = PyUnicode_AsUTF8AndSize(text, size);
  if (utf8 != nullptr) {
    Py_INCREF(text);
    *holder = text;
    return utf8;
  }
  if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return nullptr;
  PyErr_Clear();
  PyObject* clean = without_surrogates(text);
  utf8 = clean != nullptr ? PyUnicode_AsUTF8AndSize(clean, size) : nullptr;
  if (utf8 == nullptr) {
    Py_XDECREF(clean);
    return nullptr;
  }
  *holder = clean;
  return utf8;
}

// A text argument of _C's functions for the engine (a name, an argument
// value, a thread name, a metadata key or value), as UTF-8: a str, lone
// surrogates as U+FFFD (without_surrogates), or bytes as they are (which
// pybind11's std::string took, and which keeps working). Pass `utf8` through
// text_arg(), which refuses a NUL.
struct EngineText {
  std::string utf8;
};

struct ResultDeleter {
  void operator()(pk_result* r) const { pk_result_release(r); }
};

// Owns a pk_result; columns and strings are borrowed from it.
class Result {
 public:
  explicit Result(pk_result* r) : r_(r) {}
  const pk_result* get() const { return r_.get(); }

 private:
  std::unique_ptr<pk_result, ResultDeleter> r_;
};

// A read-only column of frozen records. Holding a reference to the Python
// Result object keeps the records alive as long as any view of them.
struct Column {
  py::object owner;
  const void* data;
  size_t count;
  size_t itemsize;
};

template <class T>
Column make_column(py::object owner, const T* (*accessor)(const pk_result*, size_t*)) {
  const Result& r = owner.cast<const Result&>();
  size_t n = 0;
  const T* data = accessor(r.get(), &n);
  return Column{std::move(owner), data, n, sizeof(T)};
}

// Strings may hold any bytes (names come from C callers); decode leniently so
// a bad name never makes a whole trace unreadable from Python. NULL is "".
py::str decode(const char* text);

// Thread names in traces. The engine names a thread after the OS (the
// process name, "python3", for every thread Python starts: CPython 3.11
// does not pass threading.Thread names on), so a trace of many Python
// threads would show one name on every lane. name_thread_in_window(window)
// names the calling thread after its threading.Thread (its name, renames
// included) the first time it records in each recording window; call it
// with the GIL held, `window` nonzero. A thread named through
// _C.set_thread_name keeps that name (note_thread_named() records it), as do
// threads Python did not start (threading's dummy threads: their OS name,
// given by whoever started them, says more) and the main thread while
// threading calls it "MainThread". Never raises; a Python exception already
// set is kept. Thread-safety: per-thread state only. Called by RecordEvent,
// data-loading ranges and with_stack's call tracer; not by the PyTorch hook,
// which records without the GIL: a thread that records only through it (a
// ThreadPoolExecutor worker under enable(all_threads=True)) keeps its OS name.
void name_thread_in_window(uint32_t window);
void note_thread_named();

void bind_engine(py::module_& m);     // engine.cpp: recording, state, steps, config
void bind_hot_calls(py::module_& m);  // hot_calls.cpp: step(), reader_time_ns(), is_recording()
void bind_result(py::module_& m, py::class_<Result>& result);  // result.cpp: collect, load, Result
void bind_record_event(py::module_& m);                        // record_event.cpp: RecordEvent (raw CPython type)
void bind_gpu(py::module_& m);                                 // gpu.cpp: GPU tracing control
void bind_summary(py::class_<Result>& result);                 // summary.cpp: summary tables
void bind_placement(py::class_<Result>& result);               // placement.cpp: Chrome export for merged timelines
void bind_python_tracer(py::module_& m);                       // python_tracer.cpp: with_stack's call tracer

}  // namespace profkit_py

namespace pybind11::detail {

// Loads EngineText; the signatures pybind11 writes say "str".
template <>
struct type_caster<profkit_py::EngineText> {
  PYBIND11_TYPE_CASTER(profkit_py::EngineText, const_name("str"));

  bool load(handle source, bool convert) {
    if (!PyUnicode_Check(source.ptr())) {
      make_caster<std::string> plain;                  // bytes, bytearray: as pybind11 always took them
      if (!plain.load(source, convert)) return false;  // pybind11's TypeError: not text
      value.utf8 = cast_op<std::string&&>(std::move(plain));
      return true;
    }
    Py_ssize_t size = 0;
    PyObject* holder = nullptr;
    const char* utf8 = profkit_py::utf8_replacing_surrogates(source.ptr(), &size, &holder);
    if (utf8 == nullptr) throw error_already_set();  // out of memory
    value.utf8.assign(utf8, static_cast<size_t>(size));
    Py_DECREF(holder);
    return true;
  }
};

}  // namespace pybind11::detail
