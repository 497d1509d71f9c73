#include "storage/file_bytes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

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

// Reads until end of file, for what has no size to go by: a pipe or FIFO
// (`profkit summary <(gunzip -c x.pktrace.gz)`, `... | profkit info
// /dev/stdin`), a character device, or a file in /proc report st_size 0
// whatever they hold.
std::unique_ptr<uint8_t[]> read_to_end(int fd, const std::string& path, uint64_t max_size, size_t* size) {
  size_t capacity = 1 << 16;
  std::unique_ptr<uint8_t[]> data(new uint8_t[capacity]);
  size_t done = 0;
  for (;;) {
    if (done == capacity) {
      if (capacity > max_size) {
        throw Error(PK_ERR_CORRUPT, "cannot load '" + path + "': it holds more than " + std::to_string(max_size) +
                                        " bytes, more than a profkit trace can be; it is not a profkit trace");
      }
      const size_t grown = capacity * 2;
      std::unique_ptr<uint8_t[]> bigger(new uint8_t[grown]);
      std::memcpy(bigger.get(), data.get(), done);
      data = std::move(bigger);
      capacity = grown;
    }
    const ssize_t n = ::read(fd, data.get() + done, capacity - done);
    if (n < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      throw Error(PK_ERR_IO, errno_message("cannot read '" + path + "'", err), err);
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  if (done > max_size) {
    throw Error(PK_ERR_CORRUPT, "cannot load '" + path + "': it holds " + std::to_string(done) +
                                    " bytes, more than a profkit trace can be (" + std::to_string(max_size) +
                                    "); it is not a profkit trace");
  }
  *size = done;
  return data;
}

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
  // A regular file of size 0 may hold bytes all the same: procfs, sysfs and
  // some FUSE file systems report 0 for what they make up as it is read.
  // Read to the end as a pipe is, so that what it holds is judged (an empty
  // one is still empty), rather than called empty unread.
  if (!S_ISREG(st.st_mode) || st.st_size == 0) {
    std::shared_ptr<FileBytes> file(new FileBytes());
    file->data_ = read_to_end(fd.get(), path, max_size, &file->size_);
    file->regular_file_ = false;
    return file;
  }
  const uint64_t expected = static_cast<uint64_t>(st.st_size);
  if (expected > max_size) {
    throw Error(PK_ERR_CORRUPT, "cannot load '" + path + "': it is " + std::to_string(expected) +
                                    " bytes, more than a profkit trace can be (" + std::to_string(max_size) +
                                    "); it is not a profkit trace");
  }

  std::shared_ptr<FileBytes> file(new FileBytes());
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
