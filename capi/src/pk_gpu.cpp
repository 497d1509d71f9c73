// GPU tracing entry points of the C ABI, backed by the CUPTI tracer
// (cpp/cupti/). Where GPU tracing cannot work they say why, and CPU
// profiling is unaffected.
#include "capi_guard.h"
#include "cupti/gpu_tracing.h"

extern "C" {

PK_API int32_t pk_gpu_available(const char** reason) noexcept { return profkit::gpu::available(reason) ? 1 : 0; }

PK_API pk_status pk_set_gpu_tracing(int32_t enabled) noexcept {
  return profkit::guarded("pk_set_gpu_tracing", [&] { profkit::gpu::set_tracing(enabled != 0); });
}

}  // extern "C"
