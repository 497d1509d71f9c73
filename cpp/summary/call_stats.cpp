#include "summary/call_stats.h"

#include <string_view>

namespace profkit {

namespace {

double read(const TimeStats& s, int32_t which) noexcept {
  if (s.count == 0) return kMissing;
  switch (which) {
    case 0:
      return static_cast<double>(s.total);
    case 1:
      return s.avg();
    case 2:
      return static_cast<double>(s.max);
    default:
      return static_cast<double>(s.min);
  }
}

}  // namespace

double sort_value(const CallStats& s, SortKey key) noexcept {
  if (key == SortKey::kCpuSelf) {
    if (s.self.count > 0) return read(s.self, 0);
    key = SortKey::kCpuTotal;  // a table without self time
  }
  const auto k = static_cast<int32_t>(key);
  const bool gpu_key = k >= static_cast<int32_t>(SortKey::kGpuTotal);
  const int32_t which = k % 4;
  if (gpu_key) return read(s.gpu, which);
  return s.cpu.count > 0 ? read(s.cpu, which) : read(s.gpu, which);
}

bool ascending(SortKey key) noexcept { return key == SortKey::kCpuMin || key == SortKey::kGpuMin; }

bool sorts_before(double a_value, std::string_view a_label, double b_value, std::string_view b_label,
                  SortKey key) noexcept {
  const bool a_missing = is_missing(a_value);
  const bool b_missing = is_missing(b_value);
  if (a_missing != b_missing) return b_missing;
  if (!a_missing && a_value != b_value) return ascending(key) ? a_value < b_value : a_value > b_value;
  return a_label < b_label;
}

void fill_time_stats(SummaryRow& row, size_t first, const TimeStats& s, double denominator) {
  if (s.count == 0) return;  // add_row left them missing
  row.values[first] = static_cast<double>(s.total);
  row.values[first + 1] = s.avg();
  row.values[first + 2] = static_cast<double>(s.max);
  row.values[first + 3] = static_cast<double>(s.min);
  row.values[first + 4] = percent(static_cast<double>(s.total), denominator);
}

}  // namespace profkit
