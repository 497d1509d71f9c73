// NameTable: the process-wide interned names behind pk_name_id.
//
// Thread-safety: intern() takes a mutex; lookup() and size() are lock-free
// (entries live in fixed segments that never move, published by an atomic
// count). Ownership: interned text lives until the process exits.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace profkit {

class NameTable {
 public:
  static NameTable& instance();

  // Id 0 is the empty name. Throws std::bad_alloc when memory runs out or
  // profkit::Error when the table is full (4 M names).
  uint32_t intern(std::string_view name);
  // nullptr for an id never handed out.
  const char* lookup(uint32_t id) const noexcept;
  uint32_t length(uint32_t id) const noexcept;
  uint32_t size() const noexcept { return count_.load(std::memory_order_acquire); }
  // Held across fork() (see Recorder's fork handlers).
  void lock_for_fork() { mutex_.lock(); }
  void unlock_after_fork() { mutex_.unlock(); }

 private:
  NameTable();
  static constexpr uint32_t kSegmentBits = 12;
  static constexpr uint32_t kSegmentSize = 1u << kSegmentBits;
  static constexpr uint32_t kSegments = 1024;

  struct Entry {
    const char* text;
    uint32_t length;
  };

  std::mutex mutex_;
  std::deque<std::string> storage_;  // stable addresses
  std::unordered_map<std::string_view, uint32_t> ids_;
  std::atomic<Entry*> segments_[kSegments] = {};
  std::atomic<uint32_t> count_{0};
};

// NameTable::instance().intern through a per-thread cache (name text -> id
// without the lock), for pk_begin_event_str and pk_event_arg_str. Callable at
// any point of a thread's life: once the thread's exit handlers have freed
// its cache (a thread_local destructor or atexit handler that records), it
// interns through the lock. 0 (and pk_last_error) when the table is full or
// memory ran out.
uint32_t intern_cached(const char* name) noexcept;

}  // namespace profkit
