// A stand-in libcupti for testing the tracer without a GPU. It exports the
// CUPTI entry points profkit resolves with dlsym and behaves like CUPTI where
// the tracer depends on it: one subscriber at a time, activity kinds that
// must be enabled before records appear, records buffered until a flush
// delivers them through the registered buffer callbacks, timestamps from the
// registered timestamp callback, a dropped-record count that resets when
// read, and cuptiFinalize dropping every registration. Tests drive it through
// the fake_cupti_* functions (resolved with dlsym too).
//
// Records are the real structs of the CUPTI headers, laid out as in the
// synthetic buffers (tests/cpp/cupti_synthetic.h).
#include <cupti.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cupti_synthetic.h"

#define FAKE_API extern "C" __attribute__((visibility("default")))

namespace {

struct FakeCupti {
  std::recursive_mutex mutex;  // recursive: callbacks may call back in
  uint32_t version = CUPTI_API_VERSION;
  std::map<std::string, int> failures;
  CUpti_BuffersCallbackRequestFunc requested = nullptr;
  CUpti_BuffersCallbackCompleteFunc completed = nullptr;
  CUpti_TimestampCallbackFunc clock = nullptr;
  CUpti_CallbackFunc subscriber = nullptr;
  void* subscriber_data = nullptr;
  bool subscribed = false;
  int thread_id_type = -1;
  std::set<int> kinds;
  std::set<int> domains;
  std::set<uint32_t> runtime_disabled;
  std::set<uint32_t> driver_enabled;
  std::set<std::pair<int, uint32_t>> callbacks;  // (domain, cbid) enabled one by one
  std::vector<std::vector<uint64_t>> pending;    // one record each, 8-byte aligned
  uint32_t next_correlation = 1;
  size_t dropped = 0;
  int finalizes = 0;
  int flushes = 0;
};

// fake_cupti_block_next_subscribe: 1 = the next cuptiSubscribe waits,
// 2 = it is waiting (until fake_cupti_release_subscribe), 0 = never waits.
std::atomic<int> g_subscribe_gate{0};

FakeCupti& fake() {
  static FakeCupti* f = new FakeCupti();
  return *f;
}

CUptiResult failure(const char* function) {
  auto it = fake().failures.find(function);
  return it == fake().failures.end() ? CUPTI_SUCCESS : static_cast<CUptiResult>(it->second);
}

uint64_t now() { return fake().clock != nullptr ? fake().clock() : 1; }

uint32_t gettid_u32() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

template <class Record>
void queue(const Record& r) {
  const size_t size = profkit_test::synthetic_record_size(reinterpret_cast<const CUpti_Activity&>(r).kind);
  std::vector<uint64_t> bytes(size / 8, 0);
  std::memcpy(bytes.data(), &r, sizeof r);
  fake().pending.push_back(std::move(bytes));
}

bool enabled(CUpti_ActivityKind kind) { return fake().kinds.count(kind) != 0; }

// A runtime call around `work`: the API record if RUNTIME is on and the call
// is not switched off, and its correlation id.
template <class Work>
uint32_t runtime_call(uint32_t cbid, Work work) {
  FakeCupti& f = fake();
  const uint32_t correlation = f.next_correlation++;
  const uint64_t start = now();
  work(correlation, start);
  const uint64_t end = now();
  if (enabled(CUPTI_ACTIVITY_KIND_RUNTIME) && f.runtime_disabled.count(cbid) == 0) {
    queue(profkit_test::api_record(cbid, start, end, correlation, gettid_u32()));
  }
  return correlation;
}

// The subscriber's callback at `site` of driver call `cbid`, as CUPTI makes
// it while that call's callback is enabled.
void driver_callback(CUpti_CallbackId cbid, CUpti_ApiCallbackSite site, uint32_t correlation) {
  FakeCupti& f = fake();
  if (!f.subscribed || f.subscriber == nullptr ||
      (f.callbacks.count({CUPTI_CB_DOMAIN_DRIVER_API, cbid}) == 0 &&
       f.domains.count(CUPTI_CB_DOMAIN_DRIVER_API) == 0)) {
    return;
  }
  CUpti_CallbackData data;
  std::memset(&data, 0, sizeof data);
  data.callbackSite = site;
  data.functionName = "cuLaunchKernel";
  data.correlationId = correlation;
  f.subscriber(f.subscriber_data, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &data);
}

// cuLaunchKernel, with its callbacks, under `correlation`.
void driver_launch(uint32_t correlation) {
  driver_callback(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER, correlation);
  driver_callback(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_EXIT, correlation);
}

}  // namespace

// ---- the CUPTI entry points --------------------------------------------------

FAKE_API CUptiResult cuptiGetVersion(uint32_t* version) {
  *version = fake().version;
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiGetResultString(CUptiResult result, const char** str) {
  switch (result) {
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      *str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
      return CUPTI_SUCCESS;
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
      *str = "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES";
      return CUPTI_SUCCESS;
    default:
      *str = "CUPTI_ERROR_UNKNOWN";
      return CUPTI_SUCCESS;
  }
}

FAKE_API CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata) {
  int armed = 1;
  if (g_subscribe_gate.compare_exchange_strong(armed, 2)) {
    while (g_subscribe_gate.load() == 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::lock_guard<std::recursive_mutex> lock(fake().mutex);
  if (CUptiResult r = failure("cuptiSubscribe")) return r;
  if (fake().subscribed) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  fake().subscribed = true;
  fake().subscriber = callback;
  fake().subscriber_data = userdata;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&fake());
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle) {
  std::lock_guard<std::recursive_mutex> lock(fake().mutex);
  fake().subscribed = false;
  fake().subscriber = nullptr;
  fake().domains.clear();
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain) {
  std::lock_guard<std::recursive_mutex> lock(fake().mutex);
  if (enable != 0) {
    fake().domains.insert(domain);
  } else {
    fake().domains.erase(domain);
  }
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  std::lock_guard<std::recursive_mutex> lock(fake().mutex);
  if (CUptiResult r = failure("cuptiActivityEnable")) return r;
  fake().kinds.insert(kind);
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  std::lock_guard<std::recursive_mutex> lock(fake().mutex);
  fake().kinds.erase(kind);
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
  std::lock_guard<std::recursive_mutex> lock(fake().mutex);
  if (enable != 0) {
    fake().runtime_disabled.erase(cbid);
  } else {
    fake().runtime_disabled.insert(cbid);
  }
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
  std::lock_guard<std::recursive_mutex> lock(fake().mutex);
  if (enable != 0) {
    fake().driver_enabled.insert(cbid);
  } else {
    fake().driver_enabled.erase(cbid);
  }
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain,
                                         CUpti_CallbackId cbid) {
  std::lock_guard<std::recursive_mutex> lock(fake().mutex);
  if (CUptiResult r = failure("cuptiEnableCallback")) return r;
  if (enable != 0) {
    fake().callbacks.insert({domain, cbid});
  } else {
    fake().callbacks.erase({domain, cbid});
  }
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                    CUpti_BuffersCallbackCompleteFunc completed) {
  std::lock_guard<std::recursive_mutex> lock(fake().mutex);
  if (CUptiResult r = failure("cuptiActivityRegisterCallbacks")) return r;
  fake().requested = requested;
  fake().completed = completed;
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc clock) {
  std::lock_guard<std::recursive_mutex> lock(fake().mutex);
  fake().clock = clock;
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType type) {
  fake().thread_id_type = type;
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  return profkit_test::synthetic_next_record(buffer, valid, record);
}

FAKE_API CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  std::lock_guard<std::recursive_mutex> lock(fake().mutex);
  *dropped = fake().dropped;
  fake().dropped = 0;
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityFlushAll(uint32_t) {
  std::lock_guard<std::recursive_mutex> lock(fake().mutex);
  FakeCupti& f = fake();
  ++f.flushes;
  if (f.requested == nullptr || f.completed == nullptr) return CUPTI_ERROR_INVALID_OPERATION;
  while (!f.pending.empty()) {
    uint8_t* buffer = nullptr;
    size_t size = 0;
    size_t max_records = 0;
    f.requested(&buffer, &size, &max_records);
    if (buffer == nullptr) {  // no room: CUPTI drops and counts
      f.dropped += f.pending.size();
      f.pending.clear();
      break;
    }
    size_t used = 0;
    size_t taken = 0;
    for (const std::vector<uint64_t>& r : f.pending) {
      const size_t bytes = r.size() * 8;
      if (used + bytes > size) break;
      std::memcpy(buffer + used, r.data(), bytes);
      used += bytes;
      ++taken;
    }
    f.pending.erase(f.pending.begin(), f.pending.begin() + static_cast<std::ptrdiff_t>(taken));
    f.completed(nullptr, 0, buffer, size, used);
    if (taken == 0) break;
  }
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiFinalize(void) {
  std::lock_guard<std::recursive_mutex> lock(fake().mutex);
  FakeCupti& f = fake();
  ++f.finalizes;
  f.subscribed = false;
  f.subscriber = nullptr;
  f.requested = nullptr;
  f.completed = nullptr;
  f.clock = nullptr;
  f.kinds.clear();
  f.domains.clear();
  f.runtime_disabled.clear();
  f.driver_enabled.clear();
  f.callbacks.clear();
  f.pending.clear();
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain, uint32_t, const char**) {
  return CUPTI_ERROR_INVALID_PARAMETER;
}

// ---- test controls -------------------------------------------------------------

// Back to a freshly loaded library.
FAKE_API void fake_cupti_reset(void) {
  std::lock_guard<std::recursive_mutex> lock(fake().mutex);
  FakeCupti& f = fake();
  f.version = CUPTI_API_VERSION;
  f.failures.clear();
  f.requested = nullptr;
  f.completed = nullptr;
  f.clock = nullptr;
  f.subscriber = nullptr;
  f.subscribed = false;
  f.thread_id_type = -1;
  f.kinds.clear();
  f.domains.clear();
  f.runtime_disabled.clear();
  f.driver_enabled.clear();
  f.callbacks.clear();
  f.pending.clear();
  f.dropped = 0;
  f.finalizes = 0;
  f.flushes = 0;
  g_subscribe_gate.store(0);  // a test that failed while holding a subscribe must not hang the next
}

FAKE_API void fake_cupti_fail(const char* function, int result) {
  std::lock_guard<std::recursive_mutex> lock(fake().mutex);
  fake().failures[function] = result;
}

// Makes the next cuptiSubscribe wait (the caller inside the tracer, holding
// its locks) until fake_cupti_release_subscribe.
FAKE_API void fake_cupti_block_next_subscribe(void) { g_subscribe_gate.store(1); }
FAKE_API int fake_cupti_subscribe_waiting(void) { return g_subscribe_gate.load() == 2 ? 1 : 0; }
FAKE_API void fake_cupti_release_subscribe(void) { g_subscribe_gate.store(0); }

FAKE_API void fake_cupti_set_version(uint32_t version) { fake().version = version; }

FAKE_API int fake_cupti_kind_enabled(int kind) {
  std::lock_guard<std::recursive_mutex> lock(fake().mutex);
  return enabled(static_cast<CUpti_ActivityKind>(kind)) ? 1 : 0;
}

FAKE_API int fake_cupti_subscribed(void) { return fake().subscribed ? 1 : 0; }
FAKE_API int fake_cupti_finalizes(void) { return fake().finalizes; }
FAKE_API int fake_cupti_flushes(void) { return fake().flushes; }
FAKE_API int fake_cupti_thread_id_type(void) { return fake().thread_id_type; }
FAKE_API int fake_cupti_has_clock(void) { return fake().clock != nullptr ? 1 : 0; }
FAKE_API int fake_cupti_domain_enabled(int domain) { return fake().domains.count(domain) != 0 ? 1 : 0; }
FAKE_API int fake_cupti_runtime_cbid_disabled(uint32_t cbid) { return fake().runtime_disabled.count(cbid) ? 1 : 0; }
FAKE_API int fake_cupti_driver_cbid_enabled(uint32_t cbid) { return fake().driver_enabled.count(cbid) ? 1 : 0; }
FAKE_API int fake_cupti_driver_callback_enabled(uint32_t cbid) {
  std::lock_guard<std::recursive_mutex> lock(fake().mutex);
  return fake().callbacks.count({CUPTI_CB_DOMAIN_DRIVER_API, cbid}) != 0 ? 1 : 0;
}
FAKE_API size_t fake_cupti_pending(void) { return fake().pending.size(); }
FAKE_API void fake_cupti_add_dropped(size_t n) { fake().dropped += n; }

// cudaLaunchKernel (cbid 211): a runtime record, and a kernel record that
// starts `gpu_delay_ns` after the call returns and runs `gpu_ns`.
FAKE_API uint32_t fake_cupti_launch_kernel(const char* mangled_name, uint32_t stream, int32_t grid_x, int32_t block_x,
                                           uint16_t registers, int32_t static_smem, int32_t dynamic_smem,
                                           uint64_t gpu_delay_ns, uint64_t gpu_ns) {
  std::lock_guard<std::recursive_mutex> lock(fake().mutex);
  uint64_t call_end = 0;
  // As CUDA 13's runtime does: cudaLaunchKernel launches through
  // cuLaunchKernel, whose callbacks carry the runtime call's correlation id.
  const uint32_t correlation = runtime_call(211, [&](uint32_t c, uint64_t) { driver_launch(c); });
  call_end = now();
  if (enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) {
    profkit_test::KernelRecord k = profkit_test::kernel_record(mangled_name, call_end + gpu_delay_ns,
                                                               call_end + gpu_delay_ns + gpu_ns, correlation, stream);
    k.gridX = grid_x;
    k.blockX = block_x;
    k.registersPerThread = registers;
    k.staticSharedMemory = static_smem;
    k.dynamicSharedMemory = dynamic_smem;
    queue(k);
  }
  return correlation;
}

// cudaMemcpyAsync (cbid 41).
FAKE_API uint32_t fake_cupti_memcpy(uint8_t copy_kind, uint64_t bytes, uint32_t stream, uint64_t gpu_ns) {
  std::lock_guard<std::recursive_mutex> lock(fake().mutex);
  const uint32_t correlation = runtime_call(41, [&](uint32_t, uint64_t) {});
  const uint64_t start = now();
  if (enabled(CUPTI_ACTIVITY_KIND_MEMCPY)) {
    profkit_test::MemcpyRecord m =
        profkit_test::memcpy_record(copy_kind, bytes, start, start + gpu_ns, correlation, stream);
    m.runtimeCorrelationId = correlation;
    m.correlationId = correlation + 1000000;  // the driver call inside, never traced
    queue(m);
  }
  return correlation;
}

// cudaMemsetAsync (cbid 51).
FAKE_API uint32_t fake_cupti_memset(uint64_t bytes, uint32_t value, uint32_t stream, uint64_t gpu_ns) {
  std::lock_guard<std::recursive_mutex> lock(fake().mutex);
  const uint32_t correlation = runtime_call(51, [&](uint32_t, uint64_t) {});
  const uint64_t start = now();
  if (enabled(CUPTI_ACTIVITY_KIND_MEMSET)) {
    queue(profkit_test::memset_record(bytes, value, start, start + gpu_ns, correlation, stream));
  }
  return correlation;
}

// A kernel launched through the driver API itself (cuBLAS's cuLaunchKernel,
// Triton's): no runtime call, no activity record unless the DRIVER kind is
// on; the launch callbacks, when enabled. Returns its correlation id.
FAKE_API uint32_t fake_cupti_driver_launch_kernel(const char* mangled_name, uint32_t stream, uint64_t gpu_ns) {
  std::lock_guard<std::recursive_mutex> lock(fake().mutex);
  FakeCupti& f = fake();
  const uint32_t correlation = f.next_correlation++;
  const uint64_t start = now();
  driver_launch(correlation);
  const uint64_t end = now();
  if (enabled(CUPTI_ACTIVITY_KIND_DRIVER)) {
    queue(profkit_test::api_record(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, start, end, correlation, gettid_u32(),
                                   /*driver=*/true));
  }
  if (enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) {
    queue(profkit_test::kernel_record(mangled_name, end + 100, end + 100 + gpu_ns, correlation, stream));
  }
  return correlation;
}

// One end of a cuLaunchKernel call (`enter` or its exit) under
// `correlation`, with its callback as CUPTI makes it: for a launch whose
// ends fall on either side of a change in what is enabled.
FAKE_API void fake_cupti_driver_launch_site(int enter, uint32_t correlation) {
  std::lock_guard<std::recursive_mutex> lock(fake().mutex);
  driver_callback(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, enter != 0 ? CUPTI_API_ENTER : CUPTI_API_EXIT, correlation);
}

// The kernel record of such a launch, `gpu_ns` long from now.
FAKE_API void fake_cupti_queue_kernel(const char* mangled_name, uint32_t correlation, uint32_t stream,
                                      uint64_t gpu_ns) {
  std::lock_guard<std::recursive_mutex> lock(fake().mutex);
  const uint64_t start = now();
  if (enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) {
    queue(profkit_test::kernel_record(mangled_name, start, start + gpu_ns, correlation, stream));
  }
}

// A kernel whose launch was never traced (its call happened before tracing).
FAKE_API void fake_cupti_kernel_without_launch(const char* name, uint32_t stream, uint64_t gpu_ns) {
  std::lock_guard<std::recursive_mutex> lock(fake().mutex);
  const uint32_t correlation = fake().next_correlation++;
  const uint64_t start = now();
  if (enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) {
    queue(profkit_test::kernel_record(name, start, start + gpu_ns, correlation, stream));
  }
}

namespace {
// The exit callback of a call in `domain`, as CUPTI makes it to the
// subscriber while that domain is enabled.
void call_back_at_exit(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const char* function) {
  std::lock_guard<std::recursive_mutex> lock(fake().mutex);
  FakeCupti& f = fake();
  if (!f.subscribed || f.subscriber == nullptr || f.domains.count(domain) == 0) return;
  CUpti_CallbackData data;
  std::memset(&data, 0, sizeof data);
  data.callbackSite = CUPTI_API_EXIT;
  data.functionName = function;
  f.subscriber(f.subscriber_data, domain, cbid, &data);
}
}  // namespace

// The exit of a driver call (the fake libcuda's hook calls it).
FAKE_API void fake_cupti_driver_api_exit(unsigned int cbid) {
  call_back_at_exit(CUPTI_CB_DOMAIN_DRIVER_API, cbid, "cuDriverGetVersion");
}

// The exit of some CUDA call, as seen by a callback subscriber.
FAKE_API void fake_cupti_api_exit(void) { call_back_at_exit(CUPTI_CB_DOMAIN_RUNTIME_API, 211, "cudaLaunchKernel"); }
