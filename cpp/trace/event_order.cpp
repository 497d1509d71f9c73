#include "trace/event_order.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <queue>

namespace profkit {

namespace {

// Runs: one per depth hint, and ProfileStep events apart (a step ends after
// the top-level events inside it, so it would break their run's order).
constexpr size_t kRuns = 257;

size_t run_of(const pk_host_event& e) { return e.type == PK_EVENT_PROFILE_STEP ? 256 : e.depth; }

}  // namespace

void sort_thread_events(std::vector<pk_host_event>& events) {
  if (std::is_sorted(events.begin(), events.end(), event_before)) return;

  std::array<size_t, kRuns + 1> begin{};  // begin[r] .. begin[r + 1] is run r
  for (const pk_host_event& e : events) ++begin[run_of(e) + 1];
  size_t nonempty = 0;
  for (size_t r = 0; r < kRuns; ++r) {
    nonempty += begin[r + 1] > 0;
    begin[r + 1] += begin[r];
  }
  if (nonempty <= 1) {
    std::sort(events.begin(), events.end(), event_before);
    return;
  }

  std::vector<pk_host_event> grouped(events.size());
  std::array<size_t, kRuns> fill{};
  for (size_t r = 0; r < kRuns; ++r) fill[r] = begin[r];
  for (const pk_host_event& e : events) grouped[fill[run_of(e)]++] = e;
  for (size_t r = 0; r < kRuns; ++r) {
    auto first = grouped.begin() + static_cast<std::ptrdiff_t>(begin[r]);
    auto last = grouped.begin() + static_cast<std::ptrdiff_t>(begin[r + 1]);
    if (!std::is_sorted(first, last, event_before)) std::sort(first, last, event_before);
  }

  // Merge the runs through a min-heap of their heads.
  struct Cursor {
    size_t at;
    size_t end;
  };
  auto later = [&](const Cursor& a, const Cursor& b) { return event_before(grouped[b.at], grouped[a.at]); };
  std::priority_queue<Cursor, std::vector<Cursor>, decltype(later)> heads(later);
  for (size_t r = 0; r < kRuns; ++r) {
    if (begin[r] < begin[r + 1]) heads.push({begin[r], begin[r + 1]});
  }
  size_t out = 0;
  while (!heads.empty()) {
    Cursor c = heads.top();
    heads.pop();
    events[out++] = grouped[c.at];
    if (++c.at < c.end) heads.push(c);
  }
}

size_t drop_nested_too_deep(std::vector<pk_host_event>& events) {
  constexpr size_t kDeepest = 255;  // the deepest stored depth
  std::vector<uint64_t> open_ends;  // as nest_by_containment: the enclosing events' ends
  size_t kept = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    const uint64_t end_ns = events[i].end_ns;
    while (!open_ends.empty() && open_ends.back() < end_ns) open_ends.pop_back();
    // What a dropped event encloses is deeper than it: dropped too, and no
    // kept event is ever below a dropped one.
    const bool too_deep = open_ends.size() > kDeepest;
    open_ends.push_back(end_ns);
    if (too_deep) continue;
    if (kept != i) events[kept] = events[i];  // moved up only once something was dropped
    ++kept;
  }
  const size_t dropped = events.size() - kept;
  events.resize(kept);
  return dropped;
}

void nest_by_containment(std::vector<pk_host_event>& events) {
  // A stack of the end times of the events enclosing the current one.
  std::vector<uint64_t> open_ends;
  for (pk_host_event& e : events) {
    while (!open_ends.empty() && open_ends.back() < e.end_ns) open_ends.pop_back();
    e.depth = static_cast<uint8_t>(std::min<size_t>(open_ends.size(), 255));
    open_ends.push_back(e.end_ns);
  }
}

}  // namespace profkit
