#include "common/error.h"

#include <cxxabi.h>

#include <cstring>
#include <new>

#include "common/compiler.h"

// The handle of the shared object this code is in (crtbegin.o defines it),
// which thread-exit handlers are registered with, as the compiler's own
// thread_local destructors are.
extern "C" __attribute__((visibility("hidden"))) void* __dso_handle;

namespace profkit {
namespace {

struct LastError {
  std::string message;
  int os_errno = 0;
};

// This thread's last error, on the heap behind a trivially destructible
// pointer and freed by a thread-exit handler registered when it is made.
// It was a thread_local std::string, destroyed with the thread's other
// thread_locals -- for the main thread at exit(), before every static
// destructor and atexit handler -- so a C ABI call that failed after that (a
// framework's thread_local or static destructor saving its trace, ending a
// step, naming an exiting thread) wrote into freed memory: glibc aborted the
// process ("unaligned tcache chunk", "double free") or its heap was
// corrupted. A failure after the handler ran makes a new one, with a handler
// of its own (glibc runs handlers registered while the thread's handlers run,
// and the process's exit needs none).
PK_TLS_FAST LastError* t_last = nullptr;

void free_last_error(void* error) noexcept {
  auto* e = static_cast<LastError*>(error);
  if (t_last == e) t_last = nullptr;
  delete e;
}

// This thread's slot, made on first use; nullptr if memory ran out.
LastError* last_error_slot() noexcept {
  if (t_last != nullptr) return t_last;
  auto* e = new (std::nothrow) LastError();
  if (e == nullptr) return nullptr;
  if (__cxxabiv1::__cxa_thread_atexit(free_last_error, e, &__dso_handle) != 0) {
    delete e;
    return nullptr;
  }
  t_last = e;
  return e;
}

}  // namespace

std::string errno_message(const std::string& what, int errnum) { return what + ": " + std::strerror(errnum); }

void set_last_error(const char* message, int os_errno) noexcept {
  LastError* e = last_error_slot();
  if (e == nullptr) return;  // out of memory: nowhere to keep it
  e->os_errno = os_errno;
  try {
    e->message = message;
  } catch (...) {
    // Out of memory while reporting an error: keep whatever text was there.
  }
}

const char* last_error() noexcept { return t_last == nullptr ? "" : t_last->message.c_str(); }

int last_error_errno() noexcept { return t_last == nullptr ? 0 : t_last->os_errno; }

}  // namespace profkit
