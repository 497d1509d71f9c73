// Chrome export of GPU activity shaped like the tracer's: one process per
// GPU, one lane per stream, kernel and memcpy/memset arguments, flow arrows
// from each launch to its GPU work, and records without timestamps that do
// not drag the trace's time base to zero.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "cupti/activity_store.h"
#include "export/chrome_trace.h"
#include "test_support.h"
#include "trace/result_builder.h"

namespace {

using profkit::cupti::ActivityStore;
using profkit::cupti::ApiCall;
using profkit::cupti::CollectSpan;
using profkit::cupti::GpuDevice;
using profkit::cupti::LaunchShape;

constexpr uint32_t kTid = 77;
constexpr uint64_t kBase = 5'000'000;  // the span starts here (engine ns)

std::string api_name(bool, uint32_t cbid) {
  return cbid == 211 ? "cudaLaunchKernel" : cbid == 41 ? "cudaMemcpyAsync" : "cudaMemsetAsync";
}

pk_device_event gpu(uint64_t start, uint64_t end, uint32_t correlation, uint8_t type, uint32_t stream,
                    uint8_t flags = 0) {
  pk_device_event e{};
  e.start_ns = start;
  e.end_ns = end;
  e.correlation_id = correlation;
  e.stream = stream;
  e.context = 1;
  e.type = type;
  e.flags = flags;
  return e;
}

std::unique_ptr<profkit::Result> gpu_result() {
  ActivityStore s(api_name);
  auto add_call = [&](uint64_t start, uint32_t correlation, uint32_t cbid) {
    ApiCall c;
    c.start_ns = start;
    c.end_ns = start + 2'000;
    c.tid = kTid;
    c.correlation_id = correlation;
    c.name = s.api_name(false, cbid);
    s.add_api_call(c);
  };
  add_call(kBase + 10'000, 1, 211);
  add_call(kBase + 20'000, 2, 41);
  add_call(kBase + 30'000, 3, 51);
  add_call(kBase + 40'000, 4, 211);

  LaunchShape shape;
  shape.grid[0] = 264;
  shape.grid[1] = shape.grid[2] = 1;
  shape.block[0] = 256;
  shape.block[1] = shape.block[2] = 1;
  shape.registers_per_thread = 32;
  pk_device_event k = gpu(kBase + 15'000, kBase + 25'000, 1, PK_EVENT_KERNEL, 7);
  k.name = s.kernel_name("_Z6vecAddPfS_i");
  s.add_kernel(k, shape);
  pk_device_event c = gpu(kBase + 26'000, kBase + 27'000, 2, PK_EVENT_MEMCPY, 13);
  c.name = s.intern_name("Memcpy HtoD");
  pk_memory_op_detail cd{};
  cd.bytes = 1'000'000;
  cd.copy_kind = 1;
  cd.src_kind = 2;
  cd.dst_kind = 3;
  s.add_memory_op(c, cd);
  pk_device_event m = gpu(kBase + 35'000, kBase + 35'500, 3, PK_EVENT_MEMSET, 13);
  m.name = s.intern_name("Memset");
  pk_memory_op_detail md{};
  md.bytes = 4096;
  md.value = 255;
  md.dst_kind = 3;
  s.add_memory_op(m, md);
  pk_device_event untimed = gpu(0, 0, 4, PK_EVENT_KERNEL, 7, PK_DEVICE_EVENT_NO_TIMING);
  untimed.name = s.kernel_name("_Z7untimedv");
  s.add_kernel(untimed, shape);

  profkit::ResultInfo info;
  info.pid = 1234;
  info.start_ns = kBase;
  info.end_ns = kBase + 100'000;
  profkit::ResultBuilder b(info);
  b.add_string("");
  const uint32_t t = b.thread(kTid);
  b.add_event(t, {kBase + 5'000, kBase + 50'000, b.add_string("aten::linear"), PK_EVENT_OPERATOR, 0, 0});
  CollectSpan span;
  span.start_ns = kBase;
  span.end_ns = kBase + 100'000;
  span.windows.push_back({span.start_ns, span.end_ns});
  GpuDevice d;
  d.info.id = 0;
  d.info.name = "H100";
  d.limits.compute_major = 9;
  d.limits.sm_count = 132;
  d.limits.max_threads_per_block = 1024;
  d.limits.max_threads_per_sm = 2048;
  d.limits.max_blocks_per_sm = 32;
  d.limits.registers_per_block = 65536;
  d.limits.registers_per_sm = 65536;
  d.limits.shared_memory_per_block = 49152;
  d.limits.shared_memory_per_sm = 233472;
  s.contribute(b, span, {d});
  return b.finish();
}

std::string export_json(const profkit::Result& r) {
  profkit_test::TempDir dir;
  const std::string path = dir.file("gpu.json");
  profkit::export_chrome_trace(r, path, profkit::ChromeOptions{});
  return profkit_test::read_file(path);
}

TEST(GpuChromeExport, DeviceLanesArgumentsAndFlows) {
  auto r = gpu_result();
  const std::string json = export_json(*r);
  auto has = [&](const std::string& s) { return json.find(s) != std::string::npos; };
  const std::string gpu_pid = std::to_string(1234 + profkit::kDeviceProcessStride);
  const std::string cpp_lane = std::to_string(kTid + profkit::kCppLaneOffset);

  EXPECT_TRUE(has("\"name\":\"process_name\",\"pid\":" + gpu_pid + ",\"tid\":0,\"args\":{\"name\":\"GPU 0 (H100)\"}"))
      << json;
  EXPECT_TRUE(has("\"pid\":" + gpu_pid + ",\"tid\":7,\"args\":{\"name\":\"Stream 7\"}"));
  EXPECT_TRUE(has("\"pid\":" + gpu_pid + ",\"tid\":13,\"args\":{\"name\":\"Stream 13\"}"));

  // The kernel: 10 us after the base, on stream 7, with its launch shape.
  EXPECT_TRUE(has("\"cat\":\"Kernel\",\"name\":\"vecAdd(float*, float*, int)\",\"ts\":15.000,\"dur\":10.000,\"pid\":" +
                  gpu_pid + ",\"tid\":7"))
      << json;
  EXPECT_TRUE(has("\"grid\":[264,1,1],\"block\":[256,1,1],\"registers per thread\":32"));
  EXPECT_TRUE(has("\"blocks per SM\":2,\"warps per SM\":16,\"theoretical occupancy %\":100"));
  EXPECT_TRUE(has("\"correlation id\":1"));

  // The copy and the set, with their own arguments.
  EXPECT_TRUE(
      has("\"bytes\":1000000,\"kind\":\"HtoD\",\"src kind\":\"Pinned\",\"dst kind\":\"Device\","
          "\"bandwidth GB/s\":1000"))
      << json;
  EXPECT_TRUE(has("\"bytes\":4096,\"value\":255,\"memory kind\":\"Device\""));

  // The launch calls on the thread's C++ lane, and an arrow from each to its GPU work.
  EXPECT_TRUE(
      has("\"cat\":\"CudaRuntime\",\"name\":\"cudaLaunchKernel\",\"ts\":10.000,\"dur\":2.000,\"pid\":1234,"
          "\"tid\":" +
          cpp_lane))
      << json;
  EXPECT_TRUE(
      has("\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"launch\",\"id\":1,\"ts\":10.000,\"pid\":1234,\"tid\":" + cpp_lane));
  EXPECT_TRUE(has("\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"ac2g\",\"name\":\"launch\",\"id\":1,\"ts\":15.000,\"pid\":" +
                  gpu_pid + ",\"tid\":7"));
}

TEST(GpuChromeExport, RecordsWithoutTimingKeepTheTimeBase) {
  auto r = gpu_result();
  const std::string json = export_json(*r);
  EXPECT_NE(json.find("\"base_ns\":" + std::to_string(kBase)), std::string::npos) << json;
  // The untimed kernel sits at the end of its launch call (+40 us + 2 us), flagged.
  EXPECT_NE(json.find("\"name\":\"untimed()\",\"ts\":42.000,\"dur\":0.000"), std::string::npos) << json;
  EXPECT_NE(json.find("\"no timing\":true"), std::string::npos);

  // Even a record whose times are 0 (a hand-made or older Result) leaves the
  // base alone and is drawn at the start.
  auto raw = gpu_result();
  bool found = false;
  for (const pk_device_event& d : raw->device_events) {
    if ((d.flags & PK_DEVICE_EVENT_NO_TIMING) == 0) continue;
    auto& editable = const_cast<pk_device_event&>(d);
    editable.start_ns = editable.end_ns = 0;
    found = true;
  }
  ASSERT_TRUE(found);
  const std::string json0 = export_json(*raw);
  EXPECT_NE(json0.find("\"base_ns\":" + std::to_string(kBase)), std::string::npos) << json0;
  EXPECT_NE(json0.find("\"name\":\"untimed()\",\"ts\":0.000"), std::string::npos) << json0;
}

}  // namespace
