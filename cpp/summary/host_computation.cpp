#include "summary/host_computation.h"

#include <algorithm>
#include <array>

namespace profkit {

namespace {

using TypeMask = std::array<bool, PK_EVENT_TYPE_COUNT>;

TypeMask mask_of(std::initializer_list<pk_event_type> types) {
  TypeMask m{};
  for (pk_event_type t : types) m[t] = true;
  return m;
}

// The finest level of compute events the run recorded (see the header).
HostComputeSource pick_source(const SummaryContext& c, TypeMask* types) {
  const auto any = [&](std::initializer_list<pk_event_type> list) {
    for (pk_event_type t : list) {
      if (c.host_calls[t] > 0) return true;
    }
    return false;
  };
  const std::initializer_list<pk_event_type> operators = {PK_EVENT_OPERATOR};
  const std::initializer_list<pk_event_type> phases = {PK_EVENT_FORWARD, PK_EVENT_BACKWARD, PK_EVENT_OPTIMIZATION,
                                                       PK_EVENT_PYTHON_OP};
  const std::initializer_list<pk_event_type> ranges = {PK_EVENT_USER_DEFINED, PK_EVENT_PYTHON_USER_DEFINED};
  const std::initializer_list<pk_event_type> steps = {PK_EVENT_PROFILE_STEP};
  if (any(operators)) {
    *types = mask_of(operators);
    return HostComputeSource::kOperators;
  }
  if (any(phases)) {
    *types = mask_of(phases);
    return HostComputeSource::kModelPhases;
  }
  if (any(ranges)) {
    *types = mask_of(ranges);
    return HostComputeSource::kUserRanges;
  }
  if (any(steps)) {
    *types = mask_of(steps);
    return HostComputeSource::kSteps;
  }
  return HostComputeSource::kNone;
}

}  // namespace

HostComputation compute_host_computation(const SummaryContext& c) {
  HostComputation out;
  TypeMask compute{};
  out.source = pick_source(c, &compute);
  if (out.source == HostComputeSource::kNone) return out;
  const Result& r = *c.result;
  SegmentedIntervals per_thread;
  IntervalList work;
  IntervalList communication;
  for (const ThreadRecord& t : r.threads) {
    work.clear();
    communication.clear();
    IntervalMerger work_merger(&work);
    IntervalMerger communication_merger(&communication);
    // A thread's events are sorted by start, so each merger sees ascending starts.
    const uint64_t end = std::min<uint64_t>(t.first_event + t.event_count, r.host_events.size());
    for (uint64_t i = t.first_event; i < end; ++i) {
      const pk_host_event& e = r.host_events[i];
      if (e.type >= PK_EVENT_TYPE_COUNT) continue;
      if (compute[e.type]) {
        work_merger.add(e.start_ns, e.end_ns);
      } else if (e.type == PK_EVENT_COMMUNICATION) {
        communication_merger.add(e.start_ns, e.end_ns);
      }
    }
    work_merger.flush();
    communication_merger.flush();
    if (work.empty()) continue;
    per_thread.begin_segment();
    const IntervalList computing = communication.empty() ? work : difference_of(work, communication);
    per_thread.storage().insert(per_thread.storage().end(), computing.begin(), computing.end());
  }
  per_thread.union_length(&out.intervals);
  return out;
}

const char* host_compute_source_name(HostComputeSource source) noexcept {
  switch (source) {
    case HostComputeSource::kOperators:
      return "Operator";
    case HostComputeSource::kModelPhases:
      return "Forward, Backward, Optimization and PythonOp";
    case HostComputeSource::kUserRanges:
      return "UserDefined and PythonUserDefined";
    case HostComputeSource::kSteps:
      return "ProfileStep";
    case HostComputeSource::kNone:
      break;
  }
  return "no";
}

}  // namespace profkit
