#include "summary/memory_manipulation_table.h"

#include "summary/call_table.h"
#include "summary/communication.h"
#include "summary/kernel_name.h"

namespace profkit {

MemoryManipulationTable::MemoryManipulationTable(const SummaryContext& context)
    : context_(context), stats_(context.result->strings.size(), /*split_by_thread=*/false) {
  // Names are decided once each, so the walk skips every other event cheaply.
  const StringTable& strings = context.result->strings;
  memory_name_.resize(strings.size());
  for (size_t i = 0; i < strings.size(); ++i) {
    const std::string_view text = strings.view(i);
    memory_name_[i] = contains_ignoring_case(text, "memcpy") || contains_ignoring_case(text, "memset");
  }
}

void MemoryManipulationTable::on_close(const OpenStack& /*stack*/, const OpenEvent& closed) {
  const pk_host_event& e = context_.result->host_events[closed.index];
  if (is_instant(e)) return;
  CallStats& s = stats_.at(e.name);
  ++s.calls;
  s.cpu.add(duration_ns(e.start_ns, e.end_ns));
  s.gpu.add(closed.gpu_ns);
}

SummaryTable MemoryManipulationTable::table() {
  const Result& r = *context_.result;
  SummaryTable t(SummaryView::kMemoryManipulation, "Memory Manipulation Summary", "Name");
  t.has_device_data = context_.has_device_data;
  const CallColumns columns = add_call_columns(t, /*with_thread=*/false);

  DeviceNames device_names(r.strings);
  std::vector<CallStats> device_stats;
  uint64_t untimed = 0;
  for (const pk_device_event& e : r.device_events) {
    if (e.type != PK_EVENT_MEMCPY && e.type != PK_EVENT_MEMSET) continue;
    const uint32_t id = device_names.id_of(e);
    if (id >= device_stats.size()) device_stats.resize(id + 1);
    ++device_stats[id].calls;
    if (lacks_timing(e)) {
      ++untimed;
      continue;
    }
    device_stats[id].gpu.add(duration_ns(e.start_ns, e.end_ns));
  }

  std::vector<FlatEntry> entries;
  for (const NameStatsMap::Entry& e : stats_.entries()) {
    entries.push_back({0, r.strings.view_or_empty(e.name), &e.stats});
  }
  for (uint32_t id = 0; id < device_stats.size(); ++id) {
    if (device_stats[id].calls > 0) entries.push_back({0, device_names.text(id), &device_stats[id]});
  }
  if (entries.empty()) {
    t.empty_reason = "no memcpy or memset recorded";
    return t;
  }
  const double total = static_cast<double>(context_.total_time_ns);
  add_sorted_rows(t, columns, entries, context_, total, total);
  t.notes.push_back("Ratio = time / total time (" + context_.total_time_source() + ").");
  if (untimed > 0) t.notes.push_back(untimed_note(untimed));
  return t;
}

}  // namespace profkit
