// ActivityBufferPool: the host buffers CUPTI fills with activity records.
//
// CUPTI asks for an empty buffer (bufferRequested) and hands it back full
// (bufferCompleted). The tracer decodes a completed buffer at once and gives
// it back here, so a handful of buffers are recycled for a whole run instead
// of one allocation per request (and instead of keeping every raw buffer
// until the trace is freed, Kineto's host-memory blow-up). The number of
// buffers is capped: past the cap a request is refused, CUPTI drops the
// records it cannot store and counts them (cuptiActivityGetNumDroppedRecords),
// and the refusal is counted here too.
//
// Thread-safety: every method is thread-safe (one mutex; CUPTI calls acquire
// and release from the launching threads and from its own worker thread).
// Ownership: the pool owns every buffer; a buffer handed out must come back
// through release() before trim() can free it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace profkit::cupti {

class ActivityBufferPool {
 public:
  // CUPTI recommends 1-10 MB; 4 MB keeps a buffer per stream cheap.
  static constexpr size_t kDefaultBufferBytes = 4u << 20;
  // 16 x 4 MB: buffers are decoded as soon as CUPTI completes them, so only
  // the ones CUPTI is still filling are out at any time.
  static constexpr size_t kDefaultMaxBuffers = 16;
  // CUPTI requires 8-byte aligned buffers.
  static constexpr size_t kAlignment = 8;

  explicit ActivityBufferPool(size_t buffer_bytes = kDefaultBufferBytes, size_t max_buffers = kDefaultMaxBuffers);
  ~ActivityBufferPool();
  ActivityBufferPool(const ActivityBufferPool&) = delete;
  ActivityBufferPool& operator=(const ActivityBufferPool&) = delete;

  // An empty buffer of buffer_bytes(), recycled when one is free; nullptr
  // (counted in refused()) when max_buffers are out or memory runs out.
  // Never throws.
  uint8_t* acquire() noexcept;
  // Gives a buffer from acquire() back. A pointer the pool never handed out
  // is ignored and counted in foreign_releases(). Never throws.
  void release(uint8_t* buffer) noexcept;
  // Frees every buffer that is not out (profiling is over).
  void trim() noexcept;
  // Held across fork() (see CuptiTracer::lock_for_fork).
  void lock_for_fork() noexcept { mutex_.lock(); }
  void unlock_after_fork() noexcept { mutex_.unlock(); }

  size_t buffer_bytes() const noexcept { return buffer_bytes_; }
  size_t max_buffers() const noexcept { return max_buffers_; }
  size_t allocated() const;    // buffers that exist (free or out)
  size_t outstanding() const;  // buffers out with CUPTI now
  uint64_t refused() const;    // requests refused since construction
  uint64_t foreign_releases() const;

 private:
  const size_t buffer_bytes_;
  const size_t max_buffers_;
  mutable std::mutex mutex_;
  std::vector<uint8_t*> all_;   // every buffer that exists
  std::vector<uint8_t*> free_;  // the ones not out
  uint64_t refused_ = 0;
  uint64_t foreign_releases_ = 0;
};

}  // namespace profkit::cupti
