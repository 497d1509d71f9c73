#include "summary/interval_set.h"

#include <algorithm>

namespace profkit {

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

IntervalList difference_of(const IntervalList& a, const IntervalList& b) {
  IntervalList out;
  size_t j = 0;
  for (const Interval& i : a) {
    uint64_t start = i.start;
    // Skip what ends before this interval; b's later intervals may still cut it.
    while (j < b.size() && b[j].end <= start) ++j;
    for (size_t k = j; k < b.size() && b[k].start < i.end; ++k) {
      if (b[k].start > start) out.push_back({start, b[k].start});
      start = std::max(start, b[k].end);
      if (start >= i.end) break;
    }
    if (start < i.end) out.push_back({start, i.end});
  }
  return out;
}

uint64_t length_within(const IntervalList& merged, const IntervalList& window) noexcept {
  WindowedLength within(&window);
  for (const Interval& i : merged) within.add(i.start, i.end);
  return within.length();
}

void WindowedLength::add(uint64_t start, uint64_t end) noexcept {
  if (end <= start) return;
  if (window_ == nullptr) {
    length_ += end - start;
    return;
  }
  if (start < last_start_) next_ = 0;
  last_start_ = start;
  const IntervalList& w = *window_;
  while (next_ < w.size() && w[next_].end <= start) ++next_;
  // The window interval that ends past this one stays the cursor: the next
  // interval of the stream may meet it too.
  for (size_t k = next_; k < w.size() && w[k].start < end; ++k) {
    length_ += std::min(end, w[k].end) - std::max(start, w[k].start);
  }
}

uint64_t SegmentedIntervals::union_length(IntervalList* out, WindowedLength* within) const {
  if (segment_starts_.size() <= 1) {
    // One segment is already merged.
    if (out != nullptr) *out = intervals_;
    if (within != nullptr) {
      for (const Interval& i : intervals_) within->add(i.start, i.end);
    }
    return total_length(intervals_);
  }
  struct Cursor {
    const Interval* next;
    const Interval* end;
  };
  std::vector<Cursor> cursors;
  for (size_t s = 0; s < segment_starts_.size(); ++s) {
    const size_t end = s + 1 < segment_starts_.size() ? segment_starts_[s + 1] : intervals_.size();
    if (segment_starts_[s] < end) cursors.push_back({intervals_.data() + segment_starts_[s], intervals_.data() + end});
  }
  IntervalMerger merger(out, within);
  // Take the earliest next interval of any segment. With the few segments a
  // process has threads, a scan beats a heap; many threads get the heap.
  constexpr size_t kScanLimit = 16;
  if (cursors.size() <= kScanLimit) {
    while (!cursors.empty()) {
      size_t first = 0;
      for (size_t k = 1; k < cursors.size(); ++k) {
        if (cursors[k].next->start < cursors[first].next->start) first = k;
      }
      Cursor& c = cursors[first];
      merger.add(c.next->start, c.next->end);
      if (++c.next == c.end) {
        c = cursors.back();
        cursors.pop_back();
      }
    }
  } else {
    auto later = [](const Cursor& a, const Cursor& b) { return a.next->start > b.next->start; };
    std::make_heap(cursors.begin(), cursors.end(), later);
    while (!cursors.empty()) {
      std::pop_heap(cursors.begin(), cursors.end(), later);
      Cursor& c = cursors.back();
      merger.add(c.next->start, c.next->end);
      if (++c.next == c.end) {
        cursors.pop_back();
      } else {
        std::push_heap(cursors.begin(), cursors.end(), later);
      }
    }
  }
  merger.flush();
  return merger.length();
}

void SegmentedIntervals::clear() {
  IntervalList().swap(intervals_);
  std::vector<size_t>().swap(segment_starts_);
}

}  // namespace profkit
