// RecordEvent's __enter__ / __exit__ without bound-method objects. `with`
// looks __enter__ and __exit__ up on the type and binds each to the object.
// For ordinary C methods that allocates two GC-tracked bound-method objects
// per block, about a third of an idle block's cost
// (benchmarks/python/bench_record_event.py). These descriptors bind to small
// untracked call objects recycled through a free list instead.
//
// Thread-safety: runs with the GIL held, which also guards the free list
// (free-threaded builds skip the list). Ownership: a bound call owns a
// reference to its RecordEvent; the two descriptors are static objects that
// live as long as the module.
#include "record_event.h"

namespace profkit_py {

namespace {

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

// The CPython idiom for a static type: the header initialized, every slot
// zero until add_with_methods() fills the ones it uses.
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
  if (!record_event_begin(reinterpret_cast<RecordEventObject*>(self))) return nullptr;
  Py_INCREF(self);
  return self;
}

PyObject* exit_bound(PyObject* callable, PyObject* const*, size_t nargsf, PyObject* kwnames) {
  if (!no_keywords("__exit__", kwnames)) return nullptr;
  if (PyVectorcall_NARGS(nargsf) > 3) {
    PyErr_SetString(PyExc_TypeError, "RecordEvent.__exit__() takes at most 3 arguments");
    return nullptr;
  }
  if (!record_event_end(reinterpret_cast<RecordEventObject*>(reinterpret_cast<BoundCall*>(callable)->target))) {
    return nullptr;
  }
  Py_RETURN_FALSE;  // never swallows the block's exception
}

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

// The slots both types share: each of their objects is a callable whose
// vectorcall function pointer sits at `vectorcall_offset`.
void set_callable_slots(PyTypeObject* type, const char* name, Py_ssize_t size, Py_ssize_t vectorcall_offset) {
  type->tp_name = name;
  type->tp_basicsize = size;
  type->tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
  type->tp_vectorcall_offset = vectorcall_offset;
  type->tp_call = PyVectorcall_Call;
}

void ready_special_types() {
  set_callable_slots(&BoundCallType, "profkit._C._RecordEventBoundCall", sizeof(BoundCall),
                     offsetof(BoundCall, vectorcall));
  BoundCallType.tp_dealloc = bound_call_dealloc;
  BoundCallType.tp_repr = bound_call_repr;
  if (PyType_Ready(&BoundCallType) < 0) throw py::error_already_set();

  set_callable_slots(&SpecialMethodType, "profkit._C._RecordEventMethod", sizeof(SpecialMethod),
                     offsetof(SpecialMethod, vectorcall));
  SpecialMethodType.tp_descr_get = special_get;
  SpecialMethodType.tp_getset = special_getset;
  SpecialMethodType.tp_repr = special_repr;
  if (PyType_Ready(&SpecialMethodType) < 0) throw py::error_already_set();
  Py_SET_TYPE(reinterpret_cast<PyObject*>(&g_enter), &SpecialMethodType);
  Py_SET_TYPE(reinterpret_cast<PyObject*>(&g_exit), &SpecialMethodType);
}

}  // namespace

void add_with_methods() {
  ready_special_types();
  if (PyDict_SetItemString(RecordEventType.tp_dict, "__enter__", reinterpret_cast<PyObject*>(&g_enter)) < 0 ||
      PyDict_SetItemString(RecordEventType.tp_dict, "__exit__", reinterpret_cast<PyObject*>(&g_exit)) < 0) {
    throw py::error_already_set();
  }
  // The dict changed after PyType_Ready: drop the type's method cache.
  PyType_Modified(&RecordEventType);
}

}  // namespace profkit_py
