// The Python call tracer behind Profiler(with_stack=True): every Python
// function call and every built-in (C) function call of a recording window
// becomes a PythonOp event, named as torch.profiler's
// with_stack names them ("/path/train.py(12): Model.forward",
// "<built-in method item of Tensor object>"), so that operators and ranges
// nest under the Python code that ran them -- in the timeline, the summary's
// nesting and the folded stacks of export_stacks.
//
// How: a C profile function (PyEval_SetProfile, what cProfile uses) that
// keeps a shadow stack of the calls open on the thread and records each call
// when it returns, through pk_complete_event_ticks. Begin/end events could not be
// used: a Python call returns while the events it began go on (a
// RecordEvent's __enter__ begins a range that its with block ends), so the
// calls do not nest last-in-first-out with the engine's events; recorded
// whole, they are nested by time at collect. A return is paired with its call
// by frame, so that returns of calls the tracer never saw begin (those open
// when it started) are told apart.
//
// What is left out: profkit's own code -- its package's Python functions and
// the built-in functions of its modules and types -- and everything it calls,
// so that the Profiler's bookkeeping (step(), its timer, the engine calls)
// does not show; except that profkit's functions that call the user's code
// (a function under @RecordEvent, a dataset read through wrap_dataloader,
// the PyTorch integration's wrappers) pass it through: they are left out,
// as are the built-ins they call themselves, but the Python code they call
// is recorded (not what profkit's own built-ins among those call: they are
// hidden there too). Code of another library's that runs only for profkit
// (torch's wrapper around the pure-Python operator recorder's dispatch
// mode) is hidden as profkit's own. Calls open when the tracer started are
// left out (they began before the window); calls still open when the window
// closes are recorded up to the close (stop()).
//
// Cost: one profile-function call per Python and C call (CPython's own
// overhead of a profile function, plus a clock read at the call and a clock
// read and one record at the return); the clock is the engine's raw one
// (pk_now_ticks: the TSC, where pk_now_ns's clock_gettime took twice as
// long); names come from caches keyed by code object and by built-in
// function, so a name is built and interned once.
//
// Thread-safety: start/stop and the profile function run with the GIL held,
// which guards the caches. Each thread keeps its own stack of open calls
// (thread-local) and records on itself; start() and stop() set and remove
// the profile function of every thread of the interpreter, a thread started
// in the window takes it from threading's profile hook (adopt()), and a thread
// that finds the tracing it belongs to over removes its own.
#include <Python.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "binding.h"
#include "per_thread.h"

namespace profkit_py {
namespace {

// The generation of the tracing under way (each start() makes a new one), 0
// when none is: a thread's tracer adopts the current generation at its first
// call (forgetting what it kept from an earlier one) and removes itself when
// there is none.
std::atomic<uint64_t> g_active{0};
uint64_t g_last_generation = 0;
std::string g_own_prefix;  // profkit's package directory, with a trailing separator

// How a call is treated.
enum class CallKind : uint8_t {
  kRecorded,     // recorded, as are its callees
  kHidden,       // profkit's own, or run only for it: not recorded, nor anything it calls
  kPassThrough,  // profkit's, calling the user's code: not recorded, nor its built-ins; its Python callees are
};

struct CodeInfo {
  pk_name_id name;  // 0 unless kRecorded
  CallKind kind;
};

// A call open on the thread: when it began and what to record it as.
struct OpenCall {
  uint64_t start_ticks;  // pk_now_ticks()
  pk_name_id name;       // 0: not recorded (see kind, or it began while not recording)
  uint32_t window;       // the recording window it began in
  CallKind kind;         // what its callees inherit
  bool builtin;          // a built-in function's call (made from `frame`)
  PyFrameObject* frame;  // the call's frame (a built-in's: its caller's); identity only
};

struct ThreadTracer {
  uint64_t generation = 0;       // the tracing its stack belongs to
  uint32_t named_in_window = 0;  // the recording window name_thread_in_window last ran for here
  std::vector<OpenCall> open;
};

// Behind a thread-local pointer (per_thread.h), read twice per Python call:
// made at the thread's first traced call, freed when the thread exits.
using ThreadTracers = PerThread<ThreadTracer>;

// Caches. Keys hold a reference to the object they are keyed by, so that no
// other object takes its address while it is cached; released by stop(). A
// cache past kMaxCached entries (code made by exec in a loop) starts over.
constexpr size_t kMaxCached = 1 << 16;
std::unordered_map<PyObject*, CodeInfo> g_codes;  // code object -> how its calls are treated
// Code objects whose treatment profkit says (kPassThrough: profkit's that call
// the user's code; kHidden: another library's that run only for profkit),
// not their file.
std::unordered_map<PyObject*, CallKind> g_marked;
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
std::unordered_map<BuiltinKey, pk_name_id, BuiltinKeyHash> g_builtins;  // 0: profkit's own

// Direct-mapped caches in front of the maps, for the calls of a training
// step's hot code: one load where a map lookup divides and chases a node.
// Their keys are borrowed: the maps hold the references.
constexpr size_t kSlots = 1024;
struct CodeSlot {
  PyObject* code = nullptr;
  CodeInfo info{};
};
struct BuiltinSlot {
  BuiltinKey key{nullptr, nullptr};
  pk_name_id name = 0;
};
std::array<CodeSlot, kSlots> g_code_slots;
std::array<BuiltinSlot, kSlots> g_builtin_slots;

size_t slot_of(const void* key) {
  // Fibonacci hashing: the top bits of the product spread aligned addresses.
  return static_cast<size_t>((reinterpret_cast<uintptr_t>(key) * 0x9E3779B97F4A7C15ull) >> 54) % kSlots;
}

void forget_codes() {
  g_code_slots.fill(CodeSlot{});
  for (auto& entry : g_codes) Py_DECREF(entry.first);
  g_codes.clear();
}

void forget_builtins() {
  g_builtin_slots.fill(BuiltinSlot{});
  for (auto& entry : g_builtins) Py_XDECREF(entry.first.self_type);
  g_builtins.clear();
}

void release_caches() {
  forget_codes();
  forget_builtins();
  for (auto& entry : g_marked) Py_DECREF(entry.first);
  g_marked.clear();
}

// UTF-8 of a str object ("?" for anything else). A lone surrogate (a file
// name that is not UTF-8, decoded with surrogateescape) is U+FFFD, as in
// every name (without_surrogates).
std::string utf8_of(PyObject* text) {
  if (text == nullptr || !PyUnicode_Check(text)) return "?";
  Py_ssize_t size = 0;
  PyObject* holder = nullptr;
  const char* data = utf8_replacing_surrogates(text, &size, &holder);
  if (data == nullptr) {  // out of memory
    PyErr_Clear();
    return "?";
  }
  std::string utf8(data, static_cast<size_t>(size));
  Py_DECREF(holder);
  return utf8;
}

bool is_profkit_name(const char* dotted) {
  return dotted != nullptr && (std::strncmp(dotted, "profkit.", 8) == 0 || std::strcmp(dotted, "profkit") == 0);
}

CodeInfo code_info(PyCodeObject* code) {
  PyObject* key = reinterpret_cast<PyObject*>(code);
  CodeSlot& slot = g_code_slots[slot_of(key)];
  if (slot.code == key) return slot.info;
  const auto found = g_codes.find(key);
  if (found != g_codes.end()) {
    slot = {key, found->second};
    return found->second;
  }
  if (g_codes.size() >= kMaxCached) forget_codes();
  const std::string file = utf8_of(code->co_filename);
  CodeInfo info{0, CallKind::kRecorded};
  const auto marked = g_marked.find(key);
  if (marked != g_marked.end()) {
    info.kind = marked->second;
  } else if (!g_own_prefix.empty() && file.compare(0, g_own_prefix.size(), g_own_prefix) == 0) {
    info.kind = CallKind::kHidden;
  } else {
#if PY_VERSION_HEX >= 0x030B0000
    PyObject* function = code->co_qualname;
#else
    PyObject* function = code->co_name;
#endif
    const std::string text = file + "(" + std::to_string(code->co_firstlineno) + "): " + utf8_of(function);
    info.name = pk_intern(text.c_str());
  }
  Py_INCREF(key);
  g_codes.emplace(key, info);
  slot = {key, info};
  return info;
}

CallKind frame_kind(PyFrameObject* frame) {
  if (frame == nullptr) return CallKind::kRecorded;
  PyCodeObject* code = PyFrame_GetCode(frame);
  const CallKind kind = code_info(code).kind;
  Py_DECREF(code);
  return kind;
}

// The name of a built-in function's calls; 0 for profkit's own.
pk_name_id builtin_name(PyObject* callable) {
  if (!PyCFunction_Check(callable)) {  // CPython passes built-in functions only
    static const pk_name_id other = pk_intern("<built-in callable>");
    return other;
  }
  auto* function = reinterpret_cast<PyCFunctionObject*>(callable);
  PyObject* self = function->m_self;
  // pybind11 binds its functions to a record object of its own, not to the
  // module: they read as module functions (m_module names the module).
  const bool bound =
      self != nullptr && !PyModule_Check(self) && std::strncmp(Py_TYPE(self)->tp_name, "pybind11_builtins.", 18) != 0;
  const BuiltinKey key{function->m_ml, bound ? reinterpret_cast<PyObject*>(Py_TYPE(self)) : nullptr};
  BuiltinSlot& slot = g_builtin_slots[slot_of(key.method) ^ (slot_of(key.self_type) >> 1)];
  if (slot.key == key) return slot.name;
  const auto found = g_builtins.find(key);
  if (found != g_builtins.end()) {
    slot = {key, found->second};
    return found->second;
  }
  if (g_builtins.size() >= kMaxCached) forget_builtins();
  std::string text;
  bool own = false;
  if (bound) {
    const char* type_name = Py_TYPE(self)->tp_name;
    own = is_profkit_name(type_name);
    text = std::string("<built-in method ") + function->m_ml->ml_name + " of " + type_name + " object>";
  } else {
    const std::string module = function->m_module != nullptr ? utf8_of(function->m_module) : "";
    own = is_profkit_name(module.c_str());
    text =
        "<built-in function " + (module.empty() || module == "?" ? "" : module + ".") + function->m_ml->ml_name + ">";
  }
  const pk_name_id name = own ? 0 : pk_intern(text.c_str());
  Py_XINCREF(key.self_type);
  g_builtins.emplace(key, name);
  slot = {key, name};
  return name;
}

// Records a call ending now, if it is to be recorded.
void record(const OpenCall& call, uint64_t now_ticks) {
  if (call.name != 0 && call.window == pk_recording_word) {
    pk_complete_event_ticks(call.name, PK_EVENT_PYTHON_OP, call.start_ticks, now_ticks);
  }
}

void on_call(ThreadTracer& t, PyFrameObject* frame, bool builtin, PyObject* function) {
  // What the caller passes on: the open call on top, or, with none open, a
  // frame that began before the tracer (a Python call's caller is the frame
  // below its own; a built-in's, `frame`).
  CallKind inherited;
  if (!t.open.empty()) {
    inherited = t.open.back().kind;
  } else if (builtin) {
    inherited = frame_kind(frame);
  } else {
    PyFrameObject* caller = PyFrame_GetBack(frame);
    inherited = frame_kind(caller);
    Py_XDECREF(caller);
  }
  pk_name_id name = 0;
  CallKind kind = CallKind::kHidden;
  if (inherited == CallKind::kHidden) {
    // Inside profkit's own code: nothing is recorded.
  } else if (builtin) {
    // A pass-through function's own built-ins are its machinery; they pass
    // through too, so that what they call (next() into a dataset) is
    // recorded. But profkit's own built-ins are hidden there as anywhere:
    // what they call is profkit's bookkeeping (RecordEvent.begin() naming
    // the thread through threading), not the user's code.
    name = builtin_name(function);
    kind = name == 0 ? CallKind::kHidden : inherited;
    if (inherited == CallKind::kPassThrough) name = 0;
  } else {
    PyCodeObject* code = PyFrame_GetCode(frame);
    const CodeInfo info = code_info(code);
    Py_DECREF(code);
    name = info.name;
    kind = info.kind;
  }
  const uint32_t window = pk_recording_word;
  if (window == 0) name = 0;
  if (name != 0 && window != t.named_in_window) {
    // The thread's first recorded call in this window: its lanes are named
    // after its threading.Thread, as RecordEvent's are (a thread that runs
    // no RecordEvent would show the process name). Once per thread and
    // window; per call, one compare on the tracer's own state. (The Python
    // code it runs is not traced: CPython calls no profile function while
    // one runs.)
    t.named_in_window = window;
    name_thread_in_window(window);
  }
  t.open.push_back({name != 0 ? pk_now_ticks() : 0, name, window, kind, builtin, frame});
}

// Pairs a return with its call by frame: a return that matches no open call
// is one of a call that began before the tracer (the tracer's own start()
// returning, the frames below the window).
void on_return(ThreadTracer& t, PyFrameObject* frame, bool builtin) {
  const auto pop_and_record = [&] {
    const OpenCall call = t.open.back();
    t.open.pop_back();
    if (call.name != 0) record(call, pk_now_ticks());
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

// Threads that stopped being traced in the current tracing because memory
// ran out (a name or a stack entry could not be allocated); stop() reports
// them. Changed with the GIL held.
int g_threads_out_of_memory = 0;

// The thread goes untraced for the rest of the tracing, its open calls
// unrecorded: an exception must not leave a C profile function.
void untrace_thread_out_of_memory(ThreadTracer* t) {
  if (t != nullptr) t->open.clear();
  ++g_threads_out_of_memory;
  PyEval_SetProfile(nullptr, nullptr);
}

int on_call_event(PyObject*, PyFrameObject* frame, int what, PyObject* arg) {
  ThreadTracer* const tracer = ThreadTracers::get_or_make();
  if (tracer == nullptr) {
    untrace_thread_out_of_memory(nullptr);
    return 0;
  }
  ThreadTracer& t = *tracer;
  const uint64_t active = g_active.load(std::memory_order_relaxed);
  if (t.generation != active) {
    t.open.clear();
    t.generation = active;
    if (active == 0) {  // stopped, and this thread's tracer left in place: it goes now
      PyEval_SetProfile(nullptr, nullptr);
      return 0;
    }
  }
  try {
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
  } catch (const std::exception&) {  // std::bad_alloc from the stack or a name
    untrace_thread_out_of_memory(&t);
  }
  return 0;
}

bool has_other_profiler(const PyThreadState* state) {
  return state->c_profilefunc != nullptr && state->c_profilefunc != on_call_event;
}

// Sets `function` as the profile function of another thread's state, as
// torch.profiler's Python tracer does: with the GIL held, that thread runs no
// Python code meanwhile.
void set_profile_of(PyThreadState* state, Py_tracefunc function) {
  PyThreadState* const own = PyThreadState_Swap(state);
  PyEval_SetProfile(function, nullptr);
  PyThreadState_Swap(own);
}

// Takes `code`'s treatment from profkit: its calls are `kind`. Any treatment
// cached before (hidden or recorded, by its file) goes.
void mark(PyObject* code, CallKind kind) {
  const auto [marked, added] = g_marked.emplace(code, kind);
  if (!added) {
    marked->second = kind;
  } else {
    Py_INCREF(code);
  }
  CodeSlot& slot = g_code_slots[slot_of(code)];
  if (slot.code == code) slot = CodeSlot{};
  const auto cached = g_codes.find(code);
  if (cached != g_codes.end()) {
    g_codes.erase(cached);
    Py_DECREF(code);
  }
}

void mark_all(const py::iterable& codes, CallKind kind, const char* what) {
  for (const py::handle code : codes) {
    if (!PyCode_Check(code.ptr()))
      throw py::type_error(std::string("python_tracer_start: ") + what + " holds code objects only");
    mark(code.ptr(), kind);
  }
}

// python_tracer_start(own_prefix, pass_through, hidden): traces the calls of
// this thread and of every other thread of the interpreter from now on
// (threads started later: adopt()). Returns (whether this thread is traced, how
// many other threads are not): a thread with another profile function set
// (cProfile, a profiler of another tool) keeps it and is not traced; if this
// thread has one, nothing is.
py::tuple start(const std::string& own_prefix, const py::iterable& pass_through, const py::iterable& hidden) {
  PyThreadState* const own = PyThreadState_Get();
  if (has_other_profiler(own)) return py::make_tuple(false, 0);
  release_caches();
  g_own_prefix = own_prefix;
  mark_all(pass_through, CallKind::kPassThrough, "pass_through");
  mark_all(hidden, CallKind::kHidden, "hidden");
  g_threads_out_of_memory = 0;
  g_active.store(++g_last_generation, std::memory_order_relaxed);
  PyEval_SetProfile(on_call_event, nullptr);
  int not_traced = 0;
  for (PyThreadState* state = PyInterpreterState_ThreadHead(own->interp); state != nullptr;
       state = PyThreadState_Next(state)) {
    if (state == own) continue;
    if (has_other_profiler(state)) {
      ++not_traced;
    } else {
      set_profile_of(state, on_call_event);
    }
  }
  return py::make_tuple(true, not_traced);
}

// python_tracer_adopt(frame): called by the threading profile hook in a
// thread started while tracing, at its first call (`frame`, the thread's
// run()): traces this thread from that call on, in place of the hook. When
// the tracing is over, removes the hook only.
void adopt(const py::object& frame) {
  const uint64_t active = g_active.load(std::memory_order_relaxed);
  if (active == 0 || !PyFrame_Check(frame.ptr())) {
    PyEval_SetProfile(nullptr, nullptr);
    return;
  }
  ThreadTracer* const t = ThreadTracers::get_or_make();
  if (t == nullptr) {
    untrace_thread_out_of_memory(nullptr);
    return;
  }
  t->open.clear();
  t->generation = active;
  PyEval_SetProfile(on_call_event, nullptr);
  try {
    on_call(*t, reinterpret_cast<PyFrameObject*>(frame.ptr()), false, nullptr);
  } catch (const std::exception&) {
    untrace_thread_out_of_memory(t);
  }
}

// python_tracer_stop(): records this thread's open calls up to now and
// removes the tracer from every thread (the other threads' open calls are
// not recorded: they did not end in the window); releases the caches.
// Returns (how many threads stopped being traced early, out of memory;
// whether the program replaced the tracer on this thread during the window
// -- sys.setprofile, cProfile -- after which its calls went unseen: the open
// ones are then left out, their ends unknown, not stretched to the close).
py::tuple stop() {
  PyThreadState* const own = PyThreadState_Get();
  ThreadTracer* const t = ThreadTracers::get();
  const bool traced = t != nullptr && t->generation != 0 && t->generation == g_active.load(std::memory_order_relaxed);
  const bool replaced = traced && own->c_profilefunc != on_call_event;
  if (t != nullptr) {
    if (traced && !replaced) {
      const uint64_t now = pk_now_ticks();
      for (auto it = t->open.rbegin(); it != t->open.rend(); ++it) record(*it, now);
    }
    t->open.clear();
    t->generation = 0;
  }
  g_active.store(0, std::memory_order_relaxed);
  for (PyThreadState* state = PyInterpreterState_ThreadHead(own->interp); state != nullptr;
       state = PyThreadState_Next(state)) {
    if (state->c_profilefunc != on_call_event) continue;
    if (state == own) {
      PyEval_SetProfile(nullptr, nullptr);
    } else {
      set_profile_of(state, nullptr);
    }
  }
  release_caches();
  const int out_of_memory = g_threads_out_of_memory;
  g_threads_out_of_memory = 0;
  return py::make_tuple(out_of_memory, replaced);
}

// python_tracer_pass_through(code, hidden): a code object of profkit's that
// calls the user's code, made while tracing (a wrapper made as the window
// opened, after start() took the others): treated as start()'s pass_through;
// with hidden, one that runs only for profkit, as start()'s hidden.
void add_marked(const py::handle code, bool hidden) {
  if (!PyCode_Check(code.ptr())) throw py::type_error("python_tracer_pass_through: expected a code object");
  mark(code.ptr(), hidden ? CallKind::kHidden : CallKind::kPassThrough);
}

}  // namespace

void bind_python_tracer(py::module_& m) {
  m.def("python_tracer_start", &start, py::arg("own_prefix"), py::arg("pass_through"), py::arg("hidden") = py::tuple(),
        "Traces the Python and built-in calls of every thread as PythonOp events (with_stack); returns "
        "(whether this thread is traced, how many other threads keep another profile function). "
        "own_prefix: profkit's package directory, whose code is left out; pass_through: code objects "
        "of profkit's that call the user's code, whose Python callees are recorded; hidden: code objects of "
        "another library's that run only for profkit, left out as profkit's own.");
  m.def("python_tracer_pass_through", &add_marked, py::arg("code"), py::arg("hidden") = false,
        "While tracing: a code object of profkit's, made since python_tracer_start, that calls the user's code "
        "(its Python callees are recorded), as python_tracer_start's pass_through; with hidden=True, one of "
        "another library's that runs only for profkit, as python_tracer_start's hidden.");
  m.def("python_tracer_adopt", &adopt, py::arg("frame"),
        "From a thread started while tracing, in its threading profile hook: traces this thread from the "
        "call of `frame` on (or, when tracing is over, removes the hook).");
  m.def("python_tracer_stop", &stop,
        "Records this thread's open calls up to now and stops tracing every thread; returns (how many threads "
        "stopped being traced earlier because memory ran out, whether the program replaced the tracer on this "
        "thread during the window).");
}

}  // namespace profkit_py
