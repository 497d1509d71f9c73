#include "cupti/cuda_driver.h"

#include <dlfcn.h>

namespace profkit::cupti {

namespace {

template <class Fn>
bool resolve(void* handle, const char* symbol, Fn* out, bool required, std::string* error) {
  *out = reinterpret_cast<Fn>(dlsym(handle, symbol));
  if (*out != nullptr || !required) return true;
  if (error != nullptr) *error = std::string("the CUDA driver (libcuda.so.1) has no ") + symbol + " (driver too old)";
  return false;
}

}  // namespace

std::string CudaDriverApi::error_name(CUresult result) const {
  const char* name = nullptr;
  if (get_error_name != nullptr && get_error_name(result, &name) == CUDA_SUCCESS && name != nullptr) return name;
  return "CUDA error " + std::to_string(static_cast<int>(result));
}

bool load_cuda_driver_api(void* handle, CudaDriverApi* api, std::string* error) {
  CudaDriverApi a;
  const bool ok = resolve(handle, "cuInit", &a.init, true, error) &&
                  resolve(handle, "cuDriverGetVersion", &a.driver_get_version, true, error) &&
                  resolve(handle, "cuDeviceGetCount", &a.device_get_count, true, error) &&
                  resolve(handle, "cuDeviceGet", &a.device_get, true, error) &&
                  resolve(handle, "cuDeviceGetName", &a.device_get_name, true, error) &&
                  resolve(handle, "cuDeviceTotalMem_v2", &a.device_total_mem, true, error) &&
                  resolve(handle, "cuDeviceGetAttribute", &a.device_get_attribute, true, error) &&
                  resolve(handle, "cuGetErrorName", &a.get_error_name, false, error);
  if (ok) *api = a;
  return ok;
}

}  // namespace profkit::cupti
