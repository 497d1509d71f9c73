#include "cupti/gpu_tracing.h"

#include "cupti/cupti_tracer.h"

namespace profkit::gpu {

bool built_with_cupti() noexcept { return true; }

bool available(const char** reason) noexcept {
  // The text lives as long as the process tracer, which is never destroyed:
  // a thread_local copy was freed when the asking thread exited, while
  // another thread could still be reading it.
  const char* text = nullptr;
  bool ok = false;
  try {
    ok = cupti::CuptiTracer::instance().available(&text);
  } catch (...) {
    text = "GPU tracing could not be probed (out of memory)";
    ok = false;
  }
  if (reason != nullptr) *reason = text;
  return ok;
}

void set_tracing(bool enabled) { cupti::CuptiTracer::instance().set_enabled(enabled); }

}  // namespace profkit::gpu
