// Result.export_chrome_placed: a Chrome trace placed in a timeline shared
// with other processes (the engine side of profkit.merge): ts relative to a
// given wall-clock base, a chosen pid, offset flow ids, labelled processes.
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>

#include "binding.h"

namespace profkit_py {

void bind_placement(py::class_<Result>& result) {
  result.def(
      "export_chrome_placed",
      [](const Result& self, const std::string& path, std::optional<int64_t> time_base_wall_ns, int64_t pid,
         uint64_t flow_id_offset, const std::string& process_label_prefix, int32_t sort_index_offset,
         bool label_durations, bool include_flows) {
        pk_chrome_options o{};
        o.struct_size = sizeof o;
        pk_chrome_options_init(&o);
        o.label_durations = label_durations;
        o.include_flows = include_flows;
        o.use_time_base = time_base_wall_ns.has_value();
        o.time_base_wall_ns = time_base_wall_ns.value_or(0);
        o.pid = pid;
        o.flow_id_offset = flow_id_offset;
        o.process_label_prefix = process_label_prefix.c_str();
        o.sort_index_offset = sort_index_offset;
        const char* file = path_arg(path);
        pk_status status;
        {
          py::gil_scoped_release release;
          status = pk_result_export_chrome_ex(self.get(), file, &o);
        }
        check(status);
      },
      py::arg("path"), py::kw_only(), py::arg("time_base_wall_ns") = py::none(), py::arg("pid") = -1,
      py::arg("flow_id_offset") = 0, py::arg("process_label_prefix") = "", py::arg("sort_index_offset") = 0,
      py::arg("label_durations") = false, py::arg("include_flows") = true,
      "Writes Chrome trace JSON placed in a shared timeline: ts 0 is time_base_wall_ns (wall-clock ns, at or "
      "before the first event), the host process gets `pid` (GPU d: pid + 10000000*(d+1); -1 keeps the OS pid), "
      "flow ids are offset, process names prefixed and sort indexes offset.");
}

}  // namespace profkit_py
