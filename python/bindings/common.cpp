#include <cstring>

#include "binding.h"

namespace profkit_py {

namespace {

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

}  // namespace profkit_py
