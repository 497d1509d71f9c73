// Errors inside the engine: thrown as profkit::Error (a status plus a message
// that names what failed and what to do), caught at the C ABI, and kept per
// thread for pk_last_error().
//
// Thread-safety: the last-error slot is thread-local.
#pragma once

#include <stdexcept>
#include <string>

#include "profkit/profkit.h"

namespace profkit {

class Error : public std::runtime_error {
 public:
  Error(pk_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  pk_status status() const noexcept { return status_; }

 private:
  pk_status status_;
};

// Formats "what: strerror(errno)" for a failed system call.
std::string errno_message(const std::string& what, int errnum);

void set_last_error(const char* message) noexcept;
const char* last_error() noexcept;
void clear_last_error() noexcept;

}  // namespace profkit
