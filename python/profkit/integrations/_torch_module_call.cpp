// See _torch_module_call.h. In C because the wrapper runs for every module
// call inside a window, submodules included: a Python wrapper costs about
// half a microsecond per call (argument packing, a frame, a thread-local
// lookup), this one a few tens of nanoseconds. It is a method descriptor
// with vectorcall, so `module(x)` reaches it without binding a method object
// and it forwards the arguments to torch's __call__ untouched.
#include "_torch_module_call.h"

#include <profkit/profkit.h>

#include <cstdio>

namespace profkit_torch {
namespace {

thread_local int t_depth = 0;  // module calls in progress on this thread

struct ModuleCall {
  PyObject ob_base;  // PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* wrapped;  // torch's Module.__call__
};

// "<ModuleClass>.forward": tp_name is the class name for classes defined in
// Python (every nn.Module).
void begin_forward(PyObject* module) {
  thread_local char name[256];
  std::snprintf(name, sizeof name, "%s.forward", Py_TYPE(module)->tp_name);
  pk_begin_event_str(name, PK_EVENT_FORWARD);
}

PyObject* call(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  PyObject* wrapped = reinterpret_cast<ModuleCall*>(callable)->wrapped;
  if (t_depth > 0 || PyVectorcall_NARGS(nargsf) < 1) {  // a submodule: inside the top-level Forward
    return PyObject_Vectorcall(wrapped, args, nargsf, kwnames);
  }
  // As RecordEvent: recorded only when begun and ended in the same window.
  const uint32_t window = pk_recording_word;
  if (window != 0) begin_forward(args[0]);
  t_depth = 1;
  PyObject* result = PyObject_Vectorcall(wrapped, args, nargsf, kwnames);
  t_depth = 0;
  if (window != 0 && window == pk_recording_word) pk_end_event();
  return result;
}

PyObject* make(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* wrapped = nullptr;
  static const char* kKeywords[] = {"wrapped", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:ModuleCall", const_cast<char**>(kKeywords), &wrapped)) {
    return nullptr;
  }
  if (!PyCallable_Check(wrapped)) {
    PyErr_Format(PyExc_TypeError, "ModuleCall: expected torch.nn.Module.__call__, got %R", wrapped);
    return nullptr;
  }
  auto* self = reinterpret_cast<ModuleCall*>(type->tp_alloc(type, 0));
  if (self == nullptr) return nullptr;
  self->vectorcall = call;
  Py_INCREF(wrapped);
  self->wrapped = wrapped;
  return reinterpret_cast<PyObject*>(self);
}

void dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  Py_CLEAR(reinterpret_cast<ModuleCall*>(self)->wrapped);
  Py_TYPE(self)->tp_free(self);
}

int traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(reinterpret_cast<ModuleCall*>(self)->wrapped);
  return 0;
}

int clear(PyObject* self) {
  Py_CLEAR(reinterpret_cast<ModuleCall*>(self)->wrapped);
  return 0;
}

// Looked up on a class: itself; on an instance: bound to it (module.__call__).
PyObject* get(PyObject* self, PyObject* instance, PyObject*) {
  if (instance == nullptr || instance == Py_None) {
    Py_INCREF(self);
    return self;
  }
  return PyMethod_New(self, instance);
}

PyObject* get_wrapped(PyObject* self, void*) {
  PyObject* wrapped = reinterpret_cast<ModuleCall*>(self)->wrapped;
  if (wrapped == nullptr) Py_RETURN_NONE;
  Py_INCREF(wrapped);
  return wrapped;
}

PyGetSetDef kGetSet[] = {
    {"__wrapped__", get_wrapped, nullptr, "torch's Module.__call__, which this wraps", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyTypeObject kType = [] {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = "profkit_torch_hook.ModuleCall";
  t.tp_basicsize = sizeof(ModuleCall);
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_METHOD_DESCRIPTOR | Py_TPFLAGS_HAVE_VECTORCALL;
  t.tp_doc = "ModuleCall(wrapped): torch.nn.Module.__call__ that records top-level calls as profkit Forward events";
  t.tp_new = make;
  t.tp_dealloc = dealloc;
  t.tp_traverse = traverse;
  t.tp_clear = clear;
  t.tp_descr_get = get;
  t.tp_call = PyVectorcall_Call;
  t.tp_vectorcall_offset = offsetof(ModuleCall, vectorcall);
  t.tp_getset = kGetSet;
  return t;
}();

}  // namespace

bool add_module_call_type(PyObject* module) {
  if (PyType_Ready(&kType) < 0) return false;
  Py_INCREF(&kType);
  if (PyModule_AddObject(module, "ModuleCall", reinterpret_cast<PyObject*>(&kType)) < 0) {
    Py_DECREF(&kType);
    return false;
  }
  return true;
}

}  // namespace profkit_torch
