// profkit's native PyTorch hook: at::RecordFunction callbacks that turn every
// aten operator (the forward ones and those autograd runs in backward) into a
// profkit Operator event, and torch's user ranges (record_function) into
// events too, through the C ABI -- the way any framework would call it. The
// module also carries CallRange, the C wrappers that record Forward, Backward
// and data loading (_torch_call_ranges.h), and the allocation reporter of
// profile_memory (_torch_memory.h).
//
// Built against the installed torch on first use by
// profkit/integrations/_torch_native.py (torch is never a build requirement of
// profkit) and loaded as the plain CPython module `profkit_torch_hook`
// (no pybind11, no torch/extension.h: it includes only ATen's RecordFunction).
//
// Cost model. The callbacks are registered with torch only while profkit
// records: a profkit state listener adds them when a recording window opens
// and removes them when it closes, so outside windows PyTorch runs with no
// callback of ours at all (and skips RecordFunction entirely when nothing
// else listens). Inside a window each operator costs RecordFunction's own
// bookkeeping plus one event pair, written inline through the C ABI's thread
// writer (pk_begin_event/pk_end_event when it cannot); names go through
// caches (_torch_op_names.h) that, for a dispatcher operator, read neither its
// name nor profkit's copy: one shared table keyed by the name's address.
//
// Scopes, all in one callback: torch rebuilds its per-thread lists of active
// callbacks often (perf shows LocalCallbackManager::rebuild_scope in every
// training step) and each registered callback adds to that work; one callback
// for two scopes measured ~0.01 ms less per mlp training step than two.
// FUNCTION -- the dispatcher's operators, plus the autograd engine's
// "autograd::engine::evaluate_function: AddmmBackward0" range around each
// backward node, which names the node. The node's own BACKWARD_FUNCTION range
// ("AddmmBackward0") is left out: it spans the same work one level down, and
// observing it makes torch demangle the node's C++ type name once more per
// node (with an empty callback, about a quarter of the cost torch's
// RecordFunction adds to a training step). USER_SCOPE -- record_function
// ranges (on_range_start below). Input shapes and FLOPs (_torch_flops.h) are
// only gathered when asked for (needsInputs is off otherwise, so torch does
// not even copy the inputs).
//
// Which threads: by default the callback is registered thread-locally on
// the thread that opens the window (the one driving the Profiler), and torch
// carries it to the threads that run that thread's work -- the autograd
// engine's device threads, at::launch tasks -- as torch.profiler does.
// enable(all_threads=True) registers it globally instead: every thread's
// operators. The global kind costs more than its callback: with any global
// callback registered, torch copies the global list (a mutex and an
// allocation) each time a ThreadLocalStateGuard sets a thread's state, which
// the autograd engine does twice per backward node (callgrind, mlp training
// step: 20 k instructions fewer for this hook thread-locally, 36 k for a
// callback that only reads the clock; too little to show in wall time).
//
// Thread-safety: the callbacks run on every thread that executes operators
// and only call thread-safe profkit functions. The module functions are
// called with the GIL held; the state listener runs on whichever thread
// changes profkit's state. g_mutex serializes everything that registers or
// removes callbacks. Ownership: the module owns one torch callback handle
// and one profkit listener handle; uninstall() releases them.
#include <ATen/record_function.h>
#include <Python.h>
#include <profkit/profkit.h>

#include "_torch_call_ranges.h"
#include "_torch_flops.h"
#include "_torch_memory.h"
#include "_torch_op_names.h"
#include "_torch_thread_writers.h"
#include "_torch_user_ranges.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <string>

namespace {

using profkit_torch::operator_name_id;

std::mutex g_mutex;                 // guards the handles and flags below
at::CallbackHandle g_callback = 0;  // registered with torch while armed
bool g_callback_global = false;     // g_callback is global (else on g_callback_thread's TLS)
pthread_t g_callback_thread{};      // the thread arm() ran on
uint64_t g_listener = 0;            // profkit state listener while installed
bool g_want_shapes = false;         // what the next arm() asks torch for: input shapes
bool g_want_flops = false;          // ... and FLOPs
bool g_want_all_threads = false;    // what the next arm() registers: global or thread-local
std::atomic<pk_name_id> g_shapes_key{0};
std::atomic<pk_name_id> g_flops_key{0};
// What on_start_with_inputs attaches; set by arm() before it registers.
std::atomic<bool> g_attach_shapes{false};
std::atomic<bool> g_attach_flops{false};

void append_int(std::string& out, int64_t value) {
  char digits[24];
  const auto done = std::to_chars(digits, digits + sizeof digits, value);
  out.append(digits, done.ptr);
}

// "[]" for a tensor without plain sizes, as torch.profiler records it.
void append_sizes(std::string& out, const at::Tensor& tensor) {
  out += '[';
  if (profkit_torch::has_plain_sizes(tensor)) {
    bool first = true;
    for (const int64_t d : tensor.sizes()) {
      if (!first) out += ", ";
      first = false;
      append_int(out, d);
    }
  }
  out += ']';
}

// torch.profiler's "Input Dims" layout: "[[2, 3], [3], []]" -- one entry per
// input, the sizes of a tensor, a list of sizes for a tensor list, [] for
// anything else.
const char* input_shapes(const at::RecordFunction& fn) {
  thread_local std::string out;
  out.clear();
  out += '[';
  bool first = true;
  for (const c10::IValue& value : fn.inputs()) {
    if (!first) out += ", ";
    first = false;
    if (value.isTensor()) {
      append_sizes(out, value.toTensor());
    } else if (value.isTensorList()) {
      out += '[';
      bool first_tensor = true;
      for (const at::Tensor& t : value.toTensorList().vec()) {
        if (!first_tensor) out += ", ";
        first_tensor = false;
        append_sizes(out, t);
      }
      out += ']';
    } else {
      out += "[]";
    }
  }
  out += ']';
  return out.c_str();
}

// ---- user ranges: torch.profiler.record_function and torch's own ----------------
// "Optimizer.step#SGD.step" -> an Optimization event "SGD.step" (torch wraps
// every optimizer step in it); "enumerate(DataLoader)#..." is left out (the
// DATA_LOADING CallRange around the same __next__ records the fetch and its
// reader time); any other range -> a PythonUserDefined event, as torch.profiler
// shows them. Ranges left out are never listed, so their ends find nothing.
constexpr char kOptimizerStep[] = "Optimizer.step#";
constexpr char kDataLoaderNext[] = "enumerate(DataLoader)#";

template <size_t N>
bool starts_with(const char* text, const char (&prefix)[N]) {
  return std::strncmp(text, prefix, N - 1) == 0;
}

// Each range is recorded whole when it ends, with its own times, whatever
// order the ends come in (_torch_user_ranges.h).
PK_HOOK_COLD void on_range_start(const at::RecordFunction& fn, uint32_t window) {
  // An asynchronous range (a c10d Work's "gloo:all_reduce") ends on whatever
  // thread completes the work. profkit's collective wrappers record those calls.
  if (fn.isAsync()) return;
  const char* name = fn.name();
  if (starts_with(name, kDataLoaderNext)) return;
  if (starts_with(name, kOptimizerStep)) {
    const char* step = name + sizeof kOptimizerStep - 1;
    profkit_torch::user_range_begin(fn, profkit_torch::user_range_name_id(fn, step), PK_EVENT_OPTIMIZATION, window);
  } else {
    profkit_torch::user_range_begin(fn, profkit_torch::user_range_name_id(fn, name), PK_EVENT_PYTHON_USER_DEFINED,
                                    window);
  }
}

// A range ended through a future on another thread is not in that thread's
// list: nothing is recorded for it.
PK_HOOK_COLD void on_range_end(const at::RecordFunction& fn) { profkit_torch::user_range_end(fn); }

// ---- the callbacks: operators first, user ranges off the hot path -------------------
// An operator is recorded in the hook's own code through the engine's thread
// writer (PK_INLINE_WRITER, profkit.h; found by torch's thread id,
// _torch_thread_writers.h), with no call into libprofkit in the common case:
// the two calls per operator and the library's code lines they ran were a
// third of the instruction-cache misses the hook added above reading the
// clock in an op-bound training step (callgrind, BENCHMARKS.md). `window` is
// pk_recording_word, read once by the caller; pk_begin_event / pk_end_event
// take every case the writer does not (a new window, a full buffer, ...).
PK_HOOK_HOT inline void begin_operator(const at::RecordFunction& fn, uint32_t window, pk_name_id name) {
#if PK_INLINE_WRITER
  pk_thread_writer* const writer = profkit_torch::thread_writer(fn);
  if (__builtin_expect(writer != nullptr, 1) && pk_writer_try_begin(writer, window, name, PK_EVENT_OPERATOR)) return;
#else
  (void)fn;
  (void)window;
#endif
  pk_begin_event(name, PK_EVENT_OPERATOR);
}

PK_HOOK_HOT inline void end_operator(const at::RecordFunction& fn) {
  const uint32_t window = __atomic_load_n(&pk_recording_word, __ATOMIC_RELAXED);
  if (window == 0) return;  // as pk_end_event: nothing outside a window
#if PK_INLINE_WRITER
  pk_thread_writer* const writer = profkit_torch::thread_writer(fn);
  if (__builtin_expect(writer != nullptr, 1) && pk_writer_try_end(writer, window)) return;
#else
  (void)fn;
#endif
  pk_end_event();
}

// Two start callbacks, so that the common one reads no flag per operator:
// on_start, and on_start_with_inputs when shapes or FLOPs are asked for (it
// needs torch to keep the inputs); arm() registers the one asked for.
PK_HOOK_COLD void on_start_outside_window();

PK_HOOK_HOT std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  const uint32_t window = __atomic_load_n(&pk_recording_word, __ATOMIC_RELAXED);
  if (__builtin_expect(window == 0, 0)) {
    on_start_outside_window();
    return nullptr;
  }
  if (__builtin_expect(fn.scope() != at::RecordScope::FUNCTION, 0)) {
    on_range_start(fn, window);
    return nullptr;
  }
  begin_operator(fn, window, operator_name_id(fn));
  return nullptr;
}

PK_HOOK_HOT std::unique_ptr<at::ObserverContext> on_start_with_inputs(const at::RecordFunction& fn) {
  const uint32_t window = __atomic_load_n(&pk_recording_word, __ATOMIC_RELAXED);
  if (__builtin_expect(window == 0, 0)) {
    on_start_outside_window();
    return nullptr;
  }
  if (fn.scope() != at::RecordScope::FUNCTION) {
    on_range_start(fn, window);
    return nullptr;
  }
  // The writer's open event is the engine's innermost one: the arguments
  // attach to it whichever way it began.
  begin_operator(fn, window, operator_name_id(fn));
  if (g_attach_shapes.load(std::memory_order_relaxed)) {
    pk_event_arg_str(g_shapes_key.load(std::memory_order_relaxed), input_shapes(fn));
  }
  if (g_attach_flops.load(std::memory_order_relaxed)) {
    const int64_t flops = profkit_torch::operator_flops(fn);
    if (flops >= 0) pk_event_arg_int(g_flops_key.load(std::memory_order_relaxed), flops);
  }
  return nullptr;
}

PK_HOOK_HOT void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  if (__builtin_expect(fn.scope() != at::RecordScope::FUNCTION, 0)) {
    on_range_end(fn);
    return;
  }
  end_operator(fn);
}

// ---- registration ------------------------------------------------------------------
bool is_ours(const at::RecordFunctionCallbacksEntry& entry) {
  const auto start = entry.callback_.start();
  return start == on_start || start == on_start_with_inputs;
}

// Takes every callback of ours off the calling thread's TLS list; the number
// taken. Found by function, not by handle: a thread may hold one registered
// under an older handle -- torch's ThreadLocalStateGuard puts back the list
// it saved, so a callback removed inside one (a window closed in a backward
// hook) comes back when the guard ends. A RecordFunction in progress keeps
// its own copy of the callbacks, so this is safe inside a callback too.
size_t thread_local_callbacks_here() {
  const auto& callbacks = at::get_record_function_tls_().sorted_tls_callbacks_;
  return static_cast<size_t>(std::count_if(callbacks.begin(), callbacks.end(), is_ours));
}

size_t remove_thread_local_callbacks() {
  const size_t ours = thread_local_callbacks_here();
  if (ours == 0) return 0;
  at::RecordFunctionTLS kept = at::get_record_function_tls_();
  auto& list = kept.sorted_tls_callbacks_;
  list.erase(std::remove_if(list.begin(), list.end(), is_ours), list.end());
  at::set_record_function_tls_(kept);
  return ours;
}

// An operator on a thread that still holds the callback although no window
// records: the window closed on another thread than the one that opened it
// (or a ThreadLocalStateGuard put the callback back). Thread-local callbacks
// can only be removed by their own thread, so each takes itself off here, at
// its thread's first operator outside a window. (A global one is left to
// disarm(), which is on its way: the window has just closed.)
PK_HOOK_COLD void on_start_outside_window() { remove_thread_local_callbacks(); }

// Both under g_mutex.
void arm() {
  if (g_callback != 0) return;
  const bool inputs = g_want_shapes || g_want_flops;
  g_attach_shapes.store(g_want_shapes, std::memory_order_relaxed);
  g_attach_flops.store(g_want_flops, std::memory_order_relaxed);
  const auto callback = at::RecordFunctionCallback(inputs ? on_start_with_inputs : on_start, on_end)
                            .needsInputs(inputs)
                            .scopes({at::RecordScope::FUNCTION, at::RecordScope::USER_SCOPE});
  remove_thread_local_callbacks();  // one left here would record every operator twice
  g_callback_global = g_want_all_threads;
  g_callback_thread = pthread_self();
  g_callback = g_callback_global ? at::addGlobalCallback(callback) : at::addThreadLocalCallback(callback);
}

void disarm() {
  if (g_callback == 0) return;
  if (g_callback_global) {
    at::removeCallback(g_callback);
  } else if (pthread_equal(g_callback_thread, pthread_self())) {
    remove_thread_local_callbacks();
  }  // else: only its own thread can take it off, at its next operator (on_start_outside_window)
  g_callback = 0;
}

bool is_recording(pk_state state) { return state == PK_STATE_RECORD || state == PK_STATE_RECORD_AND_RETURN; }

// Which install() a state listener belongs to, passed as the listener's
// user pointer. A forked child (a DataLoader worker) inherits the parent's
// listener in its engine but records nothing through this hook unless it
// installs the hook again: forget_after_fork moves to a new generation, so
// the inherited listener finds itself outdated and does nothing, and a new
// install() registers a listener of the new one.
std::atomic<uintptr_t> g_listener_generation{1};

void* listener_token() { return reinterpret_cast<void*>(g_listener_generation.load(std::memory_order_relaxed)); }

// Runs on the thread that changed profkit's state, under profkit's state
// lock: it only registers or removes the torch callback.
// A listener must not throw into the engine (C code): registering with torch
// allocates, and should that fail, the window records no operators (the
// next window tries again) rather than ending the process.
void on_state(pk_state from, pk_state to, void* token) noexcept {
  if (token != listener_token()) return;  // inherited from the parent at a fork
  std::lock_guard<std::mutex> lock(g_mutex);
  try {
    if (is_recording(to) && !is_recording(from)) {
      arm();
    } else if (!is_recording(to) && is_recording(from)) {
      disarm();
    }
  } catch (const std::exception&) {
    g_callback = 0;
  }
}

// Under g_mutex, from a module function: registers the callback again for a
// changed setting. False, with a Python error set, when torch cannot.
bool rearm() {
  try {
    disarm();
    arm();
    return true;
  } catch (const std::exception& e) {
    g_callback = 0;
    PyErr_Format(PyExc_RuntimeError, "profkit torch hook: cannot register the torch callback: %s", e.what());
    return false;
  }
}

PyObject* install(PyObject*, PyObject*) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_listener != 0) Py_RETURN_FALSE;
    const pk_name_id shapes_key = pk_intern("input_shapes");
    const pk_name_id flops_key = pk_intern("flops");
    if (shapes_key == 0 || flops_key == 0) {
      PyErr_Format(PyExc_MemoryError, "profkit torch hook: cannot intern a name: %s", pk_last_error());
      return nullptr;
    }
    g_shapes_key.store(shapes_key, std::memory_order_relaxed);
    g_flops_key.store(flops_key, std::memory_order_relaxed);
    try {
      profkit_torch::watch_operator_registrations();
    } catch (const std::exception& e) {
      PyErr_Format(PyExc_RuntimeError, "profkit torch hook: cannot follow operator registrations: %s", e.what());
      return nullptr;
    }
  }
  // The listener is called at once when profkit is already recording, and it
  // takes g_mutex: do not hold it here.
  uint64_t handle = 0;
  if (pk_add_state_listener(on_state, listener_token(), &handle) != PK_OK) {
    PyErr_Format(PyExc_RuntimeError, "profkit torch hook: %s", pk_last_error());
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  g_listener = handle;
  Py_RETURN_TRUE;
}

PyObject* uninstall(PyObject*, PyObject*) {
  uint64_t handle = 0;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    handle = g_listener;
    g_listener = 0;
  }
  // After pk_remove_state_listener returns the listener cannot run again, so
  // the callback removed below stays removed.
  const bool removed = handle == 0 || pk_remove_state_listener(handle) == PK_OK;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    disarm();
  }
  profkit_torch::close_memory_window();
  if (!removed) {
    PyErr_Format(PyExc_RuntimeError, "profkit torch hook: %s", pk_last_error());
    return nullptr;
  }
  Py_RETURN_NONE;
}

// Sets one of the choices arm() reads (g_want_*) from a Python truth value.
// When armed, registers the callback again, so that torch learns the change
// now (whether it must keep inputs; which kind of callback).
PyObject* set_arm_choice(PyObject* arg, bool* choice) {
  const int want = PyObject_IsTrue(arg);
  if (want < 0) return nullptr;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (*choice == (want != 0)) Py_RETURN_NONE;
  *choice = want != 0;
  if (g_callback != 0 && !rearm()) return nullptr;
  Py_RETURN_NONE;
}

PyObject* set_record_shapes(PyObject*, PyObject* arg) { return set_arm_choice(arg, &g_want_shapes); }
PyObject* set_with_flops(PyObject*, PyObject* arg) { return set_arm_choice(arg, &g_want_flops); }
PyObject* set_all_threads(PyObject*, PyObject* arg) { return set_arm_choice(arg, &g_want_all_threads); }

// Allocations and frees as memory events, from the calling thread (the one
// driving the Profiler) while a window asks for them; see _torch_memory.h.
PyObject* memory_window(PyObject*, PyObject* arg) {
  const int want = PyObject_IsTrue(arg);
  if (want < 0) return nullptr;
  if (want == 0) {
    profkit_torch::close_memory_window();
    Py_RETURN_TRUE;
  }
  return PyBool_FromLong(profkit_torch::open_memory_window() == profkit_torch::MemoryWindow::kReporting);
}

PyObject* memory_leave_thread(PyObject*, PyObject*) { return PyBool_FromLong(profkit_torch::leave_memory_thread()); }

PyObject* memory_threads_holding(PyObject*, PyObject*) {
  return PyLong_FromLongLong(profkit_torch::threads_holding_reporter());
}

// In a child just forked from a process that had the hook installed: drop
// the torch callbacks without taking g_mutex or profkit's locks (another
// thread of the parent may have held them at the fork; the child has only
// the forking thread, so nothing else runs here now). Leaves the hook as if
// never installed, so that the child may install it for itself.
PyObject* forget_after_fork(PyObject*, PyObject*) {
  // The locks start unlocked (their storage reused: a holder at the fork is
  // gone), and the inherited listener is outdated (listener_token).
  new (&g_mutex) std::mutex();
  profkit_torch::forget_name_writers_after_fork();
  g_listener_generation.fetch_add(1, std::memory_order_relaxed);
  profkit_torch::forget_memory_after_fork();
  try {
    if (g_callback != 0 && g_callback_global) at::removeCallback(g_callback);
    remove_thread_local_callbacks();   // the forking thread's; the child has no other
  } catch (const std::exception& e) {  // out of memory in a fresh child: say so, as Python would
    PyErr_Format(PyExc_MemoryError, "profkit torch hook: cannot remove the torch callback: %s", e.what());
    return nullptr;
  }
  g_callback = 0;
  g_listener = 0;  // left registered in the child's engine; outdated, on_state ignores it
  Py_RETURN_NONE;
}

PyObject* names_interned(PyObject*, PyObject*) { return PyLong_FromUnsignedLongLong(profkit_torch::names_interned()); }

PyObject* content_lookups(PyObject*, PyObject*) {
  return PyLong_FromUnsignedLongLong(profkit_torch::content_lookups());
}

PyObject* thread_writers_known(PyObject*, PyObject*) {
#if PK_INLINE_WRITER
  return PyLong_FromSize_t(profkit_torch::thread_writers_known());
#else
  return PyLong_FromLong(0);
#endif
}

PyObject* installed(PyObject*, PyObject*) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return PyBool_FromLong(g_listener != 0);
}

PyObject* armed(PyObject*, PyObject*) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return PyBool_FromLong(g_callback != 0);
}

PyObject* callbacks_on_this_thread(PyObject*, PyObject*) { return PyLong_FromSize_t(thread_local_callbacks_here()); }

PyObject* global_callback(PyObject*, PyObject*) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return PyBool_FromLong(g_callback != 0 && g_callback_global);
}

PyMethodDef kMethods[] = {
    {"install", install, METH_NOARGS,
     "install() -> bool: follow profkit's state (record operators in every window); False if already installed"},
    {"uninstall", uninstall, METH_NOARGS, "uninstall(): stop following profkit's state and remove the torch callback"},
    {"set_record_shapes", set_record_shapes, METH_O,
     "set_record_shapes(flag): attach operators' input shapes (from the next window, or now if recording)"},
    {"set_with_flops", set_with_flops, METH_O,
     "set_with_flops(flag): attach the FLOPs of matrix products, convolutions, mul and add (_torch_flops.h)"},
    {"memory_window", memory_window, METH_O,
     "memory_window(flag) -> bool: report torch's allocations and frees on this thread (True), or stop; False when "
     "torch's own profiler holds this thread, so nothing can be reported"},
    {"memory_leave_thread", memory_leave_thread, METH_NOARGS,
     "memory_leave_thread() -> bool: stop reporting allocations on this thread only (so that torch's own profiler "
     "can start here); True when it was reporting here"},
    {"memory_threads_holding", memory_threads_holding, METH_NOARGS,
     "memory_threads_holding() -> int: threads whose debug info holds the allocation reporter now (silent ones "
     "left by a window closed on another thread included)"},
    {"forget_after_fork", forget_after_fork, METH_NOARGS,
     "forget_after_fork(): in a forked child, drop the torch callbacks without taking any lock; the child may "
     "install() again"},
    {"installed", installed, METH_NOARGS, "installed() -> bool: whether install() is in effect"},
    {"thread_writers_known", thread_writers_known, METH_NOARGS,
     "thread_writers_known() -> int: threads whose engine writer the operator callbacks write without a call "
     "(0 where the inline writer does not exist)"},
    {"names_interned", names_interned, METH_NOARGS,
     "names_interned() -> int: operator and range names the per-thread content tables have sent to pk_intern so far"},
    {"content_lookups", content_lookups, METH_NOARGS,
     "content_lookups() -> int: names looked up by their text so far (not found by address)"},
    {"armed", armed, METH_NOARGS, "armed() -> bool: whether the RecordFunction callback is registered now"},
    {"set_all_threads", set_all_threads, METH_O,
     "set_all_threads(flag): register the callback globally (every thread) instead of on the thread that opens "
     "the window (from the next window, or now if recording)"},
    {"callbacks_on_this_thread", callbacks_on_this_thread, METH_NOARGS,
     "callbacks_on_this_thread() -> int: callbacks of this hook on the calling thread's thread-local list"},
    {"global_callback", global_callback, METH_NOARGS,
     "global_callback() -> bool: whether the callback is registered now, globally"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT,
                       "profkit_torch_hook",
                       "profkit's native PyTorch hook (see profkit.integrations.torch)",
                       -1,
                       kMethods,
                       nullptr,
                       nullptr,
                       nullptr,
                       nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_profkit_torch_hook(void) {
  PyObject* module = PyModule_Create(&kModule);
  if (module != nullptr && !profkit_torch::add_call_range_type(module)) Py_CLEAR(module);
  return module;
}
