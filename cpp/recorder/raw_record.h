// RawRecord: what the hot path writes into a thread's buffer. One 24-byte
// record per completed begin/end pair; a few rarer kinds share the layout.
// Timestamps are raw clock ticks; collect converts them (common/clock.h).
#pragma once

#include <cstdint>

namespace profkit {

enum class RecordKind : uint16_t {
  kEvent = 0,       // a = start ticks, b = end ticks, name/type, depth = stack index
  kInstant = 1,     // a = b = ticks
  kArgInt = 2,      // a = start ticks of the target open event, b = value,
                    // name = key, depth = target's stack index
  kArgStr = 3,      // as kArgInt, b = interned value id
  kMemory = 4,      // a = ticks, b = address, name = device (as uint32);
                    // followed by two kMemoryMore records
  kMemoryMore = 5,  // 1st: a = bytes (int64), b = total allocated; 2nd: a = total reserved
  kStep = 6,        // a ProfileStep event: a = start ticks, b = end ticks; followed by one kStepMore
  kStepMore = 7,    // a = step number, b = num_samples (0: none). The name "ProfileStep#<n>"
                    // is made at collect, so a step costs no interning (nor a name kept forever)
};

struct RawRecord {
  uint64_t a;
  uint64_t b;
  uint32_t name;
  uint8_t type;
  uint8_t depth;
  RecordKind kind;
};
static_assert(sizeof(RawRecord) == 24, "a host event must stay 24 bytes");

}  // namespace profkit
