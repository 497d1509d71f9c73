// GPU tracing in a build without the CUPTI headers: always unavailable, and
// saying why, so users know to rebuild rather than look for a driver problem.
#include <string>

#include "common/error.h"
#include "cupti/gpu_tracing.h"

namespace profkit::gpu {

namespace {
constexpr const char* kReason =
    "this profkit was built without CUPTI headers, so GPU tracing is compiled out (rebuild with the CUDA toolkit or "
    "the nvidia-cuda-cupti wheel installed, or set CUDA_HOME)";
}  // namespace

bool built_with_cupti() noexcept { return false; }

bool available(const char** reason) noexcept {
  if (reason != nullptr) *reason = kReason;
  return false;
}

void set_tracing(bool enabled) {
  if (enabled) {
    throw Error(PK_ERR_UNSUPPORTED,
                std::string("GPU tracing is not available: ") + kReason + "; profiling the CPU only");
  }
}

}  // namespace profkit::gpu
