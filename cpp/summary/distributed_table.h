// Distributed Summary: Communication (CPU and GPU communication time, union),
// Computation (every other kernel, union) and Overlap (their intersection),
// each with its ratio to total_time. See communication.h for what counts; a
// run without kernels counts host computation (host_computation.h).
// Thread-safety: pure function of its inputs.
#pragma once

#include "summary/communication.h"
#include "summary/summary_context.h"
#include "summary/summary_table.h"

namespace profkit {

SummaryTable make_distributed_table(const SummaryContext& context, const CommunicationTimes& communication);

}  // namespace profkit
