// The engine clock: one time base for host events, GPU activity and metadata.
//
// The hot path reads raw ticks (the TSC where the CPU has an invariant one,
// otherwise CLOCK_MONOTONIC ns); collect converts ticks to CLOCK_MONOTONIC ns
// with a calibration taken between two anchors that bracket the recording, so
// the conversion error is bounded by the anchors' own jitter (tens of ns), not
// by the length of the run.
//
// Thread-safety: read_ticks() and monotonic_ns() are safe anywhere. A
// TickConverter is an immutable value.
#pragma once

#include <cstdint>
#include <ctime>

#include "common/compiler.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define PK_HAVE_TSC 1
#else
#define PK_HAVE_TSC 0
#endif

namespace profkit {

inline uint64_t monotonic_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t realtime_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

namespace clock_detail {
// Set once when the library loads; read-only afterwards.
extern bool g_use_tsc;
}  // namespace clock_detail

#if PK_HAVE_TSC
// CLOCK_MONOTONIC where the TSC is not used: out of line, because it needs a
// stack frame (the timespec) that would otherwise be set up on every call of
// the hot path whether it reads the TSC or not.
PK_NOINLINE PK_COLD uint64_t monotonic_ticks() noexcept;
#endif

// Raw ticks for the hot path. Only meaningful through a TickConverter.
PK_ALWAYS_INLINE uint64_t read_ticks() noexcept {
#if PK_HAVE_TSC
  if (PK_LIKELY(clock_detail::g_use_tsc)) return __rdtsc();
  return monotonic_ticks();
#else
  return monotonic_ns();
#endif
}

// Whether the engine clock is the TSC, which the thread writer reads inline
// (profkit.h); true where there is no TSC, as every read is then of the one
// clock. Fixed once loaded.
inline bool ticks_inline_ok() noexcept {
#if PK_HAVE_TSC
  return clock_detail::g_use_tsc;
#else
  return true;
#endif
}

// A simultaneous reading of ticks and CLOCK_MONOTONIC.
struct ClockAnchor {
  uint64_t ticks = 0;
  uint64_t ns = 0;
};

// Takes the tightest of a few (ticks, ns) readings.
ClockAnchor take_clock_anchor() noexcept;

// Converts ticks to ns by interpolating between two anchors.
class TickConverter {
 public:
  TickConverter(ClockAnchor first, ClockAnchor last) noexcept;

  // A converter from the load-time anchor to now.
  static TickConverter up_to_now() noexcept;

  uint64_t to_ns(uint64_t ticks) const noexcept {
    if (!tsc_) return ticks;
    const double delta = static_cast<double>(static_cast<int64_t>(ticks - first_.ticks));
    return first_.ns + static_cast<uint64_t>(static_cast<int64_t>(delta * ns_per_tick_));
  }

 private:
  ClockAnchor first_;
  double ns_per_tick_ = 1.0;
  bool tsc_ = false;
};

// Wall-clock (UNIX epoch ns) minus CLOCK_MONOTONIC ns, measured now.
int64_t wall_clock_offset_ns() noexcept;

}  // namespace profkit
