// Loading profkit's own Chrome JSON back: every record and fact of a Result
// survives export + load (names as JSON carries them), and every kind of bad
// file gives a clear error naming it, never a crash or a partial result.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "export/chrome_json_values.h"
#include "export/chrome_trace.h"
#include "export/chrome_trace_reader.h"
#include "export/json_escape.h"
#include "profkit/profkit.h"
#include "result_expectations.h"
#include "sample_result.h"
#include "storage/trace_file.h"
#include "summary/json_writer.h"
#include "summary/summary.h"
#include "summary/summary_options.h"
#include "test_support.h"
#include "trace/result_builder.h"

namespace profkit {
namespace {

using profkit_test::read_file;
using profkit_test::TempDir;
using profkit_test::write_file;

// JSON cannot carry invalid UTF-8 (the writer replaces it), so names compare
// as the writer escapes them.
std::string as_json(std::string_view text) {
  std::string out;
  append_json_escaped(out, text);
  return out;
}

// Everything but string ids (a loaded table holds the same texts in its own
// order) and kernel ratios (6 significant digits in the file) is exact.
void expect_same_result(const Result& a, const Result& b) {
  profkit_test::expect_same_info(a.info, b.info);
  EXPECT_EQ(a.info.schema_version, b.info.schema_version);
  ASSERT_EQ(a.threads.size(), b.threads.size());
  for (size_t i = 0; i < a.threads.size(); ++i) {
    EXPECT_EQ(a.threads[i].tid, b.threads[i].tid);
    EXPECT_EQ(a.threads[i].name, b.threads[i].name);
    EXPECT_EQ(a.threads[i].first_event, b.threads[i].first_event);
    EXPECT_EQ(a.threads[i].event_count, b.threads[i].event_count);
  }
  ASSERT_EQ(a.host_events.size(), b.host_events.size());
  for (size_t i = 0; i < a.host_events.size(); ++i) {
    const pk_host_event& x = a.host_events[i];
    const pk_host_event& y = b.host_events[i];
    EXPECT_EQ(x.start_ns, y.start_ns) << i;
    EXPECT_EQ(x.end_ns, y.end_ns) << i;
    EXPECT_EQ(x.type, y.type) << i;
    EXPECT_EQ(x.depth, y.depth) << i;
    EXPECT_EQ(x.flags, y.flags) << i;
    EXPECT_EQ(as_json(a.strings.view(x.name)), as_json(b.strings.view(y.name))) << i;
  }
  ASSERT_EQ(a.event_args.size(), b.event_args.size());
  for (size_t i = 0; i < a.event_args.size(); ++i) {
    const pk_event_arg& x = a.event_args[i];
    const pk_event_arg& y = b.event_args[i];
    EXPECT_EQ(x.event, y.event);
    EXPECT_EQ(x.kind, y.kind);
    EXPECT_EQ(a.strings.view(x.key), b.strings.view(y.key));
    if (x.kind == PK_ARG_STRING) {
      EXPECT_EQ(as_json(a.strings.view(static_cast<size_t>(x.value))),
                as_json(b.strings.view(static_cast<size_t>(y.value))));
    } else {
      EXPECT_EQ(x.value, y.value);
    }
  }
  ASSERT_EQ(a.memory_events.size(), b.memory_events.size());
  if (!a.memory_events.empty()) {
    EXPECT_EQ(
        std::memcmp(a.memory_events.data(), b.memory_events.data(), a.memory_events.size() * sizeof(pk_memory_event)),
        0);
  }
  ASSERT_EQ(a.device_events.size(), b.device_events.size());
  for (size_t i = 0; i < a.device_events.size(); ++i) {
    pk_device_event x = a.device_events[i];
    pk_device_event y = b.device_events[i];
    EXPECT_EQ(a.strings.view(x.name), b.strings.view(y.name)) << i;
    x.name = y.name = 0;
    EXPECT_EQ(std::memcmp(&x, &y, sizeof x), 0) << "device event " << i;
  }
  ASSERT_EQ(a.kernel_details.size(), b.kernel_details.size());
  for (size_t i = 0; i < a.kernel_details.size(); ++i) {
    const pk_kernel_detail& x = a.kernel_details[i];
    const pk_kernel_detail& y = b.kernel_details[i];
    for (int d = 0; d < 3; ++d) {
      EXPECT_EQ(x.grid[d], y.grid[d]);
      EXPECT_EQ(x.block[d], y.block[d]);
    }
    EXPECT_EQ(x.registers_per_thread, y.registers_per_thread);
    EXPECT_EQ(x.static_shared_memory, y.static_shared_memory);
    EXPECT_EQ(x.dynamic_shared_memory, y.dynamic_shared_memory);
    EXPECT_NEAR(x.blocks_per_sm, y.blocks_per_sm, 1e-5 * std::fabs(x.blocks_per_sm));
    EXPECT_NEAR(x.warps_per_sm, y.warps_per_sm, 1e-5 * std::fabs(x.warps_per_sm));
    EXPECT_NEAR(x.occupancy, y.occupancy, 1e-5);
  }
  ASSERT_EQ(a.memory_op_details.size(), b.memory_op_details.size());
  if (!a.memory_op_details.empty()) {
    EXPECT_EQ(std::memcmp(a.memory_op_details.data(), b.memory_op_details.data(),
                          a.memory_op_details.size() * sizeof(pk_memory_op_detail)),
              0);
  }
  ASSERT_EQ(a.devices.size(), b.devices.size());
  for (size_t i = 0; i < a.devices.size(); ++i) {
    EXPECT_EQ(a.devices[i].id, b.devices[i].id);
    EXPECT_EQ(a.devices[i].name, b.devices[i].name);
    EXPECT_EQ(a.devices[i].sm_count, b.devices[i].sm_count);
    EXPECT_EQ(a.devices[i].compute_major, b.devices[i].compute_major);
    EXPECT_EQ(a.devices[i].compute_minor, b.devices[i].compute_minor);
    EXPECT_EQ(a.devices[i].total_memory, b.devices[i].total_memory);
    EXPECT_EQ(a.devices[i].max_threads_per_sm, b.devices[i].max_threads_per_sm);
    EXPECT_EQ(a.devices[i].max_registers_per_sm, b.devices[i].max_registers_per_sm);
    EXPECT_EQ(a.devices[i].max_shared_memory_per_sm, b.devices[i].max_shared_memory_per_sm);
    EXPECT_EQ(a.devices[i].max_blocks_per_sm, b.devices[i].max_blocks_per_sm);
    EXPECT_EQ(a.devices[i].warp_size, b.devices[i].warp_size);
  }
  EXPECT_EQ(a.metadata, b.metadata);
}

// A hand-made result's info: process `pid`, recorded over [start, end).
ResultInfo window_info(uint32_t pid, uint64_t start_ns, uint64_t end_ns) {
  ResultInfo info;
  info.pid = pid;
  info.start_ns = start_ns;
  info.end_ns = end_ns;
  return info;
}

std::unique_ptr<Result> export_and_read(const Result& r, const std::string& path, const ChromeOptions& options = {}) {
  export_chrome_trace(r, path, options);
  EXPECT_TRUE(looks_like_json_file(path));
  return read_chrome_trace(path);
}

TEST(ChromeJsonValues, TimesAreExactInTheWritersLayoutAndRoundedOtherwise) {
  EXPECT_EQ(parse_us("1234.567"), 1234567u);
  EXPECT_EQ(parse_us("0.5"), 500u);
  EXPECT_EQ(parse_us("7"), 7000u);
  EXPECT_EQ(parse_us("18446744073709.551"), 18446744073709551u);  // past a double's 53 bits, still exact
  EXPECT_EQ(parse_us("1.5e3"), 1500000u);
  EXPECT_EQ(parse_us("1.2345"), 1235u);  // more digits than ns: rounded
  EXPECT_EQ(parse_us("-1.000"), std::nullopt);
  EXPECT_EQ(parse_us("1e30"), std::nullopt);
  EXPECT_EQ(parse_us("12x"), std::nullopt);
  EXPECT_EQ(parse_us(""), std::nullopt);
  EXPECT_EQ(parse_integer<uint64_t>("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(parse_integer<uint64_t>("18446744073709551616"), std::nullopt);
  EXPECT_EQ(parse_integer<uint32_t>("1.0"), std::nullopt);
  EXPECT_EQ(parse_integer<int64_t>("-42"), -42);
}

TEST(ChromeJsonValues, LaneAndDurationLabelsGiveBackTheNames) {
  EXPECT_EQ(thread_name_from_lane("MainThread (Python) [11]", 11), "MainThread");
  EXPECT_EQ(thread_name_from_lane("loader (C++) [12]", 12), "loader");
  EXPECT_EQ(thread_name_from_lane("Thread 12 (C++) [12]", 12), "");
  EXPECT_EQ(thread_name_from_lane("worker (overlapping 2) [13]", 13), "worker");
  EXPECT_EQ(thread_name_from_lane("odd [1]", 11), "odd [1]");
  std::string name = "aten::mm[1.23 ms]";
  strip_duration_label(name);
  EXPECT_EQ(name, "aten::mm");
  name = "plain";
  strip_duration_label(name);
  EXPECT_EQ(name, "plain");
}

TEST(ChromeImport, RoundTripKeepsEveryRecordAndFact) {
  TempDir dir;
  auto original = profkit_test::make_sample_result();
  auto loaded = export_and_read(*original, dir.file("sample.trace.json"));
  expect_same_result(*original, *loaded);
  // The kernel launched by runtime call 501 still points at that call.
  ASSERT_EQ(loaded->device_events.size(), 3u);
  ASSERT_NE(loaded->device_events[0].launch_event, PK_NO_EVENT);
  EXPECT_EQ(loaded->strings.view(loaded->host_events[loaded->device_events[0].launch_event].name), "cudaLaunchKernel");
}

TEST(ChromeImport, LabelsPlacementAndMissingFlowsReadBackTheSame) {
  TempDir dir;
  auto original = profkit_test::make_sample_result();
  ChromeOptions options;
  options.label_durations = true;
  options.include_flows = false;
  options.use_time_base = true;
  options.time_base_wall_ns = original->info.clock_offset_ns + 400;  // 600 ns before the first event
  expect_same_result(*original, *export_and_read(*original, dir.file("labelled.trace.json"), options));
}

TEST(ChromeImport, TiesNestingMemoryOnlyThreadsAndManyEventsSurvive) {
  TempDir dir;
  ResultBuilder b(window_info(7, 5'000'000'000, 6'000'000'000));
  b.add_string("");
  const uint32_t outer = b.add_string("outer");
  const uint32_t inner = b.add_string("inner");
  const uint32_t key = b.add_string("count");
  const uint32_t main_thread = b.thread(100);
  // Same start and end at three depths, an instant at a parent's start, an
  // int argument on the middle one, and a long run of siblings.
  b.add_event(main_thread, {5'000'000'001, 5'000'000'009, outer, PK_EVENT_FORWARD, 0, 0});
  b.add_event(main_thread, {5'000'000'001, 5'000'000'009, inner, PK_EVENT_OPERATOR, 1, 0});
  b.add_arg(main_thread, 5'000'000'001, 1, key, PK_ARG_INT, -42);
  b.add_event(main_thread, {5'000'000'001, 5'000'000'009, inner, PK_EVENT_OPERATOR_INNER, 2, 0});
  b.add_event(main_thread, {5'000'000'010, 5'000'000'010, outer, PK_EVENT_USER_DEFINED, 0, PK_HOST_EVENT_INSTANT});
  for (uint64_t i = 0; i < 5000; ++i) {
    b.add_event(main_thread, {5'000'001'000 + i * 7, 5'000'001'000 + i * 7 + 5, inner, PK_EVENT_OPERATOR, 0, 0});
  }
  const uint32_t allocator_thread = b.thread(101);  // memory only, no events
  b.add_memory_event({5'000'000'003, 0x1000, 256, 256, 4096, allocator_thread, -1});
  b.add_memory_event({5'000'000'004, 0x1000, -256, 0, 4096, allocator_thread, -1});
  b.add_memory_event({5'000'000'005, 0x2000, 512, 512, 1024, main_thread, 3});
  auto original = b.finish();
  expect_same_result(*original, *export_and_read(*original, dir.file("ties.trace.json")));
}

// Steps are not on the recording stack, so a range begun in one step and
// ended in the next crosses the step's end. A viewer's lane holds nested
// slices only: such events go to an overlap lane of their thread, which
// reads back as that thread.
TEST(ChromeImport, EventsCrossingAnEnclosingOneGetAnOverlapLaneAndLoadBack) {
  TempDir dir;
  ResultBuilder b(window_info(7, 1'000, 9'000));
  b.add_string("");
  const uint32_t step0 = b.add_string("ProfileStep#0");
  const uint32_t step1 = b.add_string("ProfileStep#1");
  const uint32_t prefetch = b.add_string("prefetch");
  const uint32_t op = b.add_string("aten::add");
  const uint32_t t = b.thread(100);
  b.add_event(t, {1'000, 3'000, step0, PK_EVENT_PROFILE_STEP, 0, 0});
  b.add_event(t, {1'500, 2'000, prefetch, PK_EVENT_PYTHON_USER_DEFINED, 0, 0});  // nested: stays
  b.add_event(t, {2'500, 4'000, prefetch, PK_EVENT_PYTHON_USER_DEFINED, 0, 0});  // crosses step 0's end
  b.add_event(t, {2'600, 2'700, op, PK_EVENT_OPERATOR, 1, 0});                   // C++ lane: nested
  b.add_event(t, {3'000, 5'000, step1, PK_EVENT_PROFILE_STEP, 0, 0});
  auto original = b.finish();
  const std::string path = dir.file("crossing.trace.json");
  export_chrome_trace(*original, path, ChromeOptions{});
  const std::string json = profkit_test::read_file(path);
  auto lane_of = [&](const std::string& ts) {
    const size_t at = json.find("\"ts\":" + ts + ",");
    EXPECT_NE(at, std::string::npos) << ts;
    const size_t tid = json.find("\"tid\":", at) + 6;
    return std::stoull(json.substr(tid, json.find_first_of(",}", tid) - tid));
  };
  EXPECT_EQ(lane_of("0.500"), 100u);                       // the nested prefetch (ts relative to 1 µs)
  EXPECT_EQ(lane_of("1.500"), 100u + kOverlapLaneOffset);  // the crossing one
  EXPECT_EQ(lane_of("1.600"), 100u + kCppLaneOffset);      // its operator
  EXPECT_EQ(lane_of("2.000"), 100u);                       // step 1
  EXPECT_NE(json.find("\"name\":\"Thread 100 (Python, overlapping) [100]\""), std::string::npos);
  EXPECT_EQ(json.find("C++, overlapping"), std::string::npos);
  expect_same_result(*original, *read_chrome_trace(path));
}

// A damaged .pktrace can hold any float; JSON has no NaN or infinity, and
// the export must stay a file every reader (and load) accepts.
TEST(ChromeImport, NonFiniteKernelFiguresExportAsZero) {
  TempDir dir;
  ResultBuilder b(window_info(7, 100, 900));
  b.add_string("");
  const uint32_t kernel = b.add_string("k");
  pk_kernel_detail k{};
  k.blocks_per_sm = std::nanf("");
  k.warps_per_sm = HUGE_VALF;
  k.occupancy = 0.5f;
  b.add_device_event({200, 300, 0, kernel, 1, 7, 1, 0, PK_EVENT_KERNEL, 0, b.add_kernel_detail(k)});
  auto original = b.finish();
  const std::string path = dir.file("nan.trace.json");
  export_chrome_trace(*original, path, ChromeOptions{});
  const std::string json = read_file(path);
  EXPECT_EQ(json.find("nan"), std::string::npos);
  EXPECT_EQ(json.find("inf"), std::string::npos);
  EXPECT_NE(json.find("\"blocks per SM\":0,"), std::string::npos);
  const auto loaded = read_chrome_trace(path);
  ASSERT_EQ(loaded->kernel_details.size(), 1u);
  EXPECT_EQ(loaded->kernel_details[0].blocks_per_sm, 0.0f);
  EXPECT_EQ(loaded->kernel_details[0].occupancy, 0.5f);
}

TEST(ChromeImport, GpuWorkWithoutHostEventsMakesNoThreadsOfItsStreams) {
  TempDir dir;
  ResultBuilder b(window_info(9, 100, 900));
  b.add_string("");
  const uint32_t kernel = b.add_string("k");
  b.add_device_event({200, 300, 0, kernel, 1, 7, 1, 0, PK_EVENT_KERNEL, 0, PK_NO_DETAIL});
  auto original = b.finish();
  auto loaded = export_and_read(*original, dir.file("gpu_only.trace.json"));
  EXPECT_TRUE(loaded->threads.empty());
  expect_same_result(*original, *loaded);
}

// pk_begin_event takes every type: host events typed Kernel, Memcpy or
// Memset sit on the host process and must not be read as GPU work (which
// needs a "device" argument), even with an argument named "device".
TEST(ChromeImport, HostEventsOfDeviceTypesLoadBackAsHostEvents) {
  TempDir dir;
  ResultBuilder b(window_info(7, 1'000, 9'000));
  b.add_string("");
  const uint32_t copy = b.add_string("host copy");
  const uint32_t launch = b.add_string("my kernel wrapper");
  const uint32_t fill = b.add_string("host fill");
  const uint32_t op = b.add_string("aten::copy_");
  const uint32_t device_key = b.add_string("device");
  const uint32_t gpu_kernel = b.add_string("gpu kernel");
  const uint32_t gpu_copy = b.add_string("Memcpy HtoD");
  const uint32_t t = b.thread(100);
  // The file's first event: a host Memcpy with a "device" argument.
  b.add_event(t, {1'100, 1'900, copy, PK_EVENT_MEMCPY, 0, 0});
  b.add_arg(t, 1'100, 0, device_key, PK_ARG_INT, 0);
  b.add_event(t, {2'000, 3'000, op, PK_EVENT_OPERATOR, 0, 0});
  b.add_event(t, {2'100, 2'500, launch, PK_EVENT_KERNEL, 1, 0});
  b.add_event(t, {2'600, 2'600, fill, PK_EVENT_MEMSET, 1, PK_HOST_EVENT_INSTANT});
  b.add_event(t, {2'700, 2'900, fill, PK_EVENT_MEMSET, 1, 0});
  // Real GPU work beside them, on two devices.
  b.add_device_event({4'000, 5'000, 0, gpu_kernel, 11, 7, 1, 0, PK_EVENT_KERNEL, 0, PK_NO_DETAIL});
  b.add_device_event({5'500, 6'000, 0, gpu_copy, 12, 13, 1, 1, PK_EVENT_MEMCPY, 0, PK_NO_DETAIL});
  auto original = b.finish();
  ASSERT_EQ(original->host_events.size(), 5u);
  auto loaded = export_and_read(*original, dir.file("host_typed.trace.json"));
  expect_same_result(*original, *loaded);
  // Placed under another host pid, its GPUs' processes move with it.
  ChromeOptions placed;
  placed.pid = 3;
  expect_same_result(*original, *export_and_read(*original, dir.file("placed.trace.json"), placed));
}

// The same through the C ABI, from events recorded as a framework hook would.
TEST(ChromeImport, RecordedHostEventsOfDeviceTypesRoundTripThroughTheCAbi) {
  profkit_test::reset_engine();
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event(pk_intern("outer op"), PK_EVENT_OPERATOR);
  for (const pk_event_type type : {PK_EVENT_KERNEL, PK_EVENT_MEMCPY, PK_EVENT_MEMSET}) {
    pk_begin_event(pk_intern("host-side work"), type);
    pk_event_arg_int(pk_intern("device"), 0);
    pk_end_event();
  }
  pk_end_event();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  profkit_test::ResultPtr recorded = profkit_test::collect();
  ASSERT_TRUE(recorded);
  TempDir dir;
  const std::string path = dir.file("recorded.trace.json");
  ASSERT_EQ(pk_result_export_chrome(recorded.get(), path.c_str()), PK_OK) << pk_last_error();
  profkit_test::ResultPtr loaded = profkit_test::load(path);
  ASSERT_TRUE(loaded);
  size_t n_recorded = 0;
  size_t n_loaded = 0;
  const pk_host_event* a = pk_result_host_events(recorded.get(), &n_recorded);
  const pk_host_event* b = pk_result_host_events(loaded.get(), &n_loaded);
  ASSERT_EQ(n_recorded, 4u);
  ASSERT_EQ(n_loaded, n_recorded);
  for (size_t i = 0; i < n_recorded; ++i) {
    EXPECT_EQ(a[i].start_ns, b[i].start_ns) << i;
    EXPECT_EQ(a[i].end_ns, b[i].end_ns) << i;
    EXPECT_EQ(a[i].type, b[i].type) << i;
    EXPECT_EQ(a[i].depth, b[i].depth) << i;
    EXPECT_EQ(a[i].flags, b[i].flags) << i;
    EXPECT_STREQ(pk_result_string(recorded.get(), a[i].name), pk_result_string(loaded.get(), b[i].name)) << i;
  }
  EXPECT_EQ(b[1].type, PK_EVENT_KERNEL);
  EXPECT_EQ(b[2].type, PK_EVENT_MEMCPY);
  EXPECT_EQ(b[3].type, PK_EVENT_MEMSET);
  size_t args = 0;
  pk_result_event_args(loaded.get(), &args);
  EXPECT_EQ(args, 3u);
  size_t devices = 99;
  pk_result_device_events(loaded.get(), &devices);
  EXPECT_EQ(devices, 0u);
}

TEST(ChromeImport, TheCAbiLoadsJsonAndPktraceAlikeAndSummariesAgree) {
  TempDir dir;
  auto original = profkit_test::make_sample_result();
  const std::string json = dir.file("s.trace.json");
  const std::string pktrace = dir.file("s.pktrace");
  export_chrome_trace(*original, json, {});
  save_result(*original, pktrace);
  auto from_json = profkit_test::load(json);
  auto from_pktrace = profkit_test::load(pktrace);
  ASSERT_TRUE(from_json && from_pktrace);
  pk_summary_options options;
  options.struct_size = sizeof options;
  pk_summary_options_init(&options);
  for (const int32_t thread_sep : {0, 1}) {
    options.thread_sep = thread_sep;
    char* a = nullptr;
    char* b = nullptr;
    ASSERT_EQ(pk_result_summary_json(from_json.get(), &options, &a, nullptr), PK_OK) << pk_last_error();
    ASSERT_EQ(pk_result_summary_json(from_pktrace.get(), &options, &b, nullptr), PK_OK) << pk_last_error();
    // The hostile name's invalid bytes are the only difference JSON makes.
    EXPECT_EQ(as_json(a), as_json(b)) << "thread_sep=" << thread_sep;
    pk_string_free(a);
    pk_string_free(b);
  }
}

// Every bad file is an Error with the right status, naming the file and what
// is wrong.
void expect_read_error(const std::string& path, pk_status status, const std::string& words) {
  try {
    read_chrome_trace(path);
    ADD_FAILURE() << "reading " << path << " should fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), status) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
  pk_result* r = nullptr;
  EXPECT_EQ(pk_result_load(path.c_str(), &r), status) << path;
  EXPECT_EQ(r, nullptr);
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(ChromeImport, BadFilesGiveClearErrors) {
  TempDir dir;
  const std::string good_path = dir.file("good.trace.json");
  export_chrome_trace(*profkit_test::make_sample_result(), good_path, {});
  const std::string good = read_file(good_path);
  auto bad = [&](const std::string& name, const std::string& text) {
    const std::string path = dir.file(name);
    write_file(path, text);
    return path;
  };

  expect_read_error(dir.file("missing.trace.json"), PK_ERR_NOT_FOUND, "No such file");
  expect_read_error(bad("cut.json", good.substr(0, good.size() / 2)), PK_ERR_CORRUPT, "truncated or damaged");
  expect_read_error(bad("array.json", "[{\"ph\":\"X\"}]"), PK_ERR_CORRUPT, "JSON array");
  expect_read_error(bad("torch.json",
                        "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::add\","
                        "\"ts\":1,\"dur\":2,\"pid\":1,\"tid\":1}]}"),
                    PK_ERR_CORRUPT, "not one profkit wrote");
  expect_read_error(bad("merged.json", replaced(good, "\"profkit\":{", "\"profkit\":{\"merged_from\":[{},{}],")),
                    PK_ERR_CORRUPT, "merged from 2 traces");
  expect_read_error(bad("newer.json", replaced(good, "\"trace_json_version\":3", "\"trace_json_version\":4")),
                    PK_ERR_VERSION, "newer profkit");
  expect_read_error(bad("count.json", replaced(good, "\"host_event_count\":", "\"host_event_count\":1")),
                    PK_ERR_CORRUPT, "cut short or edited");
  expect_read_error(bad("ts.json", replaced(good, "\"ts\":1.000", "\"ts\":\"1.000\"")), PK_ERR_CORRUPT,
                    "\"ts\" is missing or not a number");
  expect_read_error(bad("negative.json", replaced(good, "\"ts\":1.000", "\"ts\":-1.000")), PK_ERR_CORRUPT,
                    "not a time in µs >= 0");
  expect_read_error(bad("phase.json", replaced(good, "\"ph\":\"X\"", "\"ph\":\"B\"")), PK_ERR_CORRUPT, "phase \"B\"");
  expect_read_error(bad("category.json", replaced(good, "\"cat\":\"Operator\"", "\"cat\":\"Nope\"")), PK_ERR_CORRUPT,
                    "category \"Nope\"");
  expect_read_error(bad("pid.json", replaced(good, "\"pid\":4242,\"tid\":12}", "\"pid\":99,\"tid\":12}")),
                    PK_ERR_CORRUPT, "several processes");
  expect_read_error(bad("base.json", replaced(good, "\"base_ns\":", "\"base_ns\":-99999999")), PK_ERR_CORRUPT,
                    "outside the clock's range");
  expect_read_error(bad("memory.json", replaced(good, "\"Addr\":", "\"Addr\":\"x\",\"Was\":")), PK_ERR_CORRUPT,
                    "\"Addr\"");
  // Numbers wider than their record field are refused, not cut to their low bits.
  expect_read_error(bad("device.json", replaced(good, "\"args\":{\"device\":0,", "\"args\":{\"device\":65536,")),
                    PK_ERR_CORRUPT, "\"device\" (65536) is larger than 65535");
  expect_read_error(bad("stream.json", replaced(good, "\"stream\":7,", "\"stream\":4294967303,")), PK_ERR_CORRUPT,
                    "\"stream\" (4294967303) is larger than 4294967295");
}

// `text` with its "profkit" object's `key` set to the number `value`.
std::string with_meta(std::string text, const std::string& key, const std::string& value) {
  const std::string head = "\"" + key + "\":";
  const size_t at = text.rfind(head);  // the "profkit" object comes last
  EXPECT_NE(at, std::string::npos) << key;
  if (at == std::string::npos) return text;
  const size_t begin = at + head.size();
  text.replace(begin, text.find_first_of(",}", begin) - begin, value);
  return text;
}

TEST(ChromeImport, MetadataOutsideItsFieldsRangeIsRefused) {
  // Read through a signed 64-bit number and cast, -1 became 2^64 - 1 in an
  // unsigned field and a pid of 2^32 became 0: the loaded Result's own export
  // then did not load.
  TempDir dir;
  const std::string good_path = dir.file("good.trace.json");
  export_chrome_trace(*profkit_test::make_sample_result(), good_path, {});
  const std::string good = read_file(good_path);
  struct Case {
    const char* key;
    const char* value;
    const char* range;
  };
  const Case cases[] = {
      {"span_index", "-1", "(0 to 18446744073709551615)"},
      {"span_index", "18446744073709551616", "(0 to 18446744073709551615)"},
      {"start_ns", "-9223372036854775808", "(0 to 9223372036854775807)"},
      {"end_ns", "9223372036854775808", "(0 to 9223372036854775807)"},
      {"unattached_device_records", "-1", "(0 to 18446744073709551615)"},
      {"dropped_events", "-5", "(0 to 18446744073709551615)"},
      {"process_cpu_ns", "-1", "(0 to 18446744073709551615)"},
      {"pid", "4294967296", "(0 to 4294967295)"},
      {"pid", "-1", "(0 to 4294967295)"},
      {"rank", "-2", "(-1 to 2147483647)"},
      {"world_size", "2147483648", "(-1 to 2147483647)"},
      {"schema_version", "4294967296", "(0 to 4294967295)"},
      {"cpu_count", "-1", "(0 to 4294967295)"},
  };
  for (const Case& c : cases) {
    const std::string path = dir.file(std::string(c.key) + c.value + ".json");
    write_file(path, with_meta(good, c.key, c.value));
    const std::string range = c.range;
    const std::string expected =
        range[0] == '(' ? "\"" + std::string(c.key) + "\" (" + c.value + ") is out of range " + range : range;
    expect_read_error(path, PK_ERR_CORRUPT, expected);
  }
}

// An edited span end before its start made a Result with a negative
// duration; a .pktrace with one is refused too (storage_test).
TEST(ChromeImport, ASpanThatEndsBeforeItStartsIsRefused) {
  TempDir dir;
  const std::string good_path = dir.file("good.trace.json");
  export_chrome_trace(*profkit_test::make_sample_result(), good_path, {});  // span 1000 - 90000
  const std::string good = read_file(good_path);
  const std::string path = dir.file("span.json");
  write_file(path, with_meta(good, "start_ns", "90000"));  // empty, but not negative: loads
  EXPECT_EQ(read_chrome_trace(path)->info.start_ns, 90000u);
  write_file(path, with_meta(good, "start_ns", "90001"));
  expect_read_error(path, PK_ERR_CORRUPT, "\"start_ns\" (90001) is after its \"end_ns\" (90000)");
  write_file(path, with_meta(good, "end_ns", "999"));
  expect_read_error(path, PK_ERR_CORRUPT, "\"start_ns\" (1000) is after its \"end_ns\" (999)");
}

TEST(ChromeImport, MetadataAtTheEdgesOfItsFieldsRangeLoadsAndExportsAgain) {
  TempDir dir;
  const std::string good_path = dir.file("good.trace.json");
  export_chrome_trace(*profkit_test::make_sample_result(), good_path, {});
  std::string text = read_file(good_path);
  text = with_meta(text, "span_index", "18446744073709551615");
  text = with_meta(text, "dropped_events", "18446744073709551615");
  text = with_meta(text, "pid", "4294967295");
  text = with_meta(text, "rank", "-1");
  text = with_meta(text, "world_size", "-1");
  const std::string edges = dir.file("edges.json");
  write_file(edges, text);
  const std::unique_ptr<Result> loaded = read_chrome_trace(edges);
  EXPECT_EQ(loaded->info.span_index, UINT64_MAX);
  EXPECT_EQ(loaded->info.dropped_events, UINT64_MAX);
  EXPECT_EQ(loaded->info.pid, UINT32_MAX);
  EXPECT_EQ(loaded->info.rank, -1);
  EXPECT_EQ(loaded->info.world_size, -1);
  // What load accepts, export writes back loadably.
  const std::string again = dir.file("again.json");
  export_chrome_trace(*loaded, again, {});
  expect_same_result(*loaded, *read_chrome_trace(again));
}

TEST(ChromeImport, TheLostArgumentCountSurvivesExportAndLoad) {
  TempDir dir;
  std::unique_ptr<Result> r = profkit_test::make_sample_result();
  r->info.lost_event_args = 4;
  const std::string path = dir.file("lost.trace.json");
  export_chrome_trace(*r, path, {});
  EXPECT_EQ(read_chrome_trace(path)->info.lost_event_args, 4u);
}

// RapidJSON's recursive parser overflowed the stack on such a file (a crash
// of the whole process); it is a clear error instead.
TEST(ChromeImport, DeepNestingIsRefusedNotACrash) {
  TempDir dir;
  const std::string path = dir.file("deep.json");
  constexpr size_t kDepth = 200000;
  write_file(path, "{\"x\":" + std::string(kDepth, '[') + std::string(kDepth, ']') + "}");
  EXPECT_TRUE(looks_like_json_file(path));
  // The 65th level opens at byte 68 (after `{"x":` and 63 '['): the offset named.
  expect_read_error(path, PK_ERR_CORRUPT, "more than 64 levels deep (at byte 68)");
  // As deep, but objects inside an event's args: the same.
  std::string objects = "{\"traceEvents\":[{\"args\":";
  for (size_t i = 0; i < kDepth; ++i) objects += "{\"a\":";
  objects += "1" + std::string(kDepth, '}') + "}]}";
  const std::string objects_path = dir.file("deep_objects.json");
  write_file(objects_path, objects);
  expect_read_error(objects_path, PK_ERR_CORRUPT, "more than 64 levels deep");
}

// What an editor or a pretty-printer may put before the JSON: a UTF-8 byte
// order mark, blank lines, indentation. Byte offsets in errors still count
// from the file's start.
TEST(ChromeImport, AByteOrderMarkAndLeadingBlanksStillLoad) {
  TempDir dir;
  auto original = profkit_test::make_sample_result();
  const std::string plain = dir.file("plain.trace.json");
  export_chrome_trace(*original, plain, {});
  const std::string text = read_file(plain);
  const std::string bom = "\xEF\xBB\xBF";
  const std::string blanks = std::string(200, '\n') + std::string(1000, ' ') + "\t\r\n";

  for (const std::string& head : {bom, blanks, bom + blanks}) {
    const std::string path = dir.file("headed.trace.json");
    write_file(path, head + text);
    EXPECT_TRUE(looks_like_json_file(path)) << head.size();
    expect_same_result(*original, *read_chrome_trace(path));
    profkit_test::ResultPtr loaded = profkit_test::load(path);
    size_t n = 0;
    pk_result_host_events(loaded.get(), &n);
    EXPECT_EQ(n, original->host_events.size());
  }
  // Past 4 KiB of blanks, or a byte order mark that is not UTF-8's: not JSON.
  const std::string far = dir.file("far.trace.json");
  write_file(far, std::string(5000, ' ') + text);
  EXPECT_FALSE(looks_like_json_file(far));
  const std::string utf16 = dir.file("utf16.trace.json");
  write_file(utf16, "\xFF\xFE{");
  EXPECT_FALSE(looks_like_json_file(utf16));
  // The offset of damage after a byte order mark counts the mark: the '}' is
  // byte 3 + 16.
  const std::string cut = dir.file("cut.trace.json");
  write_file(cut, bom + "{\"traceEvents\":[}");
  expect_read_error(cut, PK_ERR_CORRUPT, "at byte 19");
}

TEST(ChromeImport, ALayoutOneFileLoadsAndSaysWhatItLacks) {
  TempDir dir;
  auto original = profkit_test::make_sample_result();
  const std::string path = dir.file("v1.trace.json");
  export_chrome_trace(*original, path, {});
  // What layout 1 wrote: no version, no memory instants, no CPU usage.
  std::string text = replaced(read_file(path), "\"trace_json_version\":3,", "");
  text = replaced(text, "\"memory_event_count\":1,", "");
  text = replaced(text, "\"process_cpu_ns\":11,\"system_busy_ns\":12,\"system_idle_ns\":13,\"cpu_count\":2,", "");
  const size_t memory = text.find("{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"Memory\"");
  ASSERT_NE(memory, std::string::npos);
  text.erase(memory, text.find('\n', memory) + 1 - memory);
  write_file(path, text);
  auto loaded = read_chrome_trace(path);
  EXPECT_EQ(loaded->host_events.size(), original->host_events.size());
  EXPECT_EQ(loaded->memory_events.size(), 0u);
  EXPECT_EQ(loaded->info.process_cpu_ns, 0u);
  bool noted = false;
  for (const auto& [key, value] : loaded->metadata) noted |= key == "loaded_from_json_layout_1";
  EXPECT_TRUE(noted);
}

// GPU work CUPTI gave no timestamps for (PK_DEVICE_EVENT_NO_TIMING) is
// placed, not measured: at its launch's end (what the GPU tracer does), or at
// 0 in a hand-made or older Result, which is before the trace's base, where
// ts clamps to 0. Every one comes back where it was, untimed, and the
// summary of the loaded file is the original's.
std::unique_ptr<Result> result_with_untimed_gpu_work() {
  ResultBuilder b(window_info(31, 1000, 90000));
  b.add_string("");
  const uint32_t step = b.add_string("ProfileStep#1");
  const uint32_t launch = b.add_string("cudaLaunchKernel");
  const uint32_t kernel = b.add_string("gemm");
  const uint32_t copy = b.add_string("Memcpy HtoD");
  const uint32_t thread = b.thread(11);
  b.add_event(thread, {1000, 80000, step, PK_EVENT_PROFILE_STEP, 0, 0});
  b.add_runtime_call(thread, {4000, 5000, launch, PK_EVENT_CUDA_RUNTIME, 0, 0}, 501);
  b.add_runtime_call(thread, {6000, 6500, launch, PK_EVENT_CUDA_RUNTIME, 0, 0}, 502);
  b.add_runtime_call(thread, {7000, 7200, launch, PK_EVENT_CUDA_RUNTIME, 0, 0}, 503);
  b.add_device_event({10000, 20000, 0, kernel, 502, 7, 1, 0, PK_EVENT_KERNEL, 0, PK_NO_DETAIL});
  b.add_device_event({5000, 5000, 0, kernel, 501, 7, 1, 0, PK_EVENT_KERNEL, PK_DEVICE_EVENT_NO_TIMING, PK_NO_DETAIL});
  const pk_memory_op_detail m{4096, 0, 1, 2, 3, 0};
  b.add_device_event(
      {0, 0, 0, copy, 503, 9, 1, 0, PK_EVENT_MEMCPY, PK_DEVICE_EVENT_NO_TIMING, b.add_memory_op_detail(m)});
  b.add_device_event({0, 0, 0, kernel, 777, 7, 1, 0, PK_EVENT_KERNEL, PK_DEVICE_EVENT_NO_TIMING, PK_NO_DETAIL});
  return b.finish();
}

TEST(ChromeImport, GpuWorkWithoutTimingComesBackWhereItWasUntimed) {
  TempDir dir;
  auto original = result_with_untimed_gpu_work();
  ChromeOptions placed;
  placed.use_time_base = true;
  placed.time_base_wall_ns = original->info.clock_offset_ns + 250;
  for (const ChromeOptions& options : {ChromeOptions{}, placed}) {
    const std::string path = dir.file("untimed.trace.json");
    auto loaded = export_and_read(*original, path, options);
    expect_same_result(*original, *loaded);
    size_t untimed = 0;
    for (const pk_device_event& d : loaded->device_events) untimed += (d.flags & PK_DEVICE_EVENT_NO_TIMING) != 0;
    EXPECT_EQ(untimed, 3u);
    // The record placed after the base needs nothing but its ts.
    const std::string json = read_file(path);
    size_t carried = 0;
    for (size_t at = json.find("\"placed at ns\":0"); at != std::string::npos;
         at = json.find("\"placed at ns\":0", at + 1)) {
      ++carried;
    }
    EXPECT_EQ(carried, 2u) << json;
    EXPECT_EQ(json.find("\"placed at ns\":5000"), std::string::npos) << json;

    SummaryOptions all;
    all.time_unit = TimeUnit::kNanoseconds;
    for (const bool thread_sep : {false, true}) {
      all.thread_sep = thread_sep;
      EXPECT_EQ(render_summary_json(compute_summary(*original, all)),
                render_summary_json(compute_summary(*loaded, all)))
          << "thread_sep=" << thread_sep;
    }
  }
}

TEST(ChromeImport, AnUntimedRecordsPlacedTimeMustBeAWholeNumberInRange) {
  TempDir dir;
  const std::string path = dir.file("untimed.trace.json");
  export_chrome_trace(*result_with_untimed_gpu_work(), path, {});
  const std::string good = read_file(path);
  const std::string text = dir.file("text.trace.json");
  write_file(text, replaced(good, "\"placed at ns\":0", "\"placed at ns\":\"0\""));
  expect_read_error(text, PK_ERR_CORRUPT, "\"placed at ns\" is missing or not a number");
  const std::string late = dir.file("late.trace.json");
  write_file(late, replaced(good, "\"placed at ns\":0", "\"placed at ns\":9223372036854775808"));
  expect_read_error(late, PK_ERR_CORRUPT, "outside the clock's range");
}

}  // namespace
}  // namespace profkit
