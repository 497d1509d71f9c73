// profkit._C — the thin binding the Python package is built on. It converts
// types, maps pk_status to Python exceptions, exposes result columns through
// the buffer protocol (zero-copy NumPy views), and releases the GIL around
// the long calls (collect, save, export, load). Everything else lives in the
// engine behind the C ABI. Each concern registers itself from its own file.
#include "binding.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "profkit engine binding (thin layer over the C ABI in profkit/profkit.h)";
  pybind11::class_<profkit_py::Result> result(m, "Result", "A collected or loaded trace (owns a pk_result)");
  profkit_py::bind_engine(m);
  profkit_py::bind_hot_calls(m);
  profkit_py::bind_result(m, result);
  profkit_py::bind_record_event(m);
  profkit_py::bind_gpu(m);
  profkit_py::bind_python_tracer(m);
  profkit_py::bind_summary(result);
  profkit_py::bind_placement(result);
}
