// A stand-in libcuda.so.1 for testing without a GPU: one device shaped like
// an H100 SXM (132 SMs, compute capability 9.0), or whatever the test sets.
// Exports the driver entry points profkit resolves with dlsym and
// fake_cuda_* controls.
#include <cuda.h>

#include <cstring>

#define FAKE_API extern "C" __attribute__((visibility("default")))

namespace {
CUresult g_init_result = CUDA_SUCCESS;
int g_device_count = 1;
int g_init_calls = 0;
// What the real libcuda does with CUPTI attached: a callback at each call's
// exit. Off unless a test sets it (fake_cuda_set_api_exit_hook).
void (*g_api_exit_hook)(unsigned int cbid) = nullptr;
}  // namespace

FAKE_API CUresult cuInit(unsigned int) {
  ++g_init_calls;
  return g_init_result;
}

FAKE_API CUresult cuDriverGetVersion(int* version) {
  *version = 13000;
  if (g_api_exit_hook != nullptr) g_api_exit_hook(2);  // CUPTI_DRIVER_TRACE_CBID_cuDriverGetVersion
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuDeviceGetCount(int* count) {
  *count = g_device_count;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (ordinal < 0 || ordinal >= g_device_count) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuDeviceGetName(char* name, int length, CUdevice) {
  std::strncpy(name, "Fake H100", static_cast<size_t>(length));
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice) {
  *bytes = size_t{80} << 30;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice) {
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = 9;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *value = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = 132;
      break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      *value = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      *value = 2048;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
      *value = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
      *value = 65536;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      *value = 49152;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      *value = 232448;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
      *value = 233472;
      break;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK:
      *value = 1024;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuGetErrorName(CUresult error, const char** name) {
  *name = error == CUDA_ERROR_NO_DEVICE ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_UNKNOWN";
  return CUDA_SUCCESS;
}

FAKE_API void fake_cuda_set_init_result(int result) { g_init_result = static_cast<CUresult>(result); }
FAKE_API void fake_cuda_set_device_count(int count) { g_device_count = count; }
FAKE_API int fake_cuda_init_calls(void) { return g_init_calls; }
FAKE_API void fake_cuda_set_api_exit_hook(void (*hook)(unsigned int cbid)) { g_api_exit_hook = hook; }
