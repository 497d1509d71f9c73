#include "export/chrome_trace.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/atomic_file.h"
#include "common/compiler.h"
#include "common/error.h"
#include "common/event_types.h"
#include "export/device_kind_names.h"
#include "export/json_escape.h"
#include "export/json_output_buffer.h"

namespace profkit {

namespace {

// A host event's lanes: its layer's own, that one's overlap lane, and the
// thread's second overlap lane (chrome_trace.h).
constexpr uint8_t kHostOverlapLevels = 2;

// GPU processes of an OS pid (below 2^22) stay below 2^32 for every device
// (see kStridedDeviceCount), and apart from the host's pids.
constexpr uint64_t kMaxOsPid = (1ull << 22) - 1;
static_assert(kMaxOsPid + kDeviceProcessStride * kStridedDeviceCount <= UINT32_MAX);
static_assert(kMaxOsPid + UINT16_MAX / kStridedDeviceCount + kDeviceProcessStride * kStridedDeviceCount <= UINT32_MAX);
static_assert(kMaxOsPid + UINT16_MAX / kStridedDeviceCount < kDeviceProcessStride);

// Two's-complement sums: a damaged or hostile loaded file may hold any clock
// offset, and the metadata it yields must not be undefined behaviour.
int64_t wrapping_sum(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

// The trace's own time base: its first event (host or timed GPU), or the
// window start if that is earlier.
uint64_t first_time_ns(const Result& r) {
  uint64_t base = r.info.start_ns;
  for (const ThreadRecord& t : r.threads) {
    if (t.event_count > 0) base = std::min(base, r.host_events[t.first_event].start_ns);
  }
  for (const pk_device_event& d : r.device_events) {
    // GPU work without timestamps (CUPTI ran short of device memory) says
    // nothing about when the trace starts; a 0 here would shift everything.
    if ((d.flags & PK_DEVICE_EVENT_NO_TIMING) == 0) base = std::min(base, d.start_ns);
  }
  return base;
}

// How far after the placed time base the trace's own base lies (0 unplaced).
uint64_t placement_shift_ns(const Result& r, const ChromeOptions& options) {
  if (!options.use_time_base) return 0;
  // Both sides in wall-clock ns, which fit int64 for centuries.
  const uint64_t own_base = first_time_ns(r);
  const int64_t own_base_wall = wrapping_sum(static_cast<int64_t>(own_base), r.info.clock_offset_ns);
  if (options.time_base_wall_ns > own_base_wall) {
    // The trace's start is usually the window's, before its first event:
    // "after the trace's first event" misled a caller whose base was that
    // event.
    const std::string own = " (" + std::to_string(own_base_wall) + " ns)";
    const std::string what = own_base == r.info.start_ns
                                 ? "the recording window's start" + own
                                 : "the trace's first event" + own + ", which precedes the recording window's start";
    throw Error(PK_ERR_INVALID_ARGUMENT, "chrome export: the time base (wall clock " +
                                             std::to_string(options.time_base_wall_ns) + " ns) is after " + what +
                                             "; pick a base at or before the start of every trace");
  }
  return static_cast<uint64_t>(own_base_wall) - static_cast<uint64_t>(options.time_base_wall_ns);
}

// The latest time the file holds, and what holds it (for the error; named
// only then: this runs over every event of every export).
struct LatestTime {
  uint64_t ns = 0;
  const char* kind = nullptr;  // nullptr: the recording window's end
  size_t index = 0;

  std::string what() const {
    return kind == nullptr ? "the recording window's end" : std::string(kind) + " " + std::to_string(index);
  }
};

LatestTime latest_time_ns(const Result& r) {
  LatestTime latest{r.info.end_ns};
  auto consider = [&](uint64_t ns, const char* kind, size_t index) {
    if (ns > latest.ns) latest = {ns, kind, index};
  };
  for (size_t i = 0; i < r.host_events.size(); ++i) {
    consider(std::max(r.host_events[i].start_ns, r.host_events[i].end_ns), "host event", i);
  }
  for (size_t i = 0; i < r.device_events.size(); ++i) {
    consider(std::max(r.device_events[i].start_ns, r.device_events[i].end_ns), "device event", i);
  }
  for (size_t i = 0; i < r.memory_events.size(); ++i) consider(r.memory_events[i].time_ns, "memory event", i);
  return latest;
}

// pk_result_load reads a time back as base_ns plus its "ts" (and "dur"), and
// refuses one past INT64_MAX ns on either count: past the engine clock's
// range, or further than that from ts 0. The export refuses those results
// and bases instead of writing a file load then refuses (before 1.24 it
// wrote one): an event timed at UINT64_MAX ns (pk_complete_event with a
// time not from pk_now_ns), or a time base over 292 years before the trace.
void check_times_fit(const Result& r, uint64_t shift_ns, const ChromeOptions& options) {
  constexpr uint64_t kLatest = static_cast<uint64_t>(INT64_MAX);
  const LatestTime latest = latest_time_ns(r);
  if (latest.ns > kLatest) {
    throw Error(PK_ERR_TOO_LARGE, "chrome export: " + latest.what() + " reaches " + std::to_string(latest.ns) +
                                      " ns, past the " + std::to_string(kLatest) +
                                      " ns of the engine clock that a Chrome trace holds (its times were not "
                                      "taken from pk_now_ns / pk_now_ticks?); pk_result_save keeps it");
  }
  const uint64_t span = latest.ns - std::min(latest.ns, first_time_ns(r));
  if (shift_ns > kLatest - span) {
    throw Error(PK_ERR_INVALID_ARGUMENT,
                "chrome export: the time base (wall clock " + std::to_string(options.time_base_wall_ns) + " ns) is " +
                    std::to_string(shift_ns) + " ns before the trace's start, which ends " + std::to_string(span) +
                    " ns later: a Chrome trace holds times up to " + std::to_string(kLatest) +
                    " ns after its base; pick a base closer to the trace");
  }
}

class ChromeTraceWriter {
 public:
  ChromeTraceWriter(const Result& r, const ChromeOptions& options, uint64_t shift_ns, AtomicFileWriter& out)
      : r_(r), options_(options), out_(out) {
    names_.resize(r.strings.size());
    for (size_t i = 0; i < r.strings.size(); ++i) append_json_escaped(names_[i], r.strings.view(i));
    base_ns_ = first_time_ns(r);
    shift_ns_ = shift_ns;
    pid_ = options.pid >= 0 ? static_cast<uint64_t>(options.pid) : r.info.pid;
    for (uint32_t t = 0; t < PK_EVENT_TYPE_COUNT; ++t) {
      complete_prefix_[t] = "\"ph\":\"X\",\"cat\":\"" + std::string(event_type_name(t)) + "\",\"name\":\"";
    }
    // The runtime call that launched each piece of GPU work carries its
    // correlation id, as torch.profiler's do: readers (and load) pair them.
    for (const pk_device_event& d : r.device_events) {
      if (d.launch_event < r.host_events.size()) launches_.emplace_back(d.launch_event, d.correlation_id);
    }
    std::sort(launches_.begin(), launches_.end());
    launches_.erase(std::unique(launches_.begin(), launches_.end(),
                                [](const auto& a, const auto& b) { return a.first == b.first; }),
                    launches_.end());
    find_crossing_events();
    assign_device_lanes();
    threads_with_memory_.assign(r.threads.size(), false);
    for (const pk_memory_event& m : r.memory_events) {
      if (m.thread < r.threads.size()) threads_with_memory_[m.thread] = true;
    }
  }

  void write() {
    put("{\"traceEvents\":[\n");
    write_process_metadata();
    write_host_events();
    write_device_events();
    write_memory_events();
    write_memory_counters();
    if (options_.include_flows) write_flows();
    write_drop_marker();
    put("\n],\n\"displayTimeUnit\":\"ms\",\n\"profkit\":");
    write_metadata_object();
    put("}\n");
    flush();
  }

 private:
  // ---- low-level output ----
  // Starts a trace event: a comma between events, none after the last.
  void open_event() {
    if (!first_event_) put(",\n");
    first_event_ = false;
    put_char('{');
  }
  // Always inlined: GCC's inliner stops inlining these into the event
  // writers after small unrelated changes to them (adding the check for
  // repeated argument keys did: an export of events with two arguments
  // took 7% more instructions; inlined, 2% fewer than before the check).
  PK_ALWAYS_INLINE void put(std::string_view s) { buf_.advance(copy_text(buf_.room(s.size()), s)); }
  PK_ALWAYS_INLINE void put_char(char c) {
    char* p = buf_.room(1);
    *p = c;
    buf_.advance(p + 1);
  }
  void put_uint(uint64_t v) {
    char* p = buf_.room(24);
    buf_.advance(std::to_chars(p, p + 24, v).ptr);
  }
  void put_int(int64_t v) {
    char* p = buf_.room(24);
    buf_.advance(std::to_chars(p, p + 24, v).ptr);
  }
  void put_double(double v) {
    // JSON has no NaN or infinity; only a damaged loaded file holds them
    // (the CUPTI path guards its divisions), and they carry no figure.
    if (!std::isfinite(v)) v = 0.0;
    char tmp[32];
    const int n = std::snprintf(tmp, sizeof tmp, "%.6g", v);
    put(std::string_view(tmp, static_cast<size_t>(n)));
  }
  void put_us(uint64_t ns) {
    char* p = buf_.room(32);
    buf_.advance(write_us(p, ns));
  }
  const std::string& name(uint32_t id) const { return id < names_.size() ? names_[id] : empty_; }
  void put_name(uint32_t id) { put(name(id)); }
  void put_quoted(std::string_view text) {
    std::string quoted;
    quoted += '"';
    append_json_escaped(quoted, text);
    quoted += '"';
    put(quoted);
  }
  void maybe_flush() {
    if (buf_.nearly_full()) buf_.flush();
  }
  void flush() { buf_.flush(); }

  void put_duration_label(uint64_t ns) {
    char tmp[48];
    int n;
    if (ns < 1000) {
      n = std::snprintf(tmp, sizeof tmp, "[%llu ns]", static_cast<unsigned long long>(ns));
    } else if (ns < 1000000) {
      n = std::snprintf(tmp, sizeof tmp, "[%.2f us]", static_cast<double>(ns) / 1e3);
    } else if (ns < 1000000000) {
      n = std::snprintf(tmp, sizeof tmp, "[%.2f ms]", static_cast<double>(ns) / 1e6);
    } else {
      n = std::snprintf(tmp, sizeof tmp, "[%.2f s]", static_cast<double>(ns) / 1e9);
    }
    put(std::string_view(tmp, static_cast<size_t>(n)));
  }

  // A host event's lane (see kOverlapLaneOffset): its layer's own lane at
  // overlap level 0, that lane's overlap lane at 1, the thread's second
  // overlap lane (both layers') at 2.
  static uint64_t host_lane(uint64_t tid, uint32_t type, uint8_t level = 0) {
    if (level >= kHostOverlapLevels) return tid + kSecondOverlapLaneOffset;
    return tid + (is_python_layer(type) ? 0 : kCppLaneOffset) + (level == 1 ? kOverlapLaneOffset : 0);
  }
  uint8_t overlap_level(uint64_t event) const {
    const auto it = std::lower_bound(crossing_.begin(), crossing_.end(), std::pair<uint64_t, uint8_t>{event, 0});
    return it != crossing_.end() && it->first == event ? it->second : 0;
  }

  // Per lane of a thread, a stack of the ends of its open slices: the
  // Python lane, the C++ lane, their overlap lanes, the second overlap lane.
  using HostLaneStacks = std::array<std::vector<uint64_t>, 5>;

  // Host events that outlive an enclosing event of their lane, into
  // crossing_ with their overlap level (see kOverlapLaneOffset). Events of
  // a thread are in start order, enclosing first, so a stack of open ends
  // per lane finds them.
  void find_crossing_events() {
    HostLaneStacks open_ends;
    for (const ThreadRecord& th : r_.threads) {
      for (std::vector<uint64_t>& ends : open_ends) ends.clear();
      for (uint64_t i = th.first_event; i < th.first_event + th.event_count; ++i) {
        const pk_host_event& e = r_.host_events[i];
        if ((e.flags & PK_HOST_EVENT_INSTANT) != 0) continue;
        const size_t layer = is_python_layer(e.type) ? 0 : 1;
        std::vector<uint64_t>& ends = open_ends[layer];
        while (!ends.empty() && ends.back() <= e.start_ns) ends.pop_back();
        if (!ends.empty() && ends.back() < e.end_ns) {
          crossing_.push_back({i, place_on_overlap_lane(open_ends, layer, e)});
          continue;
        }
        ends.push_back(e.end_ns);
      }
    }
  }

  // The overlap level of an event that crosses one on its layer's lane: the
  // first overlap lane where it nests in what is open there (as
  // assign_device_lanes places GPU work), its layer's, then the second one.
  static uint8_t place_on_overlap_lane(HostLaneStacks& open_ends, size_t layer, const pk_host_event& e) {
    const std::array<size_t, kHostOverlapLevels> lanes = {layer + 2, 4};
    uint8_t level = kHostOverlapLevels;
    for (uint8_t l = 1; l <= kHostOverlapLevels; ++l) {
      std::vector<uint64_t>& ends = open_ends[lanes[l - 1]];
      while (!ends.empty() && ends.back() <= e.start_ns) ends.pop_back();
      if (ends.empty() || e.end_ns <= ends.back()) {
        level = l;
        break;
      }
    }
    // Past the second overlap lane it overlaps there anyway; the stack stays
    // one of nested ends.
    std::vector<uint64_t>& ends = open_ends[lanes[level - 1]];
    while (!ends.empty() && ends.back() < e.end_ns) ends.pop_back();
    ends.push_back(e.end_ns);
    return level;
  }

  // GPU d's process (kStridedDeviceCount says why past it).
  uint64_t device_pid(uint32_t device) const {
    constexpr uint32_t n = kStridedDeviceCount;
    if (device < n) return pid_ + kDeviceProcessStride * (device + 1ull);
    return pid_ + device / n + kDeviceProcessStride * (device % n + 1ull);
  }
  uint64_t device_lane(size_t i) const {
    return r_.device_events[i].stream + kDeviceOverlapLaneOffset * device_level_[i];
  }

  // Each GPU record's lane of its stream (see kDeviceOverlapLaneOffset), into
  // device_level_: the first lane, in order, where it nests in what is open
  // there. Records go in start order, enclosing first, which is also the
  // order they are written in (device_order_). A Result's records are in
  // start order already (collect and load sort them), so that order costs a
  // pass plus a sort of each run of equal starts, not a sort of up to
  // millions of records.
  void assign_device_lanes() {
    const auto& ds = r_.device_events;
    device_level_.assign(ds.size(), 0);
    std::vector<size_t>& order = device_order_;
    order.resize(ds.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    const auto enclosing_first = [&](size_t a, size_t b) {
      if (ds[a].start_ns != ds[b].start_ns) return ds[a].start_ns < ds[b].start_ns;
      if (ds[a].end_ns != ds[b].end_ns) return ds[a].end_ns > ds[b].end_ns;
      return a < b;
    };
    const bool by_start = std::is_sorted(ds.begin(), ds.end(), [](const pk_device_event& a, const pk_device_event& b) {
      return a.start_ns < b.start_ns;
    });
    if (!by_start) {
      std::sort(order.begin(), order.end(), enclosing_first);
    } else {
      for (size_t run = 0; run < order.size();) {
        size_t next = run + 1;
        while (next < order.size() && ds[next].start_ns == ds[run].start_ns) ++next;
        if (next - run > 1) std::sort(order.begin() + run, order.begin() + next, enclosing_first);
        run = next;
      }
    }
    // Per (device, stream): each lane's stack of open ends.
    using LaneStacks = std::array<std::vector<uint64_t>, kMaxDeviceOverlapLanes + 1>;
    std::unordered_map<uint64_t, LaneStacks> streams;
    for (const size_t i : order) {
      const pk_device_event& d = ds[i];
      LaneStacks& lanes = streams[uint64_t{d.device} << 32 | d.stream];
      uint32_t level = kMaxDeviceOverlapLanes;
      for (uint32_t l = 0; l <= kMaxDeviceOverlapLanes; ++l) {
        std::vector<uint64_t>& ends = lanes[l];
        while (!ends.empty() && ends.back() <= d.start_ns) ends.pop_back();
        if (ends.empty() || d.end_ns <= ends.back()) {
          level = l;
          break;
        }
      }
      // Past the last overlap lane it overlaps there anyway; the stack stays
      // one of nested ends.
      std::vector<uint64_t>& ends = lanes[level];
      while (!ends.empty() && ends.back() < d.end_ns) ends.pop_back();
      ends.push_back(d.end_ns);
      device_level_[i] = static_cast<uint8_t>(level);
    }
  }

  // ---- metadata events ----
  void meta_event(std::string_view what, uint64_t pid, uint64_t tid, std::string_view arg_key,
                  std::string_view quoted_value) {
    open_event();
    put("\"ph\":\"M\",\"name\":\"");
    put(what);
    put("\",\"pid\":");
    put_uint(pid);
    put(",\"tid\":");
    put_uint(tid);
    put(",\"args\":{\"");
    put(arg_key);
    put("\":");
    put(quoted_value);
    put("}}");
  }

  void write_process_metadata() {
    std::string label = options_.process_label_prefix + "Process " + std::to_string(r_.info.pid) + " (CPU)";
    if (r_.info.rank >= 0) label += " rank " + std::to_string(r_.info.rank);
    meta_event("process_name", pid_, 0, "name", json_quoted(label));
    meta_event("process_sort_index", pid_, 0, "sort_index", std::to_string(options_.sort_index_offset));
    for (size_t t = 0; t < r_.threads.size(); ++t) {
      const ThreadRecord& th = r_.threads[t];
      const std::string base = th.name.empty() ? "Thread " + std::to_string(th.tid) : th.name;
      bool has_python = false;
      bool has_cpp = threads_with_memory_[t];  // memory events sit on the C++ lane
      for (uint64_t i = th.first_event; i < th.first_event + th.event_count; ++i) {
        (is_python_layer(r_.host_events[i].type) ? has_python : has_cpp) = true;
        if (has_python && has_cpp) break;
      }
      bool python_overlaps = false;
      bool cpp_overlaps = false;
      bool second_overlaps = false;
      const auto first =
          std::lower_bound(crossing_.begin(), crossing_.end(), std::pair<uint64_t, uint8_t>{th.first_event, 0});
      for (auto it = first; it != crossing_.end() && it->first < th.first_event + th.event_count; ++it) {
        const bool python = is_python_layer(r_.host_events[it->first].type);
        (it->second > 1 ? second_overlaps : python ? python_overlaps : cpp_overlaps) = true;
      }
      // Per thread: Python lane, its overlap lane, C++ lane, its overlap
      // lane, the second overlap lane.
      auto lane_metadata = [&](uint64_t lane, const char* what, size_t position) {
        meta_event("thread_name", pid_, lane, "name",
                   json_quoted(base + " (" + what + ") [" + std::to_string(th.tid) + "]"));
        meta_event("thread_sort_index", pid_, lane, "sort_index", std::to_string(5 * t + position));
      };
      // Named first: load takes a thread's name from the last of its lanes'
      // names, with the lane's suffix cut off, and readers before this lane
      // (C ABI 1.26) know no suffix for it. Its own lane's name comes after
      // (an event reaches this lane only by crossing one on its layer's lane).
      if (second_overlaps) lane_metadata(th.tid + kSecondOverlapLaneOffset, "overlapping 2", 4);
      if (has_python) lane_metadata(host_lane(th.tid, PK_EVENT_PYTHON_USER_DEFINED), "Python", 0);
      if (python_overlaps) lane_metadata(host_lane(th.tid, PK_EVENT_PYTHON_USER_DEFINED, 1), "Python, overlapping", 1);
      if (has_cpp) lane_metadata(host_lane(th.tid, PK_EVENT_USER_DEFINED), "C++", 2);
      if (cpp_overlaps) lane_metadata(host_lane(th.tid, PK_EVENT_USER_DEFINED, 1), "C++, overlapping", 3);
    }
    std::set<std::tuple<uint32_t, uint32_t, uint8_t>> lanes;  // (device, stream, overlap level)
    for (size_t i = 0; i < r_.device_events.size(); ++i) {
      const pk_device_event& d = r_.device_events[i];
      lanes.emplace(d.device, d.stream, device_level_[i]);
    }
    uint32_t last_device = UINT32_MAX;
    for (const auto& [device, stream, level] : lanes) {
      const uint64_t pid = device_pid(device);
      if (device != last_device) {
        std::string gpu_label = options_.process_label_prefix + "GPU " + std::to_string(device);
        for (const DeviceInfo& info : r_.devices) {
          if (static_cast<uint32_t>(info.id) == device && !info.name.empty()) gpu_label += " (" + info.name + ")";
        }
        meta_event("process_name", pid, 0, "name", json_quoted(gpu_label));
        meta_event("process_sort_index", pid, 0, "sort_index",
                   std::to_string(options_.sort_index_offset + static_cast<int64_t>(device) + 1));
        last_device = device;
      }
      // An overlap lane sorts with its stream (and after it, by name).
      const uint64_t lane = stream + kDeviceOverlapLaneOffset * level;
      std::string lane_label = "Stream " + std::to_string(stream);
      if (level == 1) lane_label += " (overlapping)";
      if (level > 1) lane_label += " (overlapping " + std::to_string(level) + ")";
      meta_event("thread_name", pid, lane, "name", json_quoted(lane_label));
      meta_event("thread_sort_index", pid, lane, "sort_index", std::to_string(stream));
    }
  }

  // ---- events ----
  void begin_event(std::string_view ph, uint32_t type, uint32_t name, uint64_t start_ns, uint64_t end_ns) {
    open_event();
    put("\"ph\":\"");
    put(ph);
    put("\",\"cat\":\"");
    put(event_type_name(type));
    put("\",\"name\":\"");
    put_name(name);
    if (options_.label_durations && ph == "X") put_duration_label(end_ns - start_ns);
    put("\",\"ts\":");
    put_us(relative(start_ns));
  }
  // Time since the trace's base; never wraps for a time before it.
  uint64_t relative(uint64_t ns) const { return (ns > base_ns_ ? ns - base_ns_ : 0) + shift_ns_; }

  void write_host_events() {
    const pk_event_arg* arg = r_.event_args.begin();
    const pk_event_arg* args_end = r_.event_args.end();
    auto launch = launches_.cbegin();
    auto crossing = crossing_.cbegin();
    for (const ThreadRecord& th : r_.threads) {
      // The end of every event on a lane is the same: pid, tid, brace.
      const std::string python_tail = ",\"pid\":" + std::to_string(pid_) + ",\"tid\":" + std::to_string(th.tid);
      const std::string cpp_tail =
          ",\"pid\":" + std::to_string(pid_) + ",\"tid\":" + std::to_string(th.tid + kCppLaneOffset);
      for (uint64_t i = th.first_event; i < th.first_event + th.event_count; ++i) {
        const pk_host_event& e = r_.host_events[i];
        while (arg != args_end && arg->event < i) ++arg;
        while (launch != launches_.cend() && launch->first < i) ++launch;
        while (crossing != crossing_.cend() && crossing->first < i) ++crossing;
        const bool has_args = arg != args_end && arg->event == i;
        const bool launched = launch != launches_.cend() && launch->first == i;
        const bool instant = (e.flags & PK_HOST_EVENT_INSTANT) != 0;
        const uint8_t level = crossing != crossing_.cend() && crossing->first == i ? crossing->second : 0;
        if (instant || has_args || launched || level > 0 || options_.label_durations) {
          write_host_event_slow(e, th, arg, args_end, instant, level, launched ? launch->second : kNoCorrelation);
          continue;
        }
        // The common case, formatted in one go.
        const std::string& event_name = name(e.name);
        char* p = buf_.room(event_name.size() + 160);
        if (!first_event_) p = copy_text(p, ",\n");
        first_event_ = false;
        *p++ = '{';
        p = copy_text(p, complete_prefix_[e.type]);
        p = copy_text(p, event_name);
        p = copy_text(p, "\",\"ts\":");
        p = write_us(p, e.start_ns - base_ns_ + shift_ns_);
        p = copy_text(p, ",\"dur\":");
        p = write_us(p, e.end_ns - e.start_ns);
        p = copy_text(p, is_python_layer(e.type) ? python_tail : cpp_tail);
        *p++ = '}';
        buf_.advance(p);
        maybe_flush();
      }
    }
  }

  // An event's argument keys, as written (escaped), are unique: every JSON
  // reader (Perfetto, chrome://tracing, Python's json) keeps one value per
  // key, so a repeated key would hide the values before the last. A key
  // repeats when a program attaches two arguments with one key to an event
  // (pk_event_arg_* does not replace), when two keys differ only in bytes
  // that are not UTF-8 (escaped alike, as U+FFFD), or when a runtime call's
  // own argument is named "correlation id". Whether host event `event`'s
  // arguments (from `arg` on) have a key twice: the usual few cost a few
  // length comparisons, and nothing is allocated.
  bool keys_are_unique(const pk_event_arg* arg, const pk_event_arg* args_end, uint64_t event, bool has_correlation) {
    const pk_event_arg* end = arg;
    while (end != args_end && end->event == event) ++end;
    const size_t count = static_cast<size_t>(end - arg);
    if (count + (has_correlation ? 1 : 0) < 2) return true;
    if (count <= 8) {  // each against those before it
      for (const pk_event_arg* a = arg; a != end; ++a) {
        const std::string& key = name(a->key);
        if (has_correlation && key == kCorrelationKey) return false;
        for (const pk_event_arg* b = arg; b != a; ++b) {
          if (name(b->key) == key) return false;
        }
      }
      return true;
    }
    std::vector<std::string_view>& keys = key_scratch_;
    keys.clear();
    if (has_correlation) keys.push_back(kCorrelationKey);
    for (const pk_event_arg* a = arg; a != end; ++a) keys.push_back(name(a->key));
    std::sort(keys.begin(), keys.end());
    return std::adjacent_find(keys.begin(), keys.end()) == keys.end();
  }

  // The arguments of an event whose keys repeat (after its correlation id,
  // if any): each under its key (escaped) if no earlier one of the event
  // was written under it, else under the first of "key#2", "key#3", ...
  // that none was. Every value stays in the file, in the order recorded.
  // (Load reads a suffixed key back as a key of its own.) Moves `arg` past
  // them.
  PK_NOINLINE PK_COLD void write_args_with_repeated_keys(const pk_event_arg*& arg, const pk_event_arg* args_end,
                                                         bool has_correlation) {
    std::set<std::string> written;
    if (has_correlation) written.emplace(kCorrelationKey);
    const uint64_t event = arg->event;
    for (bool first = !has_correlation; arg != args_end && arg->event == event; ++arg, first = false) {
      if (!first) put_char(',');
      const std::string& key = name(arg->key);
      std::string unique = key;
      for (uint64_t n = 2; !written.insert(unique).second; ++n) unique = key + "#" + std::to_string(n);
      put_char('"');
      put(unique);
      put("\":");
      put_arg_value(*arg);
    }
  }

  // An argument's value: an integer, or its interned string quoted.
  PK_ALWAYS_INLINE void put_arg_value(const pk_event_arg& arg) {
    if (arg.kind == PK_ARG_INT) {
      put_int(arg.value);
    } else {
      put_char('"');
      put_name(static_cast<uint32_t>(arg.value));
      put_char('"');
    }
  }

  void write_host_event_slow(const pk_host_event& e, const ThreadRecord& th, const pk_event_arg*& arg,
                             const pk_event_arg* args_end, bool instant, uint8_t level, uint64_t correlation_id) {
    const uint64_t i = static_cast<uint64_t>(&e - r_.host_events.data());
    begin_event(instant ? "i" : "X", e.type, e.name, e.start_ns, e.end_ns);
    if (instant) {
      put(",\"s\":\"t\"");
    } else {
      put(",\"dur\":");
      put_us(e.end_ns - e.start_ns);
    }
    put(",\"pid\":");
    put_uint(pid_);
    put(",\"tid\":");
    put_uint(host_lane(th.tid, e.type, level));
    const bool has_args = arg != args_end && arg->event == i;
    if (has_args || correlation_id != kNoCorrelation) {
      put(",\"args\":{");
      bool first = true;
      if (correlation_id != kNoCorrelation) {
        put_char('"');
        put(kCorrelationKey);
        put("\":");
        put_uint(correlation_id);
        first = false;
      }
      if (PK_UNLIKELY(!keys_are_unique(arg, args_end, i, correlation_id != kNoCorrelation))) {
        write_args_with_repeated_keys(arg, args_end, correlation_id != kNoCorrelation);
      }
      for (; arg != args_end && arg->event == i; ++arg) {
        if (!first) put_char(',');
        first = false;
        put_char('"');
        put_name(arg->key);
        put("\":");
        put_arg_value(*arg);
      }
      put_char('}');
    }
    put_char('}');
    maybe_flush();
  }

  void write_device_events() {
    // In start order, enclosing first: importers take equal-start slices in
    // file order, and a nested one written first would read as overlapping.
    for (const size_t i : device_order_) {
      const pk_device_event& d = r_.device_events[i];
      begin_event("X", d.type, d.name, d.start_ns, d.end_ns);
      put(",\"dur\":");
      put_us(d.end_ns - d.start_ns);
      put(",\"pid\":");
      put_uint(device_pid(d.device));
      put(",\"tid\":");
      put_uint(device_lane(i));
      put(",\"args\":{\"device\":");
      put_uint(d.device);
      put(",\"stream\":");
      put_uint(d.stream);
      put(",\"context\":");
      put_uint(d.context);
      put(",\"correlation id\":");
      put_uint(d.correlation_id);
      if ((d.flags & PK_DEVICE_EVENT_NO_TIMING) != 0) {
        put(",\"no timing\":true");
        // Untimed work is left out of the base (first_time_ns), so it may lie
        // before it (a hand-made or older Result places it at 0), where its
        // ts clamps to 0: its own time goes along so load puts it back.
        if (d.start_ns < base_ns_) {
          put(",\"placed at ns\":");
          put_uint(d.start_ns);
        }
      }
      if (d.type == PK_EVENT_KERNEL && d.detail < r_.kernel_details.size()) {
        write_kernel_args(r_.kernel_details[d.detail]);
      } else if (d.type != PK_EVENT_KERNEL && d.detail < r_.memory_op_details.size()) {
        write_memory_op_args(d, r_.memory_op_details[d.detail]);
      }
      put("}}");
      maybe_flush();
    }
  }

  void write_kernel_args(const pk_kernel_detail& k) {
    put(",\"grid\":[");
    put_uint(k.grid[0]);
    put_char(',');
    put_uint(k.grid[1]);
    put_char(',');
    put_uint(k.grid[2]);
    put("],\"block\":[");
    put_uint(k.block[0]);
    put_char(',');
    put_uint(k.block[1]);
    put_char(',');
    put_uint(k.block[2]);
    put("],\"registers per thread\":");
    put_uint(k.registers_per_thread);
    put(",\"shared memory\":");
    put_uint(static_cast<uint64_t>(k.static_shared_memory) + k.dynamic_shared_memory);
    put(",\"static shared memory\":");
    put_uint(k.static_shared_memory);
    put(",\"dynamic shared memory\":");
    put_uint(k.dynamic_shared_memory);
    put(",\"blocks per SM\":");
    put_double(k.blocks_per_sm);
    put(",\"warps per SM\":");
    put_double(k.warps_per_sm);
    put(",\"theoretical occupancy %\":");
    put_double(k.occupancy * 100.0);
  }

  void write_memory_op_args(const pk_device_event& d, const pk_memory_op_detail& m) {
    put(",\"bytes\":");
    put_uint(m.bytes);
    if (d.type == PK_EVENT_MEMCPY) {
      put(",\"kind\":\"");
      put(copy_kind_name(m.copy_kind));
      put("\",\"src kind\":\"");
      put(memory_kind_name(m.src_kind));
      put("\",\"dst kind\":\"");
      put(memory_kind_name(m.dst_kind));
    } else {
      // A memset writes one kind of memory; its value is the byte pattern.
      put(",\"value\":");
      put_uint(m.value);
      put(",\"memory kind\":\"");
      put(memory_kind_name(m.dst_kind));
    }
    put("\",\"bandwidth GB/s\":");
    const uint64_t ns = d.end_ns - d.start_ns;
    put_double(ns == 0 ? 0.0 : static_cast<double>(m.bytes) / static_cast<double>(ns));
  }

  // Each allocation and free in full, as torch.profiler writes them: an
  // instant "[memory]" on the allocating thread's C++ lane (Perfetto shows
  // its address and size on click), which is also what load reads back.
  void write_memory_events() {
    for (const pk_memory_event& m : r_.memory_events) {
      const uint64_t tid = m.thread < r_.threads.size() ? r_.threads[m.thread].tid : 0;
      open_event();
      put("\"ph\":\"i\",\"s\":\"t\",\"cat\":\"Memory\",\"name\":\"[memory]\",\"ts\":");
      put_us(relative(m.time_ns));
      put(",\"pid\":");
      put_uint(pid_);
      put(",\"tid\":");
      put_uint(tid + kCppLaneOffset);
      put(",\"args\":{\"Device\":");
      put_int(m.device);
      put(",\"Addr\":");
      put_uint(m.address);
      put(",\"Bytes\":");
      put_int(m.bytes);
      put(",\"Total Allocated\":");
      put_uint(m.total_allocated);
      put(",\"Total Reserved\":");
      put_uint(m.total_reserved);
      put("}}");
      maybe_flush();
    }
  }

  // One counter sample per allocation or free: Perfetto draws each device's
  // allocator totals as a track ("Memory (CPU)", "Memory (GPU 0)") in the
  // CPU process, whose slices made the allocations.
  void write_memory_counters() {
    std::string last_device_name;
    int32_t last_device = INT32_MIN;
    for (const pk_memory_event& m : r_.memory_events) {
      if (m.device != last_device) {
        last_device = m.device;
        last_device_name = m.device < 0 ? "Memory (CPU)" : "Memory (GPU " + std::to_string(m.device) + ")";
      }
      open_event();
      put("\"ph\":\"C\",\"cat\":\"Memory\",\"name\":\"");
      put(last_device_name);
      put("\",\"ts\":");
      put_us(relative(m.time_ns));
      put(",\"pid\":");
      put_uint(pid_);
      put(",\"tid\":0,\"args\":{\"Allocated\":");
      put_uint(m.total_allocated);
      put(",\"Reserved\":");
      put_uint(m.total_reserved);
      put("}}");
      maybe_flush();
    }
  }

  void write_flows() {
    for (size_t i = 0; i < r_.device_events.size(); ++i) {
      const pk_device_event& d = r_.device_events[i];
      if (d.launch_event == PK_NO_EVENT || d.launch_event >= r_.host_events.size()) continue;
      const pk_host_event& launch = r_.host_events[d.launch_event];
      const uint64_t tid = r_.threads[r_.thread_of(d.launch_event)].tid;
      open_event();
      put("\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"launch\",\"id\":");
      put_uint(i + 1 + options_.flow_id_offset);
      put(",\"ts\":");
      put_us(relative(launch.start_ns));
      put(",\"pid\":");
      put_uint(pid_);
      put(",\"tid\":");
      put_uint(host_lane(tid, launch.type, overlap_level(d.launch_event)));
      put_char('}');
      open_event();
      put("\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"ac2g\",\"name\":\"launch\",\"id\":");
      put_uint(i + 1 + options_.flow_id_offset);
      put(",\"ts\":");
      put_us(relative(d.start_ns));
      put(",\"pid\":");
      put_uint(device_pid(d.device));
      put(",\"tid\":");
      put_uint(device_lane(i));
      put_char('}');
      maybe_flush();
    }
  }

  void write_drop_marker() {
    const ResultInfo& i = r_.info;
    const uint64_t lost = i.dropped_events + i.overflowed_events + i.dropped_device_records;
    if (lost == 0) return;
    // A global instant marker so nobody mistakes a capped trace for a whole one.
    open_event();
    put("\"ph\":\"i\",\"s\":\"g\",\"cat\":\"profkit\",\"name\":");
    put_quoted("profkit: " + std::to_string(lost) +
               " events were dropped (memory cap, nesting limit or GPU buffers); see the profkit metadata");
    put(",\"ts\":");
    put_us(relative(i.end_ns));
    put(",\"pid\":");
    put_uint(pid_);
    put(",\"tid\":0}");
  }

  void kv_uint(std::string_view key, uint64_t v, bool comma = true) {
    put_quoted(key);
    put_char(':');
    put_uint(v);
    if (comma) put_char(',');
  }
  void kv_int(std::string_view key, int64_t v) {
    put_quoted(key);
    put_char(':');
    put_int(v);
    put_char(',');
  }
  void kv_str(std::string_view key, std::string_view v) {
    put_quoted(key);
    put_char(':');
    put_quoted(v);
    put_char(',');
  }

  void write_metadata_object() {
    const ResultInfo& i = r_.info;
    put_char('{');
    kv_str("profkit_version", i.profkit_version);
    kv_uint("schema_version", i.schema_version);
    kv_uint("trace_json_version", kChromeTraceJsonVersion);
    if (options_.label_durations) put("\"duration_labels\":true,");
    kv_str("hostname", i.hostname);
    kv_uint("pid", i.pid);
    kv_int("rank", i.rank);
    kv_int("world_size", i.world_size);
    kv_uint("span_index", i.span_index);
    // The engine-clock time that ts 0 stands for (before the first event when placed).
    const int64_t base = static_cast<int64_t>(base_ns_ - shift_ns_);  // unsigned: wraps, never UB
    kv_int("base_ns", base);
    kv_int("base_wall_ns", wrapping_sum(base, i.clock_offset_ns));
    kv_uint("start_ns", i.start_ns);
    kv_uint("end_ns", i.end_ns);
    kv_int("clock_offset_ns", i.clock_offset_ns);
    kv_uint("host_event_count", r_.host_events.size());
    kv_uint("device_event_count", r_.device_events.size());
    kv_uint("memory_event_count", r_.memory_events.size());
    kv_uint("dropped_events", i.dropped_events);
    kv_uint("unmatched_ends", i.unmatched_ends);
    kv_uint("overflowed_events", i.overflowed_events);
    kv_uint("unfinished_events", i.unfinished_events);
    kv_uint("lost_event_args", i.lost_event_args);
    kv_uint("dropped_device_records", i.dropped_device_records);
    kv_uint("unattached_device_records", i.unattached_device_records);
    kv_uint("process_cpu_ns", i.process_cpu_ns);
    kv_uint("system_busy_ns", i.system_busy_ns);
    kv_uint("system_idle_ns", i.system_idle_ns);
    kv_uint("cpu_count", i.cpu_count);
    put("\"devices\":[");
    for (size_t k = 0; k < r_.devices.size(); ++k) {
      const DeviceInfo& d = r_.devices[k];
      if (k > 0) put_char(',');
      put_char('{');
      kv_int("id", d.id);
      kv_str("name", d.name);
      kv_int("sm_count", d.sm_count);
      kv_str("compute_capability", std::to_string(d.compute_major) + "." + std::to_string(d.compute_minor));
      kv_uint("total_memory", d.total_memory);
      kv_int("max_threads_per_sm", d.max_threads_per_sm);
      kv_int("max_registers_per_sm", d.max_registers_per_sm);
      kv_int("max_shared_memory_per_sm", d.max_shared_memory_per_sm);
      kv_int("max_blocks_per_sm", d.max_blocks_per_sm);
      kv_uint("warp_size", static_cast<uint64_t>(d.warp_size), false);
      put_char('}');
    }
    put("],\"metadata\":{");
    for (size_t k = 0; k < r_.metadata.size(); ++k) {
      if (k > 0) put_char(',');
      put_quoted(r_.metadata[k].first);
      put_char(':');
      put_quoted(r_.metadata[k].second);
    }
    put("}}");
  }

  const Result& r_;
  const ChromeOptions& options_;
  AtomicFileWriter& out_;
  JsonOutputBuffer buf_{out_};
  static constexpr uint64_t kNoCorrelation = UINT64_MAX;
  static constexpr std::string_view kCorrelationKey = "correlation id";  // a launching runtime call's argument
  std::vector<std::string> names_;
  std::vector<std::pair<uint64_t, uint32_t>> launches_;  // (runtime call's host event, correlation id), sorted
  std::vector<bool> threads_with_memory_;
  std::vector<std::pair<uint64_t, uint8_t>> crossing_;  // host events on an overlap lane (ascending), their level
  std::vector<size_t> device_order_;                    // GPU records in start order, enclosing first
  std::vector<std::string_view> key_scratch_;           // keys_are_unique's, kept for its capacity
  std::vector<uint8_t> device_level_;                   // per GPU record: 0 its stream's lane, k its overlap lane k
  std::string complete_prefix_[PK_EVENT_TYPE_COUNT];
  const std::string empty_;
  uint64_t base_ns_ = 0;
  uint64_t shift_ns_ = 0;  // added to every time: where base_ns_ sits after the placed time base
  uint64_t pid_ = 0;
  bool first_event_ = true;
};

}  // namespace

void export_chrome_trace(const Result& result, const std::string& path, const ChromeOptions& options) {
  const uint64_t shift_ns = placement_shift_ns(result, options);  // before any file is made
  check_times_fit(result, shift_ns, options);
  AtomicFileWriter out(path);
  ChromeTraceWriter(result, options, shift_ns, out).write();
  out.commit();
}

}  // namespace profkit
