// Results: collect, load, save, export, and read-only views of their contents.
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "binding.h"

namespace profkit_py {

namespace {

// With `into` (a list), the Result is also appended to it before the call
// returns: CPython runs signal handlers right after a call returns, so a
// Ctrl-C landing during a long collect raises before the caller can store
// what it returned, and the window (already taken from the engine) would be
// lost. The list holds it whatever happens next.
py::object collect(py::object into) {
  pk_result* r = nullptr;
  pk_status status;
  {
    py::gil_scoped_release release;
    status = pk_collect(&r);
  }
  check(status);
  py::object result = py::cast(std::make_unique<Result>(r));
  if (!into.is_none()) into.cast<py::list>().append(result);
  return result;
}

std::unique_ptr<Result> load(const std::string& path) {
  pk_result* r = nullptr;
  pk_status status;
  const char* file = path_arg(path);
  {
    py::gil_scoped_release release;
    status = pk_result_load(file, &r);
  }
  check(status, file);
  return std::make_unique<Result>(r);
}

py::dict result_info(const Result& self) {
  pk_result_info i{};
  i.struct_size = sizeof i;
  check(pk_result_get_info(self.get(), &i));
  py::dict d;
  d["profkit_version"] = decode(i.profkit_version);
  d["schema_version"] = i.schema_version;
  d["pid"] = i.pid;
  d["hostname"] = decode(i.hostname);
  d["rank"] = i.rank;
  d["world_size"] = i.world_size;
  d["span_index"] = i.span_index;
  d["start_ns"] = i.start_ns;
  d["end_ns"] = i.end_ns;
  d["clock_offset_ns"] = i.clock_offset_ns;
  d["host_event_count"] = i.host_event_count;
  d["thread_count"] = i.thread_count;
  d["dropped_events"] = i.dropped_events;
  d["unmatched_ends"] = i.unmatched_ends;
  d["overflowed_events"] = i.overflowed_events;
  d["unfinished_events"] = i.unfinished_events;
  d["first_step"] = i.first_step;
  d["step_count"] = i.step_count;
  d["process_cpu_ns"] = i.process_cpu_ns;
  d["system_busy_ns"] = i.system_busy_ns;
  d["system_idle_ns"] = i.system_idle_ns;
  d["cpu_count"] = i.cpu_count;
  d["device_event_count"] = i.device_event_count;
  d["dropped_device_records"] = i.dropped_device_records;
  d["lost_event_args"] = i.lost_event_args;
  d["unattached_device_records"] = i.unattached_device_records;
  return d;
}

py::list result_threads(const Result& self) {
  py::list out;
  for (size_t k = 0; k < pk_result_thread_count(self.get()); ++k) {
    pk_thread_info t{};
    t.struct_size = sizeof t;
    check(pk_result_get_thread(self.get(), k, &t));
    py::dict d;
    d["tid"] = t.tid;
    d["name"] = decode(t.name);
    d["first_event"] = t.first_event;
    d["event_count"] = t.event_count;
    out.append(std::move(d));
  }
  return out;
}

py::list result_devices(const Result& self) {
  py::list out;
  for (size_t k = 0; k < pk_result_device_count(self.get()); ++k) {
    pk_device_info d{};
    d.struct_size = sizeof d;
    check(pk_result_get_device(self.get(), k, &d));
    py::dict row;
    row["id"] = d.id;
    row["name"] = decode(d.name);
    row["sm_count"] = d.sm_count;
    row["compute_capability"] = py::make_tuple(d.compute_major, d.compute_minor);
    row["total_memory"] = d.total_memory;
    row["max_threads_per_sm"] = d.max_threads_per_sm;
    row["max_registers_per_sm"] = d.max_registers_per_sm;
    row["max_shared_memory_per_sm"] = d.max_shared_memory_per_sm;
    row["max_blocks_per_sm"] = d.max_blocks_per_sm;
    row["warp_size"] = d.warp_size;
    out.append(std::move(row));
  }
  return out;
}

}  // namespace

void bind_result(py::module_& m, py::class_<Result>& result) {
  m.def("collect", &collect, py::arg("into") = py::none(),
        "Takes everything recorded since the last collect (also appended to the list `into`, if given)");
  m.def("load", &load, py::arg("path"), "Loads a .pktrace file (verified) or a Chrome trace JSON profkit wrote");

  py::class_<Column>(m, "Column", py::buffer_protocol())
      .def_buffer([](Column& c) {
        // Raw bytes; NumPy views them with the record dtype (profkit._records).
        return py::buffer_info(const_cast<void*>(c.data), 1, py::format_descriptor<uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(c.count * c.itemsize)}, {1}, /*readonly=*/true);
      })
      .def("__len__", [](const Column& c) { return c.count; })
      .def_readonly("itemsize", &Column::itemsize);

  result
      .def(
          "save",
          [](const Result& self, const std::string& path) {
            const char* file = path_arg(path);
            pk_status status;
            {
              py::gil_scoped_release release;
              status = pk_result_save(self.get(), file);
            }
            check(status, file);
          },
          py::arg("path"))
      .def(
          "export_chrome",
          [](const Result& self, const std::string& path, bool label_durations, bool include_flows) {
            pk_chrome_options o{};
            o.struct_size = sizeof o;
            pk_chrome_options_init(&o);
            o.label_durations = label_durations;
            o.include_flows = include_flows;
            const char* file = path_arg(path);
            pk_status status;
            {
              py::gil_scoped_release release;
              status = pk_result_export_chrome_ex(self.get(), file, &o);
            }
            check(status, file);
          },
          py::arg("path"), py::arg("label_durations") = false, py::arg("include_flows") = true)
      .def(
          "export_stacks",
          [](const Result& self, const std::string& path, int metric) {
            const char* file = path_arg(path);
            // Any int goes through: the engine refuses what is not a metric, with the valid ones.
            const auto as_metric = static_cast<pk_stacks_metric>(metric);
            pk_status status;
            {
              py::gil_scoped_release release;
              status = pk_result_export_stacks(self.get(), file, as_metric);
            }
            check(status, file);
          },
          py::arg("path"), py::arg("metric") = static_cast<int>(PK_STACKS_SELF_CPU))
      .def("info", &result_info)
      .def("threads", &result_threads)
      .def("devices", &result_devices)
      .def("strings",
           [](const Result& self) {
             py::list out;
             for (size_t k = 0; k < pk_result_string_count(self.get()); ++k)
               out.append(decode(pk_result_string(self.get(), k)));
             return out;
           })
      .def("metadata",
           [](const Result& self) {
             py::dict d;
             for (size_t k = 0; k < pk_result_metadata_count(self.get()); ++k) {
               const char* key = nullptr;
               const char* value = nullptr;
               check(pk_result_metadata(self.get(), k, &key, &value));
               d[decode(key)] = decode(value);
             }
             return d;
           })
      .def(
          "parent",
          [](const Result& self, uint64_t event) -> py::object {
            const uint64_t p = pk_result_parent(self.get(), event);
            return p == PK_NO_EVENT ? py::none() : py::object(py::int_(p));
          },
          py::arg("event"))
      .def_property_readonly("host_events", [](py::object self) { return make_column(self, &pk_result_host_events); })
      .def_property_readonly("event_args", [](py::object self) { return make_column(self, &pk_result_event_args); })
      .def_property_readonly("memory_events",
                             [](py::object self) { return make_column(self, &pk_result_memory_events); })
      .def_property_readonly("device_events",
                             [](py::object self) { return make_column(self, &pk_result_device_events); })
      .def_property_readonly("kernel_details",
                             [](py::object self) { return make_column(self, &pk_result_kernel_details); })
      .def_property_readonly("memory_op_details",
                             [](py::object self) { return make_column(self, &pk_result_memory_op_details); });
}

}  // namespace profkit_py
