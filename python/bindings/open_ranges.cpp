// Each thread's list of the ranges its RecordEvents have open in the engine
// (see open_ranges.h for why it exists).
#include "open_ranges.h"

#include "per_thread.h"
#include "profkit/profkit.h"

namespace profkit_py {

namespace {

enum class RangeState : uint8_t {
  kOpen,
  kEnded,      // end() came while a later range was open
  kAbandoned,  // the object went away without end()
};

struct OpenRange {
  uint64_t serial;  // the RecordEvent's serial (unique on its thread)
  PyObject* name;   // owned: names the range in the warning
  uint32_t window;  // every entry shares one window (see open_range_push)
  RangeState state;
};

// Thread-safety: one per thread, touched only by its thread.
struct OpenRanges {
  static constexpr uint32_t kCapacity = 256;  // the engine's own depth limit
  OpenRange ranges[kCapacity];
  uint32_t count = 0;
  uint64_t next_serial = 0;
};

// On the heap (6 KiB; see per_thread.h), made at the thread's first
// RecordEvent and freed when the thread exits. The names it may still hold
// then are left as they are: there is no Python thread state to release them.
using ThreadRanges = PerThread<OpenRanges>;

void pop_range(OpenRanges& open) {
  OpenRange& top = open.ranges[--open.count];
  Py_CLEAR(top.name);
}

// The index of `serial` among the thread's open ranges, or -1.
int64_t find_range(const OpenRanges& open, uint64_t serial) {
  for (uint32_t i = open.count; i-- > 0;) {
    if (open.ranges[i].serial == serial) return i;
  }
  return -1;
}

void end_ranges_above(OpenRanges& open, uint32_t index) {
  while (open.count > index) {
    pk_end_event();
    pop_range(open);
  }
}

// Ends range `index` and every range above it (none open) in the engine,
// then the ranges below that were waiting only for these: down to the
// deepest ended one, abandoned ones between included.
void end_ranges_from(OpenRanges& open, uint32_t index) {
  end_ranges_above(open, index);
  uint32_t waiting_from = open.count;
  for (uint32_t i = open.count; i-- > 0 && open.ranges[i].state != RangeState::kOpen;) {
    if (open.ranges[i].state == RangeState::kEnded) waiting_from = i;
  }
  end_ranges_above(open, waiting_from);
}

// The outermost range above `index` still open, or -1 when none is. Range
// `index` ends in the engine right after it: every range above it is nested
// in that one there, so that one's recorded end is the last of theirs.
int64_t open_range_above(const OpenRanges& open, uint32_t index) {
  for (uint32_t i = index + 1; i < open.count; ++i) {
    if (open.ranges[i].state == RangeState::kOpen) return i;
  }
  return -1;
}

}  // namespace

uint64_t open_range_push(PyObject* name, uint32_t window) {
  OpenRanges* const open = ThreadRanges::get_or_make();
  if (open == nullptr) return 0;  // out of memory: left unlisted
  // Entries of an earlier window are stale: the engine started that thread's
  // stack afresh when the window changed. They sit below any newer entry, so
  // checking the top keeps every entry in one window.
  while (open->count > 0 && open->ranges[open->count - 1].window != window) pop_range(*open);
  if (open->count == OpenRanges::kCapacity) return 0;
  Py_INCREF(name);
  open->ranges[open->count++] = {++open->next_serial, name, window, RangeState::kOpen};
  return open->next_serial;
}

PyObject* open_range_end(uint64_t serial) {
  OpenRanges* const open = ThreadRanges::get();  // a listed range (serial != 0) means the list exists
  const int64_t index = serial != 0 && open != nullptr ? find_range(*open, serial) : -1;
  if (index < 0) {  // not listed (past the capacity): the innermost is ours
    pk_end_event();
    return nullptr;
  }
  const int64_t later = open_range_above(*open, static_cast<uint32_t>(index));
  if (later < 0) {
    end_ranges_from(*open, static_cast<uint32_t>(index));
    return nullptr;
  }
  open->ranges[index].state = RangeState::kEnded;
  return open->ranges[later].name;
}

void open_range_abandon(uint64_t serial) {
  OpenRanges* const open = ThreadRanges::get();
  const int64_t index = open != nullptr ? find_range(*open, serial) : -1;
  if (index >= 0) open->ranges[index].state = RangeState::kAbandoned;
}

}  // namespace profkit_py
