// Each thread's list of the ranges its RecordEvents have open in the engine
// (see open_ranges.h for why it exists).
#include "open_ranges.h"

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
thread_local OpenRanges t_open;

void pop_range() {
  OpenRange& top = t_open.ranges[--t_open.count];
  Py_CLEAR(top.name);
}

// The index of `serial` among this thread's open ranges, or -1.
int64_t find_range(uint64_t serial) {
  for (uint32_t i = t_open.count; i-- > 0;) {
    if (t_open.ranges[i].serial == serial) return i;
  }
  return -1;
}

void end_ranges_above(uint32_t index) {
  while (t_open.count > index) {
    pk_end_event();
    pop_range();
  }
}

// Ends range `index` and every range above it (none open) in the engine,
// then the ranges below that were waiting only for these: down to the
// deepest ended one, abandoned ones between included.
void end_ranges_from(uint32_t index) {
  end_ranges_above(index);
  uint32_t waiting_from = t_open.count;
  for (uint32_t i = t_open.count; i-- > 0 && t_open.ranges[i].state != RangeState::kOpen;) {
    if (t_open.ranges[i].state == RangeState::kEnded) waiting_from = i;
  }
  end_ranges_above(waiting_from);
}

// The innermost range above `index` still open, or -1 when none is.
int64_t open_range_above(uint32_t index) {
  for (uint32_t i = t_open.count; i-- > index + 1;) {
    if (t_open.ranges[i].state == RangeState::kOpen) return i;
  }
  return -1;
}

}  // namespace

uint64_t open_range_push(PyObject* name, uint32_t window) {
  // Entries of an earlier window are stale: the engine started that thread's
  // stack afresh when the window changed. They sit below any newer entry, so
  // checking the top keeps every entry in one window.
  while (t_open.count > 0 && t_open.ranges[t_open.count - 1].window != window) pop_range();
  if (t_open.count == OpenRanges::kCapacity) return 0;
  Py_INCREF(name);
  t_open.ranges[t_open.count++] = {++t_open.next_serial, name, window, RangeState::kOpen};
  return t_open.next_serial;
}

PyObject* open_range_end(uint64_t serial) {
  const int64_t index = serial != 0 ? find_range(serial) : -1;
  if (index < 0) {  // not listed (past the capacity): the innermost is ours
    pk_end_event();
    return nullptr;
  }
  const int64_t later = open_range_above(static_cast<uint32_t>(index));
  if (later < 0) {
    end_ranges_from(static_cast<uint32_t>(index));
    return nullptr;
  }
  t_open.ranges[index].state = RangeState::kEnded;
  return t_open.ranges[later].name;
}

void open_range_abandon(uint64_t serial) {
  const int64_t index = find_range(serial);
  if (index >= 0) t_open.ranges[index].state = RangeState::kAbandoned;
}

}  // namespace profkit_py
