// See _torch_module_call.h. In C because the wrapper runs for every module
// call inside a window, submodules included: a Python wrapper costs about
// half a microsecond per call (argument packing, a frame, a thread-local
// lookup), this one a few tens of nanoseconds. It is a method descriptor
// with vectorcall, so `module(x)` reaches it without binding a method object
// and it forwards the arguments to torch's __call__ untouched.
#include "_torch_module_call.h"

#include <profkit/profkit.h>
#include <structmember.h>

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
  char name[256];
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
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  Py_CLEAR(reinterpret_cast<ModuleCall*>(self)->wrapped);
  type->tp_free(self);
  Py_DECREF(type);  // instances of heap types own a reference to their type
}

int traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
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

PyMemberDef kMembers[] = {
    // Where instances keep their vectorcall function (heap types say so here).
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(ModuleCall, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

PyType_Slot kSlots[] = {
    {Py_tp_doc, const_cast<char*>("ModuleCall(wrapped): torch.nn.Module.__call__ that records top-level calls as "
                                  "profkit Forward events")},
    {Py_tp_new, reinterpret_cast<void*>(make)},
    {Py_tp_dealloc, reinterpret_cast<void*>(dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(clear)},
    {Py_tp_descr_get, reinterpret_cast<void*>(get)},
    {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
    {Py_tp_getset, kGetSet},
    {Py_tp_members, kMembers},
    {0, nullptr},
};

PyType_Spec kSpec = {
    "profkit_torch_hook.ModuleCall",
    sizeof(ModuleCall),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_METHOD_DESCRIPTOR | Py_TPFLAGS_HAVE_VECTORCALL,
    kSlots,
};

}  // namespace

bool add_module_call_type(PyObject* module) {
  PyObject* type = PyType_FromSpec(&kSpec);
  if (type == nullptr) return false;
  if (PyModule_AddObject(module, "ModuleCall", type) < 0) {  // steals the reference on success only
    Py_DECREF(type);
    return false;
  }
  return true;
}

}  // namespace profkit_torch
