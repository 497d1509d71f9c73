// Memory Summary: per device (CPU = host memory, then GPU d), the number and
// bytes of allocations and frees recorded with pk_record_memory, and the
// peaks of the allocator's allocated and reserved totals.
// Thread-safety: pure function of the context.
#pragma once

#include "summary/summary_context.h"
#include "summary/summary_table.h"

namespace profkit {

SummaryTable make_memory_table(const SummaryContext& context);

}  // namespace profkit
