// ResultBuilder: assembles a Result from what the recorder (and the GPU
// tracer) collected: host events per thread in any order, arguments and
// runtime calls keyed by their event, memory events, GPU activity.
//
// finish() sorts each thread's events (start ascending, enclosing first),
// recomputes nesting depth from time containment, resolves arguments to event
// indices, and attaches every GPU record to its launching runtime call by
// correlation id (unattached ones stay, counted).
//
// Thread-safety: none; one builder is used by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "profkit/profkit.h"
#include "trace/result.h"

namespace profkit {

class ResultBuilder {
 public:
  explicit ResultBuilder(ResultInfo info);

  // The string table; callers add names and get the ids events carry.
  StringTable& strings() noexcept { return strings_; }
  uint32_t add_string(std::string_view text) { return strings_.add_copy(text); }

  // A handle for OS thread `tid`, created on first use.
  uint32_t thread(uint64_t tid);
  // Room for `n` more events on `thread` (an estimate; avoids regrowth).
  void reserve_events(uint32_t thread, size_t n) {
    threads_[thread].events.reserve(threads_[thread].events.size() + n);
  }
  void set_thread_name(uint32_t thread, std::string name);

  // `depth` is a hint that orders events with equal start and end (lower is
  // outer); the final depth comes from time containment.
  void add_event(uint32_t thread, const pk_host_event& event);

  // An argument of the event on `thread` that was added with this start time
  // and depth hint.
  void add_arg(uint32_t thread, uint64_t event_start_ns, uint8_t event_depth, uint32_t key, pk_arg_kind kind,
               int64_t value);

  // An event recorded after it ended (pk_complete_event). It has no depth
  // of its own (it was on no stack) and no argument ever targets it; its
  // place among the thread's events comes from time alone.
  void add_whole_event(uint32_t thread, const pk_host_event& event);

  // A CUDA runtime call (a CudaRuntime host event) with its correlation id.
  void add_runtime_call(uint32_t thread, const pk_host_event& event, uint32_t correlation_id);

  // Memory event; its `thread` field is a handle from thread().
  void add_memory_event(const pk_memory_event& event);

  // GPU activity; launch_event is filled in by finish(). The detail, if any,
  // must already be in the matching detail table.
  void add_device_event(const pk_device_event& event) { device_events_.push_back(event); }
  // Room for `n` more device events, so the Result's column holds no slack.
  void reserve_device_events(size_t n) { device_events_.reserve(device_events_.size() + n); }
  uint32_t add_kernel_detail(const pk_kernel_detail& d);
  uint32_t add_memory_op_detail(const pk_memory_op_detail& d);
  void add_device(DeviceInfo device) { devices_.push_back(std::move(device)); }

  void add_metadata(std::string key, std::string value) { metadata_.emplace_back(std::move(key), std::move(value)); }

  ResultInfo& info() noexcept { return info_; }

  // finish() drops the events nested by time more than 255 levels deep and
  // counts them in overflowed_events (drop_nested_too_deep, event_order.h):
  // for what the recorder collects, where that is the depth limit. A loaded
  // file keeps what it holds (its depths stop at 255 as they were stored).
  void drop_events_nested_too_deep() noexcept { drop_too_deep_ = true; }

  std::unique_ptr<Result> finish();

 private:
  struct PendingArg {
    uint64_t start_ns;
    uint32_t key;
    uint8_t depth;
    uint8_t kind;
    int64_t value;
  };
  struct PendingCall {
    uint64_t start_ns;
    uint32_t correlation_id;
  };
  struct ThreadData {
    uint64_t tid = 0;
    std::string name;
    std::vector<pk_host_event> events;
    std::vector<PendingArg> args;
    std::vector<PendingCall> calls;
  };

  // The host side of the result as finish() lays it out.
  struct HostEvents {
    std::vector<pk_host_event> events;
    std::vector<pk_event_arg> args;
    std::unordered_map<uint32_t, uint64_t> call_by_correlation;  // -> index in events
  };

  // The steps of finish().
  std::vector<uint32_t> lay_out_threads(Result& result, HostEvents& host);
  void sanitize(std::vector<pk_host_event>& events) const;
  void resolve_args_and_calls(const ThreadData& t, uint64_t first, HostEvents& host) const;
  void order_memory_events(const std::vector<uint32_t>& final_index);
  void attach_device_events(const std::unordered_map<uint32_t, uint64_t>& call_by_correlation);
  void compact_strings(std::vector<pk_host_event>& events, std::vector<pk_event_arg>& args);

  ResultInfo info_;
  bool drop_too_deep_ = false;
  StringTable strings_;
  std::vector<ThreadData> threads_;
  std::unordered_map<uint64_t, uint32_t> thread_by_tid_;
  std::vector<pk_memory_event> memory_events_;
  std::vector<pk_device_event> device_events_;
  std::vector<pk_kernel_detail> kernel_details_;
  std::vector<pk_memory_op_detail> memory_op_details_;
  std::vector<DeviceInfo> devices_;
  std::vector<std::pair<std::string, std::string>> metadata_;
};

}  // namespace profkit
