// Kernel Summary: one row per kernel name (short form, see kernel_name.h):
// launches and GPU Total / Avg / Max / Min / Ratio(%), where the ratio is to
// the time of all kernels together (their sum), so the column adds up to
// 100%. Ordered by sorted_by (CPU keys read the matching GPU figure).
// Thread-safety: pure function of the context.
#pragma once

#include "summary/summary_context.h"
#include "summary/summary_table.h"

namespace profkit {

SummaryTable make_kernel_table(const SummaryContext& context);

}  // namespace profkit
