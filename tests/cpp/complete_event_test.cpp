// pk_complete_event: events recorded after they ended, nested among the
// thread's begin/end events by time alone.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "profkit/profkit.h"
#include "test_support.h"

namespace {

using profkit_test::collect;
using profkit_test::events_of;
using profkit_test::info_of;
using profkit_test::name_of;
using profkit_test::reset_engine;
using profkit_test::ResultPtr;

class CompleteEventTest : public ::testing::Test {
 protected:
  void SetUp() override { reset_engine(); }
  void TearDown() override {
    reset_engine();
    pk_set_memory_cap(1ull << 30);
  }
};

// Busy for about `ns`, so that consecutive clock reads differ.
void spin_for(uint64_t ns) {
  const uint64_t until = pk_now_ns() + ns;
  while (pk_now_ns() < until) {
  }
}

TEST_F(CompleteEventTest, NestsBetweenTheBeginEndEventsThatEncloseItAndThoseItEncloses) {
  const pk_name_id outer = pk_intern("outer");
  const pk_name_id frame = pk_intern("frame.py(3): f");
  const pk_name_id op = pk_intern("aten::add");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event(outer, PK_EVENT_FORWARD);
  spin_for(2000);
  const uint64_t frame_start = pk_now_ns();
  spin_for(2000);
  pk_begin_event(op, PK_EVENT_OPERATOR);
  spin_for(2000);
  pk_end_event();
  spin_for(2000);
  const uint64_t frame_end = pk_now_ns();
  // Recorded after the operator inside it, as a tracer learns of it.
  pk_complete_event(frame, PK_EVENT_PYTHON_OP, frame_start, frame_end);
  spin_for(2000);
  pk_end_event();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  const auto ev = events_of(r.get());
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(name_of(r.get(), ev[0]), "outer");
  EXPECT_EQ(name_of(r.get(), ev[1]), "frame.py(3): f");
  EXPECT_EQ(name_of(r.get(), ev[2]), "aten::add");
  EXPECT_EQ(ev[1].type, PK_EVENT_PYTHON_OP);
  EXPECT_EQ(ev[1].start_ns, frame_start);
  EXPECT_EQ(ev[1].end_ns, frame_end);
  EXPECT_EQ(ev[1].flags, 0);
  EXPECT_EQ(ev[0].depth, 0);
  EXPECT_EQ(ev[1].depth, 1);
  EXPECT_EQ(ev[2].depth, 2);
  EXPECT_EQ(pk_result_parent(r.get(), 1), 0u);
  EXPECT_EQ(pk_result_parent(r.get(), 2), 1u);
  EXPECT_EQ(info_of(r.get()).unmatched_ends, 0u);
  EXPECT_EQ(info_of(r.get()).unfinished_events, 0u);
}

TEST_F(CompleteEventTest, OneThatOverlapsAnEventWithoutContainingItSitsBesideIt) {
  const pk_name_id range = pk_intern("range");
  const pk_name_id frame = pk_intern("frame");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event(range, PK_EVENT_USER_DEFINED);
  spin_for(2000);
  const uint64_t frame_start = pk_now_ns();  // inside the range...
  spin_for(2000);
  pk_end_event();
  spin_for(2000);
  pk_complete_event(frame, PK_EVENT_PYTHON_OP, frame_start, pk_now_ns());  // ...ending after it
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  const auto ev = events_of(r.get());
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(name_of(r.get(), ev[0]), "range");
  EXPECT_EQ(name_of(r.get(), ev[1]), "frame");
  EXPECT_EQ(ev[1].depth, 0);
  EXPECT_EQ(pk_result_parent(r.get(), 1), PK_NO_EVENT);
}

TEST_F(CompleteEventTest, ArgumentsStillReachTheOpenEventAndNeverTheCompleteOnes) {
  const pk_name_id op = pk_intern("aten::mm");
  const pk_name_id key = pk_intern("input_shapes");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  const uint64_t start = pk_now_ns();
  pk_begin_event(op, PK_EVENT_OPERATOR);
  pk_complete_event(pk_intern("inside"), PK_EVENT_PYTHON_OP, start, start);
  pk_event_arg_str(key, "[[2, 3]]");
  pk_end_event();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  const auto ev = events_of(r.get());
  ASSERT_EQ(ev.size(), 2u);
  size_t nargs = 0;
  const pk_event_arg* args = pk_result_event_args(r.get(), &nargs);
  ASSERT_EQ(nargs, 1u);
  EXPECT_EQ(name_of(r.get(), ev[args[0].event]), "aten::mm");
}

TEST_F(CompleteEventTest, NothingOutsideAWindowAndAnEndBeforeTheStartIsZeroLength) {
  const pk_name_id name = pk_intern("frame");
  pk_complete_event(name, PK_EVENT_PYTHON_OP, pk_now_ns(), pk_now_ns());
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  pk_complete_event(name, PK_EVENT_PYTHON_OP, pk_now_ns(), pk_now_ns());
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  const uint64_t now = pk_now_ns();
  pk_complete_event(name, PK_EVENT_PYTHON_OP, now, now - 500);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  const auto ev = events_of(r.get());
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].start_ns, now);
  EXPECT_EQ(ev[0].end_ns, now);
}

TEST_F(CompleteEventTest, EachThreadKeepsItsOwnAndTheirOrderIsByStart) {
  const pk_name_id name = pk_intern("frame");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  // Recorded innermost first, as a call tracer returns from nested calls.
  const uint64_t t0 = pk_now_ns();
  std::thread other([&] { pk_complete_event(name, PK_EVENT_PYTHON_OP, t0 + 10, t0 + 20); });
  other.join();
  pk_complete_event(name, PK_EVENT_PYTHON_OP, t0 + 30, t0 + 40);
  pk_complete_event(name, PK_EVENT_PYTHON_OP, t0 + 20, t0 + 50);
  pk_complete_event(name, PK_EVENT_PYTHON_OP, t0 + 10, t0 + 60);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  ASSERT_EQ(pk_result_thread_count(r.get()), 2u);
  const auto ev = events_of(r.get());
  ASSERT_EQ(ev.size(), 4u);
  // Find the three events of this thread: the thread with three events.
  std::vector<pk_host_event> mine;
  for (size_t t = 0; t < 2; ++t) {
    pk_thread_info info{};
    info.struct_size = sizeof info;
    ASSERT_EQ(pk_result_get_thread(r.get(), t, &info), PK_OK);
    if (info.event_count == 3)
      mine.assign(ev.begin() + static_cast<std::ptrdiff_t>(info.first_event),
                  ev.begin() + static_cast<std::ptrdiff_t>(info.first_event + 3));
  }
  ASSERT_EQ(mine.size(), 3u);
  EXPECT_EQ(mine[0].start_ns, t0 + 10);
  EXPECT_EQ(mine[1].start_ns, t0 + 20);
  EXPECT_EQ(mine[2].start_ns, t0 + 30);
  EXPECT_EQ(mine[0].depth, 0);
  EXPECT_EQ(mine[1].depth, 1);
  EXPECT_EQ(mine[2].depth, 2);
}

TEST_F(CompleteEventTest, PastTheMemoryCapTheyAreDroppedAndCounted) {
  // Room for one more 256 KiB buffer beyond what this process's threads
  // already hold, filled by a new thread.
  pk_counters counters{};
  counters.struct_size = sizeof counters;
  ASSERT_EQ(pk_get_counters(&counters), PK_OK);
  ASSERT_EQ(pk_set_memory_cap(counters.memory_used + 256 * 1024), PK_OK);
  const pk_name_id name = pk_intern("frame");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  constexpr uint64_t kEvents = 50000;  // far more than one 256 KiB buffer holds
  const uint64_t t0 = pk_now_ns();
  std::thread([&] {
    for (uint64_t i = 0; i < kEvents; ++i) pk_complete_event(name, PK_EVENT_PYTHON_OP, t0 + i, t0 + i);
  }).join();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  const uint64_t kept = events_of(r.get()).size();
  EXPECT_GT(kept, 0u);
  EXPECT_GT(info_of(r.get()).dropped_events, 0u);
  EXPECT_EQ(kept + info_of(r.get()).dropped_events, kEvents);
}

// Nested by time more than 255 levels deep (with_stack's calls of a deep
// recursion): dropped and counted, as begin/end events past the depth limit
// are. Kept with their depth stopped at 255, they read as overlapping
// siblings under one parent, and a flame graph summed them many times over.
TEST_F(CompleteEventTest, NestedDeeperThanTheDepthLimitTheyAreDroppedAndCounted) {
  const pk_name_id name = pk_intern("frame");
  constexpr uint64_t kLevels = 300;
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  const uint64_t t0 = pk_now_ns();
  for (uint64_t i = kLevels; i-- > 0;) pk_complete_event(name, PK_EVENT_PYTHON_OP, t0 + i, t0 + 2 * kLevels - i);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  const auto events = events_of(r.get());
  ASSERT_EQ(events.size(), 256u);  // depths 0..255
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].depth, i);
    EXPECT_EQ(events[i].start_ns, t0 + i);  // the outermost are kept
  }
  EXPECT_EQ(info_of(r.get()).overflowed_events, kLevels - 256);
}

// pk_complete_event_ticks: the same event with times from pk_now_ticks,
// converted to ns as begin/end events are: each reading lands between the
// pk_now_ns readings taken around it, and it nests by time like the ns kind.
TEST_F(CompleteEventTest, InTicksItIsConvertedToTheEngineClockAndNestsTheSameWay) {
  const pk_name_id outer = pk_intern("outer");
  const pk_name_id frame = pk_intern("frame.py(7): g");
  const pk_name_id op = pk_intern("aten::mul");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event(outer, PK_EVENT_FORWARD);
  spin_for(2000);
  const uint64_t before_start = pk_now_ns();
  const uint64_t start_ticks = pk_now_ticks();
  const uint64_t after_start = pk_now_ns();
  spin_for(2000);
  pk_begin_event(op, PK_EVENT_OPERATOR);
  spin_for(2000);
  pk_end_event();
  spin_for(2000);
  const uint64_t before_end = pk_now_ns();
  const uint64_t end_ticks = pk_now_ticks();
  const uint64_t after_end = pk_now_ns();
  pk_complete_event_ticks(frame, PK_EVENT_PYTHON_OP, start_ticks, end_ticks);
  spin_for(2000);
  pk_end_event();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  const auto ev = events_of(r.get());
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(name_of(r.get(), ev[1]), "frame.py(7): g");
  EXPECT_EQ(ev[1].type, PK_EVENT_PYTHON_OP);
  // The conversion's error is bounded by its anchors' jitter: tens of ns.
  constexpr uint64_t kSlack = 1000;
  EXPECT_GE(ev[1].start_ns + kSlack, before_start);
  EXPECT_LE(ev[1].start_ns, after_start + kSlack);
  EXPECT_GE(ev[1].end_ns + kSlack, before_end);
  EXPECT_LE(ev[1].end_ns, after_end + kSlack);
  EXPECT_EQ(name_of(r.get(), ev[2]), "aten::mul");
  EXPECT_EQ(pk_result_parent(r.get(), 1), 0u);
  EXPECT_EQ(pk_result_parent(r.get(), 2), 1u);
}

TEST_F(CompleteEventTest, InTicksNothingOutsideAWindowAndAnEndBeforeTheStartIsZeroLength) {
  const pk_name_id name = pk_intern("frame");
  const uint64_t early = pk_now_ticks();
  pk_complete_event_ticks(name, PK_EVENT_PYTHON_OP, early, pk_now_ticks());  // not recording: dropped
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  const uint64_t start = pk_now_ticks();
  spin_for(2000);
  const uint64_t end = pk_now_ticks();
  pk_complete_event_ticks(name, PK_EVENT_PYTHON_OP, end, start);  // reversed
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  const auto ev = events_of(r.get());
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].start_ns, ev[0].end_ns);
}

}  // namespace
