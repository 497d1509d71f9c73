#include "summary/device_table.h"

#include <string>

#include "summary/text_renderer.h"

namespace profkit {

SummaryTable make_device_table(const SummaryContext& c) {
  SummaryTable t(SummaryView::kDevice, "Device Summary", "Device");
  const size_t utilization = t.add_column("Utilization (%)", ColumnKind::kPercent);
  t.has_device_data = c.has_device_data;
  const ResultInfo& info = c.result->info;
  const double elapsed = static_cast<double>(c.elapsed_ns());

  // Without CPU figures (a Result built by hand, a file from a tool that has
  // none) the rows say "-" rather than a made-up 0%.
  const bool has_cpu_figures = info.process_cpu_ns > 0 || info.system_busy_ns > 0 || info.system_idle_ns > 0;
  SummaryRow& process = t.add_row("CPU(Process)");
  if (has_cpu_figures) process.values[utilization] = percent(static_cast<double>(info.process_cpu_ns), elapsed);
  SummaryRow& system = t.add_row("CPU(System)");
  system.values[utilization] =
      percent(static_cast<double>(info.system_busy_ns),
              static_cast<double>(info.system_busy_ns) + static_cast<double>(info.system_idle_ns));
  for (const auto& [device, kernel_ns] : c.kernel_union_by_device) {
    SummaryRow& gpu = t.add_row("GPU " + std::to_string(device));
    gpu.values[utilization] = percent(static_cast<double>(kernel_ns), elapsed);
  }

  t.notes.push_back("Elapsed time = " + format_value(elapsed, ColumnKind::kTime, c.options.time_unit) + " " +
                    std::string(time_unit_name(c.options.time_unit)) + " (the recorded span).");
  std::string cores = info.cpu_count > 0 ? std::to_string(info.cpu_count) + " cores" : "all cores";
  t.notes.push_back("CPU(Process) = this process's CPU time / elapsed time; up to 100% per core (" + cores + ").");
  t.notes.push_back("CPU(System) = busy time of all cores / (busy + idle time).");
  if (!c.kernel_union_by_device.empty()) {
    t.notes.push_back("GPU d = kernel time on device d, overlaps counted once / elapsed time.");
  }
  return t;
}

}  // namespace profkit
