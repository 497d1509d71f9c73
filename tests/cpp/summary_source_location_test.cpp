// Operator Summary with group_by_stack_n: rows per operator and the innermost
// N Python function frames (PythonOp events) around its calls.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/error.h"
#include "summary/summary_options.h"
#include "summary_builder.h"

namespace {

using profkit::SummaryOptions;
using profkit::SummaryView;
using profkit_test::TraceBuilder;

constexpr const char* kStep = "/home/u/train.py(10): step";
constexpr const char* kForward = "/home/u/model.py(5): Model.forward";
constexpr const char* kLinear = "<built-in function torch._C._nn.linear>";

// Thread 1, as with_stack records a training step:
//   step                         [10, 2000)
//     Model.forward              [20, 1000)
//       <built-in linear>        [30, 500)
//         aten::linear           [40, 490)
//           aten::addmm          [50, 400)
//       aten::relu               [600, 700)
//     Model.forward              [1100, 1900)
//       <built-in linear>        [1110, 1500)
//         aten::linear           [1120, 1490)
//   aten::linear                 [2100, 2150)   (no Python frame around it)
// Thread 2: Model.forward [100, 300) > aten::linear [110, 290).
std::unique_ptr<profkit::Result> step_with_frames() {
  TraceBuilder b;
  b.step(1, 0, 0, 3000);
  b.event(1, kStep, PK_EVENT_PYTHON_OP, 10, 2000);
  b.event(1, kForward, PK_EVENT_PYTHON_OP, 20, 1000);
  b.event(1, kLinear, PK_EVENT_PYTHON_OP, 30, 500);
  b.event(1, "aten::linear", PK_EVENT_OPERATOR, 40, 490);
  b.event(1, "aten::addmm", PK_EVENT_OPERATOR, 50, 400);
  b.event(1, "aten::relu", PK_EVENT_OPERATOR, 600, 700);
  b.event(1, kForward, PK_EVENT_PYTHON_OP, 1100, 1900);
  b.event(1, kLinear, PK_EVENT_PYTHON_OP, 1110, 1500);
  b.event(1, "aten::linear", PK_EVENT_OPERATOR, 1120, 1490);
  b.event(1, "aten::linear", PK_EVENT_OPERATOR, 2100, 2150);
  b.event(2, kForward, PK_EVENT_PYTHON_OP, 100, 300);
  b.event(2, "aten::linear", PK_EVENT_OPERATOR, 110, 290);
  return b.build();
}

using LocatedRow = profkit_test::TextRow;  // text: the source location

std::vector<LocatedRow> located_rows(const profkit::SummaryTable& t) {
  return profkit_test::rows_with_text(t, "Source Location");
}

bool has_note(const profkit::SummaryTable& t, const std::string& text) {
  for (const std::string& note : t.notes) {
    if (note.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(SummarySourceLocation, OneFrameGroupsByTheInnermostPythonFunctionLeavingOutBuiltins) {
  auto r = step_with_frames();
  SummaryOptions options;
  options.op_detail = false;
  options.group_by_stack_n = 1;
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOperator, options);
  const std::vector<LocatedRow> rows = located_rows(t);
  ASSERT_EQ(rows.size(), 4u);
  // By CPU total: aten::linear under forward on both threads (450 + 370 + 180),
  // aten::addmm (its innermost Python frame is forward too: operators are not
  // frames), aten::relu, then the call with no frame around it.
  EXPECT_EQ(rows[0].label, "aten::linear");
  EXPECT_EQ(rows[0].text, "model.py(5): Model.forward");
  EXPECT_EQ(rows[0].calls, 3);
  EXPECT_EQ(rows[0].cpu_total, 1000);
  EXPECT_EQ(rows[1].label, "aten::addmm");
  EXPECT_EQ(rows[1].text, "model.py(5): Model.forward");
  EXPECT_EQ(rows[2].label, "aten::relu");
  EXPECT_EQ(rows[2].text, "model.py(5): Model.forward");
  EXPECT_EQ(rows[3].label, "aten::linear");
  EXPECT_EQ(rows[3].text, "");
  EXPECT_EQ(rows[3].calls, 1);
  EXPECT_TRUE(has_note(t, "group_by_stack_n=1"));
}

TEST(SummarySourceLocation, MoreFramesSplitByTheCallersToo) {
  auto r = step_with_frames();
  SummaryOptions options;
  options.op_detail = false;
  options.group_by_stack_n = 2;
  const std::vector<LocatedRow> rows = located_rows(profkit_test::table_of(*r, SummaryView::kOperator, options));
  std::vector<std::string> linear;
  for (const LocatedRow& row : rows) {
    if (row.label == "aten::linear") linear.push_back(row.text + " x" + std::to_string(int(row.calls)));
  }
  // Thread 2's forward has no caller recorded: a stack of one frame.
  EXPECT_EQ(linear, (std::vector<std::string>{"model.py(5): Model.forward <- train.py(10): step x2",
                                              "model.py(5): Model.forward x1", " x1"}));
}

TEST(SummarySourceLocation, ThreadSepAndNestedRows) {
  auto r = step_with_frames();
  SummaryOptions options;
  options.thread_sep = true;
  options.group_by_stack_n = 1;  // op_detail on
  const std::vector<LocatedRow> rows = located_rows(profkit_test::table_of(*r, SummaryView::kOperator, options));
  size_t located_linear = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].level != 0 || rows[i].label != "aten::linear" || rows[i].text.empty()) continue;
    ++located_linear;
    if (rows[i].calls == 2) {  // thread 1's: addmm nested under it, with no location of its own
      ASSERT_LT(i + 1, rows.size());
      EXPECT_EQ(rows[i + 1].label, "aten::addmm");
      EXPECT_EQ(rows[i + 1].level, 1u);
      EXPECT_EQ(rows[i + 1].text, "");
    }
  }
  EXPECT_EQ(located_linear, 2u);  // one per thread
}

TEST(SummarySourceLocation, CombinesWithInputShapes) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, kForward, PK_EVENT_PYTHON_OP, 10, 900);
  b.event(1, "aten::mm", PK_EVENT_OPERATOR, 20, 100).arg(1, 20, "input_shapes", "[[2, 3]]");
  b.event(1, "aten::mm", PK_EVENT_OPERATOR, 200, 300).arg(1, 200, "input_shapes", "[[4, 5]]");
  b.event(1, "aten::mm", PK_EVENT_OPERATOR, 400, 500).arg(1, 400, "input_shapes", "[[2, 3]]");
  auto r = b.build();
  SummaryOptions options;
  options.op_detail = false;
  options.group_by_input_shape = true;
  options.group_by_stack_n = 3;
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOperator, options);
  const std::vector<LocatedRow> rows = located_rows(t);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].calls, 2);
  EXPECT_EQ(rows[1].calls, 1);
  EXPECT_EQ(rows[0].text, "model.py(5): Model.forward");
  const int shapes = t.find_column("Input Shapes");
  ASSERT_GT(shapes, 0);
  EXPECT_LT(shapes, t.find_column("Source Location"));
  EXPECT_EQ(t.rows[0].text(static_cast<size_t>(shapes - 1)), "[[2, 3]]");
}

TEST(SummarySourceLocation, WithoutFramesSaysHowToRecordThem) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "aten::mm", PK_EVENT_OPERATOR, 1, 100);
  auto r = b.build();
  SummaryOptions options;
  options.group_by_stack_n = 5;
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOperator, options);
  ASSERT_EQ(located_rows(t).size(), 1u);
  EXPECT_TRUE(has_note(t, "with_stack=True"));
}

TEST(SummarySourceLocation, OffByDefaultAndBoundedByTheNestingLimit) {
  auto r = step_with_frames();
  SummaryOptions options;
  const profkit::SummaryTable t = profkit_test::table_of(*r, SummaryView::kOperator, options);
  EXPECT_EQ(t.find_column("Source Location"), -1);
  EXPECT_EQ(profkit_test::value(t, "aten::linear", "Calls"), 4);
  EXPECT_NO_THROW(profkit::make_summary_options(0, true, false, 1, 0, 0, false, 255));
  try {
    profkit::make_summary_options(0, true, false, 1, 0, 0, false, 256);
    FAIL() << "group_by_stack_n 256 was taken";
  } catch (const profkit::Error& e) {
    EXPECT_NE(std::string(e.what()).find("group_by_stack_n 256"), std::string::npos) << e.what();
  }
}

}  // namespace

namespace {

// Two files named utils.py in different packages, and a third file: the
// rows of the two must not read alike.
TEST(SummarySourceLocation, FilesOfTheSameNameAreToldApartByTheirDirectories) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000);
  b.event(1, "/srv/app/data/utils.py(2): load", PK_EVENT_PYTHON_OP, 10, 200);
  b.event(1, "aten::add", PK_EVENT_OPERATOR, 20, 100);
  b.event(1, "/srv/app/model/utils.py(2): load", PK_EVENT_PYTHON_OP, 300, 500);
  b.event(1, "aten::add", PK_EVENT_OPERATOR, 310, 450);
  b.event(1, "/srv/app/train.py(7): main", PK_EVENT_PYTHON_OP, 600, 700);
  b.event(1, "aten::add", PK_EVENT_OPERATOR, 610, 690);
  auto r = b.build();
  SummaryOptions options;
  options.op_detail = false;
  options.group_by_stack_n = 1;
  const std::vector<LocatedRow> rows = located_rows(profkit_test::table_of(*r, SummaryView::kOperator, options));
  std::vector<std::string> texts;
  for (const LocatedRow& row : rows) texts.push_back(row.text);
  std::sort(texts.begin(), texts.end());
  EXPECT_EQ(texts,
            (std::vector<std::string>{"data/utils.py(2): load", "model/utils.py(2): load", "train.py(7): main"}));
}

}  // namespace
