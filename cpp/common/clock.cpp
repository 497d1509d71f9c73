#include "common/clock.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace profkit {
namespace clock_detail {
bool g_use_tsc = false;
}  // namespace clock_detail

#if PK_HAVE_TSC
uint64_t monotonic_ticks() noexcept { return monotonic_ns(); }
#endif

namespace {

// The TSC is usable as a clock only when it ticks at a constant rate through
// frequency changes and sleep states; Linux says so in /proc/cpuinfo.
bool cpu_has_invariant_tsc() {
#if PK_HAVE_TSC
  FILE* f = std::fopen("/proc/cpuinfo", "r");
  if (f == nullptr) return false;
  char line[4096];
  bool constant = false;
  bool nonstop = false;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, "flags", 5) != 0) continue;
    constant = std::strstr(line, " constant_tsc") != nullptr;
    nonstop = std::strstr(line, " nonstop_tsc") != nullptr;
    break;
  }
  std::fclose(f);
  return constant && nonstop;
#else
  return false;
#endif
}

ClockAnchor g_load_anchor;

// Runs when libprofkit.so loads, before any caller can start recording.
struct ClockInit {
  ClockInit() {
    const char* force = std::getenv("PROFKIT_CLOCK");
    const bool want_tsc = force == nullptr || std::strcmp(force, "monotonic") != 0;
    clock_detail::g_use_tsc = want_tsc && cpu_has_invariant_tsc();
    g_load_anchor = take_clock_anchor();
  }
};
const ClockInit g_clock_init;

}  // namespace

ClockAnchor take_clock_anchor() noexcept {
  if (!clock_detail::g_use_tsc) {
    const uint64_t ns = monotonic_ns();
    return {ns, ns};
  }
  // Bracket a TSC read between two clock reads; the narrowest bracket of a
  // few tries gives the best pairing.
  ClockAnchor best;
  uint64_t best_width = UINT64_MAX;
  for (int i = 0; i < 5; ++i) {
    const uint64_t before = monotonic_ns();
    const uint64_t ticks = read_ticks();
    const uint64_t after = monotonic_ns();
    if (after - before < best_width) {
      best_width = after - before;
      best = {ticks, before + (after - before) / 2};
    }
  }
  return best;
}

TickConverter::TickConverter(ClockAnchor first, ClockAnchor last) noexcept
    : first_(first), tsc_(clock_detail::g_use_tsc) {
  if (!tsc_) return;
  // Anchors too close together give a poor rate; widen the bracket briefly.
  // This only happens when a collect follows library load within 20 ms.
  while (last.ns - first.ns < 20'000'000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    last = take_clock_anchor();
  }
  ns_per_tick_ = static_cast<double>(last.ns - first.ns) / static_cast<double>(last.ticks - first.ticks);
}

TickConverter TickConverter::up_to_now() noexcept { return TickConverter(g_load_anchor, take_clock_anchor()); }

int64_t wall_clock_offset_ns() noexcept {
  // Bracket the realtime read between two monotonic reads.
  const uint64_t m0 = monotonic_ns();
  const uint64_t wall = realtime_ns();
  const uint64_t m1 = monotonic_ns();
  return static_cast<int64_t>(wall) - static_cast<int64_t>(m0 + (m1 - m0) / 2);
}

}  // namespace profkit
