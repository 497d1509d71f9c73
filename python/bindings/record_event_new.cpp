// Creating and destroying RecordEvent objects. `with RecordEvent(name):`
// creates and drops one object per block, so construction is on the hot
// path: arguments arrive through vectorcall (no tuple, no dict) and objects
// are recycled through a small free list instead of going back to the
// allocator. Thread-safety: runs with the GIL held, which also guards the
// free list (free-threaded builds skip the list).
#include <Python.h>
#include <pythread.h>

#include <cstring>

#include "open_ranges.h"
#include "record_event.h"

namespace profkit_py {

namespace {

constexpr long kDefaultEventType = PK_EVENT_PYTHON_USER_DEFINED;

// Accepts TracerEventType (an IntEnum), a plain int, or anything with an
// integer `.value` (a plain Enum); None means the default.
bool parse_event_type(PyObject* arg, uint8_t* out) {
  if (arg == nullptr || arg == Py_None) {
    *out = static_cast<uint8_t>(kDefaultEventType);
    return true;
  }
  long value = -1;
  int overflow = 0;
  if (PyLong_Check(arg)) {
    value = PyLong_AsLongAndOverflow(arg, &overflow);
  } else {
    PyObject* inner = PyObject_GetAttrString(arg, "value");
    if (inner == nullptr || !PyLong_Check(inner)) {
      Py_XDECREF(inner);
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError, "RecordEvent: event_type must be a TracerEventType or an int, not %.100s",
                   Py_TYPE(arg)->tp_name);
      return false;
    }
    value = PyLong_AsLongAndOverflow(inner, &overflow);
    Py_DECREF(inner);
  }
  if (value == -1 && PyErr_Occurred()) return false;
  if (overflow != 0 || value < 0 || value >= PK_EVENT_TYPE_COUNT) {
    PyErr_Format(PyExc_ValueError, "RecordEvent: event_type %R is not a TracerEventType (0..%d)", arg,
                 PK_EVENT_TYPE_COUNT - 1);
    return false;
  }
  *out = static_cast<uint8_t>(value);
  return true;
}

// Recycled RecordEvent objects. Guarded by the GIL; free-threaded builds skip it.
constexpr int kEventFreeListSize = 16;
RecordEventObject* g_event_free_list[kEventFreeListSize];
int g_event_free_count = 0;

PyObject* make_record_event(PyTypeObject* type, PyObject* name, PyObject* event_type) {
  if (!PyUnicode_Check(name)) {
    PyErr_Format(PyExc_TypeError, "RecordEvent: name must be a str, not %.100s", Py_TYPE(name)->tp_name);
    return nullptr;
  }
  uint8_t event_type_value = 0;
  if (!parse_event_type(event_type, &event_type_value)) return nullptr;
  Py_ssize_t length = 0;
  // The name the object holds: `name`, or with U+FFFD for a lone surrogate,
  // as every name is recorded (without_surrogates says why).
  PyObject* kept = nullptr;
  const char* utf8 = utf8_replacing_surrogates(name, &length, &kept);
  if (utf8 == nullptr) return nullptr;
  // Engine names are C strings: a NUL would silently cut the name short.
  if (std::memchr(utf8, '\0', static_cast<size_t>(length)) != nullptr) {
    PyErr_Format(PyExc_ValueError, "RecordEvent: name %R contains a NUL character; event names cannot", name);
    Py_DECREF(kept);
    return nullptr;
  }
  RecordEventObject* self = nullptr;
#ifndef Py_GIL_DISABLED
  if (g_event_free_count > 0 && type == &RecordEventType) {
    self = g_event_free_list[--g_event_free_count];
    PyObject_Init(reinterpret_cast<PyObject*>(self), type);
  }
#endif
  if (self == nullptr) self = PyObject_New(RecordEventObject, type);
  if (self == nullptr) {
    Py_DECREF(kept);
    return nullptr;
  }
  self->name = kept;
  self->utf8 = utf8;
  self->thread = 0;
  self->serial = 0;
  self->window = 0;
  self->type = event_type_value;
  self->open = 0;
  return reinterpret_cast<PyObject*>(self);
}

}  // namespace

// RecordEvent(name, event_type=...) through vectorcall: no tuple, no dict.
PyObject* record_event_vectorcall(PyObject* type, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (nargs > 2) {
    PyErr_Format(PyExc_TypeError, "RecordEvent() takes at most 2 positional arguments (%zd given)", nargs);
    return nullptr;
  }
  PyObject* name = nargs >= 1 ? args[0] : nullptr;
  PyObject* event_type = nargs >= 2 ? args[1] : nullptr;
  if (kwnames != nullptr) {
    const Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t k = 0; k < nkw; ++k) {
      PyObject* key = PyTuple_GET_ITEM(kwnames, k);
      PyObject** slot = nullptr;
      if (PyUnicode_CompareWithASCIIString(key, "name") == 0) {
        slot = &name;
      } else if (PyUnicode_CompareWithASCIIString(key, "event_type") == 0) {
        slot = &event_type;
      } else {
        PyErr_Format(PyExc_TypeError, "RecordEvent() got an unexpected keyword argument '%U'", key);
        return nullptr;
      }
      if (*slot != nullptr) {
        PyErr_Format(PyExc_TypeError, "RecordEvent() got multiple values for argument '%U'", key);
        return nullptr;
      }
      *slot = args[nargs + k];
    }
  }
  if (name == nullptr) {
    PyErr_SetString(PyExc_TypeError, "RecordEvent() missing required argument 'name'");
    return nullptr;
  }
  return make_record_event(reinterpret_cast<PyTypeObject*>(type), name, event_type);
}

// The slow path for callers that do not use vectorcall (type.__call__, __new__).
PyObject* record_event_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {"name", "event_type", nullptr};
  PyObject* name = nullptr;
  PyObject* event_type = nullptr;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:RecordEvent", const_cast<char**>(keywords), &name, &event_type)) {
    return nullptr;
  }
  return make_record_event(type, name, event_type);
}

void record_event_dealloc(PyObject* obj) {
  RecordEventObject* self = reinterpret_cast<RecordEventObject*>(obj);
  // A range still open is left to the engine (reported as unfinished): ending
  // it here could close another event of whatever thread runs the finalizer.
  // On its own thread it is marked abandoned, so that it does not hold up
  // the ranges below it: they end it with them.
  if (self->open && self->serial != 0 && self->thread == PyThread_get_thread_ident()) {
    open_range_abandon(self->serial);
  }
  Py_CLEAR(self->name);
#ifndef Py_GIL_DISABLED
  if (g_event_free_count < kEventFreeListSize) {
    g_event_free_list[g_event_free_count++] = self;
    return;
  }
#endif
  PyObject_Free(obj);
}

}  // namespace profkit_py
