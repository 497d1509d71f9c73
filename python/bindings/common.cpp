#include <Python.h>
#include <pythread.h>

#include <cstring>

#include "binding.h"

namespace profkit_py {

namespace {

// The recording window the calling thread was last named in (0: none yet).
thread_local uint32_t t_named_in_window = 0;
// Named by the program (_C.set_thread_name): never renamed here.
thread_local bool t_named_by_program = false;

// The thread's tracing flag, which CPython sets while a profile or trace
// function runs: it calls none for the Python code run meanwhile.
void enter_untraced(PyThreadState* state) {
#if PY_VERSION_HEX >= 0x030B0000
  PyThreadState_EnterTracing(state);
#else
  ++state->tracing;
#endif
}

void leave_untraced(PyThreadState* state) {
#if PY_VERSION_HEX >= 0x030B0000
  PyThreadState_LeaveTracing(state);
#else
  --state->tracing;
#endif
}

// The name threading gives the calling thread, as UTF-8 (new reference to
// the str in *name), when it is a thread Python started and not the main
// thread under its default name; false otherwise. May leave an exception set.
bool python_thread_name(PyObject** name) {
  *name = nullptr;
  PyObject* module_name = PyUnicode_FromString("threading");
  if (module_name == nullptr) return false;
  // Only an imported threading: a thread Python started imported it.
  PyObject* threading = PyImport_GetModule(module_name);
  Py_DECREF(module_name);
  if (threading == nullptr) return false;
  // threading._active, not threading.current_thread(): for a thread Python
  // did not start, current_thread() would register a dummy Thread for it.
  PyObject* active = PyObject_GetAttrString(threading, "_active");
  PyObject* ident = PyLong_FromUnsignedLong(PyThread_get_thread_ident());
  PyObject* current = nullptr;
  if (active != nullptr && ident != nullptr && PyDict_Check(active)) {
    current = PyDict_GetItemWithError(active, ident);  // borrowed
    Py_XINCREF(current);
  }
  Py_XDECREF(ident);
  Py_XDECREF(active);
  PyObject* dummy = PyObject_GetAttrString(threading, "_DummyThread");
  PyObject* main = PyObject_CallMethod(threading, "main_thread", nullptr);
  bool named = false;
  if (current != nullptr && dummy != nullptr && main != nullptr && PyObject_IsInstance(current, dummy) == 0) {
    *name = PyObject_GetAttrString(current, "name");
    named = *name != nullptr && PyUnicode_Check(*name) &&
            !(current == main && PyUnicode_CompareWithASCIIString(*name, "MainThread") == 0);
  }
  Py_XDECREF(main);
  Py_XDECREF(dummy);
  Py_XDECREF(current);
  Py_DECREF(threading);
  if (!named) Py_CLEAR(*name);
  return named;
}

// PyErr_SetString decodes the message as strict UTF-8: a message that quotes
// a path or a name with bytes that are not UTF-8 would turn into a
// UnicodeDecodeError about the message itself. Those bytes show escaped.
PyObject* decode_message(const std::string& message) {
  return PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()), "backslashreplace");
}

void set_error(PyObject* type, const std::string& message) {
  PyObject* text = decode_message(message);
  if (text == nullptr) return;  // out of memory: that error stands
  PyErr_SetObject(type, text);
  Py_DECREF(text);
}

// OSError(errnum, message), as open() raises it: OSError's constructor picks
// the subclass for the errno (FileNotFoundError, PermissionError,
// IsADirectoryError, NotADirectoryError, ...), so callers can catch the kind
// of failure, and e.errno holds the number. e.strerror holds the engine's
// whole message (it names the path and what to do), not the bare strerror
// text PyErr_SetFromErrnoWithFilename would put there; e.filename the path
// the call was given, when there was one.
void set_os_error(int errnum, const std::string& message, const char* path) {
  PyObject* text = decode_message(message);
  if (text == nullptr) return;
  PyObject* filename = path != nullptr ? PyUnicode_DecodeFSDefault(path) : nullptr;
  if (path != nullptr && filename == nullptr) {
    Py_DECREF(text);
    return;
  }
  PyObject* error = filename != nullptr ? PyObject_CallFunction(PyExc_OSError, "iOO", errnum, text, filename)
                                        : PyObject_CallFunction(PyExc_OSError, "iO", errnum, text);
  Py_DECREF(text);
  Py_XDECREF(filename);
  if (error == nullptr) return;  // the constructor's own error stands
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error)), error);
  Py_DECREF(error);
}

}  // namespace

void set_status_error(pk_status status, const char* path) {
  const std::string message = pk_last_error();
  const int errnum = pk_last_error_errno();  // the same failure's (both are per thread)
  if (errnum != 0 && (status == PK_ERR_NOT_FOUND || status == PK_ERR_IO)) {
    set_os_error(errnum, message, path);
    return;
  }
  switch (status) {
    case PK_ERR_NOT_FOUND:
      set_error(PyExc_FileNotFoundError, message);
      break;
    case PK_ERR_IO:
      set_error(PyExc_OSError, message);
      break;
    case PK_ERR_OUT_OF_MEMORY:
      set_error(PyExc_MemoryError, message);
      break;
    case PK_ERR_INVALID_STATE:
    case PK_ERR_INTERNAL:
    case PK_ERR_UNSUPPORTED:
      set_error(PyExc_RuntimeError, message);
      break;
    default:  // invalid argument, corrupt, version, too large
      set_error(PyExc_ValueError, message);
      break;
  }
}

[[noreturn]] void raise_status(pk_status status, const char* path) {
  set_status_error(status, path);
  throw py::error_already_set();
}

py::str decode(const char* text) {
  if (text == nullptr) text = "";
  PyObject* s = PyUnicode_DecodeUTF8(text, static_cast<Py_ssize_t>(std::strlen(text)), "replace");
  if (s == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(s);
}

void note_thread_named() { t_named_by_program = true; }

void name_thread_in_window(uint32_t window) {
  if (window == t_named_in_window) return;
  // First: the Python code below may record (a Thread subclass's name
  // property), which must not come back here.
  t_named_in_window = window;
  if (t_named_by_program) return;
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyObject* name = nullptr;
  // threading's Python code it runs (main_thread(), a Thread's name) is
  // profkit's bookkeeping: run untraced, with_stack does not record it as
  // the program's calls wherever the range begins (under @RecordEvent's
  // wrapper, whose Python callees it records).
  PyThreadState* const state = PyThreadState_Get();
  enter_untraced(state);
  const bool named = python_thread_name(&name);
  leave_untraced(state);
  if (named) {
    Py_ssize_t size = 0;
    PyObject* holder = nullptr;
    const char* utf8 = utf8_replacing_surrogates(name, &size, &holder);  // as every name, U+FFFD for a surrogate
    if (utf8 != nullptr) {
      (void)pk_set_thread_name(utf8);
      Py_DECREF(holder);
    }
  }
  Py_XDECREF(name);
  // Naming is best effort: it never disturbs the program.
  PyErr_Clear();
  PyErr_Restore(type, value, traceback);
}

}  // namespace profkit_py
