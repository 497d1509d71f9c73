// Recording entry points of the C ABI: names, the hot path, state and steps,
// configuration. The hot-path functions are thin wrappers over the inline
// ThreadBuffer methods; everything else goes through guarded().
#include <algorithm>
#include <cstdint>
#include <string>

#include "capi_guard.h"
#include "common/clock.h"
#include "common/compiler.h"
#include "recorder/chunk.h"
#include "recorder/name_table.h"
#include "recorder/recorder.h"
#include "recorder/thread_buffer.h"
#include "recorder/thread_registry.h"

using profkit::guarded;
using profkit::RecordKind;
using profkit::ThreadBuffer;

namespace {

// An event type as a record's byte. A C caller may pass any int: values
// above 255 (negative ones too) are clamped to 255 rather than wrapping onto
// some real type; ResultBuilder::add_event files every value at or above
// PK_EVENT_TYPE_COUNT under UserDefined.
PK_ALWAYS_INLINE uint8_t record_type(const pk_event_type& type) noexcept {
  const auto raw = static_cast<uint32_t>(profkit::raw_enum(type));
  return static_cast<uint8_t>(raw > 255u ? 255u : raw);
}

// The recording paths, out of line so that the not-recording path of each
// entry point is a load, a test and a return (the call below is a tail jump).
//
// pk_begin_event and pk_end_event, which a framework calls for every
// operator, record inline instead: ThreadBuffer::try_begin / try_end handle
// the common case without a call, so these two need no stack frame and each
// spans two or three cache lines; every other case (a thread's first record,
// a new window, a full chunk, an unmatched end) goes to begin_general /
// end_general. Between two operators the framework evicts most of L1i, so
// every line an event executes tends to be an instruction-cache miss, and
// those misses were most of what profkit cost above reading the clock
// (callgrind's cache simulation, BENCHMARKS.md). PK_HOT puts both in
// .text.hot, together, each at the start of a cache line.
PK_NOINLINE PK_COLD void begin_general(uint32_t window, pk_name_id name, uint8_t type) noexcept {
  ThreadBuffer* tb = profkit::current_thread_buffer();
  if (PK_LIKELY(tb != nullptr)) tb->begin(window, name, type);
}

PK_NOINLINE PK_COLD void end_general(uint32_t window) noexcept {
  ThreadBuffer* tb = profkit::t_thread_buffer;
  if (PK_UNLIKELY(tb == nullptr)) {
    profkit::Recorder::count_unmatched_without_buffer();
    return;
  }
  tb->end(window);
}

PK_NOINLINE void begin_str_recording(uint32_t window, const char* name, uint8_t type) noexcept {
  ThreadBuffer* tb = profkit::current_thread_buffer();
  if (tb != nullptr) tb->begin(window, profkit::intern_cached(name), type);
}

PK_NOINLINE void instant_recording(uint32_t window, pk_name_id name, uint8_t type) noexcept {
  ThreadBuffer* tb = profkit::current_thread_buffer();
  if (tb != nullptr) tb->instant(window, name, type);
}

PK_NOINLINE void whole_event_recording(uint32_t window, pk_name_id name, uint8_t type, uint64_t start, uint64_t end,
                                       RecordKind kind) noexcept {
  ThreadBuffer* tb = profkit::current_thread_buffer();
  if (tb != nullptr) tb->whole_event(window, name, type, start, end, kind);
}

PK_NOINLINE void arg_recording(uint32_t window, pk_name_id key, RecordKind kind, uint64_t value) noexcept {
  ThreadBuffer* tb = profkit::current_thread_buffer();
  if (tb != nullptr) tb->arg(window, key, kind, value);
}

// pk_event_arg_str interns its value only for an open event: the header
// ignores an argument when none is open, and that is also the case on a
// thread whose exit handlers have run (its buffer is gone), where interning
// first read the freed name cache. A thread with no buffer has no open
// event, so none is made for it.
PK_NOINLINE void arg_str_recording(uint32_t window, pk_name_id key, const char* value) noexcept {
  ThreadBuffer* tb = profkit::t_thread_buffer;
  uint64_t start = 0;
  uint8_t index = 0;
  if (tb == nullptr || !tb->innermost_open(window, &start, &index)) return;
  tb->arg(window, key, RecordKind::kArgStr, profkit::intern_cached(value));
}

PK_NOINLINE void memory_recording(uint32_t window, int32_t device, uint64_t address, int64_t bytes,
                                  uint64_t total_allocated, uint64_t total_reserved) noexcept {
  (void)window;
  ThreadBuffer* tb = profkit::current_thread_buffer();
  if (tb == nullptr) return;
  const uint64_t now = profkit::read_ticks();
  const profkit::RawRecord group[3] = {
      {now, address, static_cast<uint32_t>(device), 0, 0, RecordKind::kMemory},
      {static_cast<uint64_t>(bytes), total_allocated, 0, 0, 0, RecordKind::kMemoryMore},
      {total_reserved, 0, 0, 0, 0, RecordKind::kMemoryMore},
  };
  tb->append_group(group, 3);
}

}  // namespace

extern "C" {

PK_API pk_name_id pk_intern(const char* utf8_name) noexcept {
  if (utf8_name == nullptr) return 0;
  pk_name_id id = 0;
  guarded("pk_intern", [&] { id = profkit::NameTable::instance().intern(utf8_name); });
  return id;
}

PK_API const char* pk_name_string(pk_name_id id) noexcept { return profkit::NameTable::instance().lookup(id); }

PK_API PK_HOT void pk_begin_event(pk_name_id name, pk_event_type type) noexcept {
  const uint32_t window = profkit::recording_window();
  if (PK_LIKELY(window == 0)) return;
  const uint8_t type_byte = record_type(type);
  ThreadBuffer* tb = profkit::t_thread_buffer;
  if (PK_LIKELY(tb != nullptr) && PK_LIKELY(tb->try_begin(window, name, type_byte))) return;
  begin_general(window, name, type_byte);
}

PK_API PK_HOT void pk_end_event(void) noexcept {
  const uint32_t window = profkit::recording_window();
  if (PK_LIKELY(window == 0)) return;
  ThreadBuffer* tb = profkit::t_thread_buffer;
  if (PK_LIKELY(tb != nullptr) && PK_LIKELY(tb->try_end(window))) return;
  end_general(window);
}

PK_API void pk_begin_event_str(const char* utf8_name, pk_event_type type) noexcept {
  const uint32_t window = profkit::recording_window();
  if (PK_LIKELY(window == 0)) return;
  begin_str_recording(window, utf8_name, record_type(type));
}

PK_API void pk_instant_event(pk_name_id name, pk_event_type type) noexcept {
  const uint32_t window = profkit::recording_window();
  if (PK_LIKELY(window == 0)) return;
  instant_recording(window, name, record_type(type));
}

PK_API void pk_complete_event(pk_name_id name, pk_event_type type, uint64_t start_ns, uint64_t end_ns) noexcept {
  const uint32_t window = profkit::recording_window();
  if (PK_LIKELY(window == 0)) return;
  whole_event_recording(window, name, record_type(type), start_ns, end_ns, RecordKind::kWholeEvent);
}

PK_API void pk_complete_event_ticks(pk_name_id name, pk_event_type type, uint64_t start_ticks,
                                    uint64_t end_ticks) noexcept {
  const uint32_t window = profkit::recording_window();
  if (PK_LIKELY(window == 0)) return;
  whole_event_recording(window, name, record_type(type), start_ticks, end_ticks, RecordKind::kWholeEventTicks);
}

PK_API void pk_event_arg_int(pk_name_id key, int64_t value) noexcept {
  const uint32_t window = profkit::recording_window();
  if (PK_LIKELY(window == 0)) return;
  arg_recording(window, key, RecordKind::kArgInt, static_cast<uint64_t>(value));
}

PK_API void pk_event_arg_str(pk_name_id key, const char* utf8_value) noexcept {
  const uint32_t window = profkit::recording_window();
  if (PK_LIKELY(window == 0)) return;
  arg_str_recording(window, key, utf8_value);
}

PK_API uint64_t pk_now_ns(void) noexcept { return profkit::monotonic_ns(); }

PK_API uint64_t pk_now_ticks(void) noexcept { return profkit::read_ticks(); }

PK_API pk_status pk_set_thread_name(const char* utf8_name) noexcept {
  return guarded("pk_set_thread_name", [&] {
    profkit::require(utf8_name, "pk_set_thread_name", "utf8_name");
    ThreadBuffer* tb = profkit::current_thread_buffer();
    if (tb == nullptr) {
      throw profkit::Error(PK_ERR_INVALID_STATE, "pk_set_thread_name: this thread is exiting");
    }
    tb->set_name(utf8_name);
  });
}

PK_API void pk_record_memory(int32_t device, uint64_t address, int64_t bytes, uint64_t total_allocated,
                             uint64_t total_reserved) noexcept {
  const uint32_t window = profkit::recording_window();
  if (PK_LIKELY(window == 0)) return;
  memory_recording(window, device, address, bytes, total_allocated, total_reserved);
}

PK_API pk_status pk_set_state(pk_state state) noexcept {
  const int32_t raw = profkit::raw_enum(state);  // the Recorder checks it
  return guarded("pk_set_state", [&] { profkit::Recorder::instance().set_state(raw); });
}

PK_API pk_status pk_add_state_listener(pk_state_listener listener, void* user_data, uint64_t* handle) noexcept {
  return guarded("pk_add_state_listener", [&] {
    profkit::require(handle, "pk_add_state_listener", "handle");
    *handle = profkit::Recorder::instance().add_state_listener(listener, user_data);
  });
}

PK_API pk_status pk_remove_state_listener(uint64_t handle) noexcept {
  return guarded("pk_remove_state_listener", [&] { profkit::Recorder::instance().remove_state_listener(handle); });
}

PK_API pk_state pk_get_state(void) noexcept { return profkit::Recorder::instance().state(); }

PK_API pk_status pk_step(uint64_t num_samples) noexcept {
  return guarded("pk_step", [&] { profkit::Recorder::instance().step(num_samples); });
}

PK_API pk_status pk_step_begin(uint64_t step_number) noexcept {
  return guarded("pk_step_begin", [&] { profkit::Recorder::instance().step_begin(step_number); });
}

PK_API pk_status pk_step_end(uint64_t num_samples) noexcept {
  return guarded("pk_step_end", [&] { profkit::Recorder::instance().step_end(num_samples); });
}

PK_API uint64_t pk_current_step(void) noexcept {
  uint64_t step = 0;
  guarded("pk_current_step", [&] { step = profkit::Recorder::instance().current_step(); });
  // Once ProfileStep#INT64_MAX has ended, the recorder's next number is
  // INT64_MAX + 1, a step that never begins (pk_step refuses it): reported as
  // such it reads as INT64_MIN in signed 64-bit readers, which step numbers
  // are kept within since 1.13. The last step there is stays the answer.
  return std::min<uint64_t>(step, static_cast<uint64_t>(INT64_MAX));
}

PK_API pk_status pk_set_memory_cap(uint64_t bytes) noexcept {
  return guarded("pk_set_memory_cap", [&] {
    if (bytes < profkit::Chunk::kBytes) {
      throw profkit::Error(PK_ERR_INVALID_ARGUMENT, "pk_set_memory_cap: " + std::to_string(bytes) +
                                                        " bytes is below one record buffer (" +
                                                        std::to_string(profkit::Chunk::kBytes) + " bytes)");
    }
    profkit::MemoryBudget::set_cap(bytes);
    profkit::ChunkPool::trim_to_cap();
  });
}

PK_API uint64_t pk_get_memory_cap(void) noexcept { return profkit::MemoryBudget::cap(); }

PK_API pk_status pk_set_rank(int32_t rank, int32_t world_size) noexcept {
  return guarded("pk_set_rank", [&] { profkit::Recorder::instance().set_rank(rank, world_size); });
}

PK_API pk_status pk_set_metadata(const char* key, const char* value) noexcept {
  return guarded("pk_set_metadata", [&] {
    profkit::require(key, "pk_set_metadata", "key");
    if (value == nullptr) {
      profkit::Recorder::instance().set_metadata(key, nullptr);
    } else {
      const std::string v(value);
      profkit::Recorder::instance().set_metadata(key, &v);
    }
  });
}

PK_API pk_status pk_get_counters(pk_counters* out) noexcept {
  return guarded("pk_get_counters", [&] {
    const profkit::CounterTotals t = profkit::ThreadRegistry::instance().totals();
    pk_counters c{};
    c.recorded_events = t.recorded_events;
    c.dropped_events = t.dropped_events;
    c.unmatched_ends = t.unmatched_ends + profkit::Recorder::unmatched_without_buffer_total();
    c.overflowed_events = t.overflowed_events;
    c.memory_used = profkit::MemoryBudget::used();
    c.memory_cap = profkit::MemoryBudget::cap();
    profkit::copy_versioned(out, c, "pk_get_counters");
  });
}

}  // extern "C"
