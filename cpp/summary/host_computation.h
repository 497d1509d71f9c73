// Computation time of a run that recorded no GPU kernels (a CPU-only rank,
// e.g. DDP on gloo), for the Distributed Summary.
//
// SPEC §6 counts Computation as the union of non-communication kernels;
// without kernels that is always 0 and the table would say nothing. Here the
// host's own events stand in for kernels: the time a thread spends inside
// compute events, minus the time that same thread spends inside Communication
// events (a blocking all_reduce inside a Forward range is not computation),
// united across threads. The compute events are the finest level the run
// recorded, so that a coarse range never hides the waits inside it:
//   1. Operator events (a framework integration's operators), else
//   2. Forward, Backward, Optimization and PythonOp events, else
//   3. UserDefined and PythonUserDefined ranges, else
//   4. ProfileStep ranges (computation = step time not spent communicating).
// Communication on other threads (collectives in flight on a waiter or
// library thread) is not subtracted: that is what Overlap measures.
//
// Thread-safety: pure function of its inputs.
#pragma once

#include "summary/interval_set.h"
#include "summary/summary_context.h"

namespace profkit {

enum class HostComputeSource {
  kNone,         // nothing to count
  kOperators,    // level 1
  kModelPhases,  // level 2
  kUserRanges,   // level 3
  kSteps,        // level 4
};

struct HostComputation {
  IntervalList intervals;  // merged
  HostComputeSource source = HostComputeSource::kNone;
};

HostComputation compute_host_computation(const SummaryContext& context);

// The event types a source counts, for notes: "Operator", "ProfileStep"...
const char* host_compute_source_name(HostComputeSource source) noexcept;

}  // namespace profkit
