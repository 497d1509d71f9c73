// Operator Summary: inclusive CPU time, GPU time of launched work, op_detail
// nesting with ratios to the parent row, thread_sep, every sort key, the row
// limit, and calls counted as torch.profiler counts them (a same-named only
// child folded into its parent).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "summary_builder.h"

namespace {

using profkit::SortKey;
using profkit::SummaryOptions;
using profkit::SummaryView;
using profkit_test::TraceBuilder;

// linear [0,1000)
//   prep (inner)       [10,100)
//   matmul             [100,800)
//     matmul_impl (inner) [110,700)
//       launch -> gemm kernel      300 ns
//     launch -> add kernel          40 ns (directly in matmul)
//   launch -> Memcpy HtoD          50 ns (directly in linear)
std::unique_ptr<profkit::Result> nested_operators() {
  TraceBuilder b;
  b.step(1, 0, 0, 2000);
  b.event(1, "linear", PK_EVENT_OPERATOR, 0, 1000);
  b.event(1, "prep", PK_EVENT_OPERATOR_INNER, 10, 100);
  b.event(1, "matmul", PK_EVENT_OPERATOR, 100, 800);
  b.event(1, "matmul_impl", PK_EVENT_OPERATOR_INNER, 110, 700);
  b.launch(1, 120, 130, 1);
  b.kernel("void gemm<float, 64>(float const*, float*)", 200, 500, 1);
  b.launch(1, 710, 720, 2);
  b.kernel("void add<float>(float*)", 720, 760, 2);
  b.launch(1, 850, 860, 3, "cudaMemcpyAsync");
  b.device("Memcpy HtoD", PK_EVENT_MEMCPY, 900, 950, 3);
  return b.build();
}

struct Expected {
  std::string label;
  uint32_t level;
};

TEST(SummaryOperator, DetailNestsInnerEventsAndGpuWorkUnderTheirOperator) {
  auto r = nested_operators();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOperator);
  const std::vector<Expected> expected = {
      {"linear", 0},      {"matmul", 1}, {"gemm", 2},        {"add", 2},  {"prep", 1},
      {"Memcpy HtoD", 1}, {"matmul", 0}, {"matmul_impl", 1}, {"gemm", 2}, {"add", 1},
  };
  ASSERT_EQ(t.rows.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(t.rows[i].label, expected[i].label) << "row " << i;
    EXPECT_EQ(t.rows[i].level, expected[i].level) << "row " << i;
  }
  EXPECT_TRUE(t.nested);
  auto at = [&](size_t row, const std::string& column) {
    return t.rows[row].values[static_cast<size_t>(t.find_column(column) - 1)];
  };
  // linear: ratios to total_time (2000).
  EXPECT_EQ(at(0, "CPU Total"), 1000);
  EXPECT_EQ(at(0, "GPU Total"), 390);
  EXPECT_DOUBLE_EQ(at(0, "CPU Ratio(%)"), 50.0);
  EXPECT_DOUBLE_EQ(at(0, "GPU Ratio(%)"), 19.5);
  // matmul under linear: ratios to linear's 1000 CPU / 390 GPU.
  EXPECT_EQ(at(1, "CPU Total"), 700);
  EXPECT_DOUBLE_EQ(at(1, "CPU Ratio(%)"), 70.0);
  EXPECT_EQ(at(1, "GPU Total"), 340);
  EXPECT_DOUBLE_EQ(at(1, "GPU Ratio(%)"), 340.0 * 100 / 390);
  // Kernels under linear > matmul: ratios to that row's 340.
  EXPECT_EQ(at(2, "GPU Total"), 300);
  EXPECT_EQ(at(2, "Calls"), 1);
  EXPECT_TRUE(std::isnan(at(2, "CPU Total")));
  EXPECT_DOUBLE_EQ(at(2, "GPU Ratio(%)"), 300.0 * 100 / 340);
  EXPECT_DOUBLE_EQ(at(3, "GPU Ratio(%)"), 40.0 * 100 / 340);
  // prep: CPU 90 of 1000, no GPU work.
  EXPECT_DOUBLE_EQ(at(4, "CPU Ratio(%)"), 9.0);
  EXPECT_EQ(at(4, "GPU Total"), 0);
  EXPECT_DOUBLE_EQ(at(4, "GPU Ratio(%)"), 0.0);
  // The memcpy linear launched itself.
  EXPECT_DOUBLE_EQ(at(5, "GPU Ratio(%)"), 50.0 * 100 / 390);
  // matmul as an operator of its own.
  EXPECT_EQ(at(6, "CPU Total"), 700);
  EXPECT_DOUBLE_EQ(at(6, "CPU Ratio(%)"), 35.0);
  EXPECT_DOUBLE_EQ(at(7, "CPU Ratio(%)"), 590.0 * 100 / 700);
  EXPECT_DOUBLE_EQ(at(7, "GPU Ratio(%)"), 300.0 * 100 / 340);
  EXPECT_DOUBLE_EQ(at(8, "GPU Ratio(%)"), 100.0);
  EXPECT_DOUBLE_EQ(at(9, "GPU Ratio(%)"), 40.0 * 100 / 340);
}

TEST(SummaryOperator, WithoutDetailOnlyOperators) {
  auto r = nested_operators();
  SummaryOptions o;
  o.op_detail = false;
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOperator, o);
  EXPECT_EQ(profkit_test::labels(t, 0), (std::vector<std::string>{"linear", "matmul"}));
  EXPECT_EQ(t.rows.size(), 2u);
  EXPECT_FALSE(t.nested);
  EXPECT_EQ(profkit_test::value(t, "matmul", "GPU Total"), 340);
}

// Three operators whose every figure orders them differently.
//        CPU total avg max min     GPU total avg max min
//   A          110  55 100  10           50  25  50   0
//   B          120  60  60  60           20  10  10  10
//   C           90  90  90  90           30  30  30  30
std::unique_ptr<profkit::Result> three_operators() {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "A", PK_EVENT_OPERATOR, 0, 100);
  b.launch(1, 10, 20, 1);
  b.kernel("ka", 20, 70, 1);
  b.event(1, "A", PK_EVENT_OPERATOR, 200, 210);
  b.event(1, "B", PK_EVENT_OPERATOR, 300, 360);
  b.launch(1, 310, 320, 2);
  b.kernel("kb", 320, 330, 2);
  b.event(1, "B", PK_EVENT_OPERATOR, 400, 460);
  b.launch(1, 410, 420, 3);
  b.kernel("kb", 420, 430, 3);
  b.event(1, "C", PK_EVENT_OPERATOR, 500, 590);
  b.launch(1, 510, 520, 4);
  b.kernel("kc", 520, 550, 4);
  return b.build();
}

TEST(SummaryOperator, EverySortKeyOrdersRowsMinKeysAscending) {
  auto r = three_operators();
  const std::vector<std::pair<SortKey, std::vector<std::string>>> cases = {
      {SortKey::kCpuTotal, {"B", "A", "C"}}, {SortKey::kCpuAvg, {"C", "B", "A"}},   {SortKey::kCpuMax, {"A", "C", "B"}},
      {SortKey::kCpuMin, {"A", "B", "C"}},   {SortKey::kGpuTotal, {"A", "C", "B"}}, {SortKey::kGpuAvg, {"C", "A", "B"}},
      {SortKey::kGpuMax, {"A", "C", "B"}},   {SortKey::kGpuMin, {"A", "B", "C"}},
  };
  for (const auto& [key, order] : cases) {
    SummaryOptions o;
    o.sorted_by = key;
    o.op_detail = false;
    const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOperator, o);
    EXPECT_EQ(profkit_test::labels(t, 0), order) << "sorted_by " << profkit::sort_key_name(key);
  }
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOperator);
  EXPECT_EQ(profkit_test::value(t, "A", "CPU Avg"), 55);
  EXPECT_EQ(profkit_test::value(t, "A", "CPU Min"), 10);
  EXPECT_EQ(profkit_test::value(t, "A", "GPU Avg"), 25);
  EXPECT_EQ(profkit_test::value(t, "A", "GPU Min"), 0);
  EXPECT_EQ(profkit_test::value(t, "B", "Calls"), 2);
}

TEST(SummaryOperator, ThreadSepSplitsRowsByThread) {
  TraceBuilder b;
  b.step(11, 0, 0, 1000);
  b.event(11, "conv", PK_EVENT_OPERATOR, 0, 100).event(11, "conv", PK_EVENT_OPERATOR, 200, 300);
  b.event(12, "conv", PK_EVENT_OPERATOR, 50, 80);
  b.event(12, "relu", PK_EVENT_OPERATOR, 100, 500);
  auto r = b.build();
  const profkit::SummaryTable merged = profkit_test::table_of(*r, SummaryView::kOperator);
  EXPECT_EQ(merged.find_column("Thread"), -1);
  EXPECT_EQ(profkit_test::value(merged, "conv", "Calls"), 3);

  SummaryOptions o;
  o.thread_sep = true;
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOperator, o);
  ASSERT_EQ(t.rows.size(), 3u);
  const size_t thread = static_cast<size_t>(t.find_column("Thread") - 1);
  const size_t calls = static_cast<size_t>(t.find_column("Calls") - 1);
  // Thread 11 first, then thread 12 sorted by CPU total (relu before conv).
  EXPECT_EQ(t.rows[0].label, "conv");
  EXPECT_EQ(t.rows[0].values[thread], 11);
  EXPECT_EQ(t.rows[0].values[calls], 2);
  EXPECT_EQ(t.rows[1].label, "relu");
  EXPECT_EQ(t.rows[1].values[thread], 12);
  EXPECT_EQ(t.rows[2].label, "conv");
  EXPECT_EQ(t.rows[2].values[thread], 12);
  EXPECT_EQ(t.rows[2].values[calls], 1);
}

TEST(SummaryOperator, RowLimitKeepsTheTopRowsAndSaysHowManyWereCut) {
  auto r = three_operators();
  SummaryOptions o;
  o.row_limit = 2;
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOperator, o);
  EXPECT_EQ(profkit_test::labels(t, 0), (std::vector<std::string>{"B", "A"}));
  ASSERT_FALSE(t.notes.empty());
  EXPECT_EQ(t.notes[0], "1 more operators not shown (row_limit=2)");
}

TEST(SummaryOperator, NoOperatorsSaysWhy) {
  TraceBuilder b;
  b.event(1, "inner alone", PK_EVENT_OPERATOR_INNER, 0, 10);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOperator);
  EXPECT_TRUE(t.rows.empty());
  EXPECT_EQ(t.empty_reason, "no Operator events recorded");
}

TEST(SummaryOperator, RecursiveOperatorsCountEachCall) {
  TraceBuilder b(0, 100);
  b.event(1, "f", PK_EVENT_OPERATOR, 0, 100);
  b.event(1, "f", PK_EVENT_OPERATOR, 10, 60);
  b.event(1, "g", PK_EVENT_OPERATOR, 70, 80);  // not f's only child: f in f is a call of its own
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOperator);
  EXPECT_EQ(profkit_test::value(t, "f", "Calls", 0), 2);
  EXPECT_EQ(profkit_test::value(t, "f", "CPU Total", 0), 150);
  EXPECT_EQ(profkit_test::value(t, "f", "Calls", 1), 1);  // f inside f
  EXPECT_DOUBLE_EQ(profkit_test::value(t, "f", "CPU Ratio(%)", 1), 50.0 * 100 / 150);
}

}  // namespace

namespace {

// Step 1 holds operator "op" (10-400 ns), which launches kernel "k"
// (correlation 1, 100-300 ns on the GPU).
TraceBuilder operator_launching_one_kernel() {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "op", PK_EVENT_OPERATOR, 10, 400);
  b.launch(1, 20, 30, 1);
  b.kernel("k", 100, 300, 1);
  return b;
}

// A kernel launched through the driver API where only runtime calls were
// recorded has no launch: the tables that leave it out of operators' (or the
// Model table's steps' and phases') GPU time say so and how to record those
// launches.
TEST(SummaryOperator, KernelsWithoutACapturedLaunchAreNamedUnderTheTables) {
  TraceBuilder b = operator_launching_one_kernel();
  b.kernel("cutlass_gemm", 310, 320, 2);  // correlation 2: no launch recorded
  b.kernel("cutlass_gemm", 330, 340, 3);
  auto r = b.build();
  ASSERT_EQ(r->info.unattached_device_records, 2u);
  for (SummaryView view : {SummaryView::kOperator, SummaryView::kKernel, SummaryView::kModel}) {
    const profkit::SummaryTable t = profkit_test::table_of(*r, view);
    const char* owners = view == SummaryView::kModel ? "no step's or phase's GPU time" : "no operator's GPU time";
    bool says_so = false;
    for (const std::string& note : t.notes) {
      says_so |= note.find("2 GPU records have no captured launch") != std::string::npos &&
                 note.find(owners) != std::string::npos && note.find("PROFKIT_CUPTI_DRIVER=0") != std::string::npos;
    }
    EXPECT_TRUE(says_so) << t.title;
  }
  EXPECT_EQ(profkit_test::value(profkit_test::table_of(*r, SummaryView::kOperator), "op", "GPU Total", 0), 200);

  for (const std::string& note :
       profkit_test::table_of(*operator_launching_one_kernel().build(), SummaryView::kOperator).notes) {
    EXPECT_EQ(note.find("no captured launch"), std::string::npos) << note;
  }
}

// A GPU record CUPTI gave no timestamps for counts as a call of its row
// under the operator, as in the Kernel table, but not as a 0 in its times
// (which would halve Avg and make Min 0 where the Kernel table says 200).
TEST(SummaryOperator, GpuRecordsWithoutTimingAreCallsNotZeroTimesUnderOperators) {
  TraceBuilder b = operator_launching_one_kernel();
  b.launch(1, 40, 50, 2);
  b.device("k", PK_EVENT_KERNEL, 50, 50, 2, 0, 7, PK_DEVICE_EVENT_NO_TIMING);
  b.launch(1, 60, 70, 3, "cudaMemcpyAsync");
  b.device("Memcpy HtoD", PK_EVENT_MEMCPY, 70, 70, 3, 0, 7, PK_DEVICE_EVENT_NO_TIMING);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOperator);
  const profkit::SummaryTable kernels = profkit_test::table_of(*r, SummaryView::kKernel);
  EXPECT_EQ(profkit_test::value(t, "k", "Calls", 1), 2);
  EXPECT_EQ(profkit_test::value(t, "k", "GPU Total", 1), 200);
  EXPECT_EQ(profkit_test::value(t, "k", "GPU Avg", 1), profkit_test::value(kernels, "k", "GPU Avg"));
  EXPECT_EQ(profkit_test::value(t, "k", "GPU Min", 1), 200);
  // Nothing timed: no times at all, not zeros.
  EXPECT_EQ(profkit_test::value(t, "Memcpy HtoD", "Calls", 1), 1);
  EXPECT_TRUE(std::isnan(profkit_test::value(t, "Memcpy HtoD", "GPU Min", 1)));
  EXPECT_EQ(profkit_test::value(t, "op", "GPU Total", 0), 200);
  bool says_so = false;
  for (const std::string& note : t.notes) says_so |= note.find("had no timestamps") != std::string::npos;
  EXPECT_TRUE(says_so);
}

}  // namespace

namespace {

// conv2d [5,500) with 1000 FLOPs, nesting convolution [10,400) (no count);
// a second conv2d [600,700) with 24; relu [800,900), with only a string
// argument named "flops" (not a count).
std::unique_ptr<profkit::Result> operators_with_flops() {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "aten::conv2d", PK_EVENT_OPERATOR, 5, 500).arg(1, 5, "flops", int64_t{1000});
  b.event(1, "aten::convolution", PK_EVENT_OPERATOR, 10, 400);
  b.event(1, "aten::conv2d", PK_EVENT_OPERATOR, 600, 700).arg(1, 600, "flops", int64_t{24});
  b.event(1, "aten::relu", PK_EVENT_OPERATOR, 800, 900).arg(1, 800, "flops", std::string("many"));
  return b.build();
}

}  // namespace

TEST(SummaryOperator, FlopsArgumentsAddUpInAFlopsColumn) {
  auto r = operators_with_flops();
  for (const bool detail : {false, true}) {
    SummaryOptions options;
    options.op_detail = detail;
    const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOperator, options);
    const int column = t.find_column("FLOPs");
    ASSERT_GT(column, 0);
    auto flops_of = [&](const std::string& label, uint32_t level) {
      for (const profkit::SummaryRow& row : t.rows) {
        if (row.label == label && row.level == level) return row.values[static_cast<size_t>(column - 1)];
      }
      ADD_FAILURE() << "no row " << label << " at level " << level;
      return 0.0;
    };
    EXPECT_EQ(flops_of("aten::conv2d", 0), 1024.0);  // both calls
    EXPECT_TRUE(std::isnan(flops_of("aten::convolution", 0)));
    EXPECT_TRUE(std::isnan(flops_of("aten::relu", 0)));  // a string is no count
    if (detail) {
      EXPECT_TRUE(std::isnan(flops_of("aten::convolution", 1)));
    }
    bool noted = false;
    for (const std::string& note : t.notes) noted = noted || note.rfind("FLOPs = ", 0) == 0;
    EXPECT_TRUE(noted);
  }
}

TEST(SummaryOperator, NoFlopsColumnWithoutFlopsArguments) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "aten::relu", PK_EVENT_OPERATOR, 800, 900).arg(1, 800, "flops", std::string("many"));
  b.event(1, "aten::mm", PK_EVENT_OPERATOR, 100, 200).arg(1, 100, "bytes", int64_t{7});
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOperator);
  EXPECT_EQ(t.find_column("FLOPs"), -1);
  for (const std::string& note : t.notes) EXPECT_EQ(note.find("FLOPs"), std::string::npos) << note;
}

namespace {

constexpr const char* kShapesA = "[[2, 3], [3, 4]]";
constexpr const char* kShapesB = "[[8, 3], [3, 4]]";

// Thread 1: aten::mm with shapes A twice (one with its own copy of the text),
// with shapes B once, without shapes once (each mm nests an aten::dot, no
// shapes), and aten::relu with shapes A. Thread 2: aten::mm with shapes A.
std::unique_ptr<profkit::Result> operators_with_shapes() {
  TraceBuilder b;
  b.step(1, 0, 0, 2000);
  b.event(1, "aten::mm", PK_EVENT_OPERATOR, 1, 101).arg(1, 1, "input_shapes", kShapesA);  // not at the step's start
  b.event(1, "aten::dot", PK_EVENT_OPERATOR, 10, 20);
  b.event(1, "aten::mm", PK_EVENT_OPERATOR, 200, 250).arg_own_copy(1, 200, "input_shapes", kShapesA);
  b.event(1, "aten::dot", PK_EVENT_OPERATOR, 210, 220);
  b.event(1, "aten::mm", PK_EVENT_OPERATOR, 300, 700).arg(1, 300, "input_shapes", kShapesB);
  b.event(1, "aten::dot", PK_EVENT_OPERATOR, 310, 320);
  b.event(1, "aten::mm", PK_EVENT_OPERATOR, 800, 810);
  b.event(1, "aten::dot", PK_EVENT_OPERATOR, 801, 802);
  b.event(1, "aten::relu", PK_EVENT_OPERATOR, 900, 930).arg(1, 900, "input_shapes", kShapesA);
  b.event(2, "aten::mm", PK_EVENT_OPERATOR, 1000, 1020).arg(2, 1000, "input_shapes", kShapesA);
  return b.build();
}

using ShapedRow = profkit_test::TextRow;  // text: the input shapes

std::vector<ShapedRow> shaped_rows(const profkit::SummaryTable& t) {
  return profkit_test::rows_with_text(t, "Input Shapes");
}

}  // namespace

TEST(SummaryOperator, GroupByInputShapeGivesARowPerOperatorAndShapes) {
  auto r = operators_with_shapes();
  SummaryOptions options;
  options.op_detail = false;
  options.group_by_input_shape = true;
  const std::vector<ShapedRow> rows = shaped_rows(profkit_test::table_of(*r, SummaryView::kOperator, options));
  // Sorted by CPU total; the same text under two string ids is one row.
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0].label + rows[0].text, std::string("aten::mm") + kShapesB);
  EXPECT_EQ(rows[0].calls, 1);
  EXPECT_EQ(rows[0].cpu_total, 400);
  EXPECT_EQ(rows[1].label + rows[1].text, std::string("aten::mm") + kShapesA);
  EXPECT_EQ(rows[1].calls, 3);  // both threads, thread_sep off
  EXPECT_EQ(rows[1].cpu_total, 170);
  EXPECT_EQ(rows[2].label + rows[2].text, std::string("aten::dot"));  // none recorded: one row, no text
  EXPECT_EQ(rows[2].calls, 4);
  EXPECT_EQ(rows[3].label + rows[3].text, std::string("aten::relu") + kShapesA);
  EXPECT_EQ(rows[4].label + rows[4].text, std::string("aten::mm"));
  EXPECT_EQ(rows[4].calls, 1);
  EXPECT_EQ(rows[4].cpu_total, 10);
}

TEST(SummaryOperator, GroupByInputShapeKeepsNestedRowsUnderEachShapedRow) {
  auto r = operators_with_shapes();
  SummaryOptions options;
  options.group_by_input_shape = true;  // op_detail on
  const std::vector<ShapedRow> rows = shaped_rows(profkit_test::table_of(*r, SummaryView::kOperator, options));
  // Every aten::mm row has the aten::dot calls of its own calls under it
  // (thread 2's mm has none), with no shapes text.
  const std::map<std::string, double> dots_under = {{kShapesA, 2}, {kShapesB, 1}, {"", 1}};
  size_t mm_rows = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].level != 0 || rows[i].label != "aten::mm") continue;
    ++mm_rows;
    ASSERT_LT(i + 1, rows.size());
    EXPECT_EQ(rows[i + 1].label, "aten::dot");
    EXPECT_EQ(rows[i + 1].level, 1u);
    EXPECT_EQ(rows[i + 1].calls, dots_under.at(rows[i].text)) << rows[i].text;
    EXPECT_EQ(rows[i + 1].text, "");
  }
  EXPECT_EQ(mm_rows, 3u);
}

TEST(SummaryOperator, GroupByInputShapeSplitsThreadsWithThreadSep) {
  auto r = operators_with_shapes();
  SummaryOptions options;
  options.op_detail = false;
  options.thread_sep = true;
  options.group_by_input_shape = true;
  const std::vector<ShapedRow> rows = shaped_rows(profkit_test::table_of(*r, SummaryView::kOperator, options));
  size_t mm_a_rows = 0;
  double mm_a_calls = 0;
  for (const ShapedRow& row : rows) {
    if (row.label != "aten::mm" || row.text != kShapesA) continue;
    ++mm_a_rows;
    mm_a_calls += row.calls;
  }
  EXPECT_EQ(mm_a_rows, 2u);  // one per thread
  EXPECT_EQ(mm_a_calls, 3);
}

TEST(SummaryOperator, WithoutGroupByInputShapeOperatorsAreOneRowPerName) {
  auto r = operators_with_shapes();
  SummaryOptions options;
  options.op_detail = false;
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOperator, options);
  EXPECT_EQ(t.find_column("Input Shapes"), -1);
  EXPECT_EQ(profkit_test::value(t, "aten::mm", "Calls"), 5);
  for (const std::string& note : t.notes) EXPECT_EQ(note.find("group_by_input_shape"), std::string::npos) << note;
}

TEST(SummaryOperator, GroupByInputShapeWithoutShapesSaysHowToRecordThem) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "aten::mm", PK_EVENT_OPERATOR, 1, 100);
  b.event(1, "aten::mm", PK_EVENT_OPERATOR, 200, 300).arg(1, 200, "input_shapes", int64_t{7});  // not a string
  auto r = b.build();
  SummaryOptions options;
  options.group_by_input_shape = true;
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOperator, options);
  const std::vector<ShapedRow> rows = shaped_rows(t);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].calls, 2);
  EXPECT_EQ(rows[0].text, "");
  bool noted = false;
  for (const std::string& note : t.notes) noted = noted || note.find("record_shapes=True") != std::string::npos;
  EXPECT_TRUE(noted);
}

namespace {

// outer [10,1010) holds a user range [100,300), an operator inner [400,500)
// (which launches [410,420)) and an instant-like zero-length range; a second
// operator, wide [2000,2500), holds only a 50 ns user range.
std::unique_ptr<profkit::Result> operators_with_children() {
  TraceBuilder b;
  b.step(1, 0, 0, 3000);
  b.event(1, "outer", PK_EVENT_OPERATOR, 10, 1010);
  b.event(1, "my_range", PK_EVENT_USER_DEFINED, 100, 300);
  b.event(1, "inner", PK_EVENT_OPERATOR, 400, 500);
  b.launch(1, 410, 420, 1);
  b.kernel("k", 420, 440, 1);
  b.event(1, "mark", PK_EVENT_USER_DEFINED, 600, 600);
  b.event(1, "wide", PK_EVENT_OPERATOR, 2000, 2500);
  b.event(1, "my_range", PK_EVENT_USER_DEFINED, 2100, 2150);
  return b.build();
}

}  // namespace

TEST(SummaryOperator, SelfTimeLeavesOutEveryNestedEvent) {
  auto r = operators_with_children();
  for (const bool detail : {false, true}) {
    SummaryOptions o;
    o.op_detail = detail;
    const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOperator, o);
    EXPECT_EQ(profkit_test::value(t, "outer", "Self CPU Total", 0), 700);  // 1000 - 200 (range) - 100 (inner)
    EXPECT_EQ(profkit_test::value(t, "inner", "Self CPU Total", 0), 90);   // 100 - 10 (the launch)
    EXPECT_EQ(profkit_test::value(t, "wide", "Self CPU Total", 0), 450);
    EXPECT_NEAR(profkit_test::value(t, "outer", "Self CPU Ratio(%)", 0), 700 * 100.0 / 3000, 1e-9);
    if (detail) {  // nested: the same call's self time, its ratio to the enclosing row's CPU time
      EXPECT_EQ(profkit_test::value(t, "inner", "Self CPU Total", 1), 90);
      EXPECT_NEAR(profkit_test::value(t, "inner", "Self CPU Ratio(%)", 1), 9.0, 1e-9);
      EXPECT_TRUE(std::isnan(profkit_test::value(t, "k", "Self CPU Total", 2)));  // a kernel has no CPU side
    }
  }
}

TEST(SummaryOperator, CpuSelfOrdersBySelfTimeAndOtherTablesByCpuTotal) {
  auto r = operators_with_children();
  SummaryOptions o;
  o.op_detail = false;
  o.sorted_by = SortKey::kCpuSelf;
  EXPECT_EQ(profkit_test::labels(profkit_test::table_of(*r, SummaryView::kOperator, o), 0),
            (std::vector<std::string>{"outer", "wide", "inner"}));
  o.sorted_by = SortKey::kCpuTotal;
  EXPECT_EQ(profkit_test::labels(profkit_test::table_of(*r, SummaryView::kOperator, o), 0),
            (std::vector<std::string>{"outer", "wide", "inner"}));
  // The UserDefined table measures no self time: CPUSelf orders it as CPUTotal.
  for (const SortKey key : {SortKey::kCpuSelf, SortKey::kCpuTotal}) {
    o.sorted_by = key;
    const profkit::SummaryTable udf = profkit_test::table_of(*r, SummaryView::kUserDefined, o);
    EXPECT_EQ(udf.find_column("Self CPU Total"), -1);
    EXPECT_EQ(profkit_test::labels(udf, 0), (std::vector<std::string>{"my_range", "mark"}));
  }
}

TEST(SummaryOperator, CpuSelfCanDisagreeWithCpuTotal) {
  TraceBuilder b;
  b.step(1, 0, 0, 3000);
  b.event(1, "wrapper", PK_EVENT_OPERATOR, 10, 1010);  // total 1000, self 100
  b.event(1, "work", PK_EVENT_OPERATOR, 50, 950);      // total 900, self 900
  b.event(1, "leaf", PK_EVENT_OPERATOR, 1100, 1600);   // total 500, self 500
  auto r = b.build();
  SummaryOptions o;
  o.op_detail = false;
  o.sorted_by = SortKey::kCpuSelf;
  EXPECT_EQ(profkit_test::labels(profkit_test::table_of(*r, SummaryView::kOperator, o), 0),
            (std::vector<std::string>{"work", "leaf", "wrapper"}));
  o.sorted_by = SortKey::kCpuTotal;
  EXPECT_EQ(profkit_test::labels(profkit_test::table_of(*r, SummaryView::kOperator, o), 0),
            (std::vector<std::string>{"wrapper", "work", "leaf"}));
}

namespace {

// The figures of one Operator table row: calls, CPU total, self CPU total.
struct Figures {
  double calls;
  double cpu;
  double self;
  bool operator==(const Figures& o) const { return calls == o.calls && cpu == o.cpu && self == o.self; }
};

std::ostream& operator<<(std::ostream& out, const Figures& f) {
  return out << "{calls " << f.calls << ", cpu " << f.cpu << ", self " << f.self << "}";
}

Figures figures(const profkit::SummaryTable& t, const std::string& label, int level = 0) {
  return {profkit_test::value(t, label, "Calls", level), profkit_test::value(t, label, "CPU Total", level),
          profkit_test::value(t, label, "Self CPU Total", level)};
}

// (label, level) of every row, in order.
std::vector<std::pair<std::string, uint32_t>> outline(const profkit::SummaryTable& t) {
  std::vector<std::pair<std::string, uint32_t>> rows;
  for (const profkit::SummaryRow& row : t.rows) rows.emplace_back(row.label, row.level);
  return rows;
}

}  // namespace

// torch.profiler's tables fold an Operator's only child of the same name
// into it (x.sum() runs aten::sum inside aten::sum): one call, whose self
// time is both events' own.
TEST(SummaryOperator, ASameNamedOnlyChildIsPartOfItsParentsCall) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "aten::sum", PK_EVENT_OPERATOR, 100, 200);  // self 30
  b.event(1, "aten::sum", PK_EVENT_OPERATOR, 110, 180);  // self 60
  b.event(1, "aten::fill_", PK_EVENT_OPERATOR, 120, 130);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOperator);
  EXPECT_EQ(figures(t, "aten::sum"), (Figures{1, 100, 90}));
  EXPECT_EQ(outline(t),
            (std::vector<std::pair<std::string, uint32_t>>{{"aten::sum", 0}, {"aten::fill_", 1}, {"aten::fill_", 0}}));
  EXPECT_EQ(figures(t, "aten::fill_", 1), (Figures{1, 10, 10}));
  // Only the Operator table: the timeline and the other tables keep both events.
  EXPECT_EQ(r->host_events.size(), 4u);
}

TEST(SummaryOperator, ASameNamedChildWithASiblingIsACallOfItsOwn) {
  for (const pk_event_type sibling : {PK_EVENT_OPERATOR, PK_EVENT_USER_DEFINED}) {
    TraceBuilder b;
    b.step(1, 0, 0, 1000);
    b.event(1, "aten::sum", PK_EVENT_OPERATOR, 100, 200);
    b.event(1, "aten::sum", PK_EVENT_OPERATOR, 110, 180);
    b.event(1, "other", sibling, 185, 195);
    auto r = b.build();
    const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOperator);
    EXPECT_EQ(figures(t, "aten::sum"), (Figures{2, 170, 90})) << "sibling type " << sibling;
    EXPECT_EQ(figures(t, "aten::sum", 1), (Figures{1, 70, 70})) << "sibling type " << sibling;
  }
}

TEST(SummaryOperator, AChainOfSameNamedOnlyChildrenIsOneCall) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "aten::div", PK_EVENT_OPERATOR, 0, 300);
  b.event(1, "aten::div", PK_EVENT_OPERATOR, 10, 290);
  b.event(1, "aten::div", PK_EVENT_OPERATOR, 20, 280);
  b.event(1, "aten::copy_", PK_EVENT_OPERATOR, 30, 40);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOperator);
  EXPECT_EQ(figures(t, "aten::div"), (Figures{1, 300, 290}));
  EXPECT_EQ(outline(t),
            (std::vector<std::pair<std::string, uint32_t>>{{"aten::div", 0}, {"aten::copy_", 1}, {"aten::copy_", 0}}));
}

TEST(SummaryOperator, OnlyAnOperatorFoldsAndOnlyIntoAnOperator) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "f", PK_EVENT_USER_DEFINED, 0, 100);
  b.event(1, "f", PK_EVENT_OPERATOR, 10, 50);
  b.event(1, "g", PK_EVENT_OPERATOR_INNER, 200, 300);
  b.event(1, "g", PK_EVENT_OPERATOR, 210, 250);
  b.event(1, "h", PK_EVENT_OPERATOR, 400, 500);
  b.event(1, "h", PK_EVENT_OPERATOR_INNER, 410, 450);
  auto r = b.build();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOperator);
  EXPECT_EQ(figures(t, "f"), (Figures{1, 40, 40}));
  EXPECT_EQ(figures(t, "g"), (Figures{1, 40, 40}));
  EXPECT_EQ(figures(t, "h"), (Figures{1, 100, 60}));
  EXPECT_EQ(figures(t, "h", 1), (Figures{1, 40, 40}));  // the inner event stays a row under h
}

// linear [0,1000)
//   aten::sum [100,600)
//     aten::sum [110,590) (folded)
//       sum_impl (inner) [120,300)
//         launch -> k_inner 100 ns
//       launch -> k_direct 40 ns
std::unique_ptr<profkit::Result> folded_operator_with_work_inside() {
  TraceBuilder b;
  b.step(1, 0, 0, 2000);
  b.event(1, "linear", PK_EVENT_OPERATOR, 0, 1000);
  b.event(1, "aten::sum", PK_EVENT_OPERATOR, 100, 600).arg(1, 100, "flops", int64_t{8});
  b.event(1, "aten::sum", PK_EVENT_OPERATOR, 110, 590).arg(1, 110, "flops", int64_t{5});
  b.event(1, "sum_impl", PK_EVENT_OPERATOR_INNER, 120, 300);
  b.launch(1, 130, 140, 1);
  b.kernel("k_inner", 200, 300, 1);
  b.launch(1, 400, 410, 2);
  b.kernel("k_direct", 500, 540, 2);
  return b.build();
}

TEST(SummaryOperator, WhatHappensInAFoldedChildHappensInItsParent) {
  auto r = folded_operator_with_work_inside();
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOperator);
  EXPECT_EQ(outline(t), (std::vector<std::pair<std::string, uint32_t>>{{"linear", 0},
                                                                       {"aten::sum", 1},
                                                                       {"k_inner", 2},
                                                                       {"k_direct", 2},
                                                                       {"aten::sum", 0},
                                                                       {"sum_impl", 1},
                                                                       {"k_inner", 2},
                                                                       {"k_direct", 1}}));
  // aten::sum: 500 ns, of which its own 20 and the folded child's 290
  // (480 - 180 in sum_impl - 10 in the launch).
  EXPECT_EQ(figures(t, "aten::sum", 0), (Figures{1, 500, 310}));
  EXPECT_EQ(figures(t, "aten::sum", 1), (Figures{1, 500, 310}));
  EXPECT_EQ(figures(t, "sum_impl", 1), (Figures{1, 180, 170}));
  EXPECT_EQ(profkit_test::value(t, "aten::sum", "GPU Total", 0), 140);
  EXPECT_EQ(profkit_test::value(t, "linear", "GPU Total", 0), 140);
  EXPECT_EQ(profkit_test::value(t, "k_direct", "Calls", 1), 1);
  EXPECT_EQ(profkit_test::value(t, "k_direct", "GPU Total", 1), 40);
  // The folded child's FLOPs are not a call's.
  EXPECT_EQ(profkit_test::value(t, "aten::sum", "FLOPs", 0), 8);

  SummaryOptions o;
  o.op_detail = false;
  const profkit::SummaryTable flat = profkit_test::table_of(*r, SummaryView::kOperator, o);
  EXPECT_EQ(outline(flat), (std::vector<std::pair<std::string, uint32_t>>{{"linear", 0}, {"aten::sum", 0}}));
  EXPECT_EQ(figures(flat, "aten::sum"), (Figures{1, 500, 310}));
  EXPECT_EQ(profkit_test::value(flat, "aten::sum", "GPU Total", 0), 140);
}

TEST(SummaryOperator, GroupByInputShapeHasNoRowForAFoldedChildsShapes) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "aten::sum", PK_EVENT_OPERATOR, 100, 200).arg(1, 100, "input_shapes", "[[2, 4], []]");
  b.event(1, "aten::sum", PK_EVENT_OPERATOR, 110, 180).arg(1, 110, "input_shapes", "[[2, 4], [], [], []]");
  auto r = b.build();
  for (const bool detail : {false, true}) {
    SummaryOptions options;
    options.op_detail = detail;
    options.group_by_input_shape = true;
    const std::vector<ShapedRow> rows = shaped_rows(profkit_test::table_of(*r, SummaryView::kOperator, options));
    ASSERT_EQ(rows.size(), 1u) << "op_detail " << detail;
    EXPECT_EQ(rows[0].label + rows[0].text, "aten::sum[[2, 4], []]");
    EXPECT_EQ(rows[0].calls, 1);
    EXPECT_EQ(rows[0].cpu_total, 100);
  }
}

// Depth saturates at 255: events deeper read as siblings there, so nothing
// at that depth folds (whose only child it is cannot be told), and the
// nesting above it folds as usual.
TEST(SummaryOperator, ChainsPastTheDepthLimitFoldAboveIt) {
  for (const uint64_t length : {256u, 300u}) {
    TraceBuilder b(0, 1000);
    for (uint64_t d = 0; d < length; ++d) b.event(1, "f", PK_EVENT_OPERATOR, d, 1000 - d);
    auto r = b.build();
    ASSERT_EQ(r->host_events[length - 1].depth, 255);
    SummaryOptions o;
    o.op_detail = false;
    const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOperator, o);
    // The outermost call, and each event at depth 255.
    EXPECT_EQ(profkit_test::value(t, "f", "Calls"), 1 + (length - 255)) << length << " nested";
  }
}
