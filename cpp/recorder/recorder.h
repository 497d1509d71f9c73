// Recorder: the engine's state machine — recording windows, steps, metadata —
// and collect(), which drains every thread's buffer into a Result.
// recorder.cpp holds the state machine and collect's steps;
// record_conversion.cpp turns thread buffers into Result records;
// recorder_fork.cpp keeps the engine usable across fork().
//
// Thread-safety: every method is thread-safe; state changes, steps and collects
// are serialized by one lock (none of them is on the per-event hot path).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/compiler.h"
#include "profkit/profkit.h"
#include "recorder/activity_source.h"
#include "recorder/chunk_reserve.h"
#include "recorder/cpu_usage.h"
#include "trace/result.h"

namespace profkit {

class NameMap;
class ResultBuilder;
class TickConverter;

class Recorder {
 public:
  static Recorder& instance();

  // `raw`: a pk_state as a C caller passed it (any int; checked here).
  void set_state(int32_t raw);
  pk_state state() const noexcept;

  void step_begin(uint64_t number);
  void step_end(uint64_t num_samples);
  void step(uint64_t num_samples);
  uint64_t current_step() const;

  std::unique_ptr<Result> collect();

  void set_rank(int32_t rank, int32_t world_size);
  void set_metadata(const std::string& key, const std::string* value);
  // Not owned; must outlive the recorder's use of it (nullptr detaches).
  void set_activity_source(ActivitySource* source);

  // State listeners (pk_add_state_listener): called under the control lock
  // after each change. add_state_listener returns the handle. A listener
  // that calls set_state, a step function, collect or (add|remove)_state_listener
  // gets PK_ERR_INVALID_STATE (it would deadlock); current_step, set_rank and
  // set_metadata work from one.
  uint64_t add_state_listener(pk_state_listener listener, void* user_data);
  void remove_state_listener(uint64_t handle);

  // pthread_atfork handlers: every engine lock is taken before fork() and
  // released after it in parent and child, so that the child never inherits
  // a lock that a thread which does not exist there was holding. The child
  // then starts afresh: see after_fork_in_child.
  static void prepare_fork() noexcept;
  static void after_fork_in_parent() noexcept;
  static void after_fork_in_child() noexcept;

  // Unmatched ends on threads that never recorded (they have no buffer).
  PK_COLD static void count_unmatched_without_buffer() noexcept;
  static uint64_t unmatched_without_buffer_total() noexcept;

 private:
  Recorder() = default;
  static bool is_recording(pk_state s) noexcept { return s == PK_STATE_RECORD || s == PK_STATE_RECORD_AND_RETURN; }
  void end_step_locked(uint64_t now_ticks, uint64_t num_samples);
  // mutex_ for `function` (a pk_ entry point): PK_ERR_INVALID_STATE when
  // called from a state listener, which runs holding it.
  std::unique_lock<std::mutex> lock_outside_listener(const char* function) const;
  // mutex_, or nothing when this thread holds it already (in a listener).
  std::unique_lock<std::mutex> lock_unless_listening() const;
  static void unlock_after_fork() noexcept;
  void start_afresh_in_forked_child();
  static void forget_unmatched_without_buffer() noexcept;

  // The steps of collect(), in order; each runs under mutex_.
  struct CollectBounds {
    uint64_t now_ticks = 0;
    bool recording = false;  // the recording window goes on after this collect
    uint64_t start_ticks = 0;
    uint64_t end_ticks = 0;
    CpuSnapshot cpu_start;
    CpuSnapshot cpu_end;
  };
  CollectBounds collect_bounds() const;
  // Takes the next span index and the unmatched ends counted since the last collect.
  ResultInfo result_info(const CollectBounds& bounds, const TickConverter& clock);
  void add_capped_steps(ResultBuilder& builder, NameMap& names, const TickConverter& clock);
  // Whether this collect reports the open step as unfinished; `recording`:
  // the window goes on after it.
  bool open_step_unfinished(bool recording) noexcept;
  void start_next_span(const CollectBounds& bounds, uint64_t end_ns);

  mutable std::mutex mutex_;
  std::atomic<int> state_{PK_STATE_CLOSED};
  uint32_t last_window_ = 0;
  ChunkReserve reserve_;  // record chunks mapped before a window opens

  // The span the next collect covers: from the first recording start (or the
  // last collect while recording) to the recording stop (or the collect).
  bool span_started_ = false;
  uint64_t span_start_ticks_ = 0;
  // When a collect happens while recording, the next span starts exactly at
  // that result's end_ns (converting the same tick twice with two
  // calibrations could differ by a nanosecond).
  uint64_t span_start_ns_ = 0;
  uint64_t span_end_ticks_ = 0;
  CpuSnapshot cpu_start_;
  CpuSnapshot cpu_end_;
  uint64_t span_index_ = 0;

  bool step_open_ = false;
  uint64_t step_number_ = 0;
  uint64_t step_start_ticks_ = 0;
  uint32_t step_window_ = 0;
  bool step_end_reported_ = false;  // the open step's window has closed and a collect reported it

  // Steps that ended when their thread's buffer could get no memory (the
  // cap): kept here instead, so that a capped window still has its
  // ProfileStep markers and its step-time denominator (one per step, few).
  // Emptied by collect.
  struct CappedStep {
    uint64_t tid;
    std::string thread_name;
    uint64_t start_ticks;
    uint64_t end_ticks;
    uint64_t number;
    uint64_t num_samples;
  };
  std::vector<CappedStep> capped_steps_;

  int32_t rank_ = -1;
  int32_t world_size_ = -1;
  std::vector<std::pair<std::string, std::string>> metadata_;
  ActivitySource* source_ = nullptr;

  struct Listener {
    uint64_t handle;
    pk_state_listener fn;
    void* user_data;
  };
  std::vector<Listener> listeners_;
  uint64_t next_listener_handle_ = 1;
};

}  // namespace profkit
