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

// The name id of a record whose name could not be interned (the table is
// full, or memory ran out): intern_cached returns it, and a collect drops an
// event that carries it and counts it (dropped_events) rather than keep the
// event nameless. Never a name's id; pk_intern returns 0 instead.
constexpr uint32_t kNameNotInterned = UINT32_MAX;

class NameTable {
 public:
  static constexpr uint32_t kMaxNames = 1u << 22;  // 4,194,304

  static NameTable& instance();

  // Id 0 is the empty name. Throws std::bad_alloc when memory runs out or
  // profkit::Error when the table is full (kMaxNames names).
  uint32_t intern(std::string_view name);
  // nullptr for an id never handed out.
  const char* lookup(uint32_t id) const noexcept;
  uint32_t length(uint32_t id) const noexcept;
  uint32_t size() const noexcept { return count_.load(std::memory_order_acquire); }
  // For tests: the table holds at most `capacity` names (clamped to
  // [1, kMaxNames]; below size() it is simply full) instead of kMaxNames, so
  // that a test fills it without 4 M names and half a gigabyte. A Python
  // test, which cannot call this, sets $PROFKIT_TEST_NAME_TABLE_CAPACITY in
  // a child process: read when the table is made.
  void set_capacity_for_testing(uint32_t capacity);
  // Held across fork() (see Recorder's fork handlers).
  void lock_for_fork() { mutex_.lock(); }
  void unlock_after_fork() { mutex_.unlock(); }

 private:
  NameTable();
  static constexpr uint32_t kSegmentBits = 12;
  static constexpr uint32_t kSegmentSize = 1u << kSegmentBits;
  static constexpr uint32_t kSegments = 1024;
  static_assert(kSegments * kSegmentSize == kMaxNames, "the segments hold the table");

  struct Entry {
    const char* text;
    uint32_t length;
  };

  std::mutex mutex_;
  std::deque<std::string> storage_;  // stable addresses
  std::unordered_map<std::string_view, uint32_t> ids_;
  std::atomic<Entry*> segments_[kSegments] = {};
  std::atomic<uint32_t> count_{0};
  uint32_t capacity_ = kMaxNames;  // under mutex_
};

// NameTable::instance().intern through a per-thread cache (name text -> id
// without the lock), for pk_begin_event_str and pk_event_arg_str. Callable at
// any point of a thread's life: once the thread's exit handlers have freed
// its cache (a thread_local destructor or atexit handler that records), it
// interns through the lock. kNameNotInterned (and pk_last_error) when the
// table is full or memory ran out, so that what records the name can be
// dropped and counted, not kept as "" (0 is the name "" itself).
uint32_t intern_cached(const char* name) noexcept;

}  // namespace profkit
