// UserDefined Summary: the user's RecordEvent ranges (types UserDefined and
// PythonUserDefined) by name: calls, CPU Total / Avg / Max / Min / Ratio(%)
// and the GPU time of the work launched inside them; ratios to total_time;
// ordered by sorted_by; split by thread with thread_sep.
//
// Thread-safety: a walk visitor, then a table() call.
#pragma once

#include "summary/host_walk.h"
#include "summary/name_stats_map.h"
#include "summary/summary_context.h"
#include "summary/summary_table.h"

namespace profkit {

class UserDefinedTable : public HostEventVisitor {
 public:
  explicit UserDefinedTable(const SummaryContext& context)
      : context_(context), stats_(context.result->strings.size(), context.options.thread_sep) {}
  uint32_t type_mask() const override {
    return type_bit(PK_EVENT_USER_DEFINED) | type_bit(PK_EVENT_PYTHON_USER_DEFINED);
  }
  void begin_thread(size_t thread) override { stats_.begin_thread(thread); }
  void on_close(const OpenStack& stack, const OpenEvent& closed) override;
  SummaryTable table();

 private:
  const SummaryContext& context_;
  NameStatsMap stats_;
};

}  // namespace profkit
