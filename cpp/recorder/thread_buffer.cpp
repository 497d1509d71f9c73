#include "recorder/thread_buffer.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <new>

#include "recorder/thread_registry.h"

extern "C" {
// Defined with C linkage: both are part of the C ABI (see profkit.h).
PK_API volatile uint32_t pk_recording_word = 0;
#if PK_INLINE_WRITER
PK_API __thread pk_thread_writer* pk_thread_writer_current = nullptr;
#endif
}

namespace profkit {

PK_TLS_FAST ThreadBuffer* t_thread_buffer = nullptr;

namespace {

void set_current_writer(pk_thread_writer* writer) noexcept {
#if PK_INLINE_WRITER
  pk_thread_writer_current = writer;
#else
  (void)writer;
#endif
}

// Set once this thread's exit handlers ran: a record after that (from another
// thread_local's destructor) must not attach a new buffer.
PK_TLS_FAST bool t_thread_exiting = false;

// Its destructor runs at thread exit and hands the buffer to the collector.
struct ThreadExitGuard {
  ThreadBuffer* buffer = nullptr;
  ~ThreadExitGuard() {
    t_thread_exiting = true;
    t_thread_buffer = nullptr;
    set_current_writer(nullptr);
    if (buffer != nullptr) ThreadRegistry::instance().thread_exited(buffer);
  }
};
thread_local ThreadExitGuard t_exit_guard;

std::string os_thread_name() {
  char name[64] = {0};
  if (pthread_getname_np(pthread_self(), name, sizeof name) != 0) return {};
  return name;
}

}  // namespace

ThreadBuffer::ThreadBuffer(uint64_t tid) : tid_(tid) {}

ThreadBuffer::~ThreadBuffer() {
  free_exit_records();
  // current_ may still name a finished chunk (see still_named_): released once.
  Chunk* current = current_.load(std::memory_order_relaxed);
  for (Chunk* list : {completed_.take_all(), spares_.take_all(), own_spares_, still_named_}) {
    while (list != nullptr) {
      Chunk* next = list->next;
      if (list == current) current = nullptr;
      Chunk::release(list);
      list = next;
    }
  }
  Chunk::release(current);
}

void ThreadBuffer::start_window(uint32_t window) noexcept {
  // Events left open in the earlier window are forgotten here. The collect
  // that takes that window's end reports them as unfinished; when none has
  // yet (two windows passed before one collect), they are carried to the
  // next. The depth is read before the claim: once the collector has
  // claimed them, it has read it.
  const uint32_t left_open = std::min(depth(), kMaxDepth);
  if (left_open > 0 && w_.window != 0 && claim_window_end(w_.window)) {
    carried_unfinished_.fetch_add(left_open, std::memory_order_relaxed);
  }
  leave_parked_chunk();
  w_.window = window;
  w_.inline_window = PK_INLINE_WRITER && ticks_inline_ok() ? window : 0;
  window_snapshot_.store(window, std::memory_order_relaxed);
  set_depth(0);
}

bool ThreadBuffer::claim_window_end(uint32_t window) noexcept {
  uint32_t claimed = claimed_window_end_.load(std::memory_order_acquire);
  do {
    if (claimed == window) return false;
  } while (!claimed_window_end_.compare_exchange_weak(claimed, window, std::memory_order_acq_rel,
                                                      std::memory_order_acquire));
  return true;
}

void ThreadBuffer::leave_parked_chunk() noexcept {
  if (chunk_ == nullptr) return;
  // The collector parks a chunk before the store that opens the next window
  // (both under the recorder's lock), and the caller read that window with a
  // relaxed load: reading it again with acquire makes the park visible here.
  (void)recording_window_acquire();
  if (!chunk_->is_parked()) return;
  completed_.push(chunk_);  // the next drain discards what it holds and unmaps it
  forget_chunk();
  current_.store(nullptr, std::memory_order_release);
}

Chunk* ThreadBuffer::take_spare() noexcept {
  if (own_spares_ == nullptr) own_spares_ = spares_.take_all();
  Chunk* c = own_spares_;
  if (c != nullptr) own_spares_ = c->next;
  return c;
}

bool ThreadBuffer::next_chunk(uint32_t needed) noexcept {
  if (chunk_ != nullptr) completed_.push(chunk_);
  Chunk* c = take_spare();
  if (c == nullptr) c = ChunkPool::acquire();
  if (c == nullptr || needed > Chunk::kCapacity) {
    if (c != nullptr) Chunk::release(c);
    forget_chunk();
    current_.store(nullptr, std::memory_order_release);
    return false;
  }
  c->reset();
  chunk_ = c;
  set_records(c->records);
  w_.committed = &c->committed;
  w_.count = 0;
  w_.capacity = Chunk::kCapacity;
  current_.store(c, std::memory_order_release);
  return true;
}

bool ThreadBuffer::try_append_group(const RawRecord* records, uint32_t n) noexcept {
  leave_parked_chunk();
  if (w_.capacity - w_.count < n && !next_chunk(n)) return false;
  for (uint32_t i = 0; i < n; ++i) this->records()[w_.count + i] = records[i];
  w_.count += n;
  chunk_->publish(w_.count);
  count_recorded(1);
  return true;
}

bool ThreadBuffer::innermost_open(uint32_t window, uint64_t* start, uint8_t* index) const noexcept {
  const uint32_t d = depth();
  if (w_.window != window || d == 0 || d > kMaxDepth) return false;
  *start = w_.stack[d - 1].start_ticks;
  *index = static_cast<uint8_t>(d - 1 > 255 ? 255 : d - 1);
  return true;
}

void ThreadBuffer::on_thread_exit() noexcept {
  while (own_spares_ != nullptr) {
    Chunk* next = own_spares_->next;
    Chunk::release(own_spares_);
    own_spares_ = next;
  }
  leave_parked_chunk();  // nothing in it is to be kept, nor is it to be pooled
  shrink_last_chunk_at_exit();
  exited_.store(true, std::memory_order_release);
}

// A thread's records wait for the next collect after it exits. Its last chunk
// is mostly empty for a short-lived thread (one that records a few events:
// a thread per request or per batch), yet kept its whole 256 KiB, resident
// and counted against the memory cap: a window in which 4096 such threads
// came and went reached the default 1 GiB cap, taking 1 GiB of RSS for a few
// KiB of events, and every later event of the window was dropped. The
// records it holds are copied out instead, and the chunk goes to the pool
// for the next new thread (or is unmapped when no window records).
void ThreadBuffer::shrink_last_chunk_at_exit() noexcept {
  Chunk* c = chunk_;
  if (c == nullptr || exit_records_ != nullptr) return;
  const uint32_t committed = c->committed;     // the owner's own count
  const uint32_t n = committed - c->consumed;  // consumed: the collector's, read under the registry's lock
  if (n > Chunk::kCapacity / 2) return;        // full enough: copying would save little
  if (n > 0) {
    const uint64_t bytes = uint64_t{n} * sizeof(RawRecord);
    if (!MemoryBudget::try_reserve(bytes)) return;
    auto* copy = new (std::nothrow) RawRecord[n];
    if (copy == nullptr) {
      MemoryBudget::release(bytes);
      return;
    }
    std::copy(c->records + c->consumed, c->records + committed, copy);
    exit_records_ = copy;
    exit_record_count_ = n;
  }
  forget_chunk();
  current_.store(nullptr, std::memory_order_relaxed);
  if (recording_window() != 0) {
    ChunkPool::put(c);
  } else {
    Chunk::release(c);
  }
}

void ThreadBuffer::park_idle_chunk() noexcept {
  if (exited()) return;  // the next drain recycles its chunk
  Chunk* c = current_.load(std::memory_order_acquire);
  // Only a chunk whose records have all been taken: the owner writes at or
  // past `committed`, so nothing it wrote before is lost, and what it writes
  // from now on is discarded (see chunk.h).
  if (c == nullptr || c->is_parked() || c->committed_acquire() != c->consumed) return;
  c->park();
}

void ThreadBuffer::free_exit_records() noexcept {
  if (exit_records_ == nullptr) return;
  delete[] exit_records_;
  MemoryBudget::release(uint64_t{exit_record_count_} * sizeof(RawRecord));
  exit_records_ = nullptr;
  exit_record_count_ = 0;
}

void ThreadBuffer::adopt_in_forked_child(uint64_t tid, uint64_t fork_ticks) noexcept {
  // Unmapped, not pooled: the pages are shared with the parent until written,
  // and a pool would keep them (marking a chunk drained writes one page).
  drain(/*keep_spares=*/false, [](const RawRecord*, uint32_t, bool) {});
  const uint32_t open = std::min(depth(), kMaxDepth);
  for (uint32_t i = 0; i < open; ++i) w_.stack[i].start_ticks = fork_ticks;
  __atomic_store_n(&w_.recorded, 0, __ATOMIC_RELAXED);
  for (OwnerCounter* counter : {&dropped_events, &unmatched_ends, &overflowed_events, &lost_args}) counter->reset();
  collected_records = reported_dropped = reported_unmatched = reported_overflowed = reported_lost_args = 0;
  dropped_at_collect = 0;
  carried_unfinished_.store(0, std::memory_order_relaxed);
  open_event_args.forget();
  tid_ = tid;
}

void ThreadBuffer::set_name(const std::string& name) {
  std::lock_guard<std::mutex> lock(name_mutex_);
  name_ = name;
}

std::string ThreadBuffer::name() const {
  std::lock_guard<std::mutex> lock(name_mutex_);
  return name_;
}

void ThreadBuffer::drain_one(Chunk* chunk, const RawRecord** first, uint32_t* n) noexcept {
  const uint32_t committed = chunk->committed_acquire();
  *first = chunk->records + chunk->consumed;
  *n = committed - chunk->consumed;
  chunk->consumed = committed;
}

ThreadBuffer* attach_current_thread() noexcept {
  if (t_thread_exiting) return nullptr;
  const auto tid = static_cast<uint64_t>(syscall(SYS_gettid));
  ThreadBuffer* buffer = new (std::nothrow) ThreadBuffer(tid);
  if (buffer == nullptr) return nullptr;
  try {
    buffer->set_name(os_thread_name());
    ThreadRegistry::instance().add(buffer);
  } catch (...) {
    delete buffer;
    return nullptr;
  }
  t_exit_guard.buffer = buffer;  // first touch registers the exit handler
  t_thread_buffer = buffer;
  set_current_writer(buffer->writer());
  return buffer;
}

}  // namespace profkit
