// Results with explicit events at known timestamps for the summary tests,
// and lookups of rows and values in the tables they produce.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "summary/summary.h"
#include "trace/result_builder.h"

namespace profkit_test {

class TraceBuilder {
 public:
  // A recording window of [start_ns, end_ns); 0, 0 for none.
  explicit TraceBuilder(uint64_t start_ns = 0, uint64_t end_ns = 0) : builder_(info(start_ns, end_ns)) {
    builder_.add_string("");
  }

  uint32_t name(const std::string& text) {
    auto it = names_.find(text);
    if (it != names_.end()) return it->second;
    const uint32_t id = builder_.add_string(text);
    names_.emplace(text, id);
    return id;
  }

  // `flags`: PK_HOST_EVENT_* (PK_HOST_EVENT_INSTANT with end > start only as
  // a damaged or hand-made file holds one).
  TraceBuilder& event(uint64_t tid, const std::string& text, pk_event_type type, uint64_t start, uint64_t end,
                      uint16_t flags = 0) {
    builder_.add_event(builder_.thread(tid), {start, end, name(text), static_cast<uint8_t>(type), 0, flags});
    return *this;
  }
  // An argument of the event that starts at `start` on thread `tid` (added before).
  TraceBuilder& arg(uint64_t tid, uint64_t start, const std::string& key, int64_t value) {
    builder_.add_arg(builder_.thread(tid), start, 0, name(key), PK_ARG_INT, value);
    return *this;
  }
  TraceBuilder& arg(uint64_t tid, uint64_t start, const std::string& key, const std::string& text) {
    builder_.add_arg(builder_.thread(tid), start, 0, name(key), PK_ARG_STRING, name(text));
    return *this;
  }
  // A string argument whose text gets an id of its own even when another
  // string has the same text, as a loaded or merged Result may hold.
  TraceBuilder& arg_own_copy(uint64_t tid, uint64_t start, const std::string& key, const std::string& text) {
    builder_.add_arg(builder_.thread(tid), start, 0, name(key), PK_ARG_STRING, builder_.add_string(text));
    return *this;
  }
  TraceBuilder& step(uint64_t tid, uint64_t number, uint64_t start, uint64_t end) {
    return event(tid, "ProfileStep#" + std::to_string(number), PK_EVENT_PROFILE_STEP, start, end);
  }
  // A cudaLaunchKernel-like runtime call that launches GPU work `correlation`.
  TraceBuilder& launch(uint64_t tid, uint64_t start, uint64_t end, uint32_t correlation,
                       const std::string& text = "cudaLaunchKernel") {
    builder_.add_runtime_call(builder_.thread(tid), {start, end, name(text), PK_EVENT_CUDA_RUNTIME, 0, 0}, correlation);
    return *this;
  }
  TraceBuilder& device(const std::string& text, pk_event_type type, uint64_t start, uint64_t end, uint32_t correlation,
                       uint16_t device_id = 0, uint32_t stream = 7, uint8_t flags = 0) {
    builder_.add_device_event({start, end, 0, name(text), correlation, stream, 1, device_id, static_cast<uint8_t>(type),
                               flags, PK_NO_DETAIL});
    return *this;
  }
  TraceBuilder& kernel(const std::string& text, uint64_t start, uint64_t end, uint32_t correlation,
                       uint16_t device_id = 0, uint32_t stream = 7) {
    return device(text, PK_EVENT_KERNEL, start, end, correlation, device_id, stream);
  }
  TraceBuilder& memory(uint64_t tid, int32_t device_id, uint64_t time, int64_t bytes, uint64_t allocated,
                       uint64_t reserved) {
    builder_.add_memory_event({time, 0x1000, bytes, allocated, reserved, builder_.thread(tid), device_id});
    return *this;
  }
  profkit::ResultInfo& info() { return builder_.info(); }
  void add_device(int32_t id) {
    profkit::DeviceInfo d;
    d.id = id;
    d.name = "GPU under test";
    builder_.add_device(d);
  }
  std::unique_ptr<profkit::Result> build() { return builder_.finish(); }

 private:
  static profkit::ResultInfo info(uint64_t start_ns, uint64_t end_ns) {
    profkit::ResultInfo i;
    i.start_ns = start_ns;
    i.end_ns = end_ns;
    return i;
  }
  profkit::ResultBuilder builder_;
  std::map<std::string, uint32_t> names_;
};

inline profkit::SummaryOptions options_for(profkit::SummaryView view) {
  profkit::SummaryOptions o;
  o.views = 1u << static_cast<int32_t>(view);
  return o;
}

// The one table of `view` computed from `result` with `options`.
inline profkit::SummaryTable table_of(const profkit::Result& result, profkit::SummaryView view,
                                      profkit::SummaryOptions options = {}) {
  options.views = 1u << static_cast<int32_t>(view);
  profkit::Summary s = profkit::compute_summary(result, options);
  EXPECT_EQ(s.tables.size(), 1u);
  return s.tables.empty() ? profkit::SummaryTable() : s.tables.front();
}

// The index of the first row labelled `label` (at `level`, if given), or -1.
inline int row_index(const profkit::SummaryTable& t, const std::string& label, int level = -1) {
  for (size_t r = 0; r < t.rows.size(); ++r) {
    if (t.rows[r].label == label && (level < 0 || static_cast<int>(t.rows[r].level) == level)) {
      return static_cast<int>(r);
    }
  }
  return -1;
}

// The value in column `column` of the row labelled `label`; fails the test
// (and returns -12345) when either is missing.
inline double value(const profkit::SummaryTable& t, const std::string& label, const std::string& column,
                    int level = -1) {
  const int r = row_index(t, label, level);
  const int c = t.find_column(column);
  EXPECT_GE(r, 0) << "no row '" << label << "' in " << t.title;
  EXPECT_GE(c, 1) << "no column '" << column << "' in " << t.title;
  if (r < 0 || c < 1) return -12345;
  return t.rows[static_cast<size_t>(r)].values[static_cast<size_t>(c - 1)];
}

// Labels of the rows at `level`, in order.
inline std::vector<std::string> labels(const profkit::SummaryTable& t, int level = 0) {
  std::vector<std::string> out;
  for (const profkit::SummaryRow& r : t.rows) {
    if (static_cast<int>(r.level) == level) out.push_back(r.label);
  }
  return out;
}

// An Operator table's rows with one text column's cells ("" where missing).
struct TextRow {
  std::string label;
  std::string text;
  uint32_t level;
  double calls;
  double cpu_total;
};

inline std::vector<TextRow> rows_with_text(const profkit::SummaryTable& t, const std::string& column) {
  const int text = t.find_column(column);
  EXPECT_GT(text, 0) << column;
  std::vector<TextRow> rows;
  if (text <= 0) return rows;
  for (const profkit::SummaryRow& row : t.rows) {
    rows.push_back({row.label, std::string(row.text(static_cast<size_t>(text - 1))), row.level,
                    row.values[static_cast<size_t>(t.find_column("Calls") - 1)],
                    row.values[static_cast<size_t>(t.find_column("CPU Total") - 1)]});
  }
  return rows;
}

}  // namespace profkit_test
