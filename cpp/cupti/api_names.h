// Names of CUDA runtime and driver API calls from their CUPTI callback ids,
// from tables generated at build time out of the cupti_runtime_cbid.h and
// cupti_driver_cbid.h the tracer is built with (cmake/generate_cbid_names.cmake).
//
// Thread-safety: read-only tables; thread-safe.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace profkit::cupti {

// The API's name ("cudaLaunchKernel", "cudaMemcpyAsync_ptsz"), or nullptr
// for an id this build does not know.
const char* runtime_api_name(uint32_t cbid) noexcept;
const char* driver_api_name(uint32_t cbid) noexcept;

// The name, or "cudaRuntimeApi#<cbid>" / "cuDriverApi#<cbid>" for an id
// newer than this build's headers. Fits ApiNameFn (activity_store.h).
std::string api_display_name(bool driver, uint32_t cbid);

// Every callback id whose name is one of `names` (several versions of one
// API share a name).
std::vector<uint32_t> runtime_cbids_named(std::initializer_list<std::string_view> names);
std::vector<uint32_t> driver_cbids_named(std::initializer_list<std::string_view> names);

// Runtime calls too frequent and too cheap to be worth a trace event
// (cudaGetDevice, cudaGetLastError, ...): their tracing is switched off.
std::vector<uint32_t> noisy_runtime_cbids();
// Driver calls that launch kernels directly (Triton and other JITs call
// cuLaunchKernel without the runtime): their tracing is switched on.
std::vector<uint32_t> kernel_launch_driver_cbids();

}  // namespace profkit::cupti
