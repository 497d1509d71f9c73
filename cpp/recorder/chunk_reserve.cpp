#include "recorder/chunk_reserve.h"

#include <algorithm>

#include "recorder/chunk.h"

namespace profkit {

void ChunkReserve::window_opened() noexcept { handed_out_at_open_ = ChunkPool::chunks_handed_out(); }

void ChunkReserve::window_closed() noexcept {
  last_window_chunks_ = ChunkPool::chunks_handed_out() - handed_out_at_open_;
}

void ChunkReserve::start_afresh() noexcept {
  handed_out_at_open_ = ChunkPool::chunks_handed_out();
  last_window_chunks_ = 0;
}

uint32_t ChunkReserve::target() const noexcept {
  return static_cast<uint32_t>(std::clamp<uint64_t>(last_window_chunks_, kMinChunks, kMaxChunks));
}

}  // namespace profkit
