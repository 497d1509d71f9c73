// Which GPU work is communication, and the communication / computation time
// the Overview and Distributed tables show (SPEC §6).
//
// GPU work is communication when it was launched inside a Communication host
// event, or when it is a kernel whose name contains "nccl" (any case; NCCL
// kernels are often launched by a library's own thread). Communication time
// is the union of Communication host events and that GPU work; computation
// time the union of every other kernel; overlap their intersection; each of
// them only within the context's total_window (see summary_context.h). A run
// with no kernels at all can count its host computation instead (see
// host_computation.h).
//
// Thread-safety: the marker is a walk visitor (one walk); the rest is pure.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "summary/host_computation.h"
#include "summary/host_walk.h"
#include "summary/interval_set.h"
#include "summary/summary_context.h"

namespace profkit {

// Marks device events launched under a Communication host event.
class CommunicationLaunches : public HostEventVisitor {
 public:
  explicit CommunicationLaunches(size_t device_event_count) : marked_(device_event_count, false) {}
  uint32_t type_mask() const override { return 0; }
  bool wants_launches() const override { return true; }
  void on_launch(const OpenStack& stack, const LaunchedWork& work) override {
    if (stack.back().in_communication) marked_[work.device_event] = true;
  }
  bool marked(uint64_t device_event) const noexcept { return device_event < marked_.size() && marked_[device_event]; }

 private:
  std::vector<bool> marked_;
};

struct CommunicationTimes {
  IntervalList gpu;          // communication GPU work, merged
  IntervalList all;          // CPU ∪ GPU communication
  IntervalList computation;  // other kernels, or host computation (below)
  // Not kNone when `computation` is host time because no kernel was recorded.
  HostComputeSource host_computation = HostComputeSource::kNone;
  uint64_t gpu_calls = 0;   // communication GPU records
  uint64_t overlap_ns = 0;  // |all ∩ computation|
  // Some communication was recorded, inside total_window or not.
  bool recorded = false;
  bool any() const noexcept { return recorded; }
};

// `launches` may be null (no Communication host events were recorded). With
// `host_computation_without_kernels`, a run that recorded communication but
// no kernel gets its host computation as `computation`.
CommunicationTimes compute_communication(const SummaryContext& context, const CommunicationLaunches* launches,
                                         bool host_computation_without_kernels = false);

// Whether `name` contains `needle` (ASCII, any case).
bool contains_ignoring_case(std::string_view name, std::string_view needle) noexcept;

}  // namespace profkit
