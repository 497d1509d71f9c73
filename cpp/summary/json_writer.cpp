#include "summary/json_writer.h"

#include <charconv>
#include <cinttypes>
#include <cstdio>

#include "export/json_escape.h"

namespace profkit {

namespace {

std::string_view kind_name(ColumnKind kind) noexcept {
  switch (kind) {
    case ColumnKind::kLabel:
      return "label";
    case ColumnKind::kCount:
      return "count";
    case ColumnKind::kTime:
      return "time";
    case ColumnKind::kPercent:
      return "percent";
    case ColumnKind::kBytes:
      return "bytes";
    case ColumnKind::kId:
      return "id";
    case ColumnKind::kFlops:
      return "flops";
    case ColumnKind::kText:
      return "text";
  }
  return "count";
}

void append_number(std::string& out, double v) {
  if (is_missing(v) || std::isinf(v)) {
    out += "null";
    return;
  }
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  if (ec != std::errc()) {
    out += "null";
    return;
  }
  out.append(buffer, end);
}

void append_integer(std::string& out, double v) {
  if (is_missing(v)) {
    out += "null";
    return;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%" PRIu64, static_cast<uint64_t>(v));
  out += buffer;
}

void append_value(std::string& out, double v, ColumnKind kind, double ns_per_unit) {
  switch (kind) {
    case ColumnKind::kTime:
      append_number(out, is_missing(v) ? v : v / ns_per_unit);
      return;
    case ColumnKind::kPercent:
      append_number(out, v);
      return;
    default:
      append_integer(out, v);
      return;
  }
}

void append_table(std::string& out, const SummaryTable& t, double ns_per_unit) {
  out += "{\"view\":";
  out += json_quoted(view_name(t.view));
  out += ",\"title\":";
  out += json_quoted(t.title);
  out += ",\"columns\":[";
  for (size_t c = 0; c < t.columns.size(); ++c) {
    if (c > 0) out += ',';
    out += json_quoted(t.columns[c].name);
  }
  out += "],\"kinds\":[";
  for (size_t c = 0; c < t.columns.size(); ++c) {
    if (c > 0) out += ',';
    out += json_quoted(kind_name(t.columns[c].kind));
  }
  out += "],\"nested\":";
  out += t.nested ? "true" : "false";
  out += ",\"levels\":[";
  for (size_t r = 0; r < t.rows.size(); ++r) {
    if (r > 0) out += ',';
    out += std::to_string(t.rows[r].level);
  }
  out += "],\"rows\":[";
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const SummaryRow& row = t.rows[r];
    if (r > 0) out += ',';
    out += '[';
    out += json_quoted(row.label);
    for (size_t v = 0; v < row.values.size(); ++v) {
      out += ',';
      const ColumnKind kind = t.columns[v + 1].kind;
      if (kind != ColumnKind::kText) {
        append_value(out, row.values[v], kind, ns_per_unit);
      } else {
        const std::string_view text = row.text(v);
        out += text.empty() ? std::string("null") : json_quoted(text);
      }
    }
    out += ']';
  }
  out += "],\"notes\":[";
  for (size_t n = 0; n < t.notes.size(); ++n) {
    if (n > 0) out += ',';
    out += json_quoted(t.notes[n]);
  }
  out += "],\"empty_reason\":";
  out += json_quoted(t.empty_reason);
  out += '}';
}

}  // namespace

std::string render_summary_json(const Summary& summary) {
  const double unit = ns_per_unit(summary.options.time_unit);
  std::string out = "{\"format\":\"profkit-summary\",\"version\":1,\"time_unit\":";
  out += json_quoted(time_unit_name(summary.options.time_unit));
  out += ",\"total_time\":";
  append_number(out, static_cast<double>(summary.total_time_ns) / unit);
  out += ",\"total_time_source\":";
  out += summary.total_time_is_steps ? "\"ProfileStep\"" : "\"recorded span\"";
  out += ",\"warnings\":[";
  for (size_t i = 0; i < summary.warnings.size(); ++i) {
    if (i > 0) out += ',';
    out += json_quoted(summary.warnings[i]);
  }
  out += ']';
  out += ",\"tables\":[";
  for (size_t i = 0; i < summary.tables.size(); ++i) {
    if (i > 0) out += ',';
    append_table(out, summary.tables[i], unit);
  }
  out += "]}";
  return out;
}

}  // namespace profkit
