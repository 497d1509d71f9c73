// Short kernel names for the Kernel and Operator tables: template arguments,
// the parameter list and the return type are dropped, so every instantiation
// of a kernel shares one row ("void gemm<float, 128>(float*, int)" -> "gemm",
// "void at::native::elementwise_kernel<4, ...>(int, ...)" ->
// "at::native::elementwise_kernel"). Names that do not parse as a C++
// signature are kept as they are.
//
// Thread-safety: short_kernel_name is pure; KernelNames is not shared.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "profkit/profkit.h"
#include "trace/string_table.h"

namespace profkit {

std::string short_kernel_name(std::string_view name);

// Row names of GPU work: kernels by their short name, memcpy / memset by
// their name as recorded ("Memcpy HtoD"). Each distinct string is trimmed
// once; equal row names share one id.
class DeviceNames {
 public:
  explicit DeviceNames(const StringTable& strings) : strings_(strings) {}
  // The row-name id of a device event's name.
  uint32_t id_of(const pk_device_event& event) { return id_of(event.name, event.type); }
  // The row-name id of string `name` on GPU work of `type` (pk_event_type).
  uint32_t id_of(uint32_t name, uint8_t type) {
    const std::vector<uint32_t>& cache = type == PK_EVENT_KERNEL ? kernel_by_string_ : other_by_string_;
    if (name < cache.size() && cache[name] != kUnknown) return cache[name];
    return lookup(name, type == PK_EVENT_KERNEL);
  }
  const std::string& text(uint32_t id) const noexcept { return texts_[id]; }
  size_t size() const noexcept { return texts_.size(); }

 private:
  static constexpr uint32_t kUnknown = UINT32_MAX;
  const StringTable& strings_;
  uint32_t lookup(uint32_t name, bool kernel);

  std::vector<uint32_t> kernel_by_string_;  // lazily sized to the string table
  std::vector<uint32_t> other_by_string_;
  std::unordered_map<std::string, uint32_t> by_text_;
  std::vector<std::string> texts_;
};

}  // namespace profkit
