// ActivityStore: GPU activity decoded from CUPTI buffers, waiting for the
// next collect, and the rules that turn it into Result records.
//
// The decoder appends compact records here as soon as CUPTI completes a
// buffer (so raw buffers are recycled at once). At collect, contribute()
// decides what belongs to the Result's recording windows and hands it to the
// ResultBuilder, which attaches every GPU record to its launching API call by
// correlation id and every API call to the innermost host event around it on
// its thread. The rules:
//   - an API call belongs to the Result when it starts inside a recording
//     window of the Result's span;
//   - a GPU record belongs when its launch call does, or when it starts inside
//     a window (launched before GPU tracing saw it: kept, on its stream lane,
//     counted as unattached — never dropped silently);
//   - a GPU record without timestamps (CUPTI ran out of device memory for
//     them) belongs when its launch call does or when it arrived while a
//     window was open; it is flagged PK_DEVICE_EVENT_NO_TIMING and placed at
//     the end of its launch call (or at the span start);
//   - a driver call (cuLaunchKernel from cuBLAS or Triton, recorded by CUPTI's
//     DRIVER kind or seen by the tracer's launch callback) is kept only when
//     GPU work is attached to it and no runtime call has its correlation id,
//     so launches made through the runtime are not doubled;
//   - while recording continues, what starts after the span waits for the
//     next collect, with every GPU record of the calls that wait (timed or
//     not); everything else is discarded (outside every window).
// Past the record cap, records are dropped and counted in the Result's
// dropped_device_records (with the records CUPTI itself lost).
//
// Thread-safety: none; the tracer guards its store with a mutex.
// Ownership: names are copied in; the store owns everything it holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cupti/gpu_device.h"
#include "cupti/occupancy.h"
#include "profkit/profkit.h"

namespace profkit {
class ResultBuilder;
}

namespace profkit::cupti {

// A CUDA runtime or driver API call.
struct ApiCall {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t tid = 0;  // system thread id (gettid), the recorder's too
  uint32_t correlation_id = 0;
  uint32_t name = 0;  // store-local name id
  uint16_t flags = 0;
  uint16_t reserved = 0;
};
constexpr uint16_t kApiCallDriver = 0x1;

// Store-internal device event flag: the record arrived while a recording
// window was open. Stripped before records reach the Result.
constexpr uint8_t kDeviceEventArrivedInWindow = 0x80;

// A recording window on the engine clock; end_ns == UINT64_MAX while open.
struct RecordingWindow {
  uint64_t start_ns = 0;
  uint64_t end_ns = UINT64_MAX;
};

// What the collect covers.
struct CollectSpan {
  std::vector<RecordingWindow> windows;  // recording windows since the last collect
  uint64_t start_ns = 0;                 // the Result's span (ResultInfo start/end)
  uint64_t end_ns = 0;
  bool recording_continues = false;  // keep what starts after end_ns for the next collect
};

struct ContributeStats {
  uint64_t api_calls = 0;                  // CudaRuntime events added
  uint64_t device_events = 0;              // kernels, memcpys, memsets added
  uint64_t outside_window = 0;             // discarded: outside every recording window
  uint64_t untimed_api_calls = 0;          // discarded: API calls without timestamps
  uint64_t driver_calls_without_work = 0;  // discarded: driver calls inside a traced runtime call
  uint64_t pending = 0;                    // kept for the next collect
  uint64_t dropped = 0;                    // lost to the record cap (added to the Result)
};

// The text of a runtime (driver == false) or driver API callback id.
using ApiNameFn = std::string (*)(bool driver, uint32_t cbid);

class ActivityStore {
 public:
  static constexpr uint64_t kUnlimited = UINT64_MAX;

  explicit ActivityStore(ApiNameFn api_name_fn, uint64_t max_records = kUnlimited);

  // Store-local name ids (deduplicated).
  uint32_t intern_name(std::string_view text);
  // The demangled kernel name for CUPTI's mangled `name`. CUPTI shares one
  // pointer between all records of a kernel, so lookups go by pointer (and
  // are checked against the text, in case a module was unloaded and its
  // memory reused).
  uint32_t kernel_name(const char* mangled);
  uint32_t api_name(bool driver, uint32_t cbid);
  std::string_view name_text(uint32_t id) const { return names_[id]; }

  // Each returns false when the record was dropped (record cap reached).
  bool add_api_call(const ApiCall& call);
  // A driver kernel launch seen by CUPTI's callback (flags kApiCallDriver).
  // Most are the inner half of a runtime launch, whose runtime record comes
  // later in a buffer: they wait apart, under a cap of their own (the record
  // cap again), until forget_launches_inside_runtime_calls drops them; the
  // rest (cuBLAS's and Triton's own launches) join the API calls at the next
  // contribute, even past the records' cap. Returns false when refused for
  // the cap: counted as dropped at the contribute, unless a runtime record
  // claims it first.
  bool add_launch_seen_by_callback(const ApiCall& launch);
  // Forgets the waiting launches that share a correlation id with one of
  // `runtime_correlations` (a buffer's runtime records; sorted here).
  void forget_launches_inside_runtime_calls(std::vector<uint32_t>& runtime_correlations);
  // `event.detail` is ignored: the store keeps `shape` and computes the
  // kernel detail (with occupancy) at contribute time.
  bool add_kernel(const pk_device_event& event, const LaunchShape& shape);
  bool add_memory_op(const pk_device_event& event, const pk_memory_op_detail& detail);
  // Records lost before they reached the store (CUPTI's dropped count).
  void add_dropped(uint64_t n) noexcept { dropped_ += n; }
  // The record cap for the records added from now on (those held stay).
  void set_max_records(uint64_t max_records) noexcept { max_records_ = max_records; }

  size_t api_call_count() const noexcept { return calls_.size(); }
  size_t device_event_count() const noexcept { return events_.size(); }
  uint64_t dropped() const noexcept { return dropped_; }
  size_t waiting_launch_count() const noexcept { return launches_seen_by_callback_.size(); }
  bool empty() const noexcept {
    return calls_.empty() && events_.empty() && launches_seen_by_callback_.empty() && refused_launches_.empty() &&
           dropped_ == 0;
  }
  // Heap bytes held (capacities), for the memory benchmarks.
  size_t memory_bytes() const noexcept;

  // Adds what belongs to `span` to `builder` (see the rules above), with the
  // facts of `devices`; keeps what waits for the next collect; forgets the
  // rest. dropped() goes into builder.info().dropped_device_records.
  ContributeStats contribute(ResultBuilder& builder, const CollectSpan& span, const GpuDevices& devices);

  // Forgets everything (keeps the name function and the cap).
  void clear();

 private:
  struct KernelKey {
    uint32_t device = 0;
    LaunchShape shape;
    bool operator==(const KernelKey& o) const noexcept;
  };
  struct KernelKeyHash {
    size_t operator()(const KernelKey& k) const noexcept;
  };
  struct MemoryOpHash {
    size_t operator()(const pk_memory_op_detail& d) const noexcept;
  };
  struct MemoryOpEqual {
    bool operator()(const pk_memory_op_detail& a, const pk_memory_op_detail& b) const noexcept;
  };
  struct PointerName {
    uint32_t id;
    std::string mangled;
  };

  bool has_room() noexcept;

  // The steps of contribute(), in order; defined in activity_store.cpp.
  // Records that wait for the next collect are copied into `next`.
  class KeptCalls;    // the API calls that start inside a window, by correlation id
  class ResultNames;  // store-local name id -> Result string id, added on first use
  // Fills `carried_correlations` (sorted) with the correlation ids of the
  // calls that wait for the next collect: their GPU records wait with them.
  KeptCalls select_api_calls(const CollectSpan& span, ActivityStore& next, std::vector<uint32_t>& carried_correlations,
                             ContributeStats& stats) const;
  // Marks the GPU records that belong to the Result; fills `used_correlations`
  // (sorted) with the launches that have GPU work attached.
  std::vector<uint8_t> select_device_events(const CollectSpan& span, const KeptCalls& kept_calls,
                                            const std::vector<uint32_t>& carried_correlations, ActivityStore& next,
                                            std::vector<uint32_t>& used_correlations, ContributeStats& stats) const;
  void carry_device_event(const pk_device_event& d, ActivityStore& next) const;
  void add_api_calls(ResultBuilder& builder, const KeptCalls& kept_calls,
                     const std::vector<uint32_t>& used_correlations, ResultNames& names, ContributeStats& stats) const;
  void add_device_events(ResultBuilder& builder, const CollectSpan& span, const GpuDevices& devices,
                         const KeptCalls& kept_calls, const std::vector<uint8_t>& keep_event, ResultNames& names,
                         ContributeStats& stats) const;

  ApiNameFn api_name_fn_;
  uint64_t max_records_;
  uint64_t dropped_ = 0;

  std::vector<ApiCall> calls_;
  std::vector<ApiCall> launches_seen_by_callback_;  // waiting: see add_launch_seen_by_callback
  std::vector<uint32_t> refused_launches_;          // correlation ids of those refused for the cap
  std::vector<pk_device_event> events_;             // name and detail are store-local

  std::deque<std::string> names_;  // deque: growing keeps the views below valid
  std::unordered_map<std::string_view, uint32_t> name_ids_;
  std::unordered_map<const char*, PointerName> kernel_names_;
  std::unordered_map<uint64_t, uint32_t> api_names_;  // (driver << 32 | cbid) -> name

  std::vector<KernelKey> kernels_;
  std::unordered_map<KernelKey, uint32_t, KernelKeyHash> kernel_ids_;
  std::vector<pk_memory_op_detail> memory_ops_;
  std::unordered_map<pk_memory_op_detail, uint32_t, MemoryOpHash, MemoryOpEqual> memory_op_ids_;
};

}  // namespace profkit::cupti
