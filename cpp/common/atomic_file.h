// AtomicFileWriter: writes a file through a buffered temporary in the same
// directory and renames it into place on commit(), so the final path never
// holds half a file — not after an error, not after a crash.
//
// Thread-safety: one writer per object. Errors are thrown as profkit::Error
// naming the path and the OS error.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace profkit {

class AtomicFileWriter {
 public:
  // Creates the temporary file in `path`'s directory, named
  // ".profkit-tmp.<pid>.<random>" (hidden, and short whatever `path` is).
  explicit AtomicFileWriter(std::string path, size_t buffer_bytes = 4 << 20);
  ~AtomicFileWriter();  // removes the temporary unless committed
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t size);
  void write(std::string_view text) { write(text.data(), text.size()); }

  // The buffer's free space, for writers that format in place; call
  // commit_reserved(n) after filling n bytes of it.
  char* reserve(size_t size);
  void commit_reserved(size_t size) noexcept { used_ += size; }

  // Flushes, closes and renames into place.
  void commit();

  const std::string& path() const noexcept { return path_; }

 private:
  void flush();

  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  std::unique_ptr<char[]> buffer_;
  size_t capacity_;
  size_t used_ = 0;
  bool committed_ = false;
};

}  // namespace profkit
