// ChunkReserve: how many record chunks to map ahead of a recording window.
//
// Why map ahead: mapping and populating a 256 KiB chunk is a system call that
// allocates, charges and zeroes 64 pages -- ~80 us on a VM (1.1-1.4 us a
// 4 KiB page) -- and the zeroing pushes the framework's own working set out
// of L2. On an op-bound PyTorch training step (vs_torch_profiler.py's mlp),
// chunks mapped as 20-step windows filled them cost 9.4 us a step at the
// median against chunks mapped when the windows opened, 7.5 us a step on
// average in 300-step windows (BENCHMARKS.md). So the Recorder stocks the
// ChunkPool when a window is about to open (READY, or RECORD straight from
// CLOSED), where the time falls outside the recorded steps, and the
// recording threads take their chunks from the pool.
//
// How many: as many as the last window took from the pool (new threads'
// first chunks, full chunks' successors), at least kMinChunks (the first
// window: 2 MiB, ~87,000 events, 0.7 ms to map on that VM) and at most
// kMaxChunks (32 MiB); a window that needs more maps the rest as it goes, as
// before. The memory cap bounds them like every chunk (ChunkPool::stock), and
// CLOSED unmaps what is left (ChunkPool::trim).
//
// Thread-safety: none; the Recorder calls it under its lock. The counter it
// reads (ChunkPool::chunks_handed_out) is atomic.
#pragma once

#include <cstdint>

namespace profkit {

class ChunkReserve {
 public:
  static constexpr uint32_t kMinChunks = 8;
  static constexpr uint32_t kMaxChunks = 128;

  // A recording window opens / closes: what the pool hands out in between is
  // the window's demand.
  void window_opened() noexcept;
  void window_closed() noexcept;
  // Chunks the pool should hold before the next window opens.
  uint32_t target() const noexcept;
  // A forked child starts afresh: its pool is empty and what the parent's
  // windows took is not its demand.
  void start_afresh() noexcept;

 private:
  uint64_t handed_out_at_open_ = 0;
  uint64_t last_window_chunks_ = 0;
};

}  // namespace profkit
