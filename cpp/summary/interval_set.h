// Interval arithmetic for the summary tables: "union" means overlapping time
// counts once (SPEC §6). Intervals are half-open [start, end) in ns; empty
// ones (end <= start) add nothing.
//
// An IntervalList is "merged": sorted by start, disjoint and non-empty. The
// functions below take and return merged lists.
//
// Thread-safety: none needed; every object is used by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace profkit {

struct Interval {
  uint64_t start;
  uint64_t end;
};
using IntervalList = std::vector<Interval>;

// The part of a stream of disjoint intervals, ascending by start, that falls
// inside a merged `window`: a cursor over the window only moves forward, so
// the whole stream costs one pass over both. A stream that goes back in time
// (only a damaged Result has one) starts the cursor over: still right, only
// slower. Without a window everything counts.
class WindowedLength {
 public:
  // `window` (optional, borrowed) must outlive this.
  explicit WindowedLength(const IntervalList* window = nullptr) : window_(window) {}
  void add(uint64_t start, uint64_t end) noexcept;
  uint64_t length() const noexcept { return length_; }

 private:
  const IntervalList* window_;
  size_t next_ = 0;  // the first window interval that may still meet the stream
  uint64_t last_start_ = 0;
  uint64_t length_ = 0;
};

// Streaming union of intervals that arrive in ascending start order (ends in
// any order): keeps one open interval, so it needs no memory unless asked to
// write the merged list out.
class IntervalMerger {
 public:
  // `out` (optional, borrowed) receives each merged interval as it closes;
  // so does `within` (optional, borrowed), which measures what of the union
  // falls inside its window.
  explicit IntervalMerger(IntervalList* out = nullptr, WindowedLength* within = nullptr) : out_(out), within_(within) {}

  void add(uint64_t start, uint64_t end) {
    if (end <= start) return;
    if (open_ && start <= current_.end) {
      if (end > current_.end) current_.end = end;
      return;
    }
    flush();
    current_ = {start, end};
    open_ = true;
  }
  // Closes the open interval; call before reading length() or the list.
  void flush() {
    if (!open_) return;
    length_ += current_.end - current_.start;
    if (out_ != nullptr) out_->push_back(current_);
    if (within_ != nullptr) within_->add(current_.start, current_.end);
    open_ = false;
  }
  // Total length of everything added and flushed.
  uint64_t length() const noexcept { return length_; }

 private:
  IntervalList* out_;
  WindowedLength* within_;
  Interval current_{0, 0};
  bool open_ = false;
  uint64_t length_ = 0;
};

uint64_t total_length(const IntervalList& merged) noexcept;
IntervalList union_of(const IntervalList& a, const IntervalList& b);
IntervalList intersection_of(const IntervalList& a, const IntervalList& b);
// The time of `a` that is not in `b` (both merged).
IntervalList difference_of(const IntervalList& a, const IntervalList& b);
// Time of `merged` that falls inside `window` (both merged).
uint64_t length_within(const IntervalList& merged, const IntervalList& window) noexcept;

// Several merged lists (one per thread, say) kept back to back; union_length
// merges them k ways without sorting or copying, since each is sorted.
class SegmentedIntervals {
 public:
  // Starts the next segment; intervals added after it must be merged among
  // themselves (ascending, disjoint), as an IntervalMerger writes them.
  void begin_segment() { segment_starts_.push_back(intervals_.size()); }
  IntervalList& storage() noexcept { return intervals_; }
  bool empty() const noexcept { return intervals_.empty(); }

  // Length of the union of all segments; writes the merged union to `out`
  // and measures it with `within` when they are not null.
  uint64_t union_length(IntervalList* out = nullptr, WindowedLength* within = nullptr) const;
  // Frees the memory.
  void clear();

 private:
  IntervalList intervals_;
  std::vector<size_t> segment_starts_;
};

}  // namespace profkit
