// The text and JSON renderings: golden tables, time units, alignment with
// long, hostile and many names, hidden GPU columns, one-line empty tables.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "summary/json_writer.h"
#include "summary/terminal_width.h"
#include "summary/text_renderer.h"
#include "summary_builder.h"

namespace {

using profkit::SummaryOptions;
using profkit::SummaryView;
using profkit_test::TraceBuilder;

// Two steps (1 ms and 2 ms); a Forward with nested operators that launch a
// 0.4 ms kernel; a Dataloader on another thread; a user range.
std::unique_ptr<profkit::Result> small_training_trace() {
  TraceBuilder b;
  b.step(1, 0, 0, 1000000).step(1, 1, 1000000, 3000000);
  b.event(1, "forward", PK_EVENT_FORWARD, 0, 600000);
  b.event(1, "aten::linear", PK_EVENT_OPERATOR, 100000, 500000);
  b.event(1, "aten::addmm", PK_EVENT_OPERATOR, 150000, 450000);
  b.launch(1, 200000, 210000, 1);
  b.kernel("void gemm<float, 128>(float const*, float*)", 300000, 700000, 1);
  b.event(2, "loader", PK_EVENT_DATALOADER, 1000000, 1500000);
  b.event(1, "my_range", PK_EVENT_PYTHON_USER_DEFINED, 1000000, 2500000);
  return b.build();
}

std::string render(const profkit::Result& r, SummaryView view, SummaryOptions o = {}) {
  o.views = 1u << static_cast<int>(view);
  return profkit::render_summary_text(profkit::compute_summary(r, o));
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// clang-format off
constexpr const char* kOverviewGolden = R"(-----------------------------Overview Summary-----------------------------
Time unit: ms
-------------------  -----  --------  ------------  --------  ------------
Event Type           Calls  CPU Time  CPU Ratio(%)  GPU Time  GPU Ratio(%)
-------------------  -----  --------  ------------  --------  ------------
ProfileStep          2      3.00      100.00        -         -
  PythonUserDefined  1      1.50      50.00         -         -
  Forward            1      0.60      20.00         -         -
  Dataloader         1      0.50      16.67         -         -
  Operator           2      0.40      13.33         -         -
  CudaRuntime        1      0.01      0.33          -         -
  Kernel             1      -         -             0.40      13.33
-------------------  -----  --------  ------------  --------  ------------
Note: Time of one type counts once where its events overlap (across threads for CPU types, across streams for GPU types); types nest and overlap each other, so ratios do not add up to 100%.
Note: Ratio = time / total time (ProfileStep).

)";

constexpr const char* kModelGolden = R"(-------------------------------------------Model Summary-------------------------------------------
Time unit: ms
------------  -----  --------------------------------------  --------------------------------------
Name          Calls  CPU Total / Avg / Max / Min / Ratio(%)  GPU Total / Avg / Max / Min / Ratio(%)
------------  -----  --------------------------------------  --------------------------------------
ProfileStep   2      3.00 / 1.50 / 2.00 / 1.00 / 100.00      0.40 / 0.20 / 0.40 / 0.00 / 13.33
  Dataloader  1      0.50 / 0.50 / 0.50 / 0.50 / 16.67       0.00 / 0.00 / 0.00 / 0.00 / 0.00
  Forward     1      0.60 / 0.60 / 0.60 / 0.60 / 20.00       0.40 / 0.40 / 0.40 / 0.40 / 13.33
  Others      -      1.90 / - / - / - / 63.33                0.00 / - / - / - / 0.00
------------  -----  --------------------------------------  --------------------------------------
Note: Ratio = time / total time (ProfileStep). Others = total time not covered by Dataloader, Forward, Backward or Optimization.
Note: Dataloader: calls on threads that record no steps count too (a background prefetcher's fetches); running beside the steps, they can make a Total exceed the time they add to a step, and a Ratio pass 100%. The Perf Summary's reader_cost counts the stepping thread's only.
Note: GPU time = the GPU work a call launched, summed over streams: work overlapping on several streams can make it exceed the call's time.

)";

constexpr const char* kKernelGolden = R"(------------------Kernel Summary-------------------
Time unit: ms
----  -----  --------------------------------------
Name  Calls  GPU Total / Avg / Max / Min / Ratio(%)
----  -----  --------------------------------------
gemm  1      0.40 / 0.40 / 0.40 / 0.40 / 100.00
----  -----  --------------------------------------
Note: Ratio = kernel time / time of all kernels. Names drop template arguments and parameters.

)";

constexpr const char* kOperatorGolden = R"(-------------------------------------------------------Operator Summary--------------------------------------------------------
Time unit: ms
-------------  -----  --------------------------------------  -------------------------  --------------------------------------
Name           Calls  CPU Total / Avg / Max / Min / Ratio(%)  Self CPU Total / Ratio(%)  GPU Total / Avg / Max / Min / Ratio(%)
-------------  -----  --------------------------------------  -------------------------  --------------------------------------
aten::linear   1      0.40 / 0.40 / 0.40 / 0.40 / 13.33       0.10 / 3.33                0.40 / 0.40 / 0.40 / 0.40 / 13.33
  aten::addmm  1      0.30 / 0.30 / 0.30 / 0.30 / 75.00       0.29 / 72.50               0.40 / 0.40 / 0.40 / 0.40 / 100.00
    gemm       1      - / - / - / - / -                       - / -                      0.40 / 0.40 / 0.40 / 0.40 / 100.00
aten::addmm    1      0.30 / 0.30 / 0.30 / 0.30 / 10.00       0.29 / 9.67                0.40 / 0.40 / 0.40 / 0.40 / 13.33
  gemm         1      - / - / - / - / -                       - / -                      0.40 / 0.40 / 0.40 / 0.40 / 100.00
-------------  -----  --------------------------------------  -------------------------  --------------------------------------
Note: Ratio = time / total time (ProfileStep); for nested rows, time / the enclosing row's time.
Note: Self CPU = CPU time of the calls not spent in an event nested inside them.

)";
// clang-format on

TEST(SummaryText, GoldenOverview) {
  auto r = small_training_trace();
  EXPECT_EQ(render(*r, SummaryView::kOverview), kOverviewGolden);
}

TEST(SummaryText, GoldenModel) {
  auto r = small_training_trace();
  EXPECT_EQ(render(*r, SummaryView::kModel), kModelGolden);
}

TEST(SummaryText, GoldenKernel) {
  auto r = small_training_trace();
  EXPECT_EQ(render(*r, SummaryView::kKernel), kKernelGolden);
}

TEST(SummaryText, GoldenOperatorWithDetail) {
  auto r = small_training_trace();
  EXPECT_EQ(render(*r, SummaryView::kOperator), kOperatorGolden);
}

TEST(SummaryText, TimeUnits) {
  auto r = small_training_trace();  // total time 3 ms
  const std::pair<profkit::TimeUnit, std::string> cases[] = {
      {profkit::TimeUnit::kSeconds, "0.00"},
      {profkit::TimeUnit::kMilliseconds, "3.00"},
      {profkit::TimeUnit::kMicroseconds, "3000.00"},
      {profkit::TimeUnit::kNanoseconds, "3000000.00"},
  };
  for (const auto& [unit, total] : cases) {
    SummaryOptions o;
    o.time_unit = unit;
    const std::vector<std::string> lines = lines_of(render(*r, SummaryView::kOverview, o));
    ASSERT_GT(lines.size(), 6u);
    EXPECT_EQ(lines[1], "Time unit: " + std::string(profkit::time_unit_name(unit)));
    EXPECT_EQ(lines[5].rfind("ProfileStep", 0), 0u) << lines[5];
    EXPECT_NE(lines[5].find("  " + total + "  "), std::string::npos) << lines[5];
  }
}

// The offset (in terminal columns) of the column after the label in every
// body line: header and rows must agree.
void expect_aligned(const std::string& text, size_t expected_rows) {
  const std::vector<std::string> lines = lines_of(text);
  ASSERT_GE(lines.size(), 6u);
  const std::string& header = lines[3];
  const size_t calls = profkit::terminal_width(header.substr(0, header.find("Calls")));
  size_t rows = 0;
  for (size_t i = 5; i < lines.size() && lines[i].rfind("--", 0) != 0; ++i, ++rows) {
    // Everything up to the Calls column is the (padded) label and two spaces.
    const std::string& line = lines[i];
    const size_t bytes = profkit::prefix_fitting(line, calls);
    ASSERT_EQ(profkit::terminal_width(line.substr(0, bytes)), calls) << "misaligned: " << line;
    ASSERT_LT(bytes, line.size()) << line;
    EXPECT_NE(line[bytes], ' ') << "misaligned: " << line;
    EXPECT_EQ(line[bytes - 1], ' ') << "misaligned: " << line;
    EXPECT_EQ(line[bytes - 2], ' ') << "misaligned: " << line;
  }
  EXPECT_EQ(rows, expected_rows);
}

TEST(SummaryText, LongAndHostileNamesAreCutAndColumnsStayAligned) {
  TraceBuilder b(0, 1000);
  const std::string long_name(200, 'x');
  b.event(1, long_name, PK_EVENT_USER_DEFINED, 0, 100);
  b.event(1, "caf\xC3\xA9 \xE2\x82\xAC", PK_EVENT_USER_DEFINED, 100, 150);  // multibyte, 6 characters
  b.event(1, "bad\n\tname\xFF", PK_EVENT_USER_DEFINED, 200, 210);
  auto r = b.build();
  const std::string text = render(*r, SummaryView::kUserDefined);
  expect_aligned(text, 3);
  EXPECT_NE(text.find(std::string(profkit::kMaxLabelWidth - 3, 'x') + "...  "), std::string::npos);
  EXPECT_EQ(text.find(std::string(profkit::kMaxLabelWidth - 2, 'x')), std::string::npos);
  EXPECT_NE(text.find("bad??name?"), std::string::npos);
  EXPECT_NE(text.find("caf\xC3\xA9 \xE2\x82\xAC"), std::string::npos);
}

TEST(SummaryText, WideCharactersTakeTwoColumnsAndMarksNone) {
  TraceBuilder b(0, 1000);
  b.event(1, "\xE6\x95\xB0\xE6\x8D\xAE\xE5\x8A\xA0\xE8\xBD\xBD", PK_EVENT_USER_DEFINED, 0, 100);  // 数据加载
  b.event(1, "uni \xE2\x9C\x93 \xF0\x9F\x98\x80", PK_EVENT_USER_DEFINED, 100, 150);               // uni ✓ 😀
  b.event(1, "e\xCC\x81t\xCC\x81", PK_EVENT_USER_DEFINED, 200, 210);                              // é t́, combining
  std::string long_cjk;
  for (int k = 0; k < 40; ++k) long_cjk += "\xE5\x89\x8D";  // 前: 80 columns, past the label's 60
  b.event(1, long_cjk, PK_EVENT_USER_DEFINED, 300, 310);
  auto r = b.build();
  const std::string text = render(*r, SummaryView::kUserDefined);
  expect_aligned(text, 4);
  // Cut to 28 whole characters (56 columns) and "...", never inside one.
  std::string cut;
  for (int k = 0; k < 28; ++k) cut += "\xE5\x89\x8D";
  EXPECT_NE(text.find(cut + "...  "), std::string::npos) << text;
}

TEST(TerminalWidth, CountsColumnsAsTerminalsDraw) {
  EXPECT_EQ(profkit::terminal_width("abc"), 3u);
  EXPECT_EQ(profkit::terminal_width("caf\xC3\xA9"), 4u);
  EXPECT_EQ(profkit::terminal_width("\xE6\x97\xA5\xE6\x9C\xAC"), 4u);  // 日本
  EXPECT_EQ(profkit::terminal_width("\xF0\x9F\x98\x80"), 2u);          // 😀
  EXPECT_EQ(profkit::terminal_width("\xEF\xBC\xA1"), 2u);              // Ａ fullwidth
  EXPECT_EQ(profkit::terminal_width("e\xCC\x81"), 1u);                 // e + combining acute
  EXPECT_EQ(profkit::terminal_width("a\xE2\x80\x8B"
                                    "b"),
            2u);                                           // zero-width space
  EXPECT_EQ(profkit::terminal_width("\xE2\x9C\x93"), 1u);  // ✓ narrow
  EXPECT_EQ(profkit::terminal_width("\xEA\xB0\x80"), 2u);  // 가 Hangul
  // A prefix never ends inside a wide character, and keeps a mark with its letter.
  EXPECT_EQ(profkit::prefix_fitting("\xE6\x97\xA5\xE6\x9C\xAC", 3), 3u);
  EXPECT_EQ(profkit::prefix_fitting("e\xCC\x81x", 1), 3u);
  EXPECT_EQ(profkit::prefix_fitting("abc", 0), 0u);
  EXPECT_EQ(profkit::prefix_fitting("abc", 10), 3u);
}

TEST(SummaryText, NestedLongNamesKeepTheColumnWidth) {
  TraceBuilder b(0, 1000);
  b.event(1, "op", PK_EVENT_OPERATOR, 0, 500);
  b.event(1, std::string(100, 'i'), PK_EVENT_OPERATOR_INNER, 10, 20);
  auto r = b.build();
  const std::string text = render(*r, SummaryView::kOperator);
  expect_aligned(text, 2);
  EXPECT_NE(text.find("  " + std::string(profkit::kMaxLabelWidth - 5, 'i') + "..."), std::string::npos);
}

TEST(SummaryText, ThousandsOfRowsStayAligned) {
  TraceBuilder b(0, 10000000);
  for (int i = 0; i < 3000; ++i) {
    b.event(1, "op_" + std::to_string(i), PK_EVENT_OPERATOR, static_cast<uint64_t>(i) * 1000,
            static_cast<uint64_t>(i) * 1000 + 1 + static_cast<uint64_t>(i));
  }
  auto r = b.build();
  const std::string text = render(*r, SummaryView::kOperator);
  expect_aligned(text, 3000);
  // Largest first: op_2999 took the longest.
  EXPECT_EQ(lines_of(text)[5].rfind("op_2999 ", 0), 0u);
}

TEST(SummaryText, GpuColumnsOnlyWhenTheResultHasGpuActivity) {
  TraceBuilder cpu_only(0, 1000);
  cpu_only.event(1, "range", PK_EVENT_USER_DEFINED, 0, 100);
  auto r = cpu_only.build();
  std::string text = render(*r, SummaryView::kUserDefined);
  EXPECT_NE(text.find("CPU Total / Avg / Max / Min / Ratio(%)"), std::string::npos);
  EXPECT_EQ(text.find("GPU"), std::string::npos);
  text = render(*r, SummaryView::kOverview);
  EXPECT_EQ(text.find("GPU"), std::string::npos);

  auto gpu = small_training_trace();
  text = render(*gpu, SummaryView::kUserDefined);
  EXPECT_NE(text.find("GPU Total / Avg / Max / Min / Ratio(%)"), std::string::npos);
}

TEST(SummaryText, EmptyTablesTakeOneLine) {
  TraceBuilder b;
  auto r = b.build();
  EXPECT_EQ(render(*r, SummaryView::kKernel), "Kernel Summary: no GPU kernels recorded\n\n");
  EXPECT_EQ(render(*r, SummaryView::kDistributed), "Distributed Summary: no communication recorded\n\n");
  // Every view renders on an empty trace.
  const std::string all = profkit::render_summary_text(profkit::compute_summary(*r, {}));
  for (const char* title : {"Device Summary", "Overview Summary", "Model Summary", "Operator Summary", "Memory Summary",
                            "Memory Manipulation Summary", "UserDefined Summary"}) {
    EXPECT_NE(all.find(title), std::string::npos) << title;
  }
}

TEST(SummaryText, DeviceAndMemoryTables) {
  TraceBuilder b(0, 2000000);
  b.info().process_cpu_ns = 1000000;
  b.info().system_busy_ns = 1;
  b.info().system_idle_ns = 3;
  b.info().cpu_count = 8;
  b.memory(1, 0, 10, 3 << 19, 3 << 19, 4 << 20);
  auto r = b.build();
  const std::string device = render(*r, SummaryView::kDevice);
  EXPECT_NE(device.find("\nCPU(Process)  50.00\n"), std::string::npos) << device;
  EXPECT_NE(device.find("\nCPU(System)   25.00\n"), std::string::npos) << device;
  EXPECT_NE(device.find("Elapsed time = 2.00 ms"), std::string::npos) << device;
  EXPECT_NE(device.find("8 cores"), std::string::npos);
  const std::string memory = render(*r, SummaryView::kMemory);
  EXPECT_NE(memory.find("\nGPU 0                  1            1.50 MiB   0      0 B    1.50 MiB        4.00 MiB\n"
                        "  (outside any event)  1            1.50 MiB   0      0 B    -               -\n"),
            std::string::npos)
      << memory;
  EXPECT_EQ(memory.find("Time unit"), std::string::npos);
}

TEST(SummaryText, WhatTheRecordingLostIsSaidFirst) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000000);
  b.info().dropped_events = 1234;
  b.info().overflowed_events = 5;
  b.info().unfinished_events = 2;
  b.info().lost_event_args = 3;
  auto lossy = b.build();
  const std::vector<std::string> lines = lines_of(render(*lossy, SummaryView::kOverview));
  ASSERT_GE(lines.size(), 5u);
  EXPECT_EQ(lines[0].rfind("Warning: 1234 events were dropped at the engine's memory cap", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("Warning: 5 events nested deeper than 256 levels", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].rfind("Warning: 2 events were still open when the window closed", 0), 0u) << lines[2];
  EXPECT_EQ(lines[3].rfind("Warning: 3 event arguments were lost with their events", 0), 0u) << lines[3];
  EXPECT_EQ(lines[4], "");
  SummaryOptions o;
  o.views = 1u << static_cast<int>(SummaryView::kOverview);
  const std::string json = profkit::render_summary_json(profkit::compute_summary(*lossy, o));
  EXPECT_NE(json.find("\"warnings\":[\"1234 events were dropped"), std::string::npos) << json;
  // A whole recording has no warning at all.
  EXPECT_EQ(render(*small_training_trace(), SummaryView::kOverview).find("Warning"), std::string::npos);
  EXPECT_NE(profkit::render_summary_json(profkit::compute_summary(*small_training_trace(), o)).find("\"warnings\":[]"),
            std::string::npos);
}

// GPU records past the memory cap and those CUPTI had no buffer for share one
// count, so the warning names both causes, each with its remedy.
TEST(SummaryText, LostGpuRecordsNameTheMemoryCapAndCuptiBuffers) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000000);
  b.info().dropped_device_records = 7;
  auto lossy = b.build();
  const std::vector<std::string> lines = lines_of(render(*lossy, SummaryView::kOverview));
  ASSERT_GE(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("Warning: 7 GPU records were lost, past the engine's memory cap", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("pk_set_memory_cap"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("Profiler(memory_cap=...)"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("CUPTI activity buffer"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("device id past 428"), std::string::npos) << lines[0];
}

TEST(SummaryText, FormatValue) {
  using profkit::ColumnKind;
  using profkit::format_value;
  const profkit::TimeUnit ms = profkit::TimeUnit::kMilliseconds;
  EXPECT_EQ(format_value(profkit::kMissing, ColumnKind::kTime, ms), "-");
  EXPECT_EQ(format_value(1234567, ColumnKind::kTime, ms), "1.23");
  EXPECT_EQ(format_value(1234567, ColumnKind::kTime, profkit::TimeUnit::kSeconds), "0.00");
  EXPECT_EQ(format_value(12.345, ColumnKind::kPercent, ms), "12.35");
  EXPECT_EQ(format_value(42, ColumnKind::kCount, ms), "42");
  EXPECT_EQ(format_value(512, ColumnKind::kBytes, ms), "512 B");
  EXPECT_EQ(format_value(1536, ColumnKind::kBytes, ms), "1.50 KiB");
  EXPECT_EQ(format_value(3.0 * (1ull << 30), ColumnKind::kBytes, ms), "3.00 GiB");
  EXPECT_EQ(format_value(999, ColumnKind::kFlops, ms), "999");
  EXPECT_EQ(format_value(442368, ColumnKind::kFlops, ms), "442.37 K");
  EXPECT_EQ(format_value(1.2e12, ColumnKind::kFlops, ms), "1.20 T");
  EXPECT_EQ(profkit::fit_label("abcdef", 5), "ab...");
  EXPECT_EQ(profkit::fit_label("abc", 5), "abc");
  EXPECT_EQ(profkit::fit_label("\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9", 5), "\xC3\xA9\xC3\xA9...");
}

// Operator rows per input shapes: the "Input Shapes" column last, "-" where
// none was recorded (and under an operator), long shapes cut at 80 columns.
std::unique_ptr<profkit::Result> operators_with_shapes() {
  TraceBuilder b;
  b.step(1, 0, 0, 1000000);
  b.event(1, "aten::addmm", PK_EVENT_OPERATOR, 1, 300001).arg(1, 1, "input_shapes", "[[512], [32, 3072], [3072, 512]]");
  b.event(1, "aten::addmm", PK_EVENT_OPERATOR, 400000, 500000)
      .arg(1, 400000, "input_shapes", "[[10], [32, 512], [512, 10]]");
  b.event(1, "aten::copy_", PK_EVENT_OPERATOR_INNER, 410000, 420000);
  std::string many = "[";
  for (int k = 0; k < 20; ++k) many += std::string(k > 0 ? ", " : "") + "[32, 16]";
  b.event(1, "aten::cat", PK_EVENT_OPERATOR, 600000, 650000).arg(1, 600000, "input_shapes", many + "]");
  b.event(1, "aten::relu", PK_EVENT_OPERATOR, 700000, 720000);
  return b.build();
}

// clang-format off
constexpr const char* kShapesGolden = R"(----------------------------------------------------------------------------Operator Summary-----------------------------------------------------------------------------
Time unit: ms
-------------  -----  --------------------------------------  -------------------------  --------------------------------------------------------------------------------
Name           Calls  CPU Total / Avg / Max / Min / Ratio(%)  Self CPU Total / Ratio(%)  Input Shapes
-------------  -----  --------------------------------------  -------------------------  --------------------------------------------------------------------------------
aten::addmm    1      0.30 / 0.30 / 0.30 / 0.30 / 30.00       0.30 / 30.00               [[512], [32, 3072], [3072, 512]]
aten::addmm    1      0.10 / 0.10 / 0.10 / 0.10 / 10.00       0.09 / 9.00                [[10], [32, 512], [512, 10]]
  aten::copy_  1      0.01 / 0.01 / 0.01 / 0.01 / 10.00       0.01 / 10.00               -
aten::cat      1      0.05 / 0.05 / 0.05 / 0.05 / 5.00        0.05 / 5.00                [[32, 16], [32, 16], [32, 16], [32, 16], [32, 16], [32, 16], [32, 16], [32, 1...
aten::relu     1      0.02 / 0.02 / 0.02 / 0.02 / 2.00        0.02 / 2.00                -
-------------  -----  --------------------------------------  -------------------------  --------------------------------------------------------------------------------
Note: Ratio = time / total time (ProfileStep); for nested rows, time / the enclosing row's time.
Note: Self CPU = CPU time of the calls not spent in an event nested inside them.
Note: One row per operator and input shapes (group_by_input_shape); "-": calls without recorded shapes, and the rows under an operator.

)";
// clang-format on

TEST(SummaryText, GoldenOperatorByInputShape) {
  auto r = operators_with_shapes();
  SummaryOptions o;
  o.group_by_input_shape = true;
  EXPECT_EQ(render(*r, SummaryView::kOperator, o), kShapesGolden);
}

TEST(SummaryJson, InputShapesAreTextCellsOrNull) {
  auto r = operators_with_shapes();
  SummaryOptions o;
  o.group_by_input_shape = true;
  o.views = 1u << static_cast<int>(SummaryView::kOperator);
  const std::string json = profkit::render_summary_json(profkit::compute_summary(*r, o));
  EXPECT_NE(json.find("\"Input Shapes\"]"), std::string::npos) << json;
  EXPECT_NE(json.find(",\"text\"]"), std::string::npos) << json;
  EXPECT_NE(json.find(",\"[[512], [32, 3072], [3072, 512]]\"]"), std::string::npos) << json;  // never cut
  EXPECT_NE(json.find("[\"aten::relu\",1,"), std::string::npos) << json;
  EXPECT_NE(json.find(",null]"), std::string::npos) << json;
}

TEST(SummaryJson, RowsAsDataInTheChosenUnit) {
  TraceBuilder b;
  b.step(1, 0, 0, 1000000);
  b.event(1, "q\"uote", PK_EVENT_USER_DEFINED, 0, 500000);
  auto r = b.build();
  SummaryOptions o;
  o.views = (1u << static_cast<int>(SummaryView::kOverview)) | (1u << static_cast<int>(SummaryView::kUserDefined));
  o.time_unit = profkit::TimeUnit::kMicroseconds;
  const std::string json = profkit::render_summary_json(profkit::compute_summary(*r, o));
  EXPECT_EQ(json.rfind("{\"format\":\"profkit-summary\",\"version\":1,\"time_unit\":\"us\",\"total_time\":1000,", 0),
            0u)
      << json;
  EXPECT_NE(json.find("\"view\":\"OverView\",\"title\":\"Overview Summary\""), std::string::npos);
  EXPECT_NE(json.find("[\"ProfileStep\",1,1000,100,null,null]"), std::string::npos) << json;
  EXPECT_NE(json.find("[\"q\\\"uote\",1,500,500,500,500,50,0,0,0,0,0]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"kinds\":[\"label\",\"count\",\"time\",\"percent\",\"time\",\"percent\"]"), std::string::npos);
  EXPECT_NE(json.find("\"nested\":true,\"levels\":[0,1]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"empty_reason\":\"\""), std::string::npos);
}

}  // namespace
