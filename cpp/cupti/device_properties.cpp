#include "cupti/device_properties.h"

#include <cstdlib>

namespace profkit::cupti {

namespace {

std::string visible_devices_note() {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  return visible == nullptr ? std::string() : std::string(" (CUDA_VISIBLE_DEVICES=\"") + visible + "\")";
}

GpuDevice read_device(const CudaDriverApi& cu, int ordinal, CUdevice dev) {
  auto attribute = [&](CUdevice_attribute a) {
    int value = 0;
    return cu.device_get_attribute(&value, a, dev) == CUDA_SUCCESS ? value : 0;
  };
  GpuDevice d;
  char name[256] = {0};
  if (cu.device_get_name(name, sizeof name - 1, dev) == CUDA_SUCCESS) d.info.name = name;
  size_t memory = 0;
  if (cu.device_total_mem(&memory, dev) == CUDA_SUCCESS) d.info.total_memory = memory;

  DeviceLimits& l = d.limits;
  l.compute_major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  l.compute_minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  l.sm_count = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  l.warp_size = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  l.max_threads_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  l.max_threads_per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  l.max_blocks_per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  l.registers_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  l.registers_per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  l.shared_memory_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  l.shared_memory_per_block_optin = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  l.shared_memory_per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  l.reserved_shared_memory_per_block = attribute(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);

  DeviceInfo& i = d.info;
  i.id = ordinal;
  i.sm_count = l.sm_count;
  i.compute_major = l.compute_major;
  i.compute_minor = l.compute_minor;
  i.max_threads_per_sm = l.max_threads_per_sm;
  i.max_registers_per_sm = l.registers_per_sm;
  i.max_shared_memory_per_sm = static_cast<int32_t>(l.shared_memory_per_sm);
  i.max_blocks_per_sm = l.max_blocks_per_sm;
  i.warp_size = l.warp_size;
  return d;
}

}  // namespace

bool query_devices(const CudaDriverApi& cu, GpuDevices* out, std::string* error) {
  const CUresult init = cu.init(0);
  if (init != CUDA_SUCCESS) {
    if (error != nullptr) {
      *error = "the CUDA driver failed to initialize (cuInit: " + cu.error_name(init) + ")";
      if (init == CUDA_ERROR_NO_DEVICE) *error += ": no CUDA-capable device is visible" + visible_devices_note();
      if (init == CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE) {
        *error += ": the installed driver is too old for this CUDA";
      }
    }
    return false;
  }
  int count = 0;
  const CUresult listed = cu.device_get_count(&count);
  if (listed != CUDA_SUCCESS || count <= 0) {
    if (error != nullptr) {
      *error = listed != CUDA_SUCCESS ? "cuDeviceGetCount failed: " + cu.error_name(listed)
                                      : "no CUDA device is visible" + visible_devices_note();
    }
    return false;
  }
  GpuDevices devices;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    CUdevice dev = 0;
    if (cu.device_get(&dev, ordinal) != CUDA_SUCCESS) continue;
    devices.push_back(read_device(cu, ordinal, dev));
  }
  *out = std::move(devices);
  return true;
}

}  // namespace profkit::cupti
