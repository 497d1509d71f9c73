// Theoretical occupancy against values worked out by hand for an H100, and,
// where the CUDA headers are installed, against NVIDIA's own calculator
// (cuda_occupancy.h) over a grid of launch shapes and devices.
#include <gtest/gtest.h>

#include <climits>
#include <string>

#include "cupti/occupancy.h"

#ifdef PROFKIT_HAVE_CUPTI
#include <cuda_occupancy.h>
#endif

namespace {

using profkit::cupti::DeviceLimits;
using profkit::cupti::LaunchShape;
using profkit::cupti::OccupancyLimit;
using profkit::cupti::theoretical_occupancy;

// H100 SXM: 132 SMs, 64 warps and 32 blocks per SM, 64 K registers, 228 KB
// shared memory per SM (48 KB per block by default, 227 KB opted in), 1 KB
// reserved per block.
DeviceLimits h100() {
  DeviceLimits d;
  d.compute_major = 9;
  d.compute_minor = 0;
  d.sm_count = 132;
  d.warp_size = 32;
  d.max_threads_per_block = 1024;
  d.max_threads_per_sm = 2048;
  d.max_blocks_per_sm = 32;
  d.registers_per_block = 65536;
  d.registers_per_sm = 65536;
  d.shared_memory_per_block = 49152;
  d.shared_memory_per_block_optin = 232448;
  d.shared_memory_per_sm = 233472;
  d.reserved_shared_memory_per_block = 1024;
  return d;
}

LaunchShape shape(uint32_t threads, uint32_t registers, uint32_t static_smem = 0, uint32_t dynamic_smem = 0) {
  LaunchShape s;
  s.grid[0] = s.grid[1] = s.grid[2] = 1;
  s.block[0] = threads;
  s.block[1] = s.block[2] = 1;
  s.registers_per_thread = registers;
  s.static_shared_memory = static_smem;
  s.dynamic_shared_memory = dynamic_smem;
  return s;
}

TEST(Occupancy, WarpLimitedLaunchFillsTheSm) {
  // 256 threads = 8 warps; 64 warp slots -> 8 blocks. 32 registers: 1024 per
  // warp, 16 warps per sub-partition, 64 per SM -> also 8 blocks.
  const auto o = theoretical_occupancy(h100(), shape(256, 32));
  EXPECT_EQ(o.active_blocks_per_sm, 8);
  EXPECT_EQ(o.active_warps_per_sm, 64);
  EXPECT_FLOAT_EQ(o.occupancy, 1.0f);
  EXPECT_EQ(o.limited_by, OccupancyLimit::kWarps);
}

TEST(Occupancy, RegistersHalveIt) {
  // 64 registers: 2048 per warp, 8 warps per sub-partition, 32 per SM -> 4 blocks of 8 warps.
  const auto o = theoretical_occupancy(h100(), shape(256, 64));
  EXPECT_EQ(o.active_blocks_per_sm, 4);
  EXPECT_EQ(o.active_warps_per_sm, 32);
  EXPECT_FLOAT_EQ(o.occupancy, 0.5f);
  EXPECT_EQ(o.limited_by, OccupancyLimit::kRegisters);
}

TEST(Occupancy, RegisterRoundingPerSubPartition) {
  // 96 threads = 3 warps, 40 registers: 1280 per warp, floor(16384 / 1280) = 12
  // warps per sub-partition, 48 per SM -> 16 blocks = 48 warps = 75 %.
  const auto o = theoretical_occupancy(h100(), shape(96, 40));
  EXPECT_EQ(o.active_blocks_per_sm, 16);
  EXPECT_EQ(o.active_warps_per_sm, 48);
  EXPECT_FLOAT_EQ(o.occupancy, 0.75f);
  EXPECT_EQ(o.limited_by, OccupancyLimit::kRegisters);
}

TEST(Occupancy, SharedMemoryIncludesTheDriverReservation) {
  // 48 KB dynamic + 1 KB reserved = 50176 B per block; 233472 / 50176 -> 4
  // blocks of 4 warps = 16 warps = 25 %.
  const auto o = theoretical_occupancy(h100(), shape(128, 32, 0, 49152));
  EXPECT_EQ(o.active_blocks_per_sm, 4);
  EXPECT_EQ(o.active_warps_per_sm, 16);
  EXPECT_FLOAT_EQ(o.occupancy, 0.25f);
  EXPECT_EQ(o.limited_by, OccupancyLimit::kSharedMemory);
}

TEST(Occupancy, ExecutedCarveoutLimitsSharedMemory) {
  // The driver configured 100 KB of shared memory on the SM: 102400 / (8192 +
  // 1024) -> 11 blocks of 4 warps = 44 warps.
  LaunchShape s = shape(128, 32, 8192);
  s.shared_memory_executed = 102400;
  const auto o = theoretical_occupancy(h100(), s);
  EXPECT_EQ(o.active_blocks_per_sm, 11);
  EXPECT_EQ(o.active_warps_per_sm, 44);
  EXPECT_FLOAT_EQ(o.occupancy, 44.0f / 64.0f);
}

TEST(Occupancy, BlockLimitCapsTinyBlocks) {
  // 33 threads round up to 2 warps; 32 blocks per SM -> 64 warps.
  const auto o = theoretical_occupancy(h100(), shape(33, 0));
  EXPECT_EQ(o.active_blocks_per_sm, 32);
  EXPECT_EQ(o.active_warps_per_sm, 64);
  EXPECT_FLOAT_EQ(o.occupancy, 1.0f);
  // 32 threads: 1 warp, 32 blocks -> half the warp slots, limited by blocks.
  const auto half = theoretical_occupancy(h100(), shape(32, 0));
  EXPECT_EQ(half.active_blocks_per_sm, 32);
  EXPECT_FLOAT_EQ(half.occupancy, 0.5f);
  EXPECT_EQ(half.limited_by, OccupancyLimit::kBlocks);
}

TEST(Occupancy, LaunchesThatCannotFitGiveZero) {
  // 1024 threads x 255 registers need 8192 registers per warp x 32 warps.
  EXPECT_EQ(theoretical_occupancy(h100(), shape(1024, 255)).limited_by, OccupancyLimit::kDoesNotFit);
  EXPECT_FLOAT_EQ(theoretical_occupancy(h100(), shape(1024, 255)).occupancy, 0.0f);
  EXPECT_EQ(theoretical_occupancy(h100(), shape(2048, 16)).limited_by, OccupancyLimit::kDoesNotFit);
  // More dynamic shared memory than the default per-block limit without opting in.
  EXPECT_EQ(theoretical_occupancy(h100(), shape(128, 32, 0, 65536)).active_blocks_per_sm, 0);
  LaunchShape optin = shape(128, 32, 0, 65536);
  optin.shared_memory_optin = true;
  EXPECT_EQ(theoretical_occupancy(h100(), optin).active_blocks_per_sm, 3);  // 233472 / 66560
}

TEST(Occupancy, UnknownDeviceOrEmptyBlockGivesZero) {
  EXPECT_EQ(theoretical_occupancy(DeviceLimits{}, shape(256, 32)).limited_by, OccupancyLimit::kUnknown);
  EXPECT_FLOAT_EQ(theoretical_occupancy(DeviceLimits{}, shape(256, 32)).occupancy, 0.0f);
  EXPECT_EQ(theoretical_occupancy(h100(), shape(0, 32)).active_blocks_per_sm, 0);
}

TEST(Occupancy, KernelDetailSpreadsTheGridOverTheSms) {
  LaunchShape s = shape(256, 64, 1024, 2048);
  s.grid[0] = 264;
  s.grid[1] = 2;
  const pk_kernel_detail k = profkit::cupti::make_kernel_detail(h100(), s);
  EXPECT_EQ(k.grid[0], 264u);
  EXPECT_EQ(k.grid[1], 2u);
  EXPECT_EQ(k.block[0], 256u);
  EXPECT_EQ(k.registers_per_thread, 64u);
  EXPECT_EQ(k.static_shared_memory, 1024u);
  EXPECT_EQ(k.dynamic_shared_memory, 2048u);
  EXPECT_FLOAT_EQ(k.blocks_per_sm, 4.0f);  // 528 blocks / 132 SMs
  EXPECT_FLOAT_EQ(k.warps_per_sm, 32.0f);  // 4 x 8 warps
  EXPECT_FLOAT_EQ(k.occupancy, 0.5f);      // registers, as above
  const pk_kernel_detail unknown = profkit::cupti::make_kernel_detail(DeviceLimits{}, s);
  EXPECT_EQ(unknown.grid[0], 264u);
  EXPECT_FLOAT_EQ(unknown.blocks_per_sm, 0.0f);
  EXPECT_FLOAT_EQ(unknown.occupancy, 0.0f);
}

#ifdef PROFKIT_HAVE_CUPTI

struct NamedDevice {
  const char* name;
  DeviceLimits limits;
};

DeviceLimits device(int major, int minor, int threads_per_sm, int blocks_per_sm, int64_t smem_per_sm,
                    int64_t smem_optin, int64_t reserved) {
  DeviceLimits d = h100();
  d.compute_major = major;
  d.compute_minor = minor;
  d.max_threads_per_sm = threads_per_sm;
  d.max_blocks_per_sm = blocks_per_sm;
  d.shared_memory_per_sm = smem_per_sm;
  d.shared_memory_per_block_optin = smem_optin;
  d.reserved_shared_memory_per_block = reserved;
  return d;
}

int nvidia_blocks(const DeviceLimits& d, const LaunchShape& s) {
  cudaOccDeviceProp p;
  p.computeMajor = d.compute_major;
  p.computeMinor = d.compute_minor;
  p.maxThreadsPerBlock = d.max_threads_per_block;
  p.maxThreadsPerMultiprocessor = d.max_threads_per_sm;
  p.regsPerBlock = d.registers_per_block;
  p.regsPerMultiprocessor = d.registers_per_sm;
  p.warpSize = d.warp_size;
  p.sharedMemPerBlock = static_cast<size_t>(d.shared_memory_per_block);
  p.sharedMemPerMultiprocessor = static_cast<size_t>(d.shared_memory_per_sm);
  p.numSms = d.sm_count;
  p.sharedMemPerBlockOptin = static_cast<size_t>(d.shared_memory_per_block_optin);
  p.reservedSharedMemPerBlock = static_cast<size_t>(d.reserved_shared_memory_per_block);
  cudaOccFuncAttributes a;
  a.maxThreadsPerBlock = INT_MAX;
  a.numRegs = static_cast<int>(s.registers_per_thread);
  a.sharedSizeBytes = s.static_shared_memory;
  a.shmemLimitConfig = s.shared_memory_optin ? FUNC_SHMEM_LIMIT_OPTIN : FUNC_SHMEM_LIMIT_DEFAULT;
  a.maxDynamicSharedSizeBytes = s.shared_memory_optin ? static_cast<size_t>(d.shared_memory_per_block_optin) : 0;
  cudaOccDeviceState state;
  cudaOccResult result;
  const int threads = static_cast<int>(s.block[0] * s.block[1] * s.block[2]);
  if (cudaOccMaxActiveBlocksPerMultiprocessor(&result, &p, &a, &state, threads, s.dynamic_shared_memory) !=
      CUDA_OCC_SUCCESS) {
    return -1;
  }
  return result.activeBlocksPerMultiprocessor;
}

TEST(Occupancy, AgreesWithNvidiasCalculator) {
  const NamedDevice devices[] = {
      {"H100", h100()},
      {"A100", device(8, 0, 2048, 32, 167936, 166912, 1024)},
      {"RTX 4090", device(8, 9, 1536, 24, 102400, 101376, 1024)},
      {"V100", device(7, 0, 2048, 32, 98304, 98304, 0)},
  };
  const uint32_t threads[] = {32, 64, 96, 128, 160, 192, 256, 384, 512, 640, 768, 1024};
  const uint32_t registers[] = {0, 16, 24, 32, 40, 48, 64, 72, 96, 128, 168, 255};
  const uint32_t static_smem[] = {0, 1000, 4096, 12288};
  const uint32_t dynamic_smem[] = {0, 2048, 16384, 40000, 65536};
  int compared = 0;
  for (const NamedDevice& d : devices) {
    for (uint32_t t : threads) {
      for (uint32_t r : registers) {
        for (uint32_t st : static_smem) {
          for (uint32_t dy : dynamic_smem) {
            for (bool optin : {false, true}) {
              LaunchShape s = shape(t, r, st, dy);
              s.shared_memory_optin = optin;
              const int expected = nvidia_blocks(d.limits, s);
              ASSERT_GE(expected, 0) << d.name;
              const auto ours = theoretical_occupancy(d.limits, s);
              ASSERT_EQ(ours.active_blocks_per_sm, expected)
                  << d.name << " threads=" << t << " regs=" << r << " static=" << st << " dynamic=" << dy
                  << " optin=" << optin;
              ++compared;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(compared, 4 * 12 * 12 * 4 * 5 * 2);
}

#endif  // PROFKIT_HAVE_CUPTI

}  // namespace
