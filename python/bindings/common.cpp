#include <cstring>

#include "binding.h"

namespace profkit_py {

void set_status_error(pk_status status) {
  const std::string message = pk_last_error();
  switch (status) {
    case PK_ERR_NOT_FOUND:
      PyErr_SetString(PyExc_FileNotFoundError, message.c_str());
      break;
    case PK_ERR_IO:
      PyErr_SetString(PyExc_OSError, message.c_str());
      break;
    case PK_ERR_OUT_OF_MEMORY:
      PyErr_SetString(PyExc_MemoryError, message.c_str());
      break;
    case PK_ERR_INVALID_STATE:
    case PK_ERR_INTERNAL:
    case PK_ERR_UNSUPPORTED:
      PyErr_SetString(PyExc_RuntimeError, message.c_str());
      break;
    default:  // invalid argument, corrupt, version, too large
      PyErr_SetString(PyExc_ValueError, message.c_str());
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
