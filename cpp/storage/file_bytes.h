// FileBytes: a whole file read into memory that profkit owns.
//
// A loaded trace borrows its columns and strings from these bytes, so they
// must not change under it: a read-only mapping would follow the file when
// someone truncates or rewrites it in place (cp over it, open(p, "wb") in a
// notebook), and reading the result would then fault (SIGBUS) or see garbage.
// The buffer is aligned for any fundamental type, so 8-byte records sit at
// the alignment their file offsets have.
//
// Thread-safety: immutable after read(); any number of threads may read it.
// Ownership: the bytes live as long as the object (hold it by shared_ptr, as
// a Result's backing does). Errors are thrown as profkit::Error naming the path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace profkit {

class FileBytes {
 public:
  // Reads `path` whole. PK_ERR_NOT_FOUND for a missing file, PK_ERR_IO for a
  // directory or a failed read (with the system call's errno, EISDIR for a
  // directory, in Error::os_errno()), PK_ERR_CORRUPT for a file larger than
  // `max_size` (refused before anything is allocated). A file that shrinks
  // while being read gives the bytes that were there. A pipe, FIFO or device,
  // and a regular file that reports size 0 (procfs, sysfs, some FUSE file
  // systems), have no size to go by: read to their end, PK_ERR_CORRUPT past
  // `max_size`.
  static std::shared_ptr<const FileBytes> read(const std::string& path, uint64_t max_size);

  const uint8_t* data() const noexcept { return data_.get(); }
  size_t size() const noexcept { return size_; }
  // False for what was read with no size to go by (see read): a pipe, FIFO or
  // device, whose bytes are gone once read, or a file that reports size 0.
  // The caller tells its format from these bytes, not by reading it again.
  bool regular_file() const noexcept { return regular_file_; }

 private:
  FileBytes() = default;
  std::unique_ptr<uint8_t[]> data_;
  size_t size_ = 0;
  bool regular_file_ = true;
};

}  // namespace profkit
