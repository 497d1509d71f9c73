// Result entry points of the C ABI: collect, save, export, load, release and
// the read-only accessors.
#include <cstring>
#include <string>

#include "capi_guard.h"
#include "export/chrome_trace.h"
#include "export/chrome_trace_reader.h"
#include "export/folded_stacks.h"
#include "recorder/recorder.h"
#include "result_handle.h"
#include "storage/trace_file.h"

using profkit::guarded;
using profkit::require;

namespace {

// Accessors take a possibly-NULL result and must never crash on it.
template <class T>
const T* column_data(const pk_result* r, const profkit::Column<T> profkit::Result::*column, size_t* count) {
  if (count != nullptr) *count = 0;
  if (r == nullptr || r->impl == nullptr) return nullptr;
  const profkit::Column<T>& c = (*r->impl).*column;
  if (count != nullptr) *count = c.size();
  return c.data();
}

void require_result(const pk_result* r, const char* function) {
  if (r == nullptr || r->impl == nullptr) {
    throw profkit::Error(
        PK_ERR_INVALID_ARGUMENT,
        std::string(function) + ": the result is NULL; pass the pk_result that pk_collect or pk_result_load returned");
  }
}

// Rejects an index past the end of a table, saying how long the table is.
void require_index(size_t index, size_t size, const char* function, const char* what) {
  if (index >= size) {
    throw profkit::Error(PK_ERR_INVALID_ARGUMENT, std::string(function) + ": index " + std::to_string(index) +
                                                      " is out of range (" + std::to_string(size) + " " + what + ")");
  }
}

}  // namespace

extern "C" {

PK_API pk_status pk_collect(pk_result** out) noexcept {
  return guarded("pk_collect", [&] {
    require(out, "pk_collect", "out");
    *out = nullptr;
    auto handle = std::make_unique<pk_result>();
    handle->impl = profkit::Recorder::instance().collect();
    *out = handle.release();
  });
}

PK_API pk_status pk_result_save(const pk_result* r, const char* path) noexcept {
  return guarded("pk_result_save", [&] {
    require_result(r, "pk_result_save");
    require(path, "pk_result_save", "path");
    profkit::save_result(*r->impl, path);
  });
}

PK_API void pk_chrome_options_init(pk_chrome_options* options) noexcept {
  if (options == nullptr || options->struct_size < sizeof(size_t)) return;
  pk_chrome_options defaults{};
  defaults.struct_size = sizeof defaults;
  defaults.label_durations = 0;
  defaults.include_flows = 1;
  defaults.pid = -1;
  const size_t n = options->struct_size < sizeof defaults ? options->struct_size : sizeof defaults;
  std::memcpy(reinterpret_cast<char*>(options) + sizeof(size_t),
              reinterpret_cast<const char*>(&defaults) + sizeof(size_t), n - sizeof(size_t));
}

PK_API pk_status pk_result_export_chrome_ex(const pk_result* r, const char* path,
                                            const pk_chrome_options* options) noexcept {
  return guarded("pk_result_export_chrome", [&] {
    require_result(r, "pk_result_export_chrome");
    require(path, "pk_result_export_chrome", "path");
    profkit::ChromeOptions o;
    // A struct_size below its own field's end was read as "all defaults"
    // until 1.6 and still is (never break v1); sizes that cut a field in two
    // are refused.
    if (options != nullptr && options->struct_size >= sizeof(size_t)) {
      using O = pk_chrome_options;
      O defaults{};
      defaults.struct_size = sizeof defaults;
      pk_chrome_options_init(&defaults);
      const O given = profkit::read_versioned(
          *options, defaults, "pk_result_export_chrome", "pk_chrome_options",
          {PK_FIELD_END(O, struct_size), PK_FIELD_END(O, label_durations), PK_FIELD_END(O, include_flows),
           PK_FIELD_END(O, use_time_base), PK_FIELD_END(O, sort_index_offset), PK_FIELD_END(O, time_base_wall_ns),
           PK_FIELD_END(O, pid), PK_FIELD_END(O, flow_id_offset), PK_FIELD_END(O, process_label_prefix)});
      o.label_durations = given.label_durations != 0;
      o.include_flows = given.include_flows != 0;
      o.use_time_base = given.use_time_base != 0;
      o.time_base_wall_ns = given.time_base_wall_ns;
      if (given.pid < -1) {
        throw profkit::Error(PK_ERR_INVALID_ARGUMENT, "pk_result_export_chrome: pid " + std::to_string(given.pid) +
                                                          " is not a process id (use -1 for the OS pid)");
      }
      o.pid = given.pid;
      o.flow_id_offset = given.flow_id_offset;
      if (given.process_label_prefix != nullptr) o.process_label_prefix = given.process_label_prefix;
      o.sort_index_offset = given.sort_index_offset;
    }
    profkit::export_chrome_trace(*r->impl, path, o);
  });
}

PK_API pk_status pk_result_export_chrome(const pk_result* r, const char* path) noexcept {
  return pk_result_export_chrome_ex(r, path, nullptr);
}

PK_API pk_status pk_result_export_stacks(const pk_result* r, const char* path, pk_stacks_metric metric) noexcept {
  const int32_t raw = profkit::raw_enum(metric);  // any int a C caller passed
  return guarded("pk_result_export_stacks", [&] {
    require_result(r, "pk_result_export_stacks");
    require(path, "pk_result_export_stacks", "path");
    if (raw != PK_STACKS_SELF_CPU && raw != PK_STACKS_SELF_DEVICE) {
      throw profkit::Error(PK_ERR_INVALID_ARGUMENT,
                           "pk_result_export_stacks: metric " + std::to_string(raw) +
                               " is not a pk_stacks_metric; use PK_STACKS_SELF_CPU (0) or PK_STACKS_SELF_DEVICE (1)");
    }
    profkit::export_folded_stacks(
        *r->impl, path,
        raw == PK_STACKS_SELF_DEVICE ? profkit::StacksMetric::kSelfDevice : profkit::StacksMetric::kSelfCpu);
  });
}

PK_API pk_status pk_result_load(const char* path, pk_result** out) noexcept {
  return guarded("pk_result_load", [&] {
    require(out, "pk_result_load", "out");
    *out = nullptr;
    require(path, "pk_result_load", "path");
    auto handle = std::make_unique<pk_result>();
    // profkit's own Chrome JSON (what export_chrome_tracing leaves) or a .pktrace.
    handle->impl = profkit::looks_like_json_file(path) ? profkit::read_chrome_trace(path) : profkit::load_result(path);
    *out = handle.release();
  });
}

PK_API void pk_result_release(pk_result* r) noexcept { delete r; }

PK_API pk_status pk_result_get_info(const pk_result* r, pk_result_info* out) noexcept {
  return guarded("pk_result_get_info", [&] {
    require_result(r, "pk_result_get_info");
    const profkit::Result& res = *r->impl;
    const profkit::ResultInfo& i = res.info;
    pk_result_info info{};
    info.profkit_version = i.profkit_version.c_str();
    info.schema_version = i.schema_version;
    info.pid = i.pid;
    info.hostname = i.hostname.c_str();
    info.rank = i.rank;
    info.world_size = i.world_size;
    info.span_index = i.span_index;
    info.start_ns = i.start_ns;
    info.end_ns = i.end_ns;
    info.clock_offset_ns = i.clock_offset_ns;
    info.host_event_count = res.host_events.size();
    info.thread_count = res.threads.size();
    info.dropped_events = i.dropped_events;
    info.unmatched_ends = i.unmatched_ends;
    info.overflowed_events = i.overflowed_events;
    info.unfinished_events = i.unfinished_events;
    info.device_event_count = res.device_events.size();
    info.dropped_device_records = i.dropped_device_records;
    info.unattached_device_records = i.unattached_device_records;
    const auto [first_step, step_count] = res.step_range();
    info.first_step = first_step;
    info.step_count = step_count;
    info.process_cpu_ns = i.process_cpu_ns;
    info.system_busy_ns = i.system_busy_ns;
    info.system_idle_ns = i.system_idle_ns;
    info.cpu_count = i.cpu_count;
    info.lost_event_args = i.lost_event_args;
    profkit::copy_versioned(out, info, "pk_result_get_info");
  });
}

PK_API size_t pk_result_string_count(const pk_result* r) noexcept {
  return r == nullptr || r->impl == nullptr ? 0 : r->impl->strings.size();
}

PK_API const char* pk_result_string(const pk_result* r, size_t index) noexcept {
  if (r == nullptr || r->impl == nullptr || index >= r->impl->strings.size()) return nullptr;
  return r->impl->strings.c_str(index);
}

PK_API size_t pk_result_thread_count(const pk_result* r) noexcept {
  return r == nullptr || r->impl == nullptr ? 0 : r->impl->threads.size();
}

PK_API pk_status pk_result_get_thread(const pk_result* r, size_t index, pk_thread_info* out) noexcept {
  return guarded("pk_result_get_thread", [&] {
    require_result(r, "pk_result_get_thread");
    require_index(index, r->impl->threads.size(), "pk_result_get_thread", "threads");
    const profkit::ThreadRecord& t = r->impl->threads[index];
    pk_thread_info info{};
    info.tid = t.tid;
    info.name = t.name.c_str();
    info.first_event = t.first_event;
    info.event_count = t.event_count;
    profkit::copy_versioned(out, info, "pk_result_get_thread");
  });
}

PK_API const pk_host_event* pk_result_host_events(const pk_result* r, size_t* count) noexcept {
  return column_data(r, &profkit::Result::host_events, count);
}

PK_API const pk_event_arg* pk_result_event_args(const pk_result* r, size_t* count) noexcept {
  return column_data(r, &profkit::Result::event_args, count);
}

PK_API const pk_memory_event* pk_result_memory_events(const pk_result* r, size_t* count) noexcept {
  return column_data(r, &profkit::Result::memory_events, count);
}

PK_API const pk_device_event* pk_result_device_events(const pk_result* r, size_t* count) noexcept {
  return column_data(r, &profkit::Result::device_events, count);
}

PK_API const pk_kernel_detail* pk_result_kernel_details(const pk_result* r, size_t* count) noexcept {
  return column_data(r, &profkit::Result::kernel_details, count);
}

PK_API const pk_memory_op_detail* pk_result_memory_op_details(const pk_result* r, size_t* count) noexcept {
  return column_data(r, &profkit::Result::memory_op_details, count);
}

PK_API size_t pk_result_device_count(const pk_result* r) noexcept {
  return r == nullptr || r->impl == nullptr ? 0 : r->impl->devices.size();
}

PK_API pk_status pk_result_get_device(const pk_result* r, size_t index, pk_device_info* out) noexcept {
  return guarded("pk_result_get_device", [&] {
    require_result(r, "pk_result_get_device");
    require_index(index, r->impl->devices.size(), "pk_result_get_device", "devices");
    const profkit::DeviceInfo& d = r->impl->devices[index];
    pk_device_info info{};
    info.id = d.id;
    info.name = d.name.c_str();
    info.sm_count = d.sm_count;
    info.compute_major = d.compute_major;
    info.compute_minor = d.compute_minor;
    info.total_memory = d.total_memory;
    info.max_threads_per_sm = d.max_threads_per_sm;
    info.max_registers_per_sm = d.max_registers_per_sm;
    info.max_shared_memory_per_sm = d.max_shared_memory_per_sm;
    info.max_blocks_per_sm = d.max_blocks_per_sm;
    info.warp_size = d.warp_size;
    profkit::copy_versioned(out, info, "pk_result_get_device");
  });
}

PK_API uint64_t pk_result_parent(const pk_result* r, uint64_t event) noexcept {
  if (r == nullptr || r->impl == nullptr) return PK_NO_EVENT;
  return r->impl->parent_of(event);
}

PK_API size_t pk_result_metadata_count(const pk_result* r) noexcept {
  return r == nullptr || r->impl == nullptr ? 0 : r->impl->metadata.size();
}

PK_API pk_status pk_result_metadata(const pk_result* r, size_t index, const char** key, const char** value) noexcept {
  return guarded("pk_result_metadata", [&] {
    require_result(r, "pk_result_metadata");
    require(key, "pk_result_metadata", "key");
    require(value, "pk_result_metadata", "value");
    require_index(index, r->impl->metadata.size(), "pk_result_metadata", "metadata entries");
    *key = r->impl->metadata[index].first.c_str();
    *value = r->impl->metadata[index].second.c_str();
  });
}

}  // extern "C"
