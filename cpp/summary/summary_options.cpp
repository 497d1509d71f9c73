#include "summary/summary_options.h"

#include <string>

#include "common/error.h"
#include "profkit/profkit.h"

namespace profkit {

namespace {

constexpr std::string_view kSortKeyNames[kSortKeyCount] = {"CPUTotal", "CPUAvg", "CPUMax", "CPUMin", "GPUTotal",
                                                           "GPUAvg",   "GPUMax", "GPUMin", "CPUSelf"};
constexpr std::string_view kViewNames[kSummaryViewCount] = {
    "DeviceView", "OverView",     "ModelView",  "DistributedView",
    "KernelView", "OperatorView", "MemoryView", "MemoryManipulationView",
    "UDFView"};
constexpr std::string_view kTimeUnitNames[kTimeUnitCount] = {"s", "ms", "us", "ns"};

template <size_t N>
std::string list_values(const std::string_view (&names)[N]) {
  std::string out;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) out += ", ";
    out += std::string(names[i]) + "=" + std::to_string(i);
  }
  return out;
}

}  // namespace

SummaryOptions make_summary_options(int32_t sorted_by, bool op_detail, bool thread_sep, int32_t time_unit,
                                    uint32_t views, uint64_t row_limit, bool group_by_input_shape,
                                    uint64_t group_by_stack_n) {
  if (sorted_by < 0 || sorted_by >= kSortKeyCount) {
    throw Error(PK_ERR_INVALID_ARGUMENT, "summary: sorted_by " + std::to_string(sorted_by) +
                                             " is not a sort key; use one of " + list_values(kSortKeyNames));
  }
  if (time_unit < 0 || time_unit >= kTimeUnitCount) {
    throw Error(PK_ERR_INVALID_ARGUMENT, "summary: time_unit " + std::to_string(time_unit) +
                                             " is not a time unit; use one of " + list_values(kTimeUnitNames));
  }
  if ((views & ~kAllViews) != 0) {
    throw Error(PK_ERR_INVALID_ARGUMENT, "summary: views mask " + std::to_string(views) +
                                             " has bits past the last view; set bit (1 << v) for v in " +
                                             list_values(kViewNames) + ", or pass 0 for every view");
  }
  if (group_by_stack_n > kMaxStackFrames) {
    throw Error(PK_ERR_INVALID_ARGUMENT, "summary: group_by_stack_n " + std::to_string(group_by_stack_n) +
                                             " is more frames than a trace nests (" + std::to_string(kMaxStackFrames) +
                                             "); use 0 (off) to " + std::to_string(kMaxStackFrames));
  }
  SummaryOptions o;
  o.sorted_by = static_cast<SortKey>(sorted_by);
  o.op_detail = op_detail;
  o.thread_sep = thread_sep;
  o.time_unit = static_cast<TimeUnit>(time_unit);
  o.views = views == 0 ? kAllViews : views;
  o.row_limit = row_limit;
  o.group_by_input_shape = group_by_input_shape;
  o.group_by_stack_n = static_cast<uint32_t>(group_by_stack_n);
  return o;
}

std::string_view sort_key_name(SortKey key) noexcept {
  const auto i = static_cast<int32_t>(key);
  return i >= 0 && i < kSortKeyCount ? kSortKeyNames[i] : std::string_view("Unknown");
}

std::string_view view_name(SummaryView view) noexcept {
  const auto i = static_cast<int32_t>(view);
  return i >= 0 && i < kSummaryViewCount ? kViewNames[i] : std::string_view("Unknown");
}

std::string_view time_unit_name(TimeUnit unit) noexcept {
  const auto i = static_cast<int32_t>(unit);
  return i >= 0 && i < kTimeUnitCount ? kTimeUnitNames[i] : std::string_view("?");
}

double ns_per_unit(TimeUnit unit) noexcept {
  switch (unit) {
    case TimeUnit::kSeconds:
      return 1e9;
    case TimeUnit::kMilliseconds:
      return 1e6;
    case TimeUnit::kMicroseconds:
      return 1e3;
    case TimeUnit::kNanoseconds:
      return 1.0;
  }
  return 1e6;
}

}  // namespace profkit
