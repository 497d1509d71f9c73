// See _torch_op_names.h.
#include "_torch_op_names.h"

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

struct AddressSlot {
  const char* address;  // a schema's name string
  uint64_t epoch;
  pk_name_id id;
};

struct ContentSlot {
  uintptr_t key;     // content_key() of the name; 0 = empty
  const char* text;  // profkit's interned copy: lives as long as the process
  pk_name_id id;
};

constexpr size_t kSlots = 512;

struct NameCache {
  AddressSlot by_address[kSlots] = {};
  ContentSlot by_content[kSlots] = {};
};

// Only a pointer lives in thread-local storage (the caches are 24 KiB): a
// dlopen'd module with a small TLS block gets static TLS, which a TLS
// descriptor reads without calling into the dynamic loader.
thread_local NameCache* t_cache = nullptr;

struct CacheOwner {
  ~CacheOwner() {
    NameCache* cache = t_cache;
    t_cache = nullptr;
    delete cache;
  }
};

NameCache* new_thread_cache() noexcept {
  thread_local CacheOwner owner;  // frees this thread's caches when it exits
  (void)owner;
  t_cache = new (std::nothrow) NameCache();
  return t_cache;
}

uint64_t load8(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Length and first and last 8 bytes, mixed: names built per call share long
// prefixes ("autograd::engine::evaluate_function: "), so the tail matters.
uintptr_t content_key(const char* name) {
  const size_t n = std::strlen(name);
  uint64_t head = 0;
  uint64_t tail = 0;
  if (n >= 8) {
    head = load8(name);
    tail = load8(name + n - 8);
  } else {
    std::memcpy(&head, name, n);
  }
  const uint64_t mixed = (head * 0x9E3779B97F4A7C15ull) ^ (tail * 0xC2B2AE3D27D4EB4Full) ^ n;
  return static_cast<uintptr_t>(mixed ^ (mixed >> 29)) | 1;  // never 0, the empty key
}

pk_name_id content_id(const char* name, NameCache& cache) noexcept {
  const uintptr_t key = content_key(name);
  ContentSlot& slot = cache.by_content[(key >> 7) % kSlots];
  if (slot.key == key && std::strcmp(slot.text, name) == 0) return slot.id;
  const pk_name_id id = pk_intern(name);
  const char* text = id != 0 ? pk_name_string(id) : nullptr;
  if (text != nullptr) slot = {key, text, id};
  return id;
}

__attribute__((noinline)) pk_name_id miss(const at::RecordFunction& fn, const char* name, AddressSlot& slot,
                                          uint64_t epoch, NameCache& cache) noexcept {
  const pk_name_id id = content_id(name, cache);
  // Only a dispatcher operator's name (a schema's) has an address worth
  // keeping; operator_name() copies it, once per operator and thread.
  if (id != 0 && epoch != 0) {
    bool is_operator = false;
    try {
      is_operator = fn.operator_name().has_value();
    } catch (...) {  // out of memory copying the name: just do not cache it
    }
    if (is_operator) slot = {name, epoch, id};
  }
  return id;
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

pk_name_id operator_name_id(const at::RecordFunction& fn) noexcept {
  const char* name = fn.name();
  NameCache* cache = t_cache;
  if (__builtin_expect(cache == nullptr, 0) && (cache = new_thread_cache()) == nullptr) return pk_intern(name);
  AddressSlot& slot = cache->by_address[(reinterpret_cast<uintptr_t>(name) >> 4) % kSlots];
  const uint64_t epoch = g_epoch.load(std::memory_order_acquire);
  if (slot.address == name && slot.epoch == epoch) return slot.id;  // slots hold epochs > 0 only
  return miss(fn, name, slot, epoch, *cache);
}

}  // namespace profkit_torch
