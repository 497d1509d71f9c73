// Dense lookups of per-name rows for the name-keyed tables. Names are small
// dense ids (string-table indices), so a lookup indexes a vector instead of
// hashing. With split_by_thread each thread gets fresh slots: the slots the
// previous thread used are reset one by one, not by clearing the vector.
//
// Thread-safety: none; one object per walk.
#pragma once

#include <cstdint>
#include <vector>

#include "summary/call_stats.h"

namespace profkit {

// name id -> slot (an index the caller chooses), per thread group.
class NameSlots {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // Names at or past `name_count` share one slot (a bad id reads as "").
  NameSlots(size_t name_count, bool split_by_thread) : name_count_(name_count), split_(split_by_thread) {}

  // Starts the group of a new thread (nothing happens when not split).
  void begin_thread() {
    if (!split_) return;
    for (uint32_t name : touched_) slots_[name] = kNone;
    touched_.clear();
  }
  // The slot of `name` in the current group; kNone if not assigned yet.
  uint32_t& slot(uint32_t name) {
    if (slots_.empty()) slots_.assign(name_count_ + 1, kNone);
    const uint32_t clamped = name < name_count_ ? name : static_cast<uint32_t>(name_count_);
    if (split_ && slots_[clamped] == kNone) touched_.push_back(clamped);
    return slots_[clamped];
  }
  bool split_by_thread() const noexcept { return split_; }

 private:
  size_t name_count_;
  bool split_;
  std::vector<uint32_t> slots_;
  std::vector<uint32_t> touched_;
};

// CallStats per (thread group, name id).
class NameStatsMap {
 public:
  struct Entry {
    uint32_t thread;  // thread index in the Result (0 when not split)
    uint32_t name;
    CallStats stats;
  };

  NameStatsMap(size_t name_count, bool split_by_thread) : slots_(name_count, split_by_thread) {}

  void begin_thread(size_t thread) {
    slots_.begin_thread();
    if (slots_.split_by_thread()) thread_ = static_cast<uint32_t>(thread);
  }
  CallStats& at(uint32_t name) {
    uint32_t& slot = slots_.slot(name);
    if (slot == NameSlots::kNone) {
      slot = static_cast<uint32_t>(entries_.size());
      entries_.push_back({thread_, name, {}});
    }
    return entries_[slot].stats;
  }
  const std::vector<Entry>& entries() const noexcept { return entries_; }
  bool split_by_thread() const noexcept { return slots_.split_by_thread(); }

 private:
  NameSlots slots_;
  uint32_t thread_ = 0;
  std::vector<Entry> entries_;
};

}  // namespace profkit
