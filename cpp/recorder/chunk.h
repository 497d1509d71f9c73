// Chunk: a fixed-size block of RawRecords written by one thread and read by
// the collector, and ChunkStack: a lock-free stack of chunks.
//
// Protocol: the owning thread writes records[i] and then publishes
// `committed = i + 1` with a release store; the collector reads `committed`
// with acquire and copies records[consumed, committed). Only the collector
// (serialized by the collect lock) touches `consumed` and `next`.
// `committed` is a plain word accessed only through atomic builtins (not a
// std::atomic) because code outside the engine stores it too: the inline
// writer of the C ABI (pk_thread_writer.committed points at it).
//
// Parking (park()): once profiling has closed, the collector gives back all
// but the first page of a live thread's current chunk whose records it has
// all taken, while the owner keeps the chunk. No lock or handshake tells the
// collector that the owner is not writing, and none is wanted on the hot
// path, so it does not rely on that: what a parked chunk holds past the
// records already taken is never read again (a collect discards it: see
// ThreadBuffer::drain), so a write that lands in a page while it is given
// back loses nothing anyone reads, and the first page, which holds the
// header, stays. The owner only writes there from a call that read its
// recording window before the window closed; any later record goes to a new
// chunk (ThreadBuffer::leave_parked_chunk).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "recorder/raw_record.h"

namespace profkit {

struct Chunk {
  static constexpr size_t kBytes = 256 * 1024;
  static constexpr size_t kHeaderBytes = 64;
  static constexpr uint32_t kCapacity = (kBytes - kHeaderBytes) / sizeof(RawRecord);

  uint32_t committed = 0;  // atomic: publish() / committed_acquire()
  uint32_t consumed = 0;
  Chunk* next = nullptr;
  std::atomic<bool> parked{false};  // set by park(), by the collector; read by the owner too
  alignas(64) RawRecord records[kCapacity];

  // Maps a new chunk against the memory budget, its pages populated up front
  // (one batched fault instead of one per page on the hot path); nullptr when
  // over the cap or out of memory. Never throws.
  static Chunk* allocate() noexcept;
  // Unmaps and returns the memory to the budget (a parked chunk's one page).
  static void release(Chunk* chunk) noexcept;

  // Collector, with every record taken (consumed == committed) and profiling
  // closed: gives back every page but the first and stops counting them
  // against the budget (see the protocol above). False, changing nothing,
  // when the system refuses. A parked chunk is never reused: release() it.
  bool park() noexcept;
  bool is_parked() const noexcept { return parked.load(std::memory_order_relaxed); }
  // What a parked chunk keeps, and counts against the budget: its first page.
  static uint64_t parked_bytes() noexcept;

  void reset() noexcept {
    __atomic_store_n(&committed, 0, __ATOMIC_RELAXED);
    consumed = 0;
    next = nullptr;
    parked.store(false, std::memory_order_relaxed);
  }
  // The owner: records below `n` are written.
  void publish(uint32_t n) noexcept { __atomic_store_n(&committed, n, __ATOMIC_RELEASE); }
  uint32_t committed_acquire() const noexcept { return __atomic_load_n(&committed, __ATOMIC_ACQUIRE); }
};
static_assert(sizeof(Chunk) <= Chunk::kBytes, "chunk header too large");

// A Treiber stack where any number of threads may push and whole-stack
// take_all() is the only way to pop, so there is no ABA hazard.
class ChunkStack {
 public:
  void push(Chunk* chunk) noexcept {
    Chunk* head = head_.load(std::memory_order_relaxed);
    do {
      chunk->next = head;
    } while (!head_.compare_exchange_weak(head, chunk, std::memory_order_release, std::memory_order_relaxed));
  }
  // Returns the chunks in LIFO order (most recently pushed first).
  // The plain load first: an owner past the memory cap asks on every record,
  // and a locked exchange on an empty stack would be wasted.
  Chunk* take_all() noexcept {
    if (head_.load(std::memory_order_relaxed) == nullptr) return nullptr;
    return head_.exchange(nullptr, std::memory_order_acquire);
  }

 private:
  std::atomic<Chunk*> head_{nullptr};
};

// The chunks no thread holds: those stocked ahead of a recording window
// (ChunkReserve), spares of threads that have exited, and a collect's spares
// beyond a live thread's own (ThreadBuffer::kKeptSpares). Any thread takes
// from it. Thread-safe: a mutex, taken only on the refill path (once per
// Chunk::kCapacity records) and by the collector and the Recorder -- and not
// when the pool is empty, which acquire() tells from an atomic flag (past
// the memory cap every record asks).
class ChunkPool {
 public:
  static void put(Chunk* chunk) noexcept;
  // A pooled chunk, else a newly mapped one; nullptr past the memory cap.
  static Chunk* acquire() noexcept;
  // Chunks acquire() has handed out since the process started (a forked
  // child counts on from its parent's count).
  static uint64_t chunks_handed_out() noexcept;
  // Maps chunks until the pool holds `target`, they would take more than
  // half the room the memory cap leaves, or the system refuses one. Runs
  // beside threads taking chunks.
  static void stock(uint32_t target) noexcept;
  static uint32_t size() noexcept;
  // Frees every pooled chunk (profiling has closed).
  static void trim() noexcept;
  // Frees pooled chunks while the chunks mapped exceed the memory cap (it
  // was lowered): spares must not keep a thread recording past it.
  static void trim_to_cap() noexcept;
  // Held across fork() (see Recorder's fork handlers).
  static void lock_for_fork() noexcept;
  static void unlock_after_fork() noexcept;
};

// Bytes held by chunks, against the configurable cap (default 1 GiB).
// Thread-safe (atomics).
class MemoryBudget {
 public:
  static constexpr uint64_t kDefaultCap = 1ull << 30;
  static bool try_reserve(uint64_t bytes) noexcept;
  static void release(uint64_t bytes) noexcept;
  static uint64_t used() noexcept;
  static uint64_t cap() noexcept;
  static void set_cap(uint64_t bytes) noexcept;
};

}  // namespace profkit
