#include "summary/summary_table.h"

#include <utility>

namespace profkit {

void SummaryRow::set_text(size_t value_index, std::string text) {
  if (texts.size() <= value_index) texts.resize(values.size() > value_index ? values.size() : value_index + 1);
  texts[value_index] = std::move(text);
}

SummaryTable::SummaryTable(SummaryView v, std::string table_title, std::string label_name)
    : view(v), title(std::move(table_title)) {
  columns.push_back({std::move(label_name), ColumnKind::kLabel, {}, false});
}

size_t SummaryTable::add_column(std::string name, ColumnKind kind, std::string group, bool device_only) {
  columns.push_back({std::move(name), kind, std::move(group), device_only});
  return columns.size() - 2;
}

void SummaryTable::add_time_stat_columns(const std::string& group, bool device_only) {
  add_column(group + " Total", ColumnKind::kTime, group, device_only);
  add_column(group + " Avg", ColumnKind::kTime, group, device_only);
  add_column(group + " Max", ColumnKind::kTime, group, device_only);
  add_column(group + " Min", ColumnKind::kTime, group, device_only);
  add_column(group + " Ratio(%)", ColumnKind::kPercent, group, device_only);
}

SummaryRow& SummaryTable::add_row(std::string label, uint32_t level) {
  rows.push_back({std::move(label), level, std::vector<double>(value_count(), kMissing), {}});
  return rows.back();
}

int SummaryTable::find_column(const std::string& name) const noexcept {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace profkit
