#include "common/error.h"

#include <cstring>

namespace profkit {
namespace {
thread_local std::string t_last_error;
thread_local int t_last_errno = 0;
}  // namespace

std::string errno_message(const std::string& what, int errnum) { return what + ": " + std::strerror(errnum); }

void set_last_error(const char* message, int os_errno) noexcept {
  t_last_errno = os_errno;
  try {
    t_last_error = message;
  } catch (...) {
    // Out of memory while reporting an error: keep whatever text was there.
  }
}

const char* last_error() noexcept { return t_last_error.c_str(); }

int last_error_errno() noexcept { return t_last_errno; }

void clear_last_error() noexcept {
  t_last_error.clear();
  t_last_errno = 0;
}

}  // namespace profkit
