#include "summary/userdefined_table.h"

#include <vector>

#include "summary/call_table.h"

namespace profkit {

void UserDefinedTable::on_close(const OpenStack& /*stack*/, const OpenEvent& closed) {
  const pk_host_event& e = context_.result->host_events[closed.index];
  if (is_instant(e)) return;
  CallStats& s = stats_.at(e.name);
  ++s.calls;
  s.cpu.add(duration_ns(e.start_ns, e.end_ns));
  s.gpu.add(closed.gpu_ns);
}

SummaryTable UserDefinedTable::table() {
  SummaryTable t(SummaryView::kUserDefined, "UserDefined Summary", "Name");
  t.has_device_data = context_.has_device_data;
  const CallColumns columns = add_call_columns(t, stats_.split_by_thread());
  if (stats_.entries().empty()) {
    t.empty_reason = "no UserDefined or PythonUserDefined events recorded";
    return t;
  }
  std::vector<FlatEntry> entries;
  entries.reserve(stats_.entries().size());
  for (const NameStatsMap::Entry& e : stats_.entries()) {
    entries.push_back({e.thread, context_.result->strings.view_or_empty(e.name), &e.stats});
  }
  const double total = static_cast<double>(context_.total_time_ns);
  add_sorted_rows(t, columns, entries, context_, total, total);
  t.notes.push_back("Ratio = time / total time (" + context_.total_time_source() + ").");
  return t;
}

}  // namespace profkit
