// Interval arithmetic and kernel-name shortening used by the summary tables.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "summary/interval_set.h"
#include "summary/kernel_name.h"

namespace {

using profkit::IntervalList;
using profkit::IntervalMerger;
using profkit::SegmentedIntervals;

IntervalList merged(std::initializer_list<std::pair<uint64_t, uint64_t>> in) {
  IntervalList out;
  IntervalMerger m(&out);
  for (auto [s, e] : in) m.add(s, e);
  m.flush();
  return out;
}

TEST(SummaryIntervals, MergerCountsOverlapsOnceAndSkipsEmpty) {
  IntervalList out;
  IntervalMerger m(&out);
  m.add(0, 10);
  m.add(2, 5);    // inside
  m.add(8, 15);   // overlaps the end
  m.add(15, 20);  // touches: one interval
  m.add(30, 30);  // empty
  m.add(40, 41);
  m.flush();
  EXPECT_EQ(m.length(), 21u);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].start, 0u);
  EXPECT_EQ(out[0].end, 20u);
  EXPECT_EQ(out[1].start, 40u);
}

TEST(SummaryIntervals, UnionIntersectionAndWindow) {
  const IntervalList a = merged({{0, 10}, {20, 30}});
  const IntervalList b = merged({{5, 25}, {40, 50}});
  const IntervalList u = profkit::union_of(a, b);
  EXPECT_EQ(profkit::total_length(u), 40u);  // [0,30) + [40,50)
  const IntervalList i = profkit::intersection_of(a, b);
  EXPECT_EQ(profkit::total_length(i), 10u);  // [5,10) + [20,25)
  EXPECT_EQ(profkit::length_within(a, b), 10u);
  EXPECT_EQ(profkit::length_within(a, {}), 0u);
  EXPECT_TRUE(profkit::union_of({}, {}).empty());
}

std::vector<std::pair<uint64_t, uint64_t>> pairs(const IntervalList& list) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (const profkit::Interval& i : list) out.emplace_back(i.start, i.end);
  return out;
}

TEST(SummaryIntervals, DifferenceCutsHolesAndKeepsTheRest) {
  using Pairs = std::vector<std::pair<uint64_t, uint64_t>>;
  const IntervalList a = merged({{0, 10}, {20, 30}});
  const IntervalList b = merged({{5, 25}, {40, 50}});
  EXPECT_EQ(pairs(profkit::difference_of(a, b)), (Pairs{{0, 5}, {25, 30}}));
  EXPECT_EQ(pairs(profkit::difference_of(b, a)), (Pairs{{10, 20}, {40, 50}}));
  // One long interval with several holes, one of them past its end.
  EXPECT_EQ(pairs(profkit::difference_of(merged({{0, 100}}), merged({{10, 20}, {30, 40}, {90, 120}}))),
            (Pairs{{0, 10}, {20, 30}, {40, 90}}));
  // A hole that spans two intervals of `a`, and one that covers an interval whole.
  EXPECT_EQ(pairs(profkit::difference_of(merged({{0, 10}, {12, 14}, {20, 30}}), merged({{8, 22}}))),
            (Pairs{{0, 8}, {22, 30}}));
  EXPECT_EQ(pairs(profkit::difference_of(a, {})), pairs(a));
  EXPECT_TRUE(profkit::difference_of({}, b).empty());
  EXPECT_TRUE(profkit::difference_of(a, merged({{0, 30}})).empty());
}

TEST(SummaryIntervals, SegmentsMergeKWays) {
  SegmentedIntervals s;
  EXPECT_EQ(s.union_length(), 0u);
  for (auto list : {merged({{0, 10}, {100, 110}}), merged({{5, 20}}), merged({}), merged({{105, 130}, {200, 201}})}) {
    s.begin_segment();
    s.storage().insert(s.storage().end(), list.begin(), list.end());
  }
  IntervalList out;
  EXPECT_EQ(s.union_length(&out), 20u + 30u + 1u);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[1].start, 100u);
  EXPECT_EQ(out[1].end, 130u);
  s.clear();
  EXPECT_TRUE(s.empty());
}

TEST(SummaryIntervals, WindowedLengthCountsOnlyTimeInsideTheWindow) {
  const IntervalList window = merged({{100, 200}, {300, 400}});
  profkit::WindowedLength w(&window);
  w.add(0, 50);     // before it
  w.add(150, 350);  // across the gap: 50 + 50
  w.add(380, 390);  // the cursor stays on [300, 400) for it
  w.add(390, 390);  // empty
  w.add(500, 600);  // after it
  EXPECT_EQ(w.length(), 110u);
  w.add(90, 110);  // back in time: counted all the same
  EXPECT_EQ(w.length(), 120u);
  profkit::WindowedLength everything;
  everything.add(0, 50);
  EXPECT_EQ(everything.length(), 50u);
  // Fed by a merger and by a k-way union.
  profkit::WindowedLength by_merger(&window);
  IntervalMerger m(nullptr, &by_merger);
  m.add(50, 150);
  m.add(120, 320);
  m.flush();
  EXPECT_EQ(m.length(), 270u);
  EXPECT_EQ(by_merger.length(), 120u);
  SegmentedIntervals s;
  s.begin_segment();
  s.storage() = merged({{0, 150}});
  s.begin_segment();
  s.storage().push_back({350, 500});
  profkit::WindowedLength by_union(&window);
  EXPECT_EQ(s.union_length(nullptr, &by_union), 300u);
  EXPECT_EQ(by_union.length(), 100u);
}

TEST(SummaryKernelNames, DropTemplatesParametersAndReturnType) {
  using profkit::short_kernel_name;
  EXPECT_EQ(short_kernel_name("void gemm<float, 128>(float*, ...)"), "gemm");
  EXPECT_EQ(short_kernel_name("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
                              "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, "
                              "at::detail::Array<char*, 1>)"),
            "at::native::vectorized_elementwise_kernel");
  EXPECT_EQ(short_kernel_name("void (anonymous namespace)::softmax_warp<float>(float*, int)"),
            "{anonymous}::softmax_warp");
  EXPECT_EQ(short_kernel_name("ampere_sgemm_128x64_nn"), "ampere_sgemm_128x64_nn");
  EXPECT_EQ(short_kernel_name("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"),
            "ncclKernel_AllReduce_RING_LL_Sum_float");
  EXPECT_EQ(short_kernel_name("  kernel()  "), "kernel");
  // Not a signature: kept as recorded.
  EXPECT_EQ(short_kernel_name("weird<name"), "weird<name");
  EXPECT_EQ(short_kernel_name("operator<<(int)"), "operator<<(int)");
  EXPECT_EQ(short_kernel_name(""), "");
}

TEST(SummaryKernelNames, EqualShortNamesShareAnId) {
  profkit::StringTable strings;
  strings.add_copy("");
  const uint32_t a = strings.add_copy("void k<1>(int)");
  const uint32_t b = strings.add_copy("void k<2>(float)");
  const uint32_t copy = strings.add_copy("Memcpy HtoD");
  profkit::DeviceNames names(strings);
  pk_device_event e{};
  e.type = PK_EVENT_KERNEL;
  e.name = a;
  const uint32_t ka = names.id_of(e);
  e.name = b;
  EXPECT_EQ(names.id_of(e), ka);
  EXPECT_EQ(names.text(ka), "k");
  e.name = copy;
  e.type = PK_EVENT_MEMCPY;  // memcpy names are kept whole
  EXPECT_EQ(names.text(names.id_of(e)), "Memcpy HtoD");
  e.name = 999;  // out of range: an empty name, no crash
  EXPECT_EQ(names.text(names.id_of(e)), "");
}

}  // namespace
