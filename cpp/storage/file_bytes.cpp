#include "storage/file_bytes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>

#include "common/error.h"

namespace profkit {

namespace {

// new uint8_t[n] returns memory aligned for any fundamental type; trace
// records need 8 bytes.
static_assert(alignof(std::max_align_t) >= alignof(uint64_t), "file buffers must hold 8-byte records in place");

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) noexcept : fd_(fd) {}
  ~FileDescriptor() { ::close(fd_); }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const noexcept { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::shared_ptr<const FileBytes> FileBytes::read(const std::string& path, uint64_t max_size) {
  const int raw_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (raw_fd < 0) {
    const int err = errno;
    throw Error(err == ENOENT ? PK_ERR_NOT_FOUND : PK_ERR_IO, errno_message("cannot open '" + path + "'", err), err);
  }
  const FileDescriptor fd(raw_fd);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    const int err = errno;
    throw Error(PK_ERR_IO, errno_message("cannot stat '" + path + "'", err), err);
  }
  if (S_ISDIR(st.st_mode)) {
    // open() succeeds on a directory; read() would fail with EISDIR, which
    // is the errno this failure stands for.
    throw Error(PK_ERR_IO, "cannot load '" + path + "': it is a directory, not a trace file", EISDIR);
  }
  const uint64_t expected = static_cast<uint64_t>(st.st_size);
  if (expected > max_size) {
    throw Error(PK_ERR_CORRUPT, "cannot load '" + path + "': it is " + std::to_string(expected) +
                                    " bytes, more than a profkit trace can be (" + std::to_string(max_size) +
                                    "); it is not a profkit trace");
  }

  std::shared_ptr<FileBytes> file(new FileBytes());
  if (expected == 0) return file;
  file->data_.reset(new uint8_t[expected]);  // uninitialized: read() fills it
  size_t done = 0;
  while (done < expected) {
    // Linux reads at most ~2 GiB per call, and a signal can cut a read short.
    const ssize_t n = ::read(fd.get(), file->data_.get() + done, expected - done);
    if (n < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      throw Error(PK_ERR_IO, errno_message("cannot read '" + path + "'", err), err);
    }
    if (n == 0) break;  // it shrank since fstat: the trace checks report it truncated
    done += static_cast<size_t>(n);
  }
  file->size_ = done;
  return file;
}

}  // namespace profkit
