#include "summary/kernel_table.h"

#include <vector>

#include "summary/call_table.h"
#include "summary/kernel_name.h"

namespace profkit {

SummaryTable make_kernel_table(const SummaryContext& c) {
  const Result& r = *c.result;
  SummaryTable t(SummaryView::kKernel, "Kernel Summary", "Name");
  t.has_device_data = c.has_device_data;
  const CallColumns columns = add_call_columns(t, /*with_thread=*/false, /*with_cpu=*/false);

  DeviceNames names(r.strings);
  std::vector<CallStats> stats;
  uint64_t all_kernels_ns = 0;
  uint64_t untimed = 0;
  for (const pk_device_event& e : r.device_events) {
    if (e.type != PK_EVENT_KERNEL) continue;
    const uint32_t id = names.id_of(e);
    if (id >= stats.size()) stats.resize(id + 1);
    ++stats[id].calls;
    if (lacks_timing(e)) {
      ++untimed;
      continue;
    }
    const uint64_t ns = duration_ns(e.start_ns, e.end_ns);
    stats[id].gpu.add(ns);
    all_kernels_ns += ns;
  }
  if (stats.empty()) {
    t.empty_reason = "no GPU kernels recorded";
    return t;
  }
  std::vector<FlatEntry> entries;
  for (uint32_t id = 0; id < stats.size(); ++id) {
    if (stats[id].calls > 0) entries.push_back({0, names.text(id), &stats[id]});
  }
  add_sorted_rows(t, columns, entries, c, 0, static_cast<double>(all_kernels_ns));
  t.notes.push_back("Ratio = kernel time / time of all kernels. Names drop template arguments and parameters.");
  if (untimed > 0) t.notes.push_back(untimed_note(untimed));
  if (r.info.unattached_device_records > 0)
    t.notes.push_back(unattached_note(r.info.unattached_device_records, "operator's"));
  return t;
}

}  // namespace profkit
