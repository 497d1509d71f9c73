// Chrome-trace JSON export (chrome://tracing, ui.perfetto.dev).
//
// Layout: host events on their OS process, each thread split into a Python
// lane (ProfileStep, Forward, Backward, Dataloader, Optimization, PythonOp,
// PythonUserDefined) above a C++ lane (Operator, OperatorInner, UserDefined,
// CudaRuntime, Communication); GPU activity on one process per device with a
// lane per stream (and overlap lanes where a stream's work overlaps); flow
// arrows from each launch to its GPU work; metadata events naming processes
// and lanes; memory events as "[memory]" instants on
// the allocating thread plus a counter track per device; and a top-level
// "profkit" object with the run's metadata (enough to load the file back,
// chrome_trace_reader.h). Times are µs with ns precision relative to base_ns.
// An event's argument keys are unique, as JSON readers keep one value per
// key: a key given again on one event is written "key#2", "key#3", ...
// (loaded back as keys of their own).
//
// The file is streamed through a temporary renamed into place.
// Thread-safety: reentrant; the Result is only read.
#pragma once

#include <string>

#include "trace/result.h"

namespace profkit {

struct ChromeOptions {
  bool label_durations = false;  // "name[1.23 ms]"
  bool include_flows = true;     // launch -> GPU arrows

  // Placement in a timeline shared with other processes (profkit merge); the
  // defaults leave the trace as it is.
  bool use_time_base = false;        // ts 0 is time_base_wall_ns, not the trace's own start
  int64_t time_base_wall_ns = 0;     // wall-clock ns; at or before the trace's start (else Error):
                                     // the recording window's start, or its first event if earlier
  int64_t pid = -1;                  // >= 0: host process id in the file; -1: the OS pid
  uint64_t flow_id_offset = 0;       // added to every flow arrow's id
  std::string process_label_prefix;  // put before every process name
  int64_t sort_index_offset = 0;     // added to every process sort index
};

void export_chrome_trace(const Result& result, const std::string& path, const ChromeOptions& options);

// The layout version in the "profkit" object ("trace_json_version"). 2 added
// what load needs to rebuild a Result: "[memory]" instants with every
// allocation's address and size, runtime calls' correlation ids, the CPU
// usage fields and the event counts. 3 added the overlap lanes (below),
// which an older reader would load as threads of their own. Files without
// it are layout 1.
//
// GPU work without timestamps carries "no timing": true; when its placed time
// lies before base_ns (where ts would clamp to 0), also "placed at ns": that
// time on the engine clock. An older reader ignores the argument and loads
// such a record at base_ns, as before, so the layout version stays.
constexpr uint64_t kChromeTraceJsonVersion = 3;

// Lane ids, shared with tools that merge traces.
constexpr uint64_t kCppLaneOffset = 1000000000ull;  // tid of a thread's C++ lane = tid + offset
// A lane holds properly nested slices only. A host event that outlives an
// enclosing one on its lane (a RecordEvent begun in one step and ended in
// the next: steps are not on the recording stack) goes to the lane's
// overlap lane: tid + kOverlapLaneOffset (Python), + kCppLaneOffset more
// (C++). One that outlives an enclosing one there too (two crossing events
// that cross each other) goes to the thread's second overlap lane, shared
// by both layers: tid + kSecondOverlapLaneOffset. Past that it overlaps on
// the second overlap lane anyway (drawn overlapped, never lost): Perfetto
// reads tids as 32 bits, and this is the last multiple of kCppLaneOffset
// whose lanes stay below 2^32 for every OS tid (below 2^22). Every lane id
// is a tid plus a multiple of kCppLaneOffset, so layout-3 readers that
// predate the second overlap lane load it back as its thread too.
constexpr uint64_t kOverlapLaneOffset = 2 * kCppLaneOffset;
constexpr uint64_t kSecondOverlapLaneOffset = 4 * kCppLaneOffset;
constexpr uint64_t thread_of_lane_id(uint64_t lane) noexcept { return lane % kCppLaneOffset; }
constexpr uint64_t kDeviceProcessStride = 10000000ull;  // GPU d of pid p = p + stride * (d + 1)
// Perfetto reads pids as 32-bit. GPU d of an OS pid (Linux's are below 2^22)
// fits for d below kStridedDeviceCount, past any machine's devices (the CUPTI
// decoder keeps no higher one: record_decoder.h). A Result that holds a
// higher d anyway (made by hand, or loaded from an older file, whose decoder
// clamped a bad device id to 65535) puts it on
//   p + d / n + stride * (d % n + 1),  n = kStridedDeviceCount:
// below 2^32 for every 16-bit d, and apart from the host's pid and from
// every other device's in the file.
constexpr uint32_t kStridedDeviceCount = 429;
// GPU work on one stream overlaps when CUDA lets it (programmatic dependent
// launch on Hopper starts a kernel before the one ahead of it ends), and
// ui.perfetto.dev drops or misplaces slices that overlap on a lane. Work that
// outlives an enclosing record of its stream's lane goes to overlap lane k
// (1..kMaxDeviceOverlapLanes) of the stream: tid = stream + k * offset (below
// 2^32, as Perfetto reads tids). The stream itself is in the record's args.
constexpr uint64_t kDeviceOverlapLaneOffset = 1000000000ull;
constexpr uint32_t kMaxDeviceOverlapLanes = 3;

}  // namespace profkit
