#include "cupti/activity_store.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "cupti/demangle.h"
#include "trace/result_builder.h"

namespace profkit::cupti {

namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  // boost::hash_combine's recipe, widened to 64 bits.
  return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
}

bool starts_in(const CollectSpan& span, uint64_t t) {
  if (t < span.start_ns || t > span.end_ns) return false;
  for (const RecordingWindow& w : span.windows) {
    if (t >= w.start_ns && t <= w.end_ns) return true;
  }
  return false;
}

constexpr uint8_t kInternalDeviceFlags = kDeviceEventArrivedInWindow;

}  // namespace

bool ActivityStore::KernelKey::operator==(const KernelKey& o) const noexcept {
  const LaunchShape& a = shape;
  const LaunchShape& b = o.shape;
  return device == o.device && std::equal(a.grid, a.grid + 3, b.grid) && std::equal(a.block, a.block + 3, b.block) &&
         a.registers_per_thread == b.registers_per_thread && a.static_shared_memory == b.static_shared_memory &&
         a.dynamic_shared_memory == b.dynamic_shared_memory && a.shared_memory_executed == b.shared_memory_executed &&
         a.shared_memory_optin == b.shared_memory_optin;
}

size_t ActivityStore::KernelKeyHash::operator()(const KernelKey& k) const noexcept {
  const LaunchShape& s = k.shape;
  uint64_t h = k.device;
  for (int i = 0; i < 3; ++i) h = mix(h, (static_cast<uint64_t>(s.grid[i]) << 32) | s.block[i]);
  h = mix(h, (static_cast<uint64_t>(s.registers_per_thread) << 32) | s.static_shared_memory);
  h = mix(h, (static_cast<uint64_t>(s.dynamic_shared_memory) << 32) | s.shared_memory_executed);
  return static_cast<size_t>(mix(h, s.shared_memory_optin ? 1 : 0));
}

size_t ActivityStore::MemoryOpHash::operator()(const pk_memory_op_detail& d) const noexcept {
  uint64_t h = mix(d.bytes, d.value);
  h = mix(h, (static_cast<uint64_t>(d.copy_kind) << 16) | (static_cast<uint64_t>(d.src_kind) << 8) | d.dst_kind);
  return static_cast<size_t>(h);
}

bool ActivityStore::MemoryOpEqual::operator()(const pk_memory_op_detail& a,
                                              const pk_memory_op_detail& b) const noexcept {
  return a.bytes == b.bytes && a.value == b.value && a.copy_kind == b.copy_kind && a.src_kind == b.src_kind &&
         a.dst_kind == b.dst_kind;
}

ActivityStore::ActivityStore(ApiNameFn api_name_fn, uint64_t max_records)
    : api_name_fn_(api_name_fn), max_records_(max_records) {}

uint32_t ActivityStore::intern_name(std::string_view text) {
  auto it = name_ids_.find(text);
  if (it != name_ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(names_.size());
  names_.emplace_back(text);
  name_ids_.emplace(names_.back(), id);
  return id;
}

uint32_t ActivityStore::kernel_name(const char* mangled) {
  if (mangled == nullptr) return intern_name("<unnamed kernel>");
  auto it = kernel_names_.find(mangled);
  if (it != kernel_names_.end() && it->second.mangled == mangled) return it->second.id;
  const uint32_t id = intern_name(demangle(mangled));
  kernel_names_[mangled] = PointerName{id, mangled};
  return id;
}

uint32_t ActivityStore::api_name(bool driver, uint32_t cbid) {
  const uint64_t key = (static_cast<uint64_t>(driver) << 32) | cbid;
  auto it = api_names_.find(key);
  if (it != api_names_.end()) return it->second;
  const uint32_t id = intern_name(api_name_fn_(driver, cbid));
  api_names_.emplace(key, id);
  return id;
}

bool ActivityStore::has_room() noexcept {
  if (calls_.size() + events_.size() < max_records_) return true;
  ++dropped_;
  return false;
}

bool ActivityStore::add_api_call(const ApiCall& call) {
  if (!has_room()) return false;
  calls_.push_back(call);
  return true;
}

bool ActivityStore::add_launch_seen_by_callback(const ApiCall& launch) {
  // A cap of their own, apart from the records': most are forgotten when
  // their buffer completes, and counted with the records they would take
  // the room of kernels CUPTI has not delivered yet.
  if (launches_seen_by_callback_.size() >= max_records_) {
    // Counted as lost at the collect unless a runtime record claims it
    // first: the runtime's inner launches are no records of their own.
    refused_launches_.push_back(launch.correlation_id);
    return false;
  }
  launches_seen_by_callback_.push_back(launch);
  return true;
}

void ActivityStore::forget_launches_inside_runtime_calls(std::vector<uint32_t>& runtime_correlations) {
  if ((launches_seen_by_callback_.empty() && refused_launches_.empty()) || runtime_correlations.empty()) return;
  std::sort(runtime_correlations.begin(), runtime_correlations.end());
  auto inside_runtime_call = [&runtime_correlations](uint32_t correlation) {
    return std::binary_search(runtime_correlations.begin(), runtime_correlations.end(), correlation);
  };
  launches_seen_by_callback_.erase(
      std::remove_if(launches_seen_by_callback_.begin(), launches_seen_by_callback_.end(),
                     [&](const ApiCall& launch) { return inside_runtime_call(launch.correlation_id); }),
      launches_seen_by_callback_.end());
  refused_launches_.erase(std::remove_if(refused_launches_.begin(), refused_launches_.end(), inside_runtime_call),
                          refused_launches_.end());
}

bool ActivityStore::add_kernel(const pk_device_event& event, const LaunchShape& shape) {
  if (!has_room()) return false;
  KernelKey key{event.device, shape};
  auto [it, inserted] = kernel_ids_.emplace(key, static_cast<uint32_t>(kernels_.size()));
  if (inserted) kernels_.push_back(key);
  pk_device_event e = event;
  e.type = PK_EVENT_KERNEL;
  e.detail = it->second;
  events_.push_back(e);
  return true;
}

bool ActivityStore::add_memory_op(const pk_device_event& event, const pk_memory_op_detail& detail) {
  if (!has_room()) return false;
  auto [it, inserted] = memory_op_ids_.emplace(detail, static_cast<uint32_t>(memory_ops_.size()));
  if (inserted) memory_ops_.push_back(detail);
  pk_device_event e = event;
  e.detail = it->second;
  events_.push_back(e);
  return true;
}

size_t ActivityStore::memory_bytes() const noexcept {
  size_t bytes = (calls_.capacity() + launches_seen_by_callback_.capacity()) * sizeof(ApiCall) +
                 events_.capacity() * sizeof(pk_device_event) + kernels_.capacity() * sizeof(KernelKey) +
                 memory_ops_.capacity() * sizeof(pk_memory_op_detail) + refused_launches_.capacity() * sizeof(uint32_t);
  for (const std::string& n : names_) bytes += n.capacity() + sizeof(std::string);
  return bytes;
}

void ActivityStore::clear() {
  ActivityStore fresh(api_name_fn_, max_records_);
  *this = std::move(fresh);
}

// API calls that start inside a window, as (correlation id, index in
// calls_), sorted so that a GPU record finds its launch by binary search and
// the calls sharing a correlation id are neighbours.
class ActivityStore::KeptCalls {
 public:
  KeptCalls(const std::vector<ApiCall>& calls, std::vector<std::pair<uint32_t, uint32_t>> kept)
      : calls_(calls), kept_(std::move(kept)) {
    std::sort(kept_.begin(), kept_.end());
  }

  size_t size() const noexcept { return kept_.size(); }
  const ApiCall& operator[](size_t position) const { return calls_[kept_[position].second]; }

  // The kept call with this correlation id (the first, when a runtime call
  // and its driver call share it), or nullptr.
  const ApiCall* launch_of(uint32_t correlation) const {
    auto it = std::lower_bound(kept_.begin(), kept_.end(), std::make_pair(correlation, 0u));
    if (it == kept_.end() || it->first != correlation) return nullptr;
    // The runtime call, when a driver call inside it shares its id: the one
    // the Result shows (add_api_calls leaves the inner driver call out).
    for (auto runtime = it; runtime != kept_.end() && runtime->first == correlation; ++runtime) {
      if ((calls_[runtime->second].flags & kApiCallDriver) == 0) return &calls_[runtime->second];
    }
    return &calls_[it->second];
  }

  // Whether another kept call with the same correlation id as the one at
  // `position` is a runtime call (then a driver call there is its inner half).
  bool runtime_call_shares(size_t position) const {
    const uint32_t correlation = kept_[position].first;
    for (size_t i = position; i-- > 0 && kept_[i].first == correlation;) {
      if ((calls_[kept_[i].second].flags & kApiCallDriver) == 0) return true;
    }
    for (size_t i = position + 1; i < kept_.size() && kept_[i].first == correlation; ++i) {
      if ((calls_[kept_[i].second].flags & kApiCallDriver) == 0) return true;
    }
    return false;
  }

 private:
  const std::vector<ApiCall>& calls_;
  std::vector<std::pair<uint32_t, uint32_t>> kept_;
};

// Store-local name ids to Result string ids, each name added to the builder
// on first use only (names of discarded records never reach the Result).
class ActivityStore::ResultNames {
 public:
  ResultNames(ResultBuilder& builder, const std::deque<std::string>& names)
      : builder_(builder), names_(names), ids_(names.size(), UINT32_MAX) {}

  uint32_t operator()(uint32_t local) {
    if (ids_[local] == UINT32_MAX) ids_[local] = builder_.add_string(names_[local]);
    return ids_[local];
  }

 private:
  ResultBuilder& builder_;
  const std::deque<std::string>& names_;
  std::vector<uint32_t> ids_;
};

ContributeStats ActivityStore::contribute(ResultBuilder& builder, const CollectSpan& span, const GpuDevices& devices) {
  ContributeStats stats;
  // The launches no runtime call claimed are driver calls like any other
  // now (a runtime call still running at the flush shadows its own in
  // add_api_calls, or it is discarded with no work attached).
  // Past the records' cap if need be: their memory is spent already, and a
  // kernel kept without its launch would lose its operator.
  calls_.insert(calls_.end(), launches_seen_by_callback_.begin(), launches_seen_by_callback_.end());
  launches_seen_by_callback_.clear();
  dropped_ += refused_launches_.size();  // launched through the driver itself, with no room
  refused_launches_.clear();
  // What waits for the next collect moves into a fresh store, so the names
  // and details of discarded records are forgotten with this one.
  ActivityStore next(api_name_fn_, max_records_);
  std::vector<uint32_t> carried_correlations;
  const KeptCalls kept_calls = select_api_calls(span, next, carried_correlations, stats);
  std::vector<uint32_t> used_correlations;
  const std::vector<uint8_t> keep_event =
      select_device_events(span, kept_calls, carried_correlations, next, used_correlations, stats);

  ResultNames names(builder, names_);
  add_api_calls(builder, kept_calls, used_correlations, names, stats);
  add_device_events(builder, span, devices, kept_calls, keep_event, names, stats);
  for (const GpuDevice& d : devices) builder.add_device(d.info);
  stats.dropped = dropped_;
  builder.info().dropped_device_records += dropped_;

  *this = std::move(next);
  return stats;
}

ActivityStore::KeptCalls ActivityStore::select_api_calls(const CollectSpan& span, ActivityStore& next,
                                                         std::vector<uint32_t>& carried_correlations,
                                                         ContributeStats& stats) const {
  std::vector<std::pair<uint32_t, uint32_t>> kept;  // (correlation id, index in calls_)
  kept.reserve(calls_.size());
  for (uint32_t i = 0; i < calls_.size(); ++i) {
    const ApiCall& c = calls_[i];
    if (c.start_ns == 0 && c.end_ns == 0) {
      ++stats.untimed_api_calls;
    } else if (starts_in(span, c.start_ns)) {
      kept.emplace_back(c.correlation_id, i);
    } else if (span.recording_continues && c.start_ns > span.end_ns) {
      ApiCall carried = c;
      carried.name = next.intern_name(names_[c.name]);
      next.add_api_call(carried);
      carried_correlations.push_back(c.correlation_id);
      ++stats.pending;
    } else {
      ++stats.outside_window;
    }
  }
  std::sort(carried_correlations.begin(), carried_correlations.end());
  return KeptCalls(calls_, std::move(kept));
}

std::vector<uint8_t> ActivityStore::select_device_events(const CollectSpan& span, const KeptCalls& kept_calls,
                                                         const std::vector<uint32_t>& carried_correlations,
                                                         ActivityStore& next, std::vector<uint32_t>& used_correlations,
                                                         ContributeStats& stats) const {
  std::vector<uint8_t> keep_event(events_.size(), 0);
  for (size_t i = 0; i < events_.size(); ++i) {
    const pk_device_event& d = events_[i];
    const bool launched_in_window = kept_calls.launch_of(d.correlation_id) != nullptr;
    const bool no_timing = (d.flags & PK_DEVICE_EVENT_NO_TIMING) != 0;
    const bool ran_in_window = no_timing ? (d.flags & kDeviceEventArrivedInWindow) != 0 : starts_in(span, d.start_ns);
    // Its launch call waits for the next collect, so it does too, whatever
    // ran_in_window says: a kernel still running at a forced flush arrives
    // untimed while the window is open, and kept here it would have no
    // launch, and the next Result a launch without its GPU work. (A kept
    // call with the same id, the runtime call around a driver call that
    // started after the span, keeps it here.)
    if (!launched_in_window &&
        std::binary_search(carried_correlations.begin(), carried_correlations.end(), d.correlation_id)) {
      carry_device_event(d, next);
      ++stats.pending;
    } else if (launched_in_window || ran_in_window) {
      keep_event[i] = 1;
      if (launched_in_window) used_correlations.push_back(d.correlation_id);
    } else if (span.recording_continues && !no_timing && d.start_ns > span.end_ns) {
      carry_device_event(d, next);
      ++stats.pending;
    } else {
      ++stats.outside_window;
    }
  }
  std::sort(used_correlations.begin(), used_correlations.end());
  return keep_event;
}

void ActivityStore::carry_device_event(const pk_device_event& d, ActivityStore& next) const {
  pk_device_event carried = d;
  carried.name = next.intern_name(names_[d.name]);
  if (d.type == PK_EVENT_KERNEL) {
    next.add_kernel(carried, kernels_[d.detail].shape);
  } else {
    next.add_memory_op(carried, memory_ops_[d.detail]);
  }
}

void ActivityStore::add_api_calls(ResultBuilder& builder, const KeptCalls& kept_calls,
                                  const std::vector<uint32_t>& used_correlations, ResultNames& names,
                                  ContributeStats& stats) const {
  for (size_t position = 0; position < kept_calls.size(); ++position) {
    const ApiCall& c = kept_calls[position];
    if ((c.flags & kApiCallDriver) != 0 &&
        (!std::binary_search(used_correlations.begin(), used_correlations.end(), c.correlation_id) ||
         kept_calls.runtime_call_shares(position))) {
      ++stats.driver_calls_without_work;
      continue;
    }
    const pk_host_event e{
        c.start_ns, std::max(c.start_ns, c.end_ns), names(c.name), static_cast<uint8_t>(PK_EVENT_CUDA_RUNTIME), 0, 0};
    builder.add_runtime_call(builder.thread(c.tid), e, c.correlation_id);
    ++stats.api_calls;
  }
}

void ActivityStore::add_device_events(ResultBuilder& builder, const CollectSpan& span, const GpuDevices& devices,
                                      const KeptCalls& kept_calls, const std::vector<uint8_t>& keep_event,
                                      ResultNames& names, ContributeStats& stats) const {
  // Details are added once per distinct launch shape or copy, on first use.
  std::vector<uint32_t> kernel_detail(kernels_.size(), UINT32_MAX);
  std::vector<uint32_t> memory_op_detail(memory_ops_.size(), UINT32_MAX);
  const DeviceLimits unknown_device;
  size_t kept_events = 0;
  for (uint8_t k : keep_event) kept_events += k;
  builder.reserve_device_events(kept_events);
  for (size_t i = 0; i < events_.size(); ++i) {
    if (keep_event[i] == 0) continue;
    pk_device_event e = events_[i];
    e.name = names(e.name);
    e.flags = static_cast<uint8_t>(e.flags & ~kInternalDeviceFlags);
    e.launch_event = PK_NO_EVENT;  // the builder attaches by correlation id
    if (e.type == PK_EVENT_KERNEL) {
      uint32_t& detail = kernel_detail[e.detail];
      if (detail == UINT32_MAX) {
        const KernelKey& key = kernels_[e.detail];
        const GpuDevice* device = find_device(devices, key.device);
        detail = builder.add_kernel_detail(make_kernel_detail(device ? device->limits : unknown_device, key.shape));
      }
      e.detail = detail;
    } else {
      uint32_t& detail = memory_op_detail[e.detail];
      if (detail == UINT32_MAX) detail = builder.add_memory_op_detail(memory_ops_[e.detail]);
      e.detail = detail;
    }
    if ((e.flags & PK_DEVICE_EVENT_NO_TIMING) != 0) {
      // No time of its own: place it where it was launched.
      const ApiCall* launch = kept_calls.launch_of(e.correlation_id);
      e.start_ns = e.end_ns = launch != nullptr ? std::max(launch->start_ns, launch->end_ns) : span.start_ns;
    }
    builder.add_device_event(e);
    ++stats.device_events;
  }
}

}  // namespace profkit::cupti
