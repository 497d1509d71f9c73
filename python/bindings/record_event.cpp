// profkit.RecordEvent: a user range (paddle.profiler.RecordEvent) as a small
// CPython extension type, because it sits on the user's hot path. With plain
// pybind11 or Python, `with RecordEvent(name):` costs several hundred ns even
// when nothing is recorded; here construction goes through vectorcall (no
// argument tuple), the idle path is one load of pk_recording_word, and while
// recording the name goes to pk_begin_event_str, whose per-thread cache turns
// the text into an id without a lock.
//
// Contract (documented in the class docstring): one object is one range at a
// time. begin() twice without end(), end() without begin(), and end() on
// another thread than begin() raise RuntimeError naming the event; nothing is
// recorded for them. A range whose begin and end fall into different recording
// windows is not recorded (it belongs to neither window whole). A range whose
// end comes while one begun after it on the same thread is open warns and is
// ended with that one (see OpenRanges).
//
// Thread-safety: the type's methods run under the GIL; each object keeps the
// state of one open range and is meant for one thread at a time (the check
// above turns misuse into an error). Ownership: an object owns a reference to
// its name string; the UTF-8 text it passes to the engine is that string's
// cached UTF-8 buffer, valid while the object lives.
#include <Python.h>
#include <pythread.h>

#include <cstring>

#include "binding.h"

namespace profkit_py {

namespace {

constexpr long kDefaultEventType = PK_EVENT_PYTHON_USER_DEFINED;

struct RecordEventObject {
  PyObject_HEAD PyObject* name;  // the str the user gave (owned)
  const char* utf8;              // name's cached UTF-8 text (borrowed from `name`)
  unsigned long thread;          // thread that began the open range
  uint64_t serial;               // its entry in the thread's OpenRanges; 0 = none
  uint32_t window;               // recording window at begin(); 0 = nothing recorded
  uint8_t type;                  // pk_event_type
  uint8_t open;                  // begun and not yet ended
};

// The CPython idiom for a static type: the header initialized, every slot
// zero until bind_record_event() fills the ones it uses.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
PyTypeObject RecordEventType = {PyVarObject_HEAD_INIT(nullptr, 0)};
#pragma GCC diagnostic pop

// Reads the engine's recording word: nonzero (the window id) while recording.
inline uint32_t current_window() { return pk_recording_word; }

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

// Recycled RecordEvent objects: `with RecordEvent(name):` creates and drops
// one per block. Guarded by the GIL; free-threaded builds skip it.
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
  const char* utf8 = PyUnicode_AsUTF8AndSize(name, &length);
  if (utf8 == nullptr) return nullptr;
  // Engine names are C strings: a NUL would silently cut the name short.
  if (std::memchr(utf8, '\0', static_cast<size_t>(length)) != nullptr) {
    PyErr_Format(PyExc_ValueError, "RecordEvent: name %R contains a NUL character; event names cannot", name);
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
  if (self == nullptr) return nullptr;
  Py_INCREF(name);
  self->name = name;
  self->utf8 = utf8;
  self->thread = 0;
  self->serial = 0;
  self->window = 0;
  self->type = event_type_value;
  self->open = 0;
  return reinterpret_cast<PyObject*>(self);
}

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

// ---- ranges ending out of order ----------------------------------------------
// The engine keeps one stack of open events per thread: pk_end_event() ends
// the innermost. RecordEvents whose ends come out of order on one thread
// (asyncio tasks interleaving, or begin()/end() written crosswise) would end
// each other's events, swapping their end times without a word. So each
// thread lists the ranges its RecordEvents have open in the engine, innermost
// last. A range that ends while one begun after it is still open is marked
// ended and warned about; the engine ends it once every range above it has
// ended. The later range keeps its exact times, the earlier one is recorded
// as ending with it, and the trace stays properly nested.
//
// A RecordEvent dropped while open (never ended) is abandoned: its end is
// unknown, so it stays open in the engine (counted unfinished when the window
// closes) unless a range begun before it ends, which must end it first.
enum class RangeState : uint8_t {
  kOpen,
  kEnded,      // end() came while a later range was open
  kAbandoned,  // the object went away without end()
};

struct OpenRange {
  uint64_t serial;  // the RecordEvent's serial (unique on its thread)
  PyObject* name;   // owned: names the range in the warning
  uint32_t window;  // every entry shares one window (see push_range)
  RangeState state;
};

// Thread-safety: one per thread, touched only by its thread.
struct OpenRanges {
  static constexpr uint32_t kCapacity = 256;  // the engine's own depth limit
  OpenRange ranges[kCapacity];
  uint32_t count = 0;
  uint64_t next_serial = 0;
};
thread_local OpenRanges t_open;

void pop_range() {
  OpenRange& top = t_open.ranges[--t_open.count];
  Py_CLEAR(top.name);
}

// Lists a range just begun in the engine; returns its serial (0: not
// listed, past the capacity, and then ended the engine's way).
uint64_t push_range(PyObject* name, uint32_t window) {
  // Entries of an earlier window are stale: the engine started that thread's
  // stack afresh when the window changed. They sit below any newer entry, so
  // checking the top keeps every entry in one window.
  while (t_open.count > 0 && t_open.ranges[t_open.count - 1].window != window) pop_range();
  if (t_open.count == OpenRanges::kCapacity) return 0;
  Py_INCREF(name);
  t_open.ranges[t_open.count++] = {++t_open.next_serial, name, window, RangeState::kOpen};
  return t_open.next_serial;
}

// The index of `serial` among this thread's open ranges, or -1.
int64_t find_range(uint64_t serial) {
  for (uint32_t i = t_open.count; i-- > 0;) {
    if (t_open.ranges[i].serial == serial) return i;
  }
  return -1;
}

void end_ranges_above(uint32_t index) {
  while (t_open.count > index) {
    pk_end_event();
    pop_range();
  }
}

// Ends range `index` and every range above it (none open) in the engine,
// then the ranges below that were waiting only for these: down to the
// deepest ended one, abandoned ones between included.
void end_ranges_from(uint32_t index) {
  end_ranges_above(index);
  uint32_t waiting_from = t_open.count;
  for (uint32_t i = t_open.count; i-- > 0 && t_open.ranges[i].state != RangeState::kOpen;) {
    if (t_open.ranges[i].state == RangeState::kEnded) waiting_from = i;
  }
  end_ranges_above(waiting_from);
}

// The innermost range above `index` still open, or -1 when none is.
int64_t open_range_above(uint32_t index) {
  for (uint32_t i = t_open.count; i-- > index + 1;) {
    if (t_open.ranges[i].state == RangeState::kOpen) return i;
  }
  return -1;
}

void record_event_dealloc(PyObject* obj) {
  RecordEventObject* self = reinterpret_cast<RecordEventObject*>(obj);
  // A range still open is left to the engine (reported as unfinished): ending
  // it here could close another event of whatever thread runs the finalizer.
  // On its own thread it is marked abandoned, so that it does not hold up
  // the ranges below it: they end it with them.
  if (self->open && self->serial != 0 && self->thread == PyThread_get_thread_ident()) {
    const int64_t index = find_range(self->serial);
    if (index >= 0) t_open.ranges[index].state = RangeState::kAbandoned;
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

bool begin(RecordEventObject* self) {
  if (self->open) {
    PyErr_Format(PyExc_RuntimeError,
                 "RecordEvent %R: begin() called again before end(); one RecordEvent object marks one range at a "
                 "time (create another RecordEvent for a nested or concurrent range)",
                 self->name);
    return false;
  }
  const uint32_t window = current_window();
  self->open = 1;
  self->thread = PyThread_get_thread_ident();
  self->window = window;
  self->serial = 0;
  if (window != 0) {
    name_thread_in_window(window);
    pk_begin_event_str(self->utf8, static_cast<pk_event_type>(self->type));
    self->serial = push_range(self->name, window);
  }
  return true;
}

bool end(RecordEventObject* self) {
  if (!self->open) {
    PyErr_Format(PyExc_RuntimeError, "RecordEvent %R: end() called without a matching begin()", self->name);
    return false;
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
  if (self->window == 0 || self->window != current_window()) return true;
  const int64_t index = self->serial != 0 ? find_range(self->serial) : -1;
  if (index < 0) {  // not listed (past the capacity): the innermost is ours
    pk_end_event();
    return true;
  }
  const int64_t later = open_range_above(static_cast<uint32_t>(index));
  if (later < 0) {
    end_ranges_from(static_cast<uint32_t>(index));
    return true;
  }
  t_open.ranges[index].state = RangeState::kEnded;
  PyObject* later_name = t_open.ranges[later].name;
  return PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                          "RecordEvent %R ended while %R, begun after it on the same thread, was still open. Ranges "
                          "on one thread must nest; interleaved asyncio tasks, or begin()/end() called crosswise, "
                          "break that. %R is recorded as ending when %R ends; time overlapping work in ranges "
                          "that nest, or on threads of their own",
                          self->name, later_name, self->name, later_name) == 0;
}

PyObject* method_begin(PyObject* self, PyObject*) {
  if (!begin(reinterpret_cast<RecordEventObject*>(self))) return nullptr;
  Py_RETURN_NONE;
}

PyObject* method_end(PyObject* self, PyObject*) {
  if (!end(reinterpret_cast<RecordEventObject*>(self))) return nullptr;
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

// ---- __enter__ / __exit__ without bound-method objects --------------------
// `with` looks __enter__ and __exit__ up on the type and binds each to the
// object. For ordinary C methods that allocates two GC-tracked bound-method
// objects per block, about a third of an idle block's cost
// (benchmarks/python/bench_record_event.py). These descriptors bind to small
// untracked call objects recycled through a free list instead.

// What `obj.__enter__` / `obj.__exit__` evaluate to.
struct BoundCall {
  PyObject_HEAD vectorcallfunc vectorcall;
  PyObject* target;  // the RecordEvent (owned)
};

// The descriptor in the type's dict; calling it unbound
// (RecordEvent.__exit__(obj, None, None, None)) works as well.
struct SpecialMethod {
  PyObject_HEAD vectorcallfunc vectorcall;  // the unbound call
  vectorcallfunc bound;                     // the bound call's implementation
  const char* name;
  const char* doc;
};

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
PyTypeObject BoundCallType = {PyVarObject_HEAD_INIT(nullptr, 0)};
PyTypeObject SpecialMethodType = {PyVarObject_HEAD_INIT(nullptr, 0)};
#pragma GCC diagnostic pop

// Recycled BoundCall objects. Guarded by the GIL; free-threaded builds skip it.
constexpr int kFreeListSize = 8;
BoundCall* g_free_list[kFreeListSize];
int g_free_count = 0;

BoundCall* new_bound_call(PyObject* target, vectorcallfunc call) {
  BoundCall* b = nullptr;
#ifndef Py_GIL_DISABLED
  if (g_free_count > 0) {
    b = g_free_list[--g_free_count];
    PyObject_Init(reinterpret_cast<PyObject*>(b), &BoundCallType);
  }
#endif
  if (b == nullptr) {
    b = PyObject_New(BoundCall, &BoundCallType);
    if (b == nullptr) return nullptr;
  }
  Py_INCREF(target);
  b->target = target;
  b->vectorcall = call;
  return b;
}

void bound_call_dealloc(PyObject* obj) {
  BoundCall* b = reinterpret_cast<BoundCall*>(obj);
  Py_CLEAR(b->target);
#ifndef Py_GIL_DISABLED
  if (g_free_count < kFreeListSize) {
    g_free_list[g_free_count++] = b;
    return;
  }
#endif
  PyObject_Free(obj);
}

bool no_keywords(const char* name, PyObject* kwnames) {
  if (kwnames == nullptr || PyTuple_GET_SIZE(kwnames) == 0) return true;
  PyErr_Format(PyExc_TypeError, "RecordEvent.%s() takes no keyword arguments", name);
  return false;
}

PyObject* enter_bound(PyObject* callable, PyObject* const*, size_t nargsf, PyObject* kwnames) {
  if (!no_keywords("__enter__", kwnames)) return nullptr;
  if (PyVectorcall_NARGS(nargsf) != 0) {
    PyErr_SetString(PyExc_TypeError, "RecordEvent.__enter__() takes no arguments");
    return nullptr;
  }
  PyObject* self = reinterpret_cast<BoundCall*>(callable)->target;
  if (!begin(reinterpret_cast<RecordEventObject*>(self))) return nullptr;
  Py_INCREF(self);
  return self;
}

PyObject* exit_bound(PyObject* callable, PyObject* const*, size_t nargsf, PyObject* kwnames) {
  if (!no_keywords("__exit__", kwnames)) return nullptr;
  if (PyVectorcall_NARGS(nargsf) > 3) {
    PyErr_SetString(PyExc_TypeError, "RecordEvent.__exit__() takes at most 3 arguments");
    return nullptr;
  }
  if (!end(reinterpret_cast<RecordEventObject*>(reinterpret_cast<BoundCall*>(callable)->target))) return nullptr;
  Py_RETURN_FALSE;  // never swallows the block's exception
}

bool is_record_event(PyObject* obj) { return PyObject_TypeCheck(obj, &RecordEventType); }

PyObject* special_get(PyObject* descr, PyObject* obj, PyObject*) {
  if (obj == nullptr || obj == Py_None) {  // looked up on the class
    Py_INCREF(descr);
    return descr;
  }
  SpecialMethod* m = reinterpret_cast<SpecialMethod*>(descr);
  if (!is_record_event(obj)) {
    PyErr_Format(PyExc_TypeError, "RecordEvent.%s needs a RecordEvent, not %.100s", m->name, Py_TYPE(obj)->tp_name);
    return nullptr;
  }
  return reinterpret_cast<PyObject*>(new_bound_call(obj, m->bound));
}

PyObject* special_unbound_call(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  SpecialMethod* m = reinterpret_cast<SpecialMethod*>(callable);
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (nargs < 1 || !is_record_event(args[0])) {
    PyErr_Format(PyExc_TypeError, "RecordEvent.%s() needs a RecordEvent as its first argument", m->name);
    return nullptr;
  }
  BoundCall* bound = new_bound_call(args[0], m->bound);
  if (bound == nullptr) return nullptr;
  PyObject* result = m->bound(reinterpret_cast<PyObject*>(bound), args + 1, static_cast<size_t>(nargs - 1), kwnames);
  Py_DECREF(bound);
  return result;
}

PyObject* special_get_doc(PyObject* self, void*) {
  return PyUnicode_FromString(reinterpret_cast<SpecialMethod*>(self)->doc);
}

PyObject* special_get_name(PyObject* self, void*) {
  return PyUnicode_FromString(reinterpret_cast<SpecialMethod*>(self)->name);
}

PyObject* special_repr(PyObject* self) {
  return PyUnicode_FromFormat("<method '%s' of 'profkit.RecordEvent' objects>",
                              reinterpret_cast<SpecialMethod*>(self)->name);
}

PyObject* bound_call_repr(PyObject* self) {
  BoundCall* b = reinterpret_cast<BoundCall*>(self);
  return PyUnicode_FromFormat("<bound method RecordEvent.%s of %R>",
                              b->vectorcall == enter_bound ? "__enter__" : "__exit__", b->target);
}

PyGetSetDef special_getset[] = {{"__doc__", special_get_doc, nullptr, nullptr, nullptr},
                                {"__name__", special_get_name, nullptr, nullptr, nullptr},
                                {nullptr, nullptr, nullptr, nullptr, nullptr}};

SpecialMethod g_enter = {PyObject_HEAD_INIT(nullptr) special_unbound_call, enter_bound, "__enter__",
                         "begin(); returns self."};
SpecialMethod g_exit = {PyObject_HEAD_INIT(nullptr) special_unbound_call, exit_bound, "__exit__",
                        "end(); never suppresses the exception."};

void ready_special_types() {
  BoundCallType.tp_name = "profkit._C._RecordEventBoundCall";
  BoundCallType.tp_basicsize = sizeof(BoundCall);
  BoundCallType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
  BoundCallType.tp_vectorcall_offset = offsetof(BoundCall, vectorcall);
  BoundCallType.tp_call = PyVectorcall_Call;
  BoundCallType.tp_dealloc = bound_call_dealloc;
  BoundCallType.tp_repr = bound_call_repr;
  if (PyType_Ready(&BoundCallType) < 0) throw py::error_already_set();

  SpecialMethodType.tp_name = "profkit._C._RecordEventMethod";
  SpecialMethodType.tp_basicsize = sizeof(SpecialMethod);
  SpecialMethodType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
  SpecialMethodType.tp_vectorcall_offset = offsetof(SpecialMethod, vectorcall);
  SpecialMethodType.tp_call = PyVectorcall_Call;
  SpecialMethodType.tp_descr_get = special_get;
  SpecialMethodType.tp_getset = special_getset;
  SpecialMethodType.tp_repr = special_repr;
  if (PyType_Ready(&SpecialMethodType) < 0) throw py::error_already_set();
  Py_SET_TYPE(reinterpret_cast<PyObject*>(&g_enter), &SpecialMethodType);
  Py_SET_TYPE(reinterpret_cast<PyObject*>(&g_exit), &SpecialMethodType);
}

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
    "One object marks one range at a time: ``begin()`` twice without ``end()``,\n"
    "``end()`` without ``begin()``, or ``end()`` on another thread raise\n"
    "RuntimeError and record nothing. A range whose begin and end fall in\n"
    "different recording windows is left out of both.\n\n"
    "Args:\n"
    "    name: the range's name (str, no NUL characters).\n"
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
  ready_special_types();
  if (PyDict_SetItemString(RecordEventType.tp_dict, "__enter__", reinterpret_cast<PyObject*>(&g_enter)) < 0 ||
      PyDict_SetItemString(RecordEventType.tp_dict, "__exit__", reinterpret_cast<PyObject*>(&g_exit)) < 0) {
    throw py::error_already_set();
  }
  PyType_Modified(&RecordEventType);
  m.add_object("RecordEvent", py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(&RecordEventType)));
}

}  // namespace profkit_py
