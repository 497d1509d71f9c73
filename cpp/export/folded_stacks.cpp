#include "export/folded_stacks.h"

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/atomic_file.h"
#include "export/stack_paths.h"
#include "summary/host_walk.h"

namespace profkit {

namespace {

constexpr std::string_view kStepFrame = "ProfileStep";
constexpr std::string_view kUnlaunchedFrame = "[GPU work with no launching call]";

// Gives each open event its stack (the path of its ancestors and itself) as
// the summary's walk of the event tree opens it, and adds to the stacks:
// each event's self time as it closes (kSelfCpu), or the GPU work each event
// launched (kSelfDevice).
class StackVisitor : public HostEventVisitor {
 public:
  StackVisitor(const Result& r, StackPaths& paths, StacksMetric metric)
      : r_(r), paths_(paths), metric_(metric), step_frame_(paths.frame_of_text(kStepFrame)) {}

  uint32_t type_mask() const override { return (1u << PK_EVENT_TYPE_COUNT) - 1; }  // every event

  void on_open(const OpenStack& stack) override {
    const size_t position = stack.size() - 1;
    const pk_host_event& e = r_.host_events[stack.back().index];
    uint64_t step = 0;
    const bool is_step = e.type == PK_EVENT_PROFILE_STEP && parse_profile_step(r_.strings.view_or_empty(e.name), &step);
    const uint32_t parent = position == 0 ? StackPaths::kRoot : path_at_[position - 1];
    path_at_[position] = paths_.child(parent, is_step ? step_frame_ : paths_.frame_of_name(e.name));
  }

  void on_close(const OpenStack& stack, const OpenEvent& closed) override {
    if (metric_ != StacksMetric::kSelfCpu) return;
    const pk_host_event& e = r_.host_events[closed.index];
    // Instants take no time, also where a damaged file gives one an end.
    const uint64_t duration =
        (e.flags & PK_HOST_EVENT_INSTANT) != 0 || e.end_ns <= e.start_ns ? 0 : e.end_ns - e.start_ns;
    // children_ns holds crossing events' time too (host_walk.h): each moment once.
    paths_.add(path_at_[stack.size()], duration > closed.children_ns ? duration - closed.children_ns : 0);
  }

  bool wants_launches() const override { return metric_ == StacksMetric::kSelfDevice; }

  void on_launch(const OpenStack& stack, const LaunchedWork& work) override {
    paths_.add(paths_.child(path_at_[stack.size() - 1], paths_.frame_of_name(work.name)), work.duration_ns);
  }

 private:
  const Result& r_;
  StackPaths& paths_;
  const StacksMetric metric_;
  const uint32_t step_frame_;
  std::array<uint32_t, OpenStack::kCapacity> path_at_{};  // per stack position: its event's stack
};

// GPU work whose launch was not captured, under one root frame: shown, not
// dropped (the walk brings only launched work to the host side).
void add_unlaunched(const Result& r, StackPaths& paths) {
  const uint32_t unlaunched = paths.child(StackPaths::kRoot, paths.frame_of_text(kUnlaunchedFrame));
  for (const pk_device_event& d : r.device_events) {
    if (d.launch_event < r.host_events.size()) continue;
    paths.add(paths.child(unlaunched, paths.frame_of_name(d.name)), d.end_ns > d.start_ns ? d.end_ns - d.start_ns : 0);
  }
}

}  // namespace

void export_folded_stacks(const Result& result, const std::string& path, StacksMetric metric) {
  AtomicFileWriter out(path);  // first: an unwritable path fails before any work
  StackPaths paths(result.strings);
  StackVisitor visitor(result, paths, metric);
  walk_host_events(result, {&visitor});
  if (metric == StacksMetric::kSelfDevice) add_unlaunched(result, paths);
  paths.write(out);
  out.commit();
}

}  // namespace profkit
