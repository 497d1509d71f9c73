#include "recorder/recorder.h"

#include <pthread.h>
#include <sys/syscall.h>
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

// Maps the process's interned name ids to the result's string ids, adding a
// name to the result the first time a record uses it: a result holds only the
// names it refers to, and a collect never walks the whole name table.
class NameMap {
 public:
  explicit NameMap(ResultBuilder& builder) : builder_(builder), names_(NameTable::instance()) {
    ids_.assign(std::max<uint32_t>(names_.size(), 1), kUnmapped);
    ids_[0] = builder_.add_string("");  // "" is string 0 of every result
  }

  uint32_t operator()(uint32_t name) {
    if (PK_UNLIKELY(name >= ids_.size())) {
      // A name interned since the map was made grows it; an id never
      // interned (a caller's bad one, which must not size the map) is "".
      const uint32_t known = names_.size();
      if (name >= known) return 0;
      ids_.resize(known, kUnmapped);
    }
    uint32_t& id = ids_[name];
    if (PK_UNLIKELY(id == kUnmapped)) {
      const char* text = names_.lookup(name);
      // Producers are not trusted with ids: one never interned is "".
      id = text == nullptr ? 0 : builder_.strings().add_borrowed(text, names_.length(name));
    }
    return id;
  }

 private:
  static constexpr uint32_t kUnmapped = UINT32_MAX;
  ResultBuilder& builder_;
  const NameTable& names_;
  std::vector<uint32_t> ids_;
};

// "ProfileStep#<number>" on `thread`, with its num_samples argument.
void add_step_event(ResultBuilder& builder, NameMap& names, const TickConverter& clock, uint32_t thread,
                    uint64_t start_ticks, uint64_t end_ticks, uint64_t number, uint64_t num_samples) {
  const uint64_t start = clock.to_ns(start_ticks);
  const uint64_t end = std::max(start, clock.to_ns(end_ticks));
  const uint32_t name = builder.add_string("ProfileStep#" + std::to_string(number));
  builder.add_event(thread, {start, end, name, PK_EVENT_PROFILE_STEP, 0, 0});
  if (num_samples > 0) {
    static const uint32_t key = NameTable::instance().intern("num_samples");
    builder.add_arg(thread, start, 0, names(key), PK_ARG_INT, static_cast<int64_t>(num_samples));
  }
}

// Turns one thread's raw records into builder entries. An argument goes to
// the builder with its event's record; until then it waits in `open_args`,
// across collects if its event is still open (see open_event_args.h).
class RecordConverter {
 public:
  RecordConverter(ResultBuilder& builder, NameMap& names, const TickConverter& clock, uint32_t thread,
                  OpenEventArgs& open_args)
      : builder_(builder), names_(names), clock_(clock), thread_(thread), open_args_(open_args) {}

  // Returns how many records of the thread's recorded_events count these were:
  // a group (a memory event, a step) counts once, like append_group does.
  uint32_t convert(const RawRecord* r, uint32_t n) {
    uint32_t counted = 0;
    for (uint32_t i = 0; i < n; ++i) {
      if (r[i].kind != RecordKind::kMemoryMore && r[i].kind != RecordKind::kStepMore) ++counted;
      const RawRecord& rec = r[i];
      switch (rec.kind) {
        case RecordKind::kEvent:
        case RecordKind::kInstant: {
          const uint64_t start = clock_.to_ns(rec.a);
          const uint64_t end = rec.kind == RecordKind::kInstant ? start : std::max(start, clock_.to_ns(rec.b));
          const uint16_t flags = rec.kind == RecordKind::kInstant ? PK_HOST_EVENT_INSTANT : 0;
          builder_.add_event(thread_, {start, end, names_(rec.name), rec.type, rec.depth, flags});
          if (rec.kind == RecordKind::kEvent) open_args_.on_event_end(rec, [&](const RawRecord& arg) { add_arg(arg); });
          break;
        }
        case RecordKind::kArgInt:
        case RecordKind::kArgStr:
          open_args_.add(rec);
          break;
        case RecordKind::kStep:
          // A step is two records committed together.
          if (i + 1 < n && r[i + 1].kind == RecordKind::kStepMore) {
            add_step(rec, r[i + 1]);
            ++i;
          }
          break;
        case RecordKind::kStepMore:
          break;  // consumed with its kStep record
        case RecordKind::kMemory:
          // A memory event is three records committed together.
          if (i + 2 < n && r[i + 1].kind == RecordKind::kMemoryMore && r[i + 2].kind == RecordKind::kMemoryMore) {
            pk_memory_event m{};
            m.time_ns = clock_.to_ns(rec.a);
            m.address = rec.b;
            m.bytes = static_cast<int64_t>(r[i + 1].a);
            m.total_allocated = r[i + 1].b;
            m.total_reserved = r[i + 2].a;
            m.thread = thread_;
            m.device = static_cast<int32_t>(rec.name);
            builder_.add_memory_event(m);
            i += 2;
          }
          break;
        case RecordKind::kMemoryMore:
          break;  // consumed with its kMemory record
      }
    }
    return counted;
  }

 private:
  void add_arg(const RawRecord& arg) {
    const bool text = arg.kind == RecordKind::kArgStr;
    builder_.add_arg(thread_, clock_.to_ns(arg.a), arg.depth, names_(arg.name), text ? PK_ARG_STRING : PK_ARG_INT,
                     text ? static_cast<int64_t>(names_(static_cast<uint32_t>(arg.b))) : static_cast<int64_t>(arg.b));
  }

  void add_step(const RawRecord& step, const RawRecord& more) {
    add_step_event(builder_, names_, clock_, thread_, step.a, step.b, more.a, more.b);
  }

  ResultBuilder& builder_;
  NameMap& names_;
  const TickConverter& clock_;
  uint32_t thread_;
  OpenEventArgs& open_args_;
};

}  // namespace

// fork() copies only the calling thread: a lock another thread held at that
// moment (a collect or a state change in progress, a thread interning a name,
// refilling its buffer or recording for the first time) stayed held for ever
// in the child, whose next pk_collect, pk_set_state, pk_intern or record then
// hung -- a data-loader worker forked from a recording process, say. The
// handlers take the locks in the order the engine nests them (the recorder's,
// the GPU tracer's, the thread list's and the buffers' names, the chunk
// pool's, the name table's), so fork() waits for such a section to end
// instead. A state
// listener must therefore not call fork() (it runs under the recorder's lock,
// like the calls its comment already forbids).
void Recorder::prepare_fork() noexcept {
  instance().mutex_.lock();
  // The GPU tracer's locks come next: it is called under the recorder's.
  if (instance().source_ != nullptr) instance().source_->lock_for_fork();
  ThreadRegistry::instance().lock_for_fork();
  ChunkPool::lock_for_fork();
  NameTable::instance().lock_for_fork();
}

void Recorder::unlock_after_fork() noexcept {
  NameTable::instance().unlock_after_fork();
  ChunkPool::unlock_after_fork();
  ThreadRegistry::instance().unlock_after_fork();
  if (instance().source_ != nullptr) instance().source_->unlock_after_fork();
  instance().mutex_.unlock();
}

void Recorder::after_fork_in_parent() noexcept { unlock_after_fork(); }

void Recorder::after_fork_in_child() noexcept {
  unlock_after_fork();
  try {
    instance().start_afresh_in_forked_child();
  } catch (...) {
    // A lock that failed (std::system_error; nothing here allocates): the
    // child keeps the parent's records, as before 1.13.
  }
}

// The child is a new process whose only thread is the one that forked. What
// the parent recorded before the fork is reported by the parent's collect;
// reporting it again from the child would double it in any merge of the two
// (a data-loader worker's trace and its trainer's, say). So the child keeps
// none of it, and its collects and counters cover only its own life: its
// thread id, its CPU time (which restarts at zero in a new process: the old
// start snapshot made the CPU figure wrap), span index 0, no GPU tracing
// (see CuptiTracer::forget_in_forked_child). Events open in the
// forking thread stay open, since the child goes on from that point and ends
// them, and so does a step in progress; they start at the fork.
void Recorder::start_afresh_in_forked_child() {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t now = read_ticks();
  ThreadRegistry::instance().keep_only_in_forked_child(t_thread_buffer, static_cast<uint64_t>(syscall(SYS_gettid)),
                                                       now);
  g_unmatched_without_buffer.store(0, std::memory_order_relaxed);
  g_unmatched_without_buffer_total.store(0, std::memory_order_relaxed);
  ChunkPool::trim();  // spare chunks mapped by the parent
  capped_steps_.clear();
  if (source_ != nullptr) source_->forget_in_forked_child();
  if (step_open_) step_start_ticks_ = std::max(step_start_ticks_, now);
  span_index_ = 0;
  span_end_ticks_ = 0;
  span_start_ns_ = 0;
  span_started_ = recording_window() != 0;
  if (span_started_) {
    span_start_ticks_ = now;
    cpu_start_ = take_cpu_snapshot();
  }
}

namespace {
[[maybe_unused]] const int g_fork_handlers =
    pthread_atfork(&Recorder::prepare_fork, &Recorder::after_fork_in_parent, &Recorder::after_fork_in_child);
}  // namespace

Recorder& Recorder::instance() {
  static Recorder* recorder = new Recorder();  // never destroyed (see ThreadRegistry)
  return *recorder;
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
  std::lock_guard<std::mutex> lock(mutex_);
  const pk_state from = state();
  if (from == to) return;
  if (is_recording(to) && !is_recording(from)) {
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
    span_end_ticks_ = read_ticks();
    cpu_end_ = take_cpu_snapshot();
  }
  state_.store(to, std::memory_order_relaxed);
  if (source_ != nullptr) source_->on_state_change(from, to);
  for (const Listener& l : listeners_) l.fn(from, to, l.user_data);
}

uint64_t Recorder::add_state_listener(pk_state_listener listener, void* user_data) {
  if (listener == nullptr) throw Error(PK_ERR_INVALID_ARGUMENT, "pk_add_state_listener: listener must not be NULL");
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t handle = next_listener_handle_++;
  listeners_.push_back({handle, listener, user_data});
  const pk_state now = state();
  if (now != PK_STATE_CLOSED) listener(PK_STATE_CLOSED, now, user_data);
  return handle;
}

void Recorder::remove_state_listener(uint64_t handle) {
  std::lock_guard<std::mutex> lock(mutex_);
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
  std::lock_guard<std::mutex> lock(mutex_);
  // A step still open ends here, as pk_step ends one: overwriting it (before
  // 1.9) lost it without a trace or a count.
  if (step_open_) end_step_locked(now, 0);
  step_open_ = true;
  step_number_ = number;
  step_start_ticks_ = now;
  step_window_ = recording_window_acquire();
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
  std::lock_guard<std::mutex> lock(mutex_);
  if (!step_open_) {
    throw Error(PK_ERR_INVALID_STATE, "pk_step_end: no step is open; call pk_step_begin (or pk_step) first");
  }
  end_step_locked(now, num_samples);
  ++step_number_;
}

void Recorder::step(uint64_t num_samples) {
  const uint64_t now = read_ticks();
  std::lock_guard<std::mutex> lock(mutex_);
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
}

uint64_t Recorder::current_step() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return step_number_;
}

void Recorder::set_rank(int32_t rank, int32_t world_size) {
  if (rank < -1 || world_size < -1 || (rank >= 0 && world_size >= 0 && rank >= world_size)) {
    throw Error(PK_ERR_INVALID_ARGUMENT, "pk_set_rank: rank " + std::to_string(rank) + " with world size " +
                                             std::to_string(world_size) +
                                             " is not valid (need 0 <= rank < world_size, or -1 for unknown)");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  rank_ = rank;
  world_size_ = world_size;
}

void Recorder::set_metadata(const std::string& key, const std::string* value) {
  std::lock_guard<std::mutex> lock(mutex_);
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
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t now_ticks = read_ticks();
  const bool recording = recording_window_acquire() != 0;
  const uint64_t end_ticks = recording || span_end_ticks_ == 0 ? now_ticks : span_end_ticks_;
  const uint64_t start_ticks = span_started_ ? span_start_ticks_ : end_ticks;
  const CpuSnapshot cpu_end = recording || span_end_ticks_ == 0 ? take_cpu_snapshot() : cpu_end_;
  const CpuSnapshot cpu_start = span_started_ ? cpu_start_ : cpu_end;
  const TickConverter clock = TickConverter::up_to_now();

  ResultInfo info;
  info.profkit_version = PROFKIT_VERSION;
  info.pid = static_cast<uint32_t>(getpid());
  info.hostname = host_name();
  info.rank = rank_;
  info.world_size = world_size_;
  info.span_index = span_index_++;
  info.end_ns = clock.to_ns(end_ticks);
  info.start_ns = span_start_ns_ != 0 ? span_start_ns_ : std::min(clock.to_ns(start_ticks), info.end_ns);
  info.clock_offset_ns = wall_clock_offset_ns();
  info.process_cpu_ns = cpu_end.process_cpu_ns - cpu_start.process_cpu_ns;
  info.system_busy_ns = cpu_end.system_busy_ns - cpu_start.system_busy_ns;
  info.system_idle_ns = cpu_end.system_idle_ns - cpu_start.system_idle_ns;
  info.cpu_count = online_cpu_count();
  info.unmatched_ends = g_unmatched_without_buffer.exchange(0, std::memory_order_relaxed);

  const uint64_t info_end_ns = info.end_ns;
  ResultBuilder builder(std::move(info));

  const bool keep_spares = recording || state() == PK_STATE_READY;
  ResultInfo& totals = builder.info();
  // What is still open (events, the step) is reported with the window it
  // began in, until that window's end has been collected; later collects of
  // a closed engine would otherwise report the same open events again.
  const bool window_uncollected = recording || span_end_ticks_ != 0;
  NameMap names(builder);
  ThreadRegistry::instance().drain_each([&](ThreadBuffer& tb) {
    bool has_thread = false;
    uint32_t thread = 0;
    const bool finished = tb.drain(keep_spares, [&](const RawRecord* records, uint32_t n) {
      if (!has_thread) {
        thread = builder.thread(tb.tid());
        builder.set_thread_name(thread, tb.name());
        // Every record written since the last collect is about to arrive.
        const uint64_t recorded = tb.recorded_events.get();
        builder.reserve_events(thread, recorded > tb.collected_records ? recorded - tb.collected_records : 0);
        has_thread = true;
      }
      tb.collected_records += RecordConverter(builder, names, clock, thread, tb.open_event_args).convert(records, n);
    });
    // Arguments of events still open wait for them while the window goes
    // on; once it has closed (or the thread has exited) those events can no
    // longer end, and their arguments are counted as lost.
    if (!recording || finished) tb.open_event_args.abandon();
    totals.lost_event_args += tb.open_event_args.take_lost();
    const uint64_t dropped = tb.dropped_events.get();
    const uint64_t unmatched = tb.unmatched_ends.get();
    const uint64_t overflowed = tb.overflowed_events.get();
    totals.dropped_events += dropped - tb.reported_dropped;
    totals.unmatched_ends += unmatched - tb.reported_unmatched;
    totals.overflowed_events += overflowed - tb.reported_overflowed;
    tb.reported_dropped = dropped;
    tb.reported_unmatched = unmatched;
    tb.reported_overflowed = overflowed;
    // A thread that exited with events open counts too (its buffer goes
    // away after this drain, so it is counted once): whether the exit was
    // seen before this collect is a race with the thread's TLS destructors.
    if (window_uncollected && tb.window() == last_window_) {
      totals.unfinished_events += std::min<uint32_t>(tb.open_depth(), ThreadBuffer::kMaxDepth);
    }
    return finished;
  });
  for (const CappedStep& step : capped_steps_) {
    const uint32_t thread = builder.thread(step.tid);
    if (!step.thread_name.empty()) builder.set_thread_name(thread, step.thread_name);
    add_step_event(builder, names, clock, thread, step.start_ticks, step.end_ticks, step.number, step.num_samples);
  }
  capped_steps_.clear();
  // The step in progress is not in this result either (a step record is
  // written when it ends), so it counts as unfinished like an open event:
  // otherwise a window cut off mid-step shows no sign that its last step is
  // missing. A step begun before the window is not one of its steps.
  if (step_open_ && step_window_ != 0 && step_window_ == last_window_ && window_uncollected) {
    ++totals.unfinished_events;
  }
  if (!keep_spares) ChunkPool::trim();  // profiling is over: give the memory back
  if (source_ != nullptr) source_->contribute(builder);
  for (const auto& kv : metadata_) builder.add_metadata(kv.first, kv.second);

  // The next span starts now if recording goes on, else at the next start.
  span_started_ = recording;
  span_start_ticks_ = now_ticks;
  span_start_ns_ = recording ? info_end_ns : 0;
  cpu_start_ = cpu_end;
  span_end_ticks_ = 0;
  return builder.finish();
}

}  // namespace profkit
