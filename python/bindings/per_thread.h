// PerThread<T>: one T per thread, on the heap, behind a thread-local
// pointer.
//
// Why not a plain `thread_local T`: _C is dlopen'd, and glibc gives a
// dlopen'd library static TLS -- which a TLS descriptor reads in a few
// instructions -- only while its TLS block is small (a few hundred bytes,
// shared by every library loaded that way). A large T there (RecordEvent's
// 6 KiB list of open ranges once was) sends the whole block to dynamic TLS,
// and every thread-local access of _C becomes a call into the dynamic
// loader. tests/python/test_static_tls.py holds _C to that.
//
// Thread-safety: each thread sees only its own T. Ownership: the T is made
// at the thread's first get_or_make() and deleted when the thread exits
// (its destructor then runs without a Python thread state: it must not
// touch Python objects).
#pragma once

#include <new>

namespace profkit_py {

template <typename T>
class PerThread {
 public:
  // The calling thread's T; nullptr before its first get_or_make().
  static T* get() noexcept { return current_; }

  // The calling thread's T, made now if it has none; nullptr when out of
  // memory.
  static T* get_or_make() noexcept {
    if (current_ != nullptr) return current_;
    thread_local Owner owner;  // constructed once per thread, here: deletes the T at exit
    (void)owner;
    current_ = new (std::nothrow) T();
    return current_;
  }

 private:
  struct Owner {
    Owner() = default;
    Owner(const Owner&) = delete;
    Owner& operator=(const Owner&) = delete;
    ~Owner() {
      delete current_;
      current_ = nullptr;
    }
  };

  static thread_local T* current_;
};

template <typename T>
thread_local T* PerThread<T>::current_ = nullptr;

}  // namespace profkit_py
