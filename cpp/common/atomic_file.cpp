#include "common/atomic_file.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <optional>
#include <random>

#include "common/error.h"

namespace profkit {

namespace {

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

// The temporary sits in the target's directory (rename is atomic only within
// one file system) under a short name of its own: appending to the target's
// name would fail for a valid name near NAME_MAX, and a leading dot keeps a
// temporary left by a killed process out of `profkit merge dir/*` and ls.
std::string temp_name_for(const std::string& path) {
  std::random_device rd;
  char name[64];
  std::snprintf(name, sizeof name, ".profkit-tmp.%d.%08x%08x", static_cast<int>(getpid()), rd(), rd());
  return directory_of(path) + name;
}

// `path` with the symbolic links of its last component followed to the file
// they end at, which need not exist yet (a dangling link names the file to
// create). A rename onto the link itself would replace the link with a
// regular file and leave its target stale. Links among the directories need
// no following: open() and rename() resolve those themselves.
std::string follow_links(const std::string& path) {
  std::string at = path;
  for (int hops = 0; hops < 40; ++hops) {  // Linux's own limit (MAXSYMLINKS)
    struct stat st;
    if (::lstat(at.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return at;
    char link[PATH_MAX];
    const ssize_t n = ::readlink(at.c_str(), link, sizeof link);
    if (n < 0) return at;  // gone meanwhile: creating the temporary reports it
    if (static_cast<size_t>(n) >= sizeof link) {
      throw Error(PK_ERR_IO, errno_message("cannot write '" + path + "': its link target", ENAMETOOLONG), ENAMETOOLONG);
    }
    const std::string text(link, static_cast<size_t>(n));
    at = !text.empty() && text[0] == '/' ? text
                                         : directory_of(at) + text;  // relative links start at the link's directory
  }
  throw Error(PK_ERR_IO, errno_message("cannot write '" + path + "'", ELOOP), ELOOP);
}

// The descriptor of ours that `path` names (see the header), or -1.
int own_descriptor(const std::string& path) {
  if (path == "/dev/stdout") return STDOUT_FILENO;
  if (path == "/dev/stderr") return STDERR_FILENO;
  const std::string self_pid = "/proc/" + std::to_string(getpid()) + "/fd/";
  for (const char* prefix : {"/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"}) {
    const std::string_view p(prefix);
    if (path.compare(0, p.size(), p) != 0) continue;
    const std::string digits = path.substr(p.size());
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
    return std::stoi(digits);
  }
  if (path.compare(0, self_pid.size(), self_pid) == 0) return own_descriptor("/dev/fd/" + path.substr(self_pid.size()));
  return -1;
}

// Blocks SIGPIPE on the calling thread while writing to a FIFO: when its
// reader has gone, write() raises SIGPIPE, whose default action kills the
// process; blocked, the write fails with EPIPE and becomes an Error. A
// SIGPIPE that write() left pending is taken before unblocking, so it is
// never delivered late. (Python ignores SIGPIPE already; C programs do not.)
class SigpipeBlocked {
 public:
  SigpipeBlocked() noexcept {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &previous_);
    sigset_t pending;
    sigemptyset(&pending);
    // One pending before these writes is not theirs to take.
    was_pending_ = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
  }
  ~SigpipeBlocked() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;

  // After a write that failed with EPIPE.
  void take_raised() noexcept {
    if (was_pending_) return;
    const timespec no_wait{};
    while (sigtimedwait(&pipe_, nullptr, &no_wait) < 0 && errno == EINTR) {
    }
  }

 private:
  sigset_t pipe_;
  sigset_t previous_;
  bool was_pending_ = false;
};

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string path, size_t buffer_bytes)
    : path_(std::move(path)), capacity_(buffer_bytes) {
  if (path_.empty()) throw Error(PK_ERR_INVALID_ARGUMENT, "the output path is empty");
  const int descriptor = own_descriptor(path_);
  if (descriptor >= 0) {
    // Written in place through a duplicate (see the header): opening the
    // name again would start at offset 0 without O_APPEND.
    fd_ = ::fcntl(descriptor, F_DUPFD_CLOEXEC, 0);
    if (fd_ < 0) {
      const int err = errno;
      throw Error(PK_ERR_IO, errno_message("cannot write '" + path_ + "'", err), err);
    }
    target_ = path_;
    buffer_.reset(new char[capacity_]);
    return;
  }
  struct stat st;
  if (::stat(path_.c_str(), &st) == 0) {
    // Refused before anything is written: a rename onto a directory fails
    // only after the whole file was.
    if (S_ISDIR(st.st_mode)) throw Error(PK_ERR_IO, "'" + path_ + "' is a directory; give a file path", EISDIR);
    if (!S_ISREG(st.st_mode)) {
      // A FIFO or a device: written in place (see the header). No O_CREAT
      // (it exists) and no O_TRUNC, which means nothing to a FIFO or a
      // character device and is refused or harmful elsewhere. The original
      // path is opened, not a resolved one: /dev/stdout's link leads to
      // /proc/self/fd/1, whose text ("pipe:[...]") names no file.
      do {
        fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
      } while (fd_ < 0 && errno == EINTR);  // a FIFO's open waits for a reader
      if (fd_ < 0) {
        const int err = errno;
        throw Error(PK_ERR_IO, errno_message("cannot open '" + path_ + "' for writing", err), err);
      }
      target_ = path_;
      buffer_.reset(new char[capacity_]);
      return;
    }
  }
  // A regular file, or nothing there yet (or a path stat() cannot reach:
  // creating the temporary reports why).
  target_ = follow_links(path_);
  temp_path_ = temp_name_for(target_);
  // 0666 less the umask, as any file the user's program makes (and the
  // Python writers' .gz files): a group-writable log directory under umask
  // 002 gets group-writable traces.
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    const int err = errno;
    const std::string link_note = target_ == path_ ? "" : " (a link to '" + target_ + "')";
    throw Error(
        err == ENOENT ? PK_ERR_NOT_FOUND : PK_ERR_IO,
        errno_message("cannot create '" + path_ + "'" + link_note + " (does its directory exist and is it writable?)",
                      err),
        err);
  }
  buffer_.reset(new char[capacity_]);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_path_.empty()) ::unlink(temp_path_.c_str());
}

void AtomicFileWriter::write_all(const char* data, size_t size) {
  std::optional<SigpipeBlocked> sigpipe;
  if (temp_path_.empty()) sigpipe.emplace();  // in place: maybe a FIFO
  while (size > 0) {
    const ssize_t n = ::write(fd_, data, size);
    if (n < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      if (err == EPIPE && sigpipe) sigpipe->take_raised();
      throw Error(PK_ERR_IO, errno_message("cannot write '" + path_ + "'", err), err);
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

void AtomicFileWriter::flush() {
  write_all(buffer_.get(), used_);
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
    write_all(static_cast<const char*>(data), size);
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
  if (::close(fd) != 0) {
    const int err = errno;
    throw Error(PK_ERR_IO, errno_message("cannot write '" + path_ + "'", err), err);
  }
  if (!temp_path_.empty() && ::rename(temp_path_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    const std::string link_note = target_ == path_ ? "" : " (a link to '" + target_ + "')";
    throw Error(PK_ERR_IO, errno_message("cannot rename the finished file into '" + path_ + "'" + link_note, err), err);
  }
  committed_ = true;
}

}  // namespace profkit
