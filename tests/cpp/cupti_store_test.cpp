// The ActivityStore's rules for what goes into a Result and how it attaches:
// API calls nest in the innermost host event of their thread, GPU records
// attach to their launch by correlation id, unattached ones stay and are
// counted, records without timing are placed and flagged, what falls outside
// the recording windows is discarded, what comes after the span waits.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "cupti/activity_store.h"
#include "trace/result_builder.h"

namespace {

using profkit::ResultBuilder;
using profkit::ResultInfo;
using profkit::cupti::ActivityStore;
using profkit::cupti::ApiCall;
using profkit::cupti::CollectSpan;
using profkit::cupti::GpuDevice;
using profkit::cupti::GpuDevices;
using profkit::cupti::LaunchShape;

std::string fake_api_name(bool driver, uint32_t cbid) {
  return std::string(driver ? "cuDriver#" : "cudaRuntime#") + std::to_string(cbid);
}

constexpr uint32_t kTid = 4242;

ApiCall call(ActivityStore& s, uint64_t start, uint64_t end, uint32_t correlation, uint32_t cbid = 211,
             bool driver = false, uint32_t tid = kTid) {
  ApiCall c;
  c.start_ns = start;
  c.end_ns = end;
  c.tid = tid;
  c.correlation_id = correlation;
  c.name = s.api_name(driver, cbid);
  c.flags = driver ? profkit::cupti::kApiCallDriver : 0;
  return c;
}

pk_device_event gpu(uint64_t start, uint64_t end, uint32_t correlation, uint8_t type = PK_EVENT_KERNEL,
                    uint32_t stream = 7, uint8_t flags = 0) {
  pk_device_event e{};
  e.start_ns = start;
  e.end_ns = end;
  e.launch_event = PK_NO_EVENT;
  e.correlation_id = correlation;
  e.stream = stream;
  e.context = 1;
  e.device = 0;
  e.type = type;
  e.flags = flags;
  e.detail = PK_NO_DETAIL;
  return e;
}

LaunchShape launch(uint32_t grid, uint32_t block, uint32_t registers) {
  LaunchShape s;
  s.grid[0] = grid;
  s.grid[1] = s.grid[2] = 1;
  s.block[0] = block;
  s.block[1] = s.block[2] = 1;
  s.registers_per_thread = registers;
  return s;
}

CollectSpan span(uint64_t start, uint64_t end, bool continues = false) {
  CollectSpan s;
  s.start_ns = start;
  s.end_ns = end;
  s.windows.push_back({start, continues ? UINT64_MAX : end});
  s.recording_continues = continues;
  return s;
}

GpuDevices one_h100() {
  GpuDevice d;
  d.info.id = 0;
  d.info.name = "H100";
  d.info.sm_count = 132;
  d.limits.compute_major = 9;
  d.limits.sm_count = 132;
  d.limits.warp_size = 32;
  d.limits.max_threads_per_block = 1024;
  d.limits.max_threads_per_sm = 2048;
  d.limits.max_blocks_per_sm = 32;
  d.limits.registers_per_block = 65536;
  d.limits.registers_per_sm = 65536;
  d.limits.shared_memory_per_block = 49152;
  d.limits.shared_memory_per_sm = 233472;
  d.limits.reserved_shared_memory_per_block = 1024;
  return {d};
}

// A builder whose host side has, on thread kTid: "step" [100, 1000] holding
// "op" [200, 500] holding "inner" [250, 300].
struct Fixture {
  std::unique_ptr<ResultBuilder> builder;
  uint32_t step = 0, op = 0, inner = 0;
  Fixture(uint64_t start = 100, uint64_t end = 1000) {
    ResultInfo info;
    info.start_ns = start;
    info.end_ns = end;
    builder = std::make_unique<ResultBuilder>(info);
    builder->add_string("");
    step = builder->add_string("ProfileStep#0");
    op = builder->add_string("aten::mm");
    inner = builder->add_string("inner");
    const uint32_t t = builder->thread(kTid);
    builder->add_event(t, {100, 1000, step, PK_EVENT_PROFILE_STEP, 0, 0});
    builder->add_event(t, {200, 500, op, PK_EVENT_OPERATOR, 1, 0});
    builder->add_event(t, {250, 300, inner, PK_EVENT_OPERATOR_INNER, 2, 0});
  }
};

std::string name_of(const profkit::Result& r, uint32_t id) { return std::string(r.strings.view(id)); }

TEST(ActivityStore, KernelAttachesToItsLaunchWhichNestsInTheInnermostHostEvent) {
  ActivityStore s(fake_api_name);
  s.add_api_call(call(s, 260, 280, 11));  // inside "inner"
  pk_device_event k = gpu(600, 900, 11);
  k.name = s.kernel_name("_Z6vecAddPfS_i");
  ASSERT_TRUE(s.add_kernel(k, launch(264, 256, 32)));

  Fixture f;
  const auto stats = s.contribute(*f.builder, span(100, 1000), one_h100());
  EXPECT_EQ(stats.api_calls, 1u);
  EXPECT_EQ(stats.device_events, 1u);
  auto r = f.builder->finish();

  ASSERT_EQ(r->device_events.size(), 1u);
  const pk_device_event& d = r->device_events[0];
  EXPECT_EQ(name_of(*r, d.name), "vecAdd(float*, float*, int)");
  ASSERT_NE(d.launch_event, PK_NO_EVENT);
  const pk_host_event& launch_call = r->host_events[d.launch_event];
  EXPECT_EQ(launch_call.type, PK_EVENT_CUDA_RUNTIME);
  EXPECT_EQ(name_of(*r, launch_call.name), "cudaRuntime#211");
  EXPECT_EQ(launch_call.start_ns, 260u);
  EXPECT_EQ(launch_call.depth, 3u);
  const uint64_t parent = r->parent_of(d.launch_event);
  ASSERT_NE(parent, PK_NO_EVENT);
  EXPECT_EQ(name_of(*r, r->host_events[parent].name), "inner");
  EXPECT_GE(d.start_ns, launch_call.start_ns);
  EXPECT_EQ(r->info.unattached_device_records, 0u);

  ASSERT_LT(d.detail, r->kernel_details.size());
  const pk_kernel_detail& kd = r->kernel_details[d.detail];
  EXPECT_EQ(kd.grid[0], 264u);
  EXPECT_EQ(kd.block[0], 256u);
  EXPECT_FLOAT_EQ(kd.blocks_per_sm, 2.0f);
  EXPECT_FLOAT_EQ(kd.warps_per_sm, 16.0f);
  EXPECT_FLOAT_EQ(kd.occupancy, 1.0f);
  ASSERT_EQ(r->devices.size(), 1u);
  EXPECT_EQ(r->devices[0].name, "H100");
}

TEST(ActivityStore, ACallThatStartsWithItsHostEventNestsInsideIt) {
  ActivityStore s(fake_api_name);
  s.add_api_call(call(s, 200, 220, 5));  // same start as "op"
  Fixture f;
  s.contribute(*f.builder, span(100, 1000), {});
  auto r = f.builder->finish();
  for (size_t i = 0; i < r->host_events.size(); ++i) {
    if (r->host_events[i].type != PK_EVENT_CUDA_RUNTIME) continue;
    EXPECT_EQ(name_of(*r, r->host_events[r->parent_of(i)].name), "aten::mm");
  }
}

TEST(ActivityStore, GpuWorkWithoutCapturedLaunchStaysOnItsLaneAndIsCounted) {
  ActivityStore s(fake_api_name);
  pk_device_event k = gpu(300, 400, 77, PK_EVENT_KERNEL, 9);
  k.name = s.kernel_name("orphan_kernel");  // not mangled: kept as is
  s.add_kernel(k, launch(1, 32, 0));
  Fixture f;
  s.contribute(*f.builder, span(100, 1000), {});
  auto r = f.builder->finish();
  ASSERT_EQ(r->device_events.size(), 1u);
  EXPECT_EQ(r->device_events[0].launch_event, PK_NO_EVENT);
  EXPECT_EQ(r->device_events[0].stream, 9u);
  EXPECT_EQ(name_of(*r, r->device_events[0].name), "orphan_kernel");
  EXPECT_EQ(r->info.unattached_device_records, 1u);
  // No device facts known: occupancy 0, not made up.
  EXPECT_FLOAT_EQ(r->kernel_details[r->device_events[0].detail].occupancy, 0.0f);
}

TEST(ActivityStore, MemcpyAndMemsetKeepTheirDetails) {
  ActivityStore s(fake_api_name);
  s.add_api_call(call(s, 210, 230, 1, 41));
  s.add_api_call(call(s, 240, 245, 2, 51));
  pk_device_event m = gpu(600, 700, 1, PK_EVENT_MEMCPY, 13);
  m.name = s.intern_name("Memcpy HtoD");
  pk_memory_op_detail md{};
  md.bytes = 1 << 20;
  md.copy_kind = 1;
  md.src_kind = 2;
  md.dst_kind = 3;
  s.add_memory_op(m, md);
  pk_device_event z = gpu(710, 720, 2, PK_EVENT_MEMSET, 13);
  z.name = s.intern_name("Memset");
  pk_memory_op_detail zd{};
  zd.bytes = 4096;
  zd.value = 0xab;
  zd.dst_kind = 3;
  s.add_memory_op(z, zd);
  Fixture f;
  s.contribute(*f.builder, span(100, 1000), {});
  auto r = f.builder->finish();
  ASSERT_EQ(r->device_events.size(), 2u);
  const pk_device_event& copy = r->device_events[0];
  EXPECT_EQ(copy.type, PK_EVENT_MEMCPY);
  EXPECT_EQ(name_of(*r, copy.name), "Memcpy HtoD");
  EXPECT_EQ(r->memory_op_details[copy.detail].bytes, 1u << 20);
  EXPECT_EQ(r->memory_op_details[copy.detail].src_kind, 2u);
  EXPECT_EQ(r->memory_op_details[copy.detail].dst_kind, 3u);
  EXPECT_EQ(name_of(*r, r->host_events[copy.launch_event].name), "cudaRuntime#41");
  const pk_device_event& set = r->device_events[1];
  EXPECT_EQ(set.type, PK_EVENT_MEMSET);
  EXPECT_EQ(r->memory_op_details[set.detail].value, 0xabu);
  EXPECT_EQ(r->memory_op_details[set.detail].bytes, 4096u);
  EXPECT_EQ(name_of(*r, r->host_events[set.launch_event].name), "cudaRuntime#51");
}

TEST(ActivityStore, RepeatedLaunchShapesAndCopiesShareOneDetail) {
  ActivityStore s(fake_api_name);
  for (uint32_t i = 0; i < 100; ++i) {
    s.add_api_call(call(s, 300 + i, 301 + i, i + 1));
    pk_device_event k = gpu(600 + i, 601 + i, i + 1);
    k.name = s.kernel_name("_Z4stepv");
    s.add_kernel(k, launch(8, 128, 16));
  }
  Fixture f;
  s.contribute(*f.builder, span(100, 1000), one_h100());
  auto r = f.builder->finish();
  EXPECT_EQ(r->device_events.size(), 100u);
  EXPECT_EQ(r->kernel_details.size(), 1u);
  size_t names = 0;
  for (size_t i = 0; i < r->strings.size(); ++i) names += r->strings.view(i) == "step()" ? 1 : 0;
  EXPECT_EQ(names, 1u);
  EXPECT_EQ(r->info.unattached_device_records, 0u);
}

TEST(ActivityStore, RecordsWithoutTimingAreFlaggedAndPlacedAtTheirLaunch) {
  ActivityStore s(fake_api_name);
  s.add_api_call(call(s, 400, 450, 3));
  pk_device_event k = gpu(0, 0, 3, PK_EVENT_KERNEL, 7, PK_DEVICE_EVENT_NO_TIMING);
  k.name = s.kernel_name("_Z1kv");
  s.add_kernel(k, launch(1, 1, 0));
  // One without timing and without a captured launch, that arrived while
  // recording: kept at the span start.
  pk_device_event lost =
      gpu(0, 0, 99, PK_EVENT_KERNEL, 7, PK_DEVICE_EVENT_NO_TIMING | profkit::cupti::kDeviceEventArrivedInWindow);
  lost.name = k.name;
  s.add_kernel(lost, launch(1, 1, 0));
  // And one that arrived outside any window: nothing ties it to this Result.
  pk_device_event stray = gpu(0, 0, 98, PK_EVENT_KERNEL, 7, PK_DEVICE_EVENT_NO_TIMING);
  stray.name = k.name;
  s.add_kernel(stray, launch(1, 1, 0));
  Fixture f;
  const auto stats = s.contribute(*f.builder, span(100, 1000), {});
  EXPECT_EQ(stats.outside_window, 1u);
  auto r = f.builder->finish();
  ASSERT_EQ(r->device_events.size(), 2u);
  for (const pk_device_event& d : r->device_events) {
    EXPECT_EQ(d.flags, PK_DEVICE_EVENT_NO_TIMING);  // the internal flag is gone
    EXPECT_EQ(d.start_ns, d.end_ns);
    if (d.correlation_id == 3) {
      EXPECT_EQ(d.start_ns, 450u);
    } else {
      EXPECT_EQ(d.start_ns, 100u);
    }
  }
}

TEST(ActivityStore, OutsideTheWindowsIsDiscardedButGpuWorkOfACapturedLaunchIsKept) {
  ActivityStore s(fake_api_name);
  s.add_api_call(call(s, 50, 60, 1));      // before the span
  s.add_api_call(call(s, 900, 950, 2));    // inside
  s.add_api_call(call(s, 1100, 1200, 3));  // after, recording stopped
  for (uint32_t c = 1; c <= 3; ++c) {
    pk_device_event k = gpu(c == 2 ? 1500 : 70 + c * 1000, 2000 + c, c);  // #2 runs after the span
    k.name = s.kernel_name("_Z1kv");
    s.add_kernel(k, launch(1, 1, 0));
  }
  Fixture f;
  const auto stats = s.contribute(*f.builder, span(100, 1000), {});
  EXPECT_EQ(stats.api_calls, 1u);
  EXPECT_EQ(stats.device_events, 1u);
  EXPECT_EQ(stats.outside_window, 4u);
  EXPECT_EQ(stats.pending, 0u);
  auto r = f.builder->finish();
  ASSERT_EQ(r->device_events.size(), 1u);
  EXPECT_EQ(r->device_events[0].correlation_id, 2u);
  EXPECT_NE(r->device_events[0].launch_event, PK_NO_EVENT);
  EXPECT_TRUE(s.empty());
}

TEST(ActivityStore, GapsBetweenWindowsAreNotRecorded) {
  ActivityStore s(fake_api_name);
  s.add_api_call(call(s, 300, 310, 1));  // first window
  s.add_api_call(call(s, 550, 560, 2));  // the READY gap
  s.add_api_call(call(s, 800, 810, 3));  // second window
  CollectSpan two;
  two.start_ns = 100;
  two.end_ns = 1000;
  two.windows = {{100, 500}, {700, 1000}};
  Fixture f;
  const auto stats = s.contribute(*f.builder, two, {});
  EXPECT_EQ(stats.api_calls, 2u);
  EXPECT_EQ(stats.outside_window, 1u);
}

TEST(ActivityStore, WhileRecordingContinuesLaterRecordsWaitForTheNextCollect) {
  ActivityStore s(fake_api_name);
  s.add_api_call(call(s, 900, 950, 1));
  s.add_api_call(call(s, 1100, 1150, 2));  // after this span: next Result
  pk_device_event late = gpu(1200, 1300, 2);
  late.name = s.kernel_name("_Z4nextv");
  s.add_kernel(late, launch(2, 64, 8));
  pk_device_event running = gpu(1050, 1080, 1);  // launched in the span, runs after it
  running.name = s.kernel_name("_Z4thisv");
  s.add_kernel(running, launch(1, 32, 8));

  Fixture first(100, 1000);
  const auto stats = s.contribute(*first.builder, span(100, 1000, true), {});
  EXPECT_EQ(stats.pending, 2u);
  auto r1 = first.builder->finish();
  ASSERT_EQ(r1->device_events.size(), 1u);
  EXPECT_EQ(name_of(*r1, r1->device_events[0].name), "this()");
  EXPECT_NE(r1->device_events[0].launch_event, PK_NO_EVENT);
  EXPECT_EQ(s.api_call_count(), 1u);
  EXPECT_EQ(s.device_event_count(), 1u);

  Fixture second(1000, 2000);
  s.contribute(*second.builder, span(1000, 2000), {});
  auto r2 = second.builder->finish();
  ASSERT_EQ(r2->device_events.size(), 1u);
  EXPECT_EQ(name_of(*r2, r2->device_events[0].name), "next()");
  EXPECT_NE(r2->device_events[0].launch_event, PK_NO_EVENT);
  EXPECT_EQ(r2->kernel_details[r2->device_events[0].detail].grid[0], 2u);
  EXPECT_TRUE(s.empty());
}

// A forced flush hands over a kernel still running with its end missing, so
// it arrives untimed while the window is open. When its launch call came after
// the collected span, the call waits for the next collect, and so must the
// kernel: kept here it had no launch (placed at the span start, counted
// unattached) and the next Result had a launch call without its GPU work.
TEST(ActivityStore, GpuWorkWithoutTimingWaitsWithItsLaunchForTheNextCollect) {
  ActivityStore s(fake_api_name);
  s.add_api_call(call(s, 900, 950, 1));
  pk_device_event done = gpu(960, 990, 1);
  done.name = s.kernel_name("_Z4thisv");
  s.add_kernel(done, launch(1, 32, 8));
  s.add_api_call(call(s, 1100, 1150, 2));  // after this span: next Result
  pk_device_event running =
      gpu(0, 0, 2, PK_EVENT_KERNEL, 7, PK_DEVICE_EVENT_NO_TIMING | profkit::cupti::kDeviceEventArrivedInWindow);
  running.name = s.kernel_name("_Z7runningv");
  s.add_kernel(running, launch(1, 32, 8));

  Fixture first(100, 1000);
  const auto stats = s.contribute(*first.builder, span(100, 1000, true), {});
  EXPECT_EQ(stats.pending, 2u);
  auto r1 = first.builder->finish();
  ASSERT_EQ(r1->device_events.size(), 1u);
  EXPECT_EQ(r1->device_events[0].correlation_id, 1u);
  EXPECT_EQ(r1->info.unattached_device_records, 0u);

  Fixture second(1000, 2000);
  s.contribute(*second.builder, span(1000, 2000), {});
  auto r2 = second.builder->finish();
  ASSERT_EQ(r2->device_events.size(), 1u);
  const pk_device_event& d = r2->device_events[0];
  EXPECT_EQ(name_of(*r2, d.name), "running()");
  ASSERT_NE(d.launch_event, PK_NO_EVENT);
  EXPECT_EQ(r2->host_events[d.launch_event].start_ns, 1100u);
  EXPECT_EQ(d.flags, PK_DEVICE_EVENT_NO_TIMING);
  EXPECT_EQ(d.start_ns, 1150u);  // at the end of its launch call
  EXPECT_EQ(r2->info.unattached_device_records, 0u);
  EXPECT_TRUE(s.empty());
}

TEST(ActivityStore, DriverLaunchesAreKeptOnlyWithGpuWorkAttached) {
  ActivityStore s(fake_api_name);
  // A runtime launch and the driver call inside it: the kernel belongs to the
  // runtime call, so the driver call is noise.
  s.add_api_call(call(s, 300, 340, 1, 211));
  s.add_api_call(call(s, 310, 330, 2, 307, true));
  // A Triton-style launch straight through the driver.
  s.add_api_call(call(s, 400, 420, 3, 307, true));
  for (uint32_t c : {1u, 3u}) {
    pk_device_event k = gpu(600 + c, 700, c);
    k.name = s.kernel_name(c == 1 ? "_Z3aten_kernelv" : "triton_poi_fused_add_0");
    s.add_kernel(k, launch(1, 128, 16));
  }
  Fixture f;
  const auto stats = s.contribute(*f.builder, span(100, 1000), {});
  EXPECT_EQ(stats.api_calls, 2u);
  EXPECT_EQ(stats.driver_calls_without_work, 1u);
  auto r = f.builder->finish();
  for (const pk_device_event& d : r->device_events) {
    ASSERT_NE(d.launch_event, PK_NO_EVENT);
    const std::string launcher = name_of(*r, r->host_events[d.launch_event].name);
    EXPECT_EQ(launcher, d.correlation_id == 1 ? "cudaRuntime#211" : "cuDriver#307");
  }
}

TEST(ActivityStore, ADriverCallSharingItsRuntimeCallsCorrelationIsNotDoubled) {
  ActivityStore s(fake_api_name);
  s.add_api_call(call(s, 300, 340, 9, 211));
  s.add_api_call(call(s, 310, 330, 9, 307, true));  // same correlation id
  pk_device_event k = gpu(600, 700, 9);
  k.name = s.kernel_name("_Z1kv");
  s.add_kernel(k, launch(1, 32, 8));
  Fixture f;
  const auto stats = s.contribute(*f.builder, span(100, 1000), {});
  EXPECT_EQ(stats.api_calls, 1u);
  EXPECT_EQ(stats.driver_calls_without_work, 1u);
  auto r = f.builder->finish();
  ASSERT_EQ(r->device_events.size(), 1u);
  EXPECT_EQ(name_of(*r, r->host_events[r->device_events[0].launch_event].name), "cudaRuntime#211");
}

// Launches seen by the tracer's callback wait apart: those a buffer's
// runtime records claim (the runtime's inner cuLaunchKernel) are forgotten
// there, the rest become driver calls at the collect. Until then they count
// against a cap of their own, not the records'; one refused for it is lost
// only if no runtime record claims it.
TEST(ActivityStore, LaunchesSeenByTheCallbackWaitUntilARuntimeRecordClaimsThem) {
  ActivityStore s(fake_api_name, 4);
  EXPECT_TRUE(s.add_api_call(call(s, 200, 210, 10)));
  EXPECT_TRUE(s.add_api_call(call(s, 220, 230, 11)));
  for (uint32_t c : {1u, 2u, 3u, 4u}) {
    EXPECT_TRUE(s.add_launch_seen_by_callback(call(s, 300 + c, 310 + c, c, 307, true)));
  }
  EXPECT_FALSE(s.add_launch_seen_by_callback(call(s, 320, 330, 5, 307, true)));  // a fifth waiting: no room
  EXPECT_FALSE(s.add_launch_seen_by_callback(call(s, 340, 350, 6, 307, true)));
  EXPECT_EQ(s.waiting_launch_count(), 4u);
  std::vector<uint32_t> buffer_runtime_calls{5, 4, 3, 1};  // unsorted, as a buffer has them
  s.forget_launches_inside_runtime_calls(buffer_runtime_calls);
  EXPECT_EQ(s.waiting_launch_count(), 1u);  // correlation 2: launched through the driver itself
  pk_device_event k = gpu(600, 700, 2);
  k.name = s.kernel_name("_Z10cublasGemmv");
  s.add_kernel(k, launch(1, 128, 16));
  Fixture f;
  const auto stats = s.contribute(*f.builder, span(100, 1000), {});
  EXPECT_EQ(stats.api_calls, 3u);
  EXPECT_EQ(stats.dropped, 1u);
  EXPECT_EQ(s.waiting_launch_count(), 0u);
  auto r = f.builder->finish();
  ASSERT_EQ(r->device_events.size(), 1u);
  ASSERT_NE(r->device_events[0].launch_event, PK_NO_EVENT);
  EXPECT_EQ(name_of(*r, r->host_events[r->device_events[0].launch_event].name), "cuDriver#307");
  EXPECT_EQ(r->info.unattached_device_records, 0u);
}

// A driver launch seen early keeps its kernel under it even when later
// records filled the store to the cap before the collect.
TEST(ActivityStore, AnEarlyDriverLaunchKeepsItsKernelWhenTheCapFillsLater) {
  ActivityStore s(fake_api_name, 3);
  EXPECT_TRUE(s.add_launch_seen_by_callback(call(s, 300, 310, 1, 307, true)));
  pk_device_event gemm = gpu(400, 500, 1);
  gemm.name = s.kernel_name("_Z10cublasGemmv");
  EXPECT_TRUE(s.add_kernel(gemm, launch(1, 128, 16)));
  EXPECT_TRUE(s.add_api_call(call(s, 320, 330, 10)));
  EXPECT_TRUE(s.add_api_call(call(s, 340, 350, 11)));
  pk_device_event late = gpu(600, 700, 10);
  late.name = s.kernel_name("_Z4latev");
  EXPECT_FALSE(s.add_kernel(late, launch(1, 1, 0)));  // the cap: 2 calls and a kernel
  Fixture f;
  s.contribute(*f.builder, span(100, 1000), {});
  auto r = f.builder->finish();
  ASSERT_EQ(r->device_events.size(), 1u);
  ASSERT_NE(r->device_events[0].launch_event, PK_NO_EVENT);
  EXPECT_EQ(name_of(*r, r->host_events[r->device_events[0].launch_event].name), "cuDriver#307");
  EXPECT_EQ(r->info.dropped_device_records, 1u);
}

// With every driver call recorded (PROFKIT_CUPTI_DRIVER=all) the runtime's
// inner cuLaunchKernel comes first (CUPTI writes it at its exit); a kernel
// without timing goes to the end of the runtime call the Result shows.
TEST(ActivityStore, AnUntimedKernelIsPlacedAtItsRuntimeCallNotTheDriverCallInside) {
  ActivityStore s(fake_api_name);
  s.add_api_call(call(s, 310, 330, 9, 307, true));
  s.add_api_call(call(s, 300, 340, 9, 211));
  pk_device_event k = gpu(0, 0, 9, PK_EVENT_KERNEL, 7, PK_DEVICE_EVENT_NO_TIMING);
  k.name = s.kernel_name("_Z1kv");
  s.add_kernel(k, launch(1, 1, 0));
  Fixture f;
  s.contribute(*f.builder, span(100, 1000), {});
  auto r = f.builder->finish();
  ASSERT_EQ(r->device_events.size(), 1u);
  EXPECT_EQ(r->device_events[0].start_ns, 340u);
}

TEST(ActivityStore, TheRecordCapDropsAndCountsIntoTheResult) {
  ActivityStore s(fake_api_name, 3);
  EXPECT_TRUE(s.add_api_call(call(s, 300, 310, 1)));
  EXPECT_TRUE(s.add_api_call(call(s, 320, 330, 2)));
  pk_device_event k = gpu(600, 700, 1);
  k.name = s.kernel_name("_Z1kv");
  EXPECT_TRUE(s.add_kernel(k, launch(1, 1, 0)));
  EXPECT_FALSE(s.add_kernel(k, launch(1, 1, 0)));
  EXPECT_FALSE(s.add_api_call(call(s, 340, 350, 3)));
  s.add_dropped(5);  // CUPTI's own count
  EXPECT_EQ(s.dropped(), 7u);
  Fixture f;
  f.builder->info().dropped_device_records = 1;  // something already there
  const auto stats = s.contribute(*f.builder, span(100, 1000), {});
  EXPECT_EQ(stats.dropped, 7u);
  auto r = f.builder->finish();
  EXPECT_EQ(r->info.dropped_device_records, 8u);
  EXPECT_EQ(s.dropped(), 0u);  // counted once
}

TEST(ActivityStore, CallsWithoutTimestampsAreCountedNotPlaced) {
  ActivityStore s(fake_api_name);
  s.add_api_call(call(s, 0, 0, 1));
  Fixture f;
  const auto stats = s.contribute(*f.builder, span(100, 1000), {});
  EXPECT_EQ(stats.untimed_api_calls, 1u);
  EXPECT_EQ(stats.api_calls, 0u);
}

TEST(ActivityStore, RuntimeCallsOfAThreadWithoutHostEventsGetTheirOwnThread) {
  ActivityStore s(fake_api_name);
  s.add_api_call(call(s, 300, 310, 1, 211, false, 999));
  Fixture f;
  s.contribute(*f.builder, span(100, 1000), {});
  auto r = f.builder->finish();
  ASSERT_EQ(r->threads.size(), 2u);
  bool found = false;
  for (const auto& t : r->threads) {
    if (t.tid != 999) continue;
    found = true;
    EXPECT_EQ(t.event_count, 1u);
    EXPECT_EQ(r->host_events[t.first_event].type, PK_EVENT_CUDA_RUNTIME);
  }
  EXPECT_TRUE(found);
}

TEST(ActivityStore, KernelNamesAreLookedUpByPointerButCheckedByText) {
  ActivityStore s(fake_api_name);
  char buffer[32] = "_Z3oldv";
  const uint32_t first = s.kernel_name(buffer);
  EXPECT_EQ(s.kernel_name(buffer), first);
  std::snprintf(buffer, sizeof buffer, "_Z3newv");  // a module reloaded at the same address
  const uint32_t second = s.kernel_name(buffer);
  EXPECT_NE(second, first);
  EXPECT_EQ(s.name_text(second), "new()");
  EXPECT_EQ(s.name_text(s.kernel_name(nullptr)), "<unnamed kernel>");
}

}  // namespace
