// See _torch_user_ranges.h.
#include "_torch_user_ranges.h"

#include <algorithm>
#include <new>

namespace profkit_torch {

namespace {

struct OpenUserRange {
  const at::RecordFunction* fn;
  uint64_t start_ticks;
  pk_name_id name;
  uint32_t window;
  pk_event_type type;
};

// One thread's open ranges, oldest first. Ranges are few (a handful per
// step) and end mostly innermost-first, so a search from the top finds one
// at once.
struct OpenUserRanges {
  static constexpr uint32_t kCapacity = 256;  // as the engine's nesting limit
  OpenUserRange ranges[kCapacity];
  uint32_t count = 0;
};

// Only a pointer in thread-local storage (see _torch_op_names.cpp's content
// table for why); the owner frees the list when the thread exits.
thread_local OpenUserRanges* t_ranges = nullptr;

struct OpenUserRangesOwner {
  ~OpenUserRangesOwner() {
    OpenUserRanges* ranges = t_ranges;
    t_ranges = nullptr;
    delete ranges;
  }
};

OpenUserRanges* thread_ranges() noexcept {
  if (t_ranges == nullptr) {
    thread_local OpenUserRangesOwner owner;
    (void)owner;
    t_ranges = new (std::nothrow) OpenUserRanges();
  }
  return t_ranges;
}

void remove_at(OpenUserRanges& open, uint32_t index) {
  std::copy(open.ranges + index + 1, open.ranges + open.count, open.ranges + index);
  --open.count;
}

}  // namespace

void user_range_begin(const at::RecordFunction& fn, pk_name_id name, pk_event_type type, uint32_t window) noexcept {
  OpenUserRanges* const open = thread_ranges();
  if (open == nullptr || name == 0) return;  // out of memory: not recorded
  // Ranges of an earlier window can no longer be recorded: their window is
  // collected. (Windows only move forward, so they are the oldest.)
  uint32_t stale = 0;
  while (stale < open->count && open->ranges[stale].window != window) ++stale;
  if (stale > 0) {
    std::copy(open->ranges + stale, open->ranges + open->count, open->ranges);
    open->count -= stale;
  }
  if (open->count == OpenUserRanges::kCapacity) return;
  open->ranges[open->count++] = {&fn, pk_now_ticks(), name, window, type};
}

void user_range_end(const at::RecordFunction& fn) noexcept {
  const uint64_t end_ticks = pk_now_ticks();  // first: the range ends here
  OpenUserRanges* const open = t_ranges;
  if (open == nullptr) return;
  for (uint32_t i = open->count; i-- > 0;) {
    const OpenUserRange range = open->ranges[i];
    if (range.fn != &fn) continue;
    remove_at(*open, i);
    if (range.window == __atomic_load_n(&pk_recording_word, __ATOMIC_RELAXED)) {
      pk_complete_event_ticks(range.name, range.type, range.start_ticks, end_ticks);
    }
    return;
  }
}

}  // namespace profkit_torch
