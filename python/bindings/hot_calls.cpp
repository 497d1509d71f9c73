// The calls a training loop makes on every step or collective -- step() and
// thread_reader_time_ns() (Profiler.step), is_recording() (the torch.distributed
// hooks) -- as plain CPython functions instead of pybind11 ones.
//
// Why: a training step runs far more code than the CPU's caches hold, so by
// the time Profiler.step runs again its code is cold. pybind11's generic
// dispatcher (argument loaders, overload resolution, exception translation)
// is a lot of code to fetch: measured in an mlp training step, each of these
// two calls cost 2-3 us through pybind11, most of Profiler.step's ~9 us
// there (hot, in a loop, 0.15 us); Profiler.step went to ~5 us with these.
//
// Behaviour is the pybind11 functions', but that a bool is not taken for a
// sample count: step(num_samples=0) takes a non-negative int (TypeError for
// anything else) and raises what check()
// raises for the engine's status; the reader times return an int;
// is_recording() a bool.
//
// Thread-safety: as the C ABI calls they make; they run with the GIL held.
#include <Python.h>

#include "binding.h"

namespace profkit_py {
namespace {

// step(num_samples=0): pk_step.
PyObject* step(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const kUsage = "step(num_samples: int = 0): num_samples must be a non-negative int";
  PyObject* arg = nullptr;
  const Py_ssize_t nkw = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
  if (nargs + nkw > 1) {
    PyErr_Format(PyExc_TypeError, "%s (got %zd arguments)", kUsage, nargs + nkw);
    return nullptr;
  }
  if (nargs == 1) {
    arg = args[0];
  } else if (nkw == 1) {
    if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "num_samples") != 0) {
      PyErr_Format(PyExc_TypeError, "%s (got an unexpected keyword argument %R)", kUsage, PyTuple_GET_ITEM(kwnames, 0));
      return nullptr;
    }
    arg = args[0];
  }
  uint64_t num_samples = 0;
  if (arg != nullptr) {
    if (!PyLong_Check(arg) || PyBool_Check(arg)) {
      PyErr_Format(PyExc_TypeError, "%s, not %.100s", kUsage, Py_TYPE(arg)->tp_name);
      return nullptr;
    }
    num_samples = PyLong_AsUnsignedLongLong(arg);
    if (num_samples == static_cast<uint64_t>(-1) && PyErr_Occurred()) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError, "%s, got %R", kUsage, arg);
      return nullptr;
    }
  }
  const pk_status status = pk_step(num_samples);
  if (status != PK_OK) {
    set_status_error(status);
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyObject* reader_time_ns(PyObject*, PyObject*) { return PyLong_FromUnsignedLongLong(pk_reader_time_ns()); }

PyObject* thread_reader_time_ns(PyObject*, PyObject*) {
  return PyLong_FromUnsignedLongLong(pk_thread_reader_time_ns());
}

PyObject* is_recording(PyObject*, PyObject*) { return PyBool_FromLong(pk_recording_word != 0); }

PyMethodDef kHotCalls[] = {
    {"step", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(step)), METH_FASTCALL | METH_KEYWORDS,
     "step(num_samples=0): ends the open step (a ProfileStep event when it lies in one window) and begins the next"},
    {"reader_time_ns", reader_time_ns, METH_NOARGS, "ns spent in outermost data-loading ranges, all threads, so far"},
    {"thread_reader_time_ns", thread_reader_time_ns, METH_NOARGS,
     "ns the calling thread spent in its own outermost data-loading ranges, so far"},
    {"is_recording", is_recording, METH_NOARGS, "True while a recording window is open"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

void bind_hot_calls(py::module_& m) {
  if (PyModule_AddFunctions(m.ptr(), kHotCalls) < 0) throw py::error_already_set();
}

}  // namespace profkit_py
