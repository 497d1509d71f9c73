// Operator names -> profkit name ids, for every operator event of the native
// PyTorch hook. Most events are dispatcher operators, whose names are their
// schema's string at a fixed address: those are cached by address and
// trusted without reading the text, for as long as no operator is registered
// or removed (the dispatcher tells us: watch_operator_registrations). Names
// built for one call ("autograd::engine::evaluate_function: MmBackward0", a
// new string each time) are cached by a hash of their whole text and
// compared in full. Both caches are per-thread open-addressing tables that
// grow with the names a thread sees, so no two names ever evict each other.
//
// Thread-safety: operator_name_id runs on any thread; each thread has its own
// caches (allocated on its first operator, freed when it exits).
// watch_operator_registrations is called once, with the GIL held.
#pragma once

#include <ATen/record_function.h>
#include <profkit/profkit.h>

#include "_torch_hook_layout.h"

namespace profkit_torch {

// Follows the dispatcher's operator registrations from now on (idempotent).
// Until it is called no address is trusted, so every name is looked up by
// content. Throws what c10 throws.
void watch_operator_registrations();

// The profkit name id of the operator or range `fn` names; 0 when the name
// could not be interned (pk_last_error says why).
pk_name_id operator_name_id(const at::RecordFunction& fn) noexcept;

// How many names every thread's caches together have sent to pk_intern so
// far: each distinct name should cost one per thread, and no more once the
// caches are warm (a test holds the hook to that).
uint64_t names_interned() noexcept;

// How many lookups every thread's caches together have made by content so
// far: a name built per call (a backward node's range) takes that path on
// every call, a dispatcher operator only until its address is cached.
uint64_t content_lookups() noexcept;

}  // namespace profkit_torch
