#include "export/folded_stacks.h"

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "common/atomic_file.h"
#include "export/stack_paths.h"

namespace profkit {

namespace {

constexpr std::string_view kStepFrame = "ProfileStep";
constexpr std::string_view kUnlaunchedFrame = "[GPU work with no launching call]";

uint64_t duration_of(uint64_t start_ns, uint64_t end_ns) noexcept { return end_ns > start_ns ? end_ns - start_ns : 0; }

// An event still open in the walk below.
struct OpenFrame {
  uint64_t index;        // host event index
  uint64_t duration_ns;  // its own
  uint64_t children_ns;  // its direct children's, so far
  uint32_t path;         // its stack, itself included
  uint8_t depth;
};

// Walks every thread's host events in index order (so across threads, too,
// indices only grow), keeping the stack of open events. A new event's parent
// is the nearest earlier event of its thread with a smaller depth -- what
// Result::parent_of names, also where a damaged file's depths skip a level --
// so the stack holds strictly rising depths: at most 256 frames.
// `on_open(frame)` sees each event once its frame is on the stack;
// `on_close(frame, parent)` as it leaves (parent: nullptr for an outermost
// event), after all its children.
template <class OnOpen, class OnClose>
void walk_stacks(const Result& r, StackPaths& paths, OnOpen&& on_open, OnClose&& on_close) {
  const uint32_t step_frame = paths.frame_of_text(kStepFrame);
  std::vector<OpenFrame> open;
  open.reserve(256);
  auto close_top = [&] {
    const OpenFrame closed = open.back();
    open.pop_back();
    on_close(closed, open.empty() ? nullptr : &open.back());
  };
  for (const ThreadRecord& t : r.threads) {
    const uint64_t end = std::min<uint64_t>(t.first_event + t.event_count, r.host_events.size());
    for (uint64_t i = t.first_event; i < end; ++i) {
      const pk_host_event& e = r.host_events[i];
      while (!open.empty() && open.back().depth >= e.depth) close_top();
      uint64_t step = 0;
      const bool is_step =
          e.type == PK_EVENT_PROFILE_STEP && parse_profile_step(r.strings.view_or_empty(e.name), &step);
      const uint32_t frame = is_step ? step_frame : paths.frame_of_name(e.name);
      const uint32_t parent = open.empty() ? StackPaths::kRoot : open.back().path;
      // Instants take no time, also where a damaged file gives one an end
      // past its start; their frame stays for any event the depths put under
      // one, as parent_of does.
      const bool instant = (e.flags & PK_HOST_EVENT_INSTANT) != 0;
      const uint64_t duration = instant ? 0 : duration_of(e.start_ns, e.end_ns);
      open.push_back({i, duration, 0, paths.child(parent, frame), e.depth});
      on_open(open.back());
    }
    while (!open.empty()) close_top();
  }
}

void add_self_cpu(const Result& r, StackPaths& paths) {
  walk_stacks(
      r, paths, [](const OpenFrame&) {},
      [&](const OpenFrame& closed, OpenFrame* parent) {
        if (parent != nullptr) parent->children_ns += closed.duration_ns;
        paths.add(closed.path, closed.duration_ns > closed.children_ns ? closed.duration_ns - closed.children_ns : 0);
      });
}

void add_self_device(const Result& r, StackPaths& paths) {
  const uint32_t unlaunched = paths.child(StackPaths::kRoot, paths.frame_of_text(kUnlaunchedFrame));
  auto add_work = [&](uint32_t parent, const pk_device_event& d) {
    paths.add(paths.child(parent, paths.frame_of_name(d.name)), duration_of(d.start_ns, d.end_ns));
  };
  // (launching host event, GPU record) in host event order, to meet each
  // launch as the walk opens its event.
  std::vector<std::pair<uint64_t, uint64_t>> launches;
  for (uint64_t d = 0; d < r.device_events.size(); ++d) {
    const uint64_t host = r.device_events[d].launch_event;
    if (host < r.host_events.size()) {
      launches.emplace_back(host, d);
    } else {
      add_work(unlaunched, r.device_events[d]);
    }
  }
  if (!std::is_sorted(launches.begin(), launches.end())) std::sort(launches.begin(), launches.end());
  size_t next = 0;
  walk_stacks(
      r, paths,
      [&](const OpenFrame& opened) {
        // Launches of events no thread holds (a damaged file) are shown, not
        // dropped.
        for (; next < launches.size() && launches[next].first < opened.index; ++next) {
          add_work(unlaunched, r.device_events[launches[next].second]);
        }
        for (; next < launches.size() && launches[next].first == opened.index; ++next) {
          add_work(opened.path, r.device_events[launches[next].second]);
        }
      },
      [](const OpenFrame&, OpenFrame*) {});
  for (; next < launches.size(); ++next) add_work(unlaunched, r.device_events[launches[next].second]);
}

}  // namespace

void export_folded_stacks(const Result& result, const std::string& path, StacksMetric metric) {
  AtomicFileWriter out(path);  // first: an unwritable path fails before any work
  StackPaths paths(result.strings);
  if (metric == StacksMetric::kSelfDevice) {
    add_self_device(result, paths);
  } else {
    add_self_cpu(result, paths);
  }
  paths.write(out);
  out.commit();
}

}  // namespace profkit
