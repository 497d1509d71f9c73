#include "common/event_types.h"

#include "profkit/profkit.h"

namespace profkit {

namespace {
constexpr std::string_view kNames[PK_EVENT_TYPE_COUNT] = {
    "Operator", "Dataloader",   "ProfileStep",   "CudaRuntime",   "Kernel",
    "Memcpy",   "Memset",       "UserDefined",   "OperatorInner", "Forward",
    "Backward", "Optimization", "Communication", "PythonOp",      "PythonUserDefined",
};
}  // namespace

std::string_view event_type_name(uint32_t type) noexcept {
  return type < PK_EVENT_TYPE_COUNT ? kNames[type] : std::string_view("Unknown");
}

bool is_python_layer(uint32_t type) noexcept {
  switch (type) {
    case PK_EVENT_PROFILE_STEP:
    case PK_EVENT_FORWARD:
    case PK_EVENT_BACKWARD:
    case PK_EVENT_DATALOADER:
    case PK_EVENT_OPTIMIZATION:
    case PK_EVENT_PYTHON_OP:
    case PK_EVENT_PYTHON_USER_DEFINED:
      return true;
    default:
      return false;
  }
}

bool is_device_type(uint32_t type) noexcept {
  return type == PK_EVENT_KERNEL || type == PK_EVENT_MEMCPY || type == PK_EVENT_MEMSET;
}

}  // namespace profkit
