// FlatIndex: a small open-addressing hash map from 64-bit keys to 32-bit
// values for the per-event lookups of the summary walk (operator -> inner
// row), where std::unordered_map's node per entry and pointer chase cost
// more than the rest of the work.
//
// Thread-safety: none. Ownership: values.
#pragma once

#include <cstdint>
#include <vector>

namespace profkit {

class FlatIndex {
 public:
  static constexpr uint64_t kEmptyKey = UINT64_MAX;  // never a valid key

  // The value of `key`, inserting `value_if_new` when it is absent.
  uint32_t find_or_insert(uint64_t key, uint32_t value_if_new) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash(key) & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.key == key) return s.value;
      if (s.key == kEmptyKey) {
        s = {key, value_if_new};
        ++size_;
        return value_if_new;
      }
    }
  }
  size_t size() const noexcept { return size_; }

 private:
  struct Slot {
    uint64_t key;
    uint32_t value;
  };

  static size_t hash(uint64_t key) noexcept {
    // Fibonacci hashing spreads the (row << 32 | name) keys well.
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 17);
  }

  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{kEmptyKey, 0});
    size_ = 0;
    for (const Slot& s : old) {
      if (s.key != kEmptyKey) find_or_insert(s.key, s.value);
    }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace profkit
