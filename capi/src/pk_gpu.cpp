// GPU tracing entry points of the C ABI. This build has no GPU tracer yet:
// GPU tracing reports itself unavailable and CPU profiling is unaffected.
#include <string>

#include "capi_guard.h"

namespace {
constexpr const char* kNoGpuReason = "this profkit build has no GPU tracer (built without CUPTI support)";
}  // namespace

extern "C" {

PK_API int32_t pk_gpu_available(const char** reason) noexcept {
  if (reason != nullptr) *reason = kNoGpuReason;
  return 0;
}

PK_API pk_status pk_set_gpu_tracing(int32_t enabled) noexcept {
  return profkit::guarded("pk_set_gpu_tracing", [&] {
    if (enabled != 0) {
      throw profkit::Error(PK_ERR_UNSUPPORTED,
                           std::string("GPU tracing is not available: ") + kNoGpuReason + "; profiling the CPU only");
    }
  });
}

}  // extern "C"
