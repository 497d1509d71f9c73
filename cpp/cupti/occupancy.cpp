#include "cupti/occupancy.h"

#include <algorithm>
#include <climits>

namespace profkit::cupti {

namespace {

int64_t divide_round_up(int64_t x, int64_t y) { return (x + y - 1) / y; }
int64_t round_up(int64_t x, int64_t y) { return divide_round_up(x, y) * y; }

// Registers are handed to warps in blocks of this many (every architecture
// from Kepler to Blackwell).
constexpr int64_t kRegisterAllocationUnit = 256;

int64_t max_registers_per_thread(const DeviceLimits& d) { return d.compute_major >= 7 ? 256 : 255; }

// Register files are split into sub-partitions; a warp's registers come from
// one of them. GP100 (6.0) has two, everything else four.
int64_t sub_partitions(const DeviceLimits& d) { return d.compute_major == 6 && d.compute_minor == 0 ? 2 : 4; }

int64_t shared_memory_granularity(const DeviceLimits& d) { return d.compute_major >= 8 ? 128 : 256; }

int64_t warps_per_block(const DeviceLimits& d, int64_t threads) { return divide_round_up(threads, d.warp_size); }

int64_t blocks_limited_by_warps(const DeviceLimits& d, int64_t threads) {
  if (d.max_threads_per_block > 0 && threads > d.max_threads_per_block) return 0;
  return (d.max_threads_per_sm / d.warp_size) / warps_per_block(d, threads);
}

int64_t blocks_limited_by_registers(const DeviceLimits& d, int64_t threads, int64_t registers) {
  if (registers == 0) return INT_MAX;
  if (registers > max_registers_per_thread(d)) return 0;
  const int64_t warps = warps_per_block(d, threads);
  const int64_t per_warp = round_up(registers * d.warp_size, kRegisterAllocationUnit);
  const int64_t partitions = sub_partitions(d);
  if (d.registers_per_block > 0) {
    // The hardware checks the per-block limit as if the block's warps were
    // spread over every sub-partition at once.
    if (per_warp * round_up(warps, partitions) > d.registers_per_block) return 0;
    if (per_warp * warps > d.registers_per_block) return 0;
  }
  const int64_t warps_per_partition = (d.registers_per_sm / partitions) / per_warp;
  return warps_per_partition * partitions / warps;
}

int64_t blocks_limited_by_shared_memory(const DeviceLimits& d, const LaunchShape& l) {
  const int64_t requested = static_cast<int64_t>(l.static_shared_memory) + d.reserved_shared_memory_per_block +
                            static_cast<int64_t>(l.dynamic_shared_memory);
  const int64_t allocated = round_up(requested, shared_memory_granularity(d));
  if (allocated == 0) return INT_MAX;
  int64_t per_block_limit = l.shared_memory_optin && d.shared_memory_per_block_optin > 0
                                ? std::max(d.shared_memory_per_block, d.shared_memory_per_block_optin)
                                : d.shared_memory_per_block;
  if (per_block_limit > 0) {
    if (d.compute_major >= 8) per_block_limit += d.reserved_shared_memory_per_block;
    if (allocated > per_block_limit) return 0;
  }
  int64_t per_sm = l.shared_memory_executed > 0 ? l.shared_memory_executed : d.shared_memory_per_sm;
  // A carveout smaller than one block would not have let the kernel run; the
  // driver then grows it, so fall back to the device maximum.
  if (per_sm < allocated) per_sm = d.shared_memory_per_sm;
  return per_sm / allocated;
}

}  // namespace

Occupancy theoretical_occupancy(const DeviceLimits& d, const LaunchShape& l) noexcept {
  Occupancy out;
  const int64_t threads = static_cast<int64_t>(l.block[0]) * l.block[1] * l.block[2];
  if (!d.complete() || threads <= 0) return out;

  struct Candidate {
    int64_t blocks;
    OccupancyLimit limit;
  };
  const Candidate candidates[] = {
      {blocks_limited_by_warps(d, threads), OccupancyLimit::kWarps},
      {d.max_blocks_per_sm, OccupancyLimit::kBlocks},
      {blocks_limited_by_registers(d, threads, l.registers_per_thread), OccupancyLimit::kRegisters},
      {blocks_limited_by_shared_memory(d, l), OccupancyLimit::kSharedMemory},
  };
  Candidate best{INT_MAX, OccupancyLimit::kUnknown};
  for (const Candidate& c : candidates) {
    if (c.blocks < best.blocks) best = c;
  }
  if (best.blocks <= 0) {
    out.limited_by = OccupancyLimit::kDoesNotFit;
    return out;
  }
  const int64_t max_warps = d.max_threads_per_sm / d.warp_size;
  out.active_blocks_per_sm = static_cast<int32_t>(best.blocks);
  out.active_warps_per_sm = static_cast<int32_t>(best.blocks * warps_per_block(d, threads));
  out.occupancy = static_cast<float>(static_cast<double>(out.active_warps_per_sm) / static_cast<double>(max_warps));
  out.limited_by = best.limit;
  return out;
}

pk_kernel_detail make_kernel_detail(const DeviceLimits& d, const LaunchShape& l) noexcept {
  pk_kernel_detail k{};
  for (int i = 0; i < 3; ++i) {
    k.grid[i] = l.grid[i];
    k.block[i] = l.block[i];
  }
  k.registers_per_thread = l.registers_per_thread;
  k.static_shared_memory = l.static_shared_memory;
  k.dynamic_shared_memory = l.dynamic_shared_memory;
  if (d.sm_count > 0 && d.warp_size > 0) {
    const double blocks = static_cast<double>(l.grid[0]) * l.grid[1] * l.grid[2];
    const double threads = static_cast<double>(l.block[0]) * l.block[1] * l.block[2];
    const double warps_per_block = static_cast<double>(divide_round_up(static_cast<int64_t>(threads), d.warp_size));
    k.blocks_per_sm = static_cast<float>(blocks / d.sm_count);
    k.warps_per_sm = static_cast<float>(blocks / d.sm_count * warps_per_block);
  }
  k.occupancy = theoretical_occupancy(d, l).occupancy;
  return k;
}

}  // namespace profkit::cupti
