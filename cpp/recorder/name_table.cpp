#include "recorder/name_table.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "common/compiler.h"
#include "common/error.h"

// The handle of the shared object this code is in (crtbegin.o defines it),
// which thread-exit handlers are registered with, as the compiler's own
// thread_local destructors are (and as error.cpp's are).
extern "C" __attribute__((visibility("hidden"))) void* __dso_handle;

namespace profkit {

NameTable& NameTable::instance() {
  static NameTable* table = new NameTable();  // never destroyed: ids outlive statics
  return *table;
}

namespace {

// $PROFKIT_TEST_NAME_TABLE_CAPACITY, for tests only (see
// set_capacity_for_testing); kMaxNames when unset or not a valid capacity.
uint32_t capacity_from_environment() noexcept {
  const char* text = std::getenv("PROFKIT_TEST_NAME_TABLE_CAPACITY");
  if (text == nullptr || *text == '\0') return NameTable::kMaxNames;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (*end != '\0' || value == 0 || value > NameTable::kMaxNames) return NameTable::kMaxNames;
  return static_cast<uint32_t>(value);
}

}  // namespace

NameTable::NameTable() : capacity_(capacity_from_environment()) { intern(""); }

void NameTable::set_capacity_for_testing(uint32_t capacity) {
  std::lock_guard<std::mutex> lock(mutex_);
  capacity_ = std::clamp<uint32_t>(capacity, 1, kMaxNames);
}

uint32_t NameTable::intern(std::string_view name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = ids_.find(name);
  if (it != ids_.end()) return it->second;
  const uint32_t id = count_.load(std::memory_order_relaxed);
  if (id >= capacity_) {
    throw Error(PK_ERR_OUT_OF_MEMORY, "pk_intern: the name table is full (" + std::to_string(capacity_) +
                                          " names); intern stable names, not per-call strings such as addresses");
  }
  const uint32_t segment = id >> kSegmentBits;
  Entry* entries = segments_[segment].load(std::memory_order_relaxed);
  if (entries == nullptr) {
    entries = new Entry[kSegmentSize];
    segments_[segment].store(entries, std::memory_order_release);
  }
  storage_.emplace_back(name);
  const std::string& stored = storage_.back();
  entries[id & (kSegmentSize - 1)] = {stored.c_str(), static_cast<uint32_t>(stored.size())};
  ids_.emplace(std::string_view(stored), id);
  count_.store(id + 1, std::memory_order_release);
  return id;
}

const char* NameTable::lookup(uint32_t id) const noexcept {
  if (id >= count_.load(std::memory_order_acquire)) return nullptr;
  return segments_[id >> kSegmentBits].load(std::memory_order_acquire)[id & (kSegmentSize - 1)].text;
}

uint32_t NameTable::length(uint32_t id) const noexcept {
  if (id >= count_.load(std::memory_order_acquire)) return 0;
  return segments_[id >> kSegmentBits].load(std::memory_order_acquire)[id & (kSegmentSize - 1)].length;
}

namespace {

// FNV-1a; names are short, and the cache compares the text anyway.
uint64_t hash_name(const char* s, size_t* length) noexcept {
  uint64_t h = 1469598103934665603ull;
  const char* p = s;
  for (; *p != '\0'; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 1099511628211ull;
  *length = static_cast<size_t>(p - s);
  return h;
}

struct CacheSlot {
  uint64_t hash;
  const char* text;  // interned text, for the exact comparison
  uint32_t id;
};
constexpr size_t kCacheSlots = 512;

// The cache is on the heap, so the library's TLS block stays a few words
// (see compiler.h), behind a trivially destructible pointer, and freed by a
// thread-exit handler registered when it is made. It was a thread_local
// std::unique_ptr, destroyed with the thread's other thread_locals, yet
// called afterwards: by an atexit handler or static destructor on the main
// thread while still recording (exit() destroys its thread_locals first), or
// by another thread_local's destructor on any thread. The compiler may drop
// the store of nullptr in a destructor (the object's life is over; GCC at
// -O2 does), so those calls read and wrote the freed array. Once the handler has run, the thread interns
// through the table's lock instead, as pk_intern does: a thread's last few
// records need no cache, and a new one would have no handler to free it.
enum class CacheState : uint8_t { kNone, kLive, kGone };
PK_TLS_FAST CacheSlot* t_cache = nullptr;
PK_TLS_FAST CacheState t_cache_state = CacheState::kNone;

void free_cache(void* cache) noexcept {
  t_cache = nullptr;
  t_cache_state = CacheState::kGone;
  delete[] static_cast<CacheSlot*>(cache);
}

// This thread's cache, made on first use; nullptr once it is gone (the
// thread is exiting) or if memory ran out.
CacheSlot* thread_cache() noexcept {
  if (PK_LIKELY(t_cache != nullptr) || t_cache_state == CacheState::kGone) return t_cache;
  auto* cache = new (std::nothrow) CacheSlot[kCacheSlots]();
  if (cache == nullptr) return nullptr;
  if (__cxxabiv1::__cxa_thread_atexit(free_cache, cache, &__dso_handle) != 0) {
    delete[] cache;
    return nullptr;
  }
  t_cache = cache;
  t_cache_state = CacheState::kLive;
  return cache;
}

}  // namespace

uint32_t intern_cached(const char* name) noexcept {
  if (name == nullptr || *name == '\0') return 0;
  size_t length = 0;
  const uint64_t h = hash_name(name, &length);
  CacheSlot* cache = thread_cache();
  CacheSlot* slot = cache != nullptr ? &cache[h % kCacheSlots] : nullptr;
  if (slot != nullptr && slot->text != nullptr && slot->hash == h && std::strcmp(slot->text, name) == 0) {
    return slot->id;
  }
  try {
    NameTable& table = NameTable::instance();
    const uint32_t id = table.intern(std::string_view(name, length));
    if (slot != nullptr) *slot = {h, table.lookup(id), id};
    return id;
  } catch (const std::exception& e) {
    set_last_error(e.what());
    return kNameNotInterned;
  }
}

}  // namespace profkit
