#include "summary/summary_context.h"

#include <algorithm>
#include <map>
#include <vector>

#include "summary/host_walk.h"

namespace profkit {

namespace {

bool keeps_intervals(uint32_t type) noexcept {
  switch (type) {
    case PK_EVENT_PROFILE_STEP:
    case PK_EVENT_DATALOADER:
    case PK_EVENT_FORWARD:
    case PK_EVENT_BACKWARD:
    case PK_EVENT_OPTIMIZATION:
    case PK_EVENT_COMMUNICATION:
      return true;
    default:
      return false;
  }
}

uint32_t host_type(const pk_host_event& e) noexcept {
  return e.type < PK_EVENT_TYPE_COUNT ? e.type : static_cast<uint32_t>(PK_EVENT_USER_DEFINED);
}

// The union of the ProfileStep ranges: steps are few (one per iteration), so
// gathered as the first pass meets them.
IntervalList merge_steps(std::vector<Interval> steps) {
  auto by_start = [](const Interval& a, const Interval& b) { return a.start < b.start; };
  if (!std::is_sorted(steps.begin(), steps.end(), by_start)) std::sort(steps.begin(), steps.end(), by_start);
  IntervalList merged;
  IntervalMerger merger(&merged);
  for (const Interval& s : steps) merger.add(s.start, s.end);
  merger.flush();
  return merged;
}

// Host types: a first pass counts each type's events and the threads they
// are on, and finds the steps (the window the unions are measured in); then
// one merged segment per thread and a k-way union per type. A type on a
// single thread needs no segments (its merged length is its union), and the
// others get storage reserved once, never regrown. `window` is set (to the
// steps, when there are some) before the second pass.
void add_host_unions(const Result& r, SummaryContext& c, uint64_t* first, uint64_t* last, IntervalList* window) {
  std::array<uint64_t, PK_EVENT_TYPE_COUNT> timed{};  // events of positive length
  std::array<uint32_t, PK_EVENT_TYPE_COUNT> threads_with{};
  std::vector<Interval> steps;
  for (const ThreadRecord& t : r.threads) {
    std::array<uint64_t, PK_EVENT_TYPE_COUNT> here{};
    const uint64_t end = std::min<uint64_t>(t.first_event + t.event_count, r.host_events.size());
    for (uint64_t i = t.first_event; i < end; ++i) {
      const pk_host_event& e = r.host_events[i];
      const uint32_t type = host_type(e);
      c.host_calls[type] += !is_instant(e);  // a moment, not a call (host_walk.h)
      *first = std::min(*first, e.start_ns);
      *last = std::max(*last, e.end_ns);
      here[type] += e.end_ns > e.start_ns;
      if (type == PK_EVENT_PROFILE_STEP && e.end_ns > e.start_ns) steps.push_back({e.start_ns, e.end_ns});
    }
    for (uint32_t type = 0; type < PK_EVENT_TYPE_COUNT; ++type) {
      timed[type] += here[type];
      threads_with[type] += here[type] > 0;
    }
  }
  c.step_union = merge_steps(std::move(steps));
  if (!c.step_union.empty()) *window = c.step_union;
  // Without steps or a recorded window the span is the events' extent, which
  // holds all of them: nothing to clip.
  const IntervalList* clip = window->empty() ? nullptr : window;
  std::array<WindowedLength, PK_EVENT_TYPE_COUNT> within;
  within.fill(WindowedLength(clip));

  std::array<bool, PK_EVENT_TYPE_COUNT> segmented{};
  std::array<SegmentedIntervals, PK_EVENT_TYPE_COUNT> segments;
  for (uint32_t type = 0; type < PK_EVENT_TYPE_COUNT; ++type) {
    segmented[type] = threads_with[type] > 1 || (threads_with[type] == 1 && keeps_intervals(type));
    if (segmented[type]) segments[type].storage().reserve(timed[type]);
  }
  std::array<IntervalMerger, PK_EVENT_TYPE_COUNT> mergers;
  for (const ThreadRecord& t : r.threads) {
    for (uint32_t type = 0; type < PK_EVENT_TYPE_COUNT; ++type) {
      if (segmented[type]) segments[type].begin_segment();
      // A type on one thread is measured as it merges; the others once united.
      mergers[type] =
          segmented[type] ? IntervalMerger(&segments[type].storage()) : IntervalMerger(nullptr, &within[type]);
    }
    const uint64_t end = std::min<uint64_t>(t.first_event + t.event_count, r.host_events.size());
    for (uint64_t i = t.first_event; i < end; ++i) {
      const pk_host_event& e = r.host_events[i];
      mergers[host_type(e)].add(e.start_ns, e.end_ns);
    }
    for (uint32_t type = 0; type < PK_EVENT_TYPE_COUNT; ++type) {
      mergers[type].flush();
      if (!segmented[type]) c.host_outside_ns[type] += mergers[type].length();  // less `within` below
    }
  }

  IntervalList model;
  for (uint32_t type = 0; type < PK_EVENT_TYPE_COUNT; ++type) {
    if (!segmented[type]) continue;
    IntervalList merged;
    // ProfileStep's union is step_union already.
    const bool keep = keeps_intervals(type) && type != PK_EVENT_PROFILE_STEP;
    c.host_outside_ns[type] = segments[type].union_length(keep ? &merged : nullptr, &within[type]);
    segments[type].clear();  // free as we go: the lists can be as large as the events
    switch (type) {
      case PK_EVENT_COMMUNICATION:
        c.communication_cpu = std::move(merged);
        break;
      case PK_EVENT_DATALOADER:
      case PK_EVENT_FORWARD:
      case PK_EVENT_BACKWARD:
      case PK_EVENT_OPTIMIZATION:
        model = model.empty() ? std::move(merged) : union_of(model, merged);
        break;
      default:
        break;
    }
  }
  c.model_union = std::move(model);
  for (uint32_t type = 0; type < PK_EVENT_TYPE_COUNT; ++type) {
    c.host_union_ns[type] = within[type].length();
    c.host_outside_ns[type] -= std::min(c.host_outside_ns[type], c.host_union_ns[type]);
  }
}

// GPU types: device events are sorted by start across all streams, so one
// streaming merge per type (and per device for kernels) gives the union.
void add_device_unions(const Result& r, SummaryContext& c, uint64_t* first, uint64_t* last, const IntervalList* clip) {
  std::array<WindowedLength, PK_EVENT_TYPE_COUNT> within;
  within.fill(WindowedLength(clip));
  std::array<IntervalMerger, PK_EVENT_TYPE_COUNT> by_type;
  for (uint32_t type = 0; type < PK_EVENT_TYPE_COUNT; ++type) by_type[type] = IntervalMerger(nullptr, &within[type]);
  std::map<uint32_t, IntervalMerger> kernels_by_device;
  const bool window = r.info.end_ns > r.info.start_ns;
  for (const DeviceInfo& d : r.devices) {
    if (d.id >= 0) kernels_by_device.emplace(static_cast<uint32_t>(d.id), IntervalMerger());
  }
  for (const pk_device_event& e : r.device_events) {
    if (e.type != PK_EVENT_KERNEL && e.type != PK_EVENT_MEMCPY && e.type != PK_EVENT_MEMSET) continue;
    c.has_device_data = true;
    ++c.device_calls[e.type];
    if (e.end_ns <= e.start_ns) continue;
    *first = std::min(*first, e.start_ns);
    *last = std::max(*last, e.end_ns);
    by_type[e.type].add(e.start_ns, e.end_ns);
    if (e.type == PK_EVENT_KERNEL) {
      // Utilization is per recorded span: the tail of kernels launched in
      // the window that ran past its end does not count (it would read as
      // more than 100 %).
      const uint64_t start = window ? std::max(e.start_ns, r.info.start_ns) : e.start_ns;
      const uint64_t end = window ? std::min(e.end_ns, r.info.end_ns) : e.end_ns;
      kernels_by_device[e.device].add(start, end);  // an empty clip adds nothing
    }
  }
  for (uint32_t type = 0; type < PK_EVENT_TYPE_COUNT; ++type) {
    by_type[type].flush();
    c.device_union_ns[type] = within[type].length();
    c.device_outside_ns[type] = by_type[type].length() - std::min(by_type[type].length(), within[type].length());
  }
  for (auto& [device, merger] : kernels_by_device) {
    merger.flush();
    c.kernel_union_by_device.emplace_back(device, merger.length());
  }
}

}  // namespace

SummaryContext make_summary_context(const Result& result, const SummaryOptions& options) {
  SummaryContext c;
  c.result = &result;
  c.options = options;
  uint64_t first = UINT64_MAX;
  uint64_t last = 0;
  // The window the unions are measured in: the steps (add_host_unions finds
  // them), else the recorded window.
  IntervalList window;
  if (result.info.end_ns > result.info.start_ns) window.push_back({result.info.start_ns, result.info.end_ns});
  add_host_unions(result, c, &first, &last, &window);
  add_device_unions(result, c, &first, &last, window.empty() ? nullptr : &window);

  if (result.info.end_ns > result.info.start_ns) {
    c.span_start_ns = result.info.start_ns;
    c.span_end_ns = result.info.end_ns;
  } else if (last > first) {
    c.span_start_ns = first;
    c.span_end_ns = last;
  }
  const uint64_t steps = total_length(c.step_union);
  c.has_steps = steps > 0;
  if (c.has_steps) {
    c.total_time_ns = steps;
    c.total_window = c.step_union;
  } else {
    c.total_time_ns = c.elapsed_ns();
    if (c.total_time_ns > 0) c.total_window.push_back({c.span_start_ns, c.span_end_ns});
  }
  return c;
}

bool SummaryContext::time_outside_window() const noexcept {
  for (uint32_t type = 0; type < PK_EVENT_TYPE_COUNT; ++type) {
    if (host_outside_ns[type] > 0 || device_outside_ns[type] > 0) return true;
  }
  return false;
}

std::string SummaryContext::outside_window_note() const {
  if (!time_outside_window()) return {};
  return has_steps ? "Only time inside the ProfileSteps counts here: some events lie (partly) before, between or "
                     "after them, which the per-name tables count in full."
                   : "Only time inside the recorded span counts here: some events lie (partly) outside it.";
}

std::string SummaryContext::zero_length_steps_note() const {
  if (!zero_length_steps()) return {};
  const uint64_t steps = host_calls[PK_EVENT_PROFILE_STEP];
  const std::string which =
      steps == 1 ? "The one ProfileStep has" : "All " + std::to_string(steps) + " ProfileSteps have";
  return which +
         " zero length (each ends where it begins: a coarse clock?), so total time is the recorded span instead.";
}

}  // namespace profkit
