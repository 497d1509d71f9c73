// The order of a thread's host events in a Result: start ascending, then the
// longer (enclosing) event first, then the lower depth hint first — so each
// thread's events read as a pre-order walk of its event tree.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <vector>

#include "profkit/profkit.h"

namespace profkit {

inline bool event_before(const pk_host_event& a, const pk_host_event& b) noexcept {
  if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
  if (a.end_ns != b.end_ns) return a.end_ns > b.end_ns;
  return a.depth < b.depth;
}

// Puts one thread's events in Result order. The recorder writes an event when
// it ends, so events arrive in end order; but events of one nesting depth are
// disjoint, so each depth is already a sorted run and a k-way merge of the
// runs (O(n log depths)) replaces a full sort. Unsorted runs (runtime calls
// from a GPU tracer, hand-built input) are sorted first, so any input works.
void sort_thread_events(std::vector<pk_host_event>& events);

// Removes from sorted events those nested, by time containment, more than
// 255 levels deep (below 256 enclosing events), and returns how many: a
// stored depth stops at 255, and at that depth nesting can no longer be
// told from order (events recorded whole, such as with_stack's Python calls
// of a deep recursion, read as overlapping siblings, inflating every time
// computed from the tree). The recorder drops begin/end events past that
// depth as they come (overflowed_events); this drops the others the same way.
size_t drop_nested_too_deep(std::vector<pk_host_event>& events);

// Rewrites depth from time containment on sorted events (saturating at 255).
void nest_by_containment(std::vector<pk_host_event>& events);

}  // namespace profkit
