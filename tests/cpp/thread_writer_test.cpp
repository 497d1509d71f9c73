// The C ABI's thread writer (profkit.h, since 1.17): events recorded by
// PK_BEGIN_EVENT_INLINE / PK_END_EVENT_INLINE in the caller's own code are the
// same events as pk_begin_event / pk_end_event record, whatever the case the
// inline path hands back to the calls (a new window, a full buffer, too deep a
// nesting, a thread's first event, an unmatched end).
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "profkit/profkit.h"
#include "test_support.h"

namespace {

using profkit_test::answer_of_child;
using profkit_test::collect;
using profkit_test::events_of;
using profkit_test::info_of;
using profkit_test::reset_engine;
using profkit_test::ResultPtr;

class ThreadWriterTest : public ::testing::Test {
 protected:
  void SetUp() override { reset_engine(); }
  void TearDown() override { reset_engine(); }
};

#if PK_INLINE_WRITER

TEST_F(ThreadWriterTest, ThreadsGetTheirOwnWriterAtTheirFirstEvent) {
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  const pk_name_id name = pk_intern("op");
  pk_thread_writer* before = nullptr;
  pk_thread_writer* after = nullptr;
  std::thread t([&] {
    before = pk_thread_writer_current;
    PK_BEGIN_EVENT_INLINE(name, PK_EVENT_OPERATOR);  // the thread's first: through pk_begin_event
    PK_END_EVENT_INLINE();
    after = pk_thread_writer_current;
  });
  t.join();
  PK_BEGIN_EVENT_INLINE(name, PK_EVENT_OPERATOR);
  PK_END_EVENT_INLINE();
  EXPECT_EQ(before, nullptr);
  EXPECT_NE(after, nullptr);
  EXPECT_NE(after, pk_thread_writer_current);  // each thread its own
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  EXPECT_EQ(events_of(collect().get()).size(), 2u);
}

TEST_F(ThreadWriterTest, EventsBegunOneWayEndTheOtherAndNest) {
  const pk_name_id outer = pk_intern("outer");
  const pk_name_id inner = pk_intern("inner");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event(outer, PK_EVENT_FORWARD);  // the thread's buffer exists from here
  const uint64_t recorded_before = pk_thread_writer_current->recorded;
  PK_BEGIN_EVENT_INLINE(inner, PK_EVENT_OPERATOR);
  pk_end_event();
  pk_begin_event(inner, PK_EVENT_OPERATOR);
  PK_END_EVENT_INLINE();
  PK_END_EVENT_INLINE();
  // Written by the inline path: the writer counted all three records.
  EXPECT_EQ(pk_thread_writer_current->recorded, recorded_before + 3);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  const auto ev = events_of(r.get());
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(std::string(pk_result_string(r.get(), ev[0].name)), "outer");
  EXPECT_EQ(ev[0].type, PK_EVENT_FORWARD);
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(std::string(pk_result_string(r.get(), ev[i].name)), "inner");
    EXPECT_EQ(ev[i].type, PK_EVENT_OPERATOR);
    EXPECT_EQ(ev[i].depth, 1);
    EXPECT_EQ(pk_result_parent(r.get(), i), 0u);
    EXPECT_LE(ev[i].start_ns, ev[i].end_ns);
  }
  EXPECT_LE(ev[1].end_ns, ev[2].start_ns);
  EXPECT_EQ(info_of(r.get()).unmatched_ends, 0u);
}

TEST_F(ThreadWriterTest, RecordsPastOneBufferAreAllCollected) {
  // A buffer holds about 11 thousand records: when it is full the inline end
  // hands the event to pk_end_event, which takes the next buffer.
  constexpr int kEvents = 40000;
  const pk_name_id name = pk_intern("op");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event(name, PK_EVENT_OPERATOR);
  pk_end_event();
  for (int i = 0; i < kEvents; ++i) {
    PK_BEGIN_EVENT_INLINE(name, PK_EVENT_OPERATOR);
    PK_END_EVENT_INLINE();
  }
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  const auto ev = events_of(r.get());
  EXPECT_EQ(ev.size(), static_cast<size_t>(kEvents + 1));
  EXPECT_EQ(info_of(r.get()).dropped_events, 0u);
  for (size_t i = 1; i < ev.size(); ++i) ASSERT_LE(ev[i - 1].end_ns, ev[i].start_ns) << i;
}

TEST_F(ThreadWriterTest, NestingPastTheWriterStackIsCountedAsWithCalls) {
  const pk_name_id name = pk_intern("deep");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  for (int i = 0; i < 300; ++i) PK_BEGIN_EVENT_INLINE(name, PK_EVENT_OPERATOR);
  for (int i = 0; i < 300; ++i) PK_END_EVENT_INLINE();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  EXPECT_EQ(events_of(r.get()).size(), 256u);
  EXPECT_EQ(info_of(r.get()).overflowed_events, 44u);
  EXPECT_EQ(info_of(r.get()).unmatched_ends, 0u);
}

TEST_F(ThreadWriterTest, AnEventOfAnEarlierWindowIsNotEndedInTheNext) {
  const pk_name_id first = pk_intern("first window");
  const pk_name_id second = pk_intern("second window");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  PK_BEGIN_EVENT_INLINE(first, PK_EVENT_OPERATOR);
  PK_BEGIN_EVENT_INLINE(first, PK_EVENT_OPERATOR);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr earlier = collect();
  EXPECT_EQ(info_of(earlier.get()).unfinished_events, 2u);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  // The writer still says the first window: the inline end refuses, and
  // pk_end_event counts an end with nothing open in this window.
  PK_END_EVENT_INLINE();
  PK_BEGIN_EVENT_INLINE(second, PK_EVENT_OPERATOR);
  PK_END_EVENT_INLINE();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  const auto ev = events_of(r.get());
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(std::string(pk_result_string(r.get(), ev[0].name)), "second window");
  EXPECT_EQ(info_of(r.get()).unmatched_ends, 1u);
}

TEST_F(ThreadWriterTest, TypesThatAreNoEventTypeAreUserDefined) {
  const pk_name_id name = pk_intern("odd");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event(name, PK_EVENT_OPERATOR);
  pk_end_event();
  PK_BEGIN_EVENT_INLINE(name, static_cast<pk_event_type>(-3));
  PK_END_EVENT_INLINE();
  PK_BEGIN_EVENT_INLINE(name, static_cast<pk_event_type>(1000));
  PK_END_EVENT_INLINE();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  const auto ev = events_of(r.get());
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[1].type, PK_EVENT_USER_DEFINED);
  EXPECT_EQ(ev[2].type, PK_EVENT_USER_DEFINED);
}

TEST_F(ThreadWriterTest, WithoutTheTscEveryEventTakesTheCalls) {
  // Where CLOCK_MONOTONIC is the clock (PROFKIT_CLOCK=monotonic, no
  // invariant TSC) the inline path would stamp TSC ticks: the writer's
  // inline_window stays 0 and the calls record every event. In a child:
  // the clock is chosen once per process.
  const std::string answer = answer_of_child([] {
    profkit::clock_detail::g_use_tsc = false;
    const pk_name_id name = pk_intern("op");
    const uint64_t before = pk_now_ns();
    if (pk_set_state(PK_STATE_RECORD) != PK_OK) return std::string("cannot record");
    for (int i = 0; i < 3; ++i) {
      PK_BEGIN_EVENT_INLINE(name, PK_EVENT_OPERATOR);
      PK_END_EVENT_INLINE();
    }
    if (pk_thread_writer_current == nullptr) return std::string("no writer");
    if (pk_thread_writer_current->inline_window != 0) return std::string("inline writes allowed");
    pk_set_state(PK_STATE_CLOSED);
    const uint64_t after = pk_now_ns();
    pk_result* r = nullptr;
    if (pk_collect(&r) != PK_OK) return std::string("collect failed");
    const auto ev = events_of(r);
    std::string verdict = ev.size() == 3 ? "ok" : "events: " + std::to_string(ev.size());
    for (const pk_host_event& e : ev) {
      if (e.start_ns < before || e.end_ns > after || e.start_ns > e.end_ns) verdict = "times off the clock";
    }
    pk_result_release(r);
    return verdict;
  });
  EXPECT_EQ(answer, "ok");
}

#else

TEST_F(ThreadWriterTest, TheMacrosAreTheCallsWhereThereIsNoInlineWriter) {
  const pk_name_id name = pk_intern("op");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  PK_BEGIN_EVENT_INLINE(name, PK_EVENT_OPERATOR);
  PK_END_EVENT_INLINE();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  EXPECT_EQ(events_of(collect().get()).size(), 1u);
}

#endif

}  // namespace
