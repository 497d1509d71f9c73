#include "cupti/api_names.h"

#include <algorithm>
#include <iterator>

namespace profkit::cupti {

namespace {

struct CbidName {
  uint32_t cbid;
  const char* name;
};

// Sorted by cbid, as the headers list them.
constexpr CbidName kRuntimeNames[] = {
#include "cupti_runtime_cbid_names.inc"
};
constexpr CbidName kDriverNames[] = {
#include "cupti_driver_cbid_names.inc"
};

template <size_t N>
const char* find_name(const CbidName (&table)[N], uint32_t cbid) noexcept {
  const CbidName* end = table + N;
  const CbidName* it =
      std::lower_bound(table, end, cbid, [](const CbidName& row, uint32_t id) { return row.cbid < id; });
  return it != end && it->cbid == cbid ? it->name : nullptr;
}

template <size_t N>
std::vector<uint32_t> find_cbids(const CbidName (&table)[N], std::initializer_list<std::string_view> names) {
  std::vector<uint32_t> out;
  for (const CbidName& row : table) {
    if (std::find(names.begin(), names.end(), std::string_view(row.name)) != names.end()) out.push_back(row.cbid);
  }
  return out;
}

}  // namespace

const char* runtime_api_name(uint32_t cbid) noexcept { return find_name(kRuntimeNames, cbid); }
const char* driver_api_name(uint32_t cbid) noexcept { return find_name(kDriverNames, cbid); }

std::string api_display_name(bool driver, uint32_t cbid) {
  const char* name = driver ? driver_api_name(cbid) : runtime_api_name(cbid);
  if (name != nullptr) return name;
  return (driver ? "cuDriverApi#" : "cudaRuntimeApi#") + std::to_string(cbid);
}

std::vector<uint32_t> runtime_cbids_named(std::initializer_list<std::string_view> names) {
  return find_cbids(kRuntimeNames, names);
}

std::vector<uint32_t> driver_cbids_named(std::initializer_list<std::string_view> names) {
  return find_cbids(kDriverNames, names);
}

std::vector<uint32_t> noisy_runtime_cbids() {
  return runtime_cbids_named({"cudaGetDevice", "cudaSetDevice", "cudaGetLastError", "cudaPeekAtLastError",
                              "cudaGetDeviceCount", "cudaDeviceGetAttribute", "cudaGetErrorString", "cudaGetErrorName",
                              "cudaRuntimeGetVersion", "cudaDriverGetVersion", "cudaStreamIsCapturing",
                              "cudaStreamGetCaptureInfo", "cudaGetDeviceProperties",
                              "cudaThreadExchangeStreamCaptureMode"});
}

std::vector<uint32_t> kernel_launch_driver_cbids() {
  return driver_cbids_named({"cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz",
                             "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz"});
}

}  // namespace profkit::cupti
