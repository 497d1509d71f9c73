#include "common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "common/error.h"

namespace profkit {

namespace {

// The temporary sits in the target's directory (rename is atomic only within
// one file system) under a short name of its own: appending to the target's
// name would fail for a valid name near NAME_MAX, and a leading dot keeps a
// temporary left by a killed process out of `profkit merge dir/*` and ls.
std::string temp_name_for(const std::string& path) {
  std::random_device rd;
  char name[64];
  std::snprintf(name, sizeof name, ".profkit-tmp.%d.%08x%08x", static_cast<int>(getpid()), rd(), rd());
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(name) : path.substr(0, slash + 1) + name;
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string path, size_t buffer_bytes)
    : path_(std::move(path)), capacity_(buffer_bytes) {
  if (path_.empty()) throw Error(PK_ERR_INVALID_ARGUMENT, "the output path is empty");
  temp_path_ = temp_name_for(path_);
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const int err = errno;
    throw Error(err == ENOENT ? PK_ERR_NOT_FOUND : PK_ERR_IO,
                errno_message("cannot create '" + path_ + "' (does its directory exist and is it writable?)", err));
  }
  buffer_.reset(new char[capacity_]);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
}

void AtomicFileWriter::flush() {
  size_t done = 0;
  while (done < used_) {
    const ssize_t n = ::write(fd_, buffer_.get() + done, used_ - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(PK_ERR_IO, errno_message("cannot write '" + path_ + "'", errno));
    }
    done += static_cast<size_t>(n);
  }
  used_ = 0;
}

char* AtomicFileWriter::reserve(size_t size) {
  if (capacity_ - used_ < size) flush();
  if (size > capacity_) {
    buffer_.reset(new char[size]);
    capacity_ = size;
  }
  return buffer_.get() + used_;
}

void AtomicFileWriter::write(const void* data, size_t size) {
  if (size >= capacity_) {
    // Large blocks go straight to the file.
    flush();
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
      const ssize_t n = ::write(fd_, p, size);
      if (n < 0) {
        if (errno == EINTR) continue;
        throw Error(PK_ERR_IO, errno_message("cannot write '" + path_ + "'", errno));
      }
      p += n;
      size -= static_cast<size_t>(n);
    }
    return;
  }
  if (capacity_ - used_ < size) flush();
  std::memcpy(buffer_.get() + used_, data, size);
  used_ += size;
}

void AtomicFileWriter::commit() {
  flush();
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) throw Error(PK_ERR_IO, errno_message("cannot write '" + path_ + "'", errno));
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    throw Error(PK_ERR_IO, errno_message("cannot rename the finished file into '" + path_ + "'", errno));
  }
  committed_ = true;
}

}  // namespace profkit
