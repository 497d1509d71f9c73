#include "summary/model_table.h"

#include <algorithm>
#include <string>

#include "common/event_types.h"
#include "summary/call_table.h"

namespace profkit {

namespace {
constexpr uint32_t kPhases[] = {PK_EVENT_DATALOADER, PK_EVENT_FORWARD, PK_EVENT_BACKWARD, PK_EVENT_OPTIMIZATION};
}  // namespace

uint32_t ModelTable::type_mask() const {
  uint32_t mask = type_bit(PK_EVENT_PROFILE_STEP);
  for (uint32_t type : kPhases) mask |= type_bit(type);
  return mask;
}

void ModelTable::on_close(const OpenStack& /*stack*/, const OpenEvent& closed) {
  const pk_host_event& e = context_.result->host_events[closed.index];
  CallStats& s = by_type_[e.type];
  ++s.calls;
  s.cpu.add(duration_ns(e.start_ns, e.end_ns));
  s.gpu.add(closed.gpu_ns);
}

SummaryTable ModelTable::table() const {
  const SummaryContext& c = context_;
  SummaryTable t(SummaryView::kModel, "Model Summary", "Name");
  t.nested = true;
  t.has_device_data = c.has_device_data;
  const CallColumns columns = add_call_columns(t, /*with_thread=*/false);
  const double total = static_cast<double>(c.total_time_ns);

  bool any_phase = false;
  for (uint32_t type : kPhases) any_phase |= by_type_[type].calls > 0;
  if (!any_phase && !c.has_steps) {
    t.empty_reason = "no ProfileStep, Dataloader, Forward, Backward or Optimization events recorded";
    return t;
  }

  // The first row is the whole: ProfileStep's own figures, or the span.
  const CallStats& steps = by_type_[PK_EVENT_PROFILE_STEP];
  if (c.has_steps) {
    SummaryRow& row = t.add_row("ProfileStep");
    fill_call_row(row, columns, steps, 0, total, total);
  } else {
    SummaryRow& row = t.add_row("Total Time");
    row.values[columns.cpu] = total;
    row.values[columns.cpu + 4] = percent(total, total);
  }

  uint64_t phases_gpu = 0;
  for (uint32_t type : kPhases) {
    const CallStats& s = by_type_[type];
    if (s.calls == 0) continue;
    SummaryRow& row = t.add_row(std::string(event_type_name(type)), 1);
    fill_call_row(row, columns, s, 0, total, total);
    phases_gpu += s.gpu.total;
  }

  SummaryRow& others = t.add_row("Others", 1);
  const uint64_t covered = length_within(c.model_union, c.total_window);
  const double others_cpu = static_cast<double>(c.total_time_ns - std::min(covered, c.total_time_ns));
  others.values[columns.cpu] = others_cpu;
  others.values[columns.cpu + 4] = percent(others_cpu, total);
  if (c.has_steps) {
    const double others_gpu = static_cast<double>(steps.gpu.total - std::min(phases_gpu, steps.gpu.total));
    others.values[columns.gpu] = others_gpu;
    others.values[columns.gpu + 4] = percent(others_gpu, total);
  }
  t.notes.push_back("Ratio = time / total time (" + c.total_time_source() +
                    "). Others = total time not covered by Dataloader, Forward, Backward or Optimization.");
  return t;
}

}  // namespace profkit
