// Recording through the C ABI: nesting, threads, windows, steps, the memory
// cap and every counted failure.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "profkit/profkit.h"
#include "recorder/chunk.h"
#include "recorder/name_table.h"
#include "recorder/thread_buffer.h"
#include "test_support.h"

namespace {

using profkit::Chunk;
using profkit::NameTable;
using profkit_test::answer_of_child;
using profkit_test::collect;
using profkit_test::events_of;
using profkit_test::info_of;
using profkit_test::name_of;
using profkit_test::reset_engine;
using profkit_test::ResultPtr;

class RecorderTest : public ::testing::Test {
 protected:
  void SetUp() override { reset_engine(); }
  void TearDown() override {
    reset_engine();
    pk_set_memory_cap(1ull << 30);
  }
};

TEST_F(RecorderTest, NothingIsRecordedOutsideARecordingState) {
  const pk_name_id name = pk_intern("idle");
  pk_begin_event(name, PK_EVENT_OPERATOR);
  pk_end_event();
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  pk_begin_event(name, PK_EVENT_OPERATOR);
  pk_end_event();
  ResultPtr r = collect();
  EXPECT_TRUE(events_of(r.get()).empty());
  EXPECT_EQ(info_of(r.get()).unmatched_ends, 0u);
}

TEST_F(RecorderTest, NestedEventsKeepOrderDepthAndParents) {
  const pk_name_id outer = pk_intern("outer");
  const pk_name_id inner = pk_intern("inner");
  const pk_name_id leaf = pk_intern("leaf");
  const uint64_t before = pk_now_ns();
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event(outer, PK_EVENT_FORWARD);
  pk_begin_event(inner, PK_EVENT_OPERATOR);
  pk_begin_event(leaf, PK_EVENT_OPERATOR_INNER);
  pk_end_event();
  pk_end_event();
  pk_begin_event(inner, PK_EVENT_OPERATOR);
  pk_end_event();
  pk_end_event();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  const uint64_t after = pk_now_ns();
  ResultPtr r = collect();
  const auto ev = events_of(r.get());
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(name_of(r.get(), ev[0]), "outer");
  EXPECT_EQ(ev[0].type, PK_EVENT_FORWARD);
  EXPECT_EQ(ev[0].depth, 0);
  EXPECT_EQ(name_of(r.get(), ev[1]), "inner");
  EXPECT_EQ(ev[1].depth, 1);
  EXPECT_EQ(name_of(r.get(), ev[2]), "leaf");
  EXPECT_EQ(ev[2].type, PK_EVENT_OPERATOR_INNER);
  EXPECT_EQ(ev[2].depth, 2);
  EXPECT_EQ(ev[3].depth, 1);
  EXPECT_EQ(pk_result_parent(r.get(), 0), PK_NO_EVENT);
  EXPECT_EQ(pk_result_parent(r.get(), 1), 0u);
  EXPECT_EQ(pk_result_parent(r.get(), 2), 1u);
  EXPECT_EQ(pk_result_parent(r.get(), 3), 0u);
  for (const auto& e : ev) {
    EXPECT_LE(e.start_ns, e.end_ns);
    // Converted TSC ticks land on CLOCK_MONOTONIC between the bracketing reads.
    EXPECT_GE(e.start_ns + 1000, before);
    EXPECT_LE(e.end_ns, after + 1000);
  }
  EXPECT_LE(ev[0].start_ns, ev[1].start_ns);
  EXPECT_GE(ev[0].end_ns, ev[3].end_ns);
}

TEST_F(RecorderTest, EventsOfEveryThreadAreKeptEvenAfterTheThreadExits) {
  const pk_name_id name = pk_intern("work");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      pk_set_thread_name(("worker " + std::to_string(t)).c_str());
      for (int i = 0; i < 100 + t; ++i) {
        pk_begin_event(name, PK_EVENT_USER_DEFINED);
        pk_end_event();
      }
    });
  }
  for (auto& th : threads) th.join();  // every worker has exited before the collect
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  ASSERT_EQ(pk_result_thread_count(r.get()), 4u);
  std::vector<std::string> names;
  uint64_t total = 0;
  uint64_t expected_first = 0;
  for (size_t i = 0; i < 4; ++i) {
    pk_thread_info t{};
    t.struct_size = sizeof t;
    ASSERT_EQ(pk_result_get_thread(r.get(), i, &t), PK_OK);
    EXPECT_EQ(t.first_event, expected_first);
    expected_first += t.event_count;
    names.push_back(t.name);
    total += t.event_count;
  }
  EXPECT_EQ(total, 100u + 101u + 102u + 103u);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"worker 0", "worker 1", "worker 2", "worker 3"}));
  pk_thread_info bad{};
  bad.struct_size = sizeof bad;
  EXPECT_EQ(pk_result_get_thread(r.get(), 4, &bad), PK_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pk_last_error()).find("out of range"), std::string::npos);
}

TEST_F(RecorderTest, UnmatchedEndsAreCountedNotFatal) {
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_end_event();  // this thread may have no buffer yet
  pk_begin_event(pk_intern("a"), PK_EVENT_OPERATOR);
  pk_end_event();
  pk_end_event();
  pk_end_event();
  std::thread([] { pk_end_event(); }).join();  // a thread that never recorded
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  EXPECT_EQ(events_of(r.get()).size(), 1u);
  EXPECT_EQ(info_of(r.get()).unmatched_ends, 4u);
}

TEST_F(RecorderTest, EventsOpenWhenRecordingStopsAreReportedUnfinished) {
  const pk_name_id name = pk_intern("spans the stop");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event(name, PK_EVENT_USER_DEFINED);
  pk_begin_event(name, PK_EVENT_USER_DEFINED);
  pk_end_event();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  pk_end_event();  // not recording: costs nothing, changes nothing
  ResultPtr r = collect();
  EXPECT_EQ(events_of(r.get()).size(), 1u);
  EXPECT_EQ(info_of(r.get()).unfinished_events, 1u);

  // The stale open event does not leak into the next window.
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event(name, PK_EVENT_USER_DEFINED);
  pk_end_event();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r2 = collect();
  const auto ev = events_of(r2.get());
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].depth, 0);
  EXPECT_EQ(info_of(r2.get()).unfinished_events, 0u);
}

TEST_F(RecorderTest, AStepOpenWhenTheWindowIsCollectedIsReportedUnfinished) {
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  ASSERT_EQ(pk_step_begin(3), PK_OK);
  pk_begin_event(pk_intern("op in step 3"), PK_EVENT_OPERATOR);
  pk_end_event();
  ASSERT_EQ(pk_step(0), PK_OK);  // ends #3, begins #4, which the stop cuts off
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  const auto ev = events_of(r.get());
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(name_of(r.get(), ev[0]), "ProfileStep#3");
  EXPECT_EQ(info_of(r.get()).step_count, 1u);
  EXPECT_EQ(info_of(r.get()).unfinished_events, 1u);  // ProfileStep#4

  // Reported once: a later collect of the closed engine has no window.
  ResultPtr again = collect();
  EXPECT_EQ(info_of(again.get()).unfinished_events, 0u);
  ASSERT_EQ(pk_step_end(0), PK_OK);  // ends #4 outside any window: not kept
}

TEST_F(RecorderTest, AStepOpenAtACollectWhileRecordingIsUnfinishedThenCollectedWhole) {
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  ASSERT_EQ(pk_step_begin(0), PK_OK);
  ResultPtr first = collect();
  EXPECT_TRUE(events_of(first.get()).empty());
  EXPECT_EQ(info_of(first.get()).unfinished_events, 1u);
  ASSERT_EQ(pk_step_end(0), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr second = collect();
  const auto ev = events_of(second.get());
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(name_of(second.get(), ev[0]), "ProfileStep#0");
  EXPECT_EQ(info_of(second.get()).unfinished_events, 0u);
}

TEST_F(RecorderTest, OnlyAStepBegunInTheCollectedWindowCountsAsUnfinished) {
  // Begun before the window: it can never be whole, and it was never part
  // of the window's steps, so it is not counted (nor kept).
  ASSERT_EQ(pk_step_begin(0), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  EXPECT_EQ(info_of(r.get()).unfinished_events, 0u);
  // A step that ended inside the window leaves nothing unfinished.
  ASSERT_EQ(pk_step_end(0), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  ASSERT_EQ(pk_step_begin(1), PK_OK);
  ASSERT_EQ(pk_step_end(0), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr whole = collect();
  EXPECT_EQ(events_of(whole.get()).size(), 1u);
  EXPECT_EQ(info_of(whole.get()).unfinished_events, 0u);
}

TEST_F(RecorderTest, OpenEventsAreReportedUnfinishedOncePerWindow) {
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event(pk_intern("cut off"), PK_EVENT_USER_DEFINED);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  EXPECT_EQ(info_of(r.get()).unfinished_events, 1u);
  ResultPtr again = collect();  // the closed engine's next collect has no window
  EXPECT_EQ(info_of(again.get()).unfinished_events, 0u);
}

// The collect that takes a window's end reports what was open in it, also
// when a later window passed before that collect: counting only the last
// window's open events and step lost the earlier window's (0 where a collect
// between the windows gave 2).
TEST_F(RecorderTest, WhatWasLeftOpenIsReportedWhenAnotherWindowPassedBeforeTheCollect) {
  const pk_name_id name = pk_intern("cut off");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event(name, PK_EVENT_USER_DEFINED);
  ASSERT_EQ(pk_step_begin(2), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);  // records nothing on this thread
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  ResultPtr r = collect();
  EXPECT_EQ(info_of(r.get()).unfinished_events, 2u);  // the event and ProfileStep#2
  ResultPtr again = collect();
  EXPECT_EQ(info_of(again.get()).unfinished_events, 0u);  // not twice
  ASSERT_EQ(pk_step_end(0), PK_OK);
}

TEST_F(RecorderTest, EventsLeftOpenBeforeAThreadRecordsInANewWindowAreReportedOnce) {
  const pk_name_id name = pk_intern("cut off");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event(name, PK_EVENT_USER_DEFINED);
  pk_begin_event(name, PK_EVENT_USER_DEFINED);
  std::thread([name] { pk_begin_event(name, PK_EVENT_USER_DEFINED); }).join();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  // This thread forgets its two open events when it records in the next
  // window; they are still the first window's to report.
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event(name, PK_EVENT_USER_DEFINED);
  pk_end_event();
  ResultPtr while_recording = collect();
  EXPECT_EQ(events_of(while_recording.get()).size(), 1u);
  EXPECT_EQ(info_of(while_recording.get()).unfinished_events, 3u);
  pk_begin_event(name, PK_EVENT_USER_DEFINED);  // open at the next collect while recording
  ResultPtr next = collect();
  EXPECT_EQ(info_of(next.get()).unfinished_events, 1u);
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event(name, PK_EVENT_USER_DEFINED);  // a third window: carries the second's one
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr at_close = collect();
  EXPECT_EQ(info_of(at_close.get()).unfinished_events, 2u);
  ResultPtr again = collect();
  EXPECT_EQ(info_of(again.get()).unfinished_events, 0u);
}

TEST_F(RecorderTest, AStepLeftOpenInAnEarlierWindowIsReportedOnceBySomeLaterCollect) {
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  ASSERT_EQ(pk_step_begin(7), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  ResultPtr in_next_window = collect();  // #7 can no longer be whole: its window has closed
  EXPECT_EQ(info_of(in_next_window.get()).unfinished_events, 1u);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr at_close = collect();
  EXPECT_EQ(info_of(at_close.get()).unfinished_events, 0u);
  ASSERT_EQ(pk_step_end(0), PK_OK);
}

TEST_F(RecorderTest, EventsLeftOpenByAThreadThatExitedAreReportedUnfinished) {
  const pk_name_id name = pk_intern("never ended");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  std::thread([name] {
    pk_begin_event(name, PK_EVENT_USER_DEFINED);
    pk_begin_event(name, PK_EVENT_USER_DEFINED);
  }).join();  // the thread's buffer is marked exited before join() returns
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  EXPECT_TRUE(events_of(r.get()).empty());
  EXPECT_EQ(info_of(r.get()).unfinished_events, 2u);
  ResultPtr again = collect();  // its buffer is gone: not reported twice
  EXPECT_EQ(info_of(again.get()).unfinished_events, 0u);
}

TEST_F(RecorderTest, CollectingWhileRecordingSplitsWithoutLossOrDuplicates) {
  const pk_name_id name = pk_intern("tick");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  uint64_t total = 0;
  uint64_t previous_end = 0;
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 30000; ++i) {  // crosses chunk boundaries
      pk_begin_event(name, PK_EVENT_OPERATOR);
      pk_end_event();
    }
    ResultPtr r = collect();
    const pk_result_info info = info_of(r.get());
    EXPECT_EQ(info.span_index > 0 || round == 0, true);
    EXPECT_GE(info.start_ns, previous_end);
    previous_end = info.end_ns;
    total += events_of(r.get()).size();
  }
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  total += events_of(collect().get()).size();
  EXPECT_EQ(total, 5u * 30000u);
}

TEST_F(RecorderTest, MemoryCapDropsAndCountsEvents) {
  ASSERT_EQ(pk_set_memory_cap(100), PK_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pk_last_error()).find("below one record buffer"), std::string::npos);
  // Room for one more 256 KiB buffer beyond what this process's threads
  // already hold (earlier tests in the same process leave the main thread's).
  pk_counters counters{};
  counters.struct_size = sizeof counters;
  ASSERT_EQ(pk_get_counters(&counters), PK_OK);
  const uint64_t cap = counters.memory_used + 256 * 1024;
  ASSERT_EQ(pk_set_memory_cap(cap), PK_OK);
  EXPECT_EQ(pk_get_memory_cap(), cap);
  const pk_name_id name = pk_intern("capped");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  constexpr int kEvents = 50000;  // far more than one 256 KiB buffer holds
  std::thread([&] {
    for (int i = 0; i < kEvents; ++i) {
      pk_begin_event(name, PK_EVENT_OPERATOR);
      pk_end_event();
    }
  }).join();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  const uint64_t kept = events_of(r.get()).size();
  const pk_result_info info = info_of(r.get());
  EXPECT_GT(info.dropped_events, 0u);
  EXPECT_GT(kept, 0u);
  EXPECT_EQ(kept + info.dropped_events, static_cast<uint64_t>(kEvents));
}

uint64_t memory_used() {
  pk_counters counters{};
  counters.struct_size = sizeof counters;
  EXPECT_EQ(pk_get_counters(&counters), PK_OK);
  return counters.memory_used;
}

// A thread that records a few events and exits (a thread per request or per
// batch) used to keep its whole 256 KiB buffer until the next collect: 4096
// of them in one window filled the default 1 GiB cap and every later event
// was dropped. Here the cap leaves room for 8 buffers and 64 such threads
// come and go in one window.
TEST_F(RecorderTest, ShortLivedThreadsDoNotEachHoldABufferUntilTheCollect) {
  const uint64_t baseline = memory_used();
  ASSERT_EQ(pk_set_memory_cap(baseline + 8 * 256 * 1024), PK_OK);
  const pk_name_id name = pk_intern("short-lived");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  constexpr int kThreads = 64;
  constexpr int kEventsPerThread = 3;
  for (int t = 0; t < kThreads; ++t) {
    std::thread([&] {
      for (int i = 0; i < kEventsPerThread; ++i) {
        pk_begin_event(name, PK_EVENT_USER_DEFINED);
        pk_end_event();
      }
    }).join();
  }
  // What the exited threads still hold: their records, not their buffers
  // (back in the pool, which holds the 8 buffers mapped for the window).
  EXPECT_LE(memory_used(), baseline + (8 + 2) * 256 * 1024);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  const pk_result_info info = info_of(r.get());
  EXPECT_EQ(info.dropped_events, 0u);
  EXPECT_EQ(events_of(r.get()).size(), static_cast<size_t>(kThreads) * kEventsPerThread);
  EXPECT_LE(memory_used(), baseline);  // and nothing is left once collected
}

// A window collected while the engine goes on (READY or recording) leaves
// the finished buffers for the next one. Kept all as spares of the thread
// that filled them, they were out of every other thread's reach: after one
// thread filled the cap, every event of another thread in every later window
// was dropped, however few.
TEST_F(RecorderTest, BuffersOneThreadFilledInAWindowServeOtherThreadsInTheNext) {
  const uint64_t baseline = memory_used();
  ASSERT_EQ(pk_set_memory_cap(baseline + 8 * 256 * 1024), PK_OK);
  const pk_name_id name = pk_intern("busy, then idle");
  std::atomic<int> phase{0};
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  std::thread busy([&] {
    for (int i = 0; i < 100000; ++i) {  // past the cap: more than 8 buffers hold
      pk_begin_event(name, PK_EVENT_USER_DEFINED);
      pk_end_event();
    }
    phase = 1;
    while (phase.load() != 2) std::this_thread::yield();  // alive, idle
  });
  while (phase.load() != 1) std::this_thread::yield();
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  ResultPtr first = collect();
  EXPECT_GT(info_of(first.get()).dropped_events, 0u);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  std::thread([&] {
    for (int i = 0; i < 100; ++i) {
      pk_begin_event(name, PK_EVENT_USER_DEFINED);
      pk_end_event();
    }
  }).join();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr second = collect();
  EXPECT_EQ(info_of(second.get()).dropped_events, 0u);
  EXPECT_EQ(events_of(second.get()).size(), 100u);
  phase = 2;
  busy.join();
}

// The pages of the chunk whose records start at `records` (a thread's
// writer's) that are resident.
size_t resident_pages_of_chunk(const uint64_t* records) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t chunk = reinterpret_cast<uintptr_t>(records) & ~(page - 1);  // records follow a 64-byte header
  std::vector<unsigned char> resident((Chunk::kBytes + page - 1) / page);
  EXPECT_EQ(mincore(reinterpret_cast<void*>(chunk), Chunk::kBytes, resident.data()), 0);
  return static_cast<size_t>(std::count_if(resident.begin(), resident.end(), [](unsigned char r) { return r & 1; }));
}

void record_events(pk_name_id name, int n) {
  for (int i = 0; i < n; ++i) {
    pk_begin_event(name, PK_EVENT_USER_DEFINED);
    pk_end_event();
  }
}

// A thread that recorded and lives on idle (a pool's worker, a data-loader
// thread) kept its 256 KiB buffer, resident and counted against the memory
// cap, until it exited: after a window with many such threads, a later
// window under a smaller cap dropped every event of a new thread. Once
// profiling closes and its records are collected, the buffer goes back but
// for a page; the thread takes a new one when it records again.
TEST_F(RecorderTest, AnIdleThreadGivesItsBufferBackWhenProfilingCloses) {
  const uint64_t baseline = memory_used();
  const pk_name_id name = pk_intern("pool worker");
  std::atomic<int> phase{0};
  const uint64_t* records = nullptr;
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  std::thread worker([&] {
    record_events(name, 100);
    records = profkit::t_thread_buffer->writer()->records;
    phase = 1;
    while (phase.load() != 2) std::this_thread::yield();  // alive and idle
    record_events(name, 100);
    phase = 3;
    while (phase.load() != 4) std::this_thread::yield();
  });
  while (phase.load() != 1) std::this_thread::yield();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  EXPECT_EQ(events_of(collect().get()).size(), 100u);
  EXPECT_EQ(memory_used(), baseline + Chunk::parked_bytes());
  EXPECT_LE(resident_pages_of_chunk(records), 1u);

  // Room for one buffer and a half: the next window's threads have it all.
  ASSERT_EQ(pk_set_memory_cap(baseline + Chunk::kBytes * 3 / 2), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  std::thread([&] { record_events(name, 1000); }).join();  // its buffer goes to the pool at exit
  phase = 2;
  while (phase.load() != 3) std::this_thread::yield();  // the worker records again, into a new buffer
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  EXPECT_EQ(info_of(r.get()).dropped_events, 0u);
  EXPECT_EQ(events_of(r.get()).size(), 1100u);
  phase = 4;
  worker.join();
  reset_engine();
  EXPECT_EQ(memory_used(), baseline);  // every buffer given back once, and counted out once
}

// A window collected in READY (a schedule's warm-up for the next window),
// then closed without another collect: closing gives the buffer back.
TEST_F(RecorderTest, AnIdleThreadGivesItsBufferBackWhenClosedAfterTheCollect) {
  const uint64_t baseline = memory_used();
  std::atomic<bool> recorded{false};
  std::atomic<bool> release{false};
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  std::thread worker([&] {
    record_events(pk_intern("pool worker"), 100);
    recorded = true;
    while (!release.load()) std::this_thread::yield();
  });
  while (!recorded.load()) std::this_thread::yield();
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  EXPECT_EQ(events_of(collect().get()).size(), 100u);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  EXPECT_EQ(memory_used(), baseline + Chunk::parked_bytes());
  release = true;
  worker.join();
}

// Threads that record without pause while profiling opens, closes and is
// collected over and over: each close parks their buffers under them (and a
// call that read the window before it closed may still be writing), and each
// window sends them to new ones. Run under ThreadSanitizer in CI; here the
// memory budget must end where it began: a buffer given back twice, or
// never, would show.
TEST_F(RecorderTest, RecordingThreadsRacingTheCloseKeepTheMemoryBudgetRight) {
  const uint64_t baseline = memory_used();
  ASSERT_EQ(pk_set_memory_cap(baseline + 16 * Chunk::kBytes), PK_OK);  // windows of a few MiB, however fast
  const pk_name_id name = pk_intern("racing");
  const pk_name_id key = pk_intern("i");
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      for (int64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        pk_begin_event(name, PK_EVENT_OPERATOR);
        pk_event_arg_int(key, i);
        if (i % 64 == 0) pk_record_memory(-1, 0x1000, 64, 64, 64);
        pk_end_event();
      }
    });
  }
  uint64_t events = 0;
  for (int round = 0; round < 100; ++round) {
    ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
    if (round % 3 == 0) events += events_of(collect().get()).size();  // while recording
    ASSERT_EQ(pk_set_state(round % 2 == 0 ? PK_STATE_CLOSED : PK_STATE_READY), PK_OK);
    events += events_of(collect().get()).size();
    ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);  // parks what the collect took
  }
  stop = true;
  for (std::thread& t : threads) t.join();
  events += events_of(collect().get()).size();
  EXPECT_GT(events, 0u);
  EXPECT_EQ(memory_used(), baseline);
}

// The records an exiting thread moves out of its buffer come after those of
// its earlier, full buffers and after what a collect took while it ran: each
// event arrives once, with its argument (one of an event still open at that
// collect too).
TEST_F(RecorderTest, AThreadThatExitsAfterACollectLosesAndRepeatsNothing) {
  const pk_name_id name = pk_intern("numbered");
  const pk_name_id key = pk_intern("i");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  std::atomic<int> phase{0};
  constexpr int kFirst = 20000;  // more than one buffer holds
  constexpr int kSecond = 100;
  std::thread worker([&] {
    pk_begin_event(name, PK_EVENT_USER_DEFINED);  // open across the collect
    pk_event_arg_int(key, -1);
    for (int i = 0; i < kFirst; ++i) {
      pk_begin_event(name, PK_EVENT_USER_DEFINED);
      pk_event_arg_int(key, i);
      pk_end_event();
    }
    phase = 1;
    while (phase.load() != 2) std::this_thread::yield();
    for (int i = kFirst; i < kFirst + kSecond; ++i) {
      pk_begin_event(name, PK_EVENT_USER_DEFINED);
      pk_event_arg_int(key, i);
      pk_end_event();
    }
    pk_end_event();
  });
  while (phase.load() != 1) std::this_thread::yield();
  ResultPtr first = collect();  // while the worker lives and records
  phase = 2;
  worker.join();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr second = collect();
  std::vector<int64_t> seen;
  for (const ResultPtr* r : {&first, &second}) {
    size_t n = 0;
    const pk_event_arg* args = pk_result_event_args(r->get(), &n);
    for (size_t i = 0; i < n; ++i) seen.push_back(args[i].value);
    EXPECT_EQ(info_of(r->get()).dropped_events, 0u);
    EXPECT_EQ(info_of(r->get()).lost_event_args, 0u);
  }
  EXPECT_EQ(events_of(first.get()).size() + events_of(second.get()).size(), kFirst + kSecond + 1u);
  std::vector<int64_t> expected{-1};  // the outer event's
  for (int i = 0; i < kFirst + kSecond; ++i) expected.push_back(i);
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, expected);
}

TEST_F(RecorderTest, StepsPastTheMemoryCapAreKeptAndNotCountedAsDropped) {
  pk_counters counters{};
  counters.struct_size = sizeof counters;
  ASSERT_EQ(pk_get_counters(&counters), PK_OK);
  ASSERT_EQ(pk_set_memory_cap(counters.memory_used + 256 * 1024), PK_OK);  // one more buffer
  const pk_name_id name = pk_intern("capped");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  constexpr int kEventsPerStep = 20000;  // two steps overflow one 256 KiB buffer
  std::thread([&] {
    pk_set_thread_name("trainer");
    ASSERT_EQ(pk_step_begin(5), PK_OK);
    for (int step = 0; step < 3; ++step) {
      for (int i = 0; i < kEventsPerStep; ++i) {
        pk_begin_event(name, PK_EVENT_OPERATOR);
        pk_end_event();
      }
      ASSERT_EQ(pk_step(8), PK_OK);
    }
    ASSERT_EQ(pk_step_end(8), PK_OK);
  }).join();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  const pk_result_info info = info_of(r.get());
  std::vector<std::string> steps;
  uint64_t operators = 0;
  size_t n = 0;
  const pk_host_event* events = pk_result_host_events(r.get(), &n);
  for (size_t i = 0; i < n; ++i) {
    if (events[i].type == PK_EVENT_PROFILE_STEP) steps.push_back(pk_result_string(r.get(), events[i].name));
    if (events[i].type == PK_EVENT_OPERATOR) ++operators;
  }
  EXPECT_GT(info.dropped_events, 0u);
  EXPECT_EQ(steps, (std::vector<std::string>{"ProfileStep#5", "ProfileStep#6", "ProfileStep#7", "ProfileStep#8"}));
  EXPECT_EQ(operators + info.dropped_events, 3u * kEventsPerStep);  // steps are neither kept events nor drops
  // Each kept step has its samples and sits on the thread that drove it.
  size_t args = 0;
  const pk_event_arg* arg = pk_result_event_args(r.get(), &args);
  size_t samples = 0;
  for (size_t i = 0; i < args; ++i) {
    samples += std::string(pk_result_string(r.get(), arg[i].key)) == "num_samples" && arg[i].value == 8;
  }
  EXPECT_EQ(samples, 4u);
  bool named = false;
  for (size_t t = 0; t < pk_result_thread_count(r.get()); ++t) {
    pk_thread_info thread{};
    thread.struct_size = sizeof thread;
    ASSERT_EQ(pk_result_get_thread(r.get(), t, &thread), PK_OK);
    named |= std::string(thread.name) == "trainer";
  }
  EXPECT_TRUE(named);
}

TEST_F(RecorderTest, StepsBecomeProfileStepEventsWithSamples) {
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  ASSERT_EQ(pk_step_begin(7), PK_OK);
  pk_begin_event(pk_intern("op"), PK_EVENT_OPERATOR);
  pk_end_event();
  ASSERT_EQ(pk_step(32), PK_OK);  // ends #7, begins #8
  EXPECT_EQ(pk_current_step(), 8u);
  ASSERT_EQ(pk_step_end(16), PK_OK);
  EXPECT_EQ(pk_step_end(0), PK_ERR_INVALID_STATE);
  EXPECT_NE(std::string(pk_last_error()).find("no step is open"), std::string::npos);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  const auto ev = events_of(r.get());
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(name_of(r.get(), ev[0]), "ProfileStep#7");
  EXPECT_EQ(ev[0].type, PK_EVENT_PROFILE_STEP);
  EXPECT_EQ(name_of(r.get(), ev[1]), "op");
  EXPECT_EQ(ev[1].depth, 1);  // nested in the step
  EXPECT_EQ(name_of(r.get(), ev[2]), "ProfileStep#8");
  EXPECT_EQ(ev[0].end_ns, ev[2].start_ns);  // one instant ends one step and begins the next
  const pk_result_info info = info_of(r.get());
  EXPECT_EQ(info.first_step, 7u);
  EXPECT_EQ(info.step_count, 2u);
  size_t nargs = 0;
  const pk_event_arg* args = pk_result_event_args(r.get(), &nargs);
  ASSERT_EQ(nargs, 2u);
  EXPECT_EQ(std::string(pk_result_string(r.get(), args[0].key)), "num_samples");
  EXPECT_EQ(args[0].event, 0u);
  EXPECT_EQ(args[0].value, 32);
  EXPECT_EQ(args[1].event, 2u);
  EXPECT_EQ(args[1].value, 16);
}

TEST_F(RecorderTest, StepBeginWhileAStepIsOpenEndsThatStepFirst) {
  // Before 1.9 the second pk_step_begin overwrote step 1: it was lost.
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  ASSERT_EQ(pk_step_begin(1), PK_OK);
  pk_begin_event(pk_intern("op in step 1"), PK_EVENT_OPERATOR);
  pk_end_event();
  ASSERT_EQ(pk_step_begin(2), PK_OK);
  EXPECT_EQ(pk_current_step(), 2u);
  ASSERT_EQ(pk_step_end(8), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  const auto ev = events_of(r.get());
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(name_of(r.get(), ev[0]), "ProfileStep#1");
  EXPECT_EQ(name_of(r.get(), ev[1]), "op in step 1");
  EXPECT_EQ(ev[1].depth, 1);
  EXPECT_EQ(name_of(r.get(), ev[2]), "ProfileStep#2");
  EXPECT_EQ(ev[0].type, PK_EVENT_PROFILE_STEP);
  EXPECT_EQ(ev[2].type, PK_EVENT_PROFILE_STEP);
  EXPECT_EQ(ev[0].end_ns, ev[2].start_ns);  // one instant ends step 1 and begins step 2
  const pk_result_info info = info_of(r.get());
  EXPECT_EQ(info.first_step, 1u);
  EXPECT_EQ(info.step_count, 2u);
  // The step pk_step_begin ended has num_samples 0 (unknown: no argument).
  size_t nargs = 0;
  const pk_event_arg* args = pk_result_event_args(r.get(), &nargs);
  ASSERT_EQ(nargs, 1u);
  EXPECT_EQ(args[0].event, 2u);
  EXPECT_EQ(args[0].value, 8);
}

TEST_F(RecorderTest, StepNumbersStayWithinSigned64Bits) {
  // Above INT64_MAX they read as negative in signed readers, and the steps
  // after UINT64_MAX were numbered from 0 again.
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  for (const uint64_t out_of_range : {static_cast<uint64_t>(INT64_MAX) + 1, UINT64_MAX}) {
    EXPECT_EQ(pk_step_begin(out_of_range), PK_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(pk_last_error()).find("out of range (step numbers go up to INT64_MAX)"), std::string::npos)
        << pk_last_error();
  }
  ASSERT_EQ(pk_step_begin(INT64_MAX), PK_OK);
  ASSERT_EQ(pk_step_end(0), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  const auto ev = events_of(r.get());
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(name_of(r.get(), ev[0]), "ProfileStep#" + std::to_string(INT64_MAX));
}

TEST_F(RecorderTest, PkStepNeverBeginsAStepPastInt64Max) {
  // pk_step after step INT64_MAX began ProfileStep#9223372036854775808.
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  ASSERT_EQ(pk_step_begin(INT64_MAX), PK_OK);
  const std::string refused = "pk_step: step 9223372036854775808 is out of range (step numbers go up to INT64_MAX)";
  EXPECT_EQ(pk_step(1), PK_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pk_last_error()).find(refused), std::string::npos) << pk_last_error();
  // Refused before anything changed: the last step is still open and ends.
  EXPECT_EQ(pk_current_step(), static_cast<uint64_t>(INT64_MAX));
  ASSERT_EQ(pk_step_end(3), PK_OK);
  // No step after it either, begun by pk_step without an open step ...
  EXPECT_EQ(pk_step(0), PK_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pk_last_error()).find(refused), std::string::npos) << pk_last_error();
  EXPECT_EQ(pk_step_end(0), PK_ERR_INVALID_STATE);  // ... so none is open
  // A new numbering starts as usual.
  ASSERT_EQ(pk_step_begin(0), PK_OK);
  ASSERT_EQ(pk_step(0), PK_OK);
  ASSERT_EQ(pk_step_end(0), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  std::vector<std::string> steps;
  for (const pk_host_event& e : events_of(r.get())) steps.push_back(name_of(r.get(), e));
  std::sort(steps.begin(), steps.end());
  EXPECT_EQ(steps,
            (std::vector<std::string>{"ProfileStep#0", "ProfileStep#1", "ProfileStep#" + std::to_string(INT64_MAX)}));
  EXPECT_EQ(info_of(r.get()).unfinished_events, 0u);
}

TEST_F(RecorderTest, NumSamplesPastInt64MaxAreRecordedAsInt64Max) {
  // An argument's value is a signed 64-bit integer: UINT64_MAX samples read
  // back as -1, and INT64_MAX + 1 as INT64_MIN.
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  ASSERT_EQ(pk_step_begin(0), PK_OK);
  ASSERT_EQ(pk_step(UINT64_MAX), PK_OK);
  ASSERT_EQ(pk_step_end(static_cast<uint64_t>(INT64_MAX) + 1), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  size_t nargs = 0;
  const pk_event_arg* args = pk_result_event_args(r.get(), &nargs);
  ASSERT_EQ(nargs, 2u);
  for (size_t i = 0; i < nargs; ++i) {
    EXPECT_EQ(std::string(pk_result_string(r.get(), args[i].key)), "num_samples");
    EXPECT_EQ(args[i].value, INT64_MAX);
  }
}

TEST_F(RecorderTest, StepsInternNoNamesSoLongRunsDoNotGrowTheNameTable) {
  // Each step's name ("ProfileStep#<n>") is made by the collect, in the
  // result only: a million recorded steps must not leave a million names in
  // the process (nor fill the table and make pk_step fail).
  const pk_name_id before = pk_intern("probe before the steps");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  ASSERT_EQ(pk_step_begin(1u << 20), PK_OK);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(pk_step(0), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  EXPECT_EQ(pk_intern("probe after the steps"), before + 1);
  ResultPtr r = collect();
  const auto ev = events_of(r.get());
  ASSERT_EQ(ev.size(), 1000u);
  EXPECT_EQ(name_of(r.get(), ev.front()), "ProfileStep#1048576");
  EXPECT_EQ(name_of(r.get(), ev.back()), "ProfileStep#1049575");
  // The result holds the names it uses and no other: "" and the 1000 steps.
  EXPECT_EQ(pk_result_string_count(r.get()), 1001u);
}

TEST_F(RecorderTest, GroupedRecordsKeepLaterCollectsWorking) {
  // A memory event and a step are each several records counted as one
  // recorded event; the next collect of the same thread must still size
  // itself right (it used to underflow and fail with "vector::reserve").
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
    ASSERT_EQ(pk_step_begin(0), PK_OK);
    pk_record_memory(-1, 0x1000, 64, 64, 128);
    pk_record_memory(-1, 0x1000, -64, 0, 128);
    ASSERT_EQ(pk_step(8), PK_OK);
    ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
    ResultPtr r = collect();
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(events_of(r.get()).size(), 1u) << "round " << round;  // ProfileStep#0
    size_t memory = 0;
    pk_result_memory_events(r.get(), &memory);
    EXPECT_EQ(memory, 2u) << "round " << round;
  }
}

TEST_F(RecorderTest, StepsOutsideAWholeWindowAreNotKept) {
  ASSERT_EQ(pk_step_begin(0), PK_OK);  // begins while closed
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  ASSERT_EQ(pk_step(0), PK_OK);  // step 0 is not whole: dropped; step 1 begins
  ASSERT_EQ(pk_step(0), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ASSERT_EQ(pk_step_end(0), PK_OK);  // step 2 ends after the window
  ResultPtr r = collect();
  const auto ev = events_of(r.get());
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(name_of(r.get(), ev[0]), "ProfileStep#1");
}

TEST_F(RecorderTest, InstantEventsArgumentsAndMemoryEvents) {
  const pk_name_id op = pk_intern("aten::mm");
  const pk_name_id shapes = pk_intern("input_shapes");
  const pk_name_id bytes = pk_intern("bytes");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_event_arg_int(bytes, 1);  // no open event: ignored
  pk_begin_event(op, PK_EVENT_OPERATOR);
  pk_event_arg_str(shapes, "[[2, 3], [3, 4]]");
  pk_event_arg_int(bytes, -5);
  pk_instant_event(pk_intern("marker"), PK_EVENT_USER_DEFINED);
  pk_record_memory(0, 0x1000, 4096, 4096, 8192);
  pk_record_memory(-1, 0x1000, -4096, 0, 8192);
  pk_end_event();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  const auto ev = events_of(r.get());
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(name_of(r.get(), ev[1]), "marker");
  EXPECT_EQ(ev[1].flags & PK_HOST_EVENT_INSTANT, PK_HOST_EVENT_INSTANT);
  EXPECT_EQ(ev[1].start_ns, ev[1].end_ns);
  EXPECT_EQ(ev[1].depth, 1);
  size_t nargs = 0;
  const pk_event_arg* args = pk_result_event_args(r.get(), &nargs);
  ASSERT_EQ(nargs, 2u);
  EXPECT_EQ(args[0].event, 0u);
  EXPECT_EQ(args[0].kind, static_cast<uint32_t>(PK_ARG_STRING));
  EXPECT_EQ(std::string(pk_result_string(r.get(), static_cast<size_t>(args[0].value))), "[[2, 3], [3, 4]]");
  EXPECT_EQ(args[1].value, -5);
  size_t nmem = 0;
  const pk_memory_event* mem = pk_result_memory_events(r.get(), &nmem);
  ASSERT_EQ(nmem, 2u);
  EXPECT_EQ(mem[0].device, 0);
  EXPECT_EQ(mem[0].bytes, 4096);
  EXPECT_EQ(mem[0].total_allocated, 4096u);
  EXPECT_EQ(mem[0].total_reserved, 8192u);
  EXPECT_EQ(mem[1].device, -1);
  EXPECT_EQ(mem[1].bytes, -4096);
  EXPECT_LE(mem[0].time_ns, mem[1].time_ns);
}

TEST_F(RecorderTest, NestingBeyondTheLimitIsCountedAndOuterEventsSurvive) {
  const pk_name_id name = pk_intern("deep");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  for (int i = 0; i < 300; ++i) pk_begin_event(name, PK_EVENT_OPERATOR);
  for (int i = 0; i < 300; ++i) pk_end_event();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  EXPECT_EQ(events_of(r.get()).size(), 256u);
  EXPECT_EQ(info_of(r.get()).overflowed_events, 44u);
  EXPECT_EQ(info_of(r.get()).unmatched_ends, 0u);
}

// A stored depth stops at 255: the parent of an event there is the innermost
// event that encloses it in time, not the nearest one with a smaller depth
// (which skipped the saturated level and gave the grandparent).
TEST_F(RecorderTest, ParentsBelowTheDeepestStoredDepthAreTheEnclosingEvents) {
  const pk_name_id name = pk_intern("deep");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  for (int i = 0; i < 300; ++i) pk_begin_event(name, PK_EVENT_OPERATOR);
  pk_instant_event(pk_intern("instant"), PK_EVENT_USER_DEFINED);
  for (int i = 0; i < 300; ++i) pk_end_event();
  pk_instant_event(pk_intern("after"), PK_EVENT_USER_DEFINED);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  const auto ev = events_of(r.get());
  // 256 stored levels and the instant after them; the instant below them
  // is past the depth limit, dropped and counted as the 44 deepest begins.
  ASSERT_EQ(ev.size(), 257u);
  for (uint64_t i = 1; i < 256; ++i) ASSERT_EQ(pk_result_parent(r.get(), i), i - 1) << i;
  ASSERT_EQ(name_of(r.get(), ev[256]), "after");
  EXPECT_EQ(pk_result_parent(r.get(), 256), PK_NO_EVENT);
  EXPECT_EQ(info_of(r.get()).overflowed_events, 44u + 1u);
}

TEST_F(RecorderTest, StringNamesInternToTheSameIds) {
  const pk_name_id id = pk_intern("same name");
  EXPECT_EQ(pk_intern("same name"), id);
  EXPECT_STREQ(pk_name_string(id), "same name");
  EXPECT_EQ(pk_name_string(0xFFFFFFF0u), nullptr);
  EXPECT_EQ(pk_intern(nullptr), 0u);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event_str("same name", PK_EVENT_USER_DEFINED);
  pk_end_event();
  pk_begin_event_str(nullptr, PK_EVENT_USER_DEFINED);
  pk_end_event();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  const auto ev = events_of(r.get());
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(name_of(r.get(), ev[0]), "same name");
  EXPECT_EQ(ev[1].name, 0u);  // "" stays at index 0
  // A result's string table holds only the names it uses, whatever the
  // process has interned before.
  EXPECT_EQ(pk_result_string_count(r.get()), 2u);
}

TEST_F(RecorderTest, UnknownTypesAndNamesAreSanitized) {
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event(0xFFFFFF00u, static_cast<pk_event_type>(200));
  pk_end_event();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  const auto ev = events_of(r.get());
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].name, 0u);
  EXPECT_EQ(ev[0].type, PK_EVENT_USER_DEFINED);
}

// Lowers the name table's capacity for a test (to what it holds: full) and
// puts it back.
struct FullNameTable {
  FullNameTable() { NameTable::instance().set_capacity_for_testing(NameTable::instance().size()); }
  ~FullNameTable() { NameTable::instance().set_capacity_for_testing(NameTable::kMaxNames); }
  FullNameTable(const FullNameTable&) = delete;
  FullNameTable& operator=(const FullNameTable&) = delete;
};

uint64_t dropped_events_so_far() {
  pk_counters counters{};
  counters.struct_size = sizeof counters;
  EXPECT_EQ(pk_get_counters(&counters), PK_OK);
  return counters.dropped_events;
}

// Once the name table is full (4,194,304 names in a process; the test fills
// it sooner), a new name could not be interned, and an event named by text
// was kept as "" without a word: now it is dropped and counted, with its
// arguments, and a string argument whose value cannot be interned is lost
// rather than "". A step's num_samples, whose key the collect used to intern
// (failing the whole collect), arrives.
TEST_F(RecorderTest, EventsWhoseNameCannotBeInternedAreDroppedAndCounted) {
  const char* const known = "named before the table filled";
  const pk_name_id key = pk_intern("key interned before");
  pk_intern(known);
  const uint64_t dropped_before = dropped_events_so_far();
  ResultPtr r;
  {
    const FullNameTable full;
    EXPECT_EQ(pk_intern("one name too many"), 0u);
    EXPECT_NE(std::string(pk_last_error()).find("the name table is full"), std::string::npos) << pk_last_error();
    ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
    ASSERT_EQ(pk_step_begin(0), PK_OK);
    pk_begin_event_str(known, PK_EVENT_USER_DEFINED);
    pk_event_arg_str(key, "a value never interned");  // lost
    pk_begin_event_str("a name never interned", PK_EVENT_USER_DEFINED);
    EXPECT_NE(std::string(pk_last_error()).find("the name table is full"), std::string::npos) << pk_last_error();
    pk_event_arg_int(key, 1);  // lost with its event
    pk_end_event();
    pk_end_event();
    ASSERT_EQ(pk_step_end(8), PK_OK);
    ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
    pk_result* collected = nullptr;
    ASSERT_EQ(pk_collect(&collected), PK_OK) << pk_last_error();
    r.reset(collected);
  }
  std::vector<std::string> names;
  for (const pk_host_event& e : events_of(r.get())) names.push_back(name_of(r.get(), e));
  EXPECT_EQ(names, (std::vector<std::string>{"ProfileStep#0", known}));
  const pk_result_info info = info_of(r.get());
  EXPECT_EQ(info.dropped_events, 1u);
  EXPECT_EQ(info.lost_event_args, 2u);
  size_t nargs = 0;
  const pk_event_arg* args = pk_result_event_args(r.get(), &nargs);
  ASSERT_EQ(nargs, 1u);
  EXPECT_EQ(std::string(pk_result_string(r.get(), args[0].key)), "num_samples");
  EXPECT_EQ(args[0].value, 8);
  EXPECT_EQ(dropped_events_so_far(), dropped_before + 1);  // the engine-wide counter too
}

TEST_F(RecorderTest, MetadataRankAndCountersReachTheResult) {
  ASSERT_EQ(pk_set_rank(1, 4), PK_OK);
  EXPECT_EQ(pk_set_rank(4, 4), PK_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(pk_set_metadata("model", "resnet"), PK_OK);
  ASSERT_EQ(pk_set_metadata("model", "vit"), PK_OK);
  ASSERT_EQ(pk_set_metadata("gone", "x"), PK_OK);
  ASSERT_EQ(pk_set_metadata("gone", nullptr), PK_OK);
  EXPECT_EQ(pk_set_metadata(nullptr, "x"), PK_ERR_INVALID_ARGUMENT);
  pk_counters before{};
  before.struct_size = sizeof before;
  ASSERT_EQ(pk_get_counters(&before), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event(pk_intern("x"), PK_EVENT_OPERATOR);
  pk_end_event();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  pk_counters after{};
  after.struct_size = sizeof after;
  ASSERT_EQ(pk_get_counters(&after), PK_OK);
  EXPECT_EQ(after.recorded_events, before.recorded_events + 1);
  EXPECT_EQ(after.memory_cap, pk_get_memory_cap());
  ResultPtr r = collect();
  const pk_result_info info = info_of(r.get());
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.world_size, 4);
  EXPECT_GT(info.pid, 0u);
  EXPECT_STRNE(info.hostname, "");
  EXPECT_STREQ(info.profkit_version, pk_version_string());
  EXPECT_GT(info.clock_offset_ns, 0);
  EXPECT_GE(info.cpu_count, 1u);
  ASSERT_EQ(pk_result_metadata_count(r.get()), 1u);
  const char* key = nullptr;
  const char* value = nullptr;
  ASSERT_EQ(pk_result_metadata(r.get(), 0, &key, &value), PK_OK);
  EXPECT_STREQ(key, "model");
  EXPECT_STREQ(value, "vit");
  pk_set_rank(-1, -1);
  pk_set_metadata("model", nullptr);
}

TEST_F(RecorderTest, BadArgumentsGiveStatusesAndMessages) {
  EXPECT_EQ(pk_set_state(static_cast<pk_state>(9)), PK_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pk_last_error()).find("is not a pk_state"), std::string::npos);
  EXPECT_EQ(pk_collect(nullptr), PK_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(pk_get_counters(nullptr), PK_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(pk_result_save(nullptr, "/tmp/x"), PK_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(pk_set_thread_name(nullptr), PK_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(pk_status_string(PK_ERR_CORRUPT), "PK_ERR_CORRUPT");
  EXPECT_STREQ(pk_event_type_name(PK_EVENT_PYTHON_USER_DEFINED), "PythonUserDefined");
  EXPECT_EQ(pk_event_type_name(static_cast<pk_event_type>(15)), nullptr);
  EXPECT_EQ(pk_api_version() >> 16, 1u);
  size_t n = 99;
  EXPECT_EQ(pk_result_host_events(nullptr, &n), nullptr);
  EXPECT_EQ(n, 0u);
}

TEST_F(RecorderTest, StateIsReportedAndTransitionsAreIdempotent) {
  EXPECT_EQ(pk_get_state(), PK_STATE_CLOSED);
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  EXPECT_EQ(pk_get_state(), PK_STATE_READY);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event(pk_intern("a"), PK_EVENT_OPERATOR);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD_AND_RETURN), PK_OK);  // same window
  pk_end_event();
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD_AND_RETURN), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  EXPECT_EQ(events_of(r.get()).size(), 1u);
}

struct Transitions {
  std::vector<std::pair<pk_state, pk_state>> seen;
};

void remember(pk_state from, pk_state to, void* user) { static_cast<Transitions*>(user)->seen.emplace_back(from, to); }

TEST_F(RecorderTest, StateListenersSeeEveryTransitionFromClosed) {
  Transitions early;
  uint64_t h1 = 0;
  ASSERT_EQ(pk_add_state_listener(remember, &early, &h1), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  Transitions late;  // joins while recording: told CLOSED -> RECORD at once
  uint64_t h2 = 0;
  ASSERT_EQ(pk_add_state_listener(remember, &late, &h2), PK_OK);
  EXPECT_NE(h1, h2);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);  // no change: no call
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ASSERT_EQ(pk_remove_state_listener(h1), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  ASSERT_EQ(pk_remove_state_listener(h2), PK_OK);
  using T = std::vector<std::pair<pk_state, pk_state>>;
  EXPECT_EQ(
      early.seen,
      (T{{PK_STATE_CLOSED, PK_STATE_READY}, {PK_STATE_READY, PK_STATE_RECORD}, {PK_STATE_RECORD, PK_STATE_CLOSED}}));
  EXPECT_EQ(
      late.seen,
      (T{{PK_STATE_CLOSED, PK_STATE_RECORD}, {PK_STATE_RECORD, PK_STATE_CLOSED}, {PK_STATE_CLOSED, PK_STATE_READY}}));
  EXPECT_EQ(pk_remove_state_listener(h1), PK_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pk_last_error()).find("removed twice"), std::string::npos);
  EXPECT_EQ(pk_add_state_listener(nullptr, nullptr, &h1), PK_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(pk_add_state_listener(remember, nullptr, nullptr), PK_ERR_INVALID_ARGUMENT);
}

// What a listener that calls back into the engine got from each call.
struct Meddler {
  std::vector<pk_status> refused;  // pk_set_state, pk_step, pk_collect, pk_add/remove_state_listener
  uint64_t step = UINT64_MAX;      // pk_current_step
  pk_status rank = PK_ERR_INTERNAL;
  std::string error;
};

void meddling_listener(pk_state, pk_state to, void* user_data) {
  auto* m = static_cast<Meddler*>(user_data);
  if (to != PK_STATE_RECORD) return;
  pk_result* r = nullptr;
  uint64_t handle = 0;
  m->refused = {pk_set_state(PK_STATE_CLOSED),
                pk_step(0),
                pk_step_begin(7),
                pk_step_end(0),
                pk_collect(&r),
                pk_add_state_listener(meddling_listener, m, &handle),
                pk_remove_state_listener(1)};
  m->error = pk_last_error();
  m->step = pk_current_step();
  m->rank = pk_set_rank(2, 4);
}

// The header forbids those calls in a listener: each one deadlocked (the
// listener runs holding the engine's lock). Now they are refused, and the
// ones that only read or set a field work.
TEST_F(RecorderTest, AListenerCallingBackIntoTheEngineIsRefusedNotDeadlocked) {
  Meddler m;
  uint64_t handle = 0;
  ASSERT_EQ(pk_add_state_listener(meddling_listener, &m, &handle), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  EXPECT_EQ(m.refused, std::vector<pk_status>(7, PK_ERR_INVALID_STATE));
  EXPECT_NE(m.error.find("pk_remove_state_listener: called from a state listener"), std::string::npos) << m.error;
  EXPECT_EQ(m.step, pk_current_step());
  EXPECT_EQ(m.rank, PK_OK);
  EXPECT_EQ(pk_get_state(), PK_STATE_RECORD);  // the refused pk_set_state changed nothing
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ASSERT_EQ(pk_remove_state_listener(handle), PK_OK);
  ASSERT_EQ(pk_set_rank(-1, -1), PK_OK);
  // Outside a listener the same calls work again (the flag is this call's only).
  pk_result* r = nullptr;
  ASSERT_EQ(pk_collect(&r), PK_OK);
  pk_result_release(r);
}

// A listener that holds up the state change (and so the engine's lock) for a
// while, so that another thread can fork meanwhile.
struct SlowListener {
  std::atomic<bool> inside{false};
};

void slow_listener(pk_state, pk_state to, void* user_data) {
  auto* slow = static_cast<SlowListener*>(user_data);
  if (to != PK_STATE_RECORD) return;
  slow->inside.store(true);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
}

// A framework's data-loader workers fork from a process that records on
// several threads. A fork while another thread held one of the engine's
// locks (here: a state change in progress) left the lock held for ever in
// the child, whose first pk_collect / pk_set_state / pk_intern hung.
TEST_F(RecorderTest, ForkWhileAnotherThreadHoldsTheEngineLockLeavesTheChildUsable) {
  SlowListener slow;
  uint64_t handle = 0;
  ASSERT_EQ(pk_add_state_listener(slow_listener, &slow, &handle), PK_OK);
  std::thread changer([] { pk_set_state(PK_STATE_RECORD); });
  while (!slow.inside.load()) std::this_thread::yield();
  const std::string verdict = answer_of_child([] {
    pk_begin_event_str("in the child", PK_EVENT_USER_DEFINED);
    pk_end_event();
    pk_result* r = nullptr;
    const bool ok = pk_collect(&r) == PK_OK && pk_set_state(PK_STATE_CLOSED) == PK_OK &&
                    pk_intern("a name first seen in the child") != 0;
    pk_result_release(r);
    return std::string(ok ? "y" : "a call in the child failed");
  });
  changer.join();
  ASSERT_EQ(pk_remove_state_listener(handle), PK_OK);
  EXPECT_EQ(verdict, "y");
}

// In the child of AForkedChildReportsOnlyWhatItRecordedItself: "y", or what is wrong.
std::string check_the_forked_child() {
  pk_end_event();  // "open across the fork" ends in the child
  pk_begin_event_str("in the child", PK_EVENT_USER_DEFINED);
  pk_end_event();
  pk_counters counters{};
  counters.struct_size = sizeof counters;
  pk_result* r = nullptr;
  std::string verdict;
  constexpr uint64_t kChunkBytes = 256 * 1024;  // one thread's record chunk (cpp/recorder/chunk.h)
  if (pk_get_counters(&counters) != PK_OK || counters.recorded_events != 2) {
    verdict = "the child's counters say " + std::to_string(counters.recorded_events) + " events recorded";
  } else if (counters.memory_used > kChunkBytes) {
    verdict = "the child holds " + std::to_string(counters.memory_used) + " bytes of the parent's buffers";
  } else if (pk_collect(&r) != PK_OK) {
    verdict = "collect failed";
  } else {
    std::vector<std::string> names;
    for (const pk_host_event& e : events_of(r)) names.push_back(name_of(r, e));
    pk_thread_info thread{};
    thread.struct_size = sizeof thread;
    pk_result_info info{};
    info.struct_size = sizeof info;
    pk_result_get_info(r, &info);
    if (names != std::vector<std::string>{"open across the fork", "in the child"}) {
      verdict = "events:";
      for (const auto& n : names) verdict += " [" + n + "]";
    } else if (pk_result_thread_count(r) != 1 || pk_result_get_thread(r, 0, &thread) != PK_OK ||
               thread.tid != static_cast<uint64_t>(getpid())) {
      verdict = "the child's events do not carry the child's thread id";
    } else if (events_of(r)[0].start_ns < info.start_ns) {
      verdict = "an event open across the fork starts before the child's span";
    } else if (info.unfinished_events != 0 || info.unmatched_ends != 0) {
      verdict =
          "unfinished " + std::to_string(info.unfinished_events) + ", unmatched " + std::to_string(info.unmatched_ends);
    } else if (info.process_cpu_ns > info.end_ns - info.start_ns + 1000000000ull) {
      verdict = "process_cpu_ns " + std::to_string(info.process_cpu_ns) + " over a " +
                std::to_string(info.end_ns - info.start_ns) + " ns span";
    } else {
      verdict = "y";
    }
    pk_result_release(r);
  }
  return verdict;
}

// The child of a fork() is a new process with one thread: what the parent
// recorded before the fork is the parent's (its collect reports it), so the
// child's first collect must not report it again, and what the child records
// carries the child's own thread id and CPU time.
TEST_F(RecorderTest, AForkedChildReportsOnlyWhatItRecordedItself) {
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event_str("before the fork", PK_EVENT_USER_DEFINED);
  pk_end_event();
  std::atomic<bool> recorded{false};
  std::atomic<bool> release{false};
  std::thread other([&] {
    pk_begin_event_str("on another thread", PK_EVENT_USER_DEFINED);
    pk_end_event();
    pk_begin_event_str("left open on another thread", PK_EVENT_USER_DEFINED);
    recorded = true;
    while (!release.load()) std::this_thread::yield();
    pk_end_event();
  });
  while (!recorded.load()) std::this_thread::yield();
  pk_begin_event_str("open across the fork", PK_EVENT_USER_DEFINED);
  // Burn CPU time in the parent, which the child's own CPU clock restarts from.
  const auto busy_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  while (std::chrono::steady_clock::now() < busy_until) {
  }
  const std::string verdict = answer_of_child(check_the_forked_child);
  EXPECT_EQ(verdict, "y");
  pk_end_event();
  release = true;
  other.join();
  // The parent still has everything it recorded.
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();
  std::vector<std::string> names;
  for (const pk_host_event& e : events_of(r.get())) names.push_back(name_of(r.get(), e));
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"before the fork", "left open on another thread", "on another thread",
                                             "open across the fork"}));
}

}  // namespace
