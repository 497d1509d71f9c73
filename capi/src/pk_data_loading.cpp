// Data loading through the C ABI (profkit.h, since 1.5): per-thread nesting of
// data-loading ranges, the process's reader time, and the Dataloader events.
//
// Built on the public recording calls (pk_begin_event / pk_end_event), so a
// data-loading range records exactly as a framework's own Dataloader event
// would. The reader time is kept whether or not profkit records: benchmark
// mode (SPEC §7) reports reader cost for every step, not only for steps in a
// recording window.
//
// Thread-safety: each thread's nesting and reader time are its own
// (thread_local, trivially destructible, so threads register no destructor);
// the process's total is one relaxed atomic that any thread adds to and reads.
#include <atomic>
#include <cstdint>

#include "common/clock.h"
#include "profkit/profkit.h"
#include "recorder/thread_buffer.h"

namespace {

struct DataLoadingRange {
  uint32_t depth = 0;   // ranges open on this thread
  uint32_t window = 0;  // recording window the outermost began in (0: not recording)
  uint64_t start_ns = 0;
  uint64_t total_ns = 0;  // this thread's reader time (pk_thread_reader_time_ns)
};

thread_local DataLoadingRange t_range;
std::atomic<uint64_t> g_reader_ns{0};

}  // namespace

extern "C" {

PK_API void pk_data_loading_begin(pk_name_id name) noexcept {
  DataLoadingRange& range = t_range;
  if (range.depth++ != 0) return;  // inside an outer range: part of it
  range.window = profkit::recording_window();
  if (range.window != 0) pk_begin_event(name, PK_EVENT_DATALOADER);
  range.start_ns = profkit::monotonic_ns();
}

PK_API void pk_data_loading_end(void) noexcept {
  DataLoadingRange& range = t_range;
  if (range.depth == 0) return;  // no open range: ignored, as documented
  if (--range.depth != 0) return;
  const uint64_t spent = profkit::monotonic_ns() - range.start_ns;
  range.total_ns += spent;
  g_reader_ns.fetch_add(spent, std::memory_order_relaxed);
  // As RecordEvent: an event that began in another window (or while not
  // recording) is left out rather than closing some other event.
  if (range.window != 0 && range.window == profkit::recording_window()) pk_end_event();
}

PK_API uint64_t pk_reader_time_ns(void) noexcept { return g_reader_ns.load(std::memory_order_relaxed); }

PK_API uint64_t pk_thread_reader_time_ns(void) noexcept { return t_range.total_ns; }

PK_API uint32_t pk_data_loading_depth(void) noexcept { return t_range.depth; }

}  // extern "C"
