// Model Summary: the phases of a training step, GPU time through launch
// ancestry, and "Others".
#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

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

  EXPECT_EQ(value(t, "Dataloader", "Calls"), 3);  // the worker thread's too, and a note says so
  bool says_so = false;
  for (const std::string& note : t.notes) says_so |= note.rfind("Dataloader: calls on threads that record no", 0) == 0;
  EXPECT_TRUE(says_so);
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

// PyTorch runs every CUDA backward operator on an autograd device thread,
// which records no phase of its own: its launches belong to the phase open
// at launch time on the thread that records the steps.
TEST(SummaryModel, WorkLaunchedFromAHelperThreadBelongsToThePhaseOpenThen) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "forward", PK_EVENT_FORWARD, 0, 400);
  b.launch(1, 100, 110, 1);
  b.kernel("k_fwd", 150, 170, 1);  // 20 ns, launched in Forward on its thread
  b.event(1, "backward", PK_EVENT_BACKWARD, 400, 900);
  b.event(1, "prefetch", PK_EVENT_DATALOADER, 700, 950);  // nested, on the step thread
  b.event(2, "aten::mm", PK_EVENT_OPERATOR, 450, 600);    // the autograd thread
  b.launch(2, 500, 510, 2);
  b.kernel("k_bwd", 520, 550, 2);                       // 30 ns
  b.launch(2, 800, 810, 3);                             // Backward and the nested Dataloader are open:
  b.kernel("k_bwd2", 820, 825, 3);                      // the latest to start, the Dataloader, has it
  b.event(3, "worker", PK_EVENT_DATALOADER, 440, 520);  // a phase on a thread with no steps
  b.launch(4, 460, 470, 4);                             // both open: the step thread's wins
  b.kernel("k_other", 480, 487, 4);
  b.launch(4, 1200, 1210, 5);  // after every step and phase: nowhere
  b.kernel("k_late", 1220, 1300, 5);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kModel);
  EXPECT_EQ(value(t, "Forward", "GPU Total"), 20);
  EXPECT_EQ(value(t, "Backward", "GPU Total"), 37);
  EXPECT_EQ(value(t, "Dataloader", "GPU Total"), 5);
  EXPECT_EQ(value(t, "Dataloader", "GPU Max"), 5);
  EXPECT_EQ(value(t, "ProfileStep", "GPU Total"), 62);
  EXPECT_EQ(value(t, "Others", "GPU Total"), 0);
}

// A thread that records phases keeps the launches inside them; and its
// launches inside a phase but outside a step on its own thread still count
// for the step open at the time.
TEST(SummaryModel, PhaseThreadsKeepTheirLaunchesAndStepsCountEveryThread) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "forward", PK_EVENT_FORWARD, 100, 500);
  b.launch(1, 200, 210, 1);
  b.kernel("k_fwd", 220, 240, 1);  // 20 ns in Forward
  b.launch(1, 600, 610, 2);
  b.kernel("k_loose", 620, 630, 2);  // 10 ns in the step, in no phase
  b.event(2, "next batch", PK_EVENT_DATALOADER, 550, 700);
  b.launch(2, 560, 570, 3);
  b.kernel("h2d", 580, 610, 3, 0, 8);  // 30 ns in the other thread's Dataloader
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kModel);
  EXPECT_EQ(value(t, "Forward", "GPU Total"), 20);
  EXPECT_EQ(value(t, "Dataloader", "GPU Total"), 30);
  EXPECT_EQ(value(t, "ProfileStep", "GPU Total"), 60);
  EXPECT_EQ(value(t, "Others", "GPU Total"), 10);
}

// CUDA backward runs on the autograd device thread, and an optimizer step
// per gradient (a post-accumulate-grad hook) records Optimization there too.
// That thread's other launches still belong to the Backward open on the step
// thread; the step thread's own launches outside its phases stay "Others".
TEST(SummaryModel, AThreadWithPhasesButNoStepsGivesItsOtherLaunchesToThePhaseOpenThen) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "backward", PK_EVENT_BACKWARD, 100, 900);
  b.event(2, "aten::mm", PK_EVENT_OPERATOR, 150, 300);  // the autograd thread
  b.launch(2, 200, 210, 1);
  b.kernel("mm_grad", 220, 260, 1);  // 40 ns: Backward's
  b.event(2, "optimizer", PK_EVENT_OPTIMIZATION, 400, 600);
  b.launch(2, 450, 460, 2);
  b.kernel("sgd", 470, 480, 2);  // 10 ns: Optimization's, once
  b.launch(2, 700, 710, 3);
  b.kernel("mm_grad2", 720, 740, 3);  // 20 ns: Backward's
  b.launch(1, 950, 960, 4);
  b.kernel("loose", 960, 965, 4);  // 5 ns on the step thread after Backward: Others
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kModel);
  EXPECT_EQ(value(t, "Backward", "GPU Total"), 60);
  EXPECT_EQ(value(t, "Optimization", "GPU Total"), 10);
  EXPECT_EQ(value(t, "ProfileStep", "GPU Total"), 75);
  EXPECT_EQ(value(t, "Others", "GPU Total"), 5);
}

// Phases of different types nest (an optimizer step run from a gradient
// hook: Optimization inside Backward): both have the kernel launched in the
// inner one, but Others loses it from the step's GPU time only once.
TEST(SummaryModel, OthersCountsWorkOfNestedPhasesOnce) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "backward", PK_EVENT_BACKWARD, 100, 600);
  b.event(1, "SGD.step", PK_EVENT_OPTIMIZATION, 200, 400);
  b.launch(1, 210, 220, 1);
  b.kernel("sgd_kernel", 230, 330, 1);  // 100 ns in both phases
  b.launch(1, 700, 710, 2);
  b.kernel("loose", 720, 770, 2);  // 50 ns in the step, in no phase
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kModel);
  EXPECT_EQ(value(t, "ProfileStep", "GPU Total"), 150);
  EXPECT_EQ(value(t, "Backward", "GPU Total"), 100);
  EXPECT_EQ(value(t, "Optimization", "GPU Total"), 100);
  EXPECT_EQ(value(t, "Others", "GPU Total"), 50);
  EXPECT_DOUBLE_EQ(value(t, "Others", "GPU Ratio(%)"), 5.0);
}

// Work a phase launched outside every step is in no step's GPU time, so it
// takes nothing away from Others; a helper thread's launch inside nested
// phases (by time) counts once too.
TEST(SummaryModel, OthersLosesOnlyPhaseWorkInsideTheSteps) {
  TraceBuilder b;
  b.event(1, "first batch", PK_EVENT_DATALOADER, 0, 100);  // before the first step
  b.launch(1, 50, 60, 1);
  b.kernel("h2d", 60, 80, 1);  // 20 ns: the Dataloader's, no step's
  b.step(1, 0, 100, 1100);
  b.event(1, "backward", PK_EVENT_BACKWARD, 200, 700);
  b.event(1, "SGD.step", PK_EVENT_OPTIMIZATION, 300, 500);
  b.launch(2, 400, 410, 2);  // the autograd thread, inside both phases
  b.kernel("sgd_kernel", 420, 427, 2);
  b.launch(1, 800, 810, 3);
  b.kernel("loose", 820, 850, 3);  // 30 ns in the step, in no phase
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kModel);
  EXPECT_EQ(value(t, "Dataloader", "GPU Total"), 20);
  EXPECT_EQ(value(t, "Optimization", "GPU Total"), 7);
  EXPECT_EQ(value(t, "ProfileStep", "GPU Total"), 37);
  EXPECT_EQ(value(t, "Others", "GPU Total"), 30);
}

// Consecutive launches of one helper thread: each finds the calls open at
// its own time, also exactly when one starts or ends (a call is open from
// its start up to, not including, its end).
TEST(SummaryModel, EachLaunchFindsTheCallsOpenAtItsOwnTime) {
  TraceBuilder b;
  b.step(1, 0, 0, 500).step(1, 1, 500, 1000);
  b.event(1, "backward", PK_EVENT_BACKWARD, 100, 900);
  b.event(1, "prefetch", PK_EVENT_DATALOADER, 500, 700);  // nested, starts later
  b.launch(2, 200, 205, 1);
  b.kernel("k_a", 210, 213, 1);  // 3 ns: Backward, step 0
  b.launch(2, 500, 505, 2);
  b.kernel("k_b", 510, 515, 2);  // 5 ns: Dataloader (it starts now), step 1
  b.launch(2, 700, 705, 3);
  b.kernel("k_c", 710, 721, 3);  // 11 ns: Backward (the Dataloader has ended), step 1
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kModel);
  EXPECT_EQ(value(t, "Backward", "GPU Total"), 14);
  EXPECT_EQ(value(t, "Dataloader", "GPU Total"), 5);
  EXPECT_EQ(value(t, "ProfileStep", "GPU Max"), 16);  // step 1
  EXPECT_EQ(value(t, "ProfileStep", "GPU Min"), 3);   // step 0
}

// Threads are walked in tid order, so a launching thread can come before
// the thread that records the loop: its launches still find their calls.
TEST(SummaryModel, AHelperThreadWalkedBeforeTheLoopThreadFindsItsCalls) {
  TraceBuilder b;
  b.step(9, 0, 0, 1000);
  b.event(9, "backward", PK_EVENT_BACKWARD, 100, 900);
  b.launch(1, 200, 210, 1);
  b.kernel("k_bwd", 220, 245, 1);  // 25 ns
  auto r = b.build();
  ASSERT_EQ(r->threads.front().tid, 1u);  // the helper is walked first
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kModel);
  EXPECT_EQ(value(t, "Backward", "GPU Total"), 25);
  EXPECT_EQ(value(t, "ProfileStep", "GPU Total"), 25);
  EXPECT_EQ(value(t, "Others", "GPU Total"), 0);
}

// Two calls open at a launch that start at the same time: the one found
// last wins, which for nested calls is the inner one.
TEST(SummaryModel, OfNestedCallsThatStartTogetherTheInnerHasTheLaunch) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "forward", PK_EVENT_FORWARD, 100, 500);
  b.event(1, "prefetch", PK_EVENT_DATALOADER, 100, 300);  // nested, same start
  b.launch(2, 200, 210, 1);
  b.kernel("k", 220, 231, 1);  // 11 ns
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kModel);
  EXPECT_EQ(value(t, "Dataloader", "GPU Total"), 11);
  EXPECT_EQ(value(t, "Forward", "GPU Total"), 0);
}

// A damaged Result (a thread's events out of time order: a hand-edited or
// badly merged file): launches that go back in time on their thread still
// find the step and phase open at their launch time.
TEST(SummaryModel, LaunchesOutOfTimeOrderOnTheirThreadStillFindTheirCalls) {
  TraceBuilder b;
  b.step(1, 0, 0, 500).step(1, 1, 500, 1000);
  b.event(1, "forward", PK_EVENT_FORWARD, 0, 400);
  b.event(1, "backward", PK_EVENT_BACKWARD, 500, 900);
  b.launch(2, 100, 110, 1);
  b.kernel("k_a", 120, 127, 1);  // 7 ns
  b.launch(2, 800, 810, 2);
  b.kernel("k_b", 820, 850, 2);  // 30 ns
  b.launch(2, 850, 860, 3);
  b.kernel("k_c", 870, 872, 3);  // 2 ns
  auto r = b.build();
  // Swap the times of the helper's first two launches: the walk meets the
  // launch of k_a at 800, then that of k_b at 100, then k_c's at 850.
  const profkit::ThreadRecord& helper = r->threads[1];
  ASSERT_EQ(helper.event_count, 3u);
  std::vector<pk_host_event> events(r->host_events.data(), r->host_events.data() + r->host_events.size());
  std::swap(events[helper.first_event].start_ns, events[helper.first_event + 1].start_ns);
  std::swap(events[helper.first_event].end_ns, events[helper.first_event + 1].end_ns);
  r->host_events = profkit::Column<pk_host_event>(std::move(events));
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kModel);
  EXPECT_EQ(value(t, "Forward", "GPU Total"), 30);
  EXPECT_EQ(value(t, "Backward", "GPU Total"), 9);
  EXPECT_EQ(value(t, "ProfileStep", "GPU Total"), 39);
  EXPECT_EQ(value(t, "ProfileStep", "GPU Max"), 30);  // step 0
  EXPECT_EQ(value(t, "ProfileStep", "GPU Min"), 9);   // step 1
}

// A phase inside a phase of the same type on its thread (a user's
// RecordEvent("forward", Forward) around a model whose integration records
// its own Forward, or an optimizer step inside an "optimization" range) is
// part of it: one call, its time counted once, or Forward reads 2x its time
// and the rows add up to more than the step.
TEST(SummaryModel, APhaseNestedInTheSameTypeIsPartOfItNotASecondCall) {
  for (const bool helper_thread : {false, true}) {
    SCOPED_TRACE(helper_thread ? "phases kept for a helper thread's launches" : "phases counted as they close");
    TraceBuilder b;
    b.step(1, 0, 0, 1000);
    b.event(1, "forward", PK_EVENT_FORWARD, 100, 500);
    b.event(1, "Net.forward", PK_EVENT_FORWARD, 150, 450);
    b.launch(1, 200, 210, 1);
    b.kernel("k_fwd", 220, 240, 1);  // 20 ns, launched in both Forward events
    b.event(1, "optimizer", PK_EVENT_OPTIMIZATION, 600, 900);
    b.event(1, "SGD.step", PK_EVENT_OPTIMIZATION, 600, 800);  // starts together with it
    if (helper_thread) {
      b.launch(2, 700, 710, 2);
      b.kernel("k_opt", 720, 727, 2);  // 7 ns, launched while both Optimization events are open
    }
    auto r = b.build();
    const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kModel);
    EXPECT_EQ(value(t, "Forward", "Calls"), 1);
    EXPECT_EQ(value(t, "Forward", "CPU Total"), 400);
    EXPECT_EQ(value(t, "Forward", "CPU Min"), 400);
    EXPECT_DOUBLE_EQ(value(t, "Forward", "CPU Ratio(%)"), 40.0);
    EXPECT_EQ(value(t, "Forward", "GPU Total"), 20);
    EXPECT_EQ(value(t, "Optimization", "Calls"), 1);
    EXPECT_EQ(value(t, "Optimization", "CPU Total"), 300);
    EXPECT_EQ(value(t, "Optimization", "GPU Total"), helper_thread ? 7 : 0);
    EXPECT_EQ(value(t, "Others", "CPU Total"), 300);
    EXPECT_EQ(value(t, "Others", "GPU Total"), 0);
    EXPECT_EQ(value(t, "ProfileStep", "GPU Total"), helper_thread ? 27 : 20);
  }
}

// A user's RecordEvent("my_step", TracerEventType.ProfileStep) inside each of
// prof.step()'s steps read as two more steps, and halved the Avg and Min.
TEST(SummaryModel, AStepNestedInAStepIsPartOfItNotASecondStep) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000).step(1, 1, 1000, 2000);
  b.event(1, "my_step", PK_EVENT_PROFILE_STEP, 100, 900);
  b.launch(1, 200, 210, 1);
  b.kernel("k", 220, 240, 1);  // 20 ns, launched in both steps of step 0
  b.event(1, "my_step", PK_EVENT_PROFILE_STEP, 1100, 1900);
  b.event(1, "forward", PK_EVENT_FORWARD, 1200, 1300);
  // A helper thread with no step of its own: its launch belongs to the step
  // open then, the outer one.
  b.launch(2, 1500, 1510, 2);
  b.kernel("k_helper", 1520, 1527, 2);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kModel);
  EXPECT_EQ(value(t, "ProfileStep", "Calls"), 2);
  EXPECT_EQ(value(t, "ProfileStep", "CPU Total"), 2000);
  EXPECT_EQ(value(t, "ProfileStep", "CPU Avg"), 1000);
  EXPECT_EQ(value(t, "ProfileStep", "CPU Min"), 1000);
  EXPECT_DOUBLE_EQ(value(t, "ProfileStep", "CPU Ratio(%)"), 100.0);
  EXPECT_EQ(value(t, "ProfileStep", "GPU Total"), 27);
  EXPECT_EQ(value(t, "ProfileStep", "GPU Max"), 20);
  EXPECT_EQ(value(t, "Forward", "Calls"), 1);
  EXPECT_EQ(value(t, "Others", "CPU Total"), 1900);
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

// A coarse clock (or steps that end where they begin) gives ProfileSteps of
// zero length. They were recorded: the table lists them, with zero time,
// and says why the ratios are to the recorded span instead.
TEST(SummaryModel, StepsOfZeroLengthAreListedNotMissing) {
  TraceBuilder b(0, 1000);
  b.step(1, 0, 100, 100).step(1, 1, 600, 600);
  b.event(1, "op", PK_EVENT_OPERATOR, 200, 300);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kModel);
  EXPECT_TRUE(t.empty_reason.empty()) << t.empty_reason;
  EXPECT_EQ(profkit_test::labels(t, 0), std::vector<std::string>{"ProfileStep"});
  EXPECT_EQ(profkit_test::labels(t, 1), std::vector<std::string>{"Others"});
  EXPECT_EQ(value(t, "ProfileStep", "Calls"), 2);
  EXPECT_EQ(value(t, "ProfileStep", "CPU Total"), 0);
  EXPECT_EQ(value(t, "ProfileStep", "CPU Max"), 0);
  EXPECT_DOUBLE_EQ(value(t, "ProfileStep", "CPU Ratio(%)"), 0.0);
  EXPECT_EQ(value(t, "Others", "CPU Total"), 1000);  // the span: no phase covers any of it
  bool says_why = false;
  for (const std::string& note : t.notes) says_why |= note.find("zero length") != std::string::npos;
  EXPECT_TRUE(says_why);
}

TEST(SummaryModel, PhasesBesideStepsOfZeroLengthAreRatiosToTheSpan) {
  TraceBuilder b(0, 1000);
  b.step(1, 0, 100, 100);
  b.event(1, "forward", PK_EVENT_FORWARD, 100, 400);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kModel);
  EXPECT_EQ(profkit_test::labels(t, 0), std::vector<std::string>{"ProfileStep"});
  EXPECT_EQ(profkit_test::labels(t, 1), (std::vector<std::string>{"Forward", "Others"}));
  EXPECT_EQ(value(t, "ProfileStep", "Calls"), 1);
  EXPECT_EQ(value(t, "ProfileStep", "CPU Total"), 0);
  EXPECT_DOUBLE_EQ(value(t, "Forward", "CPU Ratio(%)"), 30.0);
  EXPECT_EQ(value(t, "Others", "CPU Total"), 700);
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
