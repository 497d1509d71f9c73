#include "summary/interval_set.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <utility>

namespace profkit {

void IntervalMerger::flush() {
  if (!open_) return;
  length_ += current_.end - current_.start;
  if (out_ != nullptr) out_->push_back(current_);
  open_ = false;
}

uint64_t total_length(const IntervalList& merged) noexcept {
  uint64_t sum = 0;
  for (const Interval& i : merged) sum += i.end - i.start;
  return sum;
}

IntervalList union_of(const IntervalList& a, const IntervalList& b) {
  IntervalList out;
  out.reserve(a.size() + b.size());
  IntervalMerger merger(&out);
  size_t i = 0;
  size_t j = 0;
  while (i < a.size() || j < b.size()) {
    const bool take_a = j == b.size() || (i < a.size() && a[i].start <= b[j].start);
    const Interval& next = take_a ? a[i++] : b[j++];
    merger.add(next.start, next.end);
  }
  merger.flush();
  return out;
}

IntervalList intersection_of(const IntervalList& a, const IntervalList& b) {
  IntervalList out;
  size_t i = 0;
  size_t j = 0;
  while (i < a.size() && j < b.size()) {
    const uint64_t start = std::max(a[i].start, b[j].start);
    const uint64_t end = std::min(a[i].end, b[j].end);
    if (start < end) out.push_back({start, end});
    // Drop whichever ends first; the other may still meet the next one.
    if (a[i].end < b[j].end) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

uint64_t length_within(const IntervalList& merged, const IntervalList& window) noexcept {
  uint64_t sum = 0;
  size_t i = 0;
  size_t j = 0;
  while (i < merged.size() && j < window.size()) {
    const uint64_t start = std::max(merged[i].start, window[j].start);
    const uint64_t end = std::min(merged[i].end, window[j].end);
    if (start < end) sum += end - start;
    if (merged[i].end < window[j].end) {
      ++i;
    } else {
      ++j;
    }
  }
  return sum;
}

uint64_t SegmentedIntervals::union_length(IntervalList* out) const {
  if (segment_starts_.size() <= 1) {
    // One segment is already merged.
    if (out != nullptr) *out = intervals_;
    return total_length(intervals_);
  }
  // Cursor per segment in a min-heap on the start of its next interval.
  using Cursor = std::pair<uint64_t, size_t>;  // (start, position)
  std::vector<size_t> ends(segment_starts_.size());
  for (size_t s = 0; s < segment_starts_.size(); ++s) {
    ends[s] = s + 1 < segment_starts_.size() ? segment_starts_[s + 1] : intervals_.size();
  }
  std::vector<std::pair<Cursor, size_t>> heap_storage;
  heap_storage.reserve(segment_starts_.size());
  std::priority_queue<std::pair<Cursor, size_t>, std::vector<std::pair<Cursor, size_t>>, std::greater<>> heap(
      std::greater<>(), std::move(heap_storage));
  for (size_t s = 0; s < segment_starts_.size(); ++s) {
    if (segment_starts_[s] < ends[s]) heap.push({{intervals_[segment_starts_[s]].start, segment_starts_[s]}, s});
  }
  IntervalMerger merger(out);
  while (!heap.empty()) {
    auto [cursor, segment] = heap.top();
    heap.pop();
    const Interval& next = intervals_[cursor.second];
    merger.add(next.start, next.end);
    const size_t following = cursor.second + 1;
    if (following < ends[segment]) heap.push({{intervals_[following].start, following}, segment});
  }
  merger.flush();
  return merger.length();
}

void SegmentedIntervals::clear() {
  IntervalList().swap(intervals_);
  std::vector<size_t>().swap(segment_starts_);
}

}  // namespace profkit
