// The recorder's fork() handling, apart from its state machine: the locks
// taken around fork() and the forked child's fresh start. The handlers are
// registered with pthread_atfork in recorder.cpp, next to Recorder::instance,
// so that every program that uses the recorder links them.
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>

#include "common/clock.h"
#include "recorder/chunk.h"
#include "recorder/name_table.h"
#include "recorder/recorder.h"
#include "recorder/thread_buffer.h"
#include "recorder/thread_registry.h"

namespace profkit {

// fork() copies only the calling thread: a lock another thread held at that
// moment (a collect or a state change in progress, a thread interning a name,
// refilling its buffer or recording for the first time) stayed held for ever
// in the child, whose next pk_collect, pk_set_state, pk_intern or record then
// hung -- a data-loader worker forked from a recording process, say. The
// handlers take the locks in the order the engine nests them (the recorder's,
// the GPU tracer's, the thread list's and the buffers' names, the chunk
// pool's, the name table's), so fork() waits for such a section to end
// instead. A state listener must therefore not call fork() (it runs under the
// recorder's lock, like the calls its comment already forbids).
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
  forget_unmatched_without_buffer();
  ChunkPool::trim();  // spare chunks mapped by the parent
  reserve_.start_afresh();
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

}  // namespace profkit
