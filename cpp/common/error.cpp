#include "common/error.h"

#include <cstring>

namespace profkit {
namespace {
thread_local std::string t_last_error;
}  // namespace

std::string errno_message(const std::string& what, int errnum) { return what + ": " + std::strerror(errnum); }

void set_last_error(const char* message) noexcept {
  try {
    t_last_error = message;
  } catch (...) {
    // Out of memory while reporting an error: keep whatever was there.
  }
}

const char* last_error() noexcept { return t_last_error.c_str(); }

void clear_last_error() noexcept { t_last_error.clear(); }

}  // namespace profkit
