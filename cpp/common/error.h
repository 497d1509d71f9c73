// Errors inside the engine: thrown as profkit::Error (a status plus a message
// that names what failed and what to do), caught at the C ABI, and kept per
// thread for pk_last_error() and pk_last_error_errno().
//
// Thread-safety: the last-error slot is thread-local. It may be set and read
// at any point of a thread's life, from its thread_local destructors and, on
// the main thread, from static destructors and atexit handlers too.
#pragma once

#include <stdexcept>
#include <string>

#include "profkit/profkit.h"

namespace profkit {

class Error : public std::runtime_error {
 public:
  // `os_errno` is the errno of the failed system call behind the error, or 0
  // when no system call failed: bindings turn it into the matching OSError
  // subclass (PermissionError, FileNotFoundError, ...), so callers can catch
  // the kind of failure instead of parsing the message.
  Error(pk_status status, const std::string& message, int os_errno = 0)
      : std::runtime_error(message), status_(status), os_errno_(os_errno) {}
  pk_status status() const noexcept { return status_; }
  int os_errno() const noexcept { return os_errno_; }

 private:
  pk_status status_;
  int os_errno_;
};

// Formats "what: strerror(errno)" for a failed system call.
std::string errno_message(const std::string& what, int errnum);

// Keeps `message` and `os_errno` (0: not a system call's failure) as this
// thread's last error; both are replaced together, so the errno never
// belongs to an older failure than the message.
void set_last_error(const char* message, int os_errno = 0) noexcept;
const char* last_error() noexcept;
int last_error_errno() noexcept;

}  // namespace profkit
