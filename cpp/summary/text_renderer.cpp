#include "summary/text_renderer.h"

#include "common/utf8.h"
#include "summary/terminal_width.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <vector>

namespace profkit {

namespace {

constexpr size_t kGap = 2;  // spaces between columns

// Printable text: control characters and invalid UTF-8 become '?'.
std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const size_t n = utf8_sequence_length(text, i);
    if (n == 0 || c < 0x20 || c == 0x7F) {
      out += '?';
      i += n == 0 ? utf8_invalid_length(text, i) : 1;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string format_fixed(double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.2f", v);
  return buffer;
}

std::string format_bytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  size_t unit = 0;
  while (bytes >= 1024.0 && unit + 1 < sizeof kUnits / sizeof kUnits[0]) {
    bytes /= 1024.0;
    ++unit;
  }
  if (unit == 0) return std::to_string(static_cast<uint64_t>(bytes)) + " B";
  return format_fixed(bytes) + " " + kUnits[unit];
}

// Decimal prefixes, as FLOP counts are quoted: "442.37 K", "1.20 T".
std::string format_flops(double flops) {
  static constexpr const char* kPrefixes[] = {"", "K", "M", "G", "T", "P", "E"};
  size_t prefix = 0;
  while (flops >= 1000.0 && prefix + 1 < sizeof kPrefixes / sizeof kPrefixes[0]) {
    flops /= 1000.0;
    ++prefix;
  }
  if (prefix == 0) return std::to_string(static_cast<uint64_t>(flops));
  return format_fixed(flops) + " " + kPrefixes[prefix];
}

void pad_to(std::string& line, size_t width_before, size_t target) {
  if (target > width_before) line.append(target - width_before, ' ');
}

// A column as printed: one value column, or a run of columns of one group.
struct PrintedColumn {
  std::string header;
  std::vector<size_t> values;  // indices into SummaryRow::values
  size_t width = 0;
};

std::vector<PrintedColumn> printed_columns(const SummaryTable& t) {
  std::vector<PrintedColumn> out;
  for (size_t c = 1; c < t.columns.size(); ++c) {
    const SummaryColumn& col = t.columns[c];
    if (col.device_only && !t.has_device_data) continue;
    const size_t value = c - 1;
    if (!col.group.empty() && !out.empty() && c > 1 && t.columns[c - 1].group == col.group &&
        !(t.columns[c - 1].device_only && !t.has_device_data)) {
      // "CPU Total / Avg / ...": later members drop the group prefix.
      std::string name = col.name;
      if (name.compare(0, col.group.size() + 1, col.group + " ") == 0) name.erase(0, col.group.size() + 1);
      out.back().header += " / " + name;
      out.back().values.push_back(value);
      continue;
    }
    out.push_back({col.name, {value}, 0});
  }
  return out;
}

std::string title_line(std::string_view title, size_t width) {
  const size_t text = title.size();
  if (text + 2 >= width) return std::string(title);
  const size_t left = (width - text) / 2;
  return std::string(left, '-') + std::string(title) + std::string(width - text - left, '-');
}

void end_line(std::string& out, std::string& line) {
  while (!line.empty() && line.back() == ' ') line.pop_back();
  out += line;
  out += '\n';
  line.clear();
}

}  // namespace

std::string fit_label(std::string_view text, size_t width) {
  std::string s = printable(text);
  if (terminal_width(s) <= width) return s;
  const size_t keep = width > 3 ? width - 3 : 0;
  // Never inside a character; a wide one that does not fit whole leaves a
  // column short, which the table's padding fills.
  s.resize(prefix_fitting(s, keep));
  s += std::string("...").substr(0, width - keep);
  return s;
}

std::string format_text(std::string_view text) { return text.empty() ? "-" : fit_label(text, kMaxTextWidth); }

std::string format_value(double value, ColumnKind kind, TimeUnit unit) {
  if (is_missing(value)) return "-";
  switch (kind) {
    case ColumnKind::kTime:
      return format_fixed(value / ns_per_unit(unit));
    case ColumnKind::kPercent:
      return format_fixed(value);
    case ColumnKind::kBytes:
      return format_bytes(value);
    case ColumnKind::kFlops:
      return format_flops(value);
    case ColumnKind::kCount:
    case ColumnKind::kId:
    case ColumnKind::kLabel:
    case ColumnKind::kText:  // format_text's; a number here prints as one
      break;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%" PRIu64, static_cast<uint64_t>(value));
  return buffer;
}

void render_table_text(std::string& out, const SummaryTable& t, TimeUnit unit) {
  if (t.rows.empty()) {
    out += t.title + ": " + (t.empty_reason.empty() ? std::string("nothing to show") : t.empty_reason) + "\n\n";
    return;
  }
  std::vector<PrintedColumn> columns = printed_columns(t);
  // Cells as text, row by row: the label, then one per printed column.
  std::vector<std::vector<std::string>> cells(t.rows.size());
  size_t label_width = terminal_width(t.columns[0].name);
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const SummaryRow& row = t.rows[r];
    std::vector<std::string>& line = cells[r];
    const std::string indent(2 * static_cast<size_t>(row.level), ' ');
    line.push_back(indent + fit_label(row.label, kMaxLabelWidth > indent.size() ? kMaxLabelWidth - indent.size() : 1));
    label_width = std::max(label_width, terminal_width(line[0]));
    for (PrintedColumn& c : columns) {
      std::string text;
      for (size_t k = 0; k < c.values.size(); ++k) {
        if (k > 0) text += " / ";
        const size_t v = c.values[k];
        text += t.columns[v + 1].kind == ColumnKind::kText ? format_text(row.text(v))
                                                           : format_value(row.values[v], t.columns[v + 1].kind, unit);
      }
      line.push_back(std::move(text));
    }
  }
  bool has_time = false;
  for (PrintedColumn& c : columns) {
    c.width = terminal_width(c.header);
    for (size_t v : c.values) has_time |= t.columns[v + 1].kind == ColumnKind::kTime;
  }
  for (const std::vector<std::string>& line : cells) {
    for (size_t k = 0; k < columns.size(); ++k) {
      columns[k].width = std::max(columns[k].width, terminal_width(line[k + 1]));
    }
  }
  std::vector<size_t> widths{label_width};
  for (const PrintedColumn& c : columns) widths.push_back(c.width);
  size_t total_width = 0;
  for (size_t w : widths) total_width += w + kGap;
  total_width -= kGap;

  std::string separator;
  for (size_t k = 0; k < widths.size(); ++k) {
    if (k > 0) separator.append(kGap, ' ');
    separator.append(widths[k], '-');
  }
  auto emit_row = [&](const std::vector<std::string>& texts) {
    std::string line;
    size_t used = 0;
    for (size_t k = 0; k < texts.size(); ++k) {
      if (k > 0) {
        pad_to(line, used, used + kGap);
        used += kGap;
      }
      line += texts[k];
      const size_t w = terminal_width(texts[k]);
      pad_to(line, w, widths[k]);
      used += std::max(w, widths[k]);
    }
    end_line(out, line);
  };

  out += title_line(t.title, total_width) + "\n";
  if (has_time) out += "Time unit: " + std::string(time_unit_name(unit)) + "\n";
  out += separator + "\n";
  std::vector<std::string> headers{t.columns[0].name};
  for (const PrintedColumn& c : columns) headers.push_back(c.header);
  emit_row(headers);
  out += separator + "\n";
  for (const std::vector<std::string>& line : cells) emit_row(line);
  out += separator + "\n";
  for (const std::string& note : t.notes) out += "Note: " + note + "\n";
  out += "\n";
}

std::string render_summary_text(const Summary& summary) {
  std::string out;
  for (const std::string& warning : summary.warnings) out += "Warning: " + warning + "\n";
  if (!summary.warnings.empty()) out += "\n";
  for (const SummaryTable& t : summary.tables) render_table_text(out, t, summary.options.time_unit);
  return out;
}

}  // namespace profkit
