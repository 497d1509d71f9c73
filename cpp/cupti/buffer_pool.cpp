#include "cupti/buffer_pool.h"

#include <algorithm>
#include <new>

namespace profkit::cupti {

namespace {

uint8_t* allocate_buffer(size_t bytes) noexcept {
  return static_cast<uint8_t*>(::operator new(bytes, std::align_val_t(ActivityBufferPool::kAlignment), std::nothrow));
}

void free_buffer(uint8_t* buffer) noexcept {
  ::operator delete(buffer, std::align_val_t(ActivityBufferPool::kAlignment));
}

}  // namespace

ActivityBufferPool::ActivityBufferPool(size_t buffer_bytes, size_t max_buffers)
    : buffer_bytes_(std::max<size_t>(buffer_bytes, kAlignment) / kAlignment * kAlignment),
      max_buffers_(std::max<size_t>(max_buffers, 1)) {}

ActivityBufferPool::~ActivityBufferPool() {
  for (uint8_t* b : all_) free_buffer(b);
}

uint8_t* ActivityBufferPool::acquire() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!free_.empty()) {
    uint8_t* b = free_.back();
    free_.pop_back();
    return b;
  }
  if (all_.size() >= max_buffers_) {
    ++refused_;
    return nullptr;
  }
  uint8_t* b = allocate_buffer(buffer_bytes_);
  if (b == nullptr) {
    ++refused_;
    return nullptr;
  }
  try {
    all_.reserve(max_buffers_);
    free_.reserve(max_buffers_);
  } catch (...) {
    free_buffer(b);
    ++refused_;
    return nullptr;
  }
  all_.push_back(b);  // capacity reserved: cannot throw
  return b;
}

void ActivityBufferPool::release(uint8_t* buffer) noexcept {
  if (buffer == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const bool ours = std::find(all_.begin(), all_.end(), buffer) != all_.end();
  const bool already_free = std::find(free_.begin(), free_.end(), buffer) != free_.end();
  if (!ours || already_free) {
    ++foreign_releases_;
    return;
  }
  free_.push_back(buffer);  // capacity reserved in acquire(): cannot throw
}

void ActivityBufferPool::trim() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  for (uint8_t* b : free_) {
    free_buffer(b);
    all_.erase(std::find(all_.begin(), all_.end(), b));
  }
  free_.clear();
}

size_t ActivityBufferPool::allocated() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return all_.size();
}

size_t ActivityBufferPool::outstanding() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return all_.size() - free_.size();
}

uint64_t ActivityBufferPool::refused() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return refused_;
}

uint64_t ActivityBufferPool::foreign_releases() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return foreign_releases_;
}

}  // namespace profkit::cupti
