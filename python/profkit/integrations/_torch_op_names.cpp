// See _torch_op_names.h.
#include "_torch_op_names.h"

#include "_torch_name_scan.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>

namespace profkit_torch {
namespace {

// Bumped whenever the dispatcher registers or removes an operator. An address
// cached in one epoch is trusted only in that epoch: the schema behind it
// cannot have been freed (and its memory reused for another name) without the
// epoch moving on. 0 = not watching yet: nothing is cached by address.
std::atomic<uint64_t> g_epoch{0};

class RegistrationWatcher final : public c10::OpRegistrationListener {
 public:
  void onOperatorRegistered(const c10::OperatorHandle&) override { bump(); }
  void onOperatorDeregistered(const c10::OperatorHandle&) override { bump(); }

 private:
  static void bump() { g_epoch.fetch_add(1, std::memory_order_acq_rel); }
};

uint64_t address_hash(const char* address) {
  const uint64_t h = reinterpret_cast<uintptr_t>(address) * kNameMul;
  return h ^ (h >> 32);
}

struct AddressSlot {
  const char* address;  // a schema's name string; nullptr = empty
  uint64_t epoch;       // the g_epoch it was cached in (> 0)
  pk_name_id id;
  bool empty() const { return address == nullptr; }
};

struct ContentSlot {
  uint64_t key;      // scan_name(text).key; 0 = empty
  const char* text;  // profkit's interned copy: lives as long as the process
  uint32_t length;   // strlen(text)
  pk_name_id id;
  // Whether the call that cached it was a dispatcher operator's. A name that
  // was not (a backward node's range, built per call) is not asked again:
  // its address is never worth caching.
  bool operator_name;
  bool empty() const { return key == 0; }
};

// One thread's open-addressing table (linear probing, power-of-two capacity,
// at most half full, so a lookup almost always ends at its first slot).
// Slots are never removed: an operator's address whose epoch has passed is
// overwritten when seen again, and a thread sees a bounded set of names
// (operators, autograd nodes). Past kMaxSlots it stops growing and the
// caller interns what it cannot cache -- slower, never wrong.
template <class Slot>
class ProbeTable {
 public:
  static constexpr size_t kFirstSlots = 256;
  static constexpr size_t kMaxSlots = size_t{1} << 16;

  ProbeTable() = default;
  ProbeTable(const ProbeTable&) = delete;
  ProbeTable& operator=(const ProbeTable&) = delete;
  ~ProbeTable() { delete[] slots_; }

  // The slot holding a key for which `matches` is true, or else the empty
  // slot where `hash`'s key belongs; nullptr before the first reserve().
  template <class Matches>
  Slot* find(uint64_t hash, Matches&& matches) const noexcept {
    if (slots_ == nullptr) return nullptr;
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (slot.empty() || matches(slot)) return &slot;
    }
  }

  // Makes room for one more key (may move every slot: find() again after).
  // False when the table is at its size limit or out of memory.
  template <class HashOf>
  bool reserve(HashOf&& hash_of) noexcept {
    if (slots_ != nullptr && 2 * (used_ + 1) <= mask_ + 1) return true;
    const size_t capacity = slots_ == nullptr ? kFirstSlots : 2 * (mask_ + 1);
    if (capacity > kMaxSlots) return false;
    Slot* grown = new (std::nothrow) Slot[capacity]();
    if (grown == nullptr) return false;
    Slot* old = slots_;
    const size_t old_capacity = old == nullptr ? 0 : mask_ + 1;
    slots_ = grown;
    mask_ = capacity - 1;
    for (size_t i = 0; i < old_capacity; ++i) {
      if (old[i].empty()) continue;
      *find(hash_of(old[i]), [](const Slot&) { return false; }) = old[i];
    }
    delete[] old;
    return true;
  }

  // Fills the empty slot find() returned (after reserve()).
  void fill(Slot* slot, const Slot& value) noexcept {
    if (slot->empty()) ++used_;
    *slot = value;
  }

 private:
  Slot* slots_ = nullptr;
  size_t mask_ = 0;
  size_t used_ = 0;
};

struct NameCache {
  ProbeTable<AddressSlot> by_address;
  ProbeTable<ContentSlot> by_content;
};

// Only a pointer lives in thread-local storage: a dlopen'd module with a small
// TLS block gets static TLS, which a TLS descriptor reads without calling
// into the dynamic loader.
thread_local NameCache* t_cache = nullptr;

struct CacheOwner {
  ~CacheOwner() {
    NameCache* cache = t_cache;
    t_cache = nullptr;
    delete cache;
  }
};

std::atomic<uint64_t> g_interned{0};  // names that took the slow path (pk_intern)
// Lookups that missed the address table (by_content): names built per call,
// and operators seen at a new address or in a new epoch. Tens per training
// step, against hundreds of operators that never touch it.
std::atomic<uint64_t> g_content_lookups{0};

PK_HOOK_COLD bool is_operator_call(const at::RecordFunction& fn) noexcept {
  try {
    return fn.operator_name().has_value();  // copies the name
  } catch (...) {                           // out of memory copying the name: just do not cache it
    return false;
  }
}

// Code layout. operator_name_id runs for every operator and by_content for
// every name built per call (each backward node's range, "detach"...):
// both are PK_HOT, so they sit in .text.hot next to the callbacks, and what
// they call only the first time a thread sees a name is cold, out of their
// cache lines. Between two operators torch's own code evicts most of L1i:
// every line the per-event path spans is a likely miss. (callgrind's cache
// simulation of an mlp training step: profkit's instruction-cache misses
// above a clock-only callback went from 10 to 6 per event with this layout,
// together with the engine's own and the -fno-plt build.)

// Caches a dispatcher operator's name by address for the next call: only a
// schema's name has an address worth keeping -- it stays put until the
// dispatcher changes (the epoch).
PK_HOOK_COLD void cache_address(const char* name, uint64_t epoch, pk_name_id id, NameCache& cache) noexcept {
  if (epoch == 0 || !cache.by_address.reserve([](const AddressSlot& s) { return address_hash(s.address); })) return;
  cache.by_address.fill(
      cache.by_address.find(address_hash(name), [name](const AddressSlot& s) { return s.address == name; }),
      {name, epoch, id});
}

// A name this thread has not seen: interned, then cached by content (and by
// address when it is a dispatcher operator's).
PK_HOOK_COLD pk_name_id intern_new(const at::RecordFunction& fn, const char* name, size_t n, uint64_t key,
                                   uint64_t epoch, NameCache& cache) noexcept {
  g_interned.fetch_add(1, std::memory_order_relaxed);
  const pk_name_id id = pk_intern(name);
  const char* text = id != 0 ? pk_name_string(id) : nullptr;
  if (text == nullptr) return id;
  const bool is_operator = is_operator_call(fn);
  if (n <= UINT32_MAX && cache.by_content.reserve([](const ContentSlot& s) { return s.key; })) {
    cache.by_content.fill(cache.by_content.find(key, [](const ContentSlot&) { return false; }),
                          {key, text, static_cast<uint32_t>(n), id, is_operator});
  }
  if (is_operator) cache_address(name, epoch, id, cache);
  return id;
}

// A name the address table does not hold: looked up by content. Out of line,
// so that operator_name_id's own path stays a few instructions long.
__attribute__((noinline)) PK_HOOK_HOT pk_name_id by_content(const at::RecordFunction& fn, const char* name,
                                                            uint64_t epoch, NameCache& cache) noexcept {
  g_content_lookups.fetch_add(1, std::memory_order_relaxed);
  const ScannedName scanned = scan_name(name);
  const ContentSlot* slot = cache.by_content.find(scanned.key, [&](const ContentSlot& s) {
    return s.key == scanned.key && s.length == scanned.length && same_text(s.text, name, scanned.length);
  });
  if (slot == nullptr || slot->empty()) return intern_new(fn, name, scanned.length, scanned.key, epoch, cache);
  // A name first cached from an operator call is an operator's whose address
  // is new here (or whose epoch has passed): worth caching by address again.
  // Names first seen outside the dispatcher are never asked (a backward
  // node's range is rebuilt on every call).
  if (slot->operator_name && is_operator_call(fn)) cache_address(name, epoch, slot->id, cache);
  return slot->id;
}

PK_HOOK_COLD NameCache* new_thread_cache() noexcept {
  thread_local CacheOwner owner;  // frees this thread's caches when it exits
  (void)owner;
  t_cache = new (std::nothrow) NameCache();
  return t_cache;
}

}  // namespace

void watch_operator_registrations() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Kept for the life of the process: removing it at exit could run after
    // the dispatcher is gone.
    static auto* handle = new c10::RegistrationHandleRAII(
        c10::Dispatcher::singleton().addRegistrationListener(std::make_unique<RegistrationWatcher>()));
    (void)handle;
    g_epoch.fetch_add(1, std::memory_order_acq_rel);  // past 0: addresses may be cached from now on
  });
}

uint64_t names_interned() noexcept { return g_interned.load(std::memory_order_relaxed); }

uint64_t content_lookups() noexcept { return g_content_lookups.load(std::memory_order_relaxed); }

// Cache-line aligned: its ~160 bytes then span three lines, never four.
__attribute__((aligned(64))) PK_HOOK_HOT pk_name_id operator_name_id(const at::RecordFunction& fn) noexcept {
  const char* name = fn.name();
  NameCache* cache = t_cache;
  if (__builtin_expect(cache == nullptr, 0) && (cache = new_thread_cache()) == nullptr) return pk_intern(name);
  const uint64_t epoch = g_epoch.load(std::memory_order_acquire);
  // Probed to the end, not just the first slot: an operator whose slot
  // another address took first must not fall to the content lookup on every
  // call (it did: a few of mlp's operators went through strlen, a hash and
  // memcmp each time).
  const AddressSlot* slot =
      cache->by_address.find(address_hash(name), [name](const AddressSlot& s) { return s.address == name; });
  // Slots hold epochs > 0 only; an address from an earlier epoch is looked up again.
  if (slot != nullptr && slot->address == name && slot->epoch == epoch) return slot->id;
  return by_content(fn, name, epoch, *cache);
}

}  // namespace profkit_torch
