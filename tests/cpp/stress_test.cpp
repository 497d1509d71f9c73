// 8 threads x 1 M events nested 3 deep: nothing lost, nesting intact, and the
// same after a save + load round trip; and collects that run while threads
// record heavily, come and go.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "profkit/profkit.h"
#include "test_support.h"

namespace {

using profkit_test::ResultPtr;

constexpr int kThreads = 8;
constexpr int kEventsPerThread = 1000002;  // 333334 triples: a multiple of 3

void check(const pk_result* r) {
  ASSERT_EQ(pk_result_thread_count(r), static_cast<size_t>(kThreads));
  // Result string ids are the result's own: find the three names in it.
  uint32_t names[3] = {0, 0, 0};
  const char* expected[3] = {"stress/outer", "stress/middle", "stress/inner"};
  for (size_t i = 0; i < pk_result_string_count(r); ++i) {
    for (int d = 0; d < 3; ++d) {
      if (std::string(pk_result_string(r, i)) == expected[d]) names[d] = static_cast<uint32_t>(i);
    }
  }
  ASSERT_TRUE(names[0] != 0 && names[1] != 0 && names[2] != 0);
  size_t n = 0;
  const pk_host_event* ev = pk_result_host_events(r, &n);
  ASSERT_EQ(n, static_cast<size_t>(kThreads) * kEventsPerThread);
  for (size_t t = 0; t < kThreads; ++t) {
    pk_thread_info info{};
    info.struct_size = sizeof info;
    ASSERT_EQ(pk_result_get_thread(r, t, &info), PK_OK);
    ASSERT_EQ(info.event_count, static_cast<uint64_t>(kEventsPerThread));
    int bad = 0;
    for (uint64_t i = 0; i < info.event_count; ++i) {
      const pk_host_event& e = ev[info.first_event + i];
      const int depth = static_cast<int>(i % 3);
      if (e.depth != depth || e.name != names[depth] || e.start_ns > e.end_ns) ++bad;
      if (depth > 0) {
        const pk_host_event& parent = ev[info.first_event + i - 1];
        if (parent.start_ns > e.start_ns || parent.end_ns < e.end_ns) ++bad;
      }
    }
    EXPECT_EQ(bad, 0) << "thread " << t;
  }
  pk_result_info info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(pk_result_get_info(r, &info), PK_OK);
  EXPECT_EQ(info.dropped_events, 0u);
  EXPECT_EQ(info.unmatched_ends, 0u);
}

TEST(Stress, EightThreadsOfAMillionNestedEventsSurviveSaveAndLoad) {
  profkit_test::reset_engine();
  pk_name_id names[3] = {pk_intern("stress/outer"), pk_intern("stress/middle"), pk_intern("stress/inner")};
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      for (int i = 0; i < kEventsPerThread / 3; ++i) {
        pk_begin_event(names[0], PK_EVENT_FORWARD);
        pk_begin_event(names[1], PK_EVENT_OPERATOR);
        pk_begin_event(names[2], PK_EVENT_OPERATOR_INNER);
        pk_end_event();
        pk_end_event();
        pk_end_event();
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr collected = profkit_test::collect();
  check(collected.get());

  profkit_test::TempDir dir;
  const std::string path = dir.file("stress.pktrace");
  ASSERT_EQ(pk_result_save(collected.get(), path.c_str()), PK_OK) << pk_last_error();
  ResultPtr loaded = profkit_test::load(path);
  check(loaded.get());
}

// pk_collect while recording, again and again, as threads record nested
// events without pause and short-lived threads start, record and exit (their
// buffers are handed over at exit while a collect may be draining): across
// all the results every event arrives exactly once, none is dropped or
// unmatched, and none is open once every thread has ended.
TEST(Stress, CollectsWhileThreadsRecordAndComeAndGoLoseNothing) {
  profkit_test::reset_engine();
  const pk_name_id outer = pk_intern("stress/busy outer");
  const pk_name_id inner = pk_intern("stress/busy inner");
  const pk_name_id brief = pk_intern("stress/brief");
  constexpr int kBusyThreads = 3;
  constexpr int kPairsPerBusyThread = 150000;  // several buffers each
  constexpr int kBriefThreads = 300;
  constexpr int kEventsPerBriefThread = 7;
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  std::atomic<int> running{kBusyThreads + 1};
  std::atomic<int> collects_done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kBusyThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPairsPerBusyThread; ++i) {
        // Halfway, until two collects have run: collects happen while these
        // threads record however fast they record (under ThreadSanitizer a
        // collect is slow enough that they once finished in between).
        while (i == kPairsPerBusyThread / 2 && collects_done.load() < 2) std::this_thread::yield();
        pk_begin_event(outer, PK_EVENT_OPERATOR);
        pk_begin_event(inner, PK_EVENT_OPERATOR_INNER);
        pk_end_event();
        pk_end_event();
      }
      running.fetch_sub(1);
    });
  }
  threads.emplace_back([&] {
    for (int t = 0; t < kBriefThreads; ++t) {
      std::thread([&] {
        for (int i = 0; i < kEventsPerBriefThread; ++i) {
          pk_begin_event(brief, PK_EVENT_USER_DEFINED);
          pk_end_event();
        }
      }).join();
    }
    running.fetch_sub(1);
  });
  uint64_t events = 0;
  uint64_t dropped = 0;
  uint64_t unmatched = 0;
  uint64_t unfinished = 0;
  int collects = 0;
  auto take = [&](const pk_result* r) {
    size_t n = 0;
    pk_result_host_events(r, &n);
    events += n;
    pk_result_info info{};
    info.struct_size = sizeof info;
    ASSERT_EQ(pk_result_get_info(r, &info), PK_OK);
    dropped += info.dropped_events;
    unmatched += info.unmatched_ends;
    unfinished = info.unfinished_events;  // the last result's: after every thread ended
    ++collects;
    collects_done.store(collects);
  };
  while (running.load() > 0) take(profkit_test::collect().get());
  for (auto& th : threads) th.join();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  take(profkit_test::collect().get());
  EXPECT_GT(collects, 2);
  EXPECT_EQ(events, uint64_t{kBusyThreads} * kPairsPerBusyThread * 2 + uint64_t{kBriefThreads} * kEventsPerBriefThread);
  EXPECT_EQ(dropped, 0u);
  EXPECT_EQ(unmatched, 0u);
  EXPECT_EQ(unfinished, 0u);
}

}  // namespace
