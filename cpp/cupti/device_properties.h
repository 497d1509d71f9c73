// The facts of every visible CUDA device (name, SM count, memory, compute
// capability, per-SM limits), read through the dlopen'd driver.
//
// Thread-safety: thread-safe (the driver is). Initializes the driver
// (cuInit), so call it only once GPU tracing has been asked for: a driver
// initialized before fork() cannot be used by the forked children.
#pragma once

#include <string>

#include "cupti/cuda_driver.h"
#include "cupti/gpu_device.h"

namespace profkit::cupti {

// Fills `out` with one entry per device. False, with `error` saying why
// (no device, driver too old, ...), when the driver cannot list devices.
bool query_devices(const CudaDriverApi& cu, GpuDevices* out, std::string* error);

}  // namespace profkit::cupti
