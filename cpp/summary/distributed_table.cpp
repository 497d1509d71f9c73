#include "summary/distributed_table.h"

#include <string>

namespace profkit {

SummaryTable make_distributed_table(const SummaryContext& c, const CommunicationTimes& communication) {
  SummaryTable t(SummaryView::kDistributed, "Distributed Summary", "Name");
  t.has_device_data = c.has_device_data;
  const size_t time = t.add_column("Total Time", ColumnKind::kTime);
  const size_t ratio = t.add_column("Ratio(%)", ColumnKind::kPercent);
  if (!communication.any()) {
    t.empty_reason = "no communication recorded";
    return t;
  }
  const double total = static_cast<double>(c.total_time_ns);
  auto add = [&](const char* name, uint64_t ns) {
    SummaryRow& row = t.add_row(name);
    row.values[time] = static_cast<double>(ns);
    row.values[ratio] = percent(static_cast<double>(ns), total);
  };
  add("Communication", total_length(communication.all));
  add("Computation", total_length(communication.computation));
  add("Overlap", communication.overlap_ns);
  if (communication.host_computation == HostComputeSource::kNone) {
    t.notes.push_back(
        "Communication = Communication events on the CPU and their (or NCCL) GPU work, overlaps counted "
        "once; Computation = all other kernels; Overlap = time in both.");
  } else {
    t.notes.push_back(std::string("No GPU kernels were recorded: Computation = time inside ") +
                      host_compute_source_name(communication.host_computation) +
                      " events, less each thread's own Communication events; Communication = Communication "
                      "events, overlaps counted once; Overlap = time in both.");
  }
  t.notes.push_back("Ratio = time / total time (" + c.total_time_source() + ").");
  if (c.time_outside_window()) t.notes.push_back(c.outside_window_note());
  return t;
}

}  // namespace profkit
