// Device, Distributed, Kernel, Memory, Memory Manipulation and UserDefined
// summaries on Results with known timestamps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "summary/memory_owners.h"
#include "summary_builder.h"

namespace {

using profkit::SummaryOptions;
using profkit::SummaryView;
using profkit_test::TraceBuilder;
using profkit_test::value;

TEST(SummaryDevice, CpuAndGpuUtilizationOverTheWindow) {
  TraceBuilder b(1000, 2000);
  b.info().process_cpu_ns = 1500;  // 1.5 cores busy
  b.info().system_busy_ns = 300;
  b.info().system_idle_ns = 100;
  b.info().cpu_count = 4;
  b.add_device(0);
  b.add_device(1);  // ran nothing
  b.kernel("k", 1000, 1200, 1, 0, 1);
  b.kernel("k", 1100, 1300, 2, 0, 2);  // overlaps on another stream
  b.kernel("k", 1500, 1600, 3, 0, 1);
  b.kernel("k", 1000, 1500, 4, 2, 1);  // device 2 is not in the device table
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kDevice);
  EXPECT_DOUBLE_EQ(value(t, "CPU(Process)", "Utilization (%)"), 150.0);
  EXPECT_DOUBLE_EQ(value(t, "CPU(System)", "Utilization (%)"), 75.0);
  EXPECT_DOUBLE_EQ(value(t, "GPU 0", "Utilization (%)"), 40.0);
  EXPECT_DOUBLE_EQ(value(t, "GPU 1", "Utilization (%)"), 0.0);
  EXPECT_DOUBLE_EQ(value(t, "GPU 2", "Utilization (%)"), 50.0);
  EXPECT_NE(t.notes[1].find("4 cores"), std::string::npos);
  EXPECT_EQ(t.notes[0], "Elapsed time = 0.00 ms (the recorded span).");
}

// Kernels launched in the window run on after it ends (the GPU is
// asynchronous, and CUPTI delivers them at the flush): only their part
// inside the span is utilization, which never reads above 100 %.
TEST(SummaryDevice, KernelsPastTheSpanCountOnlyInsideIt) {
  TraceBuilder b(0, 100);
  b.add_device(0);
  b.kernel("k", 50, 200, 1);
  b.kernel("k", 200, 350, 2);  // wholly after the span
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kDevice);
  EXPECT_DOUBLE_EQ(value(t, "GPU 0", "Utilization (%)"), 50.0);
}

TEST(SummaryDevice, MissingCpuFiguresShowAsMissing) {
  TraceBuilder b(0, 100);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kDevice);
  EXPECT_TRUE(std::isnan(value(t, "CPU(Process)", "Utilization (%)")));
  EXPECT_TRUE(std::isnan(value(t, "CPU(System)", "Utilization (%)")));
  EXPECT_EQ(t.rows.size(), 2u);  // no GPU rows
}

TEST(SummaryDistributed, CommunicationComputationAndOverlap) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "allreduce", PK_EVENT_COMMUNICATION, 100, 200);
  b.launch(1, 110, 120, 1);
  b.kernel("void reduce<float>(float*)", 300, 400, 1, 0, 2);  // communication by launch
  b.kernel("ncclKernel_Broadcast(int)", 450, 500, 2, 0, 2);   // by name
  b.kernel("gemm", 150, 350, 3, 0, 1);                        // computation
  b.kernel("gemm", 600, 700, 4, 0, 1);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kDistributed);
  // Communication: [100,200) ∪ [300,400) ∪ [450,500) = 250
  EXPECT_EQ(value(t, "Communication", "Total Time"), 250);
  EXPECT_DOUBLE_EQ(value(t, "Communication", "Ratio(%)"), 25.0);
  EXPECT_EQ(value(t, "Computation", "Total Time"), 300);
  // Overlap: [150,200) + [300,350)
  EXPECT_EQ(value(t, "Overlap", "Total Time"), 100);
  EXPECT_DOUBLE_EQ(value(t, "Overlap", "Ratio(%)"), 10.0);
}

// A barrier before the first step and NCCL work still running after the
// last: shares of step time count only what lies inside the steps.
TEST(SummaryDistributed, TimeOutsideTheStepsDoesNotCount) {
  TraceBuilder b(0, 5000);
  b.event(1, "barrier", PK_EVENT_COMMUNICATION, 0, 900);
  b.step(1, 0, 1000, 2000);
  b.event(1, "allreduce", PK_EVENT_COMMUNICATION, 1800, 1900);
  b.launch(1, 1810, 1820, 1);
  b.kernel("ncclDevKernel_AllReduce(int)", 1850, 3000, 1, 0, 2);
  b.kernel("gemm", 1500, 2500, 2, 0, 1);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kDistributed);
  EXPECT_EQ(value(t, "Communication", "Total Time"), 200);  // [1800, 2000)
  EXPECT_DOUBLE_EQ(value(t, "Communication", "Ratio(%)"), 20.0);
  EXPECT_EQ(value(t, "Computation", "Total Time"), 500);  // [1500, 2000)
  EXPECT_EQ(value(t, "Overlap", "Total Time"), 200);
  bool says_so = false;
  for (const std::string& note : t.notes) says_so |= note.rfind("Only time inside the ProfileSteps", 0) == 0;
  EXPECT_TRUE(says_so);

  // Communication only outside the steps: recorded, with no time inside them
  // (not "no communication recorded").
  TraceBuilder before(0, 5000);
  before.event(1, "barrier", PK_EVENT_COMMUNICATION, 0, 900);
  before.step(1, 0, 1000, 2000);
  auto only_before = before.build();
  const profkit::SummaryTable none_inside = profkit_test::table_of(*only_before, SummaryView::kDistributed);
  EXPECT_TRUE(none_inside.empty_reason.empty());
  EXPECT_EQ(value(none_inside, "Communication", "Total Time"), 0);
}

// CPU-only runs (DDP on gloo): host events stand in for kernels.
TEST(SummaryDistributed, WithoutKernelsComputationIsOperatorTimeLessOwnCommunication) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "forward", PK_EVENT_FORWARD, 0, 900);  // coarser than operators: not counted
  b.event(1, "aten::mm", PK_EVENT_OPERATOR, 0, 100);
  b.event(1, "aten::mm", PK_EVENT_OPERATOR, 150, 300);
  b.event(1, "all_reduce", PK_EVENT_COMMUNICATION, 300, 380);  // blocking, on the training thread
  b.event(1, "aten::div_", PK_EVENT_OPERATOR, 350, 360);       // inside it: not computation
  b.event(1, "aten::mm", PK_EVENT_OPERATOR, 500, 700);
  b.event(2, "all_reduce (in flight)", PK_EVENT_COMMUNICATION, 200, 600);  // another thread
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kDistributed);
  EXPECT_EQ(value(t, "Communication", "Total Time"), 400);  // [200,600)
  EXPECT_EQ(value(t, "Computation", "Total Time"), 450);    // [0,100) + [150,300) + [500,700)
  EXPECT_EQ(value(t, "Overlap", "Total Time"), 200);        // [200,300) + [500,600)
  EXPECT_DOUBLE_EQ(value(t, "Computation", "Ratio(%)"), 45.0);
  ASSERT_FALSE(t.notes.empty());
  EXPECT_NE(t.notes[0].find("No GPU kernels were recorded: Computation = time inside Operator events"),
            std::string::npos);
}

TEST(SummaryDistributed, WithoutOperatorsModelPhasesCount) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "forward", PK_EVENT_FORWARD, 0, 300);
  b.event(1, "backward", PK_EVENT_BACKWARD, 300, 800);
  b.event(1, "wait", PK_EVENT_COMMUNICATION, 700, 800);
  b.event(3, "all_reduce (in flight)", PK_EVENT_COMMUNICATION, 400, 750);
  b.event(1, "user range", PK_EVENT_PYTHON_USER_DEFINED, 800, 1000);  // a coarser level: not counted
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kDistributed);
  EXPECT_EQ(value(t, "Communication", "Total Time"), 400);  // [400,800)
  EXPECT_EQ(value(t, "Computation", "Total Time"), 700);    // [0,700)
  EXPECT_EQ(value(t, "Overlap", "Total Time"), 300);        // [400,700)
  EXPECT_NE(t.notes[0].find("Forward, Backward, Optimization and PythonOp"), std::string::npos);
}

TEST(SummaryDistributed, WithOnlyStepsComputationIsStepTimeNotCommunicating) {
  TraceBuilder b;
  b.step(1, 0, 0, 500);
  b.step(1, 1, 500, 1000);
  b.event(1, "barrier", PK_EVENT_COMMUNICATION, 100, 300);
  b.event(1, "all_reduce", PK_EVENT_COMMUNICATION, 900, 1000);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kDistributed);
  EXPECT_EQ(value(t, "Communication", "Total Time"), 300);
  EXPECT_EQ(value(t, "Computation", "Total Time"), 700);
  EXPECT_EQ(value(t, "Overlap", "Total Time"), 0);
  EXPECT_NE(t.notes[0].find("inside ProfileStep events"), std::string::npos);
}

TEST(SummaryDistributed, NoCommunicationSaysSo) {
  TraceBuilder b(0, 10);
  b.kernel("gemm", 0, 5, 1);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kDistributed);
  EXPECT_TRUE(t.rows.empty());
  EXPECT_EQ(t.empty_reason, "no communication recorded");
}

TEST(SummaryKernel, ShortNamesMergeInstantiationsRatioToAllKernels) {
  TraceBuilder b(0, 10000);
  b.kernel("void gemm<float, 128>(float*, int)", 0, 300, 1);
  b.kernel("void gemm<half, 64>(half*, int)", 300, 400, 2);
  b.kernel("relu_kernel", 400, 500, 3);
  b.device("Memcpy HtoD", PK_EVENT_MEMCPY, 0, 1000, 4);  // not a kernel
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kKernel);
  EXPECT_EQ(profkit_test::labels(t), (std::vector<std::string>{"gemm", "relu_kernel"}));
  EXPECT_EQ(value(t, "gemm", "Calls"), 2);
  EXPECT_EQ(value(t, "gemm", "GPU Total"), 400);
  EXPECT_EQ(value(t, "gemm", "GPU Avg"), 200);
  EXPECT_EQ(value(t, "gemm", "GPU Max"), 300);
  EXPECT_EQ(value(t, "gemm", "GPU Min"), 100);
  EXPECT_DOUBLE_EQ(value(t, "gemm", "GPU Ratio(%)"), 80.0);
  EXPECT_DOUBLE_EQ(value(t, "relu_kernel", "GPU Ratio(%)"), 20.0);
  EXPECT_EQ(t.find_column("CPU Total"), -1);

  SummaryOptions o;
  o.sorted_by = profkit::SortKey::kGpuMin;  // ascending: relu (100) ties gemm (100), by name
  EXPECT_EQ(profkit_test::labels(profkit_test::table_of(*r, SummaryView::kKernel, o)),
            (std::vector<std::string>{"gemm", "relu_kernel"}));
  o.sorted_by = profkit::SortKey::kCpuMax;  // kernels have no CPU side: reads GPU Max
  EXPECT_EQ(profkit_test::labels(profkit_test::table_of(*r, SummaryView::kKernel, o)),
            (std::vector<std::string>{"gemm", "relu_kernel"}));
  o.sorted_by = profkit::SortKey::kGpuAvg;
  o.row_limit = 1;
  const profkit::SummaryTable limited = profkit_test::table_of(*r, SummaryView::kKernel, o);
  EXPECT_EQ(profkit_test::labels(limited), (std::vector<std::string>{"gemm"}));
}

// A record CUPTI gave no timestamps for is a call of unknown length: in
// Calls, not in Avg / Min (as a 0 it would halve this Avg and zero the Min).
TEST(SummaryKernel, RecordsWithoutTimingCountAsCallsOnly) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.kernel("gemm", 100, 140, 1);
  b.device("gemm", PK_EVENT_KERNEL, 500, 500, 2, 0, 7, PK_DEVICE_EVENT_NO_TIMING);
  b.device("Memcpy HtoD", PK_EVENT_MEMCPY, 200, 230, 3);
  b.device("Memcpy HtoD", PK_EVENT_MEMCPY, 500, 500, 4, 0, 7, PK_DEVICE_EVENT_NO_TIMING);
  auto r = b.build();
  const profkit::SummaryTable k = profkit_test::table_of(*r, SummaryView::kKernel);
  EXPECT_EQ(value(k, "gemm", "Calls"), 2);
  EXPECT_EQ(value(k, "gemm", "GPU Avg"), 40);
  EXPECT_EQ(value(k, "gemm", "GPU Min"), 40);
  EXPECT_TRUE(std::any_of(k.notes.begin(), k.notes.end(), [](const std::string& note) {
    return note.find("1 GPU record had no timestamps") != std::string::npos;
  }));
  const profkit::SummaryTable m = profkit_test::table_of(*r, SummaryView::kMemoryManipulation);
  EXPECT_EQ(value(m, "Memcpy HtoD", "Calls"), 2);
  EXPECT_EQ(value(m, "Memcpy HtoD", "GPU Min"), 30);
  EXPECT_NE(m.notes.back().find("no timestamps"), std::string::npos);
}

TEST(SummaryKernel, NoKernelsSaysSo) {
  TraceBuilder b(0, 10);
  auto r = b.build();
  EXPECT_EQ(profkit_test::table_of(*r, SummaryView::kKernel).empty_reason, "no GPU kernels recorded");
}

TEST(SummaryMemoryManipulation, MemcpyAndMemsetLikeHostEventsAndGpuRecords) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.launch(1, 0, 100, 1, "cudaMemcpyAsync");
  b.device("Memcpy HtoD", PK_EVENT_MEMCPY, 100, 300, 1);
  b.event(1, "aten::MEMSET_", PK_EVENT_OPERATOR, 200, 250);  // any case
  b.event(1, "aten::add", PK_EVENT_OPERATOR, 300, 400);      // not memory
  b.device("Memset", PK_EVENT_MEMSET, 400, 450, 9);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kMemoryManipulation);
  EXPECT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(value(t, "cudaMemcpyAsync", "CPU Total"), 100);
  EXPECT_EQ(value(t, "cudaMemcpyAsync", "GPU Total"), 200);  // the copy it launched
  EXPECT_DOUBLE_EQ(value(t, "cudaMemcpyAsync", "CPU Ratio(%)"), 10.0);
  EXPECT_EQ(value(t, "aten::MEMSET_", "CPU Total"), 50);
  EXPECT_EQ(value(t, "Memcpy HtoD", "GPU Total"), 200);
  EXPECT_TRUE(std::isnan(value(t, "Memcpy HtoD", "CPU Total")));
  EXPECT_DOUBLE_EQ(value(t, "Memset", "GPU Ratio(%)"), 5.0);
  EXPECT_EQ(profkit_test::row_index(t, "aten::add"), -1);
}

// RecordEvent("h2d_copy", TracerEventType.Memcpy): the type says memory
// manipulation whatever the name.
TEST(SummaryMemoryManipulation, HostEventsOfMemcpyOrMemsetTypeOfAnyName) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "h2d_copy", PK_EVENT_MEMCPY, 100, 300);
  b.event(1, "zero_grads", PK_EVENT_MEMSET, 400, 450);
  b.event(1, "launch_kernel", PK_EVENT_KERNEL, 500, 600);  // not memory
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kMemoryManipulation);
  EXPECT_EQ(profkit_test::labels(t), (std::vector<std::string>{"h2d_copy", "zero_grads"}));
  EXPECT_EQ(value(t, "h2d_copy", "CPU Total"), 200);
  EXPECT_EQ(value(t, "zero_grads", "Calls"), 1);
}

TEST(SummaryUserDefined, BothUserTypesByNameWithGpuAndThreads) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "load", PK_EVENT_PYTHON_USER_DEFINED, 0, 300);
  b.launch(1, 10, 20, 1);
  b.kernel("k", 50, 150, 1);
  b.event(1, "load", PK_EVENT_PYTHON_USER_DEFINED, 400, 500);
  b.event(2, "load", PK_EVENT_USER_DEFINED, 0, 200);
  b.event(2, "save", PK_EVENT_USER_DEFINED, 600, 610);
  b.event(2, "op", PK_EVENT_OPERATOR, 700, 800);  // not user-defined
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kUserDefined);
  EXPECT_EQ(profkit_test::labels(t), (std::vector<std::string>{"load", "save"}));
  EXPECT_EQ(value(t, "load", "Calls"), 3);
  EXPECT_EQ(value(t, "load", "CPU Total"), 600);
  EXPECT_EQ(value(t, "load", "CPU Max"), 300);
  EXPECT_EQ(value(t, "load", "CPU Min"), 100);
  EXPECT_DOUBLE_EQ(value(t, "load", "CPU Ratio(%)"), 60.0);
  EXPECT_EQ(value(t, "load", "GPU Total"), 100);
  EXPECT_EQ(value(t, "load", "GPU Min"), 0);

  SummaryOptions o;
  o.thread_sep = true;
  const profkit::SummaryTable split = profkit_test::table_of(*r, SummaryView::kUserDefined, o);
  ASSERT_EQ(split.rows.size(), 3u);
  const size_t thread = static_cast<size_t>(split.find_column("Thread") - 1);
  EXPECT_EQ(split.rows[0].values[thread], 1);
  EXPECT_EQ(split.rows[1].label, "load");
  EXPECT_EQ(split.rows[1].values[thread], 2);
  EXPECT_EQ(split.rows[2].label, "save");
}

TEST(SummaryMemory, PerDeviceCountsBytesAndPeaks) {
  TraceBuilder b(0, 100);
  b.memory(1, 0, 10, 1000, 1000, 4096);
  b.memory(1, 0, 20, 500, 1500, 4096);
  b.memory(1, 0, 30, -1000, 500, 8192);
  b.memory(1, -1, 15, 64, 64, 64);
  b.memory(2, 1, 40, 10, 10, 10);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kMemory);
  EXPECT_EQ(profkit_test::labels(t), (std::vector<std::string>{"CPU", "GPU 0", "GPU 1"}));
  EXPECT_EQ(value(t, "GPU 0", "Allocations"), 2);
  EXPECT_EQ(value(t, "GPU 0", "Allocated"), 1500);
  EXPECT_EQ(value(t, "GPU 0", "Frees"), 1);
  EXPECT_EQ(value(t, "GPU 0", "Freed"), 1000);
  EXPECT_EQ(value(t, "GPU 0", "Peak Allocated"), 1500);
  EXPECT_EQ(value(t, "GPU 0", "Peak Reserved"), 8192);
  EXPECT_EQ(value(t, "CPU", "Allocated"), 64);
  EXPECT_EQ(value(t, "GPU 1", "Frees"), 0);
}

std::vector<std::string> all_labels(const profkit::SummaryTable& t) {
  std::vector<std::string> out;
  for (const profkit::SummaryRow& row : t.rows) out.push_back(std::string(row.level, ' ') + row.label);
  return out;
}

TEST(SummaryMemory, EventsUnderEachDeviceAreWhereTheMemoryWasAllocatedAndFreed) {
  TraceBuilder b(0, 1000);
  b.event(1, "aten::linear", PK_EVENT_OPERATOR, 100, 400);
  b.event(1, "aten::addmm", PK_EVENT_OPERATOR, 150, 300);
  b.event(1, "aten::relu", PK_EVENT_OPERATOR, 500, 600);
  b.memory(1, -1, 200, 4096, 4096, 0);   // in addmm (inside linear)
  b.memory(1, -1, 350, 512, 4608, 0);    // in linear, after addmm ended
  b.memory(1, -1, 550, 1024, 5632, 0);   // in relu
  b.memory(1, -1, 560, 1024, 6656, 0);   // in relu
  b.memory(1, -1, 700, -4096, 2560, 0);  // after every event
  b.memory(1, 0, 250, 64, 64, 128);      // GPU memory, in addmm
  b.step(1, 1, 1000, 2000);
  b.step(1, 2, 2000, 3000);
  b.memory(1, 0, 1500, -32, 32, 128);  // directly in steps: one row for every step
  b.memory(1, 0, 2500, -32, 0, 128);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kMemory);
  EXPECT_EQ(all_labels(t), (std::vector<std::string>{"CPU", " aten::addmm", " aten::relu", " aten::linear",
                                                     " (outside any event)", "GPU 0", " aten::addmm", " ProfileStep"}));
  EXPECT_EQ(value(t, "aten::relu", "Allocations"), 2);
  EXPECT_EQ(value(t, "aten::relu", "Allocated"), 2048);
  EXPECT_EQ(value(t, "aten::linear", "Allocated"), 512);
  EXPECT_EQ(value(t, "(outside any event)", "Frees"), 1);
  EXPECT_EQ(value(t, "(outside any event)", "Freed"), 4096);
  EXPECT_EQ(value(t, "(outside any event)", "Allocations"), 0);
  EXPECT_TRUE(profkit::is_missing(t.rows[1].values[static_cast<size_t>(t.find_column("Peak Allocated") - 1)]));
  EXPECT_EQ(t.rows[6].values[static_cast<size_t>(t.find_column("Allocated") - 1)], 64);  // GPU 0's addmm
  EXPECT_EQ(value(t, "ProfileStep", "Frees"), 2);

  SummaryOptions limited;
  limited.row_limit = 1;
  const profkit::SummaryTable top = profkit_test::table_of(*r, SummaryView::kMemory, limited);
  EXPECT_EQ(all_labels(top), (std::vector<std::string>{"CPU", " aten::addmm", "GPU 0", " aten::addmm"}));
  EXPECT_NE(top.notes.back().find("4 more events not shown"), std::string::npos) << top.notes.back();
}

TEST(SummaryMemory, OwnersAreTheInnermostOpenEventOfTheSameThread) {
  TraceBuilder b(0, 1000);
  b.event(1, "outer", PK_EVENT_USER_DEFINED, 0, 500);
  b.event(1, "inner", PK_EVENT_OPERATOR, 0, 100);  // starts with outer
  b.event(2, "other thread", PK_EVENT_OPERATOR, 0, 1000);
  b.memory(1, -1, 50, 8, 8, 0);
  b.memory(1, -1, 100, 8, 16, 0);  // at inner's end: still inside it
  b.memory(1, -1, 101, 8, 24, 0);
  b.memory(1, -1, 900, 8, 32, 0);  // thread 1 has nothing open; thread 2's event does not count
  b.memory(2, -1, 900, 8, 40, 0);
  auto r = b.build();
  const std::vector<uint64_t> owners = profkit::memory_event_owners(*r);
  auto name_of = [&](uint64_t owner) {
    return owner == PK_NO_EVENT ? std::string("none") : std::string(r->strings.view(r->host_events[owner].name));
  };
  std::vector<std::string> names;
  for (const uint64_t owner : owners) names.push_back(name_of(owner));
  EXPECT_EQ(names, (std::vector<std::string>{"inner", "inner", "outer", "none", "other thread"}));
}

TEST(SummaryMemory, NoMemoryEventsSaysSo) {
  TraceBuilder b(0, 10);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kMemory);
  EXPECT_TRUE(t.rows.empty());
  EXPECT_NE(t.empty_reason.find("no memory events"), std::string::npos);
}

TEST(SummaryViews, OnlyTheSelectedTablesInViewOrder) {
  TraceBuilder b(0, 10);
  auto r = b.build();
  SummaryOptions o;
  o.views = (1u << static_cast<int>(SummaryView::kUserDefined)) | (1u << static_cast<int>(SummaryView::kDevice));
  const profkit::Summary s = profkit::compute_summary(*r, o);
  ASSERT_EQ(s.tables.size(), 2u);
  EXPECT_EQ(s.tables[0].title, "Device Summary");
  EXPECT_EQ(s.tables[1].title, "UserDefined Summary");
  EXPECT_EQ(profkit::find_table(s, SummaryView::kKernel), nullptr);
}

TEST(SummaryOptionsCheck, OutOfRangeValuesNameTheValidOnes) {
  try {
    profkit::make_summary_options(9, true, false, 1, 0, 0);
    FAIL() << "sorted_by 9 accepted";
  } catch (const profkit::Error& e) {
    EXPECT_EQ(e.status(), PK_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("GPUMin=7, CPUSelf=8"), std::string::npos) << e.what();
  }
  EXPECT_THROW(profkit::make_summary_options(-1, true, false, 1, 0, 0), profkit::Error);
  EXPECT_THROW(profkit::make_summary_options(0, true, false, 4, 0, 0), profkit::Error);
  EXPECT_THROW(profkit::make_summary_options(0, true, false, 1, 1u << 9, 0), profkit::Error);
  const profkit::SummaryOptions all = profkit::make_summary_options(7, false, true, 3, 0, 5);
  EXPECT_EQ(all.views, profkit::kAllViews);
  EXPECT_EQ(all.sorted_by, profkit::SortKey::kGpuMin);
  EXPECT_EQ(all.time_unit, profkit::TimeUnit::kNanoseconds);
  EXPECT_EQ(all.row_limit, 5u);
}

}  // namespace
