// profkit.RecordEvent, the type: the begin()/end() contract (see
// record_event.h), the attributes, use as a decorator, and registration on
// the module. Creating objects, the with-statement's methods and the
// per-thread list of open ranges live in their own files (record_event.h).
//
// Thread-safety: runs with the GIL held; each object records one range at a
// time, and record_event_end() refuses another thread for a recorded one
// (outside windows an object may be shared). Ownership: as
// record_event.h says.
#include <Python.h>
#include <pythread.h>

#include "open_ranges.h"
#include "record_event.h"

namespace profkit_py {

// The CPython idiom for a static type: the header initialized, every slot
// zero until bind_record_event() fills the ones it uses.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
PyTypeObject RecordEventType = {PyVarObject_HEAD_INIT(nullptr, 0)};
#pragma GCC diagnostic pop

namespace {

// Reads the engine's recording word: nonzero (the window id) while recording.
inline uint32_t current_window() { return pk_recording_word; }

}  // namespace

bool record_event_begin(RecordEventObject* self) {
  const uint32_t window = current_window();
  if (self->open) {
    // Outside every recording window a RecordEvent is a no-op: one object
    // shared by threads (a module-level `LOAD = RecordEvent("load")` used as
    // `with LOAD:`) must not fail the user's code there. Its begins are
    // counted, so that each end() finds one.
    if (window == 0 && self->window == 0) {
      ++self->open;
      return true;
    }
    PyErr_Format(PyExc_RuntimeError,
                 "RecordEvent %R: begin() called again before end(); one RecordEvent object marks one range at a "
                 "time (create another RecordEvent for a nested or concurrent range)",
                 self->name);
    return false;
  }
  self->open = 1;
  self->thread = PyThread_get_thread_ident();
  self->window = window;
  self->serial = 0;
  if (window != 0) {
    name_thread_in_window(window);
    pk_begin_event_str(self->utf8, static_cast<pk_event_type>(self->type));
    self->serial = open_range_push(self->name, window);
  }
  return true;
}

bool record_event_end(RecordEventObject* self) {
  if (!self->open) {
    PyErr_Format(PyExc_RuntimeError, "RecordEvent %R: end() called without a matching begin()", self->name);
    return false;
  }
  if (self->window == 0) {  // nothing was recorded: any thread may end it (a generator resumed elsewhere)
    --self->open;
    return true;
  }
  if (self->thread != PyThread_get_thread_ident()) {
    PyErr_Format(PyExc_RuntimeError,
                 "RecordEvent %R: end() called on another thread than begin(); a range begins and ends on the "
                 "same thread (use one RecordEvent per thread)",
                 self->name);
    return false;
  }
  self->open = 0;
  // Only a range that began in this same recording window is recorded.
  if (self->window != current_window()) return true;
  PyObject* later_name = open_range_end(self->serial);
  if (later_name == nullptr) return true;
  return PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                          "RecordEvent %R ended while %R, begun after it on the same thread, was still open. Ranges "
                          "on one thread must nest; interleaved asyncio tasks, or begin()/end() called crosswise, "
                          "break that. %R is recorded as ending when %R ends; time overlapping work in ranges "
                          "that nest, or on threads of their own",
                          self->name, later_name, self->name, later_name) == 0;
}

namespace {

PyObject* method_begin(PyObject* self, PyObject*) {
  if (!record_event_begin(reinterpret_cast<RecordEventObject*>(self))) return nullptr;
  Py_RETURN_NONE;
}

PyObject* method_end(PyObject* self, PyObject*) {
  if (!record_event_end(reinterpret_cast<RecordEventObject*>(self))) return nullptr;
  Py_RETURN_NONE;
}

PyObject* get_name(PyObject* self, void*) {
  PyObject* name = reinterpret_cast<RecordEventObject*>(self)->name;
  Py_INCREF(name);
  return name;
}

// Returned as profkit.TracerEventType; imported lazily (a rare call).
PyObject* get_event_type(PyObject* self, void*) {
  PyObject* module = PyImport_ImportModule("profkit._enums");
  if (module == nullptr) return nullptr;
  PyObject* enum_type = PyObject_GetAttrString(module, "TracerEventType");
  Py_DECREF(module);
  if (enum_type == nullptr) return nullptr;
  PyObject* value = PyObject_CallFunction(enum_type, "i", reinterpret_cast<RecordEventObject*>(self)->type);
  Py_DECREF(enum_type);
  return value;
}

PyObject* get_is_open(PyObject* self, void*) {
  return PyBool_FromLong(reinterpret_cast<RecordEventObject*>(self)->open);
}

// RecordEvent(name)(function), i.e. `@RecordEvent(name)` on a function, as
// paddle.profiler's RecordEvent (a ContextDecorator) allows. The wrapper is
// built in Python (profkit._record_event_decorator): it is not on a hot path,
// and functools.wraps is the behaviour users expect of a decorator.
PyObject* record_event_call(PyObject* obj, PyObject* args, PyObject* kwargs) {
  RecordEventObject* self = reinterpret_cast<RecordEventObject*>(obj);
  if ((kwargs != nullptr && PyDict_GET_SIZE(kwargs) != 0) || PyTuple_GET_SIZE(args) != 1) {
    PyErr_Format(PyExc_TypeError,
                 "RecordEvent %R called: as a decorator it takes the function to wrap, and only that (use it "
                 "as `@RecordEvent(name)` on a def, or as `with RecordEvent(name):`)",
                 self->name);
    return nullptr;
  }
  PyObject* module = PyImport_ImportModule("profkit._record_event_decorator");
  if (module == nullptr) return nullptr;
  PyObject* result = PyObject_CallMethod(module, "decorate", "OiO", self->name, static_cast<int>(self->type),
                                         PyTuple_GET_ITEM(args, 0));
  Py_DECREF(module);
  return result;
}

PyObject* record_event_repr(PyObject* obj) {
  RecordEventObject* self = reinterpret_cast<RecordEventObject*>(obj);
  return PyUnicode_FromFormat("RecordEvent(%R, event_type=%s)%s", self->name,
                              pk_event_type_name(static_cast<pk_event_type>(self->type)), self->open ? " [open]" : "");
}

PyMethodDef record_event_methods[] = {
    {"begin", method_begin, METH_NOARGS,
     "begin($self, /)\n--\n\nBegins the range on the calling thread (recorded only inside a recording window)."},
    {"end", method_end, METH_NOARGS,
     "end($self, /)\n--\n\nEnds the range begun by begin(); RuntimeError without a matching begin() on this thread."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef record_event_getset[] = {{"name", get_name, nullptr, "The range's name (str).", nullptr},
                                     {"event_type", get_event_type, nullptr, "The range's TracerEventType.", nullptr},
                                     {"is_open", get_is_open, nullptr, "True between begin() and end().", nullptr},
                                     {nullptr, nullptr, nullptr, nullptr, nullptr}};

constexpr const char* kDoc =
    "RecordEvent(name, event_type=TracerEventType.PythonUserDefined)\n"
    "--\n\n"
    "A named range of the user's code, recorded on the calling thread.\n\n"
    "Use it as a context manager (``with RecordEvent(\"load\"):``), call\n"
    "``begin()`` and ``end()``, or decorate a function (``@RecordEvent(\"load\")``:\n"
    "each call is a range). Outside a recording window they are no-ops that\n"
    "cost tens of nanoseconds. Ranges nest; each thread keeps its own nesting,\n"
    "and its lane in traces is named after its threading.Thread name.\n"
    "A range that ends while one begun after it on the same thread is still\n"
    "open (interleaved asyncio tasks) warns, and is recorded as ending with it.\n\n"
    "One object marks one recorded range at a time: in a recording window,\n"
    "``begin()`` twice without ``end()`` or ``end()`` on another thread than\n"
    "``begin()`` raise RuntimeError and record nothing; outside one (nothing\n"
    "recorded) they are allowed. ``end()`` without ``begin()`` always raises.\n"
    "A range whose begin and end fall in different recording windows is left\n"
    "out of both.\n\n"
    "Args:\n"
    "    name: the range's name (str, no NUL characters; a lone surrogate,\n"
    "        which has no UTF-8 form, is recorded as U+FFFD).\n"
    "    event_type: a TracerEventType (or its int value); default\n"
    "        PythonUserDefined.\n";

}  // namespace

void bind_record_event(py::module_& m) {
  RecordEventType.tp_name = "profkit.RecordEvent";
  RecordEventType.tp_basicsize = sizeof(RecordEventObject);
  RecordEventType.tp_flags = Py_TPFLAGS_DEFAULT;
  RecordEventType.tp_doc = kDoc;
  RecordEventType.tp_new = record_event_new;
  RecordEventType.tp_vectorcall = record_event_vectorcall;
  RecordEventType.tp_dealloc = record_event_dealloc;
  RecordEventType.tp_repr = record_event_repr;
  RecordEventType.tp_call = record_event_call;
  RecordEventType.tp_methods = record_event_methods;
  RecordEventType.tp_getset = record_event_getset;
  if (PyType_Ready(&RecordEventType) < 0) throw py::error_already_set();
  add_with_methods();
  m.add_object("RecordEvent", py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(&RecordEventType)));
}

}  // namespace profkit_py
