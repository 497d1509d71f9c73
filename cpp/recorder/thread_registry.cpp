#include "recorder/thread_registry.h"

namespace profkit {

ThreadRegistry& ThreadRegistry::instance() {
  // Never destroyed: threads may still record while static destructors run.
  static ThreadRegistry* registry = new ThreadRegistry();
  return *registry;
}

void ThreadRegistry::add(ThreadBuffer* buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  buffers_.push_back(buffer);
}

void ThreadRegistry::thread_exited(ThreadBuffer* buffer) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  buffer->on_thread_exit();
}

void ThreadRegistry::retire(ThreadBuffer* buffer) {
  retired_.recorded_events += buffer->recorded_events();
  retired_.dropped_events += buffer->dropped_events.get() + buffer->dropped_at_collect;
  retired_.unmatched_ends += buffer->unmatched_ends.get();
  retired_.overflowed_events += buffer->overflowed_events.get();
  delete buffer;
}

void ThreadRegistry::lock_for_fork() {
  mutex_.lock();
  for (const ThreadBuffer* b : buffers_) b->lock_name_for_fork();
}

void ThreadRegistry::unlock_after_fork() {
  for (auto it = buffers_.rbegin(); it != buffers_.rend(); ++it) (*it)->unlock_name_after_fork();
  mutex_.unlock();
}

void ThreadRegistry::keep_only_in_forked_child(ThreadBuffer* survivor, uint64_t tid, uint64_t fork_ticks) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t kept = 0;
  for (ThreadBuffer* b : buffers_) {
    if (b == survivor) {
      b->adopt_in_forked_child(tid, fork_ticks);
      buffers_[kept++] = b;
    } else {
      delete b;  // its thread does not exist here; unmapping its chunks copies no page
    }
  }
  buffers_.resize(kept);
  retired_ = CounterTotals{};
}

void ThreadRegistry::park_idle_chunks() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (ThreadBuffer* b : buffers_) b->park_idle_chunk();
}

CounterTotals ThreadRegistry::totals() const {
  std::lock_guard<std::mutex> lock(mutex_);
  CounterTotals t = retired_;
  for (const ThreadBuffer* b : buffers_) {
    t.recorded_events += b->recorded_events();
    t.dropped_events += b->dropped_events.get() + b->dropped_at_collect;
    t.unmatched_ends += b->unmatched_ends.get();
    t.overflowed_events += b->overflowed_events.get();
  }
  return t;
}

}  // namespace profkit
