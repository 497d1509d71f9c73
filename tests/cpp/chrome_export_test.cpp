// Chrome-trace export: escaping, lanes, categories, flows and metadata. The
// JSON itself is parsed by the Python tests (tests/python/test_export.py).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "export/chrome_trace.h"
#include "export/chrome_trace_reader.h"
#include "export/json_escape.h"
#include "sample_result.h"
#include "storage/trace_file.h"
#include "test_support.h"

namespace profkit {
namespace {

using profkit_test::read_file;
using profkit_test::TempDir;

std::string escaped(const std::string& s) {
  std::string out;
  append_json_escaped(out, s);
  return out;
}

TEST(JsonEscape, EscapesQuotesBackslashesAndControls) {
  EXPECT_EQ(escaped("a\"b\\c"), "a\\\"b\\\\c");
  EXPECT_EQ(escaped("\n\r\t\b\f"), "\\n\\r\\t\\b\\f");
  EXPECT_EQ(escaped(std::string("\x01\x1f\x7f", 3)), "\\u0001\\u001f\\u007f");
  EXPECT_EQ(escaped(std::string("nul\0in", 6)), "nul\\u0000in");
}

TEST(JsonEscape, KeepsValidUtf8AndReplacesInvalidBytes) {
  EXPECT_EQ(escaped("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"), "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(escaped("\xFF"), r);
  EXPECT_EQ(escaped("\xC0\xAF"), r + r);                  // overlong
  EXPECT_EQ(escaped("\xED\xA0\x80"), r + r + r);          // surrogate
  EXPECT_EQ(escaped("\xF4\x90\x80\x80"), r + r + r + r);  // past U+10FFFF
  // One replacement per maximal subpart, as Python's decode(errors="replace"):
  // a valid start cut short is one, wherever it is cut.
  EXPECT_EQ(escaped("ab\xE2\x82"), "ab" + r);  // cut short at the end
  EXPECT_EQ(escaped("\xF0\x9F\x98"
                    "A"),
            r + "A");                                              // cut short by an ASCII byte
  EXPECT_EQ(escaped("\xE2\x82\xE2\x82\xAC"), r + "\xE2\x82\xAC");  // then a whole one
  EXPECT_EQ(escaped("\xC3"), r);
  EXPECT_EQ(json_quoted("x"), "\"x\"");
}

TEST(ChromeExport, LaysOutLanesCategoriesFlowsAndMetadata) {
  TempDir dir;
  auto r = profkit_test::make_sample_result();
  const std::string path = dir.file("t.trace.json");
  export_chrome_trace(*r, path, ChromeOptions{});
  const std::string json = read_file(path);
  auto has = [&](const std::string& s) { return json.find(s) != std::string::npos; };
  EXPECT_EQ(json.rfind("{\"traceEvents\":[", 0), 0u);
  EXPECT_TRUE(has("\"name\":\"Process 4242 (CPU) rank 1\""));
  EXPECT_TRUE(has("\"name\":\"MainThread (Python) [11]\""));
  EXPECT_TRUE(has("\"name\":\"MainThread (C++) [11]\""));
  EXPECT_TRUE(has("\"name\":\"GPU 0 (NVIDIA H200)\""));
  EXPECT_TRUE(has("\"name\":\"Stream 7\""));
  // ProfileStep on the Python lane, the operator on the C++ lane.
  EXPECT_TRUE(
      has("\"cat\":\"ProfileStep\",\"name\":\"ProfileStep#3\",\"ts\":0.000,\"dur\":79.000,\"pid\":4242,\"tid\":11"));
  EXPECT_TRUE(
      has("\"cat\":\"Operator\",\"name\":\"aten::matmul\",\"ts\":2.000,\"dur\":5.000,\"pid\":4242,\"tid\":1000000011,"
          "\"args\":{\"input_shapes\":\"[[2, 3]]\"}"));
  EXPECT_TRUE(has("\"cat\":\"Dataloader\""));
  EXPECT_TRUE(has("\"ph\":\"i\",\"cat\":\"UserDefined\""));
  EXPECT_TRUE(has("\"cat\":\"Kernel\",\"name\":\"void gemm<float, 128>(float*, float const*)\""));
  EXPECT_TRUE(has("\"grid\":[4,2,1],\"block\":[128,1,1],\"registers per thread\":32,\"shared memory\":3072"));
  EXPECT_TRUE(has("\"kind\":\"HtoD\""));
  EXPECT_TRUE(
      has("\"name\":\"Memory (GPU 0)\",\"ts\":3.500,\"pid\":4242,\"tid\":0,"
          "\"args\":{\"Allocated\":1048576,\"Reserved\":2097152}"));
  EXPECT_TRUE(has("\"bandwidth GB/s\":4.096"));
  EXPECT_TRUE(has("\"ph\":\"s\",\"cat\":\"ac2g\""));
  EXPECT_TRUE(has("\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"ac2g\""));
  EXPECT_TRUE(has("\"pid\":10004242"));  // GPU 0 of process 4242
  EXPECT_TRUE(has("\"profkit\":{\"profkit_version\":\"9.9.9\""));
  EXPECT_TRUE(has("\"dropped_events\":5"));
  EXPECT_TRUE(has("\"unattached_device_records\":1"));
  EXPECT_TRUE(has("events were dropped"));  // visible in the timeline itself
  EXPECT_TRUE(has("\"metadata\":{\"model\":\"tiny \\\"cnn\\\"\"}"));
  // The hostile name comes out escaped, with invalid bytes replaced.
  EXPECT_TRUE(has("q\\\"uote\\\\back\\nnew\\ttab\\u0001\\u007f "));
  EXPECT_FALSE(has("\xFF"));
  EXPECT_FALSE(has(",\n]"));  // no trailing comma before the closing bracket
}

TEST(ChromeExport, OptionsLabelDurationsAndDropFlows) {
  TempDir dir;
  auto r = profkit_test::make_sample_result();
  const std::string path = dir.file("labels.trace.json");
  ChromeOptions o;
  o.label_durations = true;
  o.include_flows = false;
  export_chrome_trace(*r, path, o);
  const std::string json = read_file(path);
  EXPECT_NE(json.find("\"name\":\"aten::matmul[5.00 us]\""), std::string::npos);
  EXPECT_NE(json.find("\"name\":\"ProfileStep#3[79.00 us]\""), std::string::npos);
  EXPECT_EQ(json.find("\"ph\":\"s\""), std::string::npos);
}

// Placement for merged timelines (profkit merge): the sample result's first
// event is at engine 1000 ns, clock offset 1.7e18.
constexpr int64_t kSampleFirstWallNs = 1700000000000000000 + 1000;

TEST(ChromeExport, PlacementShiftsTimesAndRenamesProcessesLanesAndFlows) {
  TempDir dir;
  auto r = profkit_test::make_sample_result();
  const std::string path = dir.file("placed.trace.json");
  ChromeOptions o;
  o.use_time_base = true;
  o.time_base_wall_ns = kSampleFirstWallNs - 5000;  // 5 us before the first event
  o.pid = 77;
  o.flow_id_offset = 100;
  o.process_label_prefix = "rank1: ";
  o.sort_index_offset = 2000;
  export_chrome_trace(*r, path, o);
  const std::string json = read_file(path);
  auto has = [&](const std::string& s) { return json.find(s) != std::string::npos; };
  EXPECT_TRUE(has("\"name\":\"ProfileStep#3\",\"ts\":5.000,\"dur\":79.000,\"pid\":77,\"tid\":11}"));
  EXPECT_TRUE(has("\"name\":\"aten::matmul\",\"ts\":7.000,\"dur\":5.000,\"pid\":77,\"tid\":1000000011,"));
  EXPECT_TRUE(has("\"ts\":14.000,\"dur\":10.000,\"pid\":10000077,\"tid\":7,"));  // the kernel at 10000 ns, on GPU 0
  EXPECT_TRUE(
      has("\"name\":\"process_name\",\"pid\":77,\"tid\":0,\"args\":{\"name\":\"rank1: Process 4242 (CPU) rank 1\"}"));
  EXPECT_TRUE(has("\"args\":{\"name\":\"rank1: GPU 0 (NVIDIA H200)\"}"));
  EXPECT_TRUE(has("\"name\":\"process_sort_index\",\"pid\":77,\"tid\":0,\"args\":{\"sort_index\":2000}"));
  EXPECT_TRUE(has("\"pid\":10000077,\"tid\":0,\"args\":{\"sort_index\":2001}"));
  EXPECT_TRUE(has("\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"launch\",\"id\":101,\"ts\":8.000,\"pid\":77,"));
  EXPECT_TRUE(has("\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"ac2g\",\"name\":\"launch\",\"id\":101,\"ts\":14.000,"));
  EXPECT_FALSE(has("\"id\":1,"));
  // The metadata keeps the OS pid and says where ts 0 is.
  EXPECT_TRUE(has("\"pid\":4242,\"rank\":1"));
  EXPECT_TRUE(has("\"base_ns\":-4000,\"base_wall_ns\":" + std::to_string(kSampleFirstWallNs - 5000) + ","));
}

TEST(ChromeExport, PlacementAtTheTracesOwnBaseChangesNoTime) {
  TempDir dir;
  auto r = profkit_test::make_sample_result();
  ChromeOptions o;
  o.use_time_base = true;
  o.time_base_wall_ns = kSampleFirstWallNs;
  export_chrome_trace(*r, dir.file("a.json"), o);
  export_chrome_trace(*r, dir.file("b.json"), ChromeOptions{});
  EXPECT_EQ(read_file(dir.file("a.json")), read_file(dir.file("b.json")));
}

TEST(ChromeExport, AStructSizeThatCutsAFieldInTwoIsRefused) {
  TempDir dir;
  save_result(*profkit_test::make_sample_result(), dir.file("s.pktrace"));
  profkit_test::ResultPtr r = profkit_test::load(dir.file("s.pktrace"));
  pk_chrome_options o{};
  o.struct_size = sizeof o;
  pk_chrome_options_init(&o);
  o.process_label_prefix = "rank0: ";
  // Half of the label pointer: read, it would be an address nobody wrote.
  o.struct_size = offsetof(pk_chrome_options, process_label_prefix) + 4;
  EXPECT_EQ(pk_result_export_chrome_ex(r.get(), dir.file("cut.json").c_str(), &o), PK_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pk_last_error()).find("struct_size is " + std::to_string(o.struct_size)), std::string::npos)
      << pk_last_error();
  EXPECT_EQ(access(dir.file("cut.json").c_str(), F_OK), -1);  // nothing written
  // Every field's end is some caller's struct; so are sizes past the last
  // (a newer caller's), whose unknown fields are not read; struct_size 0
  // still means the defaults, as before 1.6.
  for (const size_t size : {offsetof(pk_chrome_options, process_label_prefix), sizeof o, sizeof o + 16, size_t{0}}) {
    std::vector<char> bigger(sizeof o + 16, 0);
    std::memcpy(bigger.data(), &o, sizeof o);
    auto* given = reinterpret_cast<pk_chrome_options*>(bigger.data());
    given->struct_size = size;
    EXPECT_EQ(pk_result_export_chrome_ex(r.get(), dir.file("ok.json").c_str(), given), PK_OK)
        << size << ": " << pk_last_error();
  }
}

TEST(ChromeExport, PlacementThroughTheCAbi) {
  TempDir dir;
  save_result(*profkit_test::make_sample_result(), dir.file("s.pktrace"));
  profkit_test::ResultPtr r = profkit_test::load(dir.file("s.pktrace"));
  // A 1.3 caller's shorter struct gets the old behaviour.
  pk_chrome_options old{};
  old.struct_size = offsetof(pk_chrome_options, use_time_base);
  pk_chrome_options_init(&old);
  EXPECT_EQ(old.include_flows, 1);
  ASSERT_EQ(pk_result_export_chrome_ex(r.get(), dir.file("old.json").c_str(), &old), PK_OK) << pk_last_error();
  ASSERT_EQ(pk_result_export_chrome(r.get(), dir.file("plain.json").c_str()), PK_OK);
  EXPECT_EQ(read_file(dir.file("old.json")), read_file(dir.file("plain.json")));

  pk_chrome_options o{};
  o.struct_size = sizeof o;
  pk_chrome_options_init(&o);
  EXPECT_EQ(o.pid, -1);
  EXPECT_EQ(o.use_time_base, 0);
  EXPECT_EQ(o.process_label_prefix, nullptr);
  o.process_label_prefix = "trainer0: ";
  o.pid = 5;
  ASSERT_EQ(pk_result_export_chrome_ex(r.get(), dir.file("named.json").c_str(), &o), PK_OK) << pk_last_error();
  EXPECT_NE(read_file(dir.file("named.json")).find("\"pid\":5,\"tid\":0,\"args\":{\"name\":\"trainer0: Process 4242"),
            std::string::npos);

  o.pid = -2;
  EXPECT_EQ(pk_result_export_chrome_ex(r.get(), dir.file("bad.json").c_str(), &o), PK_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pk_last_error()).find("pid -2"), std::string::npos);
  o.pid = -1;
  o.use_time_base = 1;
  o.time_base_wall_ns = kSampleFirstWallNs + 1;  // after the first event, which starts with the window
  EXPECT_EQ(pk_result_export_chrome_ex(r.get(), dir.file("late.json").c_str(), &o), PK_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pk_last_error()).find("after the recording window's start"), std::string::npos)
      << pk_last_error();
  EXPECT_EQ(access(dir.file("late.json").c_str(), F_OK), -1);  // nothing written
}

// A window over engine times [1000, 9000) ns, wall clock = engine + 500 ns,
// holding one operator at [5000, 6000).
std::unique_ptr<Result> window_with_one_operator() {
  ResultInfo info;
  info.start_ns = 1000;
  info.end_ns = 9000;
  info.clock_offset_ns = 500;
  ResultBuilder b(info);
  b.add_string("");
  b.add_event(b.thread(1), {5000, 6000, b.add_string("op"), PK_EVENT_OPERATOR, 0, 0});
  return b.finish();
}

// The trace's own start is the window's when that comes first: a base at the
// first event is then refused, and the error must name what it is after.
TEST(ChromeExport, ABaseAfterTheWindowsStartIsRefusedNamingTheWindowsStart) {
  auto r = window_with_one_operator();
  TempDir dir;
  ChromeOptions o;
  o.use_time_base = true;
  o.time_base_wall_ns = 5000 + 500;  // the first event's wall-clock time
  try {
    export_chrome_trace(*r, dir.file("late.json"), o);
    ADD_FAILURE() << "a base after the window's start must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), PK_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("(wall clock 5500 ns) is after the recording window's start (1500 ns)"),
              std::string::npos)
        << e.what();
  }
  o.time_base_wall_ns = 1000 + 500;  // the window's start is the latest base
  export_chrome_trace(*r, dir.file("ok.json"), o);
}

TEST(ChromeExport, ABaseAfterAFirstEventBeforeTheWindowIsRefusedNamingThatEvent) {
  // GPU work may start a little before the window (the tracer's slack).
  ResultInfo info;
  info.start_ns = 1000;
  info.end_ns = 9000;
  ResultBuilder b(info);
  b.add_string("");
  b.add_device_event({800, 900, 0, b.add_string("kernel"), 1, 7, 1, 0, PK_EVENT_KERNEL, 0, PK_NO_DETAIL});
  auto r = b.finish();
  TempDir dir;
  ChromeOptions o;
  o.use_time_base = true;
  o.time_base_wall_ns = 1000;
  try {
    export_chrome_trace(*r, dir.file("late.json"), o);
    ADD_FAILURE() << "a base after the first event must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "is after the trace's first event (800 ns), which precedes the recording window's start"),
              std::string::npos)
        << e.what();
  }
}

// pk_result_load reads every time back as base_ns plus "ts" (and "dur"),
// neither past INT64_MAX ns. The export wrote files outside that (and
// returned PK_OK), which load then refused; it refuses them itself now,
// before making any file.
TEST(ChromeExport, ABaseTooEarlyForTheTracesTimesIsRefusedAndTheEarliestThatFitsLoadsBack) {
  auto r = window_with_one_operator();
  TempDir dir;
  ChromeOptions o;
  o.use_time_base = true;
  // The trace starts at wall clock 1500 and its last time is 8000 ns later.
  const int64_t earliest = 1500 - (INT64_MAX - 8000);
  for (const int64_t base : {INT64_MIN, earliest - 1}) {
    o.time_base_wall_ns = base;
    try {
      export_chrome_trace(*r, dir.file("early.json"), o);
      ADD_FAILURE() << "base " << base << " must be refused";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), PK_ERR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(e.what()).find("(wall clock " + std::to_string(base) + " ns) is "), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("pick a base closer to the trace"), std::string::npos) << e.what();
    }
    EXPECT_EQ(access(dir.file("early.json").c_str(), F_OK), -1);  // nothing written
  }
  o.time_base_wall_ns = earliest;
  export_chrome_trace(*r, dir.file("earliest.json"), o);
  profkit_test::ResultPtr loaded = profkit_test::load(dir.file("earliest.json"));
  ASSERT_NE(loaded, nullptr);
  size_t n = 0;
  const pk_host_event* e = pk_result_host_events(loaded.get(), &n);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(e[0].start_ns, 5000u);
  EXPECT_EQ(e[0].end_ns, 6000u);
}

TEST(ChromeExport, AResultWithATimePastTheClocksRangeIsRefusedThroughTheCAbi) {
  profkit_test::reset_engine();
  const pk_name_id name = pk_intern("forever");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_complete_event(name, PK_EVENT_OPERATOR, 0, UINT64_MAX);  // times not from pk_now_ns
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  profkit_test::ResultPtr r = profkit_test::collect();
  TempDir dir;
  EXPECT_EQ(pk_result_export_chrome(r.get(), dir.file("t.json").c_str()), PK_ERR_TOO_LARGE);
  EXPECT_NE(std::string(pk_last_error()).find("host event 0 reaches 18446744073709551615 ns"), std::string::npos)
      << pk_last_error();
  EXPECT_EQ(access(dir.file("t.json").c_str(), F_OK), -1);
  // The trace file keeps it.
  ASSERT_EQ(pk_result_save(r.get(), dir.file("t.pktrace").c_str()), PK_OK) << pk_last_error();
  profkit_test::ResultPtr loaded = profkit_test::load(dir.file("t.pktrace"));
  size_t n = 0;
  const pk_host_event* e = pk_result_host_events(loaded.get(), &n);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(e[0].end_ns, UINT64_MAX);

  // Up to INT64_MAX the export writes a file that loads back.
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_complete_event(name, PK_EVENT_OPERATOR, 0, static_cast<uint64_t>(INT64_MAX));
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  profkit_test::ResultPtr fits = profkit_test::collect();
  ASSERT_EQ(pk_result_export_chrome(fits.get(), dir.file("fits.json").c_str()), PK_OK) << pk_last_error();
  profkit_test::ResultPtr back = profkit_test::load(dir.file("fits.json"));
  e = pk_result_host_events(back.get(), &n);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(e[0].end_ns, static_cast<uint64_t>(INT64_MAX));
  profkit_test::reset_engine();
}

TEST(ChromeExport, MemoryEventsAreCounterTracksPerDevice) {
  TempDir dir;
  ResultInfo info;
  info.pid = 7;
  info.start_ns = 1000;
  ResultBuilder b(info);
  b.add_string("");
  const uint32_t thread = b.thread(1);
  b.add_memory_event({3000, 0x10, 4096, 4096, 0, thread, -1});
  b.add_memory_event({2000, 0x20, 512, 512, 2048, thread, 1});
  b.add_memory_event({4500, 0x10, -4096, 0, 0, thread, -1});
  auto r = b.finish();
  const std::string path = dir.file("memory.trace.json");
  export_chrome_trace(*r, path, ChromeOptions{});
  const std::string json = read_file(path);
  const char* expected[] = {
      // In time order, each with the allocator's totals after it.
      "{\"ph\":\"C\",\"cat\":\"Memory\",\"name\":\"Memory (GPU 1)\",\"ts\":1.000,\"pid\":7,\"tid\":0,"
      "\"args\":{\"Allocated\":512,\"Reserved\":2048}}",
      "{\"ph\":\"C\",\"cat\":\"Memory\",\"name\":\"Memory (CPU)\",\"ts\":2.000,\"pid\":7,\"tid\":0,"
      "\"args\":{\"Allocated\":4096,\"Reserved\":0}}",
      "{\"ph\":\"C\",\"cat\":\"Memory\",\"name\":\"Memory (CPU)\",\"ts\":3.500,\"pid\":7,\"tid\":0,"
      "\"args\":{\"Allocated\":0,\"Reserved\":0}}",
  };
  size_t at = 0;
  for (const char* line : expected) {
    const size_t found = json.find(line, at);
    ASSERT_NE(found, std::string::npos) << line << "\nin\n" << json;
    at = found + 1;
  }
}

// The "X" events of a file profkit wrote (one event per line), per (pid, tid)
// lane: start and end in ns, from the µs text as Perfetto reads it (exactly).
struct Slice {
  uint64_t start, end;
  std::string line;
};
uint64_t number_after(const std::string& line, const std::string& key, bool us) {
  const size_t at = line.find("\"" + key + "\":");
  EXPECT_NE(at, std::string::npos) << key << " in " << line;
  if (at == std::string::npos) return 0;
  const char* p = line.c_str() + at + key.size() + 3;
  uint64_t whole = 0;
  for (; *p >= '0' && *p <= '9'; ++p) whole = whole * 10 + static_cast<uint64_t>(*p - '0');
  if (!us) return whole;
  uint64_t frac = 0;
  int digits = 0;
  if (*p == '.') {
    for (++p; *p >= '0' && *p <= '9'; ++p, ++digits) frac = frac * 10 + static_cast<uint64_t>(*p - '0');
  }
  EXPECT_EQ(digits, 3) << line;
  return whole * 1000 + frac;
}
std::map<std::pair<uint64_t, uint64_t>, std::vector<Slice>> slices_by_lane(const std::string& json) {
  std::map<std::pair<uint64_t, uint64_t>, std::vector<Slice>> lanes;
  std::istringstream in(json);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("{\"ph\":\"X\"", 0) != 0) continue;
    const uint64_t start = number_after(line, "ts", true);
    lanes[{number_after(line, "pid", false), number_after(line, "tid", false)}].push_back(
        {start, start + number_after(line, "dur", true), line});
  }
  return lanes;
}
// Slices on every lane nest (ui.perfetto.dev drops or misplaces the others).
void expect_every_lane_nests(const std::string& json) {
  for (const auto& [lane, slices] : slices_by_lane(json)) {
    std::vector<const Slice*> open;
    for (const Slice& s : slices) {  // the writer puts a lane's slices in start order
      while (!open.empty() && open.back()->end <= s.start) open.pop_back();
      if (!open.empty()) {
        EXPECT_LE(s.end, open.back()->end) << "on lane " << lane.first << "/" << lane.second << ":\n"
                                           << s.line << "\noverlaps\n"
                                           << open.back()->line;
      }
      open.push_back(&s);
    }
  }
}

// GPU work on device 0, each record launched by a cudaLaunchKernel of its
// own on one host thread (pid 50), in the order given.
struct LaunchedWork {
  const char* name;
  uint64_t start_ns;
  uint64_t end_ns;
  uint32_t stream;
  uint8_t type = PK_EVENT_KERNEL;
};

std::unique_ptr<Result> launched_gpu_work(std::initializer_list<LaunchedWork> work) {
  ResultInfo info;
  info.pid = 50;
  info.start_ns = 1000;
  info.end_ns = 100000;
  ResultBuilder b(info);
  b.add_string("");
  const uint32_t launch = b.add_string("cudaLaunchKernel");
  const uint32_t t = b.thread(9);
  uint32_t i = 0;
  for (const LaunchedWork& w : work) {
    b.add_runtime_call(t, {2000 + 1000 * i, 2500 + 1000 * i, launch, PK_EVENT_CUDA_RUNTIME, 0, 0}, 100 + i);
    b.add_device_event(
        {w.start_ns, w.end_ns, 0, b.add_string(w.name), 100 + i, w.stream, 1, 0, w.type, 0, PK_NO_DETAIL});
    ++i;
  }
  return b.finish();
}

// Programmatic dependent launch (Hopper) lets a kernel start before the one
// ahead of it on its stream ends: the records overlap on the stream's lane.
TEST(ChromeExport, OverlappingGpuWorkOnAStreamGetsOverlapLanesAndLoadsBack) {
  TempDir dir;
  // B starts inside A and outlives it, C inside both and outlives both, D
  // after them all; the copy on a stream of its own.
  auto r = launched_gpu_work({{"primary", 10000, 20000, 7},
                              {"secondary", 15000, 25000, 7},
                              {"tertiary", 18000, 30000, 7},
                              {"after", 26000, 27000, 7},
                              {"copy", 12000, 40000, 13, PK_EVENT_MEMCPY}});
  const std::string path = dir.file("pdl.trace.json");
  export_chrome_trace(*r, path, ChromeOptions{});
  const std::string json = read_file(path);
  auto has = [&](const std::string& s) { return json.find(s) != std::string::npos; };

  expect_every_lane_nests(json);
  const std::string gpu = "\"pid\":" + std::to_string(50 + kDeviceProcessStride);
  EXPECT_TRUE(has("\"name\":\"primary\",\"ts\":9.000,\"dur\":10.000," + gpu + ",\"tid\":7,")) << json;
  EXPECT_TRUE(has("\"name\":\"secondary\",\"ts\":14.000,\"dur\":10.000," + gpu + ",\"tid\":1000000007,"));
  EXPECT_TRUE(has("\"name\":\"tertiary\",\"ts\":17.000,\"dur\":12.000," + gpu + ",\"tid\":2000000007,"));
  EXPECT_TRUE(has("\"name\":\"after\",\"ts\":25.000,\"dur\":1.000," + gpu + ",\"tid\":7,"));
  EXPECT_TRUE(has("\"name\":\"copy\",\"ts\":11.000,\"dur\":28.000," + gpu + ",\"tid\":13,"));
  EXPECT_TRUE(has(gpu + ",\"tid\":1000000007,\"args\":{\"name\":\"Stream 7 (overlapping)\"}"));
  EXPECT_TRUE(has(gpu + ",\"tid\":2000000007,\"args\":{\"name\":\"Stream 7 (overlapping 2)\"}"));
  EXPECT_TRUE(has(gpu + ",\"tid\":1000000007,\"args\":{\"sort_index\":7}"));  // next to its stream
  // Each arrow ends on the lane its GPU work is on.
  EXPECT_TRUE(has("\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"ac2g\",\"name\":\"launch\""));
  EXPECT_TRUE(has("\"ts\":14.000," + gpu + ",\"tid\":1000000007}"));
  EXPECT_TRUE(has("\"ts\":17.000," + gpu + ",\"tid\":2000000007}"));
  EXPECT_TRUE(has("\"ts\":25.000," + gpu + ",\"tid\":7}"));

  // The stream is in each record's args: loading gives every record back on it.
  auto loaded = read_chrome_trace(path);
  ASSERT_EQ(loaded->device_events.size(), 5u);
  for (const pk_device_event& d : loaded->device_events) {
    const std::string name(loaded->strings.view(d.name));
    EXPECT_EQ(d.stream, name == "copy" ? 13u : 7u) << name;
    EXPECT_NE(d.launch_event, PK_NO_EVENT) << name;
  }
}

// Collected short-first with one start: the longer encloses the shorter, so
// both stay on the stream's own lane (no overlap lane for nested work), and
// the enclosing one is written first.
TEST(ChromeExport, GpuWorkStartingTogetherNestsTheLongerOutermostOnItsStreamsLane) {
  TempDir dir;
  auto r = launched_gpu_work({{"inner", 10000, 15000, 7}, {"outer", 10000, 30000, 7}});
  const std::string path = dir.file("together.trace.json");
  export_chrome_trace(*r, path, ChromeOptions{});
  const std::string json = read_file(path);
  expect_every_lane_nests(json);
  EXPECT_EQ(json.find("1000000007"), std::string::npos) << json;
}

// More work in flight on one stream than there are overlap lanes still gives
// a file whose last lane holds the rest (drawn overlapped, never lost).
TEST(ChromeExport, WorkPastTheLastOverlapLaneStaysOnIt) {
  TempDir dir;
  ResultInfo info;
  info.pid = 50;
  info.start_ns = 0;
  ResultBuilder b(info);
  b.add_string("");
  const uint32_t k = b.add_string("k");
  for (uint64_t i = 0; i <= kMaxDeviceOverlapLanes + 1; ++i) {  // each starts inside all before it, ends after
    b.add_device_event({1000 + 100 * i, 5000 + 100 * i, PK_NO_EVENT, k, 0, 3, 1, 0, PK_EVENT_KERNEL, 0, PK_NO_DETAIL});
  }
  auto r = b.finish();
  const std::string path = dir.file("many.trace.json");
  export_chrome_trace(*r, path, ChromeOptions{});
  const auto lanes = slices_by_lane(read_file(path));
  size_t records = 0;
  for (const auto& [lane, slices] : lanes) {
    EXPECT_EQ(lane.second % kDeviceOverlapLaneOffset, 3u);
    EXPECT_LE(lane.second / kDeviceOverlapLaneOffset, kMaxDeviceOverlapLanes);
    EXPECT_LE(lane.second, 0xFFFFFFFFull);  // Perfetto reads tids as uint32
    records += slices.size();
  }
  EXPECT_EQ(lanes.size(), kMaxDeviceOverlapLanes + 1u);
  EXPECT_EQ(records, kMaxDeviceOverlapLanes + 2u);
}

// ---- host events that cross ----
// Events recorded whole (ranges begun in one function and ended in another,
// the Python calls around them) cross: one that outlives an enclosing event
// of its lane goes to the lane's overlap lane, and one that outlives an
// event there too to the thread's second overlap lane (before, it stayed on
// the overlap lane, where Perfetto misdrew the two).

// As a program records it where range X is begun in z() and ended in y(),
// and range E begun in main() and ended in y() before X.
std::unique_ptr<Result> crossing_ranges(uint64_t tid) {
  ResultInfo info;
  info.pid = 50;
  info.start_ns = 0;
  info.end_ns = 10000;
  ResultBuilder b(info);
  b.add_string("");
  const uint32_t t = b.thread(tid);
  b.set_thread_name(t, "MainThread");
  auto add = [&](const char* name, pk_event_type type, uint64_t start, uint64_t end) {
    b.add_event(t, {start, end, b.add_string(name), static_cast<uint8_t>(type), 0, 0});
  };
  add("main", PK_EVENT_PYTHON_OP, 0, 1000);
  add("z", PK_EVENT_PYTHON_OP, 10, 200);
  add("X", PK_EVENT_PYTHON_USER_DEFINED, 100, 800);  // crosses z: the overlap lane
  add("E", PK_EVENT_PYTHON_USER_DEFINED, 300, 600);  // nests in main on the Python lane
  add("y", PK_EVENT_PYTHON_OP, 400, 900);            // crosses E there and X on the overlap lane
  add("aten::add", PK_EVENT_OPERATOR, 450, 460);     // the C++ lane
  return b.finish();
}

// A's host events, thread names and order, in B.
void expect_same_host_events(const Result& a, const Result& b) {
  ASSERT_EQ(a.threads.size(), b.threads.size());
  for (size_t i = 0; i < a.threads.size(); ++i) {
    EXPECT_EQ(a.threads[i].tid, b.threads[i].tid);
    EXPECT_EQ(a.threads[i].name, b.threads[i].name);
    EXPECT_EQ(a.threads[i].event_count, b.threads[i].event_count);
  }
  ASSERT_EQ(a.host_events.size(), b.host_events.size());
  for (size_t i = 0; i < a.host_events.size(); ++i) {
    const pk_host_event& x = a.host_events[i];
    const pk_host_event& y = b.host_events[i];
    EXPECT_EQ(a.strings.view(x.name), b.strings.view(y.name)) << i;
    EXPECT_EQ(x.start_ns, y.start_ns) << i;
    EXPECT_EQ(x.end_ns, y.end_ns) << i;
    EXPECT_EQ(x.type, y.type) << i;
    EXPECT_EQ(x.depth, y.depth) << i;
  }
}

TEST(ChromeExport, HostEventsCrossingEachOtherGetLanesThatNestAndLoadBack) {
  TempDir dir;
  auto r = crossing_ranges(9);
  const std::string path = dir.file("crossing.trace.json");
  export_chrome_trace(*r, path, ChromeOptions{});
  const std::string json = read_file(path);
  auto has = [&](const std::string& s) { return json.find(s) != std::string::npos; };
  expect_every_lane_nests(json);
  auto lane_of = [&](const std::string& name) {
    for (const auto& [lane, slices] : slices_by_lane(json)) {
      for (const Slice& slice : slices) {
        if (slice.line.find("\"name\":\"" + name + "\",") != std::string::npos) return lane.second;
      }
    }
    ADD_FAILURE() << "no slice " << name;
    return uint64_t{0};
  };
  EXPECT_EQ(lane_of("main"), 9u);
  EXPECT_EQ(lane_of("z"), 9u);
  EXPECT_EQ(lane_of("E"), 9u);
  EXPECT_EQ(lane_of("X"), 9 + kOverlapLaneOffset);
  EXPECT_EQ(lane_of("y"), 9 + kSecondOverlapLaneOffset);
  EXPECT_EQ(lane_of("aten::add"), 9 + kCppLaneOffset);
  EXPECT_EQ(kSecondOverlapLaneOffset, 4000000000u);
  EXPECT_TRUE(has("\"tid\":4000000009,\"args\":{\"name\":\"MainThread (overlapping 2) [9]\"}"));
  EXPECT_TRUE(has("\"tid\":4000000009,\"args\":{\"sort_index\":4}"));  // after the thread's other lanes
  EXPECT_TRUE(has("\"tid\":2000000009,\"args\":{\"name\":\"MainThread (Python, overlapping) [9]\"}"));
  EXPECT_FALSE(has("C++, overlapping"));
  // Loaded back: the same events, and the thread keeps its name.
  expect_same_host_events(*r, *read_chrome_trace(path));
}

// More events crossing each other than a thread has lanes for (each starts
// inside all before it and ends after them), on both layers: the second
// overlap lane holds the rest, drawn overlapped, never lost; every lane id
// stays below 2^32 (Perfetto reads tids as uint32) for the largest Linux
// tid, and reads back as its thread.
TEST(ChromeExport, HostEventsPastTheSecondOverlapLaneStayOnIt) {
  TempDir dir;
  ResultInfo info;
  info.pid = 50;
  ResultBuilder b(info);
  b.add_string("");
  constexpr uint64_t kTid = (1u << 22) - 1;
  const uint32_t t = b.thread(kTid);
  for (uint64_t i = 0; i < 6; ++i) {
    b.add_event(t, {1000 + 100 * i, 5000 + 100 * i, b.add_string("py"), PK_EVENT_PYTHON_USER_DEFINED, 0, 0});
    b.add_event(t, {1050 + 100 * i, 5050 + 100 * i, b.add_string("cpp"), PK_EVENT_USER_DEFINED, 0, 0});
  }
  auto r = b.finish();
  const std::string path = dir.file("many.trace.json");
  export_chrome_trace(*r, path, ChromeOptions{});
  const auto lanes = slices_by_lane(read_file(path));
  size_t events = 0;
  for (const auto& [lane, slices] : lanes) {
    EXPECT_EQ(thread_of_lane_id(lane.second), kTid);
    EXPECT_LE(lane.second, 0xFFFFFFFFull);
    events += slices.size();
  }
  EXPECT_EQ(lanes.size(), 5u);  // Python, C++, their overlap lanes, the second overlap lane
  EXPECT_EQ(events, 12u);
  expect_same_host_events(*r, *read_chrome_trace(path));
}

// JSON readers (Perfetto, chrome://tracing, Python's json) keep one value
// per key: an argument key given twice on one event would hide the first
// value. pk_event_arg_* does not replace, two keys may escape alike (bytes
// that are not UTF-8 become U+FFFD), and a runtime call's own argument may
// be named "correlation id": every value is written, under a key of its own.
TEST(ChromeExport, ArgumentKeysRepeatedOnAnEventAreWrittenOnceEachWithEveryValue) {
  TempDir dir;
  ResultInfo info;
  info.pid = 50;
  info.start_ns = 1000;
  info.end_ns = 100000;
  ResultBuilder b(info);
  b.add_string("");
  const uint32_t t = b.thread(9);
  const uint32_t dup = b.add_string("dup");
  const uint32_t dup2 = b.add_string("dup#2");
  const uint32_t bad1 = b.add_string("k\xFF");
  const uint32_t bad2 = b.add_string("k\xFE");
  const uint32_t correlation = b.add_string("correlation id");
  const uint32_t user_value = b.add_string("given");
  b.add_event(t, {2000, 9000, b.add_string("op"), PK_EVENT_OPERATOR, 0, 0});
  b.add_arg(t, 2000, 0, dup, PK_ARG_INT, -5);
  b.add_arg(t, 2000, 0, dup, PK_ARG_INT, INT64_MAX);
  b.add_arg(t, 2000, 0, dup2, PK_ARG_STRING, user_value);  // the program's own "dup#2"
  b.add_arg(t, 2000, 0, bad1, PK_ARG_INT, 1);
  b.add_arg(t, 2000, 0, bad2, PK_ARG_INT, 2);
  b.add_event(t, {10000, 11000, b.add_string("plain"), PK_EVENT_OPERATOR, 0, 0});
  b.add_arg(t, 10000, 0, dup, PK_ARG_INT, 3);
  b.add_arg(t, 10000, 0, dup2, PK_ARG_INT, 4);
  b.add_runtime_call(t, {12000, 13000, b.add_string("cudaLaunchKernel"), PK_EVENT_CUDA_RUNTIME, 0, 0}, 501);
  b.add_arg(t, 12000, 255, correlation, PK_ARG_INT, 7);  // 255: the builder's depth hint of runtime calls
  b.add_device_event({14000, 15000, 0, b.add_string("k"), 501, 7, 1, 0, PK_EVENT_KERNEL, 0, PK_NO_DETAIL});
  auto r = b.finish();
  ASSERT_EQ(r->event_args.size(), 8u);
  const std::string path = dir.file("keys.trace.json");
  export_chrome_trace(*r, path, ChromeOptions{});
  const std::string json = read_file(path);
  auto has = [&](const std::string& s) { return json.find(s) != std::string::npos; };
  const std::string replaced = "\xEF\xBF\xBD";  // U+FFFD
  EXPECT_TRUE(has("\"args\":{\"dup\":-5,\"dup#2\":9223372036854775807,\"dup#2#2\":\"given\",\"k" + replaced +
                  "\":1,\"k" + replaced + "#2\":2}"))
      << json;
  EXPECT_TRUE(has("\"args\":{\"dup\":3,\"dup#2\":4}"));  // no repeat: as given
  EXPECT_TRUE(has("\"args\":{\"correlation id\":501,\"correlation id#2\":7}"));

  // Load gives every value back, each under the key the file shows, and the
  // runtime call keeps its correlation id (its launch).
  auto loaded = read_chrome_trace(path);
  ASSERT_EQ(loaded->event_args.size(), 8u);
  std::vector<std::string> keys;
  for (const pk_event_arg& a : loaded->event_args) keys.emplace_back(loaded->strings.view(a.key));
  EXPECT_EQ(keys, (std::vector<std::string>{"dup", "dup#2", "dup#2#2", "k" + replaced, "k" + replaced + "#2", "dup",
                                            "dup#2", "correlation id#2"}));
  ASSERT_EQ(loaded->device_events.size(), 1u);
  EXPECT_NE(loaded->device_events[0].launch_event, PK_NO_EVENT);
}

// Perfetto reads pids as 32-bit: every GPU's process fits, for the largest
// OS pid and any device number a Result can hold, apart from the host's and
// from each other; devices below kStridedDeviceCount keep the documented
// pid + stride * (device + 1) that merge and other tools compute.
TEST(ChromeExport, EveryGpuProcessIdFitsIn32BitsAndIsItsOwn) {
  TempDir dir;
  ResultInfo info;
  info.pid = (1u << 22) - 1;  // Linux's largest pid_max
  info.start_ns = 1000;
  info.end_ns = 100000;
  ResultBuilder b(info);
  b.add_string("");
  const uint32_t k = b.add_string("k");
  b.add_event(b.thread(9), {2000, 3000, b.add_string("op"), PK_EVENT_OPERATOR, 0, 0});
  const std::vector<uint16_t> devices = {0, 1, 428, 429, 430, 857, 858, 859, 1000, 65534, UINT16_MAX};
  for (const uint16_t d : devices) {
    b.add_device_event({5000, 6000, PK_NO_EVENT, k, 0, 3, 1, d, PK_EVENT_KERNEL, 0, PK_NO_DETAIL});
  }
  auto r = b.finish();
  const std::string path = dir.file("devices.trace.json");
  export_chrome_trace(*r, path, ChromeOptions{});
  const std::string json = read_file(path);
  std::map<uint64_t, uint64_t> device_of_pid;
  for (const auto& [lane, slices] : slices_by_lane(json)) {
    const uint64_t pid = lane.first;
    EXPECT_LE(pid, 0xFFFFFFFFull);
    if (pid == info.pid) continue;         // the host's
    EXPECT_GE(pid, kDeviceProcessStride);  // above every OS pid
    ASSERT_EQ(slices.size(), 1u) << "two devices on pid " << pid;
    device_of_pid[pid] = number_after(slices[0].line, "device", false);
  }
  EXPECT_EQ(device_of_pid.size(), devices.size());
  for (const uint16_t d : {0, 1, 428}) {
    EXPECT_EQ(device_of_pid[info.pid + kDeviceProcessStride * (d + 1u)], d);
  }
  // Each GPU process is named after its device, and loading puts every
  // record back on it.
  EXPECT_NE(json.find("\"name\":\"GPU 65535\""), std::string::npos);
  auto loaded = read_chrome_trace(path);
  ASSERT_EQ(loaded->device_events.size(), devices.size());
  std::vector<uint16_t> loaded_devices;
  for (const pk_device_event& e : loaded->device_events) loaded_devices.push_back(e.device);
  std::sort(loaded_devices.begin(), loaded_devices.end());
  EXPECT_EQ(loaded_devices, devices);
}

TEST(ChromeExport, EmptyResultIsValidAndErrorsNameThePath) {
  TempDir dir;
  auto r = ResultBuilder({}).finish();
  const std::string path = dir.file("empty.trace.json");
  export_chrome_trace(*r, path, ChromeOptions{});
  const std::string json = read_file(path);
  EXPECT_NE(json.find("\"traceEvents\":["), std::string::npos);
  try {
    export_chrome_trace(*r, dir.file("missing/x.json"), ChromeOptions{});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing/x.json"), std::string::npos);
  }
}

}  // namespace
}  // namespace profkit
