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
#include <vector>

namespace profkit_torch {

AddressTable g_address_table;

namespace {

// ---- the shared address table: the writers' side ---------------------------------
//
// The protocol with operator_name_id's lock-free readers:
// - a new slot gets its epoch_and_id first, then its address (release), so a
//   reader that sees the address sees the id;
// - a slot whose address is cached from an earlier epoch gets a new
//   epoch_and_id in one store: a reader sees the old word (whose epoch it
//   rejects) or the new one;
// - growing builds the new slots privately, publishes them (release), then
//   the new mask: a reader that sees the new mask sees the new slots; one
//   that pairs the old mask with the new slots probes a smaller range of
//   them (find_slot stops after mask + 1 probes), misses at worst, and
//   takes the slow path;
// - slots are never removed and old slot arrays never freed (a reader may
//   still be probing one): growth doubles, so they add up to less than the
//   last, and a process sees a bounded set of operators.
std::mutex g_address_mutex;                                               // serializes writers
size_t g_address_used = 0;                                                // under g_address_mutex
std::vector<std::unique_ptr<AddressSlot[]>>* g_address_arrays = nullptr;  // under g_address_mutex; never freed

constexpr size_t kFirstAddressSlots = 128;  // mlp's ~60 operators stay below half full
constexpr size_t kMaxAddressSlots = size_t{1} << 16;

// Every cached address stops being trusted. Lock-free: the dispatcher calls
// it under its own lock, possibly in a forked child, where g_address_mutex
// may have been held by a thread that does not exist there. A name that
// cache_address stamps with an epoch that has just ended is harmless:
// readers compare the stamp with the current epoch.
void advance_epoch() {
  uint32_t epoch = g_address_table.epoch.load(std::memory_order_relaxed);
  uint32_t next;
  do {
    next = epoch + 1 == 0 ? 1 : epoch + 1;
  } while (
      !g_address_table.epoch.compare_exchange_weak(epoch, next, std::memory_order_acq_rel, std::memory_order_relaxed));
}

class RegistrationWatcher final : public c10::OpRegistrationListener {
 public:
  void onOperatorRegistered(const c10::OperatorHandle&) override { advance_epoch(); }
  void onOperatorDeregistered(const c10::OperatorHandle&) override { advance_epoch(); }
};

// Makes room for one more address (under g_address_mutex). False when the
// table is at its size limit or out of memory: the caller then just does not
// cache (slower, never wrong).
bool reserve_address_slot() noexcept {
  AddressTable& table = g_address_table;
  const uint64_t mask = table.mask.load(std::memory_order_relaxed);
  AddressSlot* old = table.slots.load(std::memory_order_relaxed);
  if (old != nullptr && 2 * (g_address_used + 1) <= mask + 1) return true;
  const size_t capacity = old == nullptr ? kFirstAddressSlots : 2 * (mask + 1);
  if (capacity > kMaxAddressSlots) return false;
  try {
    if (g_address_arrays == nullptr) g_address_arrays = new std::vector<std::unique_ptr<AddressSlot[]>>();
    g_address_arrays->reserve(g_address_arrays->size() + 1);
    std::unique_ptr<AddressSlot[]> grown(new AddressSlot[capacity]);
    const size_t old_capacity = old == nullptr ? 0 : mask + 1;
    for (size_t i = 0; i < old_capacity; ++i) {
      const char* address = old[i].address.load(std::memory_order_relaxed);
      if (address == nullptr) continue;
      AddressSlot* slot = find_slot(grown.get(), capacity - 1, address);  // never nullptr: half empty
      slot->epoch_and_id.store(old[i].epoch_and_id.load(std::memory_order_relaxed), std::memory_order_relaxed);
      slot->address.store(address, std::memory_order_relaxed);
    }
    table.slots.store(grown.get(), std::memory_order_release);
    table.mask.store(capacity - 1, std::memory_order_release);
    g_address_arrays->push_back(std::move(grown));
    return true;
  } catch (const std::bad_alloc&) {
    return false;
  }
}

// Caches a dispatcher operator's name by address for every thread: only a
// schema's name has an address worth keeping -- it stays put until the
// dispatcher changes (the epoch).
PK_HOOK_COLD void cache_address(const char* name, uint32_t epoch, pk_name_id id) noexcept {
  if (epoch == 0) return;
  std::lock_guard<std::mutex> lock(g_address_mutex);
  // An epoch that moved on since the lookup read it: not worth a slot (its
  // readers would reject the stamp); the next call caches it in the new one.
  if (g_address_table.epoch.load(std::memory_order_acquire) != epoch || !reserve_address_slot()) return;
  AddressSlot* slot = find_slot(g_address_table.slots.load(std::memory_order_relaxed),
                                g_address_table.mask.load(std::memory_order_relaxed), name);  // never nullptr
  slot->epoch_and_id.store(AddressSlot::pack(epoch, id), std::memory_order_relaxed);
  if (slot->address.load(std::memory_order_relaxed) == nullptr) {
    ++g_address_used;
    slot->address.store(name, std::memory_order_release);
  }
}

// ---- the per-thread content table ------------------------------------------------

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
// Slots are never removed, and a thread sees a bounded set of names
// (operators, autograd nodes). Past kMaxSlots it stops growing and the
// caller interns what it cannot cache -- slower, never wrong.
class ContentTable {
 public:
  static constexpr size_t kFirstSlots = 256;
  static constexpr size_t kMaxSlots = size_t{1} << 16;

  ContentTable() = default;
  ContentTable(const ContentTable&) = delete;
  ContentTable& operator=(const ContentTable&) = delete;
  ~ContentTable() { delete[] slots_; }

  // The slot holding `name` (scanned), or else the empty slot where it
  // belongs; nullptr before the first reserve().
  ContentSlot* find(const char* name, const ScannedName& scanned) const noexcept {
    if (slots_ == nullptr) return nullptr;
    for (size_t i = scanned.key & mask_;; i = (i + 1) & mask_) {
      ContentSlot& slot = slots_[i];
      if (slot.empty() ||
          (slot.key == scanned.key && slot.length == scanned.length && same_text(slot.text, name, scanned.length))) {
        return &slot;
      }
    }
  }

  // Caches a name (after a find() that returned no slot or an empty one).
  void add(const ContentSlot& value) noexcept {
    if (!reserve()) return;
    ContentSlot* slot = empty_slot_for(value.key);
    *slot = value;
    ++used_;
  }

 private:
  ContentSlot* empty_slot_for(uint64_t key) const noexcept {
    size_t i = key & mask_;
    while (!slots_[i].empty()) i = (i + 1) & mask_;
    return &slots_[i];
  }

  // Makes room for one more key. False when the table is at its size limit
  // or out of memory.
  bool reserve() noexcept {
    if (slots_ != nullptr && 2 * (used_ + 1) <= mask_ + 1) return true;
    const size_t capacity = slots_ == nullptr ? kFirstSlots : 2 * (mask_ + 1);
    if (capacity > kMaxSlots) return false;
    ContentSlot* grown = new (std::nothrow) ContentSlot[capacity]();
    if (grown == nullptr) return false;
    ContentSlot* old = slots_;
    const size_t old_capacity = old == nullptr ? 0 : mask_ + 1;
    slots_ = grown;
    mask_ = capacity - 1;
    for (size_t i = 0; i < old_capacity; ++i) {
      if (!old[i].empty()) *empty_slot_for(old[i].key) = old[i];
    }
    delete[] old;
    return true;
  }

  ContentSlot* slots_ = nullptr;
  size_t mask_ = 0;
  size_t used_ = 0;
};

// Only a pointer lives in thread-local storage: a dlopen'd module with a small
// TLS block gets static TLS, which a TLS descriptor reads without calling
// into the dynamic loader.
thread_local ContentTable* t_content = nullptr;

struct ContentTableOwner {
  ~ContentTableOwner() {
    ContentTable* table = t_content;
    t_content = nullptr;
    delete table;
  }
};

// A thread's first content lookup.
PK_HOOK_COLD ContentTable* new_thread_content_table() noexcept {
  thread_local ContentTableOwner owner;  // frees this thread's table when it exits
  (void)owner;
  t_content = new (std::nothrow) ContentTable();
  return t_content;
}

std::atomic<uint64_t> g_interned{0};  // names that took the slowest path (pk_intern)
// Lookups that missed the address table: names built per call, and
// operators seen at a new address or in a new epoch. Tens per training step,
// against hundreds of operators that never come here.
std::atomic<uint64_t> g_content_lookups{0};

PK_HOOK_COLD bool is_operator_call(const at::RecordFunction& fn) noexcept {
  try {
    return fn.operator_name().has_value();  // copies the name
  } catch (...) {                           // out of memory copying the name: just do not cache it
    return false;
  }
}

// A name this thread has not seen: interned, then cached by content (and by
// address when it is a dispatcher operator's).
PK_HOOK_COLD pk_name_id intern_new(const at::RecordFunction& fn, const char* name, const ScannedName& scanned,
                                   uint32_t epoch, ContentTable* table) noexcept {
  g_interned.fetch_add(1, std::memory_order_relaxed);
  const pk_name_id id = pk_intern(name);
  const char* text = id != 0 ? pk_name_string(id) : nullptr;
  if (text == nullptr) return id;
  const bool is_operator = is_operator_call(fn);
  if (table != nullptr && scanned.length <= UINT32_MAX) {
    table->add({scanned.key, text, static_cast<uint32_t>(scanned.length), id, is_operator});
  }
  if (is_operator) cache_address(name, epoch, id);
  return id;
}

// The id of `name` through this thread's content table (interned the first
// time the thread sees it).
inline pk_name_id content_name_id(const at::RecordFunction& fn, const char* name, uint32_t epoch) noexcept {
  const ScannedName scanned = scan_name(name);
  ContentTable* table = t_content;
  if (__builtin_expect(table == nullptr, 0)) table = new_thread_content_table();
  const ContentSlot* slot = table != nullptr ? table->find(name, scanned) : nullptr;
  if (slot == nullptr || slot->empty()) return intern_new(fn, name, scanned, epoch, table);
  // A name first cached from an operator call is an operator's whose address
  // is new (or whose epoch has passed): worth caching by address again.
  // Names first seen outside the dispatcher are never asked (a backward
  // node's range is rebuilt on every call).
  if (slot->operator_name && is_operator_call(fn)) cache_address(name, epoch, slot->id);
  return slot->id;
}

}  // namespace

// Code layout. operator_name_id runs for every operator, inlined into the
// callback; this runs for every name built per call (each backward node's
// range, "detach"...) and is PK_HOOK_HOT, so it sits in .text.hot next to
// the callbacks, and what it calls only the first time a thread sees a name
// is cold, out of its cache lines. Between two operators torch's own code
// evicts most of L1i: every line the per-event path spans is a likely miss.
__attribute__((noinline)) PK_HOOK_HOT pk_name_id operator_name_id_slow(const at::RecordFunction& fn, const char* name,
                                                                       uint32_t epoch) noexcept {
  // Not a locked increment: it is a diagnostic, and threads that race here
  // may lose a count rather than pay ~20 cycles and a shared line each time.
  g_content_lookups.store(g_content_lookups.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  return content_name_id(fn, name, epoch);
}

// A few per step at most: off the operators' cache lines.
PK_HOOK_COLD pk_name_id user_range_name_id(const at::RecordFunction& fn, const char* text) noexcept {
  return content_name_id(fn, text, 0);  // epoch 0: never cached by address
}

void watch_operator_registrations() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Kept for the life of the process: removing it at exit could run after
    // the dispatcher is gone.
    static auto* handle = new c10::RegistrationHandleRAII(
        c10::Dispatcher::singleton().addRegistrationListener(std::make_unique<RegistrationWatcher>()));
    (void)handle;
    advance_epoch();  // past 0: addresses may be cached from now on
  });
}

void forget_name_writers_after_fork() noexcept {
  // The lock's storage is reused as a new, unlocked mutex: whoever held it
  // is gone, and std::mutex's destructor does nothing worth running.
  new (&g_address_mutex) std::mutex();
}

uint64_t names_interned() noexcept { return g_interned.load(std::memory_order_relaxed); }

uint64_t content_lookups() noexcept { return g_content_lookups.load(std::memory_order_relaxed); }

}  // namespace profkit_torch
