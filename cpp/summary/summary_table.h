// SummaryTable: one summary view as data — typed columns and rows — from
// which the text (text_renderer.h) and the JSON (json_writer.h) are made.
//
// The first column is the row label (a name, an event type, a device); every
// other cell is a number whose meaning the column's kind gives: times are ns
// (converted to the chosen unit only when rendered), ratios are percent,
// counts, bytes and FLOPs are whole numbers. A missing value (a CPU time of a GPU
// kernel, a ratio whose denominator is 0) is NaN and shows as "-" / null.
// Text columns (kText: an operator's input shapes) keep their cells in
// SummaryRow::texts instead; an empty text is missing.
//
// Thread-safety: plain data. Ownership: values.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "summary/summary_options.h"

namespace profkit {

// kId: a number that names something (a thread id), shown as an integer.
// kFlops: floating-point operations, shown with a decimal prefix (1.23 G).
// kText: a string other than the label (input shapes "[[2, 3], []]").
enum class ColumnKind : uint8_t { kLabel, kCount, kTime, kPercent, kBytes, kId, kFlops, kText };

struct SummaryColumn {
  std::string name;  // "CPU Total", "Calls", "Ratio (%)"
  ColumnKind kind;
  // Consecutive columns with the same non-empty group render as one text
  // column: "CPU Total / Avg / Max / Min / Ratio(%)".
  std::string group;
  // Omitted from the text when the Result has no GPU activity at all.
  bool device_only = false;
};

struct SummaryRow {
  std::string label;
  uint32_t level = 0;          // nesting under the row above (indentation)
  std::vector<double> values;  // one per column after the label; NaN = missing
  // The cells of kText columns, by the same index as `values` (whose entry
  // stays NaN); sized only once a text is set.
  std::vector<std::string> texts;

  void set_text(size_t value_index, std::string text);
  // "" (missing) when none was set.
  std::string_view text(size_t value_index) const noexcept {
    return value_index < texts.size() ? std::string_view(texts[value_index]) : std::string_view();
  }
};

constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();
inline bool is_missing(double v) noexcept { return std::isnan(v); }

struct SummaryTable {
  SummaryView view = SummaryView::kOverview;
  std::string title;  // "Overview Summary"
  std::vector<SummaryColumn> columns;
  std::vector<SummaryRow> rows;
  // Lines printed under the table (definitions, what was cut by row_limit).
  std::vector<std::string> notes;
  // Why the table has no rows ("no GPU kernels recorded"); empty otherwise.
  std::string empty_reason;
  bool nested = false;           // rows may have level > 0
  bool has_device_data = false;  // the Result holds GPU activity

  // Starts the table: its view, title and the label column's name.
  SummaryTable(SummaryView v, std::string table_title, std::string label_name);
  SummaryTable() = default;

  // Adds a value column; returns its index in SummaryRow::values.
  size_t add_column(std::string name, ColumnKind kind, std::string group = {}, bool device_only = false);
  // Adds "<group> Total / Avg / Max / Min / Ratio(%)" time columns.
  void add_time_stat_columns(const std::string& group, bool device_only);
  // A row with every value missing.
  SummaryRow& add_row(std::string label, uint32_t level = 0);
  size_t value_count() const noexcept { return columns.empty() ? 0 : columns.size() - 1; }
  // The column index (label = 0) of `name`, or -1.
  int find_column(const std::string& name) const noexcept;
};

// Ratio in percent; missing when the denominator is 0 (never a division by 0).
inline double percent(double part, double whole) noexcept { return whole > 0 ? part * 100.0 / whole : kMissing; }

}  // namespace profkit
