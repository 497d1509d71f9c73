// Recording, state, steps and configuration: one Python function per C ABI call
// (but step() and reader_time_ns(), which every training step calls: hot_calls.cpp).
// Text arguments are EngineText (binding.h): a lone surrogate is recorded as
// U+FFFD, a NUL refused.
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "binding.h"

namespace profkit_py {

void bind_engine(py::module_& m) {
  m.def("api_version", &pk_api_version, "(major << 16) | minor of the loaded libprofkit.so");
  m.def("version", &pk_version_string, "The profkit release of the loaded engine");

  m.def(
      "intern",
      [](const EngineText& name) {
        const pk_name_id id = pk_intern(text_arg(name.utf8, "name"));
        // 0 is "" itself; for any other name it means the engine could not
        // intern it (the table is full, or memory ran out), and pk_last_error
        // says which. Returned as is, the id named every event ""; a
        // MemoryError, as for the engine's other PK_ERR_OUT_OF_MEMORY.
        if (id == 0 && !name.utf8.empty()) raise_status(PK_ERR_OUT_OF_MEMORY);
        return id;
      },
      "Interns a name; returns its stable id. MemoryError when the engine's name table is full", py::arg("name"));
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
      "begin_event_str",
      [](const EngineText& name, int type) {
        pk_begin_event_str(text_arg(name.utf8, "event name"), static_cast<pk_event_type>(type));
      },
      py::arg("name"), py::arg("event_type"));
  m.def("end_event", &pk_end_event);
  m.def(
      "instant_event", [](pk_name_id name, int type) { pk_instant_event(name, static_cast<pk_event_type>(type)); },
      py::arg("name_id"), py::arg("event_type"));
  m.def("event_arg_int", &pk_event_arg_int, py::arg("key_id"), py::arg("value"));
  m.def(
      "event_arg_str",
      [](pk_name_id key, const EngineText& v) { pk_event_arg_str(key, text_arg(v.utf8, "argument value")); },
      py::arg("key_id"), py::arg("value"));
  m.def("now_ns", &pk_now_ns, "The engine clock (CLOCK_MONOTONIC ns)");
  m.def(
      "data_loading_begin",
      [](pk_name_id name) {
        const uint32_t window = pk_recording_word;
        if (window != 0) name_thread_in_window(window);  // its Dataloader event's lane
        pk_data_loading_begin(name);
      },
      "Opens a data-loading range on this thread", py::arg("name_id"));
  m.def("data_loading_end", &pk_data_loading_end, "Closes this thread's innermost data-loading range");
  m.def("data_loading_depth", &pk_data_loading_depth, "Data-loading ranges open on this thread");
  m.def(
      "set_thread_name",
      [](const EngineText& name) {
        check(pk_set_thread_name(text_arg(name.utf8, "thread name")));
        note_thread_named();  // RecordEvent no longer names it after its threading.Thread
      },
      py::arg("name"));
  m.def("record_memory", &pk_record_memory, py::arg("device"), py::arg("address"), py::arg("bytes"),
        py::arg("total_allocated"), py::arg("total_reserved"));

  m.def(
      "set_state",
      [](int state) {
        // Converting an int outside the enum's range to pk_state is undefined
        // in C++: refuse it here, in the engine's words.
        if (state < PK_STATE_CLOSED || state > PK_STATE_RECORD_AND_RETURN) {
          throw py::value_error("set_state: " + std::to_string(state) +
                                " is not a pk_state (use PK_STATE_CLOSED, READY, RECORD or RECORD_AND_RETURN)");
        }
        check(pk_set_state(static_cast<pk_state>(state)));
      },
      py::arg("state"));
  m.def("get_state", [] { return static_cast<int>(pk_get_state()); });
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
      [](const EngineText& key, const std::optional<EngineText>& value) {
        check(pk_set_metadata(text_arg(key.utf8, "metadata key"),
                              value ? text_arg(value->utf8, "metadata value") : nullptr));
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
}

}  // namespace profkit_py
