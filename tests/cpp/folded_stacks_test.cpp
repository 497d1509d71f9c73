// Folded-stack export (flamegraph.pl / speedscope): the exact file for
// traces with known nesting and times, both metrics, the C ABI's errors,
// deep stacks, and events that cross (each moment counted once).
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "export/folded_stacks.h"
#include "storage/trace_file.h"
#include "summary/host_walk.h"
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

// ---- events that cross ----
// Events recorded whole (with_stack's Python calls, ranges, complete events)
// can cross: one starts inside another and ends after it. Nesting by
// containment makes them siblings, and self time as "duration less the
// children's" counted the overlap twice: flame graphs held more time than
// the thread ran (a range held open across a generator's yield: twice the
// step's time).

// Thread 1, as a generator with a range around its yield runs it: the first
// batches() call begins "load" and returns (yields) before it ends; train()
// trains; the second call ends it. Thread 2: a top-level event crossed,
// with its child, by the next one.
std::unique_ptr<Result> crossing_trace() {
  TraceBuilder b;
  b.event(1, "train", PK_EVENT_PYTHON_OP, 0, 100000);
  b.event(1, "batches", PK_EVENT_PYTHON_OP, 10000, 40000);
  b.event(1, "load", PK_EVENT_PYTHON_USER_DEFINED, 20000, 90000);  // crosses the first batches()
  b.event(1, "busy", PK_EVENT_PYTHON_OP, 25000, 35000);            // loading: in batches() and in load
  b.event(1, "busy", PK_EVENT_PYTHON_OP, 50000, 80000);            // training
  b.event(1, "batches", PK_EVENT_PYTHON_OP, 85000, 95000);         // crossed by load's end
  b.event(2, "a", PK_EVENT_USER_DEFINED, 0, 50000);
  b.event(2, "a1", PK_EVENT_USER_DEFINED, 10000, 40000);
  b.event(2, "b", PK_EVENT_USER_DEFINED, 20000, 100000);
  return b.build();
}

TEST(FoldedStacks, CrossingEventsCountTheirOverlapOnce) {
  auto r = crossing_trace();
  ASSERT_EQ(r->host_events[2].depth, 1);  // load: a sibling of the batches() call it crossed
  // Each moment goes to the event started last among those running: the
  // crossing one from its start on, the innermost where events nest. The
  // lines of a thread add up to the time its events cover: 100 µs each
  // (before: 110 and 130, train's self time read 0, a1 its whole 30 µs).
  EXPECT_EQ(exported(*r, StacksMetric::kSelfCpu),
            "a 10\n"     // [0, 10)
            "a;a1 10\n"  // [10, 20)
            "b 80\n"
            "train 15\n"              // [0, 10) and [95, 100)
            "train;batches 20\n"      // [10, 20) and [85, 95)
            "train;load 25\n"         // [20, 25), [35, 50) and [80, 85)
            "train;load;busy 40\n");  // [25, 35) and [50, 80)
}

// The Operator table's Self CPU comes from the same walk: crossing
// operators' self times add up to the time they cover too.
TEST(FoldedStacks, TheOperatorTablesSelfCpuCountsCrossingTimeOnce) {
  TraceBuilder b;
  b.event(1, "aten::outer", PK_EVENT_OPERATOR, 0, 1000);
  b.event(1, "aten::a", PK_EVENT_OPERATOR, 100, 600);
  b.event(1, "aten::b", PK_EVENT_OPERATOR, 400, 1000);  // crosses aten::a
  const SummaryTable t = profkit_test::table_of(*b.build(), SummaryView::kOperator, SummaryOptions{});
  EXPECT_EQ(profkit_test::value(t, "aten::outer", "Self CPU Total", 0), 100);  // was 0: 1000 - 500 - 600
  EXPECT_EQ(profkit_test::value(t, "aten::a", "Self CPU Total", 0), 300);      // was 500
  EXPECT_EQ(profkit_test::value(t, "aten::b", "Self CPU Total", 0), 600);
}

// Self time per host event, as the walk gives it (duration less children_ns).
class SelfTimes : public HostEventVisitor {
 public:
  explicit SelfTimes(const Result& r) : r_(r), self_(r.host_events.size(), UINT64_MAX) {}
  uint32_t type_mask() const override { return (1u << PK_EVENT_TYPE_COUNT) - 1; }
  void on_close(const OpenStack& /*stack*/, const OpenEvent& closed) override {
    const pk_host_event& e = r_.host_events[closed.index];
    const uint64_t duration = is_instant(e) || e.end_ns <= e.start_ns ? 0 : e.end_ns - e.start_ns;
    EXPECT_LE(closed.children_ns, duration) << "event " << closed.index;
    self_[closed.index] = duration - std::min(duration, closed.children_ns);
  }
  const std::vector<uint64_t>& self() const { return self_; }

 private:
  const Result& r_;
  std::vector<uint64_t> self_;
};

// Random threads on a grid of 1 µs: a nested tree as the recorder writes
// it, whole events at random (crossing anything), copies of events (ties),
// zero-length events and instants.
std::unique_ptr<Result> random_trace(std::mt19937& rng) {
  TraceBuilder b;
  auto at = [&](uint64_t limit) { return static_cast<uint64_t>(rng() % limit); };
  for (uint64_t tid = 1; tid <= 2; ++tid) {
    std::vector<std::pair<uint64_t, uint64_t>> added;
    auto add = [&](uint64_t start, uint64_t end, uint16_t flags = 0) {
      const pk_event_type type = rng() % 2 ? PK_EVENT_PYTHON_OP : PK_EVENT_OPERATOR;
      b.event(tid, "e" + std::to_string(rng() % 4), type, start * 1000, end * 1000, flags);
      added.emplace_back(start, end);
    };
    for (uint64_t start = at(10), k = 0; k < 3 && start < 100; ++k) {  // a tree
      const uint64_t end = start + 1 + at(40);
      add(start, end);
      for (uint64_t c = start + at(5); c < end; c += 1 + at(10)) add(c, std::min(end, c + at(8)));
      start = end + at(5);
    }
    const uint64_t whole = at(25);
    for (uint64_t k = 0; k < whole; ++k) {
      const uint64_t start = at(120);
      add(start, start + at(50));
    }
    for (uint64_t k = at(4); k > 0 && !added.empty(); --k) {
      const auto [start, end] = added[at(added.size())];
      add(start, end);
    }
    for (uint64_t k = at(4); k > 0; --k) {
      const uint64_t t = at(130);
      add(t, t, rng() % 2 ? PK_HOST_EVENT_INSTANT : 0);
    }
  }
  return b.build();
}

// Each 1 µs slot of a thread's time, given to the event started last among
// those running then (on equal starts, the enclosed one, which comes later
// in a thread's order): the self time host_walk.h promises, by brute force.
std::vector<uint64_t> self_by_slots(const Result& r) {
  std::vector<uint64_t> self(r.host_events.size(), 0);
  for (const ThreadRecord& t : r.threads) {
    for (uint64_t slot = 0; slot < 200; ++slot) {
      const uint64_t from = slot * 1000;
      for (uint64_t i = t.first_event + t.event_count; i-- > t.first_event;) {
        const pk_host_event& e = r.host_events[i];
        if (!is_instant(e) && e.start_ns <= from && e.end_ns >= from + 1000) {
          self[i] += 1000;
          break;
        }
      }
    }
  }
  return self;
}

// The time a thread's events cover (its top-level events' union), in µs.
uint64_t covered_us(const Result& r, const ThreadRecord& t) {
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (uint64_t i = t.first_event; i < t.first_event + t.event_count; ++i) {
    const pk_host_event& e = r.host_events[i];
    if (e.depth == 0 && !is_instant(e)) spans.emplace_back(e.start_ns, e.end_ns);
  }
  std::sort(spans.begin(), spans.end());
  uint64_t covered = 0;
  uint64_t until = 0;
  for (const auto& [start, end] : spans) {
    if (end > until) covered += end - std::max(start, until);
    until = std::max(until, end);
  }
  return covered / 1000;
}

TEST(FoldedStacks, SelfTimesAddUpToTheTimeEventsCoverWhateverCrosses) {
  std::mt19937 rng(31);
  size_t crossings = 0;
  for (int round = 0; round < 300; ++round) {
    auto r = random_trace(rng);
    SelfTimes walked(*r);
    walk_host_events(*r, {&walked});
    ASSERT_EQ(walked.self(), self_by_slots(*r)) << "round " << round;

    // One thread at a time: the file's lines are that thread's stacks.
    for (size_t t = 0; t < r->threads.size(); ++t) {
      TraceBuilder one;
      const ThreadRecord& th = r->threads[t];
      for (uint64_t i = th.first_event; i < th.first_event + th.event_count; ++i) {
        const pk_host_event& e = r->host_events[i];
        for (uint64_t f = th.first_event; f < i; ++f) {
          const pk_host_event& earlier = r->host_events[f];
          crossings += e.start_ns < earlier.end_ns && earlier.end_ns < e.end_ns && !is_instant(e);
        }
        one.event(1, std::string(r->strings.view(e.name)), static_cast<pk_event_type>(e.type), e.start_ns, e.end_ns,
                  e.flags);
      }
      auto single = one.build();
      std::istringstream lines(exported(*single, StacksMetric::kSelfCpu));
      int64_t total_us = 0;
      for (std::string line; std::getline(lines, line);) {
        const int64_t us = std::stoll(line.substr(line.rfind(' ') + 1));
        EXPECT_GT(us, 0) << line;  // times are whole µs here: no rounding, and no line of 0
        total_us += us;
      }
      EXPECT_EQ(total_us, static_cast<int64_t>(covered_us(*single, single->threads[0]))) << "round " << round;
    }
  }
  EXPECT_GT(crossings, 1000u);  // the rounds did cross
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
