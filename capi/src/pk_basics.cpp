// Version, errors and names: the parts of the C ABI with no engine state.
#include <cstring>

#include "capi_guard.h"
#include "common/error.h"
#include "common/event_types.h"
#include "profkit/profkit.h"
#include "profkit_version.h"

extern "C" {

PK_API uint32_t pk_api_version(void) noexcept { return PK_API_VERSION; }

PK_API const char* pk_version_string(void) noexcept { return PROFKIT_VERSION; }

PK_API const char* pk_last_error(void) noexcept { return profkit::last_error(); }

PK_API int pk_last_error_errno(void) noexcept { return profkit::last_error_errno(); }

PK_API const char* pk_status_string(pk_status status) noexcept {
  switch (profkit::raw_enum(status)) {  // any int a C caller passed
    case PK_OK:
      return "PK_OK";
    case PK_ERR_INVALID_ARGUMENT:
      return "PK_ERR_INVALID_ARGUMENT";
    case PK_ERR_NOT_FOUND:
      return "PK_ERR_NOT_FOUND";
    case PK_ERR_IO:
      return "PK_ERR_IO";
    case PK_ERR_CORRUPT:
      return "PK_ERR_CORRUPT";
    case PK_ERR_VERSION:
      return "PK_ERR_VERSION";
    case PK_ERR_TOO_LARGE:
      return "PK_ERR_TOO_LARGE";
    case PK_ERR_OUT_OF_MEMORY:
      return "PK_ERR_OUT_OF_MEMORY";
    case PK_ERR_INVALID_STATE:
      return "PK_ERR_INVALID_STATE";
    case PK_ERR_INTERNAL:
      return "PK_ERR_INTERNAL";
    case PK_ERR_UNSUPPORTED:
      return "PK_ERR_UNSUPPORTED";
    case PK_STATUS_MAX_ENUM:
      break;
  }
  return "PK_ERR_UNKNOWN";
}

PK_API const char* pk_event_type_name(pk_event_type type) noexcept {
  const auto raw = static_cast<uint32_t>(profkit::raw_enum(type));  // any int a C caller passed
  if (raw >= PK_EVENT_TYPE_COUNT) return nullptr;
  return profkit::event_type_name(raw).data();
}

}  // extern "C"
