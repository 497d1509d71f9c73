#include <cstring>

#include "binding.h"

namespace profkit_py {

namespace {

// PyErr_SetString decodes the message as strict UTF-8: a message that quotes
// a path or a name with bytes that are not UTF-8 would turn into a
// UnicodeDecodeError about the message itself. Those bytes show escaped.
void set_error(PyObject* type, const std::string& message) {
  PyObject* text = PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()), "backslashreplace");
  if (text == nullptr) return;  // out of memory: that error stands
  PyErr_SetObject(type, text);
  Py_DECREF(text);
}

}  // namespace

void set_status_error(pk_status status) {
  const std::string message = pk_last_error();
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

[[noreturn]] void raise_status(pk_status status) {
  set_status_error(status);
  throw py::error_already_set();
}

py::str decode(const char* text) {
  if (text == nullptr) text = "";
  PyObject* s = PyUnicode_DecodeUTF8(text, static_cast<Py_ssize_t>(std::strlen(text)), "replace");
  if (s == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(s);
}

}  // namespace profkit_py
