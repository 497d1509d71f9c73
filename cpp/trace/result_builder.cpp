#include "trace/result_builder.h"

#include "trace/event_order.h"

#include <algorithm>

namespace profkit {

namespace {

// Events with equal start and end are ordered by their depth hint; runtime
// calls carry hint 255 so they nest inside a host event that starts with them.
constexpr uint8_t kRuntimeCallDepthHint = 255;

// Events recorded whole carry hint 254: a value no argument looks for (an
// argument names its event by start and stack index, and no open event sits
// 254 deep in practice), and at equal start and end they nest inside the
// event recorded through the stack, which is the one that enclosed them.
constexpr uint8_t kWholeEventDepthHint = 254;

uint64_t start_depth_key(uint64_t start_ns, uint8_t depth) {
  // Depth fills the low 8 bits that the shift leaves zero, so two keys are
  // equal only for the same depth and the same start (modulo 2^56 ns, more
  // than two years); lookups confirm with the event itself anyway.
  return (start_ns << 8) ^ depth;
}

}  // namespace

ResultBuilder::ResultBuilder(ResultInfo info) : info_(std::move(info)) {}

uint32_t ResultBuilder::thread(uint64_t tid) {
  auto [it, inserted] = thread_by_tid_.emplace(tid, static_cast<uint32_t>(threads_.size()));
  if (inserted) {
    threads_.emplace_back();
    threads_.back().tid = tid;
  }
  return it->second;
}

void ResultBuilder::set_thread_name(uint32_t thread, std::string name) { threads_[thread].name = std::move(name); }

void ResultBuilder::add_event(uint32_t thread, const pk_host_event& event) { threads_[thread].events.push_back(event); }

void ResultBuilder::add_arg(uint32_t thread, uint64_t event_start_ns, uint8_t event_depth, uint32_t key,
                            pk_arg_kind kind, int64_t value) {
  threads_[thread].args.push_back({event_start_ns, key, event_depth, static_cast<uint8_t>(kind), value});
}

void ResultBuilder::add_whole_event(uint32_t thread, const pk_host_event& event) {
  pk_host_event e = event;
  e.depth = kWholeEventDepthHint;
  threads_[thread].events.push_back(e);
}

void ResultBuilder::add_runtime_call(uint32_t thread, const pk_host_event& event, uint32_t correlation_id) {
  pk_host_event e = event;
  e.depth = kRuntimeCallDepthHint;
  threads_[thread].events.push_back(e);
  threads_[thread].calls.push_back({e.start_ns, correlation_id});
}

void ResultBuilder::add_memory_event(const pk_memory_event& event) { memory_events_.push_back(event); }

uint32_t ResultBuilder::add_kernel_detail(const pk_kernel_detail& d) {
  kernel_details_.push_back(d);
  return static_cast<uint32_t>(kernel_details_.size() - 1);
}

uint32_t ResultBuilder::add_memory_op_detail(const pk_memory_op_detail& d) {
  memory_op_details_.push_back(d);
  return static_cast<uint32_t>(memory_op_details_.size() - 1);
}

void ResultBuilder::sanitize(std::vector<pk_host_event>& events) const {
  // Producers are not trusted with ids: a name never interned becomes "" and
  // an unknown type UserDefined, so every Result can be saved and reloaded.
  const size_t strings = strings_.size();
  for (pk_host_event& e : events) {
    if (e.name >= strings) e.name = 0;
    if (e.type >= PK_EVENT_TYPE_COUNT) e.type = PK_EVENT_USER_DEFINED;
  }
}

void ResultBuilder::compact_strings(std::vector<pk_host_event>& events, std::vector<pk_event_arg>& args) {
  // Keep only the strings this result refers to: a producer may add some that
  // end up unused, such as the names of arguments whose event was not kept
  // ("" always stays at index 0).
  std::vector<bool> used(strings_.size(), false);
  if (!used.empty()) used[0] = true;
  for (const pk_host_event& e : events) used[e.name] = true;
  for (const pk_event_arg& a : args) {
    used[a.key] = true;
    if (a.kind == PK_ARG_STRING) used[static_cast<size_t>(a.value)] = true;
  }
  for (const pk_device_event& d : device_events_) {
    if (d.name < used.size()) used[d.name] = true;
  }
  if (std::find(used.begin(), used.end(), false) == used.end()) return;
  const std::vector<uint32_t> remap = strings_.compact(used);
  for (pk_host_event& e : events) e.name = remap[e.name];
  for (pk_event_arg& a : args) {
    a.key = remap[a.key];
    if (a.kind == PK_ARG_STRING) a.value = remap[static_cast<size_t>(a.value)];
  }
  for (pk_device_event& d : device_events_) d.name = d.name < remap.size() ? remap[d.name] : 0;
}

std::unique_ptr<Result> ResultBuilder::finish() {
  auto result = std::make_unique<Result>();
  HostEvents host;
  const std::vector<uint32_t> final_index = lay_out_threads(*result, host);
  std::stable_sort(host.args.begin(), host.args.end(),
                   [](const pk_event_arg& a, const pk_event_arg& b) { return a.event < b.event; });
  order_memory_events(final_index);
  attach_device_events(host.call_by_correlation);
  compact_strings(host.events, host.args);

  result->info = std::move(info_);
  result->strings = std::move(strings_);
  result->host_events = Column<pk_host_event>(std::move(host.events));
  result->event_args = Column<pk_event_arg>(std::move(host.args));
  result->memory_events = Column<pk_memory_event>(std::move(memory_events_));
  result->device_events = Column<pk_device_event>(std::move(device_events_));
  result->kernel_details = Column<pk_kernel_detail>(std::move(kernel_details_));
  result->memory_op_details = Column<pk_memory_op_detail>(std::move(memory_op_details_));
  result->devices = std::move(devices_);
  result->metadata = std::move(metadata_);
  return result;
}

// Threads in tid order, each thread's events contiguous in `host.events`;
// returns where each thread handle went.
std::vector<uint32_t> ResultBuilder::lay_out_threads(Result& result, HostEvents& host) {
  std::vector<uint32_t> order(threads_.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return threads_[a].tid < threads_[b].tid; });
  std::vector<uint32_t> final_index(threads_.size());

  size_t total = 0;
  for (const ThreadData& t : threads_) total += t.events.size();
  host.events.reserve(total);
  for (uint32_t position = 0; position < order.size(); ++position) {
    ThreadData& t = threads_[order[position]];
    final_index[order[position]] = position;
    sanitize(t.events);
    sort_thread_events(t.events);
    // Before the arguments are resolved: they find their events by position.
    if (drop_too_deep_) info_.overflowed_events += drop_nested_too_deep(t.events);
    const uint64_t first = host.events.size();
    // Resolve arguments and runtime calls while depth hints are still there.
    if (!t.args.empty() || !t.calls.empty()) resolve_args_and_calls(t, first, host);
    nest_by_containment(t.events);
    host.events.insert(host.events.end(), t.events.begin(), t.events.end());
    result.threads.push_back({t.tid, std::move(t.name), first, t.events.size()});
    t.events = {};
  }
  return final_index;
}

// Finds each argument's event and each runtime call by (start, depth hint);
// an argument whose event or ids are not in the result is left out.
void ResultBuilder::resolve_args_and_calls(const ThreadData& t, uint64_t first, HostEvents& host) const {
  std::unordered_map<uint64_t, uint64_t> by_key;
  by_key.reserve(t.events.size());
  for (uint64_t i = 0; i < t.events.size(); ++i) {
    by_key.emplace(start_depth_key(t.events[i].start_ns, t.events[i].depth), i);
  }
  for (const PendingArg& a : t.args) {
    auto it = by_key.find(start_depth_key(a.start_ns, a.depth));
    if (it == by_key.end() || t.events[it->second].start_ns != a.start_ns) continue;
    if (a.key >= strings_.size()) continue;
    if (a.kind == PK_ARG_STRING && (a.value < 0 || static_cast<uint64_t>(a.value) >= strings_.size())) continue;
    host.args.push_back({first + it->second, a.key, a.kind, a.value});
  }
  for (const PendingCall& c : t.calls) {
    auto it = by_key.find(start_depth_key(c.start_ns, kRuntimeCallDepthHint));
    if (it == by_key.end()) continue;
    host.call_by_correlation[c.correlation_id] = first + it->second;
  }
}

// Memory events name threads by their final index, in time order.
void ResultBuilder::order_memory_events(const std::vector<uint32_t>& final_index) {
  for (pk_memory_event& m : memory_events_) {
    if (m.thread < final_index.size()) m.thread = final_index[m.thread];
  }
  std::stable_sort(memory_events_.begin(), memory_events_.end(),
                   [](const pk_memory_event& a, const pk_memory_event& b) { return a.time_ns < b.time_ns; });
}

// Each GPU record points at its launching runtime call, or is counted as
// unattached; then all are put in start order.
void ResultBuilder::attach_device_events(const std::unordered_map<uint32_t, uint64_t>& call_by_correlation) {
  for (pk_device_event& d : device_events_) {
    auto it = call_by_correlation.find(d.correlation_id);
    if (it != call_by_correlation.end()) {
      d.launch_event = it->second;
    } else {
      d.launch_event = PK_NO_EVENT;
      ++info_.unattached_device_records;
    }
  }
  std::stable_sort(device_events_.begin(), device_events_.end(),
                   [](const pk_device_event& a, const pk_device_event& b) { return a.start_ns < b.start_ns; });
}

}  // namespace profkit
