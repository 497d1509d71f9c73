// Whether GPU tracing can work in this process, and why not.
//
// probe_gpu_support() makes the cheap checks once — the CUDA driver library
// loads, an NVIDIA device node exists, a libcupti of the CUDA major profkit
// was built for loads, has every entry point and writes the record versions
// profkit decodes — without initializing the driver (a driver initialized
// before fork() is unusable in the children, so merely asking must not do
// it). The checks that need the driver or CUPTI attached (a visible device,
// another CUPTI subscriber such as Nsight, profiling privileges) run when
// tracing is switched on (CuptiTracer::set_enabled).
//
// Thread-safety: probe_gpu_support() is thread-safe; its answer is immutable.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "cupti/cuda_driver.h"
#include "cupti/cupti_api.h"
#include "cupti/library_search.h"

namespace profkit::cupti {

struct GpuSupport {
  bool available = false;
  // Why not; or, when available, what was found ("CUPTI 130001 from ...").
  std::string reason;
  OpenedLibrary driver_library;
  CudaDriverApi driver;
  OpenedLibrary cupti_library;
  CuptiApi cupti;
  uint32_t cupti_version = 0;
};

// The answer for this process, probed on first use.
const GpuSupport& probe_gpu_support();

// The probe itself, with the process facts passed in (tests).
struct ProbeInputs {
  SearchEnvironment environment;
  std::function<bool(const char* path)> file_exists;
  std::function<OpenedLibrary(std::string* error)> open_driver;
  std::function<OpenedLibrary(const SearchEnvironment&, int cuda_major, std::string* error)> open_cupti;
  uint32_t compiled_cupti_version = 0;  // CUPTI_API_VERSION of the headers
};
GpuSupport probe_gpu_support(const ProbeInputs& inputs);

// The real process: environment variables, dlopen, the filesystem.
ProbeInputs process_probe_inputs();

}  // namespace profkit::cupti
