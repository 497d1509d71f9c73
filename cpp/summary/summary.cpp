#include "summary/summary.h"

#include <memory>
#include <optional>

#include "summary/communication.h"
#include "summary/device_table.h"
#include "summary/distributed_table.h"
#include "summary/host_walk.h"
#include "summary/kernel_table.h"
#include "summary/memory_manipulation_table.h"
#include "summary/memory_table.h"
#include "summary/model_table.h"
#include "summary/operator_table.h"
#include "summary/overview_table.h"
#include "summary/summary_context.h"
#include "summary/userdefined_table.h"

namespace profkit {

namespace {

std::vector<std::string> recording_losses(const ResultInfo& info) {
  std::vector<std::string> lines;
  if (info.dropped_events > 0) {
    lines.push_back(std::to_string(info.dropped_events) +
                    " events were dropped at the engine's memory cap (pk_set_memory_cap; "
                    "Profiler(memory_cap=...) in Python), or, rarely, because the engine's name table was full: "
                    "these tables lack them.");
  }
  if (info.overflowed_events > 0) {
    lines.push_back(std::to_string(info.overflowed_events) +
                    " events nested deeper than 256 levels were not recorded: these tables lack them.");
  }
  if (info.unfinished_events > 0) {
    // Not a fault of the engine, but events the user expects and does not
    // find: a range (or a step) still open at the window's end (its end
    // comes after the collect), or a begin whose end never came.
    lines.push_back(std::to_string(info.unfinished_events) +
                    " events were still open when the window closed (a range or step across the window's end, or a "
                    "begin without its end): these tables lack them.");
  }
  if (info.lost_event_args > 0) {
    lines.push_back(std::to_string(info.lost_event_args) +
                    " event arguments were lost with their events (still open when the window closed, or "
                    "dropped): these tables lack them.");
  }
  if (info.dropped_device_records > 0) {
    // One count holds every cause (the Result has no field to tell them
    // apart), so the line names each, with its remedy.
    lines.push_back(std::to_string(info.dropped_device_records) +
                    " GPU records were lost, past the engine's memory cap (raise it with pk_set_memory_cap; "
                    "Profiler(memory_cap=...) in Python), for lack of a free CUPTI activity buffer, or naming a "
                    "device id past 428: the GPU columns lack them.");
  }
  return lines;
}

}  // namespace

Summary compute_summary(const Result& result, const SummaryOptions& options) {
  const SummaryContext context = make_summary_context(result, options);

  // The tables that need the event trees share one walk.
  std::optional<ModelTable> model;
  std::optional<OperatorTable> op;
  std::optional<MemoryManipulationTable> memory_manipulation;
  std::optional<UserDefinedTable> user_defined;
  std::optional<CommunicationLaunches> communication_launches;
  std::vector<HostEventVisitor*> visitors;
  if (options.wants(SummaryView::kModel)) visitors.push_back(&model.emplace(context));
  if (options.wants(SummaryView::kOperator)) visitors.push_back(&op.emplace(context));
  if (options.wants(SummaryView::kMemoryManipulation)) visitors.push_back(&memory_manipulation.emplace(context));
  if (options.wants(SummaryView::kUserDefined)) visitors.push_back(&user_defined.emplace(context));
  const bool wants_communication = options.wants(SummaryView::kOverview) || options.wants(SummaryView::kDistributed);
  if (wants_communication && context.host_calls[PK_EVENT_COMMUNICATION] > 0 && !result.device_events.empty()) {
    visitors.push_back(&communication_launches.emplace(result.device_events.size()));
  }
  if (!visitors.empty()) walk_host_events(result, visitors);
  CommunicationTimes communication;
  if (wants_communication) {
    communication = compute_communication(context, communication_launches ? &*communication_launches : nullptr,
                                          options.wants(SummaryView::kDistributed));
  }

  Summary s;
  s.options = options;
  s.total_time_ns = context.total_time_ns;
  s.total_time_is_steps = context.has_steps;
  s.warnings = recording_losses(result.info);
  for (int32_t v = 0; v < kSummaryViewCount; ++v) {
    const auto view = static_cast<SummaryView>(v);
    if (!options.wants(view)) continue;
    switch (view) {
      case SummaryView::kDevice:
        s.tables.push_back(make_device_table(context));
        break;
      case SummaryView::kOverview:
        s.tables.push_back(make_overview_table(context, communication));
        break;
      case SummaryView::kModel:
        s.tables.push_back(model->table());
        break;
      case SummaryView::kDistributed:
        s.tables.push_back(make_distributed_table(context, communication));
        break;
      case SummaryView::kKernel:
        s.tables.push_back(make_kernel_table(context));
        break;
      case SummaryView::kOperator:
        s.tables.push_back(op->table());
        break;
      case SummaryView::kMemory:
        s.tables.push_back(make_memory_table(context));
        break;
      case SummaryView::kMemoryManipulation:
        s.tables.push_back(memory_manipulation->table());
        break;
      case SummaryView::kUserDefined:
        s.tables.push_back(user_defined->table());
        break;
    }
  }
  return s;
}

const SummaryTable* find_table(const Summary& summary, SummaryView view) noexcept {
  for (const SummaryTable& t : summary.tables) {
    if (t.view == view) return &t;
  }
  return nullptr;
}

}  // namespace profkit
