// ThreadRegistry: every ThreadBuffer of the process.
//
// Thread-safety: a mutex guards the list; it is taken only when a thread
// records for the first time, by the collector and by counter queries — never
// on the hot path. Ownership: the registry owns the buffers.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "recorder/thread_buffer.h"

namespace profkit {

struct CounterTotals {
  uint64_t recorded_events = 0;
  uint64_t dropped_events = 0;
  uint64_t unmatched_ends = 0;
  uint64_t overflowed_events = 0;
};

class ThreadRegistry {
 public:
  static ThreadRegistry& instance();

  void add(ThreadBuffer* buffer);
  // The owner of `buffer` is exiting (its TLS destructor): ThreadBuffer::
  // on_thread_exit under the lock, so that it never runs during a drain.
  void thread_exited(ThreadBuffer* buffer) noexcept;

  // Calls fn(buffer) for each buffer; when fn returns true the buffer's thread
  // has exited and it is fully drained, so the registry deletes it (folding
  // its counters into the totals).
  template <class Fn>
  void drain_each(Fn&& fn) {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t kept = 0;
    for (ThreadBuffer* b : buffers_) {
      if (fn(*b)) {
        retire(b);
      } else {
        buffers_[kept++] = b;
      }
    }
    buffers_.resize(kept);
  }

  // Counters summed over live and retired buffers.
  CounterTotals totals() const;

  // Profiling has closed: parks the chunk of each live thread whose records
  // have all been collected (ThreadBuffer::park_idle_chunk). Called by the
  // recorder under its lock.
  void park_idle_chunks();

  // Held across fork() (see Recorder's fork handlers): the list's lock, then
  // every buffer's name lock (the collector reads names under the list's).
  void lock_for_fork();
  void unlock_after_fork();
  // In a fork()'s child, after unlock_after_fork: keeps only the forking
  // thread's buffer (`survivor`, which may be nullptr), now with thread id
  // `tid`, and none of the parent's uncollected records or counts (see
  // ThreadBuffer::adopt_in_forked_child).
  void keep_only_in_forked_child(ThreadBuffer* survivor, uint64_t tid, uint64_t fork_ticks);

 private:
  ThreadRegistry() = default;
  void retire(ThreadBuffer* buffer);

  mutable std::mutex mutex_;
  std::vector<ThreadBuffer*> buffers_;
  CounterTotals retired_;
};

}  // namespace profkit
