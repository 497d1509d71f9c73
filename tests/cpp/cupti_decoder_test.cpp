// The record decoder on synthetic activity buffers built from the real CUPTI
// structs (the record versions this build compiles against), through the
// store and the ResultBuilder: no GPU, no libcupti.
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>

#include "cupti/api_names.h"
#include "cupti/record_decoder.h"
#include "cupti_synthetic.h"
#include "export/chrome_trace.h"
#include "trace/result_builder.h"

namespace {

using profkit::cupti::ActivityStore;
using profkit::cupti::CollectSpan;
using profkit::cupti::decode_buffer;
using profkit::cupti::DecodeFilter;
using profkit::cupti::DecodeStats;
using profkit_test::api_record;
using profkit_test::kernel_record;
using profkit_test::memcpy_record;
using profkit_test::memset_record;
using profkit_test::synthetic_next_record;
using profkit_test::SyntheticBuffer;

constexpr uint32_t kTid = 31337;
constexpr uint32_t kLaunchKernel = 211;  // CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000
constexpr uint32_t kMemcpyAsync = 41;
constexpr uint32_t kMemsetAsync = 51;

DecodeFilter recording(uint64_t from = 0) {
  DecodeFilter f;
  f.accepting = true;
  f.accept_from_ns = from;
  f.window_open = true;
  return f;
}

std::unique_ptr<profkit::Result> collect(ActivityStore& store, uint64_t start = 1, uint64_t end = 1'000'000,
                                         bool with_host_events = true) {
  profkit::ResultInfo info;
  info.start_ns = start;
  info.end_ns = end;
  profkit::ResultBuilder b(info);
  b.add_string("");
  if (with_host_events) {
    const uint32_t t = b.thread(kTid);
    b.add_event(t, {1000, 9000, b.add_string("aten::linear"), PK_EVENT_OPERATOR, 0, 0});
    b.add_event(t, {1500, 3000, b.add_string("aten::addmm"), PK_EVENT_OPERATOR, 1, 0});
  }
  CollectSpan span;
  span.start_ns = start;
  span.end_ns = end;
  span.windows.push_back({start, end});
  store.contribute(b, span, {});
  return b.finish();
}

std::string name_of(const profkit::Result& r, uint32_t id) { return std::string(r.strings.view(id)); }

TEST(CuptiDecoder, RecordVersionsAreTheOnesOfTheHeaders) {
  // CUDA 13.0's headers: Kernel10 / Memcpy6 / Memset4 (CUPTI.md; checked here
  // so a header upgrade that changes versions fails loudly).
#if CUPTI_API_VERSION >= 130000 && CUPTI_API_VERSION < 130100
  EXPECT_TRUE((std::is_same_v<profkit::cupti::KernelRecord, CUpti_ActivityKernel10>));
  EXPECT_TRUE((std::is_same_v<profkit::cupti::MemcpyRecord, CUpti_ActivityMemcpy6>));
#endif
  EXPECT_TRUE((std::is_same_v<profkit::cupti::MemsetRecord, CUpti_ActivityMemset4>));
  EXPECT_EQ(offsetof(profkit::cupti::KernelRecord, kind), 0u);
  EXPECT_EQ(alignof(profkit::cupti::KernelRecord), 8u);
}

TEST(CuptiDecoder, KernelFieldsAndDemangledName) {
  profkit::cupti::KernelRecord k =
      kernel_record("_ZN7cutlass6KernelINS_4gemm6kernel4GemmEEEvNT_6ParamsE", 5000, 7000, 42,
                    /*stream=*/21, /*device=*/1);
  k.gridX = 1024;
  k.gridY = 2;
  k.gridZ = 3;
  k.blockX = 128;
  k.blockY = 2;
  k.blockZ = 1;
  k.registersPerThread = 40;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 4096;
  k.sharedMemoryExecuted = 102400;
  k.contextId = 3;
  SyntheticBuffer buf;
  buf.add(k);
  ActivityStore store(profkit::cupti::api_display_name);
  const DecodeStats stats = decode_buffer(buf.data(), buf.size(), synthetic_next_record, recording(), &store);
  EXPECT_EQ(stats.records, 1u);
  EXPECT_EQ(stats.kept, 1u);

  auto r = collect(store);
  ASSERT_EQ(r->device_events.size(), 1u);
  const pk_device_event& e = r->device_events[0];
  EXPECT_EQ(e.type, PK_EVENT_KERNEL);
  EXPECT_EQ(name_of(*r, e.name),
            "void cutlass::Kernel<cutlass::gemm::kernel::Gemm>(cutlass::gemm::kernel::Gemm::Params)");
  EXPECT_EQ(e.start_ns, 5000u);
  EXPECT_EQ(e.end_ns, 7000u);
  EXPECT_EQ(e.correlation_id, 42u);
  EXPECT_EQ(e.stream, 21u);
  EXPECT_EQ(e.device, 1u);
  EXPECT_EQ(e.context, 3u);
  EXPECT_EQ(e.flags, 0u);
  const pk_kernel_detail& d = r->kernel_details[e.detail];
  EXPECT_EQ(d.grid[0], 1024u);
  EXPECT_EQ(d.grid[1], 2u);
  EXPECT_EQ(d.grid[2], 3u);
  EXPECT_EQ(d.block[0], 128u);
  EXPECT_EQ(d.block[1], 2u);
  EXPECT_EQ(d.block[2], 1u);
  EXPECT_EQ(d.registers_per_thread, 40u);
  EXPECT_EQ(d.static_shared_memory, 1024u);
  EXPECT_EQ(d.dynamic_shared_memory, 4096u);
}

TEST(CuptiDecoder, LaunchShapeReadsTheCarveoutAndOptIn) {
  profkit::cupti::KernelRecord k = kernel_record("k", 1, 2, 1);
  k.sharedMemoryExecuted = 65536;
  k.shmemLimitConfig = CUPTI_FUNC_SHMEM_LIMIT_OPTIN;
  k.gridX = -1;  // garbage never becomes 4 billion blocks
  const auto s = profkit::cupti::launch_shape(k);
  EXPECT_EQ(s.shared_memory_executed, 65536u);
  EXPECT_TRUE(s.shared_memory_optin);
  EXPECT_EQ(s.grid[0], 0u);
}

TEST(CuptiDecoder, MemcpyMemsetAndRuntimeRecordsAttachThroughTheBuilder) {
  SyntheticBuffer buf;
  buf.add(api_record(kMemcpyAsync, 1600, 1700, 7, kTid));
  buf.add(api_record(kLaunchKernel, 1800, 1900, 8, kTid));
  buf.add(api_record(kMemsetAsync, 4000, 4100, 9, kTid));
  auto copy = memcpy_record(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1 << 20, 2000, 2600, /*driver correlation=*/1007);
  copy.runtimeCorrelationId = 7;
  buf.add(copy);
  buf.add(kernel_record("_Z6vecAddPfS_i", 2700, 2900, 8));
  buf.add(memset_record(256, 0x7f, 4200, 4300, 9));

  ActivityStore store(profkit::cupti::api_display_name);
  decode_buffer(buf.data(), buf.size(), synthetic_next_record, recording(), &store);
  auto r = collect(store);
  ASSERT_EQ(r->device_events.size(), 3u);
  EXPECT_EQ(r->info.unattached_device_records, 0u);

  const pk_device_event& c = r->device_events[0];
  EXPECT_EQ(c.type, PK_EVENT_MEMCPY);
  EXPECT_EQ(c.correlation_id, 7u);  // the runtime call's id, not the driver's
  EXPECT_EQ(name_of(*r, c.name), "Memcpy HtoD");
  EXPECT_EQ(r->memory_op_details[c.detail].bytes, 1u << 20);
  EXPECT_EQ(r->memory_op_details[c.detail].copy_kind, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
  EXPECT_EQ(r->memory_op_details[c.detail].src_kind, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
  EXPECT_EQ(r->memory_op_details[c.detail].dst_kind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
  EXPECT_EQ(name_of(*r, r->host_events[c.launch_event].name), "cudaMemcpyAsync");

  const pk_device_event& k = r->device_events[1];
  EXPECT_EQ(name_of(*r, k.name), "vecAdd(float*, float*, int)");
  const pk_host_event& launch = r->host_events[k.launch_event];
  EXPECT_EQ(name_of(*r, launch.name), "cudaLaunchKernel");
  EXPECT_EQ(launch.type, PK_EVENT_CUDA_RUNTIME);
  EXPECT_EQ(name_of(*r, r->host_events[r->parent_of(k.launch_event)].name), "aten::addmm");

  const pk_device_event& s = r->device_events[2];
  EXPECT_EQ(s.type, PK_EVENT_MEMSET);
  EXPECT_EQ(name_of(*r, s.name), "Memset");
  EXPECT_EQ(r->memory_op_details[s.detail].bytes, 256u);
  EXPECT_EQ(r->memory_op_details[s.detail].value, 0x7fu);
  EXPECT_EQ(r->memory_op_details[s.detail].dst_kind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
  // cudaMemsetAsync at 4000 is outside addmm [1500, 3000] but inside linear.
  EXPECT_EQ(name_of(*r, r->host_events[r->parent_of(s.launch_event)].name), "aten::linear");

  // Every runtime call sits on the recording thread.
  ASSERT_EQ(r->threads.size(), 1u);
  EXPECT_EQ(r->threads[0].tid, kTid);
  EXPECT_EQ(r->threads[0].event_count, 5u);
}

TEST(CuptiDecoder, MemcpyFromTheDriverApiUsesItsOwnCorrelation) {
  auto copy = memcpy_record(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, 64, 10, 20, 555);
  copy.runtimeCorrelationId = 0;
  EXPECT_EQ(profkit::cupti::memcpy_correlation_id(copy), 555u);
  EXPECT_EQ(profkit::cupti::memcpy_name(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD), "Memcpy DtoD");
  EXPECT_EQ(profkit::cupti::memcpy_name(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH), "Memcpy DtoH");
  EXPECT_EQ(profkit::cupti::memcpy_name(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP), "Memcpy PtoP");
  EXPECT_EQ(profkit::cupti::memcpy_name(200), "Memcpy");
}

TEST(CuptiDecoder, DriverLaunchRecordsAreNamedFromTheDriverTable) {
  SyntheticBuffer buf;
  const auto launch_cbids = profkit::cupti::kernel_launch_driver_cbids();
  ASSERT_FALSE(launch_cbids.empty());
  buf.add(api_record(launch_cbids.front(), 1600, 1700, 3, kTid, /*driver=*/true));
  buf.add(kernel_record("triton_poi_fused_0", 1800, 1900, 3));
  ActivityStore store(profkit::cupti::api_display_name);
  decode_buffer(buf.data(), buf.size(), synthetic_next_record, recording(), &store);
  auto r = collect(store);
  ASSERT_EQ(r->device_events.size(), 1u);
  EXPECT_EQ(name_of(*r, r->device_events[0].name), "triton_poi_fused_0");
  EXPECT_EQ(name_of(*r, r->host_events[r->device_events[0].launch_event].name), "cuLaunchKernel");
}

TEST(CuptiDecoder, RecordsWithoutTimestampsAreFlagged) {
  SyntheticBuffer buf;
  buf.add(api_record(kLaunchKernel, 1800, 1900, 8, kTid));
  buf.add(kernel_record("_Z1kv", 0, 0, 8));
  ActivityStore store(profkit::cupti::api_display_name);
  decode_buffer(buf.data(), buf.size(), synthetic_next_record, recording(5000), &store);  // 0 is not "before"
  auto r = collect(store, 1, 1'000'000);
  // The runtime call (1800) is before accept_from (5000); the kernel has no time.
  EXPECT_EQ(r->device_events.size(), 1u);
  EXPECT_EQ(r->device_events[0].flags, PK_DEVICE_EVENT_NO_TIMING);
  EXPECT_EQ(r->info.unattached_device_records, 1u);
}

TEST(CuptiDecoder, RecordsFlushedBeforeTheWorkEndedAreUntimedNotZeroLength) {
  // A forced flush (end of a window) hands over a kernel still running with
  // its end missing (0); a copy can come with an end before its start. Their
  // durations are unknown: they must not read as GPU work that took no time.
  SyntheticBuffer buf;
  buf.add(api_record(kLaunchKernel, 1800, 1900, 8, kTid));
  buf.add(kernel_record("_Z1kv", 2000, 0, 8));
  buf.add(api_record(kMemcpyAsync, 2100, 2200, 9, kTid));
  buf.add(memcpy_record(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 64, 2500, 2400, 9));
  buf.add(kernel_record("_Z1kv", 3000, 4000, 10));  // a complete one, for contrast
  ActivityStore store(profkit::cupti::api_display_name);
  const DecodeStats stats = decode_buffer(buf.data(), buf.size(), synthetic_next_record, recording(), &store);
  EXPECT_EQ(stats.incomplete, 2u);
  EXPECT_EQ(stats.kept, 5u);
  auto r = collect(store);
  ASSERT_EQ(r->device_events.size(), 3u);
  for (const pk_device_event& e : r->device_events) {
    if (e.correlation_id == 10) {
      EXPECT_EQ(e.flags, 0u);
      EXPECT_EQ(e.end_ns - e.start_ns, 1000u);
      continue;
    }
    EXPECT_EQ(e.flags, PK_DEVICE_EVENT_NO_TIMING) << e.correlation_id;
    // Placed at the end of its launch call, like a record without timestamps.
    EXPECT_EQ(e.start_ns, e.correlation_id == 8 ? 1900u : 2200u);
    EXPECT_EQ(e.end_ns, e.start_ns);
    EXPECT_NE(e.launch_event, PK_NO_EVENT);
  }
}

TEST(CuptiDecoder, NothingIsKeptBeforeRecordingBegins) {
  SyntheticBuffer buf;
  buf.add(api_record(kLaunchKernel, 100, 200, 1, kTid));
  buf.add(kernel_record("_Z1kv", 300, 400, 1));
  buf.add(kernel_record("_Z1kv", 0, 0, 2));
  ActivityStore store(profkit::cupti::api_display_name);
  DecodeFilter warm_up;  // armed, not recording
  const DecodeStats stats = decode_buffer(buf.data(), buf.size(), synthetic_next_record, warm_up, &store);
  EXPECT_EQ(stats.records, 3u);
  EXPECT_EQ(stats.kept, 0u);
  EXPECT_EQ(stats.not_accepted, 3u);
  EXPECT_TRUE(store.empty());

  // Recording from t=250: the call at 100 is before the window, the kernel at 300 is in.
  const DecodeStats later = decode_buffer(buf.data(), buf.size(), synthetic_next_record, recording(250), &store);
  EXPECT_EQ(later.before_window, 1u);
  EXPECT_EQ(later.kept, 2u);
}

TEST(CuptiDecoder, OtherKindsAreSkippedAndABrokenBufferCountsAsDropped) {
  SyntheticBuffer buf;
  CUpti_ActivityMarker2 marker;
  std::memset(&marker, 0, sizeof marker);
  marker.kind = CUPTI_ACTIVITY_KIND_MARKER;
  buf.add(marker);
  buf.add(kernel_record("_Z1kv", 300, 400, 1));
  ActivityStore store(profkit::cupti::api_display_name);
  DecodeStats stats = decode_buffer(buf.data(), buf.size(), synthetic_next_record, recording(), &store);
  EXPECT_EQ(stats.other_kinds, 1u);
  EXPECT_EQ(stats.kept, 1u);
  EXPECT_EQ(stats.dropped, 0u);

  // The valid size cuts the last record in half: the walk stops there.
  SyntheticBuffer cut;
  cut.add(kernel_record("_Z1kv", 300, 400, 1));
  cut.add(kernel_record("_Z1kv", 500, 600, 2));
  ActivityStore store2(profkit::cupti::api_display_name);
  stats = decode_buffer(cut.data(), cut.size() - 8, synthetic_next_record, recording(), &store2);
  EXPECT_EQ(stats.kept, 1u);
  EXPECT_EQ(stats.dropped, 1u);
  EXPECT_EQ(store2.dropped(), 1u);

  // Empty and null buffers are nothing at all.
  EXPECT_EQ(decode_buffer(nullptr, 0, synthetic_next_record, recording(), &store2).records, 0u);
  EXPECT_EQ(store2.dropped(), 1u);
}

TEST(CuptiDecoder, StoreCapDropsAreCounted) {
  SyntheticBuffer buf;
  for (uint32_t i = 0; i < 10; ++i) buf.add(kernel_record("_Z1kv", 300 + i, 400 + i, i + 1));
  ActivityStore store(profkit::cupti::api_display_name, 4);
  const DecodeStats stats = decode_buffer(buf.data(), buf.size(), synthetic_next_record, recording(), &store);
  EXPECT_EQ(stats.kept, 4u);
  EXPECT_EQ(stats.dropped, 6u);
  auto r = collect(store);
  EXPECT_EQ(r->device_events.size(), 4u);
  EXPECT_EQ(r->info.dropped_device_records, 6u);
}

// pk_device_event holds 16 bits of a device id, and a Chrome trace's GPU
// process (pid + stride * (device + 1)) fits Perfetto's 32-bit pids up to
// kMaxDeviceId: a record naming a device past it is damaged, and is dropped
// and counted rather than shown on another device (before: clamped, device
// 70000 showed as "GPU 65535").
static_assert(profkit::cupti::kMaxDeviceId < profkit::kStridedDeviceCount,
              "every device the decoder keeps has the documented GPU process id");

TEST(CuptiDecoder, RecordsOfADevicePastTheLastOneShownAreDroppedAndCounted) {
  using profkit::cupti::kMaxDeviceId;
  SyntheticBuffer buf;
  buf.add(api_record(kLaunchKernel, 1800, 1900, 8, kTid));
  buf.add(kernel_record("_Z1kv", 2000, 3000, 8, 7, 70000));
  buf.add(api_record(kLaunchKernel, 3100, 3200, 9, kTid));
  buf.add(kernel_record("_Z1kv", 3300, 3400, 9, 7, kMaxDeviceId + 1));
  profkit::cupti::MemcpyRecord copy = memcpy_record(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 64, 3500, 3600, 10);
  copy.deviceId = UINT32_MAX;
  buf.add(copy);
  profkit::cupti::MemsetRecord set = memset_record(64, 0, 3700, 3800, 11);
  set.deviceId = 1u << 16;
  buf.add(set);
  buf.add(api_record(kLaunchKernel, 3900, 4000, 12, kTid));
  buf.add(kernel_record("_Z1kv", 4100, 4200, 12, 7, kMaxDeviceId));  // the last one kept
  ActivityStore store(profkit::cupti::api_display_name);
  const DecodeStats stats = decode_buffer(buf.data(), buf.size(), synthetic_next_record, recording(), &store);
  EXPECT_EQ(stats.records, 8u);
  EXPECT_EQ(stats.bad_device, 4u);
  EXPECT_EQ(stats.dropped, 4u);
  EXPECT_EQ(stats.kept, 4u);  // the three runtime calls and the kernel on kMaxDeviceId
  auto r = collect(store);
  ASSERT_EQ(r->device_events.size(), 1u);
  EXPECT_EQ(r->device_events[0].device, kMaxDeviceId);
  EXPECT_EQ(r->info.dropped_device_records, 4u);  // the Result says GPU records are missing
}

TEST(CuptiApiNames, GeneratedFromTheHeaders) {
  EXPECT_STREQ(profkit::cupti::runtime_api_name(kLaunchKernel), "cudaLaunchKernel");
  EXPECT_STREQ(profkit::cupti::runtime_api_name(kMemcpyAsync), "cudaMemcpyAsync");
  EXPECT_STREQ(profkit::cupti::runtime_api_name(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000),
               "cudaLaunchKernel_ptsz");
  EXPECT_STREQ(profkit::cupti::driver_api_name(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel), "cuLaunchKernel");
  EXPECT_EQ(profkit::cupti::runtime_api_name(0), nullptr);
  EXPECT_EQ(profkit::cupti::api_display_name(false, 999999), "cudaRuntimeApi#999999");
  EXPECT_EQ(profkit::cupti::api_display_name(true, 999999), "cuDriverApi#999999");
  const auto noisy = profkit::cupti::noisy_runtime_cbids();
  EXPECT_NE(std::find(noisy.begin(), noisy.end(), CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020), noisy.end());
  EXPECT_NE(std::find(noisy.begin(), noisy.end(), CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020), noisy.end());
  EXPECT_EQ(std::find(noisy.begin(), noisy.end(), kLaunchKernel), noisy.end());
  const auto launches = profkit::cupti::kernel_launch_driver_cbids();
  EXPECT_NE(std::find(launches.begin(), launches.end(), CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel), launches.end());
  EXPECT_NE(std::find(launches.begin(), launches.end(), CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx), launches.end());
}

}  // namespace
