// See _torch_call_ranges.h. In C because these run on every module call
// inside a window (submodules included), on every backward and on every batch
// fetched: a Python wrapper costs about half a microsecond to several per
// call (argument packing, a frame, context managers), this one a few tens of
// nanoseconds plus the recording itself. It is a method descriptor with
// vectorcall, so `module(x)` and `next(iterator)` reach it without binding a
// method object, and it forwards the arguments to the wrapped callable
// untouched.
#include "_torch_call_ranges.h"

#include <profkit/profkit.h>
#include <structmember.h>

#include <cstring>

namespace profkit_torch {
namespace {

enum Kind : int { kForward = 0, kBackward = 1, kDataLoading = 2, kGrad = 3 };

thread_local int t_forward_depth = 0;  // module calls in progress on this thread

// torch._C._current_graph_task_id: -1 unless the autograd engine runs a
// backward pass on this thread. A module called then (activation
// checkpointing recomputing a forward, a module in a backward hook) is part
// of Backward, not a Forward event of its own, which the Model summary would
// count twice. Set once by add_call_range_type; nullptr where torch has no
// such function (every call is then a Forward candidate).
PyObject* g_graph_task_id = nullptr;

// What one of torch's functions of no arguments returns (a new reference),
// or nullptr, with no error set, where torch has no such function or it
// failed (not expected): a range less is better than an error in the user's
// call.
PyObject* ask(PyObject* function) {
  if (function == nullptr) return nullptr;
  PyObject* answer = PyObject_CallNoArgs(function);
  if (answer == nullptr) PyErr_Clear();
  return answer;
}

bool in_backward_pass() {
  PyObject* id = ask(g_graph_task_id);
  if (id == nullptr) return false;
  const bool running = PyLong_Check(id) && PyLong_AsLong(id) != -1;
  Py_DECREF(id);
  return running;
}

// torch.compiler.is_compiling: true while torch.compile traces (Dynamo, and
// AOTAutograd tracing the joint graph with fake tensors, which runs
// torch.autograd.grad for every torch.func.grad or autograd.grad it
// compiles). Those passes are the compiler's work, not the program's: the
// compiled code has them inlined and never calls the engine. nullptr where
// torch has no such function.
PyObject* g_is_compiling = nullptr;

// torch._C._get_dispatch_mode and the keys of the fake-tensor and proxy
// (make_fx) modes. Dynamo finds each node's output by running the node
// under its FakeTensorMode (torch.func.grad's node calls
// torch.autograd.grad there), and AOTAutograd traces the joint graph under
// both; torch 2.11's is_compiling() says False during the first. nullptr
// where torch has none of these.
PyObject* g_get_dispatch_mode = nullptr;
PyObject* g_fake_mode_key = nullptr;
PyObject* g_proxy_mode_key = nullptr;

bool mode_active(PyObject* key) {
  if (g_get_dispatch_mode == nullptr || key == nullptr) return false;
  PyObject* mode = PyObject_CallOneArg(g_get_dispatch_mode, key);
  if (mode == nullptr) {
    PyErr_Clear();
    return false;
  }
  const bool active = mode != Py_None;
  Py_DECREF(mode);
  return active;
}

// Asks is_compiling() with the thread's tracing flag set, as CPython sets it
// while a profile function runs: with_stack's tracer would record its Python
// calls (is_compiling, is_scripting) as the program's, under Tensor.backward.
PyObject* ask_untraced(PyObject* function) {
  PyThreadState* const state = PyThreadState_Get();
#if PY_VERSION_HEX >= 0x030B0000
  PyThreadState_EnterTracing(state);
  PyObject* answer = ask(function);
  PyThreadState_LeaveTracing(state);
#else
  ++state->tracing;
  PyObject* answer = ask(function);
  --state->tracing;
#endif
  return answer;
}

bool compiling() {
  PyObject* answer = ask_untraced(g_is_compiling);
  const bool yes = answer == Py_True;
  Py_XDECREF(answer);
  return yes || mode_active(g_fake_mode_key) || mode_active(g_proxy_mode_key);
}

struct CallRange {
  PyObject ob_base;  // PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* wrapped;  // torch's callable
  pk_name_id name;    // BACKWARD, DATA_LOADING: the range's name
};

// The FORWARD range that must stay installed as g_home_owner.__call__ while a
// window records (set through its `home` attribute; both strong references,
// nullptr when none). torch's FX tracing -- which every torch.compile
// backend but "eager" runs while compiling, and torch.fx.symbolic_trace --
// saves `getattr(nn.Module, "__call__")`, patches it, and sets the saved
// value back when done. Looked up on the class, the range reads as the
// callable it wraps (see get() below), so what FX sets back is torch's own
// __call__: every later module call of the window went without a Forward
// event. With the default single window (no scheduler), the compile in the
// first step lost the Forward of the whole run. So after each top-level
// module call, backward and batch fetched in a window, a __call__ put back
// to exactly the one this range wraps is replaced by the range again
// (anything else there is someone else's wrapper and is left alone).
CallRange* g_home_range = nullptr;
PyObject* g_home_owner = nullptr;
PyObject* g_call_name = nullptr;  // "__call__", interned

// With the GIL held, inside a window, after a call that returned normally
// (no exception set).
void keep_forward_installed() {
  if (g_home_range == nullptr || g_home_range->wrapped == nullptr) return;
  PyObject* dict = reinterpret_cast<PyTypeObject*>(g_home_owner)->tp_dict;
  PyObject* current = dict == nullptr ? nullptr : PyDict_GetItemWithError(dict, g_call_name);  // borrowed
  if (current == g_home_range->wrapped) {
    // Through setattr, not the dict: the type's call slot and method cache follow.
    if (PyObject_SetAttr(g_home_owner, g_call_name, reinterpret_cast<PyObject*>(g_home_range)) < 0) PyErr_Clear();
  } else if (current == nullptr) {
    PyErr_Clear();
  }
}

// "<ModuleClass>.forward": tp_name is the class name for classes defined in
// Python (every nn.Module). Built with two copies, not snprintf: this runs on
// every top-level module call, when printf's large code is cold (callgrind:
// ~750 instructions a call in an mlp training step, against ~50 now). A
// class name too long for the buffer is cut, the suffix kept.
void begin_forward(PyObject* module) {
  static constexpr char kSuffix[] = ".forward";
  char name[256];
  const char* class_name = Py_TYPE(module)->tp_name;
  const size_t n = strnlen(class_name, sizeof name - sizeof kSuffix);
  std::memcpy(name, class_name, n);
  std::memcpy(name + n, kSuffix, sizeof kSuffix);
  pk_begin_event_str(name, PK_EVENT_FORWARD);
}

PyObject* call_forward(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  PyObject* wrapped = reinterpret_cast<CallRange*>(callable)->wrapped;
  // A submodule is inside the top-level Forward. A module called while a
  // batch is fetched (a transform module in Dataset.__getitem__) is part of
  // the Dataloader event, as one called in backward is part of Backward:
  // a Forward event too would count its time twice in the Model summary.
  // pk_data_loading_depth counts every data-loading range on the thread:
  // torch's DataLoader (DATA_LOADING below), profkit.dataloader_range(), a
  // framework's own.
  if (t_forward_depth > 0 || pk_data_loading_depth() > 0 || PyVectorcall_NARGS(nargsf) < 1) {
    return PyObject_Vectorcall(wrapped, args, nargsf, kwnames);
  }
  // As RecordEvent: recorded only when begun and ended in the same window.
  const uint32_t window = pk_recording_word != 0 && !in_backward_pass() ? pk_recording_word : 0;
  if (window != 0) begin_forward(args[0]);
  t_forward_depth = 1;
  PyObject* result = PyObject_Vectorcall(wrapped, args, nargsf, kwnames);
  t_forward_depth = 0;
  if (window != 0 && window == pk_recording_word) pk_end_event();
  if (result != nullptr && pk_recording_word != 0) keep_forward_installed();  // a compile happens in a call
  return result;
}

// One Backward event per pass the user starts. A pass started while one
// runs (torch.autograd.grad or backward in a backward hook or a custom
// Function's backward, reentrant checkpointing's recompute pass) is part of
// it: on the autograd engine's device threads it would be a second Backward
// call in the Model summary, counted twice. Nor is a pass torch.compile runs
// while it compiles (see g_is_compiling) an event.
PyObject* call_backward(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  const auto* self = reinterpret_cast<CallRange*>(callable);
  uint32_t window = pk_recording_word;
  if (window != 0 && (in_backward_pass() || compiling())) window = 0;
  if (window != 0) pk_begin_event(self->name, PK_EVENT_BACKWARD);
  PyObject* result = PyObject_Vectorcall(self->wrapped, args, nargsf, kwnames);
  if (window != 0 && window == pk_recording_word) pk_end_event();
  if (result != nullptr && pk_recording_word != 0) keep_forward_installed();  // a compiled step's own backward
  return result;
}

// torch.autograd's _engine_run_backward, which both torch.autograd.backward
// (accumulate_grad=True; recorded by the BACKWARD range around it) and
// torch.autograd.grad (accumulate_grad=False) call. Wrapping the engine entry
// rather than torch.autograd.grad leaves that function torch's own: Dynamo
// knows it by identity (it traces it into the graph with trace_autograd_ops,
// where anything else would be a graph break), and torch.func's transforms
// call it too. A call that does not say accumulate_grad=False is passed
// through unrecorded.
bool accumulates_no_grad(PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  if (kwnames == nullptr) return false;
  const Py_ssize_t positional = PyVectorcall_NARGS(nargsf);
  const Py_ssize_t n = PyTuple_GET_SIZE(kwnames);
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), "accumulate_grad") == 0) {
      return args[positional + i] == Py_False;
    }
  }
  return false;
}

PyObject* call_grad(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  const auto* self = reinterpret_cast<CallRange*>(callable);
  if (pk_recording_word == 0 || !accumulates_no_grad(args, nargsf, kwnames)) {
    return PyObject_Vectorcall(self->wrapped, args, nargsf, kwnames);
  }
  return call_backward(callable, args, nargsf, kwnames);
}

PyObject* call_data_loading(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  const auto* self = reinterpret_cast<CallRange*>(callable);
  pk_data_loading_begin(self->name);
  PyObject* result = PyObject_Vectorcall(self->wrapped, args, nargsf, kwnames);
  pk_data_loading_end();
  if (result != nullptr && pk_recording_word != 0) keep_forward_installed();  // once per batch of any loop
  return result;
}

PyObject* make(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* wrapped = nullptr;
  int kind = -1;
  const char* name = "";
  static const char* kKeywords[] = {"wrapped", "kind", "name", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Oi|s:CallRange", const_cast<char**>(kKeywords), &wrapped, &kind,
                                   &name)) {
    return nullptr;
  }
  if (!PyCallable_Check(wrapped)) {
    PyErr_Format(PyExc_TypeError, "CallRange: expected a callable of torch's to wrap, got %R", wrapped);
    return nullptr;
  }
  vectorcallfunc call = nullptr;
  switch (kind) {
    case kForward:
      call = call_forward;
      break;
    case kBackward:
      call = call_backward;
      break;
    case kDataLoading:
      call = call_data_loading;
      break;
    case kGrad:
      call = call_grad;
      break;
    default:
      PyErr_Format(PyExc_ValueError, "CallRange: kind must be FORWARD, BACKWARD, GRAD or DATA_LOADING, not %d", kind);
      return nullptr;
  }
  if (kind != kForward && name[0] == '\0') {
    PyErr_SetString(PyExc_ValueError, "CallRange: BACKWARD, GRAD and DATA_LOADING ranges need a name");
    return nullptr;
  }
  const pk_name_id name_id = kind == kForward ? 0 : pk_intern(name);
  if (kind != kForward && name_id == 0) {
    PyErr_Format(PyExc_MemoryError, "CallRange: cannot intern %s: %s", name, pk_last_error());
    return nullptr;
  }
  auto* self = reinterpret_cast<CallRange*>(type->tp_alloc(type, 0));
  if (self == nullptr) return nullptr;
  self->vectorcall = call;
  Py_INCREF(wrapped);
  self->wrapped = wrapped;
  self->name = name_id;
  return reinterpret_cast<PyObject*>(self);
}

void dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  Py_CLEAR(reinterpret_cast<CallRange*>(self)->wrapped);
  type->tp_free(self);
  Py_DECREF(type);  // instances of heap types own a reference to their type
}

int traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(reinterpret_cast<CallRange*>(self)->wrapped);
  return 0;
}

int clear(PyObject* self) {
  Py_CLEAR(reinterpret_cast<CallRange*>(self)->wrapped);
  return 0;
}

// Looked up on an instance (module.__call__, and so super().__call__ in a
// subclass's own __call__, as torch.compile's OptimizedModule has): bound to
// it, a range like any call. Looked up on the class (nn.Module.__call__): the
// callable it wraps, as if it were not there. That is what keeps
// torch.compile working inside a window: for each submodule call it traces,
// Dynamo inlines what `type(module).__call__` names, and a C callable it
// cannot trace would be a graph break (an error with fullgraph=True) that
// leaves the frame uncompiled for good. The interpreter's own calls through
// the type's slot (`module(x)`, `next(iterator)`) take a method descriptor
// unbound, without this lookup.
PyObject* get(PyObject* self, PyObject* instance, PyObject* owner) {
  PyObject* wrapped = reinterpret_cast<CallRange*>(self)->wrapped;
  if (instance != nullptr && instance != Py_None) return PyMethod_New(self, instance);
  if (wrapped == nullptr) {  // cleared by the garbage collector
    Py_INCREF(self);
    return self;
  }
  const descrgetfunc wrapped_get = Py_TYPE(wrapped)->tp_descr_get;
  if (wrapped_get == nullptr) {
    Py_INCREF(wrapped);
    return wrapped;
  }
  return wrapped_get(wrapped, nullptr, owner);
}

// Everything not CallRange's own (__name__, __qualname__...) is the wrapped
// callable's, as functools.wraps would copy it. __module__ and __doc__ are
// asked of it first: the type has its own ("profkit_torch_hook", tp_doc).
bool is_forwarded_first(PyObject* attribute) {
  return PyUnicode_Check(attribute) && (PyUnicode_CompareWithASCIIString(attribute, "__module__") == 0 ||
                                        PyUnicode_CompareWithASCIIString(attribute, "__doc__") == 0);
}

PyObject* getattro(PyObject* self, PyObject* attribute) {
  PyObject* wrapped = reinterpret_cast<CallRange*>(self)->wrapped;
  if (wrapped != nullptr && is_forwarded_first(attribute)) return PyObject_GetAttr(wrapped, attribute);
  PyObject* found = PyObject_GenericGetAttr(self, attribute);
  if (found != nullptr || wrapped == nullptr || !PyErr_ExceptionMatches(PyExc_AttributeError)) return found;
  PyErr_Clear();
  return PyObject_GetAttr(wrapped, attribute);
}

PyObject* get_wrapped(PyObject* self, void*) {
  PyObject* wrapped = reinterpret_cast<CallRange*>(self)->wrapped;
  if (wrapped == nullptr) Py_RETURN_NONE;
  Py_INCREF(wrapped);
  return wrapped;
}

PyObject* get_home(PyObject* self, void*) {
  PyObject* home = reinterpret_cast<PyObject*>(g_home_range) == self ? g_home_owner : Py_None;
  Py_INCREF(home);
  return home;
}

// `range.home = cls`: keep this FORWARD range installed as cls.__call__ while
// windows record (see g_home_range); `range.home = None`: stop (only if it is
// this range's). Set by the integration as it installs and removes the range.
int set_home(PyObject* self, PyObject* value, void*) {
  auto* range = reinterpret_cast<CallRange*>(self);
  if (value == nullptr || value == Py_None) {
    if (g_home_range == range) {
      Py_CLEAR(g_home_owner);
      g_home_range = nullptr;
      Py_DECREF(self);
    }
    return 0;
  }
  if (!PyType_Check(value)) {
    PyErr_Format(PyExc_TypeError, "CallRange.home: expected a class or None, got %R", value);
    return -1;
  }
  if (range->vectorcall != call_forward) {
    PyErr_SetString(PyExc_ValueError, "CallRange.home: only a FORWARD range has a home");
    return -1;
  }
  Py_INCREF(self);
  Py_INCREF(value);
  CallRange* old_range = g_home_range;
  PyObject* old_owner = g_home_owner;
  g_home_range = range;
  g_home_owner = value;
  Py_XDECREF(old_owner);
  Py_XDECREF(reinterpret_cast<PyObject*>(old_range));
  return 0;
}

PyGetSetDef kGetSet[] = {
    {"__wrapped__", get_wrapped, nullptr, "the callable of torch's this wraps", nullptr},
    {"home", get_home, set_home,
     "the class this FORWARD range is kept installed on as __call__ while windows record, or None", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyMemberDef kMembers[] = {
    // Where instances keep their vectorcall function (heap types say so here).
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(CallRange, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

PyType_Slot kSlots[] = {
    {Py_tp_doc, const_cast<char*>("CallRange(wrapped, kind, name=''): a callable of torch's whose calls are "
                                  "profkit ranges (see FORWARD, BACKWARD, GRAD, DATA_LOADING)")},
    {Py_tp_new, reinterpret_cast<void*>(make)},
    {Py_tp_dealloc, reinterpret_cast<void*>(dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(clear)},
    {Py_tp_descr_get, reinterpret_cast<void*>(get)},
    {Py_tp_getattro, reinterpret_cast<void*>(getattro)},
    {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
    {Py_tp_getset, kGetSet},
    {Py_tp_members, kMembers},
    {0, nullptr},
};

PyType_Spec kSpec = {
    "profkit_torch_hook.CallRange",
    sizeof(CallRange),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_METHOD_DESCRIPTOR | Py_TPFLAGS_HAVE_VECTORCALL,
    kSlots,
};

}  // namespace

bool add_call_range_type(PyObject* module) {
  if (PyModule_AddIntConstant(module, "FORWARD", kForward) < 0 ||
      PyModule_AddIntConstant(module, "BACKWARD", kBackward) < 0 ||
      PyModule_AddIntConstant(module, "DATA_LOADING", kDataLoading) < 0 ||
      PyModule_AddIntConstant(module, "GRAD", kGrad) < 0) {
    return false;
  }
  if (g_graph_task_id == nullptr) {
    PyObject* torch_c = PyImport_ImportModule("torch._C");
    if (torch_c == nullptr) return false;
    g_graph_task_id = PyObject_GetAttrString(torch_c, "_current_graph_task_id");  // kept for the process
    Py_DECREF(torch_c);
    if (g_graph_task_id == nullptr) PyErr_Clear();
  }
  if (g_get_dispatch_mode == nullptr) {
    PyObject* torch_c = PyImport_ImportModule("torch._C");
    if (torch_c == nullptr) return false;
    g_get_dispatch_mode = PyObject_GetAttrString(torch_c, "_get_dispatch_mode");  // kept for the process
    PyObject* keys = PyObject_GetAttrString(torch_c, "_TorchDispatchModeKey");
    Py_DECREF(torch_c);
    if (keys != nullptr) {
      g_fake_mode_key = PyObject_GetAttrString(keys, "FAKE");  // kept for the process
      g_proxy_mode_key = PyObject_GetAttrString(keys, "PROXY");
      Py_DECREF(keys);
    }
    PyErr_Clear();  // an older torch: is_compiling() alone decides
  }
  if (g_is_compiling == nullptr) {
    PyObject* compiler = PyImport_ImportModule("torch.compiler");
    if (compiler != nullptr) {
      g_is_compiling = PyObject_GetAttrString(compiler, "is_compiling");  // kept for the process
      Py_DECREF(compiler);
    }
    if (g_is_compiling == nullptr) PyErr_Clear();  // an older torch: every pass is recorded
  }
  if (g_call_name == nullptr) {
    g_call_name = PyUnicode_InternFromString("__call__");  // kept for the process
    if (g_call_name == nullptr) return false;
  }
  PyObject* type = PyType_FromSpec(&kSpec);
  if (type == nullptr) return false;
  if (PyModule_AddObject(module, "CallRange", type) < 0) {  // steals the reference on success only
    Py_DECREF(type);
    return false;
  }
  return true;
}

}  // namespace profkit_torch
