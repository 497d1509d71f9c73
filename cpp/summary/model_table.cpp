#include "summary/model_table.h"

#include <algorithm>
#include <string>
#include <vector>

#include "common/event_types.h"
#include "summary/call_table.h"

namespace profkit {

namespace {
constexpr uint32_t kPhases[] = {PK_EVENT_DATALOADER, PK_EVENT_FORWARD, PK_EVENT_BACKWARD, PK_EVENT_OPTIMIZATION};
}  // namespace

ModelTable::ModelTable(const SummaryContext& context) : context_(context) {
  // One Call per step and phase event, counted already: no regrowth (which
  // would hold two copies at once).
  size_t calls = context.host_calls[PK_EVENT_PROFILE_STEP];
  for (uint32_t type : kPhases) calls += context.host_calls[type];
  calls_.reserve(calls);
}

uint32_t ModelTable::type_mask() const {
  uint32_t mask = type_bit(PK_EVENT_PROFILE_STEP);
  for (uint32_t type : kPhases) mask |= type_bit(type);
  return mask;
}

void ModelTable::begin_thread(size_t /*thread*/) {
  thread_first_call_ = calls_.size();
  open_steps_ = open_phases_ = 0;
  thread_has_steps_ = thread_records_loop_ = false;
  thread_unphased_.clear();
}

void ModelTable::on_open(const OpenStack& stack) {
  const bool step = stack.back().type == PK_EVENT_PROFILE_STEP;
  ++(step ? open_steps_ : open_phases_);
  thread_has_steps_ |= step;
  // The thread records the loop itself: its launches outside the phases are
  // "Others", not another thread's phase.
  thread_records_loop_ = true;
  thread_unphased_.clear();
}

void ModelTable::on_close(const OpenStack& /*stack*/, const OpenEvent& closed) {
  const pk_host_event& e = context_.result->host_events[closed.index];
  const bool step = closed.type == PK_EVENT_PROFILE_STEP;
  --(step ? open_steps_ : open_phases_);
  calls_.push_back({e.start_ns, e.end_ns, closed.gpu_ns, closed.type, false});
}

void ModelTable::on_launch(const OpenStack& /*stack*/, const LaunchedWork& work) {
  const Launch launch{context_.result->host_events[work.host_event].start_ns, work.duration_ns};
  if (open_steps_ == 0 && context_.has_steps) unstepped_.push_back(launch);
  if (!thread_records_loop_) thread_unphased_.push_back(launch);
}

void ModelTable::end_thread(size_t /*thread*/) {
  if (thread_has_steps_) {
    for (size_t i = thread_first_call_; i < calls_.size(); ++i) calls_[i].on_step_thread = true;
  }
  unphased_.insert(unphased_.end(), thread_unphased_.begin(), thread_unphased_.end());
  thread_unphased_.clear();
  // One run per thread: the sweep in table() goes over each in time order.
  if (unstepped_run_ends_.empty() || unstepped_run_ends_.back() != unstepped_.size()) {
    unstepped_run_ends_.push_back(unstepped_.size());
  }
  if (unphased_run_ends_.empty() || unphased_run_ends_.back() != unphased_.size()) {
    unphased_run_ends_.push_back(unphased_.size());
  }
}

namespace {

// Adds each launch's duration to the call of `calls` open at its launch time
// that `prefer(a, b)` ranks first among those that pass `eligible`.
// `launches` holds one run per thread (`run_ends`), each in time order (a
// thread's launching events are in start order), so each run is one sweep
// over the calls in start order: nothing is copied or sorted but the calls'
// order. The set of calls open at once stays small (a step and a phase or two
// per thread).
template <typename Call, typename Launch, typename Eligible, typename Prefer>
void add_by_launch_time(const std::vector<Call>& calls, const std::vector<Launch>& launches,
                        const std::vector<size_t>& run_ends, Eligible eligible, Prefer prefer,
                        std::vector<uint64_t>& gpu) {
  if (launches.empty()) return;
  std::vector<size_t> order;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (eligible(calls[i])) order.push_back(i);
  }
  if (order.empty()) return;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return calls[a].start_ns < calls[b].start_ns; });
  auto by_time = [](const Launch& a, const Launch& b) { return a.time_ns < b.time_ns; };
  std::vector<size_t> open;
  std::vector<Launch> unsorted_run;  // only for a damaged Result
  size_t run_begin = 0;
  for (size_t run_end : run_ends) {
    const Launch* first = launches.data() + run_begin;
    const Launch* last = launches.data() + run_end;
    run_begin = run_end;
    if (!std::is_sorted(first, last, by_time)) {
      unsorted_run.assign(first, last);
      std::sort(unsorted_run.begin(), unsorted_run.end(), by_time);
      first = unsorted_run.data();
      last = first + unsorted_run.size();
    }
    open.clear();
    size_t next = 0;
    for (const Launch* l = first; l != last; ++l) {
      while (next < order.size() && calls[order[next]].start_ns <= l->time_ns) open.push_back(order[next++]);
      open.erase(std::remove_if(open.begin(), open.end(), [&](size_t i) { return calls[i].end_ns <= l->time_ns; }),
                 open.end());
      if (open.empty()) continue;
      size_t best = open.front();
      for (size_t i : open) {
        if (prefer(calls[i], calls[best])) best = i;
      }
      gpu[best] += l->duration_ns;
    }
  }
}

}  // namespace

std::vector<uint64_t> ModelTable::gpu_by_launch_time() const {
  std::vector<uint64_t> gpu(calls_.size(), 0);
  auto is_step = [](const Call& c) { return c.type == PK_EVENT_PROFILE_STEP; };
  auto is_phase = [](const Call& c) { return c.type != PK_EVENT_PROFILE_STEP; };
  auto later = [](const Call& a, const Call& b) { return a.start_ns > b.start_ns; };
  auto on_step_thread_then_later = [](const Call& a, const Call& b) {
    return a.on_step_thread != b.on_step_thread ? a.on_step_thread : a.start_ns > b.start_ns;
  };
  add_by_launch_time(calls_, unstepped_, unstepped_run_ends_, is_step, later, gpu);
  add_by_launch_time(calls_, unphased_, unphased_run_ends_, is_phase, on_step_thread_then_later, gpu);
  return gpu;
}

SummaryTable ModelTable::table() const {
  const SummaryContext& c = context_;
  std::array<CallStats, PK_EVENT_TYPE_COUNT> by_type{};
  const std::vector<uint64_t> launched_elsewhere = gpu_by_launch_time();
  for (size_t i = 0; i < calls_.size(); ++i) {
    CallStats& s = by_type[calls_[i].type];
    ++s.calls;
    s.cpu.add(duration_ns(calls_[i].start_ns, calls_[i].end_ns));
    s.gpu.add(calls_[i].gpu_ns + launched_elsewhere[i]);
  }
  SummaryTable t(SummaryView::kModel, "Model Summary", "Name");
  t.nested = true;
  t.has_device_data = c.has_device_data;
  const CallColumns columns = add_call_columns(t, /*with_thread=*/false);
  const double total = static_cast<double>(c.total_time_ns);

  bool any_phase = false;
  for (uint32_t type : kPhases) any_phase |= by_type[type].calls > 0;
  const CallStats& steps = by_type[PK_EVENT_PROFILE_STEP];
  // Steps recorded, every one of zero length (a coarse clock, or steps that
  // end where they begin): total_time falls back to the span, but saying
  // "no ProfileStep" (or leaving them out) would deny steps the user made.
  const bool zero_length_steps = c.zero_length_steps();
  if (!any_phase && !c.has_steps && !zero_length_steps) {
    t.empty_reason = "no ProfileStep, Dataloader, Forward, Backward or Optimization events recorded";
    return t;
  }

  // The first row is the whole: ProfileStep's own figures, or the span.
  // Zero-length steps are listed with their calls and zero time instead.
  if (c.has_steps || zero_length_steps) {
    SummaryRow& row = t.add_row("ProfileStep");
    fill_call_row(row, columns, steps, 0, total, total);
  } else {
    SummaryRow& row = t.add_row("Total Time");
    row.values[columns.cpu] = total;
    row.values[columns.cpu + 4] = percent(total, total);
  }

  uint64_t phases_gpu = 0;
  for (uint32_t type : kPhases) {
    const CallStats& s = by_type[type];
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
  if (zero_length_steps) t.notes.push_back(c.zero_length_steps_note());
  if (c.has_device_data) {
    t.notes.push_back(
        "GPU time = the GPU work a call launched, summed over streams: work overlapping on several streams can make "
        "it exceed the call's time.");
  }
  return t;
}

}  // namespace profkit
