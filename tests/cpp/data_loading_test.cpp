// Data loading through the C ABI (pk_data_loading_begin/end, pk_reader_time_ns,
// pk_thread_reader_time_ns):
// reader time with and without recording, nesting, windows, threads.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "profkit/profkit.h"
#include "test_support.h"

namespace {

using profkit_test::collect;
using profkit_test::events_of;
using profkit_test::reset_engine;
using profkit_test::ResultPtr;

class DataLoadingTest : public ::testing::Test {
 protected:
  void SetUp() override { reset_engine(); }
  void TearDown() override { reset_engine(); }
};

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

uint64_t unmatched_ends(const pk_result* r) {
  pk_result_info info{};
  info.struct_size = sizeof info;
  EXPECT_EQ(pk_result_get_info(r, &info), PK_OK);
  return info.unmatched_ends;
}

constexpr uint64_t kMs = 1000000;

TEST_F(DataLoadingTest, ReaderTimeIsKeptWithoutRecordingAndRecordsNothing) {
  const uint64_t before = pk_reader_time_ns();
  pk_data_loading_begin(pk_intern("load"));
  sleep_ms(3);
  pk_data_loading_end();
  EXPECT_GE(pk_reader_time_ns() - before, 3 * kMs);
  ResultPtr r = collect();
  EXPECT_TRUE(events_of(r.get()).empty());
}

TEST_F(DataLoadingTest, ARecordedRangeIsOneDataloaderEventWithItsDuration) {
  const uint64_t before = pk_reader_time_ns();
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_data_loading_begin(pk_intern("DataLoader.__next__"));
  sleep_ms(2);
  pk_data_loading_end();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  const uint64_t reader = pk_reader_time_ns() - before;
  ResultPtr r = collect();
  const auto ev = events_of(r.get());
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(std::string(pk_result_string(r.get(), ev[0].name)), "DataLoader.__next__");
  EXPECT_EQ(ev[0].type, PK_EVENT_DATALOADER);
  const uint64_t duration = ev[0].end_ns - ev[0].start_ns;
  EXPECT_GE(duration, 2 * kMs);
  // The event brackets the timed part: both read the same fetch.
  EXPECT_GE(duration + 1000, reader);
  EXPECT_GE(reader, 2 * kMs);
}

TEST_F(DataLoadingTest, NestedRangesArePartOfTheOutermostOne) {
  const uint64_t outside_before = pk_now_ns();
  const uint64_t before = pk_reader_time_ns();
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_data_loading_begin(pk_intern("user range"));
  sleep_ms(2);
  pk_data_loading_begin(pk_intern("framework range"));
  sleep_ms(2);
  pk_data_loading_end();
  pk_data_loading_end();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  const uint64_t reader = pk_reader_time_ns() - before;
  const uint64_t outside = pk_now_ns() - outside_before;
  // Counted once: never more than the time that passed around both.
  EXPECT_GE(reader, 4 * kMs);
  EXPECT_LE(reader, outside);
  ResultPtr r = collect();
  const auto ev = events_of(r.get());
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(std::string(pk_result_string(r.get(), ev[0].name)), "user range");
}

TEST_F(DataLoadingTest, ARangeAcrossAWindowEdgeAddsTimeButNoBrokenEvent) {
  const uint64_t before = pk_reader_time_ns();
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_data_loading_begin(pk_intern("begun in the window"));
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  pk_data_loading_end();
  pk_data_loading_begin(pk_intern("ended in the window"));
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_data_loading_end();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  EXPECT_GT(pk_reader_time_ns(), before);
  ResultPtr r = collect();
  EXPECT_EQ(unmatched_ends(r.get()), 0u);
  for (const auto& e : events_of(r.get())) {
    EXPECT_NE(e.type, PK_EVENT_DATALOADER) << pk_result_string(r.get(), e.name);
  }
}

TEST_F(DataLoadingTest, AnEndWithoutABeginIsIgnored) {
  const uint64_t before = pk_reader_time_ns();
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  const pk_name_id outer = pk_intern("outer");
  pk_begin_event(outer, PK_EVENT_FORWARD);
  pk_data_loading_end();  // must not close "outer"
  pk_end_event();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  EXPECT_EQ(pk_reader_time_ns(), before);
  ResultPtr r = collect();
  EXPECT_EQ(unmatched_ends(r.get()), 0u);
  ASSERT_EQ(events_of(r.get()).size(), 1u);
}

TEST_F(DataLoadingTest, TheDepthCountsTheCallingThreadsOpenRanges) {
  const pk_name_id name = pk_intern("fetch");
  EXPECT_EQ(pk_data_loading_depth(), 0u);
  pk_data_loading_begin(name);
  pk_data_loading_begin(name);
  EXPECT_EQ(pk_data_loading_depth(), 2u);
  uint32_t on_another_thread = 99;
  std::thread([&] { on_another_thread = pk_data_loading_depth(); }).join();
  EXPECT_EQ(on_another_thread, 0u);  // each thread's own
  pk_data_loading_end();
  pk_data_loading_end();
  pk_data_loading_end();  // an end too many is ignored: the depth stays 0
  EXPECT_EQ(pk_data_loading_depth(), 0u);
}

TEST_F(DataLoadingTest, EachThreadNestsItsOwnRangesAndAllAddReaderTime) {
  const uint64_t before = pk_reader_time_ns();
  const pk_name_id name = pk_intern("worker fetch");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_data_loading_begin(name);  // open on this thread while the others run
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([name] {
      pk_data_loading_begin(name);
      sleep_ms(2);
      pk_data_loading_end();
    });
  }
  for (auto& t : threads) t.join();
  pk_data_loading_end();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  // Four 2 ms ranges on their own threads plus this thread's own range.
  EXPECT_GE(pk_reader_time_ns() - before, 4 * 2 * kMs);
  ResultPtr r = collect();
  EXPECT_EQ(events_of(r.get()).size(), 5u);
}

TEST_F(DataLoadingTest, AThreadsReaderTimeIsItsOwnRangesOnly) {
  const pk_name_id name = pk_intern("fetch");
  const uint64_t mine_before = pk_thread_reader_time_ns();
  uint64_t worker_total = 0;
  std::thread prefetcher([&] {  // a background prefetcher: not this thread's wait
    const uint64_t start = pk_thread_reader_time_ns();
    EXPECT_EQ(start, 0u);  // a new thread has waited for nothing yet
    pk_data_loading_begin(name);
    sleep_ms(3);
    pk_data_loading_end();
    worker_total = pk_thread_reader_time_ns();
  });
  prefetcher.join();
  EXPECT_GE(worker_total, 3 * kMs);
  EXPECT_EQ(pk_thread_reader_time_ns(), mine_before);
  pk_data_loading_begin(name);
  pk_data_loading_begin(name);  // nested: part of the outer range
  sleep_ms(1);
  pk_data_loading_end();
  pk_data_loading_end();
  EXPECT_GE(pk_thread_reader_time_ns() - mine_before, 1 * kMs);
}

}  // namespace
