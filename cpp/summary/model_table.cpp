#include "summary/model_table.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "common/event_types.h"
#include "summary/call_table.h"

namespace profkit {

namespace {
constexpr uint32_t kPhases[] = {PK_EVENT_DATALOADER, PK_EVENT_FORWARD, PK_EVENT_BACKWARD, PK_EVENT_OPTIMIZATION};

constexpr uint32_t kPhaseBits = type_bit(PK_EVENT_DATALOADER) | type_bit(PK_EVENT_FORWARD) |
                                type_bit(PK_EVENT_BACKWARD) | type_bit(PK_EVENT_OPTIMIZATION);

// A mask test, not a search: it runs once per host event.
bool is_phase(uint8_t type) noexcept { return type < 32 && (kPhaseBits >> type) & 1u; }

// Steps nest like phases: a user's RecordEvent of type ProfileStep inside a
// step is part of that step, not another one (which would halve its Avg).
bool nests_in_its_type(uint8_t type) noexcept { return is_phase(type) || type == PK_EVENT_PROFILE_STEP; }

// Whether `time_ns` falls in one of the merged `intervals`: from a start up
// to, not including, the end, as a call is open for the launches it finds.
bool covers(const IntervalList& intervals, uint64_t time_ns) noexcept {
  auto after = std::upper_bound(intervals.begin(), intervals.end(), time_ns,
                                [](uint64_t t, const Interval& i) { return t < i.start; });
  return after != intervals.begin() && time_ns < std::prev(after)->end;
}

// Whether an event of `type` is open in `stack`.
bool inside_same_phase(const OpenStack& stack, uint8_t type) noexcept {
  for (size_t i = 0; i < stack.size(); ++i) {
    if (stack[i].type == type) return true;
  }
  return false;
}

}  // namespace

ModelTable::ModelTable(const SummaryContext& context) : context_(context) {
  size_t phases = 0;
  for (uint32_t type : kPhases) phases += context.host_calls[type];
  if (context.host_calls[PK_EVENT_PROFILE_STEP] + phases == 0) return;  // an empty table: nothing to find
  find_calls();
}

// The walk visits the same events in the same order (thread by thread, each
// in index order), so the n-th step or phase it opens is the n-th found here.
void ModelTable::find_calls() {
  const Result& r = *context_.result;
  // Counted already: no regrowth (which would hold two copies at once).
  steps_.reserve(context_.host_calls[PK_EVENT_PROFILE_STEP]);
  size_t phases = 0;
  for (uint32_t type : kPhases) phases += context_.host_calls[type];
  phases_.reserve(phases);
  thread_records_steps_.assign(r.threads.size(), 0);
  bool thread_without_steps = false;
  std::vector<uint8_t> open_types;
  for (size_t t = 0; t < r.threads.size(); ++t) {
    const ThreadRecord& thread = r.threads[t];
    const uint64_t end = std::min<uint64_t>(thread.first_event + thread.event_count, r.host_events.size());
    const size_t first_phase = phases_.size();
    bool has_steps = false;
    // The types of the open events, as the walk's stack will hold them
    // (events are in preorder with their depth), to tell nested phases.
    open_types.clear();
    for (uint64_t i = thread.first_event; i < end; ++i) {
      const pk_host_event& e = r.host_events[i];
      if (open_types.size() > e.depth) open_types.resize(e.depth);
      if (is_instant(e)) {
        // Not a call (see is_instant); the walk skips it too.
      } else if (e.type == PK_EVENT_PROFILE_STEP) {
        steps_.push_back({e.start_ns, e.end_ns, 0, e.type, true});
        steps_.back().nested = std::find(open_types.begin(), open_types.end(), e.type) != open_types.end();
        has_steps = true;
      } else if (is_phase(e.type)) {
        phases_.push_back({e.start_ns, e.end_ns, 0, e.type, false});
        phases_.back().nested = std::find(open_types.begin(), open_types.end(), e.type) != open_types.end();
      }
      open_types.push_back(e.type);
    }
    for (size_t i = first_phase; i < phases_.size(); ++i) {
      phases_[i].on_step_thread = has_steps;
      if (!has_steps) phase_types_off_step_threads_ |= type_bit(phases_[i].type);
    }
    thread_records_steps_[t] = has_steps;
    thread_without_steps |= !has_steps && thread.first_event < end;
  }
  // When every thread records steps, no launch is found a phase by time:
  // count each phase as it closes instead of keeping millions.
  keep_phases_ = thread_without_steps && !phases_.empty();
  if (!keep_phases_) std::vector<Call>().swap(phases_);
  if (context_.has_steps) steps_by_time_.set_calls(&steps_);
  if (keep_phases_) phases_by_time_.set_calls(&phases_);
}

uint32_t ModelTable::type_mask() const {
  uint32_t mask = type_bit(PK_EVENT_PROFILE_STEP);
  for (uint32_t type : kPhases) mask |= type_bit(type);
  return mask;
}

void ModelTable::begin_thread(size_t thread) {
  open_calls_.clear();
  open_steps_ = 0;
  open_phases_ = 0;
  // A thread that records steps keeps its launches outside the phases
  // ("Others"), even while another thread's phase is open.
  thread_records_steps_now_ = thread >= thread_records_steps_.size() || thread_records_steps_[thread] != 0;
  steps_by_time_.begin_thread();
  phases_by_time_.begin_thread();
}

void ModelTable::on_open(const OpenStack& stack) {
  Call* call = nullptr;
  const bool instant = is_instant(context_.result->host_events[stack.back().index]);
  if (stack.back().type == PK_EVENT_PROFILE_STEP) {
    ++open_steps_;
    if (!instant && next_step_ < steps_.size()) call = &steps_[next_step_++];
  } else if (!instant) {
    ++open_phases_;
    if (keep_phases_ && next_phase_ < phases_.size()) call = &phases_[next_phase_++];
  }
  open_calls_.push_back(call);
}

void ModelTable::on_close(const OpenStack& stack, const OpenEvent& closed) {
  Call* call = open_calls_.back();
  open_calls_.pop_back();
  const pk_host_event& e = context_.result->host_events[closed.index];
  if (closed.type == PK_EVENT_PROFILE_STEP) {
    --open_steps_;
  } else if (!is_instant(e)) {
    --open_phases_;
  }
  // Part of the enclosing phase (or step) of its type, which has its GPU
  // work too (the walk adds a closed event's work to its parent).
  if (nests_in_its_type(closed.type) && inside_same_phase(stack, closed.type)) return;
  if (call != nullptr) {
    call->gpu_ns += closed.gpu_ns;  // on top of what launches on other threads found for it
    return;
  }
  if (is_instant(e)) return;
  CallStats& s = counted_[closed.type];
  ++s.calls;
  s.cpu.add(duration_ns(e.start_ns, e.end_ns));
  s.gpu.add(closed.gpu_ns);
}

void ModelTable::on_launch(const OpenStack& /*stack*/, const LaunchedWork& work) {
  const bool by_step_time = open_steps_ == 0;
  // Any other thread's launches outside its own phases belong to the phase
  // open at the time: the autograd device thread runs CUDA backward, and
  // records phases of its own only for what runs in its hooks (an optimizer
  // step per gradient, activation checkpointing's Forward).
  const bool by_phase_time = !thread_records_steps_now_ && open_phases_ == 0;
  // Most launches are inside a step on the loop thread: no time to look up.
  const uint64_t time_ns = by_step_time || by_phase_time ? context_.result->host_events[work.host_event].start_ns : 0;
  if (in_phase_and_step(time_ns, by_step_time, by_phase_time)) phases_gpu_in_steps_ns_ += work.duration_ns;
  if (by_step_time) steps_by_time_.add(time_ns, work.duration_ns);
  if (by_phase_time) phases_by_time_.add(time_ns, work.duration_ns);
}

// By time, the unions answer what the attributions find: a launch finds a
// call exactly when one is open then, and a nested call lies inside the one
// it belongs to. Instants and zero-length calls, open for no launch, add
// nothing to the unions.
bool ModelTable::in_phase_and_step(uint64_t time_ns, bool by_step_time, bool by_phase_time) const {
  const bool in_phase = open_phases_ > 0 || (by_phase_time && covers(context_.model_union, time_ns));
  return in_phase && (!by_step_time || covers(context_.step_union, time_ns));
}

void ModelTable::end_thread(size_t /*thread*/) {
  steps_by_time_.end_thread();
  phases_by_time_.end_thread();
}

void ModelTable::LaunchTimeAttribution::set_calls(std::vector<Call>* calls) {
  calls_ = calls;
  by_start_.clear();
  // A nested phase is no call of its own: launches in it go to the phase
  // of its type around it.
  for (size_t i = 0; i < calls->size(); ++i) {
    if (!(*calls)[i].nested) by_start_.push_back(i);
  }
  // Equal starts in the order found, so that attribute() can give a tie to
  // the call found last: of nested calls that start together, the inner.
  std::sort(by_start_.begin(), by_start_.end(), [calls](size_t a, size_t b) {
    const uint64_t sa = (*calls)[a].start_ns, sb = (*calls)[b].start_ns;
    return sa != sb ? sa < sb : a < b;
  });
}

void ModelTable::LaunchTimeAttribution::restart() {
  next_ = 0;
  open_.clear();
  winner_until_ns_ = 0;
}

void ModelTable::LaunchTimeAttribution::begin_thread() {
  restart();
  last_time_ns_ = 0;
  out_of_order_ = false;
}

void ModelTable::LaunchTimeAttribution::add(uint64_t time_ns, uint64_t duration_ns) {
  if (by_start_.empty()) return;
  // A thread's launching events are in start order in a well-formed Result.
  // Going back in time would need calls the sweep has already dropped, so
  // the rest of this thread waits, sorted, for end_thread().
  if (out_of_order_ || time_ns < last_time_ns_) {
    out_of_order_ = true;
    out_of_order_launches_.push_back({time_ns, duration_ns});
    return;
  }
  last_time_ns_ = time_ns;
  attribute(time_ns, duration_ns);
}

void ModelTable::LaunchTimeAttribution::end_thread() {
  if (out_of_order_launches_.empty()) return;
  std::stable_sort(out_of_order_launches_.begin(), out_of_order_launches_.end(),
                   [](const Launch& a, const Launch& b) { return a.time_ns < b.time_ns; });
  restart();
  for (const Launch& l : out_of_order_launches_) attribute(l.time_ns, l.duration_ns);
  out_of_order_launches_.clear();
}

void ModelTable::LaunchTimeAttribution::attribute(uint64_t time_ns, uint64_t duration_ns) {
  // Launches come by the hundred between two changes of the open set.
  if (time_ns < winner_until_ns_) {
    if (winner_ != kNone) (*calls_)[winner_].gpu_ns += duration_ns;
    return;
  }
  const std::vector<Call>& calls = *calls_;
  while (next_ < by_start_.size() && calls[by_start_[next_]].start_ns <= time_ns) open_.push_back(by_start_[next_++]);
  open_.erase(std::remove_if(open_.begin(), open_.end(), [&](size_t i) { return calls[i].end_ns <= time_ns; }),
              open_.end());
  // The open set, and so the winner, stays until a call starts or ends.
  winner_until_ns_ = next_ < by_start_.size() ? calls[by_start_[next_]].start_ns : UINT64_MAX;
  winner_ = kNone;
  for (size_t i : open_) {
    winner_until_ns_ = std::min(winner_until_ns_, calls[i].end_ns);
    // On a thread that records steps first (every step is), then the latest
    // to start; among equals, the last in start order (see set_calls).
    const Call& a = calls[i];
    if (winner_ == kNone) {
      winner_ = i;
    } else if (const Call& b = calls[winner_];
               a.on_step_thread != b.on_step_thread ? a.on_step_thread : a.start_ns >= b.start_ns) {
      winner_ = i;
    }
  }
  if (winner_ != kNone) (*calls_)[winner_].gpu_ns += duration_ns;
}

SummaryTable ModelTable::table() const {
  const SummaryContext& c = context_;
  std::array<CallStats, PK_EVENT_TYPE_COUNT> by_type = counted_;
  for (const std::vector<Call>* calls : {&steps_, &phases_}) {
    for (const Call& call : *calls) {
      if (call.nested) continue;  // part of the call around it
      CallStats& s = by_type[call.type];
      ++s.calls;
      s.cpu.add(duration_ns(call.start_ns, call.end_ns));
      s.gpu.add(call.gpu_ns);
    }
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

  for (uint32_t type : kPhases) {
    const CallStats& s = by_type[type];
    if (s.calls == 0) continue;
    SummaryRow& row = t.add_row(std::string(event_type_name(type)), 1);
    fill_call_row(row, columns, s, 0, total, total);
  }

  SummaryRow& others = t.add_row("Others", 1);
  const uint64_t covered = length_within(c.model_union, c.total_window);
  const double others_cpu = static_cast<double>(c.total_time_ns - std::min(covered, c.total_time_ns));
  others.values[columns.cpu] = others_cpu;
  others.values[columns.cpu + 4] = percent(others_cpu, total);
  if (c.has_steps) {
    // Not the phases' GPU totals: nested phases of different types both have
    // the work launched in the inner one (see in_phase_and_step).
    const uint64_t in_phases = std::min(phases_gpu_in_steps_ns_, steps.gpu.total);
    const double others_gpu = static_cast<double>(steps.gpu.total - in_phases);
    others.values[columns.gpu] = others_gpu;
    others.values[columns.gpu + 4] = percent(others_gpu, total);
  }
  t.notes.push_back("Ratio = time / total time (" + c.total_time_source() +
                    "). Others = total time not covered by Dataloader, Forward, Backward or Optimization.");
  if (zero_length_steps) t.notes.push_back(c.zero_length_steps_note());
  if (c.has_steps && phase_types_off_step_threads_ != 0) {
    std::string types;
    for (uint32_t type : kPhases) {
      if ((phase_types_off_step_threads_ & type_bit(type)) == 0) continue;
      if (!types.empty()) types += ", ";
      types += event_type_name(type);
    }
    t.notes.push_back(types +
                      ": calls on threads that record no steps count too (a background prefetcher's fetches); "
                      "running beside the steps, they can make a Total exceed the time they add to a step, and a "
                      "Ratio pass 100%. The Perf Summary's reader_cost counts the stepping thread's only.");
  }
  if (c.has_device_data) {
    t.notes.push_back(
        "GPU time = the GPU work a call launched, summed over streams: work overlapping on several streams can make "
        "it exceed the call's time.");
  }
  const uint64_t unattached = c.result->info.unattached_device_records;
  if (unattached > 0) t.notes.push_back(unattached_note(unattached, "step's or phase's"));
  return t;
}

}  // namespace profkit
