// Per-row statistics of the name-keyed tables (Operator, Kernel, Memory
// Manipulation, UserDefined): calls, and Total/Avg/Max/Min of the CPU time
// and of the GPU time, plus the sort order of SPEC §6 (Min keys ascending,
// the others descending).
//
// Thread-safety: plain data and pure functions.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>

#include "summary/summary_options.h"
#include "summary/summary_table.h"

namespace profkit {

struct TimeStats {
  uint64_t count = 0;
  uint64_t total = 0;
  uint64_t max = 0;
  uint64_t min = std::numeric_limits<uint64_t>::max();

  void add(uint64_t ns) noexcept {
    ++count;
    total += ns;
    if (ns > max) max = ns;
    if (ns < min) min = ns;
  }
  void merge(const TimeStats& other) noexcept {
    count += other.count;
    total += other.total;
    if (other.max > max) max = other.max;
    if (other.min < min) min = other.min;
  }
  double avg() const noexcept { return count == 0 ? 0.0 : static_cast<double>(total) / static_cast<double>(count); }
};

// A row's figures. cpu.count == 0 means the row has no CPU side (a GPU
// kernel); gpu.count == 0 means nothing was measured on the GPU for it;
// self.count == 0 that the table does not measure self time (only the
// Operator table does: each call's time outside the events nested in it).
struct CallStats {
  uint64_t calls = 0;
  TimeStats cpu;
  TimeStats gpu;
  TimeStats self;
};

// The value a sort key reads from `s`; NaN when the row has no such side
// (CPU keys on a kernel row). On rows with no CPU side a CPU key reads the
// matching GPU figure, so kernels still order sensibly under CPUTotal.
double sort_value(const CallStats& s, SortKey key) noexcept;
// True when `key` orders ascending (the Min keys).
bool ascending(SortKey key) noexcept;
// Strict weak order: by the key's value (missing last), then by label.
bool sorts_before(double a_value, std::string_view a_label, double b_value, std::string_view b_label,
                  SortKey key) noexcept;

// Writes Total, Avg, Max, Min and Ratio(%) of `s` into five values starting
// at `first`; all missing when s.count == 0. Ratio = total / denominator.
void fill_time_stats(SummaryRow& row, size_t first, const TimeStats& s, double denominator);

}  // namespace profkit
