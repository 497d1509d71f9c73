#include "export/device_kind_names.h"

namespace profkit {

std::string_view copy_kind_name(uint8_t kind) {
  switch (kind) {
    case 1:
      return "HtoD";
    case 2:
      return "DtoH";
    case 3:
      return "HtoA";
    case 4:
      return "AtoH";
    case 5:
      return "AtoA";
    case 6:
      return "AtoD";
    case 7:
      return "DtoA";
    case 8:
      return "DtoD";
    case 9:
      return "HtoH";
    case 10:
      return "PtoP";
    default:
      return "Unknown";
  }
}

std::string_view memory_kind_name(uint8_t kind) {
  switch (kind) {
    case 1:
      return "Pageable";
    case 2:
      return "Pinned";
    case 3:
      return "Device";
    case 4:
      return "Array";
    case 5:
      return "Managed";
    case 6:
      return "DeviceStatic";
    case 7:
      return "ManagedStatic";
    default:
      return "Unknown";
  }
}

namespace {

template <class NameOf>
uint8_t code_named(std::string_view name, NameOf name_of) {
  for (unsigned code = 1; code < 256; ++code) {
    if (name_of(static_cast<uint8_t>(code)) == name) return static_cast<uint8_t>(code);
  }
  return 0;
}

}  // namespace

uint8_t copy_kind_code(std::string_view name) { return code_named(name, copy_kind_name); }
uint8_t memory_kind_code(std::string_view name) { return code_named(name, memory_kind_name); }

}  // namespace profkit
