// Theoretical occupancy of a kernel launch: how many of its blocks fit on one
// SM at once given the SM's warp, block, register and shared-memory limits,
// and what fraction of the SM's warp slots they fill. The rules follow the
// CUDA Occupancy Calculator (cuda_occupancy.h): registers are allocated per
// warp in units of 256 and split across the SM's sub-partitions, shared
// memory per block is rounded up to the allocation granularity and includes
// the driver's per-block reservation (compute capability 8.0 and later).
//
// Pure functions of plain values; no CUDA needed. Thread-safe.
#pragma once

#include <cstdint>

#include "profkit/profkit.h"

namespace profkit::cupti {

// What a device allows per SM and per block (cuDeviceGetAttribute values).
struct DeviceLimits {
  int32_t compute_major = 0;
  int32_t compute_minor = 0;
  int32_t sm_count = 0;
  int32_t warp_size = 32;
  int32_t max_threads_per_block = 0;
  int32_t max_threads_per_sm = 0;
  int32_t max_blocks_per_sm = 0;
  int32_t registers_per_block = 0;
  int32_t registers_per_sm = 0;
  int64_t shared_memory_per_block = 0;        // default per-block limit
  int64_t shared_memory_per_block_optin = 0;  // limit for kernels that opted in
  int64_t shared_memory_per_sm = 0;
  int64_t reserved_shared_memory_per_block = 0;

  // True when every limit the calculation divides by is known.
  bool complete() const noexcept {
    return compute_major > 0 && sm_count > 0 && warp_size > 0 && max_threads_per_sm > 0 && max_blocks_per_sm > 0 &&
           registers_per_sm > 0 && shared_memory_per_sm > 0;
  }
};

// What a launch asks for (the CUPTI kernel record's fields).
struct LaunchShape {
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
  uint32_t registers_per_thread = 0;
  uint32_t static_shared_memory = 0;
  uint32_t dynamic_shared_memory = 0;
  // Shared memory per SM the driver configured for this launch (the carveout);
  // 0 when unknown, then the device maximum is assumed.
  uint32_t shared_memory_executed = 0;
  // The kernel opted in to more dynamic shared memory than the default limit.
  bool shared_memory_optin = false;
};

// Which limit capped the blocks per SM (several may tie; the first wins).
enum class OccupancyLimit : uint8_t { kUnknown, kWarps, kBlocks, kRegisters, kSharedMemory, kDoesNotFit };

struct Occupancy {
  int32_t active_blocks_per_sm = 0;  // blocks resident at once on one SM
  int32_t active_warps_per_sm = 0;
  float occupancy = 0.0f;  // active warps / max warps per SM, 0..1
  OccupancyLimit limited_by = OccupancyLimit::kUnknown;
};

// Theoretical occupancy; all zero (kUnknown) when the limits are incomplete
// or the block is empty.
Occupancy theoretical_occupancy(const DeviceLimits& device, const LaunchShape& launch) noexcept;

// The kernel detail record: launch shape, blocks and warps per SM in the
// profiler's sense (grid blocks spread over the SMs: grid / SM count, and that
// times warps per block), and theoretical occupancy. Blocks/warps per SM and
// occupancy are 0 when the device limits are unknown.
pk_kernel_detail make_kernel_detail(const DeviceLimits& device, const LaunchShape& launch) noexcept;

}  // namespace profkit::cupti
