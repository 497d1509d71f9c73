#include "recorder/recorder.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/compiler.h"
#include "common/error.h"
#include "profkit_version.h"
#include "recorder/chunk.h"
#include "recorder/name_table.h"
#include "recorder/record_conversion.h"
#include "recorder/thread_buffer.h"
#include "recorder/thread_registry.h"
#include "trace/result_builder.h"

namespace profkit {

namespace {

std::atomic<uint64_t> g_unmatched_without_buffer{0};        // since the last collect
std::atomic<uint64_t> g_unmatched_without_buffer_total{0};  // since the process started

std::string host_name() {
  char name[256] = {0};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

// Registered here, beside instance(), rather than in recorder_fork.cpp: a
// program linked against the static engine pulls in only the objects it
// references, and every user of the recorder references this one.
[[maybe_unused]] const int g_fork_handlers =
    pthread_atfork(&Recorder::prepare_fork, &Recorder::after_fork_in_parent, &Recorder::after_fork_in_child);

// True while this thread runs state listeners, which it does holding the
// recorder's mutex: a listener that calls back into a function taking it
// would deadlock. Those that change the state, the steps, the listeners or
// collect are refused instead (lock_outside_listener); those that only read
// or set a field go ahead without locking again (lock_unless_listening).
thread_local bool t_in_listener = false;

struct InListener {
  InListener() noexcept { t_in_listener = true; }
  ~InListener() { t_in_listener = false; }
  InListener(const InListener&) = delete;
  InListener& operator=(const InListener&) = delete;
};
}  // namespace

std::unique_lock<std::mutex> Recorder::lock_outside_listener(const char* function) const {
  if (t_in_listener) {
    throw Error(PK_ERR_INVALID_STATE, std::string(function) +
                                          ": called from a state listener, which runs while the engine changes "
                                          "state; call it after that change (pk_set_state) has returned");
  }
  return std::unique_lock<std::mutex>(mutex_);
}

std::unique_lock<std::mutex> Recorder::lock_unless_listening() const {
  if (t_in_listener) return std::unique_lock<std::mutex>(mutex_, std::defer_lock);  // held: by this thread
  return std::unique_lock<std::mutex>(mutex_);
}

Recorder& Recorder::instance() {
  static Recorder* recorder = new Recorder();  // never destroyed (see ThreadRegistry)
  return *recorder;
}

void Recorder::forget_unmatched_without_buffer() noexcept {
  g_unmatched_without_buffer.store(0, std::memory_order_relaxed);
  g_unmatched_without_buffer_total.store(0, std::memory_order_relaxed);
}

void Recorder::count_unmatched_without_buffer() noexcept {
  g_unmatched_without_buffer.fetch_add(1, std::memory_order_relaxed);
  g_unmatched_without_buffer_total.fetch_add(1, std::memory_order_relaxed);
}

uint64_t Recorder::unmatched_without_buffer_total() noexcept {
  return g_unmatched_without_buffer_total.load(std::memory_order_relaxed);
}

pk_state Recorder::state() const noexcept { return static_cast<pk_state>(state_.load(std::memory_order_relaxed)); }

void Recorder::set_state(int32_t raw) {
  if (raw < PK_STATE_CLOSED || raw > PK_STATE_RECORD_AND_RETURN) {
    throw Error(PK_ERR_INVALID_ARGUMENT, "pk_set_state: " + std::to_string(raw) +
                                             " is not a pk_state (use PK_STATE_CLOSED, READY, RECORD or "
                                             "RECORD_AND_RETURN)");
  }
  const auto to = static_cast<pk_state>(raw);
  const auto lock = lock_outside_listener("pk_set_state");
  const pk_state from = state();
  if (from == to) return;
  if (is_recording(to) && !is_recording(from)) {
    reserve_.window_opened();
    if (!span_started_) {
      span_started_ = true;
      span_start_ns_ = 0;
      span_start_ticks_ = read_ticks();
      cpu_start_ = take_cpu_snapshot();
    }
    span_end_ticks_ = 0;
    if (++last_window_ == 0) last_window_ = 1;  // 0 means "not recording"
    set_recording_window(last_window_);
  } else if (!is_recording(to) && is_recording(from)) {
    set_recording_window(0);
    reserve_.window_closed();
    span_end_ticks_ = read_ticks();
    cpu_end_ = take_cpu_snapshot();
  }
  // Record chunks are mapped before a window opens (chunk_reserve.h says
  // why): READY warms up for the next window, and a window opened straight
  // from CLOSED gets them here too. Closed, the pool goes back to the
  // system, and so do the chunks of idle threads whose records have all been
  // collected (those not yet collected are parked by the collect that takes
  // them).
  if (to == PK_STATE_CLOSED) {
    ChunkPool::trim();
    ThreadRegistry::instance().park_idle_chunks();
  } else if (from == PK_STATE_CLOSED || is_recording(to) != is_recording(from)) {
    ChunkPool::stock(reserve_.target());
  }
  state_.store(to, std::memory_order_relaxed);
  if (source_ != nullptr) source_->on_state_change(from, to);
  const InListener listening;
  for (const Listener& l : listeners_) l.fn(from, to, l.user_data);
}

uint64_t Recorder::add_state_listener(pk_state_listener listener, void* user_data) {
  if (listener == nullptr) throw Error(PK_ERR_INVALID_ARGUMENT, "pk_add_state_listener: listener must not be NULL");
  const auto lock = lock_outside_listener("pk_add_state_listener");
  const uint64_t handle = next_listener_handle_++;
  listeners_.push_back({handle, listener, user_data});
  const pk_state now = state();
  if (now != PK_STATE_CLOSED) {
    const InListener listening;
    listener(PK_STATE_CLOSED, now, user_data);
  }
  return handle;
}

void Recorder::remove_state_listener(uint64_t handle) {
  const auto lock = lock_outside_listener("pk_remove_state_listener");
  auto it = std::find_if(listeners_.begin(), listeners_.end(), [&](const Listener& l) { return l.handle == handle; });
  if (it == listeners_.end()) {
    throw Error(PK_ERR_INVALID_ARGUMENT,
                "pk_remove_state_listener: no listener has handle " + std::to_string(handle) + " (removed twice?)");
  }
  listeners_.erase(it);
}

namespace {

// Past INT64_MAX the numbers of the steps that follow wrapped to 0 at
// UINT64_MAX, and readers of signed 64-bit integers (JSON, numpy) saw
// negative steps. `function` is the C entry point that asked for the step.
void check_step_number(const char* function, uint64_t number) {
  if (number > static_cast<uint64_t>(INT64_MAX)) {
    throw Error(PK_ERR_INVALID_ARGUMENT, std::string(function) + ": step " + std::to_string(number) +
                                             " is out of range (step numbers go up to INT64_MAX)");
  }
}

}  // namespace

void Recorder::step_begin(uint64_t number) {
  check_step_number("pk_step_begin", number);
  const uint64_t now = read_ticks();
  const auto lock = lock_outside_listener("pk_step_begin");
  // A step still open ends here, as pk_step ends one: overwriting it (before
  // 1.9) lost it without a trace or a count.
  if (step_open_) end_step_locked(now, 0);
  step_open_ = true;
  step_number_ = number;
  step_start_ticks_ = now;
  step_window_ = recording_window_acquire();
  step_end_reported_ = false;
}

void Recorder::end_step_locked(uint64_t now_ticks, uint64_t num_samples) {
  step_open_ = false;
  const uint32_t window = recording_window_acquire();
  // Only a step that began and ended inside one recording window is whole.
  if (window == 0 || window != step_window_) return;
  ThreadBuffer* tb = current_thread_buffer();
  if (tb == nullptr) return;
  const RawRecord step[2] = {
      {step_start_ticks_, now_ticks, 0, PK_EVENT_PROFILE_STEP, 0, RecordKind::kStep},
      {step_number_, num_samples, 0, 0, 0, RecordKind::kStepMore},
  };
  if (!tb->try_append_group(step, 2)) {
    capped_steps_.push_back({tb->tid(), tb->name(), step_start_ticks_, now_ticks, step_number_, num_samples});
  }
}

// The open step's number is at most INT64_MAX (step_begin and step check
// it), so ending it always works; the number after it, which step_number_
// then holds, may be INT64_MAX + 1, and step refuses to begin that one.
void Recorder::step_end(uint64_t num_samples) {
  const uint64_t now = read_ticks();
  const auto lock = lock_outside_listener("pk_step_end");
  if (!step_open_) {
    throw Error(PK_ERR_INVALID_STATE, "pk_step_end: no step is open; call pk_step_begin (or pk_step) first");
  }
  end_step_locked(now, num_samples);
  ++step_number_;
}

void Recorder::step(uint64_t num_samples) {
  const uint64_t now = read_ticks();
  const auto lock = lock_outside_listener("pk_step");
  // Checked before anything changes: a refused pk_step leaves the open step
  // open (pk_step_end still ends it) and the numbering where it was.
  check_step_number("pk_step", step_open_ ? step_number_ + 1 : step_number_);
  if (step_open_) {
    end_step_locked(now, num_samples);
    ++step_number_;
  }
  step_open_ = true;
  step_start_ticks_ = now;
  step_window_ = recording_window_acquire();
  step_end_reported_ = false;
}

uint64_t Recorder::current_step() const {
  const auto lock = lock_unless_listening();
  return step_number_;
}

void Recorder::set_rank(int32_t rank, int32_t world_size) {
  if (rank < -1 || world_size < -1 || (rank >= 0 && world_size >= 0 && rank >= world_size)) {
    throw Error(PK_ERR_INVALID_ARGUMENT, "pk_set_rank: rank " + std::to_string(rank) + " with world size " +
                                             std::to_string(world_size) +
                                             " is not valid (need 0 <= rank < world_size, or -1 for unknown)");
  }
  const auto lock = lock_unless_listening();
  rank_ = rank;
  world_size_ = world_size;
}

void Recorder::set_metadata(const std::string& key, const std::string* value) {
  const auto lock = lock_unless_listening();
  auto it = std::find_if(metadata_.begin(), metadata_.end(), [&](const auto& kv) { return kv.first == key; });
  if (value == nullptr) {
    if (it != metadata_.end()) metadata_.erase(it);
  } else if (it != metadata_.end()) {
    it->second = *value;
  } else {
    metadata_.emplace_back(key, *value);
  }
}

void Recorder::set_activity_source(ActivitySource* source) {
  std::lock_guard<std::mutex> lock(mutex_);
  source_ = source;
}

std::unique_ptr<Result> Recorder::collect() {
  const auto lock = lock_outside_listener("pk_collect");
  const CollectBounds bounds = collect_bounds();
  const TickConverter clock = TickConverter::up_to_now();
  ResultInfo info = result_info(bounds, clock);
  const uint64_t end_ns = info.end_ns;
  ResultBuilder builder(std::move(info));
  // Events recorded whole (pk_complete_event) are nested only now: those
  // past the depth limit are dropped and counted as begin/end events are.
  builder.drop_events_nested_too_deep();

  ThreadCollect how;
  how.recording = bounds.recording;
  how.keep_spares = bounds.recording || state() == PK_STATE_READY;
  // What is still open (events, the step) is reported by every collect
  // while its window goes on, then by the collect that takes the window's
  // end, and not again (see unfinished_events in record_conversion.cpp).
  how.last_window = last_window_;
  NameMap names(builder);
  ThreadRegistry::instance().drain_each(
      [&](ThreadBuffer& tb) { return collect_thread_records(tb, how, builder, names, clock); });
  add_capped_steps(builder, names, clock);
  if (open_step_unfinished(bounds.recording)) ++builder.info().unfinished_events;
  if (!how.keep_spares) ChunkPool::trim();  // profiling is over: give the memory back
  if (source_ != nullptr) source_->contribute(builder);
  for (const auto& kv : metadata_) builder.add_metadata(kv.first, kv.second);

  start_next_span(bounds, end_ns);
  return builder.finish();
}

Recorder::CollectBounds Recorder::collect_bounds() const {
  CollectBounds b;
  b.now_ticks = read_ticks();
  b.recording = recording_window_acquire() != 0;
  // A stopped recording ends where it stopped; otherwise the span ends now.
  const bool ends_now = b.recording || span_end_ticks_ == 0;
  b.end_ticks = ends_now ? b.now_ticks : span_end_ticks_;
  b.start_ticks = span_started_ ? span_start_ticks_ : b.end_ticks;
  b.cpu_end = ends_now ? take_cpu_snapshot() : cpu_end_;
  b.cpu_start = span_started_ ? cpu_start_ : b.cpu_end;
  return b;
}

ResultInfo Recorder::result_info(const CollectBounds& bounds, const TickConverter& clock) {
  ResultInfo info;
  info.profkit_version = PROFKIT_VERSION;
  info.pid = static_cast<uint32_t>(getpid());
  info.hostname = host_name();
  info.rank = rank_;
  info.world_size = world_size_;
  info.span_index = span_index_++;
  info.end_ns = clock.to_ns(bounds.end_ticks);
  info.start_ns = span_start_ns_ != 0 ? span_start_ns_ : std::min(clock.to_ns(bounds.start_ticks), info.end_ns);
  info.clock_offset_ns = wall_clock_offset_ns();
  info.process_cpu_ns = bounds.cpu_end.process_cpu_ns - bounds.cpu_start.process_cpu_ns;
  info.system_busy_ns = bounds.cpu_end.system_busy_ns - bounds.cpu_start.system_busy_ns;
  info.system_idle_ns = bounds.cpu_end.system_idle_ns - bounds.cpu_start.system_idle_ns;
  info.cpu_count = online_cpu_count();
  info.unmatched_ends = g_unmatched_without_buffer.exchange(0, std::memory_order_relaxed);
  return info;
}

void Recorder::add_capped_steps(ResultBuilder& builder, NameMap& names, const TickConverter& clock) {
  for (const CappedStep& step : capped_steps_) {
    const uint32_t thread = builder.thread(step.tid);
    if (!step.thread_name.empty()) builder.set_thread_name(thread, step.thread_name);
    add_step_event(builder, names, clock, thread, step.start_ticks, step.end_ticks, step.number, step.num_samples);
  }
  capped_steps_.clear();
}

// The step in progress is not in this result either (a step record is
// written when it ends), so it counts as unfinished like an open event:
// otherwise a window cut off mid-step shows no sign that its last step is
// missing. A step begun before the window is not one of its steps. Like an
// open event, it counts at every collect while its window goes on, then at
// the first collect after the window closed, however many windows passed
// before that collect, and not again.
bool Recorder::open_step_unfinished(bool recording) noexcept {
  if (!step_open_ || step_window_ == 0 || step_end_reported_) return false;
  if (!recording || step_window_ != last_window_) step_end_reported_ = true;
  return true;
}

// The next span starts now if recording goes on, else at the next start.
void Recorder::start_next_span(const CollectBounds& bounds, uint64_t end_ns) {
  span_started_ = bounds.recording;
  span_start_ticks_ = bounds.now_ticks;
  span_start_ns_ = bounds.recording ? end_ns : 0;
  cpu_start_ = bounds.cpu_end;
  span_end_ticks_ = 0;
}

}  // namespace profkit
