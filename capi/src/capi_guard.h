// The exception firewall of the C ABI: every entry point that can fail runs
// its body through guarded(), which turns any C++ exception into a pk_status
// and a pk_last_error() message. Nothing ever propagates into C callers.
#pragma once

#include <cstring>
#include <new>
#include <string>

#include "common/error.h"
#include "profkit/profkit.h"

namespace profkit {

template <class Body>
pk_status guarded(const char* function, Body&& body) noexcept {
  try {
    body();
    return PK_OK;
  } catch (const Error& e) {
    set_last_error(e.what());
    return e.status();
  } catch (const std::bad_alloc&) {
    set_last_error((std::string(function) + ": out of memory").c_str());
    return PK_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_last_error((std::string(function) + ": internal error: " + e.what() + " (please report this)").c_str());
    return PK_ERR_INTERNAL;
  } catch (...) {
    set_last_error((std::string(function) + ": unknown internal error (please report this)").c_str());
    return PK_ERR_INTERNAL;
  }
}

// Rejects a NULL argument with a message naming the function and parameter.
inline void require(const void* pointer, const char* function, const char* parameter) {
  if (pointer == nullptr) {
    throw Error(PK_ERR_INVALID_ARGUMENT, std::string(function) + ": " + parameter + " must not be NULL");
  }
}

// Copies a filled struct into a caller's struct that starts with struct_size,
// writing only the fields both versions have and leaving struct_size as the
// caller set it.
template <class T>
void copy_versioned(T* out, const T& filled, const char* function) {
  require(out, function, "out");
  if (out->struct_size < sizeof(size_t)) {
    throw Error(PK_ERR_INVALID_ARGUMENT, std::string(function) + ": set out->struct_size to the sizeof the struct");
  }
  const size_t n = out->struct_size < sizeof(T) ? out->struct_size : sizeof(T);
  std::memcpy(reinterpret_cast<char*>(out) + sizeof(size_t), reinterpret_cast<const char*>(&filled) + sizeof(size_t),
              n - sizeof(size_t));
}

}  // namespace profkit
