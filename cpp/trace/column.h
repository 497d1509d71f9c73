// Column<T>: a read-only array of frozen records that either owns its storage
// (a result just collected) or borrows it from the bytes of a loaded file (a
// result loaded from disk). Downstream code sees the same type either way.
//
// Thread-safety: immutable after construction; safe to read from any thread.
// Ownership: a borrowed column is valid while its Result's backing lives.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace profkit {

template <class T>
class Column {
 public:
  Column() = default;
  explicit Column(std::vector<T> owned) : owned_(std::move(owned)) {
    data_ = owned_.data();
    size_ = owned_.size();
  }
  static Column borrowed(const T* data, size_t size) {
    Column c;
    c.data_ = size == 0 ? nullptr : data;
    c.size_ = size;
    return c;
  }

  Column(Column&& other) noexcept { *this = std::move(other); }
  Column& operator=(Column&& other) noexcept {
    // Moving a vector keeps its buffer, so data_ stays valid for both kinds.
    owned_ = std::move(other.owned_);
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
    return *this;
  }
  Column(const Column&) = delete;
  Column& operator=(const Column&) = delete;

  const T* data() const noexcept { return data_; }
  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  const T& operator[](size_t i) const noexcept { return data_[i]; }
  const T* begin() const noexcept { return data_; }
  const T* end() const noexcept { return data_ + size_; }

 private:
  std::vector<T> owned_;
  const T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace profkit
