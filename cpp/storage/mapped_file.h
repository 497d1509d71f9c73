// MappedFile: a whole file mapped read-only into memory.
//
// Thread-safety: immutable after open(); the mapping lives as long as the
// object. Errors are thrown as profkit::Error naming the path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace profkit {

class MappedFile {
 public:
  // PK_ERR_NOT_FOUND for a missing file, PK_ERR_IO for other failures.
  static std::shared_ptr<MappedFile> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const noexcept { return data_; }
  size_t size() const noexcept { return size_; }

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace profkit
