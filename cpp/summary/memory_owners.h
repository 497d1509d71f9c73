// Which host event each memory event happened in: the innermost event on the
// same thread whose span contains the allocation's or free's time (instant
// events contain nothing), for the Memory summary's rows per event.
//
// One sweep per thread over its events (in start order, properly nested) and
// its memory events (in time order) with a stack of the open events: linear
// in the number of records.
//
// Thread-safety: pure function of the Result.
#pragma once

#include <cstdint>
#include <vector>

#include "trace/result.h"

namespace profkit {

// One entry per r.memory_events[i]: the index of its host event in
// r.host_events, or PK_NO_EVENT when no event of its thread was open then.
std::vector<uint64_t> memory_event_owners(const Result& r);

}  // namespace profkit
