#include "cupti/gpu_tracing.h"

#include <string>

#include "cupti/cupti_tracer.h"

namespace profkit::gpu {

bool built_with_cupti() noexcept { return true; }

bool available(const char** reason) noexcept {
  thread_local std::string text;
  bool ok = false;
  try {
    std::string why;
    ok = cupti::CuptiTracer::instance().available(&why);
    // The same answer keeps the same pointer, so earlier callers' text stays.
    if (why != text) text = std::move(why);
  } catch (...) {
    text = "GPU tracing could not be probed (out of memory)";
    ok = false;
  }
  if (reason != nullptr) *reason = text.c_str();
  return ok;
}

void set_tracing(bool enabled) { cupti::CuptiTracer::instance().set_enabled(enabled); }

}  // namespace profkit::gpu
