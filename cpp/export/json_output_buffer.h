// JsonOutputBuffer: the Chrome-trace writer's output, formatted in place.
//
// Events are formatted straight into a 1 MiB buffer through a char pointer
// (std::string appends cost several times more per event) and handed to an
// AtomicFileWriter whenever the writer says so. One item larger than the
// buffer (a huge name) gets a buffer of its own.
//
// Thread-safety: one writer per object. Ownership: borrows the
// AtomicFileWriter, which must outlive it; errors are the writer's
// (profkit::Error naming the path).
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

#include "common/atomic_file.h"

namespace profkit {

class JsonOutputBuffer {
 public:
  // Where nearly_full() says to flush: the writer checks between events,
  // each of which fits in the headroom above it.
  static constexpr size_t kFlushBytes = 1 << 20;

  explicit JsonOutputBuffer(AtomicFileWriter& out) : out_(out), data_(new char[kCapacity]) {}

  // A pointer with room for `n` more bytes; finish with advance().
  char* room(size_t n) {
    if (kCapacity - used_ < n) flush();
    if (n > kCapacity) return big(n);
    return data_.get() + used_;
  }
  // Ends what room() began: `end` is one past the last byte written.
  void advance(char* end) {
    if (big_) {
      out_.write(big_.get(), static_cast<size_t>(end - big_.get()));
      big_.reset();
      return;
    }
    used_ = static_cast<size_t>(end - data_.get());
  }
  void flush() {
    out_.write(data_.get(), used_);
    used_ = 0;
  }
  bool nearly_full() const { return used_ >= kFlushBytes; }

 private:
  static constexpr size_t kCapacity = kFlushBytes + (1 << 16);
  char* big(size_t n) {
    big_.reset(new char[n]);
    return big_.get();
  }
  AtomicFileWriter& out_;
  std::unique_ptr<char[]> data_;
  std::unique_ptr<char[]> big_;
  size_t used_ = 0;
};

// Formatting into room() pointers; each returns one past what it wrote.
inline char* copy_text(char* p, std::string_view s) {
  std::memcpy(p, s.data(), s.size());
  return p + s.size();
}

// ns as µs with three decimals (at most 21 bytes): 1234567 -> "1234.567".
inline char* write_us(char* p, uint64_t ns) {
  p = std::to_chars(p, p + 24, ns / 1000).ptr;
  const auto frac = static_cast<unsigned>(ns % 1000);
  p[0] = '.';
  p[1] = static_cast<char>('0' + frac / 100);
  p[2] = static_cast<char>('0' + frac / 10 % 10);
  p[3] = static_cast<char>('0' + frac % 10);
  return p + 4;
}

}  // namespace profkit
