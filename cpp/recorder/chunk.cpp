#include "recorder/chunk.h"

#include <sys/mman.h>
#include <unistd.h>

#include <mutex>
#include <new>

namespace profkit {
namespace {
std::atomic<uint64_t> g_used{0};
std::atomic<uint64_t> g_cap{MemoryBudget::kDefaultCap};
}  // namespace

bool MemoryBudget::try_reserve(uint64_t bytes) noexcept {
  uint64_t used = g_used.load(std::memory_order_relaxed);
  do {
    if (used + bytes > g_cap.load(std::memory_order_relaxed)) return false;
  } while (!g_used.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  return true;
}

void MemoryBudget::release(uint64_t bytes) noexcept { g_used.fetch_sub(bytes, std::memory_order_relaxed); }
uint64_t MemoryBudget::used() noexcept { return g_used.load(std::memory_order_relaxed); }
uint64_t MemoryBudget::cap() noexcept { return g_cap.load(std::memory_order_relaxed); }
void MemoryBudget::set_cap(uint64_t bytes) noexcept { g_cap.store(bytes, std::memory_order_relaxed); }

Chunk* Chunk::allocate() noexcept {
  if (!MemoryBudget::try_reserve(kBytes)) return nullptr;
  void* memory = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (memory == MAP_FAILED) {
    MemoryBudget::release(kBytes);
    return nullptr;
  }
  // Default-initialized, not value-initialized (`Chunk()`), which would zero
  // all 256 KiB again: fresh anonymous pages are zero already, and records
  // are only read below `committed`.
  return new (memory) Chunk;
}

void Chunk::release(Chunk* chunk) noexcept {
  if (chunk == nullptr) return;
  const uint64_t counted = chunk->is_parked() ? parked_bytes() : kBytes;
  chunk->~Chunk();
  ::munmap(chunk, kBytes);
  MemoryBudget::release(counted);
}

uint64_t Chunk::parked_bytes() noexcept {
  static const uint64_t bytes = [] {
    const long page = ::sysconf(_SC_PAGESIZE);
    return page > 0 && static_cast<uint64_t>(page) < kBytes ? static_cast<uint64_t>(page) : uint64_t{kBytes};
  }();
  return bytes;
}

bool Chunk::park() noexcept {
  const uint64_t kept = parked_bytes();
  if (kept == kBytes) return false;  // pages as large as a chunk: nothing to give back
  // The first page holds the header, which the owner and the collector go
  // on using. MADV_DONTNEED keeps the rest mapped (a late write finds a
  // fresh zero page) but frees what is in it.
  if (::madvise(reinterpret_cast<char*>(this) + kept, kBytes - kept, MADV_DONTNEED) != 0) return false;
  parked.store(true, std::memory_order_release);
  MemoryBudget::release(kBytes - kept);
  return true;
}

namespace {
std::mutex g_pool_mutex;
Chunk* g_pool = nullptr;
uint32_t g_pool_size = 0;
// Whether g_pool may hold a chunk, readable without the mutex: past the
// memory cap every record of every thread asks the pool for a chunk before it
// is dropped, and those threads must not queue on the mutex to learn that the
// pool is empty. Written under the mutex; a stale `false` only sends a thread
// to Chunk::allocate (and a drop) as if it had asked a moment earlier.
std::atomic<bool> g_pool_has_chunks{false};
std::atomic<uint64_t> g_handed_out{0};

Chunk* take_pooled() noexcept {
  if (!g_pool_has_chunks.load(std::memory_order_relaxed)) return nullptr;
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  Chunk* c = g_pool;
  if (c != nullptr) {
    g_pool = c->next;
    --g_pool_size;
  }
  g_pool_has_chunks.store(g_pool != nullptr, std::memory_order_relaxed);
  return c;
}
}  // namespace

void ChunkPool::put(Chunk* chunk) noexcept {
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  chunk->next = g_pool;
  g_pool = chunk;
  ++g_pool_size;
  g_pool_has_chunks.store(true, std::memory_order_relaxed);
}

Chunk* ChunkPool::acquire() noexcept {
  Chunk* c = take_pooled();
  if (c == nullptr) c = Chunk::allocate();
  if (c != nullptr) g_handed_out.fetch_add(1, std::memory_order_relaxed);
  return c;
}

uint64_t ChunkPool::chunks_handed_out() noexcept { return g_handed_out.load(std::memory_order_relaxed); }

void ChunkPool::stock(uint32_t target) noexcept {
  // At most half the room the memory cap leaves: the rest is for what
  // cannot wait for a pooled chunk (a thread's records copied out at its
  // exit), and a tight cap is better spent on events than on spares.
  const uint64_t used = MemoryBudget::used();
  const uint64_t cap = MemoryBudget::cap();
  const uint64_t limit = used + (cap > used ? (cap - used) / 2 : 0);
  // The mutex is not held while mapping: recording threads keep taking
  // chunks meanwhile, and one more or less than `target` does no harm.
  for (uint32_t held = size(); held < target && MemoryBudget::used() + Chunk::kBytes <= limit; ++held) {
    Chunk* c = Chunk::allocate();
    if (c == nullptr) return;
    put(c);
  }
}

uint32_t ChunkPool::size() noexcept {
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  return g_pool_size;
}

void ChunkPool::lock_for_fork() noexcept { g_pool_mutex.lock(); }

void ChunkPool::unlock_after_fork() noexcept { g_pool_mutex.unlock(); }

void ChunkPool::trim() noexcept {
  Chunk* list = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_pool_mutex);
    list = g_pool;
    g_pool = nullptr;
    g_pool_size = 0;
    g_pool_has_chunks.store(false, std::memory_order_relaxed);
  }
  while (list != nullptr) {
    Chunk* next = list->next;
    Chunk::release(list);
    list = next;
  }
}

void ChunkPool::trim_to_cap() noexcept {
  while (MemoryBudget::used() > MemoryBudget::cap()) {
    Chunk* c = take_pooled();
    if (c == nullptr) return;
    Chunk::release(c);
  }
}

}  // namespace profkit
