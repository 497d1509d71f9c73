// profkit._C — the thin binding the Python package is built on. It converts
// types, maps pk_status to Python exceptions, exposes result columns through
// the buffer protocol (zero-copy NumPy views), and releases the GIL around
// the long calls (collect, save, export, load). Everything else lives in the
// engine behind the C ABI.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "profkit/profkit.h"

namespace py = pybind11;

namespace {

[[noreturn]] void raise_status(pk_status status) {
  const std::string message = pk_last_error();
  switch (status) {
    case PK_ERR_NOT_FOUND:
      PyErr_SetString(PyExc_FileNotFoundError, message.c_str());
      break;
    case PK_ERR_IO:
      PyErr_SetString(PyExc_OSError, message.c_str());
      break;
    case PK_ERR_OUT_OF_MEMORY:
      PyErr_SetString(PyExc_MemoryError, message.c_str());
      break;
    case PK_ERR_INVALID_STATE:
    case PK_ERR_INTERNAL:
    case PK_ERR_UNSUPPORTED:
      PyErr_SetString(PyExc_RuntimeError, message.c_str());
      break;
    default:  // invalid argument, corrupt, version, too large
      PyErr_SetString(PyExc_ValueError, message.c_str());
      break;
  }
  throw py::error_already_set();
}

void check(pk_status status) {
  if (status != PK_OK) raise_status(status);
}

struct ResultDeleter {
  void operator()(pk_result* r) const { pk_result_release(r); }
};

// Owns a pk_result; columns are borrowed from it.
class Result {
 public:
  explicit Result(pk_result* r) : r_(r) {}
  const pk_result* get() const { return r_.get(); }

 private:
  std::unique_ptr<pk_result, ResultDeleter> r_;
};

// A read-only column of frozen records. Holding a reference to the Python
// Result object keeps the records alive as long as any view of them.
struct Column {
  py::object owner;
  const void* data;
  size_t count;
  size_t itemsize;
};

template <class T>
Column make_column(py::object owner, const T* (*accessor)(const pk_result*, size_t*)) {
  const Result& r = owner.cast<const Result&>();
  size_t n = 0;
  const T* data = accessor(r.get(), &n);
  return Column{std::move(owner), data, n, sizeof(T)};
}

std::unique_ptr<Result> collect() {
  pk_result* r = nullptr;
  pk_status status;
  {
    py::gil_scoped_release release;
    status = pk_collect(&r);
  }
  check(status);
  return std::make_unique<Result>(r);
}

std::unique_ptr<Result> load(const std::string& path) {
  pk_result* r = nullptr;
  pk_status status;
  {
    py::gil_scoped_release release;
    status = pk_result_load(path.c_str(), &r);
  }
  check(status);
  return std::make_unique<Result>(r);
}

py::dict result_info(const Result& self) {
  pk_result_info i{};
  i.struct_size = sizeof i;
  check(pk_result_get_info(self.get(), &i));
  py::dict d;
  d["profkit_version"] = i.profkit_version;
  d["schema_version"] = i.schema_version;
  d["pid"] = i.pid;
  d["hostname"] = i.hostname;
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
    d["name"] = py::str(t.name);
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
    row["name"] = py::str(d.name);
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

// Strings may hold any bytes (names come from C callers); decode leniently so
// a bad name never makes a whole trace unreadable from Python.
py::str decode(const char* text) {
  PyObject* s = PyUnicode_DecodeUTF8(text, static_cast<Py_ssize_t>(std::strlen(text)), "replace");
  if (s == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(s);
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "profkit engine binding (thin layer over the C ABI in profkit/profkit.h)";

  m.def("api_version", &pk_api_version, "(major << 16) | minor of the loaded libprofkit.so");
  m.def("version", &pk_version_string, "The profkit release of the loaded engine");

  m.def(
      "intern", [](const std::string& name) { return pk_intern(name.c_str()); },
      "Interns a name; returns its stable id", py::arg("name"));
  m.def(
      "name_string",
      [](pk_name_id id) -> py::object {
        const char* s = pk_name_string(id);
        return s == nullptr ? py::none() : py::object(decode(s));
      },
      py::arg("id"));
  m.def(
      "begin_event", [](pk_name_id name, int type) { pk_begin_event(name, static_cast<pk_event_type>(type)); },
      py::arg("name_id"), py::arg("event_type"));
  m.def(
      "begin_event_str", [](const char* name, int type) { pk_begin_event_str(name, static_cast<pk_event_type>(type)); },
      py::arg("name"), py::arg("event_type"));
  m.def("end_event", &pk_end_event);
  m.def(
      "instant_event", [](pk_name_id name, int type) { pk_instant_event(name, static_cast<pk_event_type>(type)); },
      py::arg("name_id"), py::arg("event_type"));
  m.def("event_arg_int", &pk_event_arg_int, py::arg("key_id"), py::arg("value"));
  m.def(
      "event_arg_str", [](pk_name_id key, const std::string& v) { pk_event_arg_str(key, v.c_str()); },
      py::arg("key_id"), py::arg("value"));
  m.def("now_ns", &pk_now_ns, "The engine clock (CLOCK_MONOTONIC ns)");
  m.def(
      "set_thread_name", [](const std::string& name) { check(pk_set_thread_name(name.c_str())); }, py::arg("name"));
  m.def("record_memory", &pk_record_memory, py::arg("device"), py::arg("address"), py::arg("bytes"),
        py::arg("total_allocated"), py::arg("total_reserved"));

  m.def(
      "set_state", [](int state) { check(pk_set_state(static_cast<pk_state>(state))); }, py::arg("state"));
  m.def("get_state", [] { return static_cast<int>(pk_get_state()); });
  m.def(
      "step", [](uint64_t n) { check(pk_step(n)); }, py::arg("num_samples") = 0);
  m.def(
      "step_begin", [](uint64_t n) { check(pk_step_begin(n)); }, py::arg("step_number"));
  m.def(
      "step_end", [](uint64_t n) { check(pk_step_end(n)); }, py::arg("num_samples") = 0);
  m.def("current_step", &pk_current_step);

  m.def(
      "set_memory_cap", [](uint64_t bytes) { check(pk_set_memory_cap(bytes)); }, py::arg("bytes"));
  m.def("get_memory_cap", &pk_get_memory_cap);
  m.def(
      "set_rank", [](int32_t rank, int32_t world) { check(pk_set_rank(rank, world)); }, py::arg("rank"),
      py::arg("world_size"));
  m.def(
      "set_metadata",
      [](const std::string& key, std::optional<std::string> value) {
        check(pk_set_metadata(key.c_str(), value ? value->c_str() : nullptr));
      },
      py::arg("key"), py::arg("value"));
  m.def("counters", [] {
    pk_counters c{};
    c.struct_size = sizeof c;
    check(pk_get_counters(&c));
    py::dict d;
    d["recorded_events"] = c.recorded_events;
    d["dropped_events"] = c.dropped_events;
    d["unmatched_ends"] = c.unmatched_ends;
    d["overflowed_events"] = c.overflowed_events;
    d["memory_used"] = c.memory_used;
    d["memory_cap"] = c.memory_cap;
    return d;
  });

  m.def("collect", &collect, "Takes everything recorded since the last collect");
  m.def("load", &load, py::arg("path"), "Loads a .pktrace file (verified)");

  py::class_<Column>(m, "Column", py::buffer_protocol())
      .def_buffer([](Column& c) {
        // Raw bytes; NumPy views them with the record dtype (profkit._records).
        return py::buffer_info(const_cast<void*>(c.data), 1, py::format_descriptor<uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(c.count * c.itemsize)}, {1}, /*readonly=*/true);
      })
      .def("__len__", [](const Column& c) { return c.count; })
      .def_readonly("itemsize", &Column::itemsize);

  py::class_<Result>(m, "Result")
      .def(
          "save",
          [](const Result& self, const std::string& path) {
            pk_status status;
            {
              py::gil_scoped_release release;
              status = pk_result_save(self.get(), path.c_str());
            }
            check(status);
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
            pk_status status;
            {
              py::gil_scoped_release release;
              status = pk_result_export_chrome_ex(self.get(), path.c_str(), &o);
            }
            check(status);
          },
          py::arg("path"), py::arg("label_durations") = false, py::arg("include_flows") = true)
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
