#include "summary/memory_table.h"

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "summary/memory_owners.h"

namespace profkit {

namespace {

// Allocations and frees of one device, or of one event on one device.
struct MemoryCounts {
  uint64_t allocations = 0;
  uint64_t allocated_bytes = 0;
  uint64_t frees = 0;
  uint64_t freed_bytes = 0;

  void add(int64_t bytes) {
    if (bytes > 0) {
      ++allocations;
      allocated_bytes += static_cast<uint64_t>(bytes);
    } else if (bytes < 0) {
      ++frees;
      // -(INT64_MIN) overflows; go through unsigned.
      freed_bytes += 0 - static_cast<uint64_t>(bytes);
    }
  }
};

// Row keys besides name ids: memory events outside every event, and those
// directly in a step (one row for all steps, not one per "ProfileStep#N").
constexpr uint64_t kNoEvent = UINT64_MAX;
constexpr uint64_t kInStep = UINT64_MAX - 1;

uint64_t owner_key(const Result& r, uint64_t owner) {
  if (owner == PK_NO_EVENT) return kNoEvent;
  const pk_host_event& e = r.host_events[owner];
  return e.type == PK_EVENT_PROFILE_STEP ? kInStep : e.name;
}

std::string owner_label(const Result& r, uint64_t key) {
  if (key == kNoEvent) return "(outside any event)";
  if (key == kInStep) return "ProfileStep";
  return std::string(r.strings.view_or_empty(key));
}

struct DeviceMemory {
  MemoryCounts counts;
  uint64_t peak_allocated = 0;
  uint64_t peak_reserved = 0;
  std::map<uint64_t, MemoryCounts> by_event_name;  // owner_key -> counts
};

struct Columns {
  size_t allocations, allocated, frees, freed, peak_allocated, peak_reserved;
};

void fill(SummaryRow& row, const Columns& c, const MemoryCounts& m) {
  row.values[c.allocations] = static_cast<double>(m.allocations);
  row.values[c.allocated] = static_cast<double>(m.allocated_bytes);
  row.values[c.frees] = static_cast<double>(m.frees);
  row.values[c.freed] = static_cast<double>(m.freed_bytes);
}

}  // namespace

SummaryTable make_memory_table(const SummaryContext& c) {
  SummaryTable t(SummaryView::kMemory, "Memory Summary", "Device");
  t.has_device_data = c.has_device_data;
  t.nested = c.options.op_detail;
  Columns col{};
  col.allocations = t.add_column("Allocations", ColumnKind::kCount);
  col.allocated = t.add_column("Allocated", ColumnKind::kBytes);
  col.frees = t.add_column("Frees", ColumnKind::kCount);
  col.freed = t.add_column("Freed", ColumnKind::kBytes);
  col.peak_allocated = t.add_column("Peak Allocated", ColumnKind::kBytes);
  col.peak_reserved = t.add_column("Peak Reserved", ColumnKind::kBytes);

  const Result& r = *c.result;
  const std::vector<uint64_t> owners = c.options.op_detail ? memory_event_owners(r) : std::vector<uint64_t>();
  std::map<int32_t, DeviceMemory> by_device;  // -1 (host) sorts first
  for (size_t i = 0; i < r.memory_events.size(); ++i) {
    const pk_memory_event& e = r.memory_events[i];
    DeviceMemory& m = by_device[e.device < 0 ? -1 : e.device];
    m.counts.add(e.bytes);
    m.peak_allocated = std::max(m.peak_allocated, e.total_allocated);
    m.peak_reserved = std::max(m.peak_reserved, e.total_reserved);
    if (!owners.empty()) {
      m.by_event_name[owner_key(r, owners[i])].add(e.bytes);
    }
  }
  if (by_device.empty()) {
    t.empty_reason = "no memory events recorded (pk_record_memory)";
    return t;
  }
  const uint64_t limit = c.options.row_limit;
  uint64_t left_out = 0;
  for (const auto& [device, m] : by_device) {
    SummaryRow& row = t.add_row(device < 0 ? std::string("CPU") : "GPU " + std::to_string(device));
    fill(row, col, m.counts);
    row.values[col.peak_allocated] = static_cast<double>(m.peak_allocated);
    row.values[col.peak_reserved] = static_cast<double>(m.peak_reserved);

    // Under each device, the events the memory was allocated and freed in:
    // most bytes allocated first.
    using Entry = std::pair<std::string, const MemoryCounts*>;
    std::vector<Entry> events;
    for (const auto& [key, counts] : m.by_event_name) events.emplace_back(owner_label(r, key), &counts);
    std::sort(events.begin(), events.end(), [](const Entry& a, const Entry& b) {
      return std::make_tuple(b.second->allocated_bytes, b.second->freed_bytes, std::cref(a.first)) <
             std::make_tuple(a.second->allocated_bytes, a.second->freed_bytes, std::cref(b.first));
    });
    for (size_t k = 0; k < events.size(); ++k) {
      if (limit != 0 && k >= limit) {
        left_out += events.size() - k;
        break;
      }
      fill(t.add_row(events[k].first, 1), col, *events[k].second);
    }
  }
  t.notes.push_back("Peaks are the largest allocator totals reported with the events.");
  if (t.nested) {
    t.notes.push_back("Under each device: the innermost event each allocation and free happened in, on its thread.");
  }
  if (left_out > 0) {
    t.notes.push_back(std::to_string(left_out) + " more events not shown (row_limit=" + std::to_string(limit) +
                      " per device)");
  }
  return t;
}

}  // namespace profkit
