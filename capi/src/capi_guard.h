// The exception firewall of the C ABI: every entry point that can fail runs
// its body through guarded(), which turns any C++ exception into a pk_status
// and a pk_last_error() message (with pk_last_error_errno() when a system
// call failed). Nothing ever propagates into C callers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <new>
#include <string>

#include "common/error.h"
#include "profkit/profkit.h"

namespace profkit {

// Sets "<function><what>[<detail><tail>]" as the last error. Building the
// message allocates, and these handlers run inside a noexcept function (an
// escaping bad_alloc would be std::terminate), so a failure falls back to
// `fallback`, a static text.
inline void set_last_error_of(const char* function, const char* what, const char* detail, const char* tail,
                              const char* fallback) noexcept {
  try {
    std::string message(function);
    message += what;
    if (detail != nullptr) (message += detail) += tail;
    set_last_error(message.c_str());
  } catch (...) {
    set_last_error(fallback);
  }
}

template <class Body>
pk_status guarded(const char* function, Body&& body) noexcept {
  try {
    body();
    return PK_OK;
  } catch (const Error& e) {
    set_last_error(e.what(), e.os_errno());
    return e.status();
  } catch (const std::bad_alloc&) {
    set_last_error_of(function, ": out of memory", nullptr, nullptr, "profkit: out of memory");
    return PK_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_last_error_of(function, ": internal error: ", e.what(), " (please report this)",
                      "profkit: internal error (please report this)");
    return PK_ERR_INTERNAL;
  } catch (...) {
    set_last_error_of(function, ": unknown internal error (please report this)", nullptr, nullptr,
                      "profkit: unknown internal error (please report this)");
    return PK_ERR_INTERNAL;
  }
}

// The bits of an enum argument a C caller passed. C lets it hold any int, but
// in C++ loading a value outside the enum's range as the enum (even copying
// it) is undefined behaviour: entry points take the bits first and check them.
template <class Enum>
inline int32_t raw_enum(const Enum& value) noexcept {
  static_assert(sizeof(Enum) == sizeof(int32_t), "C ABI enums are 32 bits wide (their *_MAX_ENUM)");
  int32_t raw;
  std::memcpy(&raw, &value, sizeof raw);
  return raw;
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

// Where a field of a struct ends, for read_versioned's list.
#define PK_FIELD_END(type, field) (offsetof(type, field) + sizeof(static_cast<type*>(nullptr)->field))

// A caller's input struct that starts with struct_size, read over `defaults`:
// the fields its struct_size covers (an older caller's struct is shorter; a
// newer one's is longer, and the fields this library does not know are not
// read). struct_size must end where one of the struct's fields ends
// (`field_ends`, struct_size's own end among them), as every version of the
// struct does, or lie past the last: a size that cuts a field in two is a
// caller's bug that would read half a value -- half a pointer -- so it is
// refused with a message instead.
template <class T>
T read_versioned(const T& in, T defaults, const char* function, const char* type_name,
                 std::initializer_list<size_t> field_ends) {
  const size_t size = in.struct_size;
  bool on_a_field_end = size >= sizeof(T);
  for (const size_t end : field_ends) on_a_field_end = on_a_field_end || size == end;
  if (!on_a_field_end || size < sizeof(size_t)) {
    throw Error(PK_ERR_INVALID_ARGUMENT, std::string(function) + ": options->struct_size is " + std::to_string(size) +
                                             ", which is not the size of any version of " + type_name +
                                             "; set it to sizeof(" + type_name + ") (or pass NULL for the defaults)");
  }
  const size_t n = size < sizeof(T) ? size : sizeof(T);
  std::memcpy(reinterpret_cast<char*>(&defaults) + sizeof(size_t), reinterpret_cast<const char*>(&in) + sizeof(size_t),
              n - sizeof(size_t));
  return defaults;
}

}  // namespace profkit
