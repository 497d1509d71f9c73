// Folded-stack export (flamegraph.pl / speedscope): the exact file for
// traces with known nesting and times, both metrics, the C ABI's errors, and
// deep stacks.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "export/folded_stacks.h"
#include "storage/trace_file.h"
#include "summary_builder.h"
#include "test_support.h"

namespace profkit {
namespace {

using profkit_test::read_file;
using profkit_test::TempDir;
using profkit_test::TraceBuilder;

std::string exported(const Result& r, StacksMetric metric) {
  TempDir dir;
  const std::string path = dir.file("out.stacks");
  export_folded_stacks(r, path, metric);
  return read_file(path);
}

std::vector<std::string> entries(const std::string& directory) {
  std::vector<std::string> names;
  if (DIR* d = opendir(directory.c_str())) {
    while (const dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    closedir(d);
  }
  return names;
}

// Times in ns. Thread 1 runs two steps; thread 2 has top-level events only.
// `damaged_instant`: with an instant that lasts, as only a damaged Result
// holds one (a file with one is refused at load: storage_test), for the
// tests that save the trace to a file and load it back.
std::unique_ptr<Result> nested_trace(bool damaged_instant = true) {
  TraceBuilder b;
  b.step(1, 1, 0, 100000);
  b.event(1, "forward", PK_EVENT_PYTHON_USER_DEFINED, 10000, 60000);  // self 50 - 20 - 10 = 20 µs
  b.event(1, "aten::linear", PK_EVENT_OPERATOR, 20000, 40000);        // self 20 - 10 = 10 µs
  b.event(1, "aten::addmm", PK_EVENT_OPERATOR, 25000, 35000);         // self 10 µs
  b.event(1, "aten::linear", PK_EVENT_OPERATOR, 45000, 55000);        // self 10 µs: the same stack again
  b.event(1, "a;b\nc\rd", PK_EVENT_USER_DEFINED, 70000, 80000);       // self 10 µs
  // An instant as a damaged file may hold it, with an end: still no time,
  // neither its own nor taken from the step's self time.
  b.event(1, "mark", PK_EVENT_USER_DEFINED, 85000, damaged_instant ? 87000 : 85000, PK_HOST_EVENT_INSTANT);
  b.event(1, "tiny", PK_EVENT_OPERATOR, 90000, 90400);  // 0.4 µs: rounds to 0, left out
  // Step 1's self time: 100 - 50 - 10 - 0.4 = 39.6 µs.
  b.step(1, 2, 100000, 150000);                                         // self 50 - 20 = 30 µs
  b.event(1, "forward", PK_EVENT_PYTHON_USER_DEFINED, 110000, 130000);  // self 20 - 5 = 15 µs
  b.event(1, "aten::linear", PK_EVENT_OPERATOR, 115000, 120000);        // self 5 µs

  b.event(2, "worker", PK_EVENT_USER_DEFINED, 0, 2500);  // 2.5 µs: halves round up
  b.event(2, "", PK_EVENT_USER_DEFINED, 5000, 7000);
  b.event(2, "x;y", PK_EVENT_USER_DEFINED, 10000, 11000);            // reads "x:y" in the file,
  b.event(2, "x:y", PK_EVENT_USER_DEFINED, 12000, 13000);            // so one line with this one
  b.event(2, "ProfileStep#9", PK_EVENT_USER_DEFINED, 20000, 21000);  // not a step: kept as named
  return b.build();
}

TEST(FoldedStacks, SelfCpuTimePerDistinctStack) {
  EXPECT_EQ(exported(*nested_trace(), StacksMetric::kSelfCpu),
            "ProfileStep 70\n"  // 39.6 + 30 µs: both steps are one frame
            "ProfileStep#9 1\n"
            "ProfileStep;a:b c d 10\n"
            "ProfileStep;forward 35\n"
            "ProfileStep;forward;aten::linear 25\n"
            "ProfileStep;forward;aten::linear;aten::addmm 10\n"
            "[unnamed] 2\n"
            "worker 3\n"
            "x:y 2\n");
}

// A cudaLaunchKernel-like call inside an operator launches each record.
std::unique_ptr<Result> gpu_trace() {
  TraceBuilder b;
  b.event(1, "aten::mm", PK_EVENT_OPERATOR, 0, 10000);
  b.launch(1, 1000, 2000, 1);
  b.launch(1, 4000, 5000, 2, "cudaMemcpyAsync");
  b.launch(1, 6000, 7000, 3);
  b.kernel("gemm;k", 3000, 8000, 1);                         // 5 µs
  b.device("Memcpy HtoD", PK_EVENT_MEMCPY, 9000, 10500, 2);  // 1.5 µs
  b.kernel("gemm;k", 11000, 13000, 3);                       // 2 µs, the same stack as the first
  b.kernel("orphan", 20000, 24000, 99);                      // no runtime call 99 was captured
  b.device("Memset", PK_EVENT_MEMSET, 30000, 30300, 3);      // 0.3 µs: left out
  return b.build();
}

TEST(FoldedStacks, SelfDeviceTimeUnderTheLaunchingCallsStack) {
  EXPECT_EQ(exported(*gpu_trace(), StacksMetric::kSelfDevice),
            "[GPU work with no launching call];orphan 4\n"
            "aten::mm;cudaLaunchKernel;gemm:k 7\n"
            "aten::mm;cudaMemcpyAsync;Memcpy HtoD 2\n");
}

TEST(FoldedStacks, SelfCpuTimeLeavesGpuWorkOut) {
  EXPECT_EQ(exported(*gpu_trace(), StacksMetric::kSelfCpu),
            "aten::mm 7\n"
            "aten::mm;cudaLaunchKernel 2\n"
            "aten::mm;cudaMemcpyAsync 1\n");
}

TEST(FoldedStacks, NothingToShowIsAnEmptyFile) {
  EXPECT_EQ(exported(*TraceBuilder().build(), StacksMetric::kSelfCpu), "");
  EXPECT_EQ(exported(*nested_trace(), StacksMetric::kSelfDevice), "");
}

std::string frame(int level) {
  std::string name = std::to_string(level);
  return "f" + std::string(3 - name.size(), '0') + name;  // f000..f254 sort as they nest
}

TEST(FoldedStacks, AChainOf255LevelsGivesEveryLevelItsLine) {
  TraceBuilder b;
  // Level k spans [500 k, 255000 - 500 k): 1 µs longer than level k + 1.
  constexpr int kLevels = 255;
  for (int k = 0; k < kLevels; ++k) {
    b.event(1, frame(k), PK_EVENT_USER_DEFINED, 500u * k, 255000u - 500u * k);
  }
  auto r = b.build();
  ASSERT_EQ(r->host_events[kLevels - 1].depth, kLevels - 1);
  std::string expected;
  std::string stack;
  for (int k = 0; k < kLevels; ++k) {
    stack += (k == 0 ? "" : ";") + frame(k);
    expected += stack + " 1\n";
  }
  EXPECT_EQ(exported(*r, StacksMetric::kSelfCpu), expected);
}

TEST(FoldedStacks, DeeperThanTheDepthCanCountStaysWithin256Frames) {
  TraceBuilder b;
  for (uint64_t k = 0; k < 300; ++k) b.event(1, "f", PK_EVENT_USER_DEFINED, 500 * k, 300000 - 500 * k);
  std::istringstream lines(exported(*b.build(), StacksMetric::kSelfCpu));
  size_t count = 0;
  for (std::string line; std::getline(lines, line); ++count) {
    size_t frames = 1;
    for (char c : line) frames += c == ';';
    EXPECT_LE(frames, 256u) << line.substr(0, 80);
  }
  EXPECT_GT(count, 0u);
}

TEST(FoldedStacks, ALoadedResultGivesTheSameFile) {
  TempDir dir;
  auto r = nested_trace(/*damaged_instant=*/false);
  save_result(*r, dir.file("t.pktrace"));
  profkit_test::ResultPtr loaded = profkit_test::load(dir.file("t.pktrace"));
  ASSERT_EQ(pk_result_export_stacks(loaded.get(), dir.file("t.stacks").c_str(), PK_STACKS_SELF_CPU), PK_OK)
      << pk_last_error();
  EXPECT_EQ(read_file(dir.file("t.stacks")), exported(*r, StacksMetric::kSelfCpu));
  auto g = gpu_trace();
  save_result(*g, dir.file("g.pktrace"));
  loaded = profkit_test::load(dir.file("g.pktrace"));
  ASSERT_EQ(pk_result_export_stacks(loaded.get(), dir.file("g.stacks").c_str(), PK_STACKS_SELF_DEVICE), PK_OK)
      << pk_last_error();
  EXPECT_EQ(read_file(dir.file("g.stacks")), exported(*g, StacksMetric::kSelfDevice));
}

TEST(FoldedStacks, BadArgumentsAreRefusedWithTheirName) {
  TempDir dir;
  save_result(*nested_trace(/*damaged_instant=*/false), dir.file("t.pktrace"));
  profkit_test::ResultPtr r = profkit_test::load(dir.file("t.pktrace"));
  const std::string path = dir.file("t.stacks");
  EXPECT_EQ(pk_result_export_stacks(nullptr, path.c_str(), PK_STACKS_SELF_CPU), PK_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pk_last_error()).find("the result is NULL"), std::string::npos) << pk_last_error();
  EXPECT_EQ(pk_result_export_stacks(r.get(), nullptr, PK_STACKS_SELF_CPU), PK_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pk_last_error()).find("path must not be NULL"), std::string::npos) << pk_last_error();
  for (const int metric : {2, -1, 0x7FFFFFFF}) {
    EXPECT_EQ(pk_result_export_stacks(r.get(), path.c_str(), static_cast<pk_stacks_metric>(metric)),
              PK_ERR_INVALID_ARGUMENT);
    const std::string message = pk_last_error();
    EXPECT_NE(message.find("metric " + std::to_string(metric) + " is not a pk_stacks_metric"), std::string::npos)
        << message;
    EXPECT_NE(message.find("PK_STACKS_SELF_CPU (0) or PK_STACKS_SELF_DEVICE (1)"), std::string::npos) << message;
  }
  EXPECT_EQ(access(path.c_str(), F_OK), -1);  // nothing written
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"t.pktrace"});
}

TEST(FoldedStacks, AnUnwritablePathIsAnIoErrorThatLeavesNoFile) {
  TempDir dir;
  save_result(*nested_trace(/*damaged_instant=*/false), dir.file("t.pktrace"));
  profkit_test::ResultPtr r = profkit_test::load(dir.file("t.pktrace"));

  const std::string missing = dir.file("missing/t.stacks");
  EXPECT_EQ(pk_result_export_stacks(r.get(), missing.c_str(), PK_STACKS_SELF_CPU), PK_ERR_NOT_FOUND);
  EXPECT_EQ(pk_last_error_errno(), ENOENT);
  EXPECT_NE(std::string(pk_last_error()).find(missing), std::string::npos) << pk_last_error();

  ASSERT_EQ(mkdir(dir.file("a_directory").c_str(), 0755), 0);
  EXPECT_EQ(pk_result_export_stacks(r.get(), dir.file("a_directory").c_str(), PK_STACKS_SELF_DEVICE), PK_ERR_IO);
  EXPECT_EQ(pk_last_error_errno(), EISDIR);
  EXPECT_TRUE(entries(dir.file("a_directory")).empty());
  EXPECT_EQ(entries(dir.path()).size(), 2u);  // t.pktrace and a_directory: no temporary left

  // A write that fails (a full disk) is an error too, not a short file.
  if (access("/dev/full", W_OK) == 0) {
    EXPECT_EQ(pk_result_export_stacks(r.get(), "/dev/full", PK_STACKS_SELF_CPU), PK_ERR_IO);
    EXPECT_EQ(pk_last_error_errno(), ENOSPC);
    EXPECT_NE(std::string(pk_last_error()).find("/dev/full"), std::string::npos) << pk_last_error();
  }
}

TEST(FoldedStacks, AFailedExportKeepsTheFileThatWasThere) {
  TempDir dir;
  const std::string path = dir.file("t.stacks");
  profkit_test::write_file(path, "old 1\n");
  // A refused call leaves the file that was there; a successful one replaces it.
  save_result(*nested_trace(/*damaged_instant=*/false), dir.file("t.pktrace"));
  profkit_test::ResultPtr r = profkit_test::load(dir.file("t.pktrace"));
  EXPECT_EQ(pk_result_export_stacks(r.get(), path.c_str(), static_cast<pk_stacks_metric>(5)), PK_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(read_file(path), "old 1\n");
  EXPECT_EQ(pk_result_export_stacks(r.get(), path.c_str(), PK_STACKS_SELF_CPU), PK_OK) << pk_last_error();
  EXPECT_EQ(read_file(path), exported(*nested_trace(), StacksMetric::kSelfCpu));
}

}  // namespace
}  // namespace profkit
