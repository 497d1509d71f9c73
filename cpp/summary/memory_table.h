// Memory Summary: per device (CPU = host memory, then GPU d), the number and
// bytes of allocations and frees recorded with pk_record_memory, and the
// peaks of the allocator's allocated and reserved totals. With op_detail,
// nested under each device, the same counts per event name: the innermost
// event each allocation and free happened in (memory_owners.h), most bytes
// allocated first, row_limit rows per device.
// Thread-safety: pure function of the context.
#pragma once

#include "summary/summary_context.h"
#include "summary/summary_table.h"

namespace profkit {

SummaryTable make_memory_table(const SummaryContext& context);

}  // namespace profkit
