// GPU tracing control: gpu_available() -> (bool, reason) and
// set_gpu_tracing(bool). Both may load libraries or initialize the CUDA
// driver, so they run without the GIL.
#include "binding.h"

namespace profkit_py {

void bind_gpu(py::module_& m) {
  m.def(
      "gpu_available",
      [] {
        const char* reason = nullptr;
        int32_t available = 0;
        {
          py::gil_scoped_release release;
          available = pk_gpu_available(&reason);
        }
        return py::make_tuple(available != 0, decode(reason != nullptr ? reason : ""));
      },
      "(available, reason): whether GPU tracing (CUPTI) can work in this process, and why not "
      "(or what was found)");
  m.def(
      "set_gpu_tracing",
      [](bool enabled) {
        pk_status status;
        {
          py::gil_scoped_release release;
          status = pk_set_gpu_tracing(enabled ? 1 : 0);
        }
        check(status);
      },
      py::arg("enabled"),
      "Turns GPU tracing on or off for the recording windows that follow; RuntimeError with the reason when "
      "it cannot work (CPU recording is unaffected)");
}

}  // namespace profkit_py
