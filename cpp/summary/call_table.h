// The layout shared by the name-keyed tables (Operator, Kernel, Memory
// Manipulation, UserDefined): Name, [Thread], Calls, CPU Total / Avg / Max /
// Min / Ratio(%), GPU Total / Avg / Max / Min / Ratio(%); and the ordering of
// their rows by sorted_by with row_limit applied.
//
// Thread-safety: pure functions over values.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "summary/call_stats.h"
#include "summary/summary_context.h"
#include "summary/summary_table.h"

namespace profkit {

struct CallColumns {
  bool has_thread = false;
  bool has_cpu = true;
  bool has_self = false;
  size_t thread = 0;  // value indices
  size_t calls = 0;
  size_t cpu = 0;   // first of five
  size_t self = 0;  // "Self CPU Total", "Self CPU Ratio(%)"
  size_t gpu = 0;   // first of five
};

// Adds the columns after the label. Without CPU columns (the Kernel table)
// the GPU columns are always shown; otherwise they are shown in text only
// when the Result has GPU activity. with_self adds the self CPU time's total
// and ratio after the CPU columns.
CallColumns add_call_columns(SummaryTable& table, bool with_thread, bool with_cpu = true, bool with_self = false);

// Fills a row: the thread's OS id, calls and both time groups (and self
// time), with ratios of the totals to the given denominators (self time's to
// cpu_denominator).
void fill_call_row(SummaryRow& row, const CallColumns& columns, const CallStats& stats, uint64_t tid,
                   double cpu_denominator, double gpu_denominator);

struct FlatEntry {
  uint32_t thread;  // index into Result::threads
  std::string_view label;
  const CallStats* stats;
};

// Orders `entries` by thread (when split) and then by sorted_by, keeps at
// most row_limit per thread, and appends them as rows of level 0; notes how
// many were left out.
void add_sorted_rows(SummaryTable& table, const CallColumns& columns, std::vector<FlatEntry>& entries,
                     const SummaryContext& context, double cpu_denominator, double gpu_denominator);

// Sorts `items` by sorted_by (see call_stats.h) with `stats_of(item)` and
// `label_of(item)`; stable, so equal rows keep their order.
template <class T, class StatsOf, class LabelOf>
void sort_by_key(std::vector<T>& items, SortKey key, StatsOf stats_of, LabelOf label_of) {
  std::stable_sort(items.begin(), items.end(), [&](const T& a, const T& b) {
    return sorts_before(sort_value(stats_of(a), key), label_of(a), sort_value(stats_of(b), key), label_of(b), key);
  });
}

// GPU records CUPTI gave no timestamps for (PK_DEVICE_EVENT_NO_TIMING) count
// as calls but not in the times, where a 0 would drag Avg and Min down;
// untimed_note says so under the table.
inline bool lacks_timing(const pk_device_event& e) noexcept { return (e.flags & PK_DEVICE_EVENT_NO_TIMING) != 0; }
std::string untimed_note(uint64_t untimed_calls);

// GPU records whose launch was not captured (pk_result_info's
// unattached_device_records) sit under no host event: the tables that give
// calls their GPU time by launch say so, and how to capture those launches.
// `owners` names what misses them ("operator's").
std::string unattached_note(uint64_t unattached_records, const char* owners);

// The OS thread id of thread index `thread`, 0 if out of range.
uint64_t thread_id(const Result& result, uint32_t thread) noexcept;

}  // namespace profkit
