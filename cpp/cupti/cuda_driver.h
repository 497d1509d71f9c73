// CudaDriverApi: the few CUDA driver entry points profkit needs (device count
// and properties), resolved with dlsym from a dlopen'd libcuda.so.1.
//
// Thread-safety: a loaded table is immutable; the driver functions are
// thread-safe. Ownership: the library handle is never closed.
#pragma once

#include <cuda.h>

#include <string>

namespace profkit::cupti {

struct CudaDriverApi {
  decltype(&cuInit) init = nullptr;
  decltype(&cuDriverGetVersion) driver_get_version = nullptr;
  decltype(&cuDeviceGetCount) device_get_count = nullptr;
  decltype(&cuDeviceGet) device_get = nullptr;
  decltype(&cuDeviceGetName) device_get_name = nullptr;
  decltype(&cuDeviceTotalMem_v2) device_total_mem = nullptr;
  decltype(&cuDeviceGetAttribute) device_get_attribute = nullptr;
  decltype(&cuGetErrorName) get_error_name = nullptr;  // optional

  // "CUDA_ERROR_NO_DEVICE", or the number when the name is unknown.
  std::string error_name(CUresult result) const;
};

// Resolves the entry points from `handle`; false with `error` naming the
// first missing symbol.
bool load_cuda_driver_api(void* handle, CudaDriverApi* api, std::string* error);

}  // namespace profkit::cupti
