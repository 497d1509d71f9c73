// Model Summary: the training loop's phases. ProfileStep (or "Total Time"
// when no step was recorded), then Dataloader, Forward, Backward and
// Optimization with calls, CPU Total / Avg / Max / Min / Ratio(%) and the GPU
// time of the work they launched; then "Others": the part of total_time that
// none of the four covers (CPU), and the ProfileStep GPU time not launched by
// them (GPU). Every ratio is to total_time.
//
// Thread-safety: a walk visitor, then a pure table() call.
#pragma once

#include <array>

#include "summary/call_stats.h"
#include "summary/host_walk.h"
#include "summary/summary_context.h"
#include "summary/summary_table.h"

namespace profkit {

class ModelTable : public HostEventVisitor {
 public:
  explicit ModelTable(const SummaryContext& context) : context_(context) {}
  uint32_t type_mask() const override;
  void on_close(const OpenStack& stack, const OpenEvent& closed) override;
  SummaryTable table() const;

 private:
  const SummaryContext& context_;
  std::array<CallStats, PK_EVENT_TYPE_COUNT> by_type_{};
};

}  // namespace profkit
