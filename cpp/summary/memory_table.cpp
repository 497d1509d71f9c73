#include "summary/memory_table.h"

#include <algorithm>
#include <map>
#include <string>

namespace profkit {

namespace {

struct DeviceMemory {
  uint64_t allocations = 0;
  uint64_t allocated_bytes = 0;
  uint64_t frees = 0;
  uint64_t freed_bytes = 0;
  uint64_t peak_allocated = 0;
  uint64_t peak_reserved = 0;
};

}  // namespace

SummaryTable make_memory_table(const SummaryContext& c) {
  SummaryTable t(SummaryView::kMemory, "Memory Summary", "Device");
  t.has_device_data = c.has_device_data;
  const size_t allocations = t.add_column("Allocations", ColumnKind::kCount);
  const size_t allocated = t.add_column("Allocated", ColumnKind::kBytes);
  const size_t frees = t.add_column("Frees", ColumnKind::kCount);
  const size_t freed = t.add_column("Freed", ColumnKind::kBytes);
  const size_t peak_allocated = t.add_column("Peak Allocated", ColumnKind::kBytes);
  const size_t peak_reserved = t.add_column("Peak Reserved", ColumnKind::kBytes);

  std::map<int32_t, DeviceMemory> by_device;  // -1 (host) sorts first
  for (const pk_memory_event& e : c.result->memory_events) {
    DeviceMemory& m = by_device[e.device < 0 ? -1 : e.device];
    if (e.bytes > 0) {
      ++m.allocations;
      m.allocated_bytes += static_cast<uint64_t>(e.bytes);
    } else if (e.bytes < 0) {
      ++m.frees;
      // -(INT64_MIN) overflows; go through unsigned.
      m.freed_bytes += 0 - static_cast<uint64_t>(e.bytes);
    }
    m.peak_allocated = std::max(m.peak_allocated, e.total_allocated);
    m.peak_reserved = std::max(m.peak_reserved, e.total_reserved);
  }
  if (by_device.empty()) {
    t.empty_reason = "no memory events recorded (pk_record_memory)";
    return t;
  }
  for (const auto& [device, m] : by_device) {
    SummaryRow& row = t.add_row(device < 0 ? std::string("CPU") : "GPU " + std::to_string(device));
    row.values[allocations] = static_cast<double>(m.allocations);
    row.values[allocated] = static_cast<double>(m.allocated_bytes);
    row.values[frees] = static_cast<double>(m.frees);
    row.values[freed] = static_cast<double>(m.freed_bytes);
    row.values[peak_allocated] = static_cast<double>(m.peak_allocated);
    row.values[peak_reserved] = static_cast<double>(m.peak_reserved);
  }
  t.notes.push_back("Peaks are the largest allocator totals reported with the events.");
  return t;
}

}  // namespace profkit
