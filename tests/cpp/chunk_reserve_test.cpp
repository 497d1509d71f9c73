// The record chunks mapped ahead of a recording window (recorder/chunk_reserve.h):
// when they are mapped, how many, what bounds them, and that they go back.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "profkit/profkit.h"
#include "recorder/chunk.h"
#include "recorder/chunk_reserve.h"
#include "test_support.h"

namespace {

using profkit::Chunk;
using profkit::ChunkPool;
using profkit::ChunkReserve;
using profkit_test::collect;
using profkit_test::info_of;
using profkit_test::reset_engine;

uint64_t memory_used() {
  pk_counters counters{};
  counters.struct_size = sizeof counters;
  EXPECT_EQ(pk_get_counters(&counters), PK_OK);
  return counters.memory_used;
}

// Records `events` events on a thread of its own (whose chunks all come from
// the pool), then lets it exit.
void record_on_new_thread(uint64_t events) {
  const pk_name_id name = pk_intern("reserve test");
  std::thread([&] {
    for (uint64_t i = 0; i < events; ++i) {
      pk_begin_event(name, PK_EVENT_USER_DEFINED);
      pk_end_event();
    }
  }).join();
}

class ChunkReserveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    reset_engine();
    // What earlier tests' windows took must not size this test's first one.
    ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
    reset_engine();
  }
  void TearDown() override {
    reset_engine();
    pk_set_memory_cap(1ull << 30);
  }
};

TEST_F(ChunkReserveTest, AWindowOpenedFromClosedFindsTheMinimumMapped) {
  ASSERT_EQ(ChunkPool::size(), 0u);
  const uint64_t before = memory_used();
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  EXPECT_EQ(ChunkPool::size(), ChunkReserve::kMinChunks);
  EXPECT_EQ(memory_used(), before + ChunkReserve::kMinChunks * Chunk::kBytes);
}

TEST_F(ChunkReserveTest, ReadyMapsThemAndTheWindowOpensWithoutMappingMore) {
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  EXPECT_EQ(ChunkPool::size(), ChunkReserve::kMinChunks);
  const uint64_t ready = memory_used();
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  EXPECT_EQ(ChunkPool::size(), ChunkReserve::kMinChunks);
  EXPECT_EQ(memory_used(), ready);
}

TEST_F(ChunkReserveTest, ANewThreadRecordsIntoAMappedChunk) {
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  const uint64_t mapped = memory_used();
  const uint64_t handed_out = ChunkPool::chunks_handed_out();
  const pk_name_id name = pk_intern("first event");
  std::thread([&] {
    pk_begin_event(name, PK_EVENT_USER_DEFINED);
    pk_end_event();
    // Taken from the pool, not mapped: the memory in use did not grow.
    EXPECT_EQ(ChunkPool::size(), ChunkReserve::kMinChunks - 1);
    EXPECT_EQ(memory_used(), mapped);
  }).join();
  EXPECT_EQ(ChunkPool::chunks_handed_out(), handed_out + 1);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  EXPECT_EQ(profkit_test::events_of(collect().get()).size(), 1u);
}

TEST_F(ChunkReserveTest, TheNextWindowFindsWhatTheLastOneTook) {
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  // Nine and a half chunks' worth: ten chunks handed out.
  record_on_new_thread(Chunk::kCapacity * 19 / 2);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  const profkit_test::ResultPtr r = collect();
  EXPECT_EQ(info_of(r.get()).dropped_events, 0u);
  EXPECT_EQ(ChunkPool::size(), 0u);  // closed: given back
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  EXPECT_EQ(ChunkPool::size(), 10u);
}

TEST_F(ChunkReserveTest, RepeatedWindowsTopThePoolUpBetweenThem) {
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  record_on_new_thread(Chunk::kCapacity * 11 / 2);  // six chunks
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);   // the window closes into the next one's warm-up
  const profkit_test::ResultPtr r = collect();      // the exited thread's chunks go back to the pool
  EXPECT_GE(ChunkPool::size(), 6u);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  EXPECT_GE(ChunkPool::size(), 6u);
}

TEST_F(ChunkReserveTest, TheTargetIsTheLastWindowsDemandBetweenTheBounds) {
  ChunkReserve reserve;
  EXPECT_EQ(reserve.target(), ChunkReserve::kMinChunks);  // no window yet
  std::vector<Chunk*> taken;
  auto window_taking = [&](uint32_t chunks) {
    reserve.window_opened();
    for (uint32_t i = 0; i < chunks; ++i) taken.push_back(ChunkPool::acquire());
    reserve.window_closed();
    for (Chunk* c : taken) Chunk::release(c);
    taken.clear();
  };
  window_taking(1);
  EXPECT_EQ(reserve.target(), ChunkReserve::kMinChunks);
  window_taking(ChunkReserve::kMinChunks + 3);
  EXPECT_EQ(reserve.target(), ChunkReserve::kMinChunks + 3);
  window_taking(ChunkReserve::kMaxChunks + 5);
  EXPECT_EQ(reserve.target(), ChunkReserve::kMaxChunks);
  reserve.start_afresh();
  EXPECT_EQ(reserve.target(), ChunkReserve::kMinChunks);
}

// A tight cap is for events: the reserve takes at most half the room it
// leaves, and short-lived threads (each copying its records out at exit,
// which needs room too) lose nothing.
TEST_F(ChunkReserveTest, TheMemoryCapBoundsTheReserveAndNothingIsLost) {
  const uint64_t baseline = memory_used();
  ASSERT_EQ(pk_set_memory_cap(baseline + 4 * Chunk::kBytes), PK_OK);
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  EXPECT_EQ(ChunkPool::size(), 2u);
  for (int t = 0; t < 16; ++t) record_on_new_thread(1000);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  const profkit_test::ResultPtr r = collect();
  EXPECT_EQ(info_of(r.get()).dropped_events, 0u);
  EXPECT_EQ(profkit_test::events_of(r.get()).size(), 16000u);
}

// Lowered below what the pool holds, the cap unmaps spares at once: a
// thread must not go on recording into them past it.
TEST_F(ChunkReserveTest, ALoweredCapUnmapsSpares) {
  const uint64_t baseline = memory_used();
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  ASSERT_EQ(ChunkPool::size(), ChunkReserve::kMinChunks);
  ASSERT_EQ(pk_set_memory_cap(baseline + 3 * Chunk::kBytes), PK_OK);
  EXPECT_EQ(ChunkPool::size(), 3u);
  EXPECT_EQ(memory_used(), baseline + 3 * Chunk::kBytes);
}

TEST_F(ChunkReserveTest, ClosingGivesThePoolBack) {
  const uint64_t baseline = memory_used();
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  ASSERT_GT(memory_used(), baseline);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);  // no collect needed
  EXPECT_EQ(ChunkPool::size(), 0u);
  EXPECT_EQ(memory_used(), baseline);
}

// A data-loader worker forked during a window neither keeps the parent's
// reserve nor sizes its own windows by the parent's.
TEST_F(ChunkReserveTest, AForkedChildStartsWithNoneAndTheMinimumTarget) {
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  record_on_new_thread(Chunk::kCapacity * 19 / 2);  // ten chunks
  ASSERT_EQ(pk_set_state(PK_STATE_READY), PK_OK);
  ASSERT_GE(ChunkPool::size(), 10u);
  const std::string answer = profkit_test::answer_of_child([] {
    if (ChunkPool::size() != 0) return std::string("the child kept the parent's pool");
    pk_set_state(PK_STATE_CLOSED);
    pk_set_state(PK_STATE_RECORD);
    const uint32_t pooled = ChunkPool::size();
    return pooled == ChunkReserve::kMinChunks ? std::string("ok")
                                              : "the child's window mapped " + std::to_string(pooled);
  });
  EXPECT_EQ(answer, "ok");
}

}  // namespace
