// Names and layers of the event types (pk_event_type).
// Thread-safety: constant data.
#pragma once

#include <cstdint>
#include <string_view>

namespace profkit {

// "Operator", "ProfileStep", ...; "Unknown" for a value out of range.
std::string_view event_type_name(uint32_t type) noexcept;

// Python-layer events (ProfileStep, Forward, Backward, Dataloader,
// Optimization, PythonOp, PythonUserDefined) are drawn on a lane above the
// C++-layer ones (Operator, OperatorInner, UserDefined, CudaRuntime,
// Communication).
bool is_python_layer(uint32_t type) noexcept;

// Kernel, Memcpy, Memset: activity on a GPU stream.
bool is_device_type(uint32_t type) noexcept;

}  // namespace profkit
