#include "export/chrome_trace_reader.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "common/event_types.h"
#include "export/chrome_json_scan.h"
#include "export/chrome_json_values.h"
#include "export/chrome_trace.h"
#include "export/device_kind_names.h"
#include "trace/result_builder.h"

namespace profkit {

namespace {

// ---- the loader ---------------------------------------------------------------------

DeviceInfo device_info_from(const std::unordered_map<std::string, JsonScalar>& fields);

// Builds a Result from the scanned events. Times are kept relative to the
// file's base until the "profkit" object (which comes last) says where that
// base is.
class ChromeTraceLoader {
 public:
  explicit ChromeTraceLoader(std::string path) : path_(std::move(path)), builder_(ResultInfo{}) {
    intern("");  // id 0 is the empty string, as in every Result
    for (uint32_t t = 0; t < PK_EVENT_TYPE_COUNT; ++t) type_by_name_.emplace(event_type_name(t), t);
  }

  // Reads one event. The first problem is kept, not thrown, so that a file
  // another tool wrote is named as such (its "profkit" object, or the lack
  // of one, comes last) rather than by its first unfamiliar event.
  void on_event(const JsonTraceEvent& e) {
    ++event_index_;
    if (first_problem_) return;
    try {
      read_event(e);
    } catch (const Error&) {
      first_problem_ = std::current_exception();
    }
  }

  std::unique_ptr<Result> finish(const JsonProfkitObject& meta);

 private:
  void read_event(const JsonTraceEvent& e) {
    if (e.ph == "M") return thread_label(e);
    if (e.ph == "X" || e.ph == "i") {
      if (e.cat == "profkit" && e.scope == "g") return;  // the loss marker; the counts are in the metadata
      if (e.cat == "Memory" && e.ph == "i") return memory_event(e);
      const uint32_t type = type_of(e.cat);
      if (is_device_type(type) && e.ph == "X" && on_gpu_process(e)) return device_event(e, type);
      return host_event(e, type);
    }
    if (e.ph == "s" || e.ph == "f" || e.ph == "C") return;  // flow arrows and counters: derived data
    fail("its phase \"" + e.ph + "\" is not one profkit writes");
  }

  struct PendingHost {
    uint64_t start_ns;  // relative to the file's base
    uint64_t end_ns;
    uint32_t thread;
    uint32_t name;
    uint8_t type;
    uint8_t depth_hint;
    uint16_t flags;
    int64_t correlation_id;  // -1: not a runtime call that launched GPU work
  };
  struct PendingArg {
    size_t event;  // index into hosts_
    uint32_t key;
    pk_arg_kind kind;
    int64_t value;
  };
  struct ThreadLabel {
    uint64_t pid;
    uint64_t lane;
    std::string label;
  };

  void strip_duration_labels();

  // The steps of finish(), in order.
  int64_t check_loadable(const JsonProfkitObject& meta) const;
  void check_counts(const JsonProfkitObject& meta, int64_t layout) const;
  uint64_t absolute(uint64_t relative) const;
  void add_host_events();
  void add_memory_events();
  void add_device_events();
  void name_threads(uint64_t host_pid);

  [[noreturn]] void fail(const std::string& problem) const {
    throw Error(PK_ERR_CORRUPT, "cannot load '" + path_ + "': trace event " + std::to_string(event_index_) + ": " +
                                    problem + " (was the file edited, or written by another tool?)");
  }
  [[noreturn]] void fail_file(const std::string& problem) const {
    throw Error(PK_ERR_CORRUPT, "cannot load '" + path_ + "': " + problem);
  }

  uint32_t intern(const std::string& text) {
    auto [it, inserted] = string_ids_.emplace(text, 0);
    if (inserted) it->second = builder_.add_string(text);
    return it->second;
  }

  uint32_t type_of(const std::string& category) {
    const auto it = type_by_name_.find(category);
    if (it == type_by_name_.end()) fail("its category \"" + category + "\" is not an event type profkit knows");
    return it->second;
  }

  uint64_t number(const JsonScalar& value, const char* what) const {
    if (!value.is_number()) fail(std::string("its \"") + what + "\" is missing or not a number");
    const std::optional<uint64_t> v = parse_integer<uint64_t>(value.text);
    if (!v) fail(std::string("its \"") + what + "\" (" + value.text + ") is not a whole number >= 0");
    return *v;
  }
  uint64_t time(const JsonScalar& value, const char* what) const {
    if (!value.is_number()) fail(std::string("its \"") + what + "\" is missing or not a number");
    const std::optional<uint64_t> ns = parse_us(value.text);
    if (!ns) fail(std::string("its \"") + what + "\" (" + value.text + ") is not a time in µs >= 0");
    return *ns;
  }
  uint64_t end_of(uint64_t start, const JsonTraceEvent& e) const {
    const uint64_t duration = time(e.dur, "dur");
    if (duration > UINT64_MAX - start) fail("its \"dur\" runs past the end of time");
    return start + duration;
  }
  uint64_t arg_number(const JsonTraceEvent& e, const char* key) const {
    const JsonTraceEvent::Arg* arg = e.find_arg(key);
    if (arg == nullptr) fail(std::string("it has no \"") + key + "\" argument");
    return number(arg->value, key);
  }
  int64_t arg_signed(const JsonTraceEvent& e, const char* key) const {
    const JsonTraceEvent::Arg* arg = e.find_arg(key);
    const std::optional<int64_t> v =
        arg != nullptr && arg->value.is_number() ? parse_integer<int64_t>(arg->value.text) : std::nullopt;
    if (!v) fail(std::string("its \"") + key + "\" argument is missing or not a whole number");
    return *v;
  }
  // A whole-number argument of a narrower field: a value that does not fit is
  // damage, refused rather than cut to its low bits.
  template <class T>
  T arg_fitting(const JsonTraceEvent& e, const char* key) const {
    const uint64_t v = arg_number(e, key);
    if (v > std::numeric_limits<T>::max()) {
      fail(std::string("its \"") + key + "\" (" + std::to_string(v) + ") is larger than " +
           std::to_string(std::numeric_limits<T>::max()));
    }
    return static_cast<T>(v);
  }
  float arg_float(const JsonTraceEvent& e, const char* key) const {
    const JsonTraceEvent::Arg* arg = e.find_arg(key);
    if (arg == nullptr || !arg->value.is_number()) return 0.0f;
    return std::strtof(arg->value.text.c_str(), nullptr);
  }

  // The process every host event and memory event belongs to.
  void check_host_pid(const JsonTraceEvent& e) {
    const uint64_t pid = number(e.pid, "pid");
    if (!host_pid_) {
      host_pid_ = pid;
    } else if (*host_pid_ != pid) {
      fail("it belongs to process " + std::to_string(pid) + ", the others to " + std::to_string(*host_pid_) +
           ": a timeline of several processes; load each process's own trace");
    }
  }
  // Whether a Kernel/Memcpy/Memset event is GPU work: the writer puts GPU d
  // of host pid p on process p + kDeviceProcessStride * (d + 1), with a
  // "device" argument, while a host event of such a type (pk_begin_event
  // takes every type) stays on the host pid with the other host events.
  bool on_gpu_process(const JsonTraceEvent& e) const {
    const uint64_t pid = number(e.pid, "pid");
    if (host_pid_) return pid != *host_pid_;
    // Before any host event (the writer puts them first): OS pids are below
    // the stride (Linux's pid_max is at most 2^22), GPU processes above it.
    return pid >= kDeviceProcessStride && e.find_arg("device") != nullptr;
  }
  uint32_t thread_of_lane(const JsonTraceEvent& e) {
    const uint64_t lane = number(e.tid, "tid");
    return builder_.thread(thread_of_lane_id(lane));
  }

  void thread_label(const JsonTraceEvent& e) {
    if (e.name != "thread_name") return;
    const JsonTraceEvent::Arg* name = e.find_arg("name");
    if (name == nullptr || !name->value.is_string() || !e.pid.is_number() || !e.tid.is_number()) return;
    labels_.push_back({number(e.pid, "pid"), number(e.tid, "tid"), name->value.text});
  }

  void host_event(const JsonTraceEvent& e, uint32_t type) {
    check_host_pid(e);
    const uint32_t thread = thread_of_lane(e);
    const bool instant = e.ph == "i";
    const uint64_t start = time(e.ts, "ts");
    const uint64_t end = instant ? start : end_of(start, e);
    // Nesting on this thread as the file lists it (enclosing first): the
    // depth that orders events with equal start and end, and pairs each
    // argument with its event.
    if (thread >= open_ends_.size()) open_ends_.resize(thread + 1);
    std::vector<uint64_t>& open_ends = open_ends_[thread];
    while (!open_ends.empty() && open_ends.back() < end) open_ends.pop_back();
    const uint8_t depth = static_cast<uint8_t>(std::min<size_t>(open_ends.size(), 254));
    open_ends.push_back(end);

    PendingHost host{start,
                     end,
                     thread,
                     intern(e.name),
                     static_cast<uint8_t>(type),
                     depth,
                     static_cast<uint16_t>(instant ? PK_HOST_EVENT_INSTANT : 0),
                     -1};
    for (size_t i = 0; i < e.arg_count; ++i) {
      const JsonTraceEvent::Arg& arg = e.args[i];
      if (type == PK_EVENT_CUDA_RUNTIME && arg.key == "correlation id") {
        host.correlation_id = static_cast<int64_t>(number(arg.value, "correlation id"));
      } else if (arg.value.is_string()) {
        args_.push_back({hosts_.size(), intern(arg.key), PK_ARG_STRING, intern(arg.value.text)});
      } else if (const std::optional<int64_t> v =
                     arg.value.is_number() ? parse_integer<int64_t>(arg.value.text) : std::nullopt) {
        args_.push_back({hosts_.size(), intern(arg.key), PK_ARG_INT, *v});
      } else {
        fail("its argument \"" + arg.key + "\" is neither a string nor a whole number");
      }
    }
    hosts_.push_back(host);
  }

  void memory_event(const JsonTraceEvent& e) {
    check_host_pid(e);
    pk_memory_event m{};
    m.time_ns = time(e.ts, "ts");
    m.thread = thread_of_lane(e);
    m.device = static_cast<int32_t>(arg_signed(e, "Device"));
    m.address = arg_number(e, "Addr");
    m.bytes = arg_signed(e, "Bytes");
    m.total_allocated = arg_number(e, "Total Allocated");
    m.total_reserved = arg_number(e, "Total Reserved");
    memory_.push_back(m);
  }

  void device_event(const JsonTraceEvent& e, uint32_t type) {
    pk_device_event d{};
    d.start_ns = time(e.ts, "ts");
    d.end_ns = end_of(d.start_ns, e);
    d.launch_event = PK_NO_EVENT;
    d.name = intern(e.name);
    d.type = static_cast<uint8_t>(type);
    d.device = arg_fitting<uint16_t>(e, "device");
    d.stream = arg_fitting<uint32_t>(e, "stream");
    d.context = arg_fitting<uint32_t>(e, "context");
    d.correlation_id = arg_fitting<uint32_t>(e, "correlation id");
    const JsonTraceEvent::Arg* no_timing = e.find_arg("no timing");
    if (no_timing != nullptr && no_timing->value.kind == JsonScalar::Kind::kBool && no_timing->value.boolean) {
      d.flags |= PK_DEVICE_EVENT_NO_TIMING;
      // Placed before the file's base, where ts cannot reach (chrome_trace.h):
      // its own time, in engine ns, replaces the clamped ts in finish().
      if (e.find_arg("placed at ns") != nullptr) placed_.push_back({devices_.size(), arg_number(e, "placed at ns")});
    }
    d.detail = PK_NO_DETAIL;
    if (type == PK_EVENT_KERNEL && e.find_arg("grid") != nullptr) {
      d.detail = builder_.add_kernel_detail(kernel_detail(e));
    } else if (type != PK_EVENT_KERNEL && e.find_arg("bytes") != nullptr) {
      d.detail = builder_.add_memory_op_detail(memory_op_detail(e, type));
    }
    devices_.push_back(d);
  }

  void dims(const JsonTraceEvent& e, const char* key, uint32_t (&out)[3]) const {
    const JsonTraceEvent::Arg* arg = e.find_arg(key);
    if (arg == nullptr || !arg->is_array || arg->numbers.size() != 3) {
      fail(std::string("its \"") + key + "\" is not a list of 3 numbers");
    }
    for (size_t i = 0; i < 3; ++i) {
      const std::optional<uint32_t> v = parse_integer<uint32_t>(arg->numbers[i]);
      if (!v) fail(std::string("its \"") + key + "\" holds " + arg->numbers[i] + ", not a whole number");
      out[i] = *v;
    }
  }

  pk_kernel_detail kernel_detail(const JsonTraceEvent& e) const {
    pk_kernel_detail k{};
    dims(e, "grid", k.grid);
    dims(e, "block", k.block);
    k.registers_per_thread = arg_fitting<uint32_t>(e, "registers per thread");
    k.static_shared_memory = arg_fitting<uint32_t>(e, "static shared memory");
    k.dynamic_shared_memory = arg_fitting<uint32_t>(e, "dynamic shared memory");
    k.blocks_per_sm = arg_float(e, "blocks per SM");
    k.warps_per_sm = arg_float(e, "warps per SM");
    k.occupancy = arg_float(e, "theoretical occupancy %") / 100.0f;
    return k;
  }

  pk_memory_op_detail memory_op_detail(const JsonTraceEvent& e, uint32_t type) const {
    pk_memory_op_detail m{};
    m.bytes = arg_number(e, "bytes");
    auto kind_arg = [&](const char* key) {
      const JsonTraceEvent::Arg* arg = e.find_arg(key);
      return arg != nullptr && arg->value.is_string() ? arg->value.text : std::string();
    };
    if (type == PK_EVENT_MEMCPY) {
      m.copy_kind = copy_kind_code(kind_arg("kind"));
      m.src_kind = memory_kind_code(kind_arg("src kind"));
      m.dst_kind = memory_kind_code(kind_arg("dst kind"));
    } else {
      m.value = arg_fitting<uint32_t>(e, "value");
      m.dst_kind = memory_kind_code(kind_arg("memory kind"));
    }
    return m;
  }

  ResultInfo info_from(const JsonProfkitObject& meta, uint64_t layout) const;
  template <class Int>
  Int meta_in_range(const JsonProfkitObject& meta, const char* key, bool required, Int lowest, Int highest) const;
  template <class Int>
  Int meta_in_range(const JsonProfkitObject& meta, const char* key, bool required) const {
    return meta_in_range<Int>(meta, key, required, std::numeric_limits<Int>::min(), std::numeric_limits<Int>::max());
  }

  std::string path_;
  ResultBuilder builder_;
  std::unordered_map<std::string, uint32_t> string_ids_;
  std::unordered_map<std::string_view, uint32_t> type_by_name_;  // "Operator" -> PK_EVENT_OPERATOR
  std::vector<std::vector<uint64_t>> open_ends_;                 // by thread handle (dense, from 0)
  std::vector<PendingHost> hosts_;
  std::vector<PendingArg> args_;
  std::vector<pk_memory_event> memory_;
  std::vector<pk_device_event> devices_;
  struct PlacedDevice {
    size_t index;       // into devices_
    uint64_t start_ns;  // engine clock, not relative to the base
  };
  std::vector<PlacedDevice> placed_;  // in index order
  std::vector<ThreadLabel> labels_;
  std::optional<uint64_t> host_pid_;
  int64_t base_ns_ = 0;  // the metadata's base_ns, set by finish(): relative times are from it
  uint64_t event_index_ = 0;
  std::exception_ptr first_problem_;
};

// A whole number in [lowest, highest] (lowest <= 0 <= highest), the range
// of the Result field it fills. One outside is damage, refused: a negative
// count read as 2^64 - 1, or a pid cut to its low bits, made a Result whose
// own export did not load back.
template <class Int>
Int ChromeTraceLoader::meta_in_range(const JsonProfkitObject& meta, const char* key, bool required, Int lowest,
                                     Int highest) const {
  const auto it = meta.fields.find(key);
  if (it == meta.fields.end()) {
    if (required) fail_file(std::string("its \"profkit\" object has no \"") + key + "\"");
    return 0;
  }
  const JsonScalar& v = it->second;
  // Unsigned 64-bit fields hold values above INT64_MAX: parse as unsigned,
  // and a negative number as signed. (Plain variables, not optionals: GCC's
  // -O3 cannot see that fail_file does not return and warns.)
  uint64_t unsigned_value = 0;
  int64_t signed_value = 0;
  bool is_unsigned = false;
  bool is_signed = false;
  if (v.is_number()) {
    if (const std::optional<uint64_t> u = parse_integer<uint64_t>(v.text)) {
      unsigned_value = *u;
      is_unsigned = true;
    } else if (const std::optional<int64_t> i = parse_integer<int64_t>(v.text)) {
      signed_value = *i;
      is_signed = true;
    }
  }
  const size_t digits_from = !v.text.empty() && v.text[0] == '-' ? 1 : 0;
  const bool whole = v.is_number() && v.text.size() > digits_from &&
                     v.text.find_first_not_of("0123456789", digits_from) == std::string::npos;
  if (!whole) fail_file(std::string("its \"profkit\" object's \"") + key + "\" is not a whole number");
  // Neither parse works for a whole number beyond any 64-bit integer.
  const bool fits = (is_unsigned && unsigned_value <= static_cast<uint64_t>(highest)) ||
                    (is_signed && signed_value >= static_cast<int64_t>(lowest));
  if (!fits) {
    fail_file(std::string("its \"profkit\" object's \"") + key + "\" (" + v.text + ") is out of range (" +
              std::to_string(lowest) + " to " + std::to_string(highest) + ")");
  }
  return is_unsigned ? static_cast<Int>(unsigned_value) : static_cast<Int>(signed_value);
}

ResultInfo ChromeTraceLoader::info_from(const JsonProfkitObject& meta, uint64_t layout) const {
  auto text = [&](const char* key) {
    const auto it = meta.fields.find(key);
    return it != meta.fields.end() && it->second.is_string() ? it->second.text : std::string();
  };
  auto u64 = [&](const char* key, bool required) { return meta_in_range<uint64_t>(meta, key, required); };
  auto u32 = [&](const char* key, bool required) { return meta_in_range<uint32_t>(meta, key, required); };
  // -1 is unknown; below it nothing is meant.
  auto rank = [&](const char* key) { return meta_in_range<int32_t>(meta, key, false, -1, INT32_MAX); };
  // Engine-clock times, in the range the events' own times are held to.
  auto time = [&](const char* key) { return meta_in_range<uint64_t>(meta, key, true, 0, INT64_MAX); };
  const bool v2 = layout >= 2;
  ResultInfo info;
  info.profkit_version = text("profkit_version");
  info.schema_version = u32("schema_version", false);
  info.hostname = text("hostname");
  info.pid = u32("pid", true);
  info.rank = rank("rank");
  info.world_size = rank("world_size");
  info.span_index = u64("span_index", false);
  info.start_ns = time("start_ns");
  info.end_ns = time("end_ns");
  // A recording span never ends before it starts (trace_reader.cpp refuses
  // the same in a .pktrace): that is an edited file, and durations computed
  // from it would be negative.
  if (info.start_ns > info.end_ns) {
    fail_file("its \"profkit\" object's \"start_ns\" (" + std::to_string(info.start_ns) +
              ") is after its \"end_ns\" (" + std::to_string(info.end_ns) +
              "): a recording span cannot end before it starts (the file was edited or damaged)");
  }
  info.clock_offset_ns = meta_in_range<int64_t>(meta, "clock_offset_ns", true);
  info.dropped_events = u64("dropped_events", false);
  info.unmatched_ends = u64("unmatched_ends", false);
  info.overflowed_events = u64("overflowed_events", false);
  info.unfinished_events = u64("unfinished_events", false);
  info.lost_event_args = u64("lost_event_args", false);
  info.dropped_device_records = u64("dropped_device_records", false);
  info.unattached_device_records = u64("unattached_device_records", false);
  info.process_cpu_ns = u64("process_cpu_ns", v2);
  info.system_busy_ns = u64("system_busy_ns", v2);
  info.system_idle_ns = u64("system_idle_ns", v2);
  info.cpu_count = u32("cpu_count", v2);
  return info;
}

// A file written with duration labels ("name[1.23 ms]") names its complete
// events with them; the Result keeps the names alone.
void ChromeTraceLoader::strip_duration_labels() {
  std::vector<uint32_t> stripped(builder_.strings().size(), UINT32_MAX);
  auto strip = [&](uint32_t id) {
    if (stripped[id] == UINT32_MAX) {
      std::string name(builder_.strings().view(id));
      strip_duration_label(name);
      stripped[id] = intern(name);
    }
    return stripped[id];
  };
  for (PendingHost& h : hosts_) {
    if ((h.flags & PK_HOST_EVENT_INSTANT) == 0) h.name = strip(h.name);
  }
  for (pk_device_event& d : devices_) d.name = strip(d.name);
}

std::unique_ptr<Result> ChromeTraceLoader::finish(const JsonProfkitObject& meta) {
  const int64_t layout = check_loadable(meta);
  ResultInfo info = info_from(meta, static_cast<uint64_t>(layout));
  // The host process's lanes; without host events, the one the metadata names
  // (never a GPU's stream lanes).
  const uint64_t host_pid = host_pid_.value_or(info.pid);
  const auto labels = meta.fields.find("duration_labels");
  if (labels != meta.fields.end() && labels->second.kind == JsonScalar::Kind::kBool && labels->second.boolean) {
    strip_duration_labels();
  }
  base_ns_ = meta_in_range<int64_t>(meta, "base_ns", true);
  check_counts(meta, layout);

  const uint64_t unattached = info.unattached_device_records;
  builder_.info() = std::move(info);
  add_host_events();
  add_memory_events();
  add_device_events();
  name_threads(host_pid);
  for (const auto& fields : meta.devices) builder_.add_device(device_info_from(fields));
  for (const auto& [key, value] : meta.metadata) builder_.add_metadata(key, value);
  if (layout < 2) {
    builder_.add_metadata("loaded_from_json_layout_1",
                          "written before trace_json_version 2: memory events and CPU usage are not in the file");
  }
  std::unique_ptr<Result> result = builder_.finish();
  // finish() counts GPU work whose launch is not in the file; the writer's
  // own count already holds those.
  result->info.unattached_device_records = unattached;
  return result;
}

// Refuses a file profkit cannot load (another tool's trace, a merged
// timeline, a damaged event, a newer layout); returns its layout version.
// The order matters: a foreign file is named as such before its first
// unfamiliar event is blamed.
int64_t ChromeTraceLoader::check_loadable(const JsonProfkitObject& meta) const {
  if (!meta.present) {
    fail_file(
        "it is a Chrome trace, but not one profkit wrote (no top-level \"profkit\" object); profkit loads the "
        ".pktrace and .trace.json files it writes");
  }
  if (meta.merged) {
    fail_file("it is a timeline merged from " + std::to_string(meta.merged_sources) +
              " traces (profkit merge); load one process's own .pktrace or .trace.json instead");
  }
  if (first_problem_) std::rethrow_exception(first_problem_);
  const int64_t layout =
      meta.fields.count("trace_json_version") ? meta_in_range<int64_t>(meta, "trace_json_version", true) : 1;
  if (layout < 1 || static_cast<uint64_t>(layout) > kChromeTraceJsonVersion) {
    throw Error(PK_ERR_VERSION, "cannot load '" + path_ + "': it was written by a newer profkit (trace_json_version " +
                                    std::to_string(layout) + "; this profkit reads up to " +
                                    std::to_string(kChromeTraceJsonVersion) + "): upgrade profkit to load it");
  }
  return layout;
}

// The counts the writer recorded: anything else means a cut or edited file.
void ChromeTraceLoader::check_counts(const JsonProfkitObject& meta, int64_t layout) const {
  auto check_count = [&](const char* key, const char* what, size_t found, bool required) {
    if (!required && !meta.fields.count(key)) return;
    const int64_t expected = meta_in_range<int64_t>(meta, key, true);
    if (expected < 0 || static_cast<uint64_t>(expected) != found) {
      fail_file("it holds " + std::to_string(found) + " " + what + " but its metadata says " +
                std::to_string(expected) + ": the file was cut short or edited");
    }
  };
  check_count("host_event_count", "host events", hosts_.size(), true);
  check_count("device_event_count", "device events", devices_.size(), true);
  check_count("memory_event_count", "memory events", memory_.size(), layout >= 2);
}

// Engine-clock ns from a time relative to the base, in range or refused.
uint64_t ChromeTraceLoader::absolute(uint64_t relative) const {
  const bool fits = relative <= static_cast<uint64_t>(INT64_MAX) &&
                    (base_ns_ <= 0 || static_cast<int64_t>(relative) <= INT64_MAX - base_ns_);
  const int64_t ns = fits ? base_ns_ + static_cast<int64_t>(relative) : -1;
  if (ns < 0) fail_file("its base_ns (" + std::to_string(base_ns_) + ") puts an event outside the clock's range");
  return static_cast<uint64_t>(ns);
}

// Each host event with its arguments (args_ is in event order).
void ChromeTraceLoader::add_host_events() {
  size_t next_arg = 0;
  for (size_t i = 0; i < hosts_.size(); ++i) {
    const PendingHost& h = hosts_[i];
    pk_host_event event{absolute(h.start_ns), absolute(h.end_ns), h.name, h.type, h.depth_hint, h.flags};
    if (h.correlation_id >= 0) {
      builder_.add_runtime_call(h.thread, event, static_cast<uint32_t>(h.correlation_id));
    } else {
      builder_.add_event(h.thread, event);
    }
    const uint8_t hint = h.correlation_id >= 0 ? 255 : h.depth_hint;  // the builder's hint for runtime calls
    for (; next_arg < args_.size() && args_[next_arg].event == i; ++next_arg) {
      const PendingArg& a = args_[next_arg];
      builder_.add_arg(h.thread, event.start_ns, hint, a.key, a.kind, a.value);
    }
  }
}

void ChromeTraceLoader::add_memory_events() {
  for (pk_memory_event m : memory_) {
    m.time_ns = absolute(m.time_ns);
    builder_.add_memory_event(m);
  }
}

void ChromeTraceLoader::add_device_events() {
  builder_.reserve_device_events(devices_.size());
  auto placed = placed_.cbegin();
  for (size_t i = 0; i < devices_.size(); ++i) {
    pk_device_event d = devices_[i];
    if (placed != placed_.cend() && placed->index == i) {
      // GPU work without timing keeps its own engine-clock time (see device_event).
      const uint64_t duration = d.end_ns - d.start_ns;
      constexpr uint64_t kLatest = static_cast<uint64_t>(INT64_MAX);  // as absolute() allows
      if (duration > kLatest || placed->start_ns > kLatest - duration) {
        fail_file("its \"placed at ns\" (" + std::to_string(placed->start_ns) +
                  ") puts GPU work outside the clock's range");
      }
      d.start_ns = placed->start_ns;
      d.end_ns = placed->start_ns + duration;
      ++placed;
    } else {
      d.start_ns = absolute(d.start_ns);
      d.end_ns = absolute(d.end_ns);
    }
    builder_.add_device_event(d);
  }
}

void ChromeTraceLoader::name_threads(uint64_t host_pid) {
  for (const ThreadLabel& label : labels_) {
    if (label.pid != host_pid) continue;  // a GPU's stream lanes
    const uint64_t tid = thread_of_lane_id(label.lane);
    builder_.set_thread_name(builder_.thread(tid), thread_name_from_lane(label.label, tid));
  }
}

// One of the "profkit" object's "devices"; a field missing or malformed is 0
// (the facts are informative: occupancy was computed when the file was written).
DeviceInfo device_info_from(const std::unordered_map<std::string, JsonScalar>& fields) {
  auto field = [&](const char* key) -> const JsonScalar* {
    const auto it = fields.find(key);
    return it == fields.end() ? nullptr : &it->second;
  };
  auto integer = [&](const char* key) {
    const JsonScalar* v = field(key);
    const std::optional<int64_t> n = v != nullptr && v->is_number() ? parse_integer<int64_t>(v->text) : std::nullopt;
    return n.value_or(0);
  };
  DeviceInfo d;
  d.id = static_cast<int32_t>(integer("id"));
  if (const JsonScalar* name = field("name")) d.name = name->text;
  if (const JsonScalar* cc = field("compute_capability")) {
    std::sscanf(cc->text.c_str(), "%d.%d", &d.compute_major, &d.compute_minor);
  }
  d.sm_count = static_cast<int32_t>(integer("sm_count"));
  d.total_memory = static_cast<uint64_t>(integer("total_memory"));
  d.max_threads_per_sm = static_cast<int32_t>(integer("max_threads_per_sm"));
  d.max_registers_per_sm = static_cast<int32_t>(integer("max_registers_per_sm"));
  d.max_shared_memory_per_sm = static_cast<int32_t>(integer("max_shared_memory_per_sm"));
  d.max_blocks_per_sm = static_cast<int32_t>(integer("max_blocks_per_sm"));
  d.warp_size = static_cast<int32_t>(integer("warp_size"));
  return d;
}

struct FileCloser {
  void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};

}  // namespace

bool starts_like_json(const uint8_t* data, size_t size) {
  // Past a UTF-8 byte order mark (editors on Windows add one) and the blank
  // lines or indentation a pretty-printer or a hand may put first. A .pktrace
  // starts with its size prefix, 4 mod 8 (FlatBuffers aligns the buffer to 8):
  // its first byte is neither blank nor a bracket.
  const size_t n = size < 4096 ? size : 4096;
  size_t i = n >= 3 && std::memcmp(data, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
  for (; i < n; ++i) {
    const uint8_t c = data[i];
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    return c == '{' || c == '[';
  }
  return false;
}

bool looks_like_json_file(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;  // see the header
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) return false;
  uint8_t head[4096];
  const size_t n = std::fread(head, 1, sizeof head, file.get());
  return starts_like_json(head, n);
}

std::unique_ptr<Result> read_chrome_trace(const std::string& path) {
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) {
    const int err = errno;
    throw Error(err == ENOENT ? PK_ERR_NOT_FOUND : PK_ERR_IO, "cannot load '" + path + "': " + std::strerror(err), err);
  }
  ChromeTraceLoader loader(path);
  const JsonProfkitObject meta =
      scan_chrome_json(file.get(), path, [&](const JsonTraceEvent& e) { loader.on_event(e); });
  return loader.finish(meta);
}

std::unique_ptr<Result> read_chrome_trace_bytes(const std::string& path, const uint8_t* data, size_t size) {
  // A read-only stream over the bytes: the same streaming parse as a file's.
  std::unique_ptr<std::FILE, FileCloser> file(size == 0 ? nullptr : ::fmemopen(const_cast<uint8_t*>(data), size, "rb"));
  if (!file) {
    const int err = size == 0 ? EINVAL : errno;
    throw Error(PK_ERR_IO, "cannot load '" + path + "': " + std::strerror(err), err);
  }
  ChromeTraceLoader loader(path);
  const JsonProfkitObject meta =
      scan_chrome_json(file.get(), path, [&](const JsonTraceEvent& e) { loader.on_event(e); });
  return loader.finish(meta);
}

}  // namespace profkit
