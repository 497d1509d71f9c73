// Memory Manipulation Summary: host events of type Memcpy or Memset, or
// whose name mentions memcpy or memset (any case; cudaMemcpyAsync,
// aten::memset_, a user's "memcpy" range) with their CPU time and the GPU time of the work they launched, and the
// GPU memcpy / memset records themselves by name ("Memcpy HtoD") with their
// GPU time. Ratios to total_time; ordered by sorted_by.
//
// Thread-safety: a walk visitor, then a table() call.
#pragma once

#include <cstdint>
#include <vector>

#include "summary/host_walk.h"
#include "summary/name_stats_map.h"
#include "summary/summary_context.h"
#include "summary/summary_table.h"

namespace profkit {

class MemoryManipulationTable : public HostEventVisitor {
 public:
  explicit MemoryManipulationTable(const SummaryContext& context);
  uint32_t type_mask() const override { return (1u << PK_EVENT_TYPE_COUNT) - 1; }
  const std::vector<uint8_t>* name_filter() const override { return &memory_name_; }
  uint32_t types_past_name_filter() const override {
    return type_bit(PK_EVENT_MEMCPY) | type_bit(PK_EVENT_MEMSET);  // RecordEvent(..., Memcpy) of any name
  }
  void on_close(const OpenStack& stack, const OpenEvent& closed) override;
  SummaryTable table();

 private:
  const SummaryContext& context_;
  NameStatsMap stats_;
  std::vector<uint8_t> memory_name_;  // per string id: 1 if it names a memcpy or memset
};

}  // namespace profkit
