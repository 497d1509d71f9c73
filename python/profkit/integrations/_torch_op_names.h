// Operator names -> profkit name ids, for every operator event of the native
// PyTorch hook. Most events are dispatcher operators, whose names are their
// schema's string at a fixed address: those are found by address in one
// table shared by every thread, and trusted without reading the text, for as
// long as no operator is registered or removed (the dispatcher tells us:
// watch_operator_registrations). Names built for one call
// ("autograd::engine::evaluate_function: MmBackward0", a new string each
// time) are found by a hash of their whole text in a per-thread table and
// compared in full. Both tables are open-addressing tables that grow with the
// names seen, so no two names ever evict each other.
//
// Why the address table is shared and read without a lock: it is read on
// every operator, between two of which torch's own work evicts most of L1,
// so each cache line the lookup reads is a likely miss. Shared, a lookup
// reads two lines (AddressTable's header and the slot); per thread it read
// five (a TLS descriptor's GOT entry, the thread's TLS block, its cache
// object, the epoch and the slot). Writers are rare -- once per operator name
// and registration epoch, in the whole process -- and serialized by a mutex;
// readers see either the old or the new state of a slot, never a mix
// (_torch_op_names.cpp gives the protocol).
//
// Thread-safety: operator_name_id runs on any thread, lock-free unless the
// name is new. watch_operator_registrations is called once, with the GIL held.
#pragma once

#include <ATen/record_function.h>
#include <profkit/profkit.h>

#include <atomic>
#include <cstdint>

#include "_torch_hook_layout.h"
#include "_torch_name_scan.h"

namespace profkit_torch {

// One cached operator: its schema name's address and, in one word so that a
// reader never pairs one epoch with another's id, the epoch it was cached in
// (high half) and its profkit name id (low half). 16 bytes: four per cache
// line, none across two.
struct AddressSlot {
  std::atomic<const char*> address{nullptr};  // nullptr = empty; written last
  std::atomic<uint64_t> epoch_and_id{0};

  static uint64_t pack(uint32_t epoch, pk_name_id id) { return uint64_t{epoch} << 32 | id; }
};

// What a lookup reads first, in one cache line.
struct alignas(64) AddressTable {
  // Capacity - 1 (a power of two - 1); 0 before the first name. Published
  // after `slots` and read before it: a reader that sees a mask sees slots at
  // least that large (tables only grow, and old ones are never freed). A
  // reader may still pair an older, smaller mask with newer slots, whose
  // probed range then may hold neither its name nor an empty slot: find_slot
  // stops after mask + 1 probes.
  std::atomic<uint64_t> mask{0};
  std::atomic<AddressSlot*> slots{nullptr};
  // Bumped whenever the dispatcher registers or removes an operator. An
  // address cached in one epoch is trusted only in that epoch: the schema
  // behind it cannot have been freed (and its memory reused for another
  // name) without the epoch moving on. 0 = not watching yet: nothing is
  // cached by address. Wraps past 2^32 - 1 to 1, never to 0.
  std::atomic<uint32_t> epoch{0};
};

extern AddressTable g_address_table;

inline uint64_t address_hash(const char* address) {
  const uint64_t h = reinterpret_cast<uintptr_t>(address) * kNameMul;
  return h ^ (h >> 32);
}

// The slot holding `name` among `slots` (capacity mask + 1), or else the
// empty slot where it belongs; nullptr when the mask + 1 slots probed hold
// neither (only a reader with a stale mask sees that: it takes the slow path).
// Readers and writers both probe here; writers, under the table's mutex,
// always get a slot (a table is at most half full).
PK_HOOK_HOT inline AddressSlot* find_slot(AddressSlot* slots, uint64_t mask, const char* name) noexcept {
  uint64_t i = address_hash(name);
  for (uint64_t probes = 0; probes <= mask; ++probes, ++i) {
    AddressSlot& slot = slots[i & mask];
    const char* address = slot.address.load(std::memory_order_acquire);
    if (address == name || address == nullptr) return &slot;
  }
  return nullptr;
}

// Follows the dispatcher's operator registrations from now on (idempotent).
// Until it is called no address is trusted, so every name is looked up by
// content. Throws what c10 throws.
void watch_operator_registrations();

// The id of a name the address table does not hold (yet): by content, then
// cached by address when it is a dispatcher operator's. Out of line, so that
// operator_name_id's own path stays a few cache lines long.
pk_name_id operator_name_id_slow(const at::RecordFunction& fn, const char* name, uint32_t epoch) noexcept;

// The id of `text` (a user range's name: fn's, or a part of it) through the
// calling thread's content table; 0 when it could not be interned. Not
// counted in content_lookups.
pk_name_id user_range_name_id(const at::RecordFunction& fn, const char* text) noexcept;

// The profkit name id of the operator or range `fn` names; 0 when the name
// could not be interned (pk_last_error says why). Inline: it is most of the
// hook's per-operator work, and inlined into the callback it spans fewer
// instruction-cache lines than as a call.
PK_HOOK_HOT inline pk_name_id operator_name_id(const at::RecordFunction& fn) noexcept {
  const char* name = fn.name();
  AddressTable& table = g_address_table;
  const uint64_t mask = table.mask.load(std::memory_order_acquire);
  AddressSlot* slots = table.slots.load(std::memory_order_acquire);
  const uint32_t epoch = table.epoch.load(std::memory_order_acquire);
  // Probed past the first slot: an operator whose slot another address took
  // first must not fall to the content lookup on every call (it did: a few
  // of mlp's operators went through it each time).
  const AddressSlot* slot = __builtin_expect(slots != nullptr, 1) ? find_slot(slots, mask, name) : nullptr;
  if (__builtin_expect(slot != nullptr && slot->address.load(std::memory_order_relaxed) == name, 1)) {
    const uint64_t cached = slot->epoch_and_id.load(std::memory_order_relaxed);
    // Cached in an earlier epoch: looked up again.
    if (__builtin_expect(static_cast<uint32_t>(cached >> 32) == epoch, 1)) return static_cast<pk_name_id>(cached);
  }
  return operator_name_id_slow(fn, name, epoch);
}

// In a fork()'s child, before the hook records there: the table's writer
// lock starts unlocked, as a thread of the parent may have held it at the
// fork (that thread does not exist in the child). The table itself stays
// valid -- writers publish each slot in an order readers accept at any point.
// Call only while the child has a single thread.
void forget_name_writers_after_fork() noexcept;

// How many names every thread's content tables together have sent to
// pk_intern so far: each distinct name should cost at most one per thread,
// and no more once the tables are warm (a test holds the hook to that).
uint64_t names_interned() noexcept;

// How many lookups have gone by content so far: a name built per call (a
// backward node's range) takes that path on every call, a dispatcher
// operator only until its address is cached.
uint64_t content_lookups() noexcept;

}  // namespace profkit_torch
