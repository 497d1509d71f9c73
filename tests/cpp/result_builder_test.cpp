// ResultBuilder: ordering, nesting by containment, argument resolution,
// GPU attachment and sanitizing, on events with known timestamps.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "trace/event_order.h"
#include "trace/result_builder.h"

namespace profkit {
namespace {

pk_host_event ev(uint64_t start, uint64_t end, uint32_t name, uint8_t type = PK_EVENT_OPERATOR, uint8_t depth = 0) {
  return {start, end, name, type, depth, 0};
}

TEST(SortAndNest, OrdersByStartThenLongerFirstAndNestsByContainment) {
  std::vector<pk_host_event> e = {ev(20, 30, 3), ev(10, 100, 1), ev(10, 50, 2), ev(60, 60, 4), ev(100, 120, 5)};
  sort_thread_events(e);
  nest_by_containment(e);
  ASSERT_EQ(e.size(), 5u);
  EXPECT_EQ(e[0].name, 1u);
  EXPECT_EQ(e[0].depth, 0);
  EXPECT_EQ(e[1].name, 2u);
  EXPECT_EQ(e[1].depth, 1);
  EXPECT_EQ(e[2].name, 3u);
  EXPECT_EQ(e[2].depth, 2);
  EXPECT_EQ(e[3].name, 4u);  // zero-length, inside [10,100] only
  EXPECT_EQ(e[3].depth, 1);
  EXPECT_EQ(e[4].name, 5u);  // starts where the first ends: a sibling
  EXPECT_EQ(e[4].depth, 0);
}

TEST(SortAndNest, EqualIntervalsUseTheDepthHint) {
  std::vector<pk_host_event> e = {ev(5, 9, 2, PK_EVENT_OPERATOR, 1), ev(5, 9, 1, PK_EVENT_PROFILE_STEP, 0)};
  sort_thread_events(e);
  nest_by_containment(e);
  EXPECT_EQ(e[0].name, 1u);
  EXPECT_EQ(e[1].depth, 1);
}

TEST(SortAndNest, PartialOverlapsBecomeSiblings) {
  // A user range crossing a step boundary is contained by neither step.
  std::vector<pk_host_event> e = {ev(0, 100, 1), ev(100, 200, 2), ev(50, 150, 3)};
  sort_thread_events(e);
  nest_by_containment(e);
  EXPECT_EQ(e[1].name, 3u);
  EXPECT_EQ(e[1].depth, 0);
  EXPECT_EQ(e[2].depth, 0);
}

// Events as the recorder writes them: post-order (at their end), with the
// stack index as depth hint; steps around them; optional unsorted extras.
std::vector<pk_host_event> recorded_tree(std::mt19937& rng, int roots) {
  std::vector<pk_host_event> out;
  uint64_t clock = 100;
  std::function<void(int)> node = [&](int depth) {
    const uint64_t start = clock++;
    const int children = depth < 4 ? static_cast<int>(rng() % 4) : 0;
    for (int c = 0; c < children; ++c) node(depth + 1);
    clock += rng() % 3;  // zero-length leaves happen too
    out.push_back({start, clock, static_cast<uint32_t>(depth), PK_EVENT_OPERATOR, static_cast<uint8_t>(depth), 0});
  };
  for (int r = 0; r < roots; ++r) {
    const uint64_t step_start = clock++;
    node(1);
    node(1);
    out.push_back({step_start, clock++, 9, PK_EVENT_PROFILE_STEP, 0, 0});
  }
  return out;
}

TEST(SortAndNest, MergingRunsMatchesAFullSort) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    std::vector<pk_host_event> events = recorded_tree(rng, 1 + round % 5);
    // Some runtime-call-like events with the highest hint, out of order.
    for (int k = 0; k < round % 4; ++k) {
      const uint64_t t = 100 + rng() % 50;
      events.push_back({t, t + 1, 42, PK_EVENT_CUDA_RUNTIME, 255, 0});
    }
    std::vector<pk_host_event> expected = events;
    std::sort(expected.begin(), expected.end(), event_before);
    sort_thread_events(events);
    ASSERT_EQ(events.size(), expected.size());
    for (size_t i = 0; i < events.size(); ++i) {
      ASSERT_EQ(events[i].start_ns, expected[i].start_ns) << "round " << round << " at " << i;
      ASSERT_EQ(events[i].end_ns, expected[i].end_ns);
      ASSERT_EQ(events[i].depth, expected[i].depth);
    }
    nest_by_containment(events);
    // Every event's parent (nearest earlier one level up) contains it.
    for (size_t i = 0; i < events.size(); ++i) {
      if (events[i].depth == 0) continue;
      size_t p = i;
      while (p-- > 0 && events[p].depth >= events[i].depth) {
      }
      ASSERT_LT(p, i);
      EXPECT_LE(events[p].start_ns, events[i].start_ns);
      EXPECT_GE(events[p].end_ns, events[i].end_ns);
    }
  }
}

TEST(ResultBuilder, ThreadsAreOrderedAndArgumentsResolved) {
  ResultBuilder b({});
  b.add_string("");
  const uint32_t op = b.add_string("op");
  const uint32_t key = b.add_string("k");
  const uint32_t t2 = b.thread(200);
  const uint32_t t1 = b.thread(100);
  b.set_thread_name(t1, "main");
  b.add_event(t2, ev(5, 6, op));
  b.add_event(t1, ev(1, 10, op, PK_EVENT_OPERATOR, 0));
  b.add_event(t1, ev(2, 3, op, PK_EVENT_OPERATOR, 1));
  b.add_arg(t1, 2, 1, key, PK_ARG_INT, 42);
  b.add_arg(t1, 999, 0, key, PK_ARG_INT, 7);  // no such event: dropped
  b.add_memory_event({
      4,
      0xA,
      16,
      16,
      32,
      t2,
      -1,
  });
  auto r = b.finish();
  ASSERT_EQ(r->threads.size(), 2u);
  EXPECT_EQ(r->threads[0].tid, 100u);
  EXPECT_EQ(r->threads[0].name, "main");
  EXPECT_EQ(r->threads[0].event_count, 2u);
  EXPECT_EQ(r->threads[1].first_event, 2u);
  ASSERT_EQ(r->event_args.size(), 1u);
  EXPECT_EQ(r->event_args[0].event, 1u);
  EXPECT_EQ(r->event_args[0].value, 42);
  ASSERT_EQ(r->memory_events.size(), 1u);
  EXPECT_EQ(r->memory_events[0].thread, 1u);  // remapped to the final thread index
  EXPECT_EQ(r->thread_of(2), 1u);
  EXPECT_EQ(r->parent_of(1), 0u);
  const std::vector<uint64_t> parents = r->all_parents();
  EXPECT_EQ(parents, (std::vector<uint64_t>{PK_NO_EVENT, 0, PK_NO_EVENT}));
}

TEST(ResultBuilder, DeviceActivityAttachesToItsLaunchAndUnattachedIsCounted) {
  ResultBuilder b({});
  b.add_string("");
  const uint32_t op = b.add_string("aten::add");
  const uint32_t launch = b.add_string("cudaLaunchKernel");
  const uint32_t kernel = b.add_string("add_kernel");
  const uint32_t t = b.thread(1);
  b.add_event(t, ev(100, 200, op));
  b.add_runtime_call(t, ev(100, 150, launch, PK_EVENT_CUDA_RUNTIME), 77);  // starts with the operator
  pk_kernel_detail k{};
  k.grid[0] = 8;
  const uint32_t detail = b.add_kernel_detail(k);
  b.add_device_event({300, 400, 0, kernel, 77, 7, 1, 0, PK_EVENT_KERNEL, 0, detail});
  b.add_device_event({250, 260, 0, kernel, 78, 7, 1, 0, PK_EVENT_KERNEL, 0, PK_NO_DETAIL});
  auto r = b.finish();
  ASSERT_EQ(r->host_events.size(), 2u);
  EXPECT_EQ(r->host_events[1].type, PK_EVENT_CUDA_RUNTIME);
  EXPECT_EQ(r->host_events[1].depth, 1);  // nested in the operator
  ASSERT_EQ(r->device_events.size(), 2u);
  EXPECT_EQ(r->device_events[0].start_ns, 250u);  // sorted by start
  EXPECT_EQ(r->device_events[0].launch_event, PK_NO_EVENT);
  EXPECT_EQ(r->device_events[1].launch_event, 1u);
  EXPECT_EQ(r->parent_of(r->device_events[1].launch_event), 0u);
  EXPECT_EQ(r->info.unattached_device_records, 1u);
  EXPECT_EQ(r->kernel_details[r->device_events[1].detail].grid[0], 8u);
}

TEST(ResultBuilder, ProducersCannotSmuggleInvalidIds) {
  ResultBuilder b({});
  b.add_string("");
  const uint32_t t = b.thread(1);
  b.add_event(t, ev(1, 2, 12345, 99));
  b.add_arg(t, 1, 0, 999, PK_ARG_STRING, 5);
  auto r = b.finish();
  EXPECT_EQ(r->host_events[0].name, 0u);
  EXPECT_EQ(r->host_events[0].type, PK_EVENT_USER_DEFINED);
  EXPECT_TRUE(r->event_args.empty());
}

// The parent by definition: the nearest earlier event of its thread with a
// smaller depth.
uint64_t parent_by_scan(const Result& r, uint64_t event) {
  const ThreadRecord& t = r.threads[r.thread_of(event)];
  for (uint64_t i = event; i-- > t.first_event;) {
    if (r.host_events[i].depth < r.host_events[event].depth) return i;
  }
  return PK_NO_EVENT;
}

TEST(ResultParents, ParentOfAgreesWithAllParentsAndTheDefinition) {
  ResultBuilder b({});
  b.add_string("");
  const uint32_t name = b.add_string("e");
  // Two threads of random nesting: runs of siblings, deep chains, returns
  // several levels at once, and ties (same start and end) at three depths.
  std::mt19937 random(7);
  for (uint64_t tid : {10, 20}) {
    const uint32_t t = b.thread(tid);
    std::function<void(uint64_t, uint64_t, int)> fill = [&](uint64_t start, uint64_t end, int depth) {
      b.add_event(t, ev(start, end, name));
      if (depth == 8 || end - start < 8) return;
      uint64_t at = start;
      const int children = static_cast<int>(random() % 4);
      for (int c = 0; c < children && at + 4 < end; ++c) {
        const uint64_t child_end = at + 1 + random() % (end - at - 1);
        fill(at, child_end, depth + 1);
        at = child_end;
      }
    };
    for (uint64_t root = 0; root < 20; ++root) fill(root * 100000, root * 100000 + 90000, 0);
    b.add_event(t, ev(5'000'000, 5'000'010, name));
    b.add_event(t, ev(5'000'000, 5'000'010, name, PK_EVENT_OPERATOR, 1));
    b.add_event(t, ev(5'000'000, 5'000'010, name, PK_EVENT_OPERATOR, 2));
  }
  auto r = b.finish();
  ASSERT_GT(r->host_events.size(), 200u);
  const std::vector<uint64_t> all = r->all_parents();
  ASSERT_EQ(all.size(), r->host_events.size());
  size_t nested = 0;
  for (uint64_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i], parent_by_scan(*r, i)) << i;
    nested += all[i] != PK_NO_EVENT;
  }
  EXPECT_GT(nested, all.size() / 2);
  // Asked from several threads at once on a fresh result (the first calls
  // build the index), in different orders: always the same answer.
  std::vector<std::vector<uint64_t>> seen(4, std::vector<uint64_t>(all.size()));
  std::vector<std::thread> readers;
  for (size_t k = 0; k < seen.size(); ++k) {
    readers.emplace_back([&, k] {
      for (uint64_t n = 0; n < all.size(); ++n) {
        const uint64_t i = k % 2 == 0 ? n : all.size() - 1 - n;
        seen[k][i] = r->parent_of(i);
      }
    });
  }
  for (std::thread& reader : readers) reader.join();
  for (const std::vector<uint64_t>& parents : seen) EXPECT_EQ(parents, all);
  EXPECT_EQ(r->parent_of(all.size()), PK_NO_EVENT);  // out of range
  EXPECT_EQ(r->parent_of(UINT64_MAX), PK_NO_EVENT);
}

TEST(ResultParents, DepthsThatSkipALevelStillGiveTheNearestShallowerEvent) {
  // A hand-built Result may hold such depths (loading refuses a .pktrace
  // with them since 1.10): parents must stay within the thread and in range.
  Result r;
  r.threads.push_back({1, "", 0, 5});
  r.threads.push_back({2, "", 5, 2});
  r.host_events = Column<pk_host_event>(std::vector<pk_host_event>{
      ev(0, 100, 0, PK_EVENT_OPERATOR, 0), ev(1, 90, 0, PK_EVENT_OPERATOR, 2), ev(2, 80, 0, PK_EVENT_OPERATOR, 3),
      ev(3, 70, 0, PK_EVENT_OPERATOR, 3), ev(4, 60, 0, PK_EVENT_OPERATOR, 1),
      // Thread 2 starts deep: no parent before it on its own thread.
      ev(0, 50, 0, PK_EVENT_OPERATOR, 2), ev(1, 40, 0, PK_EVENT_OPERATOR, 4)});
  const std::vector<uint64_t> expected = {PK_NO_EVENT, 0, 1, 1, 0, PK_NO_EVENT, 5};
  EXPECT_EQ(r.all_parents(), expected);
  for (uint64_t i = 0; i < expected.size(); ++i) EXPECT_EQ(r.parent_of(i), expected[i]) << i;
}

TEST(ParseProfileStep, AcceptsOnlyWholeNumbers) {
  uint64_t n = 0;
  EXPECT_TRUE(parse_profile_step("ProfileStep#12", &n));
  EXPECT_EQ(n, 12u);
  EXPECT_FALSE(parse_profile_step("ProfileStep#", &n));
  EXPECT_FALSE(parse_profile_step("ProfileStep#1x", &n));
  EXPECT_FALSE(parse_profile_step("Step#1", &n));
}

// A Result whose depths stop at 255 (a file written before collects dropped
// events past the limit; a builder's): the events below the 255th are
// nested by time, each the parent of the next.
TEST(ResultParents, BelowTheDeepestStoredDepthTheyAreTheEnclosingEvents) {
  ResultBuilder b({});
  b.add_string("");
  const uint32_t name = b.add_string("deep");
  const uint32_t t = b.thread(1);
  for (uint64_t i = 0; i < 270; ++i) b.add_event(t, {i, 1000 - i, name, PK_EVENT_USER_DEFINED, 0, 0});
  const std::unique_ptr<Result> whole = b.finish();
  ASSERT_EQ(whole->host_events.size(), 270u);
  EXPECT_EQ(whole->host_events[269].depth, 255);
  EXPECT_EQ(whole->parent_of(0), PK_NO_EVENT);
  for (uint64_t i = 1; i < 270; ++i) EXPECT_EQ(whole->parent_of(i), i - 1) << i;
}

}  // namespace
}  // namespace profkit
