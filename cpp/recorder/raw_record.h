// RawRecord: what the hot path writes into a thread's buffer. One 24-byte
// record per completed begin/end pair; a few rarer kinds share the layout.
// Timestamps are raw clock ticks; collect converts them (common/clock.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/compiler.h"

namespace profkit {

enum class RecordKind : uint16_t {
  kEvent = 0,            // a = start ticks, b = end ticks, name/type, depth = stack index
  kInstant = 1,          // a = b = ticks
  kArgInt = 2,           // a = start ticks of the target open event, b = value,
                         // name = key, depth = target's stack index
  kArgStr = 3,           // as kArgInt, b = interned value id
  kMemory = 4,           // a = ticks, b = address, name = device (as uint32);
                         // followed by two kMemoryMore records
  kMemoryMore = 5,       // 1st: a = bytes (int64), b = total allocated; 2nd: a = total reserved
  kStep = 6,             // a ProfileStep event: a = start ticks, b = end ticks; followed by one kStepMore
  kStepMore = 7,         // a = step number, b = num_samples (0: none). The name "ProfileStep#<n>"
                         // is made at collect, so a step costs no interning (nor a name kept forever)
  kWholeEvent = 8,       // an event recorded after it ended (pk_complete_event): a = start ns,
                         // b = end ns (CLOCK_MONOTONIC, not ticks), name/type; nested by time at collect
  kWholeEventTicks = 9,  // as kWholeEvent, with a = start ticks, b = end ticks (pk_complete_event_ticks)
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
static_assert(offsetof(RawRecord, name) == 16, "record_tail copies the last 8 bytes");

// A RawRecord's last 8 bytes (name, type, depth, kind) as one word, so that
// the hot path keeps an open event's half-made record in two registers and
// stores it whole. The fields occupy distinct bytes: words made of different
// fields combine with |.
PK_ALWAYS_INLINE uint64_t record_tail(uint32_t name, uint8_t type, uint8_t depth, RecordKind kind) noexcept {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  // What the memcpy below gives, in registers (GCC goes through the stack).
  return uint64_t{name} | uint64_t{type} << 32 | uint64_t{depth} << 40 | uint64_t{static_cast<uint16_t>(kind)} << 48;
#else
  RawRecord r{0, 0, name, type, depth, kind};
  uint64_t tail;
  std::memcpy(&tail, &r.name, sizeof tail);
  return tail;
#endif
}

PK_ALWAYS_INLINE RawRecord make_record(uint64_t a, uint64_t b, uint64_t tail) noexcept {
  RawRecord r;
  r.a = a;
  r.b = b;
  std::memcpy(&r.name, &tail, sizeof tail);
  return r;
}

}  // namespace profkit
