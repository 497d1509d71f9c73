// GpuDevice: what profkit knows about one CUDA device — the facts that go
// into every Result (name, SM count, memory, compute capability) and the
// limits the occupancy calculation needs.
//
// Plain value type; thread-safety is the holder's.
#pragma once

#include <vector>

#include "cupti/occupancy.h"
#include "trace/result.h"

namespace profkit::cupti {

struct GpuDevice {
  DeviceInfo info;      // info.id is the CUDA device ordinal (CUPTI's deviceId)
  DeviceLimits limits;  // for theoretical occupancy
};

using GpuDevices = std::vector<GpuDevice>;

// The device with ordinal `id`, or nullptr.
inline const GpuDevice* find_device(const GpuDevices& devices, uint32_t id) {
  for (const GpuDevice& d : devices) {
    if (static_cast<uint32_t>(d.info.id) == id) return &d;
  }
  return nullptr;
}

}  // namespace profkit::cupti
