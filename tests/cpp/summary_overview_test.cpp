// Overview Summary and the shared denominators: unions across threads and
// streams, total_time from ProfileStep or the recorded span, empty and tiny
// traces.
#include <gtest/gtest.h>

#include <cmath>

#include "summary_builder.h"

namespace {

using profkit::SummaryView;
using profkit_test::TraceBuilder;
using profkit_test::value;

TEST(SummaryOverview, HostTypesCountOverlapsAcrossThreadsOnce) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "a", PK_EVENT_OPERATOR, 0, 100).event(1, "b", PK_EVENT_OPERATOR, 200, 300);
  b.event(2, "a", PK_EVENT_OPERATOR, 50, 150).event(2, "c", PK_EVENT_OPERATOR, 400, 450);
  b.event(3, "d", PK_EVENT_OPERATOR, 250, 260);  // inside thread 1's [200, 300)
  b.event(3, "nested", PK_EVENT_OPERATOR, 252, 258);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOverview);
  // [0,150) + [200,300) + [400,450)
  EXPECT_EQ(value(t, "Operator", "CPU Time"), 300);
  EXPECT_EQ(value(t, "Operator", "Calls"), 6);
  EXPECT_DOUBLE_EQ(value(t, "Operator", "CPU Ratio(%)"), 30.0);
  EXPECT_TRUE(std::isnan(value(t, "Operator", "GPU Time")));
  EXPECT_EQ(value(t, "ProfileStep", "CPU Time", 0), 1000);
  EXPECT_EQ(value(t, "ProfileStep", "Calls", 0), 1);
  EXPECT_DOUBLE_EQ(value(t, "ProfileStep", "CPU Ratio(%)", 0), 100.0);
}

TEST(SummaryOverview, StepsOfZeroLengthAreListedUnderTheSpanWithANote) {
  TraceBuilder b(0, 1000);
  b.step(1, 0, 100, 100).step(1, 1, 600, 600);
  b.event(1, "op", PK_EVENT_OPERATOR, 200, 300);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOverview);
  EXPECT_EQ(profkit_test::labels(t, 0), std::vector<std::string>{"Total Time"});
  EXPECT_EQ(value(t, "Total Time", "CPU Time", 0), 1000);  // the span
  EXPECT_EQ(value(t, "ProfileStep", "Calls", 1), 2);
  EXPECT_EQ(value(t, "ProfileStep", "CPU Time", 1), 0);
  EXPECT_DOUBLE_EQ(value(t, "Operator", "CPU Ratio(%)"), 10.0);
  bool says_why = false;
  for (const std::string& note : t.notes) says_why |= note.find("All 2 ProfileSteps have zero length") == 0;
  EXPECT_TRUE(says_why);
}

TEST(SummaryOverview, GpuTypesCountOverlapsAcrossStreamsAndDevicesOnce) {
  TraceBuilder b(0, 1000);
  b.kernel("k1", 0, 100, 1, /*device=*/0, /*stream=*/1);
  b.kernel("k2", 50, 150, 2, 0, 2);
  b.kernel("k3", 140, 200, 3, 1, 1);
  b.device("Memcpy HtoD", PK_EVENT_MEMCPY, 300, 310, 4, 0, 3);
  b.device("Memset", PK_EVENT_MEMSET, 400, 400, 5, 0, 3);  // zero length: a call, no time
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOverview);
  EXPECT_EQ(value(t, "Kernel", "GPU Time"), 200);
  EXPECT_EQ(value(t, "Kernel", "Calls"), 3);
  EXPECT_DOUBLE_EQ(value(t, "Kernel", "GPU Ratio(%)"), 20.0);  // span 1000
  EXPECT_TRUE(std::isnan(value(t, "Kernel", "CPU Time")));
  EXPECT_EQ(value(t, "Memcpy", "GPU Time"), 10);
  EXPECT_EQ(value(t, "Memset", "Calls"), 1);
  EXPECT_EQ(value(t, "Memset", "GPU Time"), 0);
  EXPECT_TRUE(t.has_device_data);
}

TEST(SummaryOverview, RowsLargestFirstHostThenGpu) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "small", PK_EVENT_USER_DEFINED, 0, 5);
  b.event(1, "big", PK_EVENT_FORWARD, 100, 600);
  b.event(1, "mid", PK_EVENT_DATALOADER, 700, 800);
  b.launch(1, 710, 720, 1);
  b.kernel("k", 720, 1000, 1);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOverview);
  EXPECT_EQ(profkit_test::labels(t, 0), std::vector<std::string>{"ProfileStep"});
  EXPECT_EQ(profkit_test::labels(t, 1),
            (std::vector<std::string>{"Forward", "Dataloader", "CudaRuntime", "UserDefined", "Kernel"}));
  EXPECT_TRUE(t.nested);
}

// Host events may carry a GPU type (RecordEvent(..., TracerEventType.Memcpy)):
// they get a CPU row of their own, apart from the GPU records of that type.
TEST(SummaryOverview, HostEventsOfGpuTypesGetCpuRows) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "h2d_copy", PK_EVENT_MEMCPY, 100, 300);
  b.event(1, "my_kernel_launch", PK_EVENT_KERNEL, 400, 450);
  b.launch(1, 500, 510, 1);
  b.device("Memcpy HtoD", PK_EVENT_MEMCPY, 520, 620, 1);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOverview);
  EXPECT_EQ(profkit_test::labels(t, 1), (std::vector<std::string>{"Memcpy", "Kernel", "CudaRuntime", "Memcpy"}));
  // Two rows share the label Memcpy: read them by position.
  const auto cpu_time = static_cast<size_t>(t.find_column("CPU Time") - 1);
  const auto gpu_time = static_cast<size_t>(t.find_column("GPU Time") - 1);
  EXPECT_EQ(t.rows[1].values[cpu_time], 200);  // the host Memcpy row
  EXPECT_TRUE(std::isnan(t.rows[1].values[gpu_time]));
  EXPECT_EQ(t.rows[2].values[cpu_time], 50);   // Kernel, a host range
  EXPECT_EQ(t.rows[4].values[gpu_time], 100);  // the GPU Memcpy row
  EXPECT_TRUE(std::isnan(t.rows[4].values[cpu_time]));
}

TEST(SummaryOverview, TotalTimeIsTheUnionOfSteps) {
  TraceBuilder b(0, 10000);  // the window does not matter when steps exist
  b.step(1, 0, 0, 100).step(1, 1, 100, 300).step(1, 2, 500, 600);
  b.event(1, "op", PK_EVENT_OPERATOR, 0, 40);
  auto r = b.build();
  const profkit::Summary s = profkit::compute_summary(*r, {});
  EXPECT_EQ(s.total_time_ns, 400u);
  EXPECT_TRUE(s.total_time_is_steps);
  const profkit::SummaryTable* t = profkit::find_table(s, SummaryView::kOverview);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(value(*t, "ProfileStep", "Calls"), 3);
  EXPECT_DOUBLE_EQ(value(*t, "Operator", "CPU Ratio(%)"), 10.0);
}

TEST(SummaryOverview, WithoutStepsTotalTimeIsTheRecordedWindow) {
  TraceBuilder b(1000, 5000);
  b.event(1, "op", PK_EVENT_OPERATOR, 1000, 2000);
  auto r = b.build();
  const profkit::Summary s = profkit::compute_summary(*r, {});
  EXPECT_EQ(s.total_time_ns, 4000u);
  EXPECT_FALSE(s.total_time_is_steps);
  const profkit::SummaryTable* t = profkit::find_table(s, SummaryView::kOverview);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->rows[0].label, "Total Time");
  EXPECT_TRUE(std::isnan(value(*t, "Total Time", "Calls")));
  EXPECT_DOUBLE_EQ(value(*t, "Operator", "CPU Ratio(%)"), 25.0);
}

TEST(SummaryOverview, WithoutStepsOrWindowTotalTimeIsTheEventsExtent) {
  TraceBuilder b;  // no window
  b.event(1, "op", PK_EVENT_OPERATOR, 100, 200);
  b.kernel("k", 150, 600, 1);
  auto r = b.build();
  const profkit::Summary s = profkit::compute_summary(*r, {});
  EXPECT_EQ(s.total_time_ns, 500u);
  EXPECT_DOUBLE_EQ(value(*profkit::find_table(s, SummaryView::kOverview), "Operator", "CPU Ratio(%)"), 20.0);
}

TEST(SummaryOverview, ZeroLengthStepsFallBackToTheSpan) {
  TraceBuilder b(0, 50);
  b.step(1, 0, 10, 10);
  b.event(1, "op", PK_EVENT_OPERATOR, 0, 25);
  auto r = b.build();
  const profkit::Summary s = profkit::compute_summary(*r, {});
  EXPECT_FALSE(s.total_time_is_steps);
  EXPECT_EQ(s.total_time_ns, 50u);
}

TEST(SummaryOverview, EmptyTraceGivesEveryTableWithoutDividingByZero) {
  TraceBuilder b;
  auto r = b.build();
  profkit::Summary s;
  ASSERT_NO_THROW(s = profkit::compute_summary(*r, {}));
  EXPECT_EQ(s.total_time_ns, 0u);
  ASSERT_EQ(s.tables.size(), static_cast<size_t>(profkit::kSummaryViewCount));
  const profkit::SummaryTable* t = profkit::find_table(s, SummaryView::kOverview);
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->rows.size(), 1u);  // "Total Time" with nothing to divide by
  EXPECT_TRUE(std::isnan(value(*t, "Total Time", "CPU Ratio(%)")));
  for (const profkit::SummaryTable& table : s.tables) {
    for (const profkit::SummaryRow& row : table.rows) {
      for (double v : row.values) EXPECT_FALSE(std::isinf(v)) << table.title;
    }
  }
}

TEST(SummaryOverview, SingleAndZeroLengthEvents) {
  TraceBuilder b;
  b.event(1, "instant", PK_EVENT_USER_DEFINED, 500, 500);
  auto single_instant = b.build();
  profkit::Summary s = profkit::compute_summary(*single_instant, {});
  EXPECT_EQ(s.total_time_ns, 0u);  // no extent at all
  const profkit::SummaryTable* t = profkit::find_table(s, SummaryView::kOverview);
  EXPECT_EQ(value(*t, "UserDefined", "Calls"), 1);
  EXPECT_EQ(value(*t, "UserDefined", "CPU Time"), 0);
  EXPECT_TRUE(std::isnan(value(*t, "UserDefined", "CPU Ratio(%)")));

  TraceBuilder one;
  one.event(1, "only", PK_EVENT_OPERATOR, 100, 300);
  one.event(1, "instant", PK_EVENT_USER_DEFINED, 200, 200);
  auto r = one.build();
  s = profkit::compute_summary(*r, {});
  EXPECT_EQ(s.total_time_ns, 200u);
  t = profkit::find_table(s, SummaryView::kOverview);
  EXPECT_DOUBLE_EQ(value(*t, "Operator", "CPU Ratio(%)"), 100.0);
  EXPECT_DOUBLE_EQ(value(*t, "UserDefined", "CPU Ratio(%)"), 0.0);
}

bool has_note(const profkit::SummaryTable& t, const std::string& start) {
  for (const std::string& note : t.notes) {
    if (note.rfind(start, 0) == 0) return true;
  }
  return false;
}

// A C program that records its setup before the first pk_step, and its
// evaluation between pk_step_end and pk_step_begin: the time of each type
// counts only inside the steps, or its share of step time passes 100 %.
TEST(SummaryOverview, TimeOutsideTheStepsDoesNotCount) {
  TraceBuilder b(0, 10000);
  b.step(1, 0, 5000, 6000).step(1, 1, 8000, 9000);
  b.event(1, "setup", PK_EVENT_USER_DEFINED, 0, 5000);
  b.event(1, "train", PK_EVENT_USER_DEFINED, 5100, 5600);
  b.event(1, "eval", PK_EVENT_USER_DEFINED, 6000, 8000);
  b.event(2, "loader", PK_EVENT_DATALOADER, 4500, 5500);  // across the first step's start
  b.event(3, "loader", PK_EVENT_DATALOADER, 8900, 9600);  // and the last one's end
  b.launch(1, 8800, 8810, 1);
  b.kernel("k", 8950, 9950, 1);  // still running after the last step
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOverview);
  EXPECT_EQ(value(t, "ProfileStep", "CPU Time", 0), 2000);
  EXPECT_EQ(value(t, "UserDefined", "CPU Time"), 500);
  EXPECT_EQ(value(t, "UserDefined", "Calls"), 3);
  EXPECT_DOUBLE_EQ(value(t, "UserDefined", "CPU Ratio(%)"), 25.0);
  EXPECT_EQ(value(t, "Dataloader", "CPU Time"), 500 + 100);
  EXPECT_EQ(value(t, "Kernel", "GPU Time"), 50);
  EXPECT_DOUBLE_EQ(value(t, "Kernel", "GPU Ratio(%)"), 2.5);
  EXPECT_TRUE(has_note(t, "Only time inside the ProfileSteps counts here"));

  // Inside the steps nothing is cut, and no note says so.
  TraceBuilder inside(0, 10000);
  inside.step(1, 0, 0, 10000);
  inside.event(1, "u", PK_EVENT_USER_DEFINED, 0, 10000);
  auto whole = inside.build();
  const profkit::SummaryTable all = profkit_test::table_of(*whole, SummaryView::kOverview);
  EXPECT_EQ(value(all, "UserDefined", "CPU Time"), 10000);
  EXPECT_FALSE(has_note(all, "Only time inside"));
}

TEST(SummaryOverview, WithoutStepsTimeOutsideTheRecordedWindowDoesNotCount) {
  TraceBuilder b(1000, 2000);
  b.event(1, "u", PK_EVENT_USER_DEFINED, 500, 1500);
  b.event(1, "u", PK_EVENT_USER_DEFINED, 1600, 1700);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOverview);
  EXPECT_EQ(value(t, "UserDefined", "CPU Time"), 600);
  EXPECT_DOUBLE_EQ(value(t, "UserDefined", "CPU Ratio(%)"), 60.0);
  EXPECT_TRUE(has_note(t, "Only time inside the recorded span counts here"));
}

TEST(SummaryOverview, CommunicationHasCpuAndGpuTime) {
  TraceBuilder b(0, 1000);
  b.event(1, "allreduce", PK_EVENT_COMMUNICATION, 0, 100);
  b.event(2, "allreduce", PK_EVENT_COMMUNICATION, 50, 200);
  b.launch(1, 10, 20, 1);
  b.kernel("void reduce_kernel<float>(float*)", 300, 400, 1);  // launched inside a Communication event
  b.kernel("ncclDevKernel_AllGather(int)", 350, 500, 2);       // NCCL by name, launch not captured
  b.kernel("gemm", 600, 700, 3);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOverview);
  EXPECT_EQ(value(t, "Communication", "CPU Time"), 200);
  EXPECT_EQ(value(t, "Communication", "GPU Time"), 200);  // [300, 500)
  EXPECT_EQ(value(t, "Communication", "Calls"), 2);
  EXPECT_EQ(value(t, "Kernel", "GPU Time"), 300);  // every kernel
}

// NCCL kernels launched by a library's own thread, with no Communication
// host event: the row is there for them, and so are its calls.
TEST(SummaryOverview, CommunicationOnlyOnTheGpuCountsItsGpuCalls) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.launch(1, 10, 20, 1).launch(1, 30, 40, 2);
  b.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)", 50, 250, 1);
  b.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)", 300, 400, 2);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOverview);
  EXPECT_EQ(value(t, "Communication", "Calls"), 2);
  EXPECT_EQ(value(t, "Communication", "GPU Time"), 300);
  EXPECT_TRUE(std::isnan(value(t, "Communication", "CPU Time")));
}

// An asynchronous collective's "(in flight)" event on the waiter thread is
// the same call again: its time counts, it is no call of its own.
TEST(SummaryOverview, InFlightCopiesOfAsyncCollectivesAreNoCalls) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "all_reduce", PK_EVENT_COMMUNICATION, 100, 110);  // async: returns at once
  b.event(1, "all_reduce", PK_EVENT_COMMUNICATION, 500, 600);  // blocking
  b.event(2, "all_reduce (in flight)", PK_EVENT_COMMUNICATION, 105, 300);
  b.event(2, "in flight", PK_EVENT_COMMUNICATION, 700, 710);  // not the suffix: a call
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOverview);
  EXPECT_EQ(value(t, "Communication", "Calls"), 3);
  EXPECT_EQ(value(t, "Communication", "CPU Time"), 310);  // [100,300) + [500,600) + [700,710)
}

// DDP's wait at the end of backward for its bucket all-reduces, already
// calls of their own (as profkit.cross_rank counts them).
TEST(SummaryOverview, DdpsWaitForItsAllReducesIsNoCall) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "all_reduce", PK_EVENT_COMMUNICATION, 100, 150);  // a bucket
  b.event(1, "all_reduce", PK_EVENT_COMMUNICATION, 200, 250);  // a bucket
  b.event(1, "DDP wait for all_reduce", PK_EVENT_COMMUNICATION, 600, 700);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOverview);
  EXPECT_EQ(value(t, "Communication", "Calls"), 2);
  EXPECT_EQ(value(t, "Communication", "CPU Time"), 200);  // the wait's time counts
}

}  // namespace
