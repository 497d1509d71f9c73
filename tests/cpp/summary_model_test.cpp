// Model Summary: the phases of a training step, GPU time through launch
// ancestry, and "Others".
#include <gtest/gtest.h>

#include <cmath>

#include "summary_builder.h"

namespace {

using profkit::SummaryView;
using profkit_test::TraceBuilder;
using profkit_test::value;

std::unique_ptr<profkit::Result> two_steps() {
  TraceBuilder b;
  b.step(1, 0, 0, 1000).step(1, 1, 1000, 2000);
  b.event(1, "dataloader", PK_EVENT_DATALOADER, 0, 100);
  b.event(1, "forward", PK_EVENT_FORWARD, 100, 500);
  b.event(1, "aten::mm", PK_EVENT_OPERATOR, 150, 450);
  b.launch(1, 160, 170, 1);
  b.kernel("mm_kernel", 200, 400, 1);  // 200 ns under step 0 > forward > mm > launch
  b.event(1, "backward", PK_EVENT_BACKWARD, 500, 900);
  b.launch(1, 510, 520, 2);
  b.kernel("mm_grad", 600, 700, 2);
  b.event(1, "optimizer", PK_EVENT_OPTIMIZATION, 900, 950);
  b.event(1, "dataloader", PK_EVENT_DATALOADER, 1000, 1150);
  b.event(1, "forward", PK_EVENT_FORWARD, 1150, 1600);
  // Work on another thread during the steps: no model phase, no step.
  b.event(2, "worker", PK_EVENT_DATALOADER, 1700, 1800);
  return b.build();
}

TEST(SummaryModel, PhasesWithCallsTimesAndRatiosToTotal) {
  auto r = two_steps();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kModel);
  EXPECT_EQ(profkit_test::labels(t, 0), std::vector<std::string>{"ProfileStep"});
  EXPECT_EQ(profkit_test::labels(t, 1),
            (std::vector<std::string>{"Dataloader", "Forward", "Backward", "Optimization", "Others"}));
  EXPECT_EQ(value(t, "ProfileStep", "Calls"), 2);
  EXPECT_EQ(value(t, "ProfileStep", "CPU Total"), 2000);
  EXPECT_EQ(value(t, "ProfileStep", "CPU Avg"), 1000);
  EXPECT_DOUBLE_EQ(value(t, "ProfileStep", "CPU Ratio(%)"), 100.0);
  EXPECT_EQ(value(t, "ProfileStep", "GPU Total"), 300);
  EXPECT_EQ(value(t, "ProfileStep", "GPU Max"), 300);
  EXPECT_EQ(value(t, "ProfileStep", "GPU Min"), 0);

  EXPECT_EQ(value(t, "Dataloader", "Calls"), 3);  // the worker thread's too
  EXPECT_EQ(value(t, "Dataloader", "CPU Total"), 350);
  EXPECT_EQ(value(t, "Dataloader", "CPU Max"), 150);
  EXPECT_EQ(value(t, "Dataloader", "CPU Min"), 100);
  EXPECT_DOUBLE_EQ(value(t, "Dataloader", "CPU Ratio(%)"), 17.5);

  EXPECT_EQ(value(t, "Forward", "CPU Total"), 850);
  EXPECT_EQ(value(t, "Forward", "CPU Avg"), 425);
  EXPECT_EQ(value(t, "Forward", "GPU Total"), 200);
  EXPECT_EQ(value(t, "Forward", "GPU Avg"), 100);
  EXPECT_EQ(value(t, "Forward", "GPU Max"), 200);
  EXPECT_EQ(value(t, "Forward", "GPU Min"), 0);
  EXPECT_DOUBLE_EQ(value(t, "Forward", "GPU Ratio(%)"), 10.0);
  EXPECT_EQ(value(t, "Backward", "GPU Total"), 100);
  EXPECT_EQ(value(t, "Optimization", "CPU Total"), 50);
}

TEST(SummaryModel, OthersIsStepTimeNoPhaseCovers) {
  auto r = two_steps();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kModel);
  // Covered inside steps: [0,950) and [1000,1600) and the worker's
  // [1700,1800) = 1650 of 2000.
  EXPECT_EQ(value(t, "Others", "CPU Total"), 350);
  EXPECT_DOUBLE_EQ(value(t, "Others", "CPU Ratio(%)"), 17.5);
  EXPECT_TRUE(std::isnan(value(t, "Others", "Calls")));
  EXPECT_TRUE(std::isnan(value(t, "Others", "CPU Avg")));
  EXPECT_EQ(value(t, "Others", "GPU Total"), 0);  // all step GPU work was launched in a phase
}

TEST(SummaryModel, WithoutStepsTheSpanIsTheWhole) {
  TraceBuilder b(0, 1000);
  b.event(1, "forward", PK_EVENT_FORWARD, 100, 400);
  b.event(2, "forward", PK_EVENT_FORWARD, 300, 500);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kModel);
  EXPECT_EQ(t.rows[0].label, "Total Time");
  EXPECT_EQ(value(t, "Total Time", "CPU Total"), 1000);
  EXPECT_EQ(value(t, "Forward", "CPU Total"), 500);  // sum of calls
  EXPECT_EQ(value(t, "Others", "CPU Total"), 600);   // union [100, 500) covered
  EXPECT_TRUE(std::isnan(value(t, "Others", "GPU Total")));
}

TEST(SummaryModel, NothingToShowSaysWhy) {
  TraceBuilder b(0, 100);
  b.event(1, "op", PK_EVENT_OPERATOR, 0, 10);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kModel);
  EXPECT_TRUE(t.rows.empty());
  EXPECT_NE(t.empty_reason.find("no ProfileStep"), std::string::npos);
}

}  // namespace
