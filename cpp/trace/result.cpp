#include "trace/result.h"

#include <algorithm>
#include <charconv>
#include <string_view>

namespace profkit {

size_t Result::thread_of(uint64_t event) const noexcept {
  // Threads are laid out in order; find the last one starting at or before.
  auto it = std::upper_bound(threads.begin(), threads.end(), event,
                             [](uint64_t e, const ThreadRecord& t) { return e < t.first_event; });
  return it == threads.begin() ? 0 : static_cast<size_t>(it - threads.begin() - 1);
}

uint64_t Result::parent_of(uint64_t event) const noexcept {
  if (event >= host_events.size() || threads.empty()) return PK_NO_EVENT;
  if (!parents_ready_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(parents_mutex_);
    if (!parents_ready_.load(std::memory_order_relaxed)) {
      try {
        parents_ = all_parents();
      } catch (...) {
        return scan_for_parent(event);  // no memory for the index: slower, still right
      }
      parents_ready_.store(true, std::memory_order_release);
    }
  }
  return parents_[event];
}

namespace {

// A stored depth stops at 255 (it is a byte): an event nested deeper, and an
// instant below the 255th open event, has the same depth as the event that
// encloses it. Among events at that depth, one that lies within another
// (sorted by start, enclosing first: it ends no later) is its child. Taking
// "the nearest earlier event with a smaller depth" alone skipped the
// saturated level and gave the parent's parent.
constexpr uint8_t kSaturatedDepth = 255;

bool encloses_at_saturated_depth(const pk_host_event& outer, const pk_host_event& inner) noexcept {
  return outer.depth == kSaturatedDepth && inner.depth == kSaturatedDepth && outer.end_ns >= inner.end_ns;
}

}  // namespace

uint64_t Result::scan_for_parent(uint64_t event) const noexcept {
  const ThreadRecord& t = threads[thread_of(event)];
  const pk_host_event& e = host_events[event];
  if (e.depth == 0) return PK_NO_EVENT;
  // Sorted by start with enclosing events first: the parent is the nearest
  // earlier event one level up (or, at the saturated depth, one that
  // encloses it: the nearest is the innermost).
  for (uint64_t i = event; i-- > t.first_event;) {
    if (host_events[i].depth < e.depth || encloses_at_saturated_depth(host_events[i], e)) return i;
  }
  return PK_NO_EVENT;
}

std::vector<uint64_t> Result::all_parents() const {
  std::vector<uint64_t> parents(host_events.size(), PK_NO_EVENT);
  // The nearest earlier event with a smaller depth (or, at the saturated
  // depth, enclosing it), as scan_for_parent finds it, also when depths skip
  // a level (a damaged or hand-made file): `open` holds the events that can
  // still be a parent, depths rising (strictly, but for a chain of events at
  // the saturated depth, each within the one before).
  std::vector<uint64_t> open;
  for (const ThreadRecord& t : threads) {
    open.clear();
    for (uint64_t i = t.first_event; i < t.first_event + t.event_count && i < host_events.size(); ++i) {
      const pk_host_event& e = host_events[i];
      while (!open.empty() && host_events[open.back()].depth >= e.depth &&
             !encloses_at_saturated_depth(host_events[open.back()], e)) {
        open.pop_back();
      }
      if (!open.empty()) parents[i] = open.back();
      open.push_back(i);
    }
  }
  return parents;
}

bool parse_profile_step(std::string_view name, uint64_t* number) noexcept {
  constexpr std::string_view kPrefix = "ProfileStep#";
  if (name.size() <= kPrefix.size() || name.substr(0, kPrefix.size()) != kPrefix) return false;
  const char* first = name.data() + kPrefix.size();
  const char* last = name.data() + name.size();
  auto [ptr, ec] = std::from_chars(first, last, *number);
  return ec == std::errc() && ptr == last;
}

std::pair<uint64_t, uint64_t> Result::step_range() const {
  uint64_t lo = UINT64_MAX;
  uint64_t hi = 0;
  uint64_t count = 0;
  for (const pk_host_event& e : host_events) {
    if (e.type != PK_EVENT_PROFILE_STEP) continue;
    uint64_t n = 0;
    if (!parse_profile_step(strings.view_or_empty(e.name), &n)) continue;
    lo = std::min(lo, n);
    hi = std::max(hi, n);
    ++count;
  }
  if (count == 0) return {0, 0};
  return {lo, hi - lo + 1};
}

}  // namespace profkit
