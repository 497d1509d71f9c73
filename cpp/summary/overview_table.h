// Overview Summary: per event type, the calls and the time in that type with
// overlaps counted once — across threads for host types, across streams for
// GPU types (Kernel, Memcpy, Memset, and communication GPU work) — with its
// ratio to total_time, largest first. The first row is the total itself
// (ProfileStep, or "Total Time" when the recorded span stands in for it).
// Communication's calls are the calls made: an asynchronous collective's
// "(in flight)" event is not a second call, nor is instrumented DDP's "DDP
// wait for all_reduce" (their time still counts), and without Communication
// host events the GPU communication records count.
// Thread-safety: pure function of its inputs.
#pragma once

#include "summary/communication.h"
#include "summary/summary_context.h"
#include "summary/summary_table.h"

namespace profkit {

SummaryTable make_overview_table(const SummaryContext& context, const CommunicationTimes& communication);

}  // namespace profkit
