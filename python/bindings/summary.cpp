// Summary tables: Result.summary_text / Result.summary_json, one call each to
// the C ABI with the GIL released (a summary of a large result takes a while).
// Argument checking with friendly messages lives in profkit/_summary.py; the
// engine still rejects out-of-range values (ValueError with pk_last_error()).
#include <cstdint>
#include <string>

#include "binding.h"

namespace profkit_py {

namespace {

using Render = pk_status (*)(const pk_result*, const pk_summary_options*, char**, size_t*);

py::str summarize(const Result& self, Render render, int32_t sorted_by, bool op_detail, bool thread_sep,
                  int32_t time_unit, uint32_t views, uint32_t row_limit, bool group_by_input_shape,
                  uint64_t group_by_stack_n) {
  pk_summary_options o{};
  o.struct_size = sizeof o;
  pk_summary_options_init(&o);
  o.sorted_by = sorted_by;
  o.op_detail = op_detail ? 1 : 0;
  o.thread_sep = thread_sep ? 1 : 0;
  o.time_unit = time_unit;
  o.views = views;
  o.row_limit = row_limit;
  o.group_by_input_shape = group_by_input_shape ? 1 : 0;
  o.group_by_stack_n = group_by_stack_n;
  char* text = nullptr;
  pk_status status;
  {
    py::gil_scoped_release release;
    status = render(self.get(), &o, &text, nullptr);
  }
  check(status);
  struct Free {
    char* p;
    ~Free() { pk_string_free(p); }
  } owned{text};
  return decode(text);
}

}  // namespace

void bind_summary(py::class_<Result>& result) {
  const char* args_doc =
      "sorted_by: 0..8 (SortedKeys value), op_detail, thread_sep, time_unit: 0=s 1=ms 2=us 3=ns, "
      "views: bitmask of 1 << SummaryView value (0 = all), row_limit: 0 = no limit, "
      "group_by_input_shape: Operator rows per input shapes, group_by_stack_n: Operator rows per innermost N "
      "Python frames (0 = off)";
  result
      .def(
          "summary_text",
          [](const Result& self, int32_t sorted_by, bool op_detail, bool thread_sep, int32_t time_unit, uint32_t views,
             uint32_t row_limit, bool group_by_input_shape, uint64_t group_by_stack_n) {
            return summarize(self, &pk_result_summary_text, sorted_by, op_detail, thread_sep, time_unit, views,
                             row_limit, group_by_input_shape, group_by_stack_n);
          },
          py::arg("sorted_by") = 0, py::arg("op_detail") = true, py::arg("thread_sep") = false,
          py::arg("time_unit") = 1, py::arg("views") = 0, py::arg("row_limit") = 0,
          py::arg("group_by_input_shape") = false, py::arg("group_by_stack_n") = 0,
          (std::string("The summary tables as text (pk_result_summary_text). ") + args_doc).c_str())
      .def(
          "summary_json",
          [](const Result& self, int32_t sorted_by, bool op_detail, bool thread_sep, int32_t time_unit, uint32_t views,
             uint32_t row_limit, bool group_by_input_shape, uint64_t group_by_stack_n) {
            return summarize(self, &pk_result_summary_json, sorted_by, op_detail, thread_sep, time_unit, views,
                             row_limit, group_by_input_shape, group_by_stack_n);
          },
          py::arg("sorted_by") = 0, py::arg("op_detail") = true, py::arg("thread_sep") = false,
          py::arg("time_unit") = 1, py::arg("views") = 0, py::arg("row_limit") = 0,
          py::arg("group_by_input_shape") = false, py::arg("group_by_stack_n") = 0,
          (std::string("The summary tables as JSON rows (pk_result_summary_json). ") + args_doc).c_str());
}

}  // namespace profkit_py
