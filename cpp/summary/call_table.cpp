#include "summary/call_table.h"

#include <algorithm>
#include <string>

namespace profkit {

CallColumns add_call_columns(SummaryTable& table, bool with_thread, bool with_cpu, bool with_self) {
  CallColumns c;
  c.has_thread = with_thread;
  c.has_cpu = with_cpu;
  c.has_self = with_cpu && with_self;
  if (with_thread) c.thread = table.add_column("Thread", ColumnKind::kId);
  c.calls = table.add_column("Calls", ColumnKind::kCount);
  if (with_cpu) {
    c.cpu = table.value_count();
    table.add_time_stat_columns("CPU", /*device_only=*/false);
  }
  if (c.has_self) {
    c.self = table.add_column("Self CPU Total", ColumnKind::kTime, "Self CPU");
    table.add_column("Self CPU Ratio(%)", ColumnKind::kPercent, "Self CPU");
  }
  c.gpu = table.value_count();
  table.add_time_stat_columns("GPU", /*device_only=*/with_cpu);
  return c;
}

void fill_call_row(SummaryRow& row, const CallColumns& columns, const CallStats& stats, uint64_t tid,
                   double cpu_denominator, double gpu_denominator) {
  if (columns.has_thread) row.values[columns.thread] = static_cast<double>(tid);
  row.values[columns.calls] = static_cast<double>(stats.calls);
  if (columns.has_cpu) fill_time_stats(row, columns.cpu, stats.cpu, cpu_denominator);
  if (columns.has_self && stats.self.count > 0) {
    row.values[columns.self] = static_cast<double>(stats.self.total);
    row.values[columns.self + 1] = percent(static_cast<double>(stats.self.total), cpu_denominator);
  }
  fill_time_stats(row, columns.gpu, stats.gpu, gpu_denominator);
}

uint64_t thread_id(const Result& result, uint32_t thread) noexcept {
  return thread < result.threads.size() ? result.threads[thread].tid : 0;
}

void add_sorted_rows(SummaryTable& table, const CallColumns& columns, std::vector<FlatEntry>& entries,
                     const SummaryContext& context, double cpu_denominator, double gpu_denominator) {
  const SortKey key = context.options.sorted_by;
  sort_by_key(
      entries, key, [](const FlatEntry& e) -> const CallStats& { return *e.stats; },
      [](const FlatEntry& e) { return e.label; });
  // Group by thread, keeping the key order within each (stable).
  if (columns.has_thread) {
    std::stable_sort(entries.begin(), entries.end(),
                     [](const FlatEntry& a, const FlatEntry& b) { return a.thread < b.thread; });
  }
  const uint64_t limit = context.options.row_limit;
  uint64_t left_out = 0;
  uint64_t in_group = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0 && entries[i].thread != entries[i - 1].thread) in_group = 0;
    if (limit != 0 && in_group >= limit) {
      ++left_out;
      continue;
    }
    ++in_group;
    SummaryRow& row = table.add_row(std::string(entries[i].label));
    fill_call_row(row, columns, *entries[i].stats, thread_id(*context.result, entries[i].thread), cpu_denominator,
                  gpu_denominator);
  }
  if (left_out > 0) {
    table.notes.push_back(std::to_string(left_out) + " more rows not shown (row_limit=" + std::to_string(limit) +
                          (columns.has_thread ? " per thread)" : ")"));
  }
}

std::string untimed_note(uint64_t untimed_calls) {
  const bool one = untimed_calls == 1;
  return std::to_string(untimed_calls) + (one ? " GPU record" : " GPU records") +
         " had no timestamps (CUPTI gave none): counted in Calls, not in the GPU times.";
}

std::string unattached_note(uint64_t unattached_records, const char* owners) {
  const bool one = unattached_records == 1;
  return std::to_string(unattached_records) + (one ? " GPU record has" : " GPU records have") +
         " no captured launch, so no " + owners + " GPU time counts " + (one ? "it" : "them") +
         " (launched before GPU tracing saw the call, or through the CUDA driver API, as cuBLAS and Triton do, "
         "while PROFKIT_CUPTI_DRIVER=0 left such launches out).";
}

}  // namespace profkit
