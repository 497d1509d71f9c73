// The summary through the C ABI only: options and their versioning, errors,
// ownership of the returned strings, and the same tables from a result just
// collected and from the file it was saved to.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "profkit/profkit.h"
#include "test_support.h"

namespace {

using profkit_test::collect;
using profkit_test::reset_engine;
using profkit_test::ResultPtr;

struct StringDeleter {
  void operator()(char* s) const { pk_string_free(s); }
};
using OwnedString = std::unique_ptr<char, StringDeleter>;

class SummaryCapiTest : public ::testing::Test {
 protected:
  void SetUp() override { reset_engine(); }
  void TearDown() override { reset_engine(); }

  // Two steps with a user range and an operator in each.
  static ResultPtr record() {
    EXPECT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
    for (uint64_t step = 0; step < 2; ++step) {
      EXPECT_EQ(pk_step_begin(step), PK_OK);
      pk_begin_event_str("my_range", PK_EVENT_PYTHON_USER_DEFINED);
      pk_begin_event_str("aten::add", PK_EVENT_OPERATOR);
      pk_end_event();
      pk_end_event();
      EXPECT_EQ(pk_step_end(0), PK_OK);
    }
    EXPECT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
    return collect();
  }

  static std::string text_of(const pk_result* r, const pk_summary_options* o) {
    char* text = nullptr;
    size_t length = 0;
    EXPECT_EQ(pk_result_summary_text(r, o, &text, &length), PK_OK) << pk_last_error();
    OwnedString owned(text);
    EXPECT_NE(text, nullptr);
    if (text == nullptr) return {};
    EXPECT_EQ(length, std::strlen(text));
    return text;
  }
};

// The library reports the version of the header it was built with (1.1 brought the summary).
TEST_F(SummaryCapiTest, VersionIncludesTheSummary) {
  EXPECT_EQ(pk_api_version(), static_cast<uint32_t>(PK_API_VERSION));
  EXPECT_GE(pk_api_version() & 0xFFFFu, 1u);
}

TEST_F(SummaryCapiTest, OptionsInitGivesTheDefaults) {
  pk_summary_options o;
  std::memset(&o, 0x5A, sizeof o);
  o.struct_size = sizeof o;
  pk_summary_options_init(&o);
  EXPECT_EQ(o.struct_size, sizeof o);
  EXPECT_EQ(o.sorted_by, PK_SORT_CPU_TOTAL);
  EXPECT_EQ(o.op_detail, 1);
  EXPECT_EQ(o.thread_sep, 0);
  EXPECT_EQ(o.time_unit, PK_TIME_UNIT_MS);
  EXPECT_EQ(o.views, 0u);
  EXPECT_EQ(o.row_limit, 0u);
  EXPECT_EQ(o.group_by_input_shape, 0);
  pk_summary_options_init(nullptr);  // ignored
}

TEST_F(SummaryCapiTest, TextWithDefaultsAndWithSelectedViews) {
  ResultPtr r = record();
  const std::string all = text_of(r.get(), nullptr);
  for (const char* title : {"Device Summary", "Overview Summary", "Model Summary", "Operator Summary",
                            "UserDefined Summary", "Kernel Summary: no GPU kernels recorded"}) {
    EXPECT_NE(all.find(title), std::string::npos) << title;
  }
  EXPECT_NE(all.find("my_range"), std::string::npos);

  pk_summary_options o{};
  o.struct_size = sizeof o;
  pk_summary_options_init(&o);
  o.views = PK_VIEW_BIT(PK_VIEW_USER_DEFINED);
  o.time_unit = PK_TIME_UNIT_US;
  const std::string one = text_of(r.get(), &o);
  EXPECT_EQ(one.find("Overview Summary"), std::string::npos);
  EXPECT_NE(one.find("UserDefined Summary"), std::string::npos);
  EXPECT_NE(one.find("Time unit: us"), std::string::npos);
  EXPECT_NE(one.find("my_range"), std::string::npos);
}

TEST_F(SummaryCapiTest, OlderShorterOptionsKeepDefaultsForTheRest) {
  ResultPtr r = record();
  pk_summary_options o{};
  o.struct_size = offsetof(pk_summary_options, time_unit);  // a caller that knew fewer fields
  o.sorted_by = PK_SORT_CPU_MIN;
  o.time_unit = 99;  // beyond its struct: must not be read
  o.views = 12345;
  EXPECT_NE(text_of(r.get(), &o).find("Time unit: ms"), std::string::npos);
}

// 1.21: operator rows per input shapes, from the "input_shapes" string
// argument a framework hook attaches; a 1.20 caller's struct (ending at
// row_limit) keeps one row per name.
TEST_F(SummaryCapiTest, GroupByInputShapeSplitsOperatorRows) {
  const pk_name_id shapes_key = pk_intern("input_shapes");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  for (const char* shapes : {"[[2, 3]]", "[[4, 5]]", "[[2, 3]]"}) {
    pk_begin_event_str("aten::relu", PK_EVENT_OPERATOR);
    pk_event_arg_str(shapes_key, shapes);
    pk_end_event();
  }
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();

  pk_summary_options o{};
  o.struct_size = sizeof o;
  pk_summary_options_init(&o);
  o.views = PK_VIEW_BIT(PK_VIEW_OPERATOR);
  o.group_by_input_shape = 1;
  char* json = nullptr;
  ASSERT_EQ(pk_result_summary_json(r.get(), &o, &json, nullptr), PK_OK) << pk_last_error();
  OwnedString owned(json);
  const std::string grouped = json;
  EXPECT_NE(grouped.find("\"Input Shapes\""), std::string::npos) << grouped;
  EXPECT_NE(grouped.find("[\"aten::relu\",2,"), std::string::npos) << grouped;
  EXPECT_NE(grouped.find("[\"aten::relu\",1,"), std::string::npos) << grouped;
  EXPECT_NE(grouped.find(",\"[[4, 5]]\"]"), std::string::npos) << grouped;
  EXPECT_NE(text_of(r.get(), &o).find("[[2, 3]]"), std::string::npos);

  o.struct_size = offsetof(pk_summary_options, group_by_input_shape);  // 1.20's struct ends at row_limit
  const std::string older = text_of(r.get(), &o);
  EXPECT_EQ(older.find("Input Shapes"), std::string::npos) << older;
  EXPECT_NE(older.find("aten::relu  3  "), std::string::npos) << older;
}

// 1.22: operator rows per source location, from the PythonOp events around
// them (as with_stack records them through pk_complete_event); a 1.21
// caller's struct (its sizeof ends where group_by_stack_n begins) keeps one
// row per name.
TEST_F(SummaryCapiTest, GroupByStackNSplitsOperatorRowsBySourceLocation) {
  const pk_name_id frames[] = {pk_intern("/src/a.py(1): f"), pk_intern("/src/b.py(7): g")};
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  for (const pk_name_id frame : {frames[0], frames[1], frames[0]}) {
    const uint64_t start = pk_now_ns();
    pk_begin_event_str("aten::relu", PK_EVENT_OPERATOR);
    pk_end_event();
    pk_complete_event(frame, PK_EVENT_PYTHON_OP, start, pk_now_ns());
  }
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  ResultPtr r = collect();

  pk_summary_options o{};
  o.struct_size = sizeof o;
  pk_summary_options_init(&o);
  EXPECT_EQ(o.group_by_stack_n, 0u);
  o.views = PK_VIEW_BIT(PK_VIEW_OPERATOR);
  o.group_by_stack_n = 1;
  char* json = nullptr;
  ASSERT_EQ(pk_result_summary_json(r.get(), &o, &json, nullptr), PK_OK) << pk_last_error();
  OwnedString owned(json);
  const std::string grouped = json;
  EXPECT_NE(grouped.find("\"Source Location\""), std::string::npos) << grouped;
  EXPECT_NE(grouped.find("[\"aten::relu\",2,"), std::string::npos) << grouped;
  EXPECT_NE(grouped.find(",\"b.py(7): g\"]"), std::string::npos) << grouped;

  o.struct_size = offsetof(pk_summary_options, group_by_stack_n);  // 1.21's sizeof, padding included
  std::memset(reinterpret_cast<char*>(&o) + offsetof(pk_summary_options, group_by_input_shape) + sizeof(int32_t), 0x5a,
              offsetof(pk_summary_options, group_by_stack_n) - offsetof(pk_summary_options, group_by_input_shape) -
                  sizeof(int32_t));  // whatever its padding holds
  o.group_by_stack_n = 7;            // past its struct: not read
  const std::string older = text_of(r.get(), &o);
  EXPECT_EQ(older.find("Source Location"), std::string::npos) << older;
  EXPECT_NE(older.find("aten::relu  3  "), std::string::npos) << older;

  o.struct_size = sizeof o;
  o.group_by_stack_n = 256;
  char* refused = nullptr;
  EXPECT_EQ(pk_result_summary_json(r.get(), &o, &refused, nullptr), PK_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(refused, nullptr);
  EXPECT_NE(std::string(pk_last_error()).find("group_by_stack_n 256"), std::string::npos) << pk_last_error();
}

TEST_F(SummaryCapiTest, JsonHasOneObjectPerView) {
  ResultPtr r = record();
  pk_summary_options o{};
  o.struct_size = sizeof o;
  pk_summary_options_init(&o);
  o.views = PK_VIEW_BIT(PK_VIEW_OVERVIEW) | PK_VIEW_BIT(PK_VIEW_OPERATOR);
  char* json = nullptr;
  ASSERT_EQ(pk_result_summary_json(r.get(), &o, &json, nullptr), PK_OK) << pk_last_error();
  OwnedString owned(json);
  const std::string s = json;
  EXPECT_EQ(s.rfind("{\"format\":\"profkit-summary\"", 0), 0u);
  EXPECT_NE(s.find("\"view\":\"OverView\""), std::string::npos);
  EXPECT_NE(s.find("\"view\":\"OperatorView\""), std::string::npos);
  EXPECT_EQ(s.find("\"view\":\"UDFView\""), std::string::npos);
  EXPECT_NE(s.find("[\"aten::add\",2,"), std::string::npos) << s;
}

TEST_F(SummaryCapiTest, LoadedResultGivesTheSameTables) {
  ResultPtr r = record();
  profkit_test::TempDir dir;
  const std::string path = dir.file("run.pktrace");
  ASSERT_EQ(pk_result_save(r.get(), path.c_str()), PK_OK) << pk_last_error();
  ResultPtr loaded = profkit_test::load(path);
  ASSERT_NE(loaded, nullptr);
  EXPECT_EQ(text_of(loaded.get(), nullptr), text_of(r.get(), nullptr));
}

TEST_F(SummaryCapiTest, BadArgumentsAreErrorsWithMessages) {
  ResultPtr r = record();
  char* out = reinterpret_cast<char*>(0x1);
  EXPECT_EQ(pk_result_summary_text(nullptr, nullptr, &out, nullptr), PK_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(out, nullptr);
  EXPECT_NE(std::string(pk_last_error()).find("result is NULL"), std::string::npos);
  EXPECT_EQ(pk_result_summary_json(r.get(), nullptr, nullptr, nullptr), PK_ERR_INVALID_ARGUMENT);

  pk_summary_options o{};
  o.struct_size = sizeof o;
  pk_summary_options_init(&o);
  o.sorted_by = PK_SORT_CPU_SELF + 1;
  EXPECT_EQ(pk_result_summary_text(r.get(), &o, &out, nullptr), PK_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(out, nullptr);
  EXPECT_NE(std::string(pk_last_error()).find("CPUTotal=0"), std::string::npos) << pk_last_error();
  o.sorted_by = 0;
  o.time_unit = 4;
  EXPECT_EQ(pk_result_summary_text(r.get(), &o, &out, nullptr), PK_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pk_last_error()).find("ns=3"), std::string::npos) << pk_last_error();
  o.time_unit = PK_TIME_UNIT_MS;
  o.views = PK_VIEW_BIT(PK_SUMMARY_VIEW_COUNT);
  EXPECT_EQ(pk_result_summary_json(r.get(), &o, &out, nullptr), PK_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pk_last_error()).find("UDFView=8"), std::string::npos) << pk_last_error();
  o.struct_size = 0;
  EXPECT_EQ(pk_result_summary_text(r.get(), &o, &out, nullptr), PK_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pk_last_error()).find("struct_size"), std::string::npos);
  o.struct_size = offsetof(pk_summary_options, time_unit) + 2;  // half of time_unit
  EXPECT_EQ(pk_result_summary_json(r.get(), &o, &out, nullptr), PK_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pk_last_error()).find("struct_size is 22, which is not the size of any version"),
            std::string::npos)
      << pk_last_error();
  pk_string_free(nullptr);  // ignored
}

TEST_F(SummaryCapiTest, EmptyResultStillSummarizes) {
  ResultPtr r = collect();  // nothing recorded
  const std::string text = text_of(r.get(), nullptr);
  EXPECT_NE(text.find("Overview Summary"), std::string::npos);
  EXPECT_NE(text.find("UserDefined Summary: no UserDefined or PythonUserDefined events recorded"), std::string::npos);
}

// pk_current_step, here with the other checks that use only the C ABI:
// once the last possible step had ended it reported INT64_MAX + 1, which
// signed 64-bit readers see as INT64_MIN.
TEST_F(SummaryCapiTest, CurrentStepStaysWithinSigned64BitsAfterTheLastStep) {
  ASSERT_EQ(pk_step_begin(INT64_MAX), PK_OK);
  EXPECT_EQ(pk_current_step(), static_cast<uint64_t>(INT64_MAX));
  ASSERT_EQ(pk_step_end(0), PK_OK);
  EXPECT_EQ(pk_current_step(), static_cast<uint64_t>(INT64_MAX));
  EXPECT_GE(static_cast<int64_t>(pk_current_step()), 0);
  EXPECT_EQ(pk_step(0), PK_ERR_INVALID_ARGUMENT);  // still no step after it
  ASSERT_EQ(pk_step_begin(3), PK_OK);              // a new numbering reads as usual
  ASSERT_EQ(pk_step_end(0), PK_OK);
  EXPECT_EQ(pk_current_step(), 4u);
}

}  // namespace
