#include "cupti/availability.h"

#include <sys/stat.h>

namespace profkit::cupti {

namespace {

bool path_exists(const char* path) {
  struct stat st {};
  return stat(path, &st) == 0;
}

}  // namespace

ProbeInputs process_probe_inputs() {
  ProbeInputs in;
  in.environment = SearchEnvironment::from_process();
  in.file_exists = path_exists;
  in.open_driver = open_cuda_driver;
  in.open_cupti = open_cupti;
  in.compiled_cupti_version = CUPTI_API_VERSION;
  return in;
}

GpuSupport probe_gpu_support(const ProbeInputs& in) {
  GpuSupport s;
  std::string error;
  s.driver_library = in.open_driver(&error);
  if (!s.driver_library) {
    s.reason = error;
    return s;
  }
  if (!load_cuda_driver_api(s.driver_library.handle, &s.driver, &error)) {
    s.reason = error;
    return s;
  }
  // Linux driver: /dev/nvidiactl; WSL: /dev/dxg.
  if (!in.file_exists("/dev/nvidiactl") && !in.file_exists("/dev/dxg")) {
    s.reason =
        "no NVIDIA GPU in this machine or container (the CUDA driver library is installed but "
        "/dev/nvidiactl does not exist; in a container, run it with the GPUs exposed)";
    return s;
  }
  const int major = cupti_cuda_major(in.compiled_cupti_version);
  s.cupti_library = in.open_cupti(in.environment, major, &error);
  if (!s.cupti_library) {
    s.reason = error;
    return s;
  }
  if (!load_cupti_api(s.cupti_library.handle, &s.cupti, &error)) {
    s.reason = error + " (" + s.cupti_library.path + ")";
    return s;
  }
  if (s.cupti.get_version(&s.cupti_version) != CUPTI_SUCCESS) {
    s.reason = "cuptiGetVersion failed for " + s.cupti_library.path;
    return s;
  }
  const std::string problem = cupti_version_problem(s.cupti_version, in.compiled_cupti_version);
  if (!problem.empty()) {
    s.reason = problem + " (" + s.cupti_library.path + ")";
    return s;
  }
  s.available = true;
  s.reason = "CUPTI " + std::to_string(s.cupti_version) + " from " + s.cupti_library.path + " (" +
             s.cupti_library.origin + "), CUDA driver " + s.driver_library.path;
  return s;
}

const GpuSupport& probe_gpu_support() {
  static const GpuSupport* support = new GpuSupport(probe_gpu_support(process_probe_inputs()));  // never freed
  return *support;
}

}  // namespace profkit::cupti
