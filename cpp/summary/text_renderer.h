// The summary as text, laid out like paddle.profiler's tables so its users
// read them at a glance: a title centered in dashes, "Time unit: ms", the
// column titles between separator lines, the rows, a separator and notes.
// Grouped columns print as one ("CPU Total / Avg / Max / Min / Ratio(%)"),
// nested rows are indented two spaces per level, long names (and long text
// cells, such as input shapes) are cut with "..." so the columns stay aligned, control characters and invalid UTF-8
// in names print as '?'. A table with no rows prints one line saying why;
// GPU columns are left out when the Result has no GPU activity.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "summary/summary.h"
#include "summary/summary_table.h"

namespace profkit {

// Widest name column, in terminal columns, before names are cut.
constexpr size_t kMaxLabelWidth = 60;
// Widest text cell (input shapes), in terminal columns, before it is cut.
constexpr size_t kMaxTextWidth = 80;

std::string render_summary_text(const Summary& summary);
void render_table_text(std::string& out, const SummaryTable& table, TimeUnit unit);

// One value as the text shows it ("12.35", "1.50 MiB", "-").
std::string format_value(double value, ColumnKind kind, TimeUnit unit);
// A text cell as the text shows it: "-" when empty, cut to kMaxTextWidth.
std::string format_text(std::string_view text);
// `text` made printable, cut to `width` terminal columns with "..." if wider.
std::string fit_label(std::string_view text, size_t width);

}  // namespace profkit
