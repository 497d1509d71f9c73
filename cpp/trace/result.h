// Result: one recording window of one process, as columns of frozen records.
//
// Everything downstream (storage, Chrome export, summaries, the Python layer)
// works on a Result, whether it was just collected or loaded from a file.
// Host events are grouped by thread; within a thread they are sorted by start
// time with enclosing events first, and `depth` is the nesting depth, so each
// thread's events form a forest that can be walked without extra indexes.
//
// Thread-safety: a Result is immutable once built; any number of threads may
// read it at once (parent_of's index is built once, under a lock). Ownership:
// borrowed columns point into `backing`.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "profkit/profkit.h"
#include "trace/column.h"
#include "trace/string_table.h"

namespace profkit {

// The version of schemas/trace.fbs this engine writes. 2: Trace.checksum.
constexpr uint32_t kSchemaVersion = 2;

struct ThreadRecord {
  uint64_t tid = 0;
  std::string name;
  uint64_t first_event = 0;
  uint64_t event_count = 0;
};

struct DeviceInfo {
  int32_t id = 0;
  std::string name;
  int32_t sm_count = 0;
  int32_t compute_major = 0;
  int32_t compute_minor = 0;
  uint64_t total_memory = 0;
  int32_t max_threads_per_sm = 0;
  int32_t max_registers_per_sm = 0;
  int32_t max_shared_memory_per_sm = 0;
  int32_t max_blocks_per_sm = 0;
  int32_t warp_size = 32;
};

struct ResultInfo {
  std::string profkit_version;
  uint32_t schema_version = kSchemaVersion;
  uint32_t pid = 0;
  std::string hostname;
  int32_t rank = -1;
  int32_t world_size = -1;
  uint64_t span_index = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  int64_t clock_offset_ns = 0;
  uint64_t dropped_events = 0;
  uint64_t unmatched_ends = 0;
  uint64_t overflowed_events = 0;
  uint64_t unfinished_events = 0;
  // Event arguments in no result: their event never ended inside a recording
  // window (it was still open when the window closed, or its thread exited)
  // or was not recorded (the memory cap).
  uint64_t lost_event_args = 0;
  uint64_t dropped_device_records = 0;
  uint64_t unattached_device_records = 0;
  uint64_t process_cpu_ns = 0;
  uint64_t system_busy_ns = 0;
  uint64_t system_idle_ns = 0;
  uint32_t cpu_count = 0;
};

struct Result {
  ResultInfo info;
  StringTable strings;
  std::vector<ThreadRecord> threads;
  Column<pk_host_event> host_events;
  Column<pk_event_arg> event_args;  // sorted by event index
  Column<pk_memory_event> memory_events;
  Column<pk_device_event> device_events;  // sorted by start time
  Column<pk_kernel_detail> kernel_details;
  Column<pk_memory_op_detail> memory_op_details;
  std::vector<DeviceInfo> devices;
  std::vector<std::pair<std::string, std::string>> metadata;
  // Keeps borrowed columns alive (the file bytes of a loaded result).
  std::shared_ptr<const void> backing;

  // The thread index owning host event `event` (binary search).
  size_t thread_of(uint64_t event) const noexcept;
  // The innermost enclosing event on the same thread, or PK_NO_EVENT. O(1):
  // the first call indexes all_parents() (8 bytes per host event), so that a
  // caller asking for every event's parent (Python's Result.parent) is O(n).
  uint64_t parent_of(uint64_t event) const noexcept;
  // Parents of every host event at once, O(n).
  std::vector<uint64_t> all_parents() const;
  // Recorded ProfileStep range: the first step number and the count.
  std::pair<uint64_t, uint64_t> step_range() const;

 private:
  // The nearest earlier event one level up: O(n) per call, for when the
  // index cannot be built (out of memory).
  uint64_t scan_for_parent(uint64_t event) const noexcept;

  // all_parents(), built by the first parent_of. Not std::call_once: with
  // libstdc++ a call that throws (bad_alloc) can leave the flag so that later
  // calls hang (GCC bug 66146).
  mutable std::mutex parents_mutex_;
  mutable std::atomic<bool> parents_ready_{false};
  mutable std::vector<uint64_t> parents_;
};

// Parses the number out of "ProfileStep#<n>"; false if `name` is not one.
bool parse_profile_step(std::string_view name, uint64_t* number) noexcept;

}  // namespace profkit
