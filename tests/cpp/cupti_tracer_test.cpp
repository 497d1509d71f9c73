// The CUPTI tracer end to end, without a GPU: the real tracer, Recorder and C
// ABI on a fake libcupti and a fake libcuda (tests/cpp/fakes/) that behave
// like the real ones where the tracer depends on them. Checks the life of a
// trace: attach on enable, activities at READY, warm-up discarded, flush when
// recording stops, detach after CLOSED, re-attach, failures that switch GPU
// tracing off without touching CPU recording, dropped records counted.
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "cupti/availability.h"
#include "cupti/cupti_tracer.h"
#include "profkit/profkit.h"
#include "test_support.h"

namespace {

using profkit::cupti::CuptiTracer;
using profkit::cupti::GpuSupport;
using profkit_test::answer_of_child;
using profkit_test::collect;
using profkit_test::reset_engine;
using profkit_test::ResultPtr;

void* fake_cupti_handle() {
  static void* h = dlopen(FAKE_CUPTI_PATH, RTLD_NOW | RTLD_LOCAL);
  return h;
}

template <class Fn>
Fn fake(const char* name) {
  auto fn = reinterpret_cast<Fn>(dlsym(fake_cupti_handle(), name));
  EXPECT_NE(fn, nullptr) << name;
  return fn;
}

const GpuSupport& fake_support() {
  static const GpuSupport* support = [] {
    profkit::cupti::ProbeInputs in;
    in.file_exists = [](const char*) { return true; };
    in.open_driver = [](std::string*) {
      profkit::cupti::OpenedLibrary lib;
      lib.handle = dlopen(FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
      lib.path = FAKE_CUDA_PATH;
      return lib;
    };
    in.open_cupti = [](const profkit::cupti::SearchEnvironment&, int, std::string*) {
      profkit::cupti::OpenedLibrary lib;
      lib.handle = fake_cupti_handle();
      lib.path = FAKE_CUPTI_PATH;
      return lib;
    };
    in.compiled_cupti_version = CUPTI_API_VERSION;
    return new GpuSupport(profkit::cupti::probe_gpu_support(in));
  }();
  return *support;
}

// The fake's controls.
struct Fake {
  void (*reset)() = fake<void (*)()>("fake_cupti_reset");
  void (*fail)(const char*, int) = fake<void (*)(const char*, int)>("fake_cupti_fail");
  int (*kind_enabled)(int) = fake<int (*)(int)>("fake_cupti_kind_enabled");
  int (*subscribed)() = fake<int (*)()>("fake_cupti_subscribed");
  int (*finalizes)() = fake<int (*)()>("fake_cupti_finalizes");
  int (*flushes)() = fake<int (*)()>("fake_cupti_flushes");
  int (*thread_id_type)() = fake<int (*)()>("fake_cupti_thread_id_type");
  int (*has_clock)() = fake<int (*)()>("fake_cupti_has_clock");
  int (*domain_enabled)(int) = fake<int (*)(int)>("fake_cupti_domain_enabled");
  int (*runtime_cbid_disabled)(uint32_t) = fake<int (*)(uint32_t)>("fake_cupti_runtime_cbid_disabled");
  int (*driver_cbid_enabled)(uint32_t) = fake<int (*)(uint32_t)>("fake_cupti_driver_cbid_enabled");
  int (*driver_callback_enabled)(uint32_t) = fake<int (*)(uint32_t)>("fake_cupti_driver_callback_enabled");
  uint32_t (*driver_launch_kernel)(const char*, uint32_t, uint64_t) =
      fake<uint32_t (*)(const char*, uint32_t, uint64_t)>("fake_cupti_driver_launch_kernel");
  void (*driver_launch_site)(int, uint32_t) = fake<void (*)(int, uint32_t)>("fake_cupti_driver_launch_site");
  void (*queue_kernel)(const char*, uint32_t, uint32_t,
                       uint64_t) = fake<void (*)(const char*, uint32_t, uint32_t, uint64_t)>("fake_cupti_queue_kernel");
  size_t (*pending)() = fake<size_t (*)()>("fake_cupti_pending");
  void (*add_dropped)(size_t) = fake<void (*)(size_t)>("fake_cupti_add_dropped");
  uint32_t (*launch_kernel)(const char*, uint32_t, int32_t, int32_t, uint16_t, int32_t, int32_t, uint64_t, uint64_t) =
      fake<uint32_t (*)(const char*, uint32_t, int32_t, int32_t, uint16_t, int32_t, int32_t, uint64_t, uint64_t)>(
          "fake_cupti_launch_kernel");
  uint32_t (*memcpy)(uint8_t, uint64_t, uint32_t,
                     uint64_t) = fake<uint32_t (*)(uint8_t, uint64_t, uint32_t, uint64_t)>("fake_cupti_memcpy");
  uint32_t (*memset)(uint64_t, uint32_t, uint32_t,
                     uint64_t) = fake<uint32_t (*)(uint64_t, uint32_t, uint32_t, uint64_t)>("fake_cupti_memset");
  void (*kernel_without_launch)(const char*, uint32_t, uint64_t) =
      fake<void (*)(const char*, uint32_t, uint64_t)>("fake_cupti_kernel_without_launch");
  void (*api_exit)() = fake<void (*)()>("fake_cupti_api_exit");
  void (*block_next_subscribe)() = fake<void (*)()>("fake_cupti_block_next_subscribe");
  int (*subscribe_waiting)() = fake<int (*)()>("fake_cupti_subscribe_waiting");
  void (*release_subscribe)() = fake<void (*)()>("fake_cupti_release_subscribe");

  uint32_t launch(const char* name, uint32_t stream = 7) {
    return launch_kernel(name, stream, 264, 256, 32, 0, 0, 500, 3000);
  }
};

class Tracer : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(fake_cupti_handle(), nullptr) << dlerror();
    ASSERT_TRUE(fake_support().available) << fake_support().reason;
    f.reset();
    reset_engine();
    tracer = std::make_unique<CuptiTracer>(fake_support());
  }
  void TearDown() override {
    reset_engine();
    tracer.reset();
    f.reset();
  }
  Fake f;
  std::unique_ptr<CuptiTracer> tracer;
};

struct View {
  ResultPtr r;
  const pk_host_event* host = nullptr;
  size_t host_count = 0;
  const pk_device_event* device = nullptr;
  size_t device_count = 0;
  explicit View(ResultPtr result) : r(std::move(result)) {
    host = pk_result_host_events(r.get(), &host_count);
    device = pk_result_device_events(r.get(), &device_count);
  }
  std::string name(uint32_t id) const { return pk_result_string(r.get(), id); }
  const pk_device_event* by_correlation(uint32_t c) const {
    for (size_t i = 0; i < device_count; ++i) {
      if (device[i].correlation_id == c) return &device[i];
    }
    return nullptr;
  }
  std::string parent_name(uint64_t event) const {
    const uint64_t p = pk_result_parent(r.get(), event);
    return p == UINT64_MAX ? "" : name(host[p].name);
  }
  pk_result_info info() const {
    pk_result_info i{};
    i.struct_size = sizeof i;
    pk_result_get_info(r.get(), &i);
    return i;
  }
  std::string metadata(const std::string& key) const {
    for (size_t i = 0; i < pk_result_metadata_count(r.get()); ++i) {
      const char* k = nullptr;
      const char* v = nullptr;
      pk_result_metadata(r.get(), i, &k, &v);
      if (key == k) return v;
    }
    return "";
  }
  size_t runtime_calls() const {
    size_t n = 0;
    for (size_t i = 0; i < host_count; ++i) n += host[i].type == PK_EVENT_CUDA_RUNTIME ? 1 : 0;
    return n;
  }
};

constexpr int kConcurrentKernel = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;

TEST_F(Tracer, EnablingAttachesAndReadyEnablesTheActivityKinds) {
  tracer->set_enabled(true);
  EXPECT_TRUE(tracer->enabled());
  EXPECT_EQ(f.subscribed(), 1);
  EXPECT_EQ(f.has_clock(), 1);
  EXPECT_EQ(f.thread_id_type(), CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  EXPECT_EQ(f.kind_enabled(kConcurrentKernel), 0);  // CLOSED: nothing traced yet

  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  EXPECT_EQ(f.kind_enabled(kConcurrentKernel), 1);
  EXPECT_EQ(f.kind_enabled(CUPTI_ACTIVITY_KIND_KERNEL), 0);  // it would serialize kernels
  EXPECT_EQ(f.kind_enabled(CUPTI_ACTIVITY_KIND_MEMCPY), 1);
  EXPECT_EQ(f.kind_enabled(CUPTI_ACTIVITY_KIND_MEMSET), 1);
  EXPECT_EQ(f.kind_enabled(CUPTI_ACTIVITY_KIND_RUNTIME), 1);
  EXPECT_EQ(f.runtime_cbid_disabled(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020), 1);
  EXPECT_EQ(f.runtime_cbid_disabled(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000), 0);
  EXPECT_EQ(f.driver_callback_enabled(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel), 1);
  EXPECT_EQ(f.driver_callback_enabled(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx), 1);
  EXPECT_EQ(f.driver_cbid_enabled(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel), 0);  // no DRIVER records asked for

  std::string reason;
  EXPECT_TRUE(tracer->available(&reason)) << reason;
}

TEST_F(Tracer, KernelsCopiesAndSetsLandOnTheirStreamsTiedToTheirHostEvents) {
  tracer->set_enabled(true);
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  f.launch("_Z6warmupv");  // READY: CUPTI warms up, nothing is kept
  // (A kernel launched before recording but running inside it would be kept,
  // unattached; this one finishes well before.)
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event_str("outer", PK_EVENT_USER_DEFINED);
  pk_begin_event_str("aten::add", PK_EVENT_OPERATOR);
  const uint32_t kernel = f.launch("_Z6vecAddPfS_i", 7);
  pk_end_event();
  pk_begin_event_str("aten::copy_", PK_EVENT_OPERATOR);
  const uint32_t copy = f.memcpy(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1 << 20, 13, 2000);
  const uint32_t set = f.memset(4096, 0, 13, 500);
  pk_end_event();
  pk_end_event();
  f.kernel_without_launch("_Z6orphanv", 21, 100);
  const int flushes_before_stop = f.flushes();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);

  // Stopping flushed, switched every kind off and asked to detach at the
  // next CUDA call's exit.
  EXPECT_GT(f.flushes(), flushes_before_stop);
  EXPECT_EQ(f.kind_enabled(kConcurrentKernel), 0);
  EXPECT_EQ(f.kind_enabled(CUPTI_ACTIVITY_KIND_RUNTIME), 0);
  EXPECT_EQ(f.domain_enabled(CUPTI_CB_DOMAIN_RUNTIME_API), 1);
  EXPECT_TRUE(tracer->stats().detach_pending);
  f.api_exit();
  EXPECT_EQ(f.finalizes(), 1);
  EXPECT_EQ(f.subscribed(), 0);
  EXPECT_FALSE(tracer->stats().attached);
  f.launch("_Z5afterv");  // after profiling: CUPTI is gone, nothing recorded
  EXPECT_EQ(f.pending(), 0u);

  View v(collect());
  ASSERT_EQ(v.device_count, 4u);
  EXPECT_EQ(v.runtime_calls(), 3u);
  for (size_t i = 0; i < v.device_count; ++i) {
    EXPECT_NE(v.name(v.device[i].name), "warmup()");
    EXPECT_NE(v.name(v.device[i].name), "after()");
  }

  const pk_device_event* k = v.by_correlation(kernel);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->type, PK_EVENT_KERNEL);
  EXPECT_EQ(v.name(k->name), "vecAdd(float*, float*, int)");
  EXPECT_EQ(k->stream, 7u);
  ASSERT_NE(k->launch_event, PK_NO_EVENT);
  EXPECT_EQ(v.name(v.host[k->launch_event].name), "cudaLaunchKernel");
  EXPECT_EQ(v.host[k->launch_event].type, PK_EVENT_CUDA_RUNTIME);
  EXPECT_EQ(v.parent_name(k->launch_event), "aten::add");
  EXPECT_GE(k->start_ns, v.host[k->launch_event].start_ns);

  const pk_device_event* c = v.by_correlation(copy);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->type, PK_EVENT_MEMCPY);
  EXPECT_EQ(c->stream, 13u);
  EXPECT_EQ(v.name(c->name), "Memcpy HtoD");
  EXPECT_EQ(v.name(v.host[c->launch_event].name), "cudaMemcpyAsync");
  EXPECT_EQ(v.parent_name(c->launch_event), "aten::copy_");
  size_t n = 0;
  const pk_memory_op_detail* ops = pk_result_memory_op_details(v.r.get(), &n);
  ASSERT_LT(c->detail, n);
  EXPECT_EQ(ops[c->detail].bytes, 1u << 20);

  const pk_device_event* s = v.by_correlation(set);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->type, PK_EVENT_MEMSET);
  EXPECT_EQ(v.name(v.host[s->launch_event].name), "cudaMemsetAsync");
  EXPECT_EQ(v.parent_name(s->launch_event), "aten::copy_");
  EXPECT_EQ(ops[s->detail].bytes, 4096u);

  const pk_result_info info = v.info();
  EXPECT_EQ(info.unattached_device_records, 1u);  // the orphan, kept on its lane
  EXPECT_EQ(info.dropped_device_records, 0u);
  for (size_t i = 0; i < v.device_count; ++i) {
    EXPECT_GE(v.device[i].start_ns, info.start_ns);  // the engine's clock
    EXPECT_LE(v.device[i].start_ns, v.device[i].end_ns);
    if (v.device[i].launch_event == PK_NO_EVENT) {
      EXPECT_EQ(v.device[i].stream, 21u);
    }
  }

  // Device facts and occupancy from the (fake) driver.
  ASSERT_EQ(pk_result_device_count(v.r.get()), 1u);
  pk_device_info d{};
  d.struct_size = sizeof d;
  ASSERT_EQ(pk_result_get_device(v.r.get(), 0, &d), PK_OK);
  EXPECT_STREQ(d.name, "Fake H100");
  EXPECT_EQ(d.sm_count, 132);
  EXPECT_EQ(d.compute_major, 9);
  EXPECT_EQ(d.total_memory, uint64_t{80} << 30);
  const pk_kernel_detail* kernels = pk_result_kernel_details(v.r.get(), &n);
  ASSERT_LT(k->detail, n);
  EXPECT_FLOAT_EQ(kernels[k->detail].blocks_per_sm, 2.0f);  // 264 blocks on 132 SMs
  EXPECT_FLOAT_EQ(kernels[k->detail].occupancy, 1.0f);      // 256 threads x 32 registers
  EXPECT_NE(v.metadata("gpu_tracing").find("CUPTI"), std::string::npos);

  // Profiling is over: the activity buffers went back.
  EXPECT_EQ(tracer->stats().buffers_allocated, 0u);
}

TEST_F(Tracer, DroppedRecordsAreCountedIntoTheResult) {
  tracer->set_enabled(true);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  f.launch("_Z1kv");
  f.add_dropped(5);  // CUPTI lost five records for lack of buffer space
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  View v(collect());
  EXPECT_EQ(v.info().dropped_device_records, 5u);
  EXPECT_EQ(v.device_count, 1u);
}

// The process tracer is made at the first GPU call, which in Python comes
// before Profiler(memory_cap=...) sets the cap: the cap a window records
// under must be the one set when it opens, not the one at construction.
TEST_F(Tracer, TheGpuRecordCapFollowsTheMemoryCapSetAfterConstruction) {
  struct RestoreCap {
    uint64_t cap = pk_get_memory_cap();
    ~RestoreCap() { pk_set_memory_cap(cap); }
  } restore;
  constexpr uint64_t kCap = 512 * 1024;
  constexpr uint64_t kRoom = kCap / sizeof(pk_device_event);  // records the store may hold
  constexpr uint64_t kLaunches = kRoom / 2 + 100;             // a runtime call and a kernel each
  ASSERT_EQ(pk_set_memory_cap(kCap), PK_OK);                  // lowered after the tracer was made
  tracer->set_enabled(true);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  for (uint64_t i = 0; i < kLaunches; ++i) f.launch("_Z1kv");
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  View capped(collect());
  EXPECT_EQ(capped.info().dropped_device_records, 2 * kLaunches - kRoom);
  EXPECT_EQ(capped.device_count + capped.runtime_calls(), kRoom);

  ASSERT_EQ(pk_set_memory_cap(uint64_t{1} << 30), PK_OK);  // raised: the next window has room
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  for (uint64_t i = 0; i < kLaunches; ++i) f.launch("_Z1kv");
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  View roomy(collect());
  EXPECT_EQ(roomy.info().dropped_device_records, 0u);
  EXPECT_EQ(roomy.device_count, kLaunches);
}

TEST_F(Tracer, AnotherSubscriberMakesGpuTracingUnavailableWithTheReason) {
  f.fail("cuptiSubscribe", CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  try {
    tracer->set_enabled(true);
    FAIL() << "enabling should fail";
  } catch (const profkit::Error& e) {
    EXPECT_EQ(e.status(), PK_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(e.what()).find("another CUPTI subscriber"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("profiling the CPU only"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(tracer->enabled());
  std::string reason;
  EXPECT_FALSE(tracer->available(&reason));
  EXPECT_NE(reason.find("Nsight"), std::string::npos) << reason;

  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event_str("cpu", PK_EVENT_USER_DEFINED);
  pk_end_event();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  View v(collect());
  EXPECT_EQ(v.host_count, 1u);
  EXPECT_EQ(v.device_count, 0u);
  EXPECT_EQ(v.metadata("gpu_tracing_error"), "");  // the caller was told already

  // Once the other profiler is gone, asking again works.
  f.fail("cuptiSubscribe", CUPTI_SUCCESS);
  tracer->set_enabled(true);
  EXPECT_TRUE(tracer->available(&reason)) << reason;
}

TEST_F(Tracer, AFailuresReasonTextStaysValidAfterTheFailureIsGone) {
  // pk_gpu_available hands out the text as static storage: asked on a thread
  // that then exits, and kept after the failure has been replaced.
  f.fail("cuptiSubscribe", CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  EXPECT_THROW(tracer->set_enabled(true), profkit::Error);
  const char* failure = nullptr;
  std::thread([&] { EXPECT_FALSE(tracer->available(&failure)); }).join();
  ASSERT_NE(failure, nullptr);
  const std::string copy = failure;
  EXPECT_NE(copy.find("Nsight"), std::string::npos) << copy;
  const char* again = nullptr;
  EXPECT_FALSE(tracer->available(&again));
  EXPECT_EQ(again, failure);  // the same text is kept once

  f.fail("cuptiSubscribe", CUPTI_SUCCESS);
  tracer->set_enabled(true);  // the failure is gone ...
  const char* now = nullptr;
  EXPECT_TRUE(tracer->available(&now)) << now;
  EXPECT_EQ(std::string(failure), copy);  // ... and its text is still there
}

TEST_F(Tracer, AFailureWhileArmingSwitchesGpuTracingOffButNotTheCpu) {
  tracer->set_enabled(true);  // attaching works
  f.fail("cuptiActivityEnable", CUPTI_ERROR_INSUFFICIENT_PRIVILEGES);
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);  // the state change itself succeeds
  EXPECT_FALSE(tracer->enabled());
  std::string reason;
  EXPECT_FALSE(tracer->available(&reason));
  EXPECT_NE(reason.find("insufficient privileges"), std::string::npos) << reason;

  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event_str("cpu", PK_EVENT_USER_DEFINED);
  f.launch("_Z1kv");
  pk_end_event();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  View v(collect());
  EXPECT_EQ(v.host_count, 1u);
  EXPECT_EQ(v.device_count, 0u);
  EXPECT_NE(v.metadata("gpu_tracing_error").find("insufficient privileges"), std::string::npos);
  View again(collect());
  EXPECT_EQ(again.metadata("gpu_tracing_error"), "");  // said once
}

TEST_F(Tracer, ACollectWhileRecordingSplitsTheTraceWithoutLosingOrRepeating) {
  tracer->set_enabled(true);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  const uint32_t first = f.launch("_Z5firstv");
  View one(collect());
  const uint32_t second = f.launch("_Z6secondv");
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  View two(collect());
  ASSERT_EQ(one.device_count, 1u);
  EXPECT_EQ(one.device[0].correlation_id, first);
  EXPECT_NE(one.device[0].launch_event, PK_NO_EVENT);
  ASSERT_EQ(two.device_count, 1u);
  EXPECT_EQ(two.device[0].correlation_id, second);
  EXPECT_NE(two.device[0].launch_event, PK_NO_EVENT);
  EXPECT_EQ(one.runtime_calls(), 1u);
  EXPECT_EQ(two.runtime_calls(), 1u);
}

TEST_F(Tracer, ReadyWithoutRecordKeepsNothing) {
  tracer->set_enabled(true);
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  f.launch("_Z1kv");
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  View v(collect());
  EXPECT_EQ(v.device_count, 0u);
  EXPECT_EQ(v.runtime_calls(), 0u);
  EXPECT_EQ(v.metadata("gpu_tracing"), "");
  EXPECT_EQ(pk_result_device_count(v.r.get()), 0u);
}

TEST_F(Tracer, TurningItOffKeepsWhatWasRecordedAndTracesNothingMore) {
  tracer->set_enabled(true);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  f.launch("_Z1kv");
  tracer->set_enabled(false);
  EXPECT_EQ(f.kind_enabled(kConcurrentKernel), 0);
  f.launch("_Z1kv");
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  View v(collect());
  EXPECT_EQ(v.device_count, 1u);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  f.launch("_Z1kv");
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  View later(collect());
  EXPECT_EQ(later.device_count, 0u);
}

TEST_F(Tracer, ASecondSessionAttachesAgainAfterDetaching) {
  tracer->set_enabled(true);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  f.launch("_Z1av");
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  f.api_exit();
  ASSERT_EQ(f.finalizes(), 1);
  View one(collect());
  EXPECT_EQ(one.device_count, 1u);

  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  EXPECT_EQ(f.subscribed(), 1);
  EXPECT_EQ(f.has_clock(), 1);
  EXPECT_EQ(f.kind_enabled(kConcurrentKernel), 1);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  f.launch("_Z1bv");
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  View two(collect());
  ASSERT_EQ(two.device_count, 1u);
  EXPECT_EQ(two.name(two.device[0].name), "b()");
}

TEST_F(Tracer, ReArmingBeforeTheDetachHappensCancelsIt) {
  tracer->set_enabled(true);
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ASSERT_TRUE(tracer->stats().detach_pending);
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  EXPECT_FALSE(tracer->stats().detach_pending);
  EXPECT_EQ(f.domain_enabled(CUPTI_CB_DOMAIN_RUNTIME_API), 0);
  f.api_exit();
  EXPECT_EQ(f.finalizes(), 0);
  EXPECT_EQ(f.kind_enabled(kConcurrentKernel), 1);
}

TEST_F(Tracer, EveryDriverCallIsRecordedOnlyWhenAskedFor) {
  // By default callbacks on the launch calls alone (cheaper);
  // PROFKIT_CUPTI_DRIVER=all turns CUPTI's DRIVER kind on instead, and "0"
  // asks for neither.
  tracer->set_enabled(true);
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  EXPECT_EQ(f.kind_enabled(CUPTI_ACTIVITY_KIND_DRIVER), 0);
  EXPECT_EQ(f.driver_callback_enabled(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel), 1);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  EXPECT_EQ(f.driver_callback_enabled(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel), 0);  // off with the kinds

  setenv("PROFKIT_CUPTI_DRIVER", "all", 1);
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  unsetenv("PROFKIT_CUPTI_DRIVER");
  EXPECT_EQ(f.kind_enabled(CUPTI_ACTIVITY_KIND_DRIVER), 1);
  EXPECT_EQ(f.driver_callback_enabled(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel), 0);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  EXPECT_EQ(f.kind_enabled(CUPTI_ACTIVITY_KIND_DRIVER), 0);  // switched off with the others

  setenv("PROFKIT_CUPTI_DRIVER", "0", 1);
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  unsetenv("PROFKIT_CUPTI_DRIVER");
  EXPECT_EQ(f.kind_enabled(CUPTI_ACTIVITY_KIND_DRIVER), 0);
  EXPECT_EQ(f.driver_callback_enabled(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel), 0);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
}

// cuBLAS and Triton launch with cuLaunchKernel, which CUPTI's runtime
// records never see: the launch callback ties those kernels to their call
// and operator, once each; the runtime's own launches (which go through
// cuLaunchKernel too, under the runtime call's correlation id) stay single.
TEST_F(Tracer, KernelsLaunchedThroughTheDriverApiAreTiedByTheLaunchCallback) {
  tracer->set_enabled(true);
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  f.driver_launch_kernel("_Z6warmupv", 7, 100);  // READY: not kept
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event_str("aten::mm", PK_EVENT_OPERATOR);
  const uint32_t gemm = f.driver_launch_kernel("_Z11cublas_gemmv", 7, 1000);
  const uint32_t add = f.launch("_Z6vecAddPfS_i", 7);
  pk_end_event();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);

  View v(collect());
  ASSERT_EQ(v.device_count, 2u);
  EXPECT_EQ(v.runtime_calls(), 2u);  // cuLaunchKernel and cudaLaunchKernel, no inner half twice
  EXPECT_EQ(v.info().unattached_device_records, 0u);
  const pk_device_event* k = v.by_correlation(gemm);
  ASSERT_NE(k, nullptr);
  ASSERT_NE(k->launch_event, PK_NO_EVENT);
  EXPECT_EQ(v.name(v.host[k->launch_event].name), "cuLaunchKernel");
  EXPECT_EQ(v.parent_name(k->launch_event), "aten::mm");
  EXPECT_LE(v.host[k->launch_event].start_ns, v.host[k->launch_event].end_ns);
  const pk_device_event* a = v.by_correlation(add);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(a->launch_event, PK_NO_EVENT);
  EXPECT_EQ(v.name(v.host[a->launch_event].name), "cudaLaunchKernel");
}

// A launch whose enter came while an earlier window's callbacks were on and
// whose thread's next seen exit comes in a later window must not take that
// old start: a launch call spanning the gap, under the wrong operator.
TEST_F(Tracer, ALaunchExitSeenWithoutItsEnterIsNotGivenAnEarlierStart) {
  tracer->set_enabled(true);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event_str("first_op", PK_EVENT_OPERATOR);
  f.driver_launch_site(1, 900001);  // enter seen
  pk_end_event();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  f.driver_launch_site(0, 900001);  // its exit: callbacks off (and CUPTI detaches there)
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  f.driver_launch_site(1, 900002);  // not seen: nobody subscribed
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event_str("second_op", PK_EVENT_OPERATOR);
  f.driver_launch_site(0, 900002);  // seen, without its enter
  f.queue_kernel("_Z4gemmv", 900002, 7, 100);
  pk_end_event();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  View v(collect());
  for (size_t i = 0; i < v.host_count; ++i) {
    if (v.host[i].type != PK_EVENT_CUDA_RUNTIME) continue;
    EXPECT_LT(v.host[i].end_ns - v.host[i].start_ns, 10'000'000u)
        << v.name(v.host[i].name) << " under " << v.parent_name(i);
  }
  EXPECT_EQ(v.runtime_calls(), 0u);  // its start is unknown: left out, the kernel counted unattached
  EXPECT_EQ(v.info().unattached_device_records, 1u);
}

TEST_F(Tracer, WithoutDriverCallsTheDriversLaunchesStayUnattached) {
  setenv("PROFKIT_CUPTI_DRIVER", "0", 1);
  tracer->set_enabled(true);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  unsetenv("PROFKIT_CUPTI_DRIVER");
  f.driver_launch_kernel("_Z11cublas_gemmv", 7, 1000);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  View v(collect());
  ASSERT_EQ(v.device_count, 1u);
  EXPECT_EQ(v.device[0].launch_event, PK_NO_EVENT);
  EXPECT_EQ(v.info().unattached_device_records, 1u);
  EXPECT_EQ(v.runtime_calls(), 0u);
}

// Launch callbacks come on the launching threads while collects flush and
// take the store (TSan runs this); each kernel lands in one Result, tied.
TEST_F(Tracer, DriverLaunchesFromManyThreadsAreEachTiedOnce) {
  tracer->set_enabled(true);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  constexpr size_t kThreads = 4;
  constexpr size_t kLaunches = 200;
  std::vector<std::thread> threads;
  for (size_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([this] {
      for (size_t i = 0; i < kLaunches; ++i) {
        if (i % 2 == 0) {
          f.driver_launch_kernel("_Z4gemmv", 7, 10);
        } else {
          f.launch("_Z3addv");
        }
      }
    });
  }
  size_t kernels = 0;
  size_t calls = 0;
  auto count = [&](const View& v) {
    kernels += v.device_count;
    calls += v.runtime_calls();
    EXPECT_EQ(v.info().unattached_device_records, 0u);
    for (size_t i = 0; i < v.device_count; ++i) EXPECT_NE(v.device[i].launch_event, PK_NO_EVENT);
  };
  for (int i = 0; i < 5; ++i) count(View(collect()));  // while the threads launch
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  count(View(collect()));
  EXPECT_EQ(kernels, kThreads * kLaunches);
  EXPECT_EQ(calls, kThreads * kLaunches);
}

TEST_F(Tracer, FinalizeCanBeSwitchedOff) {
  setenv("PROFKIT_CUPTI_FINALIZE", "0", 1);
  tracer->set_enabled(true);
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  unsetenv("PROFKIT_CUPTI_FINALIZE");
  EXPECT_FALSE(tracer->stats().detach_pending);
  EXPECT_EQ(f.kind_enabled(kConcurrentKernel), 0);  // disabled all the same
  f.api_exit();
  EXPECT_EQ(f.finalizes(), 0);
}

// The fake libcuda, told to call back at each call's exit like a real one
// with CUPTI attached; off again at the end of the scope.
struct DriverCallsBack {
  using Hook = void (*)(unsigned int);
  void (*set_hook)(Hook) = nullptr;
  DriverCallsBack() {
    set_hook =
        reinterpret_cast<void (*)(Hook)>(dlsym(fake_support().driver_library.handle, "fake_cuda_set_api_exit_hook"));
    EXPECT_NE(set_hook, nullptr);
    if (set_hook != nullptr) set_hook(fake<Hook>("fake_cupti_driver_api_exit"));
  }
  ~DriverCallsBack() {
    if (set_hook != nullptr) set_hook(nullptr);
  }
};

TEST_F(Tracer, StoppingDetachesAtOnceSoAnotherProfilerCanSubscribe) {
  // torch.profiler started right after profkit stopped, before the program's
  // next CUDA call, found profkit still subscribed and traced no GPU at all.
  DriverCallsBack driver;
  tracer->set_enabled(true);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  f.launch("_Z1av");
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  EXPECT_EQ(f.finalizes(), 1);
  EXPECT_EQ(f.subscribed(), 0);
  EXPECT_FALSE(tracer->stats().attached);
  EXPECT_FALSE(tracer->stats().detach_pending);

  auto subscribe = fake<CUptiResult (*)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*)>("cuptiSubscribe");
  auto unsubscribe = fake<CUptiResult (*)(CUpti_SubscriberHandle)>("cuptiUnsubscribe");
  CUpti_SubscriberHandle other = nullptr;
  EXPECT_EQ(subscribe(
                &other, [](void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}, nullptr),
            CUPTI_SUCCESS);
  unsubscribe(other);

  View v(collect());  // what the window recorded was flushed before the detach
  EXPECT_EQ(v.device_count, 1u);
}

TEST_F(Tracer, TurnedOnAndOffWithoutAWindowItLetsGoOfCupti) {
  DriverCallsBack driver;
  tracer->set_enabled(true);  // attaches at once, to report a conflict early
  ASSERT_EQ(f.subscribed(), 1);
  tracer->set_enabled(false);
  EXPECT_EQ(f.subscribed(), 0);
  EXPECT_EQ(f.finalizes(), 1);
  EXPECT_FALSE(tracer->stats().attached);
}

TEST_F(Tracer, LaunchesFromAnotherThreadWhileStatesChangeNeverDeadlock) {
  tracer->set_enabled(true);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> launched{0};
  std::thread worker([&] {
    while (!stop.load()) {
      pk_begin_event_str("worker op", PK_EVENT_OPERATOR);
      f.launch("_Z6workerv", 3);
      pk_end_event();
      launched.fetch_add(1);
    }
  });
  uint64_t seen = 0;
  for (int round = 0; round < 30; ++round) {
    ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
    ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
    std::this_thread::yield();
    ASSERT_EQ(pk_set_state(round % 2 == 0 ? PK_STATE_READY : PK_STATE_CLOSED), PK_OK);
    if (round % 3 == 0) f.api_exit();
    View v(collect());
    seen += v.device_count;
    const pk_result_info info = v.info();
    size_t unattached = 0;
    for (size_t i = 0; i < v.device_count; ++i) {
      const pk_device_event& d = v.device[i];
      if (d.launch_event == PK_NO_EVENT) {
        // Launched just before the window opened: kept because it ran inside.
        ++unattached;
        EXPECT_GE(d.start_ns, info.start_ns);
        EXPECT_LE(d.start_ns, info.end_ns);
        continue;
      }
      EXPECT_EQ(v.name(v.host[d.launch_event].name), "cudaLaunchKernel");
      // Inside "worker op", unless the window opened or closed during it.
      const std::string parent = v.parent_name(d.launch_event);
      EXPECT_TRUE(parent == "worker op" || parent.empty()) << parent;
      EXPECT_GE(d.start_ns, v.host[d.launch_event].start_ns);
    }
    EXPECT_EQ(info.unattached_device_records, unattached);
  }
  stop.store(true);
  worker.join();
  EXPECT_LE(seen, launched.load());
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
}

// A process forked while the GPU is traced (a worker started from a training
// script): the child must not call CUPTI (a forked child cannot use CUDA; a
// flush there may hang), must not report the parent's kernels again, and
// says why its results have no GPU activity. The parent keeps its kernels.
TEST_F(Tracer, AForkedChildStopsGpuTracingWithoutCallingCupti) {
  tracer->set_enabled(true);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  const uint32_t kernel = f.launch("_Z6parentv");
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);  // flushed: the kernel waits in the store
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  const std::string verdict = answer_of_child([this] {
    const int flushes = f.flushes();
    if (pk_set_state(PK_STATE_CLOSED) != PK_OK) return std::string("pk_set_state failed");
    View v(collect());
    if (f.flushes() != flushes || f.kind_enabled(kConcurrentKernel) != 1 || f.finalizes() != 0) {
      return std::string("the child called CUPTI");
    }
    if (v.device_count != 0) return "the child reports " + std::to_string(v.device_count) + " kernels";
    if (v.metadata("gpu_tracing_error").find("fork()") == std::string::npos) {
      return "gpu_tracing_error: '" + v.metadata("gpu_tracing_error") + "'";
    }
    std::string reason;
    if (tracer->available(&reason)) return std::string("the child still says GPU tracing is available");
    return std::string("y");
  });
  EXPECT_EQ(verdict, "y");
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  View v(collect());
  ASSERT_EQ(v.device_count, 1u);
  EXPECT_EQ(v.device[0].correlation_id, kernel);
  EXPECT_EQ(v.metadata("gpu_tracing_error"), "");
}

// fork() while another thread is inside the tracer (here: enabling it, in
// cuptiSubscribe with the tracer's lock held): the child inherited the held
// lock and its first collect hung, unless fork() waits for it.
TEST_F(Tracer, ForkWhileAnotherThreadIsInsideTheTracerLeavesTheChildUsable) {
  f.block_next_subscribe();
  std::thread enabler([&] { tracer->set_enabled(true); });
  while (f.subscribe_waiting() == 0) std::this_thread::yield();
  // fork() must wait for the enabler, which this thread lets go on soon.
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    f.release_subscribe();
  });
  const std::string verdict = answer_of_child([] {
    pk_result* r = nullptr;
    const bool ok = pk_set_state(PK_STATE_RECORD) == PK_OK && pk_collect(&r) == PK_OK;
    pk_result_release(r);
    return std::string(ok ? "y" : "a call in the child failed");
  });
  releaser.join();
  enabler.join();
  EXPECT_EQ(verdict, "y");
  EXPECT_TRUE(tracer->enabled());
}

}  // namespace
