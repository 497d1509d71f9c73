// Options of the summary tables (SPEC §6): the sort key, operator detail,
// per-thread split, time unit, which views, a row limit, and Operator rows
// per input shape. The numeric
// values of the enums are the ones the C ABI and Python's SortedKeys /
// SummaryView use; they never change.
//
// Thread-safety: plain values; make_summary_options() throws on invalid
// input; the name functions are pure.
#pragma once

#include <cstdint>
#include <string_view>

namespace profkit {

enum class SortKey : int32_t {
  kCpuTotal = 0,
  kCpuAvg = 1,
  kCpuMax = 2,
  kCpuMin = 3,
  kGpuTotal = 4,
  kGpuAvg = 5,
  kGpuMax = 6,
  kGpuMin = 7,
  // Self CPU time: the time of an Operator row's calls not spent in an event
  // nested inside them (torch.profiler's self_cpu_time_total). Rows that do
  // not measure it (the other tables') order by their CPU total instead.
  kCpuSelf = 8,
};
constexpr int32_t kSortKeyCount = 9;

enum class SummaryView : int32_t {
  kDevice = 0,
  kOverview = 1,
  kModel = 2,
  kDistributed = 3,
  kKernel = 4,
  kOperator = 5,
  kMemory = 6,
  kMemoryManipulation = 7,
  kUserDefined = 8,
};
constexpr int32_t kSummaryViewCount = 9;
constexpr uint32_t kAllViews = (1u << kSummaryViewCount) - 1;

enum class TimeUnit : int32_t { kSeconds = 0, kMilliseconds = 1, kMicroseconds = 2, kNanoseconds = 3 };
constexpr int32_t kTimeUnitCount = 4;

struct SummaryOptions {
  SortKey sorted_by = SortKey::kCpuTotal;
  bool op_detail = true;    // inner events and kernels nested under operators
  bool thread_sep = false;  // one group of rows per thread
  TimeUnit time_unit = TimeUnit::kMilliseconds;
  uint32_t views = kAllViews;  // bit v set: view v is computed
  uint64_t row_limit = 0;      // top-level rows per table; 0 = no limit
  // Operator rows per (name, "input_shapes" argument), with an "Input Shapes"
  // column, as torch.profiler's key_averages(group_by_input_shape=True).
  bool group_by_input_shape = false;
  // Operator rows per (name, the innermost group_by_stack_n Python function
  // frames around the call: PythonOp events, built-in calls left out), with a
  // "Source Location" column, as key_averages(group_by_stack_n=N); 0: off.
  uint32_t group_by_stack_n = 0;

  bool wants(SummaryView v) const noexcept { return (views >> static_cast<int32_t>(v)) & 1u; }
};

// Builds options from raw numbers (as they cross the C ABI), throwing
// profkit::Error(PK_ERR_INVALID_ARGUMENT) with the valid values named.
// views == 0 means every view.
SummaryOptions make_summary_options(int32_t sorted_by, bool op_detail, bool thread_sep, int32_t time_unit,
                                    uint32_t views, uint64_t row_limit, bool group_by_input_shape = false,
                                    uint64_t group_by_stack_n = 0);

// The most frames group_by_stack_n takes: a trace keeps 256 nesting levels.
constexpr uint64_t kMaxStackFrames = 255;

// "CPUTotal", "GPUMin", ... (the Python SortedKeys names).
std::string_view sort_key_name(SortKey key) noexcept;
// "DeviceView", "OverView", ... (the Python SummaryView names).
std::string_view view_name(SummaryView view) noexcept;
// "s", "ms", "us", "ns".
std::string_view time_unit_name(TimeUnit unit) noexcept;
// Nanoseconds per unit (1e9 for seconds).
double ns_per_unit(TimeUnit unit) noexcept;

}  // namespace profkit
