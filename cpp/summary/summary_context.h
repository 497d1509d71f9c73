// SummaryContext: the facts every summary table shares, computed once per
// summary from a Result: per event type the calls and the union of time
// (across threads for host types, across streams for GPU types), the
// denominators (total_time, the recorded span), and the merged intervals the
// Model and Distributed tables combine.
//
// total_time is the union of ProfileStep ranges; with no ProfileStep (or
// none of positive length) it is the recorded span: the Result's window
// info.start_ns..end_ns, else the extent of its events. It can still be 0 (an
// empty trace); ratios then show as missing, never as a division by zero.
//
// The per-type unions count only time inside total_window (the steps, else
// the span): they are shown as shares of total_time, and time before the
// first step, between steps (pk_step_end ... pk_step_begin) or after the
// last (a kernel still running) would make a share pass 100 %. What was left
// out is kept per type for the tables' notes.
//
// Thread-safety: immutable once made. Ownership: borrows the Result, which
// must outlive it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "profkit/profkit.h"
#include "summary/interval_set.h"
#include "summary/summary_options.h"
#include "trace/result.h"

namespace profkit {

struct SummaryContext {
  const Result* result = nullptr;
  SummaryOptions options;

  // Host events per type: how many, and their union across threads within
  // total_window; the union's time outside it.
  std::array<uint64_t, PK_EVENT_TYPE_COUNT> host_calls{};
  std::array<uint64_t, PK_EVENT_TYPE_COUNT> host_union_ns{};
  std::array<uint64_t, PK_EVENT_TYPE_COUNT> host_outside_ns{};
  // GPU activity per type (Kernel, Memcpy, Memset): how many, and their union
  // across every stream of every device within total_window; the union's
  // time outside it.
  std::array<uint64_t, PK_EVENT_TYPE_COUNT> device_calls{};
  std::array<uint64_t, PK_EVENT_TYPE_COUNT> device_union_ns{};
  std::array<uint64_t, PK_EVENT_TYPE_COUNT> device_outside_ns{};
  // Union of kernel time per device id within the recorded window (when the
  // Result has one), ascending by id; includes devices of the Result's device
  // table that ran nothing.
  std::vector<std::pair<uint32_t, uint64_t>> kernel_union_by_device;

  // Whole, not clipped to total_window.
  IntervalList step_union;         // ProfileStep ranges
  IntervalList model_union;        // Dataloader ∪ Forward ∪ Backward ∪ Optimization
  IntervalList communication_cpu;  // Communication host events

  bool has_steps = false;      // some ProfileStep of positive length
  uint64_t span_start_ns = 0;  // the recorded span
  uint64_t span_end_ns = 0;
  uint64_t total_time_ns = 0;  // the ratio denominator (see above)
  IntervalList total_window;   // step_union, or the span as one interval
  bool has_device_data = false;

  uint64_t elapsed_ns() const noexcept { return span_end_ns - span_start_ns; }
  // "ProfileStep" or "recorded span": what total_time measures, for notes.
  std::string total_time_source() const { return has_steps ? "ProfileStep" : "the recorded span"; }
  // Steps were recorded but none has positive length (a coarse clock, or
  // steps that end where they begin): tables measure against the span then,
  // and list the steps with 0 time rather than deny them.
  bool zero_length_steps() const { return !has_steps && host_calls[PK_EVENT_PROFILE_STEP] > 0; }
  // The note saying so; empty unless zero_length_steps().
  std::string zero_length_steps_note() const;
  // Whether some type's union has time outside total_window.
  bool time_outside_window() const noexcept;
  // For the tables of unions: only time within total_window counts. Empty
  // unless time_outside_window().
  std::string outside_window_note() const;
};

SummaryContext make_summary_context(const Result& result, const SummaryOptions& options);

// Duration of a record; 0 for a malformed one that ends before it starts.
inline uint64_t duration_ns(uint64_t start, uint64_t end) noexcept { return end > start ? end - start : 0; }

}  // namespace profkit
