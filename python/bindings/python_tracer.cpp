// The Python call tracer behind Profiler(with_stack=True): every Python
// function call and every built-in (C) function call on the thread that
// drives the Profiler becomes a PythonOp event, named as torch.profiler's
// with_stack names them ("/path/train.py(12): Model.forward",
// "<built-in method item of Tensor object>"), so that operators and ranges
// nest under the Python code that ran them -- in the timeline, the summary's
// nesting and the folded stacks of export_stacks.
//
// How: a C profile function (PyEval_SetProfile, what cProfile uses) that
// keeps a shadow stack of the calls open on the thread and records each call
// when it returns, through pk_complete_event. Begin/end events could not be
// used: a Python call returns while the events it began go on (a
// RecordEvent's __enter__ begins a range that its with block ends), so the
// calls do not nest last-in-first-out with the engine's events; recorded
// whole, they are nested by time at collect.
//
// What is left out: profkit's own frames (its package's code, and built-in
// functions of its modules and types) and everything they call, so that the
// Profiler's bookkeeping (step(), the state changes, the timer) does not
// show; calls that were open when the tracer started (they began before the
// window). Calls still open when the window closes are recorded up to the
// close (stop()).
//
// Cost: one profile-function call per Python and C call (CPython's own
// overhead of a profile function, plus a clock read at the call and a clock
// read and one record at the return); names come from caches keyed by code
// object and by built-in function, so a name is built and interned once.
//
// Thread-safety: start/stop and the profile function run with the GIL
// held; the tracer is per thread (PyEval_SetProfile sets the calling
// thread's). The caches are guarded by the GIL. A thread whose tracer was
// stopped from another thread removes it at its next call.
#include <Python.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "binding.h"

namespace profkit_py {
namespace {

// Bumped by every start and stop; a thread's tracer whose generation is not
// the current one removes itself.
std::atomic<uint64_t> g_generation{0};
std::string g_own_prefix;  // profkit's package directory, with a trailing separator

// The name of a call that is not recorded: profkit's own (and then nothing
// it calls is), or one begun while not recording.
constexpr pk_name_id kLeftOut = 0;

// A call open on the thread: when it began and what to record it as.
struct OpenCall {
  uint64_t start_ns;
  pk_name_id name;       // kLeftOut: not recorded
  uint32_t window;       // the recording window it began in
  bool leaves_out_all;   // profkit's own: the calls it makes are not recorded either
  bool builtin;          // a built-in function's call (made from `frame`)
  PyFrameObject* frame;  // the call's frame (a built-in's: its caller's); identity only
};

struct ThreadTracer {
  uint64_t generation = 0;  // the start() that installed it; 0: not installed
  std::vector<OpenCall> open;
};

thread_local ThreadTracer t_tracer;

// Name caches. Keys hold a reference to the object they are keyed by, so that
// no other object takes its address while it is cached; released by stop().
// A cache past kMaxCached entries (code made by exec in a loop) starts over.
constexpr size_t kMaxCached = 1 << 16;
std::unordered_map<PyObject*, pk_name_id> g_code_names;  // code object -> name
struct BuiltinKey {
  const PyMethodDef* method;
  PyObject* self_type;  // the bound object's type, or nullptr for a module function
  bool operator==(const BuiltinKey& o) const { return method == o.method && self_type == o.self_type; }
};
struct BuiltinKeyHash {
  size_t operator()(const BuiltinKey& k) const {
    return std::hash<const void*>()(k.method) ^ (std::hash<const void*>()(k.self_type) << 1);
  }
};
std::unordered_map<BuiltinKey, pk_name_id, BuiltinKeyHash> g_builtin_names;

void release_caches() {
  for (auto& [code, name] : g_code_names) Py_DECREF(code);
  g_code_names.clear();
  for (auto& [key, name] : g_builtin_names) Py_XDECREF(key.self_type);
  g_builtin_names.clear();
}

// UTF-8 of a str object ("?" for anything else, or text that will not encode).
std::string utf8_of(PyObject* text) {
  if (text == nullptr || !PyUnicode_Check(text)) return "?";
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(text, &size);
  if (data == nullptr) {
    PyErr_Clear();
    return "?";
  }
  return std::string(data, static_cast<size_t>(size));
}

bool is_profkit_name(const char* dotted) {
  return dotted != nullptr && (std::strncmp(dotted, "profkit.", 8) == 0 || std::strcmp(dotted, "profkit") == 0);
}

pk_name_id code_name(PyCodeObject* code) {
  PyObject* key = reinterpret_cast<PyObject*>(code);
  const auto found = g_code_names.find(key);
  if (found != g_code_names.end()) return found->second;
  if (g_code_names.size() >= kMaxCached) {
    for (auto& [cached, name] : g_code_names) Py_DECREF(cached);
    g_code_names.clear();
  }
  const std::string file = utf8_of(code->co_filename);
  pk_name_id name = kLeftOut;
  if (g_own_prefix.empty() || file.compare(0, g_own_prefix.size(), g_own_prefix) != 0) {
#if PY_VERSION_HEX >= 0x030B0000
    PyObject* function = code->co_qualname;
#else
    PyObject* function = code->co_name;
#endif
    const std::string text = file + "(" + std::to_string(code->co_firstlineno) + "): " + utf8_of(function);
    name = pk_intern(text.c_str());
  }
  Py_INCREF(key);
  g_code_names.emplace(key, name);
  return name;
}

pk_name_id builtin_name(PyObject* callable) {
  if (!PyCFunction_Check(callable)) {  // CPython passes built-in functions only
    static const pk_name_id other = pk_intern("<built-in callable>");
    return other;
  }
  auto* function = reinterpret_cast<PyCFunctionObject*>(callable);
  PyObject* self = function->m_self;
  // pybind11 binds its functions to a record object of its own, not to the
  // module: they read as module functions (m_module names the module).
  const bool bound = self != nullptr && !PyModule_Check(self) &&
                     std::strncmp(Py_TYPE(self)->tp_name, "pybind11_builtins.", 18) != 0;
  const BuiltinKey key{function->m_ml, bound ? reinterpret_cast<PyObject*>(Py_TYPE(self)) : nullptr};
  const auto found = g_builtin_names.find(key);
  if (found != g_builtin_names.end()) return found->second;
  if (g_builtin_names.size() >= kMaxCached) {
    for (auto& [cached, name] : g_builtin_names) Py_XDECREF(cached.self_type);
    g_builtin_names.clear();
  }
  std::string text;
  bool own = false;
  if (bound) {
    const char* type_name = Py_TYPE(self)->tp_name;
    own = is_profkit_name(type_name);
    text = std::string("<built-in method ") + function->m_ml->ml_name + " of " + type_name + " object>";
  } else {
    const std::string module = function->m_module != nullptr ? utf8_of(function->m_module) : "";
    own = is_profkit_name(module.c_str());
    text = "<built-in function " + (module.empty() || module == "?" ? "" : module + ".") + function->m_ml->ml_name + ">";
  }
  const pk_name_id name = own ? kLeftOut : pk_intern(text.c_str());
  Py_XINCREF(key.self_type);
  g_builtin_names.emplace(key, name);
  return name;
}

// Records the call on top of the stack, ending now, if it is to be recorded.
void record(const OpenCall& call, uint64_t now_ns) {
  if (call.name != kLeftOut && call.window == pk_recording_word) {
    pk_complete_event(call.name, PK_EVENT_PYTHON_OP, call.start_ns, now_ns);
  }
}

// Whether the code running in `caller` is profkit's own.
bool is_own_frame(PyFrameObject* caller) {
  if (caller == nullptr) return false;
  PyCodeObject* code = PyFrame_GetCode(caller);
  const bool own = code_name(code) == kLeftOut;
  Py_DECREF(code);
  return own;
}

void on_call(ThreadTracer& t, PyFrameObject* frame, bool builtin, PyObject* function) {
  const uint32_t window = pk_recording_word;
  bool own;
  if (!t.open.empty()) {
    own = t.open.back().leaves_out_all;
  } else if (builtin) {
    own = is_own_frame(frame);  // a call from a frame that began before the tracer
  } else {
    PyFrameObject* caller = PyFrame_GetBack(frame);
    own = is_own_frame(caller);
    Py_XDECREF(caller);
  }
  pk_name_id name = kLeftOut;
  if (!own && window != 0) {
    if (builtin) {
      name = builtin_name(function);
    } else {
      PyCodeObject* code = PyFrame_GetCode(frame);
      name = code_name(code);
      Py_DECREF(code);
    }
    own = name == kLeftOut;
  }
  t.open.push_back({name == kLeftOut ? 0 : pk_now_ns(), name, window, own, builtin, frame});
}

// Pairs a return with its call by frame: a return that matches no open call
// is one of a call that began before the tracer (the tracer's own start()
// returning, the frames below the window).
void on_return(ThreadTracer& t, PyFrameObject* frame, bool builtin) {
  const auto pop_and_record = [&] {
    const OpenCall call = t.open.back();
    t.open.pop_back();
    if (call.name != kLeftOut) record(call, pk_now_ns());
    return call.builtin;
  };
  if (builtin) {
    if (!t.open.empty() && t.open.back().frame == frame && t.open.back().builtin) pop_and_record();
    return;
  }
  // A Python return also ends the built-in calls made from its frame whose
  // returns went unseen.
  while (!t.open.empty() && t.open.back().frame == frame) {
    if (!pop_and_record()) return;
  }
}

int on_call_event(PyObject*, PyFrameObject* frame, int what, PyObject* arg) {
  ThreadTracer& t = t_tracer;
  if (t.generation != g_generation.load(std::memory_order_relaxed)) {
    // stop() ran on another thread: this thread's tracer goes now.
    t.open.clear();
    t.generation = 0;
    PyEval_SetProfile(nullptr, nullptr);
    return 0;
  }
  switch (what) {
    case PyTrace_CALL:
      on_call(t, frame, false, nullptr);
      break;
    case PyTrace_C_CALL:
      on_call(t, frame, true, arg);
      break;
    case PyTrace_RETURN:
      on_return(t, frame, false);
      break;
    case PyTrace_C_RETURN:
    case PyTrace_C_EXCEPTION:
      on_return(t, frame, true);
      break;
    default:
      break;
  }
  return 0;
}

// Records the calls still open on this thread as ending now.
void flush_open_calls() {
  const uint64_t now = pk_now_ns();
  for (auto it = t_tracer.open.rbegin(); it != t_tracer.open.rend(); ++it) record(*it, now);
}

// python_tracer_start(own_prefix): traces this thread's calls from now on.
// Returns False (tracing nothing) when another profile function (cProfile, a
// profiler of another tool) is set on the thread: profkit does not replace it.
bool start(const std::string& own_prefix) {
  PyThreadState* state = PyThreadState_Get();
  if (state->c_profilefunc != nullptr && state->c_profilefunc != on_call_event) return false;
  g_own_prefix = own_prefix;
  t_tracer.open.clear();
  t_tracer.generation = g_generation.fetch_add(1, std::memory_order_relaxed) + 1;
  PyEval_SetProfile(on_call_event, nullptr);
  return true;
}

// python_tracer_stop(): flushes, removes this thread's tracer and releases the
// name caches; a tracer left on another thread removes itself.
void stop() {
  if (t_tracer.generation != 0) {
    flush_open_calls();
    if (PyThreadState_Get()->c_profilefunc == on_call_event) PyEval_SetProfile(nullptr, nullptr);
    t_tracer.open.clear();
    t_tracer.generation = 0;
  }
  g_generation.fetch_add(1, std::memory_order_relaxed);
  release_caches();
}

}  // namespace

void bind_python_tracer(py::module_& m) {
  m.def("python_tracer_start", &start, py::arg("own_prefix"),
        "Traces this thread's Python and built-in calls as PythonOp events (with_stack); "
        "False when another profile function is set on the thread. own_prefix: profkit's package "
        "directory, whose code is left out.");
  m.def("python_tracer_stop", &stop, "Records this thread's open calls up to now and stops tracing.");
}

}  // namespace profkit_py
